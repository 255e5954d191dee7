"""COGS (Kim & Linzen 2020, arXiv 2010.05465): a loader for its published TSV files and its exact-match metrics.

COGS cannot be regenerated here (its grammar and lexicon are not reproduced), so the files must be supplied:
``train.tsv`` (24,155 lines), ``train_100.tsv`` (39,500), ``dev.tsv`` (3,000), ``test.tsv`` (3,000) and
``gen.tsv`` (21,000: 1,000 for each of the 21 generalization types in ``GEN_TYPES``), the ``data/`` folder of
github.com/najoungkim/COGS. Each line has three tab-separated columns: sentence, logical form, and the type
(``in_distribution`` in dev/test, a generalization type in gen). Both text columns come pre-tokenized, with
spaces around every word, bracket and punctuation mark, so whitespace splitting gives the word-level tokens
that :mod:`anchorlab.text.seq2seq` encodes. A line of that form (ours, for illustration; tabs between columns)::

    A cat smiled .    cat ( x _ 1 ) AND smile . agent ( x _ 2 , x _ 1 )    in_distribution

Where the files come from (:func:`load_cogs`): a directory (``directory=`` or ``$ANCHORLAB_COGS``); otherwise
Hugging Face ``datasets`` (``Punchwe/COGS``, a community copy with columns input/output/domain) when that
package is installed and the hub answers. Without either, :class:`CogsUnavailable` says where to put which files.

Metrics: exact match of the logical form, in distribution (test) and out of distribution (gen), the latter
per generalization type and as the mean over types with equal weight, as P1 samples the 21 types.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from anchorlab.text.seq2seq import exact_match

COGS_ENV = "ANCHORLAB_COGS"
SPLITS = ("train", "train_100", "dev", "test", "gen")
IN_DISTRIBUTION = "in_distribution"
HF_DATASET = "Punchwe/COGS"
# The 21 generalization types of gen.tsv, in the order of the paper's sections 3.1-3.5.
GEN_TYPES = (
    "subj_to_obj_common", "subj_to_obj_proper", "obj_to_subj_common", "obj_to_subj_proper",
    "prim_to_subj_common", "prim_to_subj_proper", "prim_to_obj_common", "prim_to_obj_proper", "prim_to_inf_arg",
    "obj_pp_to_subj_pp", "cp_recursion", "pp_recursion",
    "active_to_passive", "passive_to_active", "obj_omitted_transitive_to_transitive", "unacc_to_transitive",
    "do_dative_to_pp_dative", "pp_dative_to_do_dative",
    "only_seen_as_transitive_subj_as_unacc_subj", "only_seen_as_unacc_subj_as_obj_omitted_transitive_subj",
    "only_seen_as_unacc_subj_as_unerg_subj",
)
STRUCTURAL_TYPES = ("obj_pp_to_subj_pp", "cp_recursion", "pp_recursion")  # the rest are lexical


class CogsUnavailable(RuntimeError):
    """The COGS files cannot be read here; the message (one line) says where to put which files."""


@dataclass(frozen=True)
class CogsExample:
    sentence: str
    logical_form: str
    gen_type: str

    @property
    def pair(self) -> tuple[list[str], list[str]]:
        """(sentence words, logical-form words): the input and output of :func:`seq2seq.encode_pairs`."""
        return self.sentence.split(), self.logical_form.split()


def _missing(what: str) -> CogsUnavailable:
    files = ", ".join(f"{s}.tsv" for s in SPLITS)
    return CogsUnavailable(f"COGS data not found ({what}): set {COGS_ENV}=DIR, DIR holding {files} "
                           f"(the data/ folder of github.com/najoungkim/COGS)")


def read_tsv(path: str | Path) -> list[CogsExample]:
    """The examples of one COGS TSV file (three tab-separated columns per line; blank lines skipped)."""
    examples = []
    for i, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        cols = line.split("\t")
        if len(cols) != 3 or not all(c.strip() for c in cols):
            raise ValueError(f"{path}:{i}: expected 3 non-empty tab-separated columns (sentence, logical form, "
                             f"type), got {len(cols)}: {line[:80]!r}")
        examples.append(CogsExample(*(c.strip() for c in cols)))
    return examples


def cogs_directory(directory: str | Path | None = None) -> Path | None:
    """``directory``, else ``$ANCHORLAB_COGS``, else None."""
    directory = directory or os.environ.get(COGS_ENV)
    return Path(directory) if directory else None


def load_split_file(split: str, directory: str | Path) -> list[CogsExample]:
    """``DIR/<split>.tsv``; CogsUnavailable naming the file when it is absent."""
    if split not in SPLITS:
        raise ValueError(f"unknown COGS split {split!r}; allowed {SPLITS}")
    path = Path(directory) / f"{split}.tsv"
    if not path.is_file():
        raise _missing(f"no {path}")
    examples = read_tsv(path)
    if split == "gen":
        check_gen_types(examples, str(path))
    return examples


def check_gen_types(examples: Sequence[CogsExample], where: str = "gen") -> None:
    """ValueError if an example's type is not one of the 21 ``GEN_TYPES`` (a wrong or reformatted file)."""
    unknown = sorted({e.gen_type for e in examples} - set(GEN_TYPES))
    if unknown:
        raise ValueError(f"{where}: generalization types not in COGS: {unknown[:5]}")


def load_hf(split: str, dataset: str = HF_DATASET) -> list[CogsExample]:
    """A split from the Hugging Face hub (online only; needs the ``[datasets]`` extra)."""
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on"):
            raise _missing(f"{var} is set, so the hub is not tried")
    try:
        import datasets
    except ImportError:
        raise _missing("Hugging Face datasets is not installed, so the hub is not tried") from None
    from anchorlab.text.stories import _hub_reachable  # one hub-reachability rule for every text loader

    if not _hub_reachable():
        raise _missing("the Hugging Face hub is not reachable")
    rows = datasets.load_dataset(dataset, split=split)
    examples = [CogsExample(r["input"].strip(), r["output"].strip(), r["domain"].strip()) for r in rows]
    if split == "gen":
        check_gen_types(examples, f"{dataset} gen")
    return examples


def load_cogs(splits: Sequence[str] = ("train", "test", "gen"), directory: str | Path | None = None,
              hf_dataset: str = HF_DATASET) -> dict[str, list[CogsExample]]:
    """The COGS ``splits`` by name: from ``directory`` or ``$ANCHORLAB_COGS`` when either is given (no fallback
    then), otherwise from the hub through ``datasets``; CogsUnavailable (one line) when neither works."""
    root = cogs_directory(directory)
    if root is not None:
        if not root.is_dir():
            raise _missing(f"{root} is not a directory")
        return {s: load_split_file(s, root) for s in splits}
    return {s: load_hf(s, hf_dataset) for s in splits}


# --------------------------------------------------------------------------------------------------
# Metrics


def in_distribution_accuracy(predictions: Sequence[str | Sequence[str]], test: Sequence[CogsExample]) -> float:
    """Exact-match accuracy of predicted logical forms on ``test`` (word for word, whitespace-insensitive)."""
    return exact_match(predictions, [e.logical_form for e in test])


@dataclass(frozen=True)
class GenAccuracy:
    """Out-of-distribution exact match: ``per_type`` accuracy, ``mean`` over types with equal weight (P1's
    sampling), ``overall`` over examples, and ``n_per_type`` examples scored per type."""

    per_type: dict[str, float]
    n_per_type: dict[str, int]
    mean: float
    overall: float


def generalization_accuracy(predictions: Sequence[str | Sequence[str]], gen: Sequence[CogsExample]) -> GenAccuracy:
    """Exact match on ``gen`` examples, per generalization type and averaged with equal weight per type."""
    if len(predictions) != len(gen):
        raise ValueError(f"{len(predictions)} predictions for {len(gen)} examples")
    by_type: dict[str, tuple[list, list]] = {}
    for p, e in zip(predictions, gen):
        preds, refs = by_type.setdefault(e.gen_type, ([], []))
        preds.append(p)
        refs.append(e.logical_form)
    per_type = {t: exact_match(p, r) for t, (p, r) in sorted(by_type.items())}
    return GenAccuracy(per_type, {t: len(r) for t, (_, r) in sorted(by_type.items())},
                       sum(per_type.values()) / len(per_type), exact_match(predictions, [e.logical_form for e in gen]))
