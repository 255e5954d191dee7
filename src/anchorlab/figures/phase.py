"""P1 phase diagrams over a sweep directory, from what its runs log: Fig. 2a/b (γ × depth, or accuracy along one
axis) and Fig. 14 (peak LR × weight decay)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from anchorlab import rundir
from anchorlab.config import ConfigError
from anchorlab.figures import figure, save_figure
from anchorlab.figures.logged import KEYS_NAMES, PROBE_KEYS, best_logged, probe_suffix, sweep_probe
from anchorlab.phase import SEED_AXES, phase_grid
from anchorlab.plotting.figures import plot_gamma_comparison, plot_phase_diagrams, reading_label
from anchorlab.sweep import MANIFEST, collect

FIG2_AXES = ("init.gamma", "model.n_layers")


def _with_best(rows: list[dict[str, Any]], sweep_dir: Path, metrics: tuple[str, ...]) -> list[dict[str, Any]]:
    """``rows`` (of :func:`~anchorlab.sweep.collect`) with ``best_<metric>`` for each of ``metrics``: from the
    summary where it records it (the headline metrics, and the per-key-type accuracies of runs made since
    :data:`anchorlab.metrics.BEST_ALSO`), else the highest value over the run's ``metrics.jsonl``."""
    for r in rows:
        missing = tuple(m for m in metrics if f"best_{m}" not in r)
        if missing and r.get("status") == "done":
            r.update({f"best_{m}": v for m, v in best_logged(sweep_dir / r["run_id"], missing).items()})
    return rows


@figure("p1-fig2", "sweep", "P1 Fig. 2a/b: symmetric and inferential accuracy on the held-out pair over γ × depth "
        "(a sweep over one of them, or over one other axis: accuracy along it)")
def p1_fig2(sweep_dir: str | Path, out: str | Path, use_best_epoch: bool = False, keys: str = "both") -> Path:
    """P1 Fig. 2a/2b: symmetric and inferential accuracy on the held-out pair over γ × depth. A sweep with
    only one of those axes (or, with neither, exactly one other non-seed axis) gets the 1-D version:
    accuracy along that axis, one dot per seed (best over any other axis), a bar at the mean. ``keys``: the
    held-out pair's inputs read (:data:`PROBE_KEYS`; "train" is what the authors' figure code reads)."""
    sfx = probe_suffix("p1-fig2", keys)
    metrics = (f"unseen_symmetric_acc{sfx}", f"unseen_inferential_acc{sfx}")
    rows = collect(sweep_dir)
    if use_best_epoch:
        rows = _with_best(rows, Path(sweep_dir), (*metrics, "seen_test_acc"))
    axes = rundir.read_json(Path(sweep_dir) / MANIFEST).get("axes", {})
    present = [a for a in FIG2_AXES if a in axes]
    others = [a for a in axes if a not in SEED_AXES and a not in FIG2_AXES]
    if len(present) < 2:
        line = present or others
        if len(line) != 1:
            raise ConfigError(f"figure p1-fig2: needs a sweep over init.gamma and model.n_layers (2-D) or over one "
                              f"axis (1-D); {sweep_dir} has axes {', '.join(axes) or 'none'}")
        return _fig2_line(rows, line[0], Path(out), use_best_epoch, keys, sweep_probe(Path(sweep_dir), rows))
    g = phase_grid(rows, x="init.gamma", y="model.n_layers", metrics=metrics, use_best_epoch=use_best_epoch)
    tag = "" if keys == "both" else f", {KEYS_NAMES[keys]}"
    pair, answers = sweep_probe(Path(sweep_dir), rows)
    fig = plot_phase_diagrams(g["xs"], g["ys"], {reading_label("symmetric", pair, answers) + tag: g[metrics[0]],
                                                 reading_label("inferential", pair, answers) + tag: g[metrics[1]]},
                              g["mask"])
    return _save_grid(fig, g, metrics, Path(out), "p1-fig2", lambda xv, yv: {"gamma": xv, "n_layers": yv})


def _fig2_line(rows: list[dict[str, Any]], axis: str, out: Path, use_best_epoch: bool, keys: str,
               probe: tuple[str, tuple[str, str] | None]) -> Path:
    """P1 Fig. 2 along one axis: per value and seed the held-out pair's accuracies (best over other axes)."""
    sfx = PROBE_KEYS[keys]
    done = [r for r in rows if r.get("status") == "done" and f"unseen_inferential_acc{sfx}" in r]
    if not done:
        raise ConfigError("figure p1-fig2: the sweep has no finished composite-task run")
    seed_axis = next((k for k in SEED_AXES if any(k in r for r in done)), None)
    cells: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for r in done:
        cells.setdefault((r[axis], r.get(seed_axis) if seed_axis else r["run_id"]), []).append(r)

    def value(r: dict[str, Any], m: str) -> float:
        return float(r[f"best_{m}" if use_best_epoch and f"best_{m}" in r else m])

    table = [{axis: xv, "seed": seed, "n_runs": len(group),
              **{k: max(value(r, f"unseen_{k}_acc{sfx}") for r in group) for k in ("inferential", "symmetric")},
              "seen_test_acc": max(value(r, "seen_test_acc") for r in group)}
             for (xv, seed), group in sorted(cells.items(), key=lambda kv: (kv[0][0], str(kv[0][1])))]
    name = axis.split(".")[-1]
    fig = plot_gamma_comparison(table, pair=probe[0], answers=probe[1], x=axis,
                                x_name="γ" if axis == "init.gamma" else name,
                                xlabel=axis, dots="seed" if seed_axis else "run",
                                title=f"P1 Fig. 2 over {axis}: held-out pair {probe[0]}, {KEYS_NAMES[keys]} "
                                      f"({'best' if use_best_epoch else 'final'} evaluation)")
    return save_figure(fig, table, out, "p1-fig2")


def _save_grid(fig: Any, g: dict[str, Any], metrics: tuple[str, ...], out: Path, name: str,
               coords: Callable[[Any, Any], dict[str, Any]]) -> Path:
    """``out/name.png`` and one CSV row per cell: ``coords(x, y)``, the metrics, seen-test accuracy,
    hatching and the number of seeds averaged."""
    table = [{**coords(xv, yv), **{m: g[m][i, j] for m in (*metrics, "seen_test_acc")},
              "hatched": bool(g["mask"][i, j]), "n_seeds": int(g["n_seeds"][i, j])}
             for i, yv in enumerate(g["ys"]) for j, xv in enumerate(g["xs"])]
    return save_figure(fig, table, out, name)


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


@figure("p1-fig14", "sweep", "P1 Fig. 14: inferential accuracy on the held-out pair over peak LR × weight decay")
def p1_fig14(sweep_dir: str | Path, out: str | Path, use_best_epoch: bool = False, keys: str = "both") -> Path:
    """P1 Fig. 14 (App. E): inferential accuracy on (4,3), mean over seeds, over peak LR (y) × WD (x).

    Cells are hatched where the seen-pair test accuracy is below 0.9, as in Fig. 2 (Fig. 14 has no hatching;
    at the paper's setting no cell is expected to be hatched). ``keys``: as p1-fig2."""
    metrics = (f"unseen_inferential_acc{probe_suffix('p1-fig14', keys)}",)
    rows, setting = _lr_wd_rows(Path(sweep_dir))
    if use_best_epoch:
        rows = _with_best(rows, Path(sweep_dir), (*metrics, "seen_test_acc"))
    g = phase_grid(rows, x="weight_decay", y="peak_lr", metrics=metrics, use_best_epoch=use_best_epoch)
    tag = "" if keys == "both" else f", {KEYS_NAMES[keys]}"
    pair, answers = sweep_probe(Path(sweep_dir), rows)
    fig = plot_phase_diagrams(g["xs"], g["ys"], {f"{reading_label('inferential', pair, answers)}{tag}\n{setting}":
                                                 g[metrics[0]]},
                              g["mask"], xlabel="weight decay", ylabel="peak learning rate")
    return _save_grid(fig, g, metrics, Path(out), "p1-fig14", lambda xv, yv: {"peak_lr": yv, "weight_decay": xv})
