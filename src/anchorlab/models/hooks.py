"""HookPoint identity modules, ``run_with_cache`` and ``run_with_hooks``: the named window into a model's
activations, to read them or to patch them (TransformerLens's names and calling pattern)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import torch
from torch import Tensor, nn


class HookPoint(nn.Module):
    """Identity; a stable, named place where an activation can be read (``hook_names(model)``)."""

    def forward(self, x: Tensor) -> Tensor:
        return x


def hook_names(model: nn.Module) -> list[str]:
    """Dotted names of every HookPoint (e.g. ``blocks.0.attn.hook_pattern``), in module-registration order:
    block by block, but within a block not the order the forward pass reaches them (a block's
    ``hook_resid_pre`` / ``_mid`` / ``_post`` come after its ``ln``, ``attn`` and ``mlp`` hooks)."""
    return [name for name, m in model.named_modules() if isinstance(m, HookPoint)]


def _hook_names_of(model: nn.Module, caller: str) -> list[str]:
    names = hook_names(model)
    if not names:
        raise ValueError(f"{type(model).__name__} has no HookPoint, so {caller} has nothing to reach ({caller} "
                         "works on anchorlab's own models; for an HF model use its output_hidden_states / "
                         "output_attentions)")
    return names


def _check_known(wanted: Iterable[str], all_names: list[str]) -> None:
    unknown = set(wanted) - set(all_names)
    if unknown:
        raise KeyError(f"unknown hook names {sorted(unknown)}; valid: {all_names}")


def _on_device(model: nn.Module, args: tuple) -> tuple:
    """Tensor arguments moved to the model's device (a probe batch built on the host runs on a GPU model)."""
    device = next(model.parameters()).device
    return tuple(a.to(device) if isinstance(a, Tensor) else a for a in args)


class ActivationCache(dict):
    """``run_with_cache``'s {hook name: activation}, a plain dict that also takes TransformerLens's short keys:
    ``cache["pattern", 0]`` is ``cache["blocks.0.attn.hook_pattern"]``, ``cache["resid_post", 1]``
    ``cache["blocks.1.hook_resid_post"]``, ``cache["embed"]`` ``cache["hook_embed"]``. A short key must name one
    cached hook (``"normalized"`` of a block is ``ln1``'s or ``ln2``'s: give the full name); otherwise
    ``KeyError`` lists the candidates."""

    def __getitem__(self, key: str | tuple[str, int]) -> Tensor:
        if isinstance(key, str) and dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        short, layer = (key, None) if isinstance(key, str) else key
        scope = "" if layer is None else f"blocks.{layer}."
        found = [n for n in self if n.startswith(scope) and n.endswith(f"hook_{short}")
                 and (layer is not None or not n.startswith("blocks."))]
        if len(found) != 1:
            raise KeyError(f"{key!r}: {'names ' + str(found) if found else 'no cached hook'}; cached: {list(self)}")
        return dict.__getitem__(self, found[0])


class _Cached(Exception):
    """Raised by the last wanted hook of a ``run_with_cache(..., stop_early=True)`` call: the rest of the forward
    pass is not needed."""


@torch.no_grad()
def run_with_cache(model: nn.Module, *args, names: Iterable[str] | None = None, stop_early: bool = False,
                   **kwargs) -> tuple[Tensor | None, dict[str, Tensor]]:
    """Run ``model(*args, **kwargs)`` and return (output, {hook name: activation}), detached.

    ``names`` restricts the cache (one name or an iterable of names); unknown names raise ``KeyError`` listing
    the valid ones, and a model without any HookPoint (e.g. an HF model) raises ``ValueError``. Tensor arguments go
    to the model's device first (a probe batch built on the host runs on a model on the GPU). ``stop_early``:
    stop the forward pass once every named activation is cached (e.g. only the first block runs for
    ``blocks.0.hook_resid_mid``, as TransformerLens's ``stop_at_layer``); the output is then None.
    """
    all_names = _hook_names_of(model, "run_with_cache")
    wanted = set(all_names) if names is None else {names} if isinstance(names, str) else set(names)
    _check_known(wanted, all_names)
    cache: dict[str, Tensor] = {}

    def keep(name: str, out: Tensor) -> None:
        cache[name] = out.detach()
        if stop_early and len(cache) == len(wanted):
            raise _Cached

    handles = [m.register_forward_hook(lambda _m, _inp, out, name=name: keep(name, out))
               for name, m in model.named_modules() if name in wanted]
    args = _on_device(model, args)
    out: Tensor | None = None
    try:
        out = model(*args, **kwargs)
    except _Cached:
        pass
    finally:
        for h in handles:
            h.remove()
    return out, ActivationCache({n: cache[n] for n in all_names if n in cache})


HookFn = Callable[[Tensor, str], Tensor | None]


@torch.no_grad()
def run_with_hooks(model: nn.Module, *args, fwd_hooks: Sequence[tuple[str, HookFn]], **kwargs) -> Tensor:
    """Run ``model(*args, **kwargs)`` with ``fwd_hooks`` in place and return its output: each ``(name, fn)`` calls
    ``fn(activation, name)`` at hook point ``name``; a tensor it returns replaces the activation downstream
    (activation patching, ablation), None keeps it. As TransformerLens's ``run_with_hooks`` (its ``hook``
    argument is the name here). Several functions on one name run in the order given; every hook is removed
    afterwards, also when the forward pass raises. Unknown names raise ``KeyError`` before anything runs.

    Zero-ablate attention head 0 of layer 0 (``hook_z`` is [batch, pos, head, d_head])::

        def ablate(z, name):
            z = z.clone(); z[:, :, 0] = 0; return z
        logits = run_with_hooks(model, tokens, fwd_hooks=[("blocks.0.attn.hook_z", ablate)])
    """
    all_names = _hook_names_of(model, "run_with_hooks")
    if isinstance(fwd_hooks, tuple) and len(fwd_hooks) == 2 and isinstance(fwd_hooks[0], str):
        fwd_hooks = [fwd_hooks]  # one (name, fn) pair given bare
    _check_known((name for name, _ in fwd_hooks), all_names)
    modules = dict(model.named_modules())
    handles = [modules[name].register_forward_hook(lambda _m, _inp, out, fn=fn, name=name: fn(out, name))
               for name, fn in fwd_hooks]
    try:
        return model(*_on_device(model, args), **kwargs)
    finally:
        for h in handles:
            h.remove()
