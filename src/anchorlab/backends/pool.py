"""The process back-end: one fresh 1-thread worker process per run, at most ``workers`` at a time, each
with its own pipe back to the parent for its progress events and its result.

Why 1-thread processes: on a small CPU, N processes with one intra-op thread each scale almost
linearly (~1.85x for 2 on 2 cores), while one process with N threads collapses when anything else runs.

Why not ``multiprocessing.Pool``: a pool whose worker is killed loses that task and waits for it forever.
Here the parent watches every worker's process sentinel: a worker that dies before sending its result
(killed, out of memory, a crash in native code) is seen at once; its run is retried up to ``max_retries``
times (it resumes from its directory's last resume state; the dead writer's lock is taken over) and then
reported as failed, and the other runs go on. One pipe per worker and no shared queue: a worker killed
mid-write cannot block the others, and no semaphore is left behind.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import time
from collections import deque
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from anchorlab.backends.common import Job, RunResult, SweepProgress, one_thread, train_reporting


def _exit_with_parent(parent_pid: int, every_s: float = 1.0) -> None:
    """A killed sweep must not leave its workers training: exit once the parent process is gone (the
    worker is re-parented). Its run directory keeps the last resume state; re-running the sweep resumes."""
    while os.getppid() == parent_pid:
        time.sleep(every_s)
    os._exit(1)


def _stop(signum: int, frame: Any) -> None:
    # A second SIGTERM (multiprocessing's exit handler terminating daemonic children) must not break into
    # the unwinding with a traceback; the parent kills a worker that has not finished within its grace time.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise SystemExit(128 + signum)  # unwinds the run: its lock is released, its last epoch boundary kept


def start_shielded(proc: Any) -> None:
    """Start ``proc`` with SIGINT ignored from its first instruction: a spawned Python inherits the ignored
    signal and installs no KeyboardInterrupt handler, so a Ctrl-C while it is still importing torch prints no
    traceback (the parent stops its workers itself). Outside the main thread signals cannot be changed: a plain
    start."""
    if threading.current_thread() is not threading.main_thread():
        return proc.start()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        proc.start()
    finally:
        signal.signal(signal.SIGINT, previous)


def _worker(cfg: Any, run_dir: Path, conn: Connection, parent_pid: int) -> None:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent stops the workers
    signal.signal(signal.SIGTERM, _stop)  # ... with SIGTERM
    threading.Thread(target=_exit_with_parent, args=(parent_pid,), daemon=True).start()
    result = train_reporting(cfg, run_dir, lambda *event: conn.send(("event", event)))
    conn.send(("result", result))
    conn.close()


def exit_reason(exitcode: int | None) -> str:
    """A dead worker's exit code in words: "killed by SIGKILL", "exit code 3"."""
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


def run_pool(todo: list[Job], workers: int, progress: SweepProgress, max_retries: int = 0) -> list[RunResult]:
    """Every job in its own 1-thread process, ``workers`` at a time; one result per job, in order. A job
    whose process dies without a result is started again up to ``max_retries`` times, then failed."""
    ctx = mp.get_context("spawn")  # fork after torch has started threads is unsafe
    results: list[RunResult | None] = [None] * len(todo)
    deaths = [0] * len(todo)
    waiting = deque(range(len(todo)))
    running: dict[int, tuple[Any, Connection]] = {}  # job index -> (process, its pipe's reading end)

    def drain(i: int) -> None:
        conn = running[i][1]
        try:
            while conn.poll():
                tag, payload = conn.recv()
                if tag == "event":
                    progress.event(*payload)
                else:
                    results[i] = payload
        except (EOFError, OSError):  # the worker is gone; what it sent has been read
            pass

    try:
        while waiting or running:
            while waiting and len(running) < workers:
                i = waiting.popleft()
                cfg, d = todo[i]
                reader, writer = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_worker, args=(one_thread(cfg), d, writer, os.getpid()), daemon=True)
                start_shielded(proc)
                writer.close()  # the child holds the only writing end: its death is an EOF here
                running[i] = (proc, reader)
            wait([c for _, c in running.values()] + [p.sentinel for p, _ in running.values()], timeout=1.0)
            for i in list(running):
                drain(i)
                proc, conn = running[i]
                if proc.is_alive():
                    continue
                proc.join()
                drain(i)
                conn.close()
                del running[i]
                if results[i] is not None:
                    continue
                d = todo[i][1]
                deaths[i] += 1
                reason = f"worker process died ({exit_reason(proc.exitcode)})"
                if deaths[i] <= max_retries:
                    progress.write(f"run {d}: {reason}; starting it again ({deaths[i]}/{max_retries})")
                    waiting.append(i)
                else:
                    results[i] = RunResult(d, None, reason)
                    progress.event(str(d), None, None, reason)
    finally:
        for proc, _ in running.values():  # interrupted: stop the workers (their runs resume next time) ...
            proc.terminate()
        for proc, conn in running.values():  # ... each given 5 s to unwind, then killed (its run resumes too)
            proc.join(5)
            if proc.is_alive():
                proc.kill()
                proc.join()
            conn.close()
    return [r for r in results if r is not None]
