"""Typed, frozen config of one real-language run (P2 Fig. 1 / Fig. 7, P1 Fig. 7): ``LMRunConfig``.

Same contract as :mod:`anchorlab.config`: dataclass defaults <- TOML file <- ``--set key=value``;
unknown keys, wrong types and out-of-range values raise :class:`~anchorlab.config.ConfigError` naming the
dotted field. Defaults are the paper scale (5,000 PrOntoQA + 5,000 stories, GPT-2 small, 200 epochs) except
the story source, which is the offline stand-in generator (``data.stories``; P2's TinyStories is ``"hf"``, as
``configs/text/p2_fig7_paper.toml`` sets); ``configs/text/*_cpu.toml`` shrink them.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from anchorlab.config_tools import (
    ConfigError,
    build,
    check,
    check_seeds,
    identity_of,
    layered,
    merge,
    run_id_of,
    valid_device,
)

# Fields renamed since run directories were first written ({old dotted name: new}); the LM tree now names
# its sizes as the anchor tree does. config.json files and TOML files with the old names still load.
RENAMED = {"model.n_layer": "model.n_layers", "model.n_embd": "model.d_model", "model.n_head": "model.n_heads"}
# Fields added since run directories were first written whose default is NOT what the runs made before them did
# ({dotted name: the value those runs used}). A config.json without the field reads as that value, and a config
# at that value hashes as the runs before the field did (LMRunConfig.run_id), so their ids and directories hold;
# the default, which the earlier runs did not use, gets new ids.
LEGACY_VALUES = {"data.prontoqa_sampling": "short"}


@dataclass(frozen=True)
class LMDataConfig:
    """The PrOntoQA + stories mix; test sets are held out (PrOntoQA: another seed; stories: the next ones)."""

    n_prontoqa: int = 5000
    n_stories: int = 5000
    n_test_prontoqa: int = 500
    n_test_stories: int = 500
    min_hops: int = 1
    max_hops: int = 5
    ontology: Literal["fictional", "true", "false"] = "fictional"  # PrOntoQA's ontology (docs/prontoqa.md)
    ordering: Literal["postorder", "preorder", "random"] = "postorder"  # order of the context sentences
    distractor: bool = True  # PrOntoQA's distractor sentence
    # how PrOntoQA chains and proofs are drawn: "reference" (the v1 generator's process) or "short" (the generator
    # before 2026-11-28: shorter contexts; every run made before the field existed used it; docs/prontoqa.md)
    prontoqa_sampling: Literal["reference", "short"] = "reference"
    # "standin" (offline generator, NOT TinyStories), "sample" (the real 754-story sample, see
    # anchorlab.text.stories.sample_path), "hf" (roneneldan/TinyStories, online) or a .txt/.jsonl/.parquet path
    stories: str = "standin"
    # "gpt2": GPT-2's BPE, 50,257 ids; "gpt2_compact": the same segmentation, ids restricted to those the
    # run's texts use (~5k; a CPU-sized softmax); "bpe": a byte-level BPE of bpe_vocab trained on the texts
    tokenizer: Literal["gpt2", "gpt2_compact", "bpe"] = "gpt2"
    bpe_vocab: int = 1024  # only for tokenizer = "bpe": trained on the training texts of both sources
    n_ctx: int = 256

    def validate(self) -> None:
        for f in ("n_prontoqa", "n_stories", "n_test_prontoqa", "n_test_stories"):
            check(getattr(self, f) >= 0, f"data.{f}", "an integer >= 0")
        check(self.n_prontoqa + self.n_stories > 0, "data.n_prontoqa", "n_prontoqa + n_stories > 0")
        check(self.n_test_prontoqa > 0 or self.n_prontoqa == 0, "data.n_test_prontoqa",
               "an integer > 0 when n_prontoqa > 0 (the True/False accuracy needs held-out examples)")
        for f in ("min_hops", "max_hops"):
            check(1 <= getattr(self, f) <= 8, f"data.{f}", "an integer in 1..8")
        check(self.min_hops <= self.max_hops, "data.min_hops", f"an integer <= max_hops = {self.max_hops}")
        if self.ontology == "true":
            from anchorlab.text.prontoqa import TRUE_MAX_HOPS
            check(self.max_hops <= max(TRUE_MAX_HOPS), "data.max_hops",
                   f"an integer in 1..{max(TRUE_MAX_HOPS)} with ontology = 'true' (its taxonomies are shorter)")
        check(self.stories != "", "data.stories", "'standin', 'sample', 'hf' or a stories file path")
        check(258 <= self.bpe_vocab <= 65536, "data.bpe_vocab", "an integer in 258..65536")
        check(self.n_ctx >= 8, "data.n_ctx", "an integer >= 8")


@dataclass(frozen=True)
class LMModelConfig:
    """HF ``GPT2LMHeadModel`` sizes (GPT-2 small: 12 / 768 / 12; HF's ``n_layer`` / ``n_embd`` / ``n_head``);
    dropout 0 as in the authors' GPT-2 runs."""

    n_layers: int = 12
    d_model: int = 768
    n_heads: int = 12
    # GPT-2's tanh-approximated GELU. "gelu_new" is HF's GPT-2 default (written out in elementwise ops);
    # "gelu_pytorch_tanh" is the same formula as one fused kernel (F.gelu(approximate="tanh")): equal to float
    # rounding, about 20 % faster per training step on a CPU (docs/text.md)
    activation: Literal["gelu_new", "gelu_pytorch_tanh"] = "gelu_new"

    def validate(self) -> None:
        for f in ("n_layers", "d_model", "n_heads"):
            check(getattr(self, f) > 0, f"model.{f}", "a positive integer")
        check(self.d_model % self.n_heads == 0, "model.n_heads", f"a divisor of d_model = {self.d_model}")


@dataclass(frozen=True)
class LMInitConfig:
    """γ-init of every weight matrix (:func:`anchorlab.gamma_init.gamma_init_`): std = fan_in^-γ."""

    gamma: float = 0.5
    # anchorlab.gamma_init.CONVENTIONS (tests/test_lm.py checks that the two lists agree)
    convention: Literal["fan_in", "authors_gpt2", "authors_gpt2_last_token"] = "fan_in"
    overrides: dict[str, float] = field(default_factory=dict)  # module-name glob -> γ

    def validate(self) -> None:
        check(self.gamma > 0, "init.gamma", "a float > 0 (larger gamma = smaller init)")
        for k, g in self.overrides.items():
            check(g > 0, f"init.overrides.{k}", "a float > 0")


@dataclass(frozen=True)
class LMTrainConfig:
    """AdamW over shuffled rows; evaluation every ``eval_every`` optimizer steps (and at 0 and the end)."""

    epochs: int = 200
    batch_size: int = 20
    lr: float = 5e-5
    weight_decay: float = 0.01
    schedule: Literal["constant", "cosine"] = "constant"  # cosine: linear warm-up, then cosine to lr / 10
    warmup_steps: int = 0
    grad_clip: float = 1.0  # 0 disables
    # split each batch into this many micro-batches of similar length, each cut after its own longest row;
    # gradients accumulate, so the update is the whole batch's up to float rounding (less padding: faster)
    micro_batches: int = 1
    eval_every: int = 100  # steps
    eval_train_rows: int = 256  # training rows per source scored at each evaluation (fixed, seeded)
    checkpoint_every: int = 20  # epochs between kept weight checkpoints (step 0 and the last always)
    threads: int = 1  # CPU intra-op threads; 0 = all cores
    device: str = "cpu"

    def validate(self) -> None:
        for f in ("epochs", "batch_size", "eval_every", "eval_train_rows", "checkpoint_every"):
            check(getattr(self, f) > 0, f"train.{f}", "a positive integer")
        check(self.lr > 0, "train.lr", "a float > 0")
        check(self.weight_decay >= 0, "train.weight_decay", "a float >= 0")
        check(1 <= self.micro_batches <= self.batch_size, "train.micro_batches",
               f"an integer from 1 to train.batch_size ({self.batch_size})")
        check(self.warmup_steps >= 0, "train.warmup_steps", "an integer >= 0")
        check(self.grad_clip >= 0, "train.grad_clip", "a float >= 0 (0 disables clipping)")
        check(self.threads >= 0, "train.threads", "an integer >= 0 (0 = all cores)")
        check(valid_device(self.device), "train.device", f"'cpu', 'cuda', 'cuda:N' or 'mps' (got {self.device!r})")

    def steps_per_epoch(self, n_train: int) -> int:
        """Optimizer steps in one epoch over ``n_train`` rows (the last batch may be smaller)."""
        return -(-n_train // self.batch_size)


@dataclass(frozen=True)
class LMSeedConfig:
    data_seed: int = 0  # PrOntoQA examples, stand-in stories, row order of the mix
    init_seed: int = 0  # the γ-init draw
    train_seed: int = 0  # batch order per epoch

    def validate(self) -> None:
        check_seeds(self)


@dataclass(frozen=True)
class LMRunConfig:
    kind: ClassVar[str] = "lm"  # its entry in anchorlab.kinds.KINDS (a class constant, not a config field)
    legacy_values: ClassVar[dict[str, Any]] = LEGACY_VALUES  # left out of the run id at these values

    data: LMDataConfig = field(default_factory=LMDataConfig)
    model: LMModelConfig = field(default_factory=LMModelConfig)
    init: LMInitConfig = field(default_factory=LMInitConfig)
    train: LMTrainConfig = field(default_factory=LMTrainConfig)
    seeds: LMSeedConfig = field(default_factory=LMSeedConfig)

    def validate(self) -> LMRunConfig:
        for part in (self.data, self.model, self.init, self.train, self.seeds):
            part.validate()
        return self

    def total_steps(self) -> int:
        """Optimizer steps of the whole run: one training row per PrOntoQA example and per story."""
        return self.train.steps_per_epoch(self.data.n_prontoqa + self.data.n_stories) * self.train.epochs

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(dataclasses.asdict(self)))

    def run_id(self) -> str:
        """Stable short hash of the fully resolved config (names run directories). A :data:`LEGACY_VALUES` field
        at its legacy value is left out of the hash (``legacy_values``, :func:`identity_of`), so the runs made
        before it existed keep their ids."""
        return "lm-" + run_id_of(identity_of(self))


def _renamed(d: dict[str, Any]) -> dict[str, Any]:
    """``d`` with the :data:`RENAMED` fields under their new names; both names given is an error naming both."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in d.items()}
    for old, new in RENAMED.items():
        (sec, o), (_, n) = old.split("."), new.split(".")
        node = out.get(sec)
        if isinstance(node, dict) and o in node:
            if n in node:
                raise ConfigError(f"{old}: renamed {new}; give only {new}")
            node[n] = node.pop(o)
    return out


def upgrade(d: dict[str, Any]) -> dict[str, Any]:
    """``d`` (plain data of a whole run: a config.json, a config with its defaults filled in) under today's
    field names: the :data:`RENAMED` fields under their new names (both names given is an error naming both),
    and each :data:`LEGACY_VALUES` field its ``[data]`` table lacks set to the value the runs made before it
    used. (A TOML file gets the defaults instead: :func:`lm_with_defaults`.)"""
    out = _renamed(d)
    for name, legacy in LEGACY_VALUES.items():
        section, key = name.split(".")
        node = out.get(section)
        if isinstance(node, dict) and key not in node:
            node[key] = legacy
    return out


def lm_with_defaults(data: dict[str, Any]) -> dict[str, Any]:
    """The defaults merged with ``data`` (old field names read as their new ones; a field not given is its
    default, :data:`LEGACY_VALUES` included)."""
    return merge(LMRunConfig().to_dict(), _renamed(data))


def lm_from_dict(d: dict[str, Any]) -> LMRunConfig:
    """Build and validate an ``LMRunConfig`` from nested plain data of a whole run (a ``config.json``, or a
    TOML file after :func:`lm_with_defaults`), old field names included; a ``[data]`` table without a
    :data:`LEGACY_VALUES` field was written before it existed and reads as its legacy value."""
    if not isinstance(d, dict):
        raise ConfigError("config: expected a table")
    cfg: LMRunConfig = build(LMRunConfig, upgrade(d), "")
    return cfg.validate()


def load_lm_config(path: str | Path | None = None, overrides: list[str] | tuple[str, ...] = ()) -> LMRunConfig:
    """Defaults <- TOML file (``base = "..."`` allowed) <- dotted overrides; validated."""
    return lm_from_dict(layered(path, overrides, lm_with_defaults))
