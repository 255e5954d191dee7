"""P1 figures from what runs log (summaries, metrics), no checkpoints: phase diagrams over a sweep directory
(Fig. 2, 14), the γ comparison (``p1-gamma``) and its mean ± std over seeds (Fig. 2c, ``p1-fig2c``), the held-out
pair over training (``p1-curves``), the outcome against fit speed (``p1-fit-speed``) and the logged mechanism
scalars over training (``p1-condensation``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from anchorlab import rundir
from anchorlab.config import CompositeTaskConfig, ConfigError, RunConfig
from anchorlab.config_tools import varied_fields
from anchorlab.figures import figure, model_label, save_figure
from anchorlab.phase import SEED_AXES, mean_std, phase_grid
from anchorlab.plotting.figures import plot_gamma_comparison, plot_phase_diagrams, plot_probe_curves, plot_probe_grid
from anchorlab.sweep import MANIFEST, collect

FIG2_AXES = ("init.gamma", "model.n_layers")
# Which inputs of the held-out pair a figure reads (option ``keys``): both key types pooled (our headline, the
# default), or one type. The authors' logs and figure code read the train-type keys (group 43_xel); P1 App. C
# names both ("pairs of unseen anchors with test data or training data"). Every evaluation logs all three.
PROBE_KEYS = {"both": "", "train": "_xel", "test": "_xm0"}
KEYS_NAMES = {"both": "pooled over key types", "train": "train-type keys", "test": "test-type keys"}


def probe_suffix(figure_name: str, keys: str) -> str:
    """The metric-name suffix of option ``keys`` (:data:`PROBE_KEYS`); a bad value is one line naming it."""
    if keys not in PROBE_KEYS:
        raise ConfigError(f"figure {figure_name}: option keys: one of both (pooled, the default), train (the "
                          f"authors' 43_xel) or test (43_xm0), got {keys!r}")
    return PROBE_KEYS[keys]


def _with_best(rows: list[dict[str, Any]], sweep_dir: Path, metrics: tuple[str, ...]) -> list[dict[str, Any]]:
    """``rows`` (of :func:`~anchorlab.sweep.collect`) with ``best_<metric>`` for each of ``metrics``: from the
    summary where it records it (the headline metrics, and the per-key-type accuracies of runs made since
    :data:`anchorlab.metrics.BEST_ALSO`), else the highest value over the run's ``metrics.jsonl``."""
    for r in rows:
        missing = tuple(m for m in metrics if f"best_{m}" not in r)
        if missing and r.get("status") == "done":
            r.update({f"best_{m}": v for m, v in _best_logged(sweep_dir / r["run_id"], missing).items()})
    return rows


def _best_logged(run_dir: Path, metrics: tuple[str, ...]) -> dict[str, float]:
    """The highest value of each of ``metrics`` over the run's ``metrics.jsonl`` (those it never logged left out)."""
    history = rundir.read_metrics(run_dir)
    return {m: max(values) for m in metrics if (values := [h[m] for h in history if h.get(m) is not None])}


@figure("p1-fig2", "sweep", "P1 Fig. 2a/b: symmetric and inferential accuracy on (4,3) over γ × depth "
        "(a sweep over one of them, or over one other axis: accuracy along it)")
def p1_fig2(sweep_dir: str | Path, out: str | Path, use_best_epoch: bool = False, keys: str = "both") -> Path:
    """P1 Fig. 2a/2b: symmetric and inferential accuracy on the held-out pair over γ × depth. A sweep with
    only one of those axes (or, with neither, exactly one other non-seed axis) gets the 1-D version:
    accuracy along that axis, one dot per seed (best over any other axis), a bar at the mean. ``keys``: the
    held-out pair's inputs read (:data:`PROBE_KEYS`; "train" is what the authors' figure code reads)."""
    sfx = probe_suffix("p1-fig2", keys)
    metrics = (f"unseen_symmetric_acc{sfx}", f"unseen_inferential_acc{sfx}")
    rows = collect(sweep_dir)
    if use_best_epoch:
        rows = _with_best(rows, Path(sweep_dir), (*metrics, "seen_test_acc"))
    axes = rundir.read_json(Path(sweep_dir) / MANIFEST).get("axes", {})
    present = [a for a in FIG2_AXES if a in axes]
    others = [a for a in axes if a not in SEED_AXES and a not in FIG2_AXES]
    if len(present) < 2:
        line = present or others
        if len(line) != 1:
            raise ConfigError(f"figure p1-fig2: needs a sweep over init.gamma and model.n_layers (2-D) or over one "
                              f"axis (1-D); {sweep_dir} has axes {', '.join(axes) or 'none'}")
        return _fig2_line(rows, line[0], Path(out), use_best_epoch, keys)
    g = phase_grid(rows, x="init.gamma", y="model.n_layers", metrics=metrics, use_best_epoch=use_best_epoch)
    tag = "" if keys == "both" else f", {KEYS_NAMES[keys]}"
    fig = plot_phase_diagrams(g["xs"], g["ys"], {f"symmetric (4,3) → x−6{tag}": g[metrics[0]],
                                                 f"inferential (4,3) → x−10{tag}": g[metrics[1]]}, g["mask"])
    return _save_grid(fig, g, metrics, Path(out), "p1-fig2", lambda xv, yv: {"gamma": xv, "n_layers": yv})


def _composite_config(run_dir: Path) -> RunConfig | None:
    """The config of a composite-task (P1) run directory; None for another kind of run or no run at all."""
    if not (run_dir / rundir.CONFIG).is_file() or "data" in (raw := rundir.read_json(run_dir / rundir.CONFIG)) \
            or "seq2seq" in raw or raw.get("task", {}).get("name", "composite") != "composite":
        return None
    return rundir.read_config(run_dir)


def _probe_pair(cfg: RunConfig) -> str:
    """The held-out pair a composite-task run is probed on, as "(4,3)"."""
    task = cfg.task
    assert isinstance(task, CompositeTaskConfig)  # _composite_config lets only composite-task runs through
    return "({},{})".format(*task.probe_pair)


def _std_W_Q(cfg: RunConfig) -> float | None:
    """The init std of a Transformer's W_Q (None for the Emb-MLP), as a finished run's summary records it."""
    from anchorlab.init import init_std

    m = cfg.model
    return init_std("attn_in", (m.n_heads, m.d_model, m.d_head), cfg.init) if m.name == "gpt" else None


def _varied(cfgs: list[RunConfig], named: tuple[str, ...] = ("init.gamma", "seeds.")) -> list[dict[str, Any]]:
    """Per config, the dotted fields in which ``cfgs`` differ beyond those the figure ``named`` already
    (:func:`~anchorlab.config_tools.varied_fields`): what tells two runs of one γ and seed apart."""
    return varied_fields([c.to_dict() for c in cfgs], named)


def _varied_parts(varied: dict[str, Any]) -> list[str]:
    """["weight_decay 0.3"] for {"train.weight_decay": 0.3}: the last part of each name, a number as %g."""
    return [f"{k.rsplit('.', 1)[-1]} {v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool)
            else f"{k.rsplit('.', 1)[-1]} {v}" for k, v in varied.items()]


def gamma_rows(run_dirs: list[Path], keys: str = "both", use_best_epoch: bool = False,
               epoch: int | None = None) -> list[dict[str, Any]]:
    """One row per composite-task run of ``run_dirs`` that has an evaluation: model, γ, seed, std of W_Q and
    the held-out pair's inferential / symmetric accuracy on the inputs ``keys`` selects (:data:`PROBE_KEYS`)
    and the seen pairs' test accuracy (final; the last evaluation of an unfinished run, marked ``status``; with
    ``use_best_epoch`` each the highest over the run's evaluations, separately, as the authors' plotting code
    took them; with ``epoch`` the evaluation after that epoch, final once the run has made it, :func:`_at_epoch`),
    and, as ``varied`` and a column each, the config fields in which the runs differ beyond γ and the seed
    (:func:`_varied`). Other runs (other tasks, not started) are left out."""
    if use_best_epoch and epoch is not None:
        raise ConfigError("best epoch or one epoch: give --best-epoch or epoch, not both")
    sfx = PROBE_KEYS[keys]
    rows = []
    found = [(d, cfg) for d in run_dirs if (cfg := _composite_config(d)) is not None]
    for (d, cfg), varied in zip(found, _varied([cfg for _, cfg in found]), strict=True):
        done = (d / rundir.SUMMARY).is_file()
        if epoch is not None:
            last, done = _at_epoch(d, epoch, done)
        else:
            last = rundir.read_json(d / rundir.SUMMARY) if done else (rundir.read_metrics(d) or [{}])[-1]
        if f"unseen_inferential_acc{sfx}" not in last:
            continue
        if use_best_epoch:
            last = {**last, **_best_logged(d, (f"unseen_inferential_acc{sfx}", f"unseen_symmetric_acc{sfx}",
                                               "seen_test_acc"))}
        rows.append({"run_id": d.name, "model": model_label(cfg), "gamma": cfg.init.gamma,
                     "seed": cfg.seeds.init_seed, "std": last.get("std_W_Q", _std_W_Q(cfg)),
                     "inferential": last[f"unseen_inferential_acc{sfx}"],
                     "symmetric": last[f"unseen_symmetric_acc{sfx}"],
                     "seen_test": last.get("seen_test_acc"), "status": "done" if done else "unfinished",
                     "pair": _probe_pair(cfg), "keys": keys,
                     "evaluation": "best" if use_best_epoch else "last" if epoch is None else f"epoch {epoch}",
                     "varied": ", ".join(_varied_parts(varied)), **varied})
    return sorted(rows, key=lambda r: (r["model"], r["varied"], r["gamma"], r["seed"]))


def _at_epoch(run_dir: Path, epoch: int, done: bool) -> tuple[dict[str, Any], bool]:
    """(the run's evaluation after ``epoch``, True), or, for a run still short of it, (its last evaluation, False:
    unfinished for this reading); a run that went past ``epoch`` (or ended before it) without evaluating there is
    one line naming the epochs it did evaluate."""
    evals = rundir.read_metrics(run_dir)
    at = next((r for r in evals if r.get("epoch") == epoch), None)
    if at is not None:
        return at, True
    if evals and not done and evals[-1].get("epoch", 0) < epoch:
        return evals[-1], False
    have = [r.get("epoch") for r in evals]
    raise ConfigError(f"epoch {epoch}: run {run_dir} has no evaluation after epoch {epoch} (it evaluated after "
                      f"epochs {', '.join(map(str, have[:6]))}{', ...' if len(have) > 6 else ''}"
                      f"{f', {have[-1]}' if len(have) > 6 else ''})")


def best_per_seed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """P1's statistic (arXiv 2405.05409 §4: "for each seed ... the highest accuracy over" the learning rates):
    one row per (model, pair, γ, seed) of ``gamma_rows``, each accuracy the highest over that cell's runs (taken
    separately, as P1 does for the two mappings), with ``n_runs``, the run that gave each best, where it sits
    (``best_inferential_at`` / ``_symmetric_at``: its ``varied`` config fields, e.g. "lr_multiplier 17.5") and
    that run's own seen-pair test accuracy (``seen_test_best_inferential`` / ``_symmetric``: does the best run
    also generalise on the seen pairs, P1's 0.9 shading, rather than another of the seed's runs)."""
    cells: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        cells.setdefault((r["model"], r["pair"], r["gamma"], r["seed"]), []).append(r)
    out = []
    for (model, pair, gamma, seed), group in sorted(cells.items()):
        best = {k: max(group, key=lambda r: float(r[k] if r[k] is not None else -1.0))
                for k in ("inferential", "symmetric", "seen_test")}
        out.append({"model": model, "gamma": gamma, "seed": seed, "std": group[0]["std"],
                    **{k: best[k][k] for k in best}, "n_runs": len(group),
                    "status": "done" if all(r["status"] == "done" for r in group) else "unfinished", "pair": pair,
                    "keys": group[0].get("keys", "both"), "evaluation": group[0].get("evaluation", "last"),
                    "best_inferential_run": best["inferential"]["run_id"],
                    "best_symmetric_run": best["symmetric"]["run_id"],
                    "seen_test_best_inferential": best["inferential"]["seen_test"],
                    "seen_test_best_symmetric": best["symmetric"]["seen_test"],
                    "best_inferential_at": best["inferential"].get("varied", ""),
                    "best_symmetric_at": best["symmetric"].get("varied", "")})
    return out


@figure("p1-gamma", "runs", "P1 γ comparison: inferential and symmetric accuracy on the held-out pair per γ, "
        "one dot per seed")
def p1_gamma(run_dirs: list[Path], out: str | Path, best_of_seed: bool = False, keys: str = "both",
             use_best_epoch: bool = False, epoch: int = -1) -> Path:
    """The demo's one picture: per γ (and model) the fraction of held-out-pair inputs answered inferentially
    and symmetrically at the end of training, one dot per seed, a bar at the mean (``gamma_rows``). With
    ``best_of_seed``, runs of one seed (other learning rates, say) make one dot: P1's best over them
    (:func:`best_per_seed`); without it, each run is a dot. ``keys``: which inputs of the held-out pair
    (:data:`PROBE_KEYS`); ``use_best_epoch`` (``--best-epoch``): each run's best evaluation instead of its last.
    ``best_of_seed`` with ``keys=train`` and ``--best-epoch`` is the authors' reading of P1 Fig. 2: best over
    rates and epochs on 43_xel. Without ``best_of_seed``, runs that differ in another config field (weight
    decay, rate, …) are bars of their own, labelled with it. ``epoch`` (``--option epoch=N``; -1, the default:
    the last evaluation): each run read after epoch N, e.g. a 210-epoch run where P1's protocol was read (27)."""
    rows, pairs = _gamma_figure_rows("p1-gamma", run_dirs, keys, use_best_epoch, epoch)
    if best_of_seed:
        rows = best_per_seed(rows)
        when = ", best epoch" if use_best_epoch else f", after epoch {epoch}" if epoch >= 0 else ""
        fig = plot_gamma_comparison(rows, pair=pairs, dots="seed (best of its runs)",
                                    title=f"P1: held-out pair {pairs} per γ, best over each seed's runs{when} "
                                          f"(P1 §4; bars: mean over seeds)")
    else:
        title = (f"P1: held-out pair {pairs} per γ, best evaluation of each run" if use_best_epoch else
                 f"P1: held-out pair {pairs} per γ, each run after epoch {epoch}" if epoch >= 0 else "")
        fig = plot_gamma_comparison(_shown(rows), pair=pairs, title=title)
    return save_figure(fig, rows, Path(out), "p1-gamma")


def _gamma_figure_rows(name: str, run_dirs: list[Path], keys: str, use_best_epoch: bool,
                       epoch: int) -> tuple[list[dict[str, Any]], str]:
    """:func:`gamma_rows` of the runs for figure ``name`` (``epoch`` -1: the last evaluation) and the held-out
    pair(s) they are read on, as titles name them; a bad option or no run to draw is one line naming it."""
    probe_suffix(name, keys)
    if epoch < -1:
        raise ConfigError(f"figure {name}: option epoch: an epoch >= 0, or -1 for the last evaluation (got {epoch})")
    rows = gamma_rows([Path(d) for d in run_dirs], keys, use_best_epoch, None if epoch == -1 else epoch)
    if not rows:
        raise ConfigError(f"figure {name}: needs composite-task (P1) runs with at least one evaluation"
                          + ("" if keys == "both" else f" that logs the held-out pair per key type (keys={keys})"))
    pairs = " / ".join(sorted({r["pair"] for r in rows}))
    return rows, pairs + ("" if keys == "both" else f", {KEYS_NAMES[keys]}")


def _shown(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` of :func:`gamma_rows` with the config fields in which runs differ beyond γ and the seed (weight
    decay, say) added to the model label, below it: such runs get bars of their own, named below γ."""
    varied_keys = [k for k in rows[0] if "." in k]  # the config fields of gamma_rows' varied columns
    return [{**r, "model": "\n".join([r["model"], *_varied_parts({k: r[k] for k in varied_keys})])} for r in rows]


def _architecture(cfg: RunConfig) -> str:
    """A Transformer's block as Fig. 2c's title names it: "4 heads × d_head 64, d_model 400, d_mlp 1200, GELU,
    post-LN"."""
    m = cfg.model
    return (f"{m.n_heads} head{'s' * (m.n_heads != 1)} × d_head {m.d_head}, d_model {m.d_model}, d_mlp {m.d_mlp}, "
            f"{m.act.upper()}, {m.norm}-LN")


@figure("p1-fig2c", "runs", "P1 Fig. 2c: inferential and symmetric accuracy on the held-out pair per γ, mean "
        "± std over the seeds (P1: 4 runs of its multi-head GPT-2), one dot per seed")
def p1_fig2c(run_dirs: list[Path], out: str | Path, keys: str = "both", use_best_epoch: bool = False,
             epoch: int = -1) -> Path:
    """P1 Fig. 2c (arXiv 2405.05409, App. A): the multi-head, post-LN GPT-2 variant's inferential and symmetric
    accuracy on the held-out pair per γ, bars at the mean over the runs of each γ (the seeds) with ± std error
    bars (population std, :func:`anchorlab.phase.mean_std`) and a dot per run. The runs are read as ``p1-gamma``
    reads them (:func:`gamma_rows`; ``keys``, ``use_best_epoch``, ``epoch`` as there); runs that differ in more
    than γ and the seed are groups of their own. The CSV has one row per group: the mean and std of each accuracy
    (and of the seen pairs' test accuracy, P1's 0.9 bar), the number of runs, their seeds and run ids, and the
    block the runs trained (:func:`_architecture`)."""
    rows, pairs = _gamma_figure_rows("p1-fig2c", run_dirs, keys, use_best_epoch, epoch)
    shown = _shown(rows)
    seen = ("seen_test",) if all(r["seen_test"] is not None for r in shown) else ()
    stats = mean_std(shown, ("model", "pair", "gamma"), ("inferential", "symmetric", *seen))
    by_id = {Path(d).name: Path(d) for d in run_dirs}
    arch = {r["run_id"]: _architecture(rundir.read_config(by_id[r["run_id"]])) for r in rows}
    table = []
    for s in stats:
        group = [r for r in shown if (r["model"], r["pair"], r["gamma"]) == (s["model"], s["pair"], s["gamma"])]
        table.append({"model": s["model"].replace("\n", ", "), "pair": s["pair"], "keys": keys,
                      "evaluation": group[0]["evaluation"], "gamma": s["gamma"], "std_W_Q": group[0]["std"],
                      **{k: v for k, v in s.items() if k.endswith(("_mean", "_std"))}, "n_runs": s["n"],
                      "seeds": " ".join(str(r["seed"]) for r in group),
                      "status": "done" if all(r["status"] == "done" for r in group) else "unfinished",
                      "architecture": " / ".join(sorted({arch[r["run_id"]] for r in group})),
                      "run_ids": " ".join(r["run_id"] for r in group)})
    blocks = " / ".join(sorted(set(arch.values())))
    when = (", best evaluation of each run" if use_best_epoch else f", each run after epoch {epoch}" if epoch >= 0
            else "")
    fig = plot_gamma_comparison(shown, pair=pairs, spread=stats,
                                title=f"P1 Fig. 2c: held-out pair {pairs} per γ{when}, bars: mean ± std over the "
                                      f"runs of each γ; {blocks}")
    return save_figure(fig, table, Path(out), "p1-fig2c")


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
    fields in which the runs differ beyond what the figure names (:func:`_varied`; also one column each).
    ``keys``: which inputs of the held-out pair the ``inferential`` and ``symmetric`` columns read
    (:data:`PROBE_KEYS`). ``losses``: every row also carries ``train_loss``, the mean training loss of its epoch
    (``epochs.jsonl``; None at epoch 0), and each trained epoch without an evaluation gets a row of its own
    (accuracies None), in epoch order."""
    curve_keys = _curve_keys(keys)
    found = [(d, cfg) for d in run_dirs if (cfg := _composite_config(d)) is not None]
    runs = []
    # a panel names γ and the width (and the precision), a line its seed and cooldown
    named = ("init.gamma", "model.d_model", "train.precision", "seeds.", "train.cooldown_epochs")
    for (d, cfg), varied in zip(found, _varied([cfg for _, cfg in found], named), strict=True):
        m = cfg.model
        head = {"run_id": d.name, "model": model_label(cfg), "d_model": m.d_model, "gamma": cfg.init.gamma,
                "std_W_Q": _std_W_Q(cfg), "precision": cfg.train.precision, "seed": cfg.seeds.init_seed,
                "status": "done" if rundir.is_done(d) else "unfinished", "pair": _probe_pair(cfg), "keys": keys,
                "cooldown_from": (cfg.train.epochs - cfg.train.cooldown_epochs) if cfg.train.cooldown_epochs else None,
                "varied": ", ".join(_varied_parts(varied)), "trained_on": rundir.trained_on(d), **varied}
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
    fig = plot(curves, pair=pairs, threshold=threshold,
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


def _fig2_line(rows: list[dict[str, Any]], axis: str, out: Path, use_best_epoch: bool, keys: str) -> Path:
    """P1 Fig. 2 along one axis: per value and seed the held-out pair's accuracies (best over other axes)."""
    sfx = PROBE_KEYS[keys]
    done = [r for r in rows if r.get("status") == "done" and f"unseen_inferential_acc{sfx}" in r]
    if not done:
        raise ConfigError("figure p1-fig2: the sweep has no finished composite-task run")
    seed_axis = next((k for k in SEED_AXES if any(k in r for r in done)), None)
    cells: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for r in done:
        cells.setdefault((r[axis], r.get(seed_axis) if seed_axis else r["run_id"]), []).append(r)

    def value(r: dict[str, Any], m: str) -> float:
        return float(r[f"best_{m}" if use_best_epoch and f"best_{m}" in r else m])

    table = [{axis: xv, "seed": seed, "n_runs": len(group),
              **{k: max(value(r, f"unseen_{k}_acc{sfx}") for r in group) for k in ("inferential", "symmetric")},
              "seen_test_acc": max(value(r, "seen_test_acc") for r in group)}
             for (xv, seed), group in sorted(cells.items(), key=lambda kv: (kv[0][0], str(kv[0][1])))]
    name = axis.split(".")[-1]
    fig = plot_gamma_comparison(table, x=axis, x_name="γ" if axis == "init.gamma" else name,
                                xlabel=axis, dots="seed" if seed_axis else "run",
                                title=f"P1 Fig. 2 over {axis}: held-out pair (4,3), {KEYS_NAMES[keys]} "
                                      f"({'best' if use_best_epoch else 'final'} evaluation)")
    return save_figure(fig, table, out, "p1-fig2")


def _save_grid(fig: Any, g: dict[str, Any], metrics: tuple[str, ...], out: Path, name: str,
               coords: Callable[[Any, Any], dict[str, Any]]) -> Path:
    """``out/name.png`` and one CSV row per cell: ``coords(x, y)``, the metrics, seen-test accuracy,
    hatching and the number of seeds averaged."""
    table = [{**coords(xv, yv), **{m: g[m][i, j] for m in (*metrics, "seen_test_acc")},
              "hatched": bool(g["mask"][i, j]), "n_seeds": int(g["n_seeds"][i, j])}
             for i, yv in enumerate(g["ys"]) for j, xv in enumerate(g["xs"])]
    return save_figure(fig, table, out, name)


def _lr_wd_rows(sweep_dir: Path) -> tuple[list[dict[str, Any]], str]:
    """The sweep's finished runs with ``peak_lr`` (lr × lr_multiplier) and ``weight_decay`` read from each
    run's config, whichever axis set them; and a title naming the fixed setting (γ, depth, held-out pairs)."""
    rows = [r for r in collect(sweep_dir) if r["status"] == "done"]
    if not rows:
        raise ConfigError(f"figure p1-fig14: {sweep_dir} has no finished run")
    settings = set()
    for r in rows:
        cfg = rundir.read_config(sweep_dir / r["run_id"])
        r["peak_lr"] = float(f"{cfg.train.lr * cfg.train.lr_multiplier:.6g}")
        r["weight_decay"] = cfg.train.weight_decay
        held = ", ".join(f"({a},{b})" for a, b in cfg.task.held_out)
        settings.add(f"γ {cfg.init.gamma:g}, {cfg.model.n_layers} layers, held out {held}")
    if len(settings) > 1:
        raise ConfigError(f"figure p1-fig14: runs differ in more than LR, WD and seed: {sorted(settings)}")
    return rows, settings.pop()


@figure("p1-fig14", "sweep", "P1 Fig. 14: inferential accuracy on (4,3) over peak LR × weight decay")
def p1_fig14(sweep_dir: str | Path, out: str | Path, use_best_epoch: bool = False, keys: str = "both") -> Path:
    """P1 Fig. 14 (App. E): inferential accuracy on (4,3), mean over seeds, over peak LR (y) × WD (x).

    Cells are hatched where the seen-pair test accuracy is below 0.9, as in Fig. 2 (Fig. 14 has no hatching;
    at the paper's setting no cell is expected to be hatched). ``keys``: as p1-fig2."""
    metrics = (f"unseen_inferential_acc{probe_suffix('p1-fig14', keys)}",)
    rows, setting = _lr_wd_rows(Path(sweep_dir))
    if use_best_epoch:
        rows = _with_best(rows, Path(sweep_dir), (*metrics, "seen_test_acc"))
    g = phase_grid(rows, x="weight_decay", y="peak_lr", metrics=metrics, use_best_epoch=use_best_epoch)
    tag = "" if keys == "both" else f", {KEYS_NAMES[keys]}"
    fig = plot_phase_diagrams(g["xs"], g["ys"], {f"inferential (4,3) → x−10{tag}\n{setting}": g[metrics[0]]},
                              g["mask"], xlabel="weight decay", ylabel="peak learning rate")
    return _save_grid(fig, g, metrics, Path(out), "p1-fig14", lambda xv, yv: {"peak_lr": yv, "weight_decay": xv})


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
                     "reference_parts": "+".join(parts), "pair": last["pair"], "keys": keys, "status": last["status"],
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
    return save_figure(plot_fit_speed(rows, loss_threshold, pair=pairs), rows, Path(out), "p1-fit-speed")


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
