#!/usr/bin/env bash
# One device call for the next session lent a GPU (issue 16): the frontier's factors read the way P1 reads a cell
# (per seed the best over peak learning rates, arXiv 2405.05409 §4; docs/p1_frontier.md), in order of priority:
#  1. the rest of configs/sweeps/p1_frontier_data_steps.toml (a quarter of the rows at equal steps; its finished
#     half-rows runs copied in first), batched groups of 12;
#  2. the rest of configs/sweeps/p1_frontier_d128_rates.toml (d_model 128, γ 1.482 / 0.370: W_Q's std kept),
#     its 54 finished runs (γ 1.2 / 0.3 kept) copied in from docs/ first, batched groups of 18;
#  3. the rest of configs/sweeps/p1_ends_rates.toml (`anchorlab reproduce p1-both-sides`: γ 0.3 at the 8 rates
#     other than 20, γ 1.2 at m = 30), its 33 committed runs copied in first, batched groups of 6;
#  4. the rest of configs/sweeps/p1_frontier_data_rates.toml (half the paper config's rows, 27 epochs, all 9
#     rates), its finished runs copied in from docs/ first (the 12 of p1_frontier_data at this size and the 6 of
#     seed 2 trained on the CPU): γ 1.2 seeds 1 and 3 at 6 more rates, then γ 0.3 at its 8 other rates. The point
#     is settled (seed 2 misses at all 9 rates: docs/p1_frontier.md); these complete P1's protocol for the record.
# Runs copied in from docs/ do not come back. It stops itself LIMIT seconds after it starts (default 540, inside
# the device's 10-minute limit); called again on a warm machine, the runs resume where they stopped and done runs
# are skipped. The small outputs (config, metrics, epochs, summary; no checkpoints) come back as
# $OUT/p1_gpu_next.tar.gz.
#   device run:   bash experiments/gpu_p1_protocol.sh      (timeout_s 600; again with LIMIT=... on a warm machine)
#   here, after:  bash experiments/ingest_gpu_next.sh FILES_AT [h200_bf16|h100_bf16]
# Set LIMIT (seconds) to stop earlier; PY (default python3).
set -uo pipefail
cd "$(dirname "$0")/.."
source experiments/gpu_call.sh  # OUT LIMIT PY REF RUNS, left, cli, cli_until_limit; prints the machine
SEEDED=$RUNS/gpu_next/seeded.txt  # sweep/run of every run copied in from docs/, one a line

seed_from_docs() {  # SWEEP_DIR DOCS_RUN_DIR...: copy the finished committed runs in (once), listed in $SEEDED
    local dst=$1 d id; shift
    mkdir -p "$dst"
    for d in "$@"; do
        id=$(basename "$d")
        [ -f "$d/DONE" ] && [ ! -e "$dst/$id" ] && cp -r "$d" "$dst/$id" && echo "$(basename "$dst")/$id" >> "$SEEDED"
    done
    return 0
}

step() {  # SWEEP_TOML K [--only AXIS=VALUE...]: train the sweep (or that part of it) into gpu_next/<its name>
    local dir=$RUNS/gpu_next/$(basename "$1" .toml)  # with groups of K, if time is left
    [ "$(left)" -gt 90 ] || { echo "no time left for $(basename "$1")"; return 0; }
    cli_until_limit sweep "$1" --out "$dir" --backend local --batch-models "$2" "${@:3}" \
        || echo "$(basename "$1") stopped (rc $?): resumable"
}

touch "$SEEDED"
seed_from_docs "$RUNS/gpu_next/p1_frontier_data_steps" docs/p1_frontier/data_steps_*/n*/*/
step configs/sweeps/p1_frontier_data_steps.toml 12
seed_from_docs "$RUNS/gpu_next/p1_frontier_d128_rates" docs/p1_frontier/d128_rates_*/*/
step configs/sweeps/p1_frontier_d128_rates.toml 18
seed_from_docs "$RUNS/gpu_next/p1_ends_rates" docs/p1_levers/lr_h200_bf16/m*/*/ docs/p1_paper_gamma/h200_bf16/*/
step configs/sweeps/p1_ends_rates.toml 6
seed_from_docs "$RUNS/gpu_next/p1_frontier_data_rates" docs/p1_frontier/data_h200_bf16/n450000/*/ \
    docs/p1_frontier/data_rates_*/n450000/*/
step configs/sweeps/p1_frontier_data_rates.toml 12 --only init.gamma=1.2  # settled: for the record
step configs/sweeps/p1_frontier_data_rates.toml 12
for f in p1_frontier_data_rates p1_frontier_data_steps p1_frontier_d128_rates p1_ends_rates; do
    [ -d "$RUNS/gpu_next/$f" ] && cli sweep "configs/sweeps/$f.toml" --out "$RUNS/gpu_next/$f" --dry-run | tail -1
done
# what comes back: the runs trained here, not the ones copied in from docs/ (never an empty pattern, which would
# exclude every run)
tar czf "$OUT/p1_gpu_next.tar.gz" --exclude=checkpoints --exclude='resume*' \
    --exclude-from=<(grep -v '^$' "$SEEDED" | sed 's|^|gpu_next/|') -C "$RUNS" gpu_next
ls -la "$OUT"
