#!/usr/bin/env bash
# One device call (issue 16): P1's full 210-epoch schedule at its top grid rate (m = 30), both ends of the γ line ×
# our data seeds 1-3 (configs/sweeps/p1_m30_e210.toml), as one batched group of 6, each step replayed as one CUDA
# graph (train.cuda_graph) once the graph has been checked on this device:
#  1. tests/test_cuda_graph.py (a graphed group trains as the eager one, across a resumed session: bit for bit in
#     fp32 and bf16, and to 1e-4 in fp32): log in $OUT/cuda_graph_tests.log; the sweep uses the graph only if the
#     fp32 test to 1e-4 passes (bit for bit or not, the step's arithmetic is then the graph's to keep);
#  2. benchmarks/throughput.py at the paper config, K = 6, eager (d) against graphed (f), in $OUT/throughput.json;
#  3. the sweep, until LIMIT;
#  4. with the time left, configs/sweeps/p1_best_rates_e210.toml (the same schedule at the rates where our seeds
#     read best at epoch 27: γ 1.2 at m = 17.5, γ 0.3 at m = 20), one group of 6 likewise.
# Why the graph: on one H200 a batched step of this model took ~16-17 ms whether it carried 2 or 6 runs
# (docs/performance.md), i.e. it is bound by launching kernels, and one session's 15 minutes of device time
# trained 2 runs only to epoch 132 of 210 (2026-11-28: γ 1.2 seed 3 and γ 0.3 seed 1,
# configs/sweeps/p1_m30_e210_pair.toml, docs/p1_levers/m30_e210_h200_bf16/). Eager, 6 runs reach the same epoch
# in the same time. With the graph the runs' ids differ from the eager sweep's (train.cuda_graph is hashed when set).
# It stops itself LIMIT seconds after it starts (default 540, inside the device's 10-minute limit); called again
# on a warm machine, the runs resume from their last checkpoint (every 3 epochs) and the checks are skipped.
# A device run's resume state cannot come back, so a new machine trains them from step 0.
#   device run:   bash experiments/gpu_p1_m30_e210.sh        (timeout_s 600; again at once with LIMIT=...)
#   here, after:  bash experiments/ingest_gpu_next.sh FILES_AT h200_bf16_k6
# What comes back: the runs' small outputs as $OUT/p1_gpu_next.tar.gz, and the γ 1.2 runs' last weights as
# $OUT/e210_g1.2_sN_step_*.safetensors (three files of ~11 MB; the ingest sets them up as runs under
# runs/p1_m30_e210_weights/). The best-rate runs bring back their records only ($OUT: 8 files, 64 MiB at most).
# Set LIMIT (seconds) to stop earlier; PY (default python3); SWEEP and K for another part of the experiment
# (SWEEP=configs/sweeps/p1_m30_e210_pair.toml K=2 repeats 2026-11-28's call); GRAPH=0 to train eagerly.
set -uo pipefail
cd "$(dirname "$0")/.."
source experiments/gpu_call.sh  # OUT LIMIT PY REF RUNS, left, cli, cli_until_limit; prints the machine
SWEEP=${SWEEP:-configs/sweeps/p1_m30_e210.toml}; K=${K:-6}; GRAPH=${GRAPH:-}
if [ -z "$GRAPH" ] && [ -f "$RUNS/gpu_next/graph_checked" ]; then GRAPH=$(cat "$RUNS/gpu_next/graph_checked"); fi
if [ -z "$GRAPH" ]; then
    PYTHONPATH=src:. timeout 180 "$PY" -m pytest -q -p no:cacheprovider tests/test_cuda_graph.py -rA -k "graphed or bookkeeping" \
        > "$OUT/cuda_graph_tests.log" 2>&1
    tail -n 12 "$OUT/cuda_graph_tests.log"
    if grep -q "PASSED.*test_a_graphed_group_trains_as_the_eager_one_up_to_rounding" "$OUT/cuda_graph_tests.log"; then
        GRAPH=1
    else
        GRAPH=0
    fi
    echo "$GRAPH" > "$RUNS/gpu_next/graph_checked"
    PYTHONPATH=src:. timeout 150 "$PY" -m benchmarks.throughput --config configs/p1/cbook.toml --device cuda \
        --k 6 --rows a,d,f --steps 40 --repeats 1 --out "$OUT/throughput.json" 2>&1 | tail -n 12
fi
GRAPH_SET=()
[ "$GRAPH" = 1 ] && GRAPH_SET=(--set train.cuda_graph=true)
echo "training with train.cuda_graph=$([ "$GRAPH" = 1 ] && echo true || echo false)"
BEST=configs/sweeps/p1_best_rates_e210.toml
for job in "$SWEEP:p1_m30_e210:e210" "$BEST:p1_best_rates_e210:"; do  # weights of the first job only: $OUT
    # holds at most 8 files and 64 MiB
    IFS=: read -r sweep name prefix <<< "$job"
    dir=$RUNS/gpu_next/$name
    if [ "$sweep" = "$BEST" ] && [ "$(left)" -le 90 ]; then echo "no time left for $name"; continue; fi
    cli_until_limit sweep "$sweep" --out "$dir" --backend local --batch-models "$K" "${GRAPH_SET[@]}" \
        || echo "$name stopped (rc $?): resumable"
    cli sweep "$sweep" --out "$dir" "${GRAPH_SET[@]}" --dry-run | tail -7
    for r in "$dir"/*/; do
        [ -f "$r/config.json" ] || continue
        echo "$(basename "$r"): $(tail -n 1 "$r/metrics.jsonl" 2>/dev/null | cut -c1-200)"
        # the small-init runs' last weights (~11 MB each; not resume states), for key-by-key figures here
        gs=$("$PY" -c 'import json, sys; c = json.load(open(sys.argv[1]))
print("g%g_s%d" % (c["init"]["gamma"], c["seeds"]["data_seed"]))' "$r/config.json" 2>/dev/null)
        last=$(ls "$r"/checkpoints/step_*.safetensors 2>/dev/null | tail -1)
        case "$prefix:$gs" in ?*:g1.2_s*) [ -n "$last" ] && cp "$last" "$OUT/${prefix}_${gs}_$(basename "$last")" ;; esac
    done
done
tar czf "$OUT/p1_gpu_next.tar.gz" --exclude=checkpoints --exclude='resume*' -C "$RUNS" gpu_next
ls -la "$OUT"
