# Sourced by the one-call device scripts (gpu_p1_gamma_long.sh, gpu_p1_levers.sh), from the repository root:
# their settings (OUT, LIMIT from now, PY, REF), the time left, the CLI with and without that limit, and what
# the machine is. Not run on its own.
OUT=${OUT:-out}; LIMIT=${LIMIT:-540}; PY=${PY:-python3}; REF=${REF:-.ref/p1_authors_paper_g0.8_s1.npz}
RUNS=${RUNS:-runs}  # where gpu_next/ goes (a test points it elsewhere)
END=$((SECONDS + LIMIT))
left() { local t=$((END - SECONDS)); echo $((t > 1 ? t : 1)); }
cli() { PYTHONPATH=src "$PY" -m anchorlab.cli "$@"; }
cli_until_limit() { PYTHONPATH=src timeout "$(left)" "$PY" -m anchorlab.cli "$@"; }
mkdir -p "$OUT" "$RUNS/gpu_next"
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader || true
"$PY" -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU')"
# A tiny run first (~15 s), in bf16 as the sweeps train: every code path of an evaluation on this device (the
# routing and pair-order readouts included) has run once before the call spends its minutes on sweeps. A failure
# ends the call here, with its traceback in the output.
SMOKE=(configs/p1/cpu_demo.toml --set task.data_size=3200 --set train.epochs=1 --set train.batch_size=64
       --set train.precision=bf16)
mkdir -p "$RUNS/gpu_smoke"
if ! cli train "${SMOKE[@]}" --out "$RUNS/gpu_smoke/plain" > "$RUNS/gpu_smoke/log" 2>&1; then
    tail -n 25 "$RUNS/gpu_smoke/log"; echo "smoke run failed: nothing trained"; exit 1
fi
echo "smoke run: ok"
