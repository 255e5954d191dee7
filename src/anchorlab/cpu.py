"""Set up a CPU training process: intra-op threads, glibc's allocator and subnormal floats.

PyTorch allocates CPU tensors with plain ``malloc``. glibc serves a block above its mmap threshold
(128 KiB, adapting up to 32 MiB) with a fresh ``mmap`` and unmaps it on ``free``, and hands heap memory
above ``M_TRIM_THRESHOLD`` back to the kernel. A training step that builds a 67 MB logits tensor (20 ×
256 × 3,277 floats) and its gradients therefore page-faults tens of thousands of zeroed pages back in on
every step: on the 2-core CI machines that was ~40 % of a GPT-2 step of ``configs/text/p2_fig7a_cpu.toml``
(0.46 → 0.27 s; ``python -m benchmarks.lm_step``). :func:`keep_freed_memory` tells glibc to serve every
block from the heap and to keep what is freed, so a step reuses the previous step's pages.

The price: a process keeps its peak memory until it exits, and freed blocks fragment (peak RSS 868 MB
instead of 769 MB over 60 steps of that config). Results do not change: allocation never touches the
arithmetic. Set ``ANCHORLAB_MALLOC=system`` to leave glibc as it is.

Subnormal floats (|x| < 2^-126 = 1.2e-38 in fp32) are handled by x86 cores in microcode, many times slower
than normal ones. A small-init P1 run produces them once its attention sharpens: the paper-config order-only
cell (γ 0.8, fp32, one thread), resumed from its epoch-3 state, took 12.0 s a step where it had taken 1.8
(flushed: 1.9; from the fresh init: 1.8 either way; ``python -m benchmarks.denormals``). :func:`flush_denormals`
sets the core's flush-to-zero mode in every training process and ``anchorlab`` command (in a notebook, call it
yourself), as XLA does on the CPU by default: a subnormal operand or result is read as 0. That changes only
values far below any weight, activation or loss a run carries, a change of the size of float rounding; each
run's ``summary.json`` records the setting (``environment.denormals``; a summary without it comes from a run
that kept them). ``ANCHORLAB_DENORMALS=keep`` keeps IEEE subnormals.

bf16 autocast (``train.precision = "bf16"``) is fast on a CPU only where oneDNN has bf16 kernels for it (x86 with
AVX-512 or AMX, Arm with BF16). Elsewhere torch multiplies bf16 matrices in a scalar fallback: on a 2-core AMD
EPYC VM with AVX2 only (2026-11-29), 0.9 GFLOP/s against 99 in fp32, and the paper-config P1 step 55 seq/s
against 1,277 (``python -m benchmarks.throughput --config configs/p1/cbook.toml --threads 2 --quick --rows c``).
:func:`warn_precision` says so in one line when such a run starts, and each run's ``summary.json`` records it
(``environment.bf16``: "native" or "emulated").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import sys

import torch

from anchorlab.config_tools import ConfigError
from anchorlab.provenance import code_version

MALLOC_ENV = "ANCHORLAB_MALLOC"
DENORMALS_ENV = "ANCHORLAB_DENORMALS"
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4  # glibc's mallopt parameters (malloc.h); values are C ints
_tuned: bool | None = None


def keep_freed_memory() -> bool:
    """Make glibc malloc serve large blocks from the heap and keep freed memory (``mallopt``); once per process.

    Returns whether it is in effect: False off Linux/glibc or with ``ANCHORLAB_MALLOC=system``."""
    global _tuned
    if _tuned is not None:
        return _tuned
    setting = malloc_setting()
    _tuned = False
    if setting == "keep" and sys.platform == "linux" and platform.libc_ver()[0] == "glibc":
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        _tuned = bool(libc.mallopt(_M_MMAP_MAX, 0)) and bool(libc.mallopt(_M_TRIM_THRESHOLD, 2**31 - 1))
    return _tuned


def malloc_setting() -> str:
    """``ANCHORLAB_MALLOC``: "keep" (the default) or "system"."""
    setting = os.environ.get(MALLOC_ENV, "keep")
    if setting not in ("keep", "system"):
        raise ConfigError(f"{MALLOC_ENV}={setting!r}: allowed values are 'keep' (the default) and 'system'")
    return setting


def denormals_setting() -> str:
    """``ANCHORLAB_DENORMALS``: "flush" (the default) or "keep"."""
    setting = os.environ.get(DENORMALS_ENV, "flush")
    if setting not in ("flush", "keep"):
        raise ConfigError(f"{DENORMALS_ENV}={setting!r}: allowed values are 'flush' (the default) and 'keep'")
    return setting


def check_settings() -> None:
    """Both environment settings read here are valid (a :class:`ConfigError` naming the variable if not): the
    CLI checks them before anything is written."""
    malloc_setting()
    denormals_setting()


def flush_denormals() -> bool:
    """Set the CPU's flush-to-zero mode unless ``ANCHORLAB_DENORMALS=keep``; returns whether it is in effect
    (False where the CPU has no such mode)."""
    flush = denormals_setting() == "flush"
    return bool(torch.set_flush_denormal(flush)) and flush


def native_bf16() -> bool:
    """Whether oneDNN has bf16 matmul kernels for this CPU (module docstring); without them bf16 autocast is
    ~20× slower than fp32."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch built without oneDNN: the instruction sets it would use
        return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())


_warned_precision = False


def warn_precision(precision: str, device: torch.device) -> bool:
    """One line on stderr (once per process) when a run computes in bf16 on a CPU without bf16 kernels
    (:func:`native_bf16`); returns whether it warned. The run goes on: its numbers are right, only slow."""
    global _warned_precision
    if precision != "bf16" or device.type != "cpu" or native_bf16() or _warned_precision:
        return False
    _warned_precision = True
    print("anchorlab: warning: train.precision 'bf16' on a CPU without bf16 kernels "
          f"({torch.backends.cpu.get_cpu_capability()}; oneDNN needs AVX-512 or AMX): matmuls run in a scalar "
          "fallback, ~20x slower than 'fp32' here (docs/performance.md)", file=sys.stderr, flush=True)
    return True


def setup_cpu(threads: int) -> None:
    """``threads`` intra-op threads (0 = every core), :func:`keep_freed_memory` and :func:`flush_denormals`."""
    torch.set_num_threads(threads or os.cpu_count() or 1)
    keep_freed_memory()
    flush_denormals()


def check_device(name: str, field: str = "train.device", auto: bool = True) -> None:
    """That this machine has device ``name`` (a config's ``train.device``), before anything is written: a GPU
    it does not have is one line naming ``field`` and what this machine allows (``auto``: whether the config
    takes "auto")."""
    device = torch.device("cpu" if name == "auto" else name)
    here = ("'auto' or 'cpu'" if auto else "'cpu'") + (
        f", or 'cuda' / 'cuda:0'..'cuda:{torch.cuda.device_count() - 1}'" if torch.cuda.is_available() else "")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"{field}: {name!r} needs a CUDA GPU, and torch {torch.__version__} here sees none; "
                          f"allowed on this machine: {here}")
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise ConfigError(f"{field}: {name!r}, but this machine has {torch.cuda.device_count()} CUDA device(s); "
                          f"allowed on this machine: {here}")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise ConfigError(f"{field}: {name!r} needs Apple's Metal (MPS), which torch here does not have; "
                          f"allowed on this machine: {here}")


def training_device(name: str, threads: int) -> torch.device:
    """The device a trainer runs on (``"auto"``: CUDA where there is one, else the CPU); on the CPU, with
    :func:`setup_cpu` (``threads``) done."""
    device = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if name == "auto" else name)
    if device.type == "cpu":
        setup_cpu(threads)
    return device


def run_environment(device: torch.device) -> dict[str, str | int]:
    """Where a run trained, for its ``summary.json``: the code (:func:`anchorlab.provenance.code_version`),
    device type and name, torch version, and on the CPU the intra-op threads, whether subnormals were
    flushed (``denormals``: "flushed" or "kept") and whether bf16 had kernels (``bf16``: "native" or
    "emulated"). Runs of one config on different devices differ in float summation order (and so in their
    trajectories: docs/p1_both_sides.md), so the record says which produced the numbers."""
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
    else:
        name = platform.processor() or platform.machine()
    env: dict[str, str | int] = {"anchorlab": code_version(), "device": device.type, "device_name": name,
                                 "torch": torch.__version__}
    if device.type == "cpu":
        env["threads"] = torch.get_num_threads()
        flushed = torch.tensor(1e-40, dtype=torch.float32).mul(1.0).item() == 0  # a subnormal read as 0
        env["denormals"] = "flushed" if flushed else "kept"
        env["bf16"] = "native" if native_bf16() else "emulated"
    return env
