"""Mechanism figures of P1 (Fig. 3-5, 10-13, 15, 16): numpy arrays in, a matplotlib Figure out (no torch).

Each panel kind has an axes-level ``draw_*`` function; the ``plot_*`` functions lay panels out.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.ticker import LogLocator, NullLocator

from anchorlab.plotting.style import COLORS, grid_margins, plt, style

LAYER_GAP = 4.0  # authors' plot_info_flow: nodes of layer l at y = 4·l
Edge = tuple[int, int, int]  # (layer l, query k, key j)


NUMERICAL_ZERO = 1e-10  # log-axis panels leave out values below this fraction of the largest (rounding noise)


def _log_points(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(1-based indices, values) of the values a log axis can show: positive and above NUMERICAL_ZERO × max."""
    v = np.asarray(values, dtype=np.float64)
    keep = np.isfinite(v) & (v > 0) & (v >= NUMERICAL_ZERO * (np.nanmax(v) if v.size else 0.0))
    return np.arange(1, len(v) + 1)[keep], v[keep]


def _fit_log_axis(ax: Axes, values: Sequence[np.ndarray]) -> None:
    """Limit a log y-axis to the data drawn (half a decade of margin) instead of matplotlib's default."""
    shown = [v for v in values if len(v)]
    if shown:
        lo, hi = min(float(v.min()) for v in shown), max(float(v.max()) for v in shown)
        ax.set_ylim(lo / 3, hi * 3)


def draw_information_flow(ax: Axes, flow: np.ndarray, tokens: Sequence[int | str], min_weight: float = 0.0,
                          lw_scale: float = 2.0, title: str = "",
                          highlight: Mapping[str, Sequence[Edge]] | None = None) -> None:
    """One flow panel (see :func:`plot_information_flow`). ``highlight`` {mechanism name: edges} draws each
    mechanism's reference edges as thin dotted lines in its colour (``COLORS[name]``), under the flow."""
    flow = np.asarray(flow)
    L, P, _ = flow.shape
    for j in range(P):
        ax.plot([j, j], [0, LAYER_GAP * L], ls="--", color="0.75", lw=0.8, zorder=1)
    for name, edges in (highlight or {}).items():
        for i, (l_, k, j) in enumerate(edges):
            ax.plot([j, k], [LAYER_GAP * l_, LAYER_GAP * (l_ + 1)], ls=":", lw=2.2, zorder=1.5,
                    color=COLORS.get(name, "C2"), label=f"{name} mechanism" if i == 0 else None)
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
    if highlight:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0, -0.12), ncol=2)
    if title:
        ax.set_title(title, fontsize=9)


def plot_information_flow(flow: np.ndarray, tokens: Sequence[int | str], min_weight: float = 0.0,
                          lw_scale: float = 2.0, title: str = "",
                          highlight: Mapping[str, Sequence[Edge]] | None = None) -> Figure:
    """Fig. 3a/c. Nodes at (position j, layer l); a line from (j, l) to (k, l+1) of width
    ``lw_scale · flow[l, k, j]`` (authors: lw = 2·attn) for weights >= ``min_weight``; residual
    connections as dashed verticals. ``flow`` [n_layers, P, P] (query, key); ``tokens`` label the positions."""
    return plot_information_flows([flow], [tokens], [title], [highlight] if highlight else None,
                                  min_weight, lw_scale)


def plot_information_flows(flows: Sequence[np.ndarray], tokens: Sequence[Sequence[int | str]],
                           titles: Sequence[str], highlights: Sequence[Mapping[str, Sequence[Edge]]] | None = None,
                           min_weight: float = 0.0, lw_scale: float = 2.0) -> Figure:
    """Fig. 3a + 3c side by side: one flow panel per model (same input)."""
    L, P = np.asarray(flows[0]).shape[:2]
    with style():
        fig, axes = plt.subplots(1, len(flows), figsize=((0.55 * P + 1.5) * len(flows), 1.1 * L + 2.0),
                                 squeeze=False)
        for i, ax in enumerate(axes[0]):
            draw_information_flow(ax, flows[i], tokens[i], min_weight, lw_scale, titles[i],
                                  highlights[i] if highlights else None)
        fig.tight_layout()
    return fig


def draw_cosine(ax: Axes, C: np.ndarray, boxes: np.ndarray | None = None,
                tick_labels: Sequence[int | str] | None = None, title: str = "", xlabel: str = "",
                ylabel: str = "", colorbar: bool = True) -> None:
    """One cosine panel: ``RdBu_r`` fixed to [−1, 1]; ``boxes`` (bool, same shape) outlined in red."""
    C = np.asarray(C)
    im = ax.imshow(C, cmap="RdBu_r", vmin=-1.0, vmax=1.0, interpolation="nearest")
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    if boxes is not None:
        for i, j in np.argwhere(np.asarray(boxes)):
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", lw=1.5))
    if tick_labels is not None:
        ax.set_xticks(range(C.shape[1]), [str(t) for t in tick_labels], rotation=90, fontsize=6)
        ax.set_yticks(range(C.shape[0]), [str(t) for t in tick_labels], fontsize=6)
    else:
        ax.set_xticks([])
        ax.set_yticks([])
    ax.grid(False)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=9)


def plot_cosine_heatmap(C: np.ndarray, boxes: np.ndarray | None = None,
                        tick_labels: Sequence[int | str] | None = None, title: str = "",
                        xlabel: str = "", ylabel: str = "") -> Figure:
    """Fig. 4/5a,b. Cosine matrix with a diverging map fixed to [−1, 1]; ``boxes`` (bool, same shape)
    outlines cells in red (e.g. equal targets)."""
    return plot_cosine_heatmaps([{"C": C, "boxes": boxes, "tick_labels": tick_labels, "title": title,
                                  "xlabel": xlabel, "ylabel": ylabel}])


def plot_cosine_heatmaps(panels: Sequence[Mapping[str, Any]]) -> Figure:
    """Several cosine panels in a row; each panel is the keyword arguments of :func:`draw_cosine`."""
    with style():
        fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8), squeeze=False)
        for ax, p in zip(axes[0], panels):
            draw_cosine(ax, **p)
        fig.tight_layout()
    return fig


def draw_embedding_pca(ax: Axes, coords: np.ndarray, labels: Sequence[int | str],
                       explained: Sequence[float] | None = None, color_values: Sequence[float] | None = None,
                       title: str = "", annotate: bool = True, colorbar: bool = True) -> None:
    """One annotated 2-D scatter, coloured by ``color_values`` (default: the label order)."""
    coords = np.asarray(coords)
    c = np.arange(len(coords)) if color_values is None else np.asarray(color_values)
    sc = ax.scatter(coords[:, 0], coords[:, 1], c=c, cmap="viridis", s=14)
    if colorbar:
        ax.figure.colorbar(sc, ax=ax, fraction=0.046, pad=0.04)
    if annotate:
        for (x, y), lab in zip(coords, labels):
            ax.annotate(str(lab), (x, y), fontsize=6, xytext=(2, 2), textcoords="offset points")
    if explained is not None:
        ax.set_xlabel(f"PC1 ({100 * explained[0]:.1f}%)")
        ax.set_ylabel(f"PC2 ({100 * explained[1]:.1f}%)")
    if title:
        ax.set_title(title, fontsize=9)


def plot_embedding_pca(coords: np.ndarray, labels: Sequence[int | str], explained: Sequence[float] | None = None,
                       color_values: Sequence[float] | None = None, title: str = "") -> Figure:
    """Fig. 5c,d (PCA in place of t-SNE): 2-D points annotated with ``labels`` (token values), coloured by
    ``color_values`` (default: the label order)."""
    with style():
        fig, ax = plt.subplots(figsize=(4.2, 3.8))
        draw_embedding_pca(ax, coords, labels, explained, color_values, title)
        fig.tight_layout()
    return fig


def plot_condensation_rows(rows: Sequence[Mapping[str, Any]]) -> Figure:
    """Fig. 5: one row per model, W_Q cosine (reordered) on the left and embedding PCA on the right.

    Each row: ``{"C", "cos_title", "coords", "labels", "explained", "pca_title"}`` and optionally
    ``"color_values"`` (e.g. the token values)."""
    with style():
        fig, axes = plt.subplots(len(rows), 2, figsize=(8.6, 3.8 * len(rows)), squeeze=False)
        for (ax_c, ax_p), r in zip(axes, rows):
            draw_cosine(ax_c, r["C"], title=r["cos_title"], xlabel="neuron (reordered)", ylabel="neuron")
            draw_embedding_pca(ax_p, r["coords"], r["labels"], r["explained"], title=r["pca_title"],
                               color_values=r.get("color_values"))
        fig.tight_layout()
    return fig


def plot_panel_grid(xs: Sequence[Any], ys: Sequence[Any], cells: Mapping[tuple[int, int], Mapping[str, Any]],
                    kind: str, xlabel: str, ylabel: str, y_top_first: bool = False, title: str = "") -> Figure:
    """Fig. 10/11/15/16: a grid of small panels, column = ``xs[j]``, row = ``ys[i]``; ``cells[(i, j)]``
    holds :func:`draw_cosine` (``kind="cosine"``) or :func:`draw_embedding_pca` (``kind="pca"``) arguments.
    Rows run bottom→top (``ys[0]`` at the bottom, as P1 Fig. 10) unless ``y_top_first`` (Fig. 16)."""
    if kind not in ("cosine", "pca"):
        raise ValueError(f"kind must be 'cosine' or 'pca', got {kind!r}")
    nr, nc = len(ys), len(xs)
    with style():
        fig, axes = plt.subplots(nr, nc, figsize=(2.3 * nc + 0.8, 2.2 * nr + 0.8), squeeze=False)
        for i in range(nr):
            row = i if y_top_first else nr - 1 - i
            for j in range(nc):
                ax = axes[row][j]
                cell = cells.get((i, j))
                if cell is None:
                    ax.set_axis_off()
                    ax.text(0.5, 0.5, "no run", ha="center", va="center", transform=ax.transAxes)
                    continue
                if kind == "cosine":
                    draw_cosine(ax, colorbar=False, **cell)
                else:
                    ax.set_xticks([])
                    ax.set_yticks([])
                    draw_embedding_pca(ax, annotate=False, colorbar=False, **cell)
                if row == nr - 1:
                    ax.set_xlabel(f"{xlabel} = {xs[j]:g}" if isinstance(xs[j], float) else f"{xlabel} = {xs[j]}",
                                  fontsize=8)
                if j == 0:
                    ax.set_ylabel(f"{ylabel} = {ys[i]}", fontsize=8)
        if title:
            fig.suptitle(title)
        fig.tight_layout()
    return fig


def plot_pair_scatter(coords: np.ndarray, pairs: Sequence[tuple[int, int]], explained: Sequence[float] | None = None,
                      title: str = "") -> Figure:
    """Fig. 3b: 2-D points coloured by anchor pair; (a,b) and (b,a) share a colour, (a,b) with a < b
    filled and (b,a) hollow, so overlapping clusters show the symmetric solution."""
    coords = np.asarray(coords)
    unordered = sorted({tuple(sorted(p)) for p in pairs})
    pairs_arr = np.asarray(pairs)
    with style():
        fig, ax = plt.subplots(figsize=(5.0, 4.0))
        for c, (a, b) in enumerate(unordered):
            color = plt.get_cmap("tab10")(c % 10)
            for first, fill in ((a, True), (b, False)):
                second = b if first == a else a
                if first == second and not fill:
                    continue
                m = (pairs_arr[:, 0] == first) & (pairs_arr[:, 1] == second)
                if m.any():
                    ax.scatter(coords[m, 0], coords[m, 1], s=12, label=f"({first},{second})",
                               facecolors=color if fill else "none", edgecolors=color, lw=0.8)
        if explained is not None:
            ax.set_xlabel(f"PC1 ({100 * explained[0]:.1f}%)")
            ax.set_ylabel(f"PC2 ({100 * explained[1]:.1f}%)")
        ax.legend(fontsize=6, ncol=2, loc="center left", bbox_to_anchor=(1.0, 0.5))
        if title:
            ax.set_title(title, fontsize=9)
        fig.tight_layout()
    return fig


def plot_spectra(spectra: Mapping[str, np.ndarray] | Sequence[Mapping[str, np.ndarray]],
                 labels: Sequence[str] | None = None, normalize: bool = False, ncols: int = 4,
                 title: str = "", notes: Mapping[str, str] | None = None) -> Figure:
    """Fig. 12a/13. One log-y panel per matrix name; each mapping {name: descending values} (one per model,
    e.g. γ 0.5 and γ 0.8) is one line. ``normalize`` divides each spectrum by its maximum; ``notes``
    {name: text} is written in the panel's corner (e.g. the stable ranks)."""
    models = [spectra] if isinstance(spectra, Mapping) else list(spectra)
    names = list(dict.fromkeys(n for m in models for n in m))
    nrows = -(-len(names) // ncols)
    with style():
        fig, axes = plt.subplots(nrows, min(ncols, len(names)), figsize=(2.6 * min(ncols, len(names)), 2.1 * nrows),
                                 squeeze=False)
        for ax, name in zip(axes.ravel(), names):
            drawn = []
            for i, m in enumerate(models):
                if name in m:
                    s = np.asarray(m[name], dtype=np.float64)
                    s = s / s.max() if normalize and s.max() > 0 else s
                    idx, v = _log_points(s)
                    drawn.append(v)
                    ax.semilogy(idx, v, marker=".", ms=3, lw=1, label=labels[i] if labels else None, color=f"C{i}")
            _fit_log_axis(ax, drawn)
            ax.set_title(name, fontsize=8)
            ax.yaxis.set_minor_locator(NullLocator())  # log minor ticks dominate the drawing time
            ax.yaxis.set_major_locator(LogLocator(numticks=5))
            if notes and name in notes:
                ax.text(0.97, 0.95, notes[name], transform=ax.transAxes, ha="right", va="top", fontsize=6)
        for ax in axes.ravel()[len(names):]:
            ax.set_visible(False)
        if labels:
            axes[0][0].legend(fontsize=7)
        if title:
            fig.suptitle(title, fontsize=9)
        grid_margins(fig, nrows, min(ncols, len(names)), left=0.55, bottom=0.4, top=0.6 if title else 0.35,
                     wgap=0.72, hgap=0.55)  # tight_layout's result for these panels (titles, log y, no x label)
    return fig


def plot_covariance_eigs(spectra: Sequence[tuple[str, np.ndarray]],
                         evolutions: Sequence[tuple[str, np.ndarray, np.ndarray]]) -> Figure:
    """Fig. 12: (a) sorted eigenvalues (log-y) of the embedding covariance, one line per model;
    (b...) per model, the leading eigenvalues over training: (label, steps [T], eigs [T, k])."""
    n = 1 + len(evolutions)
    with style():
        fig, axes = plt.subplots(1, n, figsize=(3.6 * n, 3.0), squeeze=False)
        ax = axes[0][0]
        drawn = []
        for i, (label, e) in enumerate(spectra):
            idx, v = _log_points(e)
            drawn.append(v)
            ax.semilogy(idx, v, marker=".", ms=3, lw=1, label=label, color=f"C{i}")
        _fit_log_axis(ax, drawn)
        ax.set_xlabel("index")
        ax.set_ylabel("eigenvalue")
        ax.set_title(f"(a) embedding covariance eigenvalues\n(those < {NUMERICAL_ZERO:g} × largest: numerical zeros, "
                     "not drawn)", fontsize=8)
        ax.legend(fontsize=7)
        for ax, (label, steps, eigs) in zip(axes[0][1:], evolutions):
            eigs = np.asarray(eigs, dtype=np.float64)
            for k in range(eigs.shape[1]):
                ax.plot(steps, eigs[:, k], marker=".", ms=3, lw=1, label=f"λ{k + 1}")
            ax.set_xlabel("step")
            ax.set_title(f"(b) over training: {label}", fontsize=9)
            ax.legend(fontsize=7)
        grid_margins(fig, 1, n, left=0.75, right=0.2, bottom=0.55, top=0.5, wgap=0.75)  # (a)'s two-line title
    return fig


def plot_readouts(runs: Sequence[Sequence[Mapping[str, Any]]], pair: str = "(4,3)") -> Figure:
    """P1's mechanism readouts along training, six panels against epoch (two rows of three), a line per run: the
    held-out pair's answer (inferential solid, symmetric dashed) and its margin logit(inferential) −
    logit(symmetric), the information-flow scores averaged over its keys (symmetric solid, inferential dashed),
    the separation of the two orders of an anchor pair after the first block (E4, log), where the first block
    leaves the pair's order (patching: second anchor's position solid, first dashed) and the first layer's W_Q
    stable rank (log). Each run: rows ``{"label", "epoch", "inferential", "symmetric", "answer_margin",
    "routing_symmetric", "routing_inferential", "order_separation", "order_second_anchor", "order_first_anchor",
    "wq0_stable_rank"}``; a missing or None value is not drawn."""
    cmap = plt.get_cmap("tab10")
    panels = ((("inferential", "-"), ("symmetric", "--")), (("answer_margin", "-"),),
              (("routing_symmetric", "-"), ("routing_inferential", "--")), (("order_separation", "-"),),
              (("order_second_anchor", "-"), ("order_first_anchor", "--")), (("wq0_stable_rank", "-"),))
    titles = (f"{pair}: inferential (solid), symmetric (dashed)",
              f"{pair}: margin logit(inferential) − logit(symmetric),\nmean over keys",
              "routing, mean over keys (Fig. 3):\nsymmetric (solid), inferential (dashed)",
              "(a,b) from (b,a) after block 1 (Fig. 3b),\nover other pairs' distance",
              "order after block 1 (patching): share at the\nsecond anchor (solid), first anchor (dashed)",
              "first layer's W_Q: stable rank")
    with style():
        fig, grid = plt.subplots(2, 3, figsize=(14.5, 7.0), sharex=True)
        axes = grid.ravel()
        for ax, keys, title in zip(axes, panels, titles):
            for i, rows in enumerate(runs):
                for key, ls in keys:
                    pts = [(r["epoch"], float(r[key])) for r in rows if r.get(key) is not None]
                    if pts:
                        ax.plot(*zip(*pts), color=cmap(i % 10), ls=ls, lw=1.2, marker="o", ms=2.5)
            ax.set_title(title, fontsize=9)
        for ax in grid[-1]:
            ax.set_xlabel("epoch")
        axes[0].set_ylim(-0.02, 1.02)
        axes[1].axhline(0, color="0.4", lw=0.8)
        axes[2].set_ylim(0, 1)
        axes[3].set_yscale("log")
        axes[5].set_yscale("log")
        handles = [Line2D([], [], color=cmap(i % 10), lw=2, label=rows[0]["label"]) for i, rows in enumerate(runs)]
        fig.legend(handles=handles, loc="center right", fontsize=8, frameon=False)
        fig.suptitle(f"P1: mechanism readouts over training ({len(runs)} runs)", fontsize=9.5)
        fig.tight_layout(rect=(0, 0, 1 - 2.4 / 14.5, 1))
    return fig


def plot_logit_attribution(panels: Sequence[Mapping[str, Any]]) -> Figure:
    """Direct logit attribution of the held-out pair, one panel per run (``p1-attribution``): a row per part
    (top: the first written), each key's contribution to logit(inferential) − logit(symmetric) as a dot coloured
    by the answer the model gives that key (inferential, symmetric, other: grey), the mean over keys as a bar.
    Each panel: ``{"parts": [label], "values": [n_parts, N], "kinds": [N] of "inferential" | "symmetric" |
    "other", "title"}``."""
    n = len(panels)
    height = max(3.2, 0.32 * max(len(p["parts"]) for p in panels) + 1.6)
    with style():
        fig, axes = plt.subplots(1, n, figsize=(4.6 * n + 0.6, height), squeeze=False, sharey=False)
        rng = np.random.default_rng(0)
        for ax, p in zip(axes[0], panels):
            values = np.asarray(p["values"], dtype=np.float64)
            kinds = np.asarray(p["kinds"])
            ys = np.arange(len(p["parts"]))[::-1]
            ax.barh(ys, values.mean(axis=1), height=0.6, color="0.85", edgecolor="0.5", lw=0.6, zorder=1)
            for kind in ("other", "symmetric", "inferential"):
                pick = kinds == kind
                if pick.any():
                    for y, row in zip(ys, values):
                        jitter = rng.uniform(-0.22, 0.22, pick.sum())
                        ax.scatter(row[pick], y + jitter, s=6, alpha=0.55, lw=0, zorder=2,
                                   color=COLORS.get(kind, "0.55"))
            ax.axvline(0, color="0.3", lw=0.8, zorder=1.5)
            ax.set_yticks(ys, p["parts"], fontsize=8)
            ax.set_xlabel("contribution to logit(inferential) − logit(symmetric)")
            ax.set_title(p["title"], fontsize=8.5)
            ax.grid(axis="y", visible=False)
        handles: list[Any] = [Line2D([], [], ls="", marker="o", ms=5, color=COLORS.get(k, "0.55"),
                                     label=f"key answered {k}") for k in ("inferential", "symmetric", "other")]
        handles.append(Rectangle((0, 0), 1, 1, facecolor="0.85", edgecolor="0.5", lw=0.6, label="mean over keys"))
        fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=8, frameon=False)
        fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def plot_order_patching(panels: Sequence[Mapping[str, Any]]) -> Figure:
    """Activation patching of the anchors' order, one heatmap per run (``p1-patching``). Rows are the sites (top:
    the embeddings, then each block's attention, MLP and output), columns the positions, named by their tokens. A
    cell's colour is the margin logit(inferential) − logit(symmetric) of the clean input with that site and
    position taken from the reversed pair (blue: towards the inferential answer, orange: the symmetric one, white
    0; one scale for all panels); its text is the margin and, where the clean and reversed margins differ, the
    share of that difference the cell moves. Each panel: ``{"margin": [sites, P], "effect": [sites, P] (NaN:
    undefined), "rows": [site label], "tokens": [P] (the column labels: tokens, or roles), "title"}`` and
    optionally ``"xlabel"``; a NaN margin (a role that never occurs) is left blank."""
    from matplotlib.colors import LinearSegmentedColormap

    cmap = LinearSegmentedColormap.from_list("sym_inf", [COLORS["symmetric"], "white", COLORS["inferential"]])
    top = max(float(np.nanmax(np.abs(p["margin"]))) for p in panels) or 1.0
    n = len(panels)
    n_rows = max(len(p["rows"]) for p in panels)
    n_cols = max(len(p["tokens"]) for p in panels)

    def pct(v: float) -> str:
        return f"{100 * v:.0f} %".replace("-0 %", "0 %")

    wide = max(len(str(t)) for p in panels for t in p["tokens"]) > 3  # roles, not tokens: two-line labels
    with style():  # one panel a row: each is a wide strip (sites × positions, or roles)
        fig, axes = plt.subplots(n, 1, figsize=((1.3 if wide else 0.85) * n_cols + 3.2,
                                                (0.42 * n_rows + 1.0) * n + 0.3), squeeze=False)
        for ax, p in zip(axes[:, 0], panels):
            M, E = np.asarray(p["margin"], dtype=np.float64), np.asarray(p["effect"], dtype=np.float64)
            im = ax.imshow(M, cmap=cmap, vmin=-top, vmax=top, aspect="auto", interpolation="nearest")
            for i in range(M.shape[0]):
                for j in range(M.shape[1]):
                    if np.isnan(M[i, j]):
                        continue
                    text = f"{M[i, j]:+.1f}" + ("" if np.isnan(E[i, j]) else f"\n{pct(E[i, j])}")
                    ax.text(j, i, text, ha="center", va="center", fontsize=7)
            labels = [str(t) for t in p["tokens"]]
            ax.set_xticks(range(M.shape[1]), [textwrap.fill(s, 13) for s in labels] if wide else labels,
                          fontsize=7 if wide else 8)
            ax.set_yticks(range(M.shape[0]), p["rows"], fontsize=8)
            ax.set_title(p["title"], fontsize=8.5)
            ax.grid(False)
        axes[-1, 0].set_xlabel(panels[-1].get("xlabel", "position (its token; x: the key)"))
        fig.tight_layout(rect=(0, 0, 0.9, 1))
        cax = fig.add_axes((0.91, 0.15, 0.015, 0.7))
        fig.colorbar(im, cax=cax, label="patched margin:\nlogit(inferential) − logit(symmetric)")
    return fig
