"""``anchorlab export``: a run's records without its weights, to commit or to share.

A run directory (:mod:`anchorlab.rundir`) holds two kinds of file: its *records* (the resolved config, every
evaluation, every epoch's loss, its training sessions, the summary, and the DONE or FAILED marker), a few hundred
kB, from which every logged-metric figure, table and report section is drawn; and its *weights* (checkpoints,
the resume state, the TensorBoard events), tens of MB a run. Exporting copies the records alone, so a sweep's
outcome can be committed beside the docs that cite it, or sent, and drawn from again (``anchorlab figure
p1-gamma|p1-curves|p1-frontier``, ``anchorlab collect``); a figure that reads weights needs the run itself.

Each run lands in ``OUT/<its directory name>`` (a sweep keeps its ``sweep.json`` too), written to a temporary
name and renamed, so an interrupted export leaves the earlier copy or the new one, never a mix. A config that
replays a recorded reference file names it by its file name alone (a path on the machine that trained it means
nothing elsewhere; :func:`anchorlab.config_tools.portable`). Exporting again refreshes the copy: a run still
training exports what it has logged so far.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

from anchorlab import rundir
from anchorlab.config import ConfigError
from anchorlab.config_tools import portable
from anchorlab.sweep import MANIFEST, check_out_dir, run_dirs

RECORDS = (rundir.CONFIG, rundir.METRICS, rundir.EPOCHS, rundir.SESSIONS, rundir.SUMMARY, rundir.DONE,
           rundir.FAILED)


def export_runs(sources: Sequence[str | Path], out: str | Path, name: str | None = None) -> list[str]:
    """The records (:data:`RECORDS`) of every run of ``sources`` (run directories, sweep directories, folders of
    runs, as :func:`anchorlab.sweep.run_dirs` reads them) copied to ``out/<run directory name>``, or to
    ``out/name`` for a single run; a sweep's manifest to ``out/sweep.json``. Every source is checked before the
    first file is written. One line per run: where it went, its evaluations, done or not."""
    out = check_out_dir(out)
    runs: list[tuple[Path, Path]] = []
    for s in map(Path, sources):
        if not s.is_dir():
            raise ConfigError(f"source: {s} is not a run or sweep directory")
        found = [d for d in run_dirs([s]) if (d / rundir.CONFIG).is_file()]
        if not found:
            raise ConfigError(f"source: {s} holds no run (no {rundir.CONFIG} in it or in its folders)")
        runs += [(d, s) for d in found if d not in {r for r, _ in runs}]  # a run given twice is exported once
    if name is not None:
        if len(runs) != 1 or not name or Path(name).name != name or name in (".", ".."):
            raise ConfigError(f"--name: a folder name, for exactly one run (got {name!r} for {len(runs)} runs)")
    targets = [out / (name or d.name) for d, _ in runs]
    if len(set(targets)) != len(targets):
        dup = next(t for t in targets if targets.count(t) > 1)
        raise ConfigError(f"source: two runs would both be exported to {dup}; export them to separate --out folders")
    _check_apart(out, runs, targets)
    for d, _ in runs:  # a config that does not read: one line now, not a traceback half way
        rundir.read_json(d / rundir.CONFIG)
    out.mkdir(parents=True, exist_ok=True)
    given = list(dict.fromkeys(s for _, s in runs))
    if len(given) == 1 and (given[0] / MANIFEST).is_file() and name is None:  # one sweep: its grid comes along
        shutil.copyfile(given[0] / MANIFEST, out / MANIFEST)
    return [_export_one(d, t) for (d, _), t in zip(runs, targets, strict=True)]


def _check_apart(out: Path, runs: list[tuple[Path, Path]], targets: list[Path]) -> None:
    """``out`` neither a source nor inside one, and no target a run directory or a folder above one: an export
    writes records only, and must not write into a run or replace one (its weights would be lost)."""
    o = out.resolve()
    for p in dict.fromkeys([d.resolve() for d, _ in runs] + [s.resolve() for _, s in runs]):
        if o == p or p in o.parents:
            raise ConfigError(f"--out: {out} is {'one of the sources' if o == p else f'inside the source {p}'}; "
                              "export to a folder outside them")
    for t in targets:
        for d, _ in runs:
            if t.resolve() == d.resolve() or t.resolve() in d.resolve().parents:
                raise ConfigError(f"--out: the export would put {t} in place of the run {d} (and lose its "
                                  "weights); export to another folder")


def _export_one(run_dir: Path, target: Path) -> str:
    tmp = target.with_name(f".{target.name}.export-tmp")
    shutil.rmtree(tmp, ignore_errors=True)  # an earlier export killed part way
    tmp.mkdir()
    for f in RECORDS:
        if (run_dir / f).is_file():
            shutil.copyfile(run_dir / f, tmp / f)
    config = json.loads((tmp / rundir.CONFIG).read_text())
    rundir.write_json(tmp / rundir.CONFIG, portable(config))
    old = target.with_name(f".{target.name}.export-old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.rename(old)
    tmp.rename(target)
    shutil.rmtree(old, ignore_errors=True)
    n = len(rundir.read_metrics(target))
    state = "done" if rundir.is_done(target) else "failed" if (target / rundir.FAILED).is_file() else "unfinished"
    return f"{target}: {n} evaluations, {state}"
