#!/usr/bin/env bash
# One device call (issue 16): two runs of P1's full 210-epoch schedule at the top grid rate (m = 30), as one
# batched group of 2: configs/sweeps/p1_m30_e210_pair.toml (γ 1.2 seed 3, the composer, and γ 0.3 seed 1; the
# same run ids as configs/sweeps/p1_m30_e210.toml). The CPU queue experiments/cpu_p1_m30_e210.sh trains the same
# experiment at ~14 h a run; its γ 1.2 seeds 1 and 2 reached epochs 138 and 177 before the machine holding their
# checkpoints was lost (their records are in docs/p1_levers/cpu_bf16/).
# It stops itself LIMIT seconds after it starts (default 540, inside the device's 10-minute limit); called again
# on a warm machine, the runs resume from their last checkpoint (every 3 epochs). What comes back each call:
# $OUT/p1_gpu_next.tar.gz (config, metrics, epochs, sessions, summary of each run; no checkpoints).
#   device run:   bash experiments/gpu_p1_m30_e210.sh        (timeout_s 600; again at once with LIMIT=...)
#   here, after:  bash experiments/ingest_gpu_next.sh FILES_AT h200_bf16
# Cost: 2 × 210 × 759,375 = 319M sequences, ~11-12 min at K = 2's ~460,000 seq/s aggregate (one H200,
# docs/performance.md), evaluations included. Set LIMIT (seconds) to stop earlier; PY (default python3).
set -uo pipefail
cd "$(dirname "$0")/.."
source experiments/gpu_call.sh  # OUT LIMIT PY REF RUNS, left, cli, cli_until_limit; prints the machine
DIR=$RUNS/gpu_next/p1_m30_e210
cli_until_limit sweep configs/sweeps/p1_m30_e210_pair.toml --out "$DIR" --backend local --batch-models 2 \
    || echo "p1_m30_e210 stopped (rc $?): resumable"
cli sweep configs/sweeps/p1_m30_e210_pair.toml --out "$DIR" --dry-run | tail -3
for r in "$DIR"/*/; do
    echo "$(basename "$r"): $(tail -n 1 "$r/metrics.jsonl" 2>/dev/null | cut -c1-300)"
done
tar czf "$OUT/p1_gpu_next.tar.gz" --exclude=checkpoints --exclude='resume*' -C "$RUNS" gpu_next
ls -la "$OUT"
