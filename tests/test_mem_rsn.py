import dataclasses
import json

import numpy as np
import pytest

from anchorlab.cli import main
from anchorlab.config import ConfigError, MemRsnTaskConfig, RunConfig, load_config
from anchorlab.metrics import mem_rsn_metrics
from anchorlab.models import build_model
from anchorlab.tasks import make_task_data
from anchorlab.tasks.mem_rsn import MEM, RSN_TEST, RSN_TRAIN, anchor_tuples, memory_lookup
from anchorlab.train import train

CONFIGS = __import__("pathlib").Path(__file__).resolve().parents[1] / "configs" / "p2"


@pytest.fixture(scope="module")
def paper():
    cfg = MemRsnTaskConfig()
    return cfg, make_task_data(cfg, 1)


def test_paper_sizes_and_equal_counts(paper):
    cfg, d = paper
    assert len(d) == 200_000 and d.inputs.shape == (200_000, 9) and d.inputs.dtype == np.int64
    tuples, counts = np.unique(d.extra["pair"], axis=0, return_counts=True)
    assert len(tuples) == 200 and (counts == 1_000).all()
    subset = d.extra["subset"]
    assert subset.dtype == np.int8
    assert np.bincount(subset).tolist() == [100_000, 98_000, 2_000]
    assert int(d.in_train.sum()) == 198_000
    assert d.group_names == ["mem", "rsn_train", "rsn_test"] and (d.group == subset).all()


def test_data_size_can_count_training_rows_only():
    """SPEC ambiguity (P2 §3.1): whether P2's 200k includes the masked pairs; "train" reads it as not."""
    cfg = MemRsnTaskConfig(data_size_counts="train")
    assert cfg.rows_per_combination == 1_011 and cfg.n_train_rows() == 198 * 1_011 == 200_178
    small = MemRsnTaskConfig(data_size=1_000, data_size_counts="train")  # not a multiple of 200: allowed
    d = make_task_data(small, 1)
    _, counts = np.unique(d.extra["pair"], axis=0, return_counts=True)
    assert (counts == 6).all() and int(d.in_train.sum()) == small.n_train_rows() == 198 * 6
    assert np.bincount(d.extra["subset"]).tolist() == [600, 588, 12]
    assert MemRsnTaskConfig().n_train_rows() == 198_000  # the default counts the masked tuples too


def test_data_size_counts_keeps_p2_run_ids():
    """A field added after P2 runs existed is hashed only when set: the default P2 config and the CPU Transformer
    config keep the ids they had before it (their committed and in-progress run directories stay theirs)."""
    default = load_config(None, ["task.name='mem_rsn'"])
    assert default.run_id() == "4715ecc1fc4d"
    assert load_config(CONFIGS / "transformer_cpu.toml").run_id() == "82c8ecd7418a"
    assert load_config(None, ["task.name='mem_rsn'", "task.data_size_counts='train'"]).run_id() != default.run_id()


def test_sequence_layout(paper):
    cfg, d = paper
    x, pos, key, pair = d.inputs, d.extra["key_pos"], d.extra["key"], d.extra["pair"]
    r = np.arange(len(d))
    assert pos.min() == 0 and pos.max() == 6 and np.bincount(pos).min() > 27_000  # uniform on 0..6
    assert (x[r, pos] == key).all() and (x[r, pos + 1] == pair[:, 0]).all() and (x[r, pos + 2] == pair[:, 1]).all()
    anchors = x < 21
    assert (anchors.sum(1) == 2).all()
    assert x[~anchors].min() == 21 and x[~anchors].max() == 120
    # memory pairs use only memory anchors, reasoning pairs only reasoning anchors
    assert (pair[subset_is(d, MEM)] <= 10).all() and (pair[~subset_is(d, MEM)] >= 11).all()


def subset_is(d, code):
    return d.extra["subset"] == code


def test_reasoning_labels_are_key_plus_sum(paper):
    _, d = paper
    rsn = ~subset_is(d, MEM)
    assert (d.targets[rsn] == d.extra["key"][rsn] + d.extra["pair"][rsn].sum(1)).all()
    assert d.targets[rsn].min() == 21 + 22 and d.targets[rsn].max() == 120 + 40


def test_memory_labels_are_a_lookup(paper):
    cfg, d = paper
    mem = subset_is(d, MEM)
    key, pair, y = d.extra["key"][mem], d.extra["pair"][mem], d.targets[mem]
    table = memory_lookup(cfg, 1)
    assert len(table) == 100 * 100
    assert all(table[(int(k), int(a), int(b))] == t for k, (a, b), t in zip(key, pair, y))
    # consistent across rows sharing (key, anchors), whatever the noise and key position
    combo = (key * 1000 + pair[:, 0] * 100 + pair[:, 1])
    order = np.argsort(combo, kind="stable")
    same = combo[order][1:] == combo[order][:-1]
    assert same.sum() > 50_000 and (y[order][1:][same] == y[order][:-1][same]).all()
    assert len(np.unique(d.extra["key_pos"][mem][order][1:][same] != d.extra["key_pos"][mem][order][:-1][same])) == 2
    # labels are U(Z), not key + sum
    assert y.min() == 21 and y.max() == 120 and (y == key + pair.sum(1)).mean() < 0.05


def test_masked_pairs_never_trained(paper):
    _, d = paper
    pair = d.extra["pair"]
    masked = ((pair == [11, 13]).all(1)) | ((pair == [13, 11]).all(1))
    assert masked.sum() == 2_000
    assert (subset_is(d, RSN_TEST) == masked).all() and not d.in_train[masked].any() and d.in_train[~masked].all()
    assert (subset_is(d, RSN_TRAIN) == (~masked & (pair >= 11).all(1))).all()


def test_determinism_and_seed_dependence():
    cfg = MemRsnTaskConfig(data_size=2_000)
    a, b, c = make_task_data(cfg, 7), make_task_data(cfg, 7), make_task_data(cfg, 8)
    assert (a.inputs == b.inputs).all() and (a.targets == b.targets).all()
    assert memory_lookup(cfg, 7) == memory_lookup(cfg, 7)
    la, lc = memory_lookup(cfg, 7), memory_lookup(cfg, 8)
    assert np.mean([la[k] == lc[k] for k in la]) < 0.05  # ~1/100 agree by chance
    assert not (a.inputs == c.inputs).all()


def test_emb_mlp_layout_has_no_noise():
    cfg = MemRsnTaskConfig(seq_len=3, data_size=2_000)
    d = make_task_data(cfg, 1)
    assert d.inputs.shape == (2_000, 3) and (d.extra["key_pos"] == 0).all()
    assert (d.inputs[:, 0] == d.extra["key"]).all() and (d.inputs[:, 1:] == d.extra["pair"]).all()


def test_mixed_tuples():
    cfg = MemRsnTaskConfig(include_mixed=True, data_size=4_000)
    tuples, codes = anchor_tuples(cfg)
    assert len(tuples) == 400 and (codes == 3).sum() == 200
    d = make_task_data(cfg, 1)
    mixed = d.extra["subset"] == 3
    assert d.group_names[3] == "mixed" and mixed.sum() == 2_000 and d.in_train[mixed].all()
    table = memory_lookup(cfg, 1)
    k, p = d.extra["key"][mixed], d.extra["pair"][mixed]
    assert all(table[(int(z), int(a), int(b))] == t for z, (a, b), t in zip(k, p, d.targets[mixed]))


@pytest.mark.parametrize("override, field", [
    ("task.masked=[[1,2]]", "task.masked"),
    ("task.masked=[[11,12,13]]", "task.masked"),
    ("task.rsn_anchors=[10,11]", "task.rsn_anchors"),
    ("task.mem_anchors=[1,1]", "task.mem_anchors"),
    ("task.mem_anchors=[1,50]", "task.mem_anchors"),
    ("task.data_size=1234", "task.data_size"),
    ("task.vocab_size=160", "task.vocab_size"),
    ("task.seq_len=2", "task.seq_len"),
    ("task.q=0", "task.q"),
    ("task.data_size_counts='test'", "task.data_size_counts"),
    ("task.data_size=0", "task.data_size"),
])
def test_bad_values_name_the_field(override, field):
    with pytest.raises(ConfigError) as e:
        load_config(None, ["task.name='mem_rsn'", override])
    assert str(e.value).startswith(field), str(e.value)


def test_metrics_by_subset():
    d = make_task_data(MemRsnTaskConfig(data_size=2_000), 1)
    pred = d.targets.copy()
    pred[d.extra["subset"] == MEM] = 0  # wrong on D_mem only
    loss = np.where(d.extra["subset"] == RSN_TEST, 5.0, 1.0)
    m = mem_rsn_metrics(d, MemRsnTaskConfig(data_size=2_000), pred, loss)
    assert (m["mem_acc"], m["rsn_train_acc"], m["rsn_test_acc"]) == (0.0, 1.0, 1.0)
    assert (m["mem_loss"], m["rsn_train_loss"], m["rsn_test_loss"], m["train_loss"]) == (1.0, 1.0, 5.0, 1.0)
    assert m["group_acc"] == {"mem": 0.0, "rsn_train": 1.0, "rsn_test": 1.0}


def test_data_command_exports_subset(tmp_path):
    out = tmp_path / "d.npz"
    assert main(["data", "--set", "task.name='mem_rsn'", "--set", "task.data_size=2000", "--out", str(out)]) == 0
    z = np.load(out)
    assert z["subset"].dtype == np.int8 and np.bincount(z["subset"]).tolist() == [1000, 980, 20]
    assert list(z["group_names"]) == ["mem", "rsn_train", "rsn_test"] and z["pair"].shape == (2000, 2)


P2_KEYS = ("mem_acc", "mem_loss", "rsn_train_acc", "rsn_train_loss", "rsn_test_acc", "rsn_test_loss", "train_loss")


@pytest.mark.parametrize("model", ["gpt", "emb_mlp"])
def test_tiny_training_run(tmp_path, model):
    sets = ["task.name='mem_rsn'", "task.data_size=2000", f"model.name='{model}'", "model.d_model=16",
            "model.d_head=8", "model.d_mlp=32", "train.batch_size=100", "train.epochs=2", "train.lr=1e-3",
            "train.schedule='constant'", "train.eval_every=1", "train.checkpoint_every=1", "train.threads=1"]
    if model == "emb_mlp":
        sets.append("task.seq_len=3")
    cfg = load_config(None, sets)
    s = train(cfg, tmp_path / "r", show_progress=False)
    assert (tmp_path / "r" / "DONE").exists()
    hist = [json.loads(line) for line in (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in hist] == [0, 1, 2]
    for k in P2_KEYS:
        assert all(np.isfinite(r[k]) for r in hist), k
    assert set(s["best"]) == {"mem_acc", "rsn_train_acc", "rsn_test_acc"}
    assert s["group_acc"].keys() == {"mem", "rsn_train", "rsn_test"}
    assert s["n_train"] == 1980 and s["steps"] == 2 * 19
    assert hist[-1]["train_loss"] < hist[0]["train_loss"]  # it learns something




def test_p2_paper_configs():
    t = load_config(CONFIGS / "transformer_paper.toml")
    assert t.task == MemRsnTaskConfig() and t.model.name == "gpt"
    assert (t.model.d_model, t.model.d_head, t.model.d_mlp, t.model.n_layers, t.model.n_heads) == (200, 64, 512, 2, 1)
    # P2's Transformer is P1's architecture (post-LN, ReLU, n_ctx 20, LN eps) at P2's sizes: nothing else differs
    assert t.model == dataclasses.replace(RunConfig().model, d_model=200, d_head=64, d_mlp=512)
    assert t.task.vocab_size == 200 and t.task.vocab_size == t.model.d_model  # d_vob = d_m = 200
    m = build_model(t.model, t.task.vocab_size)
    assert tuple(m.embed.W_E.shape) == (200, 200) and tuple(m.unembed.W_U.shape) == (200, 200)
    e = load_config(CONFIGS / "emb_mlp_paper.toml")
    assert e.task.seq_len == 3 and (e.model.name, e.model.d_model, e.model.d_mlp, e.model.act) == (
        "emb_mlp", 200, 512, "tanh")
    for c in (t, e):
        tr = c.train
        assert (tr.batch_size, tr.schedule, tr.lr, tr.grad_clip, tr.weight_decay, tr.epochs) == (
            100, "constant", 1e-5, 1.0, 0.01, 1000)
        assert c.init.gamma == 0.8
        assert 50 % tr.checkpoint_every == 0 and 900 % tr.checkpoint_every == 0  # P2 Fig. 4A's epochs 50 and 900


def test_train_command_prints_p2_headline(tmp_path, capsys):
    out = tmp_path / "r"
    args = ["train", "--out", str(out), "--set", "task.name='mem_rsn'", "--set", "task.data_size=2000",
            "--set", "task.seq_len=3", "--set", "model.name='emb_mlp'", "--set", "model.d_model=16",
            "--set", "model.d_mlp=16", "--set", "train.epochs=1", "--set", "train.batch_size=100",
            "--set", "train.threads=1"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert (out / "DONE").exists() and "rsn_test_acc" in printed and "mem_acc" in printed


def test_progress_postfix_is_task_aware(tmp_path):
    from anchorlab.metrics import progress_postfix

    p1 = {"loss": 1.23456, "seen_train_acc": 0.5, "seen_test_acc": 0.25, "unseen_inferential_acc": 0.5,
          "unseen_symmetric_acc": 0.125}
    assert progress_postfix(p1) == {"loss": "1.23", "seen": "0.25", "inf": "0.50", "sym": "0.12"}
    p2 = {"loss": 0.5, "mem_acc": 0.1, "rsn_train_acc": 0.9, "rsn_test_acc": 0.8}
    assert progress_postfix(p2) == {"loss": "0.5", "mem": "0.10", "rsn": "0.90", "test": "0.80"}
    # the progress bar path of train() runs on the P2 task
    cfg = load_config(None, ["task.name='mem_rsn'", "task.data_size=2000", "task.seq_len=3", "model.name='emb_mlp'",
                             "model.d_model=8", "model.d_mlp=8", "train.epochs=1", "train.batch_size=500",
                             "train.threads=1"])
    assert train(cfg, tmp_path / "bar", show_progress=True)["epochs"] == 1


def test_key_window_memory_labels():
    """P2 Fig. 8 left, F_mem,2: a memory label is drawn once per (key, pair) from U{z - sum(a)..z + sum(a)}."""
    cfg = MemRsnTaskConfig(mem_label="key_window", data_size=20_000)
    d = make_task_data(cfg, 3)
    mem = d.extra["subset"] == MEM
    key, total, y = d.extra["key"][mem], d.extra["pair"][mem].sum(1), d.targets[mem]
    assert ((y >= key - total) & (y <= key + total)).all()
    assert (y != key).any() and (y == key - total).any() and (y == key + total).any()  # the whole window
    table = memory_lookup(cfg, 3)
    assert all(table[(int(k), *map(int, p))] == int(t) for k, p, t in zip(key, d.extra["pair"][mem], y))
    rsn = ~mem  # reasoning rows unchanged
    assert (d.targets[rsn] == d.extra["key"][rsn] + d.extra["pair"][rsn].sum(1)).all()
    with pytest.raises(ConfigError, match="task.mem_label"):
        MemRsnTaskConfig(mem_label="key_window", key_min=15, key_max=100).validate()


def test_label_range_groups_memory_only():
    """P2 Fig. 8 right: four memory groups (blocks of first anchors) with label ranges 30..29+20i."""
    ranges = ((30, 49), (30, 69), (30, 89), (30, 109))
    cfg = MemRsnTaskConfig(rsn_anchors=(), masked=(), mem_label_ranges=ranges, data_size=10_000)
    d = make_task_data(cfg, 1)
    assert (d.extra["subset"] == MEM).all() and d.in_train.all()
    g, first, y = d.extra["mem_group"], d.extra["pair"][:, 0], d.targets
    assert sorted(set(zip(first.tolist(), g.tolist()))) == [(1, 0), (2, 0), (3, 0), (4, 1), (5, 1),
                                                           (6, 2), (7, 2), (8, 2), (9, 3), (10, 3)]
    for i, (lo, hi) in enumerate(ranges):
        assert y[g == i].min() == lo and y[g == i].max() == hi
    pred = np.full(len(d), 40)  # inside every range, correct nowhere except by chance
    m = mem_rsn_metrics(d, cfg, pred, np.ones(len(d)))
    assert [m[f"mem_g{i}_in_range"] for i in range(4)] == [1.0] * 4
    pred[g == 0] = 60  # outside group 0's range only
    m = mem_rsn_metrics(d, cfg, pred, np.ones(len(d)))
    assert m["mem_g0_in_range"] == 0.0 and m["mem_g1_in_range"] == 1.0
    with pytest.raises(ConfigError, match="task.mem_label_ranges"):
        MemRsnTaskConfig(mem_label_ranges=((30, 250),)).validate()
