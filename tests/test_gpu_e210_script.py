"""experiments/gpu_p1_m30_e210.sh (P1's 210-epoch protocol in one device call) checks the CUDA graph on the device
first and trains with it only if its fp32 test (as eager, to 1e-4) passed there; a second call on the warm machine
skips the checks and keeps the first call's choice; both sweeps (m = 30, then the best rates) train the same way.
Run with a stand-in for Python that trains nothing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FAKE_PY = """#!/usr/bin/env bash
# a stand-in for python: logs each call; pytest "passes" the fp32 graph test when FAKE_PASS is 1
echo "$*" >> "$LOG"
[ "$1" = "-c" ] && { echo "torch (stand-in)"; exit 0; }
if [ "$2" = pytest ] && [ "$FAKE_PASS" = 1 ]; then
    echo "PASSED tests/test_cuda_graph.py::test_a_graphed_group_trains_as_the_eager_one_up_to_rounding"
fi
exit 0
"""


@pytest.mark.skipif(any(shutil.which(t) is None for t in ("bash", "tar", "timeout", "grep")),
                    reason="needs bash, tar, timeout and grep")
@pytest.mark.parametrize("passes", [True, False])
def test_the_sweep_uses_the_graph_only_once_it_passed_on_the_device(tmp_path, passes):
    fake = tmp_path / "python"
    fake.write_text(FAKE_PY)
    fake.chmod(0o755)
    log = tmp_path / "calls.log"
    env = {"PATH": "/usr/bin:/bin", "PY": str(fake), "LOG": str(log), "FAKE_PASS": "1" if passes else "0",
           "OUT": str(tmp_path / "out"), "RUNS": str(tmp_path / "runs"), "LIMIT": "300"}
    for call in (1, 2):
        done = subprocess.run(["bash", str(ROOT / "experiments" / "gpu_p1_m30_e210.sh")], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        calls = log.read_text().splitlines()
        sweeps = [c.split("sweep ", 1)[1] for c in calls if " sweep " in f" {c} " and "--dry-run" not in c]
        assert len(sweeps) == 2 * call  # the 210-epoch protocol at m = 30, then at the best rates (time left)
        assert sweeps[-2].startswith("configs/sweeps/p1_m30_e210.toml")
        assert sweeps[-1].startswith("configs/sweeps/p1_best_rates_e210.toml")
        for sweep in sweeps[-2:]:
            assert "--batch-models 6" in sweep and ("--set train.cuda_graph=true" in sweep) is passes
        assert sum(" pytest " in f" {c} " for c in calls) == 1  # the checks run on the first call only
        assert sum("benchmarks.throughput" in c for c in calls) == 1
        assert (tmp_path / "out" / "p1_gpu_next.tar.gz").is_file()
    assert (tmp_path / "runs" / "gpu_next" / "graph_checked").read_text().strip() == ("1" if passes else "0")
