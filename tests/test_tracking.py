"""TensorBoard event files written by every anchor-task run, read back with TensorBoard's own reader; W&B offline."""

from __future__ import annotations

import pytest

from anchorlab import rundir, tracking
from anchorlab.train import train
from tests.conftest import tiny_config


def _accumulator(run_dir):
    event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    acc = event_accumulator.EventAccumulator(str(run_dir), size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    return acc


def test_training_writes_tensorboard_scalars_that_match_metrics(tmp_path):
    pytest.importorskip("tensorboard")
    run = tmp_path / "run"
    train(tiny_config(**{"task.data_size": 800, "train.epochs": 2}), run, show_progress=False)
    assert (run / tracking.EVENTS).is_file()
    acc = _accumulator(run)
    tags = set(acc.Tags()["scalars"])
    for tag in ("train_loss", "lr", "seen_train_acc", "seen_test_acc", "unseen_inferential_acc",
                "unseen_symmetric_acc", "group_acc/4-3_xel"):
        assert tag in tags, tag
    history = rundir.read_metrics(run)
    for tag in ("train_loss", "unseen_symmetric_acc", "lr"):
        events = acc.Scalars(tag)
        assert [e.step for e in events] == [r["step"] for r in history]
        assert [e.value for e in events] == pytest.approx([r[tag] for r in history], rel=1e-6)


def test_records_append_to_one_file_per_run(tmp_path):
    pytest.importorskip("tensorboard")
    for step, loss in ((0, 4.0), (10, 2.5), (20, 1.0)):
        tracking.log_metrics(tmp_path, {"step": step, "epoch": step // 10, "train_loss": loss, "flag": True,
                                        "nan": float("nan"), "unseen_deviation": {"0": 1.0}, "note": "x"})
    assert [p.name for p in tmp_path.iterdir()] == [tracking.EVENTS]
    acc = _accumulator(tmp_path)
    assert set(acc.Tags()["scalars"]) == {"train_loss"}  # booleans, NaN, strings and histograms are left out
    assert [(e.step, e.value) for e in acc.Scalars("train_loss")] == [(0, 4.0), (10, 2.5), (20, 1.0)]


def test_without_tensorboard_nothing_is_written_and_one_note(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tracking, "tensorboard_available", lambda: False)
    monkeypatch.setattr(tracking, "_noted", set())
    tracking.log_metrics(tmp_path, {"step": 0, "train_loss": 1.0})
    tracking.log_metrics(tmp_path, {"step": 1, "train_loss": 0.5})
    assert not any(tmp_path.iterdir())
    assert capsys.readouterr().err.count("tensorboard is not installed") == 1


def test_wandb_offline(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv(tracking.WANDB_ENV, "1")
    run = tmp_path / "abc123"
    run.mkdir()
    rundir.write_json(run / rundir.CONFIG, {"init": {"gamma": 0.8}})
    try:
        for step, loss in ((0, 3.0), (5, 1.5)):
            tracking.log_metrics(run, {"step": step, "train_loss": loss, "seen_test_acc": step / 10})
    finally:
        tracking.finish()
    offline = list((run / "wandb").glob("offline-run-*-abc123"))
    assert len(offline) == 1
    (log,) = offline[0].glob("*.wandb")  # the run's records, for `wandb sync`
    assert log.stat().st_size > 0
