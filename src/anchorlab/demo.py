"""The embedded default experiment (``anchorlab demo`` / ``make demo``): both papers' contrasts on the CPU.

P1: trains the composite task at a CPU scale for a small, a middle and a large initialization on several
seeds (the grid is ``configs/demo.toml``). P2: trains the Emb-MLP on the memory/reasoning task at a small
and a large initialization (``configs/demo_p2.toml``); its short runs share the same worker pool and fill
the slot the P1 runs leave idle at the end. Then writes ``summary.json`` (one entry per run, and the
checks), tables, ``demo.png`` (held-out-pair accuracy over training, one panel per γ),
``demo_p2.png`` (P2 Fig. 3B: loss and accuracy on D_mem, D_rsn,train, D_rsn,test per γ) and
``report.html`` (everything above plus configs, curves and mechanism figures, self-contained).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from anchorlab import rundir
from anchorlab.execute import check_sweep_options, run_all
from anchorlab.plotting.figures import outcome_table, plot_unseen_over_training
from anchorlab.sweep import check_out_dir, load_sweep, plan

DEFAULT_SPEC = Path(__file__).resolve().parents[2] / "configs" / "demo.toml"
# The committed paper-config replays (docs/p1_paper_vs_reference.md): printed, labelled, when the demo's own
# small-init runs do not reach the inferential side
PAPER_RUNS = Path(__file__).resolve().parents[2] / "docs" / "p1_paper_vs_reference"
# The `anchorlab reproduce` entry that shows both sides at the paper config on our data seeds 1-3 by P1's protocol
# (γ 0.3 / 1.2, per seed the best over 9 peak rates), its measured GPU time, and its committed result table
# (docs/p1_both_sides.md, "Both sides by P1's protocol")
BOTH_SIDES = "p1-both-sides"
BOTH_SIDES_GPU = "~30 min on one H200: 21 of its 54 runs took 11.6 min"
BEST_OF_RATES = Path(__file__).resolve().parents[2] / "docs" / "p1_both_sides" / "p1-gamma_ends_rates_best.csv"
# The committed paper-config runs of γ 0.5 / 0.8 at the authors' one rate (docs/p1_both_sides.md: one H100)
SEED_RUNS = Path(__file__).resolve().parents[2] / "docs" / "p1_both_sides" / "h100_fp32"
# The committed answer-against-plateau-length table of the paper-width runs (docs/p1_fit_speed.md)
FIT_SPEED = Path(__file__).resolve().parents[2] / "docs" / "p1_fit_speed" / "d400" / "p1-fit-speed.csv"
# The committed runs that cross the authors' recorded draws with our seed 3 (docs/p1_both_sides.md)
REFERENCE_PARTS = Path(__file__).resolve().parents[2] / "docs" / "p1_reference_parts"
# The committed γ-line runs beyond p1-both-sides' two γ (γ 0.3 / 0.4 / 1.0 / 1.2, bf16; docs/p1_both_sides.md)
GAMMA_LINE = Path(__file__).resolve().parents[2] / "docs" / "p1_paper_gamma" / "h200_bf16"
# The γ line's two ends with P1's schedule compressed to 60 epochs (docs/p1_frontier.md; absent until run).
EPOCHS60 = Path(__file__).resolve().parents[2] / "docs" / "p1_frontier" / "epochs60"
# The paper-config runs trained on toward P1's full 210 epochs at its top rate (docs/p1_frontier.md, "Training on
# past epoch 27"): the CPU queue's (experiments/cpu_p1_m30_e210.sh), run folders named *_e210 (a restarted run
# that rounds differently beside it as *_e210_restart), committed as they train, and each GPU call's
# (experiments/gpu_p1_m30_e210.sh), folders m30_e210_<device and group>/<run id> (LONG_RUNS_GPU: the first).
LONG_RUNS = Path(__file__).resolve().parents[2] / "docs" / "p1_levers" / "cpu_bf16"
LONG_RUNS_GPU = Path(__file__).resolve().parents[2] / "docs" / "p1_levers" / "m30_e210_h200_bf16"
LONG_RUN_SOURCES = ((LONG_RUNS, "*_e210"), (LONG_RUNS, "*_e210_restart"), (LONG_RUNS_GPU.parent, "m30_e210_*/*"))
DEFAULT_P2_SPEC = DEFAULT_SPEC.with_name("demo_p2.toml")
P2_COLUMNS = ("model", "gamma", "seed", "mem_acc", "rsn_train_acc", "rsn_test_acc", "final_train_loss")
COLUMNS = ("init", "gamma", "std_W_Q", "seed", "seen_train_acc", "seen_test_acc",
           "unseen_inferential_acc", "unseen_symmetric_acc", "final_train_loss", "outcome")


def outcome(s: dict[str, Any], threshold: float = 0.9) -> str:
    """The solution type of a run on the held-out pair (P1 §3 and App. B)."""
    if s["seen_test_acc"] < threshold:
        return "no fit" if s["seen_train_acc"] < threshold else "memorized (seen test < 0.9)"
    if s["unseen_inferential_acc"] >= threshold:
        return "inferential"
    if s["unseen_symmetric_acc"] >= threshold:
        return "symmetric"
    return "mixed"


def run_demo(spec_path: str | Path = DEFAULT_SPEC, out_dir: str | Path = "demo_out", workers: int = 2,
             show_progress: bool = True, p2_spec: str | Path | None = DEFAULT_P2_SPEC,
             report: bool = True, report_figures: int = 3) -> dict[str, Any]:
    """Train the demo grids into ``out_dir/runs`` and ``out_dir/runs_p2`` (resuming/skipping finished
    runs) and summarise them; ``p2_spec = None`` leaves the P2 part out; ``report`` writes
    ``out_dir/report.html`` (one self-contained page) with the figures of ``report_figures`` runs per grid."""
    out_dir = Path(out_dir)
    check_sweep_options(workers=workers)
    spec = load_sweep(spec_path)
    spec_p2 = load_sweep(p2_spec) if p2_spec is not None else None
    for d in (out_dir, out_dir / "runs", out_dir / "runs_p2"):  # every input checked before anything is written
        check_out_dir(d)
    rows = plan(spec, out_dir / "runs")
    rows_p2 = plan(spec_p2, out_dir / "runs_p2") if spec_p2 is not None else []
    jobs = [(cfg, d) for _, cfg, d in (*rows, *rows_p2)]  # the short P2 runs last: they fill the idle slot
    results = run_all(jobs, workers=workers, show_progress=show_progress)
    failed = [r for r in results if r.error]
    gammas = sorted({cfg.init.gamma for _, cfg, _ in rows}, reverse=True)
    names = dict(zip(gammas, ("small", "middle", "large"))) if len(gammas) == 3 else {g: "" for g in gammas}
    runs, curves = [], []
    for _, cfg, d in rows:
        if not rundir.is_done(d):
            continue
        s = rundir.read_json(d / rundir.SUMMARY)
        runs.append({"init": names[cfg.init.gamma], "gamma": cfg.init.gamma, "std_W_Q": s["std_W_Q"],
                     "seed": cfg.seeds.init_seed, "run_id": s["run_id"], "run_dir": str(d),
                     **{k: s[k] for k in COLUMNS[4:-1]}, "outcome": outcome(s),
                     "best": s["best"]})
        hist = rundir.read_metrics(d)
        curves.append({"init": names[cfg.init.gamma], "gamma": cfg.init.gamma, "std": s["std_W_Q"],
                       "seed": cfg.seeds.init_seed,
                       "epoch": [r["epoch"] for r in hist],
                       "inferential": [r["unseen_inferential_acc"] for r in hist],
                       "symmetric": [r["unseen_symmetric_acc"] for r in hist],
                       "seen_test": [r["seen_test_acc"] for r in hist]})
    checks = demo_checks(runs)
    p2_runs = [{"model": cfg.model.name, "gamma": cfg.init.gamma, "seed": cfg.seeds.init_seed, "run_dir": str(d),
                **{k: rundir.read_json(d / rundir.SUMMARY)[k] for k in P2_COLUMNS[3:]}}
               for _, cfg, d in rows_p2 if rundir.is_done(d)]
    p2_checks = demo_p2_checks(p2_runs) if rows_p2 else {}
    summary = {"spec": str(spec_path), "runs": runs, "checks": checks, "p2_spec": str(p2_spec) if rows_p2 else None,
               "p2_runs": p2_runs, "p2_checks": p2_checks, "failed_runs": [str(r.run_dir) for r in failed]}
    rundir.write_json(out_dir / "summary.json", summary)
    written = [out_dir / "summary.json"]
    if curves:
        from anchorlab.figures.logged import probe_answers, probe_pair

        cfg = rows[0][1]
        fig = plot_unseen_over_training(curves, f"P1 composite task: held-out pair {probe_pair(cfg)} during training",
                                        pair=probe_pair(cfg), answers=probe_answers(cfg))
        fig.savefig(out_dir / "demo.png")
        written.append(out_dir / "demo.png")
    print(outcome_table(runs, COLUMNS))
    for name, ok in checks.items():
        print(f"{'PASS' if ok else 'NOT REACHED'}  {name}")
    if not all(checks.values()):
        print("P1's inferential side needs more width and steps than this CPU scale gives: the search at CPU scale is "
              "docs/p1_cpu_scale_search.md, every config tried down from the paper's is docs/p1_frontier.md "
              "(anchorlab figure p1-frontier docs/p1_frontier/points.toml)")
        committed = paper_config_result()
        if committed:
            summary["paper_config_committed"] = committed
            rundir.write_json(out_dir / "summary.json", summary)
            print(paper_config_text(committed))
    if p2_runs:
        from anchorlab.figures import draw

        png = draw("p2-fig3b" if p2_runs[0]["model"] == "emb_mlp" else "p2-fig3a", [r["run_dir"] for r in p2_runs],
                   out_dir)
        png.with_suffix(".csv").replace(out_dir / "demo_p2.csv")
        written.append(png.replace(out_dir / "demo_p2.png"))
        print("\nP2 memory/reasoning task (D_rsn,test = the masked pairs (11,13), (13,11), never trained):")
        print(outcome_table(p2_runs, P2_COLUMNS))
        for name, ok in p2_checks.items():
            print(f"{'PASS' if ok else 'NOT REACHED'}  {name}")
    if report:
        from anchorlab.report import write_report

        sources = [out_dir / "runs", *([out_dir / "runs_p2"] if rows_p2 else [])]
        written.append(write_report(sources, out_dir / "report.html", max_run_figures=report_figures))
    print("wrote " + ", ".join(map(str, written)))
    if report:
        print(f"open {written[-1]} in a browser: configs, curves, tables and the mechanism figures of the runs")
    for r in failed:  # again at the end, below the tables: the command exits 1
        print(f"run failed: {r.run_dir}: {r.reason()}", flush=True)
    return summary


def paper_config_result(root: Path = PAPER_RUNS) -> list[dict[str, Any]]:
    """The last evaluation of each committed paper-config replay (``root/<run>/config.json`` and
    ``metrics.jsonl``: d_model 400, the authors' data, init and batch order), smallest init first."""
    out = []
    for d in sorted(root.glob("ref_g*_fp32")):
        hist = rundir.read_metrics(d) if (d / rundir.METRICS).is_file() else []
        if not hist or not (d / rundir.CONFIG).is_file():
            continue
        cfg, last = rundir.read_json(d / rundir.CONFIG), hist[-1]
        out.append({"gamma": cfg["init"]["gamma"], "d_model": cfg["model"]["d_model"], "epoch": last["epoch"],
                    "precision": cfg["train"]["precision"], "seen_test_acc": last["seen_test_acc"],
                    "unseen_inferential_acc": last["unseen_inferential_acc"],
                    "unseen_symmetric_acc": last["unseen_symmetric_acc"]})
    return sorted(out, key=lambda r: -r["gamma"])


def _finished_runs(root: Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(config, summary) of each finished run directly under ``root`` (none where ``root`` is absent)."""
    dirs = sorted(root.glob("*/")) if root.is_dir() else []
    return [(rundir.read_json(d / rundir.CONFIG), rundir.read_json(d / rundir.SUMMARY)) for d in dirs
            if (d / rundir.CONFIG).is_file() and (d / rundir.SUMMARY).is_file()]


def seed_outcomes(root: Path = SEED_RUNS, threshold: float = 0.9) -> dict[float, tuple[int, int, int]]:
    """Per γ, over the committed paper-config runs on our own data seeds (``root/<run>/config.json`` and
    ``summary.json``): (runs with (4,3) inferential >= threshold, runs with symmetric >= threshold, runs)."""
    out: dict[float, tuple[int, int, int]] = {}
    for cfg, s in _finished_runs(root):
        gamma = cfg["init"]["gamma"]
        inf, sym, n = out.get(gamma, (0, 0, 0))
        out[gamma] = (inf + (s["unseen_inferential_acc"] >= threshold), sym + (s["unseen_symmetric_acc"] >= threshold),
                      n + 1)
    return out


def fit_speed_text(path: Path = FIT_SPEED, leaning: float = 0.3) -> str:
    """One line from the committed ``p1-fit-speed`` table (docs/p1_fit_speed.md): the fit epochs of the runs
    that lean inferential (inferential accuracy >= ``leaning`` at their last evaluation) against those of the
    others; "" when the table is not there. The last evaluation, not the best: a run can lean inferential on
    the way and end symmetric (γ 1.0 seed 1 of the γ line)."""
    import csv

    if not path.is_file():
        return ""
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["fit_epoch"]]

    def span(sel: list[dict[str, str]]) -> str:
        epochs = sorted(int(r["fit_epoch"]) for r in sel)
        return f"epoch {epochs[0]}" if epochs[0] == epochs[-1] else f"epochs {epochs[0]}-{epochs[-1]}"

    lean = [r for r in rows if float(r["inferential"]) >= leaning]
    rest = [r for r in rows if float(r["inferential"]) < leaning]
    if not lean or not rest:
        return ""
    return (f"  What the seed sets: how long a run stays on the loss plateau. Of {len(rows)} fitted paper-width runs, "
            f"the {len(rest)} with last inferential < {leaning:g} fit (training loss < 1) at {span(rest)}, the "
            f"{len(lean)} leaning inferential at {span(lean)} (docs/p1_fit_speed.md)")


def gamma_line_text(root: Path = GAMMA_LINE, threshold: float = 0.9, leaning: float = 0.5, *,
                    intro: str = "Further out on the γ line, same config and seeds",
                    source: str = "docs/p1_both_sides.md; anchorlab reproduce p1-paper-gamma") -> str:
    """One line from committed γ-line runs (docs/p1_both_sides.md, "The γ line"; or ``root`` and its ``intro``
    and ``source``): for the largest and the smallest γ there, on how many seeds (4,3) is symmetric >=
    ``threshold``, inferential >= ``threshold``, and inferential-leaning (inferential >= ``leaning`` and above
    symmetric); "" when fewer than two γ have finished runs there."""
    runs: dict[float, list[dict[str, Any]]] = {}
    precisions = set()
    for cfg, summary in _finished_runs(root):
        precisions.add(cfg["train"]["precision"])
        runs.setdefault(cfg["init"]["gamma"], []).append(summary)
    if len(runs) < 2:
        return ""
    for ss in runs.values():
        ss.sort(key=lambda s: s["seeds"]["data"])

    def counts(gamma: float) -> str:
        ss, n = runs[gamma], len(runs[gamma])
        sym = sum(s["unseen_symmetric_acc"] >= threshold for s in ss)
        inf = sum(s["unseen_inferential_acc"] >= threshold for s in ss)
        lean = sum(s["unseen_inferential_acc"] >= leaning and s["unseen_inferential_acc"] > s["unseen_symmetric_acc"]
                   for s in ss)
        values = ", ".join(f"{s['unseen_inferential_acc']:.2f}/{s['unseen_symmetric_acc']:.2f}" for s in ss)
        return (f"γ {gamma:g}: symmetric >= {threshold:g} on {sym}/{n}, inferential >= {threshold:g} on {inf}/{n}, "
                f"leaning inferential (>= {leaning:g}, above symmetric) on {lean}/{n} (inferential/symmetric {values})")

    epochs = sorted({s["epochs"] for ss in runs.values() for s in ss})
    return (f"  {intro}, epoch {'/'.join(map(str, epochs))}, {'/'.join(sorted(precisions))} ({source}): "
            f"{counts(min(runs))}; {counts(max(runs))}")


def long_runs_text(sources: Sequence[tuple[Path, str]] = LONG_RUN_SOURCES, early: int = 27,
                   threshold: float = 0.9, past: int = 100) -> str:
    """A few lines from the committed long runs (each ``(root, pattern)`` of ``sources``): every trajectory (a CPU
    run and GPU runs of one config round differently, so each is a record of its own), small init first, then by
    seed and by epochs trained: its (4,3) answer at epoch ``early`` (where P1's protocol was read above) and at its
    last evaluation, of how many epochs, whether it is unfinished (still training, or queued), and where it
    trained; then per γ how many of the trajectories trained beyond epoch ``past`` answer inferentially /
    symmetrically (``threshold``) at their last evaluation. "" when none is there. P1 reads its runs at the end of
    210 epochs."""
    runs = []
    for root, pattern in sources:
        for d in sorted(root.glob(pattern)) if root.is_dir() else []:
            evals = rundir.read_metrics(d)
            if not evals or not (d / rundir.CONFIG).is_file():
                continue
            runs.append((rundir.read_json(d / rundir.CONFIG), evals, rundir.is_done(d), rundir.trained_on(d)))
    if not runs:
        return ""
    runs.sort(key=lambda r: (-r[0]["init"]["gamma"], r[0]["seeds"]["data_seed"], -r[1][-1]["epoch"]))
    peaks = sorted({c["train"]["lr"] * c["train"]["lr_multiplier"] for c, *_ in runs})
    precisions = sorted({c["train"]["precision"] for c, *_ in runs})
    lines = [f"  Toward P1's full 210 epochs (P1 reads the end) at peak rate {'/'.join(f'{p:g}' for p in peaks)}, "
             f"{'/'.join(precisions)}, (4,3) inferential/symmetric of each trajectory (docs/p1_frontier.md; "
             f"experiments/cpu_p1_m30_e210.sh, gpu_p1_m30_e210.sh):"]
    previous = None
    for cfg, evals, done, place in runs:
        last = evals[-1]
        at = next((r for r in evals if r["epoch"] == early), None)
        then = (f"epoch {early} {at['unseen_inferential_acc']:.2f}/{at['unseen_symmetric_acc']:.2f} → "
                if at is not None and last["epoch"] > early else "")
        who = (cfg["init"]["gamma"], cfg["seeds"]["data_seed"])
        head = f"γ {who[0]:g} seed {who[1]}" if who != previous else ""
        previous = who
        notes = ", ".join(n for n in (f"one {place}" if place not in ("", "CPU") else place,
                                      "" if done else "unfinished") if n)
        lines.append(f"    {head:<14}{then}epoch {last['epoch']} of {cfg['train']['epochs']} "
                     f"{last['unseen_inferential_acc']:.2f}/{last['unseen_symmetric_acc']:.2f} ({notes})")
    counts = []
    for gamma in sorted({c["init"]["gamma"] for c, *_ in runs}, reverse=True):
        ends = [e[-1] for c, e, *_ in runs if c["init"]["gamma"] == gamma and e[-1]["epoch"] > past]
        inf = sum(r["unseen_inferential_acc"] >= threshold for r in ends)
        sym = sum(r["unseen_symmetric_acc"] >= threshold for r in ends)
        if ends:
            counts.append(f"γ {gamma:g} inferential on {inf}, symmetric on {sym} of {len(ends)}")
    if counts:
        lines.append(f"    beyond epoch {past}, at the last evaluation (>= {threshold:g}): " + "; ".join(counts))
    return "\n".join(lines)


def best_of_rates_text(path: Path = BEST_OF_RATES, threshold: float = 0.9) -> str:
    """One line from a committed ``p1-gamma --option best_of_seed=true`` table (docs/p1_both_sides.md, "Both sides
    by P1's protocol"): for the smallest and the largest γ there, on how many seeds the best over the seed's runs
    (its learning rates) answers (4,3) inferentially and symmetrically, each with the seen-pair test accuracy of
    the run that gave it (``threshold`` on both), the values in seed order; "" when the table is not there or
    has one γ only."""
    import csv

    if not path.is_file():
        return ""
    with open(path, newline="") as f:
        rows = sorted(csv.DictReader(f), key=lambda r: (float(r["gamma"]), int(r["seed"])))
    gammas = sorted({float(r["gamma"]) for r in rows})
    if len(gammas) < 2:
        return ""

    def side(gamma: float, key: str) -> str:
        sel = [r for r in rows if float(r["gamma"]) == gamma]
        ok = sum(float(r[key]) >= threshold and float(r[f"seen_test_best_{key}"]) >= threshold for r in sel)
        values = ", ".join(f"{float(r[key]):.3f}" for r in sel)
        seen = ", ".join(f"{float(r[f'seen_test_best_{key}']):.3f}" for r in sel)
        runs = "/".join(sorted({r["n_runs"] for r in sel}))
        return (f"γ {gamma:g} {key} >= {threshold:g} on {ok}/{len(sel)} seeds ({values}; seen test of those runs "
                f"{seen}; best of {runs} run(s) a seed)")

    return (f"  By P1's protocol (§4: per seed the best over the learning rates), epoch 27, bf16 "
            f"(docs/p1_both_sides.md): {side(gammas[-1], 'inferential')}; {side(gammas[0], 'symmetric')}")


def decomposition_text(root: Path = REFERENCE_PARTS) -> str:
    """One line from the committed runs that take some draws from the authors' recording and the rest from our
    seed (docs/p1_both_sides.md): the latest evaluation of the longest-trained run with only the authors' data,
    and of the one with only their init and batch order; then, where committed, of the ones with only their init
    and only their batch order once they have fitted the seen pairs (seen test accuracy >= 0.9: before that the
    held-out pair has no answer to read); "" unless the first two are there."""
    latest: dict[str, dict[str, Any]] = {}
    for cfg_path in sorted(root.glob("*/config.json")) if root.is_dir() else []:
        task = rundir.read_json(cfg_path).get("task", {})
        parts = "+".join(sorted(task.get("reference_parts", []))) if task.get("reference") else ""
        evals = rundir.read_metrics(cfg_path.parent)
        if parts in ("data", "init+order", "init", "order") and evals \
                and evals[-1]["epoch"] > latest.get(parts, {"epoch": -1})["epoch"]:
            latest[parts] = evals[-1]
    if "data" not in latest or "init+order" not in latest:
        return ""

    def said(r: dict[str, Any]) -> str:
        return (f"(4,3) inferential {r['unseen_inferential_acc']:.3f}, symmetric {r['unseen_symmetric_acc']:.3f} "
                f"after epoch {r['epoch']}")

    alone = "".join(f"; the authors' {part} alone (the rest ours) gives {said(latest[part])}"
                    for part in ("init", "order") if latest.get(part, {}).get("seen_test_acc", 0.0) >= 0.9)
    return (f"  What sets it is the init and batch order, not the data: our seed-3 data from the authors' init and "
            f"order gives {said(latest['init+order'])}; the authors' data from our seed-3 init and order gives "
            f"{said(latest['data'])}{alone} (docs/p1_both_sides.md)")


def paper_config_text(committed: list[dict[str, Any]], registry: Path | None = None,
                      seeds: dict[float, tuple[int, int, int]] | None = None) -> str:
    """The committed paper-config block the demo prints: the replays, the outcome on our own seeds
    (``seeds``, default :func:`seed_outcomes`), and last the command that trains both γ on three seeds with its
    cost (the ``minutes`` of :data:`BOTH_SIDES` in ``registry``, default the shipped one)."""
    from anchorlab.reproduce import REGISTRY, get

    lines = ["\nNot run by this demo: P1 at the paper config, the committed result (docs/p1_paper_vs_reference.md; "
             "one-thread CPU replays of the authors' logged run: its data, init and batch order):"]
    for r in committed:
        lines.append(f"  γ {r['gamma']:g}, d_model {r['d_model']}, {r['precision']}, after epoch {r['epoch']}: (4,3) "
                     f"inferential {r['unseen_inferential_acc']:.3f}, symmetric {r['unseen_symmetric_acc']:.3f}, "
                     f"seen test {r['seen_test_acc']:.3f}")
    lines.append("  (the authors' γ 0.8 log: inferential 0.73 at epoch 18 and 0.96 at epoch 24; γ 0.5: symmetric "
                 "from epoch 6)")
    if line := best_of_rates_text():  # the answer first: both sides on our seeds, read as P1 reads them
        lines.append(line)
    if line := long_runs_text():  # and what became of it at one of those rates, read at P1's last epoch
        lines.append(line)
    seeds = seed_outcomes() if seeds is None else seeds
    if seeds:
        parts = [f"γ {g:g}: inferential >= 0.9 on {inf}/{n}, symmetric >= 0.9 on {sym}/{n}"
                 for g, (inf, sym, n) in sorted(seeds.items(), reverse=True)]
        lines.append("  On our own data seeds at this config, one learning rate, epoch 27 (one H100; "
                     "docs/p1_both_sides.md): " + "; ".join(parts) + ": the outcome varies by seed")
    if line := gamma_line_text():
        lines.append(line)
    if line := gamma_line_text(EPOCHS60, intro="The same two ends with P1's schedule compressed to 60 epochs "
                               "(the LR decayed by then)",
                               source="docs/p1_frontier.md; configs/sweeps/p1_frontier_epochs60.toml"):
        lines.append(line)
    if fit := fit_speed_text():
        lines.append(fit)
    if crossing := decomposition_text():
        lines.append(crossing)
    minutes = get(BOTH_SIDES, registry or REGISTRY).minutes
    cost = "not timed" if minutes is None else f"~{minutes / 60:.0f} h" if minutes >= 120 else f"~{minutes:g} min"
    lines.append(f"  Both sides on 3 seeds of our own data at this config, by P1's protocol: anchorlab reproduce "
                 f"{BOTH_SIDES} (estimated {cost} on 2 CPU cores with 2 workers; {BOTH_SIDES_GPU})")
    return "\n".join(lines)


def demo_p2_checks(runs: list[dict[str, Any]], small: float = 0.8, large: float = 0.3) -> dict[str, bool]:
    """P2 Fig. 3B's contrast at the demo's short scale, required of every seed (thresholds set with margin
    below what the demo config measured: docs/p2_cpu.md): small init generalizes the reasoning mapping
    to the never-trained masked pairs and learns reasoning before memory; large init fits the reasoning
    training pairs without generalizing."""
    def all_runs(gamma: float, ok: Any) -> bool:
        sel = [r for r in runs if r["gamma"] == gamma]
        return bool(sel) and all(ok(r) for r in sel)

    return {f"P2 small init (γ {small}): rsn_test_acc >= 0.3 (generalizes to the masked pairs)":
            all_runs(small, lambda r: r["rsn_test_acc"] >= 0.3),
            f"P2 small init (γ {small}): rsn_train_acc - mem_acc >= 0.3 (reasoning before memory)":
            all_runs(small, lambda r: r["rsn_train_acc"] - r["mem_acc"] >= 0.3),
            f"P2 large init (γ {large}): rsn_test_acc <= 0.05 with rsn_train_acc >= 0.4 (fits, does not generalize)":
            all_runs(large, lambda r: r["rsn_test_acc"] <= 0.05 and r["rsn_train_acc"] >= 0.4)}


def demo_checks(runs: list[dict[str, Any]]) -> dict[str, bool]:
    """P1's two sides, required of every seed: small init -> inferential, middle init -> symmetric."""
    def all_runs(init: str, key: str) -> bool:
        sel = [r for r in runs if r["init"] == init]
        return bool(sel) and all(r[key] >= 0.9 and r["seen_test_acc"] >= 0.9 for r in sel)

    return {"small init: unseen_inferential_acc >= 0.9 and seen_test_acc >= 0.9 on every seed":
            all_runs("small", "unseen_inferential_acc"),
            "middle init: unseen_symmetric_acc >= 0.9 and seen_test_acc >= 0.9 on every seed":
            all_runs("middle", "unseen_symmetric_acc")}
