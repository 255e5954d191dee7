"""experiments/ingest_gpu_next.sh (after a device call): it brings the runs of the returned sweeps into docs/ and
redraws the figures of those folders only; folders the call did not fill keep their committed figures. Run on a
copy of the script in a scratch tree, with a stand-in for the anchorlab CLI that records each figure it is asked
to draw."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FAKE_AL = """#!/usr/bin/env bash
# a stand-in for `anchorlab figure NAME SOURCE... --out DIR`: logs the call, writes the two files; `export` is
# the real one
[ "$1" = export ] && exec "$PY" -m anchorlab.cli "$@"
echo "$*" >> "$LOG"
name=$2; out=""; prev=""
for a in "$@"; do [ "$prev" = "--out" ] && out=$a; prev=$a; done
mkdir -p "$out" && touch "$out/$name.png" "$out/$name.csv"
"""


def ingest(tree: Path, files_at: Path, tag: str) -> subprocess.CompletedProcess:
    """The tree's copy of the ingest on what a device call brought back to ``files_at`` (the CLI a stand-in)."""
    fake = files_at / "anchorlab"
    fake.write_text(FAKE_AL)
    fake.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "AL": str(fake), "LOG": str(files_at / "calls.log"), "PY": sys.executable}
    done = subprocess.run(["bash", str(tree / "experiments" / "ingest_gpu_next.sh"), str(files_at), tag],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.skipif(any(shutil.which(t) is None for t in ("bash", "tar", "python3")),
                    reason="needs bash, tar and python3")
def test_ingest_redraws_only_what_came_back(tmp_path):
    tree = tmp_path / "tree"
    (tree / "experiments").mkdir(parents=True)
    shutil.copy(ROOT / "experiments" / "ingest_gpu_next.sh", tree / "experiments")
    (tree / "docs" / "p1_frontier" / "epochs60" / "old").mkdir(parents=True)  # committed, not in this call
    (tree / "docs" / "p1_frontier" / "epochs60" / "old" / "config.json").write_text("{}")
    # what the device call brought back: one run of the data-size sweep, at a quarter of the rows
    run = tmp_path / "back" / "gpu_next" / "p1_frontier_data" / "abc123"
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"task": {"data_size": 225000, "reference":
                                                          "/device/golden/p1_authors_paper_g0.8_s1.npz"}, "train": {}}))
    for f in ("metrics.jsonl", "epochs.jsonl", "summary.json", "DONE"):
        (run / f).write_text("")
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "step_0000000.safetensors").write_bytes(b"0")
    with tarfile.open(tmp_path / "p1_gpu_next.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / "back" / "gpu_next", arcname="gpu_next")
    ingest(tree, tmp_path, "h200_bf16")
    log = tmp_path / "calls.log"
    moved = tree / "docs" / "p1_frontier" / "data_h200_bf16" / "n225000" / "abc123"
    assert sorted(p.name for p in moved.iterdir()) == ["DONE", "config.json", "epochs.jsonl", "metrics.jsonl",
                                                       "summary.json"]  # no checkpoint
    assert json.loads((moved / "config.json").read_text())["task"]["reference"] == "p1_authors_paper_g0.8_s1.npz"
    calls = log.read_text().splitlines()
    drawn = [c.split()[1] for c in calls]
    assert drawn == ["p1-gamma", "p1-gamma", "p1-gamma", "p1-curves", "p1-frontier"], calls
    assert all("data_h200_bf16/n225000" in c for c in calls[:4])  # the returned folder, nothing else
    assert not any("epochs60" in c for c in calls)  # a committed folder this call did not fill
    figures = tree / "docs" / "p1_frontier"
    assert (figures / "p1-gamma_data_h200_bf16_n225000_best.png").is_file()
    assert (figures / "p1-curves_data_h200_bf16_n225000.png").is_file()
    assert not (figures / "p1-gamma_epochs60.png").exists()


@pytest.mark.skipif(any(shutil.which(t) is None for t in ("bash", "tar", "python3")),
                    reason="needs bash, tar and python3")
def test_ingest_sets_up_returned_weights_as_runs(tmp_path):
    """The 210-epoch call's γ 1.2 weights (e210_gG_sN_step_S.safetensors) become runs under runs/p1_m30_e210_weights/:
    the run of that γ and seed with its committed records and the weights as its checkpoint at step S."""
    tree = tmp_path / "tree"
    (tree / "experiments").mkdir(parents=True)
    shutil.copy(ROOT / "experiments" / "ingest_gpu_next.sh", tree / "experiments")
    for rid, gamma, seed in (("run_s3", 1.2, 3), ("run_g03", 0.3, 3)):
        run = tmp_path / "back" / "gpu_next" / "p1_m30_e210" / rid
        run.mkdir(parents=True)
        (run / "config.json").write_text(json.dumps({"init": {"gamma": gamma}, "seeds": {"data_seed": seed},
                                                     "task": {}, "train": {}}))
        (run / "metrics.jsonl").write_text("")
    with tarfile.open(tmp_path / "p1_gpu_next.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / "back" / "gpu_next", arcname="gpu_next")
    (tmp_path / "e210_g1.2_s3_step_0077700.safetensors").write_bytes(b"weights")
    done = ingest(tree, tmp_path, "h200_bf16_k6")
    assert (tree / "docs" / "p1_levers" / "m30_e210_h200_bf16_k6" / "run_g03" / "config.json").is_file()
    made = tree / "runs" / "p1_m30_e210_weights"
    assert [p.name for p in made.iterdir()] == ["run_s3"]
    assert (made / "run_s3" / "checkpoints" / "step_0077700.safetensors").read_bytes() == b"weights"
    assert json.loads((made / "run_s3" / "config.json").read_text())["seeds"]["data_seed"] == 3
    assert "the weights at step 77700 (γ 1.2 seed 3)" in done.stdout


@pytest.mark.skipif(any(shutil.which(t) is None for t in ("bash", "tar", "python3", "sha256sum")),
                    reason="needs bash, tar, python3 and sha256sum")
@pytest.mark.parametrize("intact", [True, False])
def test_ingest_joins_a_returned_resume_state_for_the_next_call(tmp_path, intact):
    """back__<job>__gG_sN.safetensors.partNN (a run's resume state in parts) and its .sha256: joined and checked,
    the state becomes GPU_BACK/<job>/<run id>/ (the run's records, no LOCK, the state as its resume file) and
    its model weights a checkpoint under runs/<job>_weights/; parts that do not give the checksum are refused."""
    import hashlib

    import torch
    from safetensors.torch import load_file, save_file

    tree = tmp_path / "tree"
    (tree / "experiments").mkdir(parents=True)
    shutil.copy(ROOT / "experiments" / "ingest_gpu_next.sh", tree / "experiments")
    run = tmp_path / "back" / "gpu_next" / "p1_composers_e210" / "rid1"
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"init": {"gamma": 1.2}, "seeds": {"data_seed": 1},
                                                 "task": {}, "train": {"lr_multiplier": 17.5}}))
    for f in ("metrics.jsonl", "epochs.jsonl", "sessions.jsonl", "LOCK"):
        (run / f).write_text("")
    with tarfile.open(tmp_path / "p1_gpu_next.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / "back" / "gpu_next", arcname="gpu_next")
    state = {"model.embed.W_E": torch.arange(6.0).reshape(2, 3), "optim.embed.W_E.exp_avg": torch.ones(2, 3)}
    save_file(state, str(tmp_path / "state.safetensors"), metadata={"step": "40040", "epoch": "108"})
    raw = (tmp_path / "state.safetensors").read_bytes()
    stem = tmp_path / "back__p1_composers_e210__g1.2_m17.5_s1"
    half = len(raw) // 2
    Path(f"{stem}.safetensors.part00").write_bytes(raw[:half])
    Path(f"{stem}.safetensors.part01").write_bytes(raw[half:] if intact else raw[half:-1] + b"X")
    Path(f"{stem}.sha256").write_text(f"{hashlib.sha256(raw).hexdigest()}  resume.safetensors\n")
    done = ingest(tree, tmp_path, "h200_bf16_k6")
    carried = tree / "runs" / "gpu_back" / "p1_composers_e210" / "rid1"
    weights = tree / "runs" / "p1_composers_e210_weights" / "rid1" / "checkpoints" / "step_0040040.safetensors"
    if not intact:
        assert "its parts do not give the state sent (checksum): not set up" in done.stdout
        assert not carried.exists() and not weights.exists()
        return
    assert (carried / "checkpoints" / "resume.safetensors").read_bytes() == raw
    assert sorted(p.name for p in carried.iterdir()) == ["checkpoints", "config.json", "epochs.jsonl",
                                                         "metrics.jsonl", "sessions.jsonl"]  # no LOCK
    assert list(load_file(str(weights))) == ["embed.W_E"]
    torch.testing.assert_close(load_file(str(weights))["embed.W_E"], state["model.embed.W_E"])
    assert "resume state at epoch 108 (g1.2_m17.5_s1), for the next call" in done.stdout
    # the next session's call finished it: its last weights come back, and its carried state is retired
    for part in tmp_path.glob("back__*"):
        part.unlink()
    last = "last__p1_composers_e210__g1.2_m17.5_s1_step_0077700.safetensors"
    save_file({"embed.W_E": torch.zeros(2, 3)}, str(tmp_path / last))
    ingest(tree, tmp_path, "h200_bf16_k6")
    assert not carried.exists()
    assert (weights.parent / "step_0077700.safetensors").is_file()
