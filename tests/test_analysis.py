"""Known-answer tests for anchorlab.analysis (tiny CPU models only)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from anchorlab.analysis import load_model
from anchorlab.analysis.attention import default_probe_input, flow_edges, information_flow, probe_information_flow
from anchorlab.analysis.condensation import greedy_groups, n_groups, neuron_cosine, reorder, wq_neurons
from anchorlab.analysis.embeddings import (
    anchor_value_vectors,
    cosine_matrix,
    embedding_rows,
    equal_anchor_target_mask,
    equal_target_mask,
    fused_vectors,
    pca_2d,
)
from anchorlab.analysis.spectra import (
    embedding_covariance_eigs,
    linear_layer_spectra,
    singular_values,
    stable_rank,
    top_eig_share,
)
from anchorlab.analysis.summary import mechanism_scalars
from anchorlab.config import CompositeTaskConfig
from anchorlab.rundir import load_checkpoint
from anchorlab.train import build_initialized_model, train
from tests.conftest import tiny_config

TASK = CompositeTaskConfig()


@pytest.fixture(scope="module")
def tiny_model():
    return build_initialized_model(tiny_config(), TASK.vocab_size).eval()


def test_information_flow_averages_heads_and_lists_edges():
    p0 = torch.zeros(2, 3, 3)  # 2 heads, 3 positions
    p0[:, 0, 0] = 1.0
    p0[0, 1, 0], p0[1, 1, 1] = 1.0, 1.0  # heads disagree at query 1 -> 0.5 / 0.5
    p0[:, 2, 2] = 1.0
    p1 = torch.eye(3).expand(2, 3, 3)
    flow = information_flow([p0, p1.unsqueeze(0)])
    assert flow.shape == (2, 3, 3)
    np.testing.assert_allclose(flow[0], [[1, 0, 0], [0.5, 0.5, 0], [0, 0, 1]])
    np.testing.assert_allclose(flow[1], np.eye(3))
    assert flow_edges(flow, 0.6) == [(0, 0, 0, 1.0), (0, 2, 2, 1.0), (1, 0, 0, 1.0), (1, 1, 1, 1.0), (1, 2, 2, 1.0)]
    assert (0, 1, 0, 0.5) in flow_edges(flow)
    assert len(flow_edges(flow)) == 7  # zeros are never edges
    cache = {"blocks.1.attn.hook_pattern": p1.unsqueeze(0), "blocks.0.attn.hook_pattern": p0.unsqueeze(0)}
    np.testing.assert_allclose(information_flow(cache), flow)  # cache order does not matter


def test_probe_input_and_flow_on_tiny_model(tiny_model):
    x = default_probe_input(TASK)
    assert x.tolist() == [[35, 63, 99, 4, 3, 38, 42, 36, 62]]
    flow = probe_information_flow(tiny_model, x)
    assert flow.shape == (2, 9, 9)
    np.testing.assert_allclose(flow.sum(axis=2), 1.0, atol=1e-5)  # softmax rows
    assert np.allclose(np.triu(flow, 1), 0.0)  # causal


def test_a_batch_of_probe_inputs_gives_each_inputs_own_flow(tiny_model):
    """probe_information_flows (the keys of the held-out pair in one forward, as training's readouts run them)
    gives, input by input, what one forward of that input gives."""
    from anchorlab.analysis.attention import probe_information_flows, probe_tokens

    keys = [20, 57, 99]
    flows = probe_information_flows(tiny_model, probe_tokens(TASK, keys, (4, 3)))
    assert flows.shape == (3, 2, 9, 9)
    for flow, k in zip(flows, keys):
        np.testing.assert_allclose(flow, probe_information_flow(tiny_model, default_probe_input(TASK, k)), atol=1e-6)
    assert not np.allclose(flows[0], flows[2], atol=1e-4)  # the keys' inputs differ, and so do their flows


def test_greedy_groups_identical_and_orthogonal_neurons():
    W = np.array([[1.0, 0, 0], [0, 1.0, 0], [2.0, 0, 0], [0, 0, 1.0], [0, 3.0, 0.1]])
    C = neuron_cosine(W)
    np.testing.assert_allclose(np.diag(C), 1.0)
    assert C[0, 2] == pytest.approx(1.0) and C[0, 1] == 0.0
    groups = greedy_groups(C, 0.7)
    assert groups == [[0, 2], [1, 4], [3]]
    assert n_groups(C, 0.7) == 3
    assert n_groups(neuron_cosine(np.eye(4)), 0.7) == 4
    Cr, perm = reorder(C, groups)
    assert perm.tolist() == [0, 2, 1, 4, 3]
    assert Cr[0, 1] == pytest.approx(1.0) and Cr[2, 3] > 0.7


def test_wq_neurons_are_columns_of_stored_w_q(tiny_model):
    W = wq_neurons(tiny_model, 0)
    W_Q = tiny_model.blocks[0].attn.W_Q.detach()
    H, D, K = W_Q.shape
    assert W.shape == (H * K, D)
    np.testing.assert_allclose(W[1], W_Q[0, :, 1].double().numpy())


def test_spectra_rank_one_and_orthogonal():
    u, v = torch.randn(6, 1, dtype=torch.float64), torch.randn(1, 4, dtype=torch.float64)
    s = singular_values(u @ v)
    assert s.shape == (4,) and s[0] > 0 and np.all(s[1:] < 1e-12 * s[0])
    assert stable_rank(s) == pytest.approx(1.0)
    Q, _ = torch.linalg.qr(torch.randn(5, 5, dtype=torch.float64))
    assert stable_rank(singular_values(3 * Q)) == pytest.approx(5.0)


def test_linear_layer_spectra_shapes(tiny_model):
    spec = linear_layer_spectra(tiny_model)
    cfg = tiny_config().model
    D, HK = cfg.d_model, cfg.n_heads * cfg.d_head
    assert len(spec["blocks.0.attn.W_Q"]) == min(D, HK) and len(spec["blocks.1.attn.W_O"]) == min(D, HK)
    assert len(spec["blocks.0.mlp.W_in"]) == min(D, cfg.d_mlp)
    assert {"embed.W_E", "pos_embed.W_pos", "unembed.W_U"} <= set(spec)
    assert not any(n.endswith((".w", ".b", "b_U")) for n in spec)
    assert all(np.all(np.diff(s) <= 1e-12) for s in spec.values())


def test_covariance_eigs_and_top_share():
    X = np.outer(np.arange(10.0), [1.0, 2.0, 0.0])  # points on a line through the origin
    eigs = embedding_covariance_eigs(X)
    assert eigs[0] > 0 and np.all(eigs[1:] < 1e-10) and top_eig_share(eigs) == pytest.approx(1.0)
    iso = embedding_covariance_eigs(np.concatenate([np.eye(3), -np.eye(3)]))
    np.testing.assert_allclose(iso, iso[0])
    assert top_eig_share(iso) == pytest.approx(1 / 3)


def test_pca_of_points_on_a_line():
    t = np.linspace(-1, 1, 20)
    X = np.outer(t, [1.0, -2.0, 0.5, 3.0]) + 7.0
    coords, ratio = pca_2d(X)
    assert coords.shape == (20, 2)
    assert ratio[0] == pytest.approx(1.0) and ratio[1] == pytest.approx(0.0, abs=1e-12)
    assert abs(np.corrcoef(coords[:, 0], t)[0, 1]) == pytest.approx(1.0)


def test_order_separation_on_hand_placed_pairs():
    from anchorlab.analysis.embeddings import order_separation

    pairs = np.array([(1, 2), (2, 1), (1, 3), (3, 1)] * 2)
    # each order of a pair at its own point, the two pairs' orders 1 apart, other pairs 10 apart
    at = {(1, 2): (0, 0), (2, 1): (1, 0), (1, 3): (10, 0), (3, 1): (11, 0)}
    points = np.array([at[tuple(p)] for p in pairs.tolist()], dtype=float)
    # reversed pairs: 1 and 1; other pairs: |(0)-(10)|, |(0)-(11)|, |(1)-(10)|, |(1)-(11)| = 10, 11, 9, 10
    assert order_separation(points, pairs) == pytest.approx(1 / 10)
    merged = np.array([at[min(tuple(p), tuple(p)[::-1])] for p in pairs.tolist()], dtype=float)
    assert order_separation(merged, pairs) == 0.0  # the model sees the unordered pair
    with pytest.raises(ValueError, match="both orders"):
        order_separation(points[:1], pairs[:1])


def test_cosine_matrix():
    C = cosine_matrix(np.array([[1.0, 0], [0, 2.0]]), np.array([[3.0, 3.0], [-1.0, 0]]))
    np.testing.assert_allclose(C, [[np.sqrt(0.5), -1.0], [np.sqrt(0.5), 0.0]])


def test_equal_target_masks():
    keys = list(range(30, 41))
    M = equal_target_mask(keys, (3, 3), keys, (2, 2), TASK)
    assert M[keys.index(36), keys.index(30)]  # f(36;3,3) = 32 = f(30;2,2)
    assert M.sum() == 5 and all(M[i, j] == (keys[i] == keys[j] + 6) for i in range(11) for j in range(11))
    U = equal_target_mask(keys, (1, 2), keys, (1, 3), TASK)
    assert all(U[i, j] == (keys[j] == keys[i] + 3) for i in range(11) for j in range(11))
    A = equal_anchor_target_mask(range(30, 34), 1, range(40, 45), 4, TASK)  # x1 + 5 = x2 - 8
    assert np.argwhere(A).tolist() == [[0, 3], [1, 4]]  # 30 + 5 = 43 - 8, 31 + 5 = 44 - 8


def test_fused_and_value_vectors_shapes(tiny_model):
    cfg = tiny_config().model
    v = fused_vectors(tiny_model, TASK, range(30, 41), (3, 3))
    assert v.shape == (11, cfg.d_model) and np.isfinite(v).all()
    u = anchor_value_vectors(tiny_model, TASK, range(30, 35), 2)
    assert u.shape == (5, cfg.n_heads * cfg.d_head)
    assert embedding_rows(tiny_model, range(20, 100)).shape == (80, cfg.d_model)


def test_mechanism_scalars(tiny_model):
    m = mechanism_scalars(tiny_model, embed_tokens=range(20, 100))
    cfg = tiny_config().model
    assert 1 <= m["wq0_n_groups"] <= cfg.n_heads * cfg.d_head
    assert 0 < m["embed_cov_top_share"] <= 1
    assert m["stable_rank/blocks.0.attn.W_Q"] >= 1.0
    assert all(isinstance(v, float) for v in m.values())


def test_training_logs_the_readouts_of_each_evaluated_model_and_trains_the_same(tmp_path):
    """Every evaluation of a 2-layer composite GPT logs P1's routing and pair-order readouts of the model it
    evaluates (equal to them recomputed from the checkpoint of that step); computing them draws nothing, so the
    weights are those of a run that logs nothing from the model. A 1-layer run logs no routing."""
    from anchorlab import rundir
    from anchorlab.analysis.summary import LOGGED_READOUTS, readouts

    cfg = tiny_config(**{"train.epochs": 2})
    train(cfg, tmp_path / "logged", show_progress=False)
    train(cfg, tmp_path / "plain", show_progress=False, weight_metrics=lambda model: {})
    a, b = load_checkpoint(tmp_path / "logged"), load_checkpoint(tmp_path / "plain")
    assert all(torch.equal(a[k], b[k]) for k in b)
    for r in rundir.read_metrics(tmp_path / "logged"):
        model, _ = load_model(tmp_path / "logged", r["step"])
        x = readouts(model, cfg.task)
        # an order share is undefined (NaN) where the two orders' margins are close: it is then not logged
        assert {name: r.get(name) for name in LOGGED_READOUTS} == {
            name: x[key] if math.isfinite(x[key]) else None for name, key in LOGGED_READOUTS.items()}
        assert r["answer_margin"] == x["answer_margin"] and "flow_symmetric" in r
        assert 0 <= r["flow_symmetric"] <= 1 and 0 <= r["flow_inferential_ahead"] <= 80 and r["order_separation"] >= 0
    one = tiny_config(**{"train.epochs": 1, "model.n_layers": 1})
    train(one, tmp_path / "one", show_progress=False)
    assert not set(LOGGED_READOUTS) & set(rundir.read_metrics(tmp_path / "one")[-1])
    # a vocabulary without the probe template's tokens (up to 63): no readouts, rather than a failed evaluation
    from anchorlab.analysis.summary import logs_readouts, training_metrics

    small = tiny_config(**{"task.key_min": 16, "task.key_max": 30, "task.vocab_size": 45})
    assert logs_readouts(cfg) and not logs_readouts(small)
    logged = training_metrics(small)(build_initialized_model(small, small.task.vocab_size))
    assert "wq0_n_groups" in logged and not set(LOGGED_READOUTS) & set(logged)


def test_load_model_round_trip(tmp_path):
    cfg = tiny_config(**{"train.epochs": 1})
    train(cfg, tmp_path, show_progress=False)
    x = torch.randint(20, 100, (4, cfg.task.seq_len))
    model0, cfg0 = load_model(tmp_path, step=0)
    assert cfg0 == cfg
    with torch.no_grad():  # step 0 is the initialized model, before any update
        torch.testing.assert_close(model0(x), build_initialized_model(cfg, cfg.task.vocab_size)(x), rtol=0, atol=0)
        last, _ = load_model(tmp_path)
        ref = build_initialized_model(cfg, cfg.task.vocab_size)
        ref.load_state_dict(load_checkpoint(tmp_path))
        torch.testing.assert_close(last(x), ref(x), rtol=0, atol=0)
        assert not torch.equal(last(x), model0(x))


def test_plots_return_figures():
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    from anchorlab.plotting.mechanisms import (
        plot_cosine_heatmap,
        plot_embedding_pca,
        plot_information_flow,
        plot_spectra,
    )

    flow = np.stack([np.tril(np.ones((4, 4))) / np.arange(1, 5)[:, None]] * 2)
    C = neuron_cosine(np.random.default_rng(0).normal(size=(6, 3)))
    coords, ratio = pca_2d(np.random.default_rng(1).normal(size=(8, 5)))
    figs = [plot_information_flow(flow, [35, 99, 4, 3], min_weight=0.1, title="t"),
            plot_cosine_heatmap(C, boxes=np.eye(6, dtype=bool), tick_labels=range(6), title="t"),
            plot_embedding_pca(coords, range(8), explained=ratio),
            plot_spectra([{"a": np.array([3.0, 1.0, 0.0]), "b": np.array([1.0])}, {"a": np.array([2.0, 2.0])}],
                         labels=["x", "y"], normalize=True)]
    assert all(isinstance(f, Figure) for f in figs)
    for f in figs:
        plt.close(f)
