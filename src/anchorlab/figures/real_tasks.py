"""P1's real-task figures from ``seq2seq`` run directories (:mod:`anchorlab.text.seq2seq_train`): Fig. 6 (SCAN
and COGS exact match vs training-set size) and Fig. 17a (addition exact match over training).

A setting is a (γ, weight decay) pair; P1 compares small init + large weight decay with large init + small
weight decay. Every recipe writes ``<name>.png`` and the numbers behind it as ``<name>.csv`` (one row per run).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from anchorlab import rundir
from anchorlab.config import ConfigError
from anchorlab.figures import config_of_kind, figure, save_figure
from anchorlab.plotting import real_tasks as P
from anchorlab.text.seq2seq_config import Seq2SeqRunConfig

PANELS = (  # (task, metric, panel title): P1 Fig. 6a, 6b, 6c
    ("scan", "em_test", "(a) SCAN addprim_turn_left: test"),
    ("cogs", "em_test", "(b) COGS: test (in distribution)"),
    ("cogs", "em_gen", "(c) COGS: gen (21 types, equal weight)"),
    ("addition", "em_test", "addition: test square [400, 600]²"),
)
SIZE_LABEL = {"scan": "training commands (+ 10% 'turn left')", "cogs": "COGS training examples",
              "addition": "training pairs"}


def _runs(runs: list[Path], name: str) -> list[tuple[Seq2SeqRunConfig, list[dict[str, Any]], dict[str, Any], Path]]:
    """(config, metrics history, data.json, dir) of every run with at least one evaluation."""
    out = []
    for d in runs:
        cfg = config_of_kind(d, name, Seq2SeqRunConfig, "a real-task (`anchorlab seq2seq`)")
        hist = rundir.read_metrics(d)
        if hist:
            out.append((cfg, hist, rundir.read_json(d / "data.json"), d))
    if not out:
        raise ConfigError(f"figure {name}: none of the {len(runs)} runs has an evaluation yet")
    return out


def setting(cfg: Seq2SeqRunConfig) -> tuple[float, float]:
    return cfg.init.gamma, cfg.train.weight_decay


def setting_label(key: tuple[float, float]) -> str:
    return f"γ = {key[0]:g}, wd = {key[1]:g}"


def train_size(cfg: Seq2SeqRunConfig, info: dict[str, Any]) -> int:
    """The x value of Fig. 6: SCAN commands other than the primitive, or training examples (pairs)."""
    return int(info["n_train_commands"] if cfg.seq2seq.task == "scan" else info["n_train"])


@figure("p1-fig6", "runs", "P1 Fig. 6: exact match vs training-set size (SCAN test; COGS test and gen), one line "
        "per (γ, weight decay), seeds as dots")
def p1_fig6(runs: list[Path], out: Path) -> Path:
    by_panel: dict[tuple[str, str], dict[tuple[float, float], dict[int, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    rows = []
    for cfg, hist, info, d in _runs(runs, "p1-fig6"):
        final, n = hist[-1], train_size(cfg, info)
        for task, metric, _ in PANELS:
            if task == cfg.seq2seq.task and metric in final:
                by_panel[task, metric][setting(cfg)][n].append(final[metric])
        rows.append({"run_dir": str(d), "task": cfg.seq2seq.task, "gamma": cfg.init.gamma,
                     "weight_decay": cfg.train.weight_decay, "seed": cfg.seeds.init_seed, "n_train": n,
                     "step": final["step"], **{k: v for k, v in final.items() if k.startswith("em_")}})
    panels = []
    for task, metric, title in PANELS:
        if (task, metric) not in by_panel:
            continue
        settings = [{"label": setting_label(key), "n": sorted(by_n), "acc": [by_n[x] for x in sorted(by_n)]}
                    for key, by_n in sorted(by_panel[task, metric].items(), key=lambda kv: -kv[0][0])]
        panels.append({"title": title, "xlabel": SIZE_LABEL[task], "settings": settings})
    fig = P.plot_accuracy_vs_size(panels, "P1 Fig. 6: small init + large wd vs large init + small wd")
    return save_figure(fig, rows, out, "p1-fig6")


@figure("p1-fig17a", "runs", "P1 Fig. 17a: addition, answer exact match on the held-out square [400, 600]² (solid) "
        "and on training pairs (dashed) over training, one colour per (γ, weight decay)")
def p1_fig17a(runs: list[Path], out: Path) -> Path:
    groups: dict[tuple[float, float], list[dict[str, Any]]] = defaultdict(list)
    rows = []
    for cfg, hist, info, d in _runs(runs, "p1-fig17a"):
        if cfg.seq2seq.task != "addition":
            raise ConfigError(f"figure p1-fig17a: {d} is a {cfg.seq2seq.task} run, not addition")
        groups[setting(cfg)].append({"step": [r["step"] for r in hist], "test": [r["em_test"] for r in hist],
                                     "train": [r["em_train"] for r in hist]})
        rows += [{"run_dir": str(d), "gamma": cfg.init.gamma, "weight_decay": cfg.train.weight_decay,
                  "seed": cfg.seeds.init_seed, "n_train": info["n_train"], "step": r["step"],
                  "em_train": r["em_train"], "em_test": r["em_test"]} for r in hist]
    settings = [{"label": setting_label(k), "runs": v} for k, v in sorted(groups.items(), key=lambda kv: -kv[0][0])]
    fig = P.plot_accuracy_over_training(settings, "P1 Fig. 17a: addition a + b, test a, b ∈ [400, 600]")
    return save_figure(fig, rows, out, "p1-fig17a")
