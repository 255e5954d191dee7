"""γ-initialization for any PyTorch / Hugging Face model: every weight matrix ~ N(0, std = fan_in^-γ).

:mod:`anchorlab.init` initializes our own models, whose modules declare parameter roles. This module does
the same for models we do not write (HF ``GPT2LMHeadModel``, ``LlamaForCausalLM``, plain ``nn.Module``s)
by reading the *true* input dimension off each weight's storage layout:

=========================  ==============  ===============================  ==================================
module                     weight storage  ``convention="fan_in"``          ``convention="authors_gpt2"``
=========================  ==============  ===============================  ==================================
``nn.Linear``              [out, in]       in = shape[1]                    shape[1] (= in)
HF GPT-2 ``Conv1D``        [in, out]       in = shape[0]                    shape[1] (= **out**, their quirk)
``nn.MultiheadAttention``  [3E, E]         E = shape[1] (``*proj_weight``)  same as ``fan_in``
``nn.Conv{1,2,3}d``        [out, in/g, k]  in/g · prod(k)                   same as ``fan_in``
``nn.Embedding``           [V, D]          D (authors: ``size(1)``)         N(0, initializer_range = 0.02)
its ``padding_idx`` row    row of [V, D]   zero (as torch / HF leave it)    zero
biases, norm weights       1-D             untouched                        untouched
=========================  ==============  ===============================  ==================================

The embedding row follows the paper's d_in table (P1 App. A, as the authors' code computes it): their code
gives ``nn.Embedding`` weights ``weight.size(1)`` = d_model, not the vocabulary size. ``"authors_gpt2"`` is what
the authors' public HF GPT-2 script (P1 Fig. 7) does: ``std = 1 / weight.size(1)^γ`` for every Linear/Conv1D,
which for GPT-2's Conv1D is the *output* width (e.g. 3·n_embd for ``c_attn``), and embeddings keep
GPT-2's 0.02. ``"authors_gpt2_last_token"`` adds their "last_token" variant: every ``c_proj.weight``
re-drawn with std 0.02/sqrt(2·n_layer).

A parameter shared by several modules (tied input/output embeddings) is drawn once, by the first module
that owns it in ``named_modules`` order (GPT-2 / Llama: the input embedding). Any other parameter with
two or more dimensions raises: this function never leaves a weight silently at its old value.
"""

from __future__ import annotations

import math
import numbers
from fnmatch import fnmatch
from typing import NamedTuple

import torch
from torch import nn

from anchorlab.config import ConfigError

CONVENTIONS = ("fan_in", "authors_gpt2", "authors_gpt2_last_token")
GPT2_INITIALIZER_RANGE = 0.02  # GPT2Config.initializer_range default


class InitRow(NamedTuple):
    """How one parameter was drawn: N(0, std); ``fan_in`` is None where std is not fan_in^-γ."""

    name: str
    fan_in: int | None
    std: float


def _is_conv1d(module: nn.Module) -> bool:
    """HF ``transformers.pytorch_utils.Conv1D`` (GPT-2): a linear layer whose weight is stored [in, out]."""
    return type(module).__name__ == "Conv1D" and hasattr(module, "nf")


def _check_gamma(value: object, field_name: str) -> float:
    # numbers.Real: numpy scalars too (np.float32 is not a float); 0 is allowed here (std 1 for every weight)
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
    if not ok:
        raise ConfigError(f"{field_name}: allowed values are a finite float >= 0 (std = fan_in^-gamma), "
                          f"got {value!r}")
    return float(value)


def weight_fan_in(module: nn.Module, weight: torch.Tensor, convention: str = "fan_in") -> int:
    """The d_in that γ-init uses for ``module.weight`` (see the module table)."""
    if convention != "fan_in" and (isinstance(module, nn.Linear) or _is_conv1d(module)):
        return weight.shape[1]  # the authors' HF script: weight.size(1) for every Linear / Conv1D
    if _is_conv1d(module):
        return weight.shape[0]
    if isinstance(module, nn.Linear | nn.Embedding | nn.MultiheadAttention):  # MHA: in_proj_weight [3E, E]
        return weight.shape[1]
    if isinstance(module, nn.Conv1d | nn.Conv2d | nn.Conv3d):
        return weight[0].numel()
    raise TypeError(f"no fan-in rule for the weight of {type(module).__name__}")


def _scopes(module_name: str) -> list[str]:
    """The module's name and its ancestors' names, outermost first ("a.b.c" -> ["a", "a.b", "a.b.c"])."""
    if not module_name:  # the model itself owns the weight (``gamma_init_(nn.Linear(...))``): "*" covers it
        return [""]
    parts = module_name.split(".")
    return [".".join(parts[: k + 1]) for k in range(len(parts))]


def _matches(pattern: str, module_name: str) -> bool:
    """An override glob covers a module when it matches the module's name or an ancestor's."""
    return any(fnmatch(scope, pattern) for scope in _scopes(module_name))


def _weights_to_draw(model: nn.Module) -> list[tuple[str, str, nn.Module, torch.Tensor]]:
    """(param name, module name, module, weight) for every parameter γ-init draws, each shared one once."""
    plan, seen = [], set()
    for mod_name, module in model.named_modules():
        for p_name, p in module.named_parameters(recurse=False):
            full = f"{mod_name}.{p_name}" if mod_name else p_name
            if id(p) in seen or p.dim() < 2:  # tied copy already planned; bias / norm weight left alone
                continue
            seen.add(id(p))
            mha_proj = isinstance(module, nn.MultiheadAttention) and p_name.endswith("proj_weight")
            if p_name != "weight" and not mha_proj:
                ours = type(module).__module__.startswith("anchorlab.")  # raw W_E, W_Q...: roles, not layouts
                raise TypeError(f"{full} ({type(module).__name__}, shape {tuple(p.shape)}): no γ-init rule for "
                                "a parameter that is not a module weight" + (
                                    "; anchorlab's own models are γ-initialized by anchorlab.init.apply_init "
                                    "(InitConfig(gamma=...), P1's d_in table)" if ours else ""))
            plan.append((full, mod_name, module, p))
    return plan


@torch.no_grad()
def gamma_init_(model: nn.Module, gamma: float, *, convention: str = "fan_in",
                overrides: dict[str, float] | None = None,
                generator: torch.Generator | None = None) -> list[InitRow]:
    """Redraw every weight of ``model`` in place with std = fan_in^-γ; return one row per drawn parameter.

    ``overrides`` maps module-name globs (``fnmatch``) to a γ for the modules they cover: a glob covers a
    module when it matches the module's name or an ancestor's, so ``"transformer.h.0"`` sets a whole block
    and ``"transformer.h.*.mlp.c_proj"`` one layer type. A later covering glob wins over an earlier one.
    A glob that covers no drawn weight is an error (a typo, or ``lm_head`` of a model whose output layer is
    tied to, and drawn as, the input embedding). Biases and norm weights (every 1-D parameter) keep their
    values. Weights are drawn in ``named_modules`` order from ``generator`` (the global RNG when None), so
    a fixed generator seed gives identical weights. Nothing is changed when an argument is rejected.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model: expected a torch.nn.Module, got {type(model).__name__} ({model!r:.60})")
    gamma = _check_gamma(gamma, "gamma")
    if convention not in CONVENTIONS:
        raise ConfigError(f"convention: allowed values are {list(CONVENTIONS)}, got {convention!r}")
    if not isinstance(overrides, dict | None):
        raise ConfigError(f"overrides: allowed values are a dict {{module-name glob: gamma}}, got {overrides!r}")
    overrides = dict(overrides or {})
    for pattern, g in overrides.items():
        _check_gamma(g, f"overrides.{pattern}")
    plan = _weights_to_draw(model)
    for pattern in overrides:
        if not any(_matches(pattern, mod_name) for _, mod_name, _, _ in plan):
            examples = [mod_name for _, mod_name, _, _ in plan[:3]]
            raise ConfigError(f"overrides.{pattern}: covers no drawn weight; weight-owning modules look like "
                              f"{examples}")
    if convention == "authors_gpt2_last_token" and getattr(getattr(model, "config", None), "n_layer", None) is None:
        raise ConfigError("convention: 'authors_gpt2_last_token' needs a GPT-2 model (model.config.n_layer)")

    rows: list[InitRow] = []
    for full, mod_name, module, p in plan:
        g = gamma
        for pattern, g_override in overrides.items():
            if _matches(pattern, mod_name):
                g = g_override
        if convention != "fan_in" and isinstance(module, nn.Embedding):
            d_in, std = None, GPT2_INITIALIZER_RANGE
        else:
            try:
                d_in = weight_fan_in(module, p, convention)
            except TypeError as err:
                raise TypeError(f"{full}: {err}") from None
            std = d_in ** -g
        rows.append(InitRow(full, d_in, std))
    # every rule is resolved before the first draw, so a TypeError above leaves the model as it was
    for (_, _, module, p), row in zip(plan, rows):
        p.normal_(0.0, row.std, generator=generator)
        if isinstance(module, nn.Embedding) and module.padding_idx is not None:
            p[module.padding_idx].zero_()  # as torch's and HF's own inits leave it: the pad token embeds to 0
    if convention == "authors_gpt2_last_token":
        rows = _redraw_c_proj(model, rows, generator)
    return rows


def _redraw_c_proj(model: nn.Module, rows: list[InitRow], generator: torch.Generator | None) -> list[InitRow]:
    """The authors' "last_token" variant: every ``c_proj.weight`` ~ N(0, 0.02 / sqrt(2·n_layer))."""
    n_layer = model.config.n_layer
    std = GPT2_INITIALIZER_RANGE / math.sqrt(2 * n_layer)
    redrawn = {}
    for name, p in model.named_parameters():
        if name.endswith("c_proj.weight"):
            p.normal_(0.0, std, generator=generator)
            redrawn[name] = InitRow(name, None, std)
    return [redrawn.get(r.name, r) for r in rows]
