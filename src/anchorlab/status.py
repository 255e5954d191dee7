"""``anchorlab status``: where each run stands, as one table on the terminal.

Long runs train for hours and across sessions, many at a time (a sweep, a queue of runs resumed each session).
This reads their records, never their weights, and prints a row per run: its coordinates (a sweep's axes, or
the config fields in which loose runs differ, as ``anchorlab collect`` gives them), its state, how far it has
trained, its last evaluation (the headline metrics the progress bar shows), and for a run being trained now,
the time left at the pace of its current session (pauses left out). It writes nothing.

States (:func:`anchorlab.sweep.collect_sources`): ``done``; ``running`` (a live process holds the run's LOCK);
``unfinished`` (stopped part way: the same command resumes it); ``failed``; ``missing`` (no evaluation yet).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from anchorlab import rundir
from anchorlab.config import ConfigError
from anchorlab.metrics import BAR_LABELS
from anchorlab.sweep import MANIFEST, collect, collect_sources

STATES = ("done", "running", "unfinished", "failed", "missing")


def status_rows(sources: Sequence[str | Path]) -> list[dict[str, Any]]:
    """One row per run of ``sources`` (sweep directories, folders of runs, run directories): ``run_id``, its
    coordinates, ``status``, ``epoch`` (epochs trained), ``epochs`` (of the config), ``eval_epoch`` (the epoch
    of the last evaluation), ``loss`` (the last epoch's training loss), every headline metric of the last
    evaluation (the final one of a finished run), ``threads`` (the intra-op threads of its latest training
    session: one trainer per core is the fast way to share a CPU), and ``eta_s`` (seconds left, for a running run whose
    current session has trained at least one epoch), each where known."""
    rows: list[dict[str, Any]] = []
    loose = []
    for s in map(Path, sources):
        if (s / MANIFEST).is_file():
            rows += [{**r, "run_dir": str(s / r["run_id"])} for r in collect(s)]
        else:
            loose.append(s)
    if loose:
        rows += collect_sources(loose)
    return [_progress(r, Path(r["run_dir"])) for r in rows]


def _progress(row: dict[str, Any], d: Path) -> dict[str, Any]:
    out = {k: row[k] for k in _head(row) if k != "run_dir"}
    out["status"] = row["status"]
    epochs = rundir.read_metrics(d, rundir.EPOCHS)
    try:
        out["epochs"] = int(rundir.read_config(d).train.epochs)
    except (OSError, ValueError, AttributeError, ConfigError):  # a config that no longer loads: the rest still reads
        pass
    if epochs:
        out["epoch"] = int(epochs[-1]["epoch"])
        out["loss"] = float(epochs[-1]["train_loss"])
    elif row["status"] == "done" and "epochs" in out:
        out["epoch"] = out["epochs"]
    if "epoch" in row and row["status"] != "done":
        out["eval_epoch"] = row["epoch"]
    elif row["status"] == "done":
        out["eval_epoch"] = out.get("epochs", row.get("epochs"))
    if "loss" not in out and isinstance(row.get("train_loss"), (int, float)):
        out["loss"] = float(row["train_loss"])
    # a NaN (no such rows: a mix without stories) is left out, as on the progress bar
    out.update({k: row[k] for k in BAR_LABELS if isinstance(row.get(k), (int, float)) and row[k] == row[k]})
    sessions = rundir.read_metrics(d, rundir.SESSIONS)
    if sessions and isinstance(sessions[-1].get("threads"), int):
        out["threads"] = sessions[-1]["threads"]
    if row["status"] == "running" and epochs and "epochs" in out:
        eta = _eta(d, epochs[-1], out["epochs"], epochs, sessions)
        if eta is not None:
            out["eta_s"] = eta
    return out


def _head(row: dict[str, Any]) -> list[str]:
    """The keys before ``status`` in a collected row: run id, run directory and coordinates."""
    keys = list(row)
    return keys[: keys.index("status")] if "status" in keys else keys


def _eta(d: Path, last: dict[str, Any], total_epochs: int, epochs: list[dict[str, Any]],
         sessions: list[dict[str, Any]]) -> float | None:
    """Seconds left at the current session's pace (:func:`_pace`); None before its first epoch."""
    if not sessions or "started" not in sessions[-1] or not last.get("epoch"):
        return None
    try:
        started = datetime.strptime(sessions[-1]["started"], "%Y-%m-%dT%H:%M:%S%z").timestamp()
    except ValueError:
        return None
    from_step = int(sessions[-1].get("from_step", 0))
    points = [(started, from_step)] + [(float(r["time"]), int(r["step"])) for r in epochs
                                       if isinstance(r.get("time"), (int, float)) and r["step"] > from_step]
    if len(points) == 1:  # records without times (written before they had them): the file's last change
        points.append(((d / rundir.EPOCHS).stat().st_mtime, int(last["step"])))
    pace = _pace(points)
    if pace is None:
        return None
    total_steps = int(last["step"]) / int(last["epoch"]) * total_epochs
    return max(total_steps - int(last["step"]), 0) / pace


def _pace(points: list[tuple[float, int]]) -> float | None:
    """Steps per second from (time, step) points (the session's start, then each epoch's end): over the
    intervals between them, evaluations included, leaving out any that took over 2 × the median time a step
    (a pause: a stopped process, a suspended machine, or a spell of another process on the same cores; an epoch
    with an evaluation takes ~1.4 × one without on the paper config, and is kept). None where no interval
    trained a step."""
    spans = [(t1 - t0, s1 - s0) for (t0, s0), (t1, s1) in zip(points, points[1:]) if s1 > s0 and t1 > t0]
    if not spans:
        return None
    per_step = sorted(dt / ds for dt, ds in spans)
    cap = 2 * per_step[len(per_step) // 2]
    kept = [(dt, ds) for dt, ds in spans if dt / ds <= cap]
    return sum(ds for _, ds in kept) / sum(dt for dt, _ in kept)


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    if minutes == 0:  # a run about to finish is not "0m" away
        return "<1m"
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


def _cell(key: str, value: Any) -> str:
    if value is None:
        return ""
    if key == "eta_s":
        return _duration(value)
    if key == "loss":
        return f"{value:.3g}"
    if isinstance(value, float) and key in BAR_LABELS:
        return f"{value:.3f}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _column(key: str) -> Callable[[dict[str, Any]], str]:
    return lambda r: _cell(key, r.get(key))


def format_table(rows: list[dict[str, Any]]) -> str:
    """The rows as aligned text: run, coordinates (by their last dotted part where that is unambiguous),
    state, threads (where recorded), ``epoch/epochs`` trained, the epoch of the last evaluation, the loss, the
    headline metrics (the progress bar's short labels), the time left; then one line counting the states."""
    coords = list(dict.fromkeys(k for r in rows for k in _head(r) if k != "run_id"))
    short = {k: k.rsplit(".", 1)[-1] for k in coords}
    if len(set(short.values())) < len(short):
        short = {k: k for k in coords}
    metrics = [k for k in BAR_LABELS if any(k in r for r in rows)]
    columns: list[tuple[str, Callable[[dict[str, Any]], str]]] = [("run", lambda r: str(r.get("run_id", "")))]
    columns += [(short[k], _column(k)) for k in coords]
    columns += [("state", lambda r: r["status"])]
    if any("threads" in r for r in rows):
        columns.append(("threads", _column("threads")))
    columns += [
                ("epoch", lambda r: f"{r.get('epoch', '')}/{r.get('epochs', '?')}" if "epoch" in r else ""),
                ("eval at", _column("eval_epoch")), ("loss", _column("loss"))]
    columns += [(BAR_LABELS[k], _column(k)) for k in metrics]
    if any("eta_s" in r for r in rows):
        columns.append(("left", _column("eta_s")))
    cells = [[name for name, _ in columns]] + [[get(r) for _, get in columns] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(columns))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths)))
             .rstrip() for line in cells]
    counts = {s: sum(r["status"] == s for r in rows) for s in STATES}
    lines.append(f"{len(rows)} run{'s' * (len(rows) != 1)}: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
    return "\n".join(lines)
