"""Addition with a held-out square (P1 Fig. 17a, following Hu et al. 2024, arXiv 2402.17709): a + b = c.

All pairs a, b ∈ [0, 999] (1,000,000); the test set is the square a, b ∈ [400, 600] (201 × 201 = 40,401
pairs), the training set everything else (959,599). Every test pair has its nearest neighbours outside the
square only, so a model that answers from similar seen cases fails inside it while one that learned the
digit rule does not.

Tokenization, digit level, fixed width: a and b as 3 digits, c as 4 digits (c ≤ 1998), leading zeros kept::

    ids   0-9 = the digits, 10 = "+", 11 = "="          (VOCAB_SIZE = 12)
    row   a2 a1 a0 + b2 b1 b0 = c3 c2 c1 c0             (ROW_LEN = 12 tokens)
    e.g.  7 + 45 = 52  ->  "007+045=0052"  ->  [0, 0, 7, 10, 0, 4, 5, 11, 0, 0, 5, 2]

The answer's digits are predicted in written order (most significant first), one per position, and scored
only there: with next-token rows ``inputs = row[:-1]``, ``targets = row[1:]``, the loss mask is
``ANSWER_TARGETS`` (the positions from "=" on) and greedy decoding writes ``row[ANSWER]`` from
``row[:ANSWER.start]``. Why fixed width: every row has the same length and the answer sits in the same four
positions, so there is no padding and no end token (the answer's length is known), and each position holds
the same place value in every row, so a model is not asked to infer the operands' lengths as well.
"""

from __future__ import annotations

import numpy as np

MAX_OPERAND = 999
TEST_RANGE = (400, 600)  # inclusive, for both a and b
PLUS, EQUALS = 10, 11
VOCAB_SIZE = 12
OPERAND_DIGITS, ANSWER_DIGITS = 3, 4
ROW_LEN = 2 * OPERAND_DIGITS + 2 + ANSWER_DIGITS  # 12
ANSWER = slice(ROW_LEN - ANSWER_DIGITS, ROW_LEN)  # row positions of c's digits: 8..11
ANSWER_TARGETS = slice(ANSWER.start - 1, ANSWER.stop - 1)  # target positions (row[1:]) that predict them: 7..10


def _digits(x: np.ndarray, n: int) -> np.ndarray:
    """[..., n] decimal digits of ``x``, most significant first (leading zeros kept)."""
    powers = 10 ** np.arange(n - 1, -1, -1)
    return (np.asarray(x)[..., None] // powers) % 10


def encode(a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
    """[..., ROW_LEN] int64 token rows of ``a + b = c`` (broadcast over arrays of operands)."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
    if a.size and (a.min() < 0 or b.min() < 0 or a.max() > MAX_OPERAND or b.max() > MAX_OPERAND):
        raise ValueError(f"operands must lie in [0, {MAX_OPERAND}]")
    plus = np.full(a.shape + (1,), PLUS, dtype=np.int64)
    equals = np.full(a.shape + (1,), EQUALS, dtype=np.int64)
    return np.concatenate([_digits(a, OPERAND_DIGITS), plus, _digits(b, OPERAND_DIGITS), equals,
                           _digits(a + b, ANSWER_DIGITS)], axis=-1)


def decode(row: np.ndarray) -> str:
    """The text of one row, e.g. ``"007+045=0052"``."""
    return "".join({PLUS: "+", EQUALS: "="}.get(int(t), str(int(t))) for t in row)


def operands(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) [N] read back from token rows [N, ROW_LEN]."""
    place = 10 ** np.arange(OPERAND_DIGITS - 1, -1, -1)
    return rows[:, :OPERAND_DIGITS] @ place, rows[:, OPERAND_DIGITS + 1 : 2 * OPERAND_DIGITS + 1] @ place


def in_test_square(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Whether each pair lies in the held-out square a, b ∈ [400, 600]."""
    lo, hi = TEST_RANGE
    return (a >= lo) & (a <= hi) & (b >= lo) & (b <= hi)


def all_pairs() -> tuple[np.ndarray, np.ndarray]:
    """(a, b) [1,000,000] over the whole grid, a-major: index = 1000 a + b."""
    a, b = np.divmod(np.arange((MAX_OPERAND + 1) ** 2, dtype=np.int64), MAX_OPERAND + 1)
    return a, b


def split_pairs(n_train: int | None = None, seed: int = 0) -> tuple[tuple[np.ndarray, np.ndarray],
                                                                  tuple[np.ndarray, np.ndarray]]:
    """((a, b) of the training set, (a, b) of the test set). ``n_train`` draws that many training pairs
    uniformly without replacement with ``seed`` (in grid order); None keeps all 959,599."""
    a, b = all_pairs()
    test = in_test_square(a, b)
    train_idx = np.flatnonzero(~test)
    if n_train is not None:
        if not 0 < n_train <= len(train_idx):
            raise ValueError(f"n_train must lie in [1, {len(train_idx)}], got {n_train}")
        train_idx = np.sort(np.random.default_rng(seed).choice(train_idx, size=n_train, replace=False))
    return (a[train_idx], b[train_idx]), (a[test], b[test])


def train_test_rows(n_train: int | None = None, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Token rows [N, ROW_LEN] of the training and the test set (see :func:`split_pairs`)."""
    (a_tr, b_tr), (a_te, b_te) = split_pairs(n_train, seed)
    return encode(a_tr, b_tr), encode(a_te, b_te)


def loss_mask(n_rows: int) -> np.ndarray:
    """[n_rows, ROW_LEN - 1] bool over the targets ``row[1:]``: True where an answer digit is predicted."""
    mask = np.zeros((n_rows, ROW_LEN - 1), dtype=bool)
    mask[:, ANSWER_TARGETS] = True
    return mask


def answer_exact_match(predicted: np.ndarray, rows: np.ndarray) -> float:
    """Fraction of rows whose four answer digits are all right. ``predicted`` is [N, 4] answer digits or
    [N, ROW_LEN] full rows (its answer positions are compared)."""
    predicted = np.asarray(predicted)
    if predicted.shape[-1] == ROW_LEN:
        predicted = predicted[:, ANSWER]
    if predicted.shape != (len(rows), ANSWER_DIGITS):
        raise ValueError(f"predicted has shape {predicted.shape}, expected ({len(rows)}, {ANSWER_DIGITS})")
    return float((predicted == rows[:, ANSWER]).all(axis=1).mean())
