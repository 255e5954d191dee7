"""train.cuda_graph: batched training on a GPU replays each step as one CUDA graph (anchorlab.cuda_graph).

Here (no GPU): the option is refused with one line wherever it cannot apply, before anything is written, it
keeps every existing run id at its default, and its bookkeeping (static buffers, the warm-up undone) is checked with
a stand-in graph. On a GPU (run there first by experiments/gpu_p1_m30_e210.sh):
a graphed group trains exactly as the eager one, across evaluations, checkpoints and a resumed session."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from anchorlab import rundir
from anchorlab.batched import train_batched
from anchorlab.config import ConfigError, load_config
from anchorlab.cuda_graph import GraphedStep
from tests.conftest import tiny_config, train_batched_killed

CONFIGS = Path(__file__).resolve().parents[1] / "configs"

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (run on the device machine)")


def small(**dotted):
    base = {"task.data_size": 800, "train.epochs": 3, "train.eval_every": 1, "train.checkpoint_every": 1}
    return tiny_config(**{**base, **dotted})


def test_default_keeps_run_ids_and_setting_it_names_new_runs():
    cbook = load_config(CONFIGS / "p1" / "cbook.toml")
    assert cbook.train.cuda_graph is False
    assert cbook.run_id() == load_config(CONFIGS / "p1" / "cbook.toml", ["train.cuda_graph=false"]).run_id()
    assert cbook.run_id() != load_config(CONFIGS / "p1" / "cbook.toml", ["train.cuda_graph=true"]).run_id()


def test_one_run_is_refused_with_one_line_and_nothing_written(tmp_path):
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "anchorlab.cli", "train", str(CONFIGS / "p1" / "cpu_demo.toml"),
                           "--set", "train.cuda_graph=true", "--out", str(out)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "train.cuda_graph" in lines[0] and "--batch-models" in lines[0]
    assert not out.exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for a machine without a GPU")
@pytest.mark.parametrize("backend", ["local", "process"])
def test_a_sweep_is_refused_with_one_line_and_nothing_written(tmp_path, backend):
    sweep = tmp_path / "s.toml"
    sweep.write_text(f'name = "s"\nbase = "{CONFIGS / "p1" / "cpu_demo.toml"}"\n[axes]\n"init.gamma" = [0.5, 1.0]\n')
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "anchorlab.cli", "sweep", str(sweep), "--set", "train.cuda_graph=true",
                           "--backend", backend, "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].count("train.cuda_graph: true needs") == 1, lines
    assert ("backend 'local'" in lines[0]) is (backend == "process") and not out.exists()


def test_batched_on_a_cpu_is_refused_before_anything_is_written(tmp_path):
    cfgs = [small(**{"train.cuda_graph": True, "train.device": "cpu"}),
            small(**{"train.cuda_graph": True, "train.device": "cpu", "init.gamma": 0.8})]
    with pytest.raises(ConfigError, match=r"train\.cuda_graph: true needs a CUDA device"):
        train_batched(cfgs, [tmp_path / "a", tmp_path / "b"], show_progress=False)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_runs_with_and_without_a_graph_do_not_batch_together(tmp_path):
    with pytest.raises(ConfigError, match=r"train\.cuda_graph: runs trained together must share it"):
        train_batched([small(), small(**{"train.cuda_graph": True, "init.gamma": 0.8})],
                      [tmp_path / "a", tmp_path / "b"], show_progress=False)


def test_a_graph_needs_a_cuda_tensor():
    x = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="train.cuda_graph"):
        GraphedStep(lambda x, y, lr: x.sum(), x, x, x, [])


def test_the_graph_bookkeeping_leaves_training_where_eager_steps_would(monkeypatch):
    """With a stand-in graph that runs the captured step again at each replay (on the CPU), GraphedStep trains as
    the eager step does, bit for bit: the warm-up steps' effect on weights, moments and step count is undone,
    and each replay reads that step's batch and rate from the static buffers."""
    import anchorlab.cuda_graph as G
    from anchorlab.batched import Hyper, StackedParams, train_step
    from anchorlab.models import build_model
    from anchorlab.tasks import make_task_data
    from anchorlab.train import build_initialized_model

    class Replay:  # runs the captured function again, its output written into the captured buffer
        def __init__(self, fn, out):
            self.fn, self.out = fn, out

        def replay(self):
            self.out.copy_(self.fn())

    def capture(fn):
        out = fn()  # a real capture records without running; the restore after it covers both
        return Replay(fn, out), out

    monkeypatch.setattr(G, "require_cuda", lambda device: None)
    monkeypatch.setattr(G, "warm_up", lambda fn, n, device: [fn() for _ in range(n)])
    monkeypatch.setattr(G, "capture", capture)
    cfgs = [small(), small(**{"init.gamma": 0.8, "seeds.init_seed": 2})]
    data = make_task_data(cfgs[0].task, cfgs[0].seeds.data_seed)
    x_all, y_all = torch.from_numpy(data.inputs[data.in_train]), torch.from_numpy(data.targets[data.in_train])
    device = torch.device("cpu")
    stacks = []
    for _ in range(2):
        model = build_model(cfgs[0].model, data.vocab_size)
        stacks.append((model, StackedParams(model, [build_initialized_model(c, data.vocab_size) for c in cfgs],
                                            device)))
    hyper = Hyper.of(cfgs, device)
    (m_e, s_e), (m_g, s_g) = stacks
    graphed = None
    before = s_g.theta.clone()
    for i in range(6):
        rows = [slice(i * 32, (i + 1) * 32), slice(200 + i * 32, 200 + (i + 1) * 32)]  # each run its own batch
        x, y = torch.stack([x_all[r] for r in rows]), torch.stack([y_all[r] for r in rows])
        lr = torch.tensor([1e-3 * (i + 1), 2e-3], dtype=torch.float64)
        eager = train_step(s_e, m_e, x, y, lr, hyper)
        if graphed is None:
            graphed = GraphedStep(lambda a, b, c: train_step(s_g, m_g, a, b, c, hyper), x, y, lr, s_g.state())
            assert torch.equal(s_g.theta, before) and s_g.step.item() == 0  # warm-up and capture undone
        loss = graphed(x, y, lr)
        assert torch.equal(loss, eager)
        for a, b in zip(s_g.state(), s_e.state()):
            assert torch.equal(a, b)


def _eager_graphed_resumed(tmp_path, monkeypatch, precision):
    """Two runs (different γ and data seeds) batched on the GPU three ways: eager (e0, e1), graphed (g0, g1), and
    graphed, killed after epoch 2 and resumed, which captures a second graph (r0, r1)."""
    common = {"train.device": "cuda", "train.precision": precision}
    eager = [small(**common), small(**common, **{"init.gamma": 0.8, "seed": 2})]
    graphed = [c.replace(**{"train.cuda_graph": True}) for c in eager]
    train_batched(eager, [tmp_path / "e0", tmp_path / "e1"], show_progress=False)
    train_batched(graphed, [tmp_path / "g0", tmp_path / "g1"], show_progress=False)
    train_batched_killed(monkeypatch, graphed, [tmp_path / "r0", tmp_path / "r1"], after_saves=4)  # after epoch 2
    train_batched(graphed, [tmp_path / "r0", tmp_path / "r1"], show_progress=False)
    return [(tmp_path / f"e{k}", tmp_path / f"{other}{k}") for k in range(2) for other in ("g", "r")]


@CUDA
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_a_graphed_group_trains_exactly_as_the_eager_one(tmp_path, monkeypatch, precision):
    """The same epoch losses, evaluations and final weights, bit for bit, graphed (and resumed) as eager."""
    for eager, graphed in _eager_graphed_resumed(tmp_path, monkeypatch, precision):
        want, got = rundir.read_metrics(eager), rundir.read_metrics(graphed)
        assert [r["epoch_train_loss"] for r in got] == [r["epoch_train_loss"] for r in want]
        assert [r["seen_test_acc"] for r in got] == [r["seen_test_acc"] for r in want]
        we, wg = rundir.load_checkpoint(eager), rundir.load_checkpoint(graphed)
        assert all(torch.equal(wg[n], we[n]) for n in we)


@CUDA
def test_a_graphed_group_trains_as_the_eager_one_up_to_rounding(tmp_path, monkeypatch):
    """In fp32, graphed (and resumed) as eager to 1e-4: the step's arithmetic is the same, whatever kernels the
    graph's capture picked (what experiments/gpu_p1_m30_e210.sh needs before it trains with the graph)."""
    for eager, graphed in _eager_graphed_resumed(tmp_path, monkeypatch, "fp32"):
        want, got = rundir.read_metrics(eager), rundir.read_metrics(graphed)
        assert [r["epoch_train_loss"] for r in got] == pytest.approx([r["epoch_train_loss"] for r in want], rel=1e-4)
        we, wg = rundir.load_checkpoint(eager), rundir.load_checkpoint(graphed)
        for n in we:
            torch.testing.assert_close(wg[n], we[n], rtol=1e-4, atol=1e-5)
