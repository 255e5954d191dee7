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
                   components: bool = True, key_pos: int | None = None, contexts: int = 0,
                   seed: int = 0) -> dict[str, Any]:
    """P1's held-out pair (default ``task_cfg.probe_pair``) against its reversed order, every key of the task in
    Fig. 3's template (:func:`~anchorlab.analysis.attention.probe_tokens`), or with ``contexts`` > 0 in that many
    noise contexts drawn as the task draws them, the key at ``key_pos`` (default the template's; the same contexts
    for both orders: :meth:`~anchorlab.analysis.attribution.HeldOutProbe.inputs`), patched site by site
    (:func:`patch_resid` over :func:`order_sites`; ``components``: each block's attention and MLP outputs too).
    The metric is the margin logit(inferential answer) − logit(symmetric answer) at the last position. Returns
    ``sites`` (hook names) and ``names`` (their labels), ``tokens`` (the template's, or "·" for drawn noise, with
    the key shown as "x" and the anchors in place), ``key_pos``,
    ``margin`` [sites, P] (mean over keys and contexts), ``clean`` / ``corrupted`` (their unpatched means),
    ``effect`` [sites, P] = (margin − clean) / (corrupted − clean), NaN where the gap is under :data:`MIN_GAP`
    logits, and the inferential / symmetric shifts."""
    from anchorlab.analysis.attention import DEFAULT_KEY_POS
    from anchorlab.analysis.attribution import HeldOutProbe

    probe = HeldOutProbe.of(task_cfg, pair)
    (a1, a2), margin = probe.pair, probe.margin
    at = DEFAULT_KEY_POS if key_pos is None else key_pos
    device = next(model.parameters()).device
    clean = probe.inputs(task_cfg, False, at, contexts, seed).to(device)
    corrupted = probe.inputs(task_cfg, True, at, contexts, seed).to(device)
    sites, names = zip(*order_sites(model, components))
    with torch.no_grad():
        m_clean = float(margin(model(clean)).mean())
        logits, cache = run_with_cache(model, corrupted, names=sites)  # the corrupted run, once
        assert logits is not None
        m_corrupt = float(margin(logits).mean())
    grid = patch_resid(model, clean, corrupted, margin, sites, cache=cache)
    gap = m_corrupt - m_clean
    effect = (grid - m_clean) / gap if abs(gap) >= MIN_GAP else np.full_like(grid, np.nan)
    tokens: list[int | str] = list(clean[0].tolist()) if contexts == 0 else ["·"] * task_cfg.seq_len
    tokens[at:at + 3] = ["x", a1, a2]
    return {"sites": list(sites), "names": list(names), "tokens": tokens, "key_pos": at, "margin": grid,
            "clean": m_clean, "corrupted": m_corrupt, "effect": effect, "inferential": probe.inferential,
            "symmetric": probe.symmetric, "pair": probe.pair}


ROLES = ("noise before the key", "key", "first anchor", "second anchor", "noise after the pair", "last position")


def role_of(position: int, key_pos: int, seq_len: int) -> str | None:
    """The role (:data:`ROLES`) of ``position`` in an input with the key at ``key_pos``; None for the second
    anchor when it is the last position (key at ``seq_len − 3``: the two roles are one position there)."""
    if key_pos == seq_len - 3 and position == seq_len - 1:
        return None
    if position == seq_len - 1:
        return "last position"
    offset = position - key_pos
    return ("noise before the key" if offset < 0 else ("key", "first anchor", "second anchor")[offset]
            if offset < 3 else "noise after the pair")


def order_patching_by_role(model: nn.Module, task_cfg: CompositeTaskConfig, pair: Sequence[int] | None = None,
                           components: bool = True, contexts: int = 4, seed: int = 0) -> dict[str, Any]:
    """:func:`order_patching` at every key position the task draws (0 … seq_len − 3), ``contexts`` noise contexts
    each (context seed ``seed`` + key position), read by role instead of by position: the positions of a role
    (:data:`ROLES`; :func:`role_of`) are averaged within a key position, and the key positions where the role
    exists are averaged, each normalised by its own clean-to-reversed gap (NaN where under :data:`MIN_GAP`). So
    every key position weighs the same, as in the task, whose key position is uniform. The key position that
    puts the second anchor last (its roles are one position) enters only its other roles. Returns ``roles``,
    ``sites``, ``names``, ``margin`` / ``effect`` [sites, roles] (NaN where a role never occurs), ``clean`` /
    ``corrupted`` (means over key positions) and ``by_key_pos`` (each key position's :func:`order_patching`)."""
    if contexts < 1:
        raise ValueError(f"contexts: a number of noise contexts per key position >= 1, got {contexts}")
    L = task_cfg.seq_len
    runs = [order_patching(model, task_cfg, pair, components, kp, contexts, seed + kp) for kp in range(L - 2)]
    n_sites = len(runs[0]["sites"])
    margin = np.full((n_sites, len(ROLES)), np.nan)
    effect = np.full((n_sites, len(ROLES)), np.nan)
    for i, role in enumerate(ROLES):
        m_rows, e_rows = [], []
        for r in runs:
            cols = [j for j in range(L) if role_of(j, r["key_pos"], L) == role]
            if cols:
                m_rows.append(r["margin"][:, cols].mean(-1))
                e_rows.append(r["effect"][:, cols].mean(-1))
        if m_rows:
            margin[:, i] = np.mean(m_rows, axis=0)
            e = np.stack(e_rows)  # a key position with no gap is NaN throughout; a role seen only there stays NaN
            effect[:, i] = np.nan if np.isnan(e).all() else np.nanmean(e, axis=0)
    return {"roles": list(ROLES), "sites": runs[0]["sites"], "names": runs[0]["names"], "margin": margin,
            "effect": effect, "clean": float(np.mean([r["clean"] for r in runs])),
            "corrupted": float(np.mean([r["corrupted"] for r in runs])), "by_key_pos": runs,
            "contexts": contexts, "inferential": runs[0]["inferential"], "symmetric": runs[0]["symmetric"],
            "pair": runs[0]["pair"]}
