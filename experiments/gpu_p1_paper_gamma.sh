#!/usr/bin/env bash
# One device call for a session lent a GPU (issue 16): the 12 runs of configs/sweeps/p1_paper_gamma.toml that
# p1-both-sides has not made (γ 0.3 / 0.4 / 1.0 / 1.2 × seeds 1-3, paper config, 27 epochs), in bf16 (cleared
# for P1: docs/p1_both_sides.md), as two batched groups of 6 (K = 6 batched bf16: 907,600 seq/s aggregate on
# one H100, docs/performance.md): first γ 1.0 / 1.2 (the small-init side, where issue 16's done-when is still
# open), then γ 0.3 / 0.4. Each group is the same sweep file restricted to two γ values, so its run ids are the
# full sweep's (a later `anchorlab sweep configs/sweeps/p1_paper_gamma.toml --set train.precision=bf16` over
# these directories skips them). It stops itself before the device's 10-minute limit; the runs resume where
# they stopped when it is called again on a warm machine (same run directories). The small outputs (no
# checkpoints) come back as one archive: $OUT/p1_paper_gamma_bf16.tar.gz, plus the log.
#   device run:  bash experiments/gpu_p1_paper_gamma.sh            (timeout_s 600)
#   here, after: tar xzf .../p1_paper_gamma_bf16.tar.gz -C docs/
# Estimate: 6 runs × 27 epochs × 759,375 sequences at 907,600 seq/s ≈ 2.3 min a group, plus 10 evaluations.
# Set LIMIT (seconds, default 540) to stop earlier; PY (default python3) for another interpreter.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; LIMIT=${LIMIT:-540}; PY=${PY:-python3}; START=$SECONDS
mkdir -p "$OUT" runs
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader || true
"$PY" -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
for pair in "1.0, 1.2" "0.3, 0.4"; do
    tag=$(echo "$pair" | tr -d ' ,.')
    sweep=configs/sweeps/_gpu_$tag.toml
    sed -e "s/^\"init.gamma\" = .*/\"init.gamma\" = [$pair]/" configs/sweeps/p1_paper_gamma.toml > "$sweep"
    left=$((LIMIT - (SECONDS - START)))
    [ "$left" -gt 20 ] || { echo "no time left for γ $pair"; break; }
    echo "== γ $pair: $left s left"
    PYTHONPATH=src timeout "$left" "$PY" -m anchorlab.cli sweep "$sweep" --set train.precision=bf16 \
        --out runs/p1_paper_gamma_bf16/g$tag --backend local --batch-models 6 || echo "γ $pair stopped (rc $?): resumable"
    PYTHONPATH=src "$PY" -m anchorlab.cli sweep "$sweep" --set train.precision=bf16 \
        --out runs/p1_paper_gamma_bf16/g$tag --dry-run | tail -7
done
tar czf "$OUT/p1_paper_gamma_bf16.tar.gz" --exclude=checkpoints --exclude='resume*' -C runs p1_paper_gamma_bf16
ls -la "$OUT"
