"""Command line: ``anchorlab train|lm|seq2seq|data|demo|sweep|collect|status|export|figure|reproduce|config|report``.
Parses, then makes one library call per sub-command; values are checked where they are used, and a ConfigError
(or a data set whose files are missing) is one line, exit 2; every argument is checked before the first file is
written.

Exit status: 0 ok; 1 a run failed (it diverged, raised, or its worker died: one line per run says which and
why, after the others finished); 2 bad input (a config value, a file, an argument: one line naming it); 130
interrupted (Ctrl-C: one line; the same command resumes each unfinished run)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import anchorlab
from anchorlab.config import ConfigError, parse_override
from anchorlab.kinds import KINDS, preflight

DESCRIPTION = """\
Initialization scale decides whether a Transformer reasons or memorizes (arXiv 2405.05409, 2502.04375):
train the papers' models and tasks, sweep γ, draw every paper figure, look inside the runs.

  first steps:  anchorlab demo --out demo_out              the default CPU experiment (minutes)
                anchorlab reproduce list                    one command per paper figure
                anchorlab train configs/p1/cpu_demo.toml --set init.gamma=0.8 --out runs/g08
  each command: anchorlab COMMAND -h"""
EXIT_CODES = ("exit status: 0 ok; 1 a run failed (one line per run: which and why); 2 bad input (one line naming "
              "it); 130 interrupted (the same command resumes)")


def _out_file(path: str | Path, field: str = "--out") -> Path:
    """An output file path that can be written: not a directory, its directory writable (checked here; made,
    with any missing parents, by :func:`_made`, when the command writes)."""
    from anchorlab.sweep import check_out_dir

    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{field}: {path} is a directory; give a file path")
    check_out_dir(path.parent, field)
    return path


def _made(path: Path) -> Path:
    """``path`` with its folder made (and any missing above it), once every argument has been checked."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _positive(value: int | None, field: str, minimum: int = 1) -> None:
    if value is not None and value < minimum:
        raise ConfigError(f"{field}: allowed values are integers >= {minimum}, got {value}")


def _sources(sources: list[str]) -> None:
    for s in sources:
        if not Path(s).is_dir():
            raise ConfigError(f"source: {s} is not a run or sweep directory")


COMMAND_OF_KIND = {"anchor": "train", "lm": "lm", "seq2seq": "seq2seq"}
KIND_NAMES = {"anchor": "an anchor-task (P1 / P2)", "lm": "a real-language (lm)", "seq2seq": "a real-task (seq2seq)"}


def _check_kind(config: str | None, kind: str, command: str) -> None:
    """That the config file ``config`` is of the run kind ``command`` trains: else one line naming its command."""
    if config is None:
        return
    from anchorlab.config_tools import read_toml
    from anchorlab.kinds import kind_of_data

    found = kind_of_data(read_toml(config)).name
    if found != kind:
        raise ConfigError(f"config: {config} is {KIND_NAMES[found]} config, which `anchorlab {command}` does not "
                          f"take: run it with `anchorlab {COMMAND_OF_KIND[found]} {config}`")


def _train(a: argparse.Namespace) -> int:  # `train`, `lm` and `seq2seq`: one run of that kind
    from anchorlab.sweep import check_out_dir

    source = getattr(a, "from_run", None)
    if a.resume is not None:  # the run directory's own config, into that directory
        return _resume(a)
    if a.config is None and not a.set and source is None:  # never start the day-long paper-scale default by accident
        raise ConfigError(f"config: give a config file (or --set ...: the defaults alone are the paper-scale config, "
                          f"a day-long run); `anchorlab {a.cmd} --help` lists the options")
    kind = KINDS[a.cmd if a.cmd in ("lm", "seq2seq") else "anchor"]
    _check_kind(a.config, kind.name, a.cmd)
    if source is not None:  # a longer run of an existing one (anchorlab.extend)
        from anchorlab.extend import longer_config, seed_longer_run

        if a.config is not None:
            raise ConfigError("--from: takes its config from the run directory; give --set train.epochs=N, no config")
        cfg = longer_config(source, a.set)
    else:
        cfg = kind.get("load_config")(a.config, a.set)
    out = check_out_dir(Path(a.out) if a.out else Path("runs") / cfg.run_id())
    if source is not None:
        seed_longer_run(source, cfg, out)
    print(f"run {out}: " + kind.get("summary_line")(cfg, kind.get("train")(cfg, out)))
    return 0


def _resume(a: argparse.Namespace) -> int:
    """``--resume RUN_DIR``: train the run in RUN_DIR (of any kind) on from its last epoch with the config its
    config.json holds; ``--set`` may change its execution fields only (train.threads). A finished run is a no-op
    that prints its line."""
    from anchorlab import rundir
    from anchorlab.config_tools import execution_fields
    from anchorlab.kinds import kind_of, with_overrides

    run_dir = Path(a.resume)
    given = (("config", a.config), ("--out", a.out), ("--from", getattr(a, "from_run", None)))
    extra = [flag for flag, value in given if value is not None]
    if extra:
        raise ConfigError(f"--resume: trains RUN_DIR's own config into RUN_DIR; give no {' or '.join(extra)}")
    if not (run_dir / rundir.CONFIG).is_file():
        raise ConfigError(f"--resume: {run_dir} is not a run directory (no {rundir.CONFIG})")
    stored = rundir.read_config(run_dir)
    cfg = with_overrides(stored, a.set)
    if not rundir.same_run(stored.to_dict(), cfg):
        diff = rundir.first_difference(rundir.identity(stored.to_dict(), cfg), rundir.identity(cfg.to_dict(), cfg))
        raise ConfigError(f"{diff}: --resume trains the run's own config; --set may change only "
                          f"{', '.join(execution_fields(type(cfg)))}")
    kind = kind_of(cfg)
    print(f"run {run_dir}: " + kind.get("summary_line")(cfg, kind.get("train")(cfg, run_dir)))
    return 0


def _data(a: argparse.Namespace) -> None:
    from anchorlab.config import load_config
    from anchorlab.tasks import make_task_data

    _check_kind(a.config, "anchor", "data")  # the anchor tasks' data sets (P1, P2); the others build their own
    cfg = load_config(a.config, a.set, training=False)
    out = _out_file(a.out)
    (data := make_task_data(cfg.task, cfg.seeds.data_seed)).save_npz(_made(out))
    print(f"wrote {out}: {len(data)} sequences, {int(data.in_train.sum())} in training")


def _sweep(a: argparse.Namespace) -> int:
    from anchorlab.execute import batch_plan, check_devices, check_sweep_options, run_sweep
    from anchorlab.sweep import check_out_dir, describe, load_sweep, narrow

    check_sweep_options(workers=a.workers, backend=a.backend, batch_models=a.batch_models, address=a.address,
                        gpus_per_run=a.gpus_per_run, max_retries=a.max_retries)
    spec = load_sweep(a.file, a.set)
    if a.only:
        spec = narrow(spec, a.only)
    out = check_out_dir(Path(a.out) if a.out else Path("runs") / spec.name)
    if a.dry_run:
        print(describe(spec, out))
        if line := batch_plan(spec, out, a.backend, a.batch_models):
            print(line)
    preflight([cfg for _, cfg in spec.configs()])  # a missing data set: one line, exit 2, nothing run
    if a.backend != "ray":  # a GPU this machine lacks, for a run still to train: the same
        check_devices([(cfg, out / cfg.run_id()) for _, cfg in spec.configs()])
    if a.dry_run:  # the plan, and exit 0 only where the same command without --dry-run would start
        return 0
    line, n_failed = run_sweep(spec, out, workers=a.workers, backend=a.backend, batch_models=a.batch_models,
                               address=a.address, gpus_per_run=a.gpus_per_run, max_retries=a.max_retries)
    print(line)
    return 1 if n_failed else 0


def _collect(a: argparse.Namespace) -> None:
    from anchorlab.rundir import CONFIG
    from anchorlab.sweep import collect_sources, write_csv

    _sources(a.source)
    first = Path(a.source[0])  # a run directory's table goes beside it, not among its files
    out = _out_file(a.out or (first.parent if (first / CONFIG).is_file() else first) / "summary.csv")
    rows = collect_sources(a.source)
    write_csv(rows, _made(out))
    print(f"wrote {out}: {len(rows)} runs, {sum(r['status'] == 'done' for r in rows)} done")


def _status(a: argparse.Namespace) -> None:
    from anchorlab.status import format_table, status_rows

    _sources(a.source)
    rows = status_rows(a.source)
    if a.json:  # one JSON object per line, for scripts (jq, pandas.read_json(lines=True))
        import json

        print("\n".join(json.dumps(r) for r in rows))
    else:
        print(format_table(rows))


def _export(a: argparse.Namespace) -> None:
    from anchorlab.export import export_runs

    lines = export_runs(a.source, a.out, a.name)
    print("\n".join(lines))
    print(f"exported {len(lines)} runs' records (no weights) to {a.out}")


def _figure(a: argparse.Namespace) -> None:
    from anchorlab.figures import describe, draw, source_kind, split_source
    from anchorlab.sweep import check_out_dir

    if a.name == "list":
        return print(describe())
    if source_kind(a.name) != "file":  # a points file (p1-frontier) is checked by its recipe
        _sources([str(split_source(s)[0]) for s in a.source])  # RUN_DIR@STEP: the directory, its step checked
    for step in a.step or []:
        _positive(step, "--step", 0)
    flags = {"use_best_epoch": a.best_epoch or None, "step": a.step, "method": a.method}
    options = {k: v for k, v in flags.items() if v} | dict(parse_override(item) for item in a.option)
    path = draw(a.name, a.source, check_out_dir(a.out), **options)
    print(f"wrote {path} and its data as {path.with_suffix('.csv')}")


def _reproduce(a: argparse.Namespace) -> None:
    from anchorlab.reproduce import describe_registry, reproduce

    if a.name == "list":
        return print(describe_registry())
    for path in reproduce(a.name, a.out, paper=a.paper, overrides=tuple(a.set), workers=a.workers,
                          backend=a.backend, batch_models=a.batch_models, dry_run=a.dry_run, only=tuple(a.only)):
        print(f"wrote {path} and its data as {path.with_suffix('.csv')}")


def _demo(a: argparse.Namespace) -> int:
    from anchorlab.demo import DEFAULT_SPEC, run_demo

    return 1 if run_demo(a.config or DEFAULT_SPEC, a.out, a.workers)["failed_runs"] else 0


def _report(a: argparse.Namespace) -> None:
    from anchorlab.report import write_report

    _sources(a.source)
    _positive(a.max_run_figures, "--max-run-figures", 0)
    out = _out_file(a.out) if a.out else None
    print(f"wrote {write_report(a.source, out, a.max_run_figures)}")


def _config(a: argparse.Namespace) -> None:
    from anchorlab.report.config_text import config_text

    print(config_text(a.config, a.set), end="")


class Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (exit 2) instead of a usage block and the error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def arg(*flags: str, **kw: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """One argument of a sub-command: argparse's flags and options."""
    return flags, kw


SET = arg("--set", action="append", default=[], metavar="KEY=VALUE",
          help="dotted override (e.g. init.gamma=0.8; seed=N sets the data, init and batch-order seeds)")
OUT = arg("--out", help="run directory (default runs/<run id>)")
RESUME = arg("--resume", metavar="RUN_DIR", help="train the unfinished run in RUN_DIR on from its last epoch, with the "
             "config its config.json holds (no config or --out; --set only for train.threads)")
WORKERS_HELP = ("N 1-thread worker processes (N >= 1); 1 trains one run at a time in this process with the runs' "
                "own train.threads (a train.threads of 0 takes every core: add --set train.threads=1 beside other "
                "jobs)")
BACKEND = {"choices": ("local", "process", "ray"), "help": "local: this process; process: 1-thread worker "
           "processes; ray: one Ray task per run (pip install 'anchorlab[ray]')"}
ONLY = arg("--only", action="append", default=[], metavar="KEY=VALUE", help="part of the grid: only the points "
           "whose axis KEY is VALUE (or one of [V1, V2]); repeat for several axes. Runs keep their ids, so the "
           "rest of the grid can follow into the same directory")
DRY = arg("--dry-run", action="store_true", help="print every run (done / partial / new); run nothing")
COMMANDS: dict[str, tuple[Any, str, list[tuple[tuple[str, ...], dict[str, Any]]]]] = {
    "train": (_train, "train one anchor-task run into a run directory", [
        arg("config", nargs="?", help="TOML run config (configs/p1, configs/p2); --set alone: the defaults"), SET,
        OUT, arg("--from", dest="from_run", metavar="RUN_DIR", help="train that run further (--set "
                 "train.epochs=N, and optionally train.cooldown_epochs=D or another schedule that leaves its trained "
                 "steps' rates alone, or a sparser train.checkpoint_every or train.eval_every): a new run directory "
                 "seeded from its files; it ends as that config from step 0 would"), RESUME]),
    "lm": (_train, "train a γ-initialized GPT-2 on PrOntoQA + stories (P2 Fig. 1/7, P1 Fig. 7)", [
        arg("config", nargs="?", help="TOML LM config (configs/text/); --set alone: the paper-scale defaults"), SET,
        OUT, RESUME]),
    "seq2seq": (_train, "train a decoder on a P1 real task: SCAN, COGS (Fig. 6) or addition (Fig. 17a)", [
        arg("config", nargs="?", help="TOML real-task config (configs/real/); --set alone: the paper-scale defaults"),
        SET, OUT, RESUME]),
    "data": (_data, "generate a task's dataset to .npz", [
        arg("config", nargs="?", help="TOML run config (default: the paper's P1 task)"), SET,
        arg("--out", required=True, help="output .npz file")]),
    "demo": (_demo, "the default CPU experiment: small vs middle vs large init, 3 seeds", [
        arg("--config", help="demo sweep file (default configs/demo.toml)"), arg("--out", default="demo_out"),
        arg("--workers", type=int, default=2, help="N 1-thread worker processes; 1 trains one run at a time in this "
            "process with the demo runs' own train.threads")]),
    "sweep": (_sweep, "train every run of a grid (base config + axes): anchor-task or LM runs", [
        arg("file", help="sweep TOML (configs/sweeps/)"), SET,
        ONLY,
        arg("--out", help="sweep directory (default runs/<name>)"),
        arg("--backend", **BACKEND, default="process"),
        arg("--workers", type=int, default=max(1, os.cpu_count() or 1), help="processes; ray: CPUs of a local cluster"),
        arg("--address", help="ray: address of an existing cluster (e.g. auto); default: start a local one"),
        arg("--gpus-per-run", type=float, default=0.0, help="ray: GPUs per run (0.25: four runs share one)"),
        arg("--max-retries", type=int, help="times a run whose worker process dies is started again "
            "(it resumes); default 0 with process, 3 with ray"),
        arg("--batch-models", type=int, metavar="K", help="local: up to K same-shaped runs trained together "
          "(stacked weights); default 16 on a GPU, 1 on a CPU"), DRY]),
    "collect": (_collect, "one tidy CSV row per run of a sweep directory (or a folder of runs)", [
        arg("source", nargs="+", help="sweep directories, folders of runs (such as runs/) and run directories; "
            "runs outside a sweep get as coordinates the config fields in which they differ"),
        arg("--out", help="CSV path (default FIRST_SOURCE/summary.csv; beside it for a run directory)")]),
    "status": (_status, "where each run stands: state, epochs trained, last evaluation, time left (writes nothing)", [
        arg("source", nargs="+", help="sweep directories, folders of runs (such as runs/) and run directories"),
        arg("--json", action="store_true", help="one JSON object per run and line instead of the table (keys as "
            "anchorlab.status.status_rows gives them: eta_s in seconds)")]),
    "export": (_export, "copy runs' records (config, metrics, epochs, summary; no weights) to commit or share", [
        arg("source", nargs="+", help="run directories, sweep directories and folders of runs"),
        arg("--out", required=True, help="folder: each run goes to OUT/<its directory name>"),
        arg("--name", help="with one run: its folder name under OUT instead")]),
    "figure": (_figure, "draw a paper figure from a sweep or run directory (PNG + CSV)", [
        arg("name", help="figure name; `anchorlab figure list` prints them"),
        arg("source", nargs="*", help="sweep directory, or run directories (a sweep, or a folder of runs such as "
            "runs/, stands for its runs); RUN_DIR@STEP: that run's checkpoint at STEP (wins over --step)"),
        arg("--out", default="figures"), arg("--best-epoch", action="store_true", help="per run, the best evaluation"),
        arg("--step", type=int, action="append", metavar="N", help="checkpoint step(s) to analyse"),
        arg("--method", choices=("pca", "tsne"), help="2-D map of the embedding figures (default pca)"),
        arg("--option", action="append", default=[], metavar="KEY=VALUE", help="a figure's own option")]),
    "reproduce": (_reproduce, "one paper figure in one command: its sweeps, then its figures", [
        arg("name", help="entry of configs/reproduce.toml (e.g. p2-fig7a); `list` prints them with times"),
        arg("--paper", action="store_true", help="the paper-scale sweeps (need a GPU) instead of the CPU ones"),
        arg("--out", help="output directory (default runs/reproduce/NAME)"),
        arg("--workers", type=int, default=2, help=WORKERS_HELP), arg("--backend", **BACKEND),
        arg("--batch-models", type=int, metavar="K", help="local: up to K same-shaped runs trained together "
            "(stacked weights); default 16 on a GPU, 1 on a CPU"), SET, ONLY, DRY]),
    "config": (_config, "print a resolved config as TOML, then the γ-std table of its model", [
        arg("config", nargs="?", help="TOML config of any run kind (default: the anchor-task defaults)"), SET]),
    "report": (_report, "one self-contained HTML report of run and sweep directories", [
        arg("source", nargs="+", help="run directories (config.json), sweep directories (sweep.json) and/or "
            "folders of run directories (such as runs/: a section per run)"),
        arg("--out", help="HTML path (default FIRST_SOURCE/report.html)"),
        arg("--max-run-figures", type=int, help="sweeps: the runs compared in the P1 figures (default: one per "
            "grid point, the first seed's, at most 12); curves and single-run figures for 2 representative ones")]),
}


def build_parser() -> argparse.ArgumentParser:
    """The ``anchorlab`` parser: one sub-parser per entry of :data:`COMMANDS`."""
    p = Parser(prog="anchorlab", description=DESCRIPTION, epilog=EXIT_CODES,
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"anchorlab {anchorlab.__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    for name, (fn, help_, arguments) in COMMANDS.items():
        s = sub.add_parser(name, help=help_, description=help_, epilog=EXIT_CODES)
        for flags, kwargs in arguments:
            s.add_argument(*flags, **kwargs)
        s.set_defaults(fn=fn)
    return p


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    from anchorlab.cpu import check_settings, flush_denormals
    from anchorlab.rundir import RunFailed
    from anchorlab.tasks.scan import ScanFilesMissing  # a data set's files missing: one line, exit 2
    from anchorlab.text.cogs import CogsUnavailable
    from anchorlab.text.stories import StoriesUnavailable

    try:
        check_settings()  # the ANCHORLAB_* environment settings, before anything is written
        flush_denormals()  # every command reads models as the trainers compute them (anchorlab.cpu)
        return a.fn(a) or 0
    except (ConfigError, CogsUnavailable, ScanFilesMissing, StoriesUnavailable) as e:  # a missing data set: one line
        print(f"anchorlab {a.cmd}: error: {_one_line(e)}", file=sys.stderr)
        return 2
    except RunFailed as e:
        print(f"anchorlab {a.cmd}: {_one_line(e)}", file=sys.stderr)
        return 1
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError, UnicodeDecodeError) as e:
        print(f"anchorlab {a.cmd}: error: {_one_line(e)}", file=sys.stderr)  # a path given that cannot be used
        return 2
    except KeyboardInterrupt:  # Ctrl-C: runs keep their last epoch boundary, their locks are released
        print(f"anchorlab {a.cmd}: interrupted; the same command resumes each unfinished run from its last epoch "
              "boundary", file=sys.stderr)
        return 130  # as a shell reports a process ended by SIGINT
    except BrokenPipeError:  # `anchorlab ... | head`: the reader left; stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # as a shell reports a writer ended by SIGPIPE


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())


if __name__ == "__main__":
    sys.exit(main())
