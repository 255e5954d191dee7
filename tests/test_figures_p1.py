"""P1 mechanism figures: each recipe writes its PNG and CSV from tiny runs; the new analyses have known answers."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from anchorlab.analysis import load_model
from anchorlab.analysis.attention import mechanism_edges, mechanism_scores
from anchorlab.analysis.embeddings import attention_output_vectors, item_tokens, single_anchor_layout
from anchorlab.analysis.summary import mechanism_scalars
from anchorlab.config import CompositeTaskConfig, ConfigError, load_config
from anchorlab.figures import draw, names
from anchorlab.figures.p1 import RUN_FIGURES, sweep_cells, sweep_why_not, why_not
from anchorlab.sweep import load_sweep, plan
from anchorlab.train import build_initialized_model, train
from tests.conftest import tiny_config

TASK = CompositeTaskConfig()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two tiny 2-layer composite runs (γ 0.5 and 1.0), 4 kept checkpoints each."""
    root = tmp_path_factory.mktemp("p1runs")
    out = []
    for g in (0.5, 1.0):
        cfg = tiny_config(**{"init.gamma": g, "train.epochs": 3})
        train(cfg, root / f"g{g}", show_progress=False)
        out.append(root / f"g{g}")
    return out


@pytest.fixture(scope="module")
def grid_sweep(tmp_path_factory):
    """A 2 (γ) × 2 (depth) sweep of 1-epoch runs, plus one missing run to leave a hole."""
    root = tmp_path_factory.mktemp("p1sweep")
    (root / "base.toml").write_text("[task]\ndata_size = 1600\n[model]\nd_model = 16\nd_head = 8\nd_mlp = 16\n"
                                    "[train]\nbatch_size = 128\nepochs = 1\nwarmup_epochs = 1\ncosine_epochs = 1\n"
                                    "threads = 1\n")
    (root / "s.toml").write_text('name = "g"\nbase = "base.toml"\n[axes]\n"init.gamma" = [0.5, 1.0]\n'
                                 '"model.n_layers" = [1, 2]\n')
    rows = plan(load_sweep(root / "s.toml"), root / "sw")
    for point, cfg, d in rows:
        if point != {"init.gamma": 1.0, "model.n_layers": 2}:
            train(cfg, d, show_progress=False)
    return root / "sw"


def read_csv(path):
    return list(csv.DictReader(open(path)))


# ---- known answers of the new analyses ----------------------------------------------------------


def test_mechanism_scores_on_hand_built_flows():
    P, key, a1, a2, last = 9, 2, 3, 4, 8
    sym = np.zeros((2, P, P))
    inf = np.zeros((2, P, P))
    for f in (sym, inf):
        for k in range(P):
            f[:, k, k] = 1.0  # every position attends to itself ...
    sym[0, last] = 0
    sym[0, last, [a1, a2]] = 0.5  # ... except the symmetric mechanism's queries
    sym[1, last] = 0
    sym[1, last, key] = 1.0
    inf[0, a1], inf[0, a2] = 0, 0
    inf[0, a1, key] = inf[0, a2, key] = 1.0
    inf[1, last] = 0
    inf[1, last, [a1, a2]] = 0.5
    assert mechanism_scores(sym) == {"symmetric": 1.0, "inferential": 0.0}
    assert mechanism_scores(inf) == {"symmetric": 0.0, "inferential": 1.0}
    uniform = np.tril(np.ones((P, P))) / np.arange(1, P + 1)[:, None]
    s = mechanism_scores(np.stack([uniform, uniform]))
    assert s["symmetric"] == pytest.approx((2 / 9 + 1 / 9) / 2)
    assert s["inferential"] == pytest.approx((0.5 * (1 / 4 + 1 / 5) + 2 / 9) / 2)
    e = mechanism_edges(2, -1, 9)
    assert e["symmetric"] == [(0, 8, 3), (0, 8, 4), (1, 8, 2)]
    with pytest.raises(ValueError, match="2 layers"):
        mechanism_scores(sym[:1])


def test_single_anchor_layout_shares_targets():
    keys, anchors = single_anchor_layout(TASK, [30, 31])
    assert anchors == [1, 2, 3, 4, 1, 2, 3, 4]
    assert keys == [25, 29, 32, 38, 26, 30, 33, 39]  # i - shift: shifts 5, 1, -2, -8
    shift = dict(zip(TASK.anchors, TASK.shifts))
    assert [k + shift[a] for k, a in zip(keys, anchors)] == [30] * 4 + [31] * 4
    with pytest.raises(ValueError, match="outside"):
        single_anchor_layout(TASK, [97])


def test_single_anchor_vectors_are_the_value_rows_of_each_input():
    from anchorlab.analysis.embeddings import anchor_value_vectors, single_anchor_vectors

    model = build_initialized_model(tiny_config(), TASK.vocab_size).eval()
    keys, anchors = single_anchor_layout(TASK, [40, 41])
    U = single_anchor_vectors(model, TASK, keys, anchors)
    assert U.shape == (8, 8)
    for i, (k, a) in enumerate(zip(keys, anchors)):
        np.testing.assert_allclose(U[i], anchor_value_vectors(model, TASK, [k], a)[0], atol=1e-6)


def test_attention_output_vectors_cover_every_ordered_pair():
    model = build_initialized_model(tiny_config(), TASK.vocab_size).eval()
    X, pairs = attention_output_vectors(model, TASK, n_per_pair=3, seed=0)
    assert X.shape == (12 * 3, 16) and pairs.shape == (36, 2)
    assert {tuple(p) for p in pairs.tolist()} == {(a, b) for a in range(1, 5) for b in range(1, 5) if a != b}
    X2, _ = attention_output_vectors(model, TASK, n_per_pair=3, seed=0)
    np.testing.assert_array_equal(X, X2)


def test_mechanism_scalars_for_the_emb_mlp():
    cfg = load_config(None, ["task.name='mem_rsn'", "task.seq_len=3", "task.data_size=2000", "model.name='emb_mlp'",
                             "model.d_model=8", "model.d_mlp=16"], training=False)  # the model only
    model = build_initialized_model(cfg, cfg.task.vocab_size)
    s = mechanism_scalars(model, embed_tokens=item_tokens(cfg.task))
    assert "wq0_n_groups" not in s and set(s) == {"stable_rank/W_E", "stable_rank/W_in", "stable_rank/W_U",
                                                 "embed_cov_top_share"}
    assert 0 < s["embed_cov_top_share"] <= 1


# ---- figures from runs ----------------------------------------------------------------------------


def test_every_p1_figure_is_registered():
    assert set(RUN_FIGURES) | {"p1-fig10", "p1-fig11", "p1-fig15", "p1-fig16"} <= set(names())


def test_fig3_flow_and_scores(runs, tmp_path):
    png = draw("p1-fig3", runs, tmp_path)
    assert png.stat().st_size > 10_000
    rows = read_csv(tmp_path / "p1-fig3.csv")
    scores = [r for r in rows if r["kind"] == "score"]
    assert len(scores) == 4 and {r["mechanism"] for r in scores} == {"symmetric", "inferential"}
    # the same scores averaged over every key of the held-out pair (20..99 in the template), per run
    every = [r for r in rows if r["kind"] == "score_all_keys"]
    assert len(every) == 4 and all(r["keys"] == "80" and 0 <= int(r["inferential_ahead"]) <= 80 for r in every)
    from anchorlab.analysis import load_model
    from anchorlab.analysis.attention import (
        DEFAULT_KEY_POS,
        default_probe_input,
        mechanism_scores,
        probe_information_flow,
    )
    model, cfg = load_model(runs[0])
    by_key = [mechanism_scores(probe_information_flow(model, default_probe_input(cfg.task, k, (4, 3))),
                               DEFAULT_KEY_POS)["symmetric"] for k in range(20, 100)]
    mine = next(r for r in every if r["run_id"] == Path(runs[0]).name and r["mechanism"] == "symmetric")
    # the figure's mean runs the 80 keys as one batch: equal to one forward a key up to fp32 rounding
    assert float(mine["weight"]) == pytest.approx(sum(by_key) / 80, abs=1e-6)
    edges = [r for r in rows if r["kind"] == "edge"]
    # causal softmax: every query's weights over keys sum to 1, in each layer, for each run
    for run in {r["run_id"] for r in edges}:
        for layer in ("0", "1"):
            for q in range(9):
                w = sum(float(r["weight"]) for r in edges if r["run_id"] == run and r["layer"] == layer
                        and r["query"] == str(q))
                assert w == pytest.approx(1.0, abs=1e-6)
                assert all(int(r["key"]) <= int(r["query"]) for r in edges)


def test_fig3b_pair_pca(runs, tmp_path):
    draw("p1-fig3b", runs[:1], tmp_path, n_per_pair=5)
    rows = read_csv(tmp_path / "p1-fig3b.csv")
    assert len(rows) == 12 * 5 and (tmp_path / "p1-fig3b.png").stat().st_size > 10_000
    # every row names the run and the checkpoint it was drawn from (the last kept one by default)
    from anchorlab import rundir

    assert {(r["run_id"], int(r["step"])) for r in rows} == {(runs[0].name, rundir.checkpoint_steps(runs[0])[-1])}


def test_fig4_boxes_follow_equal_targets(runs, tmp_path):
    draw("p1-fig4", runs[:1], tmp_path)
    rows = read_csv(tmp_path / "p1-fig4.csv")
    e5 = [r for r in rows if r["panel"] == "E5"]
    assert len(e5) == 121
    for r in e5:
        x1, x2 = int(r["row"]), int(r["col"])
        lower = x1 >= x2
        expect = (x1 == x2 + 6) if lower else (x2 == x1 + 3)  # f(x1;3,3)=f(x2;2,2); f(x1;1,2)=f(x2;1,3)
        assert (r["equal_target"] == "True") == expect
        assert -1 - 1e-9 <= float(r["cosine"]) <= 1 + 1e-9
    e6 = [r for r in rows if r["panel"] == "E6"]
    assert len(e6) == 24 * 24 and sum(r["equal_target"] == "True" for r in e6) == 6 * 16
    diag = [r for r in e6 if r["row"] == r["col"]]
    assert all(float(r["cosine"]) == pytest.approx(1.0) for r in diag)
    # the CSV marks an input against itself, so its on-box mean can leave those out as the title's does
    assert [r for r in e6 if r["self"] == "True"] == diag and all(r["self"] == "" for r in e5)
    assert sum(r["equal_target"] == "True" and r["self"] == "False" for r in e6) == 6 * 16 - 24


def test_fig4_center_subtracts_each_comparisons_mean_vector(runs, tmp_path):
    """``center=True``: E5 cosines are those of v − mean over both compared sets, E6 of u − mean over all u."""
    from anchorlab.analysis.embeddings import cosine_matrix, fused_vectors, single_anchor_vectors
    from anchorlab.figures.p1 import E5_KEYS, E5_LOWER, E5_UPPER, E6_TARGETS

    draw("p1-fig4", runs[:1], tmp_path / "plain")
    draw("p1-fig4", runs[:1], tmp_path / "centred", center=True)
    plain, centred = (read_csv(tmp_path / d / "p1-fig4.csv") for d in ("plain", "centred"))
    assert {r["centered"] for r in plain} == {"False"} and {r["centered"] for r in centred} == {"True"}
    model, cfg = load_model(runs[0])
    keys = list(E5_KEYS)
    v = {p: fused_vectors(model, cfg.task, keys, p) for p in (*E5_LOWER, *E5_UPPER)}
    a, b = v[E5_LOWER[0]], v[E5_LOWER[1]]
    mean = np.concatenate([a, b]).mean(axis=0)
    expect_lower = cosine_matrix(a - mean, b - mean)
    a, b = v[E5_UPPER[0]], v[E5_UPPER[1]]
    mean = np.concatenate([a, b]).mean(axis=0)
    expect_upper = cosine_matrix(a - mean, b - mean)
    for r in (r for r in centred if r["panel"] == "E5"):
        i, j = keys.index(int(r["row"])), keys.index(int(r["col"]))
        want = expect_lower[i, j] if i >= j else expect_upper[i, j]
        assert float(r["cosine"]) == pytest.approx(want, abs=1e-9)
    k6, a6 = single_anchor_layout(cfg.task, E6_TARGETS)
    u = single_anchor_vectors(model, cfg.task, k6, a6)
    expect6 = cosine_matrix(u - u.mean(axis=0))
    e6 = [float(r["cosine"]) for r in centred if r["panel"] == "E6"]
    np.testing.assert_allclose(np.reshape(e6, expect6.shape), expect6, atol=1e-9)
    assert not np.allclose(e6, [float(r["cosine"]) for r in plain if r["panel"] == "E6"])
    with pytest.raises(ConfigError, match="center: true or false"):
        draw("p1-fig4", runs[:1], tmp_path / "bad", center="maybe")
    assert not (tmp_path / "bad").exists()


def test_fig5_groups_and_pca(runs, tmp_path):
    draw("p1-fig5", runs, tmp_path, threshold=0.7)
    rows = read_csv(tmp_path / "p1-fig5.csv")
    neurons = [r for r in rows if r["kind"] == "wq_neuron"]
    assert len(neurons) == 2 * 8  # d_head 8, one head
    for run in {r["run_id"] for r in neurons}:
        order = [int(r["group"]) for r in neurons if r["run_id"] == run]
        assert order == sorted(order)  # reordered: each group contiguous, in creation order
    assert len([r for r in rows if r["kind"] == "embedding"]) == 2 * 80  # items 20..99


def test_fig12_eigenvalues_over_checkpoints(runs, tmp_path):
    draw("p1-fig12", runs, tmp_path)
    rows = read_csv(tmp_path / "p1-fig12.csv")
    steps = sorted({int(r["step"]) for r in rows})
    assert len(steps) == 4 and steps[0] == 0  # every kept checkpoint
    mine = [r for r in rows if r["run_id"] == runs[0].name]
    full = [float(r["eigenvalue"]) for r in mine if r["panel"] == "a"]  # (a): the whole spectrum, at the last step
    assert {int(r["step"]) for r in mine if r["panel"] == "a"} == {steps[-1]}
    assert len(full) == 16 and full == sorted(full, reverse=True) and min(full) >= 0
    for s in map(str, steps):  # (b): the leading top_k (default 4) at every step, and no more
        e = [float(r["eigenvalue"]) for r in mine if r["panel"] == "b" and r["step"] == s]
        assert len(e) == 4 and e == sorted(e, reverse=True)
    assert [float(r["eigenvalue"]) for r in mine if r["panel"] == "b" and int(r["step"]) == steps[-1]] == full[:4]


def test_fig13_spectra_and_stable_ranks(runs, tmp_path):
    draw("p1-fig13", runs, tmp_path)
    rows = read_csv(tmp_path / "p1-fig13.csv")
    mats = {r["matrix"] for r in rows}
    assert {"embed.W_E", "blocks.0.attn.W_Q", "blocks.1.mlp.W_out", "unembed.W_U"} <= mats
    for r in rows:
        assert 1.0 - 1e-9 <= float(r["stable_rank"]) <= int(max(int(x["index"]) for x in rows
                                                                if x["matrix"] == r["matrix"]))


def test_grid_figures_over_a_sweep(grid_sweep, tmp_path):
    xs, ys, cells = sweep_cells(grid_sweep, "init.gamma", "model.n_layers")
    assert xs == [0.5, 1.0] and ys == [1, 2] and set(cells) == {(0, 0), (0, 1), (1, 0)}  # (1.0, 2) not run
    draw("p1-fig10", [grid_sweep], tmp_path)
    rows = read_csv(tmp_path / "p1-fig10.csv")
    assert len(rows) == 3 and all(1 <= int(r["n_groups"]) <= 8 for r in rows)
    draw("p1-fig11", [grid_sweep], tmp_path)
    assert len(read_csv(tmp_path / "p1-fig11.csv")) == 3 * 80
    reason = sweep_why_not("p1-fig15", grid_sweep, "gpt")
    assert reason == "the sweep has no train.weight_decay / train.lr_multiplier axis"
    with pytest.raises(ConfigError, match="train.weight_decay"):
        draw("p1-fig15", [grid_sweep], tmp_path)


def test_a_runs_figure_draws_the_started_runs_of_a_partial_sweep(grid_sweep, tmp_path, capsys):
    """While a sweep runs, its later runs have no directory yet: a figure over the sweep draws the started ones
    and says so (it used to stop at the first missing directory); a sweep with none started is one clear error."""
    draw("p1-gamma", [grid_sweep], tmp_path)
    assert "drawing the 3 of its 4 runs started so far" in capsys.readouterr().err
    assert len(read_csv(tmp_path / "p1-gamma.csv")) == 3
    (tmp_path / "s.toml").write_text((grid_sweep.parent / "s.toml").read_text())
    (tmp_path / "base.toml").write_text((grid_sweep.parent / "base.toml").read_text())
    plan(load_sweep(tmp_path / "s.toml"), tmp_path / "empty")
    with pytest.raises(ConfigError, match="none of its 4 runs has started yet"):
        draw("p1-gamma", [tmp_path / "empty"], tmp_path / "f")


def test_a_folder_of_runs_stands_for_its_runs(grid_sweep, tmp_path):
    """A directory that holds run directories but is neither a run nor a sweep (runs/, a docs/ folder of copied
    runs) stands for its runs; it used to be taken as one run and drawn as nothing. One that holds no run is
    one clear error."""
    import shutil

    folder = tmp_path / "folder"
    for d in sorted(p for p in grid_sweep.iterdir() if (p / "config.json").is_file()):
        shutil.copytree(d, folder / d.name)
    draw("p1-gamma", [folder], tmp_path / "f")
    assert len(read_csv(tmp_path / "f" / "p1-gamma.csv")) == 3
    (tmp_path / "nothing").mkdir()
    with pytest.raises(ConfigError, match="nothing is not a run directory: no config.json"):
        draw("p1-gamma", [tmp_path / "nothing"], tmp_path / "g")


def test_figures_refuse_runs_they_do_not_apply_to(tmp_path):
    cfg = load_config(None, ["task.name='mem_rsn'", "task.seq_len=3", "task.data_size=2000", "model.name='emb_mlp'",
                             "model.d_model=8", "model.d_mlp=16", "train.epochs=1", "train.batch_size=200",
                             "train.threads=1"])
    train(cfg, tmp_path / "r", show_progress=False)
    assert why_not("p1-fig3", cfg).startswith("needs the Transformer")
    assert why_not("p1-fig13", cfg) is None
    with pytest.raises(ConfigError, match="not applicable"):
        draw("p1-fig5", [tmp_path / "r"], tmp_path / "f")
    draw("p1-fig13", [tmp_path / "r"], tmp_path / "f")
    assert {r["matrix"] for r in read_csv(tmp_path / "f" / "p1-fig13.csv")} == {"W_E", "W_in", "W_U"}
    one_layer = tiny_config(**{"model.n_layers": 1})
    assert "at least 2 layers" in why_not("p1-fig4", one_layer) and why_not("p1-fig3", one_layer) is None
    small_vocab = tiny_config(**{"task.key_min": 16, "task.key_max": 30, "task.vocab_size": 45})
    assert why_not("p1-fig3", small_vocab) == "the probe template's tokens go up to 63; task.vocab_size is 45"


def test_training_logs_mechanism_scalars(runs):
    """gpt on the composite task: every evaluation carries the scalars, and the summary the final ones."""
    from anchorlab import rundir

    hist = rundir.read_metrics(runs[0])
    for r in hist:
        assert 1 <= r["wq0_n_groups"] <= 8 and 0 < r["embed_cov_top_share"] <= 1
        assert r["stable_rank/blocks.0.attn.W_Q"] >= 1.0
    summary = rundir.read_json(runs[0] / "summary.json")
    assert summary["wq0_n_groups"] == hist[-1]["wq0_n_groups"]
    scalars = mechanism_scalars(load_model(runs[0])[0], embed_tokens=item_tokens(TASK))  # the last checkpoint
    assert scalars == {k: hist[-1][k] for k in scalars}


def test_tsne_keeps_separated_clusters_apart():
    from anchorlab.analysis.embeddings import embed_2d

    pytest.importorskip("sklearn")
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(0, 0.1, (15, 6)), rng.normal(5, 0.1, (15, 6))])
    coords, explained = embed_2d(X, "tsne", seed=1)
    assert coords.shape == (30, 2) and explained is None
    a, b = coords[:15], coords[15:]
    within = max(np.ptp(a, axis=0).max(), np.ptp(b, axis=0).max())
    assert np.linalg.norm(a.mean(0) - b.mean(0)) > within  # the two clusters do not mix
    np.testing.assert_allclose(embed_2d(X, "tsne", seed=1)[0], coords)  # seeded
    with pytest.raises(ValueError, match="method"):
        embed_2d(X, "umap")


def test_embedding_figures_take_a_method(runs, tmp_path, capsys):
    from anchorlab.cli import main

    pytest.importorskip("sklearn")
    assert main(["figure", "p1-fig5", str(runs[0]), "--out", str(tmp_path), "--method", "tsne"]) == 0
    rows = [r for r in read_csv(tmp_path / "p1-fig5.csv") if r["kind"] == "embedding"]
    assert len(rows) == 80 and {r["method"] for r in rows} == {"tsne"}
    with pytest.raises(ConfigError, match="method"):
        draw("p1-fig5", runs[:1], tmp_path, method="umap")
    assert main(["figure", "p1-fig13", str(runs[0]), "--out", str(tmp_path), "--method", "tsne"]) == 2
    assert "--method" in capsys.readouterr().err


def test_step_selects_the_checkpoint(runs, tmp_path):
    from anchorlab import rundir
    from anchorlab.cli import main

    kept = rundir.checkpoint_steps(runs[0])
    assert main(["figure", "p1-fig13", str(runs[0]), "--out", str(tmp_path / "s0"), "--step", "0"]) == 0
    draw("p1-fig13", runs[:1], tmp_path / "last")
    at0, last = read_csv(tmp_path / "s0" / "p1-fig13.csv"), read_csv(tmp_path / "last" / "p1-fig13.csv")
    assert at0[0]["matrix"] == last[0]["matrix"] and at0[0]["singular_value"] != last[0]["singular_value"]
    draw("p1-fig12", runs[:1], tmp_path / "e", step=[0, kept[-1]])
    assert sorted({int(r["step"]) for r in read_csv(tmp_path / "e" / "p1-fig12.csv")}) == [0, kept[-1]]


def test_two_steps_to_a_one_checkpoint_figure_is_one_line_exit_2(runs, tmp_path, capsys):
    """A figure that draws one checkpoint refuses two different --step values (it used to draw the last one
    silently), naming the figures that take several; the same value twice is that one checkpoint."""
    from anchorlab import rundir
    from anchorlab.cli import main

    last = rundir.checkpoint_steps(runs[0])[-1]
    assert main(["figure", "p1-fig13", str(runs[0]), "--out", str(tmp_path / "f"), "--step", "0", "--step",
                 str(last)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "give --step once" in err and "p1-fig12" in err and "p2-fig4" in err
    assert not (tmp_path / "f").exists()
    assert main(["figure", "p1-fig13", str(runs[0]), "--out", str(tmp_path / "g"), "--step", "0", "--step",
                 "0"]) == 0
    assert {int(r["step"]) for r in read_csv(tmp_path / "g" / "p1-fig13.csv")} == {0}
    with pytest.raises(ConfigError, match="step"):
        draw("p1-fig4", runs[:1], tmp_path, step=[7])


def test_readouts_along_training(runs, tmp_path):
    """p1-readouts: a row per evaluated epoch (the tiny runs' epochs 1-3; with every=2, epoch 2 only), the logged
    answer beside the model's readouts: as training logged them, or, for a run that did not log them, computed
    from the kept checkpoint of that step, with the same values."""
    import shutil

    from anchorlab import rundir
    from anchorlab.analysis.attention import mean_mechanism_scores
    from anchorlab.analysis.embeddings import embed_2d, order_separation
    from anchorlab.analysis.patching import order_patching
    from anchorlab.analysis.summary import ANSWER_READOUTS, LOGGED_READOUTS

    png = draw("p1-readouts", runs, tmp_path)
    assert png.stat().st_size > 10_000
    rows = read_csv(tmp_path / "p1-readouts.csv")
    assert [(r["run_id"], int(r["epoch"]), r["source"]) for r in rows] == [
        (d.name, e, "logged") for d in runs for e in (1, 2, 3)]
    r = rows[1]  # the first run at epoch 2: its logged answer and the readouts of its checkpoint's model
    logged = next(m for m in rundir.read_metrics(runs[0]) if m["epoch"] == 2)
    assert float(r["inferential"]) == logged["unseen_inferential_acc"] and int(r["step"]) == logged["step"]
    model, cfg = load_model(runs[0], logged["step"])
    mean, ahead, n = mean_mechanism_scores(model, cfg.task, cfg.task.probe_pair)
    assert float(r["routing_symmetric"]) == pytest.approx(mean["symmetric"]) and float(r["keys"]) == n == 80
    X, pairs = attention_output_vectors(model, cfg.task)
    assert float(r["order_separation"]) == pytest.approx(order_separation(embed_2d(X, "pca")[0], pairs))
    # the same run without logged readouts (trained before they were logged): from its checkpoints
    old = tmp_path / "old"
    shutil.copytree(runs[0], old)
    (old / rundir.METRICS).write_text("".join(json.dumps({k: v for k, v in m.items() if k not in LOGGED_READOUTS})
                                              + "\n" for m in rundir.read_metrics(runs[0])))
    draw("p1-readouts", [old], tmp_path / "old_out", every=2)
    (again,) = read_csv(tmp_path / "old_out" / "p1-readouts.csv")
    assert (int(again["epoch"]), again["source"]) == (2, "checkpoint")
    for key in ("routing_symmetric", "routing_inferential", "order_separation", "wq0_stable_rank", "answer_margin"):
        assert float(again[key]) == pytest.approx(float(r[key]), rel=1e-9), key
    assert float(r["answer_margin"]) == pytest.approx(order_patching(model, cfg.task)["clean"])
    # a run that logged the routing readouts but not yet the answer ones (2026-11-28): from the checkpoint too
    (old / rundir.METRICS).write_text("".join(json.dumps({k: v for k, v in m.items() if k not in ANSWER_READOUTS})
                                              + "\n" for m in rundir.read_metrics(runs[0])))
    draw("p1-readouts", [old], tmp_path / "older_out", every=2)
    (older,) = read_csv(tmp_path / "older_out" / "p1-readouts.csv")
    assert older["source"] == "checkpoint" and float(older["answer_margin"]) == pytest.approx(float(r["answer_margin"]))


def test_readouts_bad_input_is_one_line_exit_2(runs, tmp_path, capsys):
    from anchorlab.cli import main

    assert main(["figure", "p1-readouts", str(runs[0]), "--option", "every=-1", "--out", str(tmp_path / "a")]) == 2
    assert "option every" in capsys.readouterr().err and not (tmp_path / "a").exists()
    assert main(["figure", "p1-readouts", str(runs[0]), "--option", "every=7", "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no evaluation with logged readouts or a kept checkpoint at an epoch that is a " \
        "multiple of 7" in err


# ---- RUN_DIR@STEP: a checkpoint per run -------------------------------------------------------------


def _cli(*args):
    from anchorlab.cli import main

    return main(["figure", *map(str, args)])


def test_at_step_is_the_same_as_step_on_one_run(runs, tmp_path):
    from anchorlab import rundir

    s = rundir.checkpoint_steps(runs[0])[1]
    for name in ("p1-fig13", "p1-fig5", "p1-fig3b"):
        assert _cli(name, f"{runs[0]}@{s}", "--out", tmp_path / "at") == 0
        assert _cli(name, runs[0], "--step", s, "--out", tmp_path / "step") == 0
        at, step = (read_csv(tmp_path / d / f"{name}.csv") for d in ("at", "step"))
        assert at == step
    for name in ("p1-fig13", "p1-fig5"):  # the multi-run figures say the step of each row
        assert {int(r["step"]) for r in read_csv(tmp_path / "at" / f"{name}.csv")} == {s}


def test_two_runs_at_different_steps_in_one_figure(runs, tmp_path):
    from anchorlab import rundir

    s0, s1 = rundir.checkpoint_steps(runs[0])[1], rundir.checkpoint_steps(runs[1])[-1]
    draw("p1-fig5", [f"{runs[0]}@{s0}", f"{runs[1]}@{s1}"], tmp_path / "both")
    both = read_csv(tmp_path / "both" / "p1-fig5.csv")
    assert {(r["run_id"], int(r["step"])) for r in both} == {(runs[0].name, s0), (runs[1].name, s1)}
    for d, s in ((runs[0], s0), (runs[1], s1)):  # each run's rows are those of that run alone at its step
        draw("p1-fig5", [d], tmp_path / d.name, step=[s])
        assert [r for r in both if r["run_id"] == d.name] == read_csv(tmp_path / d.name / "p1-fig5.csv")
    # @STEP wins over --step for its run; the others take --step
    assert _cli("p1-fig13", runs[0], f"{runs[1]}@{s1}", "--step", 0, "--out", tmp_path / "mix") == 0
    mix = read_csv(tmp_path / "mix" / "p1-fig13.csv")
    assert {(r["run_id"], int(r["step"])) for r in mix} == {(runs[0].name, 0), (runs[1].name, s1)}
    # the same run twice, at two steps
    draw("p1-fig3", [f"{runs[0]}@0", f"{runs[0]}@{s0}"], tmp_path / "twice")
    assert {int(r["step"]) for r in read_csv(tmp_path / "twice" / "p1-fig3.csv")} == {0, s0}


def test_a_checkpoints_label_names_its_epoch(runs):
    # two checkpoints of one run side by side (p1-fig3, p1-fig5 titles) differ only in when they were taken
    from anchorlab import rundir
    from anchorlab.figures.p1 import _label

    cfg = rundir.read_config(runs[0])
    s = rundir.checkpoint_steps(runs[0])[1]
    (epoch,) = [r["epoch"] for r in rundir.read_metrics(runs[0], rundir.EPOCHS) if r["step"] == s]
    assert _label(cfg, runs[0], s) == f"{_label(cfg)}, epoch {epoch}" and epoch > 0
    assert _label(cfg, runs[0], 0).endswith(", epoch 0")
    assert _label(cfg, runs[0], s + 1).endswith(f", step {s + 1}")  # a step no epoch ended at


def test_fig12_part_b_stops_at_the_runs_step(runs, tmp_path):
    from anchorlab import rundir

    kept0, kept1 = rundir.checkpoint_steps(runs[0]), rundir.checkpoint_steps(runs[1])
    draw("p1-fig12", [f"{runs[0]}@{kept0[2]}", runs[1]], tmp_path)
    rows = read_csv(tmp_path / "p1-fig12.csv")
    steps = {d.name: sorted({int(r["step"]) for r in rows if r["run_id"] == d.name}) for d in runs}
    assert steps == {runs[0].name: kept0[:3], runs[1].name: kept1}
    at = [r for r in rows if r["run_id"] == runs[0].name and int(r["step"]) == kept0[2]]
    draw("p1-fig12", [runs[0]], tmp_path / "step", step=[kept0[2]])  # (a) at STEP: the eigenvalues at STEP
    assert at == read_csv(tmp_path / "step" / "p1-fig12.csv")


def test_a_directory_named_with_an_at_is_taken_whole(runs, tmp_path):
    link = tmp_path / "run@7"
    link.symlink_to(runs[0], target_is_directory=True)
    draw("p1-fig13", [link], tmp_path / "whole")
    draw("p1-fig13", [f"{link}@0"], tmp_path / "at0")
    assert {r["step"] for r in read_csv(tmp_path / "at0" / "p1-fig13.csv")} == {"0"}


@pytest.mark.parametrize("source, figure, message", [
    ("{run}@abc", "p1-fig5", "must be an integer >= 0, got 'abc'"),
    ("{run}@-1", "p1-fig5", "must be an integer >= 0, got '-1'"),
    ("{run}@", "p1-fig13", "must be an integer >= 0, got ''"),
    ("{run}@5", "p1-fig12", "has no checkpoint at step 5; kept steps: [0, "),
    ("{run}_missing@5", "p1-fig5", "is not a run or sweep directory"),
    ("{run}@0", "p1-curves", "@STEP does not apply to this figure"),
    ("{run}@0", "p1-gamma", "@STEP does not apply to this figure"),
])
def test_bad_at_step_is_one_line_exit_2_nothing_written(runs, tmp_path, capsys, source, figure, message):
    source = source.format(run=runs[0])
    assert _cli(figure, runs[1], source, "--out", tmp_path / "f") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and source in err
    assert not (tmp_path / "f").exists()


def test_key_answers_on_hand_built_predictions():
    from anchorlab.analysis.answers import key_answers, shift_name

    keys = np.array([20, 20, 20, 20, 21, 21, 22, 22])
    pred = keys + np.array([-10, -10, -6, -7, -10, -10, -7, -7])
    rows = key_answers(keys, pred, inferential=-10, symmetric=-6)
    assert [(r["key"], r["n"], r["inferential"], r["symmetric"]) for r in rows] == [
        (20, 4, 0.5, 0.25), (21, 2, 1.0, 0.0), (22, 2, 0.0, 0.0)]
    assert [(r["top_other"], r["top_other_share"]) for r in rows] == [("x−7", 0.25), ("", 0.0), ("x−7", 1.0)]
    assert rows[0]["other"] == pytest.approx(0.25) and (shift_name(3), shift_name(0)) == ("x+3", "x")


def test_keys_figure_resolves_the_logged_accuracy_over_the_keys(runs, tmp_path):
    """p1-keys at the last checkpoint: the per-key shares, weighted by their inputs, are the run's logged
    inferential and symmetric accuracy at that step (the same model, data and precision)."""
    from anchorlab import rundir

    draw("p1-keys", runs, tmp_path)
    rows = read_csv(tmp_path / "p1-keys.csv")
    assert (tmp_path / "p1-keys.png").stat().st_size > 10_000
    for d in runs:
        mine = [r for r in rows if r["run_id"] == d.name]
        step = rundir.checkpoint_steps(d)[-1]
        [logged] = [m for m in rundir.read_metrics(d) if m["step"] == step]
        n = sum(int(r["n"]) for r in mine)
        assert [int(r["key"]) for r in mine] == sorted({int(r["key"]) for r in mine}) and len(mine) > 10
        for share, metric in (("inferential", "unseen_inferential_acc"), ("symmetric", "unseen_symmetric_acc")):
            assert sum(float(r[share]) * int(r["n"]) for r in mine) / n == pytest.approx(logged[metric], abs=1e-9)
    assert {r["pair"] for r in rows} == {"(4,3)"}
    with pytest.raises(ConfigError, match="composed"):
        draw("p1-keys", runs, tmp_path, composed=1.5)
    # by the key's position: each position's shares are what the evaluation logged for it
    draw("p1-keys", runs, tmp_path / "pos", by="key_pos")
    rows = read_csv(tmp_path / "pos" / "p1-keys.csv")
    for d in runs:
        mine = [r for r in rows if r["run_id"] == d.name]
        [logged] = [m for m in rundir.read_metrics(d) if m["step"] == rundir.checkpoint_steps(d)[-1]]
        assert [r["key_pos"] for r in mine] == list(logged["unseen_inferential_by_key_pos"])
        for share in ("inferential", "symmetric"):
            assert [float(r[share]) for r in mine] == pytest.approx(
                list(logged[f"unseen_{share}_by_key_pos"].values()), abs=1e-9)
    with pytest.raises(ConfigError, match="option by: 'key' or 'key_pos'"):
        draw("p1-keys", runs, tmp_path / "bad", by="position")


def test_keys_panels_of_another_pair_get_their_own_legend():
    """Runs probing different pairs are labelled per panel, not with the last run's pair."""
    from anchorlab.plotting.figures import plot_key_answers

    rows = [{"key": k, "inferential": 1.0, "symmetric": 0.0, "top_other": "", "top_other_share": 0.0} for k in (20, 21)]
    panels = [{"title": "a", "rows": rows, "pair": "(4,3)", "inferential": "x−10", "symmetric": "x−6"},
              {"title": "b", "rows": rows, "pair": "(4,3)", "inferential": "x−10", "symmetric": "x−6"},
              {"title": "c", "rows": rows, "pair": "(2,1)", "inferential": "x−3", "symmetric": "x−9"}]
    axes = plot_key_answers(panels).axes
    legends = [ax.get_legend() for ax in axes]
    assert legends[1] is None and legends[0] is not None and legends[2] is not None
    assert "inferential (2,1) → x−3" in [t.get_text() for t in legends[2].get_texts()]
    assert "inferential (4,3) → x−10" in [t.get_text() for t in legends[0].get_texts()]


def test_figure_defaults_are_p1s_values():
    """P1's stated analysis settings are the defaults (arXiv 2405.05409, Fig. 3-5, 10, 15): W_Q neurons grouped at
    cosine > 0.7 (Fig. 5, 10, 15 and the logged mechanism scalars), key 99 in Fig. 3, keys 30-40 in Fig. 4; Fig.
    3b's 50 random keys per ordered pair with t-SNE seed 5 are the authors' figure code's (the paper: 10,000
    sequences, `--option n_per_pair=834`)."""
    import inspect

    from anchorlab.analysis import condensation, embeddings, summary
    from anchorlab.figures import p1

    def default(fn, name):
        return inspect.signature(inspect.unwrap(fn)).parameters[name].default

    for fn in (condensation.greedy_groups, condensation.n_groups, summary.mechanism_scalars, p1.p1_fig5,
               p1.p1_fig10, p1.p1_fig15):
        assert default(fn, "threshold") == 0.7, fn.__name__
    assert default(p1.p1_fig3, "key") == 99
    assert p1.E5_KEYS == tuple(range(30, 41))
    assert (default(p1.p1_fig3b, "n_per_pair"), default(p1.p1_fig3b, "seed")) == (50, 5)
    assert default(embeddings.tsne_2d, "seed") == 5
