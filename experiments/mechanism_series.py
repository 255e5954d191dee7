"""P1's routing and order readouts along one run: a markdown row per kept checkpoint (every EVERY epochs), with
the run's logged (4,3) answer at that epoch next to

* the information-flow scores of P1 Fig. 3 averaged over all keys of the held-out pair
  (:func:`anchorlab.analysis.attention.mean_mechanism_scores`) and on how many keys the inferential one is ahead;
* E4 (P1 Fig. 3b): how far apart the two orders of an anchor pair lie after the first block, in the 2-D PCA map of
  ``anchorlab figure p1-fig3b`` (:func:`anchorlab.analysis.embeddings.order_separation`; 0: order lost);
* the first layer's W_Q stable rank and neuron groups, as the run logged them;
the first two from :func:`anchorlab.analysis.summary.readouts`, as ``anchorlab figure p1-readouts`` draws them.

    python experiments/mechanism_series.py RUN_DIR [--every 9] [--first 9] [--last N]

e.g. docs/mechanisms.md's table: python experiments/mechanism_series.py \
    runs/p1_levers_cpu/lr_m30_g1.2_s1_bf16_e210 --every 9 --last 108
Reads the checkpoints (not committed), so it runs where the run trained. One thread, ~1 s a checkpoint at the
paper config.
"""
import argparse
from pathlib import Path

from anchorlab import rundir
from anchorlab.analysis import load_model
from anchorlab.analysis.summary import readouts


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", help="a run directory with checkpoints")
    p.add_argument("--every", type=int, default=9, help="epochs between rows (default 9)")
    p.add_argument("--first", type=int, default=None, help="first epoch (default: --every)")
    p.add_argument("--last", type=int, default=None, help="last epoch (default: the last evaluated)")
    a = p.parse_args()
    d = Path(a.run)
    if not (d / rundir.CONFIG).is_file():
        p.error(f"run: {d} is not a run directory (no {rundir.CONFIG})")
    evals = {r["epoch"]: r for r in rundir.read_metrics(d)}
    kept = set(rundir.checkpoint_steps(d))
    last = a.last if a.last is not None else max(evals)
    print("| epoch | (4,3) inferential | symmetric | seen test | routing symmetric / inferential (mean over keys) "
          "| keys routing inferential ahead | E4: (a,b) from (b,a) over other pairs | W_Q⁰ stable rank | W_Q⁰ groups |")
    print("|---|---|---|---|---|---|---|---|---|")
    for epoch in range(a.first or a.every, last + 1, a.every):
        r = evals.get(epoch)
        if r is None or r["step"] not in kept:
            continue
        model, cfg = load_model(d, r["step"])
        x = readouts(model, cfg.task)
        print(f"| {epoch} | {r['unseen_inferential_acc']:.3f} | {r['unseen_symmetric_acc']:.3f} | "
              f"{r['seen_test_acc']:.3f} | {x['routing_symmetric']:.2f} / {x['routing_inferential']:.2f} | "
              f"{x['keys_inferential_ahead']:.0f} of {x['keys']:.0f} | {x['order_separation']:.3f} | "
              f"{r['stable_rank/blocks.0.attn.W_Q']:.2f} | {r['wq0_n_groups']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
