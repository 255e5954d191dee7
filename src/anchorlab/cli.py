"""Command line: ``anchorlab train|data|demo``; each sub-command calls one library function."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from anchorlab.config import ConfigError, load_config


def _cmd_train(a: argparse.Namespace) -> None:
    from anchorlab.metrics import HEADLINE
    from anchorlab.train import train

    cfg = load_config(a.config, a.set)
    out = Path(a.out) if a.out else Path("runs") / cfg.run_id()
    summary = train(cfg, out)
    keys = (*HEADLINE[cfg.task.name], "final_train_loss")
    print(f"run {out}: " + ", ".join(f"{k} {summary[k]:.4g}" for k in keys))


def _cmd_data(a: argparse.Namespace) -> None:
    from anchorlab.tasks import make_task_data

    cfg = load_config(a.config, a.set)
    data = make_task_data(cfg.task, cfg.seeds.data_seed)
    data.save_npz(a.out)
    print(f"wrote {a.out}: {len(data)} sequences, {int(data.in_train.sum())} in training")


def _cmd_demo(a: argparse.Namespace) -> None:
    from anchorlab.demo import DEFAULT_SPEC, run_demo

    run_demo(a.config or DEFAULT_SPEC, a.out, a.workers)


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
    s = sub.add_parser("demo", help="the default CPU experiment: small vs middle vs large init, 3 seeds")
    s.add_argument("--config", help="demo sweep file (default configs/demo.toml)")
    s.add_argument("--out", default="demo_out")
    s.add_argument("--workers", type=int, default=2, help="1-thread worker processes")
    s.set_defaults(fn=_cmd_demo)
    a = p.parse_args(argv)
    try:
        a.fn(a)
    except ConfigError as e:
        print(f"anchorlab {a.cmd}: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
