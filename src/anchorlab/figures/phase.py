"""Phase-diagram figures over a sweep directory (P1 Fig. 2, Fig. 14)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from anchorlab import rundir
from anchorlab.config import ConfigError
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
    return _save_grid(fig, g, metrics, Path(out), "p1-fig2", lambda xv, yv: {"gamma": xv, "n_layers": yv})


def _save_grid(fig: Any, g: dict[str, Any], metrics: tuple[str, ...], out: Path, name: str,
               coords: Callable[[Any, Any], dict[str, Any]]) -> Path:
    """``out/name.png`` and one CSV row per cell: ``coords(x, y)``, the metrics, seen-test accuracy,
    hatching and the number of seeds averaged."""
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / f"{name}.png")
    table = [{**coords(xv, yv), **{m: g[m][i, j] for m in (*metrics, "seen_test_acc")},
              "hatched": bool(g["mask"][i, j]), "n_seeds": int(g["n_seeds"][i, j])}
             for i, yv in enumerate(g["ys"]) for j, xv in enumerate(g["xs"])]
    write_csv(table, out / f"{name}.csv")
    return out / f"{name}.png"


def _lr_wd_rows(sweep_dir: Path) -> tuple[list[dict[str, Any]], str]:
    """The sweep's finished runs with ``peak_lr`` (lr × lr_multiplier) and ``weight_decay`` read from each
    run's config, whichever axis set them; and a title naming the fixed setting (γ, depth, held-out pairs)."""
    rows = [r for r in collect(sweep_dir) if r["status"] == "done"]
    if not rows:
        raise ConfigError(f"figure p1-fig14: {sweep_dir} has no finished run")
    settings = set()
    for r in rows:
        cfg = rundir.read_config(sweep_dir / r["run_id"])
        r["peak_lr"] = float(f"{cfg.train.lr * cfg.train.lr_multiplier:.6g}")
        r["weight_decay"] = cfg.train.weight_decay
        held = ", ".join(f"({a},{b})" for a, b in cfg.task.held_out)
        settings.add(f"γ {cfg.init.gamma:g}, {cfg.model.n_layers} layers, held out {held}")
    if len(settings) > 1:
        raise ConfigError(f"figure p1-fig14: runs differ in more than LR, WD and seed: {sorted(settings)}")
    return rows, settings.pop()


@figure("p1-fig14", "sweep", "P1 Fig. 14: inferential accuracy on (4,3) over peak LR × weight decay")
def p1_fig14(sweep_dir: str | Path, out: str | Path, use_best_epoch: bool = False) -> Path:
    """P1 Fig. 14 (App. E): inferential accuracy on (4,3), mean over seeds, over peak LR (y) × WD (x).

    Cells are hatched where the seen-pair test accuracy is below 0.9, as in Fig. 2 (Fig. 14 has no hatching;
    at the paper's setting no cell is expected to be hatched)."""
    rows, setting = _lr_wd_rows(Path(sweep_dir))
    metrics = ("unseen_inferential_acc",)
    g = phase_grid(rows, x="weight_decay", y="peak_lr", metrics=metrics, use_best_epoch=use_best_epoch)
    fig = plot_phase_diagrams(g["xs"], g["ys"], {f"inferential (4,3) → x−10\n{setting}": g[metrics[0]]},
                              g["mask"], xlabel="weight decay", ylabel="peak learning rate")
    return _save_grid(fig, g, metrics, Path(out), "p1-fig14", lambda xv, yv: {"peak_lr": yv, "weight_decay": xv})
