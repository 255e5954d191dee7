"""P2 memory/reasoning anchor task (P2 §3.1): one dataset mixing a memory and a reasoning mapping.

Worked example (paper defaults: Z = 21..120, A_mem = 1..10, A_rsn = 11..20, q = 2, L = 9)::

    inputs = [57, 33, 40, 12, 15, 98, 21, 64, 77]   key 40 at position 2, anchors (12, 15) at 3, 4
    target = 40 + 12 + 15 = 67                       reasoning: key + sum(anchors)

    inputs = [88, 40, 3, 7, 25, 61, 99, 30, 22]     key 40 at position 1, anchors (3, 7) at 2, 3
    target = y[(40, 3, 7)]                           memory: a label drawn once from U(Z) per (key, anchors)

Every other token is noise, iid uniform on Z. The memory label depends only on (key, anchors), never on
the noise or the key position. Each ordered anchor tuple (the 100 memory pairs and the 100 reasoning
pairs) gets ``data_size / n_combinations`` rows (1,000 at 200k), the masked tuples included [INF];
``data_size_counts = "train"`` reads P2's 200k as training rows only (ceil(200k / 198) = 1,011 per tuple);
the key position p is uniform on 0..L-q-1 (0-indexed) [INF]. With ``seq_len = q + 1`` the key is always
at position 0 and there is no noise (the Emb-MLP task, P2 Definition 1).

Fig. 8 variants: ``mem_label = "key_window"`` draws a memory label from U{z - sum(a)..z + sum(a)}
(F_mem,2) instead of U(Z); ``mem_label_ranges`` gives blocks of first anchors their own label range
(``extra["mem_group"]``, -1 for reasoning rows). ``rsn_anchors = []`` makes a memory-only task.

Subsets (``extra["subset"]``, also the groups): 0 ``mem`` (D_mem, all trained), 1 ``rsn_train``
(reasoning tuples not masked), 2 ``rsn_test`` (the masked tuples, D_rsn,test, never trained), and with
``include_mixed`` 3 ``mixed`` (tuples with both kinds of anchor, labelled by lookup, trained) [INF].
"""

from __future__ import annotations

import itertools

import numpy as np

from anchorlab.config import MemRsnTaskConfig
from anchorlab.tasks.base import TaskData

SUBSETS = ("mem", "rsn_train", "rsn_test", "mixed")
MEM, RSN_TRAIN, RSN_TEST, MIXED = range(4)


def anchor_tuples(cfg: MemRsnTaskConfig) -> tuple[np.ndarray, np.ndarray]:
    """(tuples [n_combinations, q], subset code per tuple): memory tuples, then reasoning, then mixed."""
    mem = list(itertools.product(cfg.mem_anchors, repeat=cfg.q))
    rsn = list(itertools.product(cfg.rsn_anchors, repeat=cfg.q))
    masked = {tuple(t) for t in cfg.masked}
    codes = [MEM] * len(mem) + [RSN_TEST if t in masked else RSN_TRAIN for t in rsn]
    tuples = mem + rsn
    if cfg.include_mixed:
        mem_set = set(cfg.mem_anchors)
        mixed = [t for t in itertools.product((*cfg.mem_anchors, *cfg.rsn_anchors), repeat=cfg.q)
                 if 0 < sum(a in mem_set for a in t) < cfg.q]
        tuples += mixed
        codes += [MIXED] * len(mixed)
    return np.array(tuples, dtype=np.int64).reshape(-1, cfg.q), np.array(codes, dtype=np.int8)


def mem_groups(cfg: MemRsnTaskConfig, tuples: np.ndarray) -> np.ndarray:
    """Label-range group of each tuple (``task.mem_label_ranges``): contiguous blocks of first anchors;
    0 everywhere when no ranges are set."""
    n_groups = max(len(cfg.mem_label_ranges), 1)
    index = {a: i for i, a in enumerate(cfg.mem_anchors)}
    first = np.array([index.get(int(a), 0) for a in tuples[:, 0]], dtype=np.int64)
    return first * n_groups // len(cfg.mem_anchors)


def label_bounds(cfg: MemRsnTaskConfig, tuples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) [n_tuples, N_Z]: a looked-up tuple's label for each key is drawn from U{lo..hi}."""
    z = np.arange(cfg.key_min, cfg.key_max + 1)[None, :]
    if cfg.mem_label_ranges:
        r = np.array(cfg.mem_label_ranges, dtype=np.int64)[mem_groups(cfg, tuples)]
        shape = (len(tuples), z.shape[1])
        return np.broadcast_to(r[:, :1], shape), np.broadcast_to(r[:, 1:], shape)
    if cfg.mem_label == "key_window":
        total = tuples.sum(1, keepdims=True)
        return z - total, z + total
    return np.full((len(tuples), z.shape[1]), cfg.key_min), np.full((len(tuples), z.shape[1]), cfg.key_max)


def _lookup_table(cfg: MemRsnTaskConfig, rng: np.random.Generator, looked_up: np.ndarray) -> np.ndarray:
    """y[(key, tuple)] for the looked-up tuples as an array [n_lookup tuples, N_Z keys]; the rng's first draw."""
    n_z = cfg.key_max - cfg.key_min + 1
    if cfg.mem_label == "uniform" and not cfg.mem_label_ranges:  # the paper's F_mem,1, y ~ U(Z)
        return rng.integers(cfg.key_min, cfg.key_max + 1, size=(len(looked_up), n_z))
    lo, hi = label_bounds(cfg, looked_up)
    return rng.integers(lo, hi + 1)


def memory_lookup(cfg: MemRsnTaskConfig, seed: int) -> dict[tuple[int, ...], int]:
    """The memory labels of the dataset generated with ``seed``: {(key, a_1, .., a_q): label}."""
    tuples, codes = anchor_tuples(cfg)
    looked_up = tuples[(codes == MEM) | (codes == MIXED)]
    table = _lookup_table(cfg, np.random.default_rng(seed), looked_up)
    keys = range(cfg.key_min, cfg.key_max + 1)
    return {(z, *map(int, t)): int(table[i, j]) for i, t in enumerate(looked_up) for j, z in enumerate(keys)}


def generate_mem_rsn(cfg: MemRsnTaskConfig, seed: int) -> TaskData:
    """Generate every row of the task with a numpy PCG64 generator seeded by ``seed`` (vectorized)."""
    rng = np.random.default_rng(seed)
    tuples, codes = anchor_tuples(cfg)
    is_lookup = (codes == MEM) | (codes == MIXED)
    table = _lookup_table(cfg, rng, tuples[is_lookup])  # drawn first, so memory_lookup can re-derive it
    lookup_row = np.cumsum(is_lookup) - 1  # tuple index -> row of `table` (valid where is_lookup)

    per = cfg.rows_per_combination
    combo = np.repeat(np.arange(len(tuples)), per)
    n, L, q = len(combo), cfg.seq_len, cfg.q
    seq = rng.integers(cfg.key_min, cfg.key_max + 1, size=(n, L))  # noise everywhere first
    pos = rng.integers(0, L - q, size=n)  # key position; anchors at pos+1 .. pos+q
    r = np.arange(n)
    key = seq[r, pos]  # the key is the (uniform) token already at pos
    pair = tuples[combo]
    seq[r[:, None], pos[:, None] + np.arange(1, q + 1)] = pair

    subset = codes[combo]
    lookup = is_lookup[combo]
    targets = key + pair.sum(axis=1)  # reasoning mapping
    targets[lookup] = table[lookup_row[combo[lookup]], key[lookup] - cfg.key_min]  # memory mapping
    names = list(SUBSETS[: 4 if cfg.include_mixed else 3])
    return TaskData(
        inputs=seq.astype(np.int64),
        targets=targets.astype(np.int64),
        in_train=subset != RSN_TEST,
        group=subset.astype(np.int64),
        group_names=names,
        vocab_size=cfg.vocab_size,
        extra={"pair": pair, "key": key.astype(np.int64), "key_pos": pos.astype(np.int64), "subset": subset,
               "mem_group": np.where(lookup, mem_groups(cfg, tuples)[combo], -1)},
    )
