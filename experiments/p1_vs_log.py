"""Our P1 paper-config runs against the authors' logged runs: one figure and one markdown table.

    python experiments/p1_vs_log.py --run 'γ 0.8 replay=runs/ref_g0.8_fp32' --log 'γ 0.8 logged=LOG.csv' \\
        [--run ... --log ...] [--run 'γ 0.8 bf16=runs/ref_g0.8_bf16@1'] --out docs/p1_paper_vs_reference/figure.png

A log CSV (parsed from the authors' ``train_log.log``) has one row per accuracy evaluation:
``epoch_before_training`` e, the seen-pair train/test accuracies, the accuracy on (3,4) with test-type
keys, the (4,3) train-type-key inferential/symmetric fractions, and ``train_loss_of_that_epoch`` (the
mean batch loss while training epoch e, 0-based). Our run directory has ``metrics.jsonl`` (evaluations
after ``epoch`` epochs: the same instant as the log's row e = epoch) and ``epochs.jsonl`` (the mean batch
loss of every epoch, 1-based: our epoch e + 1 is the log's epoch e).

The table lists, per log row, our value next to the logged one; the "first departure" line names the
first evaluation where a run differs from its log by more than 0.05 in any accuracy or 5 % in loss.
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

from anchorlab import rundir

# (label, our metrics key or callable, log column)
ACCS = [("seen train", "seen_train_acc", "seen_train_acc"),
        ("seen test", "seen_test_acc", "seen_test_acc"),
        ("(3,4) test keys", "3-4_xm0", "acc_34_test_keys"),
        ("(4,3) inferential", "unseen_inferential_acc_xel", "unseen_43_train_keys_inferential"),
        ("(4,3) symmetric", "unseen_symmetric_acc_xel", "unseen_43_train_keys_symmetric")]
ACC_TOL, LOSS_RTOL = 0.05, 0.05


def read_log(path: str | Path) -> list[dict[str, float]]:
    with open(path) as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def our_value(rec: dict, key: str) -> float:
    return rec["group_acc"][key] if key in rec.get("group_acc", {}) else rec[key]


def read_run(path: str | Path) -> tuple[dict[int, dict], dict[int, float]]:
    """({epoch: evaluation record}, {epoch (0-based, as the log counts): mean train loss})."""
    evals = {r["epoch"]: r for r in rundir.read_metrics(Path(path))}
    losses = {r["epoch"] - 1: r["train_loss"] for r in rundir.read_metrics(Path(path), rundir.EPOCHS)}
    return evals, losses


def first_departure(evals: dict[int, dict], losses: dict[int, float], log: list[dict]) -> str:
    for row in log:
        e = int(row["epoch_before_training"])
        if e in evals:
            for label, key, col in ACCS:
                if not math.isnan(row[col]) and abs(our_value(evals[e], key) - row[col]) > ACC_TOL:
                    return f"epoch {e}: {label} {our_value(evals[e], key):.3f} vs logged {row[col]:.3f}"
        ours, theirs = losses.get(e), row["train_loss_of_that_epoch"]
        if ours is not None and not math.isnan(theirs) and abs(ours - theirs) > LOSS_RTOL * theirs:
            return f"epoch {e} (0-based) train loss: {ours:.4g} vs logged {theirs:.4g}"
    return "none within the epochs both have"


def table(label: str, evals: dict, losses: dict, log: list[dict]) -> str:
    head = "| epoch | train loss (ours / log) | " + " | ".join(f"{a} (ours / log)" for a, _, _ in ACCS) + " |"
    lines = [f"**{label}**", "", head, "|" + "---|" * (2 + len(ACCS))]
    for row in log:
        e = int(row["epoch_before_training"])
        if e not in evals and e not in losses:
            continue
        loss = losses.get(e)
        cells = [f"{loss:.4g} / {row['train_loss_of_that_epoch']:.4g}" if loss is not None else
                 f"– / {row['train_loss_of_that_epoch']:.4g}"]
        for _, key, col in ACCS:
            cells.append(f"{our_value(evals[e], key):.3f} / {row[col]:.3f}" if e in evals else f"– / {row[col]:.3f}")
        lines.append(f"| {e} | " + " | ".join(cells) + " |")
    lines += ["", f"First departure (> {ACC_TOL} in an accuracy or > {LOSS_RTOL:.0%} in loss): "
              f"{first_departure(evals, losses, log)}", ""]
    return "\n".join(lines)


def figure(runs: list[tuple[str, dict, dict]], logs: list[tuple[str, list[dict]]], out: Path,
           log_color: list[int]) -> None:
    """``log_color[j]``: the index of the run whose colour log j takes (the first run compared with it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
    colors = plt.get_cmap("tab10").colors
    panels = [("train loss (per epoch)", None), ("seen-pair test accuracy", 1), ("(4,3) inferential", 3),
              ("(4,3) symmetric", 4)]
    for i, (label, evals, losses) in enumerate(runs):
        c = colors[i % 10]
        es = sorted(losses)
        axes[0].plot([e for e in es], [losses[e] for e in es], color=c, lw=1.5, label=label)
        ee = sorted(evals)
        for ax, (_, j) in zip(axes[1:], panels[1:]):
            key = ACCS[j][1]
            ax.plot(ee, [our_value(evals[e], key) for e in ee], color=c, lw=1.5, marker=".", label=label)
    for i, (label, log) in enumerate(logs):
        c = colors[log_color[i] % 10]
        e = [int(r["epoch_before_training"]) for r in log]
        axes[0].plot(e, [r["train_loss_of_that_epoch"] for r in log], ls="none", marker="o", mfc="none",
                     color=c, label=label)
        for ax, (_, j) in zip(axes[1:], panels[1:]):
            ax.plot(e, [r[ACCS[j][2]] for r in log], ls="--", marker="o", mfc="none", color=c, lw=1, label=label)
    last = max([max(ev, default=0) for _, ev, _ in runs], default=0)
    for ax in axes:  # the logs run to epoch 210: show the stretch our runs cover, at least the first 30 epochs
        ax.set_xlim(-1, max(30, last + 3))
    axes[0].set_yscale("log")
    for ax, (title, _) in zip(axes, panels):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("epochs trained")
        ax.grid(alpha=0.3)
    for ax in axes[1:]:
        ax.set_ylim(-0.02, 1.02)
    axes[0].legend(fontsize=7)
    fig.suptitle("P1 paper config (d_model 400, 2 layers, batch 2048): ours (lines) vs the authors' logs "
                 "(circles); (4,3) on train-type keys", fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)


def pair(item: str) -> tuple[str, str]:
    label, sep, path = item.partition("=")
    if not sep:
        raise SystemExit(f"error: expected LABEL=PATH, got {item!r}")
    return label, path


def run_spec(item: str) -> tuple[str, str, int | None]:
    """LABEL=RUN_DIR[@K]: K (1-based) names the --log it is compared with; default the --log of its position."""
    label, path = pair(item)
    path, at, k = path.rpartition("@") if "@" in path else (path, "", "")
    if at and not k.isdigit():
        raise SystemExit(f"error: expected LABEL=RUN_DIR@K with K a --log number, got {item!r}")
    return label, path, int(k) - 1 if at else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", action="append", default=[], type=run_spec,
                    help="LABEL=RUN_DIR[@K] (ours), compared with the K-th --log (default: the one of its position)")
    ap.add_argument("--log", action="append", default=[], type=pair, help="LABEL=CSV (the authors')")
    ap.add_argument("--out", type=Path, help="figure path (.png)")
    a = ap.parse_args()
    runs = [(label, *read_run(p)) for label, p, _ in a.run]
    logs = [(label, read_log(p)) for label, p in a.log]
    vs = [k if k is not None else (i if i < len(logs) else None) for i, (_, _, k) in enumerate(a.run)]
    if any(k is not None and not 0 <= k < len(logs) for k in vs):
        raise SystemExit(f"error: a --run names a --log beyond the {len(logs)} given")
    for (label, evals, losses), k in zip(runs, vs):
        if k is not None:
            print(table(label, evals, losses, logs[k][1]))
    if a.out:
        figure(runs, logs, a.out, [vs.index(j) if j in vs else j for j in range(len(logs))])


if __name__ == "__main__":
    main()
