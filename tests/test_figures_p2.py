"""P2 analyses with known answers, and every P2 figure command from tiny runs."""

import csv

import numpy as np
import pytest
import torch

from anchorlab.analysis import p2 as A
from anchorlab.cli import main
from anchorlab.config import MemRsnTaskConfig, load_config
from anchorlab.theory import label_distribution_exact
from anchorlab.train import train

TINY = ["task.name='mem_rsn'", "task.data_size=2000", "model.d_model=16", "model.d_head=8", "model.d_mlp=32",
        "train.batch_size=100", "train.epochs=2", "train.lr=1e-3", "train.schedule='constant'",
        "train.eval_every=1", "train.checkpoint_every=1", "train.threads=1"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("p2runs")
    out = {}
    for model, extra in (("gpt", []), ("emb_mlp", ["task.seq_len=3"])):
        for g in (0.3, 0.8):
            d = root / f"{model}_{g}"
            train(load_config(None, [*TINY, f"model.name='{model}'", f"init.gamma={g}", *extra]), d,
                  show_progress=False)
            out[model, g] = d
    for name, extra in (("window", ["task.mem_label='key_window'"]),
                        ("ranges", ["task.rsn_anchors=[]", "task.masked=[]", "task.data_size=1000",
                                    "task.mem_label_ranges=[[30, 49], [30, 69], [30, 89], [30, 109]]"])):
        d = root / name
        train(load_config(None, [*TINY, *extra]), d, show_progress=False)
        out[name] = d
    return out


def test_averaging_operator_and_deviation():
    avg = A.averaging_operator(4)
    assert np.allclose(avg[2], [1 / 3, 1 / 3, 1 / 3, 0]) and np.allclose(avg.sum(1), 1)
    exact = np.broadcast_to(avg, (5, 4, 4))
    assert A.attention_vs_average(exact)["max_abs_dev"] == 0.0


def test_attention_deviation_value():
    eye = np.eye(3)
    # causal entries: row 1 (1 vs 1), row 2 (0 vs .5, 1 vs .5), row 3 (0,0,1 vs 1/3 each)
    r = A.attention_vs_average(eye)
    assert np.isclose(r["max_abs_dev"], 2 / 3)
    assert np.isclose(r["mean_abs_dev"], (0 + 0.5 + 0.5 + 1 / 3 + 1 / 3 + 2 / 3) / 6)


def test_wv_alignment_rank_one():
    rng = np.random.default_rng(0)
    W_E = rng.normal(size=(30, 8))
    W_V = np.outer(W_E[12], rng.normal(size=4))  # rank 1, column space = w_12
    r = A.wv_alignment(W_V, W_E, [12, 3])
    assert r["singular_values"][0] > 0 and np.allclose(r["singular_values"][1:], 0, atol=1e-10)
    assert np.isclose(r["abs_cos_u1"][0], 1.0)
    assert r["abs_cos_u1"][1] < 0.999


def test_theory_vs_trained_is_one_for_the_theory_embeddings():
    cfg = MemRsnTaskConfig()
    P = label_distribution_exact(cfg, train_only=True)
    W_E = np.zeros((cfg.vocab_size, cfg.vocab_size))
    for s in cfg.rsn_anchors:
        W_E[s] = P[s] - 1 / cfg.vocab_size  # embeddings exactly along the drift directions of Prop. 1
    r = A.theory_vs_trained(W_E, cfg)
    assert np.isclose(r["r_label"], 1.0) and r["r_eq14"] < 0.99
    assert np.isclose(r["row_trained"][4], 1.0) and r["row_anchor"] == 15


def test_embedding_matrix_of_both_models(runs):
    from anchorlab.analysis import load_model

    for key in (("gpt", 0.8), ("emb_mlp", 0.8)):
        model, cfg = load_model(runs[key])
        assert A.embedding_matrix(model).shape == (cfg.task.vocab_size, cfg.model.d_model)
    model, _ = load_model(runs["gpt", 0.8])
    p = A.first_layer_pattern(model, torch.randint(21, 121, (5, 9)))
    assert p.shape == (5, 9, 9) and np.allclose(p.sum(-1), 1) and np.allclose(np.triu(p[0], 1), 0)


def _rows(path):
    return list(csv.DictReader(open(path)))


@pytest.mark.parametrize("name,keys", [
    ("p2-fig3a", [("gpt", 0.3), ("gpt", 0.8)]),
    ("p2-fig3b", [("emb_mlp", 0.3), ("emb_mlp", 0.8)]),
    ("p2-fig4", [("emb_mlp", 0.8)]),
    ("p2-fig5", [("gpt", 0.8)]),
    ("p2-fig6", [("gpt", 0.8)]),
    ("p2-fig8", ["window", "ranges", ("gpt", 0.8)]),
])
def test_figure_commands_write_png_and_csv(runs, tmp_path, name, keys):
    assert main(["figure", name, *[str(runs[k]) for k in keys], "--out", str(tmp_path)]) == 0
    assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    rows = _rows(tmp_path / f"{name}.csv")
    assert rows
    if name in ("p2-fig4", "p2-fig5", "p2-fig6"):  # a one-run figure's CSV names its run on every row
        assert {r["run_id"] for r in rows} == {runs[keys[0]].name}
    if name.startswith("p2-fig3"):
        assert {r["gamma"] for r in rows} == {"0.3", "0.8"} and {r["set"] for r in rows} == {"mem", "rsn_train",
                                                                                          "rsn_test"}
        assert len(rows) == 2 * 3 * 3  # 2 runs x 3 evaluations x 3 sets
    if name == "p2-fig4":
        panels = {r["panel"] for r in rows}
        assert {"A_mem", "A_rsn", "B_centred_P", "C_label_theory", "pearson_r"} <= panels
        diag = [float(r["value"]) for r in rows if r["panel"] == "A_rsn" and r["s_i"] == r["s_j"]]
        assert np.allclose(diag, 1.0) and len(diag) == 2 * 10  # two checkpoints
    if name == "p2-fig6":
        dev = [r for r in rows if r["panel"] == "i_deviation"][0]
        assert 0 <= float(dev["max_abs_dev"]) <= 1
        assert len([r for r in rows if r["panel"] == "iii_alignment"]) == 20
    if name == "p2-fig8":
        right = [r for r in rows if r["panel"] == "right"]
        assert {r["group"] for r in right} == {"0", "1", "2", "3"}
        assert {r["mem_label"] for r in rows if r["panel"] == "left"} == {"key_window", "uniform"}


def test_figure_errors_name_the_problem(runs, tmp_path, capsys):
    assert main(["figure", "p2-fig3a", str(runs["emb_mlp", 0.8]), "--out", str(tmp_path)]) == 2
    assert "model.name = 'emb_mlp'" in capsys.readouterr().err
    assert main(["figure", "p2-fig5", str(runs["gpt", 0.8]), str(runs["gpt", 0.3]), "--out", str(tmp_path)]) == 2
    assert "takes one run directory" in capsys.readouterr().err
    assert main(["figure", "p2-fig3a", str(runs["gpt", 0.8]), "--best-epoch", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err  # the flag the user typed, not the option's name in the code
    assert "--best-epoch does not apply" in err and "use_best_epoch" not in err and "p1-gamma" in err
    # a one-run figure given a folder of runs or a sweep: one line (was: a missing config.json's errno)
    assert main(["figure", "p2-fig5", str(runs["gpt", 0.8].parent), "--out", str(tmp_path / "f")]) == 2
    assert "is not a run directory (no config.json)" in capsys.readouterr().err
    (tmp_path / "sw").mkdir()
    (tmp_path / "sw" / "sweep.json").write_text("{}")
    assert main(["figure", "p2-fig4", str(tmp_path / "sw"), "--out", str(tmp_path / "f")]) == 2
    assert "a sweep directory: give one of its runs" in capsys.readouterr().err
    assert not (tmp_path / "f").exists()
