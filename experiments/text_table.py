"""Markdown tables of `anchorlab lm` runs for docs/text.md.

    python experiments/text_table.py p2 SOURCE ...   # P2 Fig. 1 / 7A / 7B numbers per run
    python experiments/text_table.py p1 SOURCE ...   # P1 Fig. 7 numbers per run
    python experiments/text_table.py dl SOURCE ...   # ΔL (and L_PrOntoQA / L_stories) over training, a row per run

SOURCE: run directories, or a sweep directory (its runs, in grid order).
"""

import sys
from pathlib import Path

from anchorlab import rundir
from anchorlab.figures.text import convergence_step, delta_loss
from anchorlab.sweep import run_dirs


def at(hist: list[dict], step: int) -> dict:
    """The evaluation at ``step`` or the last one before it."""
    return [r for r in hist if r["step"] <= step][-1]


def p2(dirs: list[Path]) -> None:
    print("| γ | steps | L_PrOntoQA train / test | L_stories train / test | ΔL @ 1 epoch | ΔL @ ½ | ΔL final "
          "| cos PrOntoQA / stories @ 1 epoch | cos final | test acc |")
    print("|---|---:|---|---|---:|---:|---:|---|---|---:|")
    for d in dirs:
        cfg, hist = rundir.read_config(d), rundir.read_metrics(d)
        last = hist[-1]
        spe = rundir.read_json(d / rundir.SUMMARY)["steps_per_epoch"]
        e1, half = at(hist, spe), at(hist, last["step"] // 2)
        dl = [delta_loss(r["train_loss_prontoqa"], r["train_loss_stories"]) for r in (e1, half, last)]
        print(f"| {cfg.init.gamma:g} | {last['step']} "
              f"| {last['train_loss_prontoqa']:.3f} / {last['test_loss_prontoqa']:.3f} "
              f"| {last['train_loss_stories']:.3f} / {last['test_loss_stories']:.3f} | {dl[0]:.3f} | {dl[1]:.3f} "
              f"| {dl[2]:.3f} | {e1['emb_cos_prontoqa']:.3f} / {e1['emb_cos_stories']:.3f} "
              f"| {last['emb_cos_prontoqa']:.3f} / {last['emb_cos_stories']:.3f} | {last['test_acc_prontoqa']:.3f} |")


def p1(dirs: list[Path]) -> None:
    print("| γ | wd | PrOntoQA examples | steps | convergence step (train acc ≥ 0.99) | final train acc | test acc "
          "| L_PrOntoQA train / test |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    for d in dirs:
        cfg, hist = rundir.read_config(d), rundir.read_metrics(d)
        last = hist[-1]
        print(f"| {cfg.init.gamma:g} | {cfg.train.weight_decay:g} | {cfg.data.n_prontoqa} | {last['step']} "
              f"| {convergence_step(hist, 0.99):g} | {last['train_acc_prontoqa']:.3f} "
              f"| {last['test_acc_prontoqa']:.3f} "
              f"| {last['train_loss_prontoqa']:.3f} / {last['test_loss_prontoqa']:.3f} |")


def dl(dirs: list[Path], columns: int = 8) -> None:
    """ΔL over training (training-row losses), a row per run at ``columns`` evenly spaced evaluations."""
    hists = [rundir.read_metrics(d) for d in dirs]
    steps = sorted({r["step"] for r in hists[0]})
    picks = [steps[round(i * (len(steps) - 1) / (columns - 1))] for i in range(columns)]
    print("| γ | wd | " + " | ".join(f"step {s}" for s in picks) + " |")
    print("|---:|---:|" + "---:|" * len(picks))
    for d, hist in zip(dirs, hists):
        cfg = rundir.read_config(d)
        cells = []
        for s in picks:
            r = at(hist, s)
            cells.append(f"{delta_loss(r['train_loss_prontoqa'], r['train_loss_stories']):.2f} "
                         f"({r['train_loss_prontoqa']:.2f} / {r['train_loss_stories']:.2f})")
        print(f"| {cfg.init.gamma:g} | {cfg.train.weight_decay:g} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    {"p2": p2, "p1": p1, "dl": dl}[sys.argv[1]](run_dirs([Path(a) for a in sys.argv[2:]]))
