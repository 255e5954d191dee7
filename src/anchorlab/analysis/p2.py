"""P2 analyses (P2 §4-5, Fig. 4-8): anchor-embedding geometry against the label-distribution theory,
the first attention layer as an averaging operator, and the W^V alignment. Pure functions on weights
and activations (numpy out), plus :func:`first_layer_pattern`, which runs the model once.

Conventions: ``W_E`` [d_vocab, d_model] rows are token embeddings (both models name it ``W_E``);
``W_V`` of head h is [d_model, d_head], so its left singular vectors live in the embedding space.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from anchorlab.analysis.embeddings import cosine_matrix
from anchorlab.config import MemRsnTaskConfig
from anchorlab.theory import (
    centered_cosine_matrix,
    compare_cosine,
    constructed_embeddings,
    label_distribution_exact,
)


def embedding_matrix(model: nn.Module) -> np.ndarray:
    """W_E [d_vocab, d_model] of a GPT (``embed.W_E``) or an Emb-MLP (``W_E``), as float64."""
    params = dict(model.named_parameters())
    W = params.get("embed.W_E", params.get("W_E"))
    if W is None:
        raise KeyError(f"no token embedding W_E among {sorted(params)}")
    return W.detach().cpu().double().numpy()


def anchor_cosines(W_E: np.ndarray, cfg: MemRsnTaskConfig) -> dict[str, np.ndarray]:
    """Fig. 4A / 5A: cosine matrices among the memory anchors' and among the reasoning anchors' embeddings."""
    out = {"mem": cosine_matrix(W_E[list(cfg.mem_anchors)])}
    if cfg.rsn_anchors:
        out["rsn"] = cosine_matrix(W_E[list(cfg.rsn_anchors)])
    return out


def theory_cosines(cfg: MemRsnTaskConfig, count: str = "token") -> dict[str, np.ndarray]:
    """The theory's reasoning-anchor cosine matrices: of P^s - 1/d_vob over the training set (Prop. 1,
    Fig. 4C, ``label``) and of the constructed embeddings of eq. (14) (Fig. 5C top, ``eq14``)."""
    P = label_distribution_exact(cfg, count=count, train_only=True)
    rsn = list(cfg.rsn_anchors)
    return {"label": centered_cosine_matrix({s: P[s] for s in rsn}, cfg.vocab_size),
            "eq14": cosine_matrix(constructed_embeddings(rsn, cfg.vocab_size))}


def theory_vs_trained(W_E: np.ndarray, cfg: MemRsnTaskConfig, row_anchor: int = 15) -> dict[str, Any]:
    """Fig. 5C bottom / App. B.7: the trained reasoning-anchor cosine matrix against each theory matrix.

    Returns {"trained": C, "label": C, "eq14": C, "r_label", "r_eq14" (Pearson r over off-diagonal
    entries), "row_anchor", "row_<name>" (the ``row_anchor`` row of each matrix)}."""
    trained = anchor_cosines(W_E, cfg)["rsn"]
    theory = theory_cosines(cfg)
    i = list(cfg.rsn_anchors).index(row_anchor)
    out: dict[str, Any] = {"trained": trained, **theory, "row_anchor": row_anchor, "row_trained": trained[i]}
    for name, C in theory.items():
        out[f"r_{name}"] = compare_cosine(C, trained)["pearson_r"]
        out[f"row_{name}"] = C[i]
    return out


def averaging_operator(n: int) -> np.ndarray:
    """The causal averaging operator: row i (1-indexed) is 1/i on columns j <= i (Lemma 1)."""
    return np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]


def attention_vs_average(pattern: np.ndarray | Tensor) -> dict[str, Any]:
    """Fig. 6 (i): the mean attention matrix over a batch [B, Q, P] (or one [Q, P]) against the averaging
    operator: {"mean": [Q, P], "average": [Q, P], "max_abs_dev", "mean_abs_dev" (over the causal part)}."""
    A = pattern.detach().cpu().double().numpy() if isinstance(pattern, Tensor) else np.asarray(pattern, float)
    A = A.reshape(-1, *A.shape[-2:]).mean(0)
    avg = averaging_operator(A.shape[-1])
    causal = np.tril(np.ones_like(avg, dtype=bool))
    dev = np.abs(A - avg)[causal]
    return {"mean": A, "average": avg, "max_abs_dev": float(dev.max()), "mean_abs_dev": float(dev.mean())}


@torch.no_grad()
def first_layer_pattern(model: nn.Module, inputs: Tensor, head: int = 0) -> np.ndarray:
    """Softmax attention of layer 0, head ``head``, on ``inputs`` [B, P] -> [B, P, P]."""
    from anchorlab.models.hooks import run_with_cache

    _, cache = run_with_cache(model.eval(), inputs, names=["blocks.0.attn.hook_pattern"], stop_early=True)
    return cache["blocks.0.attn.hook_pattern"][:, head].double().numpy()


def wv_alignment(W_V: np.ndarray | Tensor, W_E: np.ndarray, anchors: Sequence[int]) -> dict[str, np.ndarray]:
    """Fig. 6 (ii)-(iii): singular values of W^V [d_model, d_head] (descending) and |cos(u_1, w_s)|, the
    alignment of its top left singular vector with each anchor's embedding."""
    W = W_V.detach().cpu().double().numpy() if isinstance(W_V, Tensor) else np.asarray(W_V, float)
    U, s, _ = np.linalg.svd(W, full_matrices=False)
    E = W_E[list(anchors)]
    cos = np.abs(E @ U[:, 0]) / np.maximum(np.linalg.norm(E, axis=1), 1e-12)
    return {"singular_values": s, "abs_cos_u1": cos}
