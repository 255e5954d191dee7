"""Replaying a reference run: data, init and batch order recorded from the authors' P1 code.

A *reference file* is an ``.npz`` recorded from the authors' public P1 code (github.com/xuzhiqin1990/
understanding_dl, ``code/book_jupyter_composition_task/``) with what one of their ``train()`` calls drew:

- ``group_names`` [G], ``group_in_train`` [G]: the data groups in the authors' order (``"43_xel"`` =
  pair (4, 3), train-type keys; ``"43_xm0"`` = test-type keys) and which ones are trained on;
- ``group/<name>`` [rows, 10] uint8: each group's rows, 9 input tokens then the label;
- ``train_rows`` [N, 10]: the training set as their DataLoader indexes it (the training groups
  concatenated in ``group_names`` order; checked on load);
- ``epoch_seeds`` [E]: the seed of each epoch's shuffle: epoch e (1-based here) trains on
  ``train_rows[randperm(N, generator=manual_seed(epoch_seeds[e - 1]))]`` in consecutive batches;
- ``init/<name>``: every parameter before training, in their names and ``nn.Linear`` layouts ([out, in]).

Set ``task.reference = PATH`` in a run config and the run takes all three from the file: the groups
replace the generated dataset, the init replaces the γ-init draw, the epoch seeds replace our batch order.
The file's init was drawn at one γ (estimated from its W_Q std); for another ``init.gamma`` every
γ-initialized weight is multiplied by d_in^(γ_file − γ), which is exactly what the authors' code draws at
that γ (it scales one standard-normal draw by d_in^-γ). The output bias and LayerNorms do not depend on γ.

The authors' → our parameter mapping (ours are stored input-first, TransformerLens style)::

    embedding.tgt_emb.weight [V, D]                      -> embed.W_E [V, D]
    embedding.pos_emb.weight [20, D]                     -> pos_embed.W_pos [n_ctx, D]
    decoder.layers.i.dec_self_attn.W_{Q,K,V}.weight [H*K, D] -> blocks.i.attn.W_{Q,K,V} [H, D, K]
    decoder.layers.i.dec_self_attn.fc.weight [D, H*K]    -> blocks.i.attn.W_O [H, K, D]
    decoder.layers.i.dec_self_attn.layernorm.{weight,bias}  -> blocks.i.ln1.{w,b}  (post-attention LN)
    decoder.layers.i.pos_ffn.fc.0.weight [F, D]          -> blocks.i.mlp.W_in [D, F]
    decoder.layers.i.pos_ffn.fc.2.weight [D, F]          -> blocks.i.mlp.W_out [F, D]
    decoder.layers.i.pos_ffn.layernorm.{weight,bias}     -> blocks.i.ln2.{w,b}  (post-MLP LN)
    projection.weight [V, D], projection.bias [V]        -> unembed.W_U [D, V], unembed.b_U [V]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from anchorlab.config import ConfigError, ModelConfig

REQUIRED = ("group_names", "group_in_train", "train_rows", "epoch_seeds")


@dataclass(frozen=True)
class Reference:
    """The arrays of one reference file (see the module docstring)."""

    path: str
    group_names: tuple[str, ...]
    group_in_train: np.ndarray
    groups: dict[str, np.ndarray]
    train_rows: np.ndarray
    epoch_seeds: np.ndarray
    init: dict[str, np.ndarray]

    @property
    def n_epochs(self) -> int:
        return len(self.epoch_seeds)

    @property
    def gamma(self) -> float:
        """The γ its init was drawn at: -log(std W_Q) / log(d_model), to two decimals (std from 10^4+ draws)."""
        w = self.init["decoder.layers.0.dec_self_attn.W_Q.weight"]
        return round(-math.log(float(w.std())) / math.log(w.shape[1]), 2)


def preflight(cfgs: Sequence[Any]) -> None:
    """Before anything is trained or written: every config's ``task.reference`` (where set) is a file, else one
    line naming the field (the anchor kind's ``preflight`` for ``anchorlab sweep`` / ``reproduce``, and
    :func:`anchorlab.train.train`)."""
    for cfg in cfgs:
        path = getattr(cfg.task, "reference", "")
        if path and not Path(path).is_file():
            raise ConfigError(f"task.reference: allowed values are '' or the path of an existing reference .npz "
                              f"file (got {path!r})")


@lru_cache(maxsize=2)
def load_reference(path: str) -> Reference:
    """Read and check a reference file; a missing or malformed file is a ConfigError on ``task.reference``."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"task.reference: file {path!r} does not exist")
    try:
        z = np.load(p, allow_pickle=False)
        files = set(z.files)
    except (OSError, ValueError) as e:
        raise ConfigError(f"task.reference: {path} is not a readable .npz file ({e})") from None
    missing = [k for k in REQUIRED if k not in files]
    if missing:
        raise ConfigError(f"task.reference: {path} lacks the array {missing[0]!r} (needs {', '.join(REQUIRED)})")
    names = tuple(str(n) for n in z["group_names"])
    groups = {n: z[f"group/{n}"] for n in names}
    ref = Reference(path=str(path), group_names=names, group_in_train=z["group_in_train"].astype(bool),
                    groups=groups, train_rows=z["train_rows"], epoch_seeds=z["epoch_seeds"],
                    init={k[5:]: z[k] for k in z.files if k.startswith("init/")})
    concat = np.concatenate([groups[n] for n, t in zip(names, ref.group_in_train) if t])
    if not np.array_equal(concat, ref.train_rows):
        raise ConfigError(f"task.reference: {path}: train_rows is not the training groups in group order")
    return ref


def _pair_of(name: str) -> tuple[int, int, bool]:
    """'43_xel' -> (4, 3, False); '13_xm0' -> (1, 3, True) (test-type keys)."""
    digits, kind = name.split("_")
    return int(digits[0]), int(digits[1]), kind == "xm0"


def reference_task_data(ref: Reference, task_cfg: Any) -> Any:
    """The reference's groups as our TaskData (rows in the file's group order, names as ours: ``4-3_xel``).

    The key is the token before the anchor pair (anchors are the only tokens below ``task.key_min``);
    a row whose anchors disagree with its group name is an error."""
    from anchorlab.tasks.base import TaskData
    from anchorlab.tasks.composite import group_name

    held_out = {tuple(p) for p in task_cfg.held_out}
    chunks: dict[str, list[np.ndarray]] = {k: [] for k in ("rows", "pair", "key", "key_pos", "test", "group")}
    names = []
    for g, raw in enumerate(ref.group_names):
        a1, a2, test_keys = _pair_of(raw)
        rows = ref.groups[raw].astype(np.int64)
        x = rows[:, :-1]
        pos = (x < task_cfg.key_min).argmax(axis=1) - 1  # first anchor at pos + 1
        r = np.arange(len(x))
        if (pos < 0).any() or not ((x[r, pos + 1] == a1) & (x[r, pos + 2] == a2)).all():
            raise ConfigError(f"task.reference: group {raw} has rows whose anchors are not ({a1}, {a2}); "
                              f"task.key_min {task_cfg.key_min} must separate keys from anchors")
        chunks["rows"].append(rows)
        chunks["pair"].append(np.tile(np.array([a1, a2], dtype=np.int64), (len(x), 1)))
        chunks["key"].append(x[r, pos])
        chunks["key_pos"].append(pos)
        chunks["test"].append(np.full(len(x), test_keys))
        chunks["group"].append(np.full(len(x), g, dtype=np.int64))
        names.append(group_name(a1, a2, test_keys))
    cat = {k: np.concatenate(v) for k, v in chunks.items()}
    in_train = np.concatenate([np.full(len(ref.groups[n]), bool(t)) for n, t in zip(ref.group_names,
                                                                                    ref.group_in_train)])
    held = np.zeros(len(in_train), dtype=bool)
    for a1, a2 in held_out:
        held |= (cat["pair"][:, 0] == a1) & (cat["pair"][:, 1] == a2)
    return TaskData(inputs=cat["rows"][:, :-1], targets=cat["rows"][:, -1], in_train=in_train,
                    group=cat["group"], group_names=names, vocab_size=task_cfg.vocab_size,
                    extra={"pair": cat["pair"], "key": cat["key"], "key_pos": cat["key_pos"],
                           "key_is_test": cat["test"], "held_out": held})


def authors_to_ours(state: dict[str, np.ndarray], cfg: ModelConfig) -> dict[str, torch.Tensor]:
    """The authors' parameters (names and [out, in] layouts) as our model's state dict."""
    H, D, K = cfg.n_heads, cfg.d_model, cfg.d_head

    def t(name: str) -> torch.Tensor:
        if name not in state:
            raise ConfigError(f"task.reference: the file's init lacks {name!r} (model.n_layers {cfg.n_layers}?)")
        return torch.from_numpy(np.asarray(state[name], dtype=np.float32))

    out = {"embed.W_E": t("embedding.tgt_emb.weight"), "pos_embed.W_pos": t("embedding.pos_emb.weight"),
           "unembed.W_U": t("projection.weight").T, "unembed.b_U": t("projection.bias")}
    for i in range(cfg.n_layers):
        a, f = f"decoder.layers.{i}.dec_self_attn.", f"decoder.layers.{i}.pos_ffn."
        for q in "QKV":
            out[f"blocks.{i}.attn.W_{q}"] = t(f"{a}W_{q}.weight").T.reshape(D, H, K).permute(1, 0, 2)
        out[f"blocks.{i}.attn.W_O"] = t(f"{a}fc.weight").T.reshape(H, K, D)
        out[f"blocks.{i}.ln1.w"], out[f"blocks.{i}.ln1.b"] = t(f"{a}layernorm.weight"), t(f"{a}layernorm.bias")
        out[f"blocks.{i}.mlp.W_in"] = t(f"{f}fc.0.weight").T
        out[f"blocks.{i}.mlp.W_out"] = t(f"{f}fc.2.weight").T
        out[f"blocks.{i}.ln2.w"], out[f"blocks.{i}.ln2.b"] = t(f"{f}layernorm.weight"), t(f"{f}layernorm.bias")
    return {k: v.contiguous() for k, v in out.items()}


@torch.no_grad()
def load_authors_init_(model: nn.Module, state: dict[str, np.ndarray], gamma_file: float, gamma: float) -> nn.Module:
    """Load the authors' parameters into ``model``, rescaling every γ-initialized weight from ``gamma_file``
    to ``gamma`` by d_in^(gamma_file − gamma) (d_in: the paper's table, :func:`anchorlab.init.fan_in`)."""
    from anchorlab.init import GAMMA_ROLES, fan_in, param_roles

    ours = authors_to_ours(state, model.cfg)
    params = dict(model.named_parameters())
    if set(ours) != set(params):
        extra = sorted(set(params) ^ set(ours))[0]
        raise ConfigError(f"task.reference: the file's init does not fit this model (parameter {extra}); "
                          "model.name 'gpt' with norm 'post' and the file's sizes is needed")
    for name, role in param_roles(model).items():
        w = ours[name]
        if tuple(w.shape) != tuple(params[name].shape):
            raise ConfigError(f"task.reference: {name} is {tuple(w.shape)} in the file but "
                              f"{tuple(params[name].shape)} in the model; set model sizes to the file's")
        if role in GAMMA_ROLES and gamma != gamma_file:
            w = w * fan_in(role, tuple(w.shape), "paper") ** (gamma_file - gamma)
        params[name].copy_(w)
    return model


def reference_batch_order(ref: Reference, n: int, epoch: int) -> torch.Tensor:
    """The authors' shuffle of epoch ``epoch`` (1-based): randperm(n) from that epoch's recorded seed."""
    if not 1 <= epoch <= ref.n_epochs:
        raise ConfigError(f"train.epochs: the reference file records {ref.n_epochs} epochs of batch order")
    return torch.randperm(n, generator=torch.Generator().manual_seed(int(ref.epoch_seeds[epoch - 1])))
