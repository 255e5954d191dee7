"""The report's real-language sections (``anchorlab lm``: GPT-2 on PrOntoQA + stories): a run's per-source
losses, True/False accuracy and embedding-cosine curves, its final metrics and the P2 Fig. 1/7A/7B or P1 Fig. 7
figures; a sweep's page draws those figures over all its runs."""

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

LM_FIGURES = ("p2-fig1", "p2-fig7a", "p2-fig7b", "p1-fig7")
# The collected table's first columns after the grid coordinates (those that any run has)
TABLE_HEAD = ("step", "train_loss_prontoqa", "train_loss_stories", "test_loss_prontoqa", "test_loss_stories",
              "test_acc_prontoqa", "emb_cos_prontoqa", "emb_cos_stories")


def run_page(run_dir: Path, anchor: str = "") -> str:
    """A report whose source is one run: its provenance and its section with the figures."""
    return provenance_block([run_dir], anchor) + _run_section(run_dir, level=2, anchor=anchor)


def _curves(history: list[dict[str, Any]], run_id: str) -> str:
    """Per-source losses, True/False accuracy and token-embedding cosines over steps."""
    if not history:
        return '<p class="skip">no evaluations in metrics.jsonl yet</p>'
    steps = [r["step"] for r in history]
    last = history[-1]

    def series(keys: list[str]) -> dict[str, list[Any]]:
        return {k: [r.get(k) for r in history] for k in keys if k in last}

    panels = {"loss (per source)": series([f"{s}_loss_{src}" for s in ("train", "test")
                                            for src in ("prontoqa", "stories")] + ["train_loss"]),
              "PrOntoQA True/False accuracy": series(["train_acc_prontoqa", "test_acc_prontoqa"]),
              "token-embedding cosine": series([k for k in last if k.startswith("emb_cos_")])}
    fig = plot_training_curves(steps, {k: v for k, v in panels.items() if v}, log_panels=("loss (per source)",),
                               unit_panels=("PrOntoQA True/False accuracy",), xlabel="step")
    return img(fig_png(fig), "training curves", f"training curves of {run_id} ({len(history)} evaluations)",
                csv_bytes(history), f"{run_id}_metrics.csv")


def _figures(run_dirs: list[Path]) -> str:
    """The real-language figures drawn from ``run_dirs``; those that do not apply are listed with the reason."""
    names()  # loads every recipe
    with_stories = any(rundir.read_json(d / rundir.CONFIG)["data"]["n_stories"] > 0 for d in run_dirs)
    parts, skipped = [], []
    for name in LM_FIGURES:
        if (name == "p1-fig7") == with_stories:
            why = "for PrOntoQA-only runs" if with_stories else "needs stories in the mix"
            skipped.append(f"<li>{esc(name)}: {why}</li>")
            continue
        try:
            parts.append(drawn(name, run_dirs, FIGURES[name].help))
        except ConfigError as e:
            skipped.append(f"<li>{esc(name)}: {esc(e)}</li>")
    if skipped:
        parts.append(skipped_list("not drawn", skipped))
    return "\n".join(parts)


def _run_section(run_dir: Path, level: int = 3, anchor: str = "", figures: bool = True) -> str:
    cfg = rundir.read_config(run_dir)
    hs = f"h{level + 1}"
    m = cfg.model
    parts = run_head(run_dir, f"GPT-2 {m.n_layers} × {m.d_model} ({m.n_heads} heads), γ {cfg.init.gamma:g} "
                      f"({cfg.init.convention}), {cfg.data.n_prontoqa} PrOntoQA + {cfg.data.n_stories} stories "
                      f"({cfg.data.stories}), seed {cfg.seeds.init_seed}", level, anchor,
                      _curves(rundir.read_metrics(run_dir), run_dir.name))
    if (run_dir / rundir.SUMMARY).is_file():
        summary = rundir.read_json(run_dir / rundir.SUMMARY)
        parts.append(kv_table({k: v for k, v in summary.items() if not isinstance(v, (dict, list))}))
    else:
        parts.append('<p class="skip">unfinished run: no summary.json yet</p>')
    if figures and rundir.read_metrics(run_dir):
        parts.append(f"<{hs}>Figures</{hs}>" + _figures([run_dir]))
    return "\n".join(parts)


def sweep_page(sweep_dir: Path, max_run_figures: int | None = None, anchor: str = "") -> tuple[str, str]:
    """A real-language sweep: provenance, the collected table, the figures over all its runs, then each run
    (curves and final metrics; the figures already show every run, so ``max_run_figures`` is not used)."""
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
    for d in existing:
        parts.append(_run_section(d, anchor=anchor, figures=False))
    return f"anchorlab sweep {manifest.get('name', sweep_dir.name)}", "\n".join(parts)
