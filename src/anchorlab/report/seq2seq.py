"""The report's real-task sections (SCAN, COGS, addition: P1 Fig. 6 / 17a): a run's loss and exact-match curves
and final metrics; a sweep's page adds the collected table and the figures over all its runs (the shared parts:
:mod:`.steps`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anchorlab import rundir
from anchorlab.report import steps
from anchorlab.report.html import provenance_block

TABLE_HEAD = ("step", "em_train", "em_test", "em_gen", "em_gen_overall", "test_loss")
FIGURES = ("p1-fig6", "p1-fig17a")
LOSS, EM = "output-token loss", "exact match"


def _curves(history: list[dict[str, Any]], run_id: str) -> str:
    panels = {LOSS: ["train_loss", "test_loss"], EM: ["em_train", "em_test", "em_gen"]}
    return steps.step_curves(history, run_id, panels, log_panels=(LOSS,), unit_panels=(EM,))


def _figures(run_dirs: list[Path]) -> str:
    return steps.figure_list(FIGURES, run_dirs)


def _run_section(run_dir: Path, level: int = 3, anchor: str = "") -> str:
    cfg = rundir.read_config(run_dir)
    m = cfg.model
    title = (f"{cfg.seq2seq.task}, {m.arch} {m.n_layers} × {m.d_model} ({m.n_heads} heads), γ {cfg.init.gamma:g}, "
             f"wd {cfg.train.weight_decay:g}, n_train {cfg.seq2seq.n_train or 'all'}, seed {cfg.seeds.init_seed}")
    return "\n".join(steps.run_section(run_dir, title, _curves(rundir.read_metrics(run_dir), run_dir.name), level,
                                       anchor))


def run_page(run_dir: Path, anchor: str = "") -> str:
    return provenance_block([run_dir], anchor) + _run_section(run_dir, level=2, anchor=anchor)


def sweep_page(sweep_dir: Path, max_run_figures: int | None = None, anchor: str = "") -> tuple[str, str]:
    return steps.sweep_page(sweep_dir, TABLE_HEAD, _figures, lambda d, a: _run_section(d, anchor=a), anchor)
