"""The report's real-language sections (``anchorlab lm``: GPT-2 on PrOntoQA + stories): a run's per-source
losses, True/False accuracy and embedding-cosine curves, its final metrics and the P2 Fig. 1/7A/7B or P1 Fig. 7
figures; a sweep's page draws those figures over all its runs (the shared parts: :mod:`.steps`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anchorlab import rundir
from anchorlab.report import steps
from anchorlab.report.html import provenance_block

LM_FIGURES = ("p2-fig1", "p2-fig7a", "p2-fig7b", "p1-fig7", "p1-fig7-curves")
# The collected table's first columns after the grid coordinates (those that any run has)
TABLE_HEAD = ("step", "train_loss_prontoqa", "train_loss_stories", "test_loss_prontoqa", "test_loss_stories",
              "test_acc_prontoqa", "emb_cos_prontoqa", "emb_cos_stories")
LOSS, ACC = "loss (per source)", "PrOntoQA True/False accuracy"


def run_page(run_dir: Path, anchor: str = "") -> str:
    """A report whose source is one run: its provenance and its section with the figures."""
    return provenance_block([run_dir], anchor) + _run_section(run_dir, level=2, anchor=anchor)


def _curves(history: list[dict[str, Any]], run_id: str) -> str:
    """Per-source losses, True/False accuracy and token-embedding cosines over steps."""
    emb = [k for k in (history[-1] if history else {}) if k.startswith("emb_cos_")]
    panels = {LOSS: [f"{s}_loss_{src}" for s in ("train", "test") for src in ("prontoqa", "stories")] + ["train_loss"],
              ACC: ["train_acc_prontoqa", "test_acc_prontoqa"], "token-embedding cosine": emb}
    return steps.step_curves(history, run_id, panels, log_panels=(LOSS,), unit_panels=(ACC,))


def _figures(run_dirs: list[Path]) -> str:
    """The real-language figures drawn from ``run_dirs``; those that do not apply are listed with the reason."""
    with_stories = any(rundir.read_json(d / rundir.CONFIG)["data"]["n_stories"] > 0 for d in run_dirs)
    p1 = ("p1-fig7", "p1-fig7-curves")
    skip = ({n: "for PrOntoQA-only runs" for n in p1} if with_stories else
            {n: "needs stories in the mix" for n in LM_FIGURES if n not in p1})
    return steps.figure_list(LM_FIGURES, run_dirs, skip)


def _run_section(run_dir: Path, level: int = 3, anchor: str = "", figures: bool = True) -> str:
    cfg = rundir.read_config(run_dir)
    m = cfg.model
    title = (f"GPT-2 {m.n_layers} × {m.d_model} ({m.n_heads} heads), γ {cfg.init.gamma:g} ({cfg.init.convention}), "
             f"{cfg.data.n_prontoqa} PrOntoQA + {cfg.data.n_stories} stories ({cfg.data.stories}), "
             f"seed {cfg.seeds.init_seed}")
    parts = steps.run_section(run_dir, title, _curves(rundir.read_metrics(run_dir), run_dir.name), level, anchor)
    if figures and rundir.read_metrics(run_dir):
        parts.append(f"<h{level + 1}>Figures</h{level + 1}>" + _figures([run_dir]))
    return "\n".join(parts)


def sweep_page(sweep_dir: Path, max_run_figures: int | None = None, anchor: str = "") -> tuple[str, str]:
    """A real-language sweep: provenance, the collected table, the figures over all its runs, then each run
    (curves and final metrics; the figures already show every run, so ``max_run_figures`` is not used)."""
    return steps.sweep_page(sweep_dir, TABLE_HEAD, _figures,
                            lambda d, a: _run_section(d, anchor=a, figures=False), anchor)
