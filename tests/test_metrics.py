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
