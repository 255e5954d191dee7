"""What every back-end shares: a run's result, the sweep's progress bar, thread pinning and the one call
that trains a run and reports its progress.

Every back-end feeds :class:`SweepProgress` the same events: ``(run_dir, epoch, status)`` after each
epoch and ``(run_dir, None, error or None)`` when a run ends.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from anchorlab import kinds, rundir
from anchorlab.config import ConfigError

Job = tuple[Any, Path]  # (a run config of any kind, its run directory)
PutFn = Callable[[str, "int | None", Any], None]  # one progress event: (run key, epoch or None, payload)


@dataclass
class RunResult:
    run_dir: Path
    summary: dict[str, Any] | None
    error: str | None = None  # one line for a known cause (divergence, a bad config, a dead worker), else a traceback

    def reason(self) -> str:
        """The error in one line: the last line of a traceback."""
        lines = [ln for ln in (self.error or "").strip().splitlines() if ln.strip()]
        return lines[-1].strip() if lines else "error"


def one_thread(cfg: Any) -> Any:
    """``cfg`` with one CPU intra-op thread unless it asks for a number explicitly."""
    if cfg.train.threads == 0:
        return replace(cfg, train=replace(cfg.train, threads=1))
    return cfg


class SweepProgress:
    """Runs done / running / failed over a sweep, as one tqdm bar over all epochs (ETA from its rate)."""

    def __init__(self, todo: list[Job], n_done_before: int, epochs_done_before: int, show: bool) -> None:
        self.n_runs = len(todo) + n_done_before
        self.done, self.failed = n_done_before, 0
        self.running: set[str] = set()
        self.epochs: dict[str, int] = {}
        self.bar: Any = None
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


def split_done(jobs: list[Job]) -> tuple[list[RunResult | None], list[int]]:
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


def train_reporting(cfg: Any, run_dir: Path, put: PutFn) -> RunResult:
    """Train one run with its kind's training function (``anchorlab train`` or ``anchorlab lm``), sending
    progress events through ``put(key, epoch, payload)``; never raises."""
    key = str(run_dir)

    def report(epoch: int, _total: int, status: dict[str, Any]) -> None:
        put(key, epoch, status)

    try:
        train = kinds.kind_of(cfg).get("train")
        result = RunResult(run_dir, train(cfg, run_dir, progress=report, show_progress=False))
    except (rundir.RunFailed, ConfigError) as e:  # a known cause: its message says it all
        result = RunResult(run_dir, None, str(e))
    except Exception:  # reported to the caller; the other runs go on
        result = RunResult(run_dir, None, traceback.format_exc())
    put(key, None, result.error)
    return result
