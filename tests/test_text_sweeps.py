"""The real-language grids are sweep files (configs/sweeps/text_*.toml): they load as LM sweeps, pin what
docs/text.md reports, and run end to end through `anchorlab sweep` / `figure` / `collect`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from anchorlab import rundir
from anchorlab.config import ConfigError
from anchorlab.sweep import describe, expand, load_sweep, plan, run_dirs
from tests.conftest import sweep_sets
from tests.tiny import TINY_ANCHOR_TOML

ROOT = Path(__file__).resolve().parents[1]
SWEEPS = ROOT / "configs" / "sweeps"
TEXT_SWEEPS = sorted(SWEEPS.glob("text_*.toml"))


def configs(name: str, *overrides: str) -> list:
    return [cfg for _, cfg in load_sweep(SWEEPS / f"{name}.toml", overrides).configs()]


@pytest.mark.parametrize("path", TEXT_SWEEPS, ids=lambda p: p.stem)
def test_every_text_sweep_is_an_lm_grid_of_distinct_runs(path):
    spec = load_sweep(path)
    cfgs = [cfg for _, cfg in spec.configs()]
    assert spec.kind == "lm" and all(type(c).__name__ == "LMRunConfig" for c in cfgs)
    assert len({c.run_id() for c in cfgs}) == len(cfgs) >= 2


def test_anchor_sweeps_stay_anchor_sweeps(tmp_path):
    real_tasks = ("p1_fig6_", "p1_fig17a_")  # P1's SCAN / COGS / addition grids: run kind seq2seq
    for path in sorted(SWEEPS.glob("p[12]_*.toml")):
        kind = "seq2seq" if path.name.startswith(real_tasks) else "anchor"
        assert load_sweep(path, sweep_sets(path, tmp_path)).kind == kind, path.name


def test_fig7a_grids_pin_the_init_conventions():
    main = configs("text_p2_fig7a_cpu")
    assert [c.init.gamma for c in main] == [0.3, 0.5, 0.8]
    assert all(c.init.convention == "authors_gpt2" and c.train.epochs == 100 for c in main)
    conv = configs("text_p2_fig7a_conventions_cpu")
    assert [(c.init.gamma, c.init.convention, c.train.epochs) for c in conv] == [
        (0.3, "fan_in", 100), (0.8, "fan_in", 100), (0.3, "fan_in", 40)]
    assert conv[0].init.overrides == {} and conv[2].init.overrides == {"*.wte": 0.94, "*.wpe": 0.94}
    assert all(c.data == main[0].data and c.model == main[0].model for c in conv)
    quick = configs("text_p2_fig7a_quick_cpu")
    assert all(q.model.activation == "gelu_pytorch_tanh" and q.train.epochs == 60 for q in quick)
    assert [dataclasses.replace(q, model=m.model, train=m.train) for q, m in zip(quick, main)] == main


def test_fig7b_quick_is_the_start_of_the_long_runs():
    """Same data, model, init, seeds and constant LR: its 180 steps are the 840-step runs' first 180."""
    for a, b in zip(configs("text_p2_fig7_gpt2_cpu"), configs("text_p2_fig7b_quick_cpu"), strict=True):
        assert (a.data, a.model, a.init, a.seeds) == (b.data, b.model, b.init, b.seeds)
        assert a.train.schedule == b.train.schedule == "constant" and a.train.warmup_steps == 0
        assert (b.train.epochs, b.train.eval_every, a.train.epochs) == (3, 30, 14)


def test_p1_grids_two_settings_and_step_budgets():
    """(a) γ 0.5 / wd 0.01 and (b) γ 0.7 / wd 0.1 at each size; 3,000 steps of batch 20 in the long grid and
    1,200 / 2,250 / 1,800 in the quick one, which also fuses GELU and runs 4 micro-batches."""
    long, quick = configs("text_p1_fig7_gpt2_cpu"), configs("text_p1_fig7_gpt2_quick_cpu")
    assert [(c.data.n_prontoqa, c.init.gamma, c.train.weight_decay) for c in long] == [
        (n, g, wd) for n in (300, 1000, 3000) for g, wd in ((0.5, 0.01), (0.7, 0.1))]
    budget = {300: 1200, 1000: 2250, 3000: 1800}
    for a, b in zip(long, quick, strict=True):
        steps = -(-a.data.n_prontoqa // a.train.batch_size)
        assert a.train.epochs * steps == 3000 and b.train.epochs * steps == budget[a.data.n_prontoqa]
        assert (a.data, a.init, a.seeds) == (b.data, b.init, b.seeds)
        assert b.model == dataclasses.replace(a.model, activation="gelu_pytorch_tanh")
        assert dataclasses.replace(b.train, epochs=a.train.epochs, micro_batches=1) == a.train
        assert b.train.micro_batches == 4


def test_prontoqa_draws_per_grid():
    """The P1 Fig. 7 CPU grids keep the earlier PrOntoQA draws (a documented CPU-scale choice: on the reference
    draws the quick grid shows nothing, docs/text.md); the paper grids and the P2 CPU grids draw as the
    reference generator does."""
    for name in ("text_p1_fig7_gpt2_cpu", "text_p1_fig7_gpt2_quick_cpu", "text_p1_fig7_cpu"):
        assert {c.data.prontoqa_sampling for c in configs(name)} == {"short"}, name
    for name in ("text_p1_fig7_paper", "text_p2_fig7_paper", "text_p2_fig7b_quick_cpu", "text_p2_fig7a_quick_cpu",
                 "text_p1_fig7_gpt2_3000_long_cpu"):
        assert {c.data.prontoqa_sampling for c in configs(name)} == {"reference"}, name


GPT2_SMALL = (12, 768, 12, "gelu_new")  # n_layers, d_model, n_heads, GPT-2's activation


def test_p2_fig7_paper_grid_is_p2s_mix_gpt2_small_and_three_gammas():
    """configs/sweeps/text_p2_fig7_paper.toml (P2 Fig. 1 / 7; SPEC F1, F9 [S2]): 5,000 PrOntoQA + 5,000 TinyStories
    sequences (the real ones, data.stories = "hf"), GPT-2's BPE, GPT-2 small, 200 epochs, γ 0.3 / 0.5 / 0.8, lr 5e-5
    constant (the authors' HF GPT-2 script); the base file alone is the small init γ 0.8 [INF]; nothing else moves."""
    import dataclasses

    from anchorlab.text.config import load_lm_config

    base = load_lm_config(ROOT / "configs" / "text" / "p2_fig7_paper.toml")
    assert base.init.gamma == 0.8
    cfgs = configs("text_p2_fig7_paper")
    assert [c.init.gamma for c in cfgs] == [0.3, 0.5, 0.8]
    for c in cfgs:
        d, m, t = c.data, c.model, c.train
        assert (d.n_prontoqa, d.n_stories, d.stories, d.tokenizer) == (5000, 5000, "hf", "gpt2")
        assert (m.n_layers, m.d_model, m.n_heads, m.activation) == GPT2_SMALL
        assert (t.epochs, t.lr, t.schedule, t.warmup_steps) == (200, 5e-5, "constant", 0)
        assert c == dataclasses.replace(base, init=dataclasses.replace(base.init, gamma=c.init.gamma))


def test_p1_fig7_paper_grid_is_p1s_two_settings_on_prontoqa_with_gpt2_small():
    """configs/sweeps/text_p1_fig7_paper.toml (P1 Fig. 7; SPEC E13): PrOntoQA only (no stories), GPT-2's BPE and
    GPT-2 small; (a) γ 0.5 / WD 0.01 and (b) γ 0.7 / WD 0.1 [T1] at data sizes 300 / 1,000 / 3,000 with
    200 / 60 / 20 epochs (sizes and epochs are not published: the CPU grid's, see the file)."""
    import dataclasses

    cfgs = configs("text_p1_fig7_paper")
    assert [(c.data.n_prontoqa, c.train.epochs, c.init.gamma, c.train.weight_decay) for c in cfgs] == [
        (n, e, g, wd) for n, e in ((300, 200), (1000, 60), (3000, 20)) for g, wd in ((0.5, 0.01), (0.7, 0.1))]
    first = cfgs[0]
    for c in cfgs:
        assert (c.data.n_stories, c.data.n_test_stories, c.data.tokenizer) == (0, 0, "gpt2")
        assert (c.model.n_layers, c.model.d_model, c.model.n_heads, c.model.activation) == GPT2_SMALL
        assert dataclasses.replace(c, data=dataclasses.replace(c.data, n_prontoqa=first.data.n_prontoqa),
                                   init=first.init,
                                   train=dataclasses.replace(c.train, epochs=first.train.epochs,
                                                             weight_decay=first.train.weight_decay)) == first


def test_set_reaches_every_run_of_a_sweep():
    cfgs = configs("text_p2_fig7a_quick_cpu", "seeds.init_seed=1", "seeds.train_seed=1")
    assert all((c.seeds.init_seed, c.seeds.train_seed, c.seeds.data_seed) == (1, 1, 0) for c in cfgs)
    with pytest.raises(ConfigError, match=r"data\.n_prontoqa"):
        configs("text_p2_fig7a_quick_cpu", "data.n_prontoqa=-1")


# --------------------------------------------------------------------------------------------------
# Tied axes and sweep directories made before a config field existed (anchor configs: no text extras)

def write(tmp_path: Path, body: str, base: str = TINY_ANCHOR_TOML) -> Path:
    (tmp_path / "base.toml").write_text(base)
    (tmp_path / "s.toml").write_text(f'name = "t"\nbase = "base.toml"\n{body}')
    return tmp_path / "s.toml"


def test_tied_axes_move_together_and_multiply_with_the_others(tmp_path):
    spec = load_sweep(write(tmp_path, '[axes]\n"seed" = [1, 2]\n'
                                      '"init.gamma, train.weight_decay" = [[0.5, 0.01], [0.7, 0.1]]\n'))
    points = spec.points()
    assert points == [{"seed": s, "init.gamma": g, "train.weight_decay": wd}
                      for s in (1, 2) for g, wd in ((0.5, 0.01), (0.7, 0.1))]
    cfgs = [c for _, c in spec.configs()]
    assert [(c.seeds.init_seed, c.init.gamma, c.train.weight_decay) for c in cfgs] == [
        (p["seed"], p["init.gamma"], p["train.weight_decay"]) for p in points]


@pytest.mark.parametrize("axes", ['"init.gamma, train.weight_decay" = [0.5, 0.7]',
                                  '"init.gamma, train.weight_decay" = [[0.5, 0.01], [0.7]]'])
def test_malformed_tied_axis_names_it(tmp_path, axes):
    with pytest.raises(ConfigError, match=r"axes\.init\.gamma, train\.weight_decay: a tied axis of 2 keys"):
        load_sweep(write(tmp_path, f"[axes]\n{axes}\n"))


def test_a_run_made_before_a_field_existed_is_found_again(tmp_path):
    """Its directory is named by the hash of the older config; the sweep uses it rather than start afresh."""
    spec = load_sweep(write(tmp_path, '[axes]\n"init.gamma" = [0.5, 0.8]\n'))
    out = tmp_path / "sw"
    (_, cfg, _), (_, other, _) = plan(spec, out)
    old = cfg.to_dict()
    del old["train"]["prune_last"]  # as written before train.prune_last existed (its default then applies)
    (out / "run-before").mkdir()
    rundir.write_json(out / "run-before" / rundir.CONFIG, old)
    rows = expand(spec, out)
    assert rows[0][2] == out / "run-before" and rows[1][2] == out / other.run_id()
    assert "run-before  partial" in describe(spec, out)
    plan(spec, out)
    assert list(json.loads((out / "sweep.json").read_text())["runs"]) == ["run-before", other.run_id()]
    assert run_dirs([out]) == [out / "run-before", out / other.run_id()]


# --------------------------------------------------------------------------------------------------
# End to end: an LM sweep through the command line

TINY_LM = """
[data]
n_prontoqa = 48
n_stories = 32
n_test_prontoqa = 24
n_test_stories = 8
stories = "standin"
tokenizer = "bpe"
bpe_vocab = 600
n_ctx = 160
[model]
n_layer = 2
n_embd = 32
n_head = 2
[train]
epochs = 2
batch_size = 16
lr = 3e-3
eval_every = 3
eval_train_rows = 16
checkpoint_every = 1
threads = 1
"""


@pytest.mark.slow
def test_lm_sweep_runs_resumes_collects_and_draws(tmp_path, capsys):
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    from anchorlab.cli import main

    spec = write(tmp_path, '[axes]\n"init.gamma" = [0.5, 0.8]\n', TINY_LM)
    out = tmp_path / "sw"
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "2", "--set", "seeds.init_seed=3"]) == 0
    assert "2/2 runs done" in capsys.readouterr().out
    dirs = run_dirs([out])
    assert len(dirs) == 2 and all(rundir.is_done(d) for d in dirs)
    stored = [json.loads((d / rundir.CONFIG).read_text()) for d in dirs]
    assert [s["init"]["gamma"] for s in stored] == [0.5, 0.8] and {s["seeds"]["init_seed"] for s in stored} == {3}
    before = [(d / rundir.SUMMARY).read_text() for d in dirs]
    assert main(["sweep", str(spec), "--out", str(out), "--backend", "local", "--set", "seeds.init_seed=3"]) == 0
    assert [(d / rundir.SUMMARY).read_text() for d in dirs] == before  # finished runs are not run again
    assert main(["collect", str(out)]) == 0
    csv = (out / "summary.csv").read_text().splitlines()
    assert csv[0].startswith("run_id,run_dir,init.gamma,status") and "test_acc_prontoqa" in csv[0] and len(csv) == 3
    assert main(["figure", "p2-fig7a", str(out), "--out", str(tmp_path / "fig")]) == 0
    rows = (tmp_path / "fig" / "p2-fig7a.csv").read_text()
    assert all(str(d) in rows for d in dirs)
    assert main(["report", str(out), "--out", str(tmp_path / "sweep.html")]) == 0
    page = (tmp_path / "sweep.html").read_text()
    assert page.count('<img alt="p2-fig') == 3 and "p1-fig7: for PrOntoQA-only runs" in page  # 7A, 7B, Fig. 1
    assert all(f'id="run-{d.name}"' in page for d in dirs) and "token-embedding cosine" not in page.split("Runs")[0]
    assert main(["report", str(dirs[0]), "--out", str(tmp_path / "run.html")]) == 0
    page = (tmp_path / "run.html").read_text()
    assert "GPT-2 2 × 32 (2 heads), γ 0.5 (fan_in)" in page and page.count('<img alt="p2-fig') == 3
    with pytest.raises(ConfigError, match="batch_models"):
        from anchorlab.execute import run_all
        run_all([(c, tmp_path / "x") for _, c in load_sweep(spec).configs()], batch_models=2)


def test_missing_story_sample_fails_at_once_naming_the_field(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    from anchorlab.text.config import load_lm_config
    from anchorlab.text.train import train_lm

    monkeypatch.setenv("ANCHORLAB_TINYSTORIES", str(tmp_path / "nowhere"))
    cfg = load_lm_config(None, ["data.stories='sample'", "data.n_stories=4", "data.n_test_stories=1"])
    with pytest.raises(ConfigError, match=r"data\.stories: 'sample'.*ANCHORLAB_TINYSTORIES.*standin"):
        train_lm(cfg, tmp_path / "run", show_progress=False)
    assert not (tmp_path / "run").exists()
