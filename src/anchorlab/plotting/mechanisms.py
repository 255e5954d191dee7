"""Mechanism figures of P1 (Fig. 3-5, 12, 13): numpy arrays in, a matplotlib Figure out (no torch)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from anchorlab.plotting.style import plt, style

LAYER_GAP = 4.0  # authors' plot_info_flow: nodes of layer l at y = 4·l


def plot_information_flow(flow: np.ndarray, tokens: Sequence[int | str], min_weight: float = 0.0,
                          lw_scale: float = 2.0, title: str = "") -> Figure:
    """Fig. 3a/c. Nodes at (position j, layer l); a line from (j, l) to (k, l+1) of width
    ``lw_scale · flow[l, k, j]`` (authors: lw = 2·attn) for weights >= ``min_weight``; residual
    connections as dashed verticals. ``flow`` [n_layers, P, P] (query, key); ``tokens`` label the positions."""
    flow = np.asarray(flow)
    L, P, _ = flow.shape
    with style():
        fig, ax = plt.subplots(figsize=(0.55 * P + 1.5, 1.1 * L + 1.2))
        for j in range(P):
            ax.plot([j, j], [0, LAYER_GAP * L], ls="--", color="0.75", lw=0.8, zorder=1)
        for l_ in range(L):
            for k in range(P):
                for j in range(k + 1):
                    w = flow[l_, k, j]
                    if w >= min_weight and w > 0:
                        ax.plot([j, k], [LAYER_GAP * l_, LAYER_GAP * (l_ + 1)], color="C3",
                                lw=lw_scale * w, alpha=min(1.0, 0.25 + w), zorder=2)
        xs, ys = np.meshgrid(np.arange(P), LAYER_GAP * np.arange(L + 1))
        ax.scatter(xs.ravel(), ys.ravel(), s=30, color="k", zorder=3)
        ax.set_xticks(range(P), [str(t) for t in tokens])
        ax.set_yticks(LAYER_GAP * np.arange(L + 1), ["input"] + [f"layer {i + 1}" for i in range(L)])
        ax.grid(False)
        ax.set_xlim(-0.5, P - 0.5)
        if title:
            ax.set_title(title)
        fig.tight_layout()
    return fig


def plot_cosine_heatmap(C: np.ndarray, boxes: np.ndarray | None = None,
                        tick_labels: Sequence[int | str] | None = None, title: str = "",
                        xlabel: str = "", ylabel: str = "") -> Figure:
    """Fig. 4/5a,b. Cosine matrix with a diverging map fixed to [−1, 1]; ``boxes`` (bool, same shape)
    outlines cells in red (e.g. equal targets)."""
    C = np.asarray(C)
    with style():
        fig, ax = plt.subplots(figsize=(4.2, 3.6))
        im = ax.imshow(C, cmap="RdBu_r", vmin=-1.0, vmax=1.0, interpolation="nearest")
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
        if boxes is not None:
            for i, j in np.argwhere(np.asarray(boxes)):
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", lw=1.5))
        if tick_labels is not None:
            ax.set_xticks(range(C.shape[1]), [str(t) for t in tick_labels], rotation=90)
            ax.set_yticks(range(C.shape[0]), [str(t) for t in tick_labels])
        ax.grid(False)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if title:
            ax.set_title(title)
        fig.tight_layout()
    return fig


def plot_embedding_pca(coords: np.ndarray, labels: Sequence[int | str], explained: Sequence[float] | None = None,
                       color_values: Sequence[float] | None = None, title: str = "") -> Figure:
    """Fig. 5c,d (PCA in place of t-SNE): 2-D points annotated with ``labels`` (token values), coloured by
    ``color_values`` (default: the label order)."""
    coords = np.asarray(coords)
    c = np.arange(len(coords)) if color_values is None else np.asarray(color_values)
    with style():
        fig, ax = plt.subplots(figsize=(4.2, 3.8))
        sc = ax.scatter(coords[:, 0], coords[:, 1], c=c, cmap="viridis", s=14)
        fig.colorbar(sc, ax=ax, fraction=0.046, pad=0.04)
        for (x, y), lab in zip(coords, labels):
            ax.annotate(str(lab), (x, y), fontsize=6, xytext=(2, 2), textcoords="offset points")
        if explained is not None:
            ax.set_xlabel(f"PC1 ({100 * explained[0]:.1f}%)")
            ax.set_ylabel(f"PC2 ({100 * explained[1]:.1f}%)")
        if title:
            ax.set_title(title)
        fig.tight_layout()
    return fig


def plot_spectra(spectra: Mapping[str, np.ndarray] | Sequence[Mapping[str, np.ndarray]],
                 labels: Sequence[str] | None = None, normalize: bool = False, ncols: int = 4,
                 title: str = "") -> Figure:
    """Fig. 12a/13. One log-y panel per matrix name; each mapping {name: descending values} (one per model,
    e.g. γ 0.5 and γ 0.8) is one line. ``normalize`` divides each spectrum by its maximum."""
    models = [spectra] if isinstance(spectra, Mapping) else list(spectra)
    names = list(dict.fromkeys(n for m in models for n in m))
    nrows = -(-len(names) // ncols)
    with style():
        fig, axes = plt.subplots(nrows, min(ncols, len(names)), figsize=(2.6 * min(ncols, len(names)), 2.1 * nrows),
                                 squeeze=False)
        for ax, name in zip(axes.ravel(), names):
            for i, m in enumerate(models):
                if name in m:
                    s = np.asarray(m[name], dtype=np.float64)
                    s = s / s.max() if normalize and s.max() > 0 else s
                    ax.semilogy(np.arange(1, len(s) + 1), np.maximum(s, 1e-30), marker=".", ms=3, lw=1,
                                label=labels[i] if labels else None, color=f"C{i}")
            ax.set_title(name, fontsize=8)
        for ax in axes.ravel()[len(names):]:
            ax.set_visible(False)
        if labels:
            axes[0][0].legend(fontsize=7)
        if title:
            fig.suptitle(title)
        fig.tight_layout()
    return fig
