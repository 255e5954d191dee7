"""Seconds to write the HTML report of run and sweep directories, against a baseline measured in the same run.

The report is written by ``anchorlab report SOURCE... --out`` in a fresh process (start-up and imports
included, as a user waits for them), ``--repeats`` times; the best wall and CPU seconds are kept. The baseline,
measured in between in its own process, is what matplotlib takes on this machine for one plain figure: a
2 x 3 grid of line plots (titles, legends, a log axis), laid out with ``tight_layout`` and saved as a PNG.
``report / baseline`` is then the report's cost in such figures: comparable across machines and loads,
where the seconds are not. Also printed: the report's size and its number of embedded figures.

    python -m benchmarks.report demo_out/runs demo_out/runs_p2           # the demo's 11 runs
    python -m benchmarks.report RUN_OR_SWEEP... --repeats 3 --out bench_report.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BASELINE = """
import time
import numpy as np
from anchorlab.plotting.style import plt, style
x = np.arange(1, 41)
best = float("inf")
for _ in range({n}):
    t = time.perf_counter()
    with style():
        fig, axes = plt.subplots(2, 3, figsize=(12.6, 6.4))
        for k, ax in enumerate(axes.ravel()):
            for j in range(4):
                ax.plot(x, np.exp(-x / (5 + 5 * j + k)), marker=".", label=f"line {{j}}")
            ax.set_yscale("log" if k == 0 else "linear")
            ax.set_title(f"panel {{k}}")
            ax.set_xlabel("epoch")
            ax.legend(fontsize=6)
        fig.suptitle("reference figure")
        fig.tight_layout()
    fig.savefig("{png}", dpi=90)
    plt.close(fig)
    best = min(best, time.perf_counter() - t)
print(best)
"""


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the child, its stdout) of one command, on one thread."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", nargs="+", help="run and/or sweep directories, as for `anchorlab report`")
    p.add_argument("--repeats", type=int, default=2, help="reports written (the best is kept)")
    p.add_argument("--baseline-figures", type=int, default=3, help="reference figures drawn (the best is kept)")
    p.add_argument("--out", help="also write the results as JSON here")
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "report.html"
        reports, baselines = [], []
        for _ in range(max(a.repeats, 1)):  # the two take turns, so a change in load hits both
            reports.append(timed([sys.executable, "-m", "anchorlab.cli", "report", *a.source, "--out", str(html)])[:2])
            script = BASELINE.format(n=a.baseline_figures, png=Path(tmp) / "ref.png")
            baselines.append(float(timed([sys.executable, "-c", script])[2].strip()))
        text = html.read_text(encoding="utf-8")
        size, figures = html.stat().st_size, len(re.findall(r'<img alt="', text))
    wall, cpu = min(r[0] for r in reports), min(r[1] for r in reports)
    figure_s = min(baselines)
    result = {"machine": {"python": platform.python_version(), "processor": platform.processor() or platform.machine(),
                          "cpus": os.cpu_count(), "load_avg_1min": os.getloadavg()[0]},
              "sources": a.source, "repeats": len(reports),
              "report": {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "bytes": size, "figures": figures},
              "baseline_figure_s": round(figure_s, 3),
              "report_in_baseline_figures": round(wall / figure_s, 1)}
    print(json.dumps(result, indent=2))
    if a.out:
        Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
