"""experiments/gpu_p1_protocol.sh (the next GPU call) trains four sweeps, each seeded from the committed finished runs
(the half-rows protocol, the rest of the equal-steps data sweep, of the d_model 128 protocol and of `reproduce
p1-both-sides`), and brings back only what it trained: the seeded runs are listed once each (never an empty line,
whose tar pattern would exclude every run), also across a second call on a warm machine. Run with a stand-in for
Python that trains nothing."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "experiments" / "gpu_p1_protocol.sh"
FAKE_PY = """#!/usr/bin/env bash
# a stand-in for `python -m anchorlab.cli sweep FILE --out DIR ...`: a "trained" run appears in DIR
[ "$1" = "-c" ] && { echo "torch (stand-in)"; exit 0; }
shift 2; out=""; dry=0; prev=""
for a in "$@"; do [ "$prev" = "--out" ] && out=$a; [ "$a" = "--dry-run" ] && dry=1; prev=$a; done
if [ "$dry" = 1 ]; then echo "dry run of $out"; else mkdir -p "$out/trained_$(basename "$out")"; \
    echo '{}' > "$out/trained_$(basename "$out")/config.json"; fi
"""
SWEEPS = ("p1_frontier_data_rates", "p1_frontier_data_steps", "p1_frontier_d128_rates", "p1_ends_rates")


def _done(*patterns: str) -> set[str]:
    return {p.parent.name for pattern in patterns for p in ROOT.glob(pattern)}


@pytest.mark.skipif(any(shutil.which(t) is None for t in ("bash", "tar", "timeout", "sed", "grep")),
                    reason="needs bash, tar, timeout, sed and grep")
def test_the_protocol_call_seeds_from_docs_and_brings_back_only_new_runs(tmp_path):
    fake = tmp_path / "python"
    fake.write_text(FAKE_PY)
    fake.chmod(0o755)
    runs, out = tmp_path / "runs", tmp_path / "out"
    env = {"PATH": "/usr/bin:/bin", "PY": str(fake), "RUNS": str(runs), "OUT": str(out), "LIMIT": "300"}
    ends = _done("docs/p1_levers/lr_h200_bf16/m*/*/DONE", "docs/p1_paper_gamma/h200_bf16/*/DONE")
    d128 = _done("docs/p1_frontier/d128_rates_*/*/DONE")
    rates = _done("docs/p1_frontier/data_h200_bf16/n450000/*/DONE", "docs/p1_frontier/data_rates_*/n450000/*/DONE")
    steps = _done("docs/p1_frontier/data_steps_*/n*/*/DONE")
    assert len(ends) >= 27 and len(d128) >= 54 and len(rates) >= 12 and len(steps) >= 12
    expected = sorted([f"p1_ends_rates/{r}" for r in ends] + [f"p1_frontier_d128_rates/{r}" for r in d128]
                      + [f"p1_frontier_data_rates/{r}" for r in rates]
                      + [f"p1_frontier_data_steps/{r}" for r in steps])
    for call in (1, 2):  # the second, on a warm machine, seeds nothing new
        done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        seeded = (runs / "gpu_next" / "seeded.txt").read_text().splitlines()
        assert sorted(seeded) == expected and len(set(seeded)) == len(seeded), call  # each once, no empty line
        assert all((runs / "gpu_next" / s / "config.json").is_file() for s in seeded)
        with tarfile.open(out / "p1_gpu_next.tar.gz") as tar:
            names = tar.getnames()
        for sweep in SWEEPS:  # each sweep's new run comes back, none of the seeded ones
            back = {n.split("/")[2] for n in names if n.startswith(f"gpu_next/{sweep}/") and n.count("/") >= 2}
            assert back == {f"trained_{sweep}"}, (call, sweep)
    # an unfinished committed run (no DONE: its resume state was not committed) is not seeded: it trains again
    partial = {p.parent.name for p in ROOT.glob("docs/p1_frontier/d128_rates_*/*/config.json")} - d128
    partial |= {p.parent.name for p in ROOT.glob("docs/p1_frontier/data_steps_*/n*/*/config.json")} - steps
    assert partial
    assert not partial & {s.split("/")[1] for s in seeded}


@pytest.mark.skipif(any(shutil.which(t) is None for t in ("bash", "tar", "timeout", "sed", "grep")),
                    reason="needs bash, tar, timeout, sed and grep")
def test_a_failing_smoke_run_ends_the_call_before_any_sweep(tmp_path):
    """The tiny run every device call starts with (experiments/gpu_call.sh): where it fails, the call stops with
    its output's tail, and no sweep starts."""
    fake = tmp_path / "python"
    fake.write_text('#!/usr/bin/env bash\n[ "$1" = "-c" ] && { echo "torch (stand-in)"; exit 0; }\n'
                    '[ "$3" = "train" ] && { echo "Traceback: the readouts on cuda"; exit 1; }\n'
                    'echo "a sweep ran" >> "$(dirname "$0")/sweeps"\n')
    fake.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "PY": str(fake), "RUNS": str(tmp_path / "runs"), "OUT": str(tmp_path / "out"),
           "LIMIT": "300"}
    done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "Traceback: the readouts on cuda" in done.stdout and "smoke run failed" in done.stdout
    assert not (tmp_path / "sweeps").exists()
