import pytest

from anchorlab import rundir
from anchorlab.backends.common import SweepProgress
from anchorlab.config import ConfigError
from anchorlab.execute import run_all
from anchorlab.sweep import load_sweep, plan
from anchorlab.train import train
from tests.conftest import tiny_config
from tests.test_sweep_and_demo import write_sweep

# The numbers a run's summary must reproduce on every back-end (wall time and paths excluded).
SUMMARY_NUMBERS = ("run_id", "steps", "train_loss", "seen_train_acc", "seen_test_acc", "unseen_inferential_acc",
                   "unseen_symmetric_acc", "best", "group_acc")


def grid_2x2(tmp_path):
    """A 2 (γ) × 2 (depth) sweep of tiny runs: its jobs and the summaries of plain in-process training."""
    spec = load_sweep(write_sweep(tmp_path, '"init.gamma" = [0.5, 1.0]\n"model.n_layers" = [1, 2]',
                                  '[set]\n"train.eval_every" = 1'))
    rows = plan(spec, tmp_path / "sweep")
    reference = {cfg.run_id(): train(cfg, tmp_path / "ref" / cfg.run_id(), show_progress=False)
                 for _, cfg, _ in rows}
    return [(cfg, d) for _, cfg, d in rows], reference


def assert_same_numbers(results, reference):
    assert len(results) == 4 and all(r.error is None for r in results), [r.error for r in results]
    for r in results:
        ref = reference[r.run_dir.name]
        assert {k: r.summary[k] for k in SUMMARY_NUMBERS} == {k: ref[k] for k in SUMMARY_NUMBERS}
        assert rundir.is_done(r.run_dir)


@pytest.mark.parametrize("backend", ["local", "process"])
def test_2x2_sweep_equals_plain_training_and_reports_failures(tmp_path, backend, capsys):
    jobs, reference = grid_2x2(tmp_path)
    (tmp_path / "bad").write_text("")  # a file where the run directory should be: this run fails
    results = run_all([*jobs[:2], (tiny_config(), tmp_path / "bad"), *jobs[2:]], workers=2, backend=backend,
                      show_progress=False)
    assert [r.run_dir for r in results] == [d for _, d in jobs[:2]] + [tmp_path / "bad"] + [d for _, d in jobs[2:]]
    assert "is a file" in results[2].error  # the failure is reported and the others go on
    out = capsys.readouterr().out
    assert f"run failed: {tmp_path / 'bad'}: --out: {tmp_path / 'bad'} is a file" in out
    assert_same_numbers(results[:2] + results[3:], reference)


def test_interrupted_sweep_resumes_without_redoing_finished_runs(tmp_path, capsys):
    jobs, reference = grid_2x2(tmp_path)
    (cfg0, d0), (cfg1, d1) = jobs[0], jobs[1]
    train(cfg0, d0, show_progress=False)  # finished before the interruption
    done_mtime = (d0 / rundir.SUMMARY).stat().st_mtime_ns

    def interrupt(epoch, _total, _status):
        raise KeyboardInterrupt  # the sweep is killed after the first epoch of the second run

    with pytest.raises(KeyboardInterrupt):
        train(cfg1, d1, progress=interrupt)
    assert not rundir.is_done(d1) and [r["epoch"] for r in rundir.read_metrics(d1)] == [0, 1]
    start_mtime = rundir.checkpoint_path(d1, 0).stat().st_mtime_ns  # written only when a run starts afresh

    results = run_all(jobs, backend="local", show_progress=False)
    assert "4 runs: 1 done, 3 to train (1 resumes from its last epoch)" in capsys.readouterr().out
    assert (d0 / rundir.SUMMARY).stat().st_mtime_ns == done_mtime  # not trained again
    assert results[0].summary == rundir.read_json(d0 / rundir.SUMMARY)
    assert rundir.checkpoint_path(d1, 0).stat().st_mtime_ns == start_mtime  # resumed, not restarted
    assert [r["epoch"] for r in rundir.read_metrics(d1)] == [0, 1, 2]
    assert_same_numbers(results, reference)  # and resuming changes no number


def test_done_run_with_another_config_fails_alone(tmp_path):
    a, b = tiny_config(**{"train.epochs": 1}), tiny_config(**{"train.epochs": 1, "init.gamma": 0.7})
    train(a, tmp_path / "x", show_progress=False)
    results = run_all([(b, tmp_path / "x"), (a, tmp_path / "y")], show_progress=False)
    assert "init.gamma" in results[0].error and results[1].error is None


def test_progress_counts_done_running_failed_and_steps():
    from anchorlab.text.seq2seq_config import load_s2s_config

    jobs = [(tiny_config(**{"train.epochs": 2}), f"r{i}") for i in range(3)]  # 2,700 rows: 42 steps an epoch
    jobs.append((load_s2s_config(None, ["seq2seq.n_train=0"]), "r3"))  # all of SCAN: only its files tell the total
    assert [c.total_steps() for c, _ in jobs] == [84, 84, 84, None]
    p = SweepProgress(jobs, n_done_before=1, steps_done_before=84, show=True)
    assert p.label() == "1/5 runs done, 0 running, 0 failed" and (p.bar.n, p.bar.total) == (84, 4 * 84)
    assert p.bar.unit == "step"
    status = {"loss": 1.0, "seen_test_acc": 0.5}
    p.event("r0", 42, 84, status)
    p.event("r1", 42, 84, status)
    assert p.label() == "1/5 runs done, 2 running, 0 failed" and p.bar.n == 2 * 84
    p.event("r3", 10, 30, status)  # the unknown total joins the bar with the run's first event
    assert (p.bar.n, p.bar.total) == (2 * 84 + 10, 4 * 84 + 30)
    p.event("r0", 84, 84, status)
    p.event("r0", None, None, None)
    p.event("r1", None, None, "Traceback ...\nValueError: boom")  # its 42 unreached steps leave the total
    p.event("r3", 20, 30, status)
    p.event("r3", None, None, None)  # ended at step 20 of 30 (an early stop): 10 steps leave the total
    assert p.label() == "3/5 runs done, 0 running, 1 failed"
    assert (p.bar.n, p.bar.total) == (84 + 84 + 42 + 20, 4 * 84 - 42 + 20)  # r2 (84 steps) still to come
    assert p.bar.format_dict["total"] == p.bar.total  # tqdm's ETA: remaining steps at the measured rate
    p.close()


def test_sweep_bar_total_is_the_runs_steps_and_it_ends_full(tmp_path, monkeypatch):
    """Runs of very different epoch lengths and of several kinds: the bar's total is the sum of the step totals
    their configs give, a resumed run starts at its resume step, and the bar ends at exactly that total."""
    from importlib.util import find_spec

    from anchorlab import execute
    from anchorlab.text.seq2seq_config import load_s2s_config
    from tests.test_seq2seq_train import TINY as S2S_TINY

    cfgs = [tiny_config(**{"task.data_size": 1600, "train.epochs": 4}),  # 1,350 rows: 21 steps an epoch
            tiny_config(**{"task.data_size": 3200, "train.epochs": 1}),  # 2,700 rows: 42
            load_s2s_config(None, [*S2S_TINY, "train.epochs=2", "train.batch_size=4"])]  # 12 + 1 SCAN lines: 4
    totals = [84, 42, 8]
    if find_spec("transformers") and find_spec("tokenizers"):
        from tests.test_lm import tiny as lm_tiny

        cfgs.append(lm_tiny("train.epochs=1"))  # 48 + 32 rows: 5 steps
        totals.append(5)
    assert [c.total_steps() for c in cfgs] == totals
    jobs = [(c, tmp_path / str(i)) for i, c in enumerate(cfgs)]

    def interrupt(_step, _total, _status):
        raise KeyboardInterrupt  # the first run stops after its first epoch (21 steps)

    with pytest.raises(KeyboardInterrupt):
        train(cfgs[0], jobs[0][1], progress=interrupt)
    bars = []

    class Recorded(SweepProgress):
        def __init__(self, *args):
            super().__init__(*args)
            bars.append((self.bar, self.bar.n, self.bar.total))

    monkeypatch.setattr(execute, "SweepProgress", Recorded)
    results = run_all(jobs, backend="local", show_progress=True)
    assert all(r.error is None for r in results), [r.error for r in results]
    bar, initial, total = bars[0]
    assert (initial, total) == (21, sum(totals))
    assert bar.n == bar.total == sum(totals) == sum(rundir.read_metrics(d)[-1]["step"] for _, d in jobs)


def test_unknown_backend_names_allowed_values():
    with pytest.raises(ConfigError, match="backend.*local, process, ray"):
        run_all([], backend="slurm")


def test_workers_exit_when_the_sweep_process_is_killed(tmp_path):
    """Killing `anchorlab sweep` (SIGKILL: no clean-up runs) must not leave pool workers training."""
    import os
    import signal
    import subprocess
    import sys
    import time

    script = (
        "from pathlib import Path\n"
        "from anchorlab.execute import run_all\n"
        "from tests.conftest import tiny_config\n"
        f"run_all([(tiny_config(**{{'train.epochs': 500}}), Path({str(tmp_path / 'r')!r}))], workers=2, "
        "show_progress=False)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=os.getcwd(), env={**os.environ, "PYTHONPATH":
                              os.pathsep.join([str(p) for p in sys.path if p])})

    def children() -> list[int]:
        path = f"/proc/{parent.pid}/task/{parent.pid}/children"
        return [int(c) for c in open(path).read().split()] if os.path.exists(path) else []

    deadline = time.time() + 60
    while not (tmp_path / "r" / "metrics.jsonl").exists() and time.time() < deadline:
        time.sleep(0.2)  # a worker is training
    workers = [c for c in children() if "spawn_main" in open(f"/proc/{c}/cmdline").read()]
    assert workers, "no pool worker found"
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.time() + 15
    while any(os.path.exists(f"/proc/{w}") and "Z" not in open(f"/proc/{w}/stat").read().split()[2]
              for w in workers) and time.time() < deadline:
        time.sleep(0.2)
    alive = [w for w in workers if os.path.exists(f"/proc/{w}") and open(f"/proc/{w}/stat").read().split()[2] != "Z"]
    assert not alive, f"workers {alive} outlived the killed sweep"


def test_local_backend_batches_same_shaped_runs_like_alone(tmp_path):
    """batch_models = 2: the two d16 runs train together, the d8 run alone; every run equals plain train()."""
    from anchorlab.backends.local import batch_groups

    cfgs = [tiny_config(**{"init.gamma": 0.5}), tiny_config(**{"model.d_model": 8}),
            tiny_config(**{"init.gamma": 0.8, "seeds.init_seed": 2, "train.lr": 2e-3})]
    jobs = [(c, tmp_path / "b" / str(i)) for i, c in enumerate(cfgs)]
    assert batch_groups(jobs, 2) == [[0, 2], [1]] and batch_groups(jobs, 1) == [[0], [2], [1]]
    got = run_all(jobs, backend="local", batch_models=2, show_progress=False)
    for (cfg, _), r in zip(jobs, got):
        alone = train(cfg, tmp_path / "a" / r.run_dir.name, show_progress=False)
        assert r.error is None and rundir.is_done(r.run_dir)
        assert r.summary["final_train_loss"] == pytest.approx(alone["final_train_loss"], rel=1e-4)
        assert r.summary["seen_train_acc"] == pytest.approx(alone["seen_train_acc"], abs=2e-3)
    with pytest.raises(ConfigError, match="batch_models"):
        run_all(jobs, backend="process", workers=2, batch_models=4)


def test_a_ray_address_where_nothing_answers_is_one_line_before_anything_is_written(tmp_path, capsys):
    """Ray retries an unreachable --address for minutes with warnings only; the sweep command checks it first."""
    import socket

    from anchorlab.cli import main

    with socket.socket() as listening:  # a port that answers: accepted
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        from anchorlab.backends.ray import check_address
        check_address(f"127.0.0.1:{listening.getsockname()[1]}")
        check_address(f"ray://127.0.0.1:{listening.getsockname()[1]}")
        free = listening.getsockname()[1]
    sweep = write_sweep(tmp_path, '"init.gamma" = [0.5]')
    for address, said in ((f"127.0.0.1:{free}", f"--address: nothing answers at 127.0.0.1:{free}"),
                          ("nonsense", "--address: 'nonsense'; allowed: 'auto', HOST:PORT")):
        assert main(["sweep", sweep, "--backend", "ray", "--address", address, "--out", str(tmp_path / "s")]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and said in err, err
    assert not (tmp_path / "s").exists()


def _report_sigint(conn) -> None:
    """Spawned target: what SIGINT does in a fresh worker before any of our code ran."""
    import signal

    conn.send(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)
    conn.close()


def test_a_worker_ignores_ctrl_c_from_its_first_instruction_and_a_second_sigterm_while_unwinding():
    """Ctrl-C reaches the whole process group: a worker still importing torch must not print a KeyboardInterrupt
    traceback, so it is started with SIGINT already ignored (a spawned Python then installs no handler). The
    parent's SIGINT handling is unchanged afterwards. After the first SIGTERM a worker ignores the next one
    (multiprocessing's exit handler sends it) instead of breaking into its unwinding."""
    import multiprocessing as mp
    import signal

    from anchorlab.backends.pool import _stop, start_shielded

    ctx = mp.get_context("spawn")
    before = signal.getsignal(signal.SIGINT)
    reader, writer = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_report_sigint, args=(writer,))
    start_shielded(proc)
    writer.close()
    assert reader.recv() is True
    proc.join(30)
    assert signal.getsignal(signal.SIGINT) is before
    term = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as stopped:
            _stop(signal.SIGTERM, None)
        assert stopped.value.code == 128 + signal.SIGTERM and signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, term)
