"""Task registry: ``make_task_data(task_config, seed)`` generates the dataset of any configured task."""

from __future__ import annotations

from typing import Any

from anchorlab.tasks.base import TaskData
from anchorlab.tasks.composite import generate_composite
from anchorlab.tasks.mem_rsn import generate_mem_rsn

GENERATORS = {"composite": generate_composite, "mem_rsn": generate_mem_rsn}


def make_task_data(task_cfg: Any, seed: int) -> TaskData:
    """Generate the full dataset (training and evaluation rows) of ``task_cfg`` with ``seed``; a task with
    a ``reference`` file takes its rows from the file instead (:mod:`anchorlab.reference`), unless
    ``reference_parts`` leaves "data" out."""
    from anchorlab.config_tools import reference_for

    if reference_for(task_cfg, "data"):
        from anchorlab.reference import load_reference, reference_task_data

        return reference_task_data(load_reference(task_cfg.reference), task_cfg)
    return GENERATORS[task_cfg.name](task_cfg, seed)


__all__ = ["TaskData", "make_task_data", "GENERATORS"]
