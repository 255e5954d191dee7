"""The HTML building blocks of a report: escaping, tables, embedded figures (PNG as ``data:`` URIs, their
data as CSV downloads), the provenance block, a run section's head and a sweep page's head and table.
Everything is inline (CSS, the small script that sorts tables), so a report opens offline from disk.

Size: figures are saved at :data:`DPI` and stored as palette PNGs of :data:`COLORS` colours (about a
quarter of the RGBA file, no visible change on plots); numbers in the embedded CSVs keep
:data:`CSV_DIGITS` significant digits (``anchorlab figure`` writes them in full)."""

from __future__ import annotations

import base64
import html
import json
import platform
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import anchorlab
from anchorlab import provenance, rundir
from anchorlab.figures import draw, model_label, settle
from anchorlab.plotting.style import RC, plt
from anchorlab.sweep import run_dirs, write_csv

DPI = RC["figure.dpi"]  # report figures: the dpi they are laid out at (the recipes' own files: savefig.dpi)
COLORS = 128  # palette size of an embedded PNG
PNG_LEVEL = 8  # zlib level of an embedded PNG
CSV_DIGITS = 6

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


def esc(x: Any) -> str:
    return html.escape(str(x))


def fmt(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if v != v else f"{v:.4g}"
    return str(v)


def kv_table(d: dict[str, Any]) -> str:
    rows = "".join(f"<tr><td>{esc(k)}</td><td>{esc(fmt(v))}</td></tr>" for k, v in d.items())
    return f"<table><tbody>{rows}</tbody></table>"


def wide_table(d: dict[str, Any]) -> str:
    """One row of values under their keys (compact for many groups)."""
    return table([d], list(d))


def table(rows: Sequence[dict[str, Any]], columns: Sequence[str], sortable: bool = False,
           link_col: str | None = None, anchor: str = "", linked: set[str] | None = None) -> str:
    """An HTML table; ``link_col`` values link to their run section (only those in ``linked`` if given)."""
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = []
    for r in rows:
        cells = []
        for c in columns:
            v = r.get(c, "")
            text = esc(fmt(v))
            if c == link_col and v and (linked is None or v in linked):
                text = f'<a href="#{anchor}run-{esc(v)}">{text}</a>'
            data = f' data-value="{esc(v)}"' if isinstance(v, (int, float)) else ""
            cells.append(f"<td{data}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    cls = ' class="sortable"' if sortable else ""
    return f'<div class="scroll"><table{cls}><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def data_uri(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def palette_png(image: Any) -> bytes:
    """A Pillow image as a palette PNG of :data:`COLORS` colours: a quarter of the bytes of the RGBA file for
    line plots and heatmaps, with no visible change. zlib level :data:`PNG_LEVEL`: within 2 % of the
    smallest file (level 9) in a third of the time."""
    import io

    from PIL import Image  # a dependency of matplotlib

    q = image.convert("RGB").quantize(colors=COLORS, method=Image.Quantize.FASTOCTREE)
    buf = io.BytesIO()
    q.save(buf, format="PNG", compress_level=PNG_LEVEL)
    return buf.getvalue()


def small_png(png: bytes) -> bytes:
    """The same picture as a palette PNG (:func:`palette_png`), or ``png`` itself when that is not smaller
    or Pillow cannot read it."""
    import io

    from PIL import Image  # a dependency of matplotlib

    try:
        with Image.open(io.BytesIO(png)) as im:
            small = palette_png(im)
    except (OSError, ValueError):
        return png
    return small if len(small) < len(png) else png


def short_csv(data: bytes) -> bytes:
    """A CSV with its floats cut to :data:`CSV_DIGITS` significant digits (what a report's download needs)."""
    import csv
    import io

    def cut(v: str) -> str:
        if not v or not any(c in v for c in ".eE") or not v.lstrip("-")[:1].isdigit():
            return v
        try:
            return f"{float(v):.{CSV_DIGITS}g}"
        except ValueError:
            return v

    rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([rows[0], *([cut(v) for v in r] for r in rows[1:])] if rows else [])
    return buf.getvalue().encode("utf-8")


def one_sentence(e: BaseException, name: str = "") -> str:
    """An error as the report shows it: one line, without the ``figure NAME:`` prefix and with run
    directories shortened to their names."""
    import re

    text = " ".join(str(e).split())
    if name and text.startswith(f"figure {name}: "):
        text = text[len(f"figure {name}: "):]
    text = re.sub(r"(?:/[^\s/:;,']+)+/([^\s/:;,']+)", r"\1", text)  # /a/b/run -> run
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def models_of(sources: Sequence[Path]) -> str:
    """The models of the runs of ``sources`` (run or sweep directories), as captions name them."""
    labels = [model_label(rundir.read_config(d), short=False) for d in run_dirs(sources)
              if (d / rundir.CONFIG).is_file()]
    return ", ".join(dict.fromkeys(labels))


def img(png: bytes, alt: str, caption: str = "", csv: bytes | None = None, csv_name: str = "data.csv") -> str:
    link = f' <a download="{esc(csv_name)}" href="{data_uri(csv, "text/csv")}">data (CSV)</a>' if csv else ""
    return (f'<figure><img alt="{esc(alt)}" src="{data_uri(png, "image/png")}">'
            f"<figcaption>{esc(caption)}{link}</figcaption></figure>")


def fig_png(fig: Any) -> bytes:
    """``fig`` at :data:`DPI` as a palette PNG, then closed: drawn once (:func:`anchorlab.figures.settle`) and
    encoded once, from the canvas's pixels (no full-colour PNG in between)."""
    from PIL import Image  # a dependency of matplotlib

    settle(fig).set_dpi(DPI)
    fig.canvas.draw()
    png = palette_png(Image.fromarray(np.asarray(fig.canvas.buffer_rgba())))
    plt.close(fig)
    return png


def csv_bytes(rows: list[dict[str, Any]]) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        write_csv(rows, Path(tmp) / "t.csv")
        return short_csv((Path(tmp) / "t.csv").read_bytes())


def drawn(name: str, sources: list[Path], caption: str, **options: Any) -> str:
    """Draw a registered figure into a scratch directory and embed its PNG and CSV; the caption names the
    models of the runs it shows."""
    with tempfile.TemporaryDirectory() as tmp, plt.rc_context({"savefig.dpi": DPI}):
        try:
            png = draw(name, sources, tmp, **options)
        finally:
            plt.close("all")  # recipes of other modules may leave their figure open
        csv = png.with_suffix(".csv")
        models = models_of(sources)
        return img(small_png(png.read_bytes()), name, f"{name}" + (f" ({models})" if models else "") + f": {caption}",
                   short_csv(csv.read_bytes()) if csv.exists() else None, f"{name}.csv")


def provenance_block(run_dirs: Sequence[Path], anchor: str = "") -> str:
    import torch

    info = {"anchorlab version": anchorlab.__version__, "git commit": provenance.git_commit(),
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
    return (f'<h2 id="{anchor}provenance">Provenance</h2>' + kv_table(info)
            + table(rows, ["run_id", "status", "data_seed", "init_seed", "train_seed"], link_col="run_id",
                     anchor=anchor))



def run_head(run_dir: Path, title: str, level: int, anchor: str, curves: str) -> list[str]:
    """A run section's heading, resolved config and training curves, up to the "Final metrics" heading."""
    h, hs = f"h{level}", f"h{level + 1}"
    return [f'<{h} id="{anchor}run-{esc(run_dir.name)}">Run {esc(run_dir.name)}: {esc(title)}</{h}>',
            f"<{hs}>Resolved config</{hs}><details><summary>config.json</summary><pre>"
            f"{esc(json.dumps(rundir.read_json(run_dir / rundir.CONFIG), indent=2))}</pre></details>",
            f"<{hs}>Training curves</{hs}>" + curves, f"<{hs}>Final metrics</{hs}>"]


def sweep_head(sweep_dir: Path, manifest: dict[str, Any], rows: list[dict[str, Any]], existing: list[Path],
               sections: Sequence[tuple[str, str]], anchor: str = "") -> list[str]:
    """A sweep page's head: links to its ``sections`` ((id, title) pairs), the sweep's name, axes and counts,
    and the provenance of its runs."""
    nav = "<nav>" + "".join(f'<a href="#{anchor}{a}">{t}</a>' for a, t in sections) + "</nav>"
    counts = kv_table({"sweep": manifest.get("name", sweep_dir.name), "directory": sweep_dir.resolve(),
                       "axes": json.dumps(manifest.get("axes", {})), "runs": len(rows),
                       "done": sum(r["status"] == "done" for r in rows)})
    return [nav, counts, provenance_block(existing, anchor) if existing else ""]


def collected_table(rows: list[dict[str, Any]], axes: Sequence[str], head: Sequence[str], existing: list[Path],
                    anchor: str = "") -> str:
    """The sweep's collected table (sortable; run ids link to their sections) and its CSV: run id, grid
    coordinates, status, the ``head`` columns that any row has, then every other column."""
    head = [c for c in head if any(c in r for r in rows)]
    rest = sorted({k for r in rows for k in r} - {"run_id", "status", *axes, *head})
    return (f'<h2 id="{anchor}table">Collected table</h2><p class="skip">click a column header to sort</p>'
            + table(rows, ["run_id", *axes, "status", *head, *rest], sortable=True, link_col="run_id", anchor=anchor,
                    linked={d.name for d in existing})
            + f'<p><a download="summary.csv" href="{data_uri(csv_bytes(rows), "text/csv")}">table (CSV)</a></p>')


def skipped_list(title: str, items: Sequence[str]) -> str:
    """The figures left out, each with its reason (``items``: ``<li>`` elements)."""
    return f'<p class="skip">{title}:</p><ul class="skip">' + "".join(items) + "</ul>"
