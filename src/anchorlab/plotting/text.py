"""Plots of the real-language figures (P2 Fig. 1, 7A, 7B; P1 Fig. 7); every function takes arrays."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from typing import Any

from matplotlib.figure import Figure

from anchorlab.plotting.style import plt, style

SOURCE_COLORS = {"prontoqa": "#1f77b4", "stories": "#d62728"}
SOURCE_LABELS = {"prontoqa": "PrOntoQA", "stories": "stories"}


def gamma_colors(gammas: Sequence[float]) -> dict[float, Any]:
    cmap = plt.get_cmap("viridis")
    gs = sorted(set(gammas))
    return {g: cmap(0.1 + 0.8 * i / max(1, len(gs) - 1)) for i, g in enumerate(gs)}


def plot_source_losses(panels: Sequence[dict[str, Any]], title: str) -> Figure:
    """One panel per run: ``{"title", "step", "train": {src: ys}, "test": {src: ys}}`` (test dashed)."""
    with style():
        fig, axes = plt.subplots(1, len(panels), figsize=(max(5.0, 3.6 * len(panels)), 3.2), squeeze=False,
                                 sharey=True)
        for ax, p in zip(axes[0], panels):
            for src, ys in p["train"].items():
                ax.plot(p["step"], ys, color=SOURCE_COLORS[src], label=f"{SOURCE_LABELS[src]} (train)")
            for src, ys in p["test"].items():
                ax.plot(p["step"], ys, color=SOURCE_COLORS[src], ls="--", lw=1, label=f"{SOURCE_LABELS[src]} (test)")
            ax.set_title(p["title"])
            ax.set_xlabel("step")
        axes[0][0].set_ylabel("next-token loss")
        axes[0][0].legend()
        fig.suptitle(title)
        fig.tight_layout()
    return fig


def plot_curves_by_gamma(curves: Sequence[dict[str, Any]], ylabel: str, title: str) -> Figure:
    """Lines ``{"gamma", "label", "step", "y", "ls"}`` coloured by γ."""
    with style():
        fig, ax = plt.subplots(figsize=(4.8, 3.2))
        colors = gamma_colors([c["gamma"] for c in curves])
        for c in curves:
            ax.plot(c["step"], c["y"], color=colors[c["gamma"]], ls=c.get("ls", "-"), label=c["label"])
        ax.set_xlabel("step")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
        ax.set_title(title)
        fig.tight_layout()
    return fig


def plot_data_size(settings: Sequence[dict[str, Any]], title: str) -> Figure:
    """Two panels vs data size: convergence step and test accuracy, one line per ``{"label", "n", "steps", "acc"}``;
    an optional ``"unconverged"`` list (the last step trained where a run never reached the level, else NaN) is
    drawn as an open triangle: convergence later than that, if at all."""
    with style():
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(7.2, 3.0))
        for i, s in enumerate(settings):
            (line,) = a1.plot(s["n"], s["steps"], "o-", label=s["label"])
            a2.plot(s["n"], s["acc"], "o-", label=s["label"])
            if any(not math.isnan(v) for v in s.get("unconverged", [])):  # nested sizes: two at one step both show
                a1.plot(s["n"], s["unconverged"], "^", mfc="none", ms=7 + 4 * i, color=line.get_color())
        a1.set_ylabel("convergence step")
        if any(not math.isnan(v) for st in settings for v in st.get("unconverged", [])):
            a1.plot([], [], "^", mfc="none", color="#555555", label="not converged by this step")
            a1.legend(handles=a1.get_lines()[-1:], fontsize=7, loc="best")
        elif all(math.isnan(v) for st in settings for v in st["steps"]):
            a1.text(0.5, 0.5, "no run reached the level", transform=a1.transAxes, ha="center", color="#555555")
        a2.set_ylabel("True/False test accuracy")
        a2.set_ylim(0.4, 1.02)
        a2.axhline(0.5, color="#999999", lw=0.8, ls=":")
        sizes = sorted({n for st in settings for n in st["n"]})
        for ax in (a1, a2):
            ax.set_xlabel("PrOntoQA training examples")
            ax.set_xscale("log")
            ax.set_xticks(sizes, [f"{n:,}" for n in sizes])  # the data sizes run, not log-scale minor labels
            ax.minorticks_off()
        a1.set_xlim(a2.get_xlim())
        a2.legend()
        fig.suptitle(title)
        fig.tight_layout()
    return fig


def plot_accuracy_panels(panels: Sequence[dict[str, Any]], title: str) -> Figure:
    """One panel per data size ``{"title", "lines": [{"label", "step", "train", "test"}]}``: True/False test
    accuracy solid, training accuracy dashed, a colour per line (the same setting in every panel)."""
    with style():
        width = max(4.8, 3.4 * len(panels))
        fig, axes = plt.subplots(1, len(panels), figsize=(width, 3.2 + 0.2 * (len(title) > 11 * width)),
                                 squeeze=False, sharey=True)
        labels = list(dict.fromkeys(line["label"] for p in panels for line in p["lines"]))
        colors = {lab: plt.get_cmap("tab10")(i) for i, lab in enumerate(labels)}
        for ax, p in zip(axes[0], panels):
            for line in p["lines"]:
                c = colors[line["label"]]
                ax.plot(line["step"], line["test"], color=c, label=f"{line['label']}: test")
                ax.plot(line["step"], line["train"], color=c, ls="--", lw=1, label=f"{line['label']}: train")
            ax.axhline(0.5, color="#999999", lw=0.8, ls=":")
            ax.set_title(p["title"])
            ax.set_xlabel("step")
            ax.set_ylim(0.3, 1.02)
        axes[0][0].set_ylabel("True/False accuracy")
        axes[0][-1].legend(fontsize=7)
        fig.suptitle(textwrap.fill(title, int(11 * width)))  # one panel is narrower than the title
        fig.tight_layout()
    return fig
