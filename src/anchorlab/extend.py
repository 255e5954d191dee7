"""Train an anchor-task run further: a new run directory seeded from an existing run's files, for more epochs or
with its learning rate changed from where it stopped (a cooldown, a shorter cosine).

Sound because nothing an anchor-task run computes depends on ``train.epochs`` except where it stops and the
learning rate: the batch order (:func:`anchorlab.train.batch_order`, a function of seed and epoch) is the same for
every length, and without a cooldown so is the rate (:func:`anchorlab.schedule.lr_at`: warm-up over
``train.warmup_epochs``, cosine over ``train.cosine_epochs``). So the first E epochs of an N-epoch run *are* the
E-epoch run wherever the two schedules give every one of those E epochs' steps the same rate, which is checked
here step by step. A run seeded from an E-epoch run's metrics, checkpoints and resume state therefore ends
exactly as the new config trained from step 0 would (tested), in a fraction of the time:

    anchorlab train --from runs/p1_smaller_init/f288beb7d368 --set train.epochs=36
    anchorlab train --from runs/p1_smaller_init/2bc8b04d9809 --set train.epochs=33 --set train.cooldown_epochs=6

What the E-epoch run wrote only because E was its last epoch (an evaluation or a kept checkpoint off the cadence
of ``train.eval_every`` / ``train.checkpoint_every``) is left out of the copy; its TensorBoard events get a
restart mark there, so TensorBoard drops that evaluation too.

``train.checkpoint_every`` and ``train.eval_every`` may change too (they decide which checkpoints are kept and
which epochs are evaluated, never a number: an evaluation reads its step's weights alone), where the source kept
or evaluated every epoch the new cadence needs up to its end, e.g. a multiple of its own; the copy keeps those
only. A 210-epoch continuation of a run that kept every epoch need not keep 171 more (11 MB each at P1's size):

    anchorlab train --from runs/g12_s1 --set train.epochs=210 --set train.checkpoint_every=3

The seeded directory is complete before it appears (built under a temporary name, then renamed); from then on
it is an ordinary unfinished run, so the same command again resumes it. The source is only read.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from anchorlab import rundir, tracking
from anchorlab.config import ConfigError, RunConfig
from anchorlab.kinds import with_overrides
from anchorlab.schedule import lr_at

# The fields a run seeded from another may change: its length and its learning rate's shape. A change passes
# only where the rate of every step the source trained stays the same (:func:`longer_config`).
SCHEDULE_FIELDS = ("epochs", "cooldown_epochs", "cosine_epochs", "lr_min", "schedule")
# What else it may change: which checkpoints it keeps and which epochs it evaluates, where the source kept or
# evaluated every one the new cadence needs (an evaluation reads the weights of its step alone, so the kept ones
# are the new run's).
KEPT_FIELDS = ("checkpoint_every", "eval_every")


def longer_config(source: str | Path, overrides: list[str] | tuple[str, ...]) -> RunConfig:
    """The config of the anchor-task run in ``source`` with ``overrides`` applied: the same run trained further.
    Anything but :data:`SCHEDULE_FIELDS` and :data:`KEPT_FIELDS` of ``train`` (and execution fields such as
    ``train.threads``) changed, a schedule that changes the rate of a step the source trained, a checkpoint
    cadence that needs one the source did not keep, no epoch past the source's, a source that is not an
    anchor-task run or that stopped early: a :class:`ConfigError`."""
    source = Path(source)
    if not (source / rundir.CONFIG).is_file():
        raise ConfigError(f"--from: {source} is not a run directory (no {rundir.CONFIG})")
    old = rundir.read_config(source)
    if not isinstance(old, RunConfig):
        raise ConfigError(f"--from: {source} is not an anchor-task run (only those can be extended: a language "
                          f"run's schedule depends on its length)")
    cfg: RunConfig = with_overrides(old, overrides)
    same_schedule = cfg.replace(**{f"train.{f}": getattr(old.train, f) for f in SCHEDULE_FIELDS + KEPT_FIELDS})
    if not rundir.same_run(old.to_dict(), same_schedule):
        diff = rundir.first_difference(rundir.identity(old.to_dict(), old),
                                       rundir.identity(same_schedule.to_dict(), old))
        raise ConfigError(f"{diff}: differs from --from {source}; a run trained further may change only "
                          f"train.{', train.'.join(SCHEDULE_FIELDS + KEPT_FIELDS)}")
    if cfg.train.epochs <= old.train.epochs:
        raise ConfigError(f"train.epochs: {cfg.train.epochs} must exceed the {old.train.epochs} epochs of "
                          f"--from {source}")
    trained = rundir.read_metrics(source, rundir.EPOCHS)
    last_epoch = trained[-1]["epoch"] if trained else 0
    if rundir.is_done(source) and last_epoch < old.train.epochs:
        raise ConfigError(f"--from: {source} stopped early at epoch {last_epoch} (train.early_stop_loss "
                          f"{old.train.early_stop_loss:g}); a longer run stops there too")
    point = rundir.resume_point(source)
    if point is None:
        raise ConfigError(f"--from: {source} has no resume state ({rundir.CKPT_DIR}/{rundir.RESUME}) to continue from")
    step, epoch = point
    if step > 0:
        per_epoch = step // epoch
        changed = next((t for t in range(step) if lr_at(t, cfg.train, per_epoch) != lr_at(t, old.train, per_epoch)),
                       None)
        if changed is not None:
            raise ConfigError(f"train: this schedule changes the learning rate of step {changed} (epoch "
                              f"{changed // per_epoch}), which --from {source} has trained; a run trained further "
                              f"may change the rate only from step {step} (epoch {epoch}) on")
        every, kept = cfg.train.checkpoint_every, set(rundir.checkpoint_steps(source))
        missing = next((e for e in range(every, epoch + 1, every) if e * per_epoch not in kept), None)
        if missing is not None:
            raise ConfigError(f"train.checkpoint_every: {every} keeps epoch {missing}, which --from {source} did not "
                              f"keep (it kept every {old.train.checkpoint_every}); use a multiple of "
                              f"{old.train.checkpoint_every}")
        every, evaluated = cfg.train.eval_every, {r["epoch"] for r in rundir.read_metrics(source)}
        missing = next((e for e in range(every, epoch + 1, every) if e not in evaluated), None)
        if missing is not None:
            raise ConfigError(f"train.eval_every: {every} evaluates epoch {missing}, which --from {source} did not "
                              f"evaluate (it evaluated every {old.train.eval_every}); use a multiple of "
                              f"{old.train.eval_every}")
    return cfg


def seed_longer_run(source: str | Path, cfg: RunConfig, out: str | Path) -> bool:
    """Make ``out`` the unfinished ``cfg`` run that continues ``source`` (checked by :func:`longer_config`).
    Returns False, touching nothing, where ``out`` already holds a run (a second call: training resumes it)."""
    source, out = Path(source), Path(out)
    if (out / rundir.CONFIG).exists():
        return False
    if out.exists() and any(out.iterdir()):
        raise ConfigError(f"--out: {out} is not empty and holds no run")
    step, epoch = rundir.resume_point(source)  # type: ignore[misc]  # checked by longer_config
    tc = cfg.train
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        (tmp / rundir.CKPT_DIR).mkdir()
        rundir.write_json(tmp / rundir.CONFIG, cfg.to_dict())
        # the evaluations this run's cadence makes (step 0 and every eval_every epochs): the source's last epoch
        # is left out where the source evaluated it only because it was last, and so is every evaluation of a
        # denser cadence than this run's
        evaluations = [r for r in rundir.read_metrics(source) if r["step"] <= step]
        kept = [r for r in evaluations if r["epoch"] % tc.eval_every == 0]
        dropped = [r["epoch"] for r in evaluations if r["epoch"] % tc.eval_every]
        rundir.write_atomic(tmp / rundir.METRICS, "".join(json.dumps(r) + "\n" for r in kept))
        epochs = [r for r in rundir.read_metrics(source, rundir.EPOCHS) if r["step"] <= step]
        rundir.write_atomic(tmp / rundir.EPOCHS, "".join(json.dumps(r) + "\n" for r in epochs))
        sessions = rundir.read_metrics(source, rundir.SESSIONS)  # where the copied steps trained
        rundir.write_atomic(tmp / rundir.SESSIONS, "".join(json.dumps(r) + "\n" for r in sessions))
        per_epoch = step // epoch if epoch else 1
        for s in rundir.checkpoint_steps(source):  # step 0 and the epochs this run's cadence keeps
            if s == 0 or (s <= step and (s // per_epoch) % tc.checkpoint_every == 0):
                shutil.copy2(rundir.checkpoint_path(source, s), rundir.checkpoint_path(tmp, s))
        shutil.copy2(source / rundir.CKPT_DIR / rundir.RESUME, tmp / rundir.CKPT_DIR / rundir.RESUME)
        if (source / tracking.EVENTS).exists():
            if dropped in ([], [epoch]):  # at most the last one left out: TensorBoard drops it
                shutil.copy2(source / tracking.EVENTS, tmp / tracking.EVENTS)
                if dropped:
                    tracking.mark_restart(tmp, step)
            else:  # evaluations left out on the way: the curves written anew from the kept ones
                for r in kept:
                    tracking.write_tensorboard(tmp, r)
        if out.exists():
            out.rmdir()  # empty, checked above
        tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return True
