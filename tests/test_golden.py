"""Step-exact against the authors' public P1 code: 300 recorded training steps and a recorded paper run.

The recordings (numbers only) come from running github.com/xuzhiqin1990/understanding_dl,
``code/book_jupyter_composition_task/`` unedited on the CPU. They are not shipped with the repository:
the tests look in ``$ANCHORLAB_GOLDEN`` or ``../shared/golden`` next to the checkout and skip without them.

``p1_authors_trajectory_g1.0_s1.npz``: the authors' init (their names, ``nn.Linear`` [out, in] layouts),
300 batches of 256 rows, the LR of each step, the loss of each step and every parameter after step 300,
at d_model 64, d_ff 128, d_k = d_v 32, 2 layers, 1 head, γ 1.0, lr 1e-4, multiplier 10, warm-up 1 epoch
(329 steps), cosine T_max 11 epochs, eta_min 1e-5, AdamW wd 0.01, clip 1. The name and layout mapping is
:func:`anchorlab.reference.authors_to_ours` (its docstring lists every parameter).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from anchorlab.config import RunConfig
from anchorlab.models import build_model
from anchorlab.reference import authors_to_ours, load_authors_init_, load_reference, reference_task_data
from anchorlab.schedule import lr_at
from anchorlab.train import epoch_order, make_optimizer, train_step

GOLDEN = Path(os.environ.get("ANCHORLAB_GOLDEN", Path(__file__).resolve().parents[2] / "shared" / "golden"))
TRAJ = GOLDEN / "p1_authors_trajectory_g1.0_s1.npz"
PAPER = GOLDEN / "p1_authors_paper_g0.8_s1.npz"
STEPS_PER_EPOCH = 329  # 84,375 training rows // 256 (drop_last)


def _need(path: Path) -> None:
    if not path.is_file():
        pytest.skip(f"recording {path.name} not found (set ANCHORLAB_GOLDEN to its folder)")


def trajectory_config() -> RunConfig:
    return RunConfig().replace(**{
        "model.d_model": 64, "model.d_mlp": 128, "model.d_head": 32, "model.n_layers": 2, "init.gamma": 1.0,
        "task.data_size": 100_000, "train.batch_size": 256, "train.lr": 1e-4, "train.lr_multiplier": 10.0,
        "train.warmup_epochs": 1.0, "train.cosine_epochs": 11.0, "train.lr_min": 1e-5,
        "train.weight_decay": 0.01, "train.grad_clip": 1.0, "train.device": "cpu"})


def test_trajectory_300_steps_match_the_authors_code() -> None:
    _need(TRAJ)
    z = np.load(TRAJ)
    cfg = trajectory_config()
    init = {k[5:]: z[k] for k in z.files if k.startswith("init/")}
    model = load_authors_init_(build_model(cfg.model, 201), init, 1.0, 1.0)
    opt = make_optimizer(model, cfg.train, torch.device("cpu"))
    x_all = torch.from_numpy(z["batch_inputs"].astype(np.int64))
    y_all = torch.from_numpy(z["batch_targets"].astype(np.int64))
    losses, lrs = [], []
    for step in range(300):
        lr = lr_at(step, cfg.train, STEPS_PER_EPOCH)
        lrs.append(lr)
        losses.append(train_step(model, opt, x_all[step], y_all[step], lr, cfg.train).item())
    np.testing.assert_allclose(lrs, z["lr"], rtol=1e-12, atol=0)
    assert np.abs(np.array(losses) - z["loss"]).max() <= 1e-5
    after = authors_to_ours({k[10:]: z[k] for k in z.files if k.startswith("after_300/")}, cfg.model)
    ours = dict(model.state_dict())
    assert set(after) == set(ours)
    off = {k: (after[k] - ours[k]).abs() for k in after}
    # Every parameter within 1e-5, except one ReLU unit (its W_in column and W_out row). Its drift is
    # float rounding amplified by the dynamics, not a different computation: the losses and gradient norms
    # agree to 1e-7 at every step, the drift doubles every ~8 steps from step ~230, and a float64 replay
    # (measured, 53 s; not run here) puts that very unit within 2e-7 of the authors' fp32 weights while
    # units 9, 28, 70 and 71 then drift instead. The authors' fp32 matmuls (nn.Linear, [out, in]) round
    # differently from ours (x @ W, [in, out]).
    chaotic = {(k.split(".")[1], int(u)) for k in off if k.endswith(("W_in", "W_out"))
               for u in (off[k] > 1e-5).nonzero()[:, 1 if k.endswith("W_in") else 0].unique()}
    assert len(chaotic) <= 1, chaotic
    for k, d in off.items():
        if chaotic and k.endswith(("mlp.W_in", "mlp.W_out")) and k.split(".")[1] == next(iter(chaotic))[0]:
            u = next(iter(chaotic))[1]
            d = d.clone()
            (d[:, u] if k.endswith("W_in") else d[u]).zero_()
            assert off[k].max() <= 2e-3, (k, off[k].max())  # at most a couple of lr-sized Adam steps
        assert d.max() <= 1e-5, (k, d.max())
    # the recording is not trivially close to its start: training moved the weights by far more than 1e-5
    moved = authors_to_ours(init, cfg.model)
    assert max((after[k] - moved[k]).abs().max().item() for k in after) > 1e-3


def test_authors_to_ours_computes_the_authors_forward() -> None:
    """The mapped init gives the authors' recorded step-0 loss (a wrong transpose or head split would not)."""
    _need(TRAJ)
    z = np.load(TRAJ)
    cfg = trajectory_config()
    init = {k[5:]: z[k] for k in z.files if k.startswith("init/")}
    model = load_authors_init_(build_model(cfg.model, 201), init, 1.0, 1.0)
    x, y = (torch.from_numpy(z[k][0].astype(np.int64)) for k in ("batch_inputs", "batch_targets"))
    loss = torch.nn.functional.cross_entropy(model(x)[:, -1], y).item()
    assert abs(loss - z["loss"][0]) <= 1e-6


def test_reference_file_gives_the_logged_run_inputs() -> None:
    """The paper reference: 32 groups as our TaskData, the authors' batch order and init at two γ."""
    _need(PAPER)
    cfg = RunConfig().replace(**{"task.reference": str(PAPER), "train.epochs": 60, "init.gamma": 0.5})
    ref = load_reference(str(PAPER))
    assert ref.gamma == 0.8 and ref.n_epochs == 60
    data = reference_task_data(ref, cfg.task)
    assert len(data) == 16 * 5625 + 16 * 50625 and int(data.in_train.sum()) == 759_375
    assert set(data.group_names) == {f"{a}-{b}_{k}" for a in range(1, 5) for b in range(1, 5) for k in ("xm0", "xel")}
    # the stored label is the key's composite answer: key + shift(a1) + shift(a2), (3,4) -> x - 6
    shifts = {1: 5, 2: 1, 3: -2, 4: -8}
    pair, key = data.extra["pair"], data.extra["key"]
    expect = key + np.array([shifts[a] + shifts[b] if (a, b) != (3, 4) else -6 for a, b in pair])
    assert np.array_equal(data.targets, expect)
    assert not data.in_train[data.extra["held_out"]].any()
    # epoch 1's batch order is randperm from the first recorded seed
    order = epoch_order(cfg)
    g = torch.Generator().manual_seed(int(ref.epoch_seeds[0]))
    assert torch.equal(order(759_375, 1), torch.randperm(759_375, generator=g))
    # init at γ 0.5: the γ 0.8 draw times d_in^(0.8 - 0.5); the bias and LayerNorms unchanged
    from anchorlab.train import build_initialized_model

    m = build_initialized_model(cfg, 201)
    w_q = ref.init["decoder.layers.0.dec_self_attn.W_Q.weight"]
    np.testing.assert_allclose(m.blocks[0].attn.W_Q[0].detach().numpy(), w_q.T * 400 ** 0.3, rtol=1e-6)
    w_o = ref.init["decoder.layers.1.dec_self_attn.fc.weight"]
    np.testing.assert_allclose(m.blocks[1].attn.W_O[0].detach().numpy(), w_o.T * 200 ** 0.3, rtol=1e-6)
    np.testing.assert_array_equal(m.unembed.b_U.detach().numpy(), ref.init["projection.bias"])
    assert abs(m.blocks[0].attn.W_Q.std().item() - 400 ** -0.5) < 0.01 * 400 ** -0.5


def test_reference_parts_mix_the_files_draws_with_ours() -> None:
    """task.reference_parts = [init, order]: our generated data, the file's init and batch order (the
    decomposition behind docs/p1_both_sides.md's question: which of the three decides the outcome)."""
    _need(PAPER)
    from anchorlab.tasks import make_task_data
    from anchorlab.tasks.composite import generate_composite
    from anchorlab.train import build_initialized_model

    full = RunConfig().replace(**{"task.reference": str(PAPER), "train.epochs": 60})
    mixed = full.replace(**{"task.reference_parts": ["init", "order"]})
    data = make_task_data(mixed.task, 1)
    assert np.array_equal(data.inputs, generate_composite(mixed.task, 1).inputs)
    assert int(data.in_train.sum()) == 759_375  # same size as the file's, so its batch order applies
    a, b = build_initialized_model(full, 201), build_initialized_model(mixed, 201)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert torch.equal(epoch_order(mixed)(759_375, 3), epoch_order(full)(759_375, 3))
