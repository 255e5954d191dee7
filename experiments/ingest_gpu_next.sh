#!/usr/bin/env bash
# Here, after the device call of experiments/gpu_p1_gamma_long.sh, gpu_p1_levers.sh or gpu_p1_protocol.sh: its
# small outputs into docs/, its figures drawn, the two checkpoints it brought back set up as runs under runs/
# (never committed).
#   bash experiments/ingest_gpu_next.sh FILES_AT [TAG]
# FILES_AT: the folder the device call's files came back to (p1_gpu_next.tar.gz, ep60_* / e210_*.safetensors);
# TAG: the device and precision, as in the docs' folder names (default h200_bf16).
# Writes (each run: config.json, metrics.jsonl, epochs.jsonl, sessions.jsonl, summary.json, DONE where present):
#   docs/p1_frontier/epochs60/, epochs30/  the compressed-schedule sweeps, and p1-{gamma,curves,condensation}_epochsN
#   docs/p1_cooldown/TAG/               the two ends cooled over epochs 27-33, and p1-{gamma,curves}_TAG
#   docs/p1_paper_gamma/TAG_e60/        γ 1.2 at the paper schedule to epoch 60, and p1-{curves,condensation}_e60
#   docs/p1_reference_parts/TAG/        the init-only and order-only cells (reference named by file name)
#   docs/p1_levers/both_lr30_TAG/       γ 0.3 / 1.2 at P1's top grid rate (m = 30), seeds 1-3, and
#                                       p1-{gamma,curves}_both_lr30_TAG
#   docs/p1_levers/m30_e210_TAG/        P1's top rate to epoch 210 (experiments/gpu_p1_m30_e210.sh), and
#                                       p1-{curves,readouts}_m30_e210_TAG
#   docs/p1_levers/best_rates_e210_TAG/ the same schedule at the best epoch-27 rates (γ 1.2 m = 17.5, γ 0.3
#                                       m = 20), and p1-{curves,readouts}_best_rates_e210_TAG
#   docs/p1_levers/composers_e210_TAG/  the group of P1's best-over-rates composers continued to epoch 210
#                                       (configs/sweeps/p1_composers_e210.toml), and p1-{curves,readouts}_...
#   docs/p1_levers/wd_TAG/wdW/, lr_TAG/mM/  weight decay W at both ends, γ 1.2 at P1's rate multiplier M (one
#                                       folder per value), and p1-{gamma,curves}_{wd,lr}_TAG_{wdW,mM}
#                                       and p1-gamma_lr_TAG_best_of_rates (P1 §4: per seed the best over the
#                                       rates, with the γ line's m = 20 runs of γ 0.3 and 1.2)
#   docs/p1_frontier/d128_rates_TAG/    P1's protocol at d_model 128 (γ 1.2 / 0.3 kept and W_Q-std matched × 9
#                                       rates × seeds 1-3), and p1-gamma_d128_rates_TAG_{best,authors,each}
#   docs/p1_frontier/data_TAG/nN/, data_steps_TAG/nN/, data_rates_TAG/nN/  the data-size factor
#                                       (task.data_size N) at equal epochs, at equal steps and at P1's 9 rates,
#                                       and p1-gamma_{data,data_steps,data_rates}_TAG_nN_{best,authors,each},
#                                       p1-curves_{data,data_steps,data_rates}_TAG_nN
#   docs/p1_both_sides/ends_rates_TAG/  the rest of `reproduce p1-both-sides` (γ 0.3 at the other rates, γ 1.2 at
#                                       m = 30), and p1_both_sides/p1-gamma_ends_rates_{best,authors,each} redrawn
#                                       over every committed run of that sweep
#   docs/p1_frontier/p1-frontier.{png,csv}  every point of docs/p1_frontier/points.toml, redrawn
#   docs/p1_mechanisms/epochs60/        the mechanism figures drawn on the device
#   runs/p1_frontier_epochs60_weights/  the last weights of γ 1.2 / 0.3 seed 1 as run directories (for
#                                       `anchorlab figure p1-fig4 | p1-fig3b` here)
#   runs/p1_m30_e210_weights/           the last weights of the 210-epoch γ 1.2 runs, likewise (p1-keys, p1-fig*)
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=${1:?usage: bash experiments/ingest_gpu_next.sh FILES_AT [TAG]}; TAG=${2:-h200_bf16}
AL=${AL:-.venv/bin/anchorlab}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
tar xzf "$SRC/p1_gpu_next.tar.gz" -C "$tmp"
G=$tmp/gpu_next

copied=()  # the docs/ folders this call filled: only their figures are redrawn (the others stay as committed)
fresh() {  # DIR: true if DIR is, or is inside, a folder this call filled
    local c
    for c in "${copied[@]}"; do case "$1/" in "$c"/*) return 0 ;; esac; done
    return 1
}

copy_runs() {  # SWEEP_DIR DEST: each run's records (`anchorlab export`: no weights, a reference by file name)
    local src=$1 dst=$2
    [ -d "$src" ] && [ -n "$(ls -A "$src")" ] || { echo "not in the outputs: $(basename "$src")"; return 0; }
    copied+=("$dst")
    "$AL" export "$src" --out "$dst" >/dev/null
    echo "$dst: $(find "$dst" -name DONE | wc -l) done of $(find "$dst" -name config.json | wc -l) runs"
}

split_by() {  # DIR FIELD LABEL: DIR/<run> -> DIR/<LABEL><value>/<run>, one folder (and figure) per value of the
    [ -d "$1" ] || return 0  # dotted config FIELD (train.lr_multiplier)
    python3 - "$@" <<'EOF'
import functools, json, pathlib, shutil, sys
root, field, label = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
for cfg in sorted(root.glob("*/config.json")):
    value = functools.reduce(lambda d, k: d[k], field.split("."), json.loads(cfg.read_text()))
    dest = root / f"{label}{value:g}" / cfg.parent.name
    dest.parent.mkdir(exist_ok=True)
    shutil.rmtree(dest, ignore_errors=True)  # an earlier ingest's copy of the run: this one is newer
    cfg.parent.rename(dest)
EOF
}

figures() {  # SOURCE DEST_DIR SUFFIX FIGURE...: drawn only from a folder this call filled
    local src=$1 dst=$2 suffix=$3 fig; shift 3
    [ -d "$src" ] && fresh "$src" || return 0
    for fig in "$@"; do
        "$AL" figure "$fig" "$src" --out "$tmp/fig" >/dev/null
        for ext in png csv; do mv "$tmp/fig/$fig.$ext" "$dst/${fig}_$suffix.$ext"; done
    done
}

copy_runs "$G/p1_frontier_epochs60" docs/p1_frontier/epochs60
copy_runs "$G/p1_frontier_epochs30" docs/p1_frontier/epochs30
copy_runs "$G/p1_cooldown" "docs/p1_cooldown/$TAG"
copy_runs "$G/p1_paper_gamma_long" "docs/p1_paper_gamma/${TAG}_e60"
copy_runs "$G/p1_reference_parts" "docs/p1_reference_parts/$TAG"
copy_runs "$G/p1_both_sides_lr30" "docs/p1_levers/both_lr30_$TAG"
copy_runs "$G/p1_wd_ends" "docs/p1_levers/wd_$TAG"
copy_runs "$G/p1_gamma12_lr" "docs/p1_levers/lr_$TAG"
copy_runs "$G/p1_m30_e210" "docs/p1_levers/m30_e210_$TAG"
copy_runs "$G/p1_best_rates_e210" "docs/p1_levers/best_rates_e210_$TAG"
copy_runs "$G/p1_composers_e210" "docs/p1_levers/composers_e210_$TAG"
split_by "docs/p1_levers/wd_$TAG" train.weight_decay wd
split_by "docs/p1_levers/lr_$TAG" train.lr_multiplier m
figures docs/p1_frontier/epochs60 docs/p1_frontier epochs60 p1-gamma p1-curves p1-condensation
figures docs/p1_frontier/epochs30 docs/p1_frontier epochs30 p1-gamma p1-curves p1-condensation
figures "docs/p1_cooldown/$TAG" docs/p1_cooldown "$TAG" p1-gamma p1-curves
figures "docs/p1_levers/both_lr30_$TAG" docs/p1_levers "both_lr30_$TAG" p1-gamma p1-curves
figures "docs/p1_paper_gamma/${TAG}_e60" docs/p1_paper_gamma e60 p1-curves p1-condensation
figures "docs/p1_levers/m30_e210_$TAG" docs/p1_levers "m30_e210_$TAG" p1-curves p1-readouts
figures "docs/p1_levers/best_rates_e210_$TAG" docs/p1_levers "best_rates_e210_$TAG" p1-curves p1-readouts
figures "docs/p1_levers/composers_e210_$TAG" docs/p1_levers "composers_e210_$TAG" p1-curves p1-readouts
for d in docs/p1_levers/wd_"$TAG"/wd* docs/p1_levers/lr_"$TAG"/m*; do
    [ -d "$d" ] && figures "$d" docs/p1_levers "$(basename "$(dirname "$d")")_$(basename "$d")" p1-gamma p1-curves
done
# P1's reading (§4): per seed the best over the rates, γ 1.2 at m = 10-30 beside γ 0.3 and 1.2 at m = 20 (the γ line)
if fresh "docs/p1_levers/lr_$TAG"; then
    m20=$(python3 - docs/p1_paper_gamma/h200_bf16 <<'EOF'
import json, pathlib, sys
for c in sorted(pathlib.Path(sys.argv[1]).glob("*/config.json")):
    if json.loads(c.read_text())["init"]["gamma"] in (0.3, 1.2):
        print(c.parent)
EOF
)
    # shellcheck disable=SC2086  # one word per run directory
    "$AL" figure p1-gamma docs/p1_levers/lr_"$TAG"/m* $m20 --option best_of_seed=true --out "$tmp/fig" >/dev/null
    for ext in png csv; do mv "$tmp/fig/p1-gamma.$ext" "docs/p1_levers/p1-gamma_lr_${TAG}_best_of_rates.$ext"; done
    # the authors' reading: best over rates and over epochs, on the train-type keys (43_xel)
    # shellcheck disable=SC2086
    "$AL" figure p1-gamma docs/p1_levers/lr_"$TAG"/m* $m20 --option best_of_seed=true --option keys=train \
        --best-epoch --out "$tmp/fig" >/dev/null
    for ext in png csv; do mv "$tmp/fig/p1-gamma.$ext" "docs/p1_levers/p1-gamma_lr_${TAG}_authors_reading.$ext"; done
fi
# P1's protocol (§4): per seed the best over the rates; as the authors' code reads it; every run
protocol_figures() {  # DEST_PREFIX SOURCE...: DEST_PREFIX_{best,authors,each}.{png,csv}
    local dst=$1 v name; shift
    for v in "best:--option best_of_seed=true" "authors:--option best_of_seed=true --option keys=train --best-epoch" \
             "each:"; do
        name=${v%%:*}
        # shellcheck disable=SC2086  # the options are words
        "$AL" figure p1-gamma "$@" ${v#*:} --out "$tmp/fig" >/dev/null
        for ext in png csv; do mv "$tmp/fig/p1-gamma.$ext" "${dst}_$name.$ext"; done
    done
}
copy_runs "$G/p1_frontier_d128_rates" "docs/p1_frontier/d128_rates_$TAG"
if fresh "docs/p1_frontier/d128_rates_$TAG"; then
    protocol_figures "docs/p1_frontier/p1-gamma_d128_rates_$TAG" "docs/p1_frontier/d128_rates_$TAG"
fi
# the data-size factor, at equal epochs and at equal steps: one folder and one set of figures per data size
for kind in data data_steps data_rates; do
    copy_runs "$G/p1_frontier_$kind" "docs/p1_frontier/${kind}_$TAG"
    split_by "docs/p1_frontier/${kind}_$TAG" task.data_size n
    for d in docs/p1_frontier/"${kind}_$TAG"/n*; do
        if [ -d "$d" ] && fresh "$d"; then
            src=("$d")  # the 9-rate protocol reads its grid's runs of every machine (the same run counts once)
            [ "$kind" = data_rates ] && src+=(docs/p1_frontier/data_h200_bf16/"$(basename "$d")" \
                docs/p1_frontier/data_rates_*/"$(basename "$d")")
            protocol_figures "docs/p1_frontier/p1-gamma_${kind}_${TAG}_$(basename "$d")" "${src[@]}"
            figures "$d" docs/p1_frontier "${kind}_${TAG}_$(basename "$d")" p1-curves
        fi
    done
done
copy_runs "$G/p1_ends_rates" "docs/p1_both_sides/ends_rates_$TAG"
if fresh "docs/p1_both_sides/ends_rates_$TAG"; then
    ends=$(python3 - <<'EOF'
import json, pathlib
runs = list(pathlib.Path("docs/p1_levers").glob("lr_*_bf16/m*/*/config.json"))
runs += [c for c in pathlib.Path("docs/p1_paper_gamma/h200_bf16").glob("*/config.json")
         if json.loads(c.read_text())["init"]["gamma"] in (0.3, 1.2)]
runs += list(pathlib.Path("docs/p1_levers/cpu_bf16").glob("lr_m30_g1.2_s?/config.json"))
runs += list(pathlib.Path("docs/p1_both_sides").glob("ends_rates_*/*/config.json"))
print(" ".join(sorted(str(c.parent) for c in runs)))
EOF
)
    # shellcheck disable=SC2086  # one word per run directory
    protocol_figures docs/p1_both_sides/p1-gamma_ends_rates $ends
fi
if [ -n "$(ls -A "$G/p1_mechanisms_epochs60" 2>/dev/null)" ]; then  # (made, and not stopped before a figure)
    mkdir -p docs/p1_mechanisms/epochs60 && cp "$G"/p1_mechanisms_epochs60/* docs/p1_mechanisms/epochs60/
fi
weights_to_runs() {  # PREFIX DOCS_DIR RUNS_DIR: each PREFIX_gG_sN_step_S.safetensors that came back, set up as
    local w name gs step g s run d  # RUNS_DIR/<run id> (the run's records from DOCS_DIR, the weights as its checkpoint)
    for w in "$SRC"/"$1"_*.safetensors; do  # e.g. ep60_g1.2_s1_step_0022200.safetensors
        [ -f "$w" ] || continue
        name=$(basename "$w" .safetensors); gs=${name#"$1"_}; gs=${gs%%_step_*}; step=${name##*_step_}
        g=${gs%%_s*}; g=${g#g}; s=${gs##*_s}
        run=$(python3 - "$2" "$g" "$s" <<'EOF'
import json, pathlib, sys
for p in sorted(pathlib.Path(sys.argv[1]).glob("*/config.json")):
    c = json.loads(p.read_text())
    if c["init"]["gamma"] == float(sys.argv[2]) and c["seeds"]["data_seed"] == int(sys.argv[3]):
        print(p.parent.name)
EOF
)
        [ -n "$run" ] || { echo "no run for $name"; continue; }
        d=$3/$run
        mkdir -p "$d/checkpoints" && cp "$2/$run"/* "$d/" && cp "$w" "$d/checkpoints/step_$step.safetensors"
        echo "$d: the weights at step $((10#$step)) (γ $g seed $s)"
    done
}
weights_to_runs ep60 docs/p1_frontier/epochs60 runs/p1_frontier_epochs60_weights
weights_to_runs e210 "docs/p1_levers/m30_e210_$TAG" runs/p1_m30_e210_weights
# experiments/gpu_p1_m30_e210.sh since 2026-11-28 (second session): back__<job>__gG_mM_sN.safetensors.partNN, a
# run's resume state in parts, joined and checked against its .sha256, becomes GPU_BACK/<job>/<run id>/
# (its records from the tar, the state as its resume file), for the next session's call to continue (carry
# ["runs/gpu_back"]); its weights, and last__<job>__gG_mM_sN_step_S.safetensors (a finished run's), become
# runs/<job>_weights/<run id>/ (records and one checkpoint) for the figures; a finished run leaves GPU_BACK.
for sum in "$SRC"/back__*.sha256; do
    [ -f "$sum" ] || continue
    joined=${sum%.sha256}.safetensors
    cat "${joined}".part* > "$tmp/resume.safetensors"
    if (cd "$tmp" && sha256sum -c --quiet - < "$sum"); then mv "$tmp/resume.safetensors" "$tmp/$(basename "$joined")"
    else echo "$(basename "$joined"): its parts do not give the state sent (checksum): not set up"; fi
done
"${PY:-.venv/bin/python}" - "$SRC" "$G" "${GPU_BACK:-runs/gpu_back}" "$tmp" <<'EOF'
import json, pathlib, shutil, sys
from safetensors import safe_open
from safetensors.torch import load_file, save_file
src, tar_runs, back, joined = map(pathlib.Path, sys.argv[1:5])
def run_of(job, gms):  # gG_mM_sN: γ, rate multiplier, data seed
    g, rest = gms[1:].split("_m")
    m, s = rest.split("_s")
    for p in sorted((tar_runs / job).glob("*/config.json")):
        c = json.loads(p.read_text())
        if (c["init"]["gamma"], c["train"]["lr_multiplier"], c["seeds"]["data_seed"]) == (float(g), float(m), int(s)):
            return p.parent
def records(run, dest):
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(run, dest, ignore=shutil.ignore_patterns("LOCK", "checkpoints"))
    (dest / "checkpoints").mkdir()
for f in sorted(joined.glob("back__*__*.safetensors")) + sorted(src.glob("last__*__*.safetensors")):
    kind, job, rest = f.stem.split("__")
    gs = rest.split("_step_")[0]
    run = run_of(job, gs)
    if run is None:
        print(f"no run for {f.name}")
        continue
    with safe_open(str(f), "pt") as h:
        meta = h.metadata() or {}
    step = int(meta["step"]) if kind == "back" else int(rest.split("_step_")[1])
    if kind == "last":  # finished: its carried state (if this run was carried in) is done with
        shutil.rmtree(back / job / run.name, ignore_errors=True)
    if kind == "back":
        records(run, back / job / run.name)
        shutil.copy(f, back / job / run.name / "checkpoints" / "resume.safetensors")
        print(f"{back / job / run.name}: resume state at epoch {meta['epoch']} ({gs}), for the next call")
        weights = {k[len("model."):]: v for k, v in load_file(str(f)).items() if k.startswith("model.")}
    else:
        weights = load_file(str(f))
    d = pathlib.Path("runs") / f"{job}_weights" / run.name
    records(run, d)
    save_file(weights, str(d / "checkpoints" / f"step_{step:07d}.safetensors"), metadata={"step": str(step)})
    print(f"{d}: the weights at step {step} ({gs})")
EOF
# the frontier at a glance, redrawn over every committed point (docs/p1_frontier.md)
if [ "${#copied[@]}" -gt 0 ]; then
    "$AL" figure p1-frontier docs/p1_frontier/points.toml --out docs/p1_frontier >/dev/null
fi
