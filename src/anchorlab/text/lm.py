"""Train a γ-initialized HF GPT-2 on a PrOntoQA + stories mix into a run directory (P2 Fig. 1 / 7, P1 Fig. 7).

The run directory follows :mod:`anchorlab.rundir` (``config.json`` holds an ``LMRunConfig``)::

    data/train/mix.{safetensors,json}   the training rows (built once, then read back: resume needs no generator)
    data/test/mix.{safetensors,json}    held-out rows (PrOntoQA: another seed; stories: the ones after training)
    data/tokenizer.json                 for data.tokenizer = "bpe" (trained on the training texts) and
                                        "gpt2_compact" (the GPT-2 ids that the train and test texts use)
    metrics.jsonl                       per evaluation: step, epoch, lr, train_loss (running, since the last
                                        evaluation), {train,test}_loss_{prontoqa,stories}, {train,test}_acc_prontoqa,
                                        emb_cos_{prontoqa,stories}[_all]
    checkpoints/, summary.json, DONE    as for the anchor tasks

Per-source losses are mean next-token cross-entropy over a source's target tokens (``mix.per_source_loss``
summed over batches). ``train_loss_*`` scores a fixed, seeded subset of ``train.eval_train_rows`` training rows
per source in eval mode. ``test_acc_prontoqa`` is the True/False accuracy of P1 Fig. 7: the " True" vs
" False" logit at the label position, teacher-forced with the gold chain of thought. ``emb_cos_*`` is the
mean pairwise cosine (off-diagonal) of the token embeddings ``wte`` of the tokens only PrOntoQA uses vs only
the stories use (P2 Fig. 7B); ``*_all`` uses every token each source uses.
"""

from __future__ import annotations

import math
import os
import shutil
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from anchorlab import rundir
from anchorlab.cpu import setup_cpu
from anchorlab.text.config import LMRunConfig, lm_from_dict
from anchorlab.text.mix import IGNORE, SOURCES, TextMix, build_mix, label_ids, load_mix, save_mix, source_token_ids
from anchorlab.train import ProgressFn, batch_order, fused_adamw

DATA, TOKENIZER, RUNNING = "data", "tokenizer.json", "running_loss.json"
STATUS_KEYS = ("train_loss_prontoqa", "train_loss_stories", "test_acc_prontoqa")  # the progress line's metrics
_TEST_SEED_OFFSET = 7919  # PrOntoQA test examples come from data_seed + this (disjoint from training draws)


def read_lm_config(run_dir: str | Path) -> LMRunConfig:
    return lm_from_dict(rundir.read_json(Path(run_dir) / rundir.CONFIG))


# --------------------------------------------------------------------------------------------------
# Data


def story_source(stories: str) -> str | Path:
    """``"sample"`` -> the real TinyStories sample path; anything else as given. The sample cannot ship with
    anchorlab; where it is absent this raises a ``ConfigError`` that says how to point at it or do without."""
    from anchorlab.text.stories import SAMPLE_ENV, sample_path

    if stories != "sample":
        return stories
    path = sample_path()
    if not (path / "stories.txt").is_file():
        from anchorlab.config import ConfigError
        raise ConfigError(f"data.stories: 'sample' is the real TinyStories sample, not found at {path}/stories.txt; "
                          f"set {SAMPLE_ENV} to its directory, or use --set data.stories='standin' (the offline "
                          "stand-in generator, not TinyStories) or a stories file")
    return path


def build_data(cfg: LMRunConfig, directory: Path) -> None:
    """Generate, tokenize and save the train / test mixes (and the BPE) under ``directory``, atomically."""
    from anchorlab.text.prontoqa import ProntoQAConfig, generate
    from anchorlab.text.stories import load_stories
    from anchorlab.text.tokenizers import compact, gpt2_tokenizer, train_bpe

    dc, seed = cfg.data, cfg.seeds.data_seed
    pcfg = ProntoQAConfig(ontology=dc.ontology, min_hops=dc.min_hops, max_hops=dc.max_hops, ordering=dc.ordering,
                          distractor=dc.distractor)
    qa_train = [e.text for e in generate(pcfg, dc.n_prontoqa, seed)]
    qa_test = [e.text for e in generate(pcfg, dc.n_test_prontoqa, seed + _TEST_SEED_OFFSET)]
    n_st = dc.n_stories + dc.n_test_stories
    stories = load_stories(story_source(dc.stories), n=n_st, seed=seed + 1) if n_st else []
    if len(stories) < n_st:
        from anchorlab.config import ConfigError
        raise ConfigError(f"data.n_stories: {dc.stories} holds {len(stories)} stories, fewer than "
                          f"n_stories + n_test_stories = {n_st}")
    st_train, st_test = stories[:dc.n_stories], stories[dc.n_stories:]

    tmp = directory.with_name(f".{directory.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if dc.tokenizer == "bpe":
        tok = train_bpe(qa_train + st_train, dc.bpe_vocab)
        tok.save(tmp / TOKENIZER)
    elif dc.tokenizer == "gpt2_compact":
        tok = compact(gpt2_tokenizer(), qa_train + st_train + qa_test + st_test)
        tok.save(tmp / TOKENIZER)
    else:
        tok = gpt2_tokenizer()
    record = {"stories": str(story_source(dc.stories)), "stories_is_standin": dc.stories == "standin",
              "tokenizer": tok.name, "vocab_size": tok.vocab_size, "n_ctx": dc.n_ctx, "seed": seed}
    for name, qa, st, s in (("train", qa_train, st_train, seed + 2), ("test", qa_test, st_test, seed + 3)):
        mix = build_mix(qa, st, tok, dc.n_ctx, s)
        save_mix(mix, tmp / name, dict(record, n_prontoqa=len(qa), n_stories=len(st)))
    os.replace(tmp, directory)


def load_data(run_dir: Path, cfg: LMRunConfig) -> tuple[TextMix, TextMix, Any]:
    """(train mix, test mix, tokenizer) of a run, building them first if the run has none yet."""
    from anchorlab.text.tokenizers import gpt2_tokenizer, load_tokenizer

    d = Path(run_dir) / DATA
    if not d.is_dir():
        build_data(cfg, d)
    tok = gpt2_tokenizer() if cfg.data.tokenizer == "gpt2" else load_tokenizer(d / TOKENIZER)
    return load_mix(d / "train")[0], load_mix(d / "test")[0], tok


# --------------------------------------------------------------------------------------------------
# Model and evaluation


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

    def state_dict(self, *args: Any, **kwargs: Any) -> dict[str, torch.Tensor]:
        sd = super().state_dict(*args, **kwargs)
        out, source = self.TIED
        if out in sd and source in sd and sd[out].data_ptr() == sd[source].data_ptr():
            del sd[out]
        return sd

    def load_state_dict(self, state_dict: dict[str, torch.Tensor], strict: bool = True, assign: bool = False):
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
    hf = GPT2Config(vocab_size=vocab_size, n_positions=cfg.data.n_ctx, n_embd=mc.n_embd, n_layer=mc.n_layer,
                    n_head=mc.n_head, activation_function=mc.activation, resid_pdrop=0.0, embd_pdrop=0.0,
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


# --------------------------------------------------------------------------------------------------
# Training


def lr_at(step: int, cfg: LMRunConfig, total_steps: int) -> float:
    tc = cfg.train
    if step < tc.warmup_steps:
        return tc.lr * (step + 1) / tc.warmup_steps
    if tc.schedule == "constant":
        return tc.lr
    t = (step - tc.warmup_steps) / max(1, total_steps - tc.warmup_steps)
    return tc.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))


def train_lm(cfg: LMRunConfig, run_dir: str | Path, *, progress: ProgressFn | None = None,
             show_progress: bool = True) -> dict[str, Any]:
    """Train ``cfg`` into ``run_dir`` (resuming an unfinished run exactly) and return the summary.

    ``show_progress``: a tqdm bar over steps (loss, per-source losses, True/False test accuracy); without it,
    ``progress(epoch, epochs, status)`` is called after every epoch (the sweep's one bar)."""
    run_dir = Path(run_dir)
    if not rundir.is_done(run_dir) and not (run_dir / DATA).is_dir():
        story_source(cfg.data.stories)  # stories that are not there: fail before anything is written
    status = rundir.open_run(run_dir, cfg)
    if status == "done":
        return rundir.read_json(run_dir / rundir.SUMMARY)
    tc = cfg.train
    device = torch.device(tc.device)
    if device.type == "cpu":
        setup_cpu(tc.threads)
    t_start = time.time()

    train, test, tok = load_data(run_dir, cfg)
    try:
        labels = label_ids(tok) if (test.source == 0).any() else None
    except ValueError as e:
        from anchorlab.config import ConfigError
        raise ConfigError(f"data.bpe_vocab: {e}; use a larger bpe_vocab or data.tokenizer = 'gpt2'") from None
    token_sets = {"": source_token_ids(train, exclusive=True), "_all": source_token_ids(train)}
    score_rows = eval_train_rows(train, tc.eval_train_rows, cfg.seeds.train_seed)
    lengths = scored_lengths(train.targets)
    test_rows = torch.arange(len(test))
    n = len(train)
    steps_per_epoch = -(-n // tc.batch_size)
    total_steps = steps_per_epoch * tc.epochs

    model = build_lm(cfg, tok.vocab_size, tok.eos_id).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=tc.lr, weight_decay=tc.weight_decay,
                            fused=fused_adamw(device))
    run_sum = torch.zeros(len(SOURCES), 2)  # running per-source train loss since the last evaluation

    def eval_record(step: int, epoch: int) -> dict[str, Any]:
        tr = evaluate_rows(model, train, score_rows, 64, labels, device)
        te = evaluate_rows(model, test, test_rows, 64, labels, device)
        rec: dict[str, Any] = {"step": step, "epoch": epoch, "lr": lr_at(step, cfg, total_steps)}
        seen = run_sum[:, 1].sum()
        rec["train_loss"] = (run_sum[:, 0].sum() / seen).item() if seen > 0 else None
        for name in SOURCES:
            rec[f"train_loss_{name}"] = tr[name]
            rec[f"test_loss_{name}"] = te[name]
        rec["train_acc_prontoqa"] = tr.get("acc", float("nan"))
        rec["test_acc_prontoqa"] = te.get("acc", float("nan"))
        rec.update(embedding_cosines(model, token_sets))
        run_sum.zero_()
        rundir.append_metrics(run_dir, rec)
        return rec

    step, start_epoch, last, resumed = rundir.start_or_resume(run_dir, model, opt, status, lambda: eval_record(0, 0))
    if resumed:
        running = rundir.read_json(run_dir / rundir.CKPT_DIR / RUNNING)
        if running["step"] == step:  # the running train loss since the last evaluation, saved with the state
            run_sum.copy_(torch.tensor(running["sums"]))

    bar = None
    if show_progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=total_steps, initial=step, desc=f"lm γ={cfg.init.gamma:g}", unit="step", dynamic_ncols=True)
    model.train()
    for epoch in range(start_epoch + 1, tc.epochs + 1):
        perm = batch_order(n, cfg.seeds.train_seed, epoch)
        for i in range(steps_per_epoch):
            r = perm[i * tc.batch_size:(i + 1) * tc.batch_size]
            for group in opt.param_groups:
                group["lr"] = lr_at(step, cfg, total_steps)
            opt.zero_grad(set_to_none=True)
            loss, sums = backward_batch(model, train, r, lengths, tc.micro_batches, device)
            run_sum.add_(sums)
            if tc.grad_clip > 0:
                nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip)
            opt.step()
            step += 1
            if step % tc.eval_every == 0 or step == total_steps:
                last = eval_record(step, epoch)
            if bar is not None:
                bar.set_postfix({"loss": f"{loss.item():.3f}", "L_qa": f"{last['train_loss_prontoqa']:.3f}",
                                 "L_st": f"{last['train_loss_stories']:.3f}"}, refresh=False)
                bar.update(1)
        if epoch % tc.checkpoint_every == 0 or epoch == tc.epochs:
            rundir.save_checkpoint(run_dir, model, step, epoch)
        rundir.write_json(run_dir / rundir.CKPT_DIR / RUNNING, {"step": step, "sums": run_sum.tolist()})
        rundir.save_resume(run_dir, model, opt, step, epoch)
        if bar is None and progress is not None:
            progress(epoch, tc.epochs, {"loss": loss.item(), **{k: last[k] for k in STATUS_KEYS}})
    if bar is not None:
        bar.close()

    history = rundir.read_metrics(run_dir)
    final = history[-1]
    summary = {"run_id": cfg.run_id(), "gamma": cfg.init.gamma, "weight_decay": tc.weight_decay,
               "n_params": sum(p.numel() for p in model.parameters()), "n_train": n, "n_test": len(test),
               "truncated_train": train.truncated, "vocab_size": tok.vocab_size, "stories": cfg.data.stories,
               "steps_per_epoch": steps_per_epoch, **{k: v for k, v in final.items() if k != "lr"},
               "wall_seconds_this_session": round(time.time() - t_start, 2)}
    rundir.write_json(run_dir / rundir.SUMMARY, summary)
    rundir.write_atomic(run_dir / rundir.DONE, "")
    return summary
