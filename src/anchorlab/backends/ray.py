"""The Ray back-end of :func:`anchorlab.execute.run_all`: one Ray task per run, on a cluster or a local one.

Each run is a task with ``num_cpus=1`` (one intra-op thread) and ``num_gpus`` (a fraction lets several
small models share a GPU). A task whose worker dies (killed, out of memory, node lost) is retried up to
``max_retries`` times and resumes from its run directory's last resume checkpoint (a line says so when the
retry starts; after a lost node it first waits up to ~11 minutes for that node's lock to go stale,
:data:`anchorlab.rundir.LOCK_STALE_S`); an exception raised
by training is not retried (it would fail again) and is reported as that run's error. Runs already DONE
are never submitted (:func:`anchorlab.backends.common.split_done`). The sweep directory must be on a file system
that every node sees, and every node needs anchorlab and torch installed.

Progress events travel back through a ``ray.util.queue.Queue`` (an actor holding no CPU), as the pool's pipes
carry them: ``("start", run_dir)`` when a task starts (a run's second start is Ray retrying it) and
``("event", event)`` for :class:`~anchorlab.backends.common.SweepProgress`. When the driver stops (Ctrl-C reaches
it and, from the terminal, the workers), the queue dies with it and a task still training stops at its next
event as an interrupted run (:class:`SweepGone`): lock released, no FAILED mark, the same command resumes it.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from anchorlab import rundir
from anchorlab.backends.common import Job, RunResult, SweepProgress, one_thread, train_reporting
from anchorlab.config import ConfigError

STOP_WAIT_S = 60.0  # how long Ctrl-C waits for cancelled tasks to unwind before the cluster is shut down


def _import_ray() -> Any:
    try:
        import ray
    except ModuleNotFoundError as e:
        raise ConfigError("backend: 'ray' needs the optional extra: pip install 'anchorlab[ray]'") from e
    return ray


class SweepGone(KeyboardInterrupt):
    """The sweep that started this task has stopped (its progress queue died with the driver, e.g. on Ctrl-C):
    the run stops as an interrupted one does, at its last epoch boundary, its lock released and not marked
    FAILED (a ``KeyboardInterrupt``, so neither :func:`anchorlab.rundir.writer_lock` nor
    :func:`~anchorlab.backends.common.train_reporting` takes it for the run's own error)."""


def _put(queue: Any, item: tuple[str, Any]) -> None:
    try:
        queue.put(item)
    except Exception as e:  # Ray's ActorDiedError / RayActorError: nobody is listening any more
        raise SweepGone(f"the sweep's progress queue is gone ({type(e).__name__})") from e


def _run_task(cfg: Any, run_dir: Path, queue: Any) -> RunResult:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # a retry after a lost node finds that node's lock: wait for its heartbeat to stop counting (anchorlab.rundir)
    rundir.OTHER_HOST_WAIT_S = rundir.LOCK_STALE_S + 2 * rundir.LOCK_HEARTBEAT_S
    _put(queue, ("start", str(run_dir)))  # Ray tells the driver nothing when it retries a task; this does
    return train_reporting(cfg, run_dir, lambda *event: _put(queue, ("event", event)))


def _fields(r: RunResult) -> tuple[dict[str, Any] | None, str | None]:
    return r.summary, r.error


def _init_local(ray: Any, options: dict[str, Any]) -> None:
    """Start a local cluster whose workers run at this process's priority, as the process back-end's do: Ray
    lowers its workers' priority by 15 by default (``RAY_worker_niceness``), so on a machine where anything else
    runs a Ray sweep would crawl. A value the user set in the environment is kept."""
    key, before = "RAY_worker_niceness", os.environ.get("RAY_worker_niceness")
    os.environ.setdefault(key, "0")
    try:
        ray.init(**options)
    finally:  # the raylet has read it by now; the caller's environment is left as it was
        if before is None:
            os.environ.pop(key, None)


def _stop(ray: Any, pending: list[Any]) -> None:
    """Cancel the tasks still queued or training and wait (up to :data:`STOP_WAIT_S`) until they have ended.
    A running task gets a ``KeyboardInterrupt`` (``ray.cancel`` without ``force``) and unwinds as an interrupted
    ``anchorlab train`` does: its lock released, nothing marked FAILED. Shutting the cluster down at once would
    kill the workers mid-step and leave their locks to be taken over (with a warning) by the next command."""
    for ref in pending:
        ray.cancel(ref)
    ray.wait(pending, num_returns=len(pending), timeout=STOP_WAIT_S)


def run_ray(todo: list[Job], progress: SweepProgress, address: str | None = None,
            num_gpus: float = 0.0, max_retries: int = 3, init_options: dict[str, Any] | None = None,
            poll_seconds: float = 0.5) -> list[RunResult]:
    """Run every job as a Ray task and return one result per job, in order.

    ``address``: an existing cluster ("auto", "ray://host:10001", "host:6379"); None starts a local
    cluster for this call (``init_options`` go to ``ray.init``, e.g. ``num_cpus`` or ``_temp_dir``) and
    shuts it down afterwards. A Ray session already initialised by the caller is used as it is.
    """
    if not 0 <= num_gpus:
        raise ConfigError(f"gpus_per_run: expected a number >= 0 (a fraction such as 0.25 shares a GPU), "
                          f"got {num_gpus}")
    if max_retries < 0:
        raise ConfigError(f"max_retries: expected an integer >= 0, got {max_retries}")
    ray = _import_ray()
    from ray.util.queue import Empty, Queue

    started = False
    if not ray.is_initialized():
        options = {"include_dashboard": False, "log_to_driver": False, **(init_options or {})}
        if address is not None:
            options = {k: v for k, v in options.items() if k in ("log_to_driver", "runtime_env", "namespace")}
        if address is None:
            _init_local(ray, options)
        else:
            ray.init(address=address, **options)
        started = True
    try:
        queue = Queue(actor_options={"num_cpus": 0})
        task = ray.remote(_run_task).options(num_cpus=1, num_gpus=num_gpus, max_retries=max_retries,
                                             retry_exceptions=False)
        # absolute directories: a worker's working directory is not the driver's
        refs = [task.remote(one_thread(cfg), d.resolve(), queue) for cfg, d in todo]
        pending = list(refs)
        jobs = {str(d.resolve()): d for _, d in todo}  # a task's directory -> the job's, which keys the bar
        starts: dict[str, int] = {}

        def drain() -> None:
            while True:
                try:
                    tag, body = queue.get(block=False)
                except Empty:
                    return
                if tag == "event":
                    key, *rest = body
                    progress.event(str(jobs.get(key, key)), *rest)
                    continue
                starts[body] = starts.get(body, 0) + 1
                if starts[body] > 1:  # only a dead worker makes Ray run a task again (exceptions are not retried)
                    progress.write(f"run {jobs.get(body, body)}: worker died; Ray started it again "
                                   f"(attempt {starts[body]} of {max_retries + 1})")

        try:
            while pending:
                _ready, pending = ray.wait(pending, num_returns=len(pending), timeout=poll_seconds)
                drain()
        except KeyboardInterrupt:  # Ctrl-C: stop every task at its epoch boundary before the cluster goes down
            _stop(ray, pending)
            raise
        drain()
        results = []
        for ref, (_cfg, d) in zip(refs, todo):
            try:
                results.append(RunResult(d, *_fields(ray.get(ref))))
            except Exception as e:  # the task died more than max_retries times
                # Ray's own errors span several lines (an OOM kill ends in "Refer to the documentation…"):
                # keep the error's name and its first line, which say what happened
                first = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), "")
                error = f"{type(e).__name__}: {first}"
                progress.event(str(d), None, None, error)
                results.append(RunResult(d, None, error))
        return results
    finally:
        if started:
            ray.shutdown()


def check_address(address: str, timeout: float = 5.0) -> None:
    """That a cluster's head answers at ``address`` ("host:port" or "ray://host:port"; "auto" finds a cluster
    started on this machine and is left to Ray), before anything is written: Ray itself retries an address that
    does not answer for minutes, with warnings and no error. One line naming ``--address`` otherwise."""
    if address == "auto":
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ConfigError(f"--address: {address!r}; allowed: 'auto', HOST:PORT (the head's GCS, e.g. 10.0.0.5:6379) "
                          "or ray://HOST:PORT (Ray Client, e.g. ray://10.0.0.5:10001)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as e:
        raise ConfigError(f"--address: nothing answers at {address} ({e}); give the address of a running Ray "
                          "cluster's head, 'auto', or no --address for a local cluster") from None


def options(address: str | None, gpus_per_run: float, max_retries: int, workers: int) -> dict[str, Any]:
    """:func:`run_ray`'s options from the sweep command's: a local cluster (no ``address``) gets ``workers``
    CPUs."""
    return {"address": address, "num_gpus": gpus_per_run, "max_retries": max_retries,
            "init_options": {} if address else {"num_cpus": workers}}
