#!/usr/bin/env bash
# One device call for the next session lent a GPU (issue 16), two jobs sharing the GPU:
#  1. configs/sweeps/p1_paper_gamma_long.toml: P1's small-init side (γ 1.0 / 1.2 × our data seeds 1-3, paper
#     config, bf16) trained to epoch 60, as one batched group of 6 (runs on different data seeds stack since
#     2026-11-26);
#  2. if the authors' reference file is carried in (REF, default .ref/p1_authors_paper_g0.8_s1.npz), beside it
#     in two worker processes: configs/sweeps/p1_reference_init_order.toml, the init-only and order-only cells
#     of the data / init / order decomposition (γ 0.8, our seed 3 otherwise, 27 epochs, bf16).
# It stops itself before the device's 10-minute limit; called again on a warm machine, the runs resume where
# they stopped (same run directories). The small outputs (no checkpoints) come back as $OUT/p1_gpu_next.tar.gz.
#   here, first:  mkdir -p .ref && cp PATH/p1_authors_paper_g0.8_s1.npz .ref/ && echo /.ref/ >> .git/info/exclude
#   device run:   bash experiments/gpu_p1_gamma_long.sh        (timeout_s 600, carry [".ref"])
#   here, after:  tar xzf .../p1_gpu_next.tar.gz -C /tmp/gpu_next   (then docs/p1_paper_gamma/, docs/p1_reference_parts/)
# Estimate, not measured: job 1 is 273M training sequences at K = 6's 907,600 seq/s (bf16, one H100) ≈ 5 min,
# plus 21 evaluations of 900,000 rows × 6 models; job 2 ~3 min (p1_both_sides' 6 bf16 runs took 3.6 min as 6
# processes on one H100). Set LIMIT (seconds, default 540) to stop earlier; PY (default python3).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; LIMIT=${LIMIT:-540}; PY=${PY:-python3}; REF=${REF:-.ref/p1_authors_paper_g0.8_s1.npz}
mkdir -p "$OUT" runs/gpu_next
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader || true
"$PY" -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU')"
ref_pid=
if [ -f "$REF" ]; then
    PYTHONPATH=src timeout "$LIMIT" "$PY" -m anchorlab.cli sweep configs/sweeps/p1_reference_init_order.toml \
        --set task.reference="$REF" --out runs/gpu_next/p1_reference_parts --backend process --workers 2 \
        > "$OUT/reference_parts.log" 2>&1 &
    ref_pid=$!
else
    echo "no $REF: the reference cells are skipped"
fi
PYTHONPATH=src timeout "$LIMIT" "$PY" -m anchorlab.cli sweep configs/sweeps/p1_paper_gamma_long.toml \
    --out runs/gpu_next/p1_paper_gamma_long --backend local --batch-models 6 || echo "sweep stopped (rc $?): resumable"
[ -n "$ref_pid" ] && { wait "$ref_pid" || echo "reference cells stopped (rc $?): resumable"; tail -3 "$OUT/reference_parts.log"; }
PYTHONPATH=src "$PY" -m anchorlab.cli sweep configs/sweeps/p1_paper_gamma_long.toml --out runs/gpu_next/p1_paper_gamma_long \
    --dry-run | tail -7
tar czf "$OUT/p1_gpu_next.tar.gz" --exclude=checkpoints --exclude='resume*' -C runs gpu_next
ls -la "$OUT"
