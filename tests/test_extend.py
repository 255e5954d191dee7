"""A longer run seeded from a shorter one (`anchorlab train --from RUN --set train.epochs=N`) ends exactly as the
N-epoch run trained from step 0; anything else is refused with one line."""

from __future__ import annotations

import json

import pytest
import torch

from anchorlab import rundir
from anchorlab.cli import main
from anchorlab.extend import longer_config, seed_longer_run
from anchorlab.train import train
from tests.conftest import tiny_config

# evaluations and kept checkpoints every 2 epochs: the 3-epoch source evaluates and keeps epoch 3 only because
# it is its last, which the 5-epoch run does not do
# (a cosine over 10 epochs: the rate still falls at the end, so a cooldown changes it)
CADENCE = {"task.data_size": 1600, "train.eval_every": 2, "train.checkpoint_every": 2, "train.cosine_epochs": 10.0}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("extend")
    full = train(tiny_config(**CADENCE, **{"train.epochs": 5}), root / "full", show_progress=False)
    train(tiny_config(**CADENCE, **{"train.epochs": 3}), root / "short", show_progress=False)
    return root, full


def _snapshot(d):
    return {p.relative_to(d): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_the_longer_run_ends_as_the_uninterrupted_one(runs):
    root, full = runs
    before = _snapshot(root / "short")
    cfg = longer_config(root / "short", ["train.epochs=5"])
    assert cfg == tiny_config(**CADENCE, **{"train.epochs": 5})
    assert seed_longer_run(root / "short", cfg, root / "ext")
    assert not (root / "ext" / rundir.DONE).exists()  # an ordinary unfinished run until trained
    assert [r["epoch"] for r in rundir.read_metrics(root / "ext")] == [0, 2]  # epoch 3 (off the cadence) left out
    extended = train(cfg, root / "ext", show_progress=False)
    assert rundir.read_metrics(root / "ext") == rundir.read_metrics(root / "full")
    assert [r["epoch"] for r in rundir.read_metrics(root / "ext")] == [0, 2, 4, 5]
    assert rundir.results(rundir.read_metrics(root / "ext", rundir.EPOCHS)) == rundir.results(
        rundir.read_metrics(root / "full", rundir.EPOCHS))
    assert rundir.checkpoint_steps(root / "ext") == rundir.checkpoint_steps(root / "full")
    a, b = rundir.load_checkpoint(root / "ext"), rundir.load_checkpoint(root / "full")
    assert all(torch.equal(a[k], b[k]) for k in b)
    drop = ("wall_seconds_this_session", "sessions")
    assert {k: v for k, v in extended.items() if k not in drop} == {k: v for k, v in full.items() if k not in drop}
    spe = full["steps"] // 5  # the source's session (epochs 1-3) is kept; the longer run's starts at epoch 3
    assert [r["from_step"] for r in extended["sessions"]] == [0, 3 * spe]
    assert _snapshot(root / "short") == before  # the source is only read
    assert not seed_longer_run(root / "short", cfg, root / "ext")  # a second call leaves the run to resume


def test_tensorboard_drops_the_left_out_evaluation(runs):
    pytest.importorskip("tensorboard")
    from tests.test_tracking import _scalars

    root, _ = runs
    if not (root / "ext" / rundir.DONE).exists():
        test_the_longer_run_ends_as_the_uninterrupted_one(runs)
    steps = [s for s, _ in _scalars(root / "short", "seen_test_acc")]
    assert len(steps) == 3  # epochs 0, 2 and the last, 3
    assert _scalars(root / "ext", "seen_test_acc") == _scalars(root / "full", "seen_test_acc")


def test_the_cli_continues_and_resumes(runs, capsys):
    root, _ = runs
    out = root / "cli"
    args = ["train", "--from", str(root / "short"), "--set", "train.epochs=4", "--out", str(out)]
    assert main(args) == 0
    assert [r["epoch"] for r in rundir.read_metrics(out)] == [0, 2, 4]
    assert json.loads((out / rundir.CONFIG).read_text())["train"]["epochs"] == 4
    assert main(args) == 0  # finished: the same command is a no-op, not a second seeding
    assert "run " in capsys.readouterr().out


@pytest.mark.parametrize("extra, field", [
    (["--set", "train.epochs=5", "--set", "init.gamma=0.9"], "init.gamma"),
    (["--set", "train.epochs=3"], "train.epochs"),
    (["--set", "train.epochs=2"], "train.epochs"),
    (["configs/p1/cbook.toml", "--set", "train.epochs=5"], "--from"),
])
def test_anything_but_more_epochs_is_one_line_exit_2_nothing_written(runs, tmp_path, capsys, extra, field):
    root, _ = runs
    out = tmp_path / "run"
    assert main(["train", "--from", str(root / "short"), *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err and "Traceback" not in err
    assert not out.exists() and not list(tmp_path.iterdir())


def test_a_source_that_is_not_an_anchor_run_is_refused(tmp_path, capsys):
    assert main(["train", "--from", str(tmp_path / "nothing"), "--set", "train.epochs=5"]) == 2
    assert "--from" in capsys.readouterr().err
    (tmp_path / "lm").mkdir()
    (tmp_path / "lm" / rundir.CONFIG).write_text(json.dumps({"data": {}}))
    assert main(["train", "--from", str(tmp_path / "lm"), "--set", "train.epochs=5",
                 "--out", str(tmp_path / "o")]) == 2
    assert "--from" in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_a_cooldown_branch_ends_as_the_cooldown_run_from_step_0(runs, tmp_path):
    root, _ = runs
    cooled = tiny_config(**CADENCE, **{"train.epochs": 5, "train.cooldown_epochs": 2})
    direct = train(cooled, tmp_path / "direct", show_progress=False)
    cfg = longer_config(root / "short", ["train.epochs=5", "train.cooldown_epochs=2"])
    assert cfg == cooled
    assert seed_longer_run(root / "short", cfg, tmp_path / "branch")
    branched = train(cfg, tmp_path / "branch", show_progress=False)
    assert rundir.read_metrics(tmp_path / "branch") == rundir.read_metrics(tmp_path / "direct")
    lrs = {r["epoch"]: r["lr"] for r in rundir.read_metrics(tmp_path / "direct")}
    full = {r["epoch"]: r["lr"] for r in rundir.read_metrics(root / "full")}
    assert lrs[0] == full[0] and lrs[2] == full[2] and lrs[4] < full[4]  # the same until epoch 3, then cooled
    a, b = rundir.load_checkpoint(tmp_path / "branch"), rundir.load_checkpoint(tmp_path / "direct")
    assert all(torch.equal(a[k], b[k]) for k in b)
    assert branched["final_train_loss"] == direct["final_train_loss"]


@pytest.mark.parametrize("sets", [
    ["train.epochs=5", "train.cooldown_epochs=3"],  # would cool epoch 3, which the source trained
    ["train.epochs=5", "train.cosine_epochs=3"],  # a shorter cosine changes the rate from the warm-up's end
])
def test_a_schedule_that_changes_trained_steps_is_one_line_exit_2(runs, tmp_path, capsys, sets):
    root, _ = runs
    out = tmp_path / "run"
    args = ["train", "--from", str(root / "short"), *[x for s in sets for x in ("--set", s)], "--out", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "train: this schedule changes the learning rate of step" in err
    assert not out.exists()


def test_a_sparser_checkpoint_cadence_keeps_what_the_sparser_run_keeps(runs, tmp_path):
    """train.checkpoint_every may change to a cadence the source kept: the copy and the rest of the run keep
    exactly the checkpoints of that cadence's run from step 0, and every number is the same."""
    root, full = runs
    sparse = tiny_config(**{**CADENCE, "train.checkpoint_every": 4, "train.epochs": 5})
    direct = train(sparse, tmp_path / "direct", show_progress=False)
    cfg = longer_config(root / "short", ["train.epochs=5", "train.checkpoint_every=4"])
    assert cfg == sparse
    assert seed_longer_run(root / "short", cfg, tmp_path / "ext")
    assert rundir.checkpoint_steps(tmp_path / "ext") == [0]  # the source's epochs 2 and 3 are off the new cadence
    train(cfg, tmp_path / "ext", show_progress=False)
    spe = full["steps"] // 5
    assert rundir.checkpoint_steps(tmp_path / "ext") == rundir.checkpoint_steps(tmp_path / "direct") == [0, 4 * spe,
                                                                                                         5 * spe]
    assert rundir.read_metrics(tmp_path / "ext") == rundir.read_metrics(root / "full")
    a, b = rundir.load_checkpoint(tmp_path / "ext"), rundir.load_checkpoint(tmp_path / "direct")
    assert all(torch.equal(a[k], b[k]) for k in b)
    assert direct["final_train_loss"] == full["final_train_loss"]


@pytest.mark.parametrize("field, message", [
    ("train.checkpoint_every", "train.checkpoint_every: 1 keeps epoch 1"),  # the source kept epochs 0, 2 and 3
    ("train.eval_every", "train.eval_every: 1 evaluates epoch 1"),  # the source evaluated epochs 0, 2 and 3
])
def test_a_cadence_the_source_did_not_keep_or_evaluate_is_one_line_exit_2(runs, tmp_path, capsys, field, message):
    root, _ = runs
    out = tmp_path / "run"  # every epoch: the source's cadence is every 2
    args = ["train", "--from", str(root / "short"), "--set", "train.epochs=5", "--set", f"{field}=1",
            "--out", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and "multiple of 2" in err
    assert not out.exists()


def test_a_sparser_evaluation_cadence_keeps_what_the_sparser_run_evaluates(runs, tmp_path):
    """train.eval_every may change to a cadence the source evaluated: a source evaluated every epoch, continued
    with evaluations every 2, ends as the every-2 run from step 0, its curves for TensorBoard included."""
    root, full = runs
    dense = tiny_config(**{**CADENCE, "train.eval_every": 1, "train.epochs": 3})
    train(dense, tmp_path / "dense", show_progress=False)
    assert [r["epoch"] for r in rundir.read_metrics(tmp_path / "dense")] == [0, 1, 2, 3]
    cfg = longer_config(tmp_path / "dense", ["train.epochs=5", "train.eval_every=2"])
    assert cfg == tiny_config(**CADENCE, **{"train.epochs": 5})
    assert seed_longer_run(tmp_path / "dense", cfg, tmp_path / "ext")
    assert [r["epoch"] for r in rundir.read_metrics(tmp_path / "ext")] == [0, 2]
    extended = train(cfg, tmp_path / "ext", show_progress=False)
    assert rundir.read_metrics(tmp_path / "ext") == rundir.read_metrics(root / "full")
    a, b = rundir.load_checkpoint(tmp_path / "ext"), rundir.load_checkpoint(root / "full")
    assert all(torch.equal(a[k], b[k]) for k in b)
    drop = ("wall_seconds_this_session", "sessions")
    assert {k: v for k, v in extended.items() if k not in drop} == {k: v for k, v in full.items() if k not in drop}
    try:
        import tensorboard  # noqa: F401

        from tests.test_tracking import _scalars
    except ImportError:
        return
    assert _scalars(tmp_path / "ext", "seen_test_acc") == _scalars(root / "full", "seen_test_acc")


def test_resume_trains_an_unfinished_run_on_from_its_own_config(runs, tmp_path, capsys):
    """`anchorlab train --resume RUN_DIR`: the run's own config.json, into that directory, from its last epoch; it
    ends as the uninterrupted run. Execution fields may change; anything else is one line, exit 2, nothing written."""
    root, _ = runs
    cfg = longer_config(root / "short", ["train.epochs=5"])
    assert seed_longer_run(root / "short", cfg, tmp_path / "r")  # an unfinished run: trained to epoch 3 of 5
    before = _snapshot(tmp_path / "r")
    for extra, field in ((["--set", "init.gamma=0.9"], "init.gamma"), (["--out", str(tmp_path / "o")], "--out"),
                         ([str(tmp_path / "c.toml")], "give no config")):
        assert main(["train", "--resume", str(tmp_path / "r"), *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and field in err and "Traceback" not in err
    assert main(["train", "--resume", str(tmp_path / "nothing")]) == 2
    assert "--resume" in capsys.readouterr().err
    assert _snapshot(tmp_path / "r") == before and not (tmp_path / "o").exists()
    assert main(["train", "--resume", str(tmp_path / "r"), "--set", "train.threads=1"]) == 0
    assert rundir.read_metrics(tmp_path / "r") == rundir.read_metrics(root / "full")
    a, b = rundir.load_checkpoint(tmp_path / "r"), rundir.load_checkpoint(root / "full")
    assert all(torch.equal(a[k], b[k]) for k in b)
    assert main(["train", "--resume", str(tmp_path / "r")]) == 0  # finished: a no-op that prints its line
    assert f"run {tmp_path / 'r'}: " in capsys.readouterr().out
