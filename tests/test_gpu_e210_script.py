"""experiments/gpu_p1_m30_e210.sh (P1's 210-epoch protocol in device calls) checks the CUDA graph on the device
first and trains with it only if its fp32 test (as eager, to 1e-4) passed there; a second call on the warm machine
skips the checks and keeps the first call's choice; both sweeps (the best rates, then m = 30) train the same way.
Across sessions it sends back the resume states of the first job's runs named in BACK and continues runs carried
in. Run with a stand-in for Python that trains nothing."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FAKE_PY = """#!/usr/bin/env bash
# a stand-in for python: logs each call; pytest "passes" the fp32 graph test when FAKE_PASS is 1; the script's
# one-liners that read a config.json run in the real python
echo "$*" >> "$LOG"
if [ "$1" = "-c" ]; then case "$2" in *json*) exec python3 "$@" ;; *) echo "torch (stand-in)"; exit 0 ;; esac; fi
if [ "$2" = pytest ] && [ "$FAKE_PASS" = 1 ]; then
    echo "PASSED tests/test_cuda_graph.py::test_a_graphed_group_trains_as_the_eager_one_up_to_rounding"
fi
exit 0
"""
NEEDS = pytest.mark.skipif(any(shutil.which(t) is None for t in ("bash", "tar", "timeout", "grep", "python3")),
                           reason="needs bash, tar, timeout, grep and python3")


def run_script(tmp_path: Path, passes: bool = True, **extra: str) -> subprocess.CompletedProcess:
    fake = tmp_path / "python"
    if not fake.exists():
        fake.write_text(FAKE_PY)
        fake.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "PY": str(fake), "LOG": str(tmp_path / "calls.log"),
           "FAKE_PASS": "1" if passes else "0", "OUT": str(tmp_path / "out"), "RUNS": str(tmp_path / "runs"),
           "LIMIT": "300", "GPU_BACK": str(tmp_path / "back"), **extra}
    done = subprocess.run(["bash", str(ROOT / "experiments" / "gpu_p1_m30_e210.sh")], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def fake_run(d: Path, gamma: float, seed: int, done: bool = False, m: float = 17.5) -> Path:
    """A run directory as a device session leaves it: records, a resume state or (finished) checkpoints."""
    (d / "checkpoints").mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"init": {"gamma": gamma}, "seeds": {"data_seed": seed},
                                               "train": {"lr_multiplier": m}}))
    (d / "epochs.jsonl").write_text('{"epoch": 3, "step": 1110}\n{"epoch": 4, "step": 1480}\n')
    (d / "LOCK").write_text("{}")
    if done:
        (d / "DONE").write_text("")
        (d / "checkpoints" / "step_0077700.safetensors").write_text("weights")
    else:
        (d / "checkpoints" / "resume.safetensors").write_text(f"state {gamma} {seed}")
    return d


@NEEDS
@pytest.mark.parametrize("passes", [True, False])
def test_with_graph_check_the_sweep_uses_the_graph_only_once_it_passed_on_the_device(tmp_path, passes):
    log = tmp_path / "calls.log"
    for call in (1, 2):
        run_script(tmp_path, passes, GRAPH="check")
        calls = log.read_text().splitlines()
        sweeps = [c.split("sweep ", 1)[1] for c in calls if " sweep " in f" {c} " and "--dry-run" not in c]
        assert len(sweeps) == 2 * call  # the composers' group to epoch 210, then the best rates (time left)
        assert sweeps[-2].startswith("configs/sweeps/p1_composers_e210.toml")
        assert sweeps[-1].startswith("configs/sweeps/p1_best_rates_e210.toml")
        for sweep in sweeps[-2:]:
            assert "--batch-models 6" in sweep and ("--set train.cuda_graph=true" in sweep) is passes
        dry = [c for c in calls if "--dry-run" in c]  # the graph needs the local backend in a dry run too
        assert dry and all("--backend local" in c for c in dry)
        assert sum(" pytest " in f" {c} " for c in calls) == 1  # the checks run on the first call only
        assert sum("benchmarks.eval_cost" in c for c in calls) == 1  # once a machine
        assert (tmp_path / "out" / "p1_gpu_next.tar.gz").is_file()
    assert (tmp_path / "runs" / "gpu_next" / "graph_checked").read_text().strip() == ("1" if passes else "0")


@NEEDS
def test_by_default_the_sweeps_train_eagerly_and_nothing_is_tested_on_the_device(tmp_path):
    run_script(tmp_path)
    calls = (tmp_path / "calls.log").read_text().splitlines()
    sweeps = [c for c in calls if " sweep " in f" {c} " and "--dry-run" not in c]
    assert len(sweeps) == 2 and not any("cuda_graph" in c for c in sweeps)
    assert not any(" pytest " in f" {c} " for c in calls)
    run_script(tmp_path, GRAPH="1", EVAL_COST="0")
    calls = (tmp_path / "calls.log").read_text().splitlines()[len(calls):]
    sweeps = [c for c in calls if " sweep " in f" {c} " and "--dry-run" not in c]
    assert len(sweeps) == 2 and all("--set train.cuda_graph=true" in c for c in sweeps)
    assert not any("eval_cost" in c or " pytest " in f" {c} " for c in calls)


@NEEDS
def test_resume_states_of_the_first_jobs_named_runs_come_back_and_carried_runs_continue(tmp_path):
    best = tmp_path / "runs" / "gpu_next" / "p1_composers_e210"
    fake_run(best / "aaa", 1.2, 1)
    fake_run(best / "bbb", 1.2, 2, done=True)
    fake_run(best / "ccc", 1.2, 3)
    fake_run(best / "ddd", 0.3, 1)
    fake_run(tmp_path / "runs" / "gpu_next" / "p1_best_rates_e210" / "eee", 1.2, 1)  # the second job's: not sent
    fake_run(tmp_path / "runs" / "gpu_next" / "p1_m30_e210" / "ggg", 1.2, 1, m=30.0)
    carried = fake_run(tmp_path / "back" / "p1_composers_e210" / "fff", 1.2, 1)
    kept = fake_run(tmp_path / "back" / "p1_composers_e210" / "aaa", 1.2, 1)  # a warm machine's copy is newer
    (kept / "checkpoints" / "resume.safetensors").write_text("older")
    out = run_script(tmp_path, BACK="g1.2_m17.5_s1 g1.2_m17.5_s2").stdout  # seed 2 finished: its last weights
    sent = sorted(p.name for p in (tmp_path / "out").glob("*__*"))
    assert sent == ["back__p1_composers_e210__g1.2_m17.5_s1.safetensors.part00",
                    "back__p1_composers_e210__g1.2_m17.5_s1.sha256",
                    "last__p1_composers_e210__g1.2_m17.5_s2_step_0077700.safetensors"]
    assert (tmp_path / "out" / sent[0]).read_text() == "state 1.2 1"  # the machine's own, not the carried copy
    digest = hashlib.sha256(b"state 1.2 1").hexdigest()
    assert (tmp_path / "out" / sent[1]).read_text() == f"{digest}  resume.safetensors\n"
    continued = best / "fff"
    assert (continued / "checkpoints" / "resume.safetensors").read_text() == "state 1.2 1"
    assert not (continued / "LOCK").exists() and (carried / "LOCK").exists()
    assert f"carried in: {continued}, from epoch 4" in out
    sent_m30 = run_script(tmp_path, FIRST="m30", BACK="g1.2_m30_s1").stdout  # m = 30 first, its run sent
    assert "no time left" not in sent_m30
    assert (tmp_path / "out" / "back__p1_m30_e210__g1.2_m30_s1.safetensors.part00").read_text() == "state 1.2 1"


@NEEDS
def test_a_resume_state_comes_back_in_parts_of_at_most_15_mib(tmp_path):
    """A returned file is 16 MiB at most: a 32.8 MB resume state comes back in three parts that join to it."""
    run = fake_run(tmp_path / "runs" / "gpu_next" / "p1_composers_e210" / "aaa", 1.2, 1)
    state = bytes(range(256)) * (32_800_000 // 256)
    (run / "checkpoints" / "resume.safetensors").write_bytes(state)
    run_script(tmp_path)
    parts = sorted((tmp_path / "out").glob("back__*.part*"))
    assert [p.name[-6:] for p in parts] == ["part00", "part01", "part02"]
    assert all(p.stat().st_size <= 15 * 2**20 for p in parts)
    assert b"".join(p.read_bytes() for p in parts) == state


@NEEDS
def test_a_carried_run_that_finished_always_sends_its_last_weights(tmp_path):
    """A run carried in and finished on the device sends its last weights back whatever BACK names, so the ingest
    can retire its carried state (no later call continues it again)."""
    best = tmp_path / "runs" / "gpu_next" / "p1_composers_e210"
    fake_run(best / "aaa", 1.2, 3, done=True)  # carried in (below), finished here
    fake_run(best / "bbb", 1.2, 2, done=True)  # finished, neither carried nor named: nothing
    fake_run(tmp_path / "back" / "p1_composers_e210" / "aaa", 1.2, 3)
    run_script(tmp_path, BACK="g1.2_m17.5_s1")
    assert sorted(p.name for p in (tmp_path / "out").glob("*__*")) == [
        "last__p1_composers_e210__g1.2_m17.5_s3_step_0077700.safetensors"]
