"""Typed, frozen run configuration: defaults, TOML files, dotted overrides, validation, stable hash.

Precedence (lowest first): dataclass defaults, then a TOML file, then ``--set key=value`` overrides.
Every unknown key, wrong type or out-of-range value raises :class:`ConfigError`, whose message names
the dotted field and what is allowed; the CLI turns it into one line and exit status 2.

Citations: P1 = Zhang et al., NeurIPS 2024, arXiv 2405.05409; P2 = Yao et al., ICML 2025, arXiv 2502.04375.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from anchorlab.config_tools import (
    ConfigError,
    build,
    check,
    check_seeds,
    identity_of,
    merge,
    parse_override,
    parse_toml_file,
    read_toml,
    run_id_of,
    set_dotted,
    to_plain,
    valid_device,
)

# The helpers re-exported here are the ones callers have always imported from anchorlab.config.
__all__ = ["ConfigError", "CompositeTaskConfig", "MemRsnTaskConfig", "ModelConfig", "InitConfig", "TrainConfig",
           "SeedConfig", "RunConfig", "TASK_CONFIGS", "INIT_ROLES", "from_dict", "with_defaults", "load_config",
           "build", "check", "merge", "parse_override", "parse_toml_file", "read_toml", "set_dotted", "to_plain"]


# --------------------------------------------------------------------------------------------------
# Task configs (one per task family; `task.name` selects the class)


REFERENCE_PARTS = ("data", "init", "order")  # what a reference file holds (task.reference_parts)


@dataclass(frozen=True)
class CompositeTaskConfig:
    """P1 composite anchor task (P1 §3 and App. B). Defaults are the paper's."""

    name: Literal["composite"] = "composite"
    anchors: tuple[int, ...] = (1, 2, 3, 4)
    shifts: tuple[int, ...] = (5, 1, -2, -8)  # g(x; a) = x + shift[a]
    key_min: int = 20  # keys and noise are uniform on key_min..key_max (inclusive)
    key_max: int = 99
    seq_len: int = 9
    split_modulus: int = 9  # test-type key <=> key % split_modulus == key position (code: 9; text: n-2 = 7)
    data_size: int = 900_000  # nominal size: each group has ceil(data_size * weight / (n_pairs * sum(weights)))
    test_key_weight: int = 1
    train_key_weight: int = 9
    # (a1, a2, shift): pairs whose mapping is *not* the composition, e.g. (3,4) -> x-6
    non_inferential: tuple[tuple[int, ...], ...] = ((3, 4, -6),)
    held_out: tuple[tuple[int, ...], ...] = ((4, 3),)  # pairs never in training
    probe_pair: tuple[int, ...] = (4, 3)  # the unseen pair whose inferential/symmetric accuracy is reported
    vocab_size: int = 201
    # A reference file recorded from the authors' code (:mod:`anchorlab.reference`): its data groups
    # replace the generated data (data_size and the data seed are then unused), its init the γ-init draw
    # (rescaled to init.gamma), its per-epoch shuffle seeds our batch order. "" = generate as usual.
    reference: str = ""
    # Which of the reference file's three draws the run takes; the others come from the seeds as usual:
    # "data" (its rows, instead of seeds.data_seed), "init" (its γ-init, instead of seeds.init_seed) and "order"
    # (its shuffles, instead of seeds.train_seed). A subset asks which of the three decides an outcome.
    reference_parts: tuple[str, ...] = REFERENCE_PARTS

    def __post_init__(self) -> None:  # one spelling per choice, so one run id: ["init", "data"] is ["data", "init"]
        parts = tuple(self.reference_parts)
        if set(parts) <= set(REFERENCE_PARTS):
            object.__setattr__(self, "reference_parts", tuple(sorted(parts, key=REFERENCE_PARTS.index)))

    def validate(self) -> None:
        anchors = set(self.anchors)
        parts = self.reference_parts
        check(len(parts) > 0 and set(parts) <= set(REFERENCE_PARTS) and len(set(parts)) == len(parts),
              "task.reference_parts", f"a non-empty list of distinct values among {list(REFERENCE_PARTS)} (got "
              f"{list(parts)!r})")
        check(bool(self.reference) or tuple(parts) == REFERENCE_PARTS, "task.reference_parts",
              "the default (all three) unless task.reference names a reference file")
        # that the file is there is checked where it is read (training: anchorlab.reference.preflight), not here:
        # a finished run's config.json names its file and is read back (figures, reports) where the file is not
        check(len(self.anchors) >= 2 and len(anchors) == len(self.anchors), "task.anchors",
               "at least two distinct positive integers")
        check(all(a > 0 for a in self.anchors), "task.anchors", "positive integers (token 0 is reserved)")
        check(len(self.shifts) == len(self.anchors), "task.shifts",
               f"one shift per anchor ({len(self.anchors)} values)")
        check(0 < self.key_min <= self.key_max, "task.key_min", "0 < key_min <= key_max")
        check(not any(self.key_min <= a <= self.key_max for a in self.anchors), "task.anchors",
               f"anchors outside the key range {self.key_min}..{self.key_max}")
        check(self.seq_len >= 3, "task.seq_len", "an integer >= 3 (a key and an anchor pair must fit)")
        check(self.split_modulus >= self.seq_len - 2, "task.split_modulus",
               f"an integer >= seq_len - 2 = {self.seq_len - 2} (every key position needs test keys)")
        check(self.data_size > 0, "task.data_size", "a positive integer")
        check(self.test_key_weight >= 0 and self.train_key_weight > 0, "task.train_key_weight",
               "train_key_weight > 0 and test_key_weight >= 0")
        for triple in self.non_inferential:
            check(len(triple) == 3 and triple[0] in anchors and triple[1] in anchors, "task.non_inferential",
                   f"[a1, a2, shift] triples with a1, a2 in the anchor set {sorted(anchors)}")
        for pair in self.held_out:
            check(len(pair) == 2 and pair[0] in anchors and pair[1] in anchors, "task.held_out",
                   f"[a1, a2] pairs with a1, a2 in the anchor set {sorted(anchors)}")
        pair = self.probe_pair
        check(len(pair) == 2 and pair[0] in anchors and pair[1] in anchors, "task.probe_pair",
               f"an [a1, a2] pair with a1, a2 in the anchor set {sorted(anchors)}")
        check(self.probe_pair in self.held_out, "task.probe_pair", f"one of task.held_out {list(self.held_out)}")
        a1, a2 = pair
        shift = dict(zip(self.anchors, self.shifts))
        composed = shift[a1] + shift[a2]
        check(self._shift_of(a2, a1) != composed, "task.probe_pair",
              f"a pair whose two readings differ: for {tuple(pair)} the inferential answer (shift {composed:+d}) "
              f"and the symmetric one (the reversed pair ({a2},{a1})'s) are the same, so the two accuracies would "
              "be one number; hold out a pair whose reverse is listed in task.non_inferential")
        lo = self.key_min + min(self._pair_shifts()) if self.anchors else 0
        hi = self.key_max + max(self._pair_shifts()) if self.anchors else 0
        check(lo >= 0, "task.key_min", f"an integer >= {self.key_min - lo} so that every label (key + shift, down "
               f"to {lo} now) is a token (>= 0)")
        check(hi < self.vocab_size, "task.vocab_size", f"an integer > {hi} so that every label ({lo}..{hi}) is a token")

    def n_train_rows(self) -> int | None:
        """Training rows the generator makes (the train-key groups of every pair not held out); None with a
        reference file that gives the data (its rows decide)."""
        if self.reference and "data" in self.reference_parts:
            return None
        n_pairs = len(self.anchors) ** 2
        per_group = math.ceil(self.data_size * self.train_key_weight
                              / (n_pairs * (self.test_key_weight + self.train_key_weight)))
        return per_group * (n_pairs - len({tuple(p) for p in self.held_out}))

    def _shift_of(self, a1: int, a2: int) -> int:
        """The designated label shift of the pair (a1, a2): its non-inferential rule, else the composition."""
        d = dict(zip(self.anchors, self.shifts))
        return next((t[2] for t in self.non_inferential if (t[0], t[1]) == (a1, a2)), d[a1] + d[a2])

    def _pair_shifts(self) -> list[int]:
        return [self._shift_of(a, b) for a in self.anchors for b in self.anchors]


@dataclass(frozen=True)
class MemRsnTaskConfig:
    """P2 anchor task (P2 §3.1): memory anchors map (key, anchors) to a looked-up label, reasoning
    anchors to key + sum(anchors). Defaults are the paper's §3.1 configuration; [INF] choices in comments."""

    name: Literal["mem_rsn"] = "mem_rsn"
    key_min: int = 21  # keys Z = key_min..key_max (keys and noise are uniform on Z)
    key_max: int = 120
    mem_anchors: tuple[int, ...] = tuple(range(1, 11))  # A_mem
    rsn_anchors: tuple[int, ...] = tuple(range(11, 21))  # A_rsn
    q: int = 2  # anchors per sequence, consecutive, right after the key
    seq_len: int = 9  # L; seq_len = q + 1 puts the key at position 0 with no noise (the Emb-MLP task)
    masked: tuple[tuple[int, ...], ...] = ((11, 13), (13, 11))  # reasoning tuples held out = D_rsn,test
    data_size: int = 200_000  # equal rows per anchor tuple; what it counts is ``data_size_counts``
    # P2 §3.1 does not say whether its 200,000 pairs include the masked (test) tuples (docs/task_and_model.md).
    # "all" (ours): data_size counts every tuple's rows, 1,000 per tuple at 200k, 198,000 trained;
    # "train": data_size counts the training rows only, ceil(data_size / trained tuples) per tuple
    # (1,011 at 200k: 200,178 trained), the masked tuples getting the same count as test rows.
    data_size_counts: Literal["all", "train"] = "all"
    vocab_size: int = 200
    include_mixed: bool = False  # [INF] also generate tuples mixing both kinds, labelled by lookup
    # How a memory tuple's label is drawn once per (key, tuple) (P2 Fig. 8 left, [T2]):
    # "uniform" F_mem,1: y ~ U(Z); "key_window" F_mem,2: y ~ U{z - sum(a), ..., z + sum(a)}.
    mem_label: Literal["uniform", "key_window"] = "uniform"
    # P2 Fig. 8 right: split the memory tuples into len(ranges) groups by their first anchor (contiguous
    # blocks of mem_anchors) and draw group g's labels from U{lo_g..hi_g}, e.g. ((30, 49), (30, 69),
    # (30, 89), (30, 109)) [INF grouping]. Empty: every memory label follows ``mem_label``.
    mem_label_ranges: tuple[tuple[int, ...], ...] = ()

    def validate(self) -> None:
        mem, rsn = set(self.mem_anchors), set(self.rsn_anchors)
        check(len(self.mem_anchors) >= 1 and len(mem) == len(self.mem_anchors) and all(a > 0 for a in mem),
               "task.mem_anchors", "a non-empty list of distinct positive integers (token 0 is reserved)")
        check(len(rsn) == len(self.rsn_anchors) and all(a > 0 for a in rsn), "task.rsn_anchors",
               "a list of distinct positive integers (token 0 is reserved); [] for a memory-only task")
        for r in self.mem_label_ranges:
            check(len(r) == 2 and 0 <= r[0] <= r[1] < self.vocab_size, "task.mem_label_ranges",
                   f"[lo, hi] pairs with 0 <= lo <= hi < vocab_size = {self.vocab_size}")
        check(len(self.mem_label_ranges) <= len(self.mem_anchors), "task.mem_label_ranges",
               f"at most len(mem_anchors) = {len(self.mem_anchors)} ranges (one group per block of first anchors)")
        if self.mem_label == "key_window":
            check(self.key_min - self.q * max(mem) >= 0, "task.mem_label",
                   "'uniform' here: 'key_window' labels z - sum(a) would fall below token 0")
        check(not mem & rsn, "task.rsn_anchors", f"anchors disjoint from task.mem_anchors {sorted(mem)}")
        check(0 < self.key_min <= self.key_max, "task.key_min", "0 < key_min <= key_max")
        check(not any(self.key_min <= a <= self.key_max for a in mem | rsn), "task.mem_anchors",
               f"anchors outside the key range {self.key_min}..{self.key_max}")
        check(self.q >= 1, "task.q", "an integer >= 1")
        check(self.seq_len >= self.q + 1, "task.seq_len", f"an integer >= q + 1 = {self.q + 1}")
        for t in self.masked:
            check(len(t) == self.q and set(t) <= rsn, "task.masked",
                   f"tuples of q = {self.q} reasoning anchors from {sorted(rsn)}")
        n = self.n_combinations
        if self.data_size_counts == "all":
            check(self.data_size > 0 and self.data_size % n == 0, "task.data_size",
                   f"a positive multiple of the {n} anchor tuples (equal rows per tuple), "
                   "or set task.data_size_counts = 'train'")
        else:
            check(self.data_size > 0, "task.data_size", "a positive integer")  # memory tuples are never masked
        hi = max(self.key_max + self.q * max(rsn, default=0), self.key_max, max(mem | rsn),
                 self.key_max + self.q * max(mem) if self.mem_label == "key_window" else 0)
        check(hi < self.vocab_size, "task.vocab_size", f"an integer > {hi} so that every token and label is a token")

    def n_train_rows(self) -> int | None:
        """Training rows the generator makes: equal rows per anchor tuple, the masked tuples left out."""
        return self.rows_per_combination * self.n_trained_combinations

    @property
    def rows_per_combination(self) -> int:
        """Rows generated for each anchor tuple (the same for all, masked or not)."""
        if self.data_size_counts == "train":
            return math.ceil(self.data_size / self.n_trained_combinations)
        return self.data_size // self.n_combinations

    @property
    def n_trained_combinations(self) -> int:
        """Anchor tuples that are trained: all generated tuples but the masked ones."""
        return self.n_combinations - len({tuple(t) for t in self.masked})

    @property
    def n_combinations(self) -> int:
        """Number of ordered anchor tuples generated: |A_mem|^q + |A_rsn|^q (+ mixed ones)."""
        n_mem, n_rsn = len(self.mem_anchors), len(self.rsn_anchors)
        if self.include_mixed:
            return (n_mem + n_rsn) ** self.q
        return n_mem ** self.q + n_rsn ** self.q


TASK_CONFIGS: dict[str, type] = {"composite": CompositeTaskConfig, "mem_rsn": MemRsnTaskConfig}


# --------------------------------------------------------------------------------------------------
# Model / init / train / seeds


@dataclass(frozen=True)
class ModelConfig:
    """Decoder-only Transformer (P1 eq. 3-6, App. A). Defaults are P1's paper sizes (2,732,201 parameters)."""

    name: Literal["gpt", "emb_mlp"] = "gpt"  # "emb_mlp": P2's Emb-MLP (uses EMB_MLP_FIELDS only)
    d_model: int = 400
    n_heads: int = 1
    d_head: int = 200  # d_k = d_v
    d_mlp: int = 1200
    n_layers: int = 2
    n_ctx: int = 20  # rows of W_pos; the authors allocate 20 positions and use 0..seq_len-1
    norm: Literal["post", "pre", "none"] = "post"  # "none": no LayerNorm at all (P2 App. ablation)
    act: Literal["relu", "gelu", "tanh"] = "relu"
    ln_eps: float = 1e-5

    def validate(self) -> None:
        for f in ("d_model", "n_heads", "d_head", "d_mlp", "n_layers", "n_ctx"):
            check(getattr(self, f) > 0, f"model.{f}", "a positive integer")
        check(self.ln_eps > 0, "model.ln_eps", "a positive float")


EMB_MLP_FIELDS = ("name", "d_model", "d_mlp", "act")  # the model fields the Emb-MLP reads; the rest: Transformer

INIT_ROLES = ("embed", "pos_embed", "attn_in", "attn_out", "mlp_in", "mlp_out", "unembed")


@dataclass(frozen=True)
class InitConfig:
    """γ-initialization: every weight ~ N(0, std = d_in^-γ) (P1 App. A)."""

    gamma: float = 0.5
    # "paper": the authors' d_in table (embeddings use d_model); "fan_in": true input dimension everywhere
    convention: Literal["paper", "fan_in"] = "paper"
    role_gamma: dict[str, float] = field(default_factory=dict)  # per-role γ overrides, e.g. {"embed": 0.5}

    def validate(self) -> None:
        check(self.gamma > 0, "init.gamma", "a float > 0 (std = d_in^-gamma; larger gamma = smaller init)")
        for role, g in self.role_gamma.items():
            check(role in INIT_ROLES, "init.role_gamma", f"keys in {list(INIT_ROLES)}")
            check(g > 0, f"init.role_gamma.{role}", "a float > 0")


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation (P1 App. A): AdamW, clip 1, per-step warm-up from lr to lr*lr_multiplier, cosine to lr_min."""

    epochs: int = 210
    batch_size: int = 2048
    lr: float = 1e-5  # base LR (start of warm-up)
    lr_multiplier: float = 25.0  # peak LR = lr * lr_multiplier (C-book re-runs: 20)
    schedule: Literal["warmup_cosine", "constant"] = "warmup_cosine"
    warmup_epochs: float = 10.0
    cosine_epochs: float = 200.0
    lr_min: float = 1e-5  # end of the cosine
    cooldown_epochs: float = 0.0  # last epochs fall linearly to lr_min (not in P1; anchorlab.schedule); 0 = none
    weight_decay: float = 0.01
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    grad_clip: float = 1.0  # global grad-norm; 0 disables
    drop_last: bool = True
    eval_every: int = 3  # epochs between evaluations (also after the last epoch and at step 0)
    eval_batch_size: int = 8192
    checkpoint_every: int = 20  # epochs between kept checkpoints (step 0 and the last are always kept)
    resume_every: int = 1  # epochs between resume states (model + optimizer)
    early_stop_loss: float = 0.0  # stop when the epoch's train loss falls below this (C-cc: 1e-7); 0 = never
    prune_last: bool = True  # compute only the scored last position in the final layer (exact)
    precision: Literal["fp32", "bf16"] = "fp32"
    device: str = "auto"  # "auto" = cuda if available else cpu
    threads: int = 0  # CPU intra-op threads; 0 = all cores
    cuda_graph: bool = False  # batched training on a GPU: each step one CUDA graph replay (anchorlab.cuda_graph)

    def validate(self) -> None:
        for f in ("epochs", "batch_size", "eval_every", "eval_batch_size", "checkpoint_every", "resume_every"):
            check(getattr(self, f) > 0, f"train.{f}", "a positive integer")
        for f in ("lr", "lr_min", "eps"):
            check(getattr(self, f) > 0, f"train.{f}", "a positive float")
        check(self.early_stop_loss >= 0, "train.early_stop_loss", "a float >= 0 (0 = never stop early)")
        check(self.lr_multiplier >= 1, "train.lr_multiplier", "a float >= 1 (peak = lr * lr_multiplier)")
        check(self.warmup_epochs >= 0 and self.cosine_epochs > 0, "train.cosine_epochs",
               "warmup_epochs >= 0 and cosine_epochs > 0")
        check(0 <= self.cooldown_epochs <= self.epochs, "train.cooldown_epochs",
              f"a float in [0, train.epochs = {self.epochs}] (0 = no cooldown)")
        check(self.weight_decay >= 0, "train.weight_decay", "a float >= 0")
        check(0 <= self.beta1 < 1 and 0 <= self.beta2 < 1, "train.beta1", "betas in [0, 1)")
        check(self.grad_clip >= 0, "train.grad_clip", "a float >= 0 (0 disables clipping)")
        check(self.threads >= 0, "train.threads", "an integer >= 0 (0 = all cores)")
        check(valid_device(self.device, auto=True), "train.device",
               f"'auto', 'cpu', 'cuda', 'cuda:N' or 'mps' (got {self.device!r})")

    def steps_per_epoch(self, n_train: int) -> int:
        """Optimizer steps in one epoch over ``n_train`` rows (a last partial batch is dropped with ``drop_last``)."""
        return n_train // self.batch_size if self.drop_last else -(-n_train // self.batch_size)


@dataclass(frozen=True)
class SeedConfig:
    """Separate seeds: data (the dataset), init (the weights), train (batch order)."""

    data_seed: int = 1
    init_seed: int = 1
    train_seed: int = 1

    def validate(self) -> None:
        check_seeds(self)


@dataclass(frozen=True)
class RunConfig:
    kind: ClassVar[str] = "anchor"  # its entry in anchorlab.kinds.KINDS (a class constant, not a config field)

    task: CompositeTaskConfig | MemRsnTaskConfig = field(default_factory=CompositeTaskConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    init: InitConfig = field(default_factory=InitConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    seeds: SeedConfig = field(default_factory=SeedConfig)

    def validate(self, training: bool = True) -> RunConfig:
        """Check every field; ``training`` False leaves out what matters only to training (the batch size
        against the task's rows: ``anchorlab data`` generates the data of any config)."""
        for part in (self.task, self.model, self.init, self.train, self.seeds):
            part.validate()
        n_train = self.task.n_train_rows()
        if training and self.train.drop_last and n_train is not None:
            check(self.train.batch_size <= n_train, "train.batch_size",
                  f"at most the {n_train} training rows of the task (with train.drop_last a larger batch never runs)")
        if self.model.name == "gpt":
            check(self.model.n_ctx >= self.task.seq_len, "model.n_ctx",
                  f"an integer >= task.seq_len = {self.task.seq_len} (one position per token)")
        if getattr(self.task, "reference", "") and "init" in getattr(self.task, "reference_parts", ()):
            # the file holds the authors' post-LN weights, LayerNorms included (anchorlab.reference)
            check(self.model.norm == "post", "model.norm",
                  f"'post' when task.reference gives the init (the file's model is post-LN), got {self.model.norm!r}")
        if self.model.name == "emb_mlp":  # the Emb-MLP reads a bag (z, a_1..a_q): p = 1, L = q + 1
            q = getattr(self.task, "q", 2)
            check(self.task.seq_len == q + 1, "task.seq_len",
                   f"q + 1 = {q + 1} when model.name = 'emb_mlp' (inputs are exactly (key, anchors))")
        return self

    def total_steps(self) -> int | None:
        """Optimizer steps of the whole run (every epoch; an early stop ends it sooner), known before its data
        are made; None with a task reference file (its rows decide)."""
        n_train = self.task.n_train_rows()
        return None if n_train is None else self.train.steps_per_epoch(n_train) * self.train.epochs

    def to_dict(self) -> dict[str, Any]:
        return to_plain(dataclasses.asdict(self))

    def run_id(self) -> str:
        """Stable short hash of the fully resolved config (names run directories); execution fields
        (``train.threads``) are hashed at their defaults: they cannot change the numbers."""
        return run_id_of(identity_of(self))

    def replace(self, **dotted: Any) -> RunConfig:
        """A copy with dotted overrides applied, e.g. ``cfg.replace(**{"init.gamma": 0.8})``. Checked as a task
        description (:meth:`validate` with ``training`` False: a small task under the default batch size is
        fine here); loading a config file and training check the batch size too."""
        d = self.to_dict()
        for k, v in dotted.items():
            set_dotted(d, k, v)
        return from_dict(d, training=False)


# --------------------------------------------------------------------------------------------------
# Loading


def from_dict(d: dict[str, Any], training: bool = True) -> RunConfig:
    """Build and validate a RunConfig from nested plain data (as in config.json or TOML)."""
    d = dict(d)
    unknown = sorted(set(d) - {f.name for f in dataclasses.fields(RunConfig)})
    if unknown:
        raise ConfigError(f"{unknown[0]}: unknown config key; allowed sections are task, model, init, train, seeds")
    task = d.pop("task", {}) or {}
    if not isinstance(task, dict):
        raise ConfigError("task: expected a table")
    name = task.get("name", "composite")
    if name not in TASK_CONFIGS:
        raise ConfigError(f"task.name: got {name!r}; allowed values are {', '.join(map(repr, TASK_CONFIGS))}")
    kw: dict[str, Any] = {"task": build(TASK_CONFIGS[name], task, "task.")}
    for sec in ("model", "init", "train", "seeds"):
        if sec in d:
            if not isinstance(d[sec], dict):
                raise ConfigError(f"{sec}: expected a table")
            tp = typing.get_type_hints(RunConfig)[sec]
            kw[sec] = build(tp, d[sec], f"{sec}.")
    return RunConfig(**kw).validate(training)


def with_defaults(data: dict[str, Any]) -> dict[str, Any]:
    """The defaults merged with ``data``; a ``data`` that changes the task family starts from that
    family's defaults (a P2 file must not inherit the composite task's fields)."""
    d = RunConfig().to_dict()
    if "task" in data and data["task"].get("name", "composite") != d["task"]["name"]:
        d["task"] = {}
    return merge(d, data)


def load_config(path: str | Path | None = None, overrides: list[str] | tuple[str, ...] = (),
                training: bool = True) -> RunConfig:
    """Defaults <- TOML file <- dotted overrides; validated (``training``: :meth:`RunConfig.validate`)."""
    d = with_defaults(read_toml(path) if path is not None else {})
    for item in overrides:
        key, value = parse_override(item)
        if key == "task.name" and value != d["task"].get("name"):
            d["task"] = {"name": value}
        else:
            set_dotted(d, key, value)
    return from_dict(d, training)
