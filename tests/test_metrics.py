import numpy as np

from anchorlab.config import RunConfig
from anchorlab.metrics import composite_metrics
from anchorlab.tasks import make_task_data


def test_inferential_and_symmetric_accuracy_from_known_predictions():
    cfg = RunConfig().replace(**{"task.data_size": 3200}).task
    d = make_task_data(cfg, 1)
    key, pair = d.extra["key"], d.extra["pair"]
    probe = (pair == [4, 3]).all(1)
    pred = d.targets.copy()  # perfect on seen pairs; (4,3) stores the inferential label
    m = composite_metrics(d, cfg, pred, np.zeros(len(d)))
    assert m["seen_train_acc"] == 1 and m["seen_test_acc"] == 1
    assert m["unseen_inferential_acc"] == 1 and m["unseen_symmetric_acc"] == 0
    assert m["unseen_deviation"] == {"0": 1.0}
    # a symmetric model answers x - 6 on (4,3)
    pred[probe] = key[probe] - 6
    m = composite_metrics(d, cfg, pred, np.zeros(len(d)))
    assert m["unseen_symmetric_acc"] == 1 and m["unseen_inferential_acc"] == 0
    assert m["unseen_symmetric_acc_xm0"] == 1 and m["unseen_symmetric_acc_xel"] == 1
    assert m["unseen_deviation"] == {"4": 1.0}
    # symmetric on test-type keys only
    pred[probe & ~d.extra["key_is_test"]] = key[probe & ~d.extra["key_is_test"]] - 10
    m = composite_metrics(d, cfg, pred, np.zeros(len(d)))
    assert m["unseen_inferential_acc_xel"] == 1 and m["unseen_symmetric_acc_xm0"] == 1
    assert 0 < m["unseen_inferential_acc"] < 1
    assert m["group_acc"]["4-3_xel"] == 1 and m["group_acc"]["4-3_xm0"] == 0


def test_seen_accuracy_leaves_the_held_out_pairs_out():
    """Seen-pair accuracy (P1 §4: generalization on data; the phase diagram's shading) is over the seen pairs only:
    a model wrong on every held-out input still scores 1, with one held-out pair (P1) or two (P1 App. E)."""
    for held in ([[4, 3]], [[3, 4], [4, 3]]):
        cfg = RunConfig().replace(**{"task.data_size": 3200, "task.held_out": held}).task
        d = make_task_data(cfg, 1)
        pred = d.targets.copy()
        held_rows = d.extra["held_out"]
        assert held_rows.sum() > 0
        pred[held_rows] = 0  # no held-out input answered
        m = composite_metrics(d, cfg, pred, np.zeros(len(d)))
        assert m["seen_train_acc"] == 1 and m["seen_test_acc"] == 1
        assert m["unseen_inferential_acc"] == 0
        pred[~held_rows & d.extra["key_is_test"]] += 1  # every seen test-type input wrong
        m = composite_metrics(d, cfg, pred, np.zeros(len(d)))
        assert m["seen_test_acc"] == 0 and m["seen_train_acc"] == 1


def test_deviation_histograms():
    """unseen_deviation: both key types, its 12 most frequent offsets; unseen_deviation_xel: train-type keys, every
    offset (the authors' code logs this one on 43_xel)."""
    cfg = RunConfig().replace(**{"task.data_size": 32_000}).task
    d = make_task_data(cfg, 1)
    key, pair, test = d.extra["key"], d.extra["pair"], d.extra["key_is_test"]
    probe = (pair == [4, 3]).all(1)
    pred = d.targets.copy()
    xel = np.flatnonzero(probe & ~test)
    offsets = np.arange(len(xel)) % 20 - 5  # 20 distinct offsets on the train-type keys, -5 .. 14
    pred[xel] = key[xel] - 10 + offsets
    pred[probe & test] = key[probe & test] - 6  # symmetric on the test-type keys
    m = composite_metrics(d, cfg, pred, np.zeros(len(d)))
    full = m["unseen_deviation_xel"]
    assert sorted(int(k) for k in full) == list(range(-5, 15))
    assert abs(sum(full.values()) - 1) < 1e-12
    assert full["0"] == np.mean(offsets == 0)
    pooled = m["unseen_deviation"]
    assert len(pooled) == 12
    assert max(pooled, key=pooled.get) == "4"  # the test-type keys' symmetric answers dominate the pooled one
    assert pooled["4"] == ((probe & test).sum() + (offsets == 4).sum()) / probe.sum()


def test_held_out_accuracies_by_key_position():
    """The held-out pair per key position: a model symmetric everywhere but where the second anchor is the last
    token (key at seq_len − 3) reads 1/0 at positions 0-5 and 0/0 at position 6, and the pooled accuracy is their
    mean weighted by the rows."""
    cfg = RunConfig().replace(**{"task.data_size": 32_000}).task
    d = make_task_data(cfg, 1)
    key, pair, pos = d.extra["key"], d.extra["pair"], d.extra["key_pos"]
    probe = (pair == [4, 3]).all(1)
    pred = key - 6  # symmetric on (4,3)
    last = cfg.seq_len - 3
    pred[probe & (pos == last)] = key[probe & (pos == last)] - 7  # x − 7 there
    m = composite_metrics(d, cfg, pred, np.zeros(len(d)))
    sym, inf = m["unseen_symmetric_by_key_pos"], m["unseen_inferential_by_key_pos"]
    assert list(sym) == [str(p) for p in range(last + 1)]
    assert all(sym[str(p)] == 1 for p in range(last)) and sym[str(last)] == 0 and set(inf.values()) == {0.0}
    share = (probe & (pos == last)).sum() / probe.sum()
    assert m["unseen_symmetric_acc"] == 1 - share
