"""Addition (P1 Fig. 17a): pinned counts, the held-out square, encoded examples, the loss mask on the answer
digits, and exact match over the answer."""

from __future__ import annotations

import numpy as np
import pytest

from anchorlab.tasks.addition import (
    ANSWER,
    ROW_LEN,
    VOCAB_SIZE,
    all_pairs,
    answer_exact_match,
    decode,
    encode,
    in_test_square,
    loss_mask,
    operands,
    split_pairs,
    train_test_rows,
)


def test_pinned_counts_and_the_held_out_square():
    a, b = all_pairs()
    assert len(a) == 1_000_000 and len(set(zip(a[::997].tolist(), b[::997].tolist()))) == len(a[::997])
    (a_tr, b_tr), (a_te, b_te) = split_pairs()
    assert len(a_te) == 201 * 201 == 40_401 and len(a_tr) == 959_599
    assert a_te.min() == b_te.min() == 400 and a_te.max() == b_te.max() == 600
    assert not in_test_square(a_tr, b_tr).any()
    assert len({(x, y) for x, y in zip(a_te.tolist(), b_te.tolist())}) == 40_401


@pytest.mark.parametrize(("a", "b", "text", "tokens"), [
    (7, 45, "007+045=0052", [0, 0, 7, 10, 0, 4, 5, 11, 0, 0, 5, 2]),
    (999, 999, "999+999=1998", [9, 9, 9, 10, 9, 9, 9, 11, 1, 9, 9, 8]),
    (400, 600, "400+600=1000", [4, 0, 0, 10, 6, 0, 0, 11, 1, 0, 0, 0]),
    (0, 0, "000+000=0000", [0, 0, 0, 10, 0, 0, 0, 11, 0, 0, 0, 0]),
])
def test_encoded_examples(a, b, text, tokens):
    row = encode(a, b)
    assert row.tolist() == tokens and decode(row) == text and row.dtype == np.int64


def test_every_row_holds_its_sum_and_reads_back():
    train, test = train_test_rows()
    assert train.shape == (959_599, ROW_LEN) and test.shape == (40_401, ROW_LEN)
    assert train.max() < VOCAB_SIZE
    for rows in (train[::101], test):
        a, b = operands(rows)
        c = rows[:, ANSWER] @ np.array([1000, 100, 10, 1])
        assert (c == a + b).all()
    assert in_test_square(*operands(test)).all() and not in_test_square(*operands(train)).any()
    with pytest.raises(ValueError):
        encode(1000, 1)


def test_loss_mask_scores_exactly_the_answer_digits():
    rows = encode(np.array([7, 523]), np.array([45, 477]))
    targets = rows[:, 1:]  # next-token targets
    mask = loss_mask(len(rows))
    assert mask.shape == (2, ROW_LEN - 1) and mask.sum(axis=1).tolist() == [4, 4]
    assert (targets[mask].reshape(2, 4) == rows[:, ANSWER]).all()
    assert (rows[:, ANSWER.start - 1] == 11).all()  # the first answer digit is predicted at "="


def test_subsampled_training_set_is_seeded():
    (a1, b1), _ = split_pairs(n_train=5_000, seed=3)
    (a2, b2), _ = split_pairs(n_train=5_000, seed=3)
    (a3, _), _ = split_pairs(n_train=5_000, seed=4)
    assert len(a1) == 5_000 and (a1 == a2).all() and (b1 == b2).all() and not (a1 == a3).all()
    assert not in_test_square(a1, b1).any()
    with pytest.raises(ValueError):
        split_pairs(n_train=0)


def test_answer_exact_match():
    rows = encode(np.array([1, 2, 3, 4]), np.array([10, 20, 30, 40]))
    predicted = rows[:, ANSWER].copy()
    predicted[2, 3] += 1  # one wrong digit makes the whole answer wrong
    assert answer_exact_match(predicted, rows) == 0.75
    assert answer_exact_match(rows, rows) == 1.0  # full rows are accepted too
    with pytest.raises(ValueError):
        answer_exact_match(predicted[:, :3], rows)
