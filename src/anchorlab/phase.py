"""Phase diagrams: a tidy table of runs -> grids over two axes (P1 Fig. 2 aggregation), and the mean and std
over seeds per group of runs (P1 Fig. 2c's error bars).

For each (x, y, seed) cell the best value over the ``best_over`` axes (P1: the learning rates) is taken
for each metric separately, then the mean over seeds. With ``use_best_epoch`` the per-run value is the
best over the run's evaluations (``best_<metric>``, what the authors' plotting code did) instead of the
final evaluation (the default). The mask marks cells whose seen-pair test accuracy (same aggregation)
is below ``mask_threshold`` (P1: 0.9, drawn hatched).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

SEED_AXES = ("seed", "seeds.init_seed", "seeds.data_seed", "seeds.train_seed")


def _value(row: dict[str, Any], metric: str, use_best_epoch: bool) -> float:
    key = f"best_{metric}" if use_best_epoch and f"best_{metric}" in row else metric
    return float(row[key])


def phase_grid(rows: Sequence[dict[str, Any]], x: str, y: str, metrics: Sequence[str],
               mask_metric: str = "seen_test_acc", mask_threshold: float = 0.9,
               use_best_epoch: bool = False) -> dict[str, Any]:
    """{"xs", "ys", metric: grid [len(ys), len(xs)] (NaN where no run), "mask": bool grid, "n_seeds": grid}.

    Every other axis of the rows is either a seed axis (averaged) or a "best over" axis (maximised).
    """
    done = [r for r in rows if r.get("status", "done") == "done"]
    xs, ys = sorted({r[x] for r in done}), sorted({r[y] for r in done})
    seed_axis = next((k for k in SEED_AXES if any(k in r for r in done)), None)
    cells: dict[tuple[Any, Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for r in done:
        cells[(r[x], r[y], r.get(seed_axis) if seed_axis else None)].append(r)
    out: dict[str, Any] = {"xs": xs, "ys": ys}
    per_seed: dict[str, dict[tuple[Any, Any], list[float]]] = {m: defaultdict(list) for m in (*metrics, mask_metric)}
    for (xv, yv, _seed), group in cells.items():
        for m in per_seed:
            per_seed[m][(xv, yv)].append(max(_value(r, m, use_best_epoch) for r in group))
    for m in per_seed:
        grid = np.full((len(ys), len(xs)), np.nan)
        for (xv, yv), vals in per_seed[m].items():
            grid[ys.index(yv), xs.index(xv)] = float(np.mean(vals))
        out[m] = grid
    out["mask"] = out[mask_metric] < mask_threshold
    n = np.zeros((len(ys), len(xs)), dtype=int)
    for (xv, yv), vals in per_seed[mask_metric].items():
        n[ys.index(yv), xs.index(xv)] = len(vals)
    out["n_seeds"] = n
    return out


def mean_std(rows: Sequence[dict[str, Any]], by: Sequence[str], metrics: Sequence[str]) -> list[dict[str, Any]]:
    """One row per distinct value of the ``by`` columns of ``rows`` (sorted by them): those columns, ``n`` (how
    many rows it averages: P1 Fig. 2c's "4 runs") and, per metric, ``<metric>_mean`` and ``<metric>_std``, the
    population std over those rows (numpy's default, ddof 0, as the other error bars here; 0 for one row)."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[tuple(r[k] for k in by)].append(r)
    out = []
    for key, group in sorted(groups.items()):
        stats: dict[str, Any] = dict(zip(by, key)) | {"n": len(group)}
        for m in metrics:
            vals = np.array([float(r[m]) for r in group])
            stats |= {f"{m}_mean": float(vals.mean()), f"{m}_std": float(vals.std())}
        out.append(stats)
    return out
