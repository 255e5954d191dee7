"""Seconds per GPT-2 training step of an LM config with glibc's allocator as it is vs :mod:`anchorlab.cpu`.

Each setting runs in its own 1-thread process (``ANCHORLAB_MALLOC=system`` / ``keep``), on the run's own
data (built once into ``--work``), the settings taking turns ``--repeats`` times; the ratio is of the
medians, measured in the same run.

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
    import torch.nn.functional as F

    from anchorlab.cpu import setup_cpu
    from anchorlab.text.config import load_lm_config
    from anchorlab.text.lm import _trim, build_lm, load_data, source_loss_sums
    from anchorlab.text.mix import IGNORE
    from anchorlab.train import batch_order

    cfg = load_lm_config(config, sets)
    setup_cpu(1)
    train, _, tok = load_data(Path(work), cfg)
    model = build_lm(cfg, tok.vocab_size, tok.eos_id)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.train.lr, weight_decay=cfg.train.weight_decay, fused=True)
    perm, B = batch_order(len(train), 0, 1), cfg.train.batch_size

    def step(i: int) -> None:
        r = perm[(i * B) % (len(train) - B):][:B]
        t = _trim(train.targets[r])
        tgt = train.targets[r, :t]
        logits = model(train.inputs[r, :t])
        loss = F.cross_entropy(logits.flatten(0, 1).float(), tgt.flatten(), ignore_index=IGNORE)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        source_loss_sums(logits.detach(), tgt, train.source[r])

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
    p.add_argument("--work", default="bench_lm_step", help="directory for the run's data (built once)")
    p.add_argument("--out", help="write the result as JSON here")
    p.add_argument("--_child", choices=["system", "keep"], help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a._child:
        print(json.dumps(time_steps(a.config, a.sets, a.work, a.steps, a.warmup)))
        return {}
    times: dict[str, list[float]] = {"system": [], "keep": []}
    base = [sys.executable, "-m", "benchmarks.lm_step", a.config, "--steps", str(a.steps), "--warmup",
            str(a.warmup), "--work", a.work, *[f"--set={s}" for s in a.sets]]
    for _ in range(a.repeats):
        for setting in times:
            env = {**os.environ, "ANCHORLAB_MALLOC": setting, "OMP_NUM_THREADS": "1"}
            out = subprocess.run([*base, "--_child", setting], env=env, check=True, capture_output=True, text=True)
            times[setting].append(float(out.stdout.strip().splitlines()[-1]))
    result = {"config": a.config, "sets": a.sets, "steps": a.steps,
              **{f"s_per_step_{k}": statistics.median(v) for k, v in times.items()},
              "all": times}
    result["speedup_keep_vs_system"] = result["s_per_step_system"] / result["s_per_step_keep"]
    print(f"{Path(a.config).name} {' '.join(a.sets)}: {result['s_per_step_system']:.3f} s/step with glibc as it is, "
          f"{result['s_per_step_keep']:.3f} with anchorlab.cpu.keep_freed_memory "
          f"(x{result['speedup_keep_vs_system']:.2f})")
    if a.out:
        Path(a.out).write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
