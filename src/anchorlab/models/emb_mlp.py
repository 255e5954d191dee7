"""Emb-MLP of P2 (Definition 1): G(X) = σ(Σ_{s∈X} W_E[s] W_in) W_U, no biases.

Shapes: B batch, P input tokens (the bag (z, a_1, .., a_q)), D = d_model, F = d_mlp, V = d_vocab.
``W_E [V, D]``, ``W_in [D, F]``, ``W_U [F, V]``. The input is the *sum* of the token embeddings, so
the model is order-invariant: (z, 11, 13) and (z, 13, 11) give identical logits.

Init roles (see :mod:`anchorlab.init`): W_E ``embed`` (paper convention d_in = D), W_in ``mlp_in``
(d_in = D), W_U ``unembed`` (d_in = F, its first dimension).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from anchorlab.config import ModelConfig
from anchorlab.models.gpt import ACTIVATIONS
from anchorlab.models.hooks import HookPoint


class EmbMLP(nn.Module):
    """tokens [B, P] -> logits [B, 1, V] (one prediction per sequence, shaped like a last position)."""

    param_roles = {"W_E": "embed", "W_in": "mlp_in", "W_U": "unembed"}

    def __init__(self, cfg: ModelConfig, d_vocab: int):
        super().__init__()
        self.cfg, self.d_vocab = cfg, d_vocab
        self.W_E = nn.Parameter(torch.empty(d_vocab, cfg.d_model))
        self.W_in = nn.Parameter(torch.empty(cfg.d_model, cfg.d_mlp))
        self.W_U = nn.Parameter(torch.empty(cfg.d_mlp, d_vocab))
        self.act = ACTIVATIONS[cfg.act]
        self.hook_embed_sum, self.hook_pre, self.hook_post = HookPoint(), HookPoint(), HookPoint()

    def forward(self, tokens: Tensor, last_only: bool = False) -> Tensor:
        """``last_only`` is accepted for the training loop's interface; the output is always [B, 1, V]."""
        # Summing in sorted token order makes the bag exactly (bitwise) order-invariant in floating point.
        x_BD = self.hook_embed_sum(self.W_E[tokens.sort(dim=1).values].sum(dim=1))
        post_BF = self.hook_post(self.act(self.hook_pre(x_BD @ self.W_in)))
        return (post_BF @ self.W_U)[:, None, :]
