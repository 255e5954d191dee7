"""HookPoint identity modules and ``run_with_cache``: the named window into a model's activations."""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import Tensor, nn


class HookPoint(nn.Module):
    """Identity; a stable, named place where an activation can be read (``model.hook_names()``)."""

    def forward(self, x: Tensor) -> Tensor:
        return x


def hook_names(model: nn.Module) -> list[str]:
    """Dotted names of every HookPoint, in forward order (e.g. ``blocks.0.attn.hook_pattern``)."""
    return [name for name, m in model.named_modules() if isinstance(m, HookPoint)]


class _Cached(Exception):
    """Raised by the last wanted hook of a ``run_with_cache(..., stop_early=True)`` call: the rest of the forward
    pass is not needed."""


@torch.no_grad()
def run_with_cache(model: nn.Module, *args, names: Iterable[str] | None = None, stop_early: bool = False,
                   **kwargs) -> tuple[Tensor | None, dict[str, Tensor]]:
    """Run ``model(*args, **kwargs)`` and return (output, {hook name: activation}), detached.

    ``names`` restricts the cache; unknown names raise ``KeyError`` listing the valid ones. Tensor arguments go
    to the model's device first (a probe batch built on the host runs on a model on the GPU). ``stop_early``:
    stop the forward pass once every named activation is cached (e.g. only the first block runs for
    ``blocks.0.hook_resid_mid``, as TransformerLens's ``stop_at_layer``); the output is then None.
    """
    all_names = hook_names(model)
    wanted = set(all_names) if names is None else set(names)
    unknown = wanted - set(all_names)
    if unknown:
        raise KeyError(f"unknown hook names {sorted(unknown)}; valid: {all_names}")
    cache: dict[str, Tensor] = {}

    def keep(name: str, out: Tensor) -> None:
        cache[name] = out.detach()
        if stop_early and len(cache) == len(wanted):
            raise _Cached

    handles = [m.register_forward_hook(lambda _m, _inp, out, name=name: keep(name, out))
               for name, m in model.named_modules() if name in wanted]
    device = next(model.parameters()).device
    args = tuple(a.to(device) if isinstance(a, Tensor) else a for a in args)
    out: Tensor | None = None
    try:
        out = model(*args, **kwargs)
    except _Cached:
        pass
    finally:
        for h in handles:
            h.remove()
    return out, {n: cache[n] for n in all_names if n in cache}
