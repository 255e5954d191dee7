"""TaskData: the generated dataset of one task as aligned arrays, plus its named evaluation groups."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class TaskData:
    """All sequences of a task (training and evaluation), one row each.

    ``inputs`` is (N, seq_len) int64 and ``targets`` (N,) int64: the label of the last position.
    ``in_train`` marks the training set. ``group`` indexes ``group_names``: every row belongs to exactly
    one named evaluation group (e.g. ``"43_test"``). ``extra`` holds task-specific per-row arrays
    (e.g. ``pair``, ``key``, ``key_is_test``) that metrics and analyses use.
    """

    inputs: np.ndarray
    targets: np.ndarray
    in_train: np.ndarray
    group: np.ndarray
    group_names: list[str]
    vocab_size: int
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.inputs)
        for name, a in [("targets", self.targets), ("in_train", self.in_train), ("group", self.group),
                        *self.extra.items()]:
            assert len(a) == n, f"{name} has {len(a)} rows, inputs has {n}"

    def __len__(self) -> int:
        return len(self.inputs)

    @property
    def seq_len(self) -> int:
        return self.inputs.shape[1]

    def arrays(self) -> dict[str, np.ndarray]:
        """Every per-row array by name (for export)."""
        return {"inputs": self.inputs, "targets": self.targets, "in_train": self.in_train,
                "group": self.group, **self.extra}

    def save_npz(self, path: str | Path) -> None:
        """Write all arrays (plus ``group_names``) to a compressed .npz, atomically."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp.npz")
        np.savez_compressed(tmp, **self.arrays(), group_names=np.array(self.group_names),
                            vocab_size=np.array(self.vocab_size))
        tmp.replace(path)
