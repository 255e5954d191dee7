"""One command per paper figure: ``anchorlab reproduce NAME``.

The registry is data (``configs/reproduce.toml``): each entry names the sweep files that produce a figure's
runs (CPU scale, and ``paper`` for the paper scale) and the figures drawn from them. Reproducing an entry
runs its sweeps through :func:`anchorlab.execute.run_all` into ``OUT/<sweep name>/`` (finished runs are
skipped, unfinished ones resume) and then draws every figure into ``OUT/figures/`` with
:func:`anchorlab.figures.draw`. Compute and plots meet only through those directories.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anchorlab import rundir
from anchorlab.config import ConfigError, parse_toml_file
from anchorlab.sweep import MANIFEST

REGISTRY = Path(__file__).resolve().parents[2] / "configs" / "reproduce.toml"
ENTRY_KEYS = {"about", "minutes", "sweeps", "paper", "figures"}
FIGURE_KEYS = {"name", "select", "options", "out"}


@dataclass(frozen=True)
class FigureSpec:
    name: str
    select: tuple[dict[str, Any], ...] = ()  # grid points of the runs to draw from; () = every run
    options: dict[str, Any] = field(default_factory=dict)
    out: str = ""  # sub-directory of OUT/figures


@dataclass(frozen=True)
class Reproduction:
    name: str
    about: str
    sweeps: tuple[Path, ...]
    paper: tuple[Path, ...]
    figures: tuple[FigureSpec, ...]
    minutes: float | None = None


def load_registry(path: str | Path = REGISTRY) -> dict[str, Reproduction]:
    """Every entry of the registry file, checked: unknown keys, missing sweep files and unknown figure names
    are a ``ConfigError`` naming the entry and field."""
    from anchorlab.figures import names

    path = Path(path)
    data = parse_toml_file(path, "registry")
    known = set(names())
    out = {}
    for name, e in data.items():
        where = name
        if not isinstance(e, dict):
            raise ConfigError(f"{where}: expected a table")
        unknown = sorted(set(e) - ENTRY_KEYS)
        if unknown:
            raise ConfigError(f"{where}.{unknown[0]}: unknown key; allowed keys are {', '.join(sorted(ENTRY_KEYS))}")
        sweeps = {k: tuple(path.parent / s for s in e.get(k, [])) for k in ("sweeps", "paper")}
        if not sweeps["sweeps"]:
            raise ConfigError(f"{where}.sweeps: a non-empty list of sweep files is required")
        for k, files in sweeps.items():
            for f in files:
                if not f.is_file():
                    raise ConfigError(f"{where}.{k}: sweep file {f} does not exist")
        figures = []
        for i, f in enumerate(e.get("figures", [])):
            f = {"name": f} if isinstance(f, str) else f
            unknown = sorted(set(f) - FIGURE_KEYS)
            if unknown:
                raise ConfigError(f"{where}.figures[{i}].{unknown[0]}: unknown key; allowed keys are "
                                  f"{', '.join(sorted(FIGURE_KEYS))}")
            if f.get("name") not in known:
                raise ConfigError(f"{where}.figures[{i}].name: got {f.get('name')!r}; "
                                  f"allowed: {', '.join(sorted(known))}")
            select = f.get("select", [])
            figures.append(FigureSpec(f["name"], tuple([select] if isinstance(select, dict) else select),
                                      dict(f.get("options", {})), f.get("out", "")))
        out[name] = Reproduction(name, e.get("about", ""), sweeps["sweeps"], sweeps["paper"], tuple(figures),
                                 e.get("minutes"))
    return out


def get(name: str, registry: str | Path = REGISTRY) -> Reproduction:
    entries = load_registry(registry)
    if name not in entries:
        raise ConfigError(f"name: unknown reproduction {name!r}; allowed: {', '.join(entries)}")
    return entries[name]


def describe_registry(registry: str | Path = REGISTRY) -> str:
    """One line per entry: name, CPU-scale minutes, what it reproduces."""
    lines = []
    entries = load_registry(registry).values()
    width = max((len(r.name) for r in entries), default=0)
    for r in entries:
        t = f"~{r.minutes:g} min" if r.minutes is not None else "not timed"
        lines.append(f"{r.name:{width}s} {t:>10s}  {r.about}" + ("" if r.paper else "  [no paper-scale sweep]"))
    return "\n".join(lines)


def _selected(fig: FigureSpec, sweep_dirs: list[Path]) -> list[Path]:
    """The run directories a figure draws from: those matching ``fig.select`` (in its order), or all."""
    runs = [(d / run_id, point) for d in sweep_dirs
            for run_id, point in rundir.read_json(d / MANIFEST)["runs"].items()]
    if not fig.select:
        return [r for r, _ in runs]
    chosen = []
    for want in fig.select:
        match = [r for r, point in runs if all(point.get(k) == v for k, v in want.items())]
        if not match:
            raise ConfigError(f"figures.{fig.name}.select: no run of the sweeps has {want}")
        chosen.append(match[0])
    return chosen


def figure_plan(rep: Reproduction, out: Path) -> str:
    """The figures ``rep`` draws, one line each: the PNG it writes, and its options and run selection where it
    has them (one name drawn twice differs there: the plan says how)."""
    lines = [f"then {len(rep.figures)} figure{'s' * (len(rep.figures) != 1)} -> {out}"]
    for fig in rep.figures:
        detail = [f"{k}={v}" for k, v in fig.options.items()]
        detail += [f"runs {' '.join(f'{k}={v}' for k, v in sel.items())}" for sel in fig.select]
        png = Path(fig.out) / f"{fig.name}.png" if fig.out else Path(f"{fig.name}.png")
        lines.append(f"  {png}" + (f"  ({', '.join(detail)})" if detail else ""))
    return "\n".join(lines)


def draw_figures(rep: Reproduction, sweep_dirs: list[Path], out: Path) -> list[Path]:
    """Draw every figure of ``rep`` from the runs in ``sweep_dirs`` into ``out``; returns the PNG paths."""
    from anchorlab.figures import FIGURES, draw

    written = []
    for fig in rep.figures:
        kind = FIGURES[fig.name].sources
        if kind == "sweep":
            sources = sweep_dirs[:1]
        else:
            sources = _selected(fig, sweep_dirs)
            if kind == "run":
                sources = sources[:1]
        written.append(draw(fig.name, sources, out / fig.out if fig.out else out, **fig.options))
    return written


def reproduce(name: str, out: str | Path | None = None, *, paper: bool = False, overrides: tuple[str, ...] = (),
              workers: int = 2, backend: str | None = None, batch_models: int | None = None,
              registry: str | Path = REGISTRY, dry_run: bool = False, show_progress: bool = True,
              only: tuple[str, ...] = ()) -> list[Path]:
    """Run entry ``name``'s sweeps and draw its figures; returns the PNG paths (``dry_run``: print the plan and
    return []). ``batch_models``: as ``anchorlab sweep --batch-models`` (local back-end: up to K same-shaped runs
    trained together; default 16 on a GPU). A run that fails does not stop the others; then
    :class:`anchorlab.rundir.RunFailed` is raised (no figure is drawn) once every sweep has run. ``only``
    ("key=value", as ``anchorlab sweep --only``; the key an axis of every sweep of the entry) trains that part of
    the grids under the whole grids' run ids and draws no figure: it says how to draw what is there so far, and
    the same command without ``only`` trains the rest and draws them."""
    from anchorlab.execute import batch_plan, check_sweep_options, run_all
    from anchorlab.sweep import check_out_dir, describe, load_sweep, narrow, plan

    backend = backend or ("local" if workers <= 1 else "process")  # run_all's default
    check_sweep_options(workers=workers, backend=backend, batch_models=batch_models)
    rep = get(name, registry)
    files = rep.paper if paper else rep.sweeps
    if not files:
        raise ConfigError(f"--paper: {name} has no paper-scale sweep in the registry")
    out = Path(out) if out is not None else Path("runs") / "reproduce" / (name + ("-paper" if paper else ""))
    specs = [load_sweep(f, overrides) for f in files]  # every sweep is validated before anything runs
    if only:
        specs = [narrow(spec, only) for spec in specs]
    for spec in specs:
        check_out_dir(out / spec.name)
    # --batch-models checked against every sweep's runs and the back-end before anything runs
    batching = [batch_plan(spec, out / spec.name, backend, batch_models) for spec in specs]
    if dry_run:
        for spec, line in zip(specs, batching, strict=True):
            print(describe(spec, out / spec.name) + (f"\n{line}" if line else ""))
        print(figure_plan(rep, out / "figures") if not only else "then no figure (--only: part of the grids)")
    from anchorlab.execute import check_devices
    from anchorlab.kinds import preflight

    preflight([cfg for spec in specs for _, cfg in spec.configs()])  # a missing data set stops here, nothing run
    if backend != "ray":  # a GPU this machine lacks, for a run still to train: the same
        check_devices([(cfg, out / spec.name / cfg.run_id()) for spec in specs for _, cfg in spec.configs()])
    if dry_run:  # the plan, and a clean return only where the same call without dry_run would start
        return []
    dirs, failed = [], []
    for spec in specs:
        rows = plan(spec, out / spec.name)
        results = run_all([(cfg, d) for _, cfg, d in rows], workers=workers, backend=backend,
                          batch_models=batch_models, show_progress=show_progress)
        failed += [r for r in results if r.error]
        dirs.append(out / spec.name)
    if failed:
        raise rundir.RunFailed(f"{len(failed)} run(s) failed (each named above); no figure drawn. Fix the cause and "
                               "run the same command again: finished runs are kept")
    if only:  # a figure may select runs outside this part: none is drawn, and the reader is told how
        names = [f.name for f in rep.figures]
        print(f"reproduce {name}: trained the part {' '.join(only)}; no figure drawn. To draw what is there so far: "
              f"anchorlab figure NAME {' '.join(map(str, dirs))} (NAME: {', '.join(names)}). The same command "
              f"without --only trains the rest and draws them all.")
        return []
    return draw_figures(rep, dirs, out / "figures")
