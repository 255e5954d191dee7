#!/usr/bin/env bash
# One device call for the next session lent a GPU (issue 16): configs/sweeps/p1_paper_gamma_long.toml, P1's
# small-init side (γ 1.0 / 1.2 × our data seeds 1-3, paper config, bf16) trained to epoch 60, as one batched
# group of 6 (runs on different data seeds stack since 2026-11-26). It stops itself before the device's
# 10-minute limit; called again on a warm machine, the runs resume where they stopped (same run directories).
# The small outputs (no checkpoints) come back as one archive, $OUT/p1_paper_gamma_long.tar.gz, plus the log.
#   device run:  bash experiments/gpu_p1_gamma_long.sh            (timeout_s 600)
#   here, after: mkdir -p docs/p1_paper_gamma && tar xzf .../p1_paper_gamma_long.tar.gz -C docs/p1_paper_gamma/
#                anchorlab figure p1-curves docs/p1_paper_gamma/p1_paper_gamma_long --out docs/p1_paper_gamma/long
# Estimate, not measured: 273M training sequences at K = 6's 907,600 seq/s (bf16, one H100) ≈ 5 min, plus 21
# evaluations of 900,000 rows × 6 models. Set LIMIT (seconds, default 540) to stop earlier; PY (default python3).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; LIMIT=${LIMIT:-540}; PY=${PY:-python3}; W=runs/p1_paper_gamma_long
mkdir -p "$OUT" runs
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader || true
"$PY" -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU')"
PYTHONPATH=src timeout "$LIMIT" "$PY" -m anchorlab.cli sweep configs/sweeps/p1_paper_gamma_long.toml \
    --out "$W" --backend local --batch-models 6 || echo "sweep stopped (rc $?): resumable"
PYTHONPATH=src "$PY" -m anchorlab.cli sweep configs/sweeps/p1_paper_gamma_long.toml --out "$W" --dry-run | tail -7
tar czf "$OUT/p1_paper_gamma_long.tar.gz" --exclude=checkpoints --exclude='resume*' -C runs p1_paper_gamma_long
ls -la "$OUT"
