"""experiments/retrace.py: whether one run's records retrace another's, epoch by epoch, to the last digit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "experiments" / "retrace.py"


def _run(d: Path, losses: list[float], evals: dict[int, float], time: float = 0.0) -> Path:
    d.mkdir()
    (d / "epochs.jsonl").write_text("".join(json.dumps({"epoch": e + 1, "step": 10 * (e + 1), "train_loss": x,
                                                        "time": time + e}) + "\n" for e, x in enumerate(losses)))
    (d / "metrics.jsonl").write_text("".join(json.dumps({"epoch": e, "step": 10 * e, "unseen_inferential_acc": v})
                                             + "\n" for e, v in evals.items()))
    return d


def _retrace(a: Path, b: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(a), str(b)], capture_output=True, text=True)


def test_a_run_that_retraces_another_over_their_common_epochs(tmp_path):
    a = _run(tmp_path / "a", [4.7, 3.1, 2.2], {0: 0.0, 3: 0.9})
    b = _run(tmp_path / "b", [4.7, 3.1, 2.2, 1.0, 0.5], {0: 0.0, 3: 0.9, 6: 0.95}, time=99.0)  # longer, later
    done = _retrace(a, b)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["training (epochs' mean losses): equal over the 3 common epochs 1-3",
                                        "every logged number: equal over the 4 common epochs 0-3"]


def test_the_first_epoch_where_two_runs_part_and_its_field(tmp_path):
    a = _run(tmp_path / "a", [4.7, 3.1, 2.2], {0: 0.0, 3: 0.9})
    b = _run(tmp_path / "b", [4.7, 3.1000001, 2.3], {0: 0.0, 3: 0.8})
    done = _retrace(a, b)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "training (epochs' mean losses): part at epoch 2: train_loss 3.1 against 3.1000001 (equal through epoch 1)",
        "every logged number: part at epoch 2: train_loss 3.1 against 3.1000001 (equal through epoch 1)"]
    assert _retrace(a, tmp_path / "nowhere").returncode == 2
