"""Phase-diagram figures over a sweep directory (P1 Fig. 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anchorlab.figures import figure
from anchorlab.phase import phase_grid
from anchorlab.plotting.figures import plot_phase_diagrams
from anchorlab.sweep import collect, write_csv


@figure("p1-fig2", "sweep", "P1 Fig. 2a/b: symmetric and inferential accuracy on (4,3) over γ × depth")
def p1_fig2(sweep_dir: str | Path, out: str | Path, use_best_epoch: bool = False) -> Path:
    """P1 Fig. 2a/2b: symmetric and inferential accuracy on the held-out pair over γ × depth."""
    rows = collect(sweep_dir)
    metrics = ("unseen_symmetric_acc", "unseen_inferential_acc")
    g = phase_grid(rows, x="init.gamma", y="model.n_layers", metrics=metrics, use_best_epoch=use_best_epoch)
    fig = plot_phase_diagrams(g["xs"], g["ys"], {"symmetric (4,3) → x−6": g[metrics[0]],
                                                 "inferential (4,3) → x−10": g[metrics[1]]}, g["mask"])
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / "p1-fig2.png")
    table: list[dict[str, Any]] = []
    for i, yv in enumerate(g["ys"]):
        for j, xv in enumerate(g["xs"]):
            table.append({"gamma": xv, "n_layers": yv, **{m: g[m][i, j] for m in (*metrics, "seen_test_acc")},
                          "hatched": bool(g["mask"][i, j]), "n_seeds": int(g["n_seeds"][i, j])})
    write_csv(table, out / "p1-fig2.csv")
    return out / "p1-fig2.png"

