"""Sweeps as data: a base run plus axes, expanded to RunConfigs named by the hash of their config.

A sweep file (TOML)::

    name = "demo"
    base = "p1/cpu_base.toml"        # a run config, relative to this file
    [set]                            # optional dotted overrides of the base
    "train.epochs" = 9
    [axes]                           # the grid: every combination is one run
    "init.gamma" = [0.5, 0.8, 1.2]
    "seed" = [1, 2, 3]               # "seed" sets data_seed, init_seed and train_seed together

Its run directory holds ``sweep.json`` (the resolved spec and {run_id: grid coordinates}) and one
directory per run, named by ``RunConfig.run_id()``; collection and plots read that manifest and each
run's ``config.json``, so the grid is never typed twice.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anchorlab import rundir
from anchorlab.config import (
    ConfigError,
    RunConfig,
    from_dict,
    merge,
    parse_toml_file,
    read_toml,
    set_dotted,
    with_defaults,
)

MANIFEST = "sweep.json"
SEED_KEYS = ("seeds.data_seed", "seeds.init_seed", "seeds.train_seed")


@dataclass(frozen=True)
class SweepSpec:
    name: str
    base: dict[str, Any]  # resolved base run config (plain data)
    axes: dict[str, list[Any]] = field(default_factory=dict)

    def points(self) -> list[dict[str, Any]]:
        """Every grid point as {axis: value}, in row-major order of the axes as written."""
        keys = list(self.axes)
        return [dict(zip(keys, vals)) for vals in itertools.product(*(self.axes[k] for k in keys))]

    def configs(self) -> list[tuple[dict[str, Any], RunConfig]]:
        """(grid point, validated RunConfig) for every point."""
        out = []
        base = with_defaults(self.base)
        for point in self.points():
            d = copy.deepcopy(base)
            for key, value in point.items():
                for k in (SEED_KEYS if key == "seed" else (key,)):
                    set_dotted(d, k, value, where="axes.")
            out.append((point, from_dict(d)))
        return out


def load_sweep(path: str | Path) -> SweepSpec:
    """Read a sweep file; errors name the offending field."""
    path = Path(path)
    data = parse_toml_file(path, "sweep")
    unknown = sorted(set(data) - {"name", "base", "set", "axes"})
    if unknown:
        raise ConfigError(f"{unknown[0]}: unknown sweep key; allowed keys are name, base, set, axes")
    base = read_toml(path.parent / data["base"]) if "base" in data else {}
    for key, value in data.get("set", {}).items():
        base = merge(base, _nest(key, value))
    axes = data.get("axes", {})
    for k, v in axes.items():
        if not isinstance(v, list) or not v:
            raise ConfigError(f"axes.{k}: expected a non-empty list of values")
    spec = SweepSpec(name=data.get("name", path.stem), base=base, axes=axes)
    spec.configs()  # validate every point now, before anything is written
    return spec


def _nest(dotted: str, value: Any) -> dict[str, Any]:
    """'train.lr', 1e-3 -> {'train': {'lr': 1e-3}}."""
    out: dict[str, Any] = {}
    node = out
    parts = dotted.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value
    return out


def expand(spec: SweepSpec, out_dir: str | Path) -> list[tuple[dict[str, Any], RunConfig, Path]]:
    """(grid point, config, run dir) for every run of the sweep; writes nothing."""
    out_dir = Path(out_dir)
    return [(point, cfg, out_dir / cfg.run_id()) for point, cfg in spec.configs()]


def plan(spec: SweepSpec, out_dir: str | Path) -> list[tuple[dict[str, Any], RunConfig, Path]]:
    """Write the manifest and return (grid point, config, run dir) for every run of the sweep."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = expand(spec, out_dir)
    rundir.write_json(out_dir / MANIFEST, {
        "name": spec.name, "base": spec.base, "axes": spec.axes,
        "runs": {cfg.run_id(): point for point, cfg, _ in rows},
    })
    return rows


def run_status(run_dir: Path) -> str:
    """"done" (DONE written), "partial" (started: it will resume) or "new"."""
    if rundir.is_done(run_dir):
        return "done"
    return "partial" if (run_dir / rundir.CONFIG).exists() else "new"


def describe(spec: SweepSpec, out_dir: str | Path) -> str:
    """The dry run: axes, one line per run (id, status, grid point) and the counts; writes nothing."""
    rows = expand(spec, out_dir)
    lines = [f"sweep {spec.name} -> {out_dir}: {len(rows)} runs"]
    lines += [f"  {k} = {v}" for k, v in spec.axes.items()]
    counts = {"done": 0, "partial": 0, "new": 0}
    for point, cfg, d in rows:
        status = run_status(d)
        counts[status] += 1
        lines.append(f"{cfg.run_id()}  {status:7s}  " + "  ".join(f"{k}={v}" for k, v in point.items()))
    lines.append(", ".join(f"{n} {k}" for k, n in counts.items()))
    return "\n".join(lines)


def collect(sweep_dir: str | Path) -> list[dict[str, Any]]:
    """One row per run of a sweep: grid coordinates (from the manifest), status, and every scalar of the
    run's summary (``best`` flattened to ``best_<metric>``). Unfinished runs report their last evaluation."""
    sweep_dir = Path(sweep_dir)
    manifest_path = sweep_dir / MANIFEST
    if not manifest_path.is_file():
        raise ConfigError(f"sweep_dir: {sweep_dir} has no {MANIFEST}; run `anchorlab sweep` into it first")
    manifest = rundir.read_json(manifest_path)
    rows = []
    for run_id, point in manifest["runs"].items():
        d = sweep_dir / run_id
        row: dict[str, Any] = {"run_id": run_id, **point}
        if rundir.is_done(d):
            s = rundir.read_json(d / rundir.SUMMARY)
            row["status"] = "done"
        else:
            hist = rundir.read_metrics(d)
            s = hist[-1] if hist else {}
            row["status"] = "running" if hist else "missing"
        for k, v in s.items():
            if isinstance(v, (int, float, str)) and not isinstance(v, bool) and k not in row:
                row[k] = v
            elif k == "best" and isinstance(v, dict):
                row.update({f"best_{m}": x for m, x in v.items()})
        rows.append(row)
    return rows


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
