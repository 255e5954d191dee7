"""Command line: ``anchorlab train|lm|seq2seq|data|demo|sweep|collect|figure|reproduce|report``. Parses, then
makes one library call per sub-command; values are checked where they are used, and a ConfigError (or a data
set whose files are missing) is one line, exit 2."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import anchorlab
from anchorlab.config import ConfigError, parse_override
from anchorlab.kinds import KINDS, preflight


def _train(a: argparse.Namespace) -> int:  # `train`, `lm` and `seq2seq`: one run of that kind
    if a.config is None and not a.set:  # never start the day-long paper-scale default by accident
        a.parser.print_help()
        return 2
    kind = KINDS[a.cmd if a.cmd in ("lm", "seq2seq") else "anchor"]
    cfg = kind.get("load_config")(a.config, a.set)
    out = Path(a.out) if a.out else Path("runs") / cfg.run_id()
    print(f"run {out}: " + kind.get("summary_line")(cfg, kind.get("train")(cfg, out)))
    return 0


def _data(a: argparse.Namespace) -> None:
    from anchorlab.config import load_config
    from anchorlab.tasks import make_task_data

    cfg = load_config(a.config, a.set)
    (data := make_task_data(cfg.task, cfg.seeds.data_seed)).save_npz(a.out)
    print(f"wrote {a.out}: {len(data)} sequences, {int(data.in_train.sum())} in training")


def _sweep(a: argparse.Namespace) -> None:
    from anchorlab.execute import run_sweep
    from anchorlab.sweep import describe, load_sweep

    spec = load_sweep(a.file, a.set)
    out = Path(a.out) if a.out else Path("runs") / spec.name
    if not a.dry_run:
        preflight([cfg for _, cfg in spec.configs()])  # a missing data set: one line, exit 2, nothing run
    print(describe(spec, out) if a.dry_run else run_sweep(
        spec, out, workers=a.workers, backend=a.backend, batch_models=a.batch_models, address=a.address,
        gpus_per_run=a.gpus_per_run, max_retries=a.max_retries))


def _collect(a: argparse.Namespace) -> None:
    from anchorlab.sweep import collect, write_csv

    write_csv(rows := collect(a.sweep_dir), out := Path(a.out or Path(a.sweep_dir) / "summary.csv"))
    print(f"wrote {out}: {len(rows)} runs, {sum(r['status'] == 'done' for r in rows)} done")


def _figure(a: argparse.Namespace) -> None:
    from anchorlab.figures import describe, draw

    if a.name == "list":
        return print(describe())
    flags = {"use_best_epoch": a.best_epoch or None, "step": a.step, "method": a.method}
    options = {k: v for k, v in flags.items() if v} | dict(parse_override(item) for item in a.option)
    path = draw(a.name, a.source, a.out, **options)
    print(f"wrote {path} and its data as {path.with_suffix('.csv')}")


def _reproduce(a: argparse.Namespace) -> None:
    from anchorlab.reproduce import describe_registry, reproduce

    if a.name == "list":
        return print(describe_registry())
    for path in reproduce(a.name, a.out, paper=a.paper, overrides=tuple(a.set), workers=a.workers,
                          backend=a.backend, dry_run=a.dry_run):
        print(f"wrote {path} and its data as {path.with_suffix('.csv')}")


def _demo(a: argparse.Namespace) -> None:
    from anchorlab.demo import DEFAULT_SPEC, run_demo

    run_demo(a.config or DEFAULT_SPEC, a.out, a.workers)


def _report(a: argparse.Namespace) -> None:
    from anchorlab.report import write_report

    print(f"wrote {write_report(a.source, a.out, a.max_run_figures)}")


def arg(*flags: str, **kw: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """One argument of a sub-command: argparse's flags and options."""
    return flags, kw


SET = arg("--set", action="append", default=[], metavar="KEY=VALUE", help="dotted override (e.g. init.gamma=0.8)")
OUT = arg("--out", help="run directory (default runs/<run id>)")
BACKEND = {"choices": ("local", "process", "ray"), "help": "local: this process; process: 1-thread worker "
           "processes; ray: one Ray task per run (pip install 'anchorlab[ray]')"}
DRY = arg("--dry-run", action="store_true", help="print every run (done / partial / new); run nothing")
COMMANDS: dict[str, tuple[Any, str, list[tuple[tuple[str, ...], dict[str, Any]]]]] = {
    "train": (_train, "train one anchor-task run into a run directory", [
        arg("config", nargs="?", help="TOML run config (configs/p1, configs/p2); --set alone: the defaults"), SET,
        OUT]),
    "lm": (_train, "train a γ-initialized GPT-2 on PrOntoQA + stories (P2 Fig. 1/7, P1 Fig. 7)", [
        arg("config", nargs="?", help="TOML LM config (configs/text/); --set alone: the paper-scale defaults"), SET,
        OUT]),
    "seq2seq": (_train, "train a decoder on a P1 real task: SCAN, COGS (Fig. 6) or addition (Fig. 17a)", [
        arg("config", nargs="?", help="TOML real-task config (configs/real/); --set alone: the paper-scale defaults"),
        SET, OUT]),
    "data": (_data, "generate a task's dataset to .npz", [
        arg("config", nargs="?", help="TOML run config (default: the paper's P1 task)"), SET,
        arg("--out", required=True, help="output .npz file")]),
    "demo": (_demo, "the default CPU experiment: small vs middle vs large init, 3 seeds", [
        arg("--config", help="demo sweep file (default configs/demo.toml)"), arg("--out", default="demo_out"),
        arg("--workers", type=int, default=2, help="1-thread worker processes")]),
    "sweep": (_sweep, "train every run of a grid (base config + axes): anchor-task or LM runs", [
        arg("file", help="sweep TOML (configs/sweeps/)"), SET,
        arg("--out", help="sweep directory (default runs/<name>)"),
        arg("--backend", **BACKEND, default="process"),
        arg("--workers", type=int, default=max(1, os.cpu_count() or 1), help="processes; ray: CPUs of a local cluster"),
        arg("--address", help="ray: address of an existing cluster (e.g. auto); default: start a local one"),
        arg("--gpus-per-run", type=float, default=0.0, help="ray: GPUs per run (0.25: four runs share one)"),
        arg("--max-retries", type=int, default=3, help="ray: retries of a run whose worker dies"),
        arg("--batch-models", type=int, metavar="K", help="local: up to K same-shaped runs trained together "
          "(stacked weights); default 16 on a GPU, 1 on a CPU"), DRY]),
    "collect": (_collect, "one tidy CSV row per run of a sweep directory", [
        arg("sweep_dir"), arg("--out", help="CSV path (default SWEEP_DIR/summary.csv)")]),
    "figure": (_figure, "draw a paper figure from a sweep or run directory (PNG + CSV)", [
        arg("name", help="figure name; `anchorlab figure list` prints them"),
        arg("source", nargs="*", help="sweep directory, or run directories (a sweep stands for its runs)"),
        arg("--out", default="figures"), arg("--best-epoch", action="store_true", help="per run, the best evaluation"),
        arg("--step", type=int, action="append", metavar="N", help="checkpoint step(s) to analyse"),
        arg("--method", choices=("pca", "tsne"), help="2-D map of the embedding figures (default pca)"),
        arg("--option", action="append", default=[], metavar="KEY=VALUE", help="a figure's own option")]),
    "reproduce": (_reproduce, "one paper figure in one command: its sweeps, then its figures", [
        arg("name", help="entry of configs/reproduce.toml (e.g. p2-fig7a); `list` prints them with times"),
        arg("--paper", action="store_true", help="the paper-scale sweeps (need a GPU) instead of the CPU ones"),
        arg("--out", help="output directory (default runs/reproduce/NAME)"),
        arg("--workers", type=int, default=2, help="1-thread worker processes"), arg("--backend", **BACKEND),
        SET, DRY]),
    "report": (_report, "one self-contained HTML report of a run or sweep directory", [
        arg("source", help="run directory (config.json) or sweep directory (sweep.json)"),
        arg("--out", help="HTML path (default SOURCE/report.html)"),
        arg("--max-run-figures", type=int, default=12, help="sweeps: P1 figures for this many runs")]),
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
    from anchorlab.tasks.scan import ScanFilesMissing  # a data set's files missing: one line, exit 2
    from anchorlab.text.cogs import CogsUnavailable

    try:
        return a.fn(a) or 0
    except (ConfigError, CogsUnavailable, ScanFilesMissing) as e:  # a missing data set reads as one line too
        print(f"anchorlab {a.cmd}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
