"""P1 over training, from what runs log (``metrics.jsonl``, ``epochs.jsonl``): the held-out pair per epoch
(``p1-curves``), the outcome against fit speed (``p1-fit-speed``) and the logged mechanism scalars
(``p1-condensation``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anchorlab import rundir
from anchorlab.config import ConfigError
from anchorlab.figures import figure, model_label, save_figure
from anchorlab.figures.logged import (
    KEYS_NAMES,
    PROBE_KEYS,
    common_answers,
    composite_config,
    probe_columns,
    probe_suffix,
    std_W_Q,
    varied_of,
    varied_parts,
)
from anchorlab.plotting.figures import plot_probe_curves, plot_probe_grid

# p1-curves: the headline keys (pooled over both key types of the held-out pair, as p1-gamma and the demo), and
# the train-type-key values that docs/p1_paper_vs_reference.md compares with the authors' log (CSV only)
CURVE_KEYS = {"inferential": "unseen_inferential_acc", "symmetric": "unseen_symmetric_acc",
              "seen_test": "seen_test_acc"}


CURVE_EXTRA_KEYS = {"inferential_xel": "unseen_inferential_acc_xel", "symmetric_xel": "unseen_symmetric_acc_xel"}


def _curve_keys(keys: str) -> dict[str, str]:
    """:data:`CURVE_KEYS` with the held-out pair read on the inputs ``keys`` selects (:data:`PROBE_KEYS`)."""
    sfx = PROBE_KEYS[keys]
    return {k: f"{key}{sfx}" if key.startswith("unseen_") else key for k, key in CURVE_KEYS.items()}


def curve_rows(run_dirs: list[Path]) -> list[dict[str, Any]]:
    """One row per evaluation (``metrics.jsonl``) of each composite-task run of ``run_dirs``: run, model, width,
    γ, std of W_Q, precision, seed, ``status`` (done / unfinished), ``cooldown_from`` (the epoch a
    ``train.cooldown_epochs`` cooldown starts; None without one), epoch, step, and the accuracies of
    ``CURVE_KEYS`` (plus ``CURVE_EXTRA_KEYS`` where logged). Runs ordered by model, width, γ, precision, seed;
    other runs (other tasks, no config) are left out."""
    return [r for rows in _curve_runs(run_dirs) for r in rows]


def _curve_runs(run_dirs: list[Path], extra: dict[str, str] | None = None,
                keys: str = "both", losses: bool = False) -> list[list[dict[str, Any]]]:
    """:func:`curve_rows` per run (runs with no evaluation left out), so two runs of one name stay apart; each
    row also carries ``extra`` (column → logged key; None where not logged) and, as ``varied``, the config
    fields in which the runs differ beyond what the figure names (:func:`varied_of`; also one column each).
    ``keys``: which inputs of the held-out pair the ``inferential`` and ``symmetric`` columns read
    (:data:`PROBE_KEYS`). ``losses``: every row also carries ``train_loss``, the mean training loss of its epoch
    (``epochs.jsonl``; None at epoch 0), and each trained epoch without an evaluation gets a row of its own
    (accuracies None), in epoch order."""
    curve_keys = _curve_keys(keys)
    found = [(d, cfg) for d in run_dirs if (cfg := composite_config(d)) is not None]
    runs = []
    # a panel names γ and the width (and the precision), a line its seed and cooldown
    named = ("init.gamma", "model.d_model", "train.precision", "seeds.", "train.cooldown_epochs")
    for (d, cfg), varied in zip(found, varied_of([cfg for _, cfg in found], named), strict=True):
        m = cfg.model
        head = {"run_id": d.name, "model": model_label(cfg), "d_model": m.d_model, "gamma": cfg.init.gamma,
                "std_W_Q": std_W_Q(cfg), "precision": cfg.train.precision, "seed": cfg.seeds.init_seed,
                "status": "done" if rundir.is_done(d) else "unfinished", **probe_columns(cfg), "keys": keys,
                "cooldown_from": (cfg.train.epochs - cfg.train.cooldown_epochs) if cfg.train.cooldown_epochs else None,
                "varied": ", ".join(varied_parts(varied)), "trained_on": rundir.trained_on(d), **varied}
        rows = [{**head, "epoch": r["epoch"], "step": r["step"],
                 **{k: r.get(key) for k, key in curve_keys.items()},
                 **{k: r[key] for k, key in CURVE_EXTRA_KEYS.items() if key in r},
                 **{k: r.get(key) for k, key in (extra or {}).items()}}
                for r in rundir.read_metrics(d) if curve_keys["inferential"] in r]
        if losses and rows:
            rows = _with_epoch_losses(rows, head, rundir.read_metrics(d, rundir.EPOCHS))
        if rows:
            cooled = (head["cooldown_from"] is not None, head["cooldown_from"] or 0)  # a branch after its source
            runs.append(((head["model"], head["d_model"], head["gamma"], head["precision"], head["seed"], cooled,
                          [repr(v) for v in varied.values()], str(d)), rows))
    return [rows for _, rows in sorted(runs, key=lambda kv: kv[0])]


def _with_epoch_losses(rows: list[dict[str, Any]], head: dict[str, Any],
                       epochs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` (one run's evaluations, each starting with ``head``) with each epoch's training loss (``epochs``:
    its ``epochs.jsonl``) as ``train_loss``, plus a row per trained epoch without an evaluation (``head``, the
    epoch, its step and loss; every other column None), in epoch order."""
    loss = {e["epoch"]: e for e in epochs}
    evaluated = {r["epoch"] for r in rows}
    out = [{**r, "train_loss": loss[r["epoch"]]["train_loss"] if r["epoch"] in loss else None} for r in rows]
    out += [{**dict.fromkeys(rows[0]), **head, "epoch": e, "step": loss[e]["step"], "train_loss": loss[e]["train_loss"]}
            for e in sorted(loss) if e not in evaluated]
    return sorted(out, key=lambda r: r["epoch"])


@figure("p1-curves", "runs", "P1 both sides over training: held-out-pair inferential (solid) and symmetric (dashed) "
        "accuracy and seen test accuracy per epoch, a panel per γ, a line per seed")
def p1_curves(run_dirs: list[Path], out: str | Path, threshold: float = 0.9, keys: str = "both",
              loss: bool = False, panels: str = "group") -> Path:
    """Per run, from its ``metrics.jsonl`` only (unfinished runs up to their last evaluation): the held-out
    pair's inferential and symmetric accuracy, pooled over train- and test-type keys (``unseen_inferential_acc``
    / ``unseen_symmetric_acc``, the headline keys of p1-gamma and the demo's checks), and the seen pairs'
    test-key accuracy (``seen_test_acc``) against epoch. One panel per (model, d_model, γ; and precision where
    the runs mix fp32 and bf16), one marker per seed (a cooled-down run is its own; runs that differ in another
    config field, such as the weight decay, are labelled with it and carry it as a CSV column; runs of one config
    that trained in different places, on the CPU or a GPU in another batched group, with where, the CSV's
    ``trained_on``: :func:`anchorlab.rundir.trained_on`), a line at ``threshold``
    (the demo's 0.9 bar). The CSV (one row per evaluation, :func:`curve_rows`) also carries the train-type-key
    values (``_xel``) that the paper-config replay tables (docs/p1_paper_vs_reference.md) compare with the
    authors' log; ``keys`` = "train" or "test" draws one key type instead of the pooled values.

    ``loss``: a second row of panels with each run's training loss per epoch (``epochs.jsonl``, log scale), so
    a loss spike after the fit can be set against the accuracies above it; the CSV then has a ``train_loss``
    column and a row for every trained epoch (those without an evaluation have empty accuracies).

    ``panels`` = "run": one small panel per run instead (titled with its γ, model and label), in a grid of
    four a row, with its training loss on the panel's right axis when ``loss``: for many trajectories of one
    config, whose lines overlap in one panel."""
    probe_suffix("p1-curves", keys)
    if panels not in ("group", "run"):
        raise ConfigError(f"figure p1-curves: option panels: one of group (a panel per γ, the default) or run "
                          f"(a panel per run), got {panels!r}")
    runs = _curve_runs([Path(d) for d in run_dirs], keys=keys, losses=loss)
    if not runs:
        raise ConfigError("figure p1-curves: needs composite-task (P1) runs with at least one evaluation")
    mixed_precision = len({rows[0]["precision"] for rows in runs}) > 1  # then fp32 and bf16 get their own panels
    curves = []
    groups, labels = [], []
    for rows in runs:
        r = rows[0]
        std = f" (std W_Q {r['std_W_Q']:.3g})" if r["std_W_Q"] is not None else ""
        groups.append(f"γ {r['gamma']:g}{std}\n{r['model']}, d_model {r['d_model']}"
                      + (f", {r['precision']}" if mixed_precision else ""))
        labels.append(f"seed {r['seed']}" + (f", {r['varied']}" if r["varied"] else "")
                      + ("" if r["cooldown_from"] is None else f", cooled from epoch {r['cooldown_from']:g}"))
    # runs of one config that trained in different places (a CPU run, GPU runs in other groups) are different
    # trajectories: their labels say where; two of one place are told apart by their directory's name
    labels = _told_apart(groups, labels, [rows[0]["trained_on"] for rows in runs],
                         [rows[0]["run_id"] for rows in runs])
    for rows, group, label in zip(runs, groups, labels, strict=True):
        curves.append({"group": group, "label": label,
                       **_series(rows, CURVE_KEYS),
                       **({"loss_epoch": [e["epoch"] for e in rows if e["train_loss"] is not None],
                           "loss": [float(e["train_loss"]) for e in rows if e["train_loss"] is not None]}
                          if loss else {})})
    pairs = " / ".join(sorted({rows[0]["pair"] for rows in runs}))
    plot = plot_probe_grid if panels == "run" else plot_probe_curves
    fig = plot(curves, pair=pairs, answers=common_answers([rows[0] for rows in runs]), threshold=threshold,
               title=f"P1: held-out pair {pairs} during training ({KEYS_NAMES[keys]})")
    return save_figure(fig, [r for rows in runs for r in rows], Path(out), "p1-curves")


def _told_apart(panels: list[str], labels: list[str], *more: list[str]) -> list[str]:
    """``labels`` (of runs drawn in ``panels``) where a label repeats within a panel, with the next of ``more``
    (lists aligned with ``labels``) appended, until the runs are told apart: e.g. "seed 1" twice in one panel
    becomes "seed 1, CPU" and "seed 1, H200"."""
    out = list(labels)
    for extra in more:
        keys = list(zip(panels, out))
        out = [f"{lab}, {x}" if keys.count(key) > 1 and x else lab
               for key, lab, x in zip(keys, out, extra, strict=True)]
    return out


def _series(rows: list[dict[str, Any]], keys: dict[str, str]) -> dict[str, list[float]]:
    """``epoch`` and each of ``keys`` over the rows that hold an evaluation (a missing value: NaN)."""
    evals = [e for e in rows if any(e[k] is not None for k in keys)]
    return {"epoch": [e["epoch"] for e in evals],
            **{k: [float("nan") if e[k] is None else float(e[k]) for e in evals] for k in keys}}


# The weight-only mechanism scalars training logs at every evaluation (anchorlab.analysis.summary): column -> key
MECHANISM_KEYS = {"wq0_groups": "wq0_n_groups", "wq0_stable_rank": "stable_rank/blocks.0.attn.W_Q",
                  "embed_top_share": "embed_cov_top_share"}


# The readouts a 2-layer composite GPT's evaluations log since 2026-11-28 (anchorlab.analysis.summary.LOGGED_READOUTS):
# P1 Fig. 3's symmetric routing score over the held-out pair's keys and Fig. 3b's pair-order separation
READOUT_KEYS = {"flow_symmetric": "flow_symmetric", "order_separation": "order_separation"}


# The same, read at the early epoch of p1-fit-speed
EARLY_MECHANISM_KEYS = {f"early_{column}": key for column, key in MECHANISM_KEYS.items()}


def fit_speed_rows(run_dirs: list[Path], loss_threshold: float = 1.0, early_epoch: int = 6,
                   keys: str = "both") -> list[dict[str, Any]]:
    """One row per composite-task run with logged epochs and at least one evaluation: its identity (model,
    d_model, γ, std of W_Q, peak-LR multiplier, precision, seed, which draws came from a reference file), the
    first epoch whose mean training loss (``epochs.jsonl``) fell below ``loss_threshold`` (``fit_epoch``; None
    if none did by ``last_trained_epoch``; an unfinished run that has not fitted yet is left out), and the
    held-out pair's accuracies at the last evaluation (and the best inferential one over all evaluations).
    The early readout: the inferential accuracy and the seen pairs' test accuracy at the evaluation of epoch
    ``early_epoch`` and ``early_ratio``, the first over the second (None where that epoch was not evaluated),
    with the mechanism scalars logged then (:data:`EARLY_MECHANISM_KEYS`: W_Q⁰ neuron groups at cosine 0.7 and
    stable rank, P1 Fig. 5 and 13; top eigenvalue share of the item embeddings' covariance; None where not logged).
    The question it serves: does how long a run stays on the loss plateau before fitting predict which
    answer it gives, and can an early evaluation tell (docs/p1_fit_speed.md)? ``keys``: which inputs of the
    held-out pair (:data:`PROBE_KEYS`)."""
    rows = []
    for rows_of_run, d in ((r, Path(d)) for d in run_dirs
                           if (r := _curve_runs([Path(d)], EARLY_MECHANISM_KEYS, keys))):
        evals, cfg = rows_of_run[0], rundir.read_config(d)
        epochs = rundir.read_metrics(d, rundir.EPOCHS)
        if not epochs:
            continue
        last, fit_epoch = evals[-1], next((e["epoch"] for e in epochs if e["train_loss"] < loss_threshold), None)
        if fit_epoch is None and last["status"] != "done":
            continue  # still on the plateau and still training: nothing to place yet
        parts = sorted(cfg.task.reference_parts) if getattr(cfg.task, "reference", "") else []
        early = next((e for e in evals if e["epoch"] == early_epoch), None)
        early_inf = None if early is None or early["inferential"] is None else float(early["inferential"])
        early_seen = None if early is None or early["seen_test"] is None else float(early["seen_test"])
        rows.append({"run_id": d.name, "model": last["model"], "d_model": last["d_model"], "gamma": last["gamma"],
                     "std_W_Q": last["std_W_Q"], "lr_multiplier": cfg.train.lr_multiplier,
                     "precision": last["precision"], "seed": last["seed"],
                     "reference_parts": "+".join(parts), "pair": last["pair"],
                     "inferential_answer": last["inferential_answer"], "symmetric_answer": last["symmetric_answer"],
                     "keys": keys, "status": last["status"],
                     "fit_epoch": fit_epoch,
                     "last_trained_epoch": epochs[-1]["epoch"], "last_epoch": last["epoch"],
                     "inferential": last["inferential"], "symmetric": last["symmetric"],
                     "seen_test": last["seen_test"],
                     "best_inferential": max(float(e["inferential"]) for e in evals if e["inferential"] is not None),
                     "early_epoch": early_epoch, "early_inferential": early_inf, "early_seen_test": early_seen,
                     "early_ratio": None if early_inf is None or not early_seen else early_inf / early_seen,
                     **{k: None if early is None else early[k] for k in EARLY_MECHANISM_KEYS}})
    return rows


@figure("p1-fit-speed", "runs", "P1 outcome against fit speed: the held-out pair's inferential and symmetric "
        "accuracy per run against the first epoch whose training loss fell below a threshold")
def p1_fit_speed(run_dirs: list[Path], out: str | Path, loss_threshold: float = 1.0, early_epoch: int = 6,
                 keys: str = "both") -> Path:
    """Per composite-task run (:func:`fit_speed_rows`): x = the first epoch whose mean training loss fell below
    ``loss_threshold`` (runs that had not, at the right edge, hollow), y = the held-out pair's inferential
    (first panel) and symmetric (second) accuracy at the run's last evaluation, and, where evaluated, the early
    ratio (third: inferential over seen-pair test accuracy at epoch ``early_epoch``) and the item embeddings'
    top covariance share then (fourth, where logged); colour = γ, marker = d_model, runs trained on a reference
    file's draws ringed. Reads only ``epochs.jsonl`` and ``metrics.jsonl``."""
    from anchorlab.plotting.figures import plot_fit_speed

    if not isinstance(loss_threshold, (int, float)) or isinstance(loss_threshold, bool) or not loss_threshold > 0:
        raise ConfigError(f"figure p1-fit-speed: option loss_threshold: a number > 0, got {loss_threshold!r}")
    if not isinstance(early_epoch, int) or isinstance(early_epoch, bool) or early_epoch < 1:
        raise ConfigError(f"figure p1-fit-speed: option early_epoch: an integer >= 1, got {early_epoch!r}")
    probe_suffix("p1-fit-speed", keys)
    rows = fit_speed_rows([Path(d) for d in run_dirs], loss_threshold, early_epoch, keys)
    if not rows:
        raise ConfigError("figure p1-fit-speed: needs composite-task (P1) runs with logged epochs and an evaluation")
    pairs = " / ".join(sorted({r["pair"] for r in rows})) + ("" if keys == "both" else f", {KEYS_NAMES[keys]}")
    return save_figure(plot_fit_speed(rows, loss_threshold, pair=pairs, answers=common_answers(rows)), rows,
                       Path(out), "p1-fit-speed")


@figure("p1-condensation", "runs", "P1 mechanisms over training from the logged scalars: W_Q⁰ stable rank and "
        "neuron groups, and the item embeddings' top covariance share per epoch, a line per run coloured by γ")
def p1_condensation(run_dirs: list[Path], out: str | Path) -> Path:
    """Per composite-task run, from its ``metrics.jsonl`` only: the mechanism scalars logged at each evaluation
    (:data:`MECHANISM_KEYS`) against epoch. First layer's W_Q: stable rank (|W|_F² / |W|_2², 1 = one direction)
    and the number of neuron groups at cosine 0.7 (P1 Fig. 5a/10: small init condenses W_Q's neurons onto few
    directions); the top eigenvalue's share of the trace of the item embeddings' covariance (P1 Fig. 12: its
    leading eigenvalue grows first at small init). Colour = γ, marker = seed, line style = the run's answer on
    the held-out pair at its last evaluation (inferential or symmetric where that accuracy is >= 0.5 and above
    the other, else neither). Where runs logged them (:data:`READOUT_KEYS`, 2-layer runs trained since
    2026-11-28), two more panels: the symmetric routing score over the held-out pair's keys (Fig. 3) and the
    separation of (a,b) from (b,a) after the first block (Fig. 3b). Runs that logged none of the scalars are
    left out (trained before they were logged, or by a trainer that did not log them)."""
    from anchorlab.plotting.figures import plot_condensation

    runs = [rows for rows in _curve_runs([Path(d) for d in run_dirs], {**MECHANISM_KEYS, **READOUT_KEYS})
            if any(r[k] is not None for r in rows for k in MECHANISM_KEYS)]
    if not runs:
        raise ConfigError("figure p1-condensation: needs composite-task (P1) runs whose evaluations logged the "
                          "mechanism scalars (wq0_n_groups, stable_rank/blocks.0.attn.W_Q, embed_cov_top_share)")
    for rows in runs:
        inf, sym = (float(rows[-1][k] or 0.0) for k in ("inferential", "symmetric"))
        answer = "inferential" if inf >= 0.5 and inf > sym else "symmetric" if sym >= 0.5 and sym > inf else "neither"
        for r in rows:
            r["last_answer"] = answer
    pairs = " / ".join(sorted({rows[0]["pair"] for rows in runs}))
    return save_figure(plot_condensation(runs, pair=pairs), [r for rows in runs for r in rows], Path(out),
                       "p1-condensation")
