#!/usr/bin/env bash
# One device call for the next session lent a GPU (issue 16): P1's protocol (per seed the best over 9 peak
# learning rates, arXiv 2405.05409 §4), which shows both sides on 3/3 seeds at the paper width
# (docs/p1_both_sides.md), taken down the width and completed at the paper width, in order of priority:
#  1. configs/sweeps/p1_frontier_d128_rates.toml: d_model 128, γ 1.2 / 0.3 kept, then 1.482 / 0.370 (W_Q's std
#     kept) × 9 rates × seeds 1-3, 27 epochs, bf16; 108 runs in batched groups of 18;
#  2. with the time left, configs/sweeps/p1_ends_rates.toml (`anchorlab reproduce p1-both-sides`) at d_model 400:
#     its 27 committed runs are copied in from docs/ first, so only the other 27 train (γ 0.3 at the 8 rates
#     other than 20, γ 1.2 at m = 30), batched groups of 6; the copied-in runs do not come back.
# It stops itself LIMIT seconds after it starts (default 540, inside the device's 10-minute limit); called again
# on a warm machine, the runs resume where they stopped and done runs are skipped.
# The small outputs (config, metrics, epochs, summary; no checkpoints) come back as $OUT/p1_gpu_next.tar.gz.
#   device run:   bash experiments/gpu_p1_protocol.sh      (timeout_s 600; again with LIMIT=... on a warm machine)
#   here, after:  bash experiments/ingest_gpu_next.sh FILES_AT [h200_bf16|h100_bf16]
# Set LIMIT (seconds) to stop earlier; PY (default python3).
set -uo pipefail
cd "$(dirname "$0")/.."
source experiments/gpu_call.sh  # OUT LIMIT PY REF RUNS, left, cli, cli_until_limit; prints the machine
D128=${D128:-configs/sweeps/p1_frontier_d128_rates.toml}; D128_DIR=$RUNS/gpu_next/p1_frontier_d128_rates
ENDS=configs/sweeps/p1_ends_rates.toml; ENDS_DIR=$RUNS/gpu_next/p1_ends_rates
SEEDED=$RUNS/gpu_next/ends_seeded.txt

cli_until_limit sweep "$D128" --out "$D128_DIR" --backend local --batch-models 18 \
    || echo "sweep 1 stopped (rc $?): resumable"
if [ "$(left)" -gt 90 ]; then
    mkdir -p "$ENDS_DIR"
    seeded=()
    for d in docs/p1_levers/lr_h200_bf16/m*/*/ docs/p1_paper_gamma/h200_bf16/*/; do  # the committed runs
        id=$(basename "$d")
        [ -e "$ENDS_DIR/$id" ] || { cp -r "$d" "$ENDS_DIR/$id" && seeded+=("$id"); }
    done
    # appended (a second call seeds none); never an empty line, whose pattern would exclude every run
    [ "${#seeded[@]}" -gt 0 ] && printf '%s\n' "${seeded[@]}" >> "$SEEDED"
    cli_until_limit sweep "$ENDS" --out "$ENDS_DIR" --backend local --batch-models 6 \
        || echo "sweep 2 stopped (rc $?): resumable"
fi
cli sweep "$D128" --out "$D128_DIR" --dry-run | tail -3
[ -d "$ENDS_DIR" ] && cli sweep "$ENDS" --out "$ENDS_DIR" --dry-run | tail -3
# what comes back: the runs trained here, not the ones copied in from docs/
tar czf "$OUT/p1_gpu_next.tar.gz" --exclude=checkpoints --exclude='resume*' \
    --exclude-from=<(sed 's|^|gpu_next/p1_ends_rates/|' "$SEEDED" 2>/dev/null) -C "$RUNS" gpu_next
ls -la "$OUT"
