"""A PrOntoQA + stories next-token dataset with a source label per sequence (P2 Fig. 1 / Fig. 7 data).

Each row is one document (a PrOntoQA ``Example.text`` or one story) followed by ``<|endoftext|>``, cut to
``n_ctx + 1`` tokens and padded with ``eos_id``; documents are not packed together, so every row belongs
to exactly one source and the per-source loss is a plain masked mean::

    inputs  [N, n_ctx]   ids[:, :-1]
    targets [N, n_ctx]   ids[:, 1:], IGNORE (-100) after the first end-of-text (padding)
    source  [N]          0 = PrOntoQA, 1 = stories (``SOURCES``)
    last    [N]          index in ``targets`` of the document's last token (-1 if truncated): for a
                         PrOntoQA row, where the model predicts the label " True" / " False"

Rows are shuffled with ``seed``. ``truncated`` counts documents longer than ``n_ctx + 1`` tokens.
:func:`answer_accuracy` is the True/False test accuracy of P1 Fig. 7 (the label must be one token, as in
GPT-2: " True" = 6407, " False" = 10352); :func:`source_token_ids` gives the token sets whose embeddings
P2 Fig. 7B compares. :func:`make_mix` builds the paper's data (5,000 PrOntoQA + 5,000 stories) from a
story source and a tokenizer; :func:`save_mix` / :func:`load_mix` keep it as ``mix.safetensors`` +
``mix.json`` so training reads a file, not a generator.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

SOURCES = ("prontoqa", "stories")
IGNORE = -100


@dataclass(frozen=True)
class TextMix:
    inputs: torch.Tensor  # [N, n_ctx] long
    targets: torch.Tensor  # [N, n_ctx] long, IGNORE where no loss
    source: torch.Tensor  # [N] long, index into SOURCES
    last: torch.Tensor  # [N] long, targets index of the document's last token, -1 if truncated
    truncated: int
    eos_id: int

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
    last = torch.full((len(docs),), -1, dtype=torch.long)
    truncated = 0
    for i, (_, text) in enumerate(docs):
        ids = tokenizer.encode(text) + [eos]
        truncated += len(ids) > n_ctx + 1
        if len(ids) <= n_ctx + 1:
            last[i] = len(ids) - 3  # targets[j] = ids[j + 1]; ids[-2] is the last document token
        ids = ids[: n_ctx + 1]
        rows[i, : len(ids)] = torch.tensor(ids)
        targets[i, : len(ids) - 1] = rows[i, 1 : len(ids)]  # the loss stops at the first end-of-text
    source = torch.tensor([s for s, _ in docs], dtype=torch.long)
    return TextMix(rows[:, :-1].contiguous(), targets, source, last, truncated, eos)


def make_mix(n_prontoqa: int, n_stories: int, stories: str | Path, tokenizer, n_ctx: int, seed: int,
             prontoqa_cfg=None) -> tuple[TextMix, dict]:
    """PrOntoQA examples (seed ``seed``) + the first ``n_stories`` stories of ``stories`` (any
    :func:`~anchorlab.text.stories.load_stories` source; the stand-in uses seed ``seed + 1``), shuffled with
    ``seed + 2``. Returns the mix and a JSON-able record of how it was made."""
    from anchorlab.text.prontoqa import ProntoQAConfig, generate
    from anchorlab.text.stories import load_stories

    cfg = prontoqa_cfg or ProntoQAConfig()
    qa = [e.text for e in generate(cfg, n_prontoqa, seed)] if n_prontoqa else []
    story_texts = load_stories(stories, n=n_stories, seed=seed + 1) if n_stories else []
    if len(story_texts) < n_stories:
        raise ValueError(f"n_stories: {stories} holds {len(story_texts)} stories, fewer than {n_stories}")
    mix = build_mix(qa, story_texts, tokenizer, n_ctx, seed + 2)
    record = {"n_prontoqa": n_prontoqa, "n_stories": n_stories, "stories": str(stories),
              "stories_is_standin": str(stories) == "standin", "tokenizer": getattr(tokenizer, "name", "?"),
              "vocab_size": tokenizer.vocab_size, "eos_id": tokenizer.eos_id, "n_ctx": n_ctx, "seed": seed,
              "prontoqa": {k: getattr(cfg, k) for k in cfg.__dataclass_fields__}, "truncated": mix.truncated}
    return mix, record


def save_mix(mix: TextMix, directory: str | Path, record: dict | None = None) -> Path:
    """Write ``mix.safetensors`` (inputs, targets, source, last) and ``mix.json`` (record) to ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    save_file({"inputs": mix.inputs, "targets": mix.targets, "source": mix.source, "last": mix.last},
              str(directory / "mix.safetensors"))
    meta = dict(record or {}, truncated=mix.truncated, eos_id=mix.eos_id, sources=list(SOURCES))
    (directory / "mix.json").write_text(json.dumps(meta, indent=2) + "\n")
    return directory


def load_mix(directory: str | Path) -> tuple[TextMix, dict]:
    directory = Path(directory)
    t = load_file(str(directory / "mix.safetensors"))
    meta = json.loads((directory / "mix.json").read_text())
    return TextMix(t["inputs"], t["targets"], t["source"], t["last"], meta["truncated"], meta["eos_id"]), meta


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


def label_ids(tokenizer) -> tuple[int, int]:
    """The single token ids of " True" and " False" (raises if the tokenizer splits either)."""
    out = []
    for word in (" True", " False"):
        ids = tokenizer.encode(word)
        if len(ids) != 1:
            raise ValueError(f"tokenizer splits {word!r} into {ids}; answer accuracy needs one token per label "
                             "(train the BPE on PrOntoQA text, or use GPT-2)")
        out.append(ids[0])
    return out[0], out[1]


def answer_accuracy(logits: torch.Tensor, mix: TextMix, tokenizer) -> float:
    """Share of untruncated PrOntoQA rows whose logit for the true label beats the other label's."""
    true_id, false_id = label_ids(tokenizer)
    rows = torch.nonzero((mix.source == 0) & (mix.last >= 0)).flatten()
    if len(rows) == 0:
        raise ValueError("mix has no untruncated PrOntoQA row")
    pos = mix.last[rows]
    target = mix.targets[rows, pos]
    if not ((target == true_id) | (target == false_id)).all():
        raise ValueError("a PrOntoQA row does not end with the ' True' / ' False' token")
    at = logits[rows, pos]
    predicted = torch.where(at[:, true_id] > at[:, false_id], true_id, false_id)
    return (predicted == target).float().mean().item()


def source_token_ids(mix: TextMix, exclusive: bool = False) -> dict[str, torch.Tensor]:
    """Sorted ids of the tokens in each source's documents (end-of-text excluded); with ``exclusive``,
    only the tokens that the other source never uses."""
    used = {}
    for k, name in enumerate(SOURCES):
        rows = mix.source == k
        t = mix.targets[rows]
        used[name] = (set(t[t != IGNORE].tolist()) | set(mix.inputs[rows, 0].tolist())) - {mix.eos_id}
    if exclusive:
        a, b = used[SOURCES[0]], used[SOURCES[1]]
        used = {SOURCES[0]: a - b, SOURCES[1]: b - a}
    return {name: torch.tensor(sorted(ids), dtype=torch.long) for name, ids in used.items()}
