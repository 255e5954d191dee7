"""Scale search helper: python experiments/search.py OUT BASE.toml 'name|k=v,k=v' ... (2 workers)."""
import sys
import time
from pathlib import Path

from anchorlab.config import load_config
from anchorlab.execute import run_all


def main():
  out, base, specs = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
  jobs = []
  for spec in specs:
    name, _, sets = spec.partition("|")
    cfg = load_config(base, [s for s in sets.split(",") if s])
    jobs.append((cfg, out / name))
  t = time.time()
  res = run_all(jobs, workers=2, show_progress=False)
  for (cfg, d), r in zip(jobs, res):
    s = r.summary
    if s is None:
        print(d.name, "FAILED", r.error[-300:]); continue
    print(f"{d.name:28s} seen_tr {s['seen_train_acc']:.3f} seen_te {s['seen_test_acc']:.3f} "
          f"inf {s['unseen_inferential_acc']:.3f} sym {s['unseen_symmetric_acc']:.3f} "
          f"best_inf {s['best']['unseen_inferential_acc']:.3f} loss {s['final_train_loss']:.3g} "
          f"t {s['wall_seconds_this_session']:.0f}s", flush=True)
  print("total", round(time.time() - t), "s")


if __name__ == "__main__":
  main()
