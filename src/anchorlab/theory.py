"""P2 theory in numpy (P2 §4): label distributions P^s (Prop. 1, eq. 6-8), their centred cosine
matrix, the constructed embeddings of eq. (14), and a theory-vs-trained cosine comparison.

Small-init picture: an anchor's embedding drifts along (P^s - 1/d_vob) W_U^T W_in^T, so two anchors'
embeddings align as much as their centred label distributions do. Memory anchors all have P^s = U(Z)
(in expectation over the lookup table) and stay aligned; reasoning anchors have P^s shifted by s and
differentiate with |s_i - s_j|.

Counting convention (``count``): ``"token"`` weights a row by how many times the anchor occurs in it
(the Emb-MLP gradient sums over tokens, and it gives eq. (8): the other anchors uniform on A_rsn);
``"once"`` counts a row once if it contains the anchor (Prop. 1's "samples containing s"). They differ
only through tuples that repeat an anchor, e.g. (12, 12). The check values pinned by the tests are "token".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np

from anchorlab.config import MemRsnTaskConfig
from anchorlab.tasks.base import TaskData
from anchorlab.tasks.mem_rsn import MEM, MIXED, RSN_TEST, anchor_tuples, label_bounds

Count = Literal["token", "once"]


def _anchor_weights(tuples: np.ndarray, anchors: Sequence[int], count: Count) -> np.ndarray:
    """[n_anchors, n_rows]: the weight of each row in each anchor's label distribution."""
    occurrences = (tuples[None, :, :] == np.asarray(anchors)[:, None, None]).sum(-1).astype(float)
    return occurrences if count == "token" else (occurrences > 0).astype(float)


def label_distribution_exact(cfg: MemRsnTaskConfig, count: Count = "token",
                             train_only: bool = False) -> dict[int, np.ndarray]:
    """{anchor s: P^s [vocab_size]}: the label distribution of rows containing s, exactly.

    Every anchor tuple has equal rows, keys are U(Z); a reasoning tuple's label is Z + sum(tuple),
    a looked-up tuple's label is U(Z) (its expectation over the lookup table). ``train_only`` drops
    the masked tuples (D_rsn,test), i.e. the distribution of the training set.
    """
    tuples, codes = anchor_tuples(cfg)
    if train_only:
        tuples, codes = tuples[codes != RSN_TEST], codes[codes != RSN_TEST]
    z = np.arange(cfg.key_min, cfg.key_max + 1)
    dist = np.zeros((len(tuples), cfg.vocab_size))  # label distribution of each tuple's rows
    lookup = (codes == MEM) | (codes == MIXED)
    rsn = np.flatnonzero(~lookup)
    np.add.at(dist, (rsn[:, None], z[None, :] + tuples[rsn].sum(1)[:, None]), 1.0 / len(z))
    lo, hi = label_bounds(cfg, tuples[lookup])  # a looked-up label is U{lo..hi} for each key
    y = np.arange(cfg.vocab_size)[None, None, :]
    inside = (y >= lo[..., None]) & (y <= hi[..., None])
    dist[lookup] = (inside / (hi - lo + 1)[..., None]).mean(axis=1)
    anchors = [*cfg.mem_anchors, *cfg.rsn_anchors]
    w = _anchor_weights(tuples, anchors, count)
    P = (w @ dist) / w.sum(1, keepdims=True)
    return {int(s): P[i] for i, s in enumerate(anchors)}


def label_distribution_empirical(data: TaskData, anchors: Sequence[int], count: Count = "token",
                                 train_only: bool = False) -> dict[int, np.ndarray]:
    """{anchor s: P^s [vocab_size]}: the label histogram of the rows of ``data`` containing s."""
    rows = data.in_train if train_only else np.ones(len(data), dtype=bool)
    w = _anchor_weights(data.extra["pair"][rows], anchors, count)
    y = data.targets[rows]
    out = {}
    for i, s in enumerate(anchors):
        h = np.bincount(y, weights=w[i], minlength=data.vocab_size)
        out[int(s)] = h / h.sum()
    return out


def _stack(P: Mapping[int, np.ndarray] | np.ndarray) -> np.ndarray:
    return np.stack(list(P.values())) if isinstance(P, Mapping) else np.asarray(P, dtype=float)


def cosine_matrix(W: Mapping[int, np.ndarray] | np.ndarray) -> np.ndarray:
    """[n, n] cosine similarities between the rows (or the mapping's values, in order)."""
    W = _stack(W)
    unit = W / np.linalg.norm(W, axis=1, keepdims=True)
    return unit @ unit.T


def centered_cosine_matrix(P: Mapping[int, np.ndarray] | np.ndarray, d_vob: int) -> np.ndarray:
    """[n, n] cosine similarities of P^s - 1/d_vob (the embedding drift directions of Prop. 1)."""
    return cosine_matrix(_stack(P) - 1.0 / d_vob)


def constructed_embeddings(anchors: Sequence[int], d: int, sigma2: float = 12.0, noise_std: float = 0.0,
                           seed: int = 0, subtract_mean: bool = True) -> np.ndarray:
    """Eq. (14): w̃_s[i] = exp(-(i - s)^2 / sigma2) - 1/d + ε for i = 0..d-1, as [len(anchors), d].

    ``subtract_mean`` = True for reasoning anchors, False for keys in Z (eq. 14 has no -1/d for them);
    ε ~ N(0, noise_std^2) iid, from ``np.random.default_rng(seed)``.
    """
    s = np.asarray(anchors, dtype=float)[:, None]
    i = np.arange(d, dtype=float)[None, :]
    w = np.exp(-((i - s) ** 2) / sigma2) - (1.0 / d if subtract_mean else 0.0)
    if noise_std > 0:
        w = w + np.random.default_rng(seed).normal(0.0, noise_std, size=w.shape)
    return w


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a - a.mean(), b - b.mean()
    denom = np.sqrt((a * a).sum() * (b * b).sum())
    return float((a * b).sum() / denom) if denom > 0 else float("nan")


def compare_cosine(theory_C: np.ndarray, trained_C: np.ndarray) -> dict[str, object]:
    """Agreement of two [n, n] cosine matrices over their off-diagonal entries.

    ``pearson_r``: Pearson r over all off-diagonal entries; ``row``: [n] Pearson r of each row's
    off-diagonal entries (e.g. row of s = 15: Fig. 5C bottom); ``max_abs_diff``: largest |difference|.
    """
    theory_C, trained_C = np.asarray(theory_C, float), np.asarray(trained_C, float)
    if theory_C.shape != trained_C.shape or theory_C.shape[0] != theory_C.shape[1]:
        raise ValueError(f"need two square matrices of one shape, got {theory_C.shape} and {trained_C.shape}")
    off = ~np.eye(len(theory_C), dtype=bool)
    return {
        "pearson_r": _pearson(theory_C[off], trained_C[off]),
        "row": np.array([_pearson(theory_C[i, off[i]], trained_C[i, off[i]]) for i in range(len(theory_C))]),
        "max_abs_diff": float(np.abs(theory_C - trained_C)[off].max()),
    }
