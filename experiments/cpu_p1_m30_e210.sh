#!/usr/bin/env bash
# P1's own protocol at one of its grid rates, on a 2-core CPU (issue 16): the paper config (configs/p1/cbook.toml)
# at peak rate 3e-4 (train.lr_multiplier 30, the top of P1's grid), both ends of the γ line (γ 1.2 small init,
# γ 0.3 large init) × our data seeds 1-3, trained to epoch 210 (P1 reads the end of its 210-epoch schedule;
# arXiv 2405.05409 §3.5, App. A), bf16, evaluated every 3 epochs. Results: docs/p1_frontier.md, "Training on past
# epoch 27 at the top rate".
#
# One one-thread trainer per core (SLOTS, default 2), in the order below (γ 1.2 seed 3, the composer, first: seeds 1
# and 2 have records to epochs 138 and 177 from a machine since lost; from step 0 the CPU retraces them, up to
# rounding where the thread count differs); each run resumes from its last epoch and
# a finished run is skipped, so the same command continues the queue in every session:
#   nohup bash experiments/cpu_p1_m30_e210.sh >> runs/cpu_p1_m30_e210.log 2>&1 &
# Where this machine has the shorter runs these continue (runs/p1_levers_cpu/lr_m30_g1.2_sN_bf16_e39 or
# ..._bf16 for seed 3), a run is their continuation (`anchorlab train --from`, which is exactly the 210-epoch run
# from step 0); elsewhere it is trained from step 0. Checkpoints every 3 epochs (11 MB each at this size); a run
# already started keeps the cadence it started with (`anchorlab train --resume`).
# Cost: ~1.6 steps/s per trainer on the 2-core AMD EPYC VM, 77,700 steps and 71 evaluations of 900,000 rows
# (~1 min each) a run: ~14 h a run from step 0, ~84 core-hours for the six. (The machine of 2026-11-28 trains
# 0.96 steps/s a trainer, alone or in the pair: ~23 h a run.)
# `anchorlab status runs/p1_levers_cpu` shows where each run stands (epochs, last evaluation, time left).
# Each run's progress bar goes to runs/p1_levers_cpu/NAME.log. Set SLOTS, THREADS (intra-op threads per trainer;
# default 2 / SLOTS, at least 1: every session passes it, since a run started elsewhere may have stored another),
# ANCHORLAB (default .venv/bin/anchorlab), PYTHON (default: the one beside it).
set -uo pipefail
cd "$(dirname "$0")/.."
SLOTS=${SLOTS:-2}
THREADS=${THREADS:-$(( SLOTS >= 2 ? 1 : 2 ))}
ANCHORLAB=${ANCHORLAB:-.venv/bin/anchorlab}
ROOT=${ROOT:-runs/p1_levers_cpu}
export OMP_WAIT_POLICY=PASSIVE
# bf16 runs are ~20x slower than fp32 on a CPU without bf16 kernels (no AVX-512 / AMX: anchorlab.cpu.native_bf16;
# the machine of 2026-11-29 was one): a run would take months there, and fp32 would not continue the bf16 records.
PYTHON=${PYTHON:-$(dirname "$ANCHORLAB")/python}
if [ "${ALLOW_EMULATED_BF16:-0}" != 1 ] && ! "$PYTHON" -c \
        "import sys; from anchorlab.cpu import native_bf16; sys.exit(0 if native_bf16() else 1)"; then
    echo "cpu_p1_m30_e210.sh: this CPU has no bf16 kernels (oneDNN needs AVX-512 or AMX): its bf16 runs would be" \
         "~20x slower than on the CPUs that trained them; not started (ALLOW_EMULATED_BF16=1 starts them anyway)" >&2
    exit 2
fi
# The trainers run a copy of src/ taken now ($ROOT/.code/TIME, ahead of the editable install on the path): a module
# the trainer imports only at its first evaluation (the readouts, the patching) would otherwise come from whatever
# the working tree holds by then, and an edit made while they train once mixed two versions and stopped both runs
# (2026-11-29). Copies older than a week are removed.
CODE=$ROOT/.code/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$CODE" && cp -r src/anchorlab "$CODE/" && find "$ROOT/.code" -mindepth 1 -maxdepth 1 -mtime +7 -exec rm -rf {} +
case $CODE in /*) ;; *) CODE=$PWD/$CODE ;; esac
export PYTHONPATH="$CODE${PYTHONPATH:+:$PYTHONPATH}"
echo "$(date -u +%FT%TZ) code: $CODE ($(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- src 2>/dev/null || echo ', with uncommitted changes'))"

train_one() {  # γ seed: resume the run, or start it (from a shorter run of it where this machine has one)
    local gamma=$1 seed=$2 out="$ROOT/lr_m30_g$1_s$2_bf16_e210" src
    local log="$ROOT/lr_m30_g$1_s$2_bf16_e210.log"
    mkdir -p "$ROOT"
    echo "$(date -u +%FT%TZ) γ $gamma seed $seed -> $out"
    if [ -f "$out/config.json" ]; then
        "$ANCHORLAB" train --resume "$out" --set "train.threads=$THREADS" >> "$log" 2>&1
    else
        for src in "$ROOT/lr_m30_g$1_s$2_bf16_e39" "$ROOT/lr_m30_g$1_s$2_bf16" ""; do
            [ -z "$src" ] || [ -f "$src/config.json" ] && break
        done
        if [ -n "$src" ]; then
            "$ANCHORLAB" train --from "$src" --set train.epochs=210 --set train.checkpoint_every=3 \
                --set "train.threads=$THREADS" --out "$out" \
                >> "$log" 2>&1
        else
            "$ANCHORLAB" train configs/p1/cbook.toml --set train.epochs=210 --set train.eval_every=3 \
                --set train.checkpoint_every=3 --set train.precision=bf16 --set "init.gamma=$gamma" \
                --set train.lr_multiplier=30 --set "seed=$seed" --set "train.threads=$THREADS" --out "$out" >> "$log" 2>&1
        fi
    fi
    local rc=$?  # before the line below: its $(date) would reset $?
    echo "$(date -u +%FT%TZ) γ $gamma seed $seed: exit $rc"
}
export -f train_one
export ROOT ANCHORLAB THREADS

printf '%s\n' "1.2 3" "1.2 2" "1.2 1" "0.3 1" "0.3 2" "0.3 3" \
    | xargs -P "$SLOTS" -L 1 bash -c 'train_one "$0" "$1"'
