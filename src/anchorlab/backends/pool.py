"""The process back-end: a spawn pool of 1-thread worker processes and the queue that carries their
progress events back.

Why 1-thread processes: on a small CPU, N processes with one intra-op thread each scale almost
linearly (~1.85x for 2 on 2 cores), while one process with N threads collapses when anything else runs.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time
from typing import Any

from anchorlab.backends.common import Job, RunResult, SweepProgress, one_thread, train_reporting

_QUEUE: Any = None  # the parent's progress queue, set in each worker by the pool initializer


def _init_worker(queue: Any, parent_pid: int) -> None:
    global _QUEUE
    _QUEUE = queue
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    threading.Thread(target=_exit_with_parent, args=(parent_pid,), daemon=True).start()


def _exit_with_parent(parent_pid: int, every_s: float = 1.0) -> None:
    """A killed sweep must not leave its workers training: exit once the parent process is gone (the
    worker is re-parented). Its run directory keeps the last resume state; re-running the sweep resumes."""
    while os.getppid() == parent_pid:
        time.sleep(every_s)
    os._exit(1)


def _worker(args: Job) -> RunResult:
    cfg, run_dir = args
    return train_reporting(cfg, run_dir, lambda *event: _QUEUE.put(event))


def run_pool(todo: list[Job], workers: int, progress: SweepProgress) -> list[RunResult]:
    """Every job in a pool of ``workers`` 1-thread processes (one fresh process per run); one result per
    job, in order."""
    ctx = mp.get_context("spawn")  # fork after torch has started threads is unsafe
    queue = ctx.Queue()  # no Manager process: nothing outlives a killed parent
    with ctx.Pool(processes=min(workers, len(todo)), maxtasksperchild=1, initializer=_init_worker,
                  initargs=(queue, os.getpid())) as pool:
        pending = pool.map_async(_worker, [(one_thread(c), d) for c, d in todo], chunksize=1)
        while True:
            try:
                event = queue.get(timeout=0.5)
            except Exception:
                if pending.ready() and queue.empty():
                    break
                continue
            progress.event(*event)
        results: list[RunResult] = pending.get()
        return results
