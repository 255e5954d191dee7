"""One figure style for the project: colours of the solution types and rcParams."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import matplotlib

matplotlib.use("Agg")  # files only; never opens a window
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"inferential": "#1f77b4", "symmetric": "#ff7f0e", "seen_test": "#555555", "seen_train": "#999999"}
RC = {"figure.dpi": 110, "savefig.dpi": 150, "axes.spines.top": False, "axes.spines.right": False,
      "axes.grid": True, "grid.alpha": 0.3, "font.size": 9, "legend.frameon": False}


@contextlib.contextmanager
def style() -> Iterator[None]:
    with plt.rc_context(RC):  # type: ignore[arg-type]
        yield
