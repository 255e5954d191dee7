"""Training curves of one run: series over epochs in, a matplotlib Figure out (no file reading)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from anchorlab.plotting.style import grid_margins, plt, style

MAX_LEGEND = 8  # legend entries per panel at most; more series are grouped (one colour and entry per group)
STYLES = ("-", "--", ":", "-.")


def plot_training_curves(epochs: Sequence[float], panels: Mapping[str, Mapping[str, Sequence[float | None]]],
                         log_panels: Sequence[str] = (), unit_panels: Sequence[str] = (),
                         title: str = "", ncols: int = 3, xlabel: str = "epoch",
                         groups: Mapping[str, Mapping[str, str]] | None = None) -> Figure:
    """One panel per entry of ``panels`` {panel title: {line label: values per epoch}}, ``ncols`` a row;
    panels named in ``log_panels`` get a log y-axis, those in ``unit_panels`` the range [0, 1].
    ``None`` values (e.g. no train loss at step 0) are left out of a line. ``groups`` {panel: {line label:
    group}} draws the lines of a group in one colour with one legend entry (line styles tell up to four
    members apart; larger groups are thin lines); a panel with more than :data:`MAX_LEGEND` lines and no
    grouping names its first lines and draws the rest grey under one entry. A log axis spans the data."""
    n = len(panels)
    nc, nr = min(ncols, n), -(-n // ncols)
    x = np.asarray(epochs, dtype=float)
    with style():
        fig, axes = plt.subplots(nr, nc, figsize=(4.2 * nc, 3.2 * nr), squeeze=False)
        for ax in axes.ravel()[n:]:
            ax.set_visible(False)
        for ax, (name, series) in zip(axes.ravel(), panels.items()):
            group_of = dict((groups or {}).get(name, {}))
            if not group_of and len(series) > MAX_LEGEND:
                labels = list(series)
                rest = f"{len(labels) - MAX_LEGEND + 1} others"
                group_of = {lab: lab if i < MAX_LEGEND - 1 else rest for i, lab in enumerate(labels)}
            order = list(dict.fromkeys(group_of.get(lab, lab) for lab in series))
            members: dict[str, list[str]] = {g: [] for g in order}
            for lab in series:
                members[group_of.get(lab, lab)].append(lab)
            lo = np.inf
            for gi, g in enumerate(order):
                color = "0.6" if g.endswith(" others") else plt.get_cmap("tab10")(gi % 10)
                big = len(members[g]) > len(STYLES)
                for k, lab in enumerate(members[g]):
                    v = np.array([np.nan if y is None else float(y) for y in series[lab]])
                    ok = np.isfinite(v) & ((v > 0) if name in log_panels else True)
                    if ok.any() and name in log_panels:
                        lo = min(lo, float(v[ok].min()))
                    ax.plot(x[ok], v[ok], lw=0.7 if big else 1.2, marker="" if big else ".", ms=3,
                            ls="-" if big else STYLES[k % len(STYLES)], color=color, alpha=0.7 if big else 1.0,
                            label=(g if len(members[g]) == 1 else f"{g} ({len(members[g])})") if k == 0 else None)
            if name in log_panels:
                ax.set_yscale("log")
                if np.isfinite(lo):
                    ax.set_ylim(bottom=lo / 1.5)
            if name in unit_panels:
                ax.set_ylim(-0.03, 1.03)
            ax.set_title(name, fontsize=9)
            ax.set_xlabel(xlabel)
            if series:
                ax.legend(fontsize=6, frameon=len(order) > 4, framealpha=0.6)
        if title:
            fig.suptitle(title, fontsize=9)
        grid_margins(fig, nr, nc, top=0.55 if title else 0.3)  # tight_layout's result for these panels
    return fig

