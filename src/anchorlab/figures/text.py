"""Real-language figures from ``anchorlab lm`` run directories: P2 Fig. 1, 7A, 7B and P1 Fig. 7.

Each recipe reads ``config.json`` (an ``LMRunConfig``) and ``metrics.jsonl`` (see :mod:`anchorlab.text.train`),
draws with :mod:`anchorlab.plotting.text`, and writes ``<out>/<name>.png`` plus the numbers as ``<name>.csv``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from anchorlab import rundir
from anchorlab.config import ConfigError
from anchorlab.figures import config_of_kind, figure, save_figure
from anchorlab.plotting import text as P
from anchorlab.text.config import LMRunConfig
from anchorlab.text.mix import SOURCES


def _runs(runs: list[Path], name: str) -> list[tuple[LMRunConfig, list[dict[str, Any]], Path]]:
    out = []
    for d in runs:
        cfg = config_of_kind(d, name, LMRunConfig, "an `anchorlab lm`")
        hist = rundir.read_metrics(d)
        if not hist:
            raise ConfigError(f"figure {name}: {d} has no evaluations in metrics.jsonl yet")
        out.append((cfg, hist, d))
    return sorted(out, key=lambda t: (t[0].init.gamma, t[0].seeds.init_seed, str(t[2])))


def _label(cfg: LMRunConfig) -> str:
    """γ, then whatever else tells runs of one figure apart: a non-default init convention, overrides, seed."""
    parts = [f"γ = {cfg.init.gamma:g}"]
    if cfg.init.convention != "fan_in":
        parts.append(cfg.init.convention.replace("_", " "))
    parts += [f"{k} γ {v:g}" for k, v in cfg.init.overrides.items()]
    if cfg.seeds.init_seed:
        parts.append(f"seed {cfg.seeds.init_seed}")
    return ", ".join(parts)


def delta_loss(l_prontoqa: float, l_stories: float) -> float:
    """P2 Fig. 7A: ΔL = (L_stories − L_PrOntoQA) / L_PrOntoQA."""
    return (l_stories - l_prontoqa) / l_prontoqa


@figure("p2-fig1", "runs",
        "P2 Fig. 1: per-source next-token loss (PrOntoQA vs stories) over training, one panel per run")
def p2_fig1(runs: list[Path], out: Path) -> Path:
    panels, rows = [], []
    for cfg, hist, d in _runs(runs, "p2-fig1"):
        step = [r["step"] for r in hist]
        panels.append({"title": _label(cfg), "step": step,
                       "train": {s: [r[f"train_loss_{s}"] for r in hist] for s in SOURCES},
                       "test": {s: [r[f"test_loss_{s}"] for r in hist] for s in SOURCES}})
        rows += [{"run_dir": str(d), "gamma": cfg.init.gamma, "seed": cfg.seeds.init_seed, "step": r["step"],
                  "epoch": r["epoch"], "source": s, "train_loss": r[f"train_loss_{s}"],
                  "test_loss": r[f"test_loss_{s}"]} for r in hist for s in SOURCES]
    fig = P.plot_source_losses(panels, "P2 Fig. 1: loss on each source of the PrOntoQA + stories mix")
    return save_figure(fig, rows, out, "p2-fig1")


@figure("p2-fig7a", "runs", "P2 Fig. 7A: ΔL = (L_stories − L_PrOntoQA)/L_PrOntoQA (training loss) over training, per γ")
def p2_fig7a(runs: list[Path], out: Path) -> Path:
    curves: list[Any] = []
    rows: list[dict[str, Any]] = []
    inits: dict[Any, Any] = {}
    for cfg, hist, d in _runs(runs, "p2-fig7a"):
        dl = [delta_loss(r["train_loss_prontoqa"], r["train_loss_stories"]) for r in hist]
        # colour = γ; dash = the init convention and overrides, in order of first appearance (the first solid)
        k = inits.setdefault((cfg.init.convention, tuple(sorted(cfg.init.overrides.items()))), len(inits))
        curves.append({"gamma": cfg.init.gamma, "label": _label(cfg), "step": [r["step"] for r in hist], "y": dl,
                       "ls": ("-", "--", ":", "-.")[k % 4]})
        rows += [{"run_dir": str(d), "gamma": cfg.init.gamma, "seed": cfg.seeds.init_seed, "step": r["step"],
                  "L_prontoqa": r["train_loss_prontoqa"], "L_stories": r["train_loss_stories"], "delta_L": v}
                 for r, v in zip(hist, dl)]
    fig = P.plot_curves_by_gamma(curves, "ΔL = (L_stories − L_PrOntoQA) / L_PrOntoQA", "P2 Fig. 7A")
    return save_figure(fig, rows, out, "p2-fig7a")


@figure("p2-fig7b", "runs", "P2 Fig. 7B: mean pairwise cosine of token embeddings, PrOntoQA-only vs story-only "
        "tokens, over training per γ (all_tokens=True: every token each source uses)")
def p2_fig7b(runs: list[Path], out: Path, all_tokens: bool = False) -> Path:
    suffix = "_all" if all_tokens else ""
    curves, rows = [], []
    for cfg, hist, d in _runs(runs, "p2-fig7b"):
        for s, ls in zip(SOURCES, ("-", "--")):
            curves.append({"gamma": cfg.init.gamma, "label": f"{_label(cfg)}, {P.SOURCE_LABELS[s]}", "ls": ls,
                           "step": [r["step"] for r in hist], "y": [r[f"emb_cos_{s}{suffix}"] for r in hist]})
        rows += [{"run_dir": str(d), "gamma": cfg.init.gamma, "seed": cfg.seeds.init_seed, "step": r["step"],
                  "tokens": "all" if all_tokens else "exclusive", "cos_prontoqa": r[f"emb_cos_prontoqa{suffix}"],
                  "cos_stories": r[f"emb_cos_stories{suffix}"]} for r in hist]
    fig = P.plot_curves_by_gamma(curves, "mean pairwise cosine of token embeddings",
                                 "P2 Fig. 7B: PrOntoQA (solid) vs stories (dashed)")
    return save_figure(fig, rows, out, "p2-fig7b")


def convergence_step(hist: list[dict[str, Any]], level: float) -> float:
    """First evaluated step at which the PrOntoQA True/False training accuracy reaches ``level`` (nan: never)."""
    return next((float(r["step"]) for r in hist if r.get("train_acc_prontoqa", math.nan) >= level), math.nan)


@figure("p1-fig7", "runs", "P1 Fig. 7: PrOntoQA data size vs convergence step (train True/False acc >= level) and "
        "final True/False test accuracy, one line per (γ, weight decay)")
def p1_fig7(runs: list[Path], out: Path, level: float = 0.99) -> Path:
    # (γ, wd) -> data size -> per run (convergence step, test accuracy, last step)
    groups: dict[tuple[float, float], dict[int, list[tuple[float, float, int]]]] = \
        defaultdict(lambda: defaultdict(list))
    rows = []
    for cfg, hist, d in _runs(runs, "p1-fig7"):
        key, n = (cfg.init.gamma, cfg.train.weight_decay), cfg.data.n_prontoqa
        steps, acc = convergence_step(hist, level), hist[-1]["test_acc_prontoqa"]
        groups[key][n].append((steps, acc, hist[-1]["step"]))
        rows.append({"run_dir": str(d), "gamma": key[0], "weight_decay": key[1], "seed": cfg.seeds.init_seed,
                     "n_prontoqa": n, "convergence_step": steps, "level": level, "final_step": hist[-1]["step"],
                     "test_acc": acc})
    settings = []
    for (g, wd), by_n in sorted(groups.items()):
        ns = sorted(by_n)
        settings.append({"label": f"γ = {g:g}, wd = {wd:g}", "n": ns,
                         "steps": [sum(s for s, _, _ in by_n[n]) / len(by_n[n]) for n in ns],
                         "acc": [sum(a for _, a, _ in by_n[n]) / len(by_n[n]) for n in ns],
                         # a size where a run never reached the level: drawn at its runs' last step, open
                         "unconverged": [max(f for _, _, f in by_n[n]) if any(math.isnan(s) for s, _, _ in by_n[n])
                                         else math.nan for n in ns]})
    fig = P.plot_data_size(settings, f"P1 Fig. 7: PrOntoQA (convergence: train acc ≥ {level:g})")
    return save_figure(fig, rows, out, "p1-fig7")


@figure("p1-fig7-curves", "runs", "P1 Fig. 7 over training: PrOntoQA True/False test (solid) and training (dashed) "
        "accuracy per step, a panel per data size, a colour per (γ, weight decay)")
def p1_fig7_curves(runs: list[Path], out: Path) -> Path:
    by_n: dict[int, list[dict[str, Any]]] = defaultdict(list)
    rows = []
    for cfg, hist, d in _runs(runs, "p1-fig7-curves"):
        label = f"γ = {cfg.init.gamma:g}, wd = {cfg.train.weight_decay:g}" + (
            f", seed {cfg.seeds.init_seed}" if cfg.seeds.init_seed else "")
        evals = [r for r in hist if "test_acc_prontoqa" in r]
        by_n[cfg.data.n_prontoqa].append({"label": label, "step": [r["step"] for r in evals],
                                          "train": [r.get("train_acc_prontoqa", math.nan) for r in evals],
                                          "test": [r["test_acc_prontoqa"] for r in evals]})
        rows += [{"run_dir": str(d), "gamma": cfg.init.gamma, "weight_decay": cfg.train.weight_decay,
                  "seed": cfg.seeds.init_seed, "n_prontoqa": cfg.data.n_prontoqa, "step": r["step"],
                  "train_acc": r.get("train_acc_prontoqa", math.nan), "test_acc": r["test_acc_prontoqa"]}
                 for r in evals]
    panels = [{"title": f"{n:,} PrOntoQA examples", "lines": by_n[n]} for n in sorted(by_n)]
    fig = P.plot_accuracy_panels(panels, "P1 Fig. 7 over training: True/False accuracy (test solid, train dashed)")
    return save_figure(fig, rows, out, "p1-fig7-curves")
