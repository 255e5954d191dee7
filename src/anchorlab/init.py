"""γ-initialization, the only place model weights get values: W ~ N(0, std = d_in^-γ).

Each module declares its parameters' *roles* (``param_roles``); :func:`fan_in` maps a role and a
parameter's shape to d_in under one of two conventions:

======================  ===================  ==================  ===============
role (parameters)       shape                "paper" d_in        "fan_in" d_in
======================  ===================  ==================  ===============
embed (W_E)             [V, D]               D (= d_model)       V (one-hot)
pos_embed (W_pos)       [n_ctx, D]           D                   n_ctx
attn_in (W_Q, W_K, W_V) [H, D, K]            D                   D
attn_out (W_O)          [H, K, D]            H*K                 H*K
mlp_in (W_in)           [D, F]               D                   D
mlp_out (W_out)         [F, D]               F                   F
unembed (W_U)           [D, V]               D                   D
======================  ===================  ==================  ===============

The Emb-MLP (:mod:`anchorlab.models.emb_mlp`) has ``W_U [F, V]``, so its d_in is F (= d_mlp).
"paper" is P1 App. A as the authors' code computes it (``nn.Embedding`` weights use ``weight.size(1)`` = d_model).
Not γ-scaled, in both conventions: the output bias ``b_U`` ~ U(±1/sqrt(D)) (PyTorch's Linear default)
and LayerNorm (w = 1, b = 0).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from anchorlab.config import InitConfig

GAMMA_ROLES = ("embed", "pos_embed", "attn_in", "attn_out", "mlp_in", "mlp_out", "unembed")


def fan_in(role: str, shape: tuple[int, ...], convention: str = "paper") -> int:
    """d_in of a parameter with this role and shape (see the module table)."""
    if role in ("embed", "pos_embed"):
        return shape[-1] if convention == "paper" else shape[-2]
    if role == "attn_out":  # [H, K, D]: the input is the concatenation of all heads
        return shape[-3] * shape[-2]
    if role in ("attn_in", "mlp_in", "mlp_out", "unembed"):  # stored input-first: [..., d_in, d_out]
        return shape[-2]
    raise ValueError(f"role {role!r} has no fan-in; gamma roles are {GAMMA_ROLES}")


def param_roles(model: nn.Module) -> dict[str, str]:
    """{parameter name: role} for every parameter; raises if a module leaves a parameter without a role."""
    roles: dict[str, str] = {}
    for mod_name, mod in model.named_modules():
        declared = getattr(mod, "param_roles", {})
        for p_name, _ in mod.named_parameters(recurse=False):
            full = f"{mod_name}.{p_name}" if mod_name else p_name
            if p_name not in declared:
                raise KeyError(f"parameter {full} of {type(mod).__name__} declares no init role")
            roles[full] = declared[p_name]
    return roles


def init_std(role: str, shape: tuple[int, ...], cfg: InitConfig) -> float:
    """The std that γ-init gives a parameter of this role and shape."""
    gamma = cfg.role_gamma.get(role, cfg.gamma)
    return fan_in(role, shape, cfg.convention) ** -gamma


def init_table(model: nn.Module, cfg: InitConfig) -> list[tuple[str, str, tuple[int, ...], str]]:
    """(name, role, shape, rule) per parameter: the resolved init, for docs and tests."""
    rows = []
    params = dict(model.named_parameters())
    for name, role in param_roles(model).items():
        shape = tuple(params[name].shape)
        if role in GAMMA_ROLES:
            rule = f"N(0, {init_std(role, shape, cfg):.6g})"
        elif role == "unembed_bias":
            rule = f"U(+-{1 / math.sqrt(_unembed_fan_in(model)):.6g})"
        else:
            rule = "1" if role == "norm_weight" else "0"
        rows.append((name, role, shape, rule))
    return rows


def _unembed_fan_in(model: nn.Module) -> int:
    for name, role in param_roles(model).items():
        if role == "unembed":
            return dict(model.named_parameters())[name].shape[-2]
    raise KeyError("model has no unembed weight")


@torch.no_grad()
def apply_init(model: nn.Module, cfg: InitConfig, generator: torch.Generator) -> nn.Module:
    """Give every parameter its initial value, in ``named_parameters`` order, from ``generator``."""
    params = dict(model.named_parameters())
    for name, role in param_roles(model).items():
        p = params[name]
        if role in GAMMA_ROLES:
            p.normal_(0.0, init_std(role, tuple(p.shape), cfg), generator=generator)
        elif role == "unembed_bias":
            bound = 1.0 / math.sqrt(_unembed_fan_in(model))
            p.uniform_(-bound, bound, generator=generator)
        elif role == "norm_weight":
            p.fill_(1.0)
        elif role == "norm_bias":
            p.zero_()
        else:
            raise KeyError(f"unknown init role {role!r} for {name}")
    return model


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
from anchorlab.gamma_init import gamma_init_  # noqa: E402,F401  (γ-init for any PyTorch / HF model)
