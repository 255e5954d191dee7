import json
from pathlib import Path

import pytest

from anchorlab.config import ConfigError, RunConfig, load_config, parse_override
from tests.conftest import sweep_sets, tiny_config

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def test_defaults_are_the_paper_values():
    c = RunConfig().validate()
    assert (c.task.anchors, c.task.shifts) == ((1, 2, 3, 4), (5, 1, -2, -8))
    assert (c.task.key_min, c.task.key_max, c.task.seq_len, c.task.split_modulus) == (20, 99, 9, 9)
    assert c.task.non_inferential == ((3, 4, -6),) and c.task.held_out == ((4, 3),)
    assert (c.task.data_size, c.task.vocab_size) == (900_000, 201)
    assert (c.model.d_model, c.model.d_mlp, c.model.d_head, c.model.n_heads, c.model.n_layers) == (400, 1200, 200, 1, 2)
    assert c.model.norm == "post" and c.model.act == "relu"
    t = c.train
    assert (t.batch_size, t.epochs, t.lr, t.lr_multiplier, t.warmup_epochs, t.cosine_epochs, t.lr_min) == (
        2048, 210, 1e-5, 25.0, 10.0, 200.0, 1e-5)
    assert (t.weight_decay, t.beta1, t.beta2, t.eps, t.grad_clip) == (0.01, 0.9, 0.999, 1e-8, 1.0)
    # the rest of P1's code-level values (C-book / C-cc): PyTorch's LayerNorm eps 1e-5, a 20-row positional
    # table (positions 0..8 used), 370 batches an epoch with drop_last, the authors' d_in table (embeddings at
    # d_model), xm0:xel group weights 1:9, (4,3) the reported unseen pair, evaluation every 3 epochs and
    # checkpoints every 20, the warm-up + cosine schedule
    assert (c.model.ln_eps, c.model.n_ctx, t.drop_last, c.init.convention) == (1e-5, 20, True, "paper")
    assert (c.task.test_key_weight, c.task.train_key_weight, c.task.probe_pair) == (1, 9, (4, 3))
    assert (t.eval_every, t.checkpoint_every, t.schedule) == (3, 20, "warmup_cosine")


def test_cbook_is_the_paper_config_at_multiplier_20():
    """The authors' logged re-runs (their teaching code's C-book) are P1's config with peak multiplier m = 20 (peak
    rate 2e-4) instead of the paper's default 25; nothing else differs."""
    paper, cbook = load_config(CONFIGS / "p1" / "paper.toml"), load_config(CONFIGS / "p1" / "cbook.toml")
    assert (paper.train.lr_multiplier, cbook.train.lr_multiplier) == (25.0, 20.0)
    assert cbook == paper.replace(**{"train.lr_multiplier": 20.0})


def test_paper_run_is_370_steps_an_epoch_for_210_epochs():
    """P1's log: 759,375 training rows, batch 2048, drop_last -> 370 batches an epoch; 210 epochs -> 77,700
    optimizer steps. Through the methods training uses (TrainConfig.steps_per_epoch, RunConfig.total_steps),
    for the defaults and configs/p1/paper.toml."""
    for c in (RunConfig(), load_config(CONFIGS / "p1" / "paper.toml")):
        n_train = c.task.n_train_rows()
        assert n_train == 759_375
        assert c.train.steps_per_epoch(n_train) == 370
        assert c.total_steps() == 370 * 210 == 77_700
    # drop_last is what makes it 370: keeping the partial batch (759,375 = 370 * 2048 + 1,615) is one more
    assert RunConfig().replace(**{"train.drop_last": False}).total_steps() == 371 * 210


@pytest.mark.parametrize("override, field", [
    ("model.d_modle=3", "model.d_modle"),
    ("bogus.x=1", "bogus.x"),
    ("init.gamma=0", "init.gamma"),
    ("init.gamma=-1", "init.gamma"),
    ("init.gamma='big'", "init.gamma"),
    ("model.n_layers=2.5", "model.n_layers"),
    ("model.norm='mid'", "model.norm"),
    ("task.held_out=[[4,5]]", "task.held_out"),
    ("task.probe_pair=[4,3,1]", "task.probe_pair"),
    ("task.probe_pair=[4,7]", "task.probe_pair"),
    ("task.non_inferential=[[3,7,-6]]", "task.non_inferential"),
    ("task.seq_len=2", "task.seq_len"),
    ("task.split_modulus=3", "task.split_modulus"),
    ("task.anchors=[1,2,3,50]", "task.anchors"),
    ("task.vocab_size=100", "task.vocab_size"),
    ("task.key_min=12", "task.key_min"),  # key 12 - 16 ((4,4)'s shift) is no token
    ("train.device='tpu'", "train.device"),
    ("init.role_gamma={nope=0.5}", "init.role_gamma"),
])
def test_bad_values_name_the_field(override, field):
    with pytest.raises(ConfigError) as e:
        load_config(None, [override])
    assert str(e.value).startswith(field), str(e.value)
    assert "allowed" in str(e.value) or "expected" in str(e.value) or "unknown" in str(e.value)


def test_a_probe_pair_whose_two_readings_agree_is_refused():
    """(2,1) with (1,2) mapped by composition: both readings are x+6, so inferential and symmetric accuracy would
    be one number; refused, naming task.probe_pair. Listing (1,2) as non-inferential makes it a real probe."""
    with pytest.raises(ConfigError, match=r"^task\.probe_pair: .*same"):
        load_config(None, ["task.held_out=[[2,1]]", "task.probe_pair=[2,1]"])
    c = load_config(None, ["task.held_out=[[2,1]]", "task.probe_pair=[2,1]",
                           "task.non_inferential=[[1,2,0]]"])
    assert c.task.probe_pair == (2, 1)


def test_overrides_parse_toml_values():
    assert parse_override("train.lr=3e-4") == ("train.lr", 3e-4)
    assert parse_override("task.held_out=[[4,3],[3,4]]") == ("task.held_out", [[4, 3], [3, 4]])
    assert parse_override("model.norm=pre") == ("model.norm", "pre")
    c = load_config(None, ["task.held_out=[[4,3],[3,4]]", "init.gamma=0.8"])
    assert c.task.held_out == ((4, 3), (3, 4)) and c.init.gamma == 0.8


def test_run_id_is_stable_and_config_sensitive():
    a, b = RunConfig(), RunConfig()
    assert a.run_id() == b.run_id()
    assert a.replace(**{"init.gamma": 0.8}).run_id() != a.run_id()


def test_to_dict_round_trips():
    from anchorlab.config import from_dict

    c = RunConfig().replace(**{"init.role_gamma": {"embed": 0.3}, "model.norm": "pre"})
    assert from_dict(c.to_dict()) == c


# configs/text/ and configs/sweeps/text_* hold LM configs and grids (tests/test_lm.py, tests/test_text_sweeps.py);
# configs/real/ the P1 real-task configs (tests/test_seq2seq_train.py); configs/reproduce.toml is the registry
# (tests/test_reproduce.py)
ANCHOR_FILES = sorted(p for p in CONFIGS.rglob("*.toml") if not {"text", "real"} & set(p.relative_to(CONFIGS).parts)
                      and not p.name.startswith("text_") and p.name != "reproduce.toml")


@pytest.mark.parametrize("path", ANCHOR_FILES, ids=lambda p: str(p.relative_to(CONFIGS)))
def test_every_config_and_sweep_file_loads(path, tmp_path):
    """Every shipped anchor-task file is valid: run configs load, sweep files (with [axes]) validate every
    grid point; a sweep over task.reference_parts with the reference file that its command line names.
    (configs/text/ holds LM configs, loaded by tests/test_lm.py.)"""
    import tomllib

    from anchorlab.sweep import load_sweep

    if "axes" in tomllib.loads(path.read_text()) or path.parent.name == "sweeps":
        spec = load_sweep(path, sweep_sets(path, tmp_path))
        configs = spec.configs()
        assert len(configs) == len(spec.points()) > 0
        assert len({cfg.run_id() for _, cfg in configs}) == len(configs)  # every grid point is a distinct run
    else:
        load_config(path)


def test_demo_sweep_loads():
    from anchorlab.sweep import load_sweep

    spec = load_sweep(CONFIGS / "demo.toml")
    assert len(spec.configs()) == 9


@pytest.mark.parametrize("name", ["p1_frontier_d128", "p1_frontier_d256"])
def test_frontier_sweeps_keep_the_paper_wq_std_at_their_adjusted_gamma(name):
    """The frontier's adjusted small γ keeps W_Q's std at the paper's 400^-0.8 (its comments say so); the kept
    γ 0.8 and the middle γ 0.5 are the paper's values; widths in the paper's proportions."""
    from anchorlab.init import init_std
    from anchorlab.sweep import load_sweep

    configs = [cfg for _, cfg in load_sweep(CONFIGS / "sweeps" / f"{name}.toml").configs()]
    gammas = sorted({c.init.gamma for c in configs})
    assert gammas[:2] == [0.5, 0.8] and len(gammas) == 3
    for c in configs:
        m = c.model
        assert (m.d_head, m.d_mlp) == (m.d_model // 2, 3 * m.d_model) and m.d_model < 400
        if c.init.gamma == gammas[2]:
            std = init_std("attn_in", (m.n_heads, m.d_model, m.d_head), c.init)
            assert std == pytest.approx(400 ** -0.8, rel=5e-3)


def test_m30_e210_sweep_is_p1s_full_schedule_at_its_top_rate():
    """configs/sweeps/p1_m30_e210.toml: configs/p1/cbook.toml at peak rate 3e-4 (1e-5 × 30, the top of P1's grid)
    to epoch 210, P1's full schedule (warm-up 10 epochs, cosine over 200), γ 1.2 / 0.3 × seeds 1-3, bf16; the
    γ 0.3 seed-1 CPU run of experiments/cpu_p1_m30_e210.sh is its run of that id."""
    from anchorlab.sweep import load_sweep

    cbook = load_config(CONFIGS / "p1" / "cbook.toml")
    configs = load_sweep(CONFIGS / "sweeps" / "p1_m30_e210.toml").configs()
    assert sorted((p["init.gamma"], p["seed"]) for p, _ in configs) == [(g, s) for g in (0.3, 1.2) for s in (1, 2, 3)]
    for point, c in configs:
        t = c.train
        assert (t.epochs, t.warmup_epochs, t.cosine_epochs, t.eval_every, t.precision) == (210, 10, 200, 3, "bf16")
        assert (c.init.gamma, c.seeds.data_seed, c.seeds.init_seed) == (point["init.gamma"], *[point["seed"]] * 2)
        assert t.lr * t.lr_multiplier == pytest.approx(3e-4) and t.lr == cbook.train.lr
        assert c.model == cbook.model and c.task == cbook.task
    cpu = load_config(CONFIGS / "p1" / "cbook.toml", ["train.epochs=210", "train.eval_every=3", "init.gamma=0.3",
                                                      "train.checkpoint_every=3", "train.precision=bf16",
                                                      "train.lr_multiplier=30", "seed=1", "train.threads=1"])
    assert cpu.run_id() in {c.run_id() for _, c in configs}


def test_m30_e210_pair_is_two_runs_of_that_sweep():
    """configs/sweeps/p1_m30_e210_pair.toml (one GPU call's share, experiments/gpu_p1_m30_e210.sh): γ 1.2 seed 3 and
    γ 0.3 seed 1 of configs/sweeps/p1_m30_e210.toml, the same configs and so the same run ids."""
    from anchorlab.sweep import load_sweep

    sweeps = CONFIGS / "sweeps"
    whole = {c.run_id(): (p["init.gamma"], p["seed"]) for p, c in load_sweep(sweeps / "p1_m30_e210.toml").configs()}
    pair = [c.run_id() for _, c in load_sweep(sweeps / "p1_m30_e210_pair.toml").configs()]
    assert [whole[r] for r in pair] == [(1.2, 3), (0.3, 1)]


def test_best_rates_e210_sweep_is_p1s_full_schedule_at_the_best_epoch_27_rates():
    """configs/sweeps/p1_best_rates_e210.toml: configs/p1/cbook.toml to epoch 210 at the rates where our seeds read
    best at epoch 27 (γ 1.2: peak 1.75e-4, m = 17.5; γ 0.3: 2e-4, m = 20) × seeds 1-3, bf16, evaluated every 3."""
    from anchorlab.sweep import load_sweep

    cbook = load_config(CONFIGS / "p1" / "cbook.toml")
    configs = load_sweep(CONFIGS / "sweeps" / "p1_best_rates_e210.toml").configs()
    got = sorted((c.init.gamma, round(c.train.lr * c.train.lr_multiplier, 9), c.seeds.data_seed) for _, c in configs)
    assert got == [(0.3, 2e-4, s) for s in (1, 2, 3)] + [(1.2, 1.75e-4, s) for s in (1, 2, 3)]
    for _, c in configs:
        t = c.train
        assert (t.epochs, t.warmup_epochs, t.cosine_epochs, t.eval_every, t.precision) == (210, 10, 200, 3, "bf16")
        assert c.model == cbook.model and c.task == cbook.task and c.seeds.init_seed == c.seeds.data_seed


def test_both_sides_sweep_is_the_paper_config_at_two_gammas_and_three_seeds():
    """configs/sweeps/p1_both_sides.toml (`anchorlab reproduce p1-both-sides-m20`): configs/p1/cbook.toml itself at
    γ 0.5 and 0.8 × seeds 1-3 (data, init and order), fp32, 27 epochs, evaluated every 3; nothing else moved."""
    from anchorlab.sweep import load_sweep

    cbook = load_config(CONFIGS / "p1" / "cbook.toml")
    spec = load_sweep(CONFIGS / "sweeps" / "p1_both_sides.toml")
    configs = spec.configs()
    assert sorted((p["init.gamma"], p["seed"]) for p, _ in configs) == [(g, s) for g in (0.5, 0.8) for s in (1, 2, 3)]
    for point, c in configs:
        t = c.train
        assert (t.precision, t.epochs, t.eval_every, t.checkpoint_every) == ("fp32", 27, 3, 3)
        assert (c.seeds.data_seed, c.seeds.init_seed, c.seeds.train_seed) == (point["seed"],) * 3
        assert c.init.gamma == point["init.gamma"]
        assert c.model == cbook.model and c.task == cbook.task  # d_model 400, the full 900k-row task
        back = {"train.epochs": cbook.train.epochs, "train.checkpoint_every": cbook.train.checkpoint_every,
                "init.gamma": cbook.init.gamma,
                **{f"seeds.{k}": getattr(cbook.seeds, k) for k in ("data_seed", "init_seed", "train_seed")}}
        assert c.replace(**back) == cbook  # only the epochs, kept checkpoints, γ and seeds differ from cbook.toml


def test_ends_rates_sweep_is_p1s_nine_rates_at_two_gammas_and_three_seeds():
    """configs/sweeps/p1_ends_rates.toml (`anchorlab reproduce p1-both-sides`): configs/p1/cbook.toml itself at
    γ 0.3 and 1.2 × P1's 9 peak learning rates (arXiv 2405.05409 §4: 9 rates uniform in [1e-4, 3e-4], i.e.
    1e-5 × m, m = 10, 12.5, ..., 30) × seeds 1-3, bf16, 27 epochs evaluated every 3; nothing else moved."""
    from anchorlab.schedule import lr_at
    from anchorlab.sweep import load_sweep

    cbook = load_config(CONFIGS / "p1" / "cbook.toml")
    configs = load_sweep(CONFIGS / "sweeps" / "p1_ends_rates.toml").configs()
    rates = [10.0, 12.5, 15.0, 17.5, 20.0, 22.5, 25.0, 27.5, 30.0]
    assert sorted((p["init.gamma"], p["train.lr_multiplier"], p["seed"]) for p, _ in configs) == [
        (g, m, s) for g in (0.3, 1.2) for m in rates for s in (1, 2, 3)]
    for point, c in configs:
        t = c.train
        assert (t.precision, t.epochs, t.eval_every, t.checkpoint_every) == ("bf16", 27, 3, 3)
        assert (c.seeds.data_seed, c.seeds.init_seed, c.seeds.train_seed) == (point["seed"],) * 3
        assert c.model == cbook.model and c.task == cbook.task
        peak = lr_at(10 * 370, t, 370)  # the end of the 10-epoch warm-up (370 steps an epoch)
        assert peak == pytest.approx(1e-5 * point["train.lr_multiplier"], rel=1e-9)
        assert 1e-4 - 1e-12 <= peak <= 3e-4 + 1e-12
        back = {"train.epochs": cbook.train.epochs, "train.checkpoint_every": cbook.train.checkpoint_every,
                "train.precision": cbook.train.precision, "train.lr_multiplier": cbook.train.lr_multiplier,
                "init.gamma": cbook.init.gamma,
                **{f"seeds.{k}": getattr(cbook.seeds, k) for k in ("data_seed", "init_seed", "train_seed")}}
        assert c.replace(**back) == cbook


def test_reference_parts_pick_what_comes_from_the_file(tmp_path, monkeypatch):
    """task.reference_parts: each of data / init / order comes from the reference file only when named; the
    rest from the seeds as without a file. Bad values are one line naming the field; the default is hashed
    as before the field existed (committed run ids stay)."""
    import torch

    import anchorlab.reference as R
    from anchorlab.config_tools import identity_of
    from anchorlab.tasks import make_task_data
    from anchorlab.tasks.composite import generate_composite
    from anchorlab.train import batch_order, build_initialized_model, epoch_order

    fake = tmp_path / "ref.npz"
    fake.write_bytes(b"")  # only its existence is checked before use; the loader is replaced below
    calls: list[str] = []

    class Ref:
        n_epochs, gamma, init = 60, 0.8, {}

    monkeypatch.setattr(R, "load_reference", lambda path: calls.append("load") or Ref())
    monkeypatch.setattr(R, "reference_task_data", lambda ref, task: calls.append("data") or "file rows")
    monkeypatch.setattr(R, "reference_batch_order", lambda ref, n, e: calls.append("order") or torch.arange(n))
    monkeypatch.setattr(R, "load_authors_init_", lambda model, *a: calls.append("init") or model)
    base = {"task.reference": str(fake), "task.data_size": 1600, "model.d_model": 16, "model.d_head": 8,
            "model.d_mlp": 16, "train.epochs": 30}
    cfg = RunConfig().replace(**base, **{"task.reference_parts": ["order"]})
    data = make_task_data(cfg.task, cfg.seeds.data_seed)  # generated, not the file's
    assert (data.inputs == generate_composite(cfg.task, cfg.seeds.data_seed).inputs).all()
    ours = build_initialized_model(RunConfig().replace(**{k: v for k, v in base.items() if k != "task.reference"}), 201)
    mine = build_initialized_model(cfg, 201)
    assert all(torch.equal(a, b) for a, b in zip(ours.state_dict().values(), mine.state_dict().values()))
    assert torch.equal(epoch_order(cfg)(10, 1), torch.arange(10)) and calls == ["load", "order"]
    calls.clear()
    full = RunConfig().replace(**base)  # default: all three from the file
    assert make_task_data(full.task, 1) == "file rows"
    build_initialized_model(full, 201)
    epoch_order(full)(10, 1)
    assert [c for c in calls if c != "load"] == ["data", "init", "order"]
    no_order = RunConfig().replace(**base, **{"task.reference_parts": ["data", "init"]})
    assert torch.equal(epoch_order(no_order)(10, 2), batch_order(10, no_order.seeds.train_seed, 2))
    generated = RunConfig().replace(**{"task.data_size": 1600}).task.n_train_rows()
    assert no_order.task.n_train_rows() is None and cfg.task.n_train_rows() == generated == int(data.in_train.sum())
    # identity: the default is not hashed (old run ids stay); a subset is, and so changes the id
    assert "reference_parts" not in identity_of(full)["task"] and "reference_parts" in identity_of(cfg)["task"]
    assert cfg.run_id() != full.run_id() != no_order.run_id()
    swapped = RunConfig().replace(**base, **{"task.reference_parts": ["init", "data"]})
    assert swapped.task.reference_parts == ("data", "init") and swapped.run_id() == no_order.run_id()
    for bad in (["data", "bogus"], [], ["init", "init"]):
        with pytest.raises(ConfigError, match="task.reference_parts"):
            RunConfig().replace(**base, **{"task.reference_parts": bad})
    with pytest.raises(ConfigError, match="task.reference_parts.*unless task.reference"):
        RunConfig().replace(**{"task.reference_parts": ["init"]})


def test_a_reference_file_is_identified_by_its_name(tmp_path):
    """A run that takes a reference file keeps its id and resumes wherever the file is kept (the recordings
    have distinct names); another file name is another run."""
    from anchorlab import rundir

    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        (d / "rec.npz").write_bytes(b"")
    (a / "other.npz").write_bytes(b"")
    here = RunConfig().replace(**{"task.reference": str(a / "rec.npz"), "train.epochs": 30})
    moved = here.replace(**{"task.reference": str(b / "rec.npz")})
    other = here.replace(**{"task.reference": str(a / "other.npz")})
    assert here.run_id() == moved.run_id() != other.run_id()
    stored = here.to_dict()  # config.json as written before the file moved: the old path
    assert stored["task"]["reference"] == str(a / "rec.npz")
    assert rundir.same_run(stored, moved) and not rundir.same_run(stored, other)


def test_seed_override_sets_all_three_seeds_as_the_sweep_axis_does(tmp_path):
    cfg = load_config(None, ["seed=7"], training=False)
    assert (cfg.seeds.data_seed, cfg.seeds.init_seed, cfg.seeds.train_seed) == (7, 7, 7)
    # the same run id as the sweep point "seed = 7": `anchorlab train --set seed=N` repeats a sweep's run
    from anchorlab.sweep import load_sweep

    sweep = tmp_path / "s.toml"
    sweep.write_text('name = "s"\n[axes]\nseed = [7]\n')
    [(_, from_sweep)] = load_sweep(sweep).configs()
    assert from_sweep.run_id() == load_config(None, ["seed=7"]).run_id()
    # a later, more specific key still wins
    assert load_config(None, ["seed=7", "seeds.train_seed=2"], training=False).seeds.train_seed == 2


def test_a_reference_run_reads_back_where_the_file_is_not_and_trains_only_where_it_is(tmp_path):
    """A committed reference run's config.json (docs/p1_reference_parts/...) is read by figures and reports on a
    machine without the recording; training one needs the file: one line naming task.reference, nothing written."""
    from anchorlab import rundir
    from anchorlab.figures import draw
    from anchorlab.train import train

    cfg = tiny_config(**{"task.reference": "p1_authors_paper_g0.8_s1.npz"})  # a bare name, no such file here
    d = tmp_path / "run"
    d.mkdir()
    rundir.write_json(d / rundir.CONFIG, cfg.to_dict())
    (d / rundir.METRICS).write_text(json.dumps({"step": 0, "epoch": 0, "seen_test_acc": 0.5, "unseen_inferential_acc":
                                                0.1, "unseen_symmetric_acc": 0.2}) + "\n")
    assert rundir.read_config(d).task.reference == "p1_authors_paper_g0.8_s1.npz"
    assert draw("p1-curves", [d], tmp_path / "fig").is_file()
    with pytest.raises(ConfigError, match="task.reference: allowed values are '' or the path of an existing"):
        train(cfg, tmp_path / "new", show_progress=False)
    assert not (tmp_path / "new").exists()


def test_data_size_sweeps_shrink_only_the_rows_and_keep_the_steps_where_they_say_so():
    """configs/sweeps/p1_frontier_data.toml (the frontier's data-size factor, docs/p1_frontier.md): the paper config
    with task.data_size 450,000 / 225,000, 27 epochs (so 1/2, 1/4 of the steps); p1_frontier_data_steps.toml: the
    same rows with epochs, warm-up, cosine and eval cadence stretched 2× / 4×, so the steps and the learning
    rate at each step are a paper-size run's to its epoch 27 (to within the rounding of rows to batches)."""
    import dataclasses

    from anchorlab.schedule import lr_at
    from anchorlab.sweep import load_sweep

    cbook = load_config(CONFIGS / "p1" / "cbook.toml")
    full_steps = cbook.task.n_train_rows() // cbook.train.batch_size  # 370
    pairs = {(1.2, 17.5), (1.2, 25.0), (1.2, 30.0), (0.3, 20.0)}
    for name, stretch in (("p1_frontier_data", False), ("p1_frontier_data_steps", True)):
        configs = load_sweep(CONFIGS / "sweeps" / f"{name}.toml").configs()
        assert len(configs) == 24
        assert {(c.init.gamma, c.train.lr_multiplier) for _, c in configs} == pairs
        for _, c in configs:
            k = 900_000 // c.task.data_size
            assert k in (2, 4) and c.model == cbook.model and c.train.precision == "bf16"
            assert dataclasses.replace(c.task, data_size=900_000) == cbook.task  # nothing else in the task moved
            steps = c.task.n_train_rows() // c.train.batch_size
            assert abs(steps * k - full_steps) <= k  # the rows shrink by k
            t = c.train
            if not stretch:
                assert (t.epochs, t.warmup_epochs, t.cosine_epochs, t.eval_every) == (27, 10.0, 200.0, 3)
                continue
            assert (t.epochs, t.warmup_epochs, t.cosine_epochs, t.eval_every) == (27 * k, 10.0 * k, 200.0 * k, 3 * k)
            assert abs(t.epochs * steps - 27 * full_steps) / (27 * full_steps) < 0.006
            paper = cbook.replace(**{"train.lr_multiplier": t.lr_multiplier}).train
            for frac in (0.1, 0.37, 0.5, 0.9):  # the same rate at the same step (the warm-up too)
                s = int(frac * 27 * full_steps)
                assert lr_at(s, t, steps) == pytest.approx(lr_at(s, paper, full_steps), rel=0.01)


def test_phase_paper_sweep_is_p1s_gamma_by_depth_grid_at_nine_rates_and_three_seeds():
    """configs/sweeps/p1_phase_paper.toml (P1 Fig. 2a/b; SPEC E1, I.5): configs/p1/paper.toml (the defaults: 1 head,
    d_k 200, (3,4) seen, 900k rows, batch 2048, 210 epochs) over γ 0.3..0.8 step 0.1 × depth 2..6 × P1's 9 peak
    rates (1e-5 × m, m = 10, 12.5, ..., 30, uniform in [1e-4, 3e-4]) × seeds 1-3 = 810 runs; nothing else moved."""
    import dataclasses

    from anchorlab.config import SeedConfig
    from anchorlab.schedule import lr_at
    from anchorlab.sweep import load_sweep, narrow

    paper = load_config(CONFIGS / "p1" / "paper.toml")
    assert paper == RunConfig().replace(**{"init.gamma": 0.8})  # the paper config is the (pinned) defaults
    spec = load_sweep(CONFIGS / "sweeps" / "p1_phase_paper.toml")  # validates all 810 configs
    gammas = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    rates = [10.0, 12.5, 15.0, 17.5, 20.0, 22.5, 25.0, 27.5, 30.0]
    got = sorted((p["init.gamma"], p["model.n_layers"], p["train.lr_multiplier"], p["seed"]) for p in spec.points())
    assert got == [(g, n, m, s) for g in gammas for n in (2, 3, 4, 5, 6) for m in rates for s in (1, 2, 3)]
    assert len(got) == 810
    # each run's config, for seed 2 (building all 810 again takes ~1 s; the seed axis is generic)
    for point, c in narrow(spec, ["seed=2"]).configs():
        assert (c.init.gamma, c.model.n_layers, c.train.lr_multiplier) == (
            point["init.gamma"], point["model.n_layers"], point["train.lr_multiplier"])
        assert c.seeds == SeedConfig(point["seed"], point["seed"], point["seed"])
        assert c.task == paper.task and c.init == dataclasses.replace(paper.init, gamma=point["init.gamma"])
        assert c.model == dataclasses.replace(paper.model, n_layers=point["model.n_layers"])
        assert c.train == dataclasses.replace(paper.train, lr_multiplier=point["train.lr_multiplier"])
        peak = lr_at(10 * 370, c.train, 370)  # the end of the 10-epoch warm-up
        assert peak == pytest.approx(1e-5 * point["train.lr_multiplier"], rel=1e-9)
        assert 1e-4 - 1e-12 <= peak <= 3e-4 + 1e-12


def test_lrwd_paper_sweep_is_p1s_fig14_grid():
    """configs/sweeps/p1_lrwd_paper.toml (P1 Fig. 14-16; SPEC E11): 3 layers, 1 head, γ 0.5, both (3,4) and (4,3)
    held out, peak LR 1e-5 × m for m ∈ {5, 10, 20, 40, 60} (5e-5 ... 6e-4) after a 10-epoch warm-up, cosine over
    200 epochs to 1e-5; WD {0.003, 0.01, 0.03, 0.1, 0.3} [INF] × 9 seeds ("nine independent experiments" [INF])."""
    import dataclasses

    from anchorlab.config import SeedConfig
    from anchorlab.schedule import lr_at
    from anchorlab.sweep import load_sweep

    paper = load_config(CONFIGS / "p1" / "paper.toml")
    configs = load_sweep(CONFIGS / "sweeps" / "p1_lrwd_paper.toml").configs()
    got = sorted((p["train.lr_multiplier"], p["train.weight_decay"], p["seed"]) for p, _ in configs)
    assert got == [(m, wd, s) for m in (5.0, 10.0, 20.0, 40.0, 60.0) for wd in (0.003, 0.01, 0.03, 0.1, 0.3)
                   for s in range(1, 10)]
    for point, c in configs:
        assert (c.model.n_layers, c.model.n_heads, c.model.d_head, c.init.gamma) == (3, 1, 200, 0.5)
        assert set(c.task.held_out) == {(3, 4), (4, 3)} and c.task.probe_pair == (4, 3)
        assert c.task == dataclasses.replace(paper.task, held_out=c.task.held_out)
        assert c.model == dataclasses.replace(paper.model, n_layers=3)
        assert c.seeds == SeedConfig(point["seed"], point["seed"], point["seed"])
        t = c.train
        assert t == dataclasses.replace(paper.train, lr_multiplier=point["train.lr_multiplier"],
                                        weight_decay=point["train.weight_decay"])
        assert (t.lr, t.warmup_epochs, t.cosine_epochs, t.lr_min, t.epochs) == (1e-5, 10.0, 200.0, 1e-5, 210)
        n = t.steps_per_epoch(c.task.n_train_rows())
        assert c.task.n_train_rows() == 14 * 50_625  # the 14 trained pairs are all inferential
        assert lr_at(10 * n, t, n) == pytest.approx(1e-5 * point["train.lr_multiplier"], rel=1e-9)
        assert lr_at(210 * n - 1, t, n) == pytest.approx(1e-5, rel=1e-6)


@pytest.mark.parametrize("name, gammas", [("p2_transformer_paper", [0.3, 0.5, 0.8]), ("p2_emb_mlp_paper", [0.3, 0.8])])
def test_p2_paper_sweeps_are_their_base_config_over_p2s_gammas(name, gammas):
    """P2 at paper scale: the Transformer over γ {0.3, 0.5, 0.8} (Fig. 3A, 5, 6; 0.5 in App. C; SPEC II.1, F2) and
    the Emb-MLP over γ {0.3, 0.8} (Fig. 3B: "γ = 0.3 vs 0.8"; SPEC F3), one seed; everything else is the base
    config file (configs/p2/*_paper.toml, whose values tests/test_mem_rsn.py pins)."""
    import dataclasses

    from anchorlab.sweep import load_sweep

    base = load_config(CONFIGS / "p2" / f"{name.removeprefix('p2_')}.toml")
    configs = load_sweep(CONFIGS / "sweeps" / f"{name}.toml").configs()
    assert [c.init.gamma for _, c in configs] == gammas
    for _, c in configs:
        assert c == dataclasses.replace(base, init=dataclasses.replace(base.init, gamma=c.init.gamma))
