"""Scale-search driver: train named variants of a base config on 2 one-thread worker processes.

    python experiments/search.py OUT BASE.toml 'NAME|key=value;key=value' ...

Each variant is trained into OUT/NAME (finished ones are skipped, unfinished ones resume); one line per
run is printed at the end. `experiments/search_table.py OUT/*` makes the markdown table for docs/.
"""

import sys
import time
from pathlib import Path

from anchorlab.config import load_config
from anchorlab.execute import run_all


def main() -> None:
    out, base, specs = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
    jobs = []
    for spec in specs:
        name, _, sets = spec.partition("|")
        jobs.append((load_config(base, [s for s in sets.split(";") if s]), out / name))
    t = time.time()
    for r in run_all(jobs, workers=2, show_progress=False):
        s = r.summary
        if s is None:
            print(r.run_dir.name, "FAILED", r.error)
            continue
        print(f"{r.run_dir.name:28s} seen_test {s['seen_test_acc']:.3f} inf {s['unseen_inferential_acc']:.3f} "
              f"sym {s['unseen_symmetric_acc']:.3f} best_inf {s['best']['unseen_inferential_acc']:.3f} "
              f"loss {s['final_train_loss']:.3g}", flush=True)
    print("total", round(time.time() - t), "s")


if __name__ == "__main__":
    main()
