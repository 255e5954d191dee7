"""E4/E5/E6/E8 vectors and their geometry: fused last-token vectors, value rows, PCA, cosine matrices."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from anchorlab.analysis.attention import DEFAULT_KEY_POS, DEFAULT_TEMPLATE, probe_tokens
from anchorlab.config import CompositeTaskConfig
from anchorlab.models.hooks import run_with_cache
from anchorlab.tasks.composite import pair_shift


def _np(X: np.ndarray | Tensor) -> np.ndarray:
    return X.detach().cpu().double().numpy() if isinstance(X, Tensor) else np.asarray(X, dtype=np.float64)


def pca_2d(X: np.ndarray | Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Project the rows of X [n, d] on their two leading principal components (centred, via SVD).

    Returns (coords [n, 2], explained variance ratio [2]). The default stand-in for the paper's t-SNE
    (:func:`tsne_2d` needs the optional scikit-learn).
    """
    X = _np(X)
    Xc = X - X.mean(axis=0, keepdims=True)
    U, s, _ = np.linalg.svd(Xc, full_matrices=False)
    total = (s ** 2).sum()
    coords = np.zeros((len(X), 2))
    m = min(2, len(s))
    coords[:, :m] = U[:, :m] * s[:m]
    ratio = np.zeros(2)
    if total > 0:
        ratio[:m] = s[:m] ** 2 / total
    return coords, ratio


def tsne_2d(X: np.ndarray | Tensor, perplexity: float | None = None, seed: int = 5) -> np.ndarray:
    """2-D t-SNE of the rows of X [n, d] (scikit-learn, the optional ``tsne`` extra); ``perplexity`` defaults
    to min(12, (n - 1) / 3) (C-cc used 12). Deterministic for a given ``seed``."""
    try:
        from sklearn.manifold import TSNE
    except ImportError as e:
        raise ImportError("method 'tsne' needs scikit-learn: pip install 'anchorlab[tsne]'") from e
    X = _np(X)
    p = min(12.0, (len(X) - 1) / 3) if perplexity is None else perplexity
    return TSNE(n_components=2, perplexity=p, random_state=seed, init="pca").fit_transform(X)


METHODS_2D = ("pca", "tsne")


def embed_2d(X: np.ndarray | Tensor, method: str = "pca", seed: int = 5) -> tuple[np.ndarray, np.ndarray | None]:
    """(coords [n, 2], explained-variance ratio [2] for PCA or None for t-SNE) by ``method`` "pca" | "tsne"."""
    if method == "pca":
        return pca_2d(X)
    if method == "tsne":
        return tsne_2d(X, seed=seed), None
    raise ValueError(f"method must be one of {METHODS_2D}, got {method!r}")


def cosine_matrix(X: np.ndarray | Tensor, Y: np.ndarray | Tensor | None = None, eps: float = 1e-12) -> np.ndarray:
    """cos(X[i], Y[j]) -> [len(X), len(Y)] (Y defaults to X); zero rows give 0."""
    X = _np(X)
    Y = X if Y is None else _np(Y)
    Xn = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), eps)
    Yn = Y / np.maximum(np.linalg.norm(Y, axis=1, keepdims=True), eps)
    return Xn @ Yn.T


def fused_vectors(model: nn.Module, task_cfg: CompositeTaskConfig, keys: Sequence[int], pair: Sequence[int],
                  template: Sequence[int] = DEFAULT_TEMPLATE, key_pos: int = DEFAULT_KEY_POS,
                  layer: int = 1) -> np.ndarray:
    """E5 v(x; a1, a2): last-token rows of ``blocks.{layer}.hook_resid_mid`` (post-LN: the paper's X^{ao(2)}
    for layer 1) for each key in ``keys`` with anchors ``pair`` in ``template``. Shape [len(keys), D]."""
    x = probe_tokens(task_cfg, keys, pair, template, key_pos)
    name = f"blocks.{layer}.hook_resid_mid"
    _, cache = run_with_cache(model, x, names=[name], stop_early=True)
    return _np(cache[name][:, -1])


def anchor_value_vectors(model: nn.Module, task_cfg: CompositeTaskConfig, keys: Sequence[int], anchor: int,
                         template: Sequence[int] = DEFAULT_TEMPLATE, key_pos: int = DEFAULT_KEY_POS,
                         layer: int = 1) -> np.ndarray:
    """E6 u(x; a1): rows of V^{(layer)} = ``blocks.{layer}.attn.hook_v`` at the first-anchor position,
    heads concatenated, [len(keys), H*K]. The second anchor is set to ``anchor`` too; it cannot affect
    this position because attention is causal."""
    x = probe_tokens(task_cfg, keys, (anchor, anchor), template, key_pos)
    name = f"blocks.{layer}.attn.hook_v"
    _, cache = run_with_cache(model, x, names=[name], stop_early=True)
    v_BPHK = cache[name]
    return _np(v_BPHK[:, key_pos + 1].reshape(len(keys), -1))


def embedding_rows(model: nn.Module, tokens: Sequence[int]) -> np.ndarray:
    """E8/E9: rows of ``W_E`` (``embed.W_E`` of the GPT, ``W_E`` of the Emb-MLP) for ``tokens`` (e.g. items
    ``range(20, 100)``), [len(tokens), D]."""
    W_E = model.embed.W_E if hasattr(model, "embed") else model.W_E
    with torch.no_grad():
        return _np(W_E[torch.as_tensor(list(tokens), dtype=torch.long)])


def item_tokens(task_cfg: Any) -> list[int]:
    """The item (key and noise) tokens of a task, ``key_min..key_max``: the E8/E9 embedding rows."""
    return list(range(task_cfg.key_min, task_cfg.key_max + 1))


def single_anchor_layout(task_cfg: CompositeTaskConfig, targets: Sequence[int]) -> tuple[list[int], list[int]]:
    """E6 layout (C-cc): for each target i, one input per anchor a with key i − shift[a], so the inputs of one
    target share g = i (blocks of len(anchors)). Returns (keys, anchors), target-major; keys outside the
    key range are an error."""
    keys, anchors = [], []
    for i in targets:
        for a, s in zip(task_cfg.anchors, task_cfg.shifts):
            if not task_cfg.key_min <= i - s <= task_cfg.key_max:
                raise ValueError(f"target {i} needs key {i - s} for anchor {a}, outside "
                                 f"{task_cfg.key_min}..{task_cfg.key_max}")
            keys.append(i - s)
            anchors.append(a)
    return keys, anchors


def single_anchor_vectors(model: nn.Module, task_cfg: CompositeTaskConfig, keys: Sequence[int],
                          anchors: Sequence[int], layer: int = 1) -> np.ndarray:
    """E6 u(x; a) for a list of (key, anchor) inputs: :func:`anchor_value_vectors` row by row, [n, H*K]."""
    rows = []
    for a in dict.fromkeys(anchors):
        idx = [i for i, b in enumerate(anchors) if b == a]
        rows.append((idx, anchor_value_vectors(model, task_cfg, [keys[i] for i in idx], a, layer=layer)))
    out = np.zeros((len(keys), rows[0][1].shape[1]))
    for idx, U in rows:
        out[idx] = U
    return out


def attention_output_vectors(model: nn.Module, task_cfg: CompositeTaskConfig, n_per_pair: int = 50,
                             seed: int = 5, template: Sequence[int] = DEFAULT_TEMPLATE,
                             key_pos: int = DEFAULT_KEY_POS) -> tuple[np.ndarray, np.ndarray]:
    """E4 X^{ao(1)}: last-token rows of ``blocks.0.hook_resid_mid`` for ``n_per_pair`` random keys (uniform on
    the key range, seeded) with every ordered pair of distinct anchors in ``template``.
    Returns (vectors [n, D], pairs [n, 2])."""
    g = torch.Generator().manual_seed(seed)
    pairs = [(a, b) for a in task_cfg.anchors for b in task_cfg.anchors if a != b]
    xs, labels = [], []
    for p in pairs:
        keys = torch.randint(task_cfg.key_min, task_cfg.key_max + 1, (n_per_pair,), generator=g).tolist()
        xs.append(probe_tokens(task_cfg, keys, p, template, key_pos))
        labels += [p] * n_per_pair
    name = "blocks.0.hook_resid_mid"
    _, cache = run_with_cache(model, torch.cat(xs), names=[name], stop_early=True)  # the first block alone
    return _np(cache[name][:, -1]), np.asarray(labels, dtype=np.int64)


def order_separation(points: np.ndarray, pairs: np.ndarray) -> float:
    """How far apart the two orders of an anchor pair lie (E4, P1 Fig. 3b): the mean distance between the
    centres of (a,b) and (b,a) over the mean distance between the centres of any two other ordered pairs.
    ``points`` [n, k] (e.g. :func:`attention_output_vectors` in 2-D), ``pairs`` [n, 2]. Near 0: the model sees
    the unordered pair, P1's picture of its symmetric mechanism; near 1: the order is as distinct as another
    pair."""
    labels = [tuple(p) for p in np.asarray(pairs).tolist()]
    order = list(dict.fromkeys(labels))
    centres = {p: np.asarray(points)[[lab == p for lab in labels]].mean(axis=0) for p in order}
    reversed_ = [float(np.linalg.norm(centres[(a, b)] - centres[(b, a)])) for a, b in order
                 if a < b and (b, a) in centres]
    others = [float(np.linalg.norm(centres[p] - centres[q])) for i, p in enumerate(order) for q in order[i + 1:]
              if q != (p[1], p[0])]
    if not reversed_ or not others:
        raise ValueError("order_separation needs both orders of a pair and at least one other pair")
    return float(np.mean(reversed_) / np.mean(others))


def equal_target_mask(keys1: Sequence[int], pair1: Sequence[int], keys2: Sequence[int], pair2: Sequence[int],
                      task_cfg: CompositeTaskConfig) -> np.ndarray:
    """Boolean [len(keys1), len(keys2)]: True where f(keys1[i]; pair1) == f(keys2[j]; pair2) under the
    designated pair shifts (the red boxes of Fig. 4a,b)."""
    t1 = np.asarray(keys1) + pair_shift(task_cfg, *pair1)
    t2 = np.asarray(keys2) + pair_shift(task_cfg, *pair2)
    return t1[:, None] == t2[None, :]


def equal_anchor_target_mask(keys1: Sequence[int], anchor1: int, keys2: Sequence[int], anchor2: int,
                             task_cfg: CompositeTaskConfig) -> np.ndarray:
    """Boolean [len(keys1), len(keys2)]: True where g(keys1[i]; anchor1) == g(keys2[j]; anchor2) (Fig. 4c)."""
    shift = dict(zip(task_cfg.anchors, task_cfg.shifts))
    return (np.asarray(keys1) + shift[anchor1])[:, None] == (np.asarray(keys2) + shift[anchor2])[None, :]
