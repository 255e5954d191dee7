"""experiments/gpu_p1_protocol.sh (the next GPU call) seeds the rest of `reproduce p1-both-sides` from the committed
runs and brings back only what it trained: the seeded run ids are listed once each (never an empty line, whose
tar pattern would exclude every run), also across a second call on a warm machine. Run with a stand-in for
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


@pytest.mark.skipif(any(shutil.which(t) is None for t in ("bash", "tar", "timeout", "sed")),
                    reason="needs bash, tar, timeout and sed")
def test_the_protocol_call_seeds_from_docs_and_brings_back_only_new_runs(tmp_path):
    fake = tmp_path / "python"
    fake.write_text(FAKE_PY)
    fake.chmod(0o755)
    runs, out = tmp_path / "runs", tmp_path / "out"
    env = {"PATH": "/usr/bin:/bin", "PY": str(fake), "RUNS": str(runs), "OUT": str(out), "LIMIT": "300"}
    committed = sorted({p.parent.name for p in ROOT.glob("docs/p1_levers/lr_h200_bf16/m*/*/config.json")}
                       | {p.parent.name for p in ROOT.glob("docs/p1_paper_gamma/h200_bf16/*/config.json")})
    assert len(committed) >= 27
    for call in (1, 2):  # the second, on a warm machine, seeds nothing new
        done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        seeded = (runs / "gpu_next" / "ends_seeded.txt").read_text().splitlines()
        assert sorted(seeded) == committed and len(set(seeded)) == len(seeded), call  # each once, no empty line
        ends = runs / "gpu_next" / "p1_ends_rates"
        assert all((ends / run / "config.json").is_file() for run in committed)
        with tarfile.open(out / "p1_gpu_next.tar.gz") as tar:
            names = tar.getnames()
        back = {n.split("/")[2] for n in names if n.startswith("gpu_next/p1_ends_rates/") and n.count("/") >= 2}
        assert back == {"trained_p1_ends_rates"}, call  # the new run, none of the seeded ones
        assert "gpu_next/p1_frontier_d128_rates/trained_p1_frontier_d128_rates/config.json" in names
