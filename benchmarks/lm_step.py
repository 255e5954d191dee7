"""Seconds per GPT-2 training step of an LM config: glibc's allocator as it is, :mod:`anchorlab.cpu`'s
setting, and that plus ``train.micro_batches = K`` (length-sorted micro-batches, less padding).

Each variant runs in its own 1-thread process (``ANCHORLAB_MALLOC=system`` / ``keep``), on the run's own
data (built once into ``--work``), the variants taking turns ``--repeats`` times; ratios are of the
medians, against the first variant, measured in the same run.

    python -m benchmarks.lm_step                                             # configs/text/p2_fig7a_quick_cpu.toml
    python -m benchmarks.lm_step configs/text/p1_fig7_gpt2_quick_cpu.toml --set data.n_prontoqa=1000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "text" / "p2_fig7a_quick_cpu.toml"


def time_steps(config: str, sets: list[str], work: str, steps: int, warmup: int) -> float:
    """Mean seconds per training step (forward, loss, backward, AdamW) after ``warmup`` steps."""
    import torch

    from anchorlab.cpu import setup_cpu
    from anchorlab.text.config import load_lm_config
    from anchorlab.text.data import load_data
    from anchorlab.text.model import backward_batch, build_lm, scored_lengths
    from anchorlab.train import batch_order

    cfg = load_lm_config(config, sets)
    setup_cpu(1)
    train, _, tok = load_data(Path(work), cfg)
    model = build_lm(cfg, tok.vocab_size, tok.eos_id)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.train.lr, weight_decay=cfg.train.weight_decay, fused=True)
    perm, B, lengths = batch_order(len(train), 0, 1), cfg.train.batch_size, scored_lengths(train.targets)

    def step(i: int) -> None:
        r = perm[(i * B) % (len(train) - B):][:B]
        opt.zero_grad(set_to_none=True)
        backward_batch(model, train, r, lengths, cfg.train.micro_batches, torch.device("cpu"))
        opt.step()

    for i in range(warmup):
        step(i)
    t0 = time.perf_counter()
    for i in range(steps):
        step(warmup + i)
    return (time.perf_counter() - t0) / steps


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", nargs="?", default=str(DEFAULT_CONFIG))
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--micro", type=int, default=4, help="train.micro_batches of the third variant")
    p.add_argument("--work", default="bench_lm_step", help="directory for the run's data (built once)")
    p.add_argument("--out", help="write the result as JSON here")
    p.add_argument("--_child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a._child:
        print(json.dumps(time_steps(a.config, a.sets, a.work, a.steps, a.warmup)))
        return {}
    variants = {"glibc as it is": ("system", []), "keep_freed_memory": ("keep", []),
                f"keep_freed_memory + micro_batches={a.micro}": ("keep", [f"train.micro_batches={a.micro}"])}
    times: dict[str, list[float]] = {name: [] for name in variants}
    base = [sys.executable, "-m", "benchmarks.lm_step", a.config, "--steps", str(a.steps), "--warmup",
            str(a.warmup), "--work", a.work, "--_child"]
    for _ in range(a.repeats):
        for name, (malloc, sets) in variants.items():
            env = {**os.environ, "ANCHORLAB_MALLOC": malloc, "OMP_NUM_THREADS": "1"}
            cmd = [*base, *[f"--set={s}" for s in a.sets + sets]]
            out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
            times[name].append(float(out.stdout.strip().splitlines()[-1]))
    median = {name: statistics.median(t) for name, t in times.items()}
    first = next(iter(median.values()))
    result = {"config": a.config, "sets": a.sets, "steps": a.steps, "s_per_step": median,
              "speedup": {name: first / m for name, m in median.items()}, "all": times}
    print(f"{Path(a.config).name} {' '.join(a.sets)}, s/step (1 thread; speed-up):")
    for name, m in median.items():
        print(f"  {name:45s} {m:.3f}  x{first / m:.2f}")
    if a.out:
        Path(a.out).write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
