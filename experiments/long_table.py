"""Markdown table of long runs side by side, one column group per run, a row every EVERY epochs from FROM and at
each run's last evaluation: that epoch's mean training loss (epochs.jsonl, so a post-fit spike shows), the (4,3)
inferential and symmetric accuracy and the seen pairs' test accuracy (metrics.jsonl); answers ≥ 0.5 in bold.

    python experiments/long_table.py [--from 42] [--every 6] LABEL=RUN_DIR...

e.g. the 210-epoch runs of docs/p1_frontier.md:
    python experiments/long_table.py "seed 1=docs/p1_levers/cpu_bf16/lr_m30_g1.2_s1_e210" \
        "seed 2=docs/p1_levers/cpu_bf16/lr_m30_g1.2_s2_e210"
"""
import argparse
from pathlib import Path

from anchorlab import rundir


def _answer(v: float) -> str:
    return f"**{v:.3f}**" if v >= 0.5 else f"{v:.3f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--from", dest="first", type=int, default=0, help="first epoch of the table (default 0)")
    p.add_argument("--every", type=int, default=6, help="a row every this many epochs (default 6)")
    p.add_argument("runs", nargs="+", metavar="LABEL=RUN_DIR")
    a = p.parse_args()
    runs = []
    for spec in a.runs:
        label, sep, path = spec.rpartition("=")
        if not sep or not (Path(path) / rundir.METRICS).is_file():
            p.error(f"run: {spec!r} is not LABEL=RUN_DIR with a {rundir.METRICS}")
        evals = {r["epoch"]: r for r in rundir.read_metrics(Path(path))}
        losses = {r["epoch"]: r["train_loss"] for r in rundir.read_metrics(Path(path), rundir.EPOCHS)}
        runs.append((label, evals, losses))
    lasts = {max(evals) for _, evals, _ in runs}
    rows = sorted(set(range(a.first, max(lasts) + 1, a.every)) | lasts)
    print("| epoch | " + " | ".join(f"{label}: epoch's train loss | seen test | inferential | symmetric"
                                     for label, _, _ in runs) + " |")
    print("|---|" + "---|---|---|---|" * len(runs))
    for e in rows:
        cells = []
        for _, evals, losses in runs:
            r = evals.get(e)
            if r is None:
                cells.append(" | | | ")
                continue
            loss = losses.get(e, r["train_loss"])
            cells.append(f"{loss:.2g} | {r['seen_test_acc']:.3f} | {_answer(r['unseen_inferential_acc'])} | "
                         f"{_answer(r['unseen_symmetric_acc'])}")
        print(f"| {e} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
