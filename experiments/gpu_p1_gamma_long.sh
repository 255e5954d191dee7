#!/usr/bin/env bash
# One device call for the next session lent a GPU (issue 16). In order of priority:
#  1. configs/sweeps/p1_frontier_epochs60.toml: the frontier's epochs factor at the paper width, P1's schedule
#     compressed to 60 epochs (cosine over 50), γ 0.3 / 1.2 × our data seeds 1-3, bf16, one batched group of 6;
#     beside it, if the authors' reference file is carried in (REF, default .ref/p1_authors_paper_g0.8_s1.npz),
#     configs/sweeps/p1_reference_init_order.toml as one batched group of 2 (the init-only and order-only cells
#     of the data / init / order decomposition: γ 0.8, our seed 3 otherwise, 27 epochs, bf16);
#  2. with the time left, configs/sweeps/p1_cooldown.toml: the same two ends at the paper schedule cooled to
#     1e-5 over epochs 27-33 (train.cooldown_epochs = 6), one batched group of 6;
#  3. with the time still left, configs/sweeps/p1_paper_gamma_long.toml: γ 1.2 × seeds 1-3 at the paper schedule
#     to epoch 60, one batched group of 3;
#  4. with the time still left, configs/sweeps/p1_frontier_epochs30.toml: the same two ends with the schedule
#     compressed to 30 epochs (cosine over 20), one batched group of 6;
#  5. once sweep 1 is complete: P1's mechanism figures (p1-fig3, -fig5, -fig12, -fig13) on its γ 1.2 and γ 0.3
#     seed-1 runs, drawn there from their checkpoints, and those two runs' last checkpoints brought back (two
#     files of ~11 MB: the weights, for figures drawn here later; not resume states).
# It stops itself LIMIT seconds after it starts (default 540, inside the device's 10-minute limit); called again
# on a warm machine, the runs resume where they stopped (same run directories) and done runs are skipped.
# The small outputs (config, metrics, epochs, summary; no checkpoints) come back as $OUT/p1_gpu_next.tar.gz.
#   here, first:  mkdir -p .ref && cp PATH/p1_authors_paper_g0.8_s1.npz .ref/ && echo /.ref/ >> .git/info/exclude
#   device run:   bash experiments/gpu_p1_gamma_long.sh        (timeout_s 600, carry [".ref"]; again with LIMIT=...)
#   here, after:  bash experiments/ingest_gpu_next.sh FILES_AT [h200_bf16|h100_bf16]   (into docs/p1_frontier/,
#                 docs/p1_paper_gamma/, docs/p1_reference_parts/, docs/p1_mechanisms/, with their figures)
# Estimates, not measured: sweep 1 is 273M training sequences at K = 6's 907,600 seq/s (bf16, one H100) ≈ 5 min
# plus 21 evaluations of 900,000 rows × 6 models; the reference cells ~3 min beside it; sweep 2 150M ≈ 3 min;
# sweeps 3 and 4 137M each ≈ 3 min.
# Set LIMIT (seconds) to stop earlier; PY (default python3).
set -uo pipefail
cd "$(dirname "$0")/.."
EP60=${EP60:-configs/sweeps/p1_frontier_epochs60.toml}; EP60_DIR=runs/gpu_next/p1_frontier_epochs60
LONG=${LONG:-configs/sweeps/p1_paper_gamma_long.toml}; LONG_DIR=runs/gpu_next/p1_paper_gamma_long
EP30=${EP30:-configs/sweeps/p1_frontier_epochs30.toml}; EP30_DIR=runs/gpu_next/p1_frontier_epochs30
COOL=${COOL:-configs/sweeps/p1_cooldown.toml}; COOL_DIR=runs/gpu_next/p1_cooldown
source experiments/gpu_call.sh  # OUT LIMIT PY REF, left, cli, cli_until_limit; prints the machine

ref_pid=
if [ -f "$REF" ]; then
    cli_until_limit sweep configs/sweeps/p1_reference_init_order.toml \
        --set task.reference="$REF" --out runs/gpu_next/p1_reference_parts --backend local --batch-models 2 \
        > "$OUT/reference_parts.log" 2>&1 &
    ref_pid=$!
else
    echo "no $REF: the reference cells are skipped"
fi
cli_until_limit sweep "$EP60" --out "$EP60_DIR" --backend local --batch-models 6 \
    || echo "sweep 1 stopped (rc $?): resumable"
if [ "$(left)" -gt 60 ]; then
    cli_until_limit sweep "$COOL" --out "$COOL_DIR" --backend local --batch-models 6 \
        || echo "sweep 2 stopped (rc $?): resumable"
fi
if [ "$(left)" -gt 60 ]; then
    cli_until_limit sweep "$LONG" --out "$LONG_DIR" --backend local --batch-models 3 \
        || echo "sweep 3 stopped (rc $?): resumable"
fi
if [ "$(left)" -gt 90 ]; then
    cli_until_limit sweep "$EP30" --out "$EP30_DIR" --backend local --batch-models 6 \
        || echo "sweep 4 stopped (rc $?): resumable"
fi
[ -n "$ref_pid" ] && { wait "$ref_pid" || echo "reference cells stopped (rc $?): resumable"; tail -3 "$OUT/reference_parts.log"; }
cli sweep "$EP60" --out "$EP60_DIR" --dry-run | tee "$OUT/ep60_plan.txt" | tail -8
[ -d "$COOL_DIR" ] && cli sweep "$COOL" --out "$COOL_DIR" --dry-run | tail -8
cli sweep "$LONG" --out "$LONG_DIR" --dry-run | tail -5
[ -d "$EP30_DIR" ] && cli sweep "$EP30" --out "$EP30_DIR" --dry-run | tail -8

# Mechanism figures on the compressed-schedule runs, once all six are done.
if grep -q "^6 done, 0 partial, 0 new" "$OUT/ep60_plan.txt"; then
    S=$EP60_DIR/$(grep "init.gamma=1.2 *seed=1" "$OUT/ep60_plan.txt" | awk '{print $1}')
    M=$EP60_DIR/$(grep "init.gamma=0.3 *seed=1" "$OUT/ep60_plan.txt" | awk '{print $1}')
    mkdir -p runs/gpu_next/p1_mechanisms_epochs60
    for fig in p1-fig3 p1-fig5 p1-fig12 p1-fig13; do
        [ "$(left)" -gt 20 ] || { echo "no time left for $fig"; break; }
        cli_until_limit figure "$fig" "$S" "$M" --out runs/gpu_next/p1_mechanisms_epochs60 \
            || echo "$fig failed or stopped (rc $?)"
    done
    for pair in "g1.2_s1:$S" "g0.3_s1:$M"; do
        last=$(ls "${pair#*:}"/checkpoints/step_*.safetensors | tail -1)
        cp "$last" "$OUT/ep60_${pair%%:*}_$(basename "$last")"
    done
fi
tar czf "$OUT/p1_gpu_next.tar.gz" --exclude=checkpoints --exclude='resume*' -C runs gpu_next
ls -la "$OUT"
