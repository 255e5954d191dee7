"""Plots of P1's real-task figures (Fig. 6: SCAN / COGS, Fig. 17a: addition) from plain arrays."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from anchorlab.plotting.style import plt, style

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728")  # P1 Fig. 6: blue = small init + large wd, orange = large


def plot_accuracy_vs_size(panels: Sequence[dict[str, Any]], title: str) -> Figure:
    """One panel per ``{"title", "xlabel", "settings": [{"label", "n": [...], "acc": [[seed values] per n]}]}``:
    the mean over seeds as a line with ± std error bars, every seed as a dot."""
    with style():
        # at least 5.5 in wide: the title fits above a single panel too (Fig. 6a alone, without COGS)
        fig, axes = plt.subplots(1, len(panels), figsize=(max(5.5, 3.8 * len(panels)), 3.2), squeeze=False)
        for ax, panel in zip(axes[0], panels):
            for k, s in enumerate(panel["settings"]):
                c = COLORS[k % len(COLORS)]
                n = np.asarray(s["n"], dtype=float)
                mean = np.array([np.mean(v) for v in s["acc"]])
                std = np.array([np.std(v) for v in s["acc"]])
                ax.errorbar(n, mean, yerr=std, color=c, marker="o", ms=4, capsize=3, label=s["label"])
                for x, vals in zip(n, s["acc"]):
                    ax.scatter([x] * len(vals), vals, color=c, s=10, alpha=0.45, lw=0)
            sizes = sorted({x for s in panel["settings"] for x in s["n"]})
            ax.set_xscale("log")
            ax.set_xticks(sizes, [f"{x:,}" for x in sizes], rotation=30)
            ax.minorticks_off()
            ax.set_ylim(-0.02, 1.02)
            ax.set_xlabel(panel["xlabel"])
            ax.set_ylabel("exact-match accuracy")
            ax.set_title(panel["title"], fontsize=10)
        axes[0][0].legend(fontsize=8)
        fig.suptitle(title)
        fig.tight_layout()
    return fig


def plot_accuracy_over_training(settings: Sequence[dict[str, Any]], title: str) -> Figure:
    """Test (solid) and train (dashed) exact match over steps, one colour per ``{"label", "runs": [{"step",
    "test", "train"}]}``; each seed a thin line, their mean bold (where the seeds share their steps)."""
    with style():
        fig, ax = plt.subplots(figsize=(5.2, 3.4))
        for k, s in enumerate(settings):
            c = COLORS[k % len(COLORS)]
            for r in s["runs"]:
                ax.plot(r["step"], r["test"], color=c, lw=0.7, alpha=0.4)
                ax.plot(r["step"], r["train"], color=c, lw=0.7, alpha=0.4, ls="--")
            steps = [tuple(r["step"]) for r in s["runs"]]
            if steps and all(st == steps[0] for st in steps):
                ax.plot(steps[0], np.mean([r["test"] for r in s["runs"]], 0), color=c, lw=2,
                        label=f"{s['label']}: test")
                ax.plot(steps[0], np.mean([r["train"] for r in s["runs"]], 0), color=c, lw=1.5, ls="--",
                        label=f"{s['label']}: train")
        ax.set_xlabel("step")
        ax.set_ylabel("answer exact match")
        ax.set_ylim(-0.02, 1.02)
        ax.legend(fontsize=8)
        ax.set_title(title, fontsize=10)
        fig.tight_layout()
    return fig
