"""The Ray back-end on a local, offline cluster of 2 CPUs (start-up 5-10 s; the file takes ~30 s on 2 shared cores)."""

import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

import pytest

from anchorlab import rundir
from anchorlab.config import ConfigError
from tests.conftest import tiny_config
from tests.test_execute import assert_same_numbers, grid_2x2

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


def _running_task_workers() -> list[int]:
    """PIDs of Ray workers now running a sweep run (Ray titles them ``ray::_run_task``) started by this
    process's cluster (descendants of this process)."""
    me, out = os.getpid(), []
    for p in Path("/proc").iterdir():
        try:
            if not p.name.isdigit() or not (p / "cmdline").read_bytes().startswith(b"ray::_run_task"):
                continue
            q = int(p.name)
            while q > 1 and q != me:
                q = int((Path("/proc") / str(q) / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if q == me:
            out.append(int(p.name))
    return out


def _kill_workers_mid_run(run_dir: Path, killed: list, stop: threading.Event) -> None:
    """Once ``run_dir``'s run is between epochs 2 and 25, SIGKILL every worker running a sweep task, once."""
    while not stop.is_set():
        try:
            epoch = rundir.read_metrics(run_dir)[-1]["epoch"]
        except (OSError, ValueError, IndexError, KeyError):
            epoch = 0
        if 2 <= epoch <= 25 and (pids := _running_task_workers()):
            killed.append((epoch, rundir.checkpoint_path(run_dir, 0).stat().st_mtime_ns))
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            return
        time.sleep(0.02)


def test_2x2_sweep_on_a_local_ray_cluster_equals_plain_training(tmp_path, ray_env, capsys):
    from anchorlab.execute import run_all
    from anchorlab.train import train

    jobs, reference = grid_2x2(tmp_path)
    train(*jobs[0], show_progress=False)  # already DONE: must not be submitted again
    mtime = (jobs[0][1] / rundir.SUMMARY).stat().st_mtime_ns
    bad = tiny_config(**{"train.batch_size": 100_000})  # fails inside training: reported, not retried
    long = jobs[1][0].replace(**{"train.epochs": 40})  # its worker is killed mid-run: retried, resumes
    killed: list = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_workers_mid_run, args=(tmp_path / "long", killed, stop))
    killer.start()
    try:
        results = run_all([(long, tmp_path / "long"), *jobs, (bad, tmp_path / "bad")], backend="ray",
                          show_progress=True, max_retries=1, init_options={"num_cpus": 2, "_temp_dir": str(ray_env)})
    finally:
        stop.set()
        killer.join()
    assert not ray.is_initialized()  # the local cluster this call started is shut down
    assert (jobs[0][1] / rundir.SUMMARY).stat().st_mtime_ns == mtime
    assert_same_numbers(results[1:5], reference)  # whether or not a kill hit them too
    assert results[5].run_dir == tmp_path / "bad" and "batch_size" in results[5].error
    # the killed run was retried and resumed from its last epoch, not restarted
    assert len(killed) == 1 and results[0].error is None and results[0].summary["epochs"] == 40
    assert rundir.checkpoint_path(tmp_path / "long", 0).stat().st_mtime_ns == killed[0][1]
    assert [r["epoch"] for r in rundir.read_metrics(tmp_path / "long")] == list(range(41))
    err = capsys.readouterr().err
    assert "5/6 runs done, 0 running, 1 failed" in err  # the aggregated bar's last label
    assert any(p.name.startswith("session_") for p in ray_env.iterdir())  # Ray's files went there


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
