#!/usr/bin/env bash
# One device call for the next session lent a GPU (issue 16): the levers left for P1's inferential side at the
# paper width, in order of priority:
#  1. configs/sweeps/p1_gamma12_lr.toml: γ 1.2 at P1's other peak rates (m = 25, 27.5, 22.5, 15, 17.5, 12.5, 10 ×
#     seeds 1-3), for P1's best-over-rates reading, groups of 6 (the higher rates first);
#  2. with the time left, configs/sweeps/p1_wd_ends.toml: weight decay 1.0 / 0.3 at both ends of the γ line
#     (γ 0.3 / 1.2 × our data seeds 1-3, paper config otherwise, 27 epochs, bf16), two batched groups of 6;
#  3. with the time still left, configs/sweeps/p1_both_sides_lr30.toml: γ 0.3 / 1.2 × seeds 1-3 at P1's top grid
#     rate (m = 30), 39 epochs, one batched group of 6 (the same runs train to epoch 210 on the CPU:
#     experiments/cpu_p1_m30_e210.sh);
#  4. with the time still left, if the authors' reference file is carried in (REF, default
#     .ref/p1_authors_paper_g0.8_s1.npz): configs/sweeps/p1_reference_init_order.toml, the init-only and
#     order-only cells of the data / init / order decomposition, one group of 2.
# It stops itself LIMIT seconds after it starts (default 540, inside the device's 10-minute limit); called again
# on a warm machine, the runs resume where they stopped (same run directories) and done runs are skipped.
# The small outputs (config, metrics, epochs, summary; no checkpoints) come back as $OUT/p1_gpu_next.tar.gz.
#   here, first (job 4 only):  mkdir -p .ref && cp PATH/p1_authors_paper_g0.8_s1.npz .ref/ && echo /.ref/ >> .git/info/exclude
#   device run:   bash experiments/gpu_p1_levers.sh      (timeout_s 600 [, carry [".ref"]]; again with LIMIT=...)
#   here, after:  bash experiments/ingest_gpu_next.sh FILES_AT [h200_bf16|h100_bf16]   (into docs/p1_levers/ and
#                 docs/p1_reference_parts/, with their figures)
# Estimates: a batched group of 6 at 27 epochs is 123M training sequences, ~3 min at the ~705,000 seq/s aggregate
# measured for a group of 6 on one H200 (evaluations included): sweep 1 ~11 min, sweep 2 ~6 min; the reference
# cells ~3 min.
# Set LIMIT (seconds) to stop earlier; PY (default python3).
set -uo pipefail
cd "$(dirname "$0")/.."
BOTH=configs/sweeps/p1_both_sides_lr30.toml; BOTH_DIR=runs/gpu_next/p1_both_sides_lr30
WD=${WD:-configs/sweeps/p1_wd_ends.toml}; WD_DIR=runs/gpu_next/p1_wd_ends
LR=${LR:-configs/sweeps/p1_gamma12_lr.toml}; LR_DIR=runs/gpu_next/p1_gamma12_lr
PARTS=configs/sweeps/p1_reference_init_order.toml; PARTS_DIR=runs/gpu_next/p1_reference_parts
source experiments/gpu_call.sh  # OUT LIMIT PY REF, left, cli, cli_until_limit; prints the machine

cli_until_limit sweep "$LR" --out "$LR_DIR" --backend local --batch-models 6 || echo "sweep 1 stopped (rc $?): resumable"
if [ "$(left)" -gt 60 ]; then
    cli_until_limit sweep "$WD" --out "$WD_DIR" --backend local --batch-models 6 || echo "sweep 2 stopped (rc $?): resumable"
fi
if [ "$(left)" -gt 60 ]; then
    cli_until_limit sweep "$BOTH" --out "$BOTH_DIR" --backend local --batch-models 6 \
        || echo "sweep 3 stopped (rc $?): resumable"
fi
if [ "$(left)" -gt 60 ] && [ -f "$REF" ]; then
    cli_until_limit sweep "$PARTS" --set task.reference="$REF" --out "$PARTS_DIR" --backend local --batch-models 2 \
        || echo "reference cells stopped (rc $?): resumable"
fi
[ -d "$BOTH_DIR" ] && cli sweep "$BOTH" --out "$BOTH_DIR" --dry-run | tail -8
[ -d "$WD_DIR" ] && cli sweep "$WD" --out "$WD_DIR" --dry-run | tail -14
[ -d "$LR_DIR" ] && cli sweep "$LR" --out "$LR_DIR" --dry-run | tail -23
[ -d "$PARTS_DIR" ] && cli sweep "$PARTS" --set task.reference="$REF" --out "$PARTS_DIR" --dry-run | tail -3
tar czf "$OUT/p1_gpu_next.tar.gz" --exclude=checkpoints --exclude='resume*' -C runs gpu_next
ls -la "$OUT"
