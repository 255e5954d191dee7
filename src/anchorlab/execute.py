"""Run many RunConfigs on this machine: in-process, or a pool of 1-thread worker processes.

Why 1-thread processes: on a small CPU, N processes with one intra-op thread each scale almost
linearly (~1.85x for 2 on 2 cores), while one process with N threads collapses when anything else
runs. Progress of all runs is shown as one bar (runs done / running / failed, loss, accuracies).
Runs whose directory is already DONE are skipped; unfinished ones resume. A failing run is reported
with its error and directory and does not stop the others.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from anchorlab.config import RunConfig


@dataclass
class RunResult:
    run_dir: Path
    summary: dict[str, Any] | None
    error: str | None = None


def _one_thread(cfg: RunConfig) -> RunConfig:
    if cfg.train.threads == 0:
        return replace(cfg, train=replace(cfg.train, threads=1))
    return cfg


_QUEUE: Any = None  # the parent's progress queue, set in each worker by the pool initializer


def _init_worker(queue: Any) -> None:
    global _QUEUE
    _QUEUE = queue
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _worker(args: tuple[RunConfig, Path]) -> RunResult:
    cfg, run_dir = args
    queue = _QUEUE
    from anchorlab.train import train

    def report(epoch: int, total: int, status: dict[str, Any]) -> None:
        if queue is not None:
            queue.put((str(run_dir), epoch, total, status))

    try:
        return RunResult(run_dir, train(cfg, run_dir, progress=report, show_progress=False))
    except Exception:  # reported to the parent; the other runs go on
        return RunResult(run_dir, None, traceback.format_exc())
    finally:
        if queue is not None:
            queue.put((str(run_dir), None, None, None))


def run_all(jobs: list[tuple[RunConfig, Path]], workers: int = 1, show_progress: bool = True) -> list[RunResult]:
    """Train every (config, run_dir) job; ``workers`` > 1 uses a spawn pool of 1-thread processes."""
    todo = [(c, Path(d)) for c, d in jobs]
    results = _run_in_process(todo, show_progress) if workers <= 1 else _run_pool(todo, workers, show_progress)
    for r in results:
        if r.error:
            print(f"run failed: {r.run_dir}\n{r.error}", flush=True)
    return results


def _run_in_process(todo: list[tuple[RunConfig, Path]], show_progress: bool) -> list[RunResult]:
    from anchorlab.train import train

    results = []
    for cfg, d in todo:
        try:
            results.append(RunResult(d, train(cfg, d, show_progress=show_progress)))
        except Exception:
            results.append(RunResult(d, None, traceback.format_exc()))
    return results


def _run_pool(todo: list[tuple[RunConfig, Path]], workers: int, show_progress: bool) -> list[RunResult]:

    from anchorlab.metrics import progress_postfix

    ctx = mp.get_context("spawn")  # fork after torch has started threads is unsafe
    queue = ctx.Queue()  # no Manager process: nothing outlives a killed parent
    total_epochs = sum(c.train.epochs for c, _ in todo)
    done_epochs: dict[str, int] = {}
    bar = None
    if show_progress:
        from tqdm.auto import tqdm
        done_already = sum(c.train.epochs for c, d in todo if (d / "DONE").exists())
        bar = tqdm(total=total_epochs, initial=done_already, unit="ep", desc=f"{len(todo)} runs",
                   dynamic_ncols=True)
    n_finished = 0
    with ctx.Pool(processes=min(workers, len(todo)), maxtasksperchild=1, initializer=_init_worker,
                  initargs=(queue,)) as pool:
        pending = pool.map_async(_worker, [(_one_thread(c), d) for c, d in todo], chunksize=1)
        running: set[str] = set()
        while True:
            try:
                key, epoch, _total, status = queue.get(timeout=0.5)
            except Exception:
                if pending.ready() and queue.empty():
                    break
                continue
            if epoch is None:
                running.discard(key)
                n_finished += 1
            else:
                running.add(key)
            if bar is not None:
                bar.set_description(f"{n_finished}/{len(todo)} runs done, {len(running)} running", refresh=False)
            if epoch is None:
                continue
            if bar is not None:
                bar.update(epoch - done_epochs.get(key, 0))
                done_epochs[key] = epoch
                bar.set_postfix(progress_postfix(status), refresh=False)
        results = pending.get()
    if bar is not None:
        bar.close()
    return results
