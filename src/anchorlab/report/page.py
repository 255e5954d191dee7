"""One self-contained HTML report of run and sweep directories: ``write_report(sources, out)``.

Each source is a section, drawn by its run kind (:mod:`anchorlab.kinds`: :mod:`.anchor` or :mod:`.lm`) from
the building blocks of :mod:`.html`. When the sources hold composite-task (P1) runs at two or more γ, the page
opens with P1's γ comparison (``p1-gamma``: inferential and symmetric accuracy on the held-out pair per γ,
one dot per seed; ``p1-curves``: the same over training, a line per seed; ``p1-condensation``: the logged
mechanism scalars over training, where the runs logged them). Everything is embedded (figures as
base64 ``data:`` URIs, figure data as CSV downloads, inline CSS and a small script that sorts the sweep table),
so the file opens offline from disk.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from anchorlab import kinds, rundir
from anchorlab.config import ConfigError
from anchorlab.figures import FIGURES
from anchorlab.report.html import CSS, SORT_JS, drawn, esc
from anchorlab.sweep import MANIFEST, read_manifest, run_dirs

PER_RUN_PANELS = 16  # at most this many runs of one γ get a panel each at the top of the page


def gamma_section(sources: Sequence[Path]) -> str:
    """P1's γ comparison over every composite-task run of ``sources`` with an evaluation; where they hold one γ
    only, the held-out pair over training with a panel per run (and its training loss) for 2 to
    :data:`PER_RUN_PANELS` runs given as run directories (a sweep has its own figure of all runs); else ""."""
    from anchorlab.figures.curves import MECHANISM_KEYS
    from anchorlab.figures.gamma import gamma_rows

    runs = [d for d in run_dirs(sources) if (d / rundir.CONFIG).is_file()]
    rows = gamma_rows(runs)
    used = [d for d in runs if d.name in {r["run_id"] for r in rows}]
    if len({r["gamma"] for r in rows}) < 2:
        loose = [d for d in used if d in sources]  # given as run directories, not through a sweep
        if not 2 <= len(loose) <= PER_RUN_PANELS:
            return ""
        return ('<h2 id="gamma">P1: the held-out pair over training, a panel per run</h2>'
                + drawn("p1-curves", loose, FIGURES["p1-curves"].help, loss=True, panels="run"))
    logged = any(key in r for d in used for r in rundir.read_metrics(d) for key in MECHANISM_KEYS.values())
    return ('<h2 id="gamma">P1: inferential or symmetric, per γ</h2>'
            + drawn("p1-gamma", used, FIGURES["p1-gamma"].help) + drawn("p1-curves", used, FIGURES["p1-curves"].help)
            + (drawn("p1-condensation", used, FIGURES["p1-condensation"].help) if logged else ""))


def _sections(src: Path) -> list[Path]:
    """The sections ``src`` stands for: itself when it is a sweep or a run directory; the run directories in it,
    by name, when it is a folder of runs (such as ``runs/``). Anything else is one line naming it."""
    if (src / MANIFEST).is_file() or (src / rundir.CONFIG).is_file():
        return [src]
    inside = run_dirs([src])
    if inside == [src]:
        raise ConfigError(f"source: {src} is neither a run directory ({rundir.CONFIG}), a sweep directory "
                          f"({MANIFEST}) nor a folder of run directories")
    return inside


def write_report(source: str | Path | Sequence[str | Path], out: str | Path | None = None,
                 max_run_figures: int | None = None) -> Path:
    """Write the HTML report of run directories (with ``config.json``), sweep directories (with ``sweep.json``)
    and folders of run directories (such as ``runs/``: a section per run), one section each, to ``out`` (default
    ``<first source>/report.html``); returns its path.
    In a sweep the figures that compare runs are drawn over ``max_run_figures`` runs with a checkpoint
    (default: one per grid point, at most 12; those of the first seed first), and the curves and single-run
    figures of at most two representative runs among them (:func:`.anchor.representative`); every run gets
    its tables, and its curves are in the sweep's figure of all runs."""
    given = [Path(source)] if isinstance(source, (str, Path)) else [Path(s) for s in source]
    if not given:
        raise ConfigError("source: give at least one run or sweep directory")
    sources = [d for src in given for d in _sections(src)]
    titles, bodies = [], []
    for i, src in enumerate(sources):
        anchor = f"s{i}-" if len(sources) > 1 else ""
        if (src / MANIFEST).is_file():
            kind = kinds.kind_of_data(read_manifest(src).get("base", {}))
            title, body = kind.get("report_sweep")(src, max_run_figures, anchor)
        else:
            title = f"anchorlab run {src.name}"
            body = kinds.kind_of_data(rundir.read_json(src / rundir.CONFIG)).get("report_run")(src, anchor)
        titles.append(title)
        bodies.append(body if len(sources) == 1 else f"<h1>{esc(title)}</h1>\n{body}")
    title = titles[0] if len(sources) == 1 else "anchorlab report: " + ", ".join(t.split(" ", 1)[1] for t in titles)
    header = f"<h1>{esc(title)}</h1>" if len(sources) == 1 else \
        "<nav>" + "".join(f'<a href="#src-{i}">{esc(t)}</a>' for i, t in enumerate(titles)) + "</nav>"
    body = "\n".join([gamma_section(sources), *(f'<section id="src-{i}">{b}</section>' for i, b in enumerate(bodies))])
    out = Path(out) if out is not None else given[0] / "report.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    page = (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{esc(title)}</title>"
            f"<style>{CSS}</style></head><body>{header}\n{body}\n<script>{SORT_JS}</script></body></html>\n")
    rundir.write_atomic(out, page)
    return out
