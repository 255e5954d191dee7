"""The report's anchor-task sections (P1 and P2 tasks): a run's curves, final metrics and the figures that
apply to it (:data:`anchorlab.figures.p1.RUN_FIGURES`; the others listed with the reason; P2 figures for the
``mem_rsn`` task), and a sweep's page: a phase diagram over its first two non-seed axes, the collected table,
the sweep grid figures, then one section per run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anchorlab import rundir
from anchorlab.config import ConfigError
from anchorlab.figures import FIGURES, names
from anchorlab.figures.p1 import RUN_FIGURES, SWEEP_FIGURES, sweep_why_not, why_not
from anchorlab.metrics import HEADLINE
from anchorlab.phase import SEED_AXES, phase_grid
from anchorlab.plotting.curves import plot_training_curves
from anchorlab.plotting.figures import plot_phase_diagrams
from anchorlab.report.html import (
    collected_table,
    csv_bytes,
    drawn,
    esc,
    fig_png,
    img,
    kv_table,
    provenance_block,
    run_head,
    skipped_list,
    sweep_head,
    wide_table,
)
from anchorlab.sweep import MANIFEST, collect

# Phase-diagram metrics per task: (metrics drawn, metric whose value < 0.9 hatches a cell)
PHASE_METRICS = {"composite": (("unseen_symmetric_acc", "unseen_inferential_acc"), "seen_test_acc"),
                 "mem_rsn": (("mem_acc", "rsn_test_acc"), "rsn_train_acc")}
MECHANISM_KEYS = ("wq0_n_groups", "wq0_largest_group_frac", "embed_cov_top_share")


def run_page(run_dir: Path, anchor: str = "") -> str:
    """A report whose source is one run: its provenance and its section with every figure that applies."""
    return provenance_block([run_dir], anchor) + _run_section(run_dir, figures=True, level=2, all_p2=True,
                                                              anchor=anchor)


def _curves(history: list[dict[str, Any]], run_id: str) -> str:
    """Training curves per group: losses, the task's accuracies, per-group accuracy, mechanism scalars."""
    if not history:
        return '<p class="skip">no evaluations in metrics.jsonl yet</p>'
    epochs = [r["epoch"] for r in history]
    scalar_keys = [k for k in history[-1] if isinstance(history[-1][k], (int, float)) and k not in
                   ("step", "epoch", "lr")]
    panels: dict[str, dict[str, list[Any]]] = {
        "loss": {k: [r.get(k) for r in history] for k in scalar_keys if k.endswith("_loss")},
        "accuracy": {k: [r.get(k) for r in history] for k in scalar_keys if k.endswith("_acc")},
    }
    groups = list(history[-1].get("group_acc", {}))
    if groups:
        panels["accuracy per group"] = {g: [r.get("group_acc", {}).get(g) for r in history] for g in groups}
    mech = {k: [r.get(k) for r in history] for k in MECHANISM_KEYS if k in history[-1]}
    if mech:
        panels["mechanism scalars"] = {k: v for k, v in mech.items() if k != "wq0_n_groups"}
        if "wq0_n_groups" in mech:
            panels["W_Q⁰ groups (threshold 0.7)"] = {"wq0_n_groups": mech["wq0_n_groups"]}
        panels["stable rank"] = {k.split("/", 1)[1]: [r.get(k) for r in history] for k in scalar_keys
                                 if k.startswith("stable_rank/")}
    fig = plot_training_curves(epochs, panels, log_panels=("loss", "stable rank"),
                               unit_panels=("accuracy", "accuracy per group", "mechanism scalars"))
    flat = [{k: v for k, v in r.items() if not isinstance(v, dict)} for r in history]
    return img(fig_png(fig), "training curves", f"training curves of {run_id} ({len(history)} evaluations)",
                csv_bytes(flat), f"{run_id}_metrics.csv")


def _final_metrics(summary: dict[str, Any], task: str) -> str:
    scalars = {k: v for k, v in summary.items() if not isinstance(v, (dict, list))}
    head = {k: scalars.pop(k) for k in (*HEADLINE.get(task, ()), "final_train_loss") if k in scalars}
    out = "<h4>Headline</h4>" + kv_table(head)
    if isinstance(summary.get("best"), dict):
        out += "<h4>Best over evaluations</h4>" + kv_table(summary["best"])
    if isinstance(summary.get("group_acc"), dict):
        out += "<h4>Accuracy per group (final)</h4>" + wide_table(summary["group_acc"])
    if isinstance(summary.get("unseen_deviation"), dict):
        out += "<h4>Held-out pair: prediction − inferential answer (fraction)</h4>" + wide_table(
            summary["unseen_deviation"])
    out += "<details><summary>all final scalars</summary>" + kv_table(scalars) + "</details>"
    return out


def _run_section(run_dir: Path, figures: bool, level: int = 3, all_p2: bool = False, anchor: str = "") -> str:
    """A run's config, curves, final metrics and figures: the P1 ones that apply and, for the ``mem_rsn``
    task, the P2 ones (single-run recipes; with ``all_p2`` also those over several runs)."""
    cfg = rundir.read_config(run_dir)
    hs = f"h{level + 1}"
    parts = run_head(run_dir, f"{cfg.task.name} / {cfg.model.name}, γ {cfg.init.gamma:g}, {cfg.model.n_layers} "
                      f"layer(s), seed {cfg.seeds.init_seed}", level, anchor,
                      _curves(rundir.read_metrics(run_dir), run_dir.name))
    if (run_dir / rundir.SUMMARY).is_file():
        parts.append(_final_metrics(rundir.read_json(run_dir / rundir.SUMMARY), cfg.task.name))
    else:
        parts.append('<p class="skip">unfinished run: no summary.json yet</p>')
    parts.append(f"<{hs}>Mechanism figures (P1)</{hs}>")
    has_ckpt = (run_dir / rundir.CKPT_DIR).is_dir() and bool(rundir.checkpoint_steps(run_dir))
    if not has_ckpt:
        parts.append('<p class="skip">no kept checkpoint: no figures</p>')
    elif not figures:
        parts.append(f'<p class="skip">figures left out (--max-run-figures; the first seed of each grid point '
                     f"comes first); draw them with <code>anchorlab report {esc(run_dir)}</code></p>")
    else:
        skipped = []
        for name in RUN_FIGURES:
            reason = why_not(name, cfg)
            if reason:
                skipped.append(f"<li>{esc(name)}: {esc(reason)}</li>")
            else:
                parts.append(drawn(name, [run_dir], FIGURES[name].help))
        if cfg.task.name == "mem_rsn":
            p2, p2_skipped = _p2_figures([run_dir], ("run", "runs") if all_p2 else ("run",))
            parts.append(f"<{hs}>Figures (P2)</{hs}>" + "".join(p2))
            skipped += p2_skipped
        if skipped:
            parts.append(skipped_list("not applicable to this run", skipped))
    return "\n".join(parts)


def _p2_figures(sources: list[Path], kinds: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The P2 figures (registered ``p2-*`` recipes whose sources are in ``kinds``) drawn from ``sources``:
    (embedded figures, skipped ones with the recipe's reason). A recipe says it does not apply by raising
    :class:`ConfigError` (e.g. "this figure needs 'emb_mlp'")."""
    parts, skipped = [], []
    for name in names():
        if name.startswith("p2-") and FIGURES[name].sources in kinds:
            try:
                parts.append(drawn(name, sources, FIGURES[name].help))
            except ConfigError as e:
                skipped.append(f"<li>{esc(name)}: {esc(e)}</li>")
    return parts, skipped


def _phase(rows: list[dict[str, Any]], axes: dict[str, list[Any]], task: str) -> str:
    """A phase diagram over the first two non-seed axes with more than one value (one row if only one)."""
    grid_axes = [a for a, v in axes.items() if a not in SEED_AXES and len(v) > 1]
    done = [r for r in rows if r.get("status") == "done"]
    metrics, mask_metric = PHASE_METRICS.get(task, ((), ""))
    if not grid_axes or not done or not metrics or any(m not in done[0] for m in (*metrics, mask_metric)):
        return '<p class="skip">no phase diagram: the sweep has no non-seed axis with two or more values, ' \
               "no finished run, or no phase metrics for this task</p>"
    x = grid_axes[0]
    y = grid_axes[1] if len(grid_axes) > 1 else "(all)"
    done = [{**r, "(all)": "all"} for r in done]
    g = phase_grid(done, x=x, y=y, metrics=metrics, mask_metric=mask_metric)
    fig = plot_phase_diagrams(g["xs"], g["ys"], {m: g[m] for m in metrics}, g["mask"], xlabel=x, ylabel=y)
    cells = [{x: xv, y: yv, **{m: g[m][i, j] for m in (*metrics, mask_metric)}, "hatched": bool(g["mask"][i, j]),
              "n_seeds": int(g["n_seeds"][i, j])} for i, yv in enumerate(g["ys"]) for j, xv in enumerate(g["xs"])]
    other = grid_axes[2:]
    note = (f"final evaluation per run; best over {', '.join(other)}; " if other else "final evaluation per run; ") + \
        f"mean over seeds; hatched where {mask_metric} < 0.9"
    return img(fig_png(fig), "phase diagram", note, csv_bytes(cells), "phase.csv")


def _figure_order(manifest: dict[str, Any]) -> list[str]:
    """Run ids in the order they get figures: the runs of the first seed (one per grid point) first."""
    axes = manifest.get("axes", {})
    seed_axis = next((a for a in SEED_AXES if a in axes), None)
    runs = list(manifest["runs"].items())
    if seed_axis is None:
        return [r for r, _ in runs]
    first = axes[seed_axis][0]
    return [r for r, p in runs if p.get(seed_axis) == first] + [r for r, p in runs if p.get(seed_axis) != first]


def sweep_page(sweep_dir: Path, max_run_figures: int, anchor: str = "") -> tuple[str, str]:
    """(title, HTML) of an anchor-task sweep: phase diagram, collected table, sweep figures, then every run (P1
    figures for ``max_run_figures`` runs with a checkpoint, those of the first seed first)."""
    manifest = rundir.read_json(sweep_dir / MANIFEST)
    rows = collect(sweep_dir)
    run_dirs = [sweep_dir / r["run_id"] for r in rows]
    existing = [d for d in run_dirs if (d / rundir.CONFIG).is_file()]
    first = rundir.read_config(existing[0]) if existing else None
    task = first.task.name if first else "composite"
    parts = sweep_head(sweep_dir, manifest, rows, existing, (
        ("provenance", "provenance"), ("phase", "phase diagram"), ("table", "table"), ("grids", "sweep figures"),
        ("runs", "runs")), anchor)
    parts.append(f'<h2 id="{anchor}phase">Phase diagram</h2>' + _phase(rows, manifest.get("axes", {}), task))
    head = (*HEADLINE.get(task, ()), "final_train_loss", *MECHANISM_KEYS)
    parts.append(collected_table(rows, list(manifest.get("axes", {})), head, existing, anchor))
    parts.append(f'<h2 id="{anchor}grids">Sweep figures</h2>')
    skipped = []
    for name in SWEEP_FIGURES:
        reason = sweep_why_not(name, sweep_dir, first.model.name) if first else "no run"
        if reason:
            skipped.append(f"<li>{esc(name)}: {esc(reason)}</li>")
        else:
            parts.append(drawn(name, [sweep_dir], FIGURES[name].help))
    done = [d for d in existing if rundir.is_done(d)]
    if task == "mem_rsn" and done:  # the P2 figures over several runs (training curves per γ, Fig. 8)
        p2, p2_skipped = _p2_figures(done, ("runs",))
        parts += p2
        skipped += p2_skipped
    if skipped:
        parts.append(skipped_list("not applicable to this sweep", skipped))
    parts.append(f'<h2 id="{anchor}runs">Runs</h2>')
    with_ckpt = [d for d in existing if (d / rundir.CKPT_DIR).is_dir() and rundir.checkpoint_steps(d)]
    ranked = [sweep_dir / r for r in _figure_order(manifest) if sweep_dir / r in with_ckpt]
    gets_figures = set(ranked[:max_run_figures])
    for d in existing:
        parts.append(_run_section(d, figures=d in gets_figures, anchor=anchor))
    missing = [d.name for d in run_dirs if d not in existing]
    if missing:
        parts.append(f'<p class="skip">not started: {esc(", ".join(missing))}</p>')
    return f"anchorlab sweep {manifest.get('name', sweep_dir.name)}", "\n".join(parts)
