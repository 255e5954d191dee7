"""Scoring a model on a task's full dataset: per-row predictions, then per-group and headline metrics.

Pure: tensors and arrays in, plain dicts out; no I/O. Shared by training and analysis.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from anchorlab.tasks.base import TaskData


@torch.no_grad()
def predict(model: nn.Module, inputs: Tensor, targets: Tensor, batch_size: int = 8192,
            autocast_dtype: torch.dtype | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(argmax prediction, cross-entropy loss) of the last position for every row, as numpy arrays."""
    was_training = model.training
    model.eval()
    preds, losses = [], []
    for i in range(0, len(inputs), batch_size):
        x, y = inputs[i:i + batch_size], targets[i:i + batch_size]
        with torch.autocast(x.device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
            logits = model(x, last_only=True)[:, -1]
        logits = logits.float()
        preds.append(logits.argmax(-1))
        losses.append(F.cross_entropy(logits, y, reduction="none"))
    model.train(was_training)
    return torch.cat(preds).cpu().numpy(), torch.cat(losses).cpu().numpy()


def _mean(x: np.ndarray) -> float:
    return float(x.mean()) if len(x) else float("nan")


def composite_metrics(data: TaskData, task_cfg: Any, pred: np.ndarray, loss: np.ndarray) -> dict[str, Any]:
    """P1 metrics (P1 §4 and App. C) from per-row predictions and losses.

    Seen pairs: accuracy with train-type keys (``seen_train_acc``) and test-type keys (``seen_test_acc``).
    Probe pair (default (4,3), held out): inferential accuracy (prediction = key + shift(a1) + shift(a2))
    and symmetric accuracy (prediction = the reversed pair's designated answer), per key type
    (``_xel`` train-type, ``_xm0`` test-type) and pooled; and the deviation histogram
    {prediction - inferential answer: fraction}: pooled, its 12 most frequent offsets (``unseen_deviation``),
    and complete on the train-type keys (``unseen_deviation_xel``), the one the authors' code logs (on ``43_xel``);
    and both accuracies per key position, {position: accuracy} (``unseen_inferential_by_key_pos``,
    ``unseen_symmetric_by_key_pos``; the anchors follow the key, so at position seq_len − 3 the second anchor is the
    last token, the one that answers).
    """
    from anchorlab.tasks.composite import inferential_shift, symmetric_shift

    correct = pred == data.targets
    held, key_test, pair, key = data.extra["held_out"], data.extra["key_is_test"], data.extra["pair"], data.extra["key"]
    a1, a2 = task_cfg.probe_pair
    probe = (pair[:, 0] == a1) & (pair[:, 1] == a2)
    inf_ans = key + inferential_shift(task_cfg, a1, a2)
    sym_ans = key + symmetric_shift(task_cfg, a1, a2)
    m: dict[str, Any] = {
        "train_loss": _mean(loss[data.in_train]),
        "seen_train_acc": _mean(correct[~held & ~key_test]),
        "seen_test_acc": _mean(correct[~held & key_test]),
        "seen_test_loss": _mean(loss[~held & key_test]),
        "unseen_loss": _mean(loss[probe]),  # against the stored (inferential) label
    }
    for suffix, rows in (("", probe), ("_xel", probe & ~key_test), ("_xm0", probe & key_test)):
        m[f"unseen_inferential_acc{suffix}"] = _mean(pred[rows] == inf_ans[rows])
        m[f"unseen_symmetric_acc{suffix}"] = _mean(pred[rows] == sym_ans[rows])
    m["unseen_deviation"] = _deviation(pred[probe] - inf_ans[probe], most=12)
    xel = probe & ~key_test
    m["unseen_deviation_xel"] = _deviation(pred[xel] - inf_ans[xel])
    key_pos = data.extra["key_pos"][probe]
    for name, answer in (("inferential", inf_ans), ("symmetric", sym_ans)):
        hit = pred[probe] == answer[probe]
        m[f"unseen_{name}_by_key_pos"] = {str(p): _mean(hit[key_pos == p]) for p in np.unique(key_pos)}
    m["group_acc"] = {name: _mean(correct[data.group == g]) for g, name in enumerate(data.group_names)}
    return m


def _deviation(offsets: np.ndarray, most: int | None = None) -> dict[str, float]:
    """{offset: fraction of the rows}, most frequent first; the ``most`` most frequent only, if given."""
    dev = sorted(Counter(offsets.tolist()).items(), key=lambda kv: -kv[1])
    n = max(len(offsets), 1)
    return {str(k): v / n for k, v in dev[:most]}


def mem_rsn_metrics(data: TaskData, task_cfg: Any, pred: np.ndarray, loss: np.ndarray) -> dict[str, Any]:
    """P2 metrics (P2 Fig. 3A/B): loss and accuracy on D_mem (``mem_``), D_rsn,train (``rsn_train_``),
    D_rsn,test (``rsn_test_``) and, if generated, the mixed tuples (``mixed_``); ``train_loss`` over the
    training rows; ``group_acc`` per group; with ``mem_label_ranges``, per label-range group g
    ``mem_g{g}_acc`` and ``mem_g{g}_in_range`` (the fraction of predictions inside the group's range)."""
    correct = pred == data.targets
    subset = data.extra["subset"]
    m: dict[str, Any] = {"train_loss": _mean(loss[data.in_train])}
    for code, name in enumerate(data.group_names):  # the groups are the subsets, in SUBSETS order
        rows = subset == code
        m[f"{name}_acc"], m[f"{name}_loss"] = _mean(correct[rows]), _mean(loss[rows])
    m["group_acc"] = {name: _mean(correct[data.group == g]) for g, name in enumerate(data.group_names)}
    if task_cfg.mem_label_ranges:  # Fig. 8 right: per label-range group, accuracy and predictions in range
        group = data.extra["mem_group"]
        for g, (lo, hi) in enumerate(task_cfg.mem_label_ranges):
            rows = group == g
            m[f"mem_g{g}_acc"] = _mean(correct[rows])
            m[f"mem_g{g}_in_range"] = _mean((pred[rows] >= lo) & (pred[rows] <= hi))
    return m


TASK_METRICS = {"composite": composite_metrics, "mem_rsn": mem_rsn_metrics}
# Per task: the metrics whose best value the run summary keeps and that progress reports carry.
HEADLINE = {"composite": ("seen_train_acc", "seen_test_acc", "unseen_inferential_acc", "unseen_symmetric_acc"),
            "mem_rsn": ("mem_acc", "rsn_train_acc", "rsn_test_acc")}
# Per task: further metrics whose best value the summary keeps (the held-out pair per key type: the authors'
# figures read the train-type keys, P1 App. C; ``figure ... --option keys=train --best-epoch``).
BEST_ALSO = {"composite": tuple(f"unseen_{m}_acc_{k}" for k in ("xel", "xm0") for m in ("inferential", "symmetric"))}
# Short progress-bar labels of the headline metrics shown there (in this order, after the loss).
BAR_LABELS = {"seen_test_acc": "seen", "unseen_inferential_acc": "inf", "unseen_symmetric_acc": "sym",
              "mem_acc": "mem", "rsn_train_acc": "rsn", "rsn_test_acc": "test",
              "train_loss_prontoqa": "L_qa", "train_loss_stories": "L_st", "test_acc_prontoqa": "acc",
              "em_train": "em_train", "em_test": "em_test", "em_gen": "em_gen"}


def progress_postfix(status: dict[str, Any]) -> dict[str, str]:
    """Progress-bar fields of a status line {"loss": ..., headline metric: value}: loss, then short labels."""
    out = {"loss": f"{status['loss']:.3g}"}
    out.update({label: f"{status[k]:.2f}" for k, label in BAR_LABELS.items()
                if status.get(k) is not None and status[k] == status[k]})  # a NaN (no such rows) is left out
    return out


def summary_line(cfg: Any, summary: dict[str, Any]) -> str:
    """The line ``anchorlab train`` prints: the task's headline metrics and the final training loss."""
    keys = (*HEADLINE[cfg.task.name], "final_train_loss")
    return ", ".join(f"{k} {summary[k]:.4g}" for k in keys)


def evaluate(model: nn.Module, data: TaskData, inputs: Tensor, targets: Tensor, task_cfg: Any,
             batch_size: int = 8192, autocast_dtype: torch.dtype | None = None) -> dict[str, Any]:
    """All metrics of ``task_cfg``'s family on the full dataset (``inputs``/``targets``: device copies)."""
    pred, loss = predict(model, inputs, targets, batch_size, autocast_dtype)
    return TASK_METRICS[task_cfg.name](data, task_cfg, pred, loss)
