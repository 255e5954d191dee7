"""Typed, frozen config of one P1 real-task run (SCAN, COGS: Fig. 6; addition: Fig. 17a): ``Seq2SeqRunConfig``.

Same contract as :mod:`anchorlab.text.config`: dataclass defaults <- TOML file <- ``--set key=value``; unknown
keys, wrong types and out-of-range values raise ``ConfigError`` naming the dotted field. A config of this kind
is recognised by its ``[seq2seq]`` table (:func:`anchorlab.kinds.kind_of_data`). The training, init and seed
tables are the real-language ones (``LMTrainConfig`` etc.), whose defaults are the authors' COGS trainer values
(AdamW, lr 5e-5 constant) with its per-device batch of 20; that trainer ran on 7 GPUs, a global batch of 140, which
the paper-scale configs (``configs/real/*_paper.toml``) set. The defaults here are the paper scale (GPT-2 small,
full data).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from anchorlab.config_tools import (
    build,
    check,
    identity_of,
    layered,
    merge,
    run_id_of,
)
from anchorlab.text.config import LMInitConfig, LMSeedConfig, LMTrainConfig


@dataclass(frozen=True)
class Seq2SeqTaskConfig:
    """Which task and how much of it. ``n_train`` draws that many training examples (seeded by
    ``seeds.data_seed``, without replacement; 0 = all): SCAN commands other than the primitive (the primitive
    alone is then added so that it makes ``primitive_fraction`` of the training lines, as published), COGS lines
    of ``cogs_train``, or addition pairs outside the test square. ``n_test`` / ``n_gen_per_type`` score a seeded
    subset of the test set / of each COGS generalization type at every evaluation (0 = all)."""

    task: Literal["scan", "cogs", "addition"] = "scan"
    n_train: int = 0
    scan_split: Literal["addprim_turn_left", "addprim_jump"] = "addprim_turn_left"
    primitive_fraction: float = 0.1  # SCAN: share of the training lines that are the isolated primitive
    scan_source: Literal["generated", "published"] = "generated"  # published: $ANCHORLAB_SCAN's files
    cogs_train: Literal["train", "train_100"] = "train"
    n_test: int = 0
    n_gen_per_type: int = 0

    def validate(self) -> None:
        for f in ("n_train", "n_test", "n_gen_per_type"):
            check(getattr(self, f) >= 0, f"seq2seq.{f}", "an integer >= 0 (0 = all)")
        check(0 < self.primitive_fraction < 1, "seq2seq.primitive_fraction", "a float in (0, 1)")

    def primitive_copies(self, n_commands: int) -> int:
        """SCAN: lines of the isolated primitive added to ``n_commands`` other commands (at least one)."""
        return max(1, round(n_commands * self.primitive_fraction / (1 - self.primitive_fraction)))

    def n_train_rows(self) -> int | None:
        """Training rows of the task; None for ``n_train`` 0 (all rows: only the task's files can tell)."""
        if self.n_train == 0:
            return None
        return self.n_train + (self.primitive_copies(self.n_train) if self.task == "scan" else 0)


@dataclass(frozen=True)
class Seq2SeqModelConfig:
    """Three models (``arch``):

    * ``"gpt2"``: HF ``GPT2LMHeadModel`` (dropout 0, tied embeddings, MLP 4 d_model), γ-init by
      :func:`anchorlab.gamma_init.gamma_init_` (``init.convention``).
    * ``"p1"``: P1's decoder (arXiv 2405.05409 App. A; :mod:`anchorlab.models.gpt`): post-LN, ReLU, bias-free,
      d_head = d_model / (2 n_heads), MLP ``d_mlp`` (0 = 3 d_model), P1's init table (std = d_in^-γ with the
      embeddings at d_model^-γ: :func:`anchorlab.init.apply_init`, convention ``"paper"``). With one head and
      d_model 400 it is P1's model exactly.
    * ``"gpt"``: our decoder as first written for these tasks: pre-LN, GELU, d_head = d_model / n_heads, MLP
      ``d_mlp`` (0 = 4 d_model), and apply_init's ``"fan_in"`` convention, whose token and position embeddings
      are drawn at vocab^-γ and n_ctx^-γ (unlike gamma_init_'s ``"fan_in"``). Kept so earlier runs keep their
      meaning.

    ``n_ctx`` 0 = the longest row of the data (rows are never truncated)."""

    arch: Literal["gpt2", "p1", "gpt"] = "gpt2"
    n_layers: int = 12
    d_model: int = 768
    n_heads: int = 12
    d_mlp: int = 0  # arch "p1" / "gpt" only; 0 = 3 d_model ("p1") or 4 d_model ("gpt")
    activation: Literal["gelu_new", "gelu_pytorch_tanh"] = "gelu_pytorch_tanh"  # arch "gpt2"
    n_ctx: int = 0

    def validate(self) -> None:
        for f in ("n_layers", "d_model", "n_heads"):
            check(getattr(self, f) > 0, f"model.{f}", "a positive integer")
        check(self.d_model % self.n_heads == 0, "model.n_heads", f"a divisor of d_model = {self.d_model}")
        check(self.d_mlp >= 0 and self.n_ctx >= 0, "model.d_mlp", "d_mlp, n_ctx >= 0 (0 = the default)")
        if self.arch == "p1":
            check(self.d_model % (2 * self.n_heads) == 0, "model.n_heads", f"n_heads with d_model = {self.d_model} "
                  "divisible by 2 n_heads (arch 'p1': d_head = d_model / (2 n_heads))")


@dataclass(frozen=True)
class Seq2SeqRunConfig:
    kind: ClassVar[str] = "seq2seq"  # its entry in anchorlab.kinds.KINDS

    seq2seq: Seq2SeqTaskConfig = field(default_factory=Seq2SeqTaskConfig)
    model: Seq2SeqModelConfig = field(default_factory=Seq2SeqModelConfig)
    init: LMInitConfig = field(default_factory=LMInitConfig)
    train: LMTrainConfig = field(default_factory=LMTrainConfig)
    seeds: LMSeedConfig = field(default_factory=LMSeedConfig)

    def validate(self) -> Seq2SeqRunConfig:
        for part in (self.seq2seq, self.model, self.init, self.train):
            part.validate()
        if self.model.arch != "gpt2":  # our decoders take their init from anchorlab.init (see the model docstring)
            arch = self.model.arch
            check(self.init.convention == "fan_in", "init.convention", f"'fan_in' with model.arch = '{arch}'")
            check(not self.init.overrides, "init.overrides", f"empty with model.arch = '{arch}'")
        return self

    def total_steps(self) -> int | None:
        """Optimizer steps of the whole run; None where only the task's files can tell its training rows."""
        n_train = self.seq2seq.n_train_rows()
        return None if n_train is None else self.train.steps_per_epoch(n_train) * self.train.epochs

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(dataclasses.asdict(self)))

    def run_id(self) -> str:
        """Stable short hash of the fully resolved config (names run directories); execution fields
        (``train.threads``) are hashed at their defaults: they cannot change the numbers."""
        return "s2s-" + run_id_of(identity_of(self))


def s2s_with_defaults(data: dict[str, Any]) -> dict[str, Any]:
    return merge(Seq2SeqRunConfig().to_dict(), data)


def s2s_from_dict(d: dict[str, Any]) -> Seq2SeqRunConfig:
    cfg: Seq2SeqRunConfig = build(Seq2SeqRunConfig, d, "")
    return cfg.validate()


def load_s2s_config(path: str | Path | None = None, overrides: list[str] | tuple[str, ...] = ()) -> Seq2SeqRunConfig:
    """Defaults <- TOML file (``base = "..."`` allowed) <- dotted overrides; validated."""
    return s2s_from_dict(layered(path, overrides, s2s_with_defaults))
