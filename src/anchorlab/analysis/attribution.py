"""Direct logit attribution and the logit lens for our GPT, post-LN included (TransformerLens's
``decompose_resid`` / ``logit_attrs`` / ``accumulated_resid`` + unembed, which assume a pre-LN model).

What the unembedding reads at one position is a sum of parts, each written by one component:

* **pre-LN** (and ``norm = "none"``): the residual stream is the plain sum ``embed + pos_embed + Σ_l (attn_out_l
  + mlp_out_l)``; ``ln_final`` (pre-LN only) is applied to every part with its scale frozen at the one it
  computed on the whole stream, and its bias is one more part (``ln_final_b``). This is TransformerLens's
  ``apply_ln_to_stack``, with the bias kept so that the parts add up exactly.
* **post-LN** (P1's model, arXiv 2405.05409 eq. 3-6): every block normalises the stream twice,
  ``x = LN1(x + attn_out)``, ``x = LN2(x + mlp_out)``. Each LN is affine once its scale 1/σ is frozen at the value
  it took on the whole stream, ``LN(Σ c_i) = Σ (c_i − mean c_i)·w/σ + b``; so each part written upstream is
  centred and rescaled by every LN after it, and each LN's bias becomes a part (``0_ln1_b``, ``0_ln2_b``, …).

Either way the parts sum to the unembedding's input at that position (to fp64 rounding of the cached values),
and a part's *direct* effect on a logit is ``part @ W_U[:, token]``; :func:`logit_attrs` gives it per part, with
``b_U`` as a part, so the attributions sum to the logit (or logit difference) the model computed. "Direct" means
through the frozen normalisations only: a part's effect through later attention or MLP inputs is not in it.

Labels follow TransformerLens: ``embed``, ``pos_embed``, ``{l}_attn_out`` (or ``L{l}H{h}`` per head),
``{l}_mlp_out``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor, nn

from anchorlab.config import CompositeTaskConfig


def _norm_of(model: nn.Module) -> str:
    if not hasattr(model, "blocks") or not hasattr(model, "unembed"):
        raise TypeError(f"{type(model).__name__} is not anchorlab's GPT (models.gpt.GPT); attribution reads its "
                        "blocks, LayerNorms and W_U")
    return str(model.cfg.norm)


def attribution_hooks(model: nn.Module, heads: bool = False) -> list[str]:
    """The hook names :func:`decompose_resid` reads (pass as ``run_with_cache(..., names=...)``); with ``heads``,
    each block's ``attn.hook_z`` in place of ``attn.hook_attn_out``; the logit lens reads ``hook_resid_post``."""
    _norm_of(model)
    names = ["hook_embed", "hook_pos_embed"]
    for layer in range(len(model.blocks)):
        names += [f"blocks.{layer}.attn.{'hook_z' if heads else 'hook_attn_out'}", f"blocks.{layer}.mlp.hook_mlp_out",
                  f"blocks.{layer}.hook_resid_post"]
    return names


def _frozen_ln(parts: dict[str, Tensor], ln: nn.Module, bias_label: str) -> dict[str, Tensor]:
    """``ln`` applied to every part with its scale frozen at the whole stream's: centred, times w/σ; its bias
    one more part."""
    stream = sum(parts.values())
    assert isinstance(stream, Tensor)
    sigma = (stream.var(-1, unbiased=False, keepdim=True) + ln.eps).sqrt()
    w = ln.w.detach().to(stream)
    out = {k: (v - v.mean(-1, keepdim=True)) * w / sigma for k, v in parts.items()}
    out[bias_label] = ln.b.detach().to(stream).expand_as(stream)
    return out


def decompose_resid(model: nn.Module, cache: Mapping[str, Tensor], pos: int = -1,
                    heads: bool = False) -> dict[str, Tensor]:
    """{part label: [B, D] float64}: the unembedding's input at position ``pos`` split by the component that wrote
    it (see the module docstring); the values sum to it. ``cache`` is ``run_with_cache``'s, holding at least
    :func:`attribution_hooks`; ``heads`` splits each attention output by head (from ``hook_z`` and ``W_O``)."""
    norm = _norm_of(model)
    missing = [n for n in attribution_hooks(model, heads) if n not in cache and not n.endswith("hook_resid_post")]
    if missing:
        raise KeyError(f"the cache lacks {missing}; run run_with_cache(model, tokens, "
                       f"names=attribution_hooks(model{', heads=True' if heads else ''}))")
    pos_embed = cache["hook_pos_embed"].double()  # [P, D], no batch axis
    parts = {"embed": cache["hook_embed"][:, pos].double(),
             "pos_embed": pos_embed[pos].expand(cache["hook_embed"].shape[0], -1)}
    for layer, block in enumerate(model.blocks):
        if heads:
            z_BHK = cache[f"blocks.{layer}.attn.hook_z"][:, pos].double()
            W_O = block.attn.W_O.detach().double().to(z_BHK.device)
            written = {f"L{layer}H{h}": z_BHK[:, h] @ W_O[h] for h in range(W_O.shape[0])}
        else:
            written = {f"{layer}_attn_out": cache[f"blocks.{layer}.attn.hook_attn_out"][:, pos].double()}
        parts |= written
        if norm == "post":
            parts = _frozen_ln(parts, block.ln1, f"{layer}_ln1_b")
        parts[f"{layer}_mlp_out"] = cache[f"blocks.{layer}.mlp.hook_mlp_out"][:, pos].double()
        if norm == "post":
            parts = _frozen_ln(parts, block.ln2, f"{layer}_ln2_b")
    if model.ln_final is not None:
        parts = _frozen_ln(parts, model.ln_final, "ln_final_b")
    return parts


def _as_index(tokens: int | Sequence[int] | Tensor, batch: int, device: torch.device) -> Tensor:
    t = torch.as_tensor(tokens, dtype=torch.long, device=device)
    return t.expand(batch) if t.ndim == 0 else t


def logit_attrs(model: nn.Module, parts: Mapping[str, Tensor], tokens: int | Sequence[int] | Tensor,
                incorrect: int | Sequence[int] | Tensor | None = None) -> dict[str, Tensor]:
    """{part label: [B]}: each part's direct contribution to the logit of ``tokens`` (one per input, or one for
    all), or to the logit difference ``tokens`` − ``incorrect``; ``b_U`` is its own part. The values sum to what
    the model computed (``logits[:, pos, tokens] − logits[:, pos, incorrect]``)."""
    _norm_of(model)
    first = next(iter(parts.values()))
    B, device = first.shape[0], first.device
    W_U = model.unembed.W_U.detach().double().to(device)
    b_U = model.unembed.b_U.detach().double().to(device)
    t = _as_index(tokens, B, device)
    direction_BD, bias_B = W_U[:, t].T, b_U[t]
    if incorrect is not None:
        u = _as_index(incorrect, B, device)
        direction_BD, bias_B = direction_BD - W_U[:, u].T, bias_B - b_U[u]
    out = {k: (v * direction_BD).sum(-1) for k, v in parts.items()}
    out["b_U"] = bias_B
    return out


def logit_lens(model: nn.Module, cache: Mapping[str, Tensor], pos: int = -1) -> Tensor:
    """[n_layers, B, V] float64: each block's output at ``pos`` read by the unembedding (through ``ln_final`` on a
    pre-LN model, with its own scale). On a post-LN model every block ends in a LayerNorm, so its output is on the
    scale the unembedding reads; the last layer's row is the model's logits."""
    _norm_of(model)
    W_U, b_U = model.unembed.W_U.detach().double(), model.unembed.b_U.detach().double()
    rows = []
    for layer in range(len(model.blocks)):
        name = f"blocks.{layer}.hook_resid_post"
        if name not in cache:
            raise KeyError(f"the cache lacks {name}; run run_with_cache(model, tokens, names=attribution_hooks(model))")
        x = cache[name][:, pos].double()
        if model.ln_final is not None:
            ln = model.ln_final
            x = torch.nn.functional.layer_norm(x, x.shape[-1:], ln.w.detach().double().to(x.device),
                                               ln.b.detach().double().to(x.device), ln.eps)
        rows.append(x @ W_U.to(x.device) + b_U.to(x.device))
    return torch.stack(rows)


class HeldOutProbe(NamedTuple):
    """P1's held-out pair as the attribution and the patching read it: the pair, its inferential and symmetric
    label shifts, and every key of the task (the probe inputs are the pair in Fig. 3's template, one a key)."""

    pair: tuple[int, int]
    inferential: int
    symmetric: int
    keys: list[int]

    @classmethod
    def of(cls, task_cfg: CompositeTaskConfig, pair: Sequence[int] | None = None) -> HeldOutProbe:
        from anchorlab.tasks.composite import inferential_shift, symmetric_shift

        a1, a2 = pair if pair is not None else task_cfg.probe_pair
        return cls((a1, a2), inferential_shift(task_cfg, a1, a2), symmetric_shift(task_cfg, a1, a2),
                   list(range(task_cfg.key_min, task_cfg.key_max + 1)))

    def inputs(self, task_cfg: CompositeTaskConfig, reversed_order: bool = False, key_pos: int | None = None,
               contexts: int = 0, seed: int = 0) -> Tensor:
        """Every key with the pair (``reversed_order``: the pair reversed): in Fig. 3's template (``contexts`` 0,
        its key position unless ``key_pos`` is given), or in ``contexts`` noise contexts drawn as the task draws
        them (:func:`~anchorlab.analysis.attention.probe_contexts`, the key at ``key_pos``, default the template's;
        the same contexts for both orders at one ``seed``). [len(keys)·max(contexts, 1), seq_len], keys tiled."""
        from anchorlab.analysis.attention import DEFAULT_KEY_POS, DEFAULT_TEMPLATE, probe_contexts, probe_tokens

        pair = self.pair[::-1] if reversed_order else self.pair
        at = DEFAULT_KEY_POS if key_pos is None else key_pos
        if contexts == 0:  # the template's own noise, in order around the key's three slots (Fig. 3's at key 2)
            noise = [v for j, v in enumerate(DEFAULT_TEMPLATE) if not DEFAULT_KEY_POS <= j < DEFAULT_KEY_POS + 3]
            return probe_tokens(task_cfg, self.keys, pair, noise[:at] + [0, 0, 0] + noise[at:], at)
        return probe_contexts(task_cfg, self.keys, pair, at, contexts, seed)

    def margin(self, logits: Tensor) -> Tensor:
        """Per input, logit(x + inferential) − logit(x + symmetric) at the last position, float64; a batch of
        several copies of the keys' inputs (patching) repeats the keys."""
        last = logits[:, -1].double()
        x = torch.tensor(self.keys, device=last.device).repeat(len(last) // len(self.keys))[:, None]
        return (last.gather(1, x + self.inferential) - last.gather(1, x + self.symmetric))[:, 0]


def held_out_attribution(model: nn.Module, task_cfg: CompositeTaskConfig, pair: Sequence[int] | None = None,
                         heads: bool = False, key_pos: int | None = None, contexts: int = 0,
                         seed: int = 0) -> dict[str, Any]:
    """P1's held-out pair read through :func:`logit_attrs` and :func:`logit_lens`: for every key x of the task,
    the probe input of ``pair`` (default ``task_cfg.probe_pair``; the authors' Fig. 3 template,
    :func:`~anchorlab.analysis.attention.probe_tokens`, or with ``contexts`` > 0 that many noise contexts drawn
    as the task draws them, the key at ``key_pos``: :meth:`HeldOutProbe.inputs`) and the logit difference
    inferential − symmetric answer (x + shift(a1) + shift(a2) against the reversed pair's answer), split by part.
    Returns ``keys`` [N], ``attrs`` {part: [N]} (summing to ``logit_diff`` [N]), ``answer`` [N] (the model's
    answer minus x), and per layer of the lens the shares of inputs answered inferentially and symmetrically
    (``lens_inferential``, ``lens_symmetric`` [n_layers]); the inferential and symmetric shifts are
    ``inferential`` / ``symmetric``; ``answer_inferential`` / ``answer_symmetric`` [N] are the shares of each
    key's inputs answered so. With contexts, every per-key value is the mean over the contexts (and ``answer``, one
    input's, is left out)."""
    from anchorlab.models.hooks import run_with_cache

    probe = HeldOutProbe.of(task_cfg, pair)
    inf, sym = probe.inferential, probe.symmetric
    logits, cache = run_with_cache(model, probe.inputs(task_cfg, key_pos=key_pos, contexts=contexts, seed=seed),
                                   names=attribution_hooks(model, heads))
    assert logits is not None
    K, n = len(probe.keys), max(contexts, 1)
    x = torch.tensor(probe.keys, device=logits.device).repeat(n)
    attrs = logit_attrs(model, decompose_resid(model, cache, heads=heads), x + inf, x + sym)
    lens = logit_lens(model, cache).argmax(-1) - x  # [L, N·n]: each layer's answer − x

    def per_key(v: Tensor) -> np.ndarray:  # [..., n·K] -> [..., K], the mean over the contexts
        return v.double().reshape(*v.shape[:-1], n, K).mean(-2).cpu().numpy()

    answer = logits[:, -1].argmax(-1) - x
    out = {"keys": np.asarray(probe.keys), "inferential": inf, "symmetric": sym,
           "attrs": {k: per_key(v) for k, v in attrs.items()}, "logit_diff": per_key(probe.margin(logits)),
           "lens_inferential": (lens == inf).double().mean(-1).cpu().numpy(),
           "lens_symmetric": (lens == sym).double().mean(-1).cpu().numpy(), "contexts": contexts}
    out["answer_inferential"], out["answer_symmetric"] = per_key(answer == inf), per_key(answer == sym)
    if contexts == 0:
        out["answer"] = answer.cpu().numpy()
    return out
