from anchorlab import rundir
from anchorlab.execute import run_all
from tests.conftest import tiny_config


def test_process_pool_equals_in_process_and_reports_failures(tmp_path):
    cfgs = [tiny_config(**{"init.gamma": g, "train.epochs": 2}) for g in (0.5, 1.0)]
    serial = run_all([(c, tmp_path / "s" / c.run_id()) for c in cfgs], workers=1, show_progress=False)
    bad = tiny_config(**{"train.batch_size": 100_000})  # more than the training rows: this run fails
    jobs = [(c, tmp_path / "p" / c.run_id()) for c in cfgs] + [(bad, tmp_path / "p" / "bad")]
    pooled = run_all(jobs, workers=2, show_progress=False)
    assert [r.error is None for r in pooled] == [True, True, False]
    assert "batch_size" in pooled[2].error
    for a, b in zip(serial, pooled):
        assert rundir.read_metrics(a.run_dir) == rundir.read_metrics(b.run_dir)
