"""One self-contained HTML report of a run or a sweep directory: ``write_report(source, out)``.

Everything is embedded (PNG figures as base64 ``data:`` URIs, figure data as CSV ``data:`` downloads,
inline CSS and a small inline script that sorts the sweep table), so the file opens offline from disk.
A run's section holds its provenance (package version, git commit, run id, seeds), the resolved config,
training curves from ``metrics.jsonl``, the final metrics from ``summary.json`` and every P1 figure that
applies to it (:data:`anchorlab.figures.p1.RUN_FIGURES`; the others are listed with the reason).
A sweep's page adds a phase diagram over its first two non-seed axes, the collected table and the
sweep grid figures, then one section per run.
"""

from __future__ import annotations

import base64
import html
import json
import platform
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import anchorlab
from anchorlab import kinds, rundir
from anchorlab.config import ConfigError
from anchorlab.figures import draw
from anchorlab.figures.p1 import RUN_FIGURES, SWEEP_FIGURES, sweep_why_not, why_not
from anchorlab.metrics import HEADLINE
from anchorlab.phase import SEED_AXES, phase_grid
from anchorlab.plotting.curves import plot_training_curves
from anchorlab.plotting.figures import plot_phase_diagrams
from anchorlab.plotting.style import plt
from anchorlab.sweep import MANIFEST, collect, write_csv

# Phase-diagram metrics per task: (metrics drawn, metric whose value < 0.9 hatches a cell)
PHASE_METRICS = {"composite": (("unseen_symmetric_acc", "unseen_inferential_acc"), "seen_test_acc"),
                 "mem_rsn": (("mem_acc", "rsn_test_acc"), "rsn_train_acc")}
MECHANISM_KEYS = ("wq0_n_groups", "wq0_largest_group_frac", "embed_cov_top_share")

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5em auto;max-width:1300px;
     padding:0 1em;color:#222;line-height:1.4}
h1{font-size:1.5em}h2{font-size:1.25em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
h3{font-size:1.05em;margin-top:1.2em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
td,th{border:1px solid #ddd;padding:.2em .5em;text-align:right}th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}
table.sortable th{cursor:pointer;user-select:none}table.sortable th:hover{background:#e4e4e4}
.scroll{overflow-x:auto}img{max-width:100%;height:auto;display:block;margin:.4em 0}
figure{margin:1em 0}figcaption{font-size:.85em;color:#555}
pre{background:#f7f7f7;padding:.6em;font-size:.8em;overflow-x:auto}
.skip{color:#777;font-size:.85em}nav a{margin-right:.6em}
"""

SORT_JS = """
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('th').forEach(function (th, col) {
    th.addEventListener('click', function () {
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var asc = th.getAttribute('data-order') !== 'asc';
      table.querySelectorAll('th').forEach(function (h) { h.removeAttribute('data-order'); });
      th.setAttribute('data-order', asc ? 'asc' : 'desc');
      function key(r) {
        var t = r.cells[col].getAttribute('data-value') || r.cells[col].textContent;
        var x = parseFloat(t);
        return isNaN(x) ? t : x;
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        var c = (typeof x === 'number' && typeof y === 'number') ? x - y : String(x).localeCompare(String(y));
        return asc ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"""


def write_report(source: str | Path | Sequence[str | Path], out: str | Path | None = None,
                 max_run_figures: int = 12) -> Path:
    """Write the HTML report of run directories (with ``config.json``) and/or sweep directories (with
    ``sweep.json``), one section each, to ``out`` (default ``<first source>/report.html``); returns its path.
    In a sweep the P1/P2 figures are drawn for ``max_run_figures`` runs with a checkpoint, those of the
    first seed first (every run gets its curves and tables)."""
    sources = [Path(source)] if isinstance(source, (str, Path)) else [Path(s) for s in source]
    if not sources:
        raise ConfigError("source: give at least one run or sweep directory")
    titles, bodies = [], []
    for i, src in enumerate(sources):
        anchor = f"s{i}-" if len(sources) > 1 else ""
        if (src / MANIFEST).is_file():
            title, body = (_lm_sweep_page if _is_lm_sweep(src) else _sweep_page)(src, max_run_figures, anchor)
        elif (src / rundir.CONFIG).is_file():
            title = f"anchorlab run {src.name}"
            section = _lm_run_section(src, level=2, anchor=anchor) if _is_lm_run(src) else \
                _run_section(src, figures=True, level=2, all_p2=True, anchor=anchor)
            body = _provenance_block([src], anchor) + section
        else:
            raise ConfigError(f"source: {src} is neither a run directory ({rundir.CONFIG}) nor a sweep "
                              f"directory ({MANIFEST})")
        titles.append(title)
        bodies.append(body if len(sources) == 1 else f"<h1>{_e(title)}</h1>\n{body}")
    title = titles[0] if len(sources) == 1 else "anchorlab report: " + ", ".join(t.split(" ", 1)[1] for t in titles)
    header = f"<h1>{_e(title)}</h1>" if len(sources) == 1 else \
        "<nav>" + "".join(f'<a href="#src-{i}">{_e(t)}</a>' for i, t in enumerate(titles)) + "</nav>"
    body = "\n".join(f'<section id="src-{i}">{b}</section>' for i, b in enumerate(bodies))
    out = Path(out) if out is not None else sources[0] / "report.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    page = (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_e(title)}</title>"
            f"<style>{CSS}</style></head><body>{header}\n{body}\n<script>{SORT_JS}</script></body></html>\n")
    rundir.write_atomic(out, page)
    return out


# ------------------------------------------------------------------------------------------------
# HTML pieces


def _e(x: Any) -> str:
    return html.escape(str(x))


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if v != v else f"{v:.4g}"
    return str(v)


def _kv_table(d: dict[str, Any]) -> str:
    rows = "".join(f"<tr><td>{_e(k)}</td><td>{_e(_fmt(v))}</td></tr>" for k, v in d.items())
    return f"<table><tbody>{rows}</tbody></table>"


def _wide_table(d: dict[str, Any]) -> str:
    """One row of values under their keys (compact for many groups)."""
    return _table([d], list(d))


def _table(rows: Sequence[dict[str, Any]], columns: Sequence[str], sortable: bool = False,
           link_col: str | None = None, anchor: str = "", linked: set[str] | None = None) -> str:
    """An HTML table; ``link_col`` values link to their run section (only those in ``linked`` if given)."""
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = []
    for r in rows:
        cells = []
        for c in columns:
            v = r.get(c, "")
            text = _e(_fmt(v))
            if c == link_col and v and (linked is None or v in linked):
                text = f'<a href="#{anchor}run-{_e(v)}">{text}</a>'
            data = f' data-value="{_e(v)}"' if isinstance(v, (int, float)) else ""
            cells.append(f"<td{data}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    cls = ' class="sortable"' if sortable else ""
    return f'<div class="scroll"><table{cls}><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def _data_uri(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def _img(png: bytes, alt: str, caption: str = "", csv: bytes | None = None, csv_name: str = "data.csv") -> str:
    link = f' <a download="{_e(csv_name)}" href="{_data_uri(csv, "text/csv")}">data (CSV)</a>' if csv else ""
    return (f'<figure><img alt="{_e(alt)}" src="{_data_uri(png, "image/png")}">'
            f"<figcaption>{_e(caption)}{link}</figcaption></figure>")


def _fig_png(fig: Any) -> bytes:
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def _csv_bytes(rows: list[dict[str, Any]]) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        write_csv(rows, Path(tmp) / "t.csv")
        return (Path(tmp) / "t.csv").read_bytes()


def _drawn(name: str, sources: list[Path], caption: str, **options: Any) -> str:
    """Draw a registered figure into a scratch directory and embed its PNG and CSV."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            png = draw(name, sources, tmp, **options)
        finally:
            plt.close("all")  # recipes of other modules may leave their figure open
        csv = png.with_suffix(".csv")
        return _img(png.read_bytes(), name, f"{name}: {caption}", csv.read_bytes() if csv.exists() else None,
                    f"{name}.csv")


# ------------------------------------------------------------------------------------------------
# Provenance


def _p2_figures(sources: list[Path], kinds: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The P2 figures (registered ``p2-*`` recipes whose sources are in ``kinds``) drawn from ``sources``:
    (embedded figures, skipped ones with the recipe's reason). A recipe says it does not apply by raising
    :class:`ConfigError` (e.g. "this figure needs 'emb_mlp'")."""
    from anchorlab.figures import FIGURES, names

    parts, skipped = [], []
    for name in names():
        if name.startswith("p2-") and FIGURES[name].sources in kinds:
            try:
                parts.append(_drawn(name, sources, FIGURES[name].help))
            except ConfigError as e:
                skipped.append(f"<li>{_e(name)}: {_e(e)}</li>")
    return parts, skipped


def git_commit() -> str:
    """The commit of the anchorlab checkout (``+dirty`` with uncommitted changes), or "unknown"."""
    here = Path(anchorlab.__file__).resolve().parent
    try:
        sha = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _provenance_block(run_dirs: Sequence[Path], anchor: str = "") -> str:
    import torch

    info = {"anchorlab version": anchorlab.__version__, "git commit": git_commit(),
            "generated (UTC)": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
            "python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
            "source": str(Path(run_dirs[0]).resolve().parent if len(run_dirs) > 1 else Path(run_dirs[0]).resolve())}
    rows = []
    for d in run_dirs:
        cfg = rundir.read_json(d / rundir.CONFIG)
        s = cfg.get("seeds", {})
        rows.append({"run_id": d.name, "status": "done" if rundir.is_done(d) else "unfinished",
                     "data_seed": s.get("data_seed"), "init_seed": s.get("init_seed"),
                     "train_seed": s.get("train_seed")})
    return (f'<h2 id="{anchor}provenance">Provenance</h2>' + _kv_table(info)
            + _table(rows, ["run_id", "status", "data_seed", "init_seed", "train_seed"], link_col="run_id",
                     anchor=anchor))


# ------------------------------------------------------------------------------------------------
# One run


def _curves(history: list[dict[str, Any]], run_id: str) -> str:
    """Training curves per group: losses, the task's accuracies, per-group accuracy, mechanism scalars."""
    if not history:
        return '<p class="skip">no evaluations in metrics.jsonl yet</p>'
    epochs = [r["epoch"] for r in history]
    scalar_keys = [k for k in history[-1] if isinstance(history[-1][k], (int, float)) and k not in
                   ("step", "epoch", "lr")]
    panels: dict[str, dict[str, list[Any]]] = {
        "loss": {k: [r.get(k) for r in history] for k in scalar_keys if k.endswith("_loss")},
        "accuracy": {k: [r.get(k) for r in history] for k in scalar_keys if k.endswith("_acc")},
    }
    groups = list(history[-1].get("group_acc", {}))
    if groups:
        panels["accuracy per group"] = {g: [r.get("group_acc", {}).get(g) for r in history] for g in groups}
    mech = {k: [r.get(k) for r in history] for k in MECHANISM_KEYS if k in history[-1]}
    if mech:
        panels["mechanism scalars"] = {k: v for k, v in mech.items() if k != "wq0_n_groups"}
        if "wq0_n_groups" in mech:
            panels["W_Q⁰ groups (threshold 0.7)"] = {"wq0_n_groups": mech["wq0_n_groups"]}
        panels["stable rank"] = {k.split("/", 1)[1]: [r.get(k) for r in history] for k in scalar_keys
                                 if k.startswith("stable_rank/")}
    fig = plot_training_curves(epochs, panels, log_panels=("loss", "stable rank"),
                               unit_panels=("accuracy", "accuracy per group", "mechanism scalars"))
    flat = [{k: v for k, v in r.items() if not isinstance(v, dict)} for r in history]
    return _img(_fig_png(fig), "training curves", f"training curves of {run_id} ({len(history)} evaluations)",
                _csv_bytes(flat), f"{run_id}_metrics.csv")


def _final_metrics(summary: dict[str, Any], task: str) -> str:
    scalars = {k: v for k, v in summary.items() if not isinstance(v, (dict, list))}
    head = {k: scalars.pop(k) for k in (*HEADLINE.get(task, ()), "final_train_loss") if k in scalars}
    out = "<h4>Headline</h4>" + _kv_table(head)
    if isinstance(summary.get("best"), dict):
        out += "<h4>Best over evaluations</h4>" + _kv_table(summary["best"])
    if isinstance(summary.get("group_acc"), dict):
        out += "<h4>Accuracy per group (final)</h4>" + _wide_table(summary["group_acc"])
    if isinstance(summary.get("unseen_deviation"), dict):
        out += "<h4>Held-out pair: prediction − inferential answer (fraction)</h4>" + _wide_table(
            summary["unseen_deviation"])
    out += "<details><summary>all final scalars</summary>" + _kv_table(scalars) + "</details>"
    return out


def _run_head(run_dir: Path, title: str, level: int, anchor: str, curves: str) -> list[str]:
    """A run section's heading, resolved config and training curves, up to the "Final metrics" heading."""
    h, hs = f"h{level}", f"h{level + 1}"
    return [f'<{h} id="{anchor}run-{_e(run_dir.name)}">Run {_e(run_dir.name)}: {_e(title)}</{h}>',
            f"<{hs}>Resolved config</{hs}><details><summary>config.json</summary><pre>"
            f"{_e(json.dumps(rundir.read_json(run_dir / rundir.CONFIG), indent=2))}</pre></details>",
            f"<{hs}>Training curves</{hs}>" + curves, f"<{hs}>Final metrics</{hs}>"]


def _run_section(run_dir: Path, figures: bool, level: int = 3, all_p2: bool = False, anchor: str = "") -> str:
    """A run's config, curves, final metrics and figures: the P1 ones that apply and, for the ``mem_rsn``
    task, the P2 ones (single-run recipes; with ``all_p2`` also those over several runs)."""
    cfg = rundir.read_config(run_dir)
    hs = f"h{level + 1}"
    parts = _run_head(run_dir, f"{cfg.task.name} / {cfg.model.name}, γ {cfg.init.gamma:g}, {cfg.model.n_layers} "
                      f"layer(s), seed {cfg.seeds.init_seed}", level, anchor,
                      _curves(rundir.read_metrics(run_dir), run_dir.name))
    if (run_dir / rundir.SUMMARY).is_file():
        parts.append(_final_metrics(rundir.read_json(run_dir / rundir.SUMMARY), cfg.task.name))
    else:
        parts.append('<p class="skip">unfinished run: no summary.json yet</p>')
    parts.append(f"<{hs}>Mechanism figures (P1)</{hs}>")
    has_ckpt = (run_dir / rundir.CKPT_DIR).is_dir() and bool(rundir.checkpoint_steps(run_dir))
    if not has_ckpt:
        parts.append('<p class="skip">no kept checkpoint: no figures</p>')
    elif not figures:
        parts.append(f'<p class="skip">figures left out (--max-run-figures; the first seed of each grid point '
                     f"comes first); draw them with <code>anchorlab report {_e(run_dir)}</code></p>")
    else:
        from anchorlab.figures import FIGURES

        skipped = []
        for name in RUN_FIGURES:
            reason = why_not(name, cfg)
            if reason:
                skipped.append(f"<li>{_e(name)}: {_e(reason)}</li>")
            else:
                parts.append(_drawn(name, [run_dir], FIGURES[name].help))
        if cfg.task.name == "mem_rsn":
            p2, p2_skipped = _p2_figures([run_dir], ("run", "runs") if all_p2 else ("run",))
            parts.append(f"<{hs}>Figures (P2)</{hs}>" + "".join(p2))
            skipped += p2_skipped
        if skipped:
            parts.append('<p class="skip">not applicable to this run:</p><ul class="skip">' + "".join(skipped)
                         + "</ul>")
    return "\n".join(parts)


# ------------------------------------------------------------------------------------------------
# A sweep


def _phase(rows: list[dict[str, Any]], axes: dict[str, list[Any]], task: str) -> str:
    """A phase diagram over the first two non-seed axes with more than one value (one row if only one)."""
    grid_axes = [a for a, v in axes.items() if a not in SEED_AXES and len(v) > 1]
    done = [r for r in rows if r.get("status") == "done"]
    metrics, mask_metric = PHASE_METRICS.get(task, ((), ""))
    if not grid_axes or not done or not metrics or any(m not in done[0] for m in (*metrics, mask_metric)):
        return '<p class="skip">no phase diagram: the sweep has no non-seed axis with two or more values, ' \
               "no finished run, or no phase metrics for this task</p>"
    x = grid_axes[0]
    y = grid_axes[1] if len(grid_axes) > 1 else "(all)"
    done = [{**r, "(all)": "all"} for r in done]
    g = phase_grid(done, x=x, y=y, metrics=metrics, mask_metric=mask_metric)
    fig = plot_phase_diagrams(g["xs"], g["ys"], {m: g[m] for m in metrics}, g["mask"], xlabel=x, ylabel=y)
    table = [{x: xv, y: yv, **{m: g[m][i, j] for m in (*metrics, mask_metric)}, "hatched": bool(g["mask"][i, j]),
              "n_seeds": int(g["n_seeds"][i, j])} for i, yv in enumerate(g["ys"]) for j, xv in enumerate(g["xs"])]
    other = grid_axes[2:]
    note = (f"final evaluation per run; best over {', '.join(other)}; " if other else "final evaluation per run; ") + \
        f"mean over seeds; hatched where {mask_metric} < 0.9"
    return _img(_fig_png(fig), "phase diagram", note, _csv_bytes(table), "phase.csv")


def _figure_order(manifest: dict[str, Any]) -> list[str]:
    """Run ids in the order they get figures: the runs of the first seed (one per grid point) first."""
    axes = manifest.get("axes", {})
    seed_axis = next((a for a in SEED_AXES if a in axes), None)
    runs = list(manifest["runs"].items())
    if seed_axis is None:
        return [r for r, _ in runs]
    first = axes[seed_axis][0]
    return [r for r, p in runs if p.get(seed_axis) == first] + [r for r, p in runs if p.get(seed_axis) != first]


def _sweep_page(sweep_dir: Path, max_run_figures: int, anchor: str = "") -> tuple[str, str]:
    manifest = rundir.read_json(sweep_dir / MANIFEST)
    rows = collect(sweep_dir)
    run_dirs = [sweep_dir / r["run_id"] for r in rows]
    existing = [d for d in run_dirs if (d / rundir.CONFIG).is_file()]
    first = rundir.read_config(existing[0]) if existing else None
    task = first.task.name if first else "composite"
    parts = ["<nav>" + "".join(f'<a href="#{anchor}{a}">{t}</a>' for a, t in (
        ("provenance", "provenance"), ("phase", "phase diagram"), ("table", "table"), ("grids", "sweep figures"),
        ("runs", "runs"))) + "</nav>"]
    parts.append(_kv_table({"sweep": manifest.get("name", sweep_dir.name), "directory": sweep_dir.resolve(),
                            "axes": json.dumps(manifest.get("axes", {})), "runs": len(rows),
                            "done": sum(r["status"] == "done" for r in rows)}))
    parts.append(_provenance_block(existing, anchor) if existing else "")
    parts.append(f'<h2 id="{anchor}phase">Phase diagram</h2>' + _phase(rows, manifest.get("axes", {}), task))
    axes = list(manifest.get("axes", {}))
    head = [c for c in (*HEADLINE.get(task, ()), "final_train_loss", *MECHANISM_KEYS) if any(c in r for r in rows)]
    rest = sorted({k for r in rows for k in r} - {"run_id", "status", *axes, *head})
    columns = ["run_id", *axes, "status", *head, *rest]
    parts.append(f'<h2 id="{anchor}table">Collected table</h2><p class="skip">click a column header to sort</p>'
                 + _table(rows, columns, sortable=True, link_col="run_id", anchor=anchor,
                          linked={d.name for d in existing})
                 + f'<p><a download="summary.csv" href="{_data_uri(_csv_bytes(rows), "text/csv")}">'
                   "table (CSV)</a></p>")
    parts.append(f'<h2 id="{anchor}grids">Sweep figures</h2>')
    skipped = []
    for name in SWEEP_FIGURES:
        reason = sweep_why_not(name, sweep_dir, first.model.name) if first else "no run"
        if reason:
            skipped.append(f"<li>{_e(name)}: {_e(reason)}</li>")
        else:
            from anchorlab.figures import FIGURES

            parts.append(_drawn(name, [sweep_dir], FIGURES[name].help))
    done = [d for d in existing if rundir.is_done(d)]
    if task == "mem_rsn" and done:  # the P2 figures over several runs (training curves per γ, Fig. 8)
        p2, p2_skipped = _p2_figures(done, ("runs",))
        parts += p2
        skipped += p2_skipped
    if skipped:
        parts.append('<p class="skip">not applicable to this sweep:</p><ul class="skip">' + "".join(skipped) + "</ul>")
    parts.append(f'<h2 id="{anchor}runs">Runs</h2>')
    with_ckpt = [d for d in existing if (d / rundir.CKPT_DIR).is_dir() and rundir.checkpoint_steps(d)]
    ranked = [sweep_dir / r for r in _figure_order(manifest) if sweep_dir / r in with_ckpt]
    gets_figures = set(ranked[:max_run_figures])
    for d in existing:
        parts.append(_run_section(d, figures=d in gets_figures, anchor=anchor))
    missing = [d.name for d in run_dirs if d not in existing]
    if missing:
        parts.append(f'<p class="skip">not started: {_e(", ".join(missing))}</p>')
    return f"anchorlab sweep {manifest.get('name', sweep_dir.name)}", "\n".join(parts)


# ------------------------------------------------------------------------------------------------
# Real-language runs (`anchorlab lm`): GPT-2 on PrOntoQA + stories

LM_FIGURES = ("p2-fig1", "p2-fig7a", "p2-fig7b", "p1-fig7")


def _is_lm_run(run_dir: Path) -> bool:
    return kinds.kind_of_data(rundir.read_json(run_dir / rundir.CONFIG)).name == "lm"


def _is_lm_sweep(sweep_dir: Path) -> bool:
    return kinds.kind_of_data(rundir.read_json(sweep_dir / MANIFEST).get("base", {})).name == "lm"


def _lm_curves(history: list[dict[str, Any]], run_id: str) -> str:
    """Per-source losses, True/False accuracy and token-embedding cosines over steps."""
    if not history:
        return '<p class="skip">no evaluations in metrics.jsonl yet</p>'
    steps = [r["step"] for r in history]
    last = history[-1]

    def series(keys: list[str]) -> dict[str, list[Any]]:
        return {k: [r.get(k) for r in history] for k in keys if k in last}

    panels = {"loss (per source)": series([f"{s}_loss_{src}" for s in ("train", "test")
                                            for src in ("prontoqa", "stories")] + ["train_loss"]),
              "PrOntoQA True/False accuracy": series(["train_acc_prontoqa", "test_acc_prontoqa"]),
              "token-embedding cosine": series([k for k in last if k.startswith("emb_cos_")])}
    fig = plot_training_curves(steps, {k: v for k, v in panels.items() if v}, log_panels=("loss (per source)",),
                               unit_panels=("PrOntoQA True/False accuracy",), xlabel="step")
    return _img(_fig_png(fig), "training curves", f"training curves of {run_id} ({len(history)} evaluations)",
                _csv_bytes(history), f"{run_id}_metrics.csv")


def _lm_figures(run_dirs: list[Path]) -> str:
    """The real-language figures drawn from ``run_dirs``; those that do not apply are listed with the reason."""
    from anchorlab.figures import FIGURES, names

    names()  # loads every recipe
    with_stories = any(rundir.read_json(d / rundir.CONFIG)["data"]["n_stories"] > 0 for d in run_dirs)
    parts, skipped = [], []
    for name in LM_FIGURES:
        if (name == "p1-fig7") == with_stories:
            skipped.append(f"<li>{_e(name)}: {'for PrOntoQA-only runs' if with_stories else 'needs stories in the mix'}"
                           "</li>")
            continue
        try:
            parts.append(_drawn(name, run_dirs, FIGURES[name].help))
        except ConfigError as e:
            skipped.append(f"<li>{_e(name)}: {_e(e)}</li>")
    if skipped:
        parts.append('<p class="skip">not drawn:</p><ul class="skip">' + "".join(skipped) + "</ul>")
    return "\n".join(parts)


def _lm_run_section(run_dir: Path, level: int = 3, anchor: str = "", figures: bool = True) -> str:
    cfg = rundir.read_config(run_dir)
    hs = f"h{level + 1}"
    m = cfg.model
    parts = _run_head(run_dir, f"GPT-2 {m.n_layers} × {m.d_model} ({m.n_heads} heads), γ {cfg.init.gamma:g} "
                      f"({cfg.init.convention}), {cfg.data.n_prontoqa} PrOntoQA + {cfg.data.n_stories} stories "
                      f"({cfg.data.stories}), seed {cfg.seeds.init_seed}", level, anchor,
                      _lm_curves(rundir.read_metrics(run_dir), run_dir.name))
    if (run_dir / rundir.SUMMARY).is_file():
        summary = rundir.read_json(run_dir / rundir.SUMMARY)
        parts.append(_kv_table({k: v for k, v in summary.items() if not isinstance(v, (dict, list))}))
    else:
        parts.append('<p class="skip">unfinished run: no summary.json yet</p>')
    if figures and rundir.read_metrics(run_dir):
        parts.append(f"<{hs}>Figures</{hs}>" + _lm_figures([run_dir]))
    return "\n".join(parts)


def _lm_sweep_page(sweep_dir: Path, max_run_figures: int, anchor: str = "") -> tuple[str, str]:
    """A real-language sweep: provenance, the collected table, the figures over all its runs, then each run
    (curves and final metrics; the figures already show every run, so ``max_run_figures`` is not used)."""
    manifest = rundir.read_json(sweep_dir / MANIFEST)
    rows = collect(sweep_dir)
    existing = [sweep_dir / r["run_id"] for r in rows if (sweep_dir / r["run_id"] / rundir.CONFIG).is_file()]
    parts = ["<nav>" + "".join(f'<a href="#{anchor}{a}">{t}</a>' for a, t in (
        ("provenance", "provenance"), ("table", "table"), ("grids", "figures"), ("runs", "runs"))) + "</nav>"]
    parts.append(_kv_table({"sweep": manifest.get("name", sweep_dir.name), "directory": sweep_dir.resolve(),
                            "axes": json.dumps(manifest.get("axes", {})), "runs": len(rows),
                            "done": sum(r["status"] == "done" for r in rows)}))
    parts.append(_provenance_block(existing, anchor) if existing else "")
    axes = list(manifest["runs"][rows[0]["run_id"]]) if rows else []
    head = [c for c in ("step", "train_loss_prontoqa", "train_loss_stories", "test_loss_prontoqa",
                        "test_loss_stories", "test_acc_prontoqa", "emb_cos_prontoqa", "emb_cos_stories")
            if any(c in r for r in rows)]
    rest = sorted({k for r in rows for k in r} - {"run_id", "status", *axes, *head})
    parts.append(f'<h2 id="{anchor}table">Collected table</h2><p class="skip">click a column header to sort</p>'
                 + _table(rows, ["run_id", *axes, "status", *head, *rest], sortable=True, link_col="run_id",
                          anchor=anchor, linked={d.name for d in existing})
                 + f'<p><a download="summary.csv" href="{_data_uri(_csv_bytes(rows), "text/csv")}">'
                   "table (CSV)</a></p>")
    with_history = [d for d in existing if rundir.read_metrics(d)]
    parts.append(f'<h2 id="{anchor}grids">Figures over the runs</h2>'
                 + (_lm_figures(with_history) if with_history else '<p class="skip">no evaluations yet</p>'))
    parts.append(f'<h2 id="{anchor}runs">Runs</h2>')
    for d in existing:
        parts.append(_lm_run_section(d, anchor=anchor, figures=False))
    return f"anchorlab sweep {manifest.get('name', sweep_dir.name)}", "\n".join(parts)
