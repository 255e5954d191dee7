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
                "unseen_symmetric_acc", "group_acc/4-3_xel", "unseen_inferential_by_key_pos/6",
                "unseen_symmetric_by_key_pos/0"):
        assert tag in tags, tag
    history = rundir.read_metrics(run)
    events = acc.Scalars("unseen_symmetric_by_key_pos/6")
    assert [e.value for e in events] == pytest.approx([r["unseen_symmetric_by_key_pos"]["6"] for r in history])
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


def _scalars(run_dir, tag, reader="event_accumulator"):
    """(step, value) of a tag as TensorBoard's readers see it: ``event_accumulator`` (the one above) or
    ``plugin_event_accumulator`` (what the TensorBoard server's Python loader uses)."""
    mod = pytest.importorskip(f"tensorboard.backend.event_processing.{reader}")
    if reader == "event_accumulator":
        return [(e.step, e.value) for e in _accumulator(run_dir).Scalars(tag)]
    acc = mod.EventAccumulator(str(run_dir), size_guidance={mod.TENSORS: 0})
    acc.Reload()
    return [(e.step, float(e.tensor_proto.float_val[0])) for e in acc.Tensors(tag)]


def test_a_resumed_session_replaces_the_steps_it_runs_again(tmp_path):
    """Session 1 logs steps 0, 5, 10, 15 and is interrupted with its state saved at step 7; session 2 resumes
    and logs 10, 15, 20: the readers show each step once, session 2's values after the resume point."""
    pytest.importorskip("tensorboard")
    first = tracking.Session(tmp_path)
    for step in (0, 5, 10, 15):
        first.log({"step": step, "train_loss": 1.0 + step})
    second = tracking.Session(tmp_path)
    second.resume(7)
    for step in (10, 15, 20):
        second.log({"step": step, "train_loss": 100.0 + step})
    want = [(0, 1.0), (5, 6.0), (10, 110.0), (15, 115.0), (20, 120.0)]
    assert _scalars(tmp_path, "train_loss") == want
    assert _scalars(tmp_path, "train_loss", "plugin_event_accumulator") == want
    # a run started again from scratch in the same directory (no resume state): only the new session is shown
    third = tracking.Session(tmp_path)
    third.log({"step": 0, "train_loss": 7.0})
    assert _scalars(tmp_path, "train_loss") == _scalars(tmp_path, "train_loss", "plugin_event_accumulator") \
        == [(0, 7.0)]


def _resume_after_an_interrupt(monkeypatch, run, run_dir, step):
    """Run ``run(run_dir)`` so that it stops right after its evaluation at ``step`` is logged, before the epoch's
    state is saved, then run it again: it resumes from the last saved state and logs the evaluations after it."""
    real = tracking.log_metrics

    def log_metrics(d, record, **kw):
        real(d, record, **kw)
        if record["step"] == step:
            raise KeyboardInterrupt

    monkeypatch.setattr(tracking, "log_metrics", log_metrics)
    with pytest.raises(KeyboardInterrupt):
        run(run_dir)
    monkeypatch.setattr(tracking, "log_metrics", real)
    run(run_dir)


def _assert_events_match_metrics(run, tags):
    history = rundir.read_metrics(run)
    for tag in tags:
        want = [(r["step"], pytest.approx(r[tag], rel=1e-6)) for r in history if r.get(tag) is not None]
        assert want, tag
        for reader in ("event_accumulator", "plugin_event_accumulator"):
            assert _scalars(run, tag, reader) == want, (tag, reader)


def test_lm_run_writes_tensorboard_and_resumes_without_repeated_steps(tmp_path, monkeypatch):
    pytest.importorskip("tensorboard")
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    from anchorlab.text.train import train_lm
    from tests.test_lm import tiny

    cfg = tiny("init.gamma=0.5")  # 5 steps an epoch, evaluations every 3 steps
    train_lm(cfg, tmp_path / "ref", show_progress=False)
    tags = ("train_loss", "lr", "grad_norm", "train_loss_prontoqa", "test_loss_stories", "test_acc_prontoqa",
            "emb_cos_prontoqa")
    _assert_events_match_metrics(tmp_path / "ref", tags)
    assert {"train_loss_stories", "train_acc_prontoqa", "emb_cos_stories_all"} <= set(_accumulator(tmp_path / "ref")
                                                                                     .Tags()["scalars"])
    # steps 6 and 9 logged, the state of step 5 kept
    _resume_after_an_interrupt(monkeypatch, lambda d: train_lm(cfg, d, show_progress=False), tmp_path / "r", step=9)
    assert rundir.read_metrics(tmp_path / "r") == rundir.read_metrics(tmp_path / "ref")
    _assert_events_match_metrics(tmp_path / "r", tags)


def test_seq2seq_run_writes_tensorboard_and_resumes_without_repeated_steps(tmp_path, monkeypatch):
    pytest.importorskip("tensorboard")
    from anchorlab.text.seq2seq_train import train_seq2seq
    from tests.test_seq2seq_train import scan_cfg

    cfg = scan_cfg("train.epochs=20", "train.eval_every=5")  # one step an epoch
    train_seq2seq(cfg, tmp_path / "ref", show_progress=False)
    tags = ("train_loss", "test_loss", "em_train", "em_test", "lr", "grad_norm")
    _assert_events_match_metrics(tmp_path / "ref", tags)
    # step 10 logged, the state of step 9 kept
    _resume_after_an_interrupt(monkeypatch, lambda d: train_seq2seq(cfg, d, show_progress=False), tmp_path / "r",
                               step=10)
    assert rundir.read_metrics(tmp_path / "r") == rundir.read_metrics(tmp_path / "ref")
    _assert_events_match_metrics(tmp_path / "r", tags)


def test_seq2seq_run_sends_its_records_to_wandb_when_asked(tmp_path, monkeypatch):
    from anchorlab.text.seq2seq_train import train_seq2seq
    from tests.test_seq2seq_train import scan_cfg

    sent = []
    monkeypatch.setenv(tracking.WANDB_ENV, "1")
    monkeypatch.setattr(tracking, "write_wandb", lambda run_dir, record: sent.append((run_dir, record)))
    train_seq2seq(scan_cfg("train.epochs=4", "train.eval_every=2"), tmp_path / "r", show_progress=False)
    assert sent == [(tmp_path / "r", r) for r in rundir.read_metrics(tmp_path / "r")]
    assert [r["step"] for _, r in sent] == [0, 2, 4]


@pytest.mark.parametrize("trainer", ["train", "train_batched"])
def test_anchor_run_resumes_without_repeated_tensorboard_steps(tmp_path, monkeypatch, trainer):
    """An anchor run (alone, or as a row of a batched group) interrupted after an evaluation that its saved state
    does not cover evaluates that epoch again on resume: TensorBoard shows each step once, as metrics.jsonl does."""
    pytest.importorskip("tensorboard")
    from anchorlab.batched import train_batched

    cfg = tiny_config(**{"task.data_size": 800, "train.epochs": 4, "train.eval_every": 1, "train.resume_every": 2})

    def run(d):
        if trainer == "train":
            train(cfg, d, show_progress=False)
        else:
            train_batched([cfg], [d], show_progress=False)

    run(tmp_path / "ref")
    steps = [r["step"] for r in rundir.read_metrics(tmp_path / "ref")]
    _resume_after_an_interrupt(monkeypatch, run, tmp_path / "r", step=steps[3])  # epoch 3 logged, epoch 2's state kept
    assert rundir.read_metrics(tmp_path / "r") == rundir.read_metrics(tmp_path / "ref")
    _assert_events_match_metrics(tmp_path / "r", ("train_loss", "seen_test_acc", "unseen_symmetric_acc", "lr"))
