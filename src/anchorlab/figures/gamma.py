"""P1's held-out pair per γ over a list of runs, from what they log: the γ comparison (``p1-gamma``; P1's best over
each seed's runs, :func:`best_per_seed`) and its mean ± std over seeds (Fig. 2c, ``p1-fig2c``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anchorlab import rundir
from anchorlab.config import ConfigError, RunConfig
from anchorlab.figures import figure, model_label, save_figure
from anchorlab.figures.logged import (
    KEYS_NAMES,
    PROBE_KEYS,
    best_logged,
    common_answers,
    composite_config,
    probe_columns,
    probe_suffix,
    std_W_Q,
    varied_of,
    varied_parts,
)
from anchorlab.phase import mean_std
from anchorlab.plotting.figures import plot_gamma_comparison


def gamma_rows(run_dirs: list[Path], keys: str = "both", use_best_epoch: bool = False,
               epoch: int | None = None) -> list[dict[str, Any]]:
    """One row per composite-task run of ``run_dirs`` that has an evaluation: model, γ, seed, std of W_Q and
    the held-out pair's inferential / symmetric accuracy on the inputs ``keys`` selects (:data:`PROBE_KEYS`)
    and the seen pairs' test accuracy (final; the last evaluation of an unfinished run, marked ``status``; with
    ``use_best_epoch`` each the highest over the run's evaluations, separately, as the authors' plotting code
    took them; with ``epoch`` the evaluation after that epoch, final once the run has made it, :func:`_at_epoch`),
    and, as ``varied`` and a column each, the config fields in which the runs differ beyond γ and the seed
    (:func:`varied_of`). Other runs (other tasks, not started) are left out."""
    if use_best_epoch and epoch is not None:
        raise ConfigError("best epoch or one epoch: give --best-epoch or epoch, not both")
    sfx = PROBE_KEYS[keys]
    rows = []
    found = [(d, cfg) for d in run_dirs if (cfg := composite_config(d)) is not None]
    for (d, cfg), varied in zip(found, varied_of([cfg for _, cfg in found]), strict=True):
        done = (d / rundir.SUMMARY).is_file()
        if epoch is not None:
            last, done = _at_epoch(d, epoch, done)
        else:
            last = rundir.read_json(d / rundir.SUMMARY) if done else (rundir.read_metrics(d) or [{}])[-1]
        if f"unseen_inferential_acc{sfx}" not in last:
            continue
        if use_best_epoch:
            last = {**last, **best_logged(d, (f"unseen_inferential_acc{sfx}", f"unseen_symmetric_acc{sfx}",
                                               "seen_test_acc"))}
        rows.append({"run_id": d.name, "model": model_label(cfg), "gamma": cfg.init.gamma,
                     "seed": cfg.seeds.init_seed, "std": last.get("std_W_Q", std_W_Q(cfg)),
                     "inferential": last[f"unseen_inferential_acc{sfx}"],
                     "symmetric": last[f"unseen_symmetric_acc{sfx}"],
                     "seen_test": last.get("seen_test_acc"), "status": "done" if done else "unfinished",
                     **probe_columns(cfg), "keys": keys,
                     "evaluation": "best" if use_best_epoch else "last" if epoch is None else f"epoch {epoch}",
                     "varied": ", ".join(varied_parts(varied)), **varied})
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
    answers = common_answers(rows)
    if best_of_seed:
        rows = best_per_seed(rows)
        when = ", best epoch" if use_best_epoch else f", after epoch {epoch}" if epoch >= 0 else ""
        fig = plot_gamma_comparison(rows, pair=pairs, answers=answers, dots="seed (best of its runs)",
                                    title=f"P1: held-out pair {pairs} per γ, best over each seed's runs{when} "
                                          f"(P1 §4; bars: mean over seeds)")
    else:
        title = (f"P1: held-out pair {pairs} per γ, best evaluation of each run" if use_best_epoch else
                 f"P1: held-out pair {pairs} per γ, each run after epoch {epoch}" if epoch >= 0 else "")
        fig = plot_gamma_comparison(_shown(rows), pair=pairs, answers=answers, title=title)
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
    return [{**r, "model": "\n".join([r["model"], *varied_parts({k: r[k] for k in varied_keys})])} for r in rows]


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
    fig = plot_gamma_comparison(shown, pair=pairs, answers=common_answers(rows), spread=stats,
                                title=f"P1 Fig. 2c: held-out pair {pairs} per γ{when}, bars: mean ± std over the "
                                      f"runs of each γ; {blocks}")
    return save_figure(fig, table, Path(out), "p1-fig2c")
