"""What every back-end shares: a run's result, the sweep's progress bar, thread pinning and the one call
that trains a run and reports its progress.

Every back-end feeds :class:`SweepProgress` the same events: ``(run_dir, step, total_steps, status)`` after
each epoch (optimizer steps done and the run's total, as its trainer counts them) and
``(run_dir, None, None, error or None)`` when a run ends.
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
PutFn = Callable[[str, "int | None", "int | None", Any], None]  # one event: (run key, step, total steps, payload)


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


def resume_step(run_dir: Path) -> int:
    """The optimizer step an unfinished run resumes from (0: none, or a resume state that cannot be read; the
    run itself reports what is wrong with it)."""
    try:
        point = rundir.resume_point(run_dir)
    except Exception:
        return 0
    return 0 if point is None else point[0]


class SweepProgress:
    """Runs done / running / failed over a sweep, and one tqdm bar over all their optimizer steps (ETA from
    its rate).

    Steps, not epochs: the runs of one sweep can have epochs of very different lengths (P1 Fig. 6 trains on
    500 to 8,000 rows), so only steps measure work. A run's total comes from its config (``total_steps()``)
    before it starts, and a resumed run counts from its resume step. Where only the run's data can tell its
    total (``total_steps()`` None: a task reference file, all of a seq2seq task's rows), the run joins the bar
    with its first event, which carries the total its trainer counted, and only the steps it trains now count.
    A run that ends before its last step (stopped early, failed) takes its unreached steps off the total, so
    the bar ends full: at the end, n and total are the steps the runs reached.
    """

    def __init__(self, todo: list[Job], n_done_before: int, steps_done_before: int, show: bool) -> None:
        self.n_runs = len(todo) + n_done_before
        self.done, self.failed = n_done_before, 0
        self.running: set[str] = set()
        self.total: dict[str, int | None] = {str(d): c.total_steps() for c, d in todo}  # None until known
        self.reached: dict[str, int] = {str(d): resume_step(d) for _, d in todo}  # last step counted, per run
        self.bar: Any = None
        if show:
            from tqdm.auto import tqdm
            known = [k for k, t in self.total.items() if t is not None]
            self.bar = tqdm(total=steps_done_before + sum(self.total[k] or 0 for k in known),
                            initial=steps_done_before + sum(self.reached[k] for k in known), unit="step",
                            dynamic_ncols=True)
            self._label()

    def label(self) -> str:
        return f"{self.done}/{self.n_runs} runs done, {len(self.running)} running, {self.failed} failed"

    def _label(self, refresh: bool = True) -> None:
        if self.bar is not None:
            self.bar.set_description(self.label(), refresh=refresh)

    def event(self, key: str, step: int | None, total: int | None, payload: Any) -> None:
        """``step`` of the run's ``total`` steps done, with status line ``payload``; or, with ``step`` None, the
        run ended (``payload``: its error or None)."""
        from anchorlab.metrics import progress_postfix

        reached = self.reached.get(key, 0)
        if step is None:
            self.running.discard(key)
            self._grow(-max(0, (self.total.get(key) or reached) - reached))  # the steps it will not train
            self.total[key] = reached
            if payload is None:
                self.done += 1
            else:
                self.failed += 1
                last = str(payload).strip().splitlines()[-1] if str(payload).strip() else "error"
                self.write(f"run failed: {key}: {last}")
        else:
            self.running.add(key)
            # the trainer's count: the run's total first known now, or (should never be) not the config's
            if total is not None and total != self.total.get(key):
                planned = self.total.get(key)
                self._grow(total - (reached if planned is None else planned))
                self.total[key] = total
            if self.bar is not None:
                # a retried run may resume behind the step it had reported: those steps count once
                self.bar.update(max(0, step - reached))
                self.bar.set_postfix(progress_postfix(payload), refresh=False)
            self.reached[key] = max(reached, step)
        self._label(refresh=step is None)  # an epoch redraws through update(); a run's end redraws now

    def _grow(self, steps: int) -> None:
        if self.bar is not None and steps:
            self.bar.total += steps

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
    progress events through ``put(key, step, total_steps, payload)``; never raises."""
    key = str(run_dir)

    def report(step: int, total: int, status: dict[str, Any]) -> None:
        put(key, step, total, status)

    try:
        train = kinds.kind_of(cfg).get("train")
        result = RunResult(run_dir, train(cfg, run_dir, progress=report, show_progress=False))
    except (rundir.RunFailed, ConfigError) as e:  # a known cause: its message says it all
        result = RunResult(run_dir, None, str(e))
    except Exception:  # reported to the caller; the other runs go on
        result = RunResult(run_dir, None, traceback.format_exc())
    put(key, None, None, result.error)
    return result
