"""The model of a real-language run and how it is scored: a γ-initialized HF GPT-2 with tied embeddings,
the training loss over length-sorted micro-batches, and the evaluations logged to ``metrics.jsonl``.

Per-source losses are mean next-token cross-entropy over a source's target tokens (``mix.per_source_loss``
summed over batches). The True/False accuracy of P1 Fig. 7 compares the " True" and " False" logits at the
label position, teacher-forced with the gold chain of thought. ``emb_cos_*`` is the mean pairwise cosine
(off-diagonal) of the token embeddings ``wte`` of the tokens only PrOntoQA uses vs only the stories use
(P2 Fig. 7B); ``*_all`` uses every token each source uses.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from anchorlab.text.config import LMRunConfig
from anchorlab.text.mix import IGNORE, SOURCES, TextMix


class TiedLM(nn.Module):
    """An HF causal LM whose ``state_dict`` leaves out the output matrix tied to the input embedding
    (safetensors refuses shared tensors); ``load_state_dict`` puts the tie back. ``forward`` gives logits."""

    TIED = ("hf.lm_head.weight", "hf.transformer.wte.weight")

    def __init__(self, hf: nn.Module):
        super().__init__()
        self.hf = hf

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.hf(ids).logits

    def get_input_embeddings(self) -> nn.Module:
        return self.hf.get_input_embeddings()

    def state_dict(self, *args: Any, **kwargs: Any) -> dict[str, torch.Tensor]:  # type: ignore[override]
        sd = super().state_dict(*args, **kwargs)
        out, source = self.TIED
        if out in sd and source in sd and sd[out].data_ptr() == sd[source].data_ptr():
            del sd[out]
        return sd

    def load_state_dict(self, state_dict: dict[str, torch.Tensor], strict: bool = True,  # type: ignore[override]
                        assign: bool = False) -> Any:
        out, source = self.TIED
        sd = dict(state_dict)
        if out not in sd and source in sd:
            sd[out] = sd[source]
        return super().load_state_dict(sd, strict=strict, assign=assign)


def build_lm(cfg: LMRunConfig, vocab_size: int, eos_id: int) -> TiedLM:
    """An HF ``GPT2LMHeadModel`` (dropout 0, tied embeddings) γ-initialized from ``seeds.init_seed``."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from anchorlab.gamma_init import gamma_init_

    mc = cfg.model
    hf = GPT2Config(vocab_size=vocab_size, n_positions=cfg.data.n_ctx, n_embd=mc.d_model, n_layer=mc.n_layers,
                    n_head=mc.n_heads, activation_function=mc.activation, resid_pdrop=0.0, embd_pdrop=0.0,
                    attn_pdrop=0.0, bos_token_id=eos_id, eos_token_id=eos_id)
    model = GPT2LMHeadModel(hf)
    gamma_init_(model, cfg.init.gamma, convention=cfg.init.convention, overrides=dict(cfg.init.overrides),
                generator=torch.Generator().manual_seed(cfg.seeds.init_seed))
    return TiedLM(model)


def _trim(targets: torch.Tensor) -> int:
    """Columns up to the last scored target in the batch (causal attention: later columns change nothing)."""
    scored = (targets != IGNORE).any(0).nonzero()
    return int(scored[-1]) + 1 if len(scored) else 1


def scored_lengths(targets: torch.Tensor) -> torch.Tensor:
    """[rows]: 1 + the column of each row's last scored target (0 for a row with none)."""
    cols = torch.arange(1, targets.shape[1] + 1)
    return ((targets != IGNORE) * cols).amax(1)


def micro_batches(rows: torch.Tensor, lengths: torch.Tensor, k: int) -> list[torch.Tensor]:
    """``rows`` as ``k`` groups of similar ``lengths`` (shortest first), or unchanged for k = 1.

    Every row lands in exactly one group, so accumulating the groups' gradients gives the batch's."""
    if k <= 1:
        return [rows]
    ordered = rows[torch.argsort(lengths[rows], stable=True)]
    return [g for g in ordered.tensor_split(k) if len(g)]


def source_loss_sums(logits: torch.Tensor, targets: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """[len(SOURCES), 2]: (cross-entropy sum, token count) per source (``per_source_loss`` before the mean)."""
    ce = F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(), ignore_index=IGNORE,
                         reduction="none").view_as(targets)
    mask = targets != IGNORE
    out = torch.zeros(len(SOURCES), 2)
    for k in range(len(SOURCES)):
        m = mask & (source == k)[:, None]
        out[k] = torch.stack([ce[m].sum().detach().cpu(), m.sum().cpu().float()])
    return out


def backward_batch(model: nn.Module, mix: TextMix, rows: torch.Tensor, lengths: torch.Tensor, k: int,
                   device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Backpropagate the mean next-token cross-entropy over the scored tokens of ``rows`` (gradients add to
    ``.grad``), in ``k`` length-sorted :func:`micro_batches`; return (that loss, its ``source_loss_sums``)."""
    n_scored = (mix.targets[rows] != IGNORE).sum().to(device)
    loss, sums = torch.zeros((), device=device), torch.zeros(len(SOURCES), 2)
    for group in micro_batches(rows, lengths, k):
        t = max(1, int(lengths[group].max()))
        tgt, src = mix.targets[group, :t].to(device), mix.source[group].to(device)
        logits = model(mix.inputs[group, :t].to(device))
        ce = F.cross_entropy(logits.flatten(0, 1).float(), tgt.flatten(), ignore_index=IGNORE,
                             reduction="sum") / n_scored
        ce.backward()
        loss += ce.detach()
        sums += source_loss_sums(logits.detach(), tgt, src)
    return loss, sums


@torch.no_grad()
def evaluate_rows(model: nn.Module, mix: TextMix, rows: torch.Tensor, batch_size: int,
                  labels: tuple[int, int] | None, device: torch.device) -> dict[str, float]:
    """Per-source mean loss over ``rows`` of ``mix``; with ``labels`` also the PrOntoQA True/False accuracy."""
    was_training = model.training
    model.eval()
    sums = torch.zeros(len(SOURCES), 2)
    correct = counted = 0
    for i in range(0, len(rows), batch_size):
        r = rows[i:i + batch_size]
        t = _trim(mix.targets[r])
        tgt, src, last = mix.targets[r, :t].to(device), mix.source[r].to(device), mix.last[r].to(device)
        logits = model(mix.inputs[r, :t].to(device))
        sums += source_loss_sums(logits, tgt, src)
        if labels is not None:
            qa = ((src == 0) & (last >= 0)).nonzero().flatten()
            at = logits[qa, last[qa]]  # [n_qa, V] logits at the label position
            predicted = torch.where(at[:, labels[0]] > at[:, labels[1]], labels[0], labels[1])
            correct += int((predicted == tgt[qa, last[qa]]).sum())
            counted += len(qa)
    model.train(was_training)
    out = {name: (sums[k, 0] / sums[k, 1]).item() if sums[k, 1] > 0 else float("nan")
           for k, name in enumerate(SOURCES)}
    if labels is not None:
        out["acc"] = correct / counted if counted else float("nan")
    return out


def mean_pairwise_cosine(E: torch.Tensor) -> float:
    """Mean cosine similarity over distinct pairs of rows of ``E`` [n, d] (``nan`` for n < 2)."""
    if E.shape[0] < 2:
        return float("nan")
    U = F.normalize(E.float(), dim=1)
    G = U @ U.T
    n = E.shape[0]
    return ((G.sum() - G.diagonal().sum()) / (n * (n - 1))).item()


def embedding_cosines(model: nn.Module, token_sets: dict[str, dict[str, torch.Tensor]]) -> dict[str, float]:
    W = model.get_input_embeddings().weight.detach().cpu()
    return {f"emb_cos_{src}{suffix}": mean_pairwise_cosine(W[ids])
            for suffix, sets in token_sets.items() for src, ids in sets.items()}


def eval_train_rows(mix: TextMix, per_source: int, seed: int) -> torch.Tensor:
    """A fixed, seeded subset of training rows: up to ``per_source`` of each source."""
    g = torch.Generator().manual_seed(seed)
    picks = []
    for k in range(len(SOURCES)):
        rows = (mix.source == k).nonzero().flatten()
        picks.append(rows[torch.randperm(len(rows), generator=g)[:per_source]])
    return torch.cat(picks).sort().values
