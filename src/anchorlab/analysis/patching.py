"""Activation patching over the residual stream (TransformerLens's ``get_act_patch_resid_pre`` pattern): run a
clean input with the residual stream at one (site, position) taken from a corrupted input, and measure how far
a metric moves from its clean value towards its corrupted one.

For P1's held-out pair the natural corruption is the order of the anchors: clean (4,3), corrupted (3,4), the same
key and noise. A composer answers them differently (x − 10 and x − 6), so patching shows where in the network
the order that decides the answer sits, position by position and layer by layer (P1 Fig. 3's information flow,
measured causally instead of read from the attention). A symmetric model answers both x − 6: the order does not
reach its answer, and there is nothing to patch (P1 Fig. 3b: after the first block (a,b) and (b,a) coincide).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from anchorlab.config import CompositeTaskConfig
from anchorlab.models.hooks import run_with_cache, run_with_hooks

MIN_GAP = 1.0  # logits: below this clean-to-corrupted gap of the metric, the normalised effect is not drawn


def _n_blocks(model: nn.Module) -> int:
    if not isinstance(getattr(model, "blocks", None), nn.ModuleList):
        raise TypeError(f"{type(model).__name__} is not anchorlab's GPT (models.gpt.GPT): it has no residual blocks")
    return len(model.blocks)


def resid_sites(model: nn.Module) -> list[str]:
    """Each block's input ``blocks.{l}.hook_resid_pre`` (block 0's: the embeddings), in forward order: the points
    of the residual stream where patching one position can give different results. After its attention a block
    acts on each position alone (LayerNorm, MLP), so patching a position's ``hook_resid_mid`` or
    ``hook_resid_post`` gives what patching the next block's input there gives; and past the last attention only
    the last position reaches the logits."""
    return [f"blocks.{layer}.hook_resid_pre" for layer in range(_n_blocks(model))]


def order_sites(model: nn.Module, components: bool = True) -> list[tuple[str, str]]:
    """(hook name, label) of what :func:`order_patching` patches, in forward order: the embeddings
    (``blocks.0.hook_resid_pre``), each block's output but the last (the next block's ``hook_resid_pre``) and, with
    ``components``, each block's attention and MLP outputs before it (``attn.hook_attn_out``, ``mlp.hook_mlp_out``).
    Blocks are counted from 1, as in P1."""
    n = _n_blocks(model)
    out = [("blocks.0.hook_resid_pre", "embeddings")]
    for layer in range(n):
        if components:
            out += [(f"blocks.{layer}.attn.hook_attn_out", f"block {layer + 1} attention"),
                    (f"blocks.{layer}.mlp.hook_mlp_out", f"block {layer + 1} MLP")]
        if layer < n - 1:
            out.append((f"blocks.{layer + 1}.hook_resid_pre", f"block {layer + 1} output"))
    return out


def patch_resid(model: nn.Module, clean: Tensor, corrupted: Tensor, metric: Callable[[Tensor], Tensor],
                sites: Sequence[str] | None = None, cache: dict[str, Tensor] | None = None) -> np.ndarray:
    """[len(sites), P]: ``metric(logits)`` (one value per input, averaged here) of ``clean`` [B, P] run with the
    activation at (site, position) replaced by that of ``corrupted`` [B, P] (default sites: :func:`resid_sites`).
    One forward pass per site, of the P patched copies of the batch together ([P·B, P]). ``cache``: the corrupted
    run's activations at ``sites``, where the caller has them already (``run_with_cache(model, corrupted,
    names=sites)``); otherwise that pass is made here."""
    sites = resid_sites(model) if sites is None else list(sites)
    if clean.shape != corrupted.shape:
        raise ValueError(f"clean {tuple(clean.shape)} and corrupted {tuple(corrupted.shape)} differ in shape")
    B, P = clean.shape
    if cache is None:
        _, cache = run_with_cache(model, corrupted, names=sites)
    elif missing := [s for s in sites if s not in cache]:
        raise KeyError(f"the cache has no activation at {', '.join(missing)}")
    out = np.zeros((len(sites), P))
    for i, site in enumerate(sites):
        def put(x: Tensor, name: str) -> Tensor:  # copy p of the batch gets position p from the corrupted run
            x = x.clone()
            for p in range(P):
                x[p * B:(p + 1) * B, ..., p, :] = cache[name][..., p, :].to(x)
            return x
        logits = run_with_hooks(model, clean.repeat(P, 1), fwd_hooks=[(site, put)])
        out[i] = metric(logits).double().reshape(P, B).mean(-1).cpu().numpy()
    return out


def order_patching(model: nn.Module, task_cfg: CompositeTaskConfig, pair: Sequence[int] | None = None,
                   components: bool = True) -> dict[str, Any]:
    """P1's held-out pair (default ``task_cfg.probe_pair``) against its reversed order, every key of the task in
    Fig. 3's template (:func:`~anchorlab.analysis.attention.probe_tokens`), patched site by site
    (:func:`patch_resid` over :func:`order_sites`; ``components``: each block's attention and MLP outputs too).
    The metric is the margin logit(inferential answer) − logit(symmetric answer) at the last position. Returns
    ``sites`` (hook names) and ``names`` (their labels), ``tokens`` (the template, key and anchors in place, the
    key shown as "x"),
    ``margin`` [sites, P] (mean over keys), ``clean`` / ``corrupted`` (their unpatched means), ``effect``
    [sites, P] = (margin − clean) / (corrupted − clean), NaN where the gap is under :data:`MIN_GAP` logits, and
    the inferential / symmetric shifts."""
    from anchorlab.analysis.attention import DEFAULT_KEY_POS, DEFAULT_TEMPLATE, probe_tokens
    from anchorlab.analysis.attribution import HeldOutProbe

    probe = HeldOutProbe.of(task_cfg, pair)
    (a1, a2), margin = probe.pair, probe.margin
    device = next(model.parameters()).device
    clean = probe_tokens(task_cfg, probe.keys, (a1, a2)).to(device)
    corrupted = probe_tokens(task_cfg, probe.keys, (a2, a1)).to(device)
    sites, names = zip(*order_sites(model, components))
    with torch.no_grad():
        m_clean = float(margin(model(clean)).mean())
        logits, cache = run_with_cache(model, corrupted, names=sites)  # the corrupted run, once
        assert logits is not None
        m_corrupt = float(margin(logits).mean())
    grid = patch_resid(model, clean, corrupted, margin, sites, cache=cache)
    gap = m_corrupt - m_clean
    effect = (grid - m_clean) / gap if abs(gap) >= MIN_GAP else np.full_like(grid, np.nan)
    tokens: list[int | str] = list(DEFAULT_TEMPLATE)
    tokens[DEFAULT_KEY_POS:DEFAULT_KEY_POS + 3] = ["x", a1, a2]
    return {"sites": list(sites), "names": list(names), "tokens": tokens, "margin": grid, "clean": m_clean,
            "corrupted": m_corrupt, "effect": effect, "inferential": probe.inferential, "symmetric": probe.symmetric,
            "pair": probe.pair}
