"""Train a γ-initialized HF GPT-2 on a PrOntoQA + stories mix into a run directory (P2 Fig. 1 / 7, P1 Fig. 7).

The run directory follows :mod:`anchorlab.rundir` (``config.json`` holds an ``LMRunConfig``), plus the
data of :mod:`anchorlab.text.data`. ``metrics.jsonl`` has per evaluation: step, epoch, lr, train_loss
(running, since the last evaluation), {train,test}_loss_{prontoqa,stories}, {train,test}_acc_prontoqa,
emb_cos_{prontoqa,stories}[_all] (:mod:`anchorlab.text.model`), and with ``train.grad_clip`` > 0 grad_norm (the
last step's gradient norm before clipping). ``train_loss_*`` scores a fixed, seeded subset of
``train.eval_train_rows`` training rows per source in eval mode. Each record also goes to TensorBoard (and W&B
if asked: :mod:`anchorlab.tracking`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

from anchorlab import rundir, tracking
from anchorlab.config import ConfigError
from anchorlab.cpu import check_device, run_environment, training_device
from anchorlab.metrics import progress_postfix
from anchorlab.schedule import lm_lr_at
from anchorlab.text.config import LMRunConfig
from anchorlab.text.data import DATA, load_data, preflight
from anchorlab.text.mix import SOURCES, TextMix, label_ids, source_token_ids
from anchorlab.text.model import (
    backward_batch,
    build_lm,
    embedding_cosines,
    eval_train_rows,
    evaluate_rows,
    scored_lengths,
)
from anchorlab.train import ProgressFn, batch_order, fused_adamw

RUNNING = "running_loss"  # saved with the resume state (rundir.resume_extra)
STATUS_KEYS = ("train_loss_prontoqa", "train_loss_stories", "test_acc_prontoqa")  # the progress line's metrics


def summary_line(cfg: LMRunConfig, s: dict[str, Any]) -> str:
    """The final line; a source the mix does not hold (its loss NaN: no such rows) is left out, not shown as nan."""
    parts = [f"step {s['step']}"]
    for key, text in (("train_loss_prontoqa", "train loss PrOntoQA"), ("train_loss_stories", "train loss stories"),
                      ("test_acc_prontoqa", "test acc PrOntoQA")):
        if s.get(key) is not None and s[key] == s[key]:
            parts.append(f"{text} {s[key]:.4g}")
    return ", ".join(parts)


def train_lm(cfg: LMRunConfig, run_dir: str | Path, *, progress: ProgressFn | None = None,
             show_progress: bool = True) -> dict[str, Any]:
    """Train ``cfg`` into ``run_dir`` (resuming an unfinished run exactly) and return the summary.

    ``show_progress``: a tqdm bar over steps (loss, per-source losses, True/False test accuracy); without it,
    ``progress(step, total_steps, status)`` is called after every epoch (the sweep's one bar)."""
    run_dir = Path(run_dir)
    if not rundir.is_done(run_dir):
        check_device(cfg.train.device, auto=False)  # a GPU this machine lacks: fail before anything is written
        if not (run_dir / DATA).is_dir():
            preflight([cfg])  # stories that are not there: the same
    return rundir.run_locked(run_dir, cfg, lambda status: _train_open(cfg, run_dir, status, progress, show_progress))


def _train_open(cfg: LMRunConfig, run_dir: Path, status: str, progress: ProgressFn | None,
                show_progress: bool) -> dict[str, Any]:
    """:func:`train_lm` once ``run_dir`` is locked and opened with ``status`` ("new" or "resume")."""
    tc = cfg.train
    device = training_device(tc.device, tc.threads)
    t_start = time.time()

    train, test, tok = load_data(run_dir, cfg)
    labels = _labels(tok, test)
    token_sets = {"": source_token_ids(train, exclusive=True), "_all": source_token_ids(train)}
    score_rows = eval_train_rows(train, tc.eval_train_rows, cfg.seeds.train_seed)
    lengths = scored_lengths(train.targets)
    test_rows = torch.arange(len(test))
    n = len(train)
    steps_per_epoch = tc.steps_per_epoch(n)
    total_steps = steps_per_epoch * tc.epochs

    model = build_lm(cfg, tok.vocab_size, tok.eos_id).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=tc.lr, weight_decay=tc.weight_decay,
                            fused=fused_adamw(device))
    run_sum = torch.zeros(len(SOURCES), 2)  # running per-source train loss since the last evaluation
    grad_norm = torch.zeros((), device=device)  # the last step's gradient norm before clipping (clipping computes it)
    track = tracking.Session(run_dir)

    def eval_record(step: int, epoch: int) -> dict[str, Any]:
        seen = run_sum[:, 1].sum()
        # nan/inf: stop here, before the evaluation (an SVD of nan weights) and before anything is saved
        rundir.check_finite_loss(run_dir, step, (run_sum[:, 0].sum() / seen).item() if seen > 0 else None)
        rundir.check_finite_weights(run_dir, step, dict(model.state_dict()))
        tr = evaluate_rows(model, train, score_rows, 64, labels, device)
        te = evaluate_rows(model, test, test_rows, 64, labels, device)
        rec: dict[str, Any] = {"step": step, "epoch": epoch, "lr": lm_lr_at(step, tc, total_steps)}
        rec["train_loss"] = (run_sum[:, 0].sum() / seen).item() if seen > 0 else None
        for name in SOURCES:
            rec[f"train_loss_{name}"] = tr[name]
            rec[f"test_loss_{name}"] = te[name]
        rec["train_acc_prontoqa"] = tr.get("acc", float("nan"))
        rec["test_acc_prontoqa"] = te.get("acc", float("nan"))
        rec.update(embedding_cosines(model, token_sets))
        if tc.grad_clip > 0 and step > 0:
            rec["grad_norm"] = grad_norm.item()
        run_sum.zero_()
        rundir.append_metrics(run_dir, rec)
        track.log(rec)  # TensorBoard (+ W&B if ANCHORLAB_WANDB=1)
        return rec

    step, start_epoch, last, resumed = rundir.start_or_resume(run_dir, model, opt, status, lambda: eval_record(0, 0))
    sessions = rundir.record_session(run_dir, step, run_environment(next(model.parameters()).device))
    if resumed:
        track.resume(step)  # TensorBoard drops what the interrupted session logged after the resume point
        saved = rundir.resume_extra(run_dir, RUNNING)  # the running train loss since the last evaluation
        if saved is not None:
            run_sum.copy_(saved)

    bar = None
    if show_progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=total_steps, initial=step, desc=f"lm γ={cfg.init.gamma:g}", unit="step", dynamic_ncols=True)
    model.train()
    try:  # the bar closes before an error line (a diverged run) is printed
        for epoch in range(start_epoch + 1, tc.epochs + 1):
            perm = batch_order(n, cfg.seeds.train_seed, epoch)
            for i in range(steps_per_epoch):
                r = perm[i * tc.batch_size:(i + 1) * tc.batch_size]
                for group in opt.param_groups:
                    group["lr"] = lm_lr_at(step, tc, total_steps)
                opt.zero_grad(set_to_none=True)
                loss, sums = backward_batch(model, train, r, lengths, tc.micro_batches, device)
                run_sum.add_(sums)
                if tc.grad_clip > 0:
                    grad_norm.copy_(nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip))
                opt.step()
                step += 1
                if step % tc.eval_every == 0 or step == total_steps:
                    last = eval_record(step, epoch)
                if bar is not None:
                    # the sweep bar's fields (a source the mix lacks, its loss NaN, left out)
                    bar.set_postfix(progress_postfix({**last, "loss": loss.item()}), refresh=False)
                    bar.update(1)
            rundir.check_finite_loss(run_dir, step, loss.item())
            if epoch % tc.checkpoint_every == 0 or epoch == tc.epochs:
                rundir.save_checkpoint(run_dir, model, step, epoch)
            rundir.save_resume(run_dir, model, opt, step, epoch, extra={RUNNING: run_sum})
            if bar is None and progress is not None:
                progress(step, total_steps, {"loss": loss.item(), **{k: last[k] for k in STATUS_KEYS}})
    finally:
        if bar is not None:
            bar.close()

    final = rundir.read_metrics(run_dir)[-1]
    summary = {"run_id": cfg.run_id(), "gamma": cfg.init.gamma, "weight_decay": tc.weight_decay,
               "n_params": sum(p.numel() for p in model.parameters()), "n_train": n, "n_test": len(test),
               "truncated_train": train.truncated, "vocab_size": tok.vocab_size, "stories": cfg.data.stories,
               "steps_per_epoch": steps_per_epoch, **{k: v for k, v in final.items() if k != "lr"},
               "wall_seconds_this_session": round(time.time() - t_start, 2),
               "environment": run_environment(next(model.parameters()).device), "sessions": sessions}
    rundir.write_json(run_dir / rundir.SUMMARY, summary)
    rundir.write_atomic(run_dir / rundir.DONE, "")
    return summary


def _labels(tok: Any, test: TextMix) -> tuple[int, int] | None:
    """The (" True", " False") token ids when the test mix has PrOntoQA rows, else None."""
    try:
        return label_ids(tok) if bool((test.source == 0).any()) else None
    except ValueError as e:
        raise ConfigError(f"data.bpe_vocab: {e}; use a larger bpe_vocab or data.tokenizer = 'gpt2'") from None
