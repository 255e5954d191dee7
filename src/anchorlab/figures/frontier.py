"""``p1-frontier``: the frontier search of P1's two sides (docs/p1_frontier.md) in one picture, from a points file.

A *point* is one config tried, shrunk from P1's paper config along one factor (width, data, epochs, rate...).
Its small-init runs are read for the held-out pair's inferential answer, its larger-init runs for the
symmetric one; per seed one value, read either as P1 reads a phase-diagram cell (``read = "best"``: the best
over the seed's runs, e.g. its 9 peak learning rates; arXiv 2405.05409 §4, :func:`~.gamma.best_per_seed`) or as
the run's last evaluation (``read = "last"``: one run per seed). The points live in a TOML file, data that the
docs' table and this figure share::

    [[point]]
    factor = "width"                        # the factor shrunk ("none": the paper config itself)
    config = "d_model 128, 27 epochs, bf16, 9 rates"   # what differs from the paper config
    read = "best"                           # "best" (over each seed's runs) or "last"
    epoch = 27                              # optional: each run read after this epoch, not at its end
    command = "anchorlab sweep configs/sweeps/p1_frontier_d128_rates.toml"
    small = { gamma = 1.2, runs = ["d128_rates_h200_bf16"] }   # run or sweep directories, globs, relative
    large = { gamma = 0.3, runs = ["d128_rates_h200_bf16"] }   # to the points file; only runs of that γ count
    # a side may also name runs_per_seed = 9 (read "best"): the runs each seed's best is to be taken over

A side whose runs are not there yet (a sweep still to run) is drawn as "not run". The verdict of a point is
``yes`` where both sides reach ``threshold`` on every one of ``seeds`` seeds (the small side's run with seen-pair
test accuracy ≥ ``threshold`` too, the issue's bar), ``no`` where a finished seed of either side misses it (no
other seed can make up for it), ``open`` otherwise (a side missing or short of seeds, a run unfinished). With a
side's ``runs_per_seed``, a seed read "best" over fewer runs than that (rates still to run) is ``partial``: drawn
hollow like an unfinished run, never a miss, since a rate still to run may raise its best, and a pass once at the
bar, since none can lower it.
"""

from __future__ import annotations

import glob
import sys
import tomllib
from pathlib import Path
from typing import Any

from anchorlab.config import ConfigError
from anchorlab.figures import figure, save_figure
from anchorlab.figures.gamma import best_per_seed, gamma_rows
from anchorlab.sweep import run_dirs, unique_runs

SIDES = {"small": "inferential", "large": "symmetric"}
READS = ("best", "last")
POINT_KEYS = {"factor", "config", "read", "epoch", "command", "small", "large"}


def _fail(path: Path, where: str, what: str) -> ConfigError:
    return ConfigError(f"figure p1-frontier: {path}: {where}: {what}")


def load_points(path: Path) -> list[dict[str, Any]]:
    """The points of ``path`` (see the module docstring), checked: each bad field is one line naming it."""
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"figure p1-frontier: {path}: not a readable TOML points file ({e})") from None
    points = data.get("point")
    if not isinstance(points, list) or not points or set(data) != {"point"}:
        raise _fail(path, "point", "the file holds one or more [[point]] tables and nothing else")
    for i, p in enumerate(points, 1):
        where = f"point {i}"
        if not isinstance(p, dict) or set(p) - POINT_KEYS or not {"factor", "config", "read"} <= set(p):
            raise _fail(path, where, f"keys factor, config, read (required), epoch, command, small, large (got "
                        f"{sorted(p) if isinstance(p, dict) else p!r})")
        if p["read"] not in READS:
            raise _fail(path, f"{where}.read", f"one of {', '.join(READS)} (got {p['read']!r})")
        at = p.get("epoch")
        if at is not None and (isinstance(at, bool) or not isinstance(at, int) or at < 0):
            raise _fail(path, f"{where}.epoch", f"an epoch >= 0: each run read after it (got {at!r})")
        if not ({"small", "large"} & set(p)):
            raise _fail(path, where, "needs a small or a large side (or both)")
        for side in SIDES:
            s = p.get(side)
            if s is None:
                continue
            ok = (isinstance(s, dict) and {"gamma", "runs"} <= set(s) <= {"gamma", "runs", "runs_per_seed"}
                  and isinstance(s["gamma"], (int, float)) and not isinstance(s["gamma"], bool)
                  and isinstance(s["runs"], list) and all(isinstance(r, str) for r in s["runs"]))
            if not ok:
                raise _fail(path, f"{where}.{side}", '{ gamma = NUMBER, runs = ["DIR or glob", ...] } and '
                            f"optionally runs_per_seed = INTEGER (got {s!r})")
            n = s.get("runs_per_seed")
            if n is not None and (p["read"] != "best" or isinstance(n, bool) or not isinstance(n, int) or n < 1):
                raise _fail(path, f"{where}.{side}.runs_per_seed", f'an integer >= 1, with read = "best" (got '
                            f"{n!r})")
    return points


def _run_dirs(base: Path, patterns: list[str], where: str = "") -> list[Path]:
    """Every run directory the patterns (globs relative to ``base``) name, as :func:`anchorlab.sweep.run_dirs`
    reads each match (a sweep or a folder stands for its runs), each run once (:func:`~anchorlab.sweep.unique_runs`:
    the same run in two folders counts once, said on stderr), so no seed is read twice."""
    matches = [m for pattern in patterns for m in sorted(glob.glob(str(base / pattern)))]
    runs, notes = unique_runs(run_dirs(matches))
    for note in notes:
        print(f"figure p1-frontier: {where}: {note}", file=sys.stderr)
    return runs


def side_rows(point: dict[str, Any], side: str, base: Path, where: str) -> list[dict[str, Any]]:
    """Per seed of one side of ``point``: its value (:data:`SIDES`), the seen-pair test accuracy of the run
    that gave it, status, the number of runs read and the run; ``[]`` where none of its runs is there yet."""
    spec = point.get(side)
    if spec is None:
        return []
    found = gamma_rows(_run_dirs(base, spec["runs"], where), epoch=point.get("epoch"))
    rows = [r for r in found if r["gamma"] == float(spec["gamma"])]
    if found and not rows:  # not started yet, or a γ mistyped: drawn "not run" either way, and said
        others = ", ".join(f"{g:g}" for g in sorted({r["gamma"] for r in found}))
        print(f"figure p1-frontier: {where}: none of the {len(found)} runs found has γ {spec['gamma']:g} (they have "
              f"{others}); drawn as not run", file=sys.stderr)
    answer = SIDES[side]
    if point["read"] == "best":
        expect = spec.get("runs_per_seed", 0)
        out = [{"seed": r["seed"], "value": r[answer], "seen_test": r[f"seen_test_best_{answer}"],
                "status": "partial" if r["status"] == "done" and r["n_runs"] < expect else r["status"],
                "n_runs": r["n_runs"], "run_id": r[f"best_{answer}_run"]}
               for r in best_per_seed(rows)]
    else:
        seeds = [r["seed"] for r in rows]
        if len(set(seeds)) != len(seeds):
            raise ConfigError(f"figure p1-frontier: {where}: read = \"last\" takes one run per seed, found "
                              f"{len(seeds)} runs for seeds {sorted(set(seeds))} (read = \"best\" takes the "
                              f"best of several)")
        out = [{"seed": r["seed"], "value": r[answer], "seen_test": r["seen_test"], "status": r["status"],
                "n_runs": 1, "run_id": r["run_id"]} for r in rows]
    return sorted(out, key=lambda r: r["seed"])


def verdict(small: list[dict[str, Any]], large: list[dict[str, Any]], seeds: int, threshold: float) -> str:
    """"yes": both sides ≥ ``threshold`` on ``seeds`` seeds (the small side's run with seen test ≥ it too);
    "no": a finished seed of either side misses the bar (the seeds are fixed, so no other seed can make up for
    it); "open" otherwise (a side missing or short of seeds, a run unfinished). A ``partial`` seed (read "best"
    over fewer rates than the side names) is never a miss, since a rate still to run may raise its best, and one
    already at the bar is a pass, since it cannot lower it."""
    def meets(r: dict[str, Any], seen: bool) -> bool:
        return float(r["value"]) >= threshold and (not seen or float(r["seen_test"] or 0) >= threshold)

    sides = ((small, True), (large, False))
    if any(r["status"] == "done" and not meets(r, seen) for rows, seen in sides for r in rows):
        return "no"
    if all(len(rows) >= seeds and all(r["status"] in ("done", "partial") and meets(r, seen) for r in rows)
           for rows, seen in sides):
        return "yes"
    return "open"


@figure("p1-frontier", "file", "P1's frontier: per point of a points file (a config shrunk from the paper's), "
        "small init's inferential and larger init's symmetric answer per seed, and whether both reach the bar")
def p1_frontier(points_file: Path, out: str | Path, threshold: float = 0.9, seeds: int = 3) -> Path:
    """One row per point of ``points_file`` (:func:`load_points`): per seed, the small init's inferential
    and the larger init's symmetric accuracy on the held-out pair (:func:`side_rows`), the bar ``threshold``,
    and the point's verdict (:func:`verdict` over ``seeds`` seeds). The CSV has one row per point, side and
    seed (or one "not run" row per missing side), with the command that makes the point."""
    from anchorlab.plotting.figures import plot_frontier

    if not 0 < threshold <= 1:
        raise ConfigError(f"figure p1-frontier: option threshold: a number in (0, 1], got {threshold!r}")
    if seeds < 1 or int(seeds) != seeds:
        raise ConfigError(f"figure p1-frontier: option seeds: an integer >= 1, got {seeds!r}")
    path = Path(points_file)
    base = path.parent
    table, csv = [], []
    for i, p in enumerate(load_points(path), 1):
        sides = {side: side_rows(p, side, base, f"{path}: point {i}.{side}") for side in SIDES}
        v = verdict(sides["small"], sides["large"], int(seeds), threshold)
        read = p["read"] + (f" after epoch {p['epoch']}" if "epoch" in p else "")
        table.append({"factor": p["factor"], "config": p["config"], "read": read, "verdict": v,
                      **{side: {"gamma": p[side]["gamma"], "rows": sides[side]} if side in p else None
                         for side in SIDES}})
        head = {"point": i, "factor": p["factor"], "config": p["config"], "read": read, "verdict": v,
                "command": p.get("command", "")}
        for side, answer in SIDES.items():
            if side not in p:
                continue
            rows = sides[side] or [{"seed": None, "value": None, "seen_test": None, "status": "not run",
                                    "n_runs": 0, "run_id": ""}]
            csv += [{**head, "side": side, "gamma": p[side]["gamma"], "answer": answer, **r} for r in rows]
    fig = plot_frontier(table, threshold)
    return save_figure(fig, csv, Path(out), "p1-frontier")
