"""The held-out pair's answers key by key: P1's inferential / symmetric accuracy (arXiv 2405.05409 §4) resolved
over the key x of each input.

A run's inferential accuracy on (4,3) is a mean over its inputs; across the keys it is not spread evenly. A
model that has fitted the seen pairs tends to compose a key's every input or none of them, so the pooled number
counts composed keys, and an evaluation-to-evaluation swing is keys flipping. :func:`key_answers` gives, per
key, the shares of the inferential answer (x + shift(a1) + shift(a2)), the symmetric one (the reversed pair's
designated answer) and any other, with the most frequent other answer."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import torch
from torch import nn

from anchorlab.config import CompositeTaskConfig
from anchorlab.metrics import predict
from anchorlab.tasks.base import TaskData


def probe_rows(data: TaskData, task: CompositeTaskConfig) -> np.ndarray:
    """The rows of ``data`` that hold the held-out ``task.probe_pair`` (both key types), in order."""
    pair = data.extra["pair"]
    return np.nonzero((pair[:, 0] == task.probe_pair[0]) & (pair[:, 1] == task.probe_pair[1]))[0]


def probe_predictions(model: nn.Module, data: TaskData, task: CompositeTaskConfig,
                      autocast_dtype: torch.dtype | None = None,
                      batch_size: int = 8192) -> tuple[np.ndarray, np.ndarray]:
    """(key, prediction) of every input of the held-out ``task.probe_pair`` (both key types; the rows of
    :func:`probe_rows`)."""
    rows = probe_rows(data, task)
    pred, _ = predict(model, torch.from_numpy(data.inputs[rows]), torch.from_numpy(data.targets[rows]),
                      batch_size, autocast_dtype)
    return data.extra["key"][rows], pred


def shift_name(shift: int) -> str:
    """x−7 for -7, x+3 for 3, x for 0: an answer as a function of the key."""
    return "x" if shift == 0 else f"x−{-shift}" if shift < 0 else f"x+{shift}"


def key_answers(keys: np.ndarray, pred: np.ndarray, inferential: int, symmetric: int) -> list[dict[str, Any]]:
    """Per key value (ascending): ``n`` inputs, the shares answered ``inferential`` (x + that shift),
    ``symmetric`` (x + that shift) and ``other``, and the most frequent other answer (``top_other``, e.g.
    "x−7", with its share ``top_other_share``; "" and 0 where every answer is one of the two)."""
    return answer_shares(keys, pred - keys, inferential, symmetric, "key")


def answer_shares(groups: np.ndarray, shifts: np.ndarray, inferential: int, symmetric: int,
                  name: str) -> list[dict[str, Any]]:
    """:func:`key_answers` over any grouping of the inputs (e.g. the key's position): per value of ``groups``
    (ascending, under ``name``), the shares of the answers ``shifts`` (prediction − key) that are
    ``inferential``, ``symmetric`` and other, and the most frequent other answer."""
    out = []
    for g in np.unique(groups):
        s = shifts[groups == g]
        n = len(s)
        inf, sym = float(np.mean(s == inferential)), float(np.mean(s == symmetric))
        others = Counter(v for v in s.tolist() if v not in (inferential, symmetric))
        top, count = others.most_common(1)[0] if others else (None, 0)
        out.append({name: int(g), "n": n, "inferential": inf, "symmetric": sym, "other": 1.0 - inf - sym,
                    "top_other": "" if top is None else shift_name(int(top)), "top_other_share": count / n})
    return out
