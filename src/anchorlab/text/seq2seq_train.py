"""Train a γ-initialized decoder on a P1 real task (SCAN, COGS, addition) into a run directory.

Decoder-only next-token training with the loss only on the output tokens (:mod:`anchorlab.text.seq2seq`),
AdamW over shuffled rows (every parameter decays, as in the other runs), the real-language LR schedule
(:func:`anchorlab.schedule.lm_lr_at`), evaluation by batched greedy decoding
(:mod:`anchorlab.text.seq2seq_model`). The run directory follows :mod:`anchorlab.rundir` plus ``data.json``
(the vocabulary and the counts of the drawn data; the rows themselves are regenerated, deterministically, on
resume). ``metrics.jsonl`` has per evaluation: step, epoch, lr, train_loss (running since the last evaluation),
test_loss (teacher-forced output loss), em_train (exact match on ``train.eval_train_rows`` fixed training rows),
em_test, for COGS em_gen (mean over the generalization types, equal weight), em_gen_overall (over examples)
and em_gen:<type> per type, and with ``train.grad_clip`` > 0 grad_norm (the last step's gradient norm before
clipping). Each record also goes to TensorBoard (and W&B if asked: :mod:`anchorlab.tracking`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from anchorlab import rundir, tracking
from anchorlab.cpu import check_device, run_environment, training_device
from anchorlab.schedule import lm_lr_at
from anchorlab.text.seq2seq import Seq2SeqRows
from anchorlab.text.seq2seq_config import Seq2SeqRunConfig
from anchorlab.text.seq2seq_data import TaskRows, preflight, task_rows
from anchorlab.text.seq2seq_model import build_model, exact_match_flags, greedy_decode, mean_output_loss, output_loss
from anchorlab.train import ProgressFn, batch_order, fused_adamw

DATA_JSON, RUNNING = "data.json", "running_loss"  # RUNNING: saved with the resume state
EVAL_BATCH = 256


def summary_line(cfg: Seq2SeqRunConfig, s: dict[str, Any]) -> str:
    extra = f", gen exact match {s['em_gen']:.4g}" if "em_gen" in s else ""
    return (f"{cfg.seq2seq.task}: step {s['step']}, train exact match {s['em_train']:.4g}, test exact match "
            f"{s['em_test']:.4g}{extra}")


def subset(rows: Seq2SeqRows, idx: np.ndarray) -> Seq2SeqRows:
    return Seq2SeqRows(rows.inputs[idx], rows.targets[idx], rows.prompt_len[idx], rows.output_len[idx])


def evaluate(model: nn.Module, data: TaskRows, train_rows: Seq2SeqRows, device: torch.device) -> dict[str, Any]:
    """Exact match by greedy decoding on the scored training rows and every evaluation set; test loss."""
    def em(rows: Seq2SeqRows) -> np.ndarray:
        return exact_match_flags(greedy_decode(model, rows, data.max_new(rows), data.eos_id, EVAL_BATCH, device), rows)

    rec: dict[str, Any] = {"em_train": float(em(train_rows).mean())}
    for name, ev in data.evals.items():
        flags = em(ev.rows)
        if ev.groups is None:
            rec[f"em_{name}"] = float(flags.mean())
            continue
        per = {t: float(flags[ev.groups == k].mean()) for k, t in enumerate(ev.group_names)}
        rec[f"em_{name}"] = float(np.mean(list(per.values())))  # equal weight per type
        rec[f"em_{name}_overall"] = float(flags.mean())
        rec.update({f"em_{name}:{t}": v for t, v in per.items()})
    rec["test_loss"] = mean_output_loss(model, data.evals["test"].rows, EVAL_BATCH, device)
    return rec


def train_seq2seq(cfg: Seq2SeqRunConfig, run_dir: str | Path, *, progress: ProgressFn | None = None,
                  show_progress: bool = True) -> dict[str, Any]:
    """Train ``cfg`` into ``run_dir`` (resuming an unfinished run) and return the summary."""
    run_dir = Path(run_dir)
    if not rundir.is_done(run_dir):
        preflight([cfg])  # data files that are not there: fail before anything is written
        check_device(cfg.train.device, auto=False)  # a GPU this machine lacks: the same
    return rundir.run_locked(run_dir, cfg, lambda status: _train_open(cfg, run_dir, status, progress, show_progress))


def _train_open(cfg: Seq2SeqRunConfig, run_dir: Path, status: str, progress: ProgressFn | None,
                show_progress: bool) -> dict[str, Any]:
    """:func:`train_seq2seq` once ``run_dir`` is locked and opened with ``status`` ("new" or "resume")."""
    tc = cfg.train
    device = training_device(tc.device, tc.threads)
    t_start = time.time()

    data = task_rows(cfg)
    rundir.write_json(run_dir / DATA_JSON, {**data.info, "n_ctx": data.n_ctx, "tokens": list(data.tokens)})
    n = len(data.train)
    g = np.random.default_rng(cfg.seeds.train_seed)
    train_rows = subset(data.train, np.sort(g.choice(n, size=min(n, tc.eval_train_rows), replace=False)))
    x_all, y_all = torch.as_tensor(data.train.inputs), torch.as_tensor(data.train.targets)
    steps_per_epoch = tc.steps_per_epoch(n)
    total_steps = steps_per_epoch * tc.epochs

    model = build_model(cfg, data.vocab_size, data.n_ctx, data.eos_id).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=tc.lr, weight_decay=tc.weight_decay, fused=fused_adamw(device))
    running = [0.0, 0]  # output-token loss sum and count since the last evaluation
    grad_norm = torch.zeros((), device=device)  # the last step's gradient norm before clipping (clipping computes it)
    track = tracking.Session(run_dir)

    def eval_record(step: int, epoch: int) -> dict[str, Any]:
        train_loss = running[0] / running[1] if running[1] else None
        # nan/inf: stop here, before decoding with nan weights and before anything is saved
        rundir.check_finite_loss(run_dir, step, train_loss)
        rundir.check_finite_weights(run_dir, step, dict(model.state_dict()))
        rec: dict[str, Any] = {"step": step, "epoch": epoch, "lr": lm_lr_at(step, tc, total_steps),
                               "train_loss": train_loss}
        rec.update(evaluate(model, data, train_rows, device))
        if tc.grad_clip > 0 and step > 0:
            rec["grad_norm"] = grad_norm.item()
        running[:] = [0.0, 0]
        rundir.append_metrics(run_dir, rec)
        track.log(rec)  # TensorBoard (+ W&B if ANCHORLAB_WANDB=1)
        return rec

    step, start_epoch, last, resumed = rundir.start_or_resume(run_dir, model, opt, status, lambda: eval_record(0, 0))
    sessions = rundir.record_session(run_dir, step, run_environment(next(model.parameters()).device))
    if resumed:
        track.resume(step)  # TensorBoard drops what the interrupted session logged after the resume point
        saved = rundir.resume_extra(run_dir, RUNNING)  # the running train loss since the last evaluation
        if saved is not None:
            running[:] = [float(saved[0]), int(saved[1])]
    bar = None
    if show_progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=total_steps, initial=step, desc=f"{cfg.seq2seq.task} γ={cfg.init.gamma:g}", unit="step",
                   dynamic_ncols=True)
    model.train()
    try:  # the bar closes before an error line (a diverged run) is printed
        for epoch in range(start_epoch + 1, tc.epochs + 1):
            perm = batch_order(n, cfg.seeds.train_seed, epoch)
            epoch_sum = epoch_count = 0.0
            for i in range(steps_per_epoch):
                r = perm[i * tc.batch_size:(i + 1) * tc.batch_size]
                for group in opt.param_groups:
                    group["lr"] = lm_lr_at(step, tc, total_steps)
                opt.zero_grad(set_to_none=True)
                loss_sum, count = output_loss(model, x_all[r].to(device), y_all[r].to(device))
                (loss_sum / max(count, 1)).backward()
                if tc.grad_clip > 0:
                    grad_norm.copy_(nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip))
                opt.step()
                step += 1
                running[0] += float(loss_sum.detach())
                running[1] += count
                epoch_sum, epoch_count = epoch_sum + float(loss_sum.detach()), epoch_count + count
                if step % tc.eval_every == 0 or step == total_steps:
                    last = eval_record(step, epoch)
                if bar is not None:
                    bar.set_postfix({"loss": f"{float(loss_sum.detach()) / max(count, 1):.3f}",
                                     "em_test": f"{last['em_test']:.3f}"}, refresh=False)
                    bar.update(1)
            epoch_loss = epoch_sum / max(epoch_count, 1)
            rundir.check_finite_loss(run_dir, step, epoch_loss)  # nan/inf: stop before anything of it is saved
            rundir.append_epoch(run_dir, epoch, step, epoch_loss)
            if epoch % tc.checkpoint_every == 0 or epoch == tc.epochs:
                rundir.save_checkpoint(run_dir, model, step, epoch)
            rundir.save_resume(run_dir, model, opt, step, epoch,
                              extra={RUNNING: torch.tensor(running, dtype=torch.float64)})
            if bar is None and progress is not None:
                progress(step, total_steps, {"loss": epoch_loss, "em_test": last["em_test"]})
    finally:
        if bar is not None:
            bar.close()

    final = rundir.read_metrics(run_dir)[-1]
    summary = {"run_id": cfg.run_id(), "task": cfg.seq2seq.task, "arch": cfg.model.arch, "gamma": cfg.init.gamma,
               "weight_decay": tc.weight_decay, "n_params": sum(p.numel() for p in model.parameters()),
               **data.info, "steps_per_epoch": steps_per_epoch, **{k: v for k, v in final.items() if k != "lr"},
               "wall_seconds_this_session": round(time.time() - t_start, 2),
               "environment": run_environment(next(model.parameters()).device), "sessions": sessions}
    rundir.write_json(run_dir / rundir.SUMMARY, summary)
    rundir.write_atomic(run_dir / rundir.DONE, "")
    return summary
