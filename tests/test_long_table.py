"""experiments/long_table.py: the side-by-side table of long runs in docs/p1_frontier.md, from their records."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "experiments" / "long_table.py"


def _run(d: Path, evals: dict[int, tuple[float, float, float]], losses: dict[int, float]) -> Path:
    d.mkdir()
    (d / "metrics.jsonl").write_text("".join(json.dumps(
        {"epoch": e, "train_loss": 9.0, "seen_test_acc": s, "unseen_inferential_acc": i,
         "unseen_symmetric_acc": y}) + "\n" for e, (s, i, y) in evals.items()))
    (d / "epochs.jsonl").write_text("".join(json.dumps({"epoch": e, "train_loss": v}) + "\n"
                                            for e, v in losses.items()))
    return d


def test_rows_every_n_epochs_and_at_each_runs_last_with_each_epochs_own_loss(tmp_path):
    a = _run(tmp_path / "a", {0: (0.0, 0.0, 0.0), 2: (0.5, 0.6, 0.0), 6: (1.0, 0.2, 0.7)},
             {e: 1.0 / e for e in range(1, 7)})
    b = _run(tmp_path / "b", {0: (0.0, 0.0, 0.0), 3: (0.9, 0.1, 0.2)}, {1: 2.0, 2: 0.5, 3: 0.25})
    out = subprocess.run([sys.executable, str(SCRIPT), "--every", "6", f"A={a}", f"B={b}"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert out[0] == ("| epoch | A: epoch's train loss | seen test | inferential | symmetric | B: epoch's train loss "
                      "| seen test | inferential | symmetric |")
    assert out[2:] == [
        "| 0 | 9 | 0.000 | 0.000 | 0.000 | 9 | 0.000 | 0.000 | 0.000 |",  # no epoch loss at 0: the logged one
        "| 3 |  | | |  | 0.25 | 0.900 | 0.100 | 0.200 |",  # B's last evaluation; A did not evaluate epoch 3
        "| 6 | 0.17 | 1.000 | 0.200 | **0.700** |  | | |  |"]


def test_a_source_that_is_not_a_run_is_one_line_exit_2(tmp_path):
    r = subprocess.run([sys.executable, str(SCRIPT), f"A={tmp_path}"], capture_output=True, text=True)
    assert r.returncode == 2 and "is not LABEL=RUN_DIR" in r.stderr.strip().splitlines()[-1]
