"""plot_* functions: arrays or row dicts in, a matplotlib Figure out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matplotlib.figure import Figure

from anchorlab.plotting.style import COLORS, plt, style


def plot_unseen_over_training(curves: Sequence[dict[str, Any]], title: str = "") -> Figure:
    """Held-out-pair accuracy over training, one panel per γ, one line per seed.

    Each curve: ``{"gamma", "std", "seed", "epoch": [...], "inferential": [...], "symmetric": [...],
    "seen_test": [...]}`` and optionally ``"init"`` (a name such as "small", shown in the panel title).
    """
    gammas = sorted({c["gamma"] for c in curves})
    with style():
        fig, axes = plt.subplots(1, len(gammas), figsize=(3.3 * len(gammas), 2.9), sharey=True, squeeze=False)
        for ax, g in zip(axes[0], gammas):
            group = [c for c in curves if c["gamma"] == g]
            for i, c in enumerate(group):
                label = (lambda s: s) if i == 0 else (lambda s: None)
                ax.plot(c["epoch"], c["inferential"], color=COLORS["inferential"], lw=1.4,
                        label=label("inferential (4,3)→x−10"))
                ax.plot(c["epoch"], c["symmetric"], color=COLORS["symmetric"], lw=1.4,
                        label=label("symmetric (4,3)→x−6"))
                ax.plot(c["epoch"], c["seen_test"], color=COLORS["seen_test"], lw=1.0, ls="--",
                        label=label("seen pairs, test keys"))
            name = f"{group[0]['init']} init: " if group[0].get("init") else ""
            ax.set_title(f"{name}γ = {g:g}  (std W_Q = {group[0]['std']:.3g})")
            ax.set_xlabel("epoch")
            ax.set_ylim(-0.03, 1.03)
        axes[0][0].set_ylabel("accuracy")
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=3)
        if title:
            fig.suptitle(title)
        fig.tight_layout(rect=(0, 0.09, 1, 1))
    return fig


def outcome_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """A fixed-width text table of ``rows`` (dicts) over ``columns``; floats with 3 decimals."""
    def fmt(v: Any) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    cells = [[fmt(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c) for i, c in enumerate(columns)]
    line = "  ".join(c.rjust(w) for c, w in zip(columns, widths))
    sep = "  ".join("-" * w for w in widths)
    body = ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join([line, sep, *body])



def plot_phase_diagrams(xs: Sequence[Any], ys: Sequence[Any], grids: dict[str, Any], mask: Any,
                        xlabel: str = "γ", ylabel: str = "depth") -> Figure:
    """One heatmap per metric over (x, y), values annotated, hatched where ``mask`` (P1 Fig. 2a/2b)."""
    import numpy as np

    with style():
        fig, axes = plt.subplots(1, len(grids), figsize=(3.6 * len(grids), 3.0), squeeze=False)
        for ax, (title, grid) in zip(axes[0], grids.items()):
            im = ax.imshow(grid, origin="lower", cmap="viridis", vmin=0, vmax=1, aspect="auto")
            for i in range(len(ys)):
                for j in range(len(xs)):
                    if np.isfinite(grid[i, j]):
                        ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=7,
                                color="white" if grid[i, j] < 0.6 else "black")
                    if mask[i, j]:
                        ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///",
                                                   edgecolor="0.85", lw=0))
            ax.set_xticks(range(len(xs)), [f"{v:g}" if isinstance(v, float) else str(v) for v in xs])
            ax.set_yticks(range(len(ys)), [str(v) for v in ys])
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.set_title(title)
            ax.grid(False)
            fig.colorbar(im, ax=ax, fraction=0.046)
        fig.tight_layout()
    return fig
