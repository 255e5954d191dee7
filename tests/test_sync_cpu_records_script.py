"""experiments/sync_cpu_records.sh exports the long CPU runs' records into the docs folders that cite them (the
210-epoch runs under their docs names, the half-rows protocol's runs by run id), never a checkpoint. Run on a copy
of the script in a scratch tree, with the real `anchorlab export`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from anchorlab import rundir
from tests.conftest import tiny_config

ROOT = Path(__file__).resolve().parents[1]


def _run(d: Path) -> None:
    d.mkdir(parents=True)
    rundir.write_json(d / rundir.CONFIG, tiny_config().to_dict())
    (d / rundir.METRICS).write_text('{"step": 0, "epoch": 0}\n')
    (d / rundir.CKPT_DIR).mkdir()
    (d / rundir.CKPT_DIR / rundir.RESUME).write_bytes(b"0")


def sync(tree: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    """The tree's copy of the sync script, with the real `anchorlab export`."""
    al = tmp_path / "anchorlab"
    al.write_text(f'#!/usr/bin/env bash\nexec "{sys.executable}" -m anchorlab.cli "$@"\n')
    al.chmod(0o755)
    done = subprocess.run(["bash", str(tree / "experiments" / "sync_cpu_records.sh")], capture_output=True,
                          text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "ANCHORLAB": str(al)})
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_sync_exports_each_long_run_to_its_docs_folder(tmp_path):
    tree = tmp_path / "tree"
    (tree / "experiments").mkdir(parents=True)
    shutil.copy(ROOT / "experiments" / "sync_cpu_records.sh", tree / "experiments")
    _run(tree / "runs" / "p1_levers_cpu" / "lr_m30_g1.2_s2_bf16_e210")
    _run(tree / "runs" / "p1_frontier_data_rates" / "fa32a6468580")
    (tree / "runs" / "p1_levers_cpu" / "lr_m30_g1.2_s2_bf16_e39").mkdir()  # another run kind: not exported
    done = sync(tree, tmp_path)
    e210 = tree / "docs" / "p1_levers" / "cpu_bf16" / "lr_m30_g1.2_s2_e210"
    half = tree / "docs" / "p1_frontier" / "data_rates_cpu_bf16" / "n450000" / "fa32a6468580"
    for d in (e210, half):
        assert sorted(p.name for p in d.iterdir()) == [rundir.CONFIG, rundir.METRICS], d
    assert sorted(p.name for p in e210.parent.iterdir()) == ["lr_m30_g1.2_s2_e210"]
    assert done.stdout.count("1 evaluations, unfinished") == 2


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_restarted_run_never_overwrites_another_trajectorys_records(tmp_path):
    """Restarted from step 0 on a new machine: a run that retraces its committed records (the same epoch-1 loss)
    keeps the longer committed ones until it passes them; one that rounds differently goes to NAME_restart."""
    tree = tmp_path / "tree"
    (tree / "experiments").mkdir(parents=True)
    shutil.copy(ROOT / "experiments" / "sync_cpu_records.sh", tree / "experiments")
    docs = tree / "docs" / "p1_levers" / "cpu_bf16"
    for seed, first in ((2, 4.744536528716216), (3, 4.743697542757602)):
        _run(tree / "runs" / "p1_levers_cpu" / f"lr_m30_g1.2_s{seed}_bf16_e210")
        (tree / "runs" / "p1_levers_cpu" / f"lr_m30_g1.2_s{seed}_bf16_e210" / rundir.EPOCHS).write_text(
            f'{{"epoch": 1, "step": 370, "train_loss": {first + (1e-9 if seed == 2 else 0)}, "time": 1.0}}\n')
        (docs / f"lr_m30_g1.2_s{seed}_e210").mkdir(parents=True)  # committed: 3 epochs, no "time" field then
        (docs / f"lr_m30_g1.2_s{seed}_e210" / rundir.EPOCHS).write_text(
            "".join(f'{{"epoch": {e}, "step": {370 * e}, "train_loss": {first if e == 1 else 1.0}}}\n'
                    for e in (1, 2, 3)))
    done = sync(tree, tmp_path)
    assert sorted(p.name for p in docs.iterdir()) == ["lr_m30_g1.2_s2_e210", "lr_m30_g1.2_s2_e210_restart",
                                                      "lr_m30_g1.2_s3_e210"]
    for seed in (2, 3):  # the committed records stand
        assert len((docs / f"lr_m30_g1.2_s{seed}_e210" / rundir.EPOCHS).read_text().splitlines()) == 3
    assert "lr_m30_g1.2_s3_e210: 1 epochs here, 3 committed: kept the committed records" in done.stdout
    restart = (docs / "lr_m30_g1.2_s2_e210_restart" / rundir.EPOCHS).read_text()
    assert '"train_loss": 4.744536529716216' in restart
