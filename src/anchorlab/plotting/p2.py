"""P2 figures (Fig. 3-6, 8): arrays and row dicts in, a matplotlib Figure out (no torch, no files)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from anchorlab.plotting.style import grid_margins, plt, style

SET_COLORS = {"mem": "#d62728", "rsn_train": "#1f77b4", "rsn_test": "#2ca02c"}
SET_LABELS = {"mem": "D_mem", "rsn_train": "D_rsn,train", "rsn_test": "D_rsn,test"}


def _band(ax: Axes, x: np.ndarray, ys: np.ndarray, color: str, label: str | None) -> None:
    """Mean over runs (rows of ``ys``) as a line, min..max as a band."""
    ax.plot(x, ys.mean(0), color=color, lw=1.5, label=label)
    if len(ys) > 1:
        ax.fill_between(x, ys.min(0), ys.max(0), color=color, alpha=0.2, lw=0)


def plot_sets_over_training(panels: Sequence[dict[str, Any]], title: str = "") -> Figure:
    """Fig. 3A/B: one column per panel (a γ), loss (top, log) and accuracy (bottom) on the three sets.

    Each panel: ``{"title", "epoch": [E], "loss": {set: [runs, E]}, "acc": {set: [runs, E]}}``."""
    with style():
        fig, axes = plt.subplots(2, len(panels), figsize=(3.4 * len(panels), 5.0), sharex="col", squeeze=False)
        for j, p in enumerate(panels):
            x = np.asarray(p["epoch"])
            for name in p["loss"]:
                lab = SET_LABELS.get(name, name) if j == 0 else None
                _band(axes[0, j], x, np.asarray(p["loss"][name]), SET_COLORS.get(name, "k"), lab)
                _band(axes[1, j], x, np.asarray(p["acc"][name]), SET_COLORS.get(name, "k"), None)
            axes[0, j].set_yscale("log")
            axes[0, j].set_title(p["title"])
            axes[1, j].set_ylim(-0.03, 1.03)
            axes[1, j].set_xlabel("epoch")
        axes[0, 0].set_ylabel("loss")
        axes[1, 0].set_ylabel("accuracy")
        fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="lower center", ncol=3)
        if title:
            fig.suptitle(title)
        # tight_layout's result for these panels: y labels, the shared x axis, the legend below
        grid_margins(fig, 2, len(panels), left=0.85, bottom=0.85, top=0.65 if title else 0.35, wgap=0.67, hgap=0.2)
    return fig


def _heat(ax: Axes, C: np.ndarray, ticks: Sequence[int], title: str, fixed: bool = True) -> Any:
    """Cosine heatmap on the fixed [-1, 1] diverging scale, or (``fixed=False``) on its own range, for
    matrices whose entries are all close to 1 (the theory's)."""
    if fixed:
        im = ax.imshow(C, cmap="RdBu_r", vmin=-1.0, vmax=1.0, interpolation="nearest")
    else:
        im = ax.imshow(C, cmap="viridis", interpolation="nearest")
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    ax.set_xticks(range(len(ticks)), [str(t) for t in ticks], fontsize=6)
    ax.set_yticks(range(len(ticks)), [str(t) for t in ticks], fontsize=6)
    ax.grid(False)
    ax.set_title(title, fontsize=8)
    return im


def plot_cosine_grid(mats: Sequence[tuple[str, np.ndarray, Sequence[int]]], ncols: int = 4,
                     title: str = "") -> Figure:
    """A grid of cosine heatmaps [(title, C, tick labels)], one colour scale [-1, 1]."""
    n = len(mats)
    nrows = (n + ncols - 1) // ncols
    with style():
        fig, axes = plt.subplots(nrows, ncols, figsize=(2.7 * ncols, 2.6 * nrows), squeeze=False)
        im = None
        for ax, (t, C, ticks) in zip(axes.flat, mats):
            im = _heat(ax, C, ticks, t)
        for ax in list(axes.flat)[n:]:
            ax.axis("off")
        if im is not None:
            fig.colorbar(im, ax=axes.ravel().tolist(), fraction=0.02, pad=0.02)
        if title:
            fig.suptitle(title)
    return fig


def plot_fig4(A: Sequence[tuple[str, np.ndarray, Sequence[int]]], centred_P: Mapping[int, np.ndarray],
              C_label: np.ndarray, trained_vs_theory: tuple[np.ndarray, np.ndarray, float],
              label_range: tuple[int, int]) -> Figure:
    """Fig. 4: (A) anchor-embedding cosines at two epochs, (B) P^s - 1/d_vob of the reasoning anchors,
    (C) their cosine matrix, and the trained-vs-theory scatter of the off-diagonal reasoning cosines."""
    with style():
        fig = plt.figure(figsize=(11.5, 5.6))
        gs = fig.add_gridspec(2, max(4, len(A)))
        heat_axes, im = [], None
        for k, (t, C, ticks) in enumerate(A):
            heat_axes.append(fig.add_subplot(gs[0, k]))
            im = _heat(heat_axes[-1], C, ticks, t)
        if im is not None:  # the (A) panels share the fixed [-1, 1] scale: one bar for them
            fig.colorbar(im, cax=heat_axes[-1].inset_axes((1.04, 0.0, 0.05, 1.0)), label="cosine")
        ax = fig.add_subplot(gs[1, :2])
        lo, hi = label_range
        for i, (s, p) in enumerate(centred_P.items()):
            ax.plot(np.arange(lo, hi + 1), p[lo:hi + 1], lw=1.0, color=plt.cm.viridis(i / max(len(centred_P) - 1, 1)),
                    label=f"s = {s}")
        ax.set_xlabel("label i")
        ax.set_title("(B) P^s_i − 1/d_vob, reasoning anchors", fontsize=8)
        ax.legend(ncol=2, fontsize=6)
        _heat(fig.add_subplot(gs[1, 2]), C_label, list(centred_P), "(C) cos(P^s − 1/d, P^s' − 1/d)", fixed=False)
        ax = fig.add_subplot(gs[1, 3])
        x, y, r = trained_vs_theory
        ax.scatter(x, y, s=8)
        ax.plot([min(x.min(), y.min()), 1], [min(x.min(), y.min()), 1], color="0.6", lw=0.8, ls="--")
        ax.set_xlabel("theory cos (C)")
        ax.set_ylabel("trained embedding cos")
        ax.set_title(f"trained vs theory, Pearson r = {r:.3f}", fontsize=8)
        fig.tight_layout()
    return fig


def _pca_scatter(ax: Axes, coords: np.ndarray, labels: Sequence[int], color: Any, title: str,
                 every: int = 1) -> None:
    sc = ax.scatter(coords[:, 0], coords[:, 1], c=color, cmap="viridis", s=10)
    for k in range(0, len(labels), every):
        ax.annotate(str(labels[k]), coords[k], fontsize=5)
    ax.set_title(title, fontsize=8)
    ax.set_xlabel("PC 1")
    ax.set_ylabel("PC 2")
    del sc


def plot_fig5(A: Sequence[tuple[str, np.ndarray, Sequence[int]]], pca: tuple[np.ndarray, Sequence[int], np.ndarray],
              C_eq14: np.ndarray, rsn: Sequence[int], row: dict[str, np.ndarray], row_anchor: int,
              pca_theory: Sequence[tuple[str, np.ndarray, Sequence[int]]]) -> Figure:
    """Fig. 5: (A) anchor cosines, (B) PCA of the embedding matrix, (C) eq. (14) cosines and the
    ``row_anchor`` row trained vs theory, (D) PCA of the constructed embeddings."""
    with style():
        fig = plt.figure(figsize=(12, 6.2))
        gs = fig.add_gridspec(2, 4)
        for k, (t, C, ticks) in enumerate(A[:2]):
            _heat(fig.add_subplot(gs[0, k]), C, ticks, t)
        coords, toks, ratio = pca
        _pca_scatter(fig.add_subplot(gs[0, 2:]), coords, toks, np.asarray(toks),
                     f"(B) PCA of W_E rows ({ratio[0]:.0%}, {ratio[1]:.0%} of variance)", every=3)
        _heat(fig.add_subplot(gs[1, 0]), C_eq14, rsn, "(C) eq. (14): cos(w̃_s, w̃_s')", fixed=False)
        ax = fig.add_subplot(gs[1, 1])
        for name, style_ in (("trained", "-o"), ("eq14", "--s"), ("label", ":^")):
            if name in row:
                ax.plot(rsn, row[name], style_, ms=3, lw=1.2, label={"trained": "trained", "eq14": "eq. (14)",
                                                                      "label": "P^s theory"}[name])
        ax.set_title(f"(C) cos(w_{row_anchor}, w_s)", fontsize=8)
        ax.set_xlabel("anchor s")
        ax.legend(fontsize=7)
        for k, (t, coords_, labels) in enumerate(pca_theory[:2]):
            _pca_scatter(fig.add_subplot(gs[1, 2 + k]), coords_, labels, np.asarray(labels), t,
                         every=1 if len(labels) <= 20 else 5)
        fig.tight_layout()
    return fig


def plot_fig6(mean_attn: np.ndarray, average: np.ndarray, dev: float, sv: np.ndarray,
              align: Mapping[str, tuple[Sequence[int], np.ndarray]]) -> Figure:
    """Fig. 6: (i) first-layer attention vs the averaging operator, (ii) W^V singular values,
    (iii) |cos(u_1, w_s)| for memory and reasoning anchors."""
    with style():
        fig, axes = plt.subplots(1, 4, figsize=(13, 3.1))
        for ax, A, t in ((axes[0], mean_attn, f"(i) layer-1 attention (max |A − avg| = {dev:.3f})"),
                         (axes[1], average, "averaging operator 1/i")):
            ax.imshow(A, cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
            ax.set_title(t, fontsize=8)
            ax.set_xlabel("key position")
            ax.set_ylabel("query position")
            ax.grid(False)
        axes[2].semilogy(np.arange(1, len(sv) + 1), sv, "o-", ms=3)
        axes[2].set_title("(ii) singular values of W^V", fontsize=8)
        axes[2].set_xlabel("index")
        x0 = 0
        for (name, (anchors, cos)), color in zip(align.items(), ("#d62728", "#1f77b4")):
            xs = np.arange(x0, x0 + len(anchors))
            axes[3].bar(xs, cos, color=color, label=name)
            axes[3].set_xticks([])
            x0 += len(anchors) + 1
        axes[3].set_title("(iii) |cos(u_1 of W^V, w_s)|", fontsize=8)
        axes[3].legend(fontsize=7)
        fig.tight_layout()
    return fig


def plot_fig8(left: Sequence[dict[str, Any]], right: Sequence[dict[str, Any]]) -> Figure:
    """Fig. 8. Left: memory accuracy over training per run (``{"label", "epoch", "acc"}``); right: per
    label-range group a histogram of the model's outputs (``{"label", "range": (lo, hi), "pred": [...]}``)."""
    ncols = int(bool(left)) + int(bool(right))
    with style():
        fig, axes = plt.subplots(1, max(ncols, 1), figsize=(5.2 * max(ncols, 1), 3.3), squeeze=False)
        k = 0
        if left:
            ax = axes[0, k]
            for c in left:
                ax.plot(c["epoch"], c["acc"], lw=1.4, label=c["label"])
            ax.set_xlabel("epoch")
            ax.set_ylabel("D_mem accuracy")
            ax.set_title("memory label rules: U(Z) vs U{z−Σa..z+Σa}", fontsize=8)
            ax.legend(fontsize=7)
            k += 1
        if right:
            ax = axes[0, k]
            for i, h in enumerate(right):
                color = plt.cm.viridis(i / max(len(right) - 1, 1))
                lo, hi = h["range"]
                ax.hist(h["pred"], bins=np.arange(min(lo, min(h["pred"], default=lo)) - 0.5,
                                                  max(hi, max(h["pred"], default=hi)) + 1.5, 2),
                        histtype="step", color=color, lw=1.3, density=True, label=h["label"])
                ax.axvspan(lo - 0.5, hi + 0.5, color=color, alpha=0.06)
            ax.set_xlabel("model output token")
            ax.set_title(right[0].get("title", "outputs per label-range group"), fontsize=8)
            ax.legend(fontsize=7)
        fig.tight_layout()
    return fig
