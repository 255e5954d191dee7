"""Markdown table of P2 runs for docs/: final accuracies on the three sets, the first evaluated epoch at
which D_rsn,train and D_mem reach 50 % accuracy, and the theory-vs-trained Pearson r of the
reasoning-anchor embedding cosines (P^s theory, Prop. 1; and eq. (14)).

    python experiments/p2_table.py RUN_DIR ...
"""

import sys
from pathlib import Path

from anchorlab import rundir
from anchorlab.analysis import load_model
from anchorlab.analysis.p2 import embedding_matrix, theory_vs_trained


def first_epoch(hist: list[dict], key: str, level: float = 0.5) -> str:
    return next((str(r["epoch"]) for r in hist if r[key] >= level), "never")


def main() -> None:
    print("| model | γ | seed | D_mem | D_rsn,train | D_rsn,test | epoch rsn_train ≥ 0.5 | epoch mem ≥ 0.5 "
          "| r (P^s theory) | r (eq. 14) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for d in map(Path, sys.argv[1:]):
        cfg = rundir.read_config(d)
        hist = rundir.read_metrics(d)
        last = hist[-1]
        model, _ = load_model(d)
        th = theory_vs_trained(embedding_matrix(model), cfg.task)
        print(f"| {cfg.model.name} | {cfg.init.gamma:g} | {cfg.seeds.init_seed} | {last['mem_acc']:.3f} "
              f"| {last['rsn_train_acc']:.3f} | {last['rsn_test_acc']:.3f} | {first_epoch(hist, 'rsn_train_acc')} "
              f"| {first_epoch(hist, 'mem_acc')} | {th['r_label']:.3f} | {th['r_eq14']:.3f} |")


if __name__ == "__main__":
    main()
