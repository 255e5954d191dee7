"""Run many run configs (anchor-task ``RunConfig`` or real-language ``LMRunConfig``): in-process, a pool of
1-thread worker processes, or Ray tasks (:mod:`.ray_backend`).

Why 1-thread processes: on a small CPU, N processes with one intra-op thread each scale almost
linearly (~1.85x for 2 on 2 cores), while one process with N threads collapses when anything else
runs. Progress of all runs is one bar over the sweep's epochs (its rate gives the ETA) whose label
counts runs done / running / failed. Runs whose directory is already DONE are never dispatched;
unfinished ones resume. A failing run is reported with its error and directory and does not stop
the others.

Every back-end feeds :class:`SweepProgress` the same events: ``(run_dir, epoch, status)`` after each
epoch and ``(run_dir, None, error or None)`` when a run ends.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from anchorlab import rundir
from anchorlab.config import ConfigError, RunConfig

BACKENDS = ("local", "process", "ray")


@dataclass
class RunResult:
    run_dir: Path
    summary: dict[str, Any] | None
    error: str | None = None


def one_thread(cfg: RunConfig) -> RunConfig:
    """``cfg`` with one CPU intra-op thread unless it asks for a number explicitly."""
    if cfg.train.threads == 0:
        return replace(cfg, train=replace(cfg.train, threads=1))
    return cfg


class SweepProgress:
    """Runs done / running / failed over a sweep, as one tqdm bar over all epochs (ETA from its rate)."""

    def __init__(self, todo: list[tuple[RunConfig, Path]], n_done_before: int, epochs_done_before: int,
                 show: bool) -> None:
        self.n_runs = len(todo) + n_done_before
        self.done, self.failed = n_done_before, 0
        self.running: set[str] = set()
        self.epochs: dict[str, int] = {}
        self.bar = None
        if show:
            from tqdm.auto import tqdm
            total = sum(c.train.epochs for c, _ in todo) + epochs_done_before
            self.bar = tqdm(total=total, initial=epochs_done_before, unit="ep", dynamic_ncols=True)
            self._label()

    def label(self) -> str:
        return f"{self.done}/{self.n_runs} runs done, {len(self.running)} running, {self.failed} failed"

    def _label(self, refresh: bool = True) -> None:
        if self.bar is not None:
            self.bar.set_description(self.label(), refresh=refresh)

    def event(self, key: str, epoch: int | None, payload: Any) -> None:
        """``epoch`` done with status line ``payload``; or, with ``epoch`` None, the run ended (``payload``:
        its error or None)."""
        from anchorlab.metrics import progress_postfix

        if epoch is None:
            self.running.discard(key)
            if payload is None:
                self.done += 1
            else:
                self.failed += 1
                last = str(payload).strip().splitlines()[-1] if str(payload).strip() else "error"
                self.write(f"run failed: {key}: {last}")
        else:
            self.running.add(key)
            if self.bar is not None:
                self.bar.update(max(0, epoch - self.epochs.get(key, 0)))
                self.bar.set_postfix(progress_postfix(payload), refresh=False)
            self.epochs[key] = epoch
        self._label(refresh=epoch is None)  # an epoch redraws through update(); a run's end redraws now

    def write(self, line: str) -> None:
        if self.bar is not None:
            self.bar.write(line)
        else:
            print(line, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def split_done(jobs: list[tuple[RunConfig, Path]]) -> tuple[list[RunResult | None], list[int]]:
    """(results so far, indices still to run): a DONE directory holding the same config is not run again;
    one holding a different config is a failed result naming the first differing field."""
    results: list[RunResult | None] = [None] * len(jobs)
    todo = []
    for i, (cfg, d) in enumerate(jobs):
        if not rundir.is_done(d):
            todo.append(i)
            continue
        try:
            rundir.open_run(d, cfg)  # a finished run: only checks that it holds this config
        except ConfigError as e:
            results[i] = RunResult(d, None, str(e))
            continue
        results[i] = RunResult(d, rundir.read_json(d / rundir.SUMMARY))
    return results, todo


def run_all(jobs: list[tuple[RunConfig, Path]], workers: int = 1, show_progress: bool = True,
            backend: str | None = None, batch_models: int | None = None, **backend_options: Any) -> list[RunResult]:
    """Train every (config, run_dir) job and return one result per job, in order.

    ``backend``: "local" (in this process), "process" (a spawn pool of ``workers`` 1-thread processes) or
    "ray" (one Ray task per run; ``backend_options`` go to :func:`anchorlab.ray_backend.run_ray`).
    Default: "local" for ``workers`` <= 1, else "process".
    ``batch_models`` (local back-end): train up to K runs that share shapes, data and schedule length
    together in one process (:mod:`anchorlab.batched`, stacked weights, one fused step; each run
    directory exactly as if trained alone). Default: 16 on the local back-end when the runs' device is
    CUDA, else 1 (on a CPU it gains nothing).
    """
    backend = backend or ("local" if workers <= 1 else "process")
    lm = any(_is_lm(c) for c, _ in jobs)
    if batch_models is None:
        batch_models = 16 if backend == "local" and not lm and any(_on_cuda(c) for c, _ in jobs) else 1
    if batch_models < 1:
        raise ConfigError(f"batch_models: allowed values are integers >= 1, got {batch_models}")
    if batch_models > 1 and lm:
        raise ConfigError(f"batch_models: {batch_models} applies to anchor-task runs only; real-language (GPT-2) "
                          "runs train one model per process (use 1)")
    if batch_models > 1 and backend != "local":
        raise ConfigError(f"batch_models: {batch_models} needs backend 'local' (one process holds the K models); "
                          f"got backend {backend!r}")
    if backend not in BACKENDS:
        raise ConfigError(f"backend: unknown {backend!r}; allowed: {', '.join(BACKENDS)}")
    jobs = [(c, Path(d)) for c, d in jobs]
    results, todo_idx = split_done(jobs)
    todo = [jobs[i] for i in todo_idx]
    epochs_before = sum(c.train.epochs for c, _ in jobs) - sum(c.train.epochs for c, _ in todo)
    progress = SweepProgress(todo, len(jobs) - len(todo), epochs_before, show_progress)
    try:
        if not todo:
            new: list[RunResult] = []
        elif backend == "local" and batch_models > 1:
            new = _run_batched(todo, batch_models, progress)
        elif backend == "local":
            new = _run_in_process(todo, progress)
        elif backend == "process":
            new = _run_pool(todo, workers, progress)
        else:
            from anchorlab.ray_backend import run_ray
            new = run_ray(todo, progress, **backend_options)
    finally:
        progress.close()
    for i, r in zip(todo_idx, new):
        results[i] = r
    for r in results:
        if r is not None and r.error:
            print(f"run failed: {r.run_dir}\n{r.error}", flush=True)
    return [r for r in results if r is not None]


def _is_lm(cfg: Any) -> bool:
    return type(cfg).__name__ == "LMRunConfig"  # no import: the text stack stays unloaded for anchor sweeps


def train_reporting(cfg: Any, run_dir: Path, put: Any) -> RunResult:
    """Train one run (``anchorlab train`` or, for an ``LMRunConfig``, ``anchorlab lm``), sending progress
    events through ``put(key, epoch, payload)``; never raises."""
    if _is_lm(cfg):
        from anchorlab.text.lm import train_lm as train
    else:
        from anchorlab.train import train

    key = str(run_dir)

    def report(epoch: int, _total: int, status: dict[str, Any]) -> None:
        put(key, epoch, status)

    try:
        result = RunResult(run_dir, train(cfg, run_dir, progress=report, show_progress=False))
    except Exception:  # reported to the caller; the other runs go on
        result = RunResult(run_dir, None, traceback.format_exc())
    put(key, None, result.error)
    return result


def _run_in_process(todo: list[tuple[RunConfig, Path]], progress: SweepProgress) -> list[RunResult]:
    return [train_reporting(cfg, d, progress.event) for cfg, d in todo]


def _on_cuda(cfg: RunConfig) -> bool:
    import torch

    dev = cfg.train.device
    return dev.startswith("cuda") or (dev == "auto" and torch.cuda.is_available())


def batch_groups(todo: list[tuple[RunConfig, Path]], k: int) -> list[list[int]]:
    """Indices of ``todo`` in groups of at most ``k`` runs that can train together, in first-seen order."""
    from anchorlab.batched import shared_key

    by_key: dict[str, list[int]] = {}
    for i, (cfg, _) in enumerate(todo):
        by_key.setdefault(shared_key(cfg), []).append(i)
    return [g[j:j + k] for g in by_key.values() for j in range(0, len(g), k)]


def _run_batched(todo: list[tuple[RunConfig, Path]], k: int, progress: SweepProgress) -> list[RunResult]:
    from anchorlab.batched import train_batched

    results: list[RunResult | None] = [None] * len(todo)
    for group in batch_groups(todo, k):
        keys = [str(todo[i][1]) for i in group]

        def report(j: int, epoch: int, _total: int, status: dict[str, Any], keys: list[str] = keys) -> None:
            progress.event(keys[j], epoch, status)

        try:
            summaries = train_batched([todo[i][0] for i in group], [todo[i][1] for i in group], progress=report,
                                      show_progress=False)
            for i, s in zip(group, summaries):
                results[i] = RunResult(todo[i][1], s)
                progress.event(str(todo[i][1]), None, None)
        except Exception:  # the group failed together; the other groups go on
            err = traceback.format_exc()
            for i in group:
                results[i] = RunResult(todo[i][1], None, err)
                progress.event(str(todo[i][1]), None, err)
    return [r for r in results if r is not None]


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


def _worker(args: tuple[RunConfig, Path]) -> RunResult:
    cfg, run_dir = args
    return train_reporting(cfg, run_dir, lambda *event: _QUEUE.put(event))


def _run_pool(todo: list[tuple[RunConfig, Path]], workers: int, progress: SweepProgress) -> list[RunResult]:
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
        return pending.get()
