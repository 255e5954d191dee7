"""Set up a CPU training process: intra-op threads and glibc's allocator.

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
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import sys

import torch

MALLOC_ENV = "ANCHORLAB_MALLOC"
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4  # glibc's mallopt parameters (malloc.h); values are C ints
_tuned: bool | None = None


def keep_freed_memory() -> bool:
    """Make glibc malloc serve large blocks from the heap and keep freed memory (``mallopt``); once per process.

    Returns whether it is in effect: False off Linux/glibc or with ``ANCHORLAB_MALLOC=system``."""
    global _tuned
    if _tuned is not None:
        return _tuned
    setting = os.environ.get(MALLOC_ENV, "keep")
    if setting not in ("keep", "system"):
        raise ValueError(f"{MALLOC_ENV}={setting!r}: allowed values are 'keep' (the default) and 'system'")
    _tuned = False
    if setting == "keep" and sys.platform == "linux" and platform.libc_ver()[0] == "glibc":
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        _tuned = bool(libc.mallopt(_M_MMAP_MAX, 0)) and bool(libc.mallopt(_M_TRIM_THRESHOLD, 2**31 - 1))
    return _tuned


def setup_cpu(threads: int) -> None:
    """``threads`` intra-op threads (0 = every core) and :func:`keep_freed_memory`."""
    torch.set_num_threads(threads or os.cpu_count() or 1)
    keep_freed_memory()


def training_device(name: str, threads: int) -> torch.device:
    """The device a trainer runs on (``"auto"``: CUDA where there is one, else the CPU); on the CPU, with
    :func:`setup_cpu` (``threads``) done."""
    device = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if name == "auto" else name)
    if device.type == "cpu":
        setup_cpu(threads)
    return device


def run_environment(device: torch.device) -> dict[str, str | int]:
    """Where a run trained, for its ``summary.json``: device type and name, torch version, and on the CPU the
    intra-op threads. Runs of one config on different devices differ in float summation order (and so in
    their trajectories: docs/p1_both_sides.md), so the record says which produced the numbers."""
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
    else:
        name = platform.processor() or platform.machine()
    env: dict[str, str | int] = {"device": device.type, "device_name": name, "torch": torch.__version__}
    if device.type == "cpu":
        env["threads"] = torch.get_num_threads()
    return env
