"""Run the CPU-scale real-language experiments (1 thread each), e.g.

    python experiments/text_runs.py p2-fig7 --out runs/text_p2_fig7     # γ 0.3 / 0.5 / 0.8 (P2 Fig. 1, 7A, 7B)
    python experiments/text_runs.py p2-fig7-gpt2 --out runs/text7g --workers 2   # the same with GPT-2's tokens
    python experiments/text_runs.py p2-fig7b-quick --out runs/text7bq --workers 2   # Fig. 7B: its first 180 steps
    python experiments/text_runs.py p2-fig7a --out runs/text7a --workers 2      # Fig. 7A: few stories, 100 epochs
    python experiments/text_runs.py p2-fig7a-quick --out runs/text7aq --workers 2   # the same γ grid, 13 min
    python experiments/text_runs.py p1-fig7 --out runs/text_p1_fig7     # data size x (γ 0.5, wd 0.01) / (γ 0.7, wd 0.1)
    python experiments/text_runs.py p1-fig7-gpt2 --out runs/text_p1_fig7g --workers 2   # GPT-2 tokens, 3,000 steps
    python experiments/text_runs.py p1-fig7-gpt2-quick --out runs/text_p1_fig7q --workers 2   # the same, 12 min

Each run is ``anchorlab lm CONFIG --set ...`` into ``OUT/<name>``; finished runs are skipped, unfinished ones
resume. ``--set KEY=VALUE`` adds an override to every run (another seed, width, lr...; use another ``--out``).
``--workers N`` runs N at a time, one process (and one thread) each. The stories are the real
TinyStories sample where it is present, the stand-in otherwise (printed).
"""

import argparse
import multiprocessing as mp
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from anchorlab.text.config import load_lm_config
from anchorlab.text.lm import train_lm
from anchorlab.text.stories import sample_path

GRIDS = {
    "p2-fig7": ("configs/text/p2_fig7_cpu.toml",
                {f"g{g}": [f"init.gamma={g}"] for g in (0.3, 0.5, 0.8)}),
    "p2-fig7-gpt2": ("configs/text/p2_fig7_gpt2_cpu.toml",
                     {f"g{g}": [f"init.gamma={g}"] for g in (0.3, 0.5, 0.8)}),
    # Fig. 7B (and Fig. 1): the first 180 steps of p2-fig7-gpt2, step for step
    "p2-fig7b-quick": ("configs/text/p2_fig7b_quick_cpu.toml",
                       {f"g{g}": [f"init.gamma={g}"] for g in (0.3, 0.5, 0.8)}),
    # Fig. 7A: the authors' init convention (the config's), then true fan-in, then fan-in with embeddings at 0.02
    "p2-fig7a": ("configs/text/p2_fig7a_cpu.toml",
                 {**{f"g{g}": [f"init.gamma={g}"] for g in (0.3, 0.5, 0.8)},
                  **{f"fanin_g{g}": [f"init.gamma={g}", "init.convention='fan_in'"] for g in (0.3, 0.8)},
                  "fanin_g0.3_emb002": ["init.gamma=0.3", "init.convention='fan_in'", "train.epochs=40",
                                        'init.overrides={"*.wte" = 0.94, "*.wpe" = 0.94}']}),  # 64^-0.94 = 0.02
    "p2-fig7a-quick": ("configs/text/p2_fig7a_quick_cpu.toml",
                       {f"g{g}": [f"init.gamma={g}"] for g in (0.3, 0.5, 0.8)}),
    "p1-fig7": ("configs/text/p1_fig7_cpu.toml",
                {f"{tag}_n{n}": [f"init.gamma={g}", f"train.weight_decay={wd}", f"data.n_prontoqa={n}"]
                 for n in (100, 300, 900) for tag, g, wd in (("a", 0.5, 0.01), ("b", 0.7, 0.1))}),
    "p1-fig7-gpt2": ("configs/text/p1_fig7_gpt2_cpu.toml",
                     {f"{tag}_n{n}": [f"init.gamma={g}", f"train.weight_decay={wd}", f"data.n_prontoqa={n}",
                                      f"train.epochs={3000 * 20 // n}"]  # 3,000 steps of batch 20 at every size
                      for n in (300, 1000, 3000) for tag, g, wd in (("a", 0.5, 0.01), ("b", 0.7, 0.1))}),
    # the same grid, faster: fused GELU, micro-batches, per-size budgets of 1,200 / 2,250 / 1,800 steps
    "p1-fig7-gpt2-quick": ("configs/text/p1_fig7_gpt2_quick_cpu.toml",
                           {f"{tag}_n{n}": [f"init.gamma={g}", f"train.weight_decay={wd}", f"data.n_prontoqa={n}",
                                            f"train.epochs={epochs}"]
                            for n, epochs in ((300, 80), (1000, 45), (3000, 12))
                            for tag, g, wd in (("a", 0.5, 0.01), ("b", 0.7, 0.1))}),
}


def run_one(config: str, sets: list[str], out: Path, name: str) -> str:
    cfg = load_lm_config(config, sets)
    s = train_lm(cfg, out / name, show_progress=False)
    return (f"{name}: step {s['step']}, L_qa {s['train_loss_prontoqa']:.4f}, L_st {s['train_loss_stories']:.4f}, "
            f"acc {s['test_acc_prontoqa']:.3f}, {s['wall_seconds_this_session']:.0f} s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("grid", choices=sorted(GRIDS))
    p.add_argument("--out", required=True)
    p.add_argument("--only", nargs="*", help="run names to run (default all)")
    p.add_argument("--workers", type=int, default=1, help="runs at a time (one process each)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="a config override added to every run of the grid (repeatable), e.g. seeds.init_seed=1")
    a = p.parse_args(argv)
    config, runs = GRIDS[a.grid]
    extra = [] if (sample_path() / "stories.txt").is_file() else ["data.stories=standin"]
    print(f"stories: {'the stand-in generator (real sample absent)' if extra else sample_path()}", flush=True)
    todo = [(config, sets + extra + a.sets, Path(a.out), name)
            for name, sets in runs.items() if not a.only or name in a.only]
    if a.workers <= 1:
        for job in todo:
            print(run_one(*job), flush=True)
        return 0
    with ProcessPoolExecutor(a.workers, mp_context=mp.get_context("spawn")) as pool:
        for line in pool.map(run_one, *zip(*todo)):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
