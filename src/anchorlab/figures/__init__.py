"""Figure recipes, one registry: ``FIGURES[name] = Recipe``; ``anchorlab figure NAME SOURCE... --out DIR``.

Each recipe reads run or sweep directories (never re-runs training), computes the figure's data,
and writes ``<out>/<name>.png`` with the data behind it as ``<out>/<name>.csv`` (and returns the PNG path).
Modules: :mod:`.phase` (from logged metrics: P1 Fig. 2, 14, p1-gamma, p1-curves), :mod:`.p1` (P1 mechanism
figures), :mod:`.p2` (P2 figures), :mod:`.text` (real-language figures).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FigureFn = Callable[..., Path]


@dataclass(frozen=True)
class Recipe:
    name: str
    fn: FigureFn      # fn(sources: list[Path], out: Path, **options) -> Path of the PNG
    sources: str      # what SOURCE is: "sweep", "run" or "runs" (run directories; a sweep directory = its runs)
    help: str


FIGURES: dict[str, Recipe] = {}
# The command-line flags of options every recipe may take (named in errors; others are --option KEY=VALUE).
CLI_FLAGS = {"method": " (--method)", "step": " (--step)", "use_best_epoch": " (--best-epoch)"}


def figure(name: str, sources: str, help: str) -> Callable[[FigureFn], FigureFn]:
    """Register ``fn`` as figure ``name``."""
    if sources not in ("sweep", "run", "runs"):
        raise ValueError(f"figure {name}: sources must be 'sweep', 'run' or 'runs', got {sources!r}")

    def register(fn: FigureFn) -> FigureFn:
        FIGURES[name] = Recipe(name, fn, sources, help)
        return fn
    return register


def draw(name: str, sources: Sequence[str | Path], out: str | Path, **options: Any) -> Path:
    """Draw figure ``name`` from ``sources`` into ``out``; a clear error for an unknown name or bad sources."""
    _load_all()
    if name not in FIGURES:
        from anchorlab.config import ConfigError
        raise ConfigError(f"figure: unknown name {name!r}; allowed: {', '.join(sorted(FIGURES))}")
    r = FIGURES[name]
    srcs = [Path(s) for s in sources]
    if r.sources == "runs":  # a sweep directory stands for its runs
        from anchorlab.sweep import run_dirs
        srcs = run_dirs(srcs)
    if not srcs:
        from anchorlab.config import ConfigError
        raise ConfigError(f"figure {name}: give at least one {'run' if r.sources == 'runs' else r.sources} directory")
    if r.sources != "runs" and len(srcs) != 1:
        from anchorlab.config import ConfigError
        raise ConfigError(f"figure {name}: takes one {r.sources} directory, got {len(srcs)}")
    for s in srcs:
        if not s.is_dir():
            from anchorlab.config import ConfigError
            raise ConfigError(f"figure {name}: source {s} is not a directory")
    import inspect

    accepted = inspect.signature(r.fn).parameters
    for k, v in options.items():
        if k not in accepted:
            from anchorlab.config import ConfigError
            takers = [n for n in sorted(FIGURES) if k in inspect.signature(FIGURES[n].fn).parameters]
            raise ConfigError(f"figure {name}: option {k}={v!r}{CLI_FLAGS.get(k, '')} does not apply; its options "
                              f"are {', '.join(list(accepted)[2:]) or 'none'} (figures that take {k}: "
                              f"{', '.join(takers) or 'none'})")
    return r.fn(srcs if r.sources == "runs" else srcs[0], Path(out), **options)


def settle(fig: Any) -> Any:
    """``fig`` without the idle layout engine that ``tight_layout`` leaves behind (a placeholder that lays
    nothing out): with any engine set, ``savefig`` draws the whole figure once more before rendering it, to
    lay it out. An engine that does lay out (constrained, tight) is kept. Returns ``fig``."""
    from matplotlib.layout_engine import PlaceHolderLayoutEngine

    if isinstance(fig.get_layout_engine(), PlaceHolderLayoutEngine):
        fig.set_layout_engine(None)
    return fig


def save_figure(fig: Any, rows: list[dict[str, Any]], out: Path, name: str) -> Path:
    """Write ``out/name.png`` and the data behind it as ``out/name.csv``, close ``fig`` and return the PNG path.

    :func:`settle` drops the idle layout engine first: the PNG is the same, drawn once instead of twice."""
    from anchorlab.plotting.style import plt
    from anchorlab.sweep import write_csv

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
    if arch == "gpt":
        return f"Transformer {depth}" if short else f"Transformer, {depth}"
    return f"GPT-2 {depth} × {m.d_model}" if short else f"GPT-2, {depth} × {m.d_model}"


def names() -> list[str]:
    _load_all()
    return sorted(FIGURES)


def describe() -> str:
    """One line per figure: name, what it reads, what it shows (``anchorlab figure list``)."""
    return "\n".join(f"{n:10s} {'[' + FIGURES[n].sources + ']':8s} {FIGURES[n].help}" for n in names())
