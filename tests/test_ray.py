"""The Ray back-end on a local, offline cluster of 2 CPUs (start-up ~5-10 s, the whole file ~20-30 s)."""

import shutil
import tempfile
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


def test_2x2_sweep_on_a_local_ray_cluster_equals_plain_training(tmp_path, ray_env, capsys):
    from anchorlab.execute import run_all

    jobs, reference = grid_2x2(tmp_path)
    train_done = jobs[0]
    from anchorlab.train import train
    train(*train_done, show_progress=False)  # already DONE: must not be submitted again
    mtime = (train_done[1] / rundir.SUMMARY).stat().st_mtime_ns
    bad = tiny_config(**{"train.batch_size": 100_000})  # fails inside training: reported, not retried
    results = run_all([*jobs, (bad, tmp_path / "bad")], backend="ray", show_progress=True, max_retries=1,
                      init_options={"num_cpus": 2, "_temp_dir": str(ray_env)})
    assert not ray.is_initialized()  # the local cluster this call started is shut down
    assert (train_done[1] / rundir.SUMMARY).stat().st_mtime_ns == mtime
    assert_same_numbers(results[:4], reference)
    assert results[4].run_dir == tmp_path / "bad" and "batch_size" in results[4].error
    err = capsys.readouterr().err
    assert "4/5 runs done, 0 running, 1 failed" in err  # the aggregated bar's last label
    assert any(p.name.startswith("session_") for p in ray_env.iterdir())  # Ray's files went there


def test_sweep_command_passes_ray_options_and_skips_done_runs(tmp_path, ray_env, capsys, monkeypatch):
    import anchorlab.ray_backend
    from anchorlab.cli import main
    from anchorlab.execute import _run_in_process
    from tests.test_sweep_and_demo import write_sweep

    seen = []

    def fake_run_ray(todo, progress, **options):  # records what the CLI asks of Ray, trains in-process
        seen.append((len(todo), options))
        return _run_in_process(todo, progress)

    monkeypatch.setattr(anchorlab.ray_backend, "run_ray", fake_run_ray)
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
    from anchorlab.execute import SweepProgress
    from anchorlab.ray_backend import run_ray

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
