"""`anchorlab status`: a row per run (coordinates, state, epochs trained, last evaluation, time left), read from
the records alone and writing nothing. Run directories written here by hand (no training)."""

from __future__ import annotations

import calendar
import json
import os
import time

from anchorlab import rundir
from anchorlab.cli import main
from anchorlab.status import format_table, status_rows
from tests.conftest import tiny_config

STARTED = "2026-11-27T10:00:00+0000"


def fake_run(d, gamma, trained, evals, done=False, epochs=4, from_step=0):
    """A run of ``epochs`` epochs of 10 steps, ``trained`` of them logged, an evaluation at each epoch of
    ``evals`` ({epoch: inferential accuracy}); one training session started at STARTED from ``from_step``."""
    d.mkdir(parents=True)
    rundir.write_json(d / rundir.CONFIG, tiny_config(**{"init.gamma": gamma, "train.epochs": epochs}).to_dict())
    (d / rundir.METRICS).write_text("".join(json.dumps(
        {"step": 10 * e, "epoch": e, "train_loss": 3.0 - e, "seen_test_acc": 0.25 * e, "unseen_inferential_acc": v,
         "unseen_symmetric_acc": 0.125}) + "\n" for e, v in evals.items()))
    (d / rundir.EPOCHS).write_text("".join(json.dumps({"epoch": e, "step": 10 * e, "train_loss": 2.0 / e}) + "\n"
                                           for e in range(1, trained + 1)))
    (d / rundir.SESSIONS).write_text(json.dumps({"from_step": from_step, "started": STARTED}) + "\n")
    if done:
        last = max(evals)
        rundir.write_json(d / rundir.SUMMARY, {"epochs": epochs, "train_loss": 0.5, "seen_test_acc": 1.0,
                                               "unseen_inferential_acc": evals[last], "unseen_symmetric_acc": 0.0})
        (d / rundir.DONE).write_text("")
    return d


def sweep_of_three(tmp_path):
    sweep = tmp_path / "sweep"
    fake_run(sweep / "aaa", 1.2, 4, {0: 0.0, 2: 0.5, 4: 0.9375}, done=True)
    fake_run(sweep / "bbb", 0.3, 3, {0: 0.0, 2: 0.25})  # stopped after epoch 3 (last evaluation at 2)
    fake_run(sweep / "ccc", 0.3, 0, {})  # started, nothing evaluated yet
    (sweep / "sweep.json").write_text(json.dumps({"runs": {"aaa": {"init.gamma": 1.2}, "bbb": {"init.gamma": 0.3},
                                                           "ccc": {"init.gamma": 0.3}}}))
    return sweep


def test_each_run_shows_its_state_epochs_trained_last_evaluation_and_loss(tmp_path):
    rows = {r["run_id"]: r for r in status_rows([sweep_of_three(tmp_path)])}
    assert rows["aaa"]["status"] == "done" and (rows["aaa"]["epoch"], rows["aaa"]["epochs"]) == (4, 4)
    assert rows["aaa"]["unseen_inferential_acc"] == 0.9375 and rows["aaa"]["init.gamma"] == 1.2
    # unfinished: trained past its last evaluation; the loss is the last epoch's, the metrics the last evaluation's
    b = rows["bbb"]
    assert (b["status"], b["epoch"], b["eval_epoch"], b["loss"]) == ("unfinished", 3, 2, 2.0 / 3)
    assert (b["unseen_inferential_acc"], b["seen_test_acc"]) == (0.25, 0.5)
    assert rows["ccc"]["status"] == "missing" and "epoch" not in rows["ccc"] and "eta_s" not in rows["bbb"]
    table = format_table(list(rows.values())).splitlines()
    assert table[0].split() == ["run", "gamma", "state", "epoch", "eval", "at", "loss", "seen", "inf", "sym"]
    assert table[1].split() == ["aaa", "1.2", "done", "4/4", "4", "0.5", "1.000", "0.938", "0.000"]
    assert table[2].split() == ["bbb", "0.3", "unfinished", "3/4", "2", "0.667", "0.500", "0.250", "0.125"]
    assert table[3].split() == ["ccc", "0.3", "missing"]
    assert table[-1] == "3 runs: 1 done, 1 unfinished, 1 missing"


def test_a_running_run_shows_the_time_left_at_its_current_sessions_pace(tmp_path):
    # resumed at step 10 (epoch 1) at 10:00; epoch 3 (step 30) logged at 10:20: 20 steps in 20 min, so the
    # 70 steps left of 10 epochs take 70 min
    d = fake_run(tmp_path / "run", 1.2, 3, {0: 0.0, 3: 0.5}, epochs=10, from_step=10)
    started = calendar.timegm(time.strptime("2026-11-27 10:00:00", "%Y-%m-%d %H:%M:%S"))  # STARTED, UTC
    os.utime(d / rundir.EPOCHS, (started + 1200, started + 1200))
    with rundir.writer_lock(d):  # a live process holds the run: it is being trained now
        (row,) = status_rows([d])
        table = format_table([row])
    assert row["status"] == "running" and abs(row["eta_s"] - 70 * 60) < 1e-6
    assert table.splitlines()[0].split()[-1] == "left" and table.splitlines()[1].split()[-1] == "1h10m"
    assert table.splitlines()[-1] == "1 run: 1 running"


def test_the_pace_leaves_out_a_pause_and_the_table_shows_the_sessions_threads(tmp_path):
    # resumed at step 10 (epoch 1) at 10:00 on 2 threads; epochs of 10 steps logged with their times, 10 min
    # apart, except that the process was stopped for an hour during epoch 4: 30 steps in 30 min count, the
    # 50 steps left of 10 epochs take 50 min (an average over the whole session would say 125)
    d = fake_run(tmp_path / "run", 1.2, 1, {0: 0.0, 3: 0.5}, epochs=10, from_step=10)
    started = calendar.timegm(time.strptime("2026-11-27 10:00:00", "%Y-%m-%d %H:%M:%S"))  # STARTED, UTC
    ends = {2: 600, 3: 1200, 4: 1200 + 3600 + 600, 5: 1200 + 3600 + 1200}
    (d / rundir.EPOCHS).write_text("".join(json.dumps({"epoch": e, "step": 10 * e, "train_loss": 1.0 / e,
                                                       "time": started + t}) + "\n" for e, t in ends.items()))
    (d / rundir.SESSIONS).write_text(json.dumps({"from_step": 10, "started": STARTED, "threads": 2}) + "\n")
    with rundir.writer_lock(d):
        (row,) = status_rows([d])
        header, line, _ = format_table([row]).splitlines()
    assert abs(row["eta_s"] - 50 * 60) < 1e-6 and row["threads"] == 2
    assert header.split()[1:3] == ["state", "threads"] and line.split()[1:4] == ["running", "2", "5/10"]
    assert line.split()[-1] == "50m"


def test_loose_runs_are_told_apart_by_the_config_fields_in_which_they_differ(tmp_path):
    fake_run(tmp_path / "runs" / "small", 1.2, 2, {0: 0.0, 2: 0.5})
    fake_run(tmp_path / "runs" / "large", 0.3, 2, {0: 0.0, 2: 0.0})
    header, *rows = format_table(status_rows([tmp_path / "runs"])).splitlines()[:-1]
    assert header.split()[:3] == ["run", "gamma", "state"]
    assert sorted(r.split()[:2] for r in rows) == [["large", "0.3"], ["small", "1.2"]]


def test_the_command_prints_the_table_and_writes_nothing(tmp_path, capsys):
    sweep = sweep_of_three(tmp_path)
    before = sorted((p, p.stat().st_mtime) for p in sweep.rglob("*"))
    assert main(["status", str(sweep)]) == 0
    assert "3 runs: 1 done, 1 unfinished, 1 missing" in capsys.readouterr().out
    assert sorted((p, p.stat().st_mtime) for p in sweep.rglob("*")) == before


def test_json_gives_the_rows_one_per_line(tmp_path, capsys):
    sweep = sweep_of_three(tmp_path)
    assert main(["status", str(sweep), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows == json.loads(json.dumps(status_rows([sweep])))
    assert [(r["run_id"], r["status"]) for r in rows] == [("aaa", "done"), ("bbb", "unfinished"), ("ccc", "missing")]


def test_a_source_that_is_not_a_directory_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["status", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "source" in err[0] and "nowhere" in err[0]
    (tmp_path / "empty").mkdir()
    assert main(["status", str(tmp_path / "empty")]) == 2
    assert "holds no" in capsys.readouterr().err


def test_the_pace_keeps_evaluation_epochs_and_leaves_out_a_pause_shorter_than_three_epochs():
    """Paper-config epochs on one CPU thread: 7.4 min, 10 min with an evaluation (every 3rd), and two epochs
    stretched to 24 and 28 min by a 10-17 min pause (the test suite run with the trainers stopped). The pace is
    that of the 8 undisturbed epochs: 3 evaluations' worth of slower epochs counted, the two pauses not."""
    from anchorlab.status import _pace

    minutes = [7.3, 7.5, 10.1, 7.3, 7.4, 10.0, 7.4, 28.4, 10.1, 24.1]
    points, t = [(0.0, 0)], 0.0
    for i, m in enumerate(minutes, 1):
        t += 60 * m
        points.append((t, 370 * i))
    kept = [m for m in minutes if m < 20]
    assert abs(_pace(points) - 370 * len(kept) / (60 * sum(kept))) < 1e-12


def test_time_left_under_a_minute_is_not_zero():
    from anchorlab.status import _duration

    assert (_duration(20), _duration(45 * 60), _duration(3 * 3600 + 7 * 60)) == ("<1m", "45m", "3h07m")
