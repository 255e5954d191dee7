"""E3 information flow: head-averaged softmax attention of one input, and the probe input it is drawn for."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from anchorlab.config import CompositeTaskConfig

# The authors' fixed noise template (C-cc fig4/figD): key at index 2, anchors at 3 and 4; the three
# zeros are overwritten by key, a1, a2.
DEFAULT_TEMPLATE = (35, 63, 0, 0, 0, 38, 42, 36, 62)
DEFAULT_KEY_POS = 2


def probe_why_not(cfg: Any, min_layers: int = 1) -> str | None:
    """None where a GPT of run config ``cfg`` can be probed with :data:`DEFAULT_TEMPLATE` (the composite task, its
    9 positions, a vocabulary that holds the template's tokens, at least ``min_layers`` layers), else why not."""
    if cfg.task.name != "composite":
        return f"needs the composite task (P1), not {cfg.task.name!r}"
    if cfg.task.seq_len != len(DEFAULT_TEMPLATE):
        return f"the probe template has {len(DEFAULT_TEMPLATE)} positions; task.seq_len is {cfg.task.seq_len}"
    if max(DEFAULT_TEMPLATE) >= cfg.task.vocab_size:
        return (f"the probe template's tokens go up to {max(DEFAULT_TEMPLATE)}; task.vocab_size is "
                f"{cfg.task.vocab_size}")
    if cfg.model.n_layers < min_layers:
        return f"needs at least {min_layers} layers; model.n_layers is {cfg.model.n_layers}"
    return None


def probe_tokens(task_cfg: CompositeTaskConfig, keys: Sequence[int], pair: Sequence[int],
                 template: Sequence[int] = DEFAULT_TEMPLATE, key_pos: int = DEFAULT_KEY_POS) -> Tensor:
    """Token batch [len(keys), seq_len]: ``template`` with key at ``key_pos`` and the pair right after it."""
    if len(template) != task_cfg.seq_len:
        raise ValueError(f"template has {len(template)} tokens; the task's seq_len is {task_cfg.seq_len}")
    if not 0 <= key_pos <= task_cfg.seq_len - 3:
        raise ValueError(f"key_pos {key_pos} leaves no room for two anchors in {task_cfg.seq_len} positions")
    a1, a2 = pair
    x = torch.tensor(template, dtype=torch.long).repeat(len(keys), 1)
    x[:, key_pos] = torch.as_tensor(list(keys), dtype=torch.long)
    x[:, key_pos + 1], x[:, key_pos + 2] = a1, a2
    return x


def probe_contexts(task_cfg: CompositeTaskConfig, keys: Sequence[int], pair: Sequence[int], key_pos: int,
                   n: int, seed: int = 0) -> Tensor:
    """Token batch [n·len(keys), seq_len]: ``n`` noise contexts drawn as the task draws its noise (every position
    uniform over the keys, :func:`~anchorlab.tasks.composite.generate_composite`), each with every key of ``keys``
    at ``key_pos`` and the pair right after it. Row i holds ``keys[i % len(keys)]`` in context ``i // len(keys)``
    (the keys tiled, as :func:`probe_tokens`'s batch repeated): where :func:`probe_tokens` reads one fixed context
    (the authors' template), this reads the task's own spread of them. ``seed`` fixes the contexts (a CPU
    generator: the same contexts on every device)."""
    if n < 1:
        raise ValueError(f"n: a number of contexts >= 1, got {n}")
    if not 0 <= key_pos <= task_cfg.seq_len - 3:
        raise ValueError(f"key_pos {key_pos} leaves no room for two anchors in {task_cfg.seq_len} positions")
    g = torch.Generator().manual_seed(seed)
    noise = torch.randint(task_cfg.key_min, task_cfg.key_max + 1, (n, task_cfg.seq_len), generator=g)
    x = noise.repeat_interleave(len(keys), dim=0)
    x[:, key_pos] = torch.as_tensor(list(keys), dtype=torch.long).repeat(n)
    x[:, key_pos + 1], x[:, key_pos + 2] = pair[0], pair[1]
    return x


def default_probe_input(task_cfg: CompositeTaskConfig, key: int = 99, pair: Sequence[int] = (4, 3),
                        template: Sequence[int] = DEFAULT_TEMPLATE, key_pos: int = DEFAULT_KEY_POS) -> Tensor:
    """The E3 input (Fig. 3): key 99, held-out pair (4, 3), in the authors' template. Shape [1, seq_len]."""
    return probe_tokens(task_cfg, [key], pair, template, key_pos)


def information_flow(patterns: Sequence[Tensor | np.ndarray] | Mapping[str, Tensor]) -> np.ndarray:
    """Head-averaged attention probabilities per layer, [n_layers, P (query k), P (key j)].

    ``patterns`` is a list of per-layer softmax patterns [H, Q, P] (or [1, H, Q, P]), or a
    ``run_with_cache`` cache holding ``blocks.{l}.attn.hook_pattern`` [1, H, Q, P] for one input.
    """
    if isinstance(patterns, Mapping):
        names = sorted((n for n in patterns if n.endswith("attn.hook_pattern")), key=lambda n: int(n.split(".")[1]))
        if not names:
            raise KeyError("the cache holds no blocks.*.attn.hook_pattern entries")
        patterns = [patterns[n] for n in names]
    out = []
    for p in patterns:
        a = p.detach().cpu().numpy() if isinstance(p, Tensor) else np.asarray(p)
        if a.ndim == 4:
            if a.shape[0] != 1:
                raise ValueError(f"information_flow is for one input; got a batch of {a.shape[0]}")
            a = a[0]
        if a.ndim != 3:
            raise ValueError(f"expected a pattern [H, Q, P], got shape {a.shape}")
        out.append(a.astype(np.float64).mean(axis=0))
    return np.stack(out)


def flow_edges(flow: np.ndarray, min_weight: float = 0.0) -> list[tuple[int, int, int, float]]:
    """Edges (layer l, query k, key j, weight) with ``flow[l, k, j] >= min_weight`` and weight > 0,
    sorted by layer, then query, then key. An edge carries position j of layer l to position k of layer l+1."""
    flow = np.asarray(flow)
    ls, ks, js = np.nonzero((flow >= min_weight) & (flow > 0))
    return [(int(l_), int(k), int(j), float(flow[l_, k, j])) for l_, k, j in zip(ls, ks, js)]


def mechanism_edges(key_pos: int = DEFAULT_KEY_POS, last_pos: int = -1,
                    n_pos: int | None = None) -> dict[str, list[tuple[int, int, int]]]:
    """The two mechanisms of P1 Fig. 3 as (layer, query k, key j) edges of a 2-layer flow, anchors at
    ``key_pos + 1`` and ``key_pos + 2``; ``last_pos`` may be negative (counted from ``n_pos``).

    * symmetric: layer 1 moves both anchors to the last position, layer 2 moves the key there;
    * inferential: layer 1 moves the key into both anchor positions, layer 2 moves the anchors to the last.
    """
    if last_pos < 0:
        if n_pos is None:
            raise ValueError("a negative last_pos needs n_pos")
        last_pos += n_pos
    a1, a2 = key_pos + 1, key_pos + 2
    return {"symmetric": [(0, last_pos, a1), (0, last_pos, a2), (1, last_pos, key_pos)],
            "inferential": [(0, a1, key_pos), (0, a2, key_pos), (1, last_pos, a1), (1, last_pos, a2)]}


def mechanism_scores(flow: np.ndarray, key_pos: int = DEFAULT_KEY_POS) -> dict[str, float]:
    """How much of each mechanism the first two layers of ``flow`` [L >= 2, P, P] carry, in [0, 1]:
    the mean over the two layers of the attention the mechanism's queries put on its keys (averaged over
    its queries in a layer). Symmetric: (A1[last, a1] + A1[last, a2] + A2[last, key]) / 2; inferential:
    ((A1[a1, key] + A1[a2, key]) / 2 + A2[last, a1] + A2[last, a2]) / 2."""
    flow = np.asarray(flow, dtype=np.float64)
    if flow.ndim != 3 or flow.shape[0] < 2:
        raise ValueError(f"mechanism_scores needs a flow of at least 2 layers, got shape {flow.shape}")
    out = {}
    for name, edges in mechanism_edges(key_pos, -1, flow.shape[1]).items():
        per_layer = []
        for layer in (0, 1):
            by_query: dict[int, float] = {}
            for l_, k, j in edges:
                if l_ == layer:
                    by_query[k] = by_query.get(k, 0.0) + flow[l_, k, j]
            per_layer.append(float(np.mean(list(by_query.values()))))
        out[name] = float(np.mean(per_layer))
    return out


def probe_information_flow(model: torch.nn.Module, tokens: Tensor) -> np.ndarray:
    """:func:`information_flow` of ``model`` on one input ``tokens`` [1, P] (runs the model once)."""
    from anchorlab.models.hooks import run_with_cache

    names = [f"blocks.{i}.attn.hook_pattern" for i in range(len(model.blocks))]
    _, cache = run_with_cache(model, tokens, names=names)
    return information_flow(cache)


def probe_information_flows(model: torch.nn.Module, tokens: Tensor) -> np.ndarray:
    """:func:`information_flow` of each input of ``tokens`` [N, P], from one forward pass of the batch:
    [N, n_layers, P, P]. Equal to N calls of :func:`probe_information_flow` up to fp32 rounding (a batch's
    matmuls may round differently from one input's)."""
    from anchorlab.models.hooks import run_with_cache

    names = [f"blocks.{i}.attn.hook_pattern" for i in range(len(model.blocks))]
    _, cache = run_with_cache(model, tokens, names=names, stop_early=True)
    patterns = [cache[n].cpu().numpy() for n in names]  # per layer [N, H, Q, P]
    return np.stack([information_flow([p[i] for p in patterns]) for i in range(len(tokens))])


def mean_mechanism_scores(model: torch.nn.Module, task_cfg: CompositeTaskConfig,
                          pair: Sequence[int] = (4, 3)) -> tuple[dict[str, float], int, int]:
    """:func:`mechanism_scores` of ``pair``'s probe input for every key of the task, averaged: (mean score per
    mechanism, the number of keys on which the inferential score is ahead, the number of keys). One input's
    routing (P1 Fig. 3) checked against all of them. The keys' inputs run as one batch (training logs this at
    every evaluation: one forward pass, not one a key)."""
    keys = list(range(task_cfg.key_min, task_cfg.key_max + 1))
    every = [mechanism_scores(flow, DEFAULT_KEY_POS)
             for flow in probe_information_flows(model, probe_tokens(task_cfg, keys, pair))]
    mean = {m: float(np.mean([e[m] for e in every])) for m in every[0]}
    return mean, sum(e["inferential"] > e["symmetric"] for e in every), len(every)

