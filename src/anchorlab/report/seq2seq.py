"""The report's real-task sections (SCAN, COGS, addition: P1 Fig. 6 / 17a): a run's loss and exact-match curves
and final metrics; a sweep's page adds the collected table and the figures over all its runs."""

from __future__ import annotations

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
    provenance_block,
    run_head,
    skipped_list,
    sweep_head,
)
from anchorlab.sweep import MANIFEST, collect

TABLE_HEAD = ("step", "em_train", "em_test", "em_gen", "em_gen_overall", "test_loss")


def _curves(history: list[dict[str, Any]], run_id: str) -> str:
    if not history:
        return '<p class="skip">no evaluations in metrics.jsonl yet</p>'
    last = history[-1]

    def series(keys: list[str]) -> dict[str, list[Any]]:
        return {k: [r.get(k) for r in history] for k in keys if k in last}

    panels = {"output-token loss": series(["train_loss", "test_loss"]),
              "exact match": series(["em_train", "em_test", "em_gen"])}
    fig = plot_training_curves([r["step"] for r in history], panels, log_panels=("output-token loss",),
                               unit_panels=("exact match",), xlabel="step")
    return img(fig_png(fig), "training curves", f"training curves of {run_id} ({len(history)} evaluations)",
               csv_bytes(history), f"{run_id}_metrics.csv")


def _figures(run_dirs: list[Path]) -> str:
    names()
    parts, skipped = [], []
    for name in ("p1-fig6", "p1-fig17a"):
        try:
            parts.append(drawn(name, run_dirs, FIGURES[name].help))
        except ConfigError as e:
            skipped.append(f"<li>{esc(name)}: {esc(e)}</li>")
    if skipped:
        parts.append(skipped_list("not drawn", skipped))
    return "\n".join(parts)


def _run_section(run_dir: Path, level: int = 3, anchor: str = "") -> str:
    cfg = rundir.read_config(run_dir)
    m = cfg.model
    parts = run_head(run_dir, f"{cfg.seq2seq.task}, {m.arch} {m.n_layers} × {m.d_model} ({m.n_heads} heads), "
                     f"γ {cfg.init.gamma:g}, wd {cfg.train.weight_decay:g}, n_train {cfg.seq2seq.n_train or 'all'}, "
                     f"seed {cfg.seeds.init_seed}", level, anchor, _curves(rundir.read_metrics(run_dir), run_dir.name))
    if (run_dir / rundir.SUMMARY).is_file():
        summary = rundir.read_json(run_dir / rundir.SUMMARY)
        parts.append(kv_table({k: v for k, v in summary.items() if not isinstance(v, (dict, list))}))
    else:
        parts.append('<p class="skip">unfinished run: no summary.json yet</p>')
    return "\n".join(parts)


def run_page(run_dir: Path, anchor: str = "") -> str:
    return provenance_block([run_dir], anchor) + _run_section(run_dir, level=2, anchor=anchor)


def sweep_page(sweep_dir: Path, max_run_figures: int | None = None, anchor: str = "") -> tuple[str, str]:
    manifest = rundir.read_json(sweep_dir / MANIFEST)
    rows = collect(sweep_dir)
    existing = [sweep_dir / r["run_id"] for r in rows if (sweep_dir / r["run_id"] / rundir.CONFIG).is_file()]
    parts = sweep_head(sweep_dir, manifest, rows, existing, (
        ("provenance", "provenance"), ("table", "table"), ("grids", "figures"), ("runs", "runs")), anchor)
    axes = list(manifest["runs"][rows[0]["run_id"]]) if rows else []
    parts.append(collected_table(rows, axes, TABLE_HEAD, existing, anchor))
    with_history = [d for d in existing if rundir.read_metrics(d)]
    parts.append(f'<h2 id="{anchor}grids">Figures over the runs</h2>'
                 + (_figures(with_history) if with_history else '<p class="skip">no evaluations yet</p>'))
    parts.append(f'<h2 id="{anchor}runs">Runs</h2>')
    parts += [_run_section(d, anchor=anchor) for d in existing]
    return f"anchorlab sweep {manifest.get('name', sweep_dir.name)}", "\n".join(parts)
