import numpy as np

from anchorlab.phase import phase_grid


def row(g, L, lr, seed, sym, inf, seen, best_inf=None):
    return {"init.gamma": g, "model.n_layers": L, "train.lr_multiplier": lr, "seed": seed, "status": "done",
            "unseen_symmetric_acc": sym, "unseen_inferential_acc": inf, "seen_test_acc": seen,
            "best_unseen_inferential_acc": inf if best_inf is None else best_inf,
            "best_unseen_symmetric_acc": sym, "best_seen_test_acc": seen}


def test_best_over_lr_then_mean_over_seeds_and_mask():
    rows = [
        row(0.5, 2, 10, 1, sym=1.0, inf=0.0, seen=1.0), row(0.5, 2, 20, 1, sym=0.6, inf=0.2, seen=1.0),
        row(0.5, 2, 10, 2, sym=0.8, inf=0.1, seen=1.0), row(0.5, 2, 20, 2, sym=0.4, inf=0.3, seen=1.0),
        row(0.8, 2, 10, 1, sym=0.0, inf=0.9, seen=0.95, best_inf=1.0), row(0.8, 2, 10, 2, sym=0.1, inf=0.7, seen=0.5),
        row(0.8, 3, 10, 1, sym=0.0, inf=0.0, seen=0.2), {"status": "missing", "init.gamma": 0.3, "model.n_layers": 2},
    ]
    g = phase_grid(rows, "init.gamma", "model.n_layers", ("unseen_symmetric_acc", "unseen_inferential_acc"))
    assert g["xs"] == [0.5, 0.8] and g["ys"] == [2, 3]
    sym, inf = g["unseen_symmetric_acc"], g["unseen_inferential_acc"]
    assert sym[0, 0] == (1.0 + 0.8) / 2 and inf[0, 0] == (0.2 + 0.3) / 2  # max over LR per metric, then mean
    assert inf[0, 1] == (0.9 + 0.7) / 2 and np.isnan(inf[1, 0])
    assert g["mask"].tolist() == [[False, True], [False, True]] and g["n_seeds"][0, 0] == 2
    best = phase_grid(rows, "init.gamma", "model.n_layers", ("unseen_inferential_acc",), use_best_epoch=True)
    assert best["unseen_inferential_acc"][0, 1] == (1.0 + 0.7) / 2


def test_mask_is_seen_test_accuracy_below_exactly_0_9():
    """P1 Fig. 2: shaded where the seen-pair test accuracy is < 90% (SPEC I.6, E1), with phase_grid's default
    threshold (the one the figure and report use): 0.89 and 0.8999 shaded, 0.90 and above not."""
    seen = {0.3: 0.89, 0.4: 0.8999, 0.5: 0.9, 0.6: 0.9001, 0.7: 1.0}
    rows = [row(g, 2, 10, 1, sym=0.5, inf=0.5, seen=s) for g, s in seen.items()]
    g = phase_grid(rows, "init.gamma", "model.n_layers", ("unseen_symmetric_acc",))
    assert g["xs"] == list(seen) and g["seen_test_acc"][0].tolist() == list(seen.values())
    assert g["mask"].tolist() == [[True, True, False, False, False]]
    # the compared value is the seed mean of the best over LR: seed 1 best 1.0 (its other rate 0.6), seed 2 0.8 ->
    # exactly 0.9, not shaded (a mean over the rates too would give 0.8 and shade it); seed 2 at 0.78 -> shaded
    for seed2, shaded in ((0.8, False), (0.78, True)):
        rows = [row(0.5, 2, 10, 1, 0.5, 0.5, seen=1.0), row(0.5, 2, 20, 1, 0.5, 0.5, seen=0.6),
                row(0.5, 2, 10, 2, 0.5, 0.5, seen=seed2)]
        g = phase_grid(rows, "init.gamma", "model.n_layers", ("unseen_symmetric_acc",))
        assert g["mask"].tolist() == [[shaded]]
