"""Run many run configs (anchor-task ``RunConfig`` or real-language ``LMRunConfig``) on one back-end
(:mod:`anchorlab.backends`): in-process, a pool of 1-thread worker processes, or Ray tasks.

Progress of all runs is one bar over the sweep's optimizer steps (its rate gives the ETA; steps, not epochs,
because the runs' epochs can differ a lot in length) whose label counts runs done / running / failed. Runs
whose directory is already DONE (with the same config, execution fields such as ``train.threads`` aside) are
never dispatched; unfinished ones resume. A failing run does not stop the others; at the end each failed run
is one line: its directory and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from anchorlab import kinds, rundir
from anchorlab.backends import BACKENDS
from anchorlab.backends import ray as ray_backend
from anchorlab.backends.common import Job, RunResult, SweepProgress, split_done
from anchorlab.backends.local import run_batched, run_in_process
from anchorlab.backends.pool import run_pool
from anchorlab.config import ConfigError
from anchorlab.sweep import run_status


def run_all(jobs: Sequence[tuple[Any, str | Path]], workers: int = 1, show_progress: bool = True,
            backend: str | None = None, batch_models: int | None = None, **backend_options: Any) -> list[RunResult]:
    """Train every (config, run_dir) job and return one result per job, in order.

    ``backend``: "local" (in this process), "process" (a spawn pool of ``workers`` 1-thread processes) or
    "ray" (one Ray task per run; ``backend_options`` go to :func:`anchorlab.backends.ray.run_ray`).
    Default: "local" for ``workers`` <= 1, else "process".
    ``batch_models`` (local back-end): train up to K runs that share task, shapes and schedule length (each on
    its own data seed's draw) together in one process (:mod:`anchorlab.batched`, stacked weights, one fused
    step; each run directory exactly as if trained alone). Default: 16 on the local back-end when the runs' device is
    CUDA, else 1 (on a CPU it gains nothing).
    """
    backend = backend or ("local" if workers <= 1 else "process")
    batch_models = _check_batch_models(jobs, backend, batch_models)
    if backend not in BACKENDS:
        raise ConfigError(f"backend: unknown {backend!r}; allowed: {', '.join(BACKENDS)}")
    todo_jobs: list[Job] = [(c, Path(d)) for c, d in jobs]
    results, todo_idx = split_done(todo_jobs)
    todo = [todo_jobs[i] for i in todo_idx]
    n_refused = sum(r is not None and r.error is not None for r in results)
    resumed = sum(run_status(d) == "partial" for _, d in todo)  # started before: as --dry-run counts them
    print(f"{len(todo_jobs)} runs: {len(todo_jobs) - len(todo) - n_refused} done, {len(todo)} to train"
          + (f" ({resumed} resume{'s' * (resumed == 1)} from {'its' if resumed == 1 else 'their'} last epoch)"
             if resumed else "") + (f", {n_refused} refused" if n_refused else ""), flush=True)
    to_train = set(todo_idx)
    # finished runs fill their part of the bar; one whose total only its data can tell is left out of it
    steps_before = sum(c.total_steps() or 0 for i, (c, _) in enumerate(todo_jobs) if i not in to_train)
    progress = SweepProgress(todo, len(todo_jobs) - len(todo), steps_before, show_progress)
    try:
        if not todo:
            new: list[RunResult] = []
        elif backend == "local" and (batch_models > 1 or any(_graphed(c) for c, _ in todo)):
            new = run_batched(todo, batch_models, progress)  # a graphed run trains batched, even alone
        elif backend == "local":
            new = run_in_process(todo, progress)
        elif backend == "process":
            new = run_pool(todo, workers, progress, **backend_options)
        else:
            new = ray_backend.run_ray(todo, progress, **backend_options)
    finally:
        progress.close()
    for i, result in zip(todo_idx, new):
        results[i] = result
    for r in results:
        if r is not None and r.error:
            print(f"run failed: {r.run_dir}: {r.reason()}", flush=True)
    return [r for r in results if r is not None]


def _check_batch_models(jobs: Sequence[tuple[Any, str | Path]], backend: str, batch_models: int | None) -> int:
    """``batch_models`` checked against the jobs and back-end, or its default (16 for anchor-task runs on a
    GPU in this process, else 1); a ``train.cuda_graph`` run checked too (:func:`_check_cuda_graph`)."""
    _check_cuda_graph(jobs, backend)
    stackable = all(kinds.kind_of(c).name == "anchor" for c, _ in jobs)  # stacked training is anchor-task only
    if batch_models is None:
        return 16 if backend == "local" and stackable and any(_on_cuda(c) for c, _ in jobs) else 1
    if batch_models < 1:
        raise ConfigError(f"batch_models: allowed values are integers >= 1, got {batch_models}")
    if batch_models > 1 and not stackable:
        raise ConfigError(f"batch_models: {batch_models} applies to anchor-task runs only; real-language (GPT-2) "
                          "runs train one model per process (use 1)")
    if batch_models > 1 and backend != "local":
        raise ConfigError(f"batch_models: {batch_models} needs backend 'local' (one process holds the K models); "
                          f"got backend {backend!r}")
    return batch_models


def _graphed(cfg: Any) -> bool:
    return bool(getattr(getattr(cfg, "train", None), "cuda_graph", False))


def _check_cuda_graph(jobs: Sequence[tuple[Any, str | Path]], backend: str) -> None:
    """``train.cuda_graph`` only where batched training on a GPU runs in this process."""
    graphed = [c for c, _ in jobs if _graphed(c)]
    if graphed and backend != "local":
        raise ConfigError(f"train.cuda_graph: true needs backend 'local' (batched training in this process); got "
                          f"backend {backend!r}")
    if graphed and not all(_on_cuda(c) for c in graphed):
        raise ConfigError("train.cuda_graph: true needs a CUDA device (train.device 'cuda', or 'auto' on a machine "
                          "with a GPU); false trains without a graph")


def _on_cuda(cfg: Any) -> bool:
    import torch

    dev = cfg.train.device
    return dev.startswith("cuda") or (dev == "auto" and torch.cuda.is_available())


def check_devices(jobs: Sequence[tuple[Any, Path]]) -> None:
    """That this machine has the ``train.device`` of every (config, run directory) job not yet done, before
    anything is written (:func:`anchorlab.cpu.check_device`): for runs that train in this process or its
    workers, not on a Ray cluster, whose machines may have what this one lacks."""
    from anchorlab.cpu import check_device

    # only the anchor-task kind (P1, P2) takes "auto"
    for device, auto in dict.fromkeys((cfg.train.device, kinds.kind_of(cfg).name == "anchor")
                                      for cfg, d in jobs if not rundir.is_done(d)):
        check_device(device, auto=auto)


def check_sweep_options(*, workers: int, backend: str = "process", batch_models: int | None = None,
                        address: str | None = None, gpus_per_run: float = 0.0, max_retries: int | None = None) -> None:
    """The sweep command's back-end options, checked before anything is written."""
    if backend not in BACKENDS:
        raise ConfigError(f"--backend: unknown {backend!r}; allowed: {', '.join(BACKENDS)}")
    if workers < 1:
        raise ConfigError(f"--workers: allowed values are integers >= 1, got {workers}")
    if backend != "ray" and (address or gpus_per_run):
        raise ConfigError(f"{'--address' if address else '--gpus-per-run'}: only with --backend ray, "
                          f"got --backend {backend}")
    if not gpus_per_run >= 0:
        raise ConfigError(f"--gpus-per-run: allowed values are numbers >= 0, got {gpus_per_run}")
    if max_retries is not None and max_retries < 0:
        raise ConfigError(f"--max-retries: allowed values are integers >= 0, got {max_retries}")
    if max_retries and backend == "local":
        raise ConfigError("--max-retries: applies to --backend process or ray (a run in this process has no worker "
                          "to lose)")
    if batch_models is not None and batch_models < 1:
        raise ConfigError(f"--batch-models: allowed values are integers >= 1, got {batch_models}")
    if backend == "ray" and address:
        ray_backend.check_address(address)


def batch_plan(spec: Any, out: str | Path, backend: str, batch_models: int | None) -> str:
    """The dry run's line on batching: how the sweep's runs still to train would be stacked on the local
    back-end (groups of runs that share task, shapes, epochs, batch size and precision, up to K each); "" where
    nothing would be batched (another back-end, K = 1, or nothing left to train)."""
    from anchorlab.backends.local import batch_groups
    from anchorlab.sweep import expand, run_status

    rows = expand(spec, out)
    k = _check_batch_models([(cfg, d) for _, cfg, d in rows], backend, batch_models)
    todo: list[Job] = [(cfg, d) for _, cfg, d in rows if run_status(d) != "done"]
    if backend != "local" or k <= 1 or not todo:
        return ""
    sizes = [len(g) for g in batch_groups(todo, k)]
    return (f"batched (--backend local --batch-models {k}): the {len(todo)} runs to train form {len(sizes)} "
            f"group{'s' if len(sizes) > 1 else ''} of {' + '.join(map(str, sizes))} runs")


def run_sweep(spec: Any, out: str | Path, *, workers: int, backend: str = "process", batch_models: int | None = None,
              address: str | None = None, gpus_per_run: float = 0.0,
              max_retries: int | None = None) -> tuple[str, int]:
    """``anchorlab sweep``: check the back-end options, write the sweep's manifest (:func:`anchorlab.sweep.plan`),
    train its runs and return the one-line outcome and the number of runs that failed. ``max_retries``: how
    often a run whose worker process dies is started again (default: 0 on the process back-end, 3 on Ray);
    ``address`` and ``gpus_per_run`` are the Ray back-end's (:func:`anchorlab.backends.ray.options`)."""
    from anchorlab.sweep import plan

    check_sweep_options(workers=workers, backend=backend, batch_models=batch_models, address=address,
                        gpus_per_run=gpus_per_run, max_retries=max_retries)
    out = Path(out)
    _check_batch_models([(cfg, out) for _, cfg in spec.configs()], backend, batch_models)
    rows = plan(spec, out)  # the first file written
    if backend == "ray":
        options = ray_backend.options(address, gpus_per_run, 3 if max_retries is None else max_retries, workers)
    else:
        options = {"max_retries": max_retries or 0} if backend == "process" else {}
    results = run_all([(cfg, d) for _, cfg, d in rows], workers=workers, backend=backend, batch_models=batch_models,
                      **options)
    failed = [r for r in results if r.error]
    return (f"sweep {spec.name}: {len(results) - len(failed)}/{len(results)} runs done in {out}"
            + (f"; {len(failed)} failed" if failed else "")), len(failed)
