"""The rows of a real-task run (SCAN, COGS, addition) as next-token rows with the loss only on the output.

SCAN and COGS become :class:`~anchorlab.text.seq2seq.Seq2SeqRows` (word vocabulary, ``input <sep> output
<eos>``); addition keeps its fixed-width digit rows (:mod:`anchorlab.tasks.addition`: no separator and no end
token, the answer is the last four positions) in the same container. The vocabulary and the row width come
from the whole task (every split), so they are the same at every training-set size and seed; the training
subset, the test subset and the COGS gen subset are drawn with ``seeds.data_seed`` (the test and gen subsets
with a fixed offset, so they do not depend on ``n_train``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from anchorlab.text.seq2seq import IGNORE, Seq2SeqRows, build_vocabulary, encode_pairs, pair_words
from anchorlab.text.seq2seq_config import Seq2SeqRunConfig

_EVAL_SEED_OFFSET = 7919  # test / gen subsets: data_seed + this (independent of the training draw)
WordPair = tuple[Sequence[str], Sequence[str]]


@dataclass(frozen=True)
class EvalSet:
    """Rows scored by greedy decoding; ``groups`` [N] indexes ``group_names`` (COGS gen: the 21 types)."""

    rows: Seq2SeqRows
    groups: np.ndarray | None = None
    group_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskRows:
    train: Seq2SeqRows
    evals: dict[str, EvalSet]  # "test" always; "gen" for COGS
    tokens: tuple[str, ...]  # id -> token text
    eos_id: int | None  # None: every output has a fixed length (addition), decoding never stops early
    info: dict[str, Any] = field(default_factory=dict)  # counts, written to the run's data.json

    @property
    def vocab_size(self) -> int:
        return len(self.tokens)

    @property
    def n_ctx(self) -> int:
        return self.train.n_ctx

    def max_new(self, rows: Seq2SeqRows) -> int:
        """Tokens greedy decoding writes at most for ``rows``: the longest output (plus its end token)."""
        return int(rows.output_len.max()) + (0 if self.eos_id is None else 1)


def _draw(n_all: int, n: int, seed: int) -> np.ndarray:
    """Sorted indices of ``n`` of ``n_all`` items drawn without replacement (all for n = 0)."""
    if n == 0 or n >= n_all:
        if n > n_all:
            from anchorlab.config_tools import ConfigError
            raise ConfigError(f"seq2seq.n_train: at most {n_all} here, got {n}")
        return np.arange(n_all)
    return np.sort(np.random.default_rng(seed).choice(n_all, size=n, replace=False))


def _words(pairs: Sequence[tuple[str, str]]) -> list[WordPair]:
    return [(c.split(), a.split()) for c, a in pairs]


def scan_rows(cfg: Seq2SeqRunConfig) -> TaskRows:
    from anchorlab.tasks import scan

    tc, seed = cfg.seq2seq, cfg.seeds.data_seed
    split = (scan.load_published_split(tc.scan_split) if tc.scan_source == "published"
             else scan.addprim_split(tc.scan_split))
    primitive = scan.PRIMITIVES[tc.scan_split]
    others = sorted({p for p in split.train if p[0] != primitive})
    chosen = [others[i] for i in _draw(len(others), tc.n_train, seed)]
    copies = tc.primitive_copies(len(chosen))
    train = chosen + [(primitive, scan.interpret(primitive))] * copies
    test = [split.test[i] for i in _draw(len(split.test), tc.n_test, seed + _EVAL_SEED_OFFSET)]
    everything = _words(list(scan.scan_pairs()))
    vocab = build_vocabulary(pair_words(everything))
    n_ctx = max(len(s) + len(t) + 1 for s, t in everything)
    info = {"n_train_commands": len(chosen), "primitive_copies": copies, "n_train_lines": len(train),
            "n_test": len(test), "n_test_all": len(split.test)}
    evals = {"test": EvalSet(encode_pairs(_words(test), vocab, n_ctx))}
    return TaskRows(encode_pairs(_words(train), vocab, n_ctx), evals, vocab.tokens, vocab.eos_id, info)


def cogs_rows(cfg: Seq2SeqRunConfig) -> TaskRows:
    from anchorlab.text import cogs

    tc, seed = cfg.seq2seq, cfg.seeds.data_seed
    data = cogs.load_cogs((tc.cogs_train, "test", "gen"))
    pairs = {k: [e.pair for e in v] for k, v in data.items()}
    vocab = build_vocabulary(pair_words([p for v in pairs.values() for p in v]))
    n_ctx = max(len(s) + len(t) + 1 for v in pairs.values() for s, t in v)
    train = [pairs[tc.cogs_train][i] for i in _draw(len(pairs[tc.cogs_train]), tc.n_train, seed)]
    test = [pairs["test"][i] for i in _draw(len(pairs["test"]), tc.n_test, seed + _EVAL_SEED_OFFSET)]
    types = tuple(t for t in cogs.GEN_TYPES if any(e.gen_type == t for e in data["gen"]))
    gen_idx: list[int] = []
    for k, t in enumerate(types):
        of_type = [i for i, e in enumerate(data["gen"]) if e.gen_type == t]
        gen_idx += [of_type[i] for i in _draw(len(of_type), min(tc.n_gen_per_type, len(of_type)),
                                               seed + _EVAL_SEED_OFFSET + 1 + k)]
    gen_types = np.array([types.index(data["gen"][i].gen_type) for i in gen_idx], dtype=np.int64)
    evals = {"test": EvalSet(encode_pairs(test, vocab, n_ctx)),
             "gen": EvalSet(encode_pairs([pairs["gen"][i] for i in gen_idx], vocab, n_ctx), gen_types, types)}
    info = {"n_train": len(train), "n_train_all": len(pairs[tc.cogs_train]), "n_test": len(test),
            "n_gen": len(gen_idx), "gen_types": len(types)}
    return TaskRows(encode_pairs(train, vocab, n_ctx), evals, vocab.tokens, vocab.eos_id, info)


def addition_rows(cfg: Seq2SeqRunConfig) -> TaskRows:
    from anchorlab.tasks import addition as A

    tc, seed = cfg.seq2seq, cfg.seeds.data_seed
    train, test = A.train_test_rows(tc.n_train or None, seed)
    test = test[_draw(len(test), tc.n_test, seed + _EVAL_SEED_OFFSET)]

    def rows(r: np.ndarray) -> Seq2SeqRows:
        targets = np.full((len(r), A.ROW_LEN - 1), IGNORE, dtype=np.int64)
        targets[:, A.ANSWER_TARGETS] = r[:, A.ANSWER]
        return Seq2SeqRows(r[:, :-1].copy(), targets, np.full(len(r), A.ANSWER.start, dtype=np.int64),
                           np.full(len(r), A.ANSWER_DIGITS, dtype=np.int64))

    tokens = tuple(str(d) for d in range(10)) + ("+", "=")
    return TaskRows(rows(train), {"test": EvalSet(rows(test))}, tokens, None,
                    {"n_train": len(train), "n_test": len(test), "n_test_all": 201 * 201})


def task_rows(cfg: Seq2SeqRunConfig) -> TaskRows:
    """The rows of ``cfg``'s task (``CogsUnavailable`` / ``ScanFilesMissing`` when its files are not there)."""
    return {"scan": scan_rows, "cogs": cogs_rows, "addition": addition_rows}[cfg.seq2seq.task](cfg)


def preflight(cfgs: Sequence[Seq2SeqRunConfig]) -> None:
    """Raise ``CogsUnavailable`` / ``ScanFilesMissing`` now if the data files of any of ``cfgs`` are not there
    (each distinct file set is read once)."""
    from anchorlab.tasks.scan import load_published_split
    from anchorlab.text.cogs import load_cogs

    for key in sorted({(c.seq2seq.task, c.seq2seq.cogs_train, c.seq2seq.scan_source, c.seq2seq.scan_split)
                       for c in cfgs}):
        task, cogs_train, scan_source, scan_split = key
        if task == "cogs":
            load_cogs((cogs_train, "test", "gen"))
        elif task == "scan" and scan_source == "published":
            load_published_split(scan_split)
