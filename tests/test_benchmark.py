"""benchmarks/throughput.py runs end to end on a tiny model (not a timing test: speed is never asserted)."""

from __future__ import annotations

import json

import pytest
from benchmarks import throughput


def test_throughput_runs_and_counts_flops_exactly(tmp_path, monkeypatch):
    from anchorlab.cpu import setup_cpu

    calls = []  # the process is set up as a trainer's (threads, allocator, subnormals) before anything is timed
    monkeypatch.setattr(throughput, "setup_cpu", lambda n: (calls.append(n), setup_cpu(n)))
    out = tmp_path / "bench.json"
    sets = ["model.d_model=32", "model.d_head=8", "model.d_mlp=64", "task.data_size=2000", "train.batch_size=20"]
    r = throughput.main(["--quick", "--k", "2", "--processes", "2", "--out", str(out),
                         *[a for s in sets for a in ("--set", s)]])
    assert json.loads(out.read_text())["results"].keys() == r["results"].keys()
    names = set(r["results"])
    assert {"a_naive_dataloader", "c_trainer_pruned_fp32", "d_batched_k2_fp32", "e_processes2_pruned_fp32"} <= names
    for row in r["results"].values():
        assert row["seq_per_s"] > 0 and row["vs_naive"] > 0
    fl = r["flops_per_seq"]  # torch's flop counter and the analytic 3 x forward matmul count agree
    assert fl["train_pruned"] == pytest.approx(fl["analytic_3x_fwd_pruned"], rel=1e-9)
    assert fl["train_unpruned"] == pytest.approx(fl["analytic_3x_fwd_unpruned"], rel=1e-9)
    assert fl["train_pruned"] < fl["train_unpruned"]
    assert calls == [1]
    from anchorlab.cpu import keep_freed_memory
    assert r["machine"]["malloc"] == ("keep" if keep_freed_memory() else "system")


def test_throughput_measures_only_the_rows_asked_for():
    """--rows keeps the named rows and (a), the baseline of every ratio; no GPU here, so no (f) graph rows."""
    sets = ["model.d_model=32", "model.d_head=8", "model.d_mlp=64", "task.data_size=2000", "train.batch_size=20"]
    r = throughput.main(["--quick", "--k", "2", "--rows", "d,f", *[a for s in sets for a in ("--set", s)]])
    assert set(r["results"]) == {"a_naive_dataloader", "d_batched_k2_fp32", "d_batched_k2_bf16"}
    assert r["results"]["d_batched_k2_fp32"]["vs_naive"] > 0


def test_report_benchmark_runs(tmp_path):
    """benchmarks/report.py times `anchorlab report` and its baseline figure (speed is not asserted)."""
    from benchmarks import report

    from anchorlab.train import train
    from tests.conftest import tiny_config

    train(tiny_config(**{"task.data_size": 800, "train.epochs": 1}), tmp_path / "run", show_progress=False)
    r = report.main([str(tmp_path / "run"), "--repeats", "1", "--baseline-figures", "1",
                     "--out", str(tmp_path / "b.json")])
    assert json.loads((tmp_path / "b.json").read_text()) == r
    assert r["report"]["figures"] == 10 and r["report"]["bytes"] > 0 and r["report"]["wall_s"] > 0
    assert r["baseline_figure_s"] > 0 and r["report_in_baseline_figures"] > 0


def test_eval_cost_times_each_part_against_the_batched_step(tmp_path):
    """benchmarks/eval_cost.py times the evaluation's parts in batched steps (speed is not asserted); the share
    counts a save part by its own period: with checkpoints every epoch and evaluation every 2 epochs, a
    checkpoint counts twice per window."""
    from benchmarks import eval_cost

    sets = ["model.d_model=32", "model.d_head=8", "model.d_mlp=64", "task.data_size=2000", "train.batch_size=20",
            "train.eval_every=2", "train.checkpoint_every=1"]
    out = tmp_path / "cost.json"
    r = eval_cost.main(["--k", "2", "--steps", "2", "--repeats", "1", "--out", str(out),
                        *[a for s in sets for a in ("--set", s)]])
    assert json.loads(out.read_text()) == r
    assert set(r["seconds"]) == set(eval_cost.PARTS) and all(s > 0 for s in r["seconds"].values())
    step, sec = r["batched_step_seconds"], r["seconds"]
    assert r["steps"]["readouts"] == pytest.approx(sec["readouts"] / step)
    window = 2 * (sec["evaluate"] + sec["mechanism_scalars"] + sec["readouts"] + 2 * sec["save_checkpoint"]
                  + sec["save_resume"] * 2 / r["resume_every"])
    assert r["share"] == pytest.approx(window / (window + 2 * r["steps_per_epoch"] * step))


def test_eval_cost_refuses_bad_input_in_one_line(capsys):
    from benchmarks import eval_cost

    for argv, says in ((["--parts", "evaluate,plots"], "--parts: plots; allowed: evaluate,"),
                       (["--k", "0"], "--k: at least 1 (got 0)"),
                       (["--set", "model.bogus=1"], "model.bogus: unknown config key")):
        with pytest.raises(SystemExit) as e:
            eval_cost.main(argv)
        assert e.value.code == 2 and says in capsys.readouterr().err
