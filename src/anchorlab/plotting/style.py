"""One figure style for the project: colours of the solution types, rcParams, and fixed margins for grids of
alike panels."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import matplotlib
from matplotlib.figure import Figure

matplotlib.use("Agg")  # files only; never opens a window
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"inferential": "#1f77b4", "symmetric": "#ff7f0e", "seen_test": "#555555", "seen_train": "#999999"}
# figure.dpi: the dpi a figure is laid out at (tight_layout measures its text there); the HTML report draws its
# figures at this dpi too, so the measurements are reused instead of made again. Files are saved at savefig.dpi.
RC = {"figure.dpi": 90, "savefig.dpi": 150, "axes.spines.top": False, "axes.spines.right": False,
      "axes.grid": True, "grid.alpha": 0.3, "font.size": 9, "legend.frameon": False}


@contextlib.contextmanager
def style() -> Iterator[None]:
    with plt.rc_context(RC):  # type: ignore[arg-type]
        yield


def grid_margins(fig: Figure, nr: int, nc: int, left: float = 0.6, right: float = 0.15, bottom: float = 0.5,
                 top: float = 0.3, wgap: float = 0.7, hgap: float = 0.8) -> None:
    """Place an ``nr`` x ``nc`` grid of panels with margins and gaps in inches: room for the tick labels, panel
    titles, axis labels and a figure title that the caller knows its panels have. For panels alike this is
    what ``tight_layout`` finds, without its cost (it measures every tick label: about a third of the time
    it takes to draw and save the figure)."""
    width, height = fig.get_size_inches()
    ax_w = (width - left - right - wgap * (nc - 1)) / nc
    ax_h = (height - bottom - top - hgap * (nr - 1)) / nr
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height,
                        wspace=wgap / ax_w, hspace=hgap / ax_h)
