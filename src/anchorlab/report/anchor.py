"""The report's anchor-task sections (P1 and P2 tasks): a run's curves, final metrics and the figures that
apply to it (:data:`anchorlab.figures.p1.RUN_FIGURES`; the others listed with the reason; P2 figures for the
``mem_rsn`` task), and a sweep's page: a phase diagram over its first two non-seed axes, the collected table
(γ ascending), the curves of all runs in one figure, the sweep grid figures, the figures that compare runs
(drawn once over the runs that get figures, one panel or line per run), then one section per run: curves and
single-run figures for at most two :func:`representative` runs of those, named on the page with why they were
chosen (these figures took most of a report's time), tables for all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anchorlab import rundir
from anchorlab.config import ConfigError
from anchorlab.figures import FIGURES, model_label, names
from anchorlab.figures.p1 import RUN_FIGURES, SWEEP_FIGURES, sweep_why_not, why_not
from anchorlab.figures.p2 import PAPER_MODEL
from anchorlab.metrics import HEADLINE
from anchorlab.phase import SEED_AXES, phase_grid
from anchorlab.plotting.curves import plot_training_curves
from anchorlab.plotting.figures import plot_phase_diagrams
from anchorlab.report.html import (
    collected_table,
    csv_bytes,
    data_uri,
    drawn,
    esc,
    fig_png,
    img,
    kv_table,
    one_sentence,
    provenance_block,
    run_head,
    skipped_list,
    sweep_head,
    table,
    wide_table,
)
from anchorlab.sweep import MANIFEST, collect

# Phase-diagram metrics per task: (metrics drawn, metric whose value < 0.9 hatches a cell)
PHASE_METRICS = {"composite": (("unseen_inferential_acc", "unseen_symmetric_acc"), "seen_test_acc"),
                 "mem_rsn": (("mem_acc", "rsn_test_acc"), "rsn_train_acc")}
MECHANISM_KEYS = ("wq0_n_groups", "wq0_largest_group_frac", "embed_cov_top_share")
# P1's routing and pair-order readouts, logged by runs of 2 or more layers since 2026-11-28 (analysis.summary)
READOUT_KEYS = ("flow_symmetric", "flow_inferential", "order_separation")
MAX_COMPARED = 6  # runs in one figure that compares runs (a panel, row or line each)
DEFAULT_RUN_FIGURES = 12  # runs of a sweep that get figures when not told: one per grid point, at most this
# The runs of a sweep that get the single-run mechanism figures (P1 Fig. 3b, 4; P2 Fig. 4-6): per task, the run
# with the highest final value of the first metric (reasons most), then another with the highest value of the
# second (memorizes most). These figures take most of a report's time; a run's own report draws all of them.
REPRESENTATIVE = {"composite": (("unseen_inferential_acc", "most inferential on the held-out pair"),
                                ("unseen_symmetric_acc", "most symmetric on the held-out pair")),
                  "mem_rsn": (("rsn_test_acc", "reasons most: highest D_rsn,test accuracy"),
                              ("mem_acc", "memorizes most: highest D_mem accuracy"))}


def run_page(run_dir: Path, anchor: str = "") -> str:
    """A report whose source is one run: its provenance and its section with every figure that applies."""
    return provenance_block([run_dir], anchor) + _run_section(run_dir, figures=True, level=2, all_p2=True,
                                                              anchor=anchor)


def _curve_panels(history: list[dict[str, Any]], cfg: Any) -> tuple[dict[str, dict[str, list[Any]]],
                                                                    dict[str, dict[str, str]]]:
    """(panels, groups) of a run's training curves: losses, the task's accuracies, per-group accuracy (the
    held-out pair's groups named, the seen pairs as one grey group), mechanism scalars, stable ranks (one
    colour per kind of matrix, a line style per layer)."""
    scalar_keys = [k for k in history[-1] if isinstance(history[-1][k], (int, float)) and k not in
                   ("step", "epoch", "lr")]
    panels: dict[str, dict[str, list[Any]]] = {
        "loss": {k: [r.get(k) for r in history] for k in scalar_keys if k.endswith("_loss")},
        "accuracy": {k: [r.get(k) for r in history] for k in scalar_keys if k.endswith("_acc")},
    }
    groups: dict[str, dict[str, str]] = {}
    names = list(history[-1].get("group_acc", {}))
    if names:
        panels["accuracy per group"] = {g: [r.get("group_acc", {}).get(g) for r in history] for g in names}
        held = tuple(f"{a}-{b}_" for a, b in getattr(cfg.task, "held_out", ()))
        if held and len(names) > 8:
            # the legend counts a group's lines: "seen pairs (30)"
            groups["accuracy per group"] = {g: g if g.startswith(held) else "seen pairs" for g in names}
    mech = {k: [r.get(k) for r in history] for k in (*MECHANISM_KEYS, *READOUT_KEYS) if k in history[-1]}
    if mech:
        panels["mechanism scalars"] = {k: v for k, v in mech.items() if k != "wq0_n_groups"}
        if "wq0_n_groups" in mech:
            panels["W_Q⁰ groups (threshold 0.7)"] = {"wq0_n_groups": mech["wq0_n_groups"]}
        ranks = [k for k in scalar_keys if k.startswith("stable_rank/")]
        if ranks:
            title = "stable rank (colour: matrix; line style: layer)"
            panels[title] = {k.split("/", 1)[1]: [r.get(k) for r in history] for k in ranks}
            kind = {k: k.rsplit(".", 1)[-1] for k in panels[title]}
            groups[title] = {k: "W_E, W_pos" if v in ("W_E", "W_pos") else v for k, v in kind.items()}
    return {k: v for k, v in panels.items() if v}, groups


def curves_figure(history: list[dict[str, Any]], cfg: Any) -> Any:
    """The training-curves figure of one run (:func:`_curve_panels`)."""
    panels, groups = _curve_panels(history, cfg)
    stable = [p for p in panels if p.startswith("stable rank")]
    return plot_training_curves([r["epoch"] for r in history], panels, log_panels=("loss", *stable),
                                unit_panels=("accuracy", "accuracy per group", "mechanism scalars"), groups=groups,
                                title=f"{model_label(cfg, short=False)}, γ {cfg.init.gamma:g}, seed "
                                      f"{cfg.seeds.init_seed}")


def _curves(history: list[dict[str, Any]], run_id: str, cfg: Any) -> str:
    if not history:
        return '<p class="skip">no evaluations in metrics.jsonl yet</p>'
    flat = [{k: v for k, v in r.items() if not isinstance(v, dict)} for r in history]
    return img(fig_png(curves_figure(history, cfg)), "training curves",
               f"training curves of {run_id} ({model_label(cfg, short=False)}, {len(history)} evaluations)",
               csv_bytes(flat), f"{run_id}_metrics.csv")


def _overview(run_dirs: list[Path], task: str) -> str:
    """The curves of every run of a sweep in one figure: the task's headline metrics and the train loss over
    epochs, one colour per grid point (γ, model; seeds share it)."""
    runs = [(rundir.read_config(d), rundir.read_metrics(d)) for d in run_dirs]
    runs = [(c, h) for c, h in runs if h]
    if not runs:
        return '<p class="skip">no evaluations yet</p>'
    epochs = sorted({r["epoch"] for _, h in runs for r in h})
    keys = ("train_loss", *HEADLINE.get(task, ()))
    panels: dict[str, dict[str, list[Any]]] = {k: {} for k in keys}
    groups: dict[str, dict[str, str]] = {k: {} for k in keys}
    multi_model = len({model_label(c) for c, _ in runs}) > 1
    for c, h in sorted(runs, key=lambda ch: (model_label(ch[0]), ch[0].init.gamma, ch[0].seeds.init_seed)):
        at = {r["epoch"]: r for r in h}
        label = f"γ {c.init.gamma:g}" + (f", {model_label(c)}" if multi_model else "")
        for k in keys:
            line = f"{label}, seed {c.seeds.init_seed}"
            panels[k][line] = [at[e].get(k) if e in at else None for e in epochs]
            groups[k][line] = label
    fig = plot_training_curves(epochs, panels, log_panels=("train_loss",), unit_panels=keys[1:], groups=groups,
                               ncols=4, title="every run of the sweep (one colour per γ; seeds share it)")
    rows = [{"epoch": e, "run": line, "metric": k, "value": v} for k, lines in panels.items()
            for line, vals in lines.items() for e, v in zip(epochs, vals) if v is not None]
    return img(fig_png(fig), "training curves of all runs", f"training curves of the {len(runs)} runs with an "
               "evaluation", csv_bytes(rows), "curves_all_runs.csv")


def _deviation_table(deviation: dict[str, float], cfg: Any) -> str:
    """The held-out pair's predictions as offsets from the inferential answer: 0 (inferential) first, then the
    symmetric answer's offset, then the others ascending."""
    from anchorlab.tasks.composite import inferential_shift, symmetric_shift

    a1, a2 = cfg.task.probe_pair
    sym = symmetric_shift(cfg.task, a1, a2) - inferential_shift(cfg.task, a1, a2)
    named = {0: "0 (inferential)", sym: f"{sym:+d} (symmetric)"}
    rest = sorted(int(k) for k in deviation if int(k) not in named)
    return wide_table({named.get(k, f"{k:+d}"): deviation.get(str(k), 0.0) for k in (*named, *rest)})


def _final_metrics(summary: dict[str, Any], cfg: Any) -> str:
    task = cfg.task.name
    scalars = {k: v for k, v in summary.items() if not isinstance(v, (dict, list))}
    head = {k: scalars.pop(k) for k in (*HEADLINE.get(task, ()), "final_train_loss") if k in scalars}
    out = "<h4>Headline</h4>" + kv_table(head)
    if isinstance(summary.get("best"), dict):
        out += "<h4>Best over evaluations</h4>" + kv_table(summary["best"])
    if isinstance(summary.get("group_acc"), dict):
        out += "<h4>Accuracy per group (final)</h4>" + wide_table(summary["group_acc"])
    by_pos = [d for a in ("inferential", "symmetric") if isinstance(d := summary.get(f"unseen_{a}_by_key_pos"), dict)]
    if len(by_pos) == 2 and all(by_pos):
        last = cfg.task.seq_len - 3  # there the second anchor is the last token
        rows = [{"answer": a, **{f"{p} (2nd anchor last)" if int(p) == last else p: v for p, v in d.items()}}
                for a, d in zip(("inferential", "symmetric"), by_pos)]
        out += ("<h4>Held-out pair by the key's position (final; the anchors follow the key)</h4>"
                + table(rows, list(rows[0])))
    if isinstance(summary.get("unseen_deviation"), dict):
        out += ("<h4>Held-out pair: prediction − inferential answer (fraction of its inputs; the 12 most "
                "frequent)</h4>" + _deviation_table(summary["unseen_deviation"], cfg))
    if isinstance(summary.get("unseen_deviation_xel"), dict):
        out += ("<details><summary>the same on train-type keys only, every offset (as the authors' code logs "
                "it)</summary>" + _deviation_table(summary["unseen_deviation_xel"], cfg) + "</details>")
    out += "<details><summary>all final scalars</summary>" + kv_table(scalars) + "</details>"
    return out


def _run_section(run_dir: Path, figures: bool, level: int = 3, all_p2: bool = False, anchor: str = "",
                 in_sweep: bool = False, left_out: str = "") -> str:
    """A run's config, curves, final metrics and figures: the P1 ones that apply and, for the ``mem_rsn``
    task, the P2 ones (single-run recipes; with ``all_p2`` also those over several runs). ``in_sweep``: the
    figures that compare runs are on the sweep's page, so only single-run recipes are drawn here, and the
    curves only for runs with ``figures`` (the others are in the sweep's curves of all runs); ``left_out``:
    why a run without ``figures`` has none (HTML; default: --max-run-figures)."""
    cfg = rundir.read_config(run_dir)
    hs = f"h{level + 1}"
    history = rundir.read_metrics(run_dir)
    if figures or not in_sweep:
        curves = _curves(history, run_dir.name, cfg)
    else:
        flat = [{k: v for k, v in r.items() if not isinstance(v, dict)} for r in history]
        link = f'<a download="{esc(run_dir.name)}_metrics.csv" href="{data_uri(csv_bytes(flat), "text/csv")}">'
        curves = (f'<p class="skip">in the <a href="#{anchor}curves">curves of all runs</a>; this run\'s '
                  f"evaluations: {link}metrics (CSV)</a></p>" if history else
                  '<p class="skip">no evaluations in metrics.jsonl yet</p>')
    parts = run_head(run_dir, f"{cfg.task.name} task, {model_label(cfg, short=False)}, γ {cfg.init.gamma:g}, seed "
                     f"{cfg.seeds.init_seed}", level, anchor, curves)
    if (run_dir / rundir.SUMMARY).is_file():
        parts.append(_final_metrics(rundir.read_json(run_dir / rundir.SUMMARY), cfg))
    else:
        parts.append('<p class="skip">unfinished run: no summary.json yet</p>')
    parts.append(f"<{hs}>Mechanism figures (P1)</{hs}>")
    has_ckpt = (run_dir / rundir.CKPT_DIR).is_dir() and bool(rundir.checkpoint_steps(run_dir))
    if not has_ckpt:
        parts.append('<p class="skip">no kept checkpoint: no figures</p>')
    elif not figures:
        why = left_out or "figures left out (--max-run-figures; the first seed of each grid point comes first)"
        parts.append(f'<p class="skip">{why}; draw them with <code>anchorlab report {esc(run_dir)}</code></p>')
    else:
        skipped = []
        if in_sweep:
            parts.append(f'<p class="skip">the figures that compare runs (one panel or line per run) are '
                         f'<a href="#{anchor}compare">on the sweep\'s page</a></p>')
        for name in RUN_FIGURES:
            if in_sweep and FIGURES[name].sources != "run":
                continue
            reason = why_not(name, cfg)
            if reason:
                skipped.append(f"<li>{esc(name)}: {esc(reason)}</li>")
            else:
                parts.append(drawn(name, [run_dir], FIGURES[name].help))
        if cfg.task.name == "mem_rsn":
            model = cfg.model.name if in_sweep else None
            p2, p2_skipped = _p2_figures([run_dir], ("run", "runs") if all_p2 else ("run",), model)
            parts.append(f"<{hs}>Figures (P2)</{hs}>" + "".join(p2))
            other = [n for n, m in PAPER_MODEL.items() if model and m != model]
            if other:
                paper = {"gpt": "Transformer", "emb_mlp": "Emb-MLP"}[PAPER_MODEL[other[0]]]
                parts.append(f'<p class="skip">left out on a sweep\'s page: {esc(", ".join(other))} (P2 draws them '
                             f"for the {paper}); <code>anchorlab report {esc(run_dir)}</code> draws those that "
                             "apply to this run</p>")
            skipped += p2_skipped
        if skipped:
            parts.append(skipped_list("not applicable to this run", skipped))
    return "\n".join(parts)


def _compared(runs: list[Path], anchor: str) -> str:
    """The run figures over several runs (P1 Fig. 3, 5, 12, 13), each drawn once over ``runs`` (those it
    applies to); the others listed with the reason."""
    parts, skipped = [], []
    cfgs = {d: rundir.read_config(d) for d in runs}
    for name in RUN_FIGURES:
        if FIGURES[name].sources != "runs":
            continue
        ok = [d for d in runs if not why_not(name, cfgs[d])]
        if ok:
            parts.append(drawn(name, ok, FIGURES[name].help))
        else:
            skipped.append(f"<li>{esc(name)}: {esc(why_not(name, cfgs[runs[0]]))}</li>")
    if skipped:
        parts.append(skipped_list("not applicable to these runs", skipped))
    return "\n".join(parts)


def _p2_figures(sources: list[Path], kinds: tuple[str, ...], model: str | None = None) -> tuple[list[str], list[str]]:
    """The P2 figures (registered ``p2-*`` recipes whose sources are in ``kinds``) drawn from ``sources``:
    (embedded figures, skipped ones with the recipe's reason). A recipe says it does not apply by raising
    :class:`ConfigError` (e.g. "this figure needs 'emb_mlp'"). With ``model``, the single-run figures that
    P2 draws for another model (:data:`~anchorlab.figures.p2.PAPER_MODEL`) are left out."""
    parts, skipped = [], []
    for name in names():
        if model and PAPER_MODEL.get(name, model) != model:
            continue
        if name.startswith("p2-") and FIGURES[name].sources in kinds:
            try:
                parts.append(drawn(name, sources, FIGURES[name].help))
            except ConfigError as e:
                skipped.append(f"<li>{esc(name)}: {esc(one_sentence(e, name))}</li>")
    return parts, skipped


def _phase(rows: list[dict[str, Any]], axes: dict[str, list[Any]], task: str) -> str:
    """A phase diagram over the first two non-seed axes with more than one value (one row if only one)."""
    grid_axes = [a for a, v in axes.items() if a not in SEED_AXES and len(v) > 1]
    done = [r for r in rows if r.get("status") == "done"]
    metrics, mask_metric = PHASE_METRICS.get(task, ((), ""))
    if not grid_axes or not done or not metrics or any(m not in done[0] for m in (*metrics, mask_metric)):
        return '<p class="skip">no phase diagram: the sweep has no non-seed axis with two or more values, ' \
               "no finished run, or no phase metrics for this task</p>"
    x = grid_axes[0]
    y = grid_axes[1] if len(grid_axes) > 1 else "(all)"
    done = [{**r, "(all)": "all"} for r in done]
    g = phase_grid(done, x=x, y=y, metrics=metrics, mask_metric=mask_metric)
    fig = plot_phase_diagrams(g["xs"], g["ys"], {m: g[m] for m in metrics}, g["mask"], xlabel=x, ylabel=y)
    cells = [{x: xv, y: yv, **{m: g[m][i, j] for m in (*metrics, mask_metric)}, "hatched": bool(g["mask"][i, j]),
              "n_seeds": int(g["n_seeds"][i, j])} for i, yv in enumerate(g["ys"]) for j, xv in enumerate(g["xs"])]
    other = grid_axes[2:]
    note = (f"final evaluation per run; best over {', '.join(other)}; " if other else "final evaluation per run; ") + \
        f"mean over seeds; hatched where {mask_metric} < 0.9"
    return img(fig_png(fig), "phase diagram", note, csv_bytes(cells), "phase.csv")


def _figure_order(manifest: dict[str, Any]) -> tuple[list[str], int]:
    """Run ids in the order they get figures, the runs of the first seed (one per grid point) first; and the
    number of those first-seed runs."""
    axes = manifest.get("axes", {})
    seed_axis = next((a for a in SEED_AXES if a in axes), None)
    runs = list(manifest["runs"].items())
    if seed_axis is None:
        return [r for r, _ in runs], len(runs)
    first = axes[seed_axis][0]
    firsts = [r for r, p in runs if p.get(seed_axis) == first]
    return firsts + [r for r, p in runs if p.get(seed_axis) != first], len(firsts)


def representative(runs: list[Path], rows: list[dict[str, Any]], task: str) -> dict[Path, str]:
    """The runs of ``runs`` that get the single-run mechanism figures, with why each was chosen: for each
    metric of :data:`REPRESENTATIVE` in turn, the run not yet chosen with its highest final value (ties: the
    first in ``runs``; runs without a value last). A task without an entry: the first run."""
    final = {r["run_id"]: r for r in rows}
    chosen: dict[Path, str] = {}
    for metric, why in REPRESENTATIVE.get(task, ((None, "first run"),)):
        left = [d for d in runs if d not in chosen]
        if left:
            value = [final.get(d.name, {}).get(metric) if metric else None for d in left]
            best = max(range(len(left)), key=lambda i: (value[i] is not None, value[i] or 0.0, -i))
            chosen[left[best]] = why
    return chosen


def _sorted_rows(rows: list[dict[str, Any]], axes: list[str]) -> list[dict[str, Any]]:
    """The collected rows as a reader compares them: γ ascending first, then the other axes, seeds last."""
    order = sorted(axes, key=lambda a: (a != "init.gamma", a in SEED_AXES))

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return tuple((v is None, str(type(v)), v) if not isinstance(v, (int, float)) else (False, "num", v)
                     for v in (r.get(a) for a in order))
    return sorted(rows, key=key)


def sweep_page(sweep_dir: Path, max_run_figures: int | None = None, anchor: str = "") -> tuple[str, str]:
    """(title, HTML) of an anchor-task sweep: phase diagram, collected table (γ ascending), the curves of all
    runs, sweep figures, the figures that compare runs (over the first ``max_run_figures`` runs with a
    checkpoint, at most :data:`MAX_COMPARED`, those of the first seed first), then every run (curves and
    single-run figures for the :func:`representative` ones among those ``max_run_figures`` runs; tables for
    all). ``None``: one run per grid point (the first seed's), at most :data:`DEFAULT_RUN_FIGURES`."""
    manifest = rundir.read_json(sweep_dir / MANIFEST)
    axes = list(manifest.get("axes", {}))
    rows = _sorted_rows(collect(sweep_dir), axes)
    run_dirs = [sweep_dir / r["run_id"] for r in rows]
    existing = [d for d in run_dirs if (d / rundir.CONFIG).is_file()]
    first = rundir.read_config(existing[0]) if existing else None
    task = first.task.name if first else "composite"
    parts = sweep_head(sweep_dir, manifest, rows, existing, (
        ("provenance", "provenance"), ("phase", "phase diagram"), ("table", "table"), ("curves", "curves"),
        ("grids", "sweep figures"), ("compare", "runs compared"), ("runs", "runs")), anchor)
    parts.append(f'<h2 id="{anchor}phase">Phase diagram</h2>' + _phase(rows, manifest.get("axes", {}), task))
    head = (*HEADLINE.get(task, ()), "final_train_loss", *MECHANISM_KEYS, *READOUT_KEYS)
    parts.append(collected_table(rows, axes, head, existing, anchor))
    parts.append(f'<h2 id="{anchor}curves">Training curves of all runs</h2>' + _overview(existing, task))
    parts.append(f'<h2 id="{anchor}grids">Sweep figures</h2>')
    skipped = []
    for name in SWEEP_FIGURES:
        reason = sweep_why_not(name, sweep_dir, first.model.name) if first else "no run"
        if reason:
            skipped.append(f"<li>{esc(name)}: {esc(reason)}</li>")
        else:
            parts.append(drawn(name, [sweep_dir], FIGURES[name].help))
    done = [d for d in existing if rundir.is_done(d)]
    if task == "mem_rsn" and done:  # the P2 figures over several runs (training curves per γ, Fig. 8)
        p2, p2_skipped = _p2_figures(done, ("runs",))
        parts += p2
        skipped += p2_skipped
    if skipped:
        parts.append(skipped_list("not applicable to this sweep", skipped))
    with_ckpt = [d for d in existing if (d / rundir.CKPT_DIR).is_dir() and rundir.checkpoint_steps(d)]
    order, n_first = _figure_order(manifest)
    ranked = [sweep_dir / r for r in order if sweep_dir / r in with_ckpt]
    gets_figures = ranked[:min(n_first, DEFAULT_RUN_FIGURES) if max_run_figures is None else max_run_figures]
    compared = sorted(gets_figures[:MAX_COMPARED], key=lambda d: (rundir.read_config(d).init.gamma, str(d)))
    parts.append(f'<h2 id="{anchor}compare">Runs compared (P1 mechanism figures)</h2>')
    if compared:
        parts.append(f'<p class="skip">{len(compared)} run(s): {esc(", ".join(d.name for d in compared))}</p>'
                     + _compared(compared, anchor))
    else:
        parts.append('<p class="skip">no run with a kept checkpoint among those that get figures '
                     "(--max-run-figures)</p>")
    chosen = representative(gets_figures, rows, task)
    named = "; ".join(f'<a href="#{anchor}run-{esc(d.name)}">{esc(d.name)}</a> ({esc(why)})'
                      for d, why in chosen.items())
    parts.append(f'<h2 id="{anchor}runs">Runs</h2>')
    if chosen:
        parts.append(f'<p class="skip">curves and single-run mechanism figures for {len(chosen)} representative '
                     f"run(s) of those compared: {named}</p>")
    for d in existing:
        why = f"compared above; its own figures are drawn for the representative runs only ({named})" \
            if d in gets_figures else ""
        parts.append(_run_section(d, figures=d in chosen, anchor=anchor, in_sweep=True, left_out=why))
    missing = [d.name for d in run_dirs if d not in existing]
    if missing:
        parts.append(f'<p class="skip">not started: {esc(", ".join(missing))}</p>')
    return f"anchorlab sweep {manifest.get('name', sweep_dir.name)}", "\n".join(parts)
