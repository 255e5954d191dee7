"""One training run, from a RunConfig to a complete run directory (see :mod:`anchorlab.rundir`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from anchorlab import kinds, rundir, tracking
from anchorlab.config import ConfigError, RunConfig, TrainConfig
from anchorlab.config_tools import reference_for
from anchorlab.cpu import check_device, run_environment, training_device, warn_precision
from anchorlab.init import apply_init, count_parameters, init_std
from anchorlab.metrics import BEST_ALSO, HEADLINE, evaluate, progress_postfix
from anchorlab.models import build_model
from anchorlab.reference import preflight as reference_preflight
from anchorlab.schedule import lr_at
from anchorlab.tasks import TaskData, make_task_data

# Called after every epoch with (optimizer steps done, the run's total steps, latest metrics); replaces the
# tqdm bar. Steps, not epochs: a sweep's runs can have epochs of very different lengths (the sweep's bar sums them).
ProgressFn = Callable[[int, int, dict[str, Any]], None]
# Scalars computed from the model at every evaluation and logged with the metrics (e.g. P1's mechanism scalars).
WeightMetrics = Callable[[nn.Module], dict[str, float]]


def build_initialized_model(cfg: RunConfig, d_vocab: int) -> nn.Module:
    """The configured model with γ-init drawn from ``seeds.init_seed`` (on the CPU, so any device agrees),
    or, with ``task.reference`` (and "init" in ``task.reference_parts``), the reference file's init rescaled to
    ``init.gamma``."""
    model = build_model(cfg.model, d_vocab)
    reference = reference_for(cfg.task, "init")
    if reference:
        from anchorlab.reference import load_authors_init_, load_reference

        ref = load_reference(reference)
        return load_authors_init_(model, ref.init, ref.gamma, cfg.init.gamma)
    return apply_init(model, cfg.init, torch.Generator().manual_seed(cfg.seeds.init_seed))


def batch_order(n: int, train_seed: int, epoch: int) -> torch.Tensor:
    """The permutation of training rows for ``epoch``: a pure function of (seed, epoch), so resuming is exact."""
    return torch.randperm(n, generator=torch.Generator().manual_seed(train_seed * 1_000_003 + epoch))


def epoch_order(cfg: RunConfig) -> Callable[[int, int], torch.Tensor]:
    """(n, epoch) -> that epoch's permutation: ours from ``seeds.train_seed``, or the reference file's (with
    "order" in ``task.reference_parts``)."""
    reference = reference_for(cfg.task, "order")
    if reference:
        from anchorlab.reference import load_reference, reference_batch_order

        ref = load_reference(reference)
        if cfg.train.epochs > ref.n_epochs:
            raise ConfigError(f"train.epochs: at most {ref.n_epochs} with task.reference {reference} "
                              f"(it records {ref.n_epochs} epochs of batch order)")
        return lambda n, epoch: reference_batch_order(ref, n, epoch)
    return lambda n, epoch: batch_order(n, cfg.seeds.train_seed, epoch)


def fused_adamw(device: torch.device) -> bool:
    """Whether torch's fused AdamW (one kernel per step; the default's update up to float rounding) runs here."""
    return device.type in ("cpu", "cuda")


def make_optimizer(model: nn.Module, tc: TrainConfig, device: torch.device) -> torch.optim.Optimizer:
    """AdamW as the authors use it: every parameter decays (LayerNorm and bias too)."""
    return torch.optim.AdamW(model.parameters(), lr=tc.lr, betas=(tc.beta1, tc.beta2), eps=tc.eps,
                             weight_decay=tc.weight_decay, fused=fused_adamw(device))


def train_step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor, lr: float,
               tc: TrainConfig, amp: torch.dtype | None = None) -> torch.Tensor:
    """One optimizer step at learning rate ``lr`` on the batch (x, y); returns the batch loss (detached).

    Cross-entropy on the last position only, global grad-norm clipping at ``tc.grad_clip``."""
    for group in opt.param_groups:
        group["lr"] = lr
    with torch.autocast(x.device.type, dtype=amp, enabled=amp is not None):
        logits = model(x, last_only=tc.prune_last)[:, -1]
    loss = F.cross_entropy(logits.float(), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if tc.grad_clip > 0:
        nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip)
    opt.step()
    return loss.detach()


def default_weight_metrics(cfg: RunConfig) -> WeightMetrics | None:
    """What the anchor-task kind logs from the weights for ``cfg`` (:attr:`anchorlab.kinds.RunKind.training_metrics`:
    the P1 mechanism scalars for a GPT on the composite task, else nothing); imported only when used."""
    return kinds.KINDS["anchor"].get("training_metrics")(cfg)


def train(cfg: RunConfig, run_dir: str | Path, *, progress: ProgressFn | None = None,
          show_progress: bool = True, data: TaskData | None = None,
          weight_metrics: WeightMetrics | None = None) -> dict[str, Any]:
    """Train ``cfg`` into ``run_dir`` (resuming if it holds an unfinished run) and return the summary.

    ``weight_metrics(model)``: extra scalars logged at every evaluation; default :func:`default_weight_metrics`
    (pass ``lambda model: {}`` for none)."""
    run_dir = Path(run_dir)
    cfg.validate()  # the batch size against the task's rows too, before anything is written
    if cfg.train.cuda_graph:
        raise ConfigError("train.cuda_graph: only batched training replays a CUDA graph (anchorlab sweep ... "
                          "--backend local --batch-models K, on a GPU); false for one run")
    reference_preflight([cfg])  # a task.reference file that is not there: one line, nothing written
    check_device(cfg.train.device)  # a GPU this machine lacks: the same
    order = epoch_order(cfg)  # checks a reference file before anything is written
    return rundir.run_locked(run_dir, cfg, lambda status: _train_open(cfg, run_dir, status, order, progress,
                                                                       show_progress, data, weight_metrics))


def _train_open(cfg: RunConfig, run_dir: Path, status: str, order: Callable[[int, int], torch.Tensor],
                progress: ProgressFn | None, show_progress: bool, data: TaskData | None,
                weight_metrics: WeightMetrics | None) -> dict[str, Any]:
    """:func:`train` once ``run_dir`` is locked and opened with ``status`` ("new" or "resume")."""
    tc = cfg.train
    device = training_device(tc.device, tc.threads)
    t_start = time.time()

    data = data if data is not None else make_task_data(cfg.task, cfg.seeds.data_seed)
    all_x = torch.from_numpy(data.inputs).to(device)
    all_y = torch.from_numpy(data.targets).to(device)
    train_idx = torch.from_numpy(data.in_train.nonzero()[0]).to(device)
    x_train, y_train = all_x[train_idx], all_y[train_idx]  # resident on the device; batches are index slices
    n_train = len(x_train)
    steps_per_epoch = tc.steps_per_epoch(n_train)
    if steps_per_epoch == 0:
        raise ValueError(f"train.batch_size {tc.batch_size} exceeds the {n_train} training rows")

    model = build_initialized_model(cfg, data.vocab_size).to(device)
    opt = make_optimizer(model, tc, device)
    amp = torch.bfloat16 if tc.precision == "bf16" else None
    warn_precision(tc.precision, device)
    extra = weight_metrics if weight_metrics is not None else default_weight_metrics(cfg)

    def eval_record(step: int, epoch: int, train_loss: float | None) -> dict[str, Any]:
        m = evaluate(model, data, all_x, all_y, cfg.task, tc.eval_batch_size, amp)
        rec = {"step": step, "epoch": epoch, "lr": lr_at(step, tc, steps_per_epoch),
               "epoch_train_loss": train_loss, **m}
        if extra is not None:
            rec.update(extra(model))
        rundir.append_metrics(run_dir, rec)
        track.log(rec)  # TensorBoard (+ W&B if ANCHORLAB_WANDB=1)
        return rec

    track = tracking.Session(run_dir)
    step, start_epoch, last, resumed = rundir.start_or_resume(run_dir, model, opt, status,
                                                              lambda: eval_record(0, 0, None))
    sessions = rundir.record_session(run_dir, step, run_environment(device))
    if resumed:
        track.resume(step)  # TensorBoard drops what the interrupted session logged after the resume point

    bar = None
    if progress is None and show_progress:
        bar = _step_bar(cfg, steps_per_epoch, start_epoch)
    model.train()
    epoch = start_epoch
    try:  # the bar closes before an error line (a diverged run) is printed
        for epoch in range(start_epoch + 1, tc.epochs + 1):
            perm = order(n_train, epoch).to(device)
            loss_sum = torch.zeros((), device=device)
            for i in range(steps_per_epoch):
                idx = perm[i * tc.batch_size:(i + 1) * tc.batch_size]
                lr = lr_at(step, tc, steps_per_epoch)
                loss_sum += train_step(model, opt, x_train[idx], y_train[idx], lr, tc, amp)
                step += 1
                if bar is not None:
                    bar.update(1)
            epoch_loss = loss_sum.item() / steps_per_epoch  # the only host sync of the epoch
            rundir.check_finite_loss(run_dir, step, epoch_loss)  # nan/inf: stop before anything of it is saved
            rundir.append_epoch(run_dir, epoch, step, epoch_loss)
            stop = tc.early_stop_loss > 0 and epoch_loss < tc.early_stop_loss
            final = epoch == tc.epochs or stop
            if epoch % tc.eval_every == 0 or final:
                last = eval_record(step, epoch, epoch_loss)
            if epoch % tc.checkpoint_every == 0 or final:
                rundir.save_checkpoint(run_dir, model, step, epoch)
            if epoch % tc.resume_every == 0 or final:
                rundir.save_resume(run_dir, model, opt, step, epoch)
            status_line = {"loss": epoch_loss, **{k: last.get(k) for k in HEADLINE[cfg.task.name]}}
            if bar is not None:
                bar.set_description(f"γ={cfg.init.gamma:g} epoch {min(epoch + 1, tc.epochs)}/{tc.epochs}",
                                    refresh=False)
                bar.set_postfix(progress_postfix(status_line))
            elif progress is not None:
                progress(step, steps_per_epoch * tc.epochs, status_line)
            if stop:
                break
    finally:
        if bar is not None:
            bar.close()

    summary = make_summary(cfg, run_dir, model, steps_per_epoch, n_train)
    summary["wall_seconds_this_session"] = round(time.time() - t_start, 2)
    summary["environment"] = run_environment(device)
    summary["sessions"] = sessions  # where each part of the kept steps trained (rundir.record_session)
    rundir.write_json(run_dir / rundir.SUMMARY, summary)
    rundir.write_atomic(run_dir / rundir.DONE, "")
    return summary


def _step_bar(cfg: RunConfig, steps_per_epoch: int, start_epoch: int) -> Any:
    """A single run's tqdm bar over optimizer steps (an epoch of the paper config is minutes on a CPU), the
    epoch in its description and the last epoch's loss and accuracies as its postfix. Written to a file (a
    ``nohup`` log) it refreshes every 30 s instead of every 0.1 s, so a day-long run leaves a short log."""
    import sys

    from tqdm.auto import tqdm

    tc = cfg.train
    return tqdm(total=steps_per_epoch * tc.epochs, initial=steps_per_epoch * start_epoch, unit="step",
                desc=f"γ={cfg.init.gamma:g} epoch {min(start_epoch + 1, tc.epochs)}/{tc.epochs}",
                dynamic_ncols=True, mininterval=0.1 if sys.stderr.isatty() else 30.0)


def make_summary(cfg: RunConfig, run_dir: Path, model: nn.Module, steps_per_epoch: int,
                 n_train: int) -> dict[str, Any]:
    """Final metrics (the last evaluation) plus the best value of each headline metric over evaluations."""
    history = rundir.read_metrics(run_dir)
    final = history[-1]
    blocks: Any = getattr(model, "blocks", None)
    w_q = blocks[0].attn.W_Q if blocks is not None else None
    return {
        "run_id": cfg.run_id(),
        "gamma": cfg.init.gamma,
        "std_W_Q": init_std("attn_in", tuple(w_q.shape), cfg.init) if w_q is not None else None,
        "seeds": {"data": cfg.seeds.data_seed, "init": cfg.seeds.init_seed, "train": cfg.seeds.train_seed},
        "n_params": count_parameters(model),
        "n_train": n_train,
        "steps_per_epoch": steps_per_epoch,
        "steps": final["step"],
        "epochs": final["epoch"],
        **{k: v for k, v in final.items() if k not in ("step", "epoch", "lr", "group_acc")},
        "final_train_loss": final["train_loss"],
        "best": {k: max(r[k] for r in history) for k in (*HEADLINE[cfg.task.name], *BEST_ALSO.get(cfg.task.name, ()))
                 if all(k in r for r in history)},
        "group_acc": final["group_acc"],
    }
