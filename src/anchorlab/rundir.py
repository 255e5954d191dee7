"""The on-disk run contract that connects training to everything downstream.

::

    <run_dir>/
      config.json                      fully resolved config (written first): a RunConfig or an LMRunConfig
      metrics.jsonl                    one JSON object per evaluation: {"step", "epoch", "lr", ...}
      epochs.jsonl                     one per epoch: {"epoch", "step", "train_loss"} (the epoch's mean batch loss)
      sessions.jsonl                   one per training session: {"from_step", "started", environment...}
      checkpoints/step_0000000.safetensors   model weights at kept steps (step 0 always)
      checkpoints/resume.safetensors   model + AdamW state at the last epoch boundary (for resuming)
      summary.json                     final and best metrics, parameter count, timing
      DONE                             written last: the run is complete
      FAILED                           the reason a run stopped (divergence, an error); removed when it resumes
      LOCK                             {"pid", "host", "boot", "started"} of the one process writing it

Every file is written to a temporary name and renamed, so a killed run never leaves a half file (a resume
removes the temporary files such a kill leaves). No checkpoint or resume state is ever written with a
non-finite weight: the run stops as diverged (:class:`Diverged`) and keeps its last finite resume point.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import operator
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from anchorlab import kinds
from anchorlab.config import ConfigError
from anchorlab.config_tools import execution_fields, portable, without_execution

CONFIG, METRICS, SUMMARY, DONE, CKPT_DIR = "config.json", "metrics.jsonl", "summary.json", "DONE", "checkpoints"
EPOCHS = "epochs.jsonl"
SESSIONS = "sessions.jsonl"
RESUME = "resume.safetensors"
FAILED, LOCK = "FAILED", "LOCK"
LOCK_HEARTBEAT_S, LOCK_STALE_S = 30.0, 600.0  # a holder touches its LOCK this often; another host's goes stale after
# How long writer_lock waits for another host's live lock to go stale before refusing: 0 here; a Ray worker sets
# it past LOCK_STALE_S, so that a task retried after its node was lost outwaits the dead node's lock.
OTHER_HOST_WAIT_S = 0.0


class RunFailed(RuntimeError):
    """A run could not finish (it diverged, or its worker died); the CLI prints it on one line, exit 1."""


class Diverged(RunFailed):
    """A loss or a weight became nan or inf; the run directory keeps its last finite resume point."""


class RunLocked(ConfigError):
    """Another live process is writing the run directory."""


def check_finite_loss(run_dir: str | Path, step: int, loss: float | None) -> None:
    """Raise :class:`Diverged` (and mark the run failed) if the logged ``loss`` is nan or inf."""
    if loss is not None and not math.isfinite(loss):
        diverged(run_dir, step, f"loss {loss}")


def check_finite_weights(run_dir: str | Path, step: int, tensors: dict[str, torch.Tensor]) -> None:
    """Raise :class:`Diverged` (and mark the run failed) if any of ``tensors`` holds a nan or inf."""
    for name, t in tensors.items():
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            diverged(run_dir, step, f"non-finite weights in {name}")


def diverged(run_dir: str | Path, step: int, what: str) -> None:
    msg = f"run {run_dir} diverged at step {step} ({what}); its last finite resume point is kept"
    mark_failed(run_dir, msg)
    raise Diverged(msg)


def mark_failed(run_dir: str | Path, reason: str) -> None:
    """Write ``FAILED`` (the reason) into an opened run directory; a resume removes it."""
    if (Path(run_dir) / CONFIG).exists():
        write_atomic(Path(run_dir) / FAILED, reason.rstrip() + "\n")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _boot_id() -> str:
    """This machine's boot (Linux: ``/proc/sys/kernel/random/boot_id``, new at every boot); "" where unknown."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _start_time(pid: int) -> str:
    """When process ``pid`` started, in clock ticks since boot (``/proc/PID/stat`` field 22); "" where unknown.
    With the boot it tells a process from a later one that was given the same pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat[stat.rindex(")") + 2:].split()[19]  # fields after the command name start at field 3


def _holder_alive(holder: dict[str, Any], host: str, age_s: float = 0.0) -> bool:
    """Whether the process a LOCK names may still be writing. On another host (a shared file system: a Ray
    task retried on another node) its pid cannot be checked, so the lock's heartbeat decides: its holder
    touches it every :data:`LOCK_HEARTBEAT_S`, and one untouched for ``age_s`` >= :data:`LOCK_STALE_S` is
    stale. On this host: if its pid runs and, where the lock records them, in this boot and since the same
    time (a machine that rebooted, or a pid given to a later process, leaves the lock stale)."""
    pid = holder.get("pid")
    if not isinstance(pid, int):
        return False
    if holder.get("host") != host:
        return age_s < LOCK_STALE_S
    if holder.get("boot") and _boot_id() and holder["boot"] != _boot_id():
        return False
    if not _pid_alive(pid):
        return False
    return not (holder.get("started") and _start_time(pid) and holder["started"] != _start_time(pid))


def being_written(run_dir: str | Path) -> bool:
    """True while a live process holds ``run_dir``'s LOCK (a trainer on it now); a LOCK left by a process that
    has ended, or none, is False (:func:`_holder_alive` decides, as :func:`writer_lock` does)."""
    path = Path(run_dir) / LOCK
    if not path.exists():
        return False
    holder, age = _read_lock(path)
    return _holder_alive(holder, socket.gethostname(), age)


def _me() -> dict[str, Any]:
    return {"pid": os.getpid(), "host": socket.gethostname(), "boot": _boot_id(), "started": _start_time(os.getpid())}


def _read_lock(path: Path) -> tuple[dict[str, Any], float]:
    """A LOCK's holder and its age in seconds since last touched ({} and 0 where it cannot be read)."""
    try:
        return json.loads(path.read_text() or "{}"), time.time() - path.stat().st_mtime
    except (OSError, ValueError):
        return {}, 0.0


def _heartbeat(path: Path, stop: threading.Event) -> None:
    """Touch the held ``path`` every :data:`LOCK_HEARTBEAT_S` until ``stop`` is set (a daemon thread)."""
    while not stop.wait(LOCK_HEARTBEAT_S):
        with contextlib.suppress(OSError):
            os.utime(path)


def check_lock_held(run_dir: Path) -> None:
    """Stop (:class:`RunLocked`) if ``run_dir``'s LOCK now names another process: one on another host took the
    directory over after this one's heartbeat stopped (it was paused past :data:`LOCK_STALE_S`). A directory
    written without a lock (library calls outside :func:`writer_lock`) passes."""
    holder, _ = _read_lock(Path(run_dir) / LOCK)
    me = _me()
    if holder and any(holder.get(k) != me[k] for k in ("pid", "host", "started")):
        raise RunLocked(f"{run_dir}: another process (pid {holder.get('pid')} on {holder.get('host')}) took over this "
                        "run directory while this one was not heard from; this one stops without writing")


@contextlib.contextmanager
def writer_lock(run_dir: str | Path) -> Iterator[None]:
    """Hold ``run_dir/LOCK`` (this process's pid and host) while the body writes the run directory.

    A lock held by a live process is a :class:`RunLocked` error naming it; one left by a process that is
    gone (same host and its pid not running, or running since another time or boot; another host and no
    heartbeat for :data:`LOCK_STALE_S`: :func:`_holder_alive`; or an empty file) is taken over with a warning
    on stderr. While held, a daemon thread touches the lock every :data:`LOCK_HEARTBEAT_S`. Taking the
    lock also removes the temporary files (``*.tmp``) a killed writer may have left; an exception in the
    body (other than a refusal, :class:`ConfigError`) marks the run ``FAILED`` with its reason."""
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"--out: {run_dir} is a file, not a run directory")
    run_dir.mkdir(parents=True, exist_ok=True)
    path, host = run_dir / LOCK, socket.gethostname()
    deadline = time.monotonic() + OTHER_HOST_WAIT_S
    for _ in range(3):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            holder, age = _read_lock(path)
            while holder.get("host") != host and _holder_alive(holder, host, age) and time.monotonic() < deadline:
                time.sleep(min(LOCK_HEARTBEAT_S, max(deadline - time.monotonic(), 0.0)))
                holder, age = _read_lock(path)  # still the same holder, still silent?
            pid, where = holder.get("pid"), holder.get("host")
            if _holder_alive(holder, host, age):
                raise RunLocked(f"{run_dir}: another process (pid {pid} on {where}) is writing this run directory; "
                                f"wait for it, or delete {path} if that process is gone") from None
            why = "no longer running" if where == host else f"on {where}, not heard from for {age / 60:.0f} min"
            print(f"warning: {run_dir}: taking over the stale lock of pid {pid} ({why})", file=sys.stderr, flush=True)
            path.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w") as f:
            json.dump(_me(), f)
        break
    else:
        raise RunLocked(f"{run_dir}: could not take {path}")
    stop = threading.Event()
    threading.Thread(target=_heartbeat, args=(path, stop), daemon=True, name=f"lock-heartbeat {run_dir}").start()
    try:
        for debris in [*run_dir.glob(".*.tmp"), *(run_dir / CKPT_DIR).glob(".*.tmp*")]:
            debris.unlink(missing_ok=True)
        yield
    except ConfigError:  # refused (bad input, another config): the directory stays as it was
        raise
    except Exception as e:  # the run stopped: say why in the directory (a resume clears it)
        if not (run_dir / FAILED).exists():
            mark_failed(run_dir, f"{type(e).__name__}: {e}")
        raise
    finally:
        stop.set()
        with contextlib.suppress(RunLocked):  # the lock another process took over is its own now
            check_lock_held(run_dir)
            path.unlink(missing_ok=True)


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_json(path: Path, obj: Any) -> None:
    write_atomic(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def read_json(path: Path) -> Any:
    """The JSON file's content; a file that is not valid JSON is a :class:`ConfigError` naming it."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not a valid JSON file ({e}); move it away or remove it") from None


def read_config(run_dir: str | Path) -> Any:
    """The run's config, of whichever kind its ``config.json`` holds (:mod:`anchorlab.kinds`); a file
    written under older field names reads as today's."""
    path = Path(run_dir) / CONFIG
    data = read_json(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object (a run config)")
    try:
        return kinds.config_from_data(data)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


def is_done(run_dir: Path) -> bool:
    return (Path(run_dir) / DONE).exists()


def open_run(run_dir: Path, cfg: Any) -> str:
    """Prepare ``run_dir`` for ``cfg``: returns "new", "resume" or "done".

    An existing directory must hold the same resolved config, execution fields (``train.threads``) aside;
    otherwise the first differing field is named. Its ``config.json`` is left as it was written.
    """
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"--out: {run_dir} is a file, not a run directory")
    cfg_path = run_dir / CONFIG
    if cfg_path.exists():
        stored = read_json(cfg_path)
        if not isinstance(stored, dict):
            raise ConfigError(f"{cfg_path}: expected a JSON object (a run config)")
        if not same_run(stored, cfg):
            diff = first_difference(identity(as_today(stored, cfg), cfg), identity(cfg.to_dict(), cfg))
            raise ConfigError(f"{diff}: {run_dir} holds a run with a different config; use another --out")
        return "done" if is_done(run_dir) else "resume"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / CKPT_DIR).mkdir(exist_ok=True)
    write_json(cfg_path, cfg.to_dict())
    return "new"


def identity(config: dict[str, Any], cfg: Any) -> dict[str, Any]:
    """``config`` (plain data of ``cfg``'s kind) without its execution fields: what decides the numbers."""
    return portable(without_execution(config, execution_fields(type(cfg))))


def same_run(stored: dict[str, Any], cfg: Any) -> bool:
    """Whether a stored ``config.json`` describes the run ``cfg`` describes (older field names and fields
    added since read as today's; execution fields not compared)."""
    return identity(as_today(stored, cfg), cfg) == identity(cfg.to_dict(), cfg)


def run_locked(run_dir: Path, cfg: Any, body: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """One run's writing, as every trainer does it: take the writer lock, open ``run_dir`` for ``cfg``; a finished
    run returns its summary, otherwise ``body(status)`` ("new" or "resume") trains and returns the summary."""
    with writer_lock(run_dir):
        status = open_run(run_dir, cfg)
        if status == "done":
            summary: dict[str, Any] = read_json(run_dir / SUMMARY)
            return summary
        start_writing(run_dir, status)
        return body(status)


def start_writing(run_dir: Path, status: str) -> None:
    """A run (status "new" or "resume") starts writing: an earlier ``FAILED`` mark no longer holds."""
    if status != "done":
        (Path(run_dir) / FAILED).unlink(missing_ok=True)


def as_today(stored: dict[str, Any], cfg: Any) -> dict[str, Any]:
    """A stored ``config.json`` as ``cfg``'s kind writes it today: renamed fields under their new names
    (:attr:`anchorlab.kinds.RunKind.upgrade`), fields added since set to their defaults. A run directory
    written before a rename or an added field compares equal to the config that would write it today."""
    return with_added_defaults(kinds.kind_of(cfg).upgraded(stored), cfg)


def with_added_defaults(stored: dict[str, Any], cfg: Any) -> dict[str, Any]:
    """``stored`` (a config.json) with the fields added to ``cfg``'s dataclasses since it was written set to
    their defaults: a run made before a field existed behaved as its default, so it still matches."""
    out = dict(stored)
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if f.name not in out:
            if f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            else:
                continue
            plain = dataclasses.asdict(default) if dataclasses.is_dataclass(default) else default  # type: ignore[arg-type]
            out[f.name] = json.loads(json.dumps(plain))
        elif dataclasses.is_dataclass(value) and isinstance(out[f.name], dict):
            out[f.name] = with_added_defaults(out[f.name], value)
    return out


def first_difference(a: Any, b: Any, prefix: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                return first_difference(a.get(k), b.get(k), f"{prefix}{k}.")
    return prefix.rstrip(".") or "config"


def append_metrics(run_dir: Path, record: dict[str, Any], name: str = METRICS) -> None:
    with open(Path(run_dir) / name, "a") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())


# Fields of a record that say when it was written, not what was computed: records of an interrupted and resumed
# run, or of a run trained further (``--from``), equal the uninterrupted run's without them (:func:`results`).
WALL_FIELDS = ("time",)


def append_epoch(run_dir: Path, epoch: int, step: int, train_loss: float) -> None:
    """One line of ``epochs.jsonl``: the epoch's mean training loss, at the step it ended, and ``time`` (Unix
    seconds, when it was written: what ``anchorlab status`` reads the pace from)."""
    append_metrics(run_dir, {"epoch": epoch, "step": step, "train_loss": train_loss, "time": round(time.time(), 3)},
                   EPOCHS)


def results(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``records`` without their :data:`WALL_FIELDS`: what two runs that computed the same numbers share."""
    return [{k: v for k, v in r.items() if k not in WALL_FIELDS} for r in records]


def read_metrics(run_dir: Path, name: str = METRICS) -> list[dict[str, Any]]:
    path = Path(run_dir) / name
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def truncate_metrics(run_dir: Path, max_step: int) -> None:
    """Keep only the evaluations at or before ``max_step`` (used when resuming)."""
    for name in (METRICS, EPOCHS):
        if not (Path(run_dir) / name).exists():
            continue
        kept = [r for r in read_metrics(run_dir, name) if r["step"] <= max_step]
        write_atomic(Path(run_dir) / name, "".join(json.dumps(r) + "\n" for r in kept))


def checkpoint_path(run_dir: Path, step: int) -> Path:
    return Path(run_dir) / CKPT_DIR / f"step_{step:07d}.safetensors"


def checkpoint_steps(run_dir: Path) -> list[int]:
    """Steps with a kept weight checkpoint, ascending."""
    d = Path(run_dir) / CKPT_DIR
    return sorted(int(m.group(1)) for p in d.glob("step_*.safetensors")
                  if (m := re.fullmatch(r"step_(\d+)\.safetensors", p.name)))


def _save(tensors: dict[str, torch.Tensor], path: Path, meta: dict[str, str]) -> None:
    """Write ``tensors`` atomically; a non-finite one raises :class:`Diverged` and leaves ``path`` as it was."""
    run_dir = path.parent.parent if path.parent.name == CKPT_DIR else path.parent
    check_finite_weights(run_dir, int(meta.get("step", -1)), tensors)
    tmp = path.with_name(f".{path.name}.tmp")
    save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, str(tmp), metadata=meta)
    os.replace(tmp, path)


def save_checkpoint(run_dir: Path, model: nn.Module, step: int, epoch: int) -> Path:
    path = checkpoint_path(run_dir, step)
    _save(dict(model.state_dict()), path, {"step": str(step), "epoch": str(epoch)})
    return path


def load_checkpoint(run_dir: Path, step: int | None = None) -> dict[str, torch.Tensor]:
    """Model weights at ``step`` (default: the last kept step)."""
    steps = checkpoint_steps(run_dir)
    if not steps:
        raise FileNotFoundError(f"{run_dir} has no checkpoints")
    if step is None:
        step = steps[-1]
    try:
        step = operator.index(step)  # an int (numpy ints too); "329" matched nothing, 329.0 broke the file name
    except TypeError:
        raise TypeError(f"step: expected an integer (one of the kept steps {steps}), got {step!r}") from None
    if step not in steps:
        raise FileNotFoundError(f"{run_dir} has no checkpoint at step {step}; kept steps: {steps}")
    return load_file(str(checkpoint_path(run_dir, step)))


def save_resume(run_dir: Path, model: nn.Module, optimizer: torch.optim.Optimizer, step: int, epoch: int,
                extra: dict[str, torch.Tensor] | None = None) -> None:
    """Model and optimizer state at an epoch boundary, plus a trainer's ``extra`` tensors (e.g. running loss
    sums), all in one file written atomically, so they always belong to the same step. Batch order is derived
    from (train_seed, epoch), so no RNG state is needed to continue exactly."""
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    tensors.update({f"extra.{k}": v.detach().cpu() for k, v in (extra or {}).items()})
    check_lock_held(run_dir)  # once an epoch: a writer that lost its directory stops before writing more
    names = {id(p): n for n, p in model.named_parameters()}
    for p, state in optimizer.state.items():
        for k, v in state.items():
            tensors[f"optim.{names[id(p)]}.{k}"] = v if torch.is_tensor(v) else torch.tensor(v)
    _save(tensors, Path(run_dir) / CKPT_DIR / RESUME, {"step": str(step), "epoch": str(epoch)})


def resume_point(run_dir: Path) -> tuple[int, int] | None:
    """(step, epoch) of the run's resume state, read from its file's header only; None if there is none."""
    from safetensors import safe_open

    path = Path(run_dir) / CKPT_DIR / RESUME
    if not path.exists():
        return None
    with safe_open(str(path), "pt") as f:
        meta = f.metadata()
    return int(meta["step"]), int(meta["epoch"])


def load_resume(run_dir: Path, model: nn.Module, optimizer: torch.optim.Optimizer) -> tuple[int, int] | None:
    """Restore model and optimizer from the resume state; returns (step, epoch) or None if there is none."""
    point = resume_point(run_dir)
    if point is None:
        return None
    tensors = load_file(str(Path(run_dir) / CKPT_DIR / RESUME))
    device = next(model.parameters()).device
    model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")})
    by_name = dict(model.named_parameters())
    for key, v in tensors.items():
        if key.startswith("optim."):
            pname, field = key[6:].rsplit(".", 1)
            p = by_name[pname]
            optimizer.state[p][field] = v if field == "step" else v.to(device)
    return point


def resume_extra(run_dir: Path, name: str) -> torch.Tensor | None:
    """The ``extra`` tensor ``name`` saved with the resume state (:func:`save_resume`), or None."""
    from safetensors import safe_open

    path = Path(run_dir) / CKPT_DIR / RESUME
    if not path.exists():
        return None
    with safe_open(str(path), "pt") as f:
        return f.get_tensor(f"extra.{name}") if f"extra.{name}" in f.keys() else None


def start_or_resume(run_dir: Path, model: nn.Module, optimizer: torch.optim.Optimizer, status: str,
                    first_eval: Callable[[], dict[str, Any]]) -> tuple[int, int, dict[str, Any], bool]:
    """Begin a run opened with ``status`` (:func:`open_run`): resume from the last epoch boundary (metrics
    after it dropped), or start fresh (step-0 checkpoint, then ``first_eval()`` logs the step-0 record).
    Returns (step, start epoch, last metrics record, resumed)."""
    resumed = load_resume(run_dir, model, optimizer) if status == "resume" else None
    if resumed is None:
        start_fresh(run_dir)
        save_checkpoint(run_dir, model, 0, 0)
        return 0, 0, first_eval(), False
    step, epoch = resumed
    truncate_metrics(run_dir, step)
    return step, epoch, read_metrics(run_dir)[-1], True


def start_fresh(run_dir: Path) -> None:
    """Remove the logs of an earlier start that kept no resume point: a run starting at step 0 writes them anew."""
    for name in (METRICS, EPOCHS, SESSIONS):
        (Path(run_dir) / name).unlink(missing_ok=True)


def trained_on(run_dir: Path) -> str:
    """Where a run trained, from its ``sessions.jsonl``: "CPU", or the GPU of its last session on one ("H200"),
    with the size of its batched group where it had partners ("H200, group of 6"); "" for a run with no sessions
    logged. Runs of one config that trained in different places round differently: this tells them apart."""
    sessions = read_metrics(run_dir, SESSIONS)
    gpu = next((r for r in reversed(sessions) if r.get("device") == "cuda"), None)
    if gpu is None:
        return "CPU" if sessions else ""
    group = len(gpu.get("batch_group") or [])
    name = str(gpu.get("device_name") or "GPU").removeprefix("NVIDIA ")
    return name + (f", group of {group}" if group > 1 else "")


def record_session(run_dir: Path, step: int, environment: dict[str, Any]) -> list[dict[str, Any]]:
    """Log that a training session starts at ``step`` in ``environment`` (device, threads, subnormals, batch
    group: whatever rounds the numbers) and return every session the run's kept steps came from.

    A run resumed across sessions can train its parts in different settings (another machine, another batched
    group, subnormals kept or flushed), and its summary keeps them all (``sessions``). A session that
    started at or after this step trained nothing that was kept (the run resumes from before it): dropped."""
    kept = [r for r in read_metrics(run_dir, SESSIONS) if r.get("from_step", 0) < step]
    rec = {"from_step": step, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **environment}
    write_atomic(Path(run_dir) / SESSIONS, "".join(json.dumps(r) + "\n" for r in [*kept, rec]))
    return [*kept, rec]
