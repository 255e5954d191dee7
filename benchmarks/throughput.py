"""Training throughput against the machine's matmul peak, in one run (issue 5).

Measures, on one device and thread count:

* the matmul peak (fp32; bf16 too) from square ``torch.mm``, best of a few repeats;
* FLOPs per training sequence, counted by ``torch.utils.flop_counter`` on one forward + backward
  (pruned and unpruned), and the analytic 3 x forward matmul FLOPs for comparison;
* sequences/s of (a) a naive loop: DataLoader over a TensorDataset, unpruned model; (b) Hugging Face
  GPT-2 (``GPT2LMHeadModel``, same d_model / layers / heads / d_mlp / vocab; its d_head is d_model /
  n_heads) when ``transformers`` is installed; (c) our trainer's step (device-resident data, index
  batches, pruned last position) in fp32 and bf16 autocast, and unpruned fp32; (d) K batched models
  (:mod:`anchorlab.batched`), aggregate sequences/s; on a GPU, (f) the same K batched models with each step
  replayed as one CUDA graph (``train.cuda_graph``, :mod:`anchorlab.cuda_graph`);

and prints each as a fraction of the FLOP limit (peak / FLOPs per sequence) and as ratios to (a) and (b).
On the CPU the process is set up as every trainer's is (:func:`anchorlab.cpu.setup_cpu`: glibc keeps freed
memory, subnormals are flushed), so the rows time what training gets; ``ANCHORLAB_MALLOC=system`` times
glibc's default allocator instead (``machine.malloc`` in the JSON says which).

    python -m benchmarks.throughput --quick --out bench.json
    python -m benchmarks.throughput --device cuda --steps 200 --k 16
    python -m benchmarks.throughput --config configs/p1/cbook.toml --device cuda --k 6 --rows a,d,f
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from anchorlab.batched import Hyper, StackedParams, train_step
from anchorlab.config import RunConfig, load_config
from anchorlab.cpu import keep_freed_memory, native_bf16, setup_cpu
from anchorlab.cuda_graph import GraphedStep
from anchorlab.models import build_model
from anchorlab.tasks import make_task_data
from anchorlab.train import build_initialized_model, fused_adamw

DEFAULT_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "p2" / "transformer_paper.toml"


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_peak(device: torch.device, dtype: torch.dtype, n: int, repeats: int) -> float:
    """FLOP/s of the best of ``repeats`` timed n x n matmuls (after a warm-up)."""
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    inner = 20 if device.type == "cuda" else 1
    torch.mm(a, b)
    sync(device)
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(inner):
            torch.mm(a, b)
        sync(device)
        best = min(best, (time.perf_counter() - t) / inner)
    return 2 * n**3 / best


def analytic_forward_flops(cfg: RunConfig, d_vocab: int, seq_len: int, pruned: bool) -> int:
    """Matmul FLOPs (2 m n k) of one sequence's forward; the final block computes one query when pruned."""
    m = cfg.model
    P, D, HK, Fd = seq_len, m.d_model, m.n_heads * m.d_head, m.d_mlp
    full = 2 * P * (3 * D * HK + 2 * P * HK + HK * D + 2 * D * Fd)
    last = 2 * (D * HK + 2 * P * D * HK + 2 * P * HK + HK * D + 2 * D * Fd) if pruned else full
    return (m.n_layers - 1) * full + last + 2 * (1 if pruned else P) * D * d_vocab


def counted_flops(model: nn.Module, x: torch.Tensor, y: torch.Tensor, last_only: bool) -> tuple[float, float]:
    """(forward, forward + backward) FLOPs per sequence as torch's flop counter sees them."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as fwd:
        logits = model(x, last_only=last_only)[:, -1]
    loss = F.cross_entropy(logits, y)
    with FlopCounterMode(display=False) as bwd:
        loss.backward()
    model.zero_grad(set_to_none=True)
    n = len(x)
    return fwd.get_total_flops() / n, (fwd.get_total_flops() + bwd.get_total_flops()) / n


def timed(step: Callable[[], Any], steps: int, warmup: int, device: torch.device) -> float:
    """Seconds per step: ``warmup`` untimed steps, then ``steps`` timed ones."""
    for _ in range(warmup):
        step()
    sync(device)
    t = time.perf_counter()
    for _ in range(steps):
        step()
    sync(device)
    return (time.perf_counter() - t) / steps


def train_rows(cfg: RunConfig) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(inputs, targets, vocab size) of the task's training rows, on the host."""
    data = make_task_data(cfg.task, cfg.seeds.data_seed)
    return (torch.from_numpy(data.inputs[data.in_train]), torch.from_numpy(data.targets[data.in_train]),
            data.vocab_size)


def adamw(model: nn.Module, cfg: RunConfig, fused: bool = False) -> torch.optim.Optimizer:
    """torch's AdamW; ``fused`` as :func:`anchorlab.train.train` uses it (one kernel per step)."""
    tc = cfg.train
    return torch.optim.AdamW(model.parameters(), lr=tc.lr, betas=(tc.beta1, tc.beta2), eps=tc.eps,
                             weight_decay=tc.weight_decay, fused=fused or None)


def naive_loop(cfg: RunConfig, x: torch.Tensor, y: torch.Tensor, d_vocab: int, device: torch.device,
               steps: int, warmup: int) -> float:
    """(a) The textbook loop: DataLoader(TensorDataset) on the host, copy each batch, full-sequence logits."""
    from torch.utils.data import DataLoader, TensorDataset

    model = build_initialized_model(cfg, d_vocab).to(device)
    opt = adamw(model, cfg)
    loader = DataLoader(TensorDataset(x, y), batch_size=cfg.train.batch_size, shuffle=True, drop_last=True)
    it = iter(loader)

    def step() -> None:
        nonlocal it
        try:
            xb, yb = next(it)
        except StopIteration:
            it = iter(loader)
            xb, yb = next(it)
        xb, yb = xb.to(device), yb.to(device)
        loss = F.cross_entropy(model(xb)[:, -1], yb)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), cfg.train.grad_clip)
        opt.step()
    return timed(step, steps, warmup, device)


def trainer_loop(model: nn.Module, cfg: RunConfig, x: torch.Tensor, y: torch.Tensor, device: torch.device,
                 steps: int, warmup: int, prune: bool, amp: torch.dtype | None, hf: bool = False) -> float:
    """(b, c) The inner loop of :func:`anchorlab.train.train`: data on the device, index batches, fused AdamW.

    (b) runs through this same loop, so (c) / (b) compares the models alone."""
    opt = adamw(model, cfg, fused=fused_adamw(device))
    B = cfg.train.batch_size
    perm = torch.randperm(len(x), device=device)
    i = 0

    def step() -> None:
        nonlocal i
        if (i + 1) * B > len(x):
            i = 0
        idx = perm[i * B:(i + 1) * B]
        i += 1
        with torch.autocast(device.type, dtype=amp, enabled=amp is not None):
            logits = model(x[idx]).logits[:, -1] if hf else model(x[idx], last_only=prune)[:, -1]
        loss = F.cross_entropy(logits.float(), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), cfg.train.grad_clip)
        opt.step()
    return timed(step, steps, warmup, device)


def hf_gpt2(cfg: RunConfig, d_vocab: int) -> nn.Module | None:
    """GPT2LMHeadModel with our sizes (no dropout, ReLU MLP), or None if transformers is missing."""
    try:
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError:
        return None
    m = cfg.model
    hc = GPT2Config(vocab_size=d_vocab, n_positions=m.n_ctx, n_embd=m.d_model, n_layer=m.n_layers,
                    n_head=m.n_heads, n_inner=m.d_mlp, activation_function="relu", resid_pdrop=0.0,
                    embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(hc)


def batched_loop(cfg: RunConfig, K: int, x: torch.Tensor, y: torch.Tensor, d_vocab: int, device: torch.device,
                 steps: int, warmup: int, amp: torch.dtype | None, graph: bool = False) -> float:
    """(d) K models (seeds 1..K) through :func:`anchorlab.batched.train_step`; seconds per step of all K.
    ``graph``: (f), each step one replay of its CUDA graph (:class:`anchorlab.cuda_graph.GraphedStep`)."""
    cfgs = [cfg.replace(**{"seeds.init_seed": k + 1, "seeds.train_seed": k + 1}) for k in range(K)]
    model = build_model(cfg.model, d_vocab).to(device)
    s = StackedParams(model, [build_initialized_model(c, d_vocab) for c in cfgs], device)
    hyper = Hyper.of(cfgs, device)
    lr_K = torch.full((K,), cfg.train.lr, dtype=torch.float64, device=device)
    B = cfg.train.batch_size
    perm_KN = torch.stack([torch.randperm(len(x), device=device) for _ in range(K)])
    i = 0

    def eager(x_KBP: torch.Tensor, y_KB: torch.Tensor, lr: torch.Tensor) -> torch.Tensor:
        return train_step(s, model, x_KBP, y_KB, lr, hyper, cfg.train.prune_last, amp)
    run = GraphedStep(eager, x[perm_KN[:, :B]], y[perm_KN[:, :B]], lr_K, s.state()) if graph else eager

    def step() -> None:
        nonlocal i
        if (i + 1) * B > len(x):
            i = 0
        idx = perm_KN[:, i * B:(i + 1) * B]
        i += 1
        run(x[idx], y[idx], lr_K)
    return timed(step, steps, warmup, device)


def _process_worker(config: str, overrides: list[str], steps: int, warmup: int, barrier: Any, out: Any) -> None:
    """One 1-thread process of (e): our pruned fp32 step, timed after every process has warmed up."""
    setup_cpu(1)
    cfg = load_config(config, overrides)
    x, y, V = train_rows(cfg)
    model = build_initialized_model(cfg, V)
    cpu = torch.device("cpu")
    trainer_loop(model, cfg, x, y, cpu, warmup, 1, True, None)
    barrier.wait()
    out.put(cfg.train.batch_size / trainer_loop(model, cfg, x, y, cpu, steps, 0, True, None))


def processes_loop(config: str, overrides: list[str], n: int, steps: int, warmup: int) -> float:
    """(e) Aggregate sequences/s of ``n`` concurrent 1-thread processes (how sweeps use a multi-core CPU)."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_process_worker, args=(config, overrides, steps, warmup, barrier, out))
             for _ in range(n)]
    for p in procs:
        p.start()
    total = sum(out.get(timeout=600) for _ in procs)
    for p in procs:
        p.join()
    return total


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.throughput", description=__doc__.split("\n")[0])
    ap.add_argument("--config", default=str(DEFAULT_CONFIG), help="run config TOML (default: P2 transformer)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="dotted config override")
    ap.add_argument("--steps", type=int, default=60, help="timed steps per measurement")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--threads", type=int, default=1, help="CPU intra-op threads")
    ap.add_argument("--k", type=int, default=4, help="models trained together in (d)")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved rounds; each row keeps its best")
    ap.add_argument("--processes", type=int, default=0,
                    help="also measure (e): this many concurrent 1-thread processes of (c) pruned fp32 (CPU)")
    ap.add_argument("--rows", default="", metavar="a,b,...",
                    help="measure only these rows (letters a-f; a, the baseline of the ratios, always)")
    ap.add_argument("--quick", action="store_true", help="few steps, small peak matmul: under 30 s on a CPU")
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    args = ap.parse_args(argv)

    device = torch.device(args.device)
    if device.type == "cpu":
        setup_cpu(args.threads)  # as every trainer does: threads, glibc keeping freed memory, flushed subnormals
    else:
        torch.set_num_threads(args.threads)
    if device.type == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA device is available")
    steps, warmup = (8, 2) if args.quick else (args.steps, max(3, args.steps // 10))
    repeats = 1 if args.quick else args.repeats
    cfg = load_config(args.config, args.set)
    x_host, y_host, V = train_rows(cfg)
    x, y = x_host.to(device), y_host.to(device)
    P, B = x.shape[1], cfg.train.batch_size
    bf16 = torch.bfloat16

    n_mm = 1024 if args.quick else 2048 if device.type == "cpu" else 8192
    peak = {"fp32": matmul_peak(device, torch.float32, n_mm, 3 if args.quick else 5),
            "bf16": matmul_peak(device, bf16, n_mm, 2 if args.quick else 5)}
    probe = build_initialized_model(cfg, V)
    flops: dict[str, float] = {}
    flops["fwd_pruned"], flops["train_pruned"] = counted_flops(probe, x_host[:B], y_host[:B], True)
    flops["fwd_unpruned"], flops["train_unpruned"] = counted_flops(probe, x_host[:B], y_host[:B], False)
    flops["analytic_3x_fwd_pruned"] = 3 * analytic_forward_flops(cfg, V, P, True)
    flops["analytic_3x_fwd_unpruned"] = 3 * analytic_forward_flops(cfg, V, P, False)

    def seq_per_s(sec_per_step: float, models: int = 1) -> float:
        return models * B / sec_per_step

    # Every measurement is repeated in interleaved rounds (a, b, c, d, e, a, b, ...) and the best round is
    # kept, as timeit does: on a shared VM a neighbour's burst slows whichever row is running, and
    # interleaving keeps such bursts from landing on one row only. All rounds are in the JSON.
    hf = hf_gpt2(cfg, V)
    measures: list[tuple[str, Callable[[], float], str, float, int]] = [
        ("a_naive_dataloader", lambda: seq_per_s(naive_loop(cfg, x_host, y_host, V, device, steps, warmup)),
         "fp32", flops["train_unpruned"], 1)]
    if hf is not None:
        hf = hf.to(device)
        measures.append(("b_hf_gpt2", lambda: seq_per_s(trainer_loop(hf, cfg, x, y, device, steps, warmup, False,
                                                                     None, hf=True)),
                         "fp32", counted_hf_flops(hf, x[:B], y[:B]), 1))
    def ours(prune: bool, amp: torch.dtype | None) -> Callable[[], float]:
        return lambda: seq_per_s(trainer_loop(build_initialized_model(cfg, V).to(device), cfg, x, y, device, steps,
                                              warmup, prune, amp))

    def batched(amp: torch.dtype | None, graph: bool = False) -> Callable[[], float]:
        return lambda: seq_per_s(batched_loop(cfg, args.k, x, y, V, device, max(2, steps // 2), 1, amp, graph),
                                 args.k)

    for name, prune, amp in (("c_trainer_unpruned_fp32", False, None), ("c_trainer_pruned_fp32", True, None),
                             ("c_trainer_pruned_bf16", True, bf16)):
        measures.append((name, ours(prune, amp), "bf16" if amp else "fp32",
                         flops["train_pruned" if prune else "train_unpruned"], 1))
    for name, amp in ((f"d_batched_k{args.k}_fp32", None), (f"d_batched_k{args.k}_bf16", bf16)):
        measures.append((name, batched(amp), "bf16" if amp else "fp32", flops["train_pruned"], 1))
    if device.type == "cuda":
        for name, amp in ((f"f_batched_k{args.k}_fp32_graph", None), (f"f_batched_k{args.k}_bf16_graph", bf16)):
            measures.append((name, batched(amp, graph=True), "bf16" if amp else "fp32", flops["train_pruned"], 1))
    if args.processes and device.type == "cpu":
        measures.append((f"e_processes{args.processes}_pruned_fp32",
                         lambda: processes_loop(args.config, args.set, args.processes, steps, warmup),
                         "fp32", flops["train_pruned"], args.processes))

    wanted = {r.strip() for r in args.rows.split(",") if r.strip()}
    if wanted - set("abcdef"):
        ap.error(f"--rows: letters a-f, comma-separated (got {args.rows!r})")
    if wanted:
        measures = [m for m in measures if m[0][0] in wanted | {"a"}]
    print(f"device {device}, threads {args.threads}, {steps} timed steps, batch {B}, {repeats} rounds", flush=True)
    samples: dict[str, list[float]] = {name: [] for name, *_ in measures}
    for r in range(repeats):
        for name, fn, _, _, _ in measures:
            samples[name].append(fn())
            print(f"  round {r + 1}: {name:28s} {samples[name][-1]:10.0f} seq/s", flush=True)
    rows: dict[str, dict[str, Any]] = {}
    for name, _, precision, fps, n_proc in measures:
        sps = max(samples[name])
        rows[name] = {"seq_per_s": sps, "rounds": samples[name], "precision": precision, "flops_per_seq": fps,
                      "fraction_of_flop_limit": sps * fps / (n_proc * peak[precision])}

    base_a = rows["a_naive_dataloader"]["seq_per_s"]
    base_b = rows["b_hf_gpt2"]["seq_per_s"] if "b_hf_gpt2" in rows else None
    for row in rows.values():
        row["vs_naive"] = row["seq_per_s"] / base_a
        row["vs_hf_gpt2"] = row["seq_per_s"] / base_b if base_b else None
    result = {
        "machine": {"platform": platform.platform(), "processor": platform.processor(), "cpus": os.cpu_count(),
                    "torch": torch.__version__, "device": str(device), "threads": args.threads,
                    "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
                    "load_avg": os.getloadavg() if hasattr(os, "getloadavg") else None,
                    "malloc": "keep" if keep_freed_memory() else "system",
                    "bf16": None if device.type == "cuda" else "native" if native_bf16() else "emulated"},
        "config": args.config, "overrides": args.set, "batch_size": B, "seq_len": P, "d_vocab": V,
        "steps": steps, "quick": args.quick, "k": args.k, "processes": args.processes, "repeats": repeats,
        "matmul_peak_flops": peak, "flops_per_seq": flops,
        "flop_limit_seq_per_s": {"fp32": peak["fp32"] / flops["train_pruned"],
                                 "bf16": peak["bf16"] / flops["train_pruned"]},
        "results": rows,
    }
    print_table(result)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return result


def counted_hf_flops(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as c:
        F.cross_entropy(model(x).logits[:, -1], y).backward()
    model.zero_grad(set_to_none=True)
    return c.get_total_flops() / len(x)


def print_table(result: dict[str, Any]) -> None:
    peak, fl = result["matmul_peak_flops"], result["flops_per_seq"]
    bf16 = {"emulated": " (this CPU has no bf16 kernels: a scalar fallback)"}.get(result["machine"].get("bf16"), "")
    print(f"\nmatmul peak: fp32 {peak['fp32'] / 1e9:.1f} GFLOP/s, bf16 {peak['bf16'] / 1e9:.1f} GFLOP/s{bf16}")
    print(f"FLOPs per training sequence: pruned {fl['train_pruned'] / 1e6:.2f} M, unpruned "
          f"{fl['train_unpruned'] / 1e6:.2f} M (analytic 3x fwd: {fl['analytic_3x_fwd_pruned'] / 1e6:.2f} / "
          f"{fl['analytic_3x_fwd_unpruned'] / 1e6:.2f} M)")
    lim = result["flop_limit_seq_per_s"]
    print(f"FLOP limit (pruned): fp32 {lim['fp32']:.0f} seq/s, bf16 {lim['bf16']:.0f} seq/s\n")
    print(f"{'measurement':28s} {'seq/s':>9s} {'of limit':>9s} {'vs (a)':>7s} {'vs (b)':>7s}")
    for name, r in result["results"].items():
        vb = f"{r['vs_hf_gpt2']:.2f}" if r["vs_hf_gpt2"] else "-"
        print(f"{name:28s} {r['seq_per_s']:9.0f} {r['fraction_of_flop_limit']:9.1%} {r['vs_naive']:7.2f} {vb:>7s}")


if __name__ == "__main__":
    main()
