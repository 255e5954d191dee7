"""Train K same-shaped runs at once in one process: stacked weights, one forward, one AdamW step.

For sweeps on a GPU, where one small model leaves the device idle. The K runs may differ in γ-init
(``init.*``), seeds (``seeds.init_seed``, ``seeds.train_seed``) and optimisation (lr and its schedule,
weight decay, betas, eps, grad clip, eval/checkpoint cadence, early stop), in their data seed
(``seeds.data_seed``: each run trains and is evaluated on its own draw) and in which parts of a reference file
they replay (``task.reference``, ``task.reference_parts``: each run takes its draw, init and batch order from
its file or from its seeds, as alone); they must share the rest of the task config, model shapes, epochs,
batch size and precision (:func:`can_batch`). Each run directory ends up exactly as
:func:`anchorlab.train.train` writes it (same files, same metrics, same resume state).

How it stays exact (per model, the same computation as alone, up to float summation order):

* **Weights.** Every run's model is built and γ-initialised alone (:func:`train.build_initialized_model`),
  then copied into one flat buffer ``theta_KN`` (row k = run k's parameters, concatenated). The module's
  parameters are strided views ``[K, ...]`` of that buffer, detached leaves whose ``.grad`` are views of
  one flat ``grad_KN``, so autograd accumulates every gradient straight into it.
* **Forward.** ``torch.func.vmap`` over :func:`torch.func.functional_call` of the ordinary model: one
  batched matmul per layer over all K. Run k reads its own batch ``x_train[d_k][perm_k[i*B:(i+1)*B]]``
  from its own draw ``d_k`` of the data (one copy per distinct draw on the device) with its own batch
  order (:func:`train.epoch_order`: from ``seeds.train_seed``, or the reference file's). The loss is the
  sum of the K per-run mean losses, so row k of the gradient is run k's gradient alone.
* **Clip.** Row k of ``grad_KN`` is scaled by ``min(1, c_k / (|g_k| + 1e-6))``, ``|g_k|`` its own
  global norm, as ``clip_grad_norm_`` does for one model.
* **AdamW.** ``torch.optim.AdamW`` takes one scalar lr per parameter group, and one stacked tensor
  holds all K runs, so the step is written here on ``[K, N]`` with per-row lr, weight decay, betas and
  eps: the same formula and operation order as torch's AdamW, a handful of elementwise kernels in all.
  The lr schedule of every run is tabulated on the device up front: no host sync inside a step.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, vmap

from anchorlab import rundir, tracking
from anchorlab.config import ConfigError, RunConfig
from anchorlab.config_tools import reference_for
from anchorlab.cpu import check_device, run_environment, training_device, warn_precision
from anchorlab.cuda_graph import GraphedStep
from anchorlab.metrics import HEADLINE, evaluate, progress_postfix
from anchorlab.models import build_model
from anchorlab.reference import preflight as reference_preflight
from anchorlab.schedule import lr_at
from anchorlab.tasks import TaskData, make_task_data
from anchorlab.train import build_initialized_model, default_weight_metrics, epoch_order, make_summary

# A run's batch order: (training rows, epoch) -> that epoch's permutation (train.epoch_order).
EpochOrder = Callable[[int, int], torch.Tensor]
# Called after every epoch with (run index, optimizer steps done, the run's total steps, latest metrics).
BatchedProgressFn = Callable[[int, int, int, dict[str, Any]], None]

# Fields every run of a batch must share (dotted); everything else may differ per run.
# The data seed is not among them: the task config fixes every draw's row counts, so runs on different draws
# stack (each reads its own copy of the data). Nor are the task fields in PER_RUN_TASK_FIELDS: whether a run
# replays a reference file, and which parts, changes its draw, init or batch order, each of which is per run.
SHARED_FIELDS = ("task", "model", "train.epochs", "train.batch_size", "train.drop_last",
                 "train.precision", "train.prune_last", "train.device", "train.cuda_graph")
PER_RUN_TASK_FIELDS = ("reference", "reference_parts")


def _field(cfg: RunConfig, dotted: str) -> Any:
    d: Any = cfg.to_dict()
    for part in dotted.split("."):
        d = d[part]
    if dotted == "task":
        d = {k: v for k, v in d.items() if k not in PER_RUN_TASK_FIELDS}
    return d


def _draw_key(cfg: RunConfig) -> int | str:
    """Which draw of the data a run reads: its reference file's rows, or its data seed's."""
    return reference_for(cfg.task, "data") or cfg.seeds.data_seed


def shared_key(cfg: RunConfig) -> str:
    """Runs with equal keys can train together (:func:`can_batch`)."""
    return repr([_field(cfg, f) for f in SHARED_FIELDS])


def batch_mismatch(cfgs: list[RunConfig]) -> str | None:
    """The first shared field (dotted) on which the configs differ, or None if they can train together."""
    for f in SHARED_FIELDS:
        first = _field(cfgs[0], f)
        if any(_field(c, f) != first for c in cfgs[1:]):
            return f
    return None


def can_batch(cfgs: list[RunConfig]) -> bool:
    """True if the runs share the task config (but for a reference file and its parts), model shapes, epochs,
    batch size, precision and device."""
    return len(cfgs) > 0 and batch_mismatch(cfgs) is None


class StackedParams:
    """K models' parameters in one flat buffer ``theta [K, N]`` with ``grad [K, N]`` and AdamW moments."""

    def __init__(self, template: nn.Module, models: list[nn.Module], device: torch.device):
        self.names = [n for n, _ in template.named_parameters()]
        shapes = [tuple(p.shape) for _, p in template.named_parameters()]
        sizes = [int(torch.Size(s).numel()) for s in shapes]
        K, N = len(models), sum(sizes)
        self.K, self.N = K, N
        self.theta = torch.empty(K, N, device=device)
        self.grad = torch.zeros(K, N, device=device)
        self.exp_avg = torch.zeros(K, N, device=device)
        self.exp_avg_sq = torch.zeros(K, N, device=device)
        self.step = torch.zeros((), device=device, dtype=torch.float64)  # optimizer steps taken (all rows)
        # The parameters are strided views of theta, their grads the matching views of grad; autograd
        # warns that such grads are not "dense" yet accumulates into them in place, as intended.
        warnings.filterwarnings("ignore", message="grad and param do not obey the gradient layout contract")
        self.params: dict[str, Tensor] = {}  # name -> [K, *shape] view of theta, a leaf
        self.slices: dict[str, slice] = {}  # name -> its columns in theta
        start = 0
        for name, shape, size in zip(self.names, shapes, sizes):
            self.slices[name] = sl = slice(start, start + size)
            p = self.theta[:, sl].view(K, *shape).detach().requires_grad_()
            p.grad = self.grad[:, sl].view(K, *shape)  # autograd adds into it in place (never set to None)
            self.params[name] = p
            start += size
        with torch.no_grad():
            for k, m in enumerate(models):
                self.theta[k] = torch.cat([p.detach().reshape(-1) for p in m.parameters()]).to(device)

    def state(self) -> list[Tensor]:
        """Every tensor an optimizer step changes in place."""
        return [self.theta, self.grad, self.exp_avg, self.exp_avg_sq, self.step]

    @torch.no_grad()
    def load_into(self, model: nn.Module, k: int) -> nn.Module:
        """Copy run k's weights into ``model`` (same architecture as the template) and return it."""
        for name, p in model.named_parameters():
            p.copy_(self.theta[k, self.slices[name]].view_as(p))
        return model


def clip_rows_(grad_KN: Tensor, max_norm_K: Tensor) -> Tensor:
    """Scale each row by min(1, max_norm / (norm + 1e-6)) as ``clip_grad_norm_`` does; max_norm 0 = off.
    Returns the rows' norms before clipping."""
    norm_K = torch.linalg.vector_norm(grad_KN, dim=1)
    coef_K = (max_norm_K / (norm_K + 1e-6)).clamp(max=1.0)
    coef_K = torch.where(max_norm_K > 0, coef_K, torch.ones_like(coef_K))
    grad_KN.mul_(coef_K[:, None])
    return norm_K


@torch.no_grad()
def adamw_rows_(s: StackedParams, lr_K: Tensor, wd_K: Tensor, beta1_K: Tensor, beta2_K: Tensor,
                eps_K: Tensor) -> None:
    """One AdamW step on every row of ``s`` with per-row hyper-parameters ([K] float64 tensors).

    torch's single-tensor AdamW, with each Python-float scalar replaced by a float64 column that is
    cast to float32 the way torch casts a Python scalar::

        p *= 1 - lr*wd;  m = lerp(m, g, 1-β1);  v = β2 v + (1-β2) g²
        p += -(lr / (1-β1^t)) * m / (sqrt(v) / sqrt(1-β2^t) + eps)
    """
    s.step += 1
    f32 = s.theta.dtype

    def col(x: Tensor) -> Tensor:
        return x.to(f32)[:, None]

    s.theta.mul_(col(1 - lr_K * wd_K))
    s.exp_avg.lerp_(s.grad, col(1 - beta1_K))
    s.exp_avg_sq.mul_(col(beta2_K)).addcmul_(s.grad, s.grad * col(1 - beta2_K))
    bias_correction1 = 1 - beta1_K ** s.step
    bias_correction2_sqrt = (1 - beta2_K ** s.step).sqrt()
    denom = (s.exp_avg_sq.sqrt() / col(bias_correction2_sqrt)).add_(col(eps_K))
    s.theta.addcdiv_(s.exp_avg * col(-(lr_K / bias_correction1)), denom)


@dataclass(frozen=True)
class Hyper:
    """Per-run optimiser constants as [K] float64 device tensors (grad_clip: float32, 0 = off)."""

    weight_decay: Tensor
    beta1: Tensor
    beta2: Tensor
    eps: Tensor
    grad_clip: Tensor

    @staticmethod
    def of(cfgs: list[RunConfig], device: torch.device) -> Hyper:
        def col(name: str) -> Tensor:
            return torch.tensor([float(getattr(c.train, name)) for c in cfgs], dtype=torch.float64, device=device)
        return Hyper(col("weight_decay"), col("beta1"), col("beta2"), col("eps"), col("grad_clip").float())


def losses_K(model: nn.Module, params: dict[str, Tensor], x_KBP: Tensor, y_KB: Tensor, prune_last: bool,
             amp: torch.dtype | None) -> Tensor:
    """[K] mean cross-entropy of the last position, run k's weights on run k's batch: one vmapped forward."""
    def one(p: dict[str, Tensor], x: Tensor, y: Tensor) -> Tensor:
        logits = functional_call(model, p, (x,), {"last_only": prune_last})[:, -1]
        return F.cross_entropy(logits.float(), y)
    with torch.autocast(x_KBP.device.type, dtype=amp, enabled=amp is not None):
        return vmap(one)(params, x_KBP, y_KB)


def train_step(s: StackedParams, model: nn.Module, x_KBP: Tensor, y_KB: Tensor, lr_K: Tensor, hyper: Hyper,
               prune_last: bool = True, amp: torch.dtype | None = None) -> Tensor:
    """One optimizer step of all K runs (forward, backward, per-row clip, AdamW); returns the [K] losses.
    Runs entirely on the device: nothing here waits for the host."""
    loss_K = losses_K(model, s.params, x_KBP, y_KB, prune_last, amp)
    s.grad.zero_()
    loss_K.sum().backward()  # row k of the gradient is run k's alone: the runs share no weights
    clip_rows_(s.grad, hyper.grad_clip)
    adamw_rows_(s, lr_K, hyper.weight_decay, hyper.beta1, hyper.beta2, hyper.eps)
    return loss_K.detach()


def train_batched(cfgs: list[RunConfig], run_dirs: list[Path | str], *, progress: BatchedProgressFn | None = None,
                  show_progress: bool = True, data: TaskData | None = None) -> list[dict[str, Any]]:
    """Train every ``cfgs[k]`` into ``run_dirs[k]`` together; returns the K summaries in order.

    Each run draws its own task data (``seeds.data_seed``, or the rows of its ``task.reference`` file; one draw
    per distinct one); ``data``, if given, is that draw for runs that all share one.

    Finished runs are read back; unfinished ones resume. Runs that resume from different epochs are
    trained in groups (one group per starting epoch), each group batched.
    """
    if len(cfgs) != len(run_dirs):
        raise ValueError(f"train_batched: {len(cfgs)} configs but {len(run_dirs)} run directories")
    if not cfgs:
        return []
    for cfg in cfgs:
        cfg.validate()  # the batch size against the task's rows too, before anything is written
    reference_preflight(cfgs)  # a task.reference file that is not there: one line, nothing written
    check_device(cfgs[0].train.device)  # a GPU this machine lacks: the same (the runs share the device)
    # each run's batch order; a reference file recording fewer epochs of it than train.epochs: the same
    orders = [epoch_order(cfg) for cfg in cfgs]
    bad = batch_mismatch(cfgs)
    if bad is not None:
        raise ConfigError(f"{bad}: runs trained together must share it (shared fields: {', '.join(SHARED_FIELDS)})")
    tc0 = cfgs[0].train
    if tc0.cuda_graph and (kind := training_device(tc0.device, tc0.threads).type) != "cuda":
        raise ConfigError(f"train.cuda_graph: true needs a CUDA device (train.device {tc0.device!r} gives {kind}); "
                          "false trains without a graph")
    dirs = [Path(d) for d in run_dirs]
    if len(set(dirs)) != len(dirs):
        raise ValueError("train_batched: run directories must be distinct")
    summaries: dict[int, dict[str, Any]] = {}
    pending: dict[int, list[int]] = {}  # start epoch -> run indices
    with contextlib.ExitStack() as locks:
        for d in dirs:
            locks.enter_context(rundir.writer_lock(d))  # one writer per run directory
        for k, (cfg, d) in enumerate(zip(cfgs, dirs)):
            status = rundir.open_run(d, cfg)
            if status == "done":
                summaries[k] = rundir.read_json(d / rundir.SUMMARY)
            else:
                rundir.start_writing(d, status)
                pending.setdefault(_resume_epoch(d) if status == "resume" else 0, []).append(k)
        by_draw = {_draw_key(cfgs[k]): cfgs[k] for g in pending.values() for k in g}  # one run per distinct draw
        if data is not None and len(by_draw) > 1:
            raise ValueError(f"train_batched: data given, but the runs draw from {len(by_draw)} data seeds "
                             f"{sorted(by_draw, key=str)}")
        draws = {key: data if data is not None else make_task_data(c.task, c.seeds.data_seed)
                 for key, c in by_draw.items()}
        diverged = []
        for group in pending.values():
            out, failed = _train_group([cfgs[k] for k in group], [dirs[k] for k in group],
                                       [draws[_draw_key(cfgs[k])] for k in group], [orders[k] for k in group],
                                       group, progress, show_progress)
            summaries.update((k, s) for k, s in zip(group, out) if s is not None)
            diverged += failed
        if diverged:  # the others finished; each diverged run is marked FAILED in its directory
            raise rundir.Diverged("; ".join(diverged))
    return [summaries[k] for k in range(len(cfgs))]


def _resume_epoch(run_dir: Path) -> int:
    point = rundir.resume_point(run_dir)
    return 0 if point is None else point[1]


@dataclass
class _Draw:
    """One draw of the task data on the device: every row (for evaluation) and which are training rows."""

    data: TaskData
    all_x: Tensor
    all_y: Tensor
    train_idx: Tensor

    @classmethod
    def of(cls, data: TaskData, device: torch.device) -> _Draw:
        return cls(data, torch.from_numpy(data.inputs).to(device), torch.from_numpy(data.targets).to(device),
                   torch.from_numpy(data.in_train.nonzero()[0]).to(device))


def _train_group(cfgs: list[RunConfig], dirs: list[Path], datas: list[TaskData], orders: list[EpochOrder],
                 index: list[int], progress: BatchedProgressFn | None,
                 show_progress: bool) -> tuple[list[dict[str, Any] | None], list[str]]:
    """Train one group together; returns the summaries (None for a run that diverged) and the messages of the runs that
    diverged (stopped at their first non-finite epoch loss, their last finite resume point kept)."""
    tc0 = cfgs[0].train
    K = len(cfgs)
    device = training_device(tc0.device, tc0.threads)
    t_start = time.time()

    # One copy of each distinct draw on the device; run k reads draw d_K[k]. Runs on one draw share it.
    draws: list[_Draw] = []
    d_K: list[int] = []
    for data in datas:
        j = next((j for j, dr in enumerate(draws) if dr.data is data), None)
        if j is None:
            draws.append(_Draw.of(data, device))
            j = len(draws) - 1
        d_K.append(j)
    if len({len(dr.train_idx) for dr in draws}) > 1 or len({dr.data.vocab_size for dr in draws}) > 1:
        raise ConfigError("seeds.data_seed: these draws differ in training rows or vocabulary; train them apart")
    x_train_D = torch.stack([dr.all_x[dr.train_idx] for dr in draws])  # [D, n_train, P], resident on the device
    y_train_D = torch.stack([dr.all_y[dr.train_idx] for dr in draws])
    draw_K1 = torch.tensor(d_K, device=device)[:, None]
    n_train, B = x_train_D.shape[1], tc0.batch_size
    data = datas[0]
    steps_per_epoch = tc0.steps_per_epoch(n_train)
    if steps_per_epoch == 0:
        raise ValueError(f"train.batch_size {B} exceeds the {n_train} training rows")
    if not tc0.drop_last and n_train % B:
        raise ConfigError("train.drop_last: batched training needs true (or batch_size dividing the training rows)")

    # ``scratch`` computes the forward of all K through functional_call (its own weights are not used
    # there) and holds one run's weights when that run is evaluated or saved.
    scratch = build_model(cfgs[0].model, data.vocab_size).to(device)
    s = StackedParams(scratch, [build_initialized_model(c, data.vocab_size) for c in cfgs], device)
    amp = torch.bfloat16 if tc0.precision == "bf16" else None
    warn_precision(tc0.precision, device)
    hyper = Hyper.of(cfgs, device)

    start_epoch = _resume_epoch(dirs[0])
    step = start_epoch * steps_per_epoch
    last: list[dict[str, Any]] = []
    environment = {**run_environment(device), "batch_group": [c.run_id() for c in cfgs]}
    tracks = [tracking.Session(d) for d in dirs]
    for k, (cfg, d) in enumerate(zip(cfgs, dirs)):
        if start_epoch == 0:
            rundir.start_fresh(d)
            rundir.save_checkpoint(d, s.load_into(scratch, k), 0, 0)
            last.append(_eval_record(cfg, d, tracks[k], s.load_into(scratch, k), draws[d_K[k]], 0, 0, None,
                                     steps_per_epoch, amp))
        else:
            tracks[k].resume(step)  # TensorBoard drops what the interrupted session logged after this step
            _load_resume_row(s, k, d, scratch)
            rundir.truncate_metrics(d, step)
            last.append(rundir.read_metrics(d)[-1])
    sessions = [rundir.record_session(d, step, environment) for d in dirs]
    s.step.fill_(step)
    active_K = torch.ones(K, dtype=torch.float64, device=device)  # 0 once a run has stopped early
    stopped = [False] * K
    failed: list[str] = []

    def step_fn(x_KBP: Tensor, y_KB: Tensor, lr_K: Tensor) -> Tensor:
        return train_step(s, scratch, x_KBP, y_KB, lr_K, hyper, tc0.prune_last, amp)

    graphed: GraphedStep | None = None
    bar = None
    if progress is None and show_progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=tc0.epochs, initial=start_epoch, desc=f"{K} runs batched", unit="ep", dynamic_ncols=True)
    scratch.train()
    try:  # the bar closes before an error line (a diverged run) is printed
        for epoch in range(start_epoch + 1, tc0.epochs + 1):
            perm_KN = torch.stack([order(n_train, epoch) for order in orders]).to(device)
            loss_sum_K = torch.zeros(K, device=device)
            # lr of every run at every step of the epoch, on the device: a step reads one row, no host transfer.
            first = step
            lr_table = torch.tensor([[lr_at(t, c.train, steps_per_epoch) for c in cfgs]
                                     for t in range(first, first + steps_per_epoch)],
                                    dtype=torch.float64, device=device)
            for i in range(steps_per_epoch):
                idx_KB = perm_KN[:, i * B:(i + 1) * B]
                x_KBP, y_KB = x_train_D[draw_K1, idx_KB], y_train_D[draw_K1, idx_KB]
                lr_K = lr_table[step - first] * active_K
                if tc0.cuda_graph and graphed is None:  # captured on this session's first step, state put back
                    graphed = GraphedStep(step_fn, x_KBP, y_KB, lr_K, s.state())
                loss_K = graphed(x_KBP, y_KB, lr_K) if graphed is not None else step_fn(x_KBP, y_KB, lr_K)
                loss_sum_K += loss_K
                step += 1
            epoch_loss = (loss_sum_K / steps_per_epoch).tolist()  # the only host sync of the epoch
            for k, (cfg, d) in enumerate(zip(cfgs, dirs)):
                if stopped[k]:
                    continue
                tc = cfg.train
                try:
                    rundir.check_finite_loss(d, step, epoch_loss[k])
                except rundir.Diverged as e:  # this run stops; its rows no longer move, the others go on
                    failed.append(str(e))
                    stopped[k] = True
                    active_K[k] = 0.0
                    continue
                rundir.append_epoch(d, epoch, step, epoch_loss[k])
                stop = tc.early_stop_loss > 0 and epoch_loss[k] < tc.early_stop_loss
                final = epoch == tc.epochs or stop
                if epoch % tc.eval_every == 0 or final:
                    last[k] = _eval_record(cfg, d, tracks[k], s.load_into(scratch, k), draws[d_K[k]], step, epoch,
                                           epoch_loss[k], steps_per_epoch, amp)
                if epoch % tc.checkpoint_every == 0 or final:
                    rundir.save_checkpoint(d, s.load_into(scratch, k), step, epoch)
                if epoch % tc.resume_every == 0 or final:
                    _save_resume_row(s, k, d, scratch, step, epoch)
                if progress is not None:
                    status = {"loss": epoch_loss[k], **{m: last[k].get(m) for m in HEADLINE[cfg.task.name]}}
                    progress(index[k], step, steps_per_epoch * tc.epochs, status)
                if final:
                    _finish(cfg, d, s.load_into(scratch, k), steps_per_epoch, n_train, t_start, environment,
                            sessions[k])
                    stopped[k] = True
                    active_K[k] = 0.0  # its rows no longer move: lr 0 leaves p unchanged
            if bar is not None:
                bar.set_postfix(progress_postfix({"loss": min(epoch_loss)}), refresh=False)
                bar.update(1)
            if all(stopped):
                break
    finally:
        if bar is not None:
            bar.close()
    return [rundir.read_json(d / rundir.SUMMARY) if rundir.is_done(d) else None for d in dirs], failed


def _eval_record(cfg: RunConfig, run_dir: Path, track: tracking.Session, model: nn.Module, draw: _Draw,
                 step: int, epoch: int, train_loss: float | None, steps_per_epoch: int,
                 amp: torch.dtype | None) -> dict[str, Any]:
    m = evaluate(model, draw.data, draw.all_x, draw.all_y, cfg.task, cfg.train.eval_batch_size, amp)
    rec = {"step": step, "epoch": epoch, "lr": lr_at(step, cfg.train, steps_per_epoch),
           "epoch_train_loss": train_loss, **m}
    extra = default_weight_metrics(cfg)  # the mechanism scalars, as train() logs them
    if extra is not None:
        rec.update(extra(model))
    rundir.append_metrics(run_dir, rec)
    track.log(rec)  # TensorBoard (+ W&B if ANCHORLAB_WANDB=1)
    return rec


def _finish(cfg: RunConfig, run_dir: Path, model: nn.Module, steps_per_epoch: int, n_train: int,
            t_start: float, environment: dict[str, Any], sessions: list[dict[str, Any]]) -> None:
    """The run's summary, its environment recording the group it trained in (``batch_group``: run ids, in
    stacking order): the K runs' batched matmuls round differently from one run's, and differently for another
    K, so in reduced precision the group is part of what fixes a trajectory (docs/p1_frontier.md: at P1's
    boundary γ, the same run in groups of 2 and 6 reads 0.83 and 0.15). ``environment`` is the finishing
    session's; ``sessions`` lists every session's, with the step it started from (a resumed run may have
    trained its parts in different groups)."""
    summary = make_summary(cfg, run_dir, model, steps_per_epoch, n_train)
    summary["wall_seconds_this_session"] = round(time.time() - t_start, 2)
    summary["environment"], summary["sessions"] = environment, sessions
    rundir.write_json(run_dir / rundir.SUMMARY, summary)
    rundir.write_atomic(run_dir / rundir.DONE, "")


def _scratch_optimizer(model: nn.Module) -> torch.optim.AdamW:
    return torch.optim.AdamW(model.parameters())


@torch.no_grad()
def _save_resume_row(s: StackedParams, k: int, run_dir: Path, scratch: nn.Module, step: int, epoch: int) -> None:
    """Run k's weights and AdamW moments in the resume file, in ``torch.optim.AdamW``'s state layout."""
    s.load_into(scratch, k)
    opt = _scratch_optimizer(scratch)
    for name, p in scratch.named_parameters():
        sl = s.slices[name]
        opt.state[p] = {"step": s.step.float().cpu(), "exp_avg": s.exp_avg[k, sl].view_as(p),
                        "exp_avg_sq": s.exp_avg_sq[k, sl].view_as(p)}
    rundir.save_resume(run_dir, scratch, opt, step, epoch)


@torch.no_grad()
def _load_resume_row(s: StackedParams, k: int, run_dir: Path, scratch: nn.Module) -> None:
    opt = _scratch_optimizer(scratch)
    rundir.load_resume(run_dir, scratch, opt)
    for name, p in scratch.named_parameters():
        sl = s.slices[name]
        s.theta[k, sl] = p.reshape(-1)
        state = opt.state.get(p)
        if state:
            s.exp_avg[k, sl] = state["exp_avg"].reshape(-1)
            s.exp_avg_sq[k, sl] = state["exp_avg_sq"].reshape(-1)
