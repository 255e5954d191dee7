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


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_sync_exports_each_long_run_to_its_docs_folder(tmp_path):
    tree = tmp_path / "tree"
    (tree / "experiments").mkdir(parents=True)
    shutil.copy(ROOT / "experiments" / "sync_cpu_records.sh", tree / "experiments")
    _run(tree / "runs" / "p1_levers_cpu" / "lr_m30_g1.2_s2_bf16_e210")
    _run(tree / "runs" / "p1_frontier_data_rates" / "fa32a6468580")
    (tree / "runs" / "p1_levers_cpu" / "lr_m30_g1.2_s2_bf16_e39").mkdir()  # another run kind: not exported
    al = tmp_path / "anchorlab"
    al.write_text(f'#!/usr/bin/env bash\nexec "{sys.executable}" -m anchorlab.cli "$@"\n')
    al.chmod(0o755)
    done = subprocess.run(["bash", str(tree / "experiments" / "sync_cpu_records.sh")], capture_output=True,
                          text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "ANCHORLAB": str(al)})
    assert done.returncode == 0, done.stderr
    e210 = tree / "docs" / "p1_levers" / "cpu_bf16" / "lr_m30_g1.2_s2_e210"
    half = tree / "docs" / "p1_frontier" / "data_rates_cpu_bf16" / "n450000" / "fa32a6468580"
    for d in (e210, half):
        assert sorted(p.name for p in d.iterdir()) == [rundir.CONFIG, rundir.METRICS], d
    assert sorted(p.name for p in e210.parent.iterdir()) == ["lr_m30_g1.2_s2_e210"]
    assert done.stdout.count("1 evaluations, unfinished") == 2
