"""The Ray back-end on a local, offline cluster of 2 CPUs (start-up 5-10 s; the file takes ~45 s on 2 shared cores).

Worker deaths are injected inside the workers (:func:`_die_once`, a Ray setup hook): the run SIGKILLs its own
process after a chosen epoch, so the kill is deterministic and hits only that run."""

import json
import os
import shutil
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from anchorlab import rundir
from anchorlab.config import ConfigError
from tests.conftest import tiny_config
from tests.test_execute import SUMMARY_NUMBERS, assert_same_numbers, grid_2x2

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.slow


@pytest.fixture
def ray_env(monkeypatch):
    """Offline Ray whose files stay in a short temporary directory (its unix sockets allow ~107 chars)."""
    d = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # no token file in the home directory
    monkeypatch.setenv("RAY_TMPDIR", str(d))
    yield d
    if ray.is_initialized():
        ray.shutdown()
    shutil.rmtree(d, ignore_errors=True)


def _die_once(run_dir: Path, epoch: int, marker: Path) -> Callable[[], None]:
    """A Ray ``worker_process_setup_hook`` (it runs in every worker the cluster starts): the run in ``run_dir``
    SIGKILLs its own worker process right after reporting ``epoch``, once. ``marker`` records the kill (the
    worker's pid and the step-0 checkpoint's mtime, rewritten only by a fresh start); a retry finds it and trains
    on. The hook wraps the back-end's one call into training in the worker, so nothing in anchorlab knows about
    it; it is a closure, so Ray ships it by value and workers need not import this file."""
    run_dir = run_dir.resolve()  # what the back-end hands each task

    def hook() -> None:
        import anchorlab.backends.ray as backend

        train_reporting = backend.train_reporting

        def dying(cfg, d, put):
            def put_or_die(key, step, total, payload):
                put(key, step, total, payload)  # the epoch's progress event reaches the driver first
                at_epoch = step is not None and step == epoch * total // cfg.train.epochs  # events count steps
                if at_epoch and Path(d) == run_dir and not marker.exists():
                    step0 = rundir.checkpoint_path(d, 0).stat().st_mtime_ns
                    marker.write_text(json.dumps({"pid": os.getpid(), "step0_mtime": step0, "nice": os.nice(0)}))
                    os.kill(os.getpid(), signal.SIGKILL)

            return train_reporting(cfg, d, put_or_die)

        backend.train_reporting = dying

    return hook


def _cluster(ray_env: Path, hook: Callable[[], None]) -> dict:
    """``ray.init`` options of a local 2-CPU cluster whose workers run ``hook``."""
    return {"num_cpus": 2, "_temp_dir": str(ray_env), "runtime_env": {"worker_process_setup_hook": hook}}


def _records(run_dir: Path, name: str) -> list[dict]:
    return rundir.results(rundir.read_metrics(run_dir, name))  # when each was written aside


def test_2x2_sweep_on_a_local_ray_cluster_equals_plain_training(tmp_path, ray_env, capsys):
    from anchorlab.execute import run_all
    from anchorlab.train import train

    jobs, reference = grid_2x2(tmp_path)
    train(*jobs[0], show_progress=False)  # already DONE: must not be submitted again
    mtime = (jobs[0][1] / rundir.SUMMARY).stat().st_mtime_ns
    bad = tiny_config(**{"train.batch_size": 100_000})  # fails inside training: reported, not retried
    # its worker is killed after epoch 3, whose resume state is not saved (every 2 epochs): Ray retries the task,
    # which resumes from epoch 2, drops epoch 3's lines and trains it again
    long = jobs[1][0].replace(**{"train.epochs": 6, "train.resume_every": 2})
    plain = train(long, tmp_path / "plain", show_progress=False)  # the same run, uninterrupted
    marker = tmp_path / "killed"
    results = run_all([(long, tmp_path / "long"), *jobs, (bad, tmp_path / "bad")], backend="ray",
                      show_progress=True, max_retries=1,
                      init_options=_cluster(ray_env, _die_once(tmp_path / "long", 3, marker)))
    assert not ray.is_initialized()  # the local cluster this call started is shut down
    assert (jobs[0][1] / rundir.SUMMARY).stat().st_mtime_ns == mtime
    assert_same_numbers(results[1:5], reference)
    assert results[5].run_dir == tmp_path / "bad" and "batch_size" in results[5].error
    # the killed run was retried, resumed (step 0 not rewritten) and ends exactly as the uninterrupted one
    killed = json.loads(marker.read_text())
    assert killed["pid"] != os.getpid() and results[0].error is None
    assert killed["nice"] == os.nice(0)  # the local cluster's workers run at the driver's priority, not Ray's +15
    assert rundir.checkpoint_path(tmp_path / "long", 0).stat().st_mtime_ns == killed["step0_mtime"]
    assert {k: results[0].summary[k] for k in SUMMARY_NUMBERS} == {k: plain[k] for k in SUMMARY_NUMBERS}
    for name in (rundir.METRICS, rundir.EPOCHS):
        assert _records(tmp_path / "long", name) == _records(tmp_path / "plain", name), name
    assert [r["epoch"] for r in _records(tmp_path / "long", rundir.METRICS)] == list(range(7))
    out, err = capsys.readouterr()
    assert "5/6 runs done, 0 running, 1 failed" in err  # the aggregated bar's last label
    assert f"run {tmp_path / 'long'}: worker died; Ray started it again (attempt 2 of 2)" in out  # the retry, announced
    assert any(p.name.startswith("session_") for p in ray_env.iterdir())  # Ray's files went there


def test_a_killed_worker_without_retries_fails_its_run_and_the_sweep_exits_1(tmp_path, ray_env, capsys, monkeypatch):
    from anchorlab.cli import main
    from anchorlab.sweep import load_sweep
    from tests.test_sweep_and_demo import write_sweep

    spec = write_sweep(tmp_path, '"init.gamma" = [0.5, 1.0]', '[set]\n"train.epochs" = 3')
    out = tmp_path / "sw"
    (_, victim_cfg), (_, other_cfg) = load_sweep(spec).configs()
    victim, other = out / victim_cfg.run_id(), out / other_cfg.run_id()
    marker = tmp_path / "killed"
    # a session the caller started is used as it is: its workers run the hook (at this process's priority, not
    # Ray's default +15, which starves them on a machine where anything else runs)
    monkeypatch.setenv("RAY_worker_niceness", "0")
    ray.init(**_cluster(ray_env, _die_once(victim, 1, marker)), include_dashboard=False, log_to_driver=False)
    argv = ["sweep", spec, "--out", str(out), "--backend", "ray", "--max-retries", "0"]
    assert main(argv) == 1
    assert ray.is_initialized()
    text = capsys.readouterr().out
    failed = {ln for ln in text.splitlines() if ln.startswith("run failed:")}
    assert failed == {f"run failed: {victim}: WorkerCrashedError: The worker died unexpectedly while executing "
                      "this task. Check python-core-worker-*.log files for more information."}, text
    assert f"sweep t: 1/2 runs done in {out}; 1 failed" in text and "Traceback" not in text
    assert "started it again" not in text  # no retry to announce
    assert rundir.is_done(other) and not rundir.is_done(victim) and marker.exists()
    assert [r["epoch"] for r in _records(victim, rundir.EPOCHS)] == [1]  # its resume state (epoch 1) is kept
    # run again, the sweep trains only the failed run, which resumes from epoch 1 (the dead writer's lock taken over)
    step0 = rundir.checkpoint_path(victim, 0).stat().st_mtime_ns
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "2 runs: 1 done, 1 to train" in text and f"sweep t: 2/2 runs done in {out}" in text
    assert rundir.is_done(victim) and rundir.checkpoint_path(victim, 0).stat().st_mtime_ns == step0
    assert [r["epoch"] for r in _records(victim, rundir.EPOCHS)] == [1, 2, 3]


def test_sweep_command_passes_ray_options_and_skips_done_runs(tmp_path, ray_env, capsys, monkeypatch):
    import anchorlab.backends.ray
    from anchorlab.backends.local import run_in_process
    from anchorlab.cli import main
    from tests.test_sweep_and_demo import write_sweep

    seen = []

    def fake_run_ray(todo, progress, **options):  # records what the CLI asks of Ray, trains in-process
        seen.append((len(todo), options))
        return run_in_process(todo, progress)

    monkeypatch.setattr(anchorlab.backends.ray, "run_ray", fake_run_ray)
    spec = write_sweep(tmp_path, '"init.gamma" = [0.5, 1.0]\n"model.n_layers" = [1, 2]')
    out = tmp_path / "sw"
    assert main(["sweep", spec, "--out", str(out), "--backend", "ray", "--workers", "3", "--gpus-per-run", "0.25",
                 "--max-retries", "5"]) == 0
    assert seen == [(4, {"address": None, "num_gpus": 0.25, "max_retries": 5, "init_options": {"num_cpus": 3}})]
    assert main(["sweep", spec, "--out", str(out), "--backend", "ray", "--address", "auto"]) == 0
    assert len(seen) == 1  # every run DONE: Ray is not even called
    assert main(["sweep", spec, "--out", str(out), "--dry-run"]) == 0
    assert "4 done, 0 partial, 0 new" in capsys.readouterr().out


def test_bad_ray_options_name_the_field(tmp_path):
    from anchorlab.backends.common import SweepProgress
    from anchorlab.backends.ray import run_ray

    job = [(tiny_config(), tmp_path / "r")]
    with pytest.raises(ConfigError, match="gpus_per_run"):
        run_ray(job, SweepProgress(job, 0, 0, False), num_gpus=-0.5)
    with pytest.raises(ConfigError, match="max_retries"):
        run_ray(job, SweepProgress(job, 0, 0, False), max_retries=-1)


def test_ray_options_need_the_ray_backend(tmp_path, capsys):
    from anchorlab.cli import main
    from tests.test_sweep_and_demo import write_sweep

    spec = write_sweep(tmp_path, '"init.gamma" = [0.5]')
    assert main(["sweep", spec, "--out", str(tmp_path / "sw"), "--backend", "process", "--address", "auto"]) == 2
    assert "--address: only with --backend ray" in capsys.readouterr().err
    assert not (tmp_path / "sw").exists()
