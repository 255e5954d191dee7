"""Sweeps as data: a base run plus axes, expanded to run configs named by the hash of their config.

A sweep file (TOML)::

    name = "demo"
    base = "p1/cpu_base.toml"        # a run config, relative to this file
    [set]                            # optional dotted overrides of the base
    "train.epochs" = 9
    [axes]                           # the grid: every combination is one run
    "init.gamma" = [0.5, 0.8, 1.2]
    "seed" = [1, 2, 3]               # "seed" sets data_seed, init_seed and train_seed together
    # tied axes: comma-separated keys move together (one value per key in each entry), not as a product
    "init.gamma, train.weight_decay" = [[0.5, 0.01], [0.7, 0.1]]

The base decides the kind of run (:func:`anchorlab.kinds.kind_of_data`): a config with a ``[data]`` table is
a real-language run (:class:`~anchorlab.text.config.LMRunConfig`, trained by ``anchorlab lm``), any other an
anchor-task run (:class:`~anchorlab.config.RunConfig`). Its run directory holds ``sweep.json`` (the resolved spec and
{run_id: grid coordinates}) and one directory per run, named by the config's ``run_id()``; collection and
plots read that manifest and each run's ``config.json``, so the grid is never typed twice.
"""

from __future__ import annotations

import collections
import copy
import itertools
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anchorlab import kinds, rundir
from anchorlab.config import ConfigError, merge, parse_override, parse_toml_file, read_toml, set_dotted
from anchorlab.config_tools import SEED_KEYS, varied_fields

MANIFEST = "sweep.json"


def axis_keys(axis: str) -> list[str]:
    """The config keys an axis sets: "init.gamma" -> one; "init.gamma, train.weight_decay" -> tied keys."""
    return [k.strip() for k in axis.split(",")]


@dataclass(frozen=True)
class SweepSpec:
    name: str
    base: dict[str, Any]  # resolved base run config (plain data)
    axes: dict[str, list[Any]] = field(default_factory=dict)
    # part of the grid (`anchorlab sweep --only`, :func:`narrow`): axis key -> the values kept; {} = every point
    only: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        """"lm" or "anchor", from the base config (:func:`anchorlab.kinds.kind_of_data`)."""
        return kinds.kind_of_data(self.base).name

    def points(self) -> list[dict[str, Any]]:
        """Every grid point as {key: value}, in row-major order of the axes as written; the keys of a tied
        axis ("a, b" = [[a1, b1], [a2, b2]]) take their values together."""
        out = []
        for combo in itertools.product(*self.axes.values()):
            point: dict[str, Any] = {}
            for axis, value in zip(self.axes, combo):
                keys = axis_keys(axis)
                point.update(zip(keys, value) if len(keys) > 1 else [(axis, value)])
            if all(point[k] in kept for k, kept in self.only.items()):
                out.append(point)
        return out

    def configs(self) -> list[tuple[dict[str, Any], Any]]:
        """(grid point, validated run config) for every point: ``RunConfig`` or, for kind "lm",
        ``LMRunConfig``."""
        kind = kinds.kind_of_data(self.base)
        base, build = kind.get("with_defaults")(self.base), kind.get("from_dict")
        out = []
        for point in self.points():
            d = copy.deepcopy(base)
            for key, value in point.items():
                set_dotted(d, key, value, where="axes.")  # "seed" sets all three seeds
            out.append((point, build(d)))
        return out


def load_sweep(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> SweepSpec:
    """Read a sweep file; ``overrides`` ("key=value", as ``--set``) apply to its base after its own ``[set]``.
    Errors name the offending field."""
    path = Path(path)
    data = parse_toml_file(path, "sweep")
    unknown = sorted(set(data) - {"name", "base", "set", "axes"})
    if unknown:
        raise ConfigError(f"{path}: {unknown[0]}: unknown sweep key; allowed keys are name, base, set, axes")
    for key, tp, what in (("name", str, "a string"), ("base", str, "the path of a run config (TOML)"),
                          ("set", dict, "a table of dotted overrides"), ("axes", dict, "a table of axes")):
        if key in data and not isinstance(data[key], tp):
            raise ConfigError(f"{path}: {key}: expected {what}, got {data[key]!r}")
    name = data.get("name", "x")
    if not name.strip() or "/" in name or name in (".", ".."):
        raise ConfigError(f"{path}: name: expected a non-empty name without '/', got {data['name']!r}")
    base = read_toml(path.parent / data["base"], field_name=f"{path}: base") if "base" in data else {}
    axes = data.get("axes", {})
    swept = {k for axis in axes for k in axis_keys(axis)}
    if "seed" in swept:  # a seed axis sets all three seeds
        swept |= set(SEED_KEYS)
    if swept & set(SEED_KEYS):  # --set seed=N would set a swept seed
        swept.add("seed")
    for where, key, value in [*(("set.", k, v) for k, v in data.get("set", {}).items()),
                              *(("--set ", *parse_override(o)) for o in overrides)]:
        if not key.strip() or any(not part for part in key.split(".")):
            raise ConfigError(f"{path}: {where}{key}: expected a dotted config key such as train.lr")
        if key in swept and where == "--set ":  # the axis sets it again for every run: the override would be lost
            raise ConfigError(f"{where}{key}: {key} is an axis of {path}; each run takes its value from the axis "
                              f"(to run part of the grid: --only {key}=VALUE)")
        for k in SEED_KEYS if key == "seed" else (key,):  # "seed" sets all three seeds, as in --set of train
            base = merge(base, _nest(k, value))
    for k, v in axes.items():
        if not isinstance(v, list) or not v:
            raise ConfigError(f"axes.{k}: expected a non-empty list of values")
        n = len(axis_keys(k))
        if n > 1 and not all(isinstance(e, list) and len(e) == n for e in v):
            raise ConfigError(f"axes.{k}: a tied axis of {n} keys takes a list of [{', '.join(axis_keys(k))}] "
                              f"entries of {n} values each")
    spec = SweepSpec(name=data.get("name", path.stem), base=base, axes=axes)
    spec.configs()  # validate every point now, before anything is written
    return spec


def narrow(spec: SweepSpec, selections: Sequence[str]) -> SweepSpec:
    """``spec`` with only the grid points whose axis values match ``selections`` ("key=value" or
    "key=[v1, v2]", as ``anchorlab sweep --only``; several keys: all must match). The runs keep the ids they
    have in the whole grid, so a sweep directory can be filled part by part. A key that is not an axis, or a
    value that is not on its axis, is a :class:`ConfigError` naming it and the allowed values."""
    keys = [k for axis in spec.axes for k in axis_keys(axis)]
    grid = SweepSpec(spec.name, spec.base, spec.axes).points()  # the whole grid, whatever was kept before
    only = dict(spec.only)
    for item in selections:
        if "=" not in item:
            raise ConfigError(f"--only {item}: expected key=value (an axis key and one of its values), e.g. seed=1")
        key, value = parse_override(item)
        if key not in keys:
            raise ConfigError(f"--only {key}: not an axis of sweep {spec.name}; its axis keys: {', '.join(keys)}")
        on_axis = list(dict.fromkeys(p[key] for p in grid))
        wanted = value if isinstance(value, list) else [value]
        missing = [v for v in wanted if v not in on_axis]
        if missing or not wanted:
            raise ConfigError(f"--only {key}: {missing[0] if missing else value!r} is not on the axis; its values: "
                              f"{', '.join(map(str, on_axis))}")
        only[key] = [v for v in only.get(key, wanted) if v in wanted]
    narrowed = SweepSpec(spec.name, spec.base, spec.axes, only)
    if not narrowed.points():
        raise ConfigError(f"--only: no grid point of sweep {spec.name} has "
                          + ", ".join(f"{k} in {v}" for k, v in only.items()))
    return narrowed


def _nest(dotted: str, value: Any) -> dict[str, Any]:
    """'train.lr', 1e-3 -> {'train': {'lr': 1e-3}}."""
    out: dict[str, Any] = {}
    node = out
    parts = dotted.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value
    return out


def expand(spec: SweepSpec, out_dir: str | Path) -> list[tuple[dict[str, Any], Any, Path]]:
    """(grid point, config, run dir) for every distinct run of the sweep; writes nothing. Grid points that
    make the same run (:func:`duplicates`) are merged: the first one stands for it, and it trains once.

    A run's directory is ``out_dir/<run_id>``. A run made before a config field existed was named by the
    hash of its config without that field; such a directory is found by its ``config.json`` (the missing
    fields read as their defaults, renamed ones under their new names, execution fields such as
    ``train.threads`` not compared, as :func:`anchorlab.rundir.open_run` does) and used again."""
    rows, seen = [], set()
    for point, cfg, d in _expand_all(spec, out_dir):
        if d not in seen:
            seen.add(d)
            rows.append((point, cfg, d))
    return rows


def duplicates(spec: SweepSpec, out_dir: str | Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(grid point, the earlier point it repeats) for every grid point that makes the same run as an earlier one."""
    first: dict[Path, dict[str, Any]] = {}
    out = []
    for point, _, d in _expand_all(spec, out_dir):
        if d in first:
            out.append((point, first[d]))
        else:
            first[d] = point
    return out


def _expand_all(spec: SweepSpec, out_dir: str | Path) -> list[tuple[dict[str, Any], Any, Path]]:
    out_dir = Path(out_dir)
    rows, earlier = [], None
    for point, cfg in spec.configs():
        d = out_dir / cfg.run_id()
        if not d.exists():
            earlier = _stored_configs(out_dir) if earlier is None else earlier
            d = next((e for e, stored in earlier if rundir.same_run(stored, cfg)), d)
        rows.append((point, cfg, d))
    return rows


def _stored_configs(out_dir: Path) -> list[tuple[Path, dict[str, Any]]]:
    """(run dir, its config.json) for every run directory under ``out_dir``."""
    if not out_dir.is_dir():
        return []
    out = []
    for c in sorted(out_dir.glob(f"*/{rundir.CONFIG}")):
        stored = rundir.read_json(c)
        if not isinstance(stored, dict):
            raise ConfigError(f"{c}: expected a JSON object (a run config)")
        out.append((c.parent, stored))
    return out


def check_out_dir(out_dir: str | Path, field_name: str = "--out") -> Path:
    """``out_dir`` as a directory that can be written: a file there, an unwritable parent, or a sweep
    directory whose ``sweep.json`` is not readable is a :class:`ConfigError` (nothing is written)."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"{field_name}: {out_dir} is a file, not a directory")
    existing = out_dir
    while not existing.exists():  # the nearest existing ancestor (a relative path ends at ".")
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"{field_name}: {existing} is a file, so {out_dir} cannot be a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"{field_name}: {existing} is not writable")
    if existing != out_dir:  # some file systems (/proc, read-only mounts) pass the access check yet refuse mkdir
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".anchorlab-probe-", dir=existing))
        except OSError as e:
            raise ConfigError(f"{field_name}: cannot make a directory in {existing} ({e.strerror})") from None
    if (out_dir / MANIFEST).exists():
        read_manifest(out_dir)
    return out_dir


def read_manifest(sweep_dir: str | Path) -> dict[str, Any]:
    """A sweep directory's ``sweep.json``, checked: a file that is not JSON or lacks its ``runs`` table is a
    :class:`ConfigError` naming it."""
    path = Path(sweep_dir) / MANIFEST
    manifest = rundir.read_json(path)
    if not isinstance(manifest, dict) or not isinstance(manifest.get("runs"), dict) or not all(
            isinstance(p, dict) for p in manifest["runs"].values()):
        raise ConfigError(f"{path}: runs: expected a table of run id -> grid point; move the file away or remove it")
    bad = [r for r in manifest["runs"] if not r or "/" in r or r in (".", "..")]
    if bad:
        raise ConfigError(f"{path}: runs: {bad[0]!r} is not a run directory name")
    return manifest


def plan(spec: SweepSpec, out_dir: str | Path) -> list[tuple[dict[str, Any], Any, Path]]:
    """Write the manifest and return (grid point, config, run dir) for every run of the sweep."""
    out_dir = check_out_dir(out_dir)
    check_same_sweep(spec, out_dir)
    rows = expand(spec, out_dir)  # reads (and checks) every stored config.json before anything is written
    out_dir.mkdir(parents=True, exist_ok=True)
    runs = {d.name: point for point, _, d in rows}
    if spec.only and (out_dir / MANIFEST).exists():  # part of the grid: the runs listed before stay listed
        before = read_manifest(out_dir)
        if before.get("name") == spec.name:
            kept = before["runs"]
            if before.get("axes") != spec.axes:  # the grid grew or changed: keep those still on it
                grid = SweepSpec(spec.name, spec.base, spec.axes).points()
                kept = {r: p for r, p in kept.items() if p in grid}
            runs = {**kept, **runs}
    rundir.write_json(out_dir / MANIFEST, {"name": spec.name, "base": spec.base, "axes": spec.axes, "runs": runs})
    return rows


def check_same_sweep(spec: SweepSpec, out_dir: Path) -> None:
    """``out_dir`` holds no manifest, or this sweep's (the same name: its grid may have grown or changed); another
    sweep's directory is one line, so that its manifest is not written over."""
    if not (out_dir / MANIFEST).is_file():
        return
    other = read_manifest(out_dir).get("name")
    if other is not None and other != spec.name:  # a manifest without a name cannot say: taken as this sweep's
        raise ConfigError(f"--out: {out_dir} holds sweep {other!r} ({MANIFEST}), not {spec.name!r}; give another "
                          f"--out (or delete that directory to start it over)")


def run_status(run_dir: Path) -> str:
    """"done" (DONE written), "failed" (FAILED written: it will resume), "partial" (started: it will resume)
    or "new"."""
    if rundir.is_done(run_dir):
        return "done"
    if (run_dir / rundir.FAILED).exists():
        return "failed"
    return "partial" if (run_dir / rundir.CONFIG).exists() else "new"


def describe(spec: SweepSpec, out_dir: str | Path) -> str:
    """The dry run: axes, one line per run (id, status, grid point) and the counts; writes nothing."""
    check_same_sweep(spec, Path(out_dir))
    rows = expand(spec, out_dir)
    lines = [f"sweep {spec.name} -> {out_dir}: {len(rows)} runs"]
    lines += [f"  {k} = {v}" for k, v in spec.axes.items()]
    lines += [f"  only {k} in {v}" for k, v in spec.only.items()]
    dups = duplicates(spec, out_dir)
    if dups:
        lines.append(f"{len(dups)} duplicate grid point(s) merged (the same run, trained once):")
        lines += [f"  {_point(p)}  = {_point(q)}" for p, q in dups]
    counts = {"done": 0, "failed": 0, "partial": 0, "new": 0}
    for point, _, d in rows:
        status = run_status(d)
        counts[status] += 1
        lines.append(f"{d.name}  {status:7s}  " + _point(point))
    lines.append(", ".join(f"{n} {k}" for k, n in counts.items() if n or k != "failed"))
    return "\n".join(lines)


def _point(point: dict[str, Any]) -> str:
    return "  ".join(f"{k}={v}" for k, v in point.items())


def run_dirs(sources: Sequence[str | Path]) -> list[Path]:
    """Run directories of ``sources``: a sweep directory (with ``sweep.json``) stands for its runs, in the
    manifest's grid order; a folder of runs (no ``config.json`` of its own, run directories in it, such as
    ``runs/``) for those runs, by name; any other directory is taken as one run."""
    out: list[Path] = []
    for s in map(Path, sources):
        if (s / MANIFEST).is_file():
            out += [s / run_id for run_id in read_manifest(s)["runs"]]
        elif not (s / rundir.CONFIG).is_file() and (inside := sorted(d.parent for d in s.glob(f"*/{rundir.CONFIG}"))):
            out += inside
        else:
            out.append(s)
    return out


def unique_runs(dirs: Sequence[Path]) -> tuple[list[Path], list[str]]:
    """``dirs`` with each run once: two run directories of one name whose configs are one run (the same
    :meth:`~anchorlab.config.RunConfig.run_id`: the same run trained on two machines, or a copy) are kept once,
    the finished copy over an unfinished one, else the one with more evaluations, else the first; in first-found
    order. Directories that share a name but not a config stay two runs. Also one line per run read once, naming
    its copies."""
    dirs = list(dict.fromkeys(dirs))
    shared = {name for name, n in collections.Counter(d.name for d in dirs).items() if n > 1}
    kept: dict[tuple[str, str], Path] = {}
    notes = []
    for d in dirs:
        config_id = _config_id(d) if d.name in shared else "-"  # configs read only where names meet
        key = (d.name, config_id) if config_id else (str(d), "")  # no config that loads: a run of its own
        other = kept.get(key)
        if other is None:
            kept[key] = d
            continue
        pick = max((other, d), key=_progress)  # max keeps the first of equals
        notes.append(f"run {d.name} is in {other} and in {d}; read once, from {pick}")
        kept[key] = pick
    return list(kept.values()), notes


def _config_id(d: Path) -> str:
    """The run id of ``d``'s config, or "" where it has none that loads (then it is never merged with another)."""
    try:
        return rundir.read_config(d).run_id()
    except (OSError, ValueError, AttributeError, ConfigError):
        return ""


def _progress(d: Path) -> tuple[bool, int]:
    """How far a run directory got: finished (:func:`anchorlab.rundir.is_done`), then its number of evaluations."""
    return rundir.is_done(d), len(rundir.read_metrics(d))


def collect(sweep_dir: str | Path) -> list[dict[str, Any]]:
    """One row per run of a sweep: grid coordinates (from the manifest), status, and every scalar of the
    run's summary (``best`` flattened to ``best_<metric>``). Unfinished runs report their last evaluation."""
    sweep_dir = Path(sweep_dir)
    manifest_path = sweep_dir / MANIFEST
    if not manifest_path.is_file():
        raise ConfigError(f"sweep_dir: {sweep_dir} has no {MANIFEST}; run `anchorlab sweep` into it first")
    return [_row(sweep_dir / run_id, {"run_id": run_id, **point})
            for run_id, point in read_manifest(sweep_dir)["runs"].items()]


def collect_sources(sources: Sequence[str | Path]) -> list[dict[str, Any]]:
    """:func:`collect` for any mix of sweep directories, folders of runs (such as ``runs/``) and run
    directories: a sweep's runs as :func:`collect` gives them, with their paths as ``run_dir``; every other run
    (read from its ``config.json``) with its directory name as ``run_id``, its path as ``run_dir``, and as
    coordinates the config fields in which these other runs differ
    (:func:`~anchorlab.config_tools.varied_fields`; e.g. ``init.gamma``, ``train.weight_decay``). A directory
    that is none of these is a :class:`ConfigError` naming it."""
    rows: list[dict[str, Any]] = []
    plain: list[Path] = []
    for s in map(Path, sources):
        if (s / MANIFEST).is_file():  # its runs' paths too: rows of several sources stay told apart
            rows += [{"run_id": r["run_id"], "run_dir": str(s / r["run_id"]), **r} for r in collect(s)]
            continue
        found = [d for d in run_dirs([s]) if (d / rundir.CONFIG).is_file()]
        if not found:
            raise ConfigError(f"source: {s} holds no {MANIFEST}, no {rundir.CONFIG} and no run directories")
        plain += found
    configs = [rundir.read_config(d).to_dict() for d in plain]  # a broken config.json: one line naming it
    for d, coords in zip(plain, varied_fields(configs), strict=True):
        rows.append(_row(d, {"run_id": d.name, "run_dir": str(d), **coords}))
    return rows


def _row(run_dir: Path, head: dict[str, Any]) -> dict[str, Any]:
    """``head``, then the run's status and every scalar of its summary (of its last evaluation if unfinished).
    Status: "done", "failed", "running" (a live process holds its LOCK now), "unfinished" (stopped part way: the
    same command resumes it) or "missing" (no evaluation yet)."""
    row = dict(head)
    if rundir.is_done(run_dir):
        s = rundir.read_json(run_dir / rundir.SUMMARY)
        row["status"] = "done"
    else:
        hist = rundir.read_metrics(run_dir)
        s = hist[-1] if hist else {}
        row["status"] = ("failed" if (run_dir / rundir.FAILED).exists() else "missing" if not hist
                         else "running" if rundir.being_written(run_dir) else "unfinished")
    for k, v in s.items():
        if isinstance(v, (int, float, str)) and not isinstance(v, bool) and k not in row:
            row[k] = v
        elif k == "best" and isinstance(v, dict):
            row.update({f"best_{m}": x for m, x in v.items()})
    return row


def write_csv(rows: list[dict[str, Any]], path: str | Path) -> None:
    """Write rows (dicts, possibly with different keys) as one CSV with the union of columns, atomically."""
    import csv
    import io

    columns: list[str] = []
    for r in rows:
        columns += [k for k in r if k not in columns]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    rundir.write_atomic(Path(path), buf.getvalue())
