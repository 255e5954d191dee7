"""What the report pages of step-logged run kinds share (``lm``: :mod:`.lm`; ``seq2seq``: :mod:`.seq2seq`): curves
over steps, a figure list with the reasons of those not drawn, a run's final metrics, and the sweep page.
Each kind supplies its panels, its figures, its run titles and the first columns of its table."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from anchorlab import rundir
from anchorlab.config import ConfigError
from anchorlab.figures import FIGURES, names
from anchorlab.plotting.curves import plot_training_curves
from anchorlab.report.html import (
    collected_table,
    csv_bytes,
    drawn,
    esc,
    fig_png,
    img,
    kv_table,
    run_head,
    skipped_list,
    sweep_head,
)
from anchorlab.sweep import MANIFEST, collect

# {panel title: metric keys} of a run kind; keys a run does not log are left out
Panels = Mapping[str, Sequence[str]]


def step_curves(history: list[dict[str, Any]], run_id: str, panels: Panels, log_panels: Sequence[str] = (),
                unit_panels: Sequence[str] = ()) -> str:
    """One figure of ``panels`` over the evaluation steps (with its data as CSV)."""
    if not history:
        return '<p class="skip">no evaluations in metrics.jsonl yet</p>'
    last = history[-1]
    series = {title: {k: [r.get(k) for r in history] for k in keys if k in last} for title, keys in panels.items()}
    fig = plot_training_curves([r["step"] for r in history], {t: s for t, s in series.items() if s},
                               log_panels=tuple(log_panels), unit_panels=tuple(unit_panels), xlabel="step")
    return img(fig_png(fig), "training curves", f"training curves of {run_id} ({len(history)} evaluations)",
               csv_bytes(history), f"{run_id}_metrics.csv")


def figure_list(figures: Sequence[str], run_dirs: list[Path], skip: dict[str, str] | None = None) -> str:
    """Each figure drawn from ``run_dirs``; those in ``skip`` ({name: why}) or that refuse the runs are listed
    with the reason."""
    names()  # loads every recipe
    parts, skipped = [], []
    for name in figures:
        why = (skip or {}).get(name)
        if why is None:
            try:
                parts.append(drawn(name, run_dirs, FIGURES[name].help))
                continue
            except ConfigError as e:
                why = str(e)
        skipped.append(f"<li>{esc(name)}: {esc(why)}</li>")
    if skipped:
        parts.append(skipped_list("not drawn", skipped))
    return "\n".join(parts)


def run_section(run_dir: Path, title: str, curves: str, level: int, anchor: str) -> list[str]:
    """A run's heading, curves and final metrics (or a note that it has not finished)."""
    parts = run_head(run_dir, title, level, anchor, curves)
    if (run_dir / rundir.SUMMARY).is_file():
        summary = rundir.read_json(run_dir / rundir.SUMMARY)
        parts.append(kv_table({k: v for k, v in summary.items() if not isinstance(v, (dict, list))}))
    else:
        parts.append('<p class="skip">unfinished run: no summary.json yet</p>')
    return parts


def sweep_page(sweep_dir: Path, table_head: Sequence[str], figures: Callable[[list[Path]], str],
               section: Callable[[Path, str], str], anchor: str = "") -> tuple[str, str]:
    """A sweep: provenance, the collected table (``table_head`` first), ``figures`` over all its runs, then
    each run's ``section(run_dir, anchor)`` (the figures already show every run)."""
    manifest = rundir.read_json(sweep_dir / MANIFEST)
    rows = collect(sweep_dir)
    existing = [sweep_dir / r["run_id"] for r in rows if (sweep_dir / r["run_id"] / rundir.CONFIG).is_file()]
    parts = sweep_head(sweep_dir, manifest, rows, existing, (
        ("provenance", "provenance"), ("table", "table"), ("grids", "figures"), ("runs", "runs")), anchor)
    axes = list(manifest["runs"][rows[0]["run_id"]]) if rows else []
    parts.append(collected_table(rows, axes, table_head, existing, anchor))
    with_history = [d for d in existing if rundir.read_metrics(d)]
    parts.append(f'<h2 id="{anchor}grids">Figures over the runs</h2>'
                 + (figures(with_history) if with_history else '<p class="skip">no evaluations yet</p>'))
    parts.append(f'<h2 id="{anchor}runs">Runs</h2>')
    parts += [section(d, anchor) for d in existing]
    return f"anchorlab sweep {manifest.get('name', sweep_dir.name)}", "\n".join(parts)
