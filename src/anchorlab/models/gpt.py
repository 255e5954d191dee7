"""Decoder-only Transformer of P1 (P1 eq. 3-6, App. A) with TransformerLens parameter names and hook points.

Shapes: B batch, P positions, D = d_model, H = n_heads, K = d_head, F = d_mlp, V = d_vocab.
Parameters are stored input-first (x @ W), as in TransformerLens:
``W_E [V, D]``, ``W_pos [n_ctx, D]``, ``W_Q|W_K|W_V [H, D, K]``, ``W_O [H, K, D]``, ``W_in [D, F]``,
``W_out [F, D]``, ``W_U [D, V]``, ``b_U [V]``; LayerNorm ``w, b [D]``.

Post-LN (the paper's; no final LayerNorm)::  x = LN1(x + Attn(x));  x = LN2(x + MLP(x))
Pre-LN (selectable; adds ``ln_final``)::      x = x + Attn(LN1(x));  x = x + MLP(LN2(x))
No LayerNorm (``norm = "none"``; P2's ablation):: x = x + Attn(x);  x = x + MLP(x)   (no ln1/ln2/ln_final)

Constructors only allocate (``torch.empty``); :func:`anchorlab.init.apply_init` gives every value.
Each module declares the *role* of its parameters in ``param_roles``; the init module maps roles to d_in.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from anchorlab.config import ModelConfig
from anchorlab.models.hooks import HookPoint

ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "tanh": torch.tanh}
NORMS = ("post", "pre", "none")  # model.norm


class Embed(nn.Module):
    param_roles = {"W_E": "embed"}

    def __init__(self, d_vocab: int, d_model: int):
        super().__init__()
        self.W_E = nn.Parameter(torch.empty(d_vocab, d_model))

    def forward(self, tokens: Tensor) -> Tensor:  # [B, P] -> [B, P, D]
        return F.embedding(tokens, self.W_E)


class PosEmbed(nn.Module):
    param_roles = {"W_pos": "pos_embed"}

    def __init__(self, n_ctx: int, d_model: int):
        super().__init__()
        self.W_pos = nn.Parameter(torch.empty(n_ctx, d_model))

    def forward(self, tokens: Tensor) -> Tensor:  # [B, P] -> [P, D] (broadcast over the batch)
        return self.W_pos[: tokens.shape[1]]


class LayerNorm(nn.Module):
    param_roles = {"w": "norm_weight", "b": "norm_bias"}

    def __init__(self, d_model: int, eps: float):
        super().__init__()
        self.w = nn.Parameter(torch.empty(d_model))
        self.b = nn.Parameter(torch.empty(d_model))
        self.eps = eps
        self.hook_normalized = HookPoint()

    def forward(self, x: Tensor) -> Tensor:
        return self.hook_normalized(F.layer_norm(x, x.shape[-1:], self.w, self.b, self.eps))


class Attention(nn.Module):
    """Causal softmax attention written out, so scores and pattern are hookable."""

    param_roles = {"W_Q": "attn_in", "W_K": "attn_in", "W_V": "attn_in", "W_O": "attn_out"}

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        H, D, K = cfg.n_heads, cfg.d_model, cfg.d_head
        self.W_Q = nn.Parameter(torch.empty(H, D, K))
        self.W_K = nn.Parameter(torch.empty(H, D, K))
        self.W_V = nn.Parameter(torch.empty(H, D, K))
        self.W_O = nn.Parameter(torch.empty(H, K, D))
        self.scale = 1.0 / math.sqrt(K)
        for name in ("q", "k", "v", "attn_scores", "pattern", "z", "attn_out"):
            setattr(self, f"hook_{name}", HookPoint())

    def forward(self, x: Tensor, last_only: bool = False) -> Tensor:
        """x [B, P, D] -> [B, P, D]; with ``last_only`` only the last query is computed -> [B, 1, D]."""
        x_q = x[:, -1:] if last_only else x
        q_BPHK = self.hook_q(torch.einsum("bpd,hdk->bphk", x_q, self.W_Q))
        k_BPHK = self.hook_k(torch.einsum("bpd,hdk->bphk", x, self.W_K))
        v_BPHK = self.hook_v(torch.einsum("bpd,hdk->bphk", x, self.W_V))
        scores_BHQP = torch.einsum("bqhk,bphk->bhqp", q_BPHK, k_BPHK) * self.scale
        if not last_only:  # the last query sees every key, so it needs no mask
            P = x.shape[1]
            causal = torch.ones(P, P, dtype=torch.bool, device=x.device).tril()
            scores_BHQP = scores_BHQP.masked_fill(~causal, float("-inf"))
        scores_BHQP = self.hook_attn_scores(scores_BHQP)
        pattern_BHQP = self.hook_pattern(scores_BHQP.softmax(dim=-1))
        z_BQHK = self.hook_z(torch.einsum("bhqp,bphk->bqhk", pattern_BHQP, v_BPHK))
        return self.hook_attn_out(torch.einsum("bqhk,hkd->bqd", z_BQHK, self.W_O))


class MLP(nn.Module):
    param_roles = {"W_in": "mlp_in", "W_out": "mlp_out"}

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.W_in = nn.Parameter(torch.empty(cfg.d_model, cfg.d_mlp))
        self.W_out = nn.Parameter(torch.empty(cfg.d_mlp, cfg.d_model))
        self.act = ACTIVATIONS[cfg.act]
        self.hook_pre, self.hook_post, self.hook_mlp_out = HookPoint(), HookPoint(), HookPoint()

    def forward(self, x: Tensor) -> Tensor:
        post = self.hook_post(self.act(self.hook_pre(x @ self.W_in)))
        return self.hook_mlp_out(post @ self.W_out)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        if cfg.norm not in NORMS:
            raise ValueError(f"model.norm: allowed values are {', '.join(map(repr, NORMS))}, got {cfg.norm!r}")
        self.norm = cfg.norm
        # Without LayerNorm the block has no ln1/ln2 at all (no parameters, no hooks), rather than identities:
        # the parameter list, the init and the stacked weights of batched training then need no special case.
        self.ln1 = LayerNorm(cfg.d_model, cfg.ln_eps) if cfg.norm != "none" else None
        self.attn = Attention(cfg)
        self.ln2 = LayerNorm(cfg.d_model, cfg.ln_eps) if cfg.norm != "none" else None
        self.mlp = MLP(cfg)
        self.hook_resid_pre, self.hook_resid_mid, self.hook_resid_post = HookPoint(), HookPoint(), HookPoint()

    def forward(self, x: Tensor, last_only: bool = False) -> Tensor:
        x = self.hook_resid_pre(x)
        x_q = x[:, -1:] if last_only else x  # the residual stream that continues past attention
        if self.ln1 is None or self.ln2 is None:  # norm "none": the bare residual stream
            x = self.hook_resid_mid(x_q + self.attn(x, last_only))
            return self.hook_resid_post(x + self.mlp(x))
        if self.norm == "pre":
            x = self.hook_resid_mid(x_q + self.attn(self.ln1(x), last_only))
            return self.hook_resid_post(x + self.mlp(self.ln2(x)))
        # Post-LN: resid_mid is the paper's X^{ao} (attention output after its LayerNorm).
        x = self.hook_resid_mid(self.ln1(x_q + self.attn(x, last_only)))
        return self.hook_resid_post(self.ln2(x + self.mlp(x)))


class Unembed(nn.Module):
    param_roles = {"W_U": "unembed", "b_U": "unembed_bias"}

    def __init__(self, d_model: int, d_vocab: int):
        super().__init__()
        self.W_U = nn.Parameter(torch.empty(d_model, d_vocab))
        self.b_U = nn.Parameter(torch.empty(d_vocab))

    def forward(self, x: Tensor) -> Tensor:
        return x @ self.W_U + self.b_U


class GPT(nn.Module):
    """tokens [B, P] -> logits [B, P, V]; ``last_only=True`` -> logits [B, 1, V] of the last position.

    ``last_only`` computes the final block for the last query only (keys and values still for every
    position). Where only the last position is scored it gives the same loss and gradients, ~1.6x faster.
    """

    def __init__(self, cfg: ModelConfig, d_vocab: int):
        super().__init__()
        self.cfg, self.d_vocab = cfg, d_vocab
        self.embed = Embed(d_vocab, cfg.d_model)
        self.pos_embed = PosEmbed(cfg.n_ctx, cfg.d_model)
        self.hook_embed, self.hook_pos_embed = HookPoint(), HookPoint()
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_final = LayerNorm(cfg.d_model, cfg.ln_eps) if cfg.norm == "pre" else None
        self.unembed = Unembed(cfg.d_model, d_vocab)

    def forward(self, tokens: Tensor, last_only: bool = False) -> Tensor:
        if tokens.shape[1] > self.cfg.n_ctx:
            raise ValueError(f"sequence length {tokens.shape[1]} exceeds model.n_ctx = {self.cfg.n_ctx}")
        x = self.hook_embed(self.embed(tokens)) + self.hook_pos_embed(self.pos_embed(tokens))
        for i, block in enumerate(self.blocks):
            x = block(x, last_only and i == len(self.blocks) - 1)
        if self.ln_final is not None:
            x = self.ln_final(x)
        return self.unembed(x)
