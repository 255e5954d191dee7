"""One batched training step captured as a CUDA graph and replayed (``train.cuda_graph = true``).

On one H200 the paper-config step of K batched P1 models (:func:`anchorlab.batched.train_step`: a vmapped
forward, autograd's backward, the per-row clip and AdamW) took ~16-17 ms whether it carried 2 or 6 models
(docs/performance.md): the time goes to issuing its ~2,000 operator calls from Python (vmap, autograd, autocast),
not to arithmetic. A CUDA graph records the step's kernels once, on static input buffers, and replays them with
one call per step.

The step is graph-safe by construction: static shapes, no host synchronisation, and every tensor it changes is
updated in place (weights, gradients and moments live in :class:`anchorlab.batched.StackedParams`' flat
buffers; the optimizer step count is a device tensor). Capturing needs a few real steps first (warm-up, on a
side stream, as PyTorch's CUDA-graph notes require) and the capture itself; both would move the weights, so the
state is saved before and put back after, and the first replay starts where training stands.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

StepFn = Callable[[Tensor, Tensor, Tensor], Tensor]  # (x, y, lr) -> loss, changing ``state`` in place


class GraphedStep:
    """``step(x, y, lr)`` captured once on copies of the given inputs, then replayed by ``__call__`` on each
    step's inputs (copied into those buffers). ``state``: every tensor ``step`` changes in place; it is restored
    after the warm-up and capture. The returned loss is one static buffer, overwritten by the next replay."""

    def __init__(self, step: StepFn, x: Tensor, y: Tensor, lr: Tensor, state: Sequence[Tensor], warmup: int = 3):
        require_cuda(x.device)
        self.x, self.y, self.lr = x.clone(), y.clone(), lr.clone()
        with torch.no_grad():
            saved = [t.clone() for t in state]
        warm_up(lambda: step(self.x, self.y, self.lr), warmup, x.device)
        self.graph, self.loss = capture(lambda: step(self.x, self.y, self.lr))
        with torch.no_grad():
            for t, v in zip(state, saved, strict=True):
                t.copy_(v)

    def __call__(self, x: Tensor, y: Tensor, lr: Tensor) -> Tensor:
        self.x.copy_(x)
        self.y.copy_(y)
        self.lr.copy_(lr)
        self.graph.replay()
        return self.loss


def require_cuda(device: torch.device) -> None:
    if device.type != "cuda":
        raise ValueError(f"train.cuda_graph: CUDA graphs need a CUDA device; the step runs on {device}")


def warm_up(fn: Callable[[], Tensor], n: int, device: torch.device) -> None:
    """``fn`` run ``n`` times on a side stream, as PyTorch's CUDA-graph notes ask before a capture: the allocator's
    pools, cuBLAS's handles and autograd's buffers are set up outside it."""
    stream = torch.cuda.current_stream(device)
    side = torch.cuda.Stream(device)
    side.wait_stream(stream)
    with torch.cuda.stream(side):
        for _ in range(n):
            fn()
    stream.wait_stream(side)


def capture(fn: Callable[[], Tensor]) -> tuple[Any, Tensor]:
    """(the CUDA graph of ``fn``'s kernels, its output buffer); the kernels are recorded, not run."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    return graph, out
