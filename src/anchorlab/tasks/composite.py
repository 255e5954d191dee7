"""P1 composite anchor task (P1 §3 and App. B): key + two consecutive anchors -> key + shift(a1) + shift(a2).

Worked example (paper defaults, shifts 1:+5, 2:+1, 3:-2, 4:-8)::

    inputs  = [48, 23, 85, 4, 4, 80, 57, 86, 50]    key 85 at position 2, anchors (4, 4) at 3, 4
    target  = 85 - 8 - 8 = 69

Every other token is noise drawn from the key range. The pair (3, 4) is *non-inferential*: its label is
x - 6 instead of the composition x - 10. The pair (4, 3) is *held out*: never trained; its stored label
is the inferential answer x - 10, and the *symmetric* answer (the mapping of the reversed pair) is x - 6.

Keys are split by position: a key x at position p is *test-type* iff ``x % split_modulus == p``
(the authors' ``xm0`` groups) and *train-type* otherwise (``xel``). Each (pair, key type) is one group
of ``ceil(data_size * weight / (n_pairs * (test_key_weight + train_key_weight)))`` rows, which at the
paper's 900,000 gives 5,625 test-key and 50,625 train-key rows per pair. Training = the train-key
groups of every pair not held out (15 x 50,625 = 759,375 rows).
"""

from __future__ import annotations

import math

import numpy as np

from anchorlab.config import CompositeTaskConfig
from anchorlab.tasks.base import TaskData


def pair_shift(cfg: CompositeTaskConfig, a1: int, a2: int) -> int:
    """The designated label shift of the pair (a1, a2): the composition unless listed as non-inferential."""
    for t in cfg.non_inferential:
        if (t[0], t[1]) == (a1, a2):
            return t[2]
    return inferential_shift(cfg, a1, a2)


def inferential_shift(cfg: CompositeTaskConfig, a1: int, a2: int) -> int:
    """shift(a1) + shift(a2): the answer of a model that composes the two single-anchor functions."""
    d = dict(zip(cfg.anchors, cfg.shifts))
    return d[a1] + d[a2]


def symmetric_shift(cfg: CompositeTaskConfig, a1: int, a2: int) -> int:
    """The designated shift of the reversed pair (a2, a1): the answer of a model that treats pairs as sets."""
    return pair_shift(cfg, a2, a1)


def group_name(a1: int, a2: int, test_keys: bool) -> str:
    return f"{a1}-{a2}_{'xm0' if test_keys else 'xel'}"


def group_sizes(cfg: CompositeTaskConfig) -> tuple[int, int]:
    """(rows per test-key group, rows per train-key group)."""
    n_pairs = len(cfg.anchors) ** 2
    total_w = n_pairs * (cfg.test_key_weight + cfg.train_key_weight)
    return (math.ceil(cfg.data_size * cfg.test_key_weight / total_w),
            math.ceil(cfg.data_size * cfg.train_key_weight / total_w))


def _keys_by_position(cfg: CompositeTaskConfig, test_keys: bool) -> list[np.ndarray]:
    keys = np.arange(cfg.key_min, cfg.key_max + 1)
    out = []
    for p in range(cfg.seq_len - 2):
        is_test = keys % cfg.split_modulus == p
        out.append(keys[is_test] if test_keys else keys[~is_test])
    return out


def generate_composite(cfg: CompositeTaskConfig, seed: int) -> TaskData:
    """Generate every group of the task with a numpy PCG64 generator seeded by ``seed``."""
    rng = np.random.default_rng(seed)
    n_test, n_train = group_sizes(cfg)
    held_out = {tuple(p) for p in cfg.held_out}
    allowed = {True: _keys_by_position(cfg, True), False: _keys_by_position(cfg, False)}
    L = cfg.seq_len
    chunks: dict[str, list[np.ndarray]] = {k: [] for k in
                                           ("inputs", "targets", "pair", "key", "key_pos", "key_is_test", "group")}
    names: list[str] = []
    for a1 in cfg.anchors:
        for a2 in cfg.anchors:
            for test_keys, n in ((True, n_test), (False, n_train)):
                if n == 0:
                    continue
                seq = rng.integers(cfg.key_min, cfg.key_max + 1, size=(n, L))  # noise everywhere first
                pos = rng.integers(0, L - 2, size=n)  # key position 0..L-3; anchors at pos+1, pos+2
                key = np.empty(n, dtype=np.int64)
                for p, keys_p in enumerate(allowed[test_keys]):
                    rows = np.flatnonzero(pos == p)
                    key[rows] = keys_p[rng.integers(0, len(keys_p), size=len(rows))]
                r = np.arange(n)
                seq[r, pos], seq[r, pos + 1], seq[r, pos + 2] = key, a1, a2
                chunks["inputs"].append(seq)
                # Held-out pairs store the inferential label (as the authors do); the symmetric
                # answer is computed by the metrics from `key` and `pair`.
                shift = inferential_shift(cfg, a1, a2) if (a1, a2) in held_out else pair_shift(cfg, a1, a2)
                chunks["targets"].append(key + shift)
                chunks["pair"].append(np.tile(np.array([a1, a2], dtype=np.int64), (n, 1)))
                chunks["key"].append(key)
                chunks["key_pos"].append(pos.astype(np.int64))
                chunks["key_is_test"].append(np.full(n, test_keys))
                chunks["group"].append(np.full(n, len(names), dtype=np.int64))
                names.append(group_name(a1, a2, test_keys))
    cat = {k: np.concatenate(v) for k, v in chunks.items()}
    pair = cat["pair"]
    is_held = np.zeros(len(pair), dtype=bool)
    for a1, a2 in held_out:
        is_held |= (pair[:, 0] == a1) & (pair[:, 1] == a2)
    return TaskData(
        inputs=cat["inputs"].astype(np.int64),
        targets=cat["targets"].astype(np.int64),
        in_train=~cat["key_is_test"] & ~is_held,
        group=cat["group"],
        group_names=names,
        vocab_size=cfg.vocab_size,
        extra={"pair": pair, "key": cat["key"], "key_pos": cat["key_pos"], "key_is_test": cat["key_is_test"],
               "held_out": is_held},
    )
