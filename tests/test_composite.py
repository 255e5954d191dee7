import numpy as np
import pytest

from anchorlab.config import RunConfig
from anchorlab.tasks import make_task_data
from anchorlab.tasks.composite import group_sizes, inferential_shift, pair_shift, symmetric_shift


@pytest.fixture(scope="module")
def paper():
    cfg = RunConfig().task
    return cfg, make_task_data(cfg, 1)


def test_paper_sizes(paper):
    cfg, d = paper
    assert group_sizes(cfg) == (5_625, 50_625)
    assert len(d) == 16 * (5_625 + 50_625)
    assert int(d.in_train.sum()) == 759_375
    assert 759_375 // 2048 == 370  # batches per epoch with drop_last, as in the authors' log
    # ... and what training computes from the generated rows (TrainConfig.steps_per_epoch, RunConfig.total_steps)
    assert cfg.n_train_rows() == int(d.in_train.sum())
    assert RunConfig().train.steps_per_epoch(int(d.in_train.sum())) == 370
    assert RunConfig().total_steps() == 370 * 210


def test_shift_table():
    cfg = RunConfig().task
    assert pair_shift(cfg, 3, 4) == -6 and inferential_shift(cfg, 3, 4) == -10
    assert pair_shift(cfg, 4, 3) == -10 and symmetric_shift(cfg, 4, 3) == -6
    assert pair_shift(cfg, 1, 1) == 10 and pair_shift(cfg, 4, 4) == -16 and pair_shift(cfg, 2, 4) == -7


def test_sequences_and_labels(paper):
    cfg, d = paper
    x, pos, key, pair = d.inputs, d.extra["key_pos"], d.extra["key"], d.extra["pair"]
    r = np.arange(len(d))
    assert x.shape[1] == 9 and x.dtype == np.int64
    assert pos.min() == 0 and pos.max() == 6
    assert (x[r, pos] == key).all() and (x[r, pos + 1] == pair[:, 0]).all() and (x[r, pos + 2] == pair[:, 1]).all()
    # exactly one anchor pair per row: every other token is in the key range
    anchors = np.isin(x, [1, 2, 3, 4])
    assert (anchors.sum(1) == 2).all()
    assert x[~anchors].min() == 20 and x[~anchors].max() == 99  # keys and noise: {20, ..., 99}, both ends drawn
    shift = {(a, b): pair_shift(cfg, a, b) for a in range(1, 5) for b in range(1, 5)}
    shift[(4, 3)] = -10  # held-out rows store the inferential label
    expected = key + np.array([shift[(a, b)] for a, b in pair])
    assert (d.targets == expected).all()
    assert d.targets.min() == 4 and d.targets.max() == 109  # 20 - 16 (pair (4,4)) to 99 + 10 (pair (1,1))


def test_split_rule_and_held_out_pair(paper):
    cfg, d = paper
    key, pos, test = d.extra["key"], d.extra["key_pos"], d.extra["key_is_test"]
    assert ((key % 9 == pos) == test).all()
    is43 = (d.extra["pair"] == [4, 3]).all(1)
    assert is43.sum() == 5_625 + 50_625 and not d.in_train[is43].any()
    assert not d.in_train[test].any()
    assert d.in_train[~is43 & ~test].all()


def test_group_names_and_membership(paper):
    _, d = paper
    assert len(d.group_names) == 32 and "4-3_xel" in d.group_names and "3-4_xm0" in d.group_names
    g = d.group_names.index("4-3_xm0")
    rows = d.group == g
    assert (d.extra["pair"][rows] == [4, 3]).all() and d.extra["key_is_test"][rows].all()


def test_deterministic_and_seed_sensitive():
    cfg = RunConfig().replace(**{"task.data_size": 1600}).task
    a, b, c = make_task_data(cfg, 7), make_task_data(cfg, 7), make_task_data(cfg, 8)
    assert (a.inputs == b.inputs).all() and (a.targets == b.targets).all()
    assert not (a.inputs == c.inputs).all()


def test_modulus_seven_as_in_the_text():
    cfg = RunConfig().replace(**{"task.data_size": 3200, "task.split_modulus": 7}).task
    d = make_task_data(cfg, 1)
    assert ((d.extra["key"] % 7 == d.extra["key_pos"]) == d.extra["key_is_test"]).all()


def test_both_pairs_held_out_setting():
    cfg = RunConfig().replace(**{"task.data_size": 3200, "task.held_out": [[3, 4], [4, 3]]}).task
    d = make_task_data(cfg, 1)
    pair = d.extra["pair"]
    held = (pair == [3, 4]).all(1) | (pair == [4, 3]).all(1)
    assert not d.in_train[held].any() and d.extra["held_out"][held].all()
