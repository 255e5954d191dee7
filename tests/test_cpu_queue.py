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
    env = {"PATH": "/usr/bin:/bin", "ROOT": str(tmp_path), "ANCHORLAB": "echo", "SLOTS": "2", "PYTHON": "true"}
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
    # the trainers import a copy of src/ taken at launch, under the runs' root, first on their path
    [code] = (tmp_path / ".code").iterdir()
    assert (code / "anchorlab" / "__init__.py").is_file() and f"code: {code}" in done.stdout
    # one trainer at a time: two threads, unless THREADS says otherwise
    for extra, threads in (({"SLOTS": "1"}, 2), ({"SLOTS": "1", "THREADS": "3"}, 3)):
        (tmp_path / "lr_m30_g1.2_s2_bf16_e210.log").unlink()
        assert subprocess.run(["bash", str(SCRIPT)], env={**env, **extra}, capture_output=True, text=True,
                              timeout=60).returncode == 0
        assert command("1.2", 2) == f"train --resume {out['1.2', 2]} --set train.threads={threads}"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_sync_keeps_longer_committed_records(tmp_path):
    """experiments/sync_cpu_records.sh exports each long run's records into docs/, except where docs/ holds more
    epochs of it than the run (a run restarted from step 0 on a new machine): those records stay as they are."""
    (tmp_path / "experiments").mkdir()
    shutil.copy(ROOT / "experiments" / "sync_cpu_records.sh", tmp_path / "experiments")

    def records(path: Path, epochs: int) -> None:
        path.mkdir(parents=True)
        (path / "config.json").write_text("{}")
        (path / "epochs.jsonl").write_text("{}\n" * epochs)

    runs, docs = tmp_path / "runs" / "p1_levers_cpu", tmp_path / "docs" / "p1_levers" / "cpu_bf16"
    records(runs / "lr_m30_g1.2_s2_bf16_e210", 4)
    records(docs / "lr_m30_g1.2_s2_e210", 9)  # committed from a machine since lost
    records(runs / "lr_m30_g1.2_s3_bf16_e210", 4)
    records(docs / "lr_m30_g1.2_s3_e210", 2)
    records(runs / "lr_m30_g0.3_s1_bf16_e210", 1)  # nothing committed yet
    done = subprocess.run(["bash", str(tmp_path / "experiments" / "sync_cpu_records.sh")],
                          env={"PATH": "/usr/bin:/bin", "ANCHORLAB": "echo"}, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "lr_m30_g1.2_s2_e210: 4 epochs here, 9 committed: kept the committed records" in lines
    for run in ("g1.2_s3", "g0.3_s1"):
        assert (f"export runs/p1_levers_cpu/lr_m30_{run}_bf16_e210 --out docs/p1_levers/cpu_bf16 "
                f"--name lr_m30_{run}_e210") in lines
    assert not any("g1.2_s2" in line and line.startswith("export") for line in lines)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_queue_does_not_start_bf16_runs_on_a_cpu_without_bf16_kernels(tmp_path):
    """Where anchorlab.cpu.native_bf16 says no (here: a PYTHON that answers no), one line, exit 2, nothing
    written; ALLOW_EMULATED_BF16=1 starts them anyway."""
    env = {"PATH": "/usr/bin:/bin", "ROOT": str(tmp_path / "runs"), "ANCHORLAB": "echo", "PYTHON": "false"}
    done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "no bf16 kernels" in done.stderr and "ALLOW_EMULATED_BF16=1" in done.stderr
    assert not (tmp_path / "runs").exists()
    done = subprocess.run(["bash", str(SCRIPT)], env={**env, "ALLOW_EMULATED_BF16": "1", "SLOTS": "2"},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.count("exit 0") == 6
