"""Command line: ``anchorlab train|lm|data|demo|sweep|collect|figure|reproduce|report``. Parses, then makes one
library call per sub-command; values are checked where they are used, and a ConfigError is one line, exit 2."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import anchorlab
from anchorlab.config import ConfigError, parse_override
from anchorlab.kinds import KINDS


def _train(a: argparse.Namespace) -> int:  # `train` and `lm`: one run of that kind
    if a.config is None and not a.set:  # never start the day-long paper-scale default by accident
        a.parser.print_help()
        return 2
    kind = KINDS["lm" if a.cmd == "lm" else "anchor"]
    cfg = kind.get("load_config")(a.config, a.set)
    out = Path(a.out) if a.out else Path("runs") / cfg.run_id()
    print(f"run {out}: " + kind.get("summary_line")(cfg, kind.get("train")(cfg, out)))
    return 0


def _data(a: argparse.Namespace) -> None:
    from anchorlab.config import load_config
    from anchorlab.tasks import make_task_data

    cfg = load_config(a.config, a.set)
    data = make_task_data(cfg.task, cfg.seeds.data_seed)
    data.save_npz(a.out)
    print(f"wrote {a.out}: {len(data)} sequences, {int(data.in_train.sum())} in training")


def _sweep(a: argparse.Namespace) -> None:
    from anchorlab.execute import run_sweep
    from anchorlab.sweep import describe, load_sweep

    spec = load_sweep(a.file, a.set)
    out = Path(a.out) if a.out else Path("runs") / spec.name
    print(describe(spec, out) if a.dry_run else run_sweep(
        spec, out, workers=a.workers, backend=a.backend, batch_models=a.batch_models, address=a.address,
        gpus_per_run=a.gpus_per_run, max_retries=a.max_retries))


def _collect(a: argparse.Namespace) -> None:
    from anchorlab.sweep import collect, write_csv

    rows = collect(a.sweep_dir)
    out = Path(a.out) if a.out else Path(a.sweep_dir) / "summary.csv"
    write_csv(rows, out)
    print(f"wrote {out}: {len(rows)} runs, {sum(r['status'] == 'done' for r in rows)} done")


def _figure(a: argparse.Namespace) -> None:
    from anchorlab.figures import describe, draw

    if a.name == "list":
        print(describe())
        return
    flags = {"use_best_epoch": a.best_epoch or None, "step": a.step, "method": a.method}
    options: dict[str, Any] = {k: v for k, v in flags.items() if v}
    options.update(parse_override(item) for item in a.option)
    path = draw(a.name, a.source, a.out, **options)
    print(f"wrote {path} and its data as {path.with_suffix('.csv')}")


def _reproduce(a: argparse.Namespace) -> None:
    from anchorlab.reproduce import describe_registry, reproduce

    if a.name == "list":
        print(describe_registry())
        return
    for path in reproduce(a.name, a.out, paper=a.paper, overrides=tuple(a.set), workers=a.workers,
                          backend=a.backend, dry_run=a.dry_run):
        print(f"wrote {path} and its data as {path.with_suffix('.csv')}")


def _demo(a: argparse.Namespace) -> None:
    from anchorlab.demo import DEFAULT_SPEC, run_demo

    run_demo(a.config or DEFAULT_SPEC, a.out, a.workers)


def _report(a: argparse.Namespace) -> None:
    from anchorlab.report import write_report

    print(f"wrote {write_report(a.source, a.out, a.max_run_figures)}")


SET = (("--set",), {"action": "append", "default": [], "metavar": "KEY=VALUE", "help": "dotted override"})
BACKEND = {"choices": ("local", "process", "ray"), "help": "local: this process; process: 1-thread worker "
           "processes; ray: one Ray task per run (pip install 'anchorlab[ray]')"}
COMMANDS: dict[str, tuple[Any, str, list[tuple[tuple[str, ...], dict[str, Any]]]]] = {
    "train": (_train, "train one anchor-task run into a run directory", [
        (("config",), {"nargs": "?", "help": "TOML run config (configs/p1, configs/p2); --set alone: the defaults"}),
        SET, (("--out",), {"help": "run directory (default runs/<run id>)"})]),
    "lm": (_train, "train a γ-initialized GPT-2 on PrOntoQA + stories (P2 Fig. 1/7, P1 Fig. 7)", [
        (("config",), {"nargs": "?", "help": "TOML LM config (configs/text/); --set alone: the paper-scale defaults"}),
        SET, (("--out",), {"help": "run directory (default runs/<run id>)"})]),
    "data": (_data, "generate a task's dataset to .npz", [
        (("config",), {"nargs": "?", "help": "TOML run config (default: the paper's P1 task)"}), SET,
        (("--out",), {"required": True, "help": "output .npz file"})]),
    "demo": (_demo, "the default CPU experiment: small vs middle vs large init, 3 seeds", [
        (("--config",), {"help": "demo sweep file (default configs/demo.toml)"}), (("--out",), {"default": "demo_out"}),
        (("--workers",), {"type": int, "default": 2, "help": "1-thread worker processes"})]),
    "sweep": (_sweep, "train every run of a grid (base config + axes): anchor-task or LM runs", [
        (("file",), {"help": "sweep TOML (see configs/demo.toml, configs/sweeps/)"}),
        (("--out",), {"help": "sweep directory (default runs/<name>)"}), SET,
        (("--backend",), {**BACKEND, "default": "process"}),
        (("--workers",), {"type": int, "default": max(1, os.cpu_count() or 1),
                          "help": "process: worker processes; ray without --address: CPUs of the local cluster"}),
        (("--address",), {"help": "ray: address of an existing cluster (e.g. auto); default: start a local one"}),
        (("--gpus-per-run",), {"type": float, "default": 0.0, "help": "ray: GPUs per run (0.25: 4 runs share one)"}),
        (("--max-retries",), {"type": int, "default": 3, "help": "ray: retries of a run whose worker dies"}),
        (("--batch-models",), {"type": int, "metavar": "K", "help": "local: train up to K same-shaped runs together "
                               "(stacked weights); default 16 on a GPU, 1 on a CPU"}),
        (("--dry-run",), {"action": "store_true", "help": "print every run id and its status; run nothing"})]),
    "collect": (_collect, "one tidy CSV row per run of a sweep directory", [
        (("sweep_dir",), {}), (("--out",), {"help": "CSV path (default SWEEP_DIR/summary.csv)"})]),
    "figure": (_figure, "draw a paper figure from a sweep or run directory (PNG + CSV)", [
        (("name",), {"help": "figure name; `anchorlab figure list` prints them"}),
        (("source",), {"nargs": "*", "help": "sweep directory, or run directories (a sweep stands for its runs)"}),
        (("--out",), {"default": "figures"}),
        (("--best-epoch",), {"action": "store_true", "help": "per run, the best value over evaluations"}),
        (("--step",), {"type": int, "action": "append", "metavar": "N", "help": "checkpoint step(s) to analyse"}),
        (("--method",), {"choices": ("pca", "tsne"), "help": "2-D map of the embedding figures (default pca)"}),
        (("--option",), {"action": "append", "default": [], "metavar": "KEY=VALUE", "help": "a figure's own option"})]),
    "reproduce": (_reproduce, "one paper figure in one command: its sweeps, then its figures", [
        (("name",), {"help": "entry of configs/reproduce.toml (e.g. p2-fig7a); `list` prints them with times"}),
        (("--paper",), {"action": "store_true", "help": "the paper-scale sweeps (need a GPU) instead of the CPU ones"}),
        (("--out",), {"help": "output directory (default runs/reproduce/NAME)"}),
        (("--workers",), {"type": int, "default": 2, "help": "1-thread worker processes (default 2)"}),
        (("--backend",), BACKEND), SET, (("--dry-run",), {"action": "store_true", "help": "print runs and figures"})]),
    "report": (_report, "one self-contained HTML report of a run or sweep directory", [
        (("source",), {"help": "run directory (config.json) or sweep directory (sweep.json)"}),
        (("--out",), {"help": "HTML path (default SOURCE/report.html)"}),
        (("--max-run-figures",), {"type": int, "default": 12, "help": "sweeps: P1 figures for this many runs"})]),
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="anchorlab", description=__doc__)
    p.add_argument("--version", action="version", version=f"anchorlab {anchorlab.__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    for name, (fn, help_, arguments) in COMMANDS.items():
        s = sub.add_parser(name, help=help_)
        for flags, kwargs in arguments:
            s.add_argument(*flags, **kwargs)
        s.set_defaults(fn=fn, parser=s)
    a = p.parse_args(argv)
    try:
        return a.fn(a) or 0
    except ConfigError as e:
        print(f"anchorlab {a.cmd}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
