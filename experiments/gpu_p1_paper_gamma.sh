#!/usr/bin/env bash
# One device call for the next session lent a GPU (issue 16): the 12 runs of configs/sweeps/p1_paper_gamma.toml
# that p1-both-sides has not made (γ 0.3 / 0.4 / 1.0 / 1.2 × seeds 1-3, paper config, 27 epochs), batched on
# one GPU in bf16 (cleared for P1: docs/p1_both_sides.md), with the committed γ 0.5 / 0.8 bf16 runs copied in
# so the sweep skips them. It stops itself before the device's 10-minute limit; the runs resume where they
# stopped when it is called again on a warm machine (same run directory). The small outputs (no checkpoints)
# come back as one archive: $OUT/p1_paper_gamma_bf16.tar.gz.
#   device run:  bash experiments/gpu_p1_paper_gamma.sh            (timeout_s 600)
#   here, after: tar xzf .../p1_paper_gamma_bf16.tar.gz -C docs/ && \
#                anchorlab figure p1-fit-speed docs/p1_paper_gamma_bf16 --out docs/p1_fit_speed/paper_gamma
# Estimate, not measured: K = 6 batched bf16 ran at 908k seq/s on one H100 (docs/performance.md), so the 12 runs'
# 246M training sequences take ~5 min, plus 10 evaluations of 900k rows each.
# Set LIMIT (seconds, default 540) to stop earlier; PY (default python3) for another interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; W=runs/p1_paper_gamma_bf16; LIMIT=${LIMIT:-540}; PY=${PY:-python3}
mkdir -p "$OUT" "$W"
for d in docs/p1_both_sides/h100_bf16/*/; do [ -e "$W/$(basename "$d")" ] || cp -r "$d" "$W/"; done
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader || true
PYTHONPATH=src timeout "$LIMIT" "$PY" -m anchorlab.cli sweep configs/sweeps/p1_paper_gamma.toml \
    --set train.precision=bf16 --out "$W" --backend local --batch-models 12 || echo "sweep stopped (rc $?): resumable"
PYTHONPATH=src "$PY" -m anchorlab.cli sweep configs/sweeps/p1_paper_gamma.toml --set train.precision=bf16 \
    --out "$W" --dry-run | tail -1
tar czf "$OUT/p1_paper_gamma_bf16.tar.gz" --exclude=checkpoints --exclude='resume*' -C runs p1_paper_gamma_bf16
ls -la "$OUT"
