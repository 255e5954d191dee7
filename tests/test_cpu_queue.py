"""experiments/cpu_p1_m30_e210.sh (the 210-epoch m = 30 protocol as one CPU queue) picks, per run, the command that
continues it: --resume where the run directory exists, --from a shorter run of it where one exists, else the
config from step 0. Run with `echo` in place of anchorlab, so nothing trains."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "experiments" / "cpu_p1_m30_e210.sh"


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("xargs") is None, reason="needs bash and xargs")
def test_the_queue_resumes_continues_or_starts_each_run(tmp_path):
    for name in ("lr_m30_g1.2_s2_bf16_e210", "lr_m30_g1.2_s1_bf16_e39", "lr_m30_g1.2_s3_bf16"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")
    env = {"PATH": "/usr/bin:/bin", "ROOT": str(tmp_path), "ANCHORLAB": "echo", "SLOTS": "2"}
    done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr

    def command(gamma: str, seed: int) -> str:
        return (tmp_path / f"lr_m30_g{gamma}_s{seed}_bf16_e210.log").read_text().strip()

    out = {(g, s): str(tmp_path / f"lr_m30_g{g}_s{s}_bf16_e210") for g in ("1.2", "0.3") for s in (1, 2, 3)}
    # every command sets the threads: one a trainer with two trainers side by side (a run continued by --from
    # would otherwise keep its source's)
    assert command("1.2", 2) == f"train --resume {out['1.2', 2]} --set train.threads=1"
    assert command("1.2", 1) == (f"train --from {tmp_path / 'lr_m30_g1.2_s1_bf16_e39'} --set train.epochs=210 "
                                 f"--set train.checkpoint_every=3 --set train.threads=1 --out {out['1.2', 1]}")
    assert command("1.2", 3).startswith(f"train --from {tmp_path / 'lr_m30_g1.2_s3_bf16'} --set train.epochs=210")
    for seed in (1, 2, 3):  # no shorter run of the large init: from step 0, P1's schedule at m = 30
        assert command("0.3", seed) == (
            "train configs/p1/cbook.toml --set train.epochs=210 --set train.eval_every=3 "
            "--set train.checkpoint_every=3 --set train.precision=bf16 --set init.gamma=0.3 "
            f"--set train.lr_multiplier=30 --set seed={seed} --set train.threads=1 --out {out['0.3', seed]}")
    assert done.stdout.count("exit 0") == 6
    # one trainer at a time: two threads, unless THREADS says otherwise
    for extra, threads in (({"SLOTS": "1"}, 2), ({"SLOTS": "1", "THREADS": "3"}, 3)):
        (tmp_path / "lr_m30_g1.2_s2_bf16_e210.log").unlink()
        assert subprocess.run(["bash", str(SCRIPT)], env={**env, **extra}, capture_output=True, text=True,
                              timeout=60).returncode == 0
        assert command("1.2", 2) == f"train --resume {out['1.2', 2]} --set train.threads={threads}"
