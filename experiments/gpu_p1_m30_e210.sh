#!/usr/bin/env bash
# One device call (issue 16): P1's full 210-epoch schedule as batched groups of 6, eagerly (GRAPH=1: each step
# replayed as one CUDA graph, train.cuda_graph, 1.03x faster on one H200; GRAPH=check: tested on the device first,
# ~40 s, more than the graph saves in a call). Two jobs, the second with the time the first leaves:
# configs/sweeps/p1_composers_e210.toml (the group of 6 that gave P1's best-over-rates composers of seeds 1 and 2,
# γ 1.2 at m = 17.5 and 12.5, retraced bit for bit on an H200 with torch 2.11 and continued to epoch 210; on
# another card a new draw of the same group), then
# configs/sweeps/p1_best_rates_e210.toml (γ 1.2 at m = 17.5, γ 0.3 at m = 20); FIRST=best: the best rates, then
# configs/sweeps/p1_m30_e210.toml (P1's top grid rate, m = 30, both ends); FIRST=m30: the other way round.
#  1. with GRAPH=check, tests/test_cuda_graph.py (a graphed group trains as the eager one, across a resumed
#     session: bit for bit in fp32 and bf16, and to 1e-4 in fp32): log in $OUT/cuda_graph_tests.log; the sweep
#     uses the graph only if the fp32 test to 1e-4 passes. Passed on one H200 on 2026-11-28, all four tests;
#  2. once a machine (EVAL_COST=0 skips it), benchmarks/eval_cost.py at the paper config, K = 6: what each
#     evaluation's parts cost in batched steps (2026-11-28: an epoch with evaluation took ~5 s longer than one
#     without, ~26 % of the wall time), in $OUT/eval_cost.json;
#  3. the first job, until LIMIT; 4. the second, with the time left.
# Across sessions: one session's 15 minutes of device time take a group of 6 to about epoch 108 of 210
# (2026-11-28, m = 30: docs/p1_levers/m30_e210_h200_bf16_k6/), and a new machine starts bare. So each call sends
# back the resume state of one of the first job's runs (BACK, default g1.2_m17.5_s1: 32.8 MB in three parts of
# at most 15 MiB and a checksum; a finished run sends its last weights instead), and the ingest sets it up as
# runs/gpu_back/<job>/<run id>/. The next session's call, run with carry ["runs/gpu_back"] (the working tree and
# what is carried travel in 64 MiB: one run's state fits), continues that run first, alone (~102 epochs left:
# ~8 min at ~13 ms a step), then trains the rest. A run so continued rounds in a group of 1 from there on (its
# sessions.jsonl names each session's group).
# It stops itself LIMIT seconds after it starts (default 540, inside the device's 10-minute limit); called again
# on a warm machine, the runs resume from their last checkpoint (every 3 epochs) and the checks are skipped.
#   device run:   bash experiments/gpu_p1_m30_e210.sh        (timeout_s 600; again at once with LIMIT=...)
#                 (carry ["runs/gpu_back"] when an earlier session's resume states are there)
#   here, after:  bash experiments/ingest_gpu_next.sh FILES_AT h200_bf16   (h100_bf16 on an H100)
# What comes back: the runs' small outputs as $OUT/p1_gpu_next.tar.gz, and back__<job>__gG_mM_sN.safetensors.partNN
# with back__<job>__gG_mM_sN.sha256 (a resume state) or last__<job>__gG_mM_sN_step_*.safetensors (a finished run's
# last weights).
# Set LIMIT (seconds) to stop earlier; PY (default python3); SWEEP and K for another part of the experiment
# (SWEEP=configs/sweeps/p1_m30_e210_pair.toml K=2 FIRST=m30 repeats 2026-11-28's first call;
# FIRST=m30 GRAPH=1 its second session's).
set -uo pipefail
cd "$(dirname "$0")/.."
source experiments/gpu_call.sh  # OUT LIMIT PY REF RUNS, left, cli, cli_until_limit; prints the machine
SWEEP=${SWEEP:-configs/sweeps/p1_m30_e210.toml}; K=${K:-6}
GRAPH=${GRAPH:-0}  # 0 eager (default), 1 graphed, check: test the graph on this device first, graphed if it passes
if [ "$GRAPH" = check ] && [ -f "$RUNS/gpu_next/graph_checked" ]; then GRAPH=$(cat "$RUNS/gpu_next/graph_checked"); fi
if [ "$GRAPH" = check ]; then
    PYTHONPATH=src:. timeout 180 "$PY" -m pytest -q -p no:cacheprovider tests/test_cuda_graph.py -rA -k "graphed or bookkeeping" \
        > "$OUT/cuda_graph_tests.log" 2>&1
    tail -n 12 "$OUT/cuda_graph_tests.log"
    if grep -q "PASSED.*test_a_graphed_group_trains_as_the_eager_one_up_to_rounding" "$OUT/cuda_graph_tests.log"; then
        GRAPH=1
    else
        GRAPH=0
    fi
    echo "$GRAPH" > "$RUNS/gpu_next/graph_checked"
fi
if [ "${EVAL_COST:-1}" = 1 ] && [ ! -f "$RUNS/gpu_next/eval_cost_measured" ]; then  # once a machine
    PYTHONPATH=src:. timeout 120 "$PY" -m benchmarks.eval_cost --config configs/p1/cbook.toml \
        --set train.precision=bf16 --set train.eval_every=3 --set train.checkpoint_every=3 --device cuda --k 6 \
        --out "$OUT/eval_cost.json" 2>&1 | tail -n 8
    touch "$RUNS/gpu_next/eval_cost_measured"
fi
GRAPH_SET=()
[ "$GRAPH" = 1 ] && GRAPH_SET=(--set train.cuda_graph=true)
echo "training with train.cuda_graph=$([ "$GRAPH" = 1 ] && echo true || echo false)"
BEST=configs/sweeps/p1_best_rates_e210.toml
# Runs carried in (the `run` tool's carry: ["runs/gpu_back"], set up here by ingest_gpu_next.sh from an earlier
# session's resume states): each continues where it stopped, as a group of its own (the sweep trains the runs
# of one starting epoch together), before the job's other runs. A warm machine's own copy is newer: kept.
for r in "${GPU_BACK:-runs/gpu_back}"/*/*/; do
    [ -f "$r/config.json" ] || continue
    dest=$RUNS/gpu_next/$(basename "$(dirname "$r")")/$(basename "$r")
    [ -e "$dest" ] && continue
    mkdir -p "$(dirname "$dest")" && cp -r "$r" "$dest" && rm -f "$dest/LOCK"
    echo "carried in: $dest, from epoch $(tail -n 1 "$dest/epochs.jsonl" | cut -d, -f1 | tr -dc 0-9)"
done
COMPOSERS=configs/sweeps/p1_composers_e210.toml
case "${FIRST:-composers}" in
    composers) JOBS=("$COMPOSERS:p1_composers_e210" "$BEST:p1_best_rates_e210") ;;
    best) JOBS=("$BEST:p1_best_rates_e210" "$SWEEP:p1_m30_e210") ;;
    *) JOBS=("$SWEEP:p1_m30_e210" "$BEST:p1_best_rates_e210") ;;
esac
# The first job's run named in BACK (gG_mM_sN: γ, rate multiplier, data seed) sends its resume state back, so a
# later session continues it (the ingest puts it under runs/gpu_back/). Name one run: its 32.8 MB, carried in
# beside the ~26 MB working tree, is what fits in the 64 MiB a call takes along (and a call returns 8 files).
BACK=${BACK:-g1.2_m17.5_s1}
first=1
for job in "${JOBS[@]}"; do
    IFS=: read -r sweep name <<< "$job"
    dir=$RUNS/gpu_next/$name
    if [ "$first" = 0 ] && [ "$(left)" -le 90 ]; then echo "no time left for $name"; continue; fi
    cli_until_limit sweep "$sweep" --out "$dir" --backend local --batch-models "$K" "${GRAPH_SET[@]}" \
        || echo "$name stopped (rc $?): resumable"
    cli sweep "$sweep" --out "$dir" --backend local "${GRAPH_SET[@]}" --dry-run | tail -7
    for r in "$dir"/*/; do
        [ -f "$r/config.json" ] || continue
        echo "$(basename "$r"): $(tail -n 1 "$r/metrics.jsonl" 2>/dev/null | cut -c1-200)"
        gs=$("$PY" -c 'import json, sys; c = json.load(open(sys.argv[1]))
t = c["train"]
print("g%g_m%g_s%d" % (c["init"]["gamma"], t["lr_multiplier"], c["seeds"]["data_seed"]))' "$r/config.json" 2>/dev/null)
        resume=$r/checkpoints/resume.safetensors
        carried=0; [ -d "${GPU_BACK:-runs/gpu_back}/$name/$(basename "$r")" ] && carried=1
        if [ "$carried" = 1 ] && [ -f "$r/DONE" ]; then  # a carried run that finished: always its last weights
            :  # (the ingest then drops its carried state, so no later call continues it again)
        elif [ "$first" != 1 ] || [[ " $BACK " != *" $gs "* ]]; then
            continue
        fi
        if [ -f "$r/DONE" ]; then  # finished: its last weights (~11 MB), for the figures here
            last=$(ls "$r"/checkpoints/step_*.safetensors 2>/dev/null | tail -1)
            [ -n "$last" ] && cp "$last" "$OUT/last__${name}__${gs}_$(basename "$last")"
        elif [ -f "$resume" ]; then  # in parts of 15 MiB (a returned file is 16 MiB at most), with its checksum
            split -b 15M -d "$resume" "$OUT/back__${name}__${gs}.safetensors.part"
            (cd "$(dirname "$resume")" && sha256sum resume.safetensors) > "$OUT/back__${name}__${gs}.sha256"
        fi
    done
    first=0
done
tar czf "$OUT/p1_gpu_next.tar.gz" --exclude=checkpoints --exclude='resume*' -C "$RUNS" gpu_next
ls -la "$OUT"
