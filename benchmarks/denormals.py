"""Seconds per P1 training step with subnormal floats kept (IEEE) and flushed to zero (:mod:`anchorlab.cpu`).

A small-init P1 run whose second-layer attention has sharpened holds subnormal attention probabilities (the
softmax of score gaps past ~87 in fp32), and from them subnormal gradients; x86 cores handle those operands
in microcode, so the matmuls they enter slow down many times. This benchmark makes that state on purpose: the
P1 model at its config's size, one thread, with the last layer's attention scores standardized and multiplied
by ``--sharpness`` (a hook on ``hook_attn_scores``), so a known share of the pattern is subnormal. It then
times the same training step (learning rate 0, so every step is the same computation) with flush-to-zero off
and on, taking turns ``--repeats`` times; the ratio is of the medians, measured in the same run. Without the
hook (``--sharpness 0``) both settings take the same time.

    python -m benchmarks.denormals                                  # configs/p1/cbook.toml, batch 2048
    python -m benchmarks.denormals --set train.batch_size=512 --sharpness 0
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FP32_TINY = 1.1754944e-38  # the smallest normal fp32


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default=str(ROOT / "configs" / "p1" / "cbook.toml"))
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--sharpness", type=float, default=60.0,
                   help="last layer's attention scores as this many standard deviations per unit (0: untouched)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default="", help="also write the result as JSON here")
    a = p.parse_args(argv)

    from typing import Any

    import torch

    from anchorlab.config import load_config
    from anchorlab.cpu import setup_cpu
    from anchorlab.tasks import make_task_data
    from anchorlab.train import build_initialized_model, make_optimizer, train_step

    cfg = load_config(a.config, a.sets)
    setup_cpu(1)
    data = make_task_data(cfg.task, cfg.seeds.data_seed)
    rows = torch.from_numpy(data.in_train.nonzero()[0][: cfg.train.batch_size])
    x, y = torch.from_numpy(data.inputs)[rows], torch.from_numpy(data.targets)[rows]
    model = build_initialized_model(cfg, data.vocab_size)
    opt = make_optimizer(model, cfg.train, torch.device("cpu"))
    blocks: Any = model.blocks  # a GPT's (build_initialized_model of a P1 config)
    attn = blocks[-1].attn
    share: list[float] = []
    if a.sharpness > 0:
        def sharpen(_module, _inputs, scores):
            return scores / scores.detach().std() * a.sharpness

        def count(_module, _inputs, pattern):
            share.append(((pattern > 0) & (pattern < FP32_TINY)).float().mean().item())

        attn.hook_attn_scores.register_forward_hook(sharpen)
        attn.hook_pattern.register_forward_hook(count)

    def seconds(flush: bool) -> float:
        torch.set_flush_denormal(flush)
        t0 = time.perf_counter()
        train_step(model, opt, x, y, 0.0, cfg.train)
        return time.perf_counter() - t0

    seconds(False)  # warm-up: allocations, AdamW state
    times: dict[str, list[float]] = {"kept": [], "flushed": []}
    for _ in range(a.repeats):
        times["kept"].append(seconds(False))
        times["flushed"].append(seconds(True))
    torch.set_flush_denormal(True)
    med = {k: statistics.median(v) for k, v in times.items()}
    result = {"config": a.config, "sets": a.sets, "batch_size": cfg.train.batch_size, "sharpness": a.sharpness,
              "subnormal_share_of_pattern": share[0] if share else 0.0, "seconds_per_step": med,
              "kept_over_flushed": med["kept"] / med["flushed"]}
    print(f"P1 step, batch {cfg.train.batch_size}, one thread; last layer's pattern "
          f"{result['subnormal_share_of_pattern']:.2%} subnormal (sharpness {a.sharpness:g})")
    for k, v in med.items():
        print(f"  subnormals {k:8s} {v:7.3f} s/step   (runs: {', '.join(f'{t:.3f}' for t in times[k])})")
    print(f"  kept / flushed: x {result['kept_over_flushed']:.2f}")
    if a.out:
        Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
