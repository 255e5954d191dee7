"""Does run B retrace run A? Epoch by epoch over the epochs both logged, every number of their records
(epochs.jsonl's mean training loss, metrics.jsonl's evaluations; the wall-clock ``time`` and fields only one run
logs left out), first the training losses alone, then everything: the last epoch where all are equal to the
last digit, and the first that differs, with its first differing field. A run trained again from step 0
(another session, a longer schedule of the same group, another machine) either retraces its source exactly or
rounds its own way from some epoch on; this says which.

    python experiments/retrace.py RUN_A RUN_B

e.g. the next GPU call's check (docs/p1_frontier.md, "Still to do": P1's composers at P1's last epoch):
    python experiments/retrace.py docs/p1_levers/lr_h200_bf16/m17.5/1c41c385d76d \
        docs/p1_levers/composers_e210_h200_bf16/c18eb86317cb
Exit status 0 when every logged number is equal over the common epochs, 1 when they part, 2 on bad input.
"""
import argparse
import sys
from pathlib import Path
from typing import Any

from anchorlab import rundir


def records(run: Path) -> dict[int, dict[str, Any]]:
    """Per epoch, everything the run logged of it (the epoch's loss row and its evaluation, if any)."""
    out: dict[int, dict[str, Any]] = {}
    for name in (rundir.EPOCHS, rundir.METRICS):
        for r in rundir.read_metrics(run, name):
            out.setdefault(r["epoch"], {}).update({f"{name}:{k}": v for k, v in r.items() if k != "time"})
    return out


def parting(a: dict[int, dict[str, Any]], b: dict[int, dict[str, Any]], fields: str = "") -> str:
    """Over the epochs both logged: where ``a`` and ``b`` part (the first differing field whose name starts with
    ``fields``), or where they are equal throughout."""
    common = [e for e in sorted(set(a) & set(b)) if any(k.startswith(fields) for k in set(a[e]) & set(b[e]))]
    same = None
    for e in common:
        keys = sorted(k for k in set(a[e]) & set(b[e]) if k.startswith(fields))
        diff = next((k for k in keys if a[e][k] != b[e][k]), None)
        if diff is not None:
            return (f"part at epoch {e}: {diff.split(':', 1)[1]} {a[e][diff]!r} against {b[e][diff]!r}"
                    + (f" (equal through epoch {same})" if same is not None else " (no epoch equal)"))
        same = e
    return f"equal over the {len(common)} common epochs {common[0]}-{same}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a", type=Path, metavar="RUN_A")
    p.add_argument("b", type=Path, metavar="RUN_B")
    args = p.parse_args()
    for run in (args.a, args.b):
        if not (run / rundir.METRICS).is_file():
            p.error(f"run: {run} holds no {rundir.METRICS}")
    a, b = records(args.a), records(args.b)
    if not set(a) & set(b):
        p.error(f"run: {args.a} and {args.b} logged no epoch in common")
    # the training trajectory first (each epoch's mean loss), then everything logged (evaluations, the readouts
    # and weight scalars: these can round differently with the threads even where training is the same)
    print(f"training (epochs' mean losses): {parting(a, b, rundir.EPOCHS)}")
    everything = parting(a, b)
    print(f"every logged number: {everything}")
    return 0 if everything.startswith("equal") else 1


if __name__ == "__main__":
    sys.exit(main())
