"""experiments/text_runs.py: every grid's runs are valid configs, and --set reaches every run."""

import dataclasses
import importlib.util
from pathlib import Path

import pytest

from anchorlab.text.config import load_lm_config

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def text_runs():
    spec = importlib.util.spec_from_file_location("text_runs", ROOT / "experiments" / "text_runs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_grid_run_is_a_valid_config(text_runs):
    for grid, (config, runs) in text_runs.GRIDS.items():
        ids = {load_lm_config(ROOT / config, sets).run_id() for sets in runs.values()}
        assert len(ids) == len(runs), f"{grid}: two runs share a config"


def test_fig7a_grid_pins_the_init_conventions(text_runs):
    config, runs = text_runs.GRIDS["p2-fig7a"]
    cfg = {name: load_lm_config(ROOT / config, sets) for name, sets in runs.items()}
    assert cfg["g0.3"].init.convention == "authors_gpt2" and cfg["fanin_g0.3"].init.convention == "fan_in"
    assert cfg["fanin_g0.3_emb002"].init.overrides == {"*.wte": 0.94, "*.wpe": 0.94}
    quick = load_lm_config(ROOT / text_runs.GRIDS["p2-fig7a-quick"][0], runs["g0.5"])
    assert quick.model.activation == "gelu_pytorch_tanh" and quick.train.epochs == 60
    assert quick.init.convention == "authors_gpt2" and quick.data == cfg["g0.5"].data


def test_set_reaches_every_run(text_runs, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(text_runs, "run_one", lambda config, sets, out, name: calls.append((name, sets)) or name)
    monkeypatch.chdir(ROOT)
    assert text_runs.main(["p2-fig7a-quick", "--out", str(tmp_path), "--set", "seeds.init_seed=1"]) == 0
    assert [n for n, _ in calls] == ["g0.3", "g0.5", "g0.8"]
    assert all(sets[-1] == "seeds.init_seed=1" for _, sets in calls)


def test_fig7b_quick_is_the_start_of_the_long_runs(text_runs):
    """Same data, model, init, seeds and constant LR as p2-fig7-gpt2: its 180 steps are the long runs' first 180."""
    long_cfg, long_runs = text_runs.GRIDS["p2-fig7-gpt2"]
    quick_cfg, quick_runs = text_runs.GRIDS["p2-fig7b-quick"]
    assert quick_runs == long_runs
    for sets in quick_runs.values():
        a, b = load_lm_config(ROOT / long_cfg, sets), load_lm_config(ROOT / quick_cfg, sets)
        assert (a.data, a.model, a.init, a.seeds) == (b.data, b.model, b.init, b.seeds)
        assert a.train.schedule == b.train.schedule == "constant" and a.train.warmup_steps == 0
        assert b.train.epochs == 3 and b.train.eval_every == 30 and a.train.epochs == 14


def test_p1_quick_grid_is_the_long_grid_cut_short(text_runs):
    """Same runs as p1-fig7-gpt2 but GPT-2's GELU fused, 4 micro-batches, and 1,200 / 2,250 / 1,800 steps at
    300 / 1,000 / 3,000 examples."""
    long_cfg, long_runs = text_runs.GRIDS["p1-fig7-gpt2"]
    quick_cfg, quick_runs = text_runs.GRIDS["p1-fig7-gpt2-quick"]
    assert quick_runs.keys() == long_runs.keys()
    budget = {300: 1200, 1000: 2250, 3000: 1800}
    for name in quick_runs:
        a, b = load_lm_config(ROOT / long_cfg, long_runs[name]), load_lm_config(ROOT / quick_cfg, quick_runs[name])
        assert (a.data, a.init, a.seeds) == (b.data, b.init, b.seeds)
        assert b.model == dataclasses.replace(a.model, activation="gelu_pytorch_tanh")
        assert dataclasses.replace(b.train, epochs=a.train.epochs, micro_batches=1) == a.train
        assert b.train.micro_batches == 4
        assert b.train.epochs * -(-b.data.n_prontoqa // b.train.batch_size) == budget[b.data.n_prontoqa]
        assert a.train.epochs * -(-a.data.n_prontoqa // a.train.batch_size) == 3000
