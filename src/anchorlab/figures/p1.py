"""P1 mechanism figures (P1 Fig. 3-5, 10-13, 15, 16) from run and sweep dirs.

Every recipe loads kept checkpoints (never trains), computes with :mod:`anchorlab.analysis`, draws with
:mod:`anchorlab.plotting.mechanisms`, and writes ``<out>/<name>.png`` plus the data as ``<out>/<name>.csv``.
Every 2-D embedding is a PCA by default (``method="pca"``); ``method="tsne"`` uses scikit-learn's t-SNE (the
optional ``tsne`` extra), as the paper. Titles say which.
:func:`why_not` tells whether a figure applies to a run (the report skips those that do not).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from anchorlab import rundir
from anchorlab.analysis import load_model
from anchorlab.analysis.attention import (
    DEFAULT_KEY_POS,
    default_probe_input,
    flow_edges,
    mean_mechanism_scores,
    mechanism_edges,
    mechanism_scores,
    probe_information_flow,
    probe_why_not,
)
from anchorlab.analysis.condensation import greedy_groups, neuron_cosine, reorder, wq_neurons
from anchorlab.analysis.embeddings import (
    METHODS_2D,
    attention_output_vectors,
    cosine_matrix,
    embed_2d,
    embedding_rows,
    equal_target_mask,
    fused_vectors,
    item_tokens,
    order_separation,
    single_anchor_layout,
    single_anchor_vectors,
)
from anchorlab.analysis.spectra import embedding_covariance_eigs, linear_layer_spectra, stable_rank
from anchorlab.analysis.summary import readouts
from anchorlab.config import ConfigError, RunConfig
from anchorlab.figures import figure, model_label, one_step, save_figure
from anchorlab.plotting.mechanisms import (
    plot_condensation_rows,
    plot_cosine_heatmaps,
    plot_covariance_eigs,
    plot_information_flows,
    plot_pair_scatter,
    plot_panel_grid,
    plot_readouts,
    plot_spectra,
)
from anchorlab.sweep import MANIFEST

WQ0_STABLE_RANK = "stable_rank/blocks.0.attn.W_Q"  # the first layer's W_Q stable rank, as evaluations log it
# E5 (Fig. 4a,b): lower triangle (3,3) vs (2,2), upper triangle (1,2) vs (1,3), keys 30-40.
E5_KEYS = tuple(range(30, 41))
E5_LOWER, E5_UPPER = ((3, 3), (2, 2)), ((1, 2), (1, 3))
E6_TARGETS = tuple(range(30, 36))  # 6 targets x 4 anchors: 24 inputs, 4x4 blocks of equal g
LR_AXES = ("train.lr_multiplier", "train.lr")


# ------------------------------------------------------------------------------------------------
# Applicability (which run a figure can be drawn for) and shared helpers


def _needs_gpt(cfg: RunConfig) -> str | None:
    return None if cfg.model.name == "gpt" else f"needs the Transformer (model.name 'gpt'), not {cfg.model.name!r}"


def _needs_composite_probe(cfg: RunConfig, min_layers: int = 1) -> str | None:
    return _needs_gpt(cfg) or probe_why_not(cfg, min_layers)


def _fig4_why_not(cfg: RunConfig) -> str | None:
    reason = _needs_composite_probe(cfg, 2)
    if reason:
        return reason
    t = cfg.task
    if not {1, 2, 3} <= set(t.anchors):
        return "needs anchors 1, 2 and 3 (the pairs of P1 Fig. 4)"
    try:
        single_anchor_layout(t, E6_TARGETS)
    except ValueError as e:
        return str(e)
    return None if t.key_min <= E5_KEYS[0] and E5_KEYS[-1] <= t.key_max else "keys 30-40 are outside the key range"


RUN_FIGURES: dict[str, Callable[[RunConfig], str | None]] = {
    "p1-fig3": _needs_composite_probe,
    "p1-fig3b": _needs_composite_probe,
    "p1-fig4": _fig4_why_not,
    "p1-fig5": _needs_gpt,
    "p1-fig12": lambda cfg: None,
    "p1-fig13": lambda cfg: None,
    "p1-attribution": _needs_composite_probe,
    "p1-patching": _needs_composite_probe,
    "p1-keys": lambda cfg: None if cfg.task.name == "composite" else f"needs the composite task (P1), not "
                                                                    f"{cfg.task.name!r}",
}


def why_not(name: str, cfg: RunConfig) -> str | None:
    """None if run-level figure ``name`` can be drawn for a run of ``cfg``, else the reason it cannot."""
    return RUN_FIGURES[name](cfg)


def _method(method: str) -> str:
    """The title word of a 2-D method; a clear error for another value."""
    if method not in METHODS_2D:
        raise ConfigError(f"method: {method!r} is not one of {', '.join(METHODS_2D)}")
    return "PCA" if method == "pca" else "t-SNE"


def _label(cfg: RunConfig, run_dir: Path | None = None, at: int | None = None) -> str:
    """The run (γ, model, seed) and, where ``at`` is given, when: its epoch where the run's records name the step
    (two checkpoints of one run side by side differ only there), else the step."""
    label = f"γ {cfg.init.gamma:g}, {model_label(cfg)}, seed {cfg.seeds.init_seed}"
    if at is None:
        return label
    ends = {0: 0} | ({r["step"]: r["epoch"] for r in rundir.read_metrics(run_dir, rundir.EPOCHS)} if run_dir else {})
    return f"{label}, epoch {ends[at]}" if at in ends else f"{label}, step {at}"


Step = int | Sequence[int] | None  # ``--step`` may be given several times
RunSteps = Sequence[int | None] | None  # per run dir, its RUN_DIR@STEP (None: ``step``), from :func:`draw`


def _load_runs(name: str, run_dirs: Sequence[Path] | Path, step: Step = None,
               run_steps: RunSteps = None) -> list[tuple[Path, Any, RunConfig, int]]:
    """(run dir, model, config, step of the model) per run: the model at the run's ``run_steps`` entry, else at
    ``step``, else at the last kept checkpoint; a clear error where the figure does not apply or the step was
    not kept."""
    run_dirs = [run_dirs] if isinstance(run_dirs, (str, Path)) else list(run_dirs)
    out = []
    for d, at in zip(run_dirs, run_steps or [None] * len(run_dirs)):
        if not (Path(d) / rundir.CONFIG).is_file():
            raise ConfigError(f"figure {name}: {d} is not a run directory (no {rundir.CONFIG})")
        kept = rundir.checkpoint_steps(Path(d)) if (Path(d) / rundir.CKPT_DIR).is_dir() else []
        at = one_step(step) if at is None else at
        if at is not None and at not in kept:
            raise ConfigError(f"step: {d} has no checkpoint at step {at}; kept steps: {kept}")
        model, cfg = load_model(d, at)  # no checkpoint at all: FileNotFoundError, as before
        reason = why_not(name, cfg)
        if reason:
            raise ConfigError(f"figure {name}: not applicable to run {d}: {reason}")
        out.append((Path(d), model, cfg, kept[-1] if at is None else at))
    return out


# ------------------------------------------------------------------------------------------------
# Run-level figures


@figure("p1-fig3", "runs", "P1 Fig. 3a/c: information flow of one (4,3) input with key 99, one panel per run; "
        "mechanism scores on it and averaged over every key")
def p1_fig3(run_dirs: Sequence[Path], out: str | Path, key: int = 99, min_weight: float = 0.05,
             step: Step = None, run_steps: RunSteps = None) -> Path:
    """E3: head-averaged attention as position × layer flows; dotted references show the symmetric
    (orange) and inferential (blue) mechanisms, and the titles their :func:`mechanism_scores` on the drawn
    input (key ``key``) and, as a check that one input is typical, their mean over every key of the held-out
    pair in the same template (CSV ``kind`` "score_all_keys", with the number of keys whose inferential score
    exceeds the symmetric one)."""
    flows, tokens, titles, highlights, rows = [], [], [], [], []
    for d, model, cfg, at in _load_runs("p1-fig3", run_dirs, step, run_steps):
        x = default_probe_input(cfg.task, key, cfg.task.probe_pair)
        flow = probe_information_flow(model, x)
        P = flow.shape[1]
        title = _label(cfg, d, at)
        if flow.shape[0] >= 2:
            scores = mechanism_scores(flow, DEFAULT_KEY_POS)
            mean, n_inf, n_keys = mean_mechanism_scores(model, cfg.task, cfg.task.probe_pair)
            title += (f"\nkey {key}: symmetric {scores['symmetric']:.2f} · inferential {scores['inferential']:.2f}"
                      f"\nall {n_keys} keys: {mean['symmetric']:.2f} · {mean['inferential']:.2f} "
                      f"(inferential ahead on {n_inf})")
            highlights.append(mechanism_edges(DEFAULT_KEY_POS, -1, P))
            rows += [{"run_id": d.name, "step": at, "gamma": cfg.init.gamma, "kind": "score", "mechanism": m,
                      "weight": v}
                     for m, v in scores.items()]
            rows += [{"run_id": d.name, "step": at, "gamma": cfg.init.gamma, "kind": "score_all_keys",
                      "mechanism": m, "weight": v, "keys": n_keys,
                      "inferential_ahead": n_inf} for m, v in mean.items()]
        else:
            highlights.append({})
        flows.append(flow)
        tokens.append(x[0].tolist())
        titles.append(title)
        rows += [{"run_id": d.name, "step": at, "gamma": cfg.init.gamma, "kind": "edge", "layer": l_, "query": k,
                  "key": j, "weight": w} for l_, k, j, w in flow_edges(flow)]
    fig = plot_information_flows(flows, tokens, titles, highlights, min_weight=min_weight)
    return save_figure(fig, rows, Path(out), "p1-fig3")


@figure("p1-fig3b", "run", "P1 Fig. 3b: PCA or t-SNE of the first attention block's output, coloured by pair")
def p1_fig3b(run_dir: Path, out: str | Path, n_per_pair: int = 50, seed: int = 5, method: str = "pca",
             step: Step = None) -> Path:
    """E4: last-token X^{ao(1)} of ``n_per_pair`` random keys per ordered anchor pair, in 2-D by ``method``; the
    title gives how far apart the two orders of a pair lie in the map (:func:`order_separation`)."""
    word = _method(method)
    [(d, model, cfg, at)] = _load_runs("p1-fig3b", run_dir, step)
    X, pairs = attention_output_vectors(model, cfg.task, n_per_pair, seed)
    coords, ratio = embed_2d(X, method, seed)
    fig = plot_pair_scatter(coords, [tuple(p) for p in pairs.tolist()], ratio,
                            f"X^ao(1), last token, {word}: {_label(cfg, d, at)}\n(a,b) from (b,a): "
                            f"{order_separation(coords, pairs):.3f} of other pairs' distance")
    rows = [{"a1": int(a), "a2": int(b), "method": method, "dim1": float(c[0]), "dim2": float(c[1])}
            for (a, b), c in zip(pairs, coords)]
    return save_figure(fig, rows, Path(out), "p1-fig3b", source={"run_id": d.name, "step": at})


def _centered(a: np.ndarray, b: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``a`` and ``b`` (default ``a``) minus the mean row of both together (of ``a`` alone without ``b``)."""
    b_ = a if b is None else b
    mean = (a if b is None else np.concatenate([a, b])).mean(axis=0, keepdims=True)
    return a - mean, b_ - mean


@figure("p1-fig4", "run", "P1 Fig. 4: fused-vector cosines with equal-target boxes (E5) and the single-anchor map (E6)")
def p1_fig4(run_dir: Path, out: str | Path, step: Step = None, center: bool = False) -> Path:
    """E5: lower triangle cos(v(x1;3,3), v(x2;2,2)), upper triangle cos(v(x1;1,2), v(x2;1,3)), keys 30-40,
    red boxes where the targets are equal. E6: cos of u(x; a) at the first anchor, 4×4 blocks of equal g.

    ``center`` (not in P1, off by default): subtract from each compared set the mean vector of that comparison
    (the two E5 sets of a triangle together; all E6 vectors) before the cosines. A trained model's vectors can
    share a large common component that puts every cosine near 1, hiding the equal-target structure; the panel
    titles give the mean cosine on and off the red boxes either way."""
    if not isinstance(center, bool):
        raise ConfigError(f"figure p1-fig4: option center: true or false, got {center!r}")
    [(d, model, cfg, at)] = _load_runs("p1-fig4", run_dir, step)
    t = cfg.task
    keys = list(E5_KEYS)
    v = {p: fused_vectors(model, t, keys, p) for p in (*E5_LOWER, *E5_UPPER)}
    pairs = [(v[E5_LOWER[0]], v[E5_LOWER[1]]), (v[E5_UPPER[0]], v[E5_UPPER[1]])]
    if center:
        pairs = [_centered(a, b) for a, b in pairs]
    lower = cosine_matrix(*pairs[0])
    upper = cosine_matrix(*pairs[1])
    tri = np.tril(np.ones_like(lower, dtype=bool))
    C5 = np.where(tri, lower, upper)
    boxes5 = np.where(tri, equal_target_mask(keys, E5_LOWER[0], keys, E5_LOWER[1], t),
                      equal_target_mask(keys, E5_UPPER[0], keys, E5_UPPER[1], t))
    k6, a6 = single_anchor_layout(t, E6_TARGETS)
    u6 = single_anchor_vectors(model, t, k6, a6)
    C6 = cosine_matrix(_centered(u6)[0] if center else u6)
    shift = dict(zip(t.anchors, t.shifts))
    g6 = np.asarray([k + shift[a] for k, a in zip(k6, a6)])  # single-anchor targets g(x; a)
    boxes6 = g6[:, None] == g6[None, :]
    labels6 = [f"{k}|{a}" for k, a in zip(k6, a6)]
    off6 = ~np.eye(len(k6), dtype=bool)  # the diagonal (a vector with itself) is neither on nor off
    tag = ", centred" if center else ""

    def on_off(C: np.ndarray, boxes: np.ndarray, mask: np.ndarray | bool = True) -> str:
        return f"mean cos on boxes {C[boxes & mask].mean():.2f}, off {C[~boxes & mask].mean():.2f}"

    fig = plot_cosine_heatmaps([
        {"C": C5, "boxes": boxes5, "tick_labels": keys, "title": f"E5 fused v(x;a1,a2){tag}: {_label(cfg, d, at)}\n"
         f"lower (3,3) vs (2,2) · upper (1,2) vs (1,3)\n{on_off(C5, boxes5)}", "xlabel": "x2", "ylabel": "x1"},
        {"C": C6, "boxes": boxes6, "tick_labels": labels6, "title": f"E6 single-anchor u(x;a) (key|anchor){tag}\n"
         f"{on_off(C6, boxes6, off6)}", "xlabel": "input", "ylabel": "input"}])
    rows = [{"panel": "E5", "row": keys[i], "col": keys[j], "cosine": C5[i, j], "equal_target": bool(boxes5[i, j]),
             "pairs": f"{E5_LOWER[0]}v{E5_LOWER[1]}" if tri[i, j] else f"{E5_UPPER[0]}v{E5_UPPER[1]}",
             "centered": center} for i in range(len(keys)) for j in range(len(keys))]
    # "self": an input against itself (cos 1), inside its box; the title's on/off means leave it out, and so can a
    # reader of the CSV (E5's diagonal compares two different fused vectors, so it has none)
    rows += [{"panel": "E6", "row": labels6[i], "col": labels6[j], "cosine": C6[i, j],
              "equal_target": bool(boxes6[i, j]), "self": i == j, "centered": center}
             for i in range(len(k6)) for j in range(len(k6))]
    return save_figure(fig, rows, Path(out), "p1-fig4", source={"run_id": d.name, "step": at})


def _condensation(model: Any, cfg: RunConfig, threshold: float, method: str = "pca", layer: int = 0) -> dict[str, Any]:
    C = neuron_cosine(wq_neurons(model, layer))
    groups = greedy_groups(C, threshold)
    Cr, perm = reorder(C, groups)
    tokens = item_tokens(cfg.task)
    coords, ratio = embed_2d(embedding_rows(model, tokens), method)
    return {"C": Cr, "perm": perm, "groups": groups, "coords": coords, "explained": ratio, "tokens": tokens}


@figure("p1-fig5", "runs", "P1 Fig. 5: W_Q(1) neuron cosines (greedy-reordered) and item-embedding PCA/t-SNE per run")
def p1_fig5(run_dirs: Sequence[Path], out: str | Path, threshold: float = 0.7, method: str = "pca",
            step: Step = None, run_steps: RunSteps = None) -> Path:
    """E7 + E8: per run, the reordered W_Q⁰ cosine matrix (number of groups at ``threshold`` in the title)
    and the 2-D ``method`` map of the item-token embedding rows annotated with token values."""
    word = _method(method)
    panels, rows = [], []
    for d, model, cfg, at in _load_runs("p1-fig5", run_dirs, step, run_steps):
        c, label = _condensation(model, cfg, threshold, method), _label(cfg, d, at)
        panels.append({"C": c["C"], "cos_title": f"W_Q⁰ cosine: {label}\n{len(c['groups'])} groups "
                       f"(threshold {threshold:g})", "coords": c["coords"], "labels": c["tokens"],
                       "explained": c["explained"], "color_values": c["tokens"],
                       "pca_title": f"W_E item rows, {word}: {label}"})
        gid = {i: g for g, members in enumerate(c["groups"]) for i in members}
        rows += [{"run_id": d.name, "step": at, "gamma": cfg.init.gamma, "kind": "wq_neuron", "neuron": int(i),
                  "group": gid[int(i)], "order": o} for o, i in enumerate(c["perm"])]
        rows += [{"run_id": d.name, "step": at, "gamma": cfg.init.gamma, "kind": "embedding", "method": method,
                  "token": tok, "dim1": xy[0], "dim2": xy[1]} for tok, xy in zip(c["tokens"], c["coords"])]
    return save_figure(plot_condensation_rows(panels), rows, Path(out), "p1-fig5")


@figure("p1-fig12", "runs", "P1 Fig. 12: embedding covariance eigenvalues, and the leading ones over kept checkpoints",
        many_steps=True)
def p1_fig12(run_dirs: Sequence[Path], out: str | Path, top_k: int = 4, step: Step = None,
             run_steps: RunSteps = None) -> Path:
    """E9: (a) eigenvalues of the covariance of the item-token W_E rows at the last checkpoint, per run;
    (b) per run, the ``top_k`` leading eigenvalues at every kept checkpoint, or at the given ``step`` list
    (P1 shows the small-init run). (a) is the last of those steps. A run given as RUN_DIR@STEP (``run_steps``)
    has (a) at STEP and (b) over its kept checkpoints up to STEP, whatever ``step`` says. The CSV holds what is
    drawn: ``panel`` "a" rows (every eigenvalue at the last step) and "b" rows (the ``top_k`` at each step)."""
    spectra, evolutions, rows = [], [], []
    loaded = _load_runs("p1-fig12", run_dirs, None, run_steps)
    for (d, _, cfg, _), at in zip(loaded, run_steps or [None] * len(loaded)):
        tokens = item_tokens(cfg.task)
        kept = rundir.checkpoint_steps(d)
        if at is not None:
            steps = [k for k in kept if k <= at]
        else:
            steps = kept if step is None else sorted({step} if isinstance(step, int) else set(step))
        if not set(steps) <= set(kept):
            raise ConfigError(f"step: {d} kept steps {kept}, not {sorted(set(steps) - set(kept))}")
        eigs = np.stack([embedding_covariance_eigs(embedding_rows(load_model(d, s)[0], tokens)) for s in steps])
        spectra.append((_label(cfg, d, steps[-1]), eigs[-1]))
        evolutions.append((_label(cfg), np.asarray(steps), eigs[:, :top_k]))
        # what the figure draws: (a) the whole spectrum at the last step, (b) the top_k at every step (not every
        # eigenvalue at every checkpoint: with a checkpoint an epoch that made megabyte CSVs)
        rows += [{"run_id": d.name, "gamma": cfg.init.gamma, "panel": "a", "step": steps[-1], "index": i + 1,
                  "eigenvalue": float(e)} for i, e in enumerate(eigs[-1])]
        rows += [{"run_id": d.name, "gamma": cfg.init.gamma, "panel": "b", "step": s, "index": i + 1,
                  "eigenvalue": float(e)} for s, es in zip(steps, eigs) for i, e in enumerate(es[:top_k])]
    return save_figure(plot_covariance_eigs(spectra, evolutions), rows, Path(out), "p1-fig12")


@figure("p1-fig13", "runs", "P1 Fig. 13: singular values of every weight matrix with stable ranks, a line per run")
def p1_fig13(run_dirs: Sequence[Path], out: str | Path, step: Step = None, run_steps: RunSteps = None) -> Path:
    """E10: per weight matrix a log-y panel of singular values, one line per run, the stable ranks
    Σ(s_i/s_max)² in the corner. P1's caption swaps the colours' γ labels: γ 0.8 is the *small* init."""
    specs, labels, rows = [], [], []
    for d, model, cfg, at in _load_runs("p1-fig13", run_dirs, step, run_steps):
        s = linear_layer_spectra(model)
        specs.append(s)
        labels.append(_label(cfg, d, at))
        rows += [{"run_id": d.name, "step": at, "gamma": cfg.init.gamma, "matrix": n, "index": i + 1,
                  "singular_value": float(x), "stable_rank": stable_rank(v)}
                 for n, v in s.items() for i, x in enumerate(v)]
    names = list(dict.fromkeys(n for s in specs for n in s))
    notes = {n: "sr " + " / ".join(f"{stable_rank(s[n]):.3g}" for s in specs if n in s) for n in names}
    fig = plot_spectra(specs, labels, notes=notes,
                       title="singular values (sr = stable rank Σ(s/s_max)²); larger γ = smaller init "
                             "(P1's Fig. 13 caption swaps the γ labels)")
    return save_figure(fig, rows, Path(out), "p1-fig13")


@figure("p1-keys", "runs", "P1 held-out pair key by key: the shares of (4,3) inputs answered inferentially, "
        "symmetrically or otherwise for each key x, one panel per run")
def p1_keys(run_dirs: Sequence[Path], out: str | Path, step: Step = None, run_steps: RunSteps = None,
            composed: float = 0.9, by: str = "key") -> Path:
    """Not a figure of P1: its inferential accuracy (§4) resolved over the key of each input, at the last kept
    checkpoint (or ``--step`` / RUN_DIR@STEP), evaluated in the run's precision. A fitted run tends to compose
    all of a key's inputs or none, so the pooled accuracy counts composed keys; each panel's title gives how many
    keys reach ``composed``. ``by="key_pos"``: resolved over the key's position instead (the anchors follow the
    key, so at the last key position the second anchor is the token that answers). CSV: one row per run and key
    (or key position): shares, the most frequent other answer."""
    import torch

    from anchorlab.analysis.answers import answer_shares, probe_predictions, probe_rows
    from anchorlab.figures.logged import probe_columns
    from anchorlab.plotting.figures import plot_key_answers
    from anchorlab.tasks import make_task_data
    from anchorlab.tasks.composite import inferential_shift, symmetric_shift

    if not 0 < composed <= 1:
        raise ConfigError(f"figure p1-keys: option composed: a share in (0, 1], got {composed!r}")
    if by not in ("key", "key_pos"):
        raise ConfigError(f"figure p1-keys: option by: 'key' or 'key_pos', got {by!r}")
    panels, rows = [], []
    for d, model, cfg, at in _load_runs("p1-keys", run_dirs, step, run_steps):
        t = cfg.task
        a1, a2 = t.probe_pair
        inf, sym = inferential_shift(t, a1, a2), symmetric_shift(t, a1, a2)
        amp = torch.bfloat16 if cfg.train.precision == "bf16" else None
        data = make_task_data(t, cfg.seeds.data_seed)
        keys, pred = probe_predictions(model, data, t, amp)
        groups = keys if by == "key" else data.extra["key_pos"][probe_rows(data, t)]
        per_key = answer_shares(groups, pred - keys, inf, sym, by)
        n_ok = sum(r["inferential"] >= composed for r in per_key)
        c = probe_columns(cfg)
        names = {"pair": c["pair"], "inferential": c["inferential_answer"], "symmetric": c["symmetric_answer"]}
        what = "keys" if by == "key" else "key positions"
        title = (f"{_label(cfg, d, at)}: inferential {float(np.mean(pred - keys == inf)):.3f}, symmetric "
                 f"{float(np.mean(pred - keys == sym)):.3f}; {n_ok} of {len(per_key)} {what} composed (≥ {composed:g})")
        panels.append({**names, "title": title, "rows": per_key, "field": by})
        rows += [{"run_id": d.name, "step": at, "gamma": cfg.init.gamma, "seed": cfg.seeds.init_seed,
                  "pair": names["pair"], **r} for r in per_key]
    fig = plot_key_answers(panels)
    return save_figure(fig, rows, Path(out), "p1-keys")


def _probe_inputs(name: str, cfg: RunConfig, contexts: Any, key_pos: Any) -> tuple[int, int | None]:
    """The ``contexts`` and ``key_pos`` options of ``p1-attribution`` / ``p1-patching``, checked against the run's
    task: one line naming the option where they do not fit. ``key_pos`` −1 (the default): the template's."""
    last = cfg.task.seq_len - 3
    if not isinstance(contexts, int) or isinstance(contexts, bool) or contexts < 0:
        raise ConfigError(f"figure {name}: option contexts: a whole number >= 0 (0: Fig. 3's template; N: N noise "
                          f"contexts drawn as the task draws them), got {contexts!r}")
    if not isinstance(key_pos, int) or isinstance(key_pos, bool) or not -1 <= key_pos <= last:
        raise ConfigError(f"figure {name}: option key_pos: the key's position, 0 to {last} (-1: the template's, "
                          f"{DEFAULT_KEY_POS}), got {key_pos!r}")
    return contexts, None if key_pos == -1 else key_pos


def _positions(ps: Sequence[int]) -> str:
    """0-5 for [0, 1, 2, 3, 4, 5]; 2, 6 for [2, 6]; none for []."""
    if not ps:
        return "none"
    if list(ps) == list(range(ps[0], ps[-1] + 1)) and len(ps) > 2:
        return f"{ps[0]}-{ps[-1]}"
    return ", ".join(map(str, ps))


def _inputs_text(contexts: int, key_pos: int | None) -> str:
    """How a probe figure's inputs were made, for its titles."""
    at = "" if key_pos is None else f", key at position {key_pos}"
    return f"Fig. 3's template{at}" if contexts == 0 else f"{contexts} drawn noise contexts a key{at}"


@figure("p1-attribution", "runs", "Direct logit attribution of the held-out pair: what each part (embeddings, each "
        "attention and MLP output, each LayerNorm bias) adds to logit(inferential) − logit(symmetric), key by key, "
        "one panel per run; and the logit lens")
def p1_attribution(run_dirs: Sequence[Path], out: str | Path, step: Step = None, run_steps: RunSteps = None,
                   heads: bool = False, contexts: int = 0, key_pos: int = -1) -> Path:
    """Not a figure of P1: which component writes the held-out pair's answer. For every key, the probe input of the
    pair in the authors' Fig. 3 template (``contexts`` > 0: that many noise contexts drawn as the task draws them,
    each part the mean over them; ``key_pos``: where the key sits), run in fp32; the unembedding's input at the
    last position split by the
    component that wrote it, through each post-LN LayerNorm with its scale frozen
    (:func:`~anchorlab.analysis.attribution.decompose_resid`), and each part's direct effect on the logit
    difference inferential − symmetric answer (the parts sum to it). ``heads`` splits attention outputs by head.
    The title adds the logit lens: the share of keys each block's output, read by the unembedding, answers
    inferentially / symmetrically. CSV: one row per run, part and key, and one per run and lens layer."""
    from anchorlab.analysis.attribution import held_out_attribution
    from anchorlab.figures.logged import probe_columns
    from anchorlab.plotting.mechanisms import plot_logit_attribution

    if not isinstance(heads, bool):
        raise ConfigError(f"figure p1-attribution: option heads: true or false, got {heads!r}")
    panels, rows = [], []
    for d, model, cfg, at in _load_runs("p1-attribution", run_dirs, step, run_steps):
        n, where = _probe_inputs("p1-attribution", cfg, contexts, key_pos)
        r = held_out_attribution(model, cfg.task, heads=heads, key_pos=where, contexts=n)
        inf, sym = r["answer_inferential"], r["answer_symmetric"]  # per key: the share of its inputs
        kinds = np.where(inf >= 0.5, "inferential", np.where(sym >= 0.5, "symmetric", "other"))
        c = probe_columns(cfg)
        lens = " · ".join(f"{i + 1}: {a:.2f}/{b:.2f}" for i, (a, b) in
                          enumerate(zip(r["lens_inferential"], r["lens_symmetric"])))
        title = (f"{_label(cfg, d, at)}\n{c['pair']} in fp32, {_inputs_text(n, where)}: inferential "
                 f"{inf.mean():.2f}, symmetric {sym.mean():.2f} of {len(inf) * max(n, 1)} inputs\n"
                 f"logit lens after block (inf/sym) {lens}")
        parts = list(r["attrs"])
        panels.append({"parts": parts, "values": np.stack([r["attrs"][p] for p in parts]), "kinds": kinds,
                       "title": title})
        base = {"run_id": d.name, "step": at, "gamma": cfg.init.gamma, "seed": cfg.seeds.init_seed, "pair": c["pair"],
                "contexts": n, "key_pos": DEFAULT_KEY_POS if where is None else where}
        rows += [{**base, "kind": "attribution", "part": p, "key": int(k), "answer": kind, "value": float(v)}
                 for p in parts for k, kind, v in zip(r["keys"], kinds, r["attrs"][p])]
        rows += [{**base, "kind": "lens", "layer": i, "inferential": float(a), "symmetric": float(b)}
                 for i, (a, b) in enumerate(zip(r["lens_inferential"], r["lens_symmetric"]))]
    fig = plot_logit_attribution(panels)
    return save_figure(fig, rows, Path(out), "p1-attribution")


@figure("p1-patching", "runs", "Activation patching of the held-out pair's order: the (4,3) input run with one "
        "block input, attention or MLP output at one position taken from (3,4), the answer margin per cell, one "
        "panel per run")
def p1_patching(run_dirs: Sequence[Path], out: str | Path, step: Step = None, run_steps: RunSteps = None,
                contexts: int = 0, key_pos: int = -1, by: str = "position") -> Path:
    """Not a figure of P1: where the anchors' order that decides the answer sits. For every key, the probe input of
    the held-out pair and of its reversed order in Fig. 3's template (``contexts`` > 0: that many noise contexts
    drawn as the task draws them, the same for both orders; ``key_pos``: where the key sits), run in fp32; the
    embeddings, each block's attention and MLP outputs and each block's output at each position patched from the
    reversed input into the held-out one (:func:`~anchorlab.analysis.patching.order_patching`), and the mean
    margin logit(inferential) − logit(symmetric) over the inputs. Where the two orders' margins differ (a
    composer), each cell also gives the share of that difference it moves. ``by="role"``: columns are roles
    instead of positions (the key, each anchor, the last position, the noise before and after), over every key
    position the task draws, ``contexts`` (default 4 there) each
    (:func:`~anchorlab.analysis.patching.order_patching_by_role`). CSV: one row per run, site and column."""
    from anchorlab.analysis.patching import order_patching, order_patching_by_role
    from anchorlab.plotting.mechanisms import plot_order_patching

    if by not in ("position", "role"):
        raise ConfigError(f"figure p1-patching: option by: 'position' or 'role', got {by!r}")
    panels, rows = [], []
    for d, model, cfg, at in _load_runs("p1-patching", run_dirs, step, run_steps):
        n, where = _probe_inputs("p1-patching", cfg, contexts, key_pos)
        if by == "role":
            if where is not None:
                raise ConfigError("figure p1-patching: option key_pos: by=role reads every key position; drop "
                                  "key_pos or use by=position")
            n = n or 4
            r = order_patching_by_role(model, cfg.task, contexts=n)
            apart = [x["key_pos"] for x in r["by_key_pos"] if not np.isnan(x["effect"]).all()]
            columns = r["roles"]
            inputs = (f"key positions 0-{cfg.task.seq_len - 3} × {n} drawn noise contexts a key; the two orders "
                      f"differ at key position{'s' if len(apart) != 1 else ''} {_positions(apart)}")
        else:
            r = order_patching(model, cfg.task, key_pos=where, contexts=n)
            columns, inputs = r["tokens"], _inputs_text(n, where)
        a1, a2 = r["pair"]
        names = r["names"]
        gap = ("the same answer: the order does not reach it" if np.isnan(r["effect"]).all()
               else "patched share of the difference in %")
        sep = "\n" if by == "role" else ", "  # the role's longer text on a line of its own
        panels.append({"margin": r["margin"], "effect": r["effect"], "rows": names, "tokens": columns,
                       "xlabel": "position (its token; x: the key; ·: drawn noise)" if by == "position" else
                       "role of the patched position (its positions and the key positions averaged)",
                       "title": f"{_label(cfg, d, at)}{sep}{inputs}\nmargin ({a1},{a2}) {r['clean']:+.1f}, reversed "
                                f"({a2},{a1}) {r['corrupted']:+.1f}: {gap}"})
        base = {"run_id": d.name, "step": at, "gamma": cfg.init.gamma, "seed": cfg.seeds.init_seed,
                "pair": f"({a1},{a2})", "contexts": n, "by": by, "clean_margin": r["clean"],
                "reversed_margin": r["corrupted"]}
        cells = ([{"position": j, "token": str(c)} for j, c in enumerate(columns)] if by == "position"
                 else [{"role": c} for c in columns])
        rows += [{**base, "site": site, "site_name": name, **cells[j],
                  "margin": None if np.isnan(r["margin"][i, j]) else float(r["margin"][i, j]),
                  "effect": None if np.isnan(r["effect"][i, j]) else float(r["effect"][i, j])}
                 for i, (site, name) in enumerate(zip(r["sites"], names)) for j in range(len(columns))]
    fig = plot_order_patching(panels)
    return save_figure(fig, rows, Path(out), "p1-patching")


@figure("p1-readouts", "runs", "P1 mechanism readouts over training (logged, or from kept checkpoints): the held-out "
        "answer and its margin, the routing scores over all keys (Fig. 3), the pair-order separation (Fig. 3b), "
        "where the first block leaves the pair's order (patching) and W_Q⁰'s stable rank, a line per run")
def p1_readouts(run_dirs: Sequence[Path], out: str | Path, every: int = 0) -> Path:
    """At every evaluation of each run (``every`` > 0: only epochs that are multiples of it) that logged P1's
    readouts (runs of 2 or more layers trained since 2026-11-28: :data:`~anchorlab.analysis.summary.LOGGED_READOUTS`;
    the answer readouts since 2026-11-29) or whose checkpoint of that step was kept (they are then computed from
    it, as training computes them; also where only the older readouts were logged): the run's logged (4,3)
    inferential / symmetric accuracy and seen test accuracy, the information-flow :func:`mechanism_scores`
    averaged over all keys of the held-out pair (:func:`mean_mechanism_scores`) with the number of keys routed
    inferential-ahead, E4's :func:`order_separation` in the first block's 2-D PCA map (as ``p1-fig3b`` draws it),
    the answer margin and the shares of the pair's order at the two anchors' positions after the first block (as
    ``p1-patching`` computes them): :func:`readouts`; and the first layer's W_Q stable rank (logged with the
    mechanism scalars, else from the checkpoint). The CSV's ``source`` says which ("logged" or "checkpoint").
    From a checkpoint, ~1-2 s at P1's paper config on one CPU thread; logged readouts need no weights (committed
    GPU records)."""
    from anchorlab.analysis.summary import LOGGED_READOUTS, ROUTING_READOUTS

    if every < 0:
        raise ConfigError(f"figure p1-readouts: option every: an epoch count >= 0 (0: every evaluation), "
                          f"got {every}")
    runs, rows, probes = [], [], set()
    for d in map(Path, run_dirs):
        if not (d / rundir.CONFIG).is_file():
            raise ConfigError(f"figure p1-readouts: {d} is not a run directory (no {rundir.CONFIG})")
        cfg = rundir.read_config(d)
        reason = _needs_composite_probe(cfg, 2) if isinstance(cfg, RunConfig) else "not an anchor-task run"
        if reason:
            raise ConfigError(f"figure p1-readouts: not applicable to run {d}: {reason}")
        kept = set(rundir.checkpoint_steps(d)) if (d / rundir.CKPT_DIR).is_dir() else set()
        run = []
        for r in rundir.read_metrics(d):
            if r["epoch"] == 0 or (every and r["epoch"] % every):
                continue
            if all(k in r for k in ROUTING_READOUTS) and (r["step"] not in kept or "answer_margin" in r):
                model = None  # logged (an order share is not logged where it is undefined)
                x = {key: r.get(name) for name, key in LOGGED_READOUTS.items()}
                x.update(keys=float(cfg.task.key_max - cfg.task.key_min + 1), source="logged")
            elif r["step"] in kept:  # not logged, or logged before the answer readouts were: from the weights
                model = load_model(d, r["step"])[0]
                x = {k: None if isinstance(v, float) and not np.isfinite(v) else v
                     for k, v in readouts(model, cfg.task).items()}
                x["source"] = "checkpoint"
            else:
                continue
            wq0 = r.get(WQ0_STABLE_RANK)
            if wq0 is None and model is not None:
                wq0 = stable_rank(linear_layer_spectra(model)["blocks.0.attn.W_Q"])
            x["wq0_stable_rank"] = wq0
            run.append({"run_id": d.name, "label": _label(cfg), "gamma": cfg.init.gamma,
                        "seed": cfg.seeds.init_seed, "epoch": r["epoch"], "step": r["step"],
                        "inferential": r.get("unseen_inferential_acc"), "symmetric": r.get("unseen_symmetric_acc"),
                        "seen_test": r.get("seen_test_acc"), **x})
        if not run:
            raise ConfigError(f"figure p1-readouts: {d} has no evaluation with logged readouts or a kept checkpoint"
                              + (f" at an epoch that is a multiple of {every}" if every else ""))
        probes.add("({},{})".format(*cfg.task.probe_pair))
        runs.append(run)
        rows += run
    return save_figure(plot_readouts(runs, pair=" / ".join(sorted(probes))), rows, Path(out), "p1-readouts")


# ------------------------------------------------------------------------------------------------
# Sweep grids (Fig. 10/11: γ × depth; Fig. 15/16: weight decay × learning rate)


def sweep_cells(sweep_dir: str | Path, x: str, y: str) -> tuple[list[Any], list[Any], dict[tuple[int, int], Path]]:
    """(xs, ys, {(i, j): run dir}) over the manifest's axes ``x`` and ``y``: per cell the first run in
    manifest order with a kept checkpoint (other axes, e.g. seeds, pick that first run). Cells without
    such a run are missing from the dict."""
    sweep_dir = Path(sweep_dir)
    if not (sweep_dir / MANIFEST).is_file():
        raise ConfigError(f"source: {sweep_dir} is not a sweep directory (no {MANIFEST}); this figure reads a "
                          "sweep's grid")
    manifest = rundir.read_json(sweep_dir / MANIFEST)
    for axis in (x, y):
        if axis not in manifest["axes"]:
            raise ConfigError(f"axis {axis!r}: not an axis of {sweep_dir} (axes: {', '.join(manifest['axes'])})")
    xs, ys = sorted(manifest["axes"][x]), sorted(manifest["axes"][y])
    cells: dict[tuple[int, int], Path] = {}
    for run_id, point in manifest["runs"].items():
        d = sweep_dir / run_id
        key = (ys.index(point[y]), xs.index(point[x]))
        if key not in cells and (d / rundir.CKPT_DIR).is_dir() and rundir.checkpoint_steps(d):
            cells[key] = d
    return xs, ys, cells


def lr_axis(sweep_dir: str | Path) -> str:
    """The learning-rate axis of a sweep: ``train.lr_multiplier`` (P1 App. E's m) or ``train.lr``."""
    axes = rundir.read_json(Path(sweep_dir) / MANIFEST)["axes"]
    return next((a for a in LR_AXES if a in axes), LR_AXES[0])


def _grid(name: str, sweep_dir: Path, out: Path, kind: str, x: str, y: str, y_top_first: bool,
          threshold: float, method: str = "pca") -> Path:
    word = _method(method)
    xs, ys, cells = sweep_cells(sweep_dir, x, y)
    panels, rows = {}, []
    for (i, j), d in cells.items():
        model, cfg = load_model(d)
        if kind == "cosine":
            reason = _needs_gpt(cfg)
            if reason:
                raise ConfigError(f"figure {name}: {reason}")
            c = _condensation(model, cfg, threshold)
            panels[(i, j)] = {"C": c["C"], "title": f"{len(c['groups'])} groups"}
            rows.append({x: xs[j], y: ys[i], "run_id": d.name, "n_groups": len(c["groups"]),
                         "largest_group_frac": max(len(g) for g in c["groups"]) / len(c["C"])})
        else:
            coords, ratio = embed_2d(embedding_rows(model, item_tokens(cfg.task)), method)
            panels[(i, j)] = {"coords": coords, "labels": item_tokens(cfg.task), "explained": ratio,
                              "color_values": item_tokens(cfg.task)}
            rows += [{x: xs[j], y: ys[i], "run_id": d.name, "method": method, "token": tok, "dim1": c[0],
                      "dim2": c[1]} for tok, c in zip(item_tokens(cfg.task), coords)]
    what = f"W_Q⁰ neuron cosine, greedy-reordered (threshold {threshold:g})" if kind == "cosine" else \
        f"item-token embeddings, {word} (colour = token value)"
    fig = plot_panel_grid(xs, ys, panels, kind, x.split(".")[-1], y.split(".")[-1], y_top_first, what)
    return save_figure(fig, rows, out, name)


@figure("p1-fig10", "sweep", "P1 Fig. 10: grid of W_Q(1) cosine matrices over γ (x) × depth (y)")
def p1_fig10(sweep_dir: Path, out: str | Path, threshold: float = 0.7) -> Path:
    return _grid("p1-fig10", sweep_dir, Path(out), "cosine", "init.gamma", "model.n_layers", False, threshold)


@figure("p1-fig11", "sweep", "P1 Fig. 11: grid of item-embedding PCA/t-SNE over γ (x) × depth (y)")
def p1_fig11(sweep_dir: Path, out: str | Path, method: str = "pca") -> Path:
    return _grid("p1-fig11", sweep_dir, Path(out), "pca", "init.gamma", "model.n_layers", False, 0.7, method)


@figure("p1-fig15", "sweep", "P1 Fig. 15: grid of W_Q(1) cosine matrices over weight decay (x) × learning rate (y)")
def p1_fig15(sweep_dir: Path, out: str | Path, threshold: float = 0.7) -> Path:
    return _grid("p1-fig15", sweep_dir, Path(out), "cosine", "train.weight_decay", lr_axis(sweep_dir), True,
                 threshold)


@figure("p1-fig16", "sweep", "P1 Fig. 16: grid of item-embedding PCA/t-SNE over weight decay (x) × learning rate (y)")
def p1_fig16(sweep_dir: Path, out: str | Path, method: str = "pca") -> Path:
    return _grid("p1-fig16", sweep_dir, Path(out), "pca", "train.weight_decay", lr_axis(sweep_dir), True, 0.7,
                 method)


SWEEP_FIGURES: dict[str, tuple[str, Callable[[Path], str], bool]] = {
    # name: (x axis, y axis (a function of the sweep dir), needs the Transformer)
    "p1-fig10": ("init.gamma", lambda d: "model.n_layers", True),
    "p1-fig11": ("init.gamma", lambda d: "model.n_layers", False),
    "p1-fig15": ("train.weight_decay", lr_axis, True),
    "p1-fig16": ("train.weight_decay", lr_axis, False),
}


def sweep_why_not(name: str, sweep_dir: str | Path, model_name: str) -> str | None:
    """None if sweep grid figure ``name`` applies to ``sweep_dir`` (its axes and model), else the reason."""
    x, y_of, needs_gpt = SWEEP_FIGURES[name]
    axes = rundir.read_json(Path(sweep_dir) / MANIFEST)["axes"]
    missing = [a for a in (x, y_of(sweep_dir)) if a not in axes]
    if missing:
        return f"the sweep has no {' / '.join(missing)} axis"
    if needs_gpt and model_name != "gpt":
        return f"needs the Transformer, not {model_name!r}"
    return None
