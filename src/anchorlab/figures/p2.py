"""P2 figures from run directories of the ``mem_rsn`` task (P2 Fig. 3-8): Fig. 3A/B, 4, 5, 6, 8.

Each recipe reads ``config.json``, ``metrics.jsonl`` and the kept checkpoints, computes with
:mod:`anchorlab.analysis.p2` / :mod:`anchorlab.theory`, draws with :mod:`anchorlab.plotting.p2`, and
writes ``<out>/<name>.png`` plus the numbers behind it as ``<out>/<name>.csv`` (tidy rows).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from anchorlab import rundir
from anchorlab.analysis import load_model
from anchorlab.analysis import p2 as A
from anchorlab.analysis.embeddings import pca_2d
from anchorlab.config import ConfigError, RunConfig
from anchorlab.figures import figure, model_label, one_step, save_figure
from anchorlab.plotting import p2 as P
from anchorlab.theory import constructed_embeddings, label_distribution_exact

SETS = ("mem", "rsn_train", "rsn_test")
# The model P2 draws each single-run figure for (Fig. 4: the Emb-MLP; Fig. 5, 6: the Transformer). The recipes
# draw them for the other model too where they apply; a report's sweep page keeps to the paper's.
PAPER_MODEL = {"p2-fig4": "emb_mlp", "p2-fig5": "gpt", "p2-fig6": "gpt"}


def _config(run_dir: Path, name: str, model: str | None = None) -> RunConfig:
    cfg = rundir.read_config(run_dir)
    if cfg.task.name != "mem_rsn":
        raise ConfigError(f"figure {name}: {run_dir} is a {cfg.task.name!r} run; "
                          "this figure needs task.name = 'mem_rsn'")
    if model is not None and cfg.model.name != model:
        raise ConfigError(f"figure {name}: {run_dir} has model.name = {cfg.model.name!r}; this figure needs {model!r}")
    return cfg


def _epoch_of(run_dir: Path) -> dict[int, int]:
    return {r["step"]: r["epoch"] for r in rundir.read_metrics(run_dir)}


def _sets_over_training(runs: list[Path], out: Path, name: str, model: str) -> Path:
    by_gamma: dict[float, list[tuple[RunConfig, list[dict[str, Any]], Path]]] = defaultdict(list)
    for d in runs:
        cfg = _config(d, name, model)
        by_gamma[cfg.init.gamma].append((cfg, rundir.read_metrics(d), d))
    panels, rows = [], []
    for g in sorted(by_gamma):
        group = by_gamma[g]
        n = min(len(m) for _, m, _ in group)  # unfinished runs: the common prefix
        epoch = [r["epoch"] for r in group[0][1][:n]]
        panel = {"title": f"γ = {g:g}  ({len(group)} run{'s' * (len(group) > 1)})", "epoch": epoch,
                 "loss": {s: [[r[f"{s}_loss"] for r in m[:n]] for _, m, _ in group] for s in SETS},
                 "acc": {s: [[r[f"{s}_acc"] for r in m[:n]] for _, m, _ in group] for s in SETS}}
        panels.append(panel)
        for cfg, m, d in group:
            for r in m[:n]:
                rows += [{"gamma": g, "seed": cfg.seeds.init_seed, "run_dir": str(d), "epoch": r["epoch"],
                          "step": r["step"], "set": s, "loss": r[f"{s}_loss"], "acc": r[f"{s}_acc"]} for s in SETS]
    model_name = {"gpt": "Transformer", "emb_mlp": "Emb-MLP"}[model]
    fig = P.plot_sets_over_training(panels, f"P2 {model_name}: loss and accuracy on D_mem, D_rsn,train, D_rsn,test")
    return save_figure(fig, rows, out, name)


@figure("p2-fig3a", "runs", "P2 Fig. 3A: Transformer loss/accuracy on the three sets, one column per γ (mean, min-max)")
def p2_fig3a(runs: list[Path], out: Path) -> Path:
    return _sets_over_training(runs, out, "p2-fig3a", "gpt")


@figure("p2-fig3b", "runs", "P2 Fig. 3B: Emb-MLP loss/accuracy on the three sets, one column per γ")
def p2_fig3b(runs: list[Path], out: Path) -> Path:
    return _sets_over_training(runs, out, "p2-fig3b", "emb_mlp")


def _matrix_rows(panel: str, C: np.ndarray, ticks: list[int], **extra: Any) -> list[dict[str, Any]]:
    return [{"panel": panel, **extra, "s_i": ticks[i], "s_j": ticks[j], "value": float(C[i, j])}
            for i in range(len(ticks)) for j in range(len(ticks))]


def _two_steps(run_dir: Path, step: int | Sequence[int] | None) -> tuple[int, ...]:
    kept = rundir.checkpoint_steps(run_dir)
    if not kept:
        raise ConfigError(f"figure: {run_dir} has no checkpoints")
    if step is None:  # the paper's epochs 50 and 900 of 1000: the first kept after init, and the last
        return (kept[1] if len(kept) > 1 else kept[0]), kept[-1]
    return tuple(step) if isinstance(step, Sequence) else (step,)


@figure("p2-fig4", "run", "P2 Fig. 4: anchor-embedding cosines at two epochs, P^s − 1/d_vob, its cosine matrix",
        many_steps=True)
def p2_fig4(run_dir: Path, out: Path, step: int | Sequence[int] | None = None) -> Path:
    cfg = _config(run_dir, "p2-fig4")
    task = cfg.task
    epoch_of = _epoch_of(run_dir)
    mats, rows = [], []
    for at in _two_steps(run_dir, step):
        model, _ = load_model(run_dir, at)
        C = A.anchor_cosines(A.embedding_matrix(model), task)
        ep = epoch_of.get(at, at)
        for kind, anchors in (("mem", list(task.mem_anchors)), ("rsn", list(task.rsn_anchors))):
            if kind in C:
                mats.append((f"(A) {kind} anchors, epoch {ep}", C[kind], anchors))
                rows += _matrix_rows(f"A_{kind}", C[kind], anchors, epoch=ep, step=at)
    P_s = label_distribution_exact(task, train_only=True)
    rsn = list(task.rsn_anchors)
    centred = {s: P_s[s] - 1.0 / task.vocab_size for s in rsn}
    theory = A.theory_vs_trained(A.embedding_matrix(model), task)
    off = ~np.eye(len(rsn), dtype=bool)
    rows += _matrix_rows("C_label_theory", theory["label"], rsn)
    rows += [{"panel": "B_centred_P", "s_i": s, "label": i, "value": float(v)}
             for s, p in centred.items() for i, v in enumerate(p) if P_s[s][i] > 0]
    rows.append({"panel": "pearson_r", "value": theory["r_label"], "step": at})
    hi = task.key_max + task.q * max(rsn)
    fig = P.plot_fig4(mats, centred, theory["label"], (theory["label"][off], theory["trained"][off], theory["r_label"]),
                      (task.key_min, hi))
    return save_figure(fig, rows, out, "p2-fig4", source={"run_id": Path(run_dir).name})


@figure("p2-fig5", "run", "P2 Fig. 5: anchor cosines, PCA of W_E, theory (eq. 14) vs trained, PCA of w̃")
def p2_fig5(run_dir: Path, out: Path, step: int | Sequence[int] | None = None, row_anchor: int = 15) -> Path:
    cfg = _config(run_dir, "p2-fig5")
    task = cfg.task
    model, _ = load_model(run_dir, one_step(step))
    W_E = A.embedding_matrix(model)
    C = A.anchor_cosines(W_E, task)
    mem, rsn = list(task.mem_anchors), list(task.rsn_anchors)
    rows = _matrix_rows("A_mem", C["mem"], mem) + _matrix_rows("A_rsn", C["rsn"], rsn)
    toks = list(range(1, task.key_max + 1))  # anchors and keys (the input tokens)
    coords, ratio = pca_2d(W_E[toks])
    rows += [{"panel": "B_pca", "token": t, "pc1": float(x), "pc2": float(y)} for t, (x, y) in zip(toks, coords)]
    th = A.theory_vs_trained(W_E, task, row_anchor)
    rows += _matrix_rows("C_eq14", th["eq14"], rsn)
    rows += [{"panel": "C_row", "s_i": row_anchor, "s_j": s, "trained": float(th["row_trained"][k]),
              "eq14": float(th["row_eq14"][k]), "label": float(th["row_label"][k])} for k, s in enumerate(rsn)]
    rows.append({"panel": "pearson_r", "r_eq14": th["r_eq14"], "r_label": th["r_label"]})
    keys = list(range(task.key_min, task.key_max + 1))
    pca_theory = []
    for t, anchors, sub in (("(D) PCA of w̃_s, s ∈ A_rsn", rsn, True), ("(D) PCA of w̃_s, s ∈ Z", keys, False)):
        c, _ = pca_2d(constructed_embeddings(anchors, task.vocab_size, noise_std=task.vocab_size ** -cfg.init.gamma,
                                             subtract_mean=sub))
        pca_theory.append((t, c, anchors))
        rows += [{"panel": "D_pca", "token": s, "pc1": float(x), "pc2": float(y)} for s, (x, y) in zip(anchors, c)]
    fig = P.plot_fig5([("(A) memory anchors", C["mem"], mem), ("(A) reasoning anchors", C["rsn"], rsn)],
                      (coords, toks, ratio), th["eq14"], rsn,
                      {"trained": th["row_trained"], "eq14": th["row_eq14"], "label": th["row_label"]}, row_anchor,
                      pca_theory)
    return save_figure(fig, rows, out, "p2-fig5", source={"run_id": Path(run_dir).name})


@figure("p2-fig6", "run", "P2 Fig. 6: first attention layer ≈ averaging operator, W^V spectrum and alignment")
def p2_fig6(run_dir: Path, out: Path, step: int | Sequence[int] | None = None, n_inputs: int = 1024) -> Path:
    from anchorlab.tasks import make_task_data

    cfg = _config(run_dir, "p2-fig6", "gpt")
    task = cfg.task
    model, _ = load_model(run_dir, one_step(step))
    data = make_task_data(task, cfg.seeds.data_seed)
    rows_idx = np.random.default_rng(0).choice(np.flatnonzero(data.in_train), size=min(n_inputs, len(data)),
                                               replace=False)
    pattern = A.first_layer_pattern(model, torch.as_tensor(data.inputs[rows_idx]))
    att = A.attention_vs_average(pattern)
    W_E = A.embedding_matrix(model)
    W_V = model.blocks[0].attn.W_V[0]
    mem, rsn = list(task.mem_anchors), list(task.rsn_anchors)
    al = {k: A.wv_alignment(W_V, W_E, a) for k, a in (("memory", mem), ("reasoning", rsn))}
    sv = al["memory"]["singular_values"]
    rows: list[dict[str, Any]] = [{"panel": "i_attention", "query": q, "key": k, "mean": float(att["mean"][q, k]),
                                   "average": float(att["average"][q, k])}
                                  for q in range(att["mean"].shape[0]) for k in range(q + 1)]
    rows.append({"panel": "i_deviation", "max_abs_dev": att["max_abs_dev"], "mean_abs_dev": att["mean_abs_dev"]})
    rows += [{"panel": "ii_singular_values", "index": i, "value": float(v)} for i, v in enumerate(sv)]
    rows += [{"panel": "iii_alignment", "kind": k, "anchor": s, "abs_cos_u1": float(c)}
             for k, a in (("memory", mem), ("reasoning", rsn)) for s, c in zip(a, al[k]["abs_cos_u1"])]
    fig = P.plot_fig6(att["mean"], att["average"], att["max_abs_dev"], sv,
                      {"memory": (mem, al["memory"]["abs_cos_u1"]), "reasoning": (rsn, al["reasoning"]["abs_cos_u1"])})
    return save_figure(fig, rows, out, "p2-fig6", source={"run_id": Path(run_dir).name})


@figure("p2-fig8", "runs", "P2 Fig. 8: memory label rules (U(Z) vs key window) and outputs per label-range group")
def p2_fig8(runs: list[Path], out: Path, step: int | Sequence[int] | None = None,
            run_steps: Sequence[int | None] | None = None) -> Path:
    """Left: D_mem accuracy over training of every run without label ranges, labelled by ``task.mem_label``.
    Right: for runs with ``task.mem_label_ranges``, the histogram of the model's outputs per group at the run's
    RUN_DIR@STEP (``run_steps``), else ``step`` (default: the first kept checkpoint after initialization, i.e.
    early in training). A left-panel run reads only its logged metrics: RUN_DIR@STEP is refused there."""
    from anchorlab.metrics import predict
    from anchorlab.tasks import make_task_data

    left, right, rows = [], [], []
    for d, at in zip(runs, run_steps or [None] * len(runs)):
        cfg = _config(d, "p2-fig8")
        task = cfg.task
        if not task.mem_label_ranges:
            if at is not None:
                raise ConfigError(f"figure p2-fig8: source {d}@{at}: @STEP does not apply to a run without "
                                  "task.mem_label_ranges (its panel reads only logged metrics)")
            m = rundir.read_metrics(d)
            label = {"uniform": "F_mem,1: y ~ U(Z)", "key_window": "F_mem,2: y ~ U{z−Σa..z+Σa}"}[task.mem_label]
            left.append({"label": f"{label}, {model_label(cfg)}, γ {cfg.init.gamma:g}, seed {cfg.seeds.init_seed}",
                         "epoch": [r["epoch"] for r in m],
                         "acc": [r["mem_acc"] for r in m]})
            rows += [{"panel": "left", "run_dir": str(d), "mem_label": task.mem_label, "epoch": r["epoch"],
                      "mem_acc": r["mem_acc"]} for r in m]
            continue
        kept = rundir.checkpoint_steps(d)
        s = at if at is not None else one_step(step) if step is not None else (kept[1] if len(kept) > 1 else kept[-1])
        model, _ = load_model(d, s)
        data = make_task_data(task, cfg.seeds.data_seed)
        pred, _ = predict(model, torch.as_tensor(data.inputs), torch.as_tensor(data.targets))
        group = data.extra["mem_group"]
        ep = _epoch_of(d).get(s, s)
        for g, (lo, hi) in enumerate(task.mem_label_ranges):
            p = pred[group == g]
            inside = float(((p >= lo) & (p <= hi)).mean())
            right.append({"label": f"labels {lo}–{hi}: {inside:.0%} of outputs inside", "range": (lo, hi),
                          "pred": p.tolist(), "title": f"{model_label(cfg)}, γ {cfg.init.gamma:g}, seed "
                          f"{cfg.seeds.init_seed}: model outputs per group at epoch {ep}"})
            rows += [{"panel": "right", "run_dir": str(d), "group": g, "lo": lo, "hi": hi, "step": s, "epoch": ep,
                      "output": int(v), "count": int(c)} for v, c in zip(*np.unique(p, return_counts=True))]
    if not left and not right:
        raise ConfigError("figure p2-fig8: no runs given")
    return save_figure(P.plot_fig8(left, right), rows, out, "p2-fig8")
