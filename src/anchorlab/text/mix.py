"""A PrOntoQA + stories next-token dataset with a source label per sequence (P2 Fig. 1 / Fig. 7 data).

Each row is one document (a PrOntoQA ``Example.text`` or one story) followed by ``<|endoftext|>``, cut to
``n_ctx + 1`` tokens and padded with ``eos_id``; documents are not packed together, so every row belongs
to exactly one source and the per-source loss is a plain masked mean::

    inputs  [N, n_ctx]   ids[:, :-1]
    targets [N, n_ctx]   ids[:, 1:], IGNORE (-100) after the first end-of-text (padding)
    source  [N]          0 = PrOntoQA, 1 = stories (``SOURCES``)

Rows are shuffled with ``seed``. ``truncated`` counts documents longer than ``n_ctx + 1`` tokens.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch
import torch.nn.functional as F

SOURCES = ("prontoqa", "stories")
IGNORE = -100


@dataclass(frozen=True)
class TextMix:
    inputs: torch.Tensor  # [N, n_ctx] long
    targets: torch.Tensor  # [N, n_ctx] long, IGNORE where no loss
    source: torch.Tensor  # [N] long, index into SOURCES
    truncated: int

    def __len__(self) -> int:
        return self.inputs.shape[0]


def build_mix(prontoqa_texts: list[str], story_texts: list[str], tokenizer, n_ctx: int, seed: int) -> TextMix:
    """Tokenize both sources into one shuffled ``TextMix`` of fixed context length ``n_ctx``."""
    if not isinstance(n_ctx, int) or n_ctx < 2:
        raise ValueError(f"n_ctx must be an int >= 2, got {n_ctx!r}")
    docs = [(0, t) for t in prontoqa_texts] + [(1, t) for t in story_texts]
    random.Random(seed).shuffle(docs)
    eos = tokenizer.eos_id
    rows = torch.full((len(docs), n_ctx + 1), eos, dtype=torch.long)
    targets = torch.full((len(docs), n_ctx), IGNORE, dtype=torch.long)
    truncated = 0
    for i, (_, text) in enumerate(docs):
        ids = tokenizer.encode(text) + [eos]
        truncated += len(ids) > n_ctx + 1
        ids = ids[: n_ctx + 1]
        rows[i, : len(ids)] = torch.tensor(ids)
        targets[i, : len(ids) - 1] = rows[i, 1 : len(ids)]  # the loss stops at the first end-of-text
    source = torch.tensor([s for s, _ in docs], dtype=torch.long)
    return TextMix(rows[:, :-1].contiguous(), targets, source, truncated)


def per_source_loss(logits: torch.Tensor, targets: torch.Tensor, source: torch.Tensor) -> dict[str, float]:
    """Mean next-token cross-entropy over the target tokens of each source (``nan`` if a source is absent)."""
    ce = F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(), ignore_index=IGNORE, reduction="none")
    ce = ce.view_as(targets)
    mask = targets != IGNORE
    out = {}
    for k, name in enumerate(SOURCES):
        m = mask & (source == k)[:, None]
        out[name] = (ce[m].sum() / m.sum()).item() if m.any() else float("nan")
    return out
