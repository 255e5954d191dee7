"""Command line: ``anchorlab train|data|lm|demo|sweep|collect|figure|reproduce|report``; one library call per
sub-command."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from anchorlab.config import ConfigError, load_config, parse_override


def _cmd_train(a: argparse.Namespace) -> None:
    from anchorlab.metrics import HEADLINE
    from anchorlab.train import train

    cfg = load_config(a.config, a.set)
    out = Path(a.out) if a.out else Path("runs") / cfg.run_id()
    summary = train(cfg, out)
    keys = (*HEADLINE[cfg.task.name], "final_train_loss")
    print(f"run {out}: " + ", ".join(f"{k} {summary[k]:.4g}" for k in keys))


def _cmd_lm(a: argparse.Namespace) -> None:
    from anchorlab.text.config import load_lm_config
    from anchorlab.text.lm import train_lm

    cfg = load_lm_config(a.config, a.set)
    out = Path(a.out) if a.out else Path("runs") / cfg.run_id()
    s = train_lm(cfg, out)
    print(f"run {out}: step {s['step']}, train loss PrOntoQA {s['train_loss_prontoqa']:.4g}, "
          f"stories {s['train_loss_stories']:.4g}, test acc PrOntoQA {s['test_acc_prontoqa']:.4g}")


def _cmd_data(a: argparse.Namespace) -> None:
    from anchorlab.tasks import make_task_data

    cfg = load_config(a.config, a.set)
    data = make_task_data(cfg.task, cfg.seeds.data_seed)
    data.save_npz(a.out)
    print(f"wrote {a.out}: {len(data)} sequences, {int(data.in_train.sum())} in training")


def _cmd_demo(a: argparse.Namespace) -> None:
    from anchorlab.demo import DEFAULT_SPEC, run_demo

    run_demo(a.config or DEFAULT_SPEC, a.out, a.workers)


def _cmd_sweep(a: argparse.Namespace) -> None:
    from anchorlab.execute import run_all
    from anchorlab.sweep import describe, load_sweep, plan

    spec = load_sweep(a.file, a.set)
    out = Path(a.out) if a.out else Path("runs") / spec.name
    if a.dry_run:
        print(describe(spec, out))
        return
    if a.backend != "ray" and (a.address or a.gpus_per_run):
        raise ConfigError(f"{'--address' if a.address else '--gpus-per-run'}: only with --backend ray, "
                          f"got --backend {a.backend}")
    rows = plan(spec, out)
    options = {}
    if a.backend == "ray":
        options = {"address": a.address, "num_gpus": a.gpus_per_run, "max_retries": a.max_retries,
                   "init_options": {} if a.address else {"num_cpus": a.workers}}
    results = run_all([(cfg, d) for _, cfg, d in rows], workers=a.workers, backend=a.backend,
                      batch_models=a.batch_models, **options)
    failed = [r for r in results if r.error]
    print(f"sweep {spec.name}: {len(results) - len(failed)}/{len(results)} runs done in {out}"
          + (f"; {len(failed)} failed: " + ", ".join(str(r.run_dir) for r in failed) if failed else ""))


def _cmd_collect(a: argparse.Namespace) -> None:
    from anchorlab.sweep import collect, write_csv

    rows = collect(a.sweep_dir)
    out = Path(a.out) if a.out else Path(a.sweep_dir) / "summary.csv"
    write_csv(rows, out)
    print(f"wrote {out}: {len(rows)} runs, {sum(r['status'] == 'done' for r in rows)} done")


def _cmd_figure(a: argparse.Namespace) -> None:
    from anchorlab.figures import FIGURES, draw, names

    if a.name == "list":
        for n in names():
            print(f"{n:10s} {'[' + FIGURES[n].sources + ']':8s} {FIGURES[n].help}")
        return
    options: dict = {"use_best_epoch": True} if a.best_epoch else {}
    if a.step:
        options["step"] = a.step
    if a.method:
        import inspect

        if a.name not in names() or "method" not in inspect.signature(FIGURES[a.name].fn).parameters:
            raise ConfigError(f"--method: figure {a.name!r} has no 2-D embedding (p1-fig3b, p1-fig5, p1-fig11, "
                              "p1-fig16 have)")
        options["method"] = a.method
    options.update(parse_override(item) for item in a.option)
    path = draw(a.name, a.source, a.out, **options)
    print(f"wrote {path} and its data as {path.with_suffix('.csv')}")


def _cmd_reproduce(a: argparse.Namespace) -> None:
    from anchorlab.reproduce import describe_registry, reproduce

    if a.name == "list":
        print(describe_registry())
        return
    written = reproduce(a.name, a.out, paper=a.paper, overrides=tuple(a.set), workers=a.workers,
                        backend=a.backend, dry_run=a.dry_run)
    for path in written:
        print(f"wrote {path} and its data as {path.with_suffix('.csv')}")


def _cmd_report(a: argparse.Namespace) -> None:
    from anchorlab.report import write_report

    path = write_report(a.source, a.out, a.max_run_figures)
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="anchorlab", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name, fn, help_ in (("train", _cmd_train, "train one run into a run directory"),
                            ("data", _cmd_data, "generate a task's dataset to .npz")):
        s = sub.add_parser(name, help=help_)
        s.add_argument("config", nargs="?", help="TOML run config (defaults: the paper's P1 config)")
        s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="dotted override")
        s.add_argument("--out", required=name == "data", help="output run directory / .npz file")
        s.set_defaults(fn=fn)
    s = sub.add_parser("lm", help="train a γ-initialized GPT-2 on PrOntoQA + stories (P2 Fig. 1/7, P1 Fig. 7)")
    s.add_argument("config", nargs="?", help="TOML LM config (see configs/text/; default: the paper scale)")
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="dotted override")
    s.add_argument("--out", help="run directory (default runs/<run id>)")
    s.set_defaults(fn=_cmd_lm)
    s = sub.add_parser("demo", help="the default CPU experiment: small vs middle vs large init, 3 seeds")
    s.add_argument("--config", help="demo sweep file (default configs/demo.toml)")
    s.add_argument("--out", default="demo_out")
    s.add_argument("--workers", type=int, default=2, help="1-thread worker processes")
    s.set_defaults(fn=_cmd_demo)
    s = sub.add_parser("sweep", help="train every run of a grid (base config + axes): anchor-task or LM runs")
    s.add_argument("file", help="sweep TOML (see configs/demo.toml, configs/sweeps/)")
    s.add_argument("--out", help="sweep directory (default runs/<name>)")
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="dotted override of the base config, for every run (e.g. seeds.init_seed=1)")
    s.add_argument("--backend", choices=("local", "process", "ray"), default="process",
                   help="local: in this process; process: a pool of 1-thread worker processes; "
                        "ray: one Ray task per run (pip install 'anchorlab[ray]')")
    s.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 1)),
                   help="process: worker processes; ray without --address: CPUs of the local cluster")
    s.add_argument("--address", help="ray: address of an existing cluster (e.g. auto, ray://host:10001); "
                                      "default: start a local one")
    s.add_argument("--gpus-per-run", type=float, default=0.0,
                   help="ray: GPUs each run reserves; a fraction (0.25) puts several small runs on one GPU")
    s.add_argument("--max-retries", type=int, default=3, help="ray: retries of a run whose worker dies")
    s.add_argument("--batch-models", type=int, metavar="K",
                   help="local: train up to K same-shaped runs together in one process (stacked weights); "
                        "default 16 on a GPU, 1 on a CPU")
    s.add_argument("--dry-run", action="store_true",
                   help="print the grid, every run id and its status (done / partial / new); run nothing")
    s.set_defaults(fn=_cmd_sweep)
    s = sub.add_parser("collect", help="one tidy CSV row per run of a sweep directory")
    s.add_argument("sweep_dir")
    s.add_argument("--out", help="CSV path (default SWEEP_DIR/summary.csv)")
    s.set_defaults(fn=_cmd_collect)
    s = sub.add_parser("figure", help="draw a paper figure from a sweep or run directory (PNG + CSV)")
    s.add_argument("name", help="figure name; `anchorlab figure list` prints them")
    s.add_argument("source", nargs="*", help="sweep directory, or run directories (a sweep directory stands for "
                                             "its runs where a figure takes runs)")
    s.add_argument("--out", default="figures")
    s.add_argument("--best-epoch", action="store_true",
                   help="per run, the best value over evaluations (the authors' plots) instead of the final one")
    s.add_argument("--step", type=int, action="append", metavar="N",
                   help="checkpoint step(s) to analyse (default: per figure, e.g. the last kept)")
    s.add_argument("--method", choices=("pca", "tsne"),
                   help="2-D map of the embedding figures (default pca; tsne needs scikit-learn)")
    s.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a figure's own option, e.g. level=0.9 (p1-fig7) or all_tokens=true (p2-fig7b)")
    s.set_defaults(fn=_cmd_figure)
    s = sub.add_parser("reproduce", help="one paper figure in one command: its sweeps, then its figures")
    s.add_argument("name", help="entry of configs/reproduce.toml (e.g. p2-fig7a); `list` prints them with times")
    s.add_argument("--paper", action="store_true", help="the paper-scale sweeps (need a GPU) instead of the CPU ones")
    s.add_argument("--out", help="output directory (default runs/reproduce/NAME): OUT/<sweep>/ and OUT/figures/")
    s.add_argument("--workers", type=int, default=2, help="1-thread worker processes (default 2)")
    s.add_argument("--backend", choices=("local", "process", "ray"),
                   help="as for sweep (default: process for --workers > 1, else local)")
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="dotted override for every run (e.g. data.stories='standin', train.device='cuda')")
    s.add_argument("--dry-run", action="store_true", help="print the runs (done / partial / new) and figures")
    s.set_defaults(fn=_cmd_reproduce)
    s = sub.add_parser("report", help="one self-contained HTML report of a run or sweep directory")
    s.add_argument("source", help="run directory (config.json) or sweep directory (sweep.json)")
    s.add_argument("--out", help="HTML path (default SOURCE/report.html)")
    s.add_argument("--max-run-figures", type=int, default=12, help="sweeps: P1 figures for this many runs")
    s.set_defaults(fn=_cmd_report)
    a = p.parse_args(argv)
    try:
        a.fn(a)
    except ConfigError as e:
        print(f"anchorlab {a.cmd}: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
