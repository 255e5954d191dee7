"""What a run's evaluation costs against its training steps, in one run (issue 16).

At every ``train.eval_every``-th epoch the batched trainer (:mod:`anchorlab.batched`) stops the K runs' steps and,
run by run, evaluates the model on every row of the task (:func:`anchorlab.metrics.evaluate`), logs the
mechanism scalars (:func:`anchorlab.analysis.summary.mechanism_scalars`: weight SVDs) and P1's routing and
pair-order readouts (:func:`anchorlab.analysis.summary.readouts`: one forward pass per key of the held-out pair),
and at its checkpoint and resume epochs writes the weights (``checkpoints/step_*.safetensors``) and the
weights with AdamW's moments (the resume file). This times each of those parts for one model of ``--config``,
and the batched step of K such models in the same run, the baseline of every ratio:

* ``seconds``: each part, the median of ``--repeats`` after one untimed call;
* ``steps``: each part in batched steps of K runs (how many steps of training one run's part costs);
* ``share``: the fraction of wall time that evaluating (and saving) K runs takes at ``eval_every`` and the
  config's steps an epoch, against training K runs for ``eval_every`` epochs.

On the CPU the process is set up as every trainer's is (:func:`anchorlab.cpu.setup_cpu`).

    python -m benchmarks.eval_cost --config configs/p1/cbook.toml --threads 1
    python -m benchmarks.eval_cost --config configs/p1/cbook.toml --device cuda --k 6 --out eval_cost.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from anchorlab import rundir
from anchorlab.analysis.embeddings import item_tokens
from anchorlab.analysis.summary import logs_readouts, mechanism_scalars, readouts
from anchorlab.config import CompositeTaskConfig, ConfigError, RunConfig, load_config
from anchorlab.cpu import setup_cpu
from anchorlab.metrics import evaluate
from anchorlab.tasks import make_task_data
from anchorlab.train import build_initialized_model
from benchmarks.throughput import batched_loop, sync, train_rows

DEFAULT_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "p1" / "cbook.toml"
PARTS = ("evaluate", "mechanism_scalars", "readouts", "save_checkpoint", "save_resume")


def median_seconds(fn: Callable[[], Any], repeats: int, device: torch.device) -> float:
    """Median seconds of ``repeats`` calls of ``fn``, after one untimed call."""
    fn()
    times = []
    for _ in range(repeats):
        sync(device)
        t = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def part_seconds(cfg: RunConfig, device: torch.device, repeats: int, run_dir: Path,
                 names: tuple[str, ...] = PARTS) -> dict[str, float | None]:
    """Seconds of each part in ``names`` (of :data:`PARTS`) for one model of ``cfg`` on ``device`` (None: the
    trainer would not run it for ``cfg``)."""
    data = make_task_data(cfg.task, cfg.seeds.data_seed)
    model = build_initialized_model(cfg, data.vocab_size).to(device)
    x, y = torch.from_numpy(data.inputs).to(device), torch.from_numpy(data.targets).to(device)
    amp = torch.bfloat16 if cfg.train.precision == "bf16" else None
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.train.lr)
    model(x[:2]).sum().backward()  # AdamW's moments exist, as in the resume file of a run under way
    opt.step()
    opt.zero_grad(set_to_none=True)
    tokens, task = item_tokens(cfg.task), cfg.task
    (run_dir / rundir.CKPT_DIR).mkdir(parents=True)
    parts: dict[str, Callable[[], Any] | None] = {
        "evaluate": lambda: evaluate(model, data, x, y, cfg.task, cfg.train.eval_batch_size, amp),
        "mechanism_scalars": lambda: mechanism_scalars(model, embed_tokens=tokens),
        "readouts": (lambda: readouts(model, task)) if isinstance(task, CompositeTaskConfig) and logs_readouts(cfg)
        else None,
        "save_checkpoint": lambda: rundir.save_checkpoint(run_dir, model, 1, 1),
        "save_resume": lambda: rundir.save_resume(run_dir, model, opt, 1, 1),
    }
    seconds: dict[str, float | None] = {}
    for name in names:
        fn = parts[name]
        seconds[name] = None if fn is None else median_seconds(fn, repeats, device)
    return seconds


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.eval_cost", description=__doc__.split("\n")[0])
    ap.add_argument("--config", default=str(DEFAULT_CONFIG), help="run config TOML (default: P1's paper config)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="dotted config override")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--threads", type=int, default=1, help="CPU intra-op threads")
    ap.add_argument("--k", type=int, default=1, help="runs batched in the baseline step (and evaluated in turn)")
    ap.add_argument("--steps", type=int, default=10, help="timed batched steps of the baseline")
    ap.add_argument("--repeats", type=int, default=3, help="timed calls of each part (median kept)")
    ap.add_argument("--parts", default=",".join(PARTS), metavar="a,b,...",
                    help=f"the parts to time (default all: {', '.join(PARTS)}); the share counts only these")
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    args = ap.parse_args(argv)
    names = tuple(n for n in args.parts.split(",") if n)
    unknown = [n for n in names if n not in PARTS]
    if unknown or not names:
        ap.error(f"--parts: {', '.join(unknown) or 'none given'}; allowed: {', '.join(PARTS)}")
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device: cuda asked for, but torch sees no GPU here; allowed: cpu, cuda")
    for flag in ("threads", "k", "steps", "repeats"):
        if getattr(args, flag) < 1:
            ap.error(f"--{flag}: at least 1 (got {getattr(args, flag)})")
    try:
        cfg = load_config(args.config, args.set)
    except (ConfigError, FileNotFoundError) as e:
        ap.error(str(e))
    setup_cpu(args.threads)
    device = torch.device(args.device)
    tc = cfg.train
    x, y, d_vocab = train_rows(cfg)
    amp = torch.bfloat16 if tc.precision == "bf16" else None
    step = batched_loop(cfg, args.k, x.to(device), y.to(device), d_vocab, device, args.steps, 2, amp)
    with tempfile.TemporaryDirectory() as tmp:
        seconds = part_seconds(cfg, device, args.repeats, Path(tmp) / "run", names)
    steps_per_epoch = tc.steps_per_epoch(len(x))
    every = tc.eval_every
    saves = {"save_checkpoint": tc.checkpoint_every, "save_resume": tc.resume_every}
    # per eval_every epochs: each part once per run, a save part as often as its own period allows
    per_window = sum((every / saves.get(n, every)) * s for n, s in seconds.items() if s is not None) * args.k
    train_window = every * steps_per_epoch * step
    result = {
        "config": args.config, "overrides": args.set, "device": args.device, "threads": args.threads,
        "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else None, "torch": torch.__version__,
        "precision": tc.precision, "k": args.k, "batched_step_seconds": step, "steps_per_epoch": steps_per_epoch,
        "eval_every": every, "checkpoint_every": tc.checkpoint_every, "resume_every": tc.resume_every,
        "seconds": seconds,
        "steps": {n: None if s is None else s / step for n, s in seconds.items()},
        "share": per_window / (per_window + train_window),
    }
    print(f"{args.config} on {args.device} ({tc.precision}): a batched step of {args.k} runs "
          f"{step * 1e3:.1f} ms; {steps_per_epoch} steps an epoch")
    for n in names:
        s = seconds[n]
        print(f"  {n:<18} " + ("not run for this config" if s is None
                                else f"{s * 1e3:9.1f} ms = {s / step:8.1f} steps"))
    print(f"  evaluating and saving {args.k} runs every {every} epochs: {result['share']:.1%} of the wall time")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
