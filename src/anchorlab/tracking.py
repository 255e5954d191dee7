"""Training curves for TensorBoard and, optionally, Weights & Biases, written next to ``metrics.jsonl``.

:func:`log_metrics` takes a run directory and one evaluation record (what :func:`anchorlab.rundir.append_metrics`
writes) and appends its scalars:

- **TensorBoard** (``pip install 'anchorlab[track]'``): every top-level number of the record (losses, accuracies,
  the (4,3) inferential / symmetric fractions, exact match, ``lr``, ``grad_norm`` where the record has it,
  mechanism scalars), each entry of ``group_acc`` as ``group_acc/<group>`` and the held-out pair's accuracies per
  key position as ``unseen_inferential_by_key_pos/<position>`` (and symmetric), at the record's ``step``. The
  events go to one file per run, ``<run_dir>/events.out.tfevents.anchorlab``, opened in append mode for each
  record: no open handle is kept, a resumed run continues the same file, and the file has the same name in
  every run directory. ``tensorboard --logdir runs/`` shows every run below ``runs/``. Without the
  ``tensorboard`` package nothing is written, and the process says so once on stderr.
- **Sessions** (:class:`Session`, used by the real-language trainers): the first record a training session
  sends is preceded by a ``SessionLog.START`` event at the step the session starts from (0, or the step after
  the resume point), as TensorFlow's own writers mark a restart. TensorBoard's readers then drop the events an
  earlier session wrote for the steps this one runs again, so after a resume the curves hold each step once,
  as ``metrics.jsonl`` does (whose records after the resume point are dropped too).
- **W&B** (``pip install wandb``), off unless ``ANCHORLAB_WANDB=1`` (or ``wandb=True``): one W&B run per run
  directory, id = the run directory's name, config = its ``config.json``, files under ``<run_dir>/wandb/``.
  ``WANDB_MODE=offline`` keeps it on the disk (``wandb sync`` uploads it later); ``ANCHORLAB_WANDB_PROJECT``
  names the project (default ``anchorlab``). :func:`finish` closes the open W&B runs (they are also closed at
  exit).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

EVENTS = "events.out.tfevents.anchorlab"  # TensorBoard reads any file whose name contains "tfevents"
WANDB_ENV, WANDB_PROJECT_ENV = "ANCHORLAB_WANDB", "ANCHORLAB_WANDB_PROJECT"
_SKIP = {"step", "epoch"}

_noted: set[str] = set()
_wandb_runs: dict[str, Any] = {}


def _note_once(key: str, text: str) -> None:
    if key not in _noted:
        _noted.add(key)
        print(f"anchorlab: {text}", file=sys.stderr)


# The nested records whose entries are scalars of their own: accuracy per group, the held-out pair per key position.
SPREAD = ("group_acc", "unseen_inferential_by_key_pos", "unseen_symmetric_by_key_pos")


def scalars(record: dict[str, Any]) -> dict[str, float]:
    """{tag: value} of a metrics record: its finite top-level numbers and the entries of :data:`SPREAD`'s records
    (``group_acc/<group>``, ``unseen_inferential_by_key_pos/<position>``, ...)."""
    out: dict[str, float] = {}
    for key, value in record.items():
        if key in _SKIP:
            continue
        if key in SPREAD and isinstance(value, dict):
            out.update({f"{key}/{g}": float(v) for g, v in value.items() if _is_number(v)})
        elif _is_number(value):
            out[key] = float(value)
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def tensorboard_available() -> bool:
    try:
        import tensorboard.compat.proto.event_pb2  # noqa: F401
    except ImportError:
        return False
    return True


def write_tensorboard(run_dir: str | Path, record: dict[str, Any], session_start: int | None = None) -> bool:
    """Append the record's scalars to ``<run_dir>/events.out.tfevents.anchorlab``, after a ``SessionLog.START``
    at step ``session_start`` when given (see :class:`Session`); False if TensorBoard is absent."""
    if not tensorboard_available():
        _note_once("tensorboard", "tensorboard is not installed, so runs write no TensorBoard event files "
                                  "(pip install 'anchorlab[track]')")
        return False
    from tensorboard.compat.proto.event_pb2 import Event, SessionLog
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.record_writer import RecordWriter

    path = Path(run_dir) / EVENTS
    now = time.time()
    events = [] if path.exists() else [Event(wall_time=now, file_version="brain.Event:2")]
    if session_start is not None:
        events.append(Event(wall_time=now, step=session_start, session_log=SessionLog(status=SessionLog.START)))
    values = [Summary.Value(tag=tag, simple_value=v) for tag, v in scalars(record).items()]
    events.append(Event(wall_time=now, step=int(record.get("step", 0)), summary=Summary(value=values)))
    with open(path, "ab") as f:
        writer = RecordWriter(f)
        for event in events:
            writer.write(event.SerializeToString())
        writer.flush()
    return True


def mark_restart(run_dir: str | Path, step: int) -> bool:
    """Append a ``SessionLog.START`` at ``step`` to the run's TensorBoard events: readers drop what was logged
    at ``step`` and after (a run continued from an earlier point; :mod:`anchorlab.extend`). False if the run has
    no events file or TensorBoard is absent."""
    path = Path(run_dir) / EVENTS
    if not path.exists() or not tensorboard_available():
        return False
    from tensorboard.compat.proto.event_pb2 import Event, SessionLog
    from tensorboard.summary.writer.record_writer import RecordWriter

    with open(path, "ab") as f:
        writer = RecordWriter(f)
        writer.write(Event(wall_time=time.time(), step=step,
                           session_log=SessionLog(status=SessionLog.START)).SerializeToString())
        writer.flush()
    return True


def wandb_enabled() -> bool:
    return os.environ.get(WANDB_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def write_wandb(run_dir: str | Path, record: dict[str, Any], project: str | None = None) -> bool:
    """Log the record's scalars to the W&B run of ``run_dir`` (started on first use); False if wandb is absent."""
    try:
        import wandb
    except ImportError:
        _note_once("wandb", "W&B logging is on but wandb is not installed (pip install wandb)")
        return False
    run_dir = Path(run_dir)
    key = str(run_dir.resolve())
    run = _wandb_runs.get(key)
    if run is None:
        config_path = run_dir / "config.json"
        config = json.loads(config_path.read_text()) if config_path.is_file() else {}
        run = wandb.init(project=project or os.environ.get(WANDB_PROJECT_ENV, "anchorlab"), id=run_dir.name,
                         name=run_dir.name, dir=str(run_dir), config=config, resume="allow",
                         reinit="create_new")
        _wandb_runs[key] = run
    run.log(scalars(record), step=int(record.get("step", 0)))
    return True


def finish() -> None:
    """Close every W&B run this process opened."""
    while _wandb_runs:
        _, run = _wandb_runs.popitem()
        run.finish()


def log_metrics(run_dir: str | Path, record: dict[str, Any], *, wandb: bool | None = None,
                session_start: int | None = None) -> None:
    """Send one metrics record to TensorBoard (when installed; after a session start at step ``session_start``
    when given) and to W&B (when ``wandb``, default: the ``ANCHORLAB_WANDB`` environment variable, is true)."""
    write_tensorboard(run_dir, record, session_start)
    if wandb_enabled() if wandb is None else wandb:
        write_wandb(run_dir, record)


class Session:
    """The tracking of one training session of a run (one call of a trainer): :meth:`log` sends each
    evaluation record (:func:`log_metrics`); the first one is preceded by the session's start, at step 0, or
    after :meth:`resume`, at the step after the resume point. TensorBoard then drops what an earlier session
    of the run wrote for the steps this one runs again. (W&B, which does not take a step back, keeps the
    first values it got for them.)"""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.start: int | None = 0

    def resume(self, step: int) -> None:
        """The session continues a run whose state was saved at ``step``."""
        self.start = step + 1

    def log(self, record: dict[str, Any]) -> None:
        log_metrics(self.run_dir, record, session_start=self.start)
        self.start = None
