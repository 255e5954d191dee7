"""Batched K-model training gives each run what it would get alone (issue 5, item 3)."""

import pytest
import torch
from safetensors.torch import load_file

from anchorlab import rundir
from anchorlab.batched import StackedParams, adamw_rows_, batch_mismatch, can_batch, clip_rows_, train_batched
from anchorlab.config import ConfigError
from anchorlab.train import build_initialized_model, train
from tests.conftest import tiny_config, train_batched_killed


def small(**dotted):
    base = {"task.data_size": 800, "train.epochs": 3, "train.eval_every": 1, "train.checkpoint_every": 2}
    return tiny_config(**{**base, **dotted})


# Three runs differing in γ, init and batch seeds, lr, weight decay, clipping and eval cadence.
THREE = [
    {},
    {"init.gamma": 0.8, "seeds.init_seed": 2, "seeds.train_seed": 3, "train.lr": 2e-3, "train.weight_decay": 0.1},
    {"init.gamma": 0.3, "seeds.init_seed": 3, "train.grad_clip": 0.05, "train.eval_every": 2, "train.beta2": 0.99},
]


def files(d):
    return sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file())


def test_three_batched_runs_equal_three_runs_alone(tmp_path):
    cfgs = [small(**o) for o in THREE]
    batched = train_batched(cfgs, [tmp_path / f"b{k}" for k in range(3)], show_progress=False)
    for k, cfg in enumerate(cfgs):
        alone = train(cfg, tmp_path / f"a{k}", show_progress=False)
        a, b = tmp_path / f"a{k}", tmp_path / f"b{k}"
        assert files(a) == files(b)  # config.json, metrics.jsonl, checkpoints, resume state, summary, DONE
        assert (a / "config.json").read_text() == (b / "config.json").read_text()
        ha, hb = rundir.read_metrics(a), rundir.read_metrics(b)
        assert [r["step"] for r in ha] == [r["step"] for r in hb]
        for ra, rb in zip(ha, hb):
            assert set(ra) == set(rb) and "stable_rank/blocks.0.attn.W_Q" in ra  # the mechanism scalars too
            assert ra["lr"] == rb["lr"]
            if ra["epoch_train_loss"] is not None:
                assert rb["epoch_train_loss"] == pytest.approx(ra["epoch_train_loss"], rel=1e-5)
            assert rb["train_loss"] == pytest.approx(ra["train_loss"], rel=1e-5)
            assert rb["seen_train_acc"] == pytest.approx(ra["seen_train_acc"], abs=2e-3)
            assert rb["embed_cov_top_share"] == pytest.approx(ra["embed_cov_top_share"], rel=1e-3)
        assert batched[k]["final_train_loss"] == pytest.approx(alone["final_train_loss"], rel=1e-5)
        for key in ("n_params", "steps", "run_id", "std_W_Q", "seeds", "n_train"):
            assert batched[k][key] == alone[key]
        # the environment also names the group a batched run trained in (it is part of what fixes its rounding)
        env = dict(batched[k]["environment"])
        assert env.pop("batch_group") == [c.run_id() for c in cfgs] and "batch_group" not in alone["environment"]
        assert env == alone["environment"]
        wa = load_file(str(rundir.checkpoint_path(a, alone["steps"])))
        wb = load_file(str(rundir.checkpoint_path(b, alone["steps"])))
        for name in wa:
            torch.testing.assert_close(wb[name], wa[name], rtol=1e-4, atol=1e-5)
    # the runs really differ (the test would be void if every row were the same model)
    assert batched[0]["final_train_loss"] != pytest.approx(batched[1]["final_train_loss"], rel=1e-3)


def test_stacked_adamw_and_clip_match_torch_per_row():
    torch.manual_seed(0)
    hyper = [dict(lr=1e-2, weight_decay=0.0, betas=(0.9, 0.999), eps=1e-8, clip=1.0),
             dict(lr=3e-3, weight_decay=0.1, betas=(0.8, 0.99), eps=1e-6, clip=0.01),
             dict(lr=5e-2, weight_decay=0.01, betas=(0.95, 0.9), eps=1e-8, clip=0.0)]
    cfg = tiny_config()
    models = [build_initialized_model(cfg.replace(**{"seeds.init_seed": k + 1}), 201) for k in range(3)]
    s = StackedParams(models[0], models, torch.device("cpu"))
    opts = [torch.optim.AdamW(m.parameters(), lr=h["lr"], betas=h["betas"], eps=h["eps"],
                              weight_decay=h["weight_decay"]) for m, h in zip(models, hyper)]
    col = lambda key, i=None: torch.tensor([h[key] if i is None else h[key][i] for h in hyper], dtype=torch.float64)
    for _ in range(5):
        grads = [[torch.randn_like(p) for p in m.parameters()] for m in models]
        for k, (m, opt, h) in enumerate(zip(models, opts, hyper)):
            for p, g in zip(m.parameters(), grads[k]):
                p.grad = g.clone()
            if h["clip"] > 0:
                torch.nn.utils.clip_grad_norm_(m.parameters(), h["clip"])
            opt.step()
            s.grad[k] = torch.cat([g.reshape(-1) for g in grads[k]])
        clip_rows_(s.grad, col("clip").float())
        adamw_rows_(s, col("lr"), col("weight_decay"), col("betas", 0), col("betas", 1), col("eps"))
    for k, m in enumerate(models):
        torch.testing.assert_close(s.theta[k], torch.cat([p.detach().reshape(-1) for p in m.parameters()]),
                                   rtol=1e-6, atol=1e-7)
        for name, p in m.named_parameters():  # the [K, ...] views are the rows of theta
            torch.testing.assert_close(s.params[name][k], p.detach(), rtol=1e-6, atol=1e-7)


def test_batched_resume_file_is_the_plain_trainers(tmp_path, monkeypatch):
    """A batched group killed after epoch 2 resumes exactly, batched or alone with train.train."""
    cfgs = [small(**o) for o in THREE[:2]]
    full = [train(c, tmp_path / f"full{k}", show_progress=False) for k, c in enumerate(cfgs)]
    train_batched_killed(monkeypatch, cfgs, [tmp_path / "cut0", tmp_path / "cut1"], after_saves=4)  # after epoch 2
    resumed = [train(cfgs[0], tmp_path / "cut0", show_progress=False),
               train_batched(cfgs, [tmp_path / "cut0", tmp_path / "cut1"], show_progress=False)[1]]
    for k in range(2):
        ha, hb = rundir.read_metrics(tmp_path / f"full{k}"), rundir.read_metrics(tmp_path / f"cut{k}")
        assert [r["step"] for r in ha] == [r["step"] for r in hb]
        assert hb[-1]["train_loss"] == pytest.approx(ha[-1]["train_loss"], rel=1e-5)
        assert resumed[k]["final_train_loss"] == pytest.approx(full[k]["final_train_loss"], rel=1e-5)
    # each run's summary says where each part of it trained: epochs 1-2 in the group of two, the rest alone
    # (run 0, by train.train) or in a group of one (run 1, the only unfinished run of its batched call)
    ids, spe = [c.run_id() for c in cfgs], resumed[0]["steps"] // cfgs[0].train.epochs
    for k, last_part in enumerate([None, [ids[1]]]):
        sessions = resumed[k]["sessions"]
        assert [r["from_step"] for r in sessions] == [0, 2 * spe]
        assert sessions[0]["batch_group"] == ids and sessions[1].get("batch_group") == last_part
        assert sessions == rundir.read_metrics(tmp_path / f"cut{k}", rundir.SESSIONS)
        assert [r["from_step"] for r in full[k]["sessions"]] == [0]


def test_can_batch_names_the_differing_field(tmp_path):
    a = small()
    assert can_batch([a, a.replace(**{"init.gamma": 0.9, "train.lr": 1e-2, "seeds.train_seed": 5})])
    assert batch_mismatch([a, a.replace(**{"model.d_mlp": 48})]) == "model"
    assert batch_mismatch([a, a.replace(**{"train.batch_size": 32})]) == "train.batch_size"
    assert can_batch([a, a.replace(**{"seeds.data_seed": 2})])  # each run reads its own draw
    assert batch_mismatch([a, a.replace(**{"task.data_size": 900})]) == "task"
    assert not can_batch([])
    with pytest.raises(ConfigError, match="train.epochs"):
        train_batched([a, a.replace(**{"train.epochs": 4})], [tmp_path / "x", tmp_path / "y"], show_progress=False)
    with pytest.raises(ValueError, match="distinct"):
        train_batched([a, a], [tmp_path / "x", tmp_path / "x"], show_progress=False)


def test_runs_on_different_data_seeds_batch_as_alone(tmp_path):
    """Three runs on two draws of the data (seeds 1 and 2) in one batch: each trains and is evaluated on its
    own draw, as alone; one sweep group holds them all."""
    from anchorlab.backends.local import batch_groups
    from anchorlab.tasks import make_task_data

    cfgs = [small(), small(**{"seeds.data_seed": 2, "seeds.init_seed": 2}),
            small(**{"seeds.data_seed": 2, "init.gamma": 0.8, "seeds.train_seed": 4})]
    assert batch_groups([(c, tmp_path / f"b{k}") for k, c in enumerate(cfgs)], 16) == [[0, 1, 2]]
    d1, d2 = (make_task_data(cfgs[0].task, s) for s in (1, 2))
    assert (d1.inputs != d2.inputs).any()  # the draws really differ
    out = train_batched(cfgs, [tmp_path / f"b{k}" for k in range(3)], show_progress=False)
    for k, cfg in enumerate(cfgs):
        alone = train(cfg, tmp_path / f"a{k}", show_progress=False)
        ha, hb = rundir.read_metrics(tmp_path / f"a{k}"), rundir.read_metrics(tmp_path / f"b{k}")
        assert [r["step"] for r in ha] == [r["step"] for r in hb]
        for ra, rb in zip(ha, hb):  # evaluated on its own draw: the accuracies are alone's too
            assert rb["train_loss"] == pytest.approx(ra["train_loss"], rel=1e-5)
            assert rb["seen_train_acc"] == pytest.approx(ra["seen_train_acc"], abs=2e-3)
            assert rb["unseen_loss"] == pytest.approx(ra["unseen_loss"], rel=1e-4)
        assert out[k]["final_train_loss"] == pytest.approx(alone["final_train_loss"], rel=1e-5)
        assert out[k]["seeds"] == alone["seeds"]
    with pytest.raises(ValueError, match="2 data seeds"):
        train_batched(cfgs[:2], [tmp_path / "x0", tmp_path / "x1"], show_progress=False, data=d1)


def test_early_stop_of_one_run_leaves_the_others_as_alone(tmp_path):
    cfgs = [small(**{"train.early_stop_loss": 50.0}), small(**THREE[1])]  # run 0 stops after epoch 1
    out = train_batched(cfgs, [tmp_path / "b0", tmp_path / "b1"], show_progress=False)
    alone = [train(c, tmp_path / f"a{k}", show_progress=False) for k, c in enumerate(cfgs)]
    assert out[0]["epochs"] == alone[0]["epochs"] == 1 and out[1]["epochs"] == 3
    for k in range(2):
        assert files(tmp_path / f"a{k}") == files(tmp_path / f"b{k}")
        assert out[k]["final_train_loss"] == pytest.approx(alone[k]["final_train_loss"], rel=1e-5)


def test_bf16_batched_is_close_to_bf16_alone(tmp_path):
    cfgs = [small(**{"train.precision": "bf16", "train.epochs": 1, **o}) for o in THREE[:2]]
    out = train_batched(cfgs, [tmp_path / "b0", tmp_path / "b1"], show_progress=False)
    for k, c in enumerate(cfgs):
        alone = train(c, tmp_path / f"a{k}", show_progress=False)
        assert out[k]["final_train_loss"] == pytest.approx(alone["final_train_loss"], rel=2e-2)


def write_reference(path, data, n_epochs):
    """A reference file (anchorlab.reference's format) holding ``data``'s rows, and ``n_epochs`` shuffle seeds;
    no init, so it serves the "data" and "order" parts."""
    import numpy as np

    names, in_train, arrays = [], [], {}
    for g, name in enumerate(data.group_names):
        rows = data.group == g
        assert len(set(data.in_train[rows])) == 1  # a group is trained on whole or not at all
        file_name = name.replace("-", "")  # ours "4-3_xel", the file's "43_xel"
        names.append(file_name)
        in_train.append(bool(data.in_train[rows][0]))
        arrays[f"group/{file_name}"] = np.concatenate([data.inputs[rows], data.targets[rows, None]], 1).astype(np.uint8)
    train_rows = np.concatenate([arrays[f"group/{n}"] for n, t in zip(names, in_train) if t])
    np.savez(path, group_names=np.array(names), group_in_train=np.array(in_train), train_rows=train_rows,
             epoch_seeds=np.arange(101, 101 + n_epochs), **arrays)
    return str(path)


def test_reference_parts_batch_as_alone(tmp_path):
    """Runs replaying different parts of a reference file, or none, train in one batch, each as alone: its batch
    order from the file (not its seed) with "order", the file's rows (here seed 7's draw) with "data"."""
    from anchorlab.backends.local import batch_groups
    from anchorlab.tasks import make_task_data

    ref = write_reference(tmp_path / "ref.npz", make_task_data(small().task, 7), n_epochs=3)
    cfgs = [small(**{"task.reference": ref, "task.reference_parts": parts}) for parts in (["order"], ["data"])]
    cfgs.append(small())  # all from the seeds
    assert batch_groups([(c, tmp_path / f"b{k}") for k, c in enumerate(cfgs)], 16) == [[0, 1, 2]]
    out = train_batched(cfgs, [tmp_path / f"b{k}" for k in range(3)], show_progress=False)
    alone = [train(c, tmp_path / f"a{k}", show_progress=False) for k, c in enumerate(cfgs)]
    for k in range(3):
        ha, hb = rundir.read_metrics(tmp_path / f"a{k}"), rundir.read_metrics(tmp_path / f"b{k}")
        for ra, rb in zip(ha, hb):
            assert rb["train_loss"] == pytest.approx(ra["train_loss"], rel=1e-5)
            assert rb["seen_train_acc"] == pytest.approx(ra["seen_train_acc"], abs=2e-3)
        assert out[k]["final_train_loss"] == pytest.approx(alone[k]["final_train_loss"], rel=1e-5)
    # each part really changes the run: the file's order, the file's rows, against the seeds' own
    assert len({round(o["final_train_loss"], 6) for o in out}) == 3
    with pytest.raises(ConfigError, match="train.epochs"):  # the file records 3 epochs of batch order
        train_batched([cfgs[0].replace(**{"train.epochs": 4})], [tmp_path / "x"], show_progress=False)
    assert not (tmp_path / "x").exists()


def test_a_longer_schedule_retraces_a_shorter_group_bit_for_bit(tmp_path):
    """The same group with train.epochs raised (P1's warm-up/cosine schedule does not depend on it, nor does the
    batch order) trains exactly the shorter group's epochs first: so a sweep of the same runs to epoch 210
    continues runs that were read at epoch 27 (configs/sweeps/p1_composers_e210.toml), in bf16 as they trained."""
    over = {"train.precision": "bf16", "train.cosine_epochs": 8.0}
    short = [small(**o, **over) for o in THREE]
    long = [small(**o, **over, **{"train.epochs": 5}) for o in THREE]
    train_batched(short, [tmp_path / f"s{k}" for k in range(3)], show_progress=False)
    train_batched(long, [tmp_path / f"l{k}" for k in range(3)], show_progress=False)
    for k in range(3):
        s, ln = rundir.read_metrics(tmp_path / f"s{k}"), rundir.read_metrics(tmp_path / f"l{k}")
        by_epoch = {r["epoch"]: r for r in ln}
        common = [r for r in s if r["epoch"] in by_epoch]  # (the short run's last epoch is always evaluated)
        assert len(common) >= 2 and max(by_epoch) > s[-1]["epoch"]
        for rs in common:  # every logged number, to the last digit
            assert rs == {m: by_epoch[rs["epoch"]][m] for m in rs}
        both = set(rundir.checkpoint_steps(tmp_path / f"s{k}")) & set(rundir.checkpoint_steps(tmp_path / f"l{k}"))
        assert max(both) > 0
        ws = load_file(str(rundir.checkpoint_path(tmp_path / f"s{k}", max(both))))
        wl = load_file(str(rundir.checkpoint_path(tmp_path / f"l{k}", max(both))))
        for name in ws:
            assert torch.equal(ws[name], wl[name])
