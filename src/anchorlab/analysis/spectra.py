"""E9/E10 spectra: singular values of every weight matrix, stable rank, embedding-covariance eigenvalues."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn


def _np(W: np.ndarray | Tensor) -> np.ndarray:
    return W.detach().cpu().double().numpy() if isinstance(W, Tensor) else np.asarray(W, dtype=np.float64)


def singular_values(W: np.ndarray | Tensor) -> np.ndarray:
    """Singular values of a 2-D matrix, descending (float64). Computed with torch, which keeps to
    ``torch.set_num_threads`` (numpy's BLAS would spin up its own threads inside a training process)."""
    return torch.linalg.svdvals(torch.from_numpy(_np(W))).numpy()


def stable_rank(s: np.ndarray) -> float:
    """Σ_i (s_i / s_max)² (C-cc's measure); 0 for an all-zero spectrum."""
    s = np.asarray(s, dtype=np.float64)
    return 0.0 if s.size == 0 or s.max() <= 0 else float(((s / s.max()) ** 2).sum())


def weight_matrix(name: str, W: Tensor) -> Tensor:
    """The 2-D matrix of a parameter: 2-D as stored; ``W_Q|W_K|W_V [H, D, K]`` -> [D, H*K] (the
    Linear map from the residual stream to all heads); ``W_O [H, K, D]`` -> [H*K, D]."""
    if W.ndim == 2:
        return W
    if W.ndim != 3:
        raise ValueError(f"{name}: expected a 2-D or 3-D weight, got shape {tuple(W.shape)}")
    H, A, B = W.shape
    if name.endswith("W_O"):
        return W.reshape(H * A, B)
    return W.permute(1, 0, 2).reshape(A, H * B)


def linear_layer_spectra(model: nn.Module) -> dict[str, np.ndarray]:
    """{parameter name: singular values (descending)} for every 2-D or 3-D weight, in model order
    (embeddings W_E, W_pos, attention W_Q/W_K/W_V/W_O, MLP W_in/W_out, unembedding W_U)."""
    with torch.no_grad():
        return {n: singular_values(weight_matrix(n, p)) for n, p in model.named_parameters() if p.ndim in (2, 3)}


def embedding_covariance_eigs(X: np.ndarray | Tensor) -> np.ndarray:
    """Eigenvalues (descending, clipped at 0) of the covariance of the rows of X [n, d] (centred, 1/(n-1))."""
    X = _np(X)
    Xc = X - X.mean(axis=0, keepdims=True)
    cov = Xc.T @ Xc / max(len(X) - 1, 1)
    return np.clip(torch.linalg.eigvalsh(torch.from_numpy(cov)).numpy()[::-1], 0.0, None)


def top_eig_share(eigs: np.ndarray, k: int = 1) -> float:
    """Fraction of the total variance in the ``k`` largest eigenvalues."""
    eigs = np.sort(np.asarray(eigs, dtype=np.float64))[::-1]
    total = eigs.sum()
    return float(eigs[:k].sum() / total) if total > 0 else 0.0
