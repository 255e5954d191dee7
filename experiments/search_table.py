"""Markdown table of scale-search runs: python experiments/search_table.py RUN_DIR... (last evaluation each)."""
import sys
from pathlib import Path

from anchorlab import rundir
from anchorlab.init import init_std


def main() -> None:
    print("| run | d_model | γ | std W_Q | batch | lr0 → peak | epochs (steps) | wd | seen test | (4,3) inf "
          "| (4,3) sym |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for d in map(Path, sys.argv[1:]):
        hist = rundir.read_metrics(d)
        if not hist:
            continue
        c, r = rundir.read_config(d), hist[-1]
        t = c.train
        std = init_std("attn_in", (c.model.n_heads, c.model.d_model, c.model.d_head), c.init)
        done = "" if rundir.is_done(d) else " (stopped)"
        print(f"| {d.name} | {c.model.d_model} | {c.init.gamma:g} | {std:.3g} | {t.batch_size} | "
              f"{t.lr:g} → {t.lr * t.lr_multiplier:g} | {r['epoch']}{done} ({r['step']}) | {t.weight_decay:g} | "
              f"{r['seen_test_acc']:.3f} | {r['unseen_inferential_acc']:.3f} | {r['unseen_symmetric_acc']:.3f} |")


if __name__ == "__main__":
    main()
