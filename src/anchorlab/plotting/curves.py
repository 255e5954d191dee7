"""Training curves of one run: series over epochs in, a matplotlib Figure out (no file reading)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from anchorlab.plotting.style import plt, style


def plot_training_curves(epochs: Sequence[float], panels: Mapping[str, Mapping[str, Sequence[float | None]]],
                         log_panels: Sequence[str] = (), unit_panels: Sequence[str] = (),
                         title: str = "", ncols: int = 3, xlabel: str = "epoch") -> Figure:
    """One panel per entry of ``panels`` {panel title: {line label: values per epoch}}, ``ncols`` a row;
    panels named in ``log_panels`` get a log y-axis, those in ``unit_panels`` the range [0, 1].
    ``None`` values (e.g. no train loss at step 0) are left out of a line."""
    n = len(panels)
    nc, nr = min(ncols, n), -(-n // ncols)
    with style():
        fig, axes = plt.subplots(nr, nc, figsize=(4.2 * nc, 3.2 * nr), squeeze=False)
        for ax in axes.ravel()[n:]:
            ax.set_visible(False)
        for ax, (name, series) in zip(axes.ravel(), panels.items()):
            for i, (label, values) in enumerate(series.items()):
                v = np.array([np.nan if x is None else float(x) for x in values])
                ok = np.isfinite(v) & ((v > 0) if name in log_panels else True)
                ax.plot(np.asarray(epochs, dtype=float)[ok], v[ok], lw=1.2, marker=".", ms=3, label=label,
                        color=plt.get_cmap("tab20")(i % 20))
            if name in log_panels:
                ax.set_yscale("log")
            if name in unit_panels:
                ax.set_ylim(-0.03, 1.03)
            ax.set_title(name, fontsize=9)
            ax.set_xlabel(xlabel)
            if series:  # many series (the groups): a translucent framed legend so the lines stay visible
                ax.legend(fontsize=6, ncol=1 + len(series) // 8, frameon=len(series) > 8, framealpha=0.6)
        if title:
            fig.suptitle(title, fontsize=9)
        fig.tight_layout()
    return fig
