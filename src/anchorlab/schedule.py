"""Per-step learning rates: the anchor tasks' (:func:`lr_at`) and the real-language runs' (:func:`lm_lr_at`).

Anchor tasks (P1 App. A): linear warm-up lr -> lr*m, then cosine back to lr_min; optionally a cooldown (not in
P1): over the run's last ``train.cooldown_epochs`` epochs the rate falls linearly from where the schedule is to
lr_min, as in warmup-stable-decay schedules (Hägele et al. 2024, arXiv 2405.18392).

Closed form of the authors' ``GradualWarmupScheduler(multiplier=m, total_epoch=T_w)`` wrapping
``CosineAnnealingLR(T_max, eta_min)``, both stepped once per optimizer step::

    t <  T_w:            lr(t) = lr * (1 + (m - 1) * t / T_w)
    T_w <= t < T_w+T_c:  lr(t) = lr_min + (lr*m - lr_min) * (1 + cos(pi * (t - T_w) / T_c)) / 2
    t >= T_w + T_c:      lr(t) = lr_min   (CosineAnnealingLR would climb again; runs end at T_w + T_c)

with T_w = warmup_epochs * steps_per_epoch and T_c = cosine_epochs * steps_per_epoch. With a cooldown of D epochs
in a run of T = epochs * steps_per_epoch steps, from t_d = T - D * steps_per_epoch on::

    t >= t_d:            lr(t) = lr_min + (lr(t_d) - lr_min) * (T - t) / (T - t_d)

so the last step trains at lr_min + (lr(t_d) - lr_min) / (T - t_d), and every step before t_d as without one.

Real-language runs (``LMTrainConfig``): linear warm-up 0 -> lr over ``warmup_steps``, then constant, or
cosine from lr down to lr / 10 at the last step.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from anchorlab.config import TrainConfig

if TYPE_CHECKING:
    from anchorlab.text.config import LMTrainConfig


def lr_at(step: int, cfg: TrainConfig, steps_per_epoch: int) -> float:
    """The learning rate used for optimizer step ``step`` (0-based)."""
    if cfg.cooldown_epochs > 0:
        t_end = cfg.epochs * steps_per_epoch
        t_d = t_end - round(cfg.cooldown_epochs * steps_per_epoch)
        if step >= t_d:
            start = _scheduled(t_d, cfg, steps_per_epoch)
            return cfg.lr_min + (start - cfg.lr_min) * (t_end - step) / (t_end - t_d)
    return _scheduled(step, cfg, steps_per_epoch)


def _scheduled(step: int, cfg: TrainConfig, steps_per_epoch: int) -> float:
    """The warm-up/cosine (or constant) rate of step ``step``, before any cooldown."""
    if cfg.schedule == "constant":
        return cfg.lr
    peak = cfg.lr * cfg.lr_multiplier
    t_w = cfg.warmup_epochs * steps_per_epoch
    t_c = cfg.cosine_epochs * steps_per_epoch
    if step < t_w:
        return cfg.lr * (1.0 + (cfg.lr_multiplier - 1.0) * step / t_w)
    if step < t_w + t_c:
        return cfg.lr_min + (peak - cfg.lr_min) * (1.0 + math.cos(math.pi * (step - t_w) / t_c)) / 2.0
    return cfg.lr_min


def lm_lr_at(step: int, tc: LMTrainConfig, total_steps: int) -> float:
    """The learning rate of a real-language run's optimizer step ``step`` (0-based) of ``total_steps``."""
    if step < tc.warmup_steps:
        return tc.lr * (step + 1) / tc.warmup_steps
    if tc.schedule == "constant":
        return tc.lr
    t = (step - tc.warmup_steps) / max(1, total_steps - tc.warmup_steps)
    return tc.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))
