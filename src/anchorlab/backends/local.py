"""The in-process back-end: runs one after another, or K same-shaped anchor-task runs at a time as one
stacked model (:mod:`anchorlab.batched`)."""

from __future__ import annotations

import traceback
from typing import Any

from anchorlab import rundir
from anchorlab.backends.common import Job, RunResult, SweepProgress, train_reporting


def run_in_process(todo: list[Job], progress: SweepProgress) -> list[RunResult]:
    return [train_reporting(cfg, d, progress.event) for cfg, d in todo]


def batch_groups(todo: list[Job], k: int) -> list[list[int]]:
    """Indices of ``todo`` in groups of at most ``k`` runs that can train together, in first-seen order."""
    from anchorlab.batched import shared_key

    by_key: dict[str, list[int]] = {}
    for i, (cfg, _) in enumerate(todo):
        by_key.setdefault(shared_key(cfg), []).append(i)
    return [g[j:j + k] for g in by_key.values() for j in range(0, len(g), k)]


def run_batched(todo: list[Job], k: int, progress: SweepProgress) -> list[RunResult]:
    from anchorlab.batched import train_batched

    results: list[RunResult | None] = [None] * len(todo)
    for group in batch_groups(todo, k):
        keys = [str(todo[i][1]) for i in group]

        def report(j: int, step: int, total: int, status: dict[str, Any], keys: list[str] = keys) -> None:
            progress.event(keys[j], step, total, status)

        try:
            summaries = train_batched([todo[i][0] for i in group], [todo[i][1] for i in group], progress=report,
                                      show_progress=False)
            for i, s in zip(group, summaries):
                results[i] = RunResult(todo[i][1], s)
                progress.event(str(todo[i][1]), None, None, None)
        except Exception:  # the group's unfinished runs failed (those that finished keep); the other groups go on
            err = traceback.format_exc()
            for i in group:
                d = todo[i][1]
                if rundir.is_done(d):
                    results[i] = RunResult(d, rundir.read_json(d / rundir.SUMMARY))
                    progress.event(str(d), None, None, None)
                else:
                    reason = (d / rundir.FAILED).read_text() if (d / rundir.FAILED).exists() else err
                    results[i] = RunResult(d, None, reason)
                    progress.event(str(d), None, None, reason)
    return [r for r in results if r is not None]
