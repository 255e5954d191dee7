"""Figure recipes, one registry: ``FIGURES[name] = Recipe``; ``anchorlab figure NAME SOURCE... --out DIR``.

Each recipe reads run or sweep directories (never re-runs training), computes the figure's data,
and writes ``<out>/<name>.png`` with the data behind it as ``<out>/<name>.csv`` (and returns the PNG path).
A source ``RUN_DIR@STEP`` names the checkpoint of that run (every run of a sweep) to analyse (:func:`split_source`).
Modules, from logged metrics (:mod:`.logged` reads them): :mod:`.phase` (P1 Fig. 2, 14 over a sweep),
:mod:`.gamma` (p1-gamma, Fig. 2c), :mod:`.curves` (p1-curves, p1-fit-speed, p1-condensation), :mod:`.frontier`;
from checkpoints: :mod:`.p1` (P1 mechanism figures), :mod:`.p2` (P2 figures), :mod:`.text` (real-language figures).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FigureFn = Callable[..., Path]


@dataclass(frozen=True)
class Recipe:
    name: str
    fn: FigureFn      # fn(sources: list[Path], out: Path, **options) -> Path of the PNG
    sources: str      # what SOURCE is: "sweep", "run" or "runs" (run directories; a sweep directory = its runs),
    #                   or "file" (one data file the recipe reads, e.g. p1-frontier's points file)
    help: str
    many_steps: bool = False  # takes ``--step`` more than once (a checkpoint series); others take one


FIGURES: dict[str, Recipe] = {}
# The options that have a command-line flag of their own, as ``figure list`` and errors show them (the rest are
# ``--option KEY=VALUE``).
FLAG_USAGE = {"method": "--method pca|tsne", "step": "--step N", "use_best_epoch": "--best-epoch"}
# A "runs" recipe that takes ``run_steps`` (one step or None per run dir, in order) reads RUN_DIR@STEP sources;
# a "run" recipe takes them through ``step``.
RUN_STEPS = "run_steps"


def figure(name: str, sources: str, help: str, many_steps: bool = False) -> Callable[[FigureFn], FigureFn]:
    """Register ``fn`` as figure ``name`` (``many_steps``: it draws several ``--step`` checkpoints)."""
    if sources not in ("sweep", "run", "runs", "file"):
        raise ValueError(f"figure {name}: sources must be 'sweep', 'run', 'runs' or 'file', got {sources!r}")

    def register(fn: FigureFn) -> FigureFn:
        FIGURES[name] = Recipe(name, fn, sources, help, many_steps)
        return fn
    return register


def config_of_kind(run_dir: Path, name: str, cls: type, what: str) -> Any:
    """The config of ``run_dir`` for figure ``name``, which must be a ``cls`` (``what``: "an `anchorlab lm`"...);
    anything else is one ConfigError naming the directory and what it holds."""
    from anchorlab import kinds, rundir
    from anchorlab.config import ConfigError

    try:
        cfg = rundir.read_config(run_dir)
    except (ConfigError, FileNotFoundError) as e:
        raise ConfigError(f"figure {name}: {run_dir} is not a run directory ({e})") from None
    if not isinstance(cfg, cls):
        kind = kinds.kind_of(cfg).name
        raise ConfigError(f"figure {name}: {run_dir} is not {what} run (it holds a run of kind {kind!r})")
    return cfg


def split_source(source: str | Path) -> tuple[Path, int | None]:
    """``(directory, step)`` of a figure source: ``RUN_DIR@STEP`` names the kept checkpoint at STEP, anything
    else has no step. A path that exists as a directory is taken whole, even with an ``@`` in its name."""
    from anchorlab.config import ConfigError

    text = str(source)
    if Path(text).is_dir() or "@" not in text:
        return Path(text), None
    head, _, tail = text.rpartition("@")
    if not Path(head).is_dir():
        raise ConfigError(f"source: {text} is not a run or sweep directory, nor RUN_DIR@STEP of one")
    if not re.fullmatch(r"[0-9]+", tail):
        raise ConfigError(f"source {text}: the step after @ must be an integer >= 0, got {tail!r}")
    return Path(head), int(tail)


def draw(name: str, sources: Sequence[str | Path], out: str | Path, **options: Any) -> Path:
    """Draw figure ``name`` from ``sources`` into ``out``; a clear error for an unknown name or bad sources.

    A source ``RUN_DIR@STEP`` (:func:`split_source`) analyses that run's checkpoint at STEP (a sweep@STEP: each
    of its runs at STEP), overriding ``step`` (``--step``) for that run; figures that read only logged
    metrics, and the sweep-grid figures, refuse it. Every STEP is checked against the kept checkpoints first."""
    from anchorlab.config import ConfigError

    _load_all()
    if name not in FIGURES:
        raise ConfigError(f"figure: unknown name {name!r}; allowed: {', '.join(sorted(FIGURES))}")
    r = FIGURES[name]
    if RUN_STEPS in options:
        raise ConfigError(f"figure {name}: give per-run steps as sources RUN_DIR@STEP, not as option {RUN_STEPS}")
    steps = options.get("step")
    if isinstance(steps, (list, tuple)) and len(set(steps)) > 1 and not r.many_steps:
        several = [n for n in sorted(FIGURES) if FIGURES[n].many_steps]
        raise ConfigError(f"figure {name}: draws one checkpoint: give --step once (got {', '.join(map(str, steps))}); "
                          f"figures that take several: {', '.join(several)}")
    if r.sources == "file":  # one data file, which the recipe reads and checks
        if len(sources) != 1 or not Path(sources[0]).is_file():
            raise ConfigError(f"figure {name}: takes one file (got {', '.join(map(str, sources)) or 'none'})")
        _check_options(name, options)
        return r.fn(Path(sources[0]), Path(out), **options)
    srcs: list[Path] = []
    at: list[tuple[int | None, str]] = []  # per run dir: its @STEP (or None) and the source that gave it
    for source in sources:
        s, step = split_source(source)
        if step is not None and not _takes_run_steps(r):
            takers = [n for n in sorted(FIGURES) if _takes_run_steps(FIGURES[n])]
            raise ConfigError(f"figure {name}: source {source}: @STEP does not apply to this figure (it picks no "
                              f"checkpoint per run); figures that take RUN_DIR@STEP: {', '.join(takers)}")
        if r.sources == "runs":  # a sweep directory stands for its runs (those started so far)
            from anchorlab import rundir
            from anchorlab.sweep import MANIFEST, run_dirs
            runs = run_dirs([s])
            if (s / MANIFEST).is_file():
                started = [d for d in runs if d.is_dir()]
                if not started:
                    raise ConfigError(f"figure {name}: sweep {s}: none of its {len(runs)} runs has started yet")
                if len(started) < len(runs):
                    print(f"figure {name}: sweep {s}: drawing the {len(started)} of its {len(runs)} runs started "
                          f"so far", file=sys.stderr)
                runs = started
            elif runs == [s] and s.is_dir() and not (s / rundir.CONFIG).is_file():
                raise ConfigError(f"figure {name}: source {s} is not a run directory: no {rundir.CONFIG}, no "
                                  f"{MANIFEST} (a sweep) and no run directories in it")
        else:
            runs = [s]
        srcs += runs
        at += [(step, str(source))] * len(runs)
    if not srcs:
        raise ConfigError(f"figure {name}: give at least one {'run' if r.sources == 'runs' else r.sources} directory")
    if r.sources == "runs" and all(step is None for step, _ in at):  # the same run under two folders: once
        from anchorlab.sweep import unique_runs

        srcs, notes = unique_runs(srcs)
        at = [(None, "")] * len(srcs)
        for note in notes:
            print(f"figure {name}: {note}", file=sys.stderr)
    if r.sources != "runs" and len(srcs) != 1:
        raise ConfigError(f"figure {name}: takes one {r.sources} directory, got {len(srcs)}")
    from anchorlab import rundir

    if r.sources == "run" and srcs[0].is_dir() and not (srcs[0] / rundir.CONFIG).is_file():
        from anchorlab.sweep import MANIFEST

        what = "a sweep directory: give one of its runs" if (srcs[0] / MANIFEST).is_file() else f"no {rundir.CONFIG}"
        raise ConfigError(f"figure {name}: {srcs[0]} is not a run directory ({what})")
    for s in srcs:
        if not s.is_dir():
            raise ConfigError(f"figure {name}: source {s} is not a directory")
    _check_options(name, options)

    for d, (step, source) in zip(srcs, at):
        kept = rundir.checkpoint_steps(d) if step is not None and (d / rundir.CKPT_DIR).is_dir() else []
        if step is not None and step not in kept:
            raise ConfigError(f"source {source}: {d} has no checkpoint at step {step}; kept steps: {kept}")
    if any(step is not None for step, _ in at):
        if r.sources == "run":
            options["step"] = at[0][0]  # @STEP wins over --step
        else:
            options[RUN_STEPS] = [step for step, _ in at]
    return r.fn(srcs if r.sources == "runs" else srcs[0], Path(out), **options)


def _check_options(name: str, options: dict[str, Any]) -> None:
    """Each option is one figure ``name`` takes, of its default's kind: else one line naming it."""
    import inspect

    from anchorlab.config import ConfigError

    accepted = inspect.signature(FIGURES[name].fn).parameters
    for k, v in options.items():
        if k not in accepted:
            takers = [n for n in sorted(FIGURES) if k in inspect.signature(FIGURES[n].fn).parameters]
            options_ = [FLAG_USAGE.get(p, p) for p in list(accepted)[2:] if p != RUN_STEPS]
            given = FLAG_USAGE[k].split()[0] if k in FLAG_USAGE else f"option {k}={v!r}"
            raise ConfigError(f"figure {name}: {given} does not apply; its options are {', '.join(options_) or 'none'}"
                              f" (figures that take {given.removeprefix('option ').split('=')[0]}: "
                              f"{', '.join(takers) or 'none'})")
        default = accepted[k].default  # a flag or a number takes only its kind (one clear line, not a traceback)
        if isinstance(default, bool) and not isinstance(v, bool):
            raise ConfigError(f"figure {name}: option {k}: true or false, not {v!r}")
        if isinstance(default, (int, float)) and not isinstance(default, bool) \
                and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise ConfigError(f"figure {name}: option {k}: a number, not {v!r}")


def one_step(step: int | Sequence[int] | None) -> int | None:
    """The one checkpoint a single-checkpoint figure draws: ``--step`` (a repeated same value counts once;
    :func:`draw` refuses different ones), or None for the run's last kept checkpoint."""
    return step[-1] if isinstance(step, Sequence) else step


def source_kind(name: str) -> str | None:
    """What figure ``name`` reads ("sweep", "run", "runs" or "file"); None for an unknown name."""
    _load_all()
    return FIGURES[name].sources if name in FIGURES else None


def _takes_run_steps(r: Recipe) -> bool:
    import inspect

    params = inspect.signature(r.fn).parameters
    return RUN_STEPS in params or (r.sources == "run" and "step" in params)


def settle(fig: Any) -> Any:
    """``fig`` without the idle layout engine that ``tight_layout`` leaves behind (a placeholder that lays
    nothing out): with any engine set, ``savefig`` draws the whole figure once more before rendering it, to
    lay it out. An engine that does lay out (constrained, tight) is kept. Returns ``fig``."""
    from matplotlib.layout_engine import PlaceHolderLayoutEngine

    if isinstance(fig.get_layout_engine(), PlaceHolderLayoutEngine):
        fig.set_layout_engine(None)
    return fig


def save_figure(fig: Any, rows: list[dict[str, Any]], out: Path, name: str,
                source: dict[str, Any] | None = None) -> Path:
    """Write ``out/name.png`` and the data behind it as ``out/name.csv``, close ``fig`` and return the PNG path.
    ``source`` (a one-run figure's ``{"run_id": ..., "step": ...}``) leads every CSV row, so a CSV moved away
    from its PNG still says which run and checkpoint it describes.

    :func:`settle` drops the idle layout engine first: the PNG is the same, drawn once instead of twice."""
    from anchorlab.plotting.style import plt
    from anchorlab.sweep import write_csv

    if source:
        rows = [{**source, **r} for r in rows]

    out.mkdir(parents=True, exist_ok=True)
    settle(fig).savefig(out / f"{name}.png")
    plt.close(fig)
    write_csv(rows, out / f"{name}.csv")
    return out / f"{name}.png"


def _load_all() -> None:
    """Import the recipe modules of every run kind (:func:`anchorlab.kinds.figure_modules`)."""
    import importlib

    from anchorlab.kinds import figure_modules

    for mod in figure_modules():
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise


def model_label(cfg: Any, short: bool = True) -> str:
    """The model a run trains, as labels and captions name it: "Transformer 2L" (``short=False``:
    "Transformer, 2 layers"), "Emb-MLP", "GPT-2 12L × 768" for any config kind (anchor, LM, seq2seq)."""
    m = cfg.model
    arch = getattr(m, "name", None) or getattr(m, "arch", None) or "gpt2"
    if arch == "emb_mlp":
        return "Emb-MLP"
    depth = f"{m.n_layers}L" if short else f"{m.n_layers} layer{'s' * (m.n_layers != 1)}"
    if arch in ("gpt", "p1"):
        return f"Transformer {depth}" if short else f"Transformer, {depth}"
    return f"GPT-2 {depth} × {m.d_model}" if short else f"GPT-2, {depth} × {m.d_model}"


def names() -> list[str]:
    _load_all()
    return sorted(FIGURES)


def options_of(name: str) -> tuple[list[str], list[str]]:
    """Figure ``name``'s own options: (``key=default`` of those set with ``--option``, the flags it takes)."""
    import inspect

    _load_all()
    params = list(inspect.signature(FIGURES[name].fn).parameters.values())[2:]  # after the sources and out
    options, flags = [], []
    for p in params:
        if p.name in FLAG_USAGE:
            flags.append(FLAG_USAGE[p.name])
        elif p.name != RUN_STEPS:
            shown = str(p.default).lower() if isinstance(p.default, bool) else p.default
            options.append(f"{p.name}={shown}")
    return options, flags


def describe() -> str:
    """Per figure: name, what it reads, what it shows, and its options (``anchorlab figure list``)."""
    lines = []
    for n in names():
        lines.append(f"{n:10s} {'[' + FIGURES[n].sources + ']':8s} {FIGURES[n].help}")
        options, flags = options_of(n)
        parts = ([f"--option KEY=VALUE (defaults): {', '.join(options)}"] if options else []) + \
            ([f"flags: {', '.join(flags)}"] if flags else [])
        if parts:
            lines.append(f"{'':19s} {'; '.join(parts)}")
    return "\n".join(lines)
