"""Model factory: ``build_model(model_cfg, d_vocab)`` is the only place a config becomes a module."""

from __future__ import annotations

from torch import nn

from anchorlab.config import ModelConfig
from anchorlab.models.emb_mlp import EmbMLP
from anchorlab.models.gpt import GPT
from anchorlab.models.hooks import ActivationCache, HookPoint, hook_names, run_with_cache, run_with_hooks

MODELS = {"gpt": GPT, "emb_mlp": EmbMLP}


def build_model(cfg: ModelConfig, d_vocab: int) -> nn.Module:
    """Allocate (not initialise) the configured model; see :func:`anchorlab.init.apply_init`."""
    return MODELS[cfg.name](cfg, d_vocab)


__all__ = ["ActivationCache", "EmbMLP", "GPT", "HookPoint", "build_model", "hook_names", "run_with_cache",
           "run_with_hooks", "MODELS"]
