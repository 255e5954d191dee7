#!/usr/bin/env bash
# The records of this machine's long CPU runs (issue 16) into the docs folders that cite them, at each milestone:
# `anchorlab export` (config, evaluations, per-epoch losses, sessions, summary, DONE; never a checkpoint), each run
# by rename, so a run still training exports what it has logged so far. Runs not on this machine are skipped, and
# so is a run with fewer epochs than its committed records that retraces them (restarted from step 0 on a new
# machine, the same numbers); a restarted run that rounds differently goes to NAME_restart beside them.
#   bash experiments/sync_cpu_records.sh && git add docs && git commit -m "..."
# Then redraw what reads them (docs/p1_frontier.md says which):
#   anchorlab figure p1-curves docs/p1_levers/cpu_bf16/lr_m30_g{1.2_s1,1.2_s2,0.3_s1}_e210 --option loss=true
#   anchorlab figure p1-curves docs/p1_levers/cpu_bf16/lr_m30_g{1.2_s1,1.2_s2,1.2_s3,0.3_s1}_e210 \
#       docs/p1_levers/cpu_bf16/lr_m30_g1.2_s2_e210_restart docs/p1_levers/m30_e210_h200_bf16* \
#       --option loss=true --option panels=run --out /tmp/f
#       (every trajectory, a panel each: docs/p1_levers/p1-curves_m30_e210_runs.{png,csv})
#   anchorlab figure p1-frontier docs/p1_frontier/points.toml --out docs/p1_frontier
# Set ANCHORLAB (default .venv/bin/anchorlab).
set -euo pipefail
cd "$(dirname "$0")/.."
ANCHORLAB=${ANCHORLAB:-.venv/bin/anchorlab}
lines() { if [ -f "$1" ]; then wc -l < "$1"; else echo 0; fi; }  # epochs recorded in FILE
first_loss() { head -n 1 "$1" 2>/dev/null | grep -o '"train_loss": [-0-9.eE+]*' || true; }  # epoch 1's, as logged

# P1's top rate to epoch 210 (experiments/cpu_p1_m30_e210.sh): runs/p1_levers_cpu/lr_m30_gG_sN_bf16_e210
for run in runs/p1_levers_cpu/lr_m30_g*_s*_bf16_e210; do
    [ -f "$run/config.json" ] || continue
    name=$(basename "$run"); name=${name/_bf16_e210/_e210}
    ours=$(lines "$run/epochs.jsonl")
    committed=docs/p1_levers/cpu_bf16/$name/epochs.jsonl
    theirs=$(lines "$committed")
    # A run restarted from step 0 on a new machine either retraces the committed one (the same epoch-1 loss to
    # every digit: the same trajectory, so the longer records stand for both) or rounds differently (another
    # trajectory of that config, exported beside it as NAME_restart, never over it).
    if [ "$theirs" -gt 0 ] && [ "$(first_loss "$run/epochs.jsonl")" != "$(first_loss "$committed")" ]; then
        "$ANCHORLAB" export "$run" --out docs/p1_levers/cpu_bf16 --name "${name}_restart" | sed -n 1p; continue
    fi
    if [ "$ours" -lt "$theirs" ]; then  # the same trajectory, not yet as far as its committed records
        echo "$name: $ours epochs here, $theirs committed: kept the committed records"; continue
    fi
    "$ANCHORLAB" export "$run" --out docs/p1_levers/cpu_bf16 --name "$name" | sed -n 1p
done
# the half-rows protocol's runs trained here (configs/sweeps/p1_frontier_data_rates.toml)
for run in runs/p1_frontier_data_rates/*/; do
    [ -f "$run/config.json" ] || continue
    "$ANCHORLAB" export "$run" --out docs/p1_frontier/data_rates_cpu_bf16/n450000 | sed -n 1p
done
