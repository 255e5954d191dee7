"""The model of a real-task run and how it is trained and scored: output-only next-token loss, batched greedy
decoding, exact match.

Models (``model.arch``): HF GPT-2 with γ-init (:func:`anchorlab.gamma_init.gamma_init_`, wrapped in
:class:`~anchorlab.text.model.TiedLM` as the real-language runs do) or our own decoder
(:class:`anchorlab.models.gpt.GPT`, which returns logits at every position; γ-init by
:func:`anchorlab.init.apply_init`): P1's model (``"p1"``) or the earlier pre-LN variant (``"gpt"``), see
:class:`~anchorlab.text.seq2seq_config.Seq2SeqModelConfig`. Both map ids [B, P] to logits [B, P, V].

Greedy decoding groups the rows by prompt length, so every batch starts from prompts of one length (no left
padding, positions as in training), appends the argmax token ``max_new`` times, and stops early once every
row of the batch has written ``<eos>``. A prediction is the tokens before its first ``<eos>`` (all
``max_new`` tokens for a task without an end token); it is right when it equals the reference output.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from anchorlab.config import ModelConfig
from anchorlab.text.seq2seq import IGNORE, Seq2SeqRows
from anchorlab.text.seq2seq_config import Seq2SeqRunConfig


def build_model(cfg: Seq2SeqRunConfig, vocab_size: int, n_ctx: int, eos_id: int | None) -> nn.Module:
    """The configured model, γ-initialized from ``seeds.init_seed`` (drawn on the CPU)."""
    mc = cfg.model
    n_ctx = mc.n_ctx or n_ctx
    gen = torch.Generator().manual_seed(cfg.seeds.init_seed)
    if mc.arch in ("p1", "gpt"):
        from anchorlab.config import InitConfig
        from anchorlab.init import apply_init
        from anchorlab.models.gpt import GPT

        m = decoder_config(cfg, n_ctx)
        init = InitConfig(gamma=cfg.init.gamma, convention="paper" if mc.arch == "p1" else "fan_in")
        return apply_init(GPT(m, vocab_size), init, gen)
    from transformers import GPT2Config, GPT2LMHeadModel

    from anchorlab.gamma_init import gamma_init_
    from anchorlab.text.model import TiedLM

    eos = 0 if eos_id is None else eos_id
    hf = GPT2Config(vocab_size=vocab_size, n_positions=n_ctx, n_embd=mc.d_model, n_layer=mc.n_layers,
                    n_head=mc.n_heads, activation_function=mc.activation, resid_pdrop=0.0, embd_pdrop=0.0,
                    attn_pdrop=0.0, bos_token_id=eos, eos_token_id=eos)
    model = GPT2LMHeadModel(hf)
    gamma_init_(model, cfg.init.gamma, convention=cfg.init.convention, overrides=dict(cfg.init.overrides),
                generator=gen)
    return TiedLM(model)


def decoder_config(cfg: Seq2SeqRunConfig, n_ctx: int) -> ModelConfig:
    """Our decoder's :class:`~anchorlab.config.ModelConfig` for ``model.arch`` "p1" (P1's model: post-LN, ReLU,
    d_head = d_model / (2 n_heads), MLP 3 d_model) or "gpt" (pre-LN, GELU, d_head = d_model / n_heads, MLP
    4 d_model)."""
    from anchorlab.config import ModelConfig

    mc = cfg.model
    if mc.arch == "p1":
        return ModelConfig(d_model=mc.d_model, n_heads=mc.n_heads, d_head=mc.d_model // (2 * mc.n_heads),
                           d_mlp=mc.d_mlp or 3 * mc.d_model, n_layers=mc.n_layers, n_ctx=n_ctx, norm="post", act="relu")
    return ModelConfig(d_model=mc.d_model, n_heads=mc.n_heads, d_head=mc.d_model // mc.n_heads,
                       d_mlp=mc.d_mlp or 4 * mc.d_model, n_layers=mc.n_layers, n_ctx=n_ctx, norm="pre", act="gelu")


def scored_width(targets: torch.Tensor) -> int:
    """Columns up to the last scored target of a batch (causal attention: later columns change nothing)."""
    scored = (targets != IGNORE).any(0).nonzero()
    return int(scored[-1]) + 1 if len(scored) else 1


def output_loss(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, int]:
    """(sum of next-token cross-entropy over the scored output targets, their count), padding cut off."""
    t = scored_width(targets)
    logits = model(inputs[:, :t])
    loss = F.cross_entropy(logits.flatten(0, 1).float(), targets[:, :t].flatten(), ignore_index=IGNORE,
                           reduction="sum")
    return loss, int((targets[:, :t] != IGNORE).sum())


@torch.no_grad()
def greedy_decode(model: nn.Module, rows: Seq2SeqRows, max_new: int, eos_id: int | None, batch_size: int,
                  device: torch.device) -> list[list[int]]:
    """Per row, the ids greedy decoding writes after its prompt (up to, not including, the first ``eos_id``)."""
    was_training = model.training
    model.eval()
    out: list[list[int]] = [[] for _ in range(len(rows))]
    inputs = torch.as_tensor(rows.inputs)
    for p in np.unique(rows.prompt_len):
        idx = np.flatnonzero(rows.prompt_len == p)
        for i in range(0, len(idx), batch_size):
            b = idx[i:i + batch_size]
            seq = inputs[b, :p].to(device)
            done = torch.zeros(len(b), dtype=torch.bool, device=device)
            for _ in range(max_new):
                nxt = model(seq)[:, -1].argmax(-1)
                seq = torch.cat([seq, nxt[:, None]], 1)
                if eos_id is not None:
                    done |= nxt == eos_id
                    if bool(done.all()):
                        break
            for j, r in enumerate(seq[:, p:].tolist()):
                out[b[j]] = r[:r.index(eos_id)] if eos_id is not None and eos_id in r else r
    model.train(was_training)
    return out


def references(rows: Seq2SeqRows) -> list[list[int]]:
    """Per row, the reference output ids (without the end token)."""
    return [rows.targets[i, p - 1:p - 1 + n].tolist() for i, (p, n) in enumerate(zip(rows.prompt_len, rows.output_len))]


def exact_match_flags(predicted: list[list[int]], rows: Seq2SeqRows) -> np.ndarray:
    """[N] bool: whether each prediction equals its reference output, token for token."""
    return np.array([p == r for p, r in zip(predicted, references(rows))], dtype=bool)


@torch.no_grad()
def mean_output_loss(model: nn.Module, rows: Seq2SeqRows, batch_size: int, device: torch.device) -> float:
    """Mean next-token cross-entropy over the output targets of ``rows`` (teacher-forced, eval mode)."""
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    x, y = torch.as_tensor(rows.inputs), torch.as_tensor(rows.targets)
    for i in range(0, len(rows), batch_size):
        s, n = output_loss(model, x[i:i + batch_size].to(device), y[i:i + batch_size].to(device))
        total, count = total + float(s), count + n
    model.train(was_training)
    return total / max(count, 1)
