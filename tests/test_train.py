import json

import pytest

from anchorlab import cpu, rundir
from anchorlab.config import ConfigError
from anchorlab.train import train
from tests.conftest import tiny_config


def test_run_directory_contract(tmp_path, tiny):
    s = train(tiny, tmp_path / "r", show_progress=False)
    d = tmp_path / "r"
    assert (d / "DONE").exists() and (d / "config.json").exists()
    assert json.loads((d / "config.json").read_text()) == tiny.to_dict()
    hist = rundir.read_metrics(d)
    assert [r["epoch"] for r in hist] == [0, 1, 2, 3]
    assert rundir.checkpoint_steps(d)[0] == 0 and rundir.checkpoint_steps(d)[-1] == hist[-1]["step"]
    for k in ("seen_train_acc", "seen_test_acc", "unseen_inferential_acc", "unseen_symmetric_acc",
              "final_train_loss", "unseen_inferential_acc_xm0", "unseen_symmetric_acc_xel"):
        assert k in s
    assert s["steps"] == 3 * s["steps_per_epoch"] and s["n_train"] == 15 * 180
    # the best evaluation of the headline metrics and of the held-out pair per key type
    for k in ("seen_test_acc", "unseen_inferential_acc", "unseen_inferential_acc_xel", "unseen_symmetric_acc_xm0"):
        assert s["best"][k] == max(r[k] for r in hist)
    assert not list(d.rglob("*.tmp"))
    # a finished run is not trained again
    assert train(tiny, d, show_progress=False)["run_id"] == s["run_id"]


def test_tiny_model_fits_the_training_set(tmp_path):
    cfg = tiny_config(**{"model.d_model": 32, "model.d_head": 16, "model.d_mlp": 64, "train.epochs": 40,
                         "train.lr": 3e-3, "train.lr_multiplier": 1.0, "train.schedule": "constant",
                         "train.eval_every": 40, "train.checkpoint_every": 40, "train.weight_decay": 0.0,
                         "task.data_size": 1000, "init.gamma": 0.5})
    s = train(cfg, tmp_path / "fit", show_progress=False)
    assert s["seen_train_acc"] > 0.95 and s["final_train_loss"] < 0.3


def test_resume_gives_the_uninterrupted_result(tmp_path, monkeypatch):
    cfg = tiny_config(**{"train.epochs": 4, "train.checkpoint_every": 2})
    full = train(cfg, tmp_path / "full", show_progress=False)

    import anchorlab.train as T

    calls = {"n": 0}
    real = T.rundir.save_resume

    def die_after_second(*a, **k):
        real(*a, **k)
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt  # killed mid-run, after epoch 2's resume state
    monkeypatch.setattr(T.rundir, "save_resume", die_after_second)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, tmp_path / "cut", show_progress=False)
    monkeypatch.setattr(T.rundir, "save_resume", real)
    assert not (tmp_path / "cut" / "DONE").exists()
    resumed = train(cfg, tmp_path / "cut", show_progress=False)
    a, b = rundir.read_metrics(tmp_path / "full"), rundir.read_metrics(tmp_path / "cut")
    assert a == b
    epochs = rundir.read_metrics(tmp_path / "full", rundir.EPOCHS)
    assert [r["epoch"] for r in epochs] == [1, 2, 3, 4]  # one loss per epoch, none repeated after the resume
    assert rundir.results(epochs) == rundir.results(rundir.read_metrics(tmp_path / "cut", rundir.EPOCHS))
    drop = ("wall_seconds_this_session", "sessions")
    assert {k: v for k, v in full.items() if k not in drop} == {k: v for k, v in resumed.items() if k not in drop}
    # the sessions the kept steps came from: one uninterrupted; two cut, the second from epoch 2's boundary
    spe = full["steps"] // 4
    assert [r["from_step"] for r in full["sessions"]] == [0]
    assert [r["from_step"] for r in resumed["sessions"]] == [0, 2 * spe]
    assert all(r["device"] == "cpu" and r["started"] for r in resumed["sessions"])
    # the summary says where the numbers came from (CPU vs GPU runs of one config part in float rounding)
    import torch

    env = rundir.read_json(tmp_path / "full" / rundir.SUMMARY)["environment"]
    assert env["device"] == "cpu" and env["torch"] == torch.__version__ and env["threads"] == torch.get_num_threads()
    assert env["device_name"] and env["denormals"] in ("flushed", "kept") and env["anchorlab"]
    assert env["bf16"] == ("native" if cpu.native_bf16() else "emulated")


def test_existing_dir_with_other_config_is_refused(tmp_path, tiny):
    train(tiny, tmp_path / "r", show_progress=False)
    with pytest.raises(ConfigError, match="init.gamma"):
        train(tiny.replace(**{"init.gamma": 0.9}), tmp_path / "r", show_progress=False)


def test_seeds_are_separate(tmp_path):
    from anchorlab.tasks import make_task_data
    from anchorlab.train import batch_order, build_initialized_model

    a = tiny_config()
    b = a.replace(**{"seeds.init_seed": 2})
    wa, wb = build_initialized_model(a, 201), build_initialized_model(b, 201)
    assert not (wa.embed.W_E == wb.embed.W_E).all()
    assert (make_task_data(a.task, a.seeds.data_seed).inputs == make_task_data(b.task, b.seeds.data_seed).inputs).all()
    assert (batch_order(100, 1, 3) == batch_order(100, 1, 3)).all()
    assert not (batch_order(100, 1, 3) == batch_order(100, 2, 3)).all()


def test_a_single_runs_bar_counts_steps_and_names_the_epoch(tmp_path, tiny, capsys):
    s = train(tiny, tmp_path / "r")
    err = capsys.readouterr().err.replace("\r", "\n")
    last = [line for line in err.splitlines() if line.strip()][-1]
    total = s["steps"]
    # every optimizer step counted (not epochs), the last epoch named, its loss and accuracies in the postfix
    assert f"{total}/{total}" in last and f"epoch {tiny.train.epochs}/{tiny.train.epochs}" in last, last
    assert "step" in last and "loss=" in last and "inf=" in last, last
