"""E7 condensation: cosine similarity of W_Q neurons, the authors' greedy grouping and the reordering."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn


def wq_neurons(model: nn.Module, layer: int = 0) -> np.ndarray:
    """W_Q output units of ``blocks.{layer}`` as rows, [H*K, D].

    The paper's neurons are rows of the PyTorch Linear weight [out, in]; our storage is input-first
    ``W_Q [H, D, K]``, so neuron (h, k) is the column ``W_Q[h, :, k]``.
    """
    W_HDK = model.blocks[layer].attn.W_Q.detach().cpu()
    H, D, K = W_HDK.shape
    return W_HDK.permute(0, 2, 1).reshape(H * K, D).double().numpy()


def neuron_cosine(W: np.ndarray | Tensor, eps: float = 1e-12) -> np.ndarray:
    """Cosine similarity of the rows of ``W`` [n, d] -> [n, n]; a zero row has cosine 0 with everything."""
    W = W.detach().cpu().double().numpy() if isinstance(W, torch.Tensor) else np.asarray(W, dtype=np.float64)
    norms = np.linalg.norm(W, axis=1, keepdims=True)
    U = W / np.maximum(norms, eps)
    return U @ U.T


def greedy_groups(C: np.ndarray, threshold: float = 0.7) -> list[list[int]]:
    """The authors' grouping: from the first unassigned neuron i, group i with every unassigned j having
    ``C[i, j] > threshold``; repeat until all are assigned. Groups are in creation order, members ascending."""
    C = np.asarray(C)
    n = C.shape[0]
    assigned = np.zeros(n, dtype=bool)
    groups = []
    for i in range(n):
        if assigned[i]:
            continue
        members = [i] + [int(j) for j in np.flatnonzero(~assigned & (C[i] > threshold)) if j != i]
        assigned[members] = True
        groups.append(members)
    return groups


def reorder(C: np.ndarray, groups: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """(C with rows and columns permuted so each group is contiguous, the permutation used)."""
    perm = np.array([i for g in groups for i in g], dtype=np.int64)
    return np.asarray(C)[np.ix_(perm, perm)], perm


def n_groups(C: np.ndarray, threshold: float = 0.7) -> int:
    """Number of greedy groups (singletons included); fewer groups = more condensed."""
    return len(greedy_groups(C, threshold))
