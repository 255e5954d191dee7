"""plot_* functions: arrays or row dicts in, a matplotlib Figure out."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from anchorlab.plotting.style import COLORS, plt, style


def plot_unseen_over_training(curves: Sequence[dict[str, Any]], title: str = "", pair: str = "(4,3)",
                              answers: Answers = ("x−10", "x−6")) -> Figure:
    """Held-out-pair accuracy over training, one panel per γ, one line per seed.

    Each curve: ``{"gamma", "std", "seed", "epoch": [...], "inferential": [...], "symmetric": [...],
    "seen_test": [...]}`` and optionally ``"init"`` (a name such as "small", shown in the panel title).
    """
    gammas = sorted({c["gamma"] for c in curves})
    with style():
        fig, axes = plt.subplots(1, len(gammas), figsize=(3.3 * len(gammas), 2.9), sharey=True, squeeze=False)
        for ax, g in zip(axes[0], gammas):
            group = [c for c in curves if c["gamma"] == g]
            for i, c in enumerate(group):
                label = (lambda s: s) if i == 0 else (lambda s: None)
                ax.plot(c["epoch"], c["inferential"], color=COLORS["inferential"], lw=1.4,
                        label=label(reading_label("inferential", pair, answers, "→")))
                ax.plot(c["epoch"], c["symmetric"], color=COLORS["symmetric"], lw=1.4,
                        label=label(reading_label("symmetric", pair, answers, "→")))
                ax.plot(c["epoch"], c["seen_test"], color=COLORS["seen_test"], lw=1.0, ls="--",
                        label=label("seen pairs, test keys"))
            name = f"{group[0]['init']} init: " if group[0].get("init") else ""
            ax.set_title(f"{name}γ = {g:g}  (std W_Q = {group[0]['std']:.3g})")
            ax.set_xlabel("epoch")
            ax.set_ylim(-0.03, 1.03)
        axes[0][0].set_ylabel("accuracy")
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=3)
        if title:
            fig.suptitle(title)
        fig.tight_layout(rect=(0, 0.09, 1, 1))
    return fig


SEED_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p")


Answers = tuple[str, str] | None  # a held-out pair's (inferential, symmetric) answers, e.g. ("x−10", "x−6")


def reading_label(kind: str, pair: str, answers: Answers, sep: str = " → ") -> str:
    """ "inferential (4,3) → x−10": a reading of the held-out pair, with its answer where one is common to the
    runs drawn (``answers``)."""
    if answers is None:
        return f"{kind} {pair}"
    return f"{kind} {pair}{sep}{answers[0] if kind == 'inferential' else answers[1]}"


def _probe_kinds(pair: str, lw: float, lw_seen: float,
                 answers: Answers = None) -> tuple[tuple[str, str, float, str], ...]:
    """The three curves of a held-out-pair panel: (key, line style, width, legend label)."""
    return (("inferential", "-", lw, reading_label("inferential", pair, answers)),
            ("symmetric", "--", lw, reading_label("symmetric", pair, answers)),
            ("seen_test", "-.", lw_seen, "seen pairs, test keys"))


def plot_probe_curves(curves: Sequence[dict[str, Any]], pair: str = "(4,3)", threshold: float = 0.9,
                      title: str = "", answers: Answers = None) -> Figure:
    """Held-out-pair accuracy against epoch for every run: one panel per group (in order of first appearance),
    one line per run within it. The kind of answer is colour and line style (inferential solid, symmetric
    dashed, seen pairs' test keys dash-dot grey), the run is the marker; ``threshold`` is a thin black line.

    Each curve: ``{"group": panel title, "label": e.g. "seed 1", "epoch": [...], "inferential": [...],
    "symmetric": [...], "seen_test": [...]}``; where curves also carry ``"loss_epoch"`` and ``"loss"``, a second
    row of panels draws that training loss per epoch on a log scale, one line per run, under its group."""
    groups = list(dict.fromkeys(c["group"] for c in curves))
    losses = any("loss" in c for c in curves)
    labels = list(dict.fromkeys(c["label"] for c in curves))
    kinds = _probe_kinds(pair, 1.4, 1.0, answers)
    with style():
        fig, axes = plt.subplots(2 if losses else 1, len(groups), figsize=(max(3.6 * len(groups), 6.4),
                                 5.3 if losses else 3.4), sharey="row", sharex="col", squeeze=False,
                                 gridspec_kw={"height_ratios": [3, 1.7]} if losses else None)
        for ax, g in zip(axes[0], groups):
            for c in (c for c in curves if c["group"] == g):
                marker = SEED_MARKERS[labels.index(c["label"]) % len(SEED_MARKERS)]
                for key, ls, lw, _ in kinds:
                    ax.plot(c["epoch"], c[key], color=COLORS[key], ls=ls, lw=lw, marker=marker, ms=3.5,
                            markerfacecolor="white", markeredgewidth=0.8)
            ax.axhline(threshold, color="black", lw=0.7, alpha=0.6)
            ax.set_title(g, fontsize=8.5)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_ylim(-0.03, 1.03)
        for ax, g in zip(axes[1] if losses else (), groups):
            for c in (c for c in curves if c["group"] == g and c.get("loss")):
                marker = SEED_MARKERS[labels.index(c["label"]) % len(SEED_MARKERS)]
                ax.plot(c["loss_epoch"], c["loss"], color="#333333", lw=0.9, marker=marker, ms=2.5,
                        markerfacecolor="white", markeredgewidth=0.6, markevery=max(1, len(c["loss"]) // 25))
            ax.set_yscale("log")
        for ax in axes[-1]:
            ax.set_xlabel("epoch")
        axes[0][0].set_ylabel("accuracy")
        if losses:
            axes[1][0].set_ylabel("train loss")
        # two legend rows under the panels: the kinds of answer (and the threshold), then the runs' markers
        kind_handles = [Line2D([], [], color=COLORS[k], ls=ls, lw=lw, label=name) for k, ls, lw, name in kinds]
        kind_handles.append(Line2D([], [], color="black", lw=0.7, alpha=0.6, label=f"{threshold:g}"))
        run_handles = [Line2D([], [], color="#333333", ls="none", marker=SEED_MARKERS[i % len(SEED_MARKERS)],
                                  markerfacecolor="white", label=lab) for i, lab in enumerate(labels)]
        # as many markers a row as fit the width (a label of n characters takes ~0.4 + 0.062 n inches at
        # font size 8); the figure grows by a legend row for each further row
        width, height = fig.get_size_inches()
        ncol = max(1, min(len(labels), 8, int(width // (0.4 + 0.062 * max(map(len, labels))))))
        extra = 0.2 * (-(-len(labels) // ncol) - 1)
        height += extra
        fig.set_size_inches(width, height)
        fig.legend(handles=kind_handles, loc="lower center", bbox_to_anchor=(0.5, (0.27 + extra) / height), ncol=4,
                   fontsize=8)
        fig.legend(handles=run_handles, loc="lower center", bbox_to_anchor=(0.5, 0.0), ncol=ncol, fontsize=8)
        if title:
            fig.suptitle(title, fontsize=9)
        fig.tight_layout(rect=(0, (0.62 + extra) / height, 1, 1))
    return fig


LOSS_COLOR = "#8e6bb0"  # the training loss on a panel's right axis (apart from the grey seen-pairs line)


def plot_probe_grid(curves: Sequence[dict[str, Any]], pair: str = "(4,3)", threshold: float = 0.9,
                    title: str = "", ncols: int = 4, answers: Answers = None) -> Figure:
    """Held-out-pair accuracy against epoch, one small panel per run (the curves of :func:`plot_probe_curves`,
    each titled ``group`` and ``label``), ``ncols`` panels a row, shared axes. Where a curve carries ``"loss"``
    its training loss per epoch is a thin line (:data:`LOSS_COLOR`) on a log scale on the panel's right axis, so
    that a loss spike stands right under the change in the answer it brings."""
    kinds = _probe_kinds(pair, 1.3, 0.9, answers)
    losses = any(c.get("loss") for c in curves)
    # title lines every panel shares (the model, a γ common to all) go once into the figure's title
    lines = [c["group"].split("\n") for c in curves]
    common = [x for x in lines[0] if all(x in ls for ls in lines)]
    ncols = max(1, min(ncols, len(curves)))
    nrows = -(-len(curves) // ncols)
    with style():
        fig, axes = plt.subplots(nrows, ncols, figsize=(2.9 * ncols, 2.35 * nrows + 0.9), sharex=True, sharey=True,
                                 squeeze=False)
        twins = []
        for ax, c in zip(axes.flat, curves):
            if losses and c.get("loss"):
                tw = ax.twinx()
                tw.plot(c["loss_epoch"], c["loss"], color=LOSS_COLOR, lw=0.7, alpha=0.8)
                tw.set_yscale("log")
                tw.tick_params(labelsize=6.5, colors=LOSS_COLOR)
                twins.append(tw)
            for key, ls, lw, _ in kinds:
                ax.plot(c["epoch"], c[key], color=COLORS[key], ls=ls, lw=lw)
            ax.axhline(threshold, color="black", lw=0.6, alpha=0.5)
            own = [x for x in c["group"].split("\n") if x not in common]
            ax.set_title("\n".join([*own, c["label"]]), fontsize=7.5)
            ax.set_ylim(-0.03, 1.03)
            ax.set_zorder(1)  # the accuracies over the loss line of the twin axis
            ax.patch.set_visible(False)
        if twins:  # one loss scale for every panel
            lo = min(t.get_ylim()[0] for t in twins)
            hi = max(t.get_ylim()[1] for t in twins)
            for t in twins:
                t.set_ylim(lo, hi)
        for ax in axes.flat[len(curves):]:
            ax.set_visible(False)
        for col in range(ncols):  # the lowest panel of each column carries the epoch axis
            ax = axes[(len(curves) - 1 - col) // ncols, col] if col < len(curves) else axes[-1, col]
            ax.xaxis.set_tick_params(labelbottom=True)
            ax.set_xlabel("epoch")
        for ax in axes[:, 0]:
            ax.set_ylabel("accuracy")
        handles = [Line2D([], [], color=COLORS[k], ls=ls, lw=lw, label=name) for k, ls, lw, name in kinds]
        handles.append(Line2D([], [], color="black", lw=0.6, alpha=0.5, label=f"{threshold:g}"))
        if twins:
            handles.append(Line2D([], [], color=LOSS_COLOR, lw=0.7, label="train loss per epoch (right, log)"))
        height = fig.get_size_inches()[1]
        fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=7.5)
        title = "\n".join(x for x in [title, ", ".join(common)] if x)
        if title:
            fig.suptitle(title, fontsize=9)
        fig.tight_layout(rect=(0, 0.35 / height, 1, 1))
    return fig


def outcome_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """A fixed-width text table of ``rows`` (dicts) over ``columns``; floats with 3 decimals."""
    def fmt(v: Any) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    cells = [[fmt(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c) for i, c in enumerate(columns)]
    line = "  ".join(c.rjust(w) for c, w in zip(columns, widths))
    sep = "  ".join("-" * w for w in widths)
    body = ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join([line, sep, *body])



def plot_phase_diagrams(xs: Sequence[Any], ys: Sequence[Any], grids: dict[str, Any], mask: Any,
                        xlabel: str = "γ", ylabel: str = "depth") -> Figure:
    """One heatmap per metric over (x, y), values annotated, hatched where ``mask`` (P1 Fig. 2a/2b)."""
    import numpy as np

    with style():
        fig, axes = plt.subplots(1, len(grids), figsize=(3.6 * len(grids), 3.0), squeeze=False)
        for ax, (title, grid) in zip(axes[0], grids.items()):
            im = ax.imshow(grid, origin="lower", cmap="viridis", vmin=0, vmax=1, aspect="auto")
            for i in range(len(ys)):
                for j in range(len(xs)):
                    if np.isfinite(grid[i, j]):
                        ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=7,
                                color="white" if grid[i, j] < 0.6 else "black")
                    if mask[i, j]:
                        ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///",
                                                   edgecolor="0.85", lw=0))
            ax.set_xticks(range(len(xs)), [f"{v:g}" if isinstance(v, float) else str(v) for v in xs])
            ax.set_yticks(range(len(ys)), [str(v) for v in ys])
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.set_title(title)
            ax.grid(False)
            fig.colorbar(im, ax=ax, fraction=0.046)
        fig.tight_layout()
    return fig


def plot_gamma_comparison(rows: Sequence[dict[str, Any]], pair: str = "(4,3)", title: str = "", x: str = "gamma",
                          x_name: str = "γ", xlabel: str = "γ  (std = d_in^−γ: larger γ = smaller initialization)",
                          dots: str = "seed", spread: Sequence[dict[str, Any]] | None = None,
                          answers: Answers = None) -> Figure:
    """P1's contrast in one picture: per γ (ascending; with several models, per model and γ) the fraction of
    held-out-pair inputs answered inferentially and symmetrically, one dot per seed, a bar at the mean.

    Each row: ``{"gamma", "inferential", "symmetric"}`` and optionally ``"model"`` (e.g. "Transformer 2L")
    and ``"std"`` (std of W_Q, shown under the γ). ``x`` / ``x_name`` / ``xlabel`` put another
    quantity on the x-axis (P1 Fig. 2 over one axis); ``dots`` names what one dot is. ``spread`` (P1 Fig. 2c):
    one row per (model, x) with ``"inferential_mean"``, ``"inferential_std"`` and the same for symmetric; each
    mean is then a filled bar with ± std error bars."""
    import numpy as np

    models = sorted({r.get("model", "") for r in rows})
    cats = sorted({(r.get("model", ""), r[x]) for r in rows}, key=lambda c: (models.index(c[0]), c[1]))
    # lines every model label shares ("Transformer 2L" when only the weight decay differs) go under the axis once
    common = [ln for ln in models[0].split("\n") if all(ln in m.split("\n") for m in models)] if len(models) > 1 else []
    ticks = []
    for m, v in cats:
        std = next((r["std"] for r in rows if (r.get("model", ""), r[x]) == (m, v) and r.get("std")), None)
        lines = [f"{x_name} {v:g}" if isinstance(v, (int, float)) else f"{x_name} {v}"]
        lines += [f"std W_Q {std:.2g}"] if std else []
        lines += [ln for ln in m.split("\n") if ln not in common] if len(models) > 1 else []
        ticks.append("\n".join(lines))
    # each category as wide as its longest tick line (~0.075 inch a character at this font size), the figure as
    # tall as its tick labels
    width = max(1.1, 0.075 * max(len(ln) for t in ticks for ln in t.split("\n")) + 0.25)
    n_lines = max(t.count("\n") + 1 for t in ticks)
    with style():
        fig, ax = plt.subplots(figsize=(max(3.0, width * len(cats) + 1.2) + 2.6, 3.0 + 0.16 * max(0, n_lines - 2)))
        for key, dx in (("inferential", -0.17), ("symmetric", 0.17)):
            for i, cat in enumerate(cats):
                group = [r for r in rows if (r.get("model", ""), r[x]) == cat]
                vals = [float(r[key]) for r in group]
                jitter = np.linspace(-0.05, 0.05, len(vals)) if len(vals) > 1 else np.zeros(1)
                name = reading_label(key, pair, answers)
                done = np.array([r.get("status", "done") != "unfinished" for r in group])
                ax.scatter((i + dx + jitter)[done], np.array(vals)[done], s=24, color=COLORS[key],
                           edgecolors="white", linewidths=0.5, zorder=3,
                           label=f"{name},\none dot per {dots}" if i == 0 else None)
                # a run still training: its last evaluation, hollow (not a result yet)
                ax.scatter((i + dx + jitter)[~done], np.array(vals)[~done], s=24, facecolors="white",
                           edgecolors=COLORS[key], linewidths=1.0, zorder=3)
                stats = next((r for r in spread or () if (r.get("model", ""), r[x]) == cat), None)
                if stats is None:
                    ax.hlines(float(np.mean(vals)), i + dx - 0.13, i + dx + 0.13, color=COLORS[key], lw=2.2, zorder=2)
                else:
                    mean, sd = float(stats[f"{key}_mean"]), float(stats[f"{key}_std"])
                    ax.bar(i + dx, mean, width=0.3, color=COLORS[key], alpha=0.35, zorder=1)
                    ax.errorbar(i + dx, mean, yerr=sd, fmt="none", ecolor=COLORS[key], capsize=4, lw=1.4, zorder=2)
        ax.set_xticks(range(len(cats)), ticks)
        ax.set_xlim(-0.6, len(cats) - 0.4)
        ax.set_ylim(-0.04, 1.04)
        ax.set_ylabel(f"fraction of {pair} inputs")
        ax.set_xlabel(xlabel + (f";  every run: {', '.join(common)}" if common else ""))
        handles, labels = ax.get_legend_handles_labels()
        if any(r.get("status") == "unfinished" for r in rows):
            handles.append(Line2D([], [], ls="none", marker="o", markerfacecolor="white", markeredgecolor="#555555"))
            labels.append("hollow: unfinished run(s),\nlast evaluation so far")
        ax.legend(handles, labels, loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=8, labelspacing=1.2)
        title = title or f"P1: held-out pair {pair} per {x_name} (bars: mean over {dots}s)"
        # wrapped to the axes' width (~11 characters an inch at this size), so a narrow figure does not cut it
        ax.set_title(textwrap.fill(title, width=max(40, int(11 * (fig.get_figwidth() - 2.6)))), fontsize=9)
        fig.tight_layout()
    return fig


def plot_fit_speed(rows: Sequence[dict[str, Any]], loss_threshold: float, pair: str = "(4,3)",
                   answers: Answers = None) -> Figure:
    """Panels sharing x: the held-out pair's inferential (left) and symmetric (middle) accuracy of each run
    against its fit epoch (first epoch with mean training loss < ``loss_threshold``), and, where any run has
    it, the early ratio (right, log scale: inferential over seen-pair test accuracy at the early evaluation;
    1 marked). Colour = γ, marker = d_model; a run not fitted by its last epoch is hollow at the right edge; a
    run on a reference file's draws is ringed in black. Each row: ``{"gamma", "d_model", "fit_epoch" (or
    None), "last_trained_epoch", "inferential", "symmetric", "reference_parts"}`` and optionally
    ``"early_ratio"``, ``"early_epoch"`` and ``"early_embed_top_share"`` (a fourth panel where any run has it:
    the top eigenvalue's share of the trace of the item embeddings' covariance at the early evaluation)."""
    import numpy as np

    gammas = sorted({r["gamma"] for r in rows})
    widths = sorted({r["d_model"] for r in rows})
    cmap = plt.get_cmap("viridis")
    color = {g: cmap(0.15 + 0.7 * i / max(len(gammas) - 1, 1)) for i, g in enumerate(gammas)}
    marker = {w: SEED_MARKERS[i % len(SEED_MARKERS)] for i, w in enumerate(widths)}
    fitted = [r["fit_epoch"] for r in rows if r["fit_epoch"] is not None]
    unfitted = any(r["fit_epoch"] is None for r in rows)
    edge = max([*fitted, *(r["last_trained_epoch"] for r in rows if r["fit_epoch"] is None)]) + 2
    early = [r for r in rows if r.get("early_ratio") is not None]
    floor = 0.01  # a ratio of 0 (no inferential answer at all) is drawn at the floor of the log axis
    panels = [("inferential", reading_label("inferential", pair, answers), (-0.04, 1.04)),
              ("symmetric", reading_label("symmetric", pair, answers), (-0.04, 1.04))]
    if early:
        top = max(2.0, *(float(r["early_ratio"]) for r in early)) * 1.5
        panels.append(("early_ratio", f"at epoch {early[0]['early_epoch']}: inferential {pair}\n"
                       "over seen pairs' test accuracy (log)", (floor * 0.8, top)))
    shares = [float(r["early_embed_top_share"]) for r in rows if r.get("early_embed_top_share") is not None]
    if shares:
        epoch = next(r["early_epoch"] for r in rows if r.get("early_embed_top_share") is not None)
        panels.append(("early_embed_top_share", f"at epoch {epoch}: top eigenvalue share of\n"
                       "the item embeddings' covariance", (0.0, max(shares) * 1.15)))
    rng = np.random.default_rng(0)
    jitter = {id(r): rng.uniform(-0.25, 0.25) for r in rows}
    with style():
        fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels) + 1.2, 3.6), sharex=True, squeeze=False)
        for ax, (key, title, ylim) in zip(axes[0], panels):
            for r in rows:
                if r.get(key) is None:
                    continue
                x = (r["fit_epoch"] if r["fit_epoch"] is not None else edge) + jitter[id(r)]
                c = color[r["gamma"]]
                y = max(float(r[key]), floor) if key == "early_ratio" else float(r[key])
                ax.scatter(x, y, s=34, marker=marker[r["d_model"]], zorder=3,
                           color=c if r["fit_epoch"] is not None else "white", edgecolors=c, linewidths=1.1)
                if r.get("reference_parts"):
                    ax.scatter(x, y, s=110, marker="o", facecolors="none", edgecolors="black", linewidths=0.7,
                               zorder=2)
            if unfitted:
                ax.axvline(edge - 1, color="#999999", lw=0.6, ls=":")
            if key == "early_ratio":
                ax.set_yscale("log")
                ax.axhline(1, color="black", lw=0.7, alpha=0.6)
            ax.set_title(title, fontsize=9)
            ax.set_xlabel(f"first epoch with training loss < {loss_threshold:g}")
            ax.set_ylim(*ylim)
        axes[0][0].set_ylabel(f"fraction of {pair} inputs (last evaluation)")
        axes[0][0].xaxis.set_major_locator(MaxNLocator(integer=True))
        if unfitted:
            ticks = sorted({t for t in axes[0][0].get_xticks() if 0 <= t < edge - 1} | {edge})
            axes[0][0].set_xticks(ticks, [f"{t:g}" if t != edge else "not\nfitted" for t in ticks])
        handles = [Line2D([], [], ls="none", marker="o", color=color[g], label=f"γ {g:g}") for g in gammas]
        handles += [Line2D([], [], ls="none", marker=marker[w], color="#555555", label=f"d_model {w}") for w in widths]
        if any(r.get("reference_parts") for r in rows):
            handles.append(Line2D([], [], ls="none", marker="o", ms=10, markerfacecolor="none",
                                  markeredgecolor="black", label="draws from the\nauthors' file"))
        fig.legend(handles=handles, loc="center right", fontsize=8, frameon=False)
        fig.suptitle(f"P1: which answer a run gives against how long it stays on the loss plateau "
                     f"({len(rows)} runs)", fontsize=9.5)
        width = fig.get_size_inches()[0]
        fig.tight_layout(rect=(0, 0, 1 - 1.3 / width, 1))
    return fig


def plot_condensation(runs: Sequence[Sequence[dict[str, Any]]], pair: str = "(4,3)") -> Figure:
    """Three panels against epoch, a line per run: W_Q⁰'s stable rank (log), its neuron groups at cosine 0.7
    (log) and the item embeddings' top covariance share; two more where any run has them: the symmetric routing
    score ``flow_symmetric`` and the pair-order separation ``order_separation`` (log). Colour = γ (viridis,
    larger γ = smaller init = lighter), marker = seed, line style = the run's ``last_answer`` (inferential solid,
    symmetric dashed, neither dotted). Each run: its evaluations, ``{"gamma", "seed", "epoch",
    "wq0_stable_rank", "wq0_groups", "embed_top_share", "last_answer"}`` and optionally ``flow_symmetric``,
    ``order_separation`` (a scalar None where not logged)."""
    gammas = sorted({rows[0]["gamma"] for rows in runs})
    seeds = sorted({rows[0]["seed"] for rows in runs})
    cmap = plt.get_cmap("viridis")
    color = {g: cmap(0.1 + 0.75 * i / max(len(gammas) - 1, 1)) for i, g in enumerate(gammas)}
    marker = {s: SEED_MARKERS[i % len(SEED_MARKERS)] for i, s in enumerate(seeds)}
    line = {"inferential": "-", "symmetric": "--", "neither": ":"}
    panels = [("wq0_stable_rank", "first layer's W_Q: stable rank (1 = one direction)", True),
              ("wq0_groups", "first layer's W_Q: neuron groups (cosine ≥ 0.7)", True),
              ("embed_top_share", "item embeddings: top eigenvalue's share\nof the covariance's trace", False)]
    panels += [(key, title, log) for key, title, log in (
        ("flow_symmetric", f"routing on {pair}, mean over keys (Fig. 3):\nsymmetric score", False),
        ("order_separation", "(a,b) from (b,a) after block 1 (Fig. 3b),\nover other pairs' distance", True))
        if any(r.get(key) is not None for rows in runs for r in rows)]
    width = 5.2 * len(panels)
    with style():
        fig, axes = plt.subplots(1, len(panels), figsize=(width, 3.8), sharex=True)
        for ax, (key, title, log) in zip(axes, panels):
            for rows in runs:
                pts = [(r["epoch"], float(r[key])) for r in rows if r.get(key) is not None]
                if not pts:
                    continue
                r0 = rows[0]
                ax.plot(*zip(*pts), color=color[r0["gamma"]], ls=line[r0["last_answer"]], lw=1.2,
                        marker=marker[r0["seed"]], ms=3.2, markerfacecolor="white", markeredgewidth=0.7)
            if log:
                ax.set_yscale("log")
            ax.set_title(title, fontsize=9)
            ax.set_xlabel("epoch")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        handles = [Line2D([], [], color=color[g], lw=2, label=f"γ {g:g}") for g in gammas]
        handles += [Line2D([], [], color="#555555", ls="none", marker=marker[s], markerfacecolor="white",
                           label=f"seed {s}") for s in seeds]
        answers = [a for a in line if any(rows[0]["last_answer"] == a for rows in runs)]
        handles += [Line2D([], [], color="#555555", ls=line[a], label=f"ends {a} on {pair}") for a in answers]
        fig.legend(handles=handles, loc="center right", fontsize=8, frameon=False)
        fig.suptitle(f"P1: mechanism scalars over training ({len(runs)} runs)", fontsize=9.5)
        fig.tight_layout(rect=(0, 0, 1 - 1.6 / width, 1))
    return fig


def plot_key_answers(panels: Sequence[dict[str, Any]], pair: str = "(4,3)", inferential: str = "x−10",
                     symmetric: str = "x−6") -> Figure:
    """The held-out pair's answers key by key, one panel per run (stacked): per key x a bar of the shares
    answered inferentially (bottom), symmetrically (above) and otherwise (grey, top), so that which keys a run
    composes, and how many, can be read off. The most frequent other answer is written over each key where it
    takes at least a fifth of the inputs.

    Each panel: ``{"title": ..., "rows": key_answers(...) rows}``, optionally with its own ``pair``,
    ``inferential`` and ``symmetric`` (runs of other tasks); a panel whose legend differs from the one above
    gets a legend of its own. ``"field": "key_pos"`` (rows of ``answer_shares(..., "key_pos")``): a bar per key
    position instead of per key."""
    import numpy as np

    with style():  # 10 inches: P1's 80 keys, and the titles (a run's label and its answers) on one line
        fig, axes = plt.subplots(len(panels), 1, figsize=(10.0, 1.9 * len(panels) + 0.6), squeeze=False,
                                 sharex=True)
        shown = None
        for ax, panel in zip(axes[:, 0], panels):
            rows = panel["rows"]
            names = (panel.get("pair", pair), panel.get("inferential", inferential),
                     panel.get("symmetric", symmetric))
            pair_n, inf_name, sym_name = names
            field = panel.get("field", "key")
            x = np.array([r[field] for r in rows])
            inf = np.array([r["inferential"] for r in rows])
            sym = np.array([r["symmetric"] for r in rows])
            other = np.clip(1.0 - inf - sym, 0.0, 1.0)
            ax.bar(x, inf, width=0.85, color=COLORS["inferential"], label=f"inferential {pair_n} → {inf_name}")
            ax.bar(x, sym, width=0.85, bottom=inf, color=COLORS["symmetric"], label=f"symmetric {pair_n} → {sym_name}")
            ax.bar(x, other, width=0.85, bottom=inf + sym, color="#cccccc", label="another answer")
            for r in rows:
                if r["top_other_share"] >= 0.2:
                    ax.text(r[field], 1.02, r["top_other"], rotation=90, ha="center", va="bottom", fontsize=6)
            ax.set_ylim(0, 1.25)
            ax.set_yticks([0, 0.5, 1])
            ax.set_xlim(x.min() - 1, x.max() + 1)
            if field != "key":
                ax.set_xticks(x)
            ax.set_ylabel("share")
            ax.set_title(panel["title"], fontsize=8.5, loc="left")
            ax.grid(axis="x", visible=False)
            if names != shown:
                ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.18), ncol=3, fontsize=8)
                shown = names
        axes[-1, 0].set_xlabel("key x of the input" if panels[-1].get("field", "key") == "key" else
                               "position of the key (the anchors follow it; at the last one the second anchor "
                               "is the answering token)")
        fig.tight_layout()
    return fig


VERDICT_COLORS = {"yes": "#2ca02c", "no": "#d62728", "open": "#7f7f7f"}


def plot_frontier(points: Sequence[dict[str, Any]], threshold: float = 0.9) -> Figure:
    """P1's frontier, one row per point (top to bottom in the given order): left the small init's inferential
    and right the larger init's symmetric accuracy on the held-out pair, one marker per seed (hollow: an
    unfinished run, or a seed whose rates are not all run; on the left a grey tick at the seen pairs' test
    accuracy of that run), the bar ``threshold`` dashed, and at the right the point's verdict.

    Each point: ``{"factor", "config", "read", "verdict", "small": None or {"gamma", "rows": [{"seed",
    "value", "seen_test", "status"}, ...]}, "large": the same}``; a side with no rows is written "not run"."""
    n = len(points)
    seeds = sorted({r["seed"] for p in points for side in ("small", "large") if p.get(side)
                    for r in p[side]["rows"]})
    marker = {s: SEED_MARKERS[i % len(SEED_MARKERS)] for i, s in enumerate(seeds)}
    with style():
        fig, axes = plt.subplots(1, 2, figsize=(11.5, 0.42 * n + 1.5), sharey=True)
        for ax, side, answer in ((axes[0], "small", "inferential"), (axes[1], "large", "symmetric")):
            color = COLORS[answer]
            for i, p in enumerate(points):
                y = n - 1 - i
                spec = p.get(side)
                if spec is None:
                    continue
                if not spec["rows"]:
                    ax.text(0.02, y, f"γ {spec['gamma']:g}: not run", va="center", fontsize=7, color="#777777")
                    continue
                jitter = {s: (k - (len(seeds) - 1) / 2) * 0.12 for k, s in enumerate(seeds)}
                for r in spec["rows"]:
                    done = r["status"] == "done"
                    ax.scatter(float(r["value"]), y + jitter[r["seed"]], marker=marker[r["seed"]], s=26,
                               zorder=3, facecolors=color if done else "white", edgecolors=color, linewidths=1.0)
                    if side == "small" and r.get("seen_test") is not None:  # the verdict's other condition
                        ax.scatter(float(r["seen_test"]), y + jitter[r["seed"]], marker="|", s=40, zorder=2,
                                   color=COLORS["seen_test"], linewidths=1.0)
                ax.text(1.03, y, f"γ {spec['gamma']:g}", va="center", fontsize=7, color="#555555",
                        transform=ax.get_yaxis_transform())
            ax.axvline(threshold, color="black", lw=0.8, ls="--", alpha=0.7)
            ax.set_xlim(-0.03, 1.03)
            ax.set_xlabel(f"held-out pair (4,3): {answer} share per seed")
        axes[0].set_title("small init: inferential (x − 10)", fontsize=9)
        axes[1].set_title("larger init: symmetric (x − 6)", fontsize=9)
        labels = [textwrap.fill(f"{p['factor']}: {p['config']}" + (" [best over rates]" if p["read"].startswith("best")
                                                                    else ""), width=48) for p in points]
        axes[0].set_yticks(range(n - 1, -1, -1), labels, fontsize=7)
        axes[0].set_ylim(-0.6, n - 0.4)
        for i, p in enumerate(points):
            axes[1].text(1.13, n - 1 - i, p["verdict"], va="center", fontsize=8, fontweight="bold",
                         color=VERDICT_COLORS.get(p["verdict"], "black"), transform=axes[1].get_yaxis_transform())
        handles = [Line2D([], [], ls="none", marker=marker[s], color="#555555", label=f"seed {s}") for s in seeds]
        handles.append(Line2D([], [], ls="none", marker="o", markerfacecolor="white", markeredgecolor="#555555",
                              label="unfinished run\n(or rates still to run)"))
        handles.append(Line2D([], [], ls="none", marker="|", markersize=8, color=COLORS["seen_test"],
                              label="seen pairs' test accuracy\n(of the small init's run)"))
        handles.append(Line2D([], [], color="black", lw=0.8, ls="--", label=f"bar {threshold:g}"))
        fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8)
        fig.suptitle("P1's two sides on 3/3 seeds, point by point (verdict at the right: both sides at the bar?)",
                     fontsize=10)
        fig.tight_layout(rect=(0, 0.06, 0.93, 0.97))
    return fig
