"""p1-frontier (anchorlab.figures.frontier): a points file names, per config tried, the runs of its small and its
larger init; the figure reads each side per seed (P1's best over a seed's runs, or the last evaluation) and says
whether both reach the bar on 3/3 seeds. Run directories are written here by hand (config, metrics, summary)."""

from __future__ import annotations

import csv
import json

import pytest

from anchorlab import rundir
from anchorlab.cli import main
from anchorlab.config import ConfigError
from anchorlab.figures import FIGURES, draw
from anchorlab.figures.frontier import verdict
from tests.conftest import tiny_config


def run(d, gamma, seed, inferential, symmetric, seen_test=1.0, done=True, **dotted):
    """A run directory with one evaluation (and, done, its summary and DONE marker)."""
    cfg = tiny_config(**{"init.gamma": gamma, "seeds.init_seed": seed, **dotted})
    d.mkdir(parents=True)
    rundir.write_json(d / rundir.CONFIG, cfg.to_dict())
    last = {"step": 60, "epoch": 6, "seen_test_acc": seen_test, "unseen_inferential_acc": inferential,
            "unseen_symmetric_acc": symmetric}
    (d / rundir.METRICS).write_text(json.dumps(last) + "\n")
    if done:
        rundir.write_json(d / rundir.SUMMARY, last)
        (d / rundir.DONE).write_text("")
    return d


POINTS = '''
[[point]]
factor = "none"
config = "best over rates"
read = "best"
command = "anchorlab sweep rates.toml"
small = { gamma = 1.2, runs = ["rates"] }
large = { gamma = 0.3, runs = ["rates"] }

[[point]]
factor = "width"
config = "narrow, one rate"
read = "last"
small = { gamma = 1.2, runs = ["narrow/*"] }
large = { gamma = 0.3, runs = ["not_yet_*"] }
'''


def test_p1_frontier_reads_each_side_per_seed_and_gives_the_verdict(tmp_path, capsys):
    # point 1: γ 1.2 at two rates for each seed (the best of the two counts), γ 0.3 at one
    for s, (low, high) in {1: (0.30, 0.95), 2: (0.91, 0.20), 3: (0.93, 0.50)}.items():
        run(tmp_path / "rates" / f"a{s}", 1.2, s, low, 0.0, **{"train.lr_multiplier": 10.0})
        run(tmp_path / "rates" / f"b{s}", 1.2, s, high, 0.01, **{"train.lr_multiplier": 30.0})
        run(tmp_path / "rates" / f"c{s}", 0.3, s, 0.0, 0.97 + 0.01 * s)
    # point 2: one run per seed, small init below the bar on seed 2; its large side not run yet
    for s, inf in {1: 0.95, 2: 0.40, 3: 0.99}.items():
        run(tmp_path / "narrow" / f"r{s}", 1.2, s, inf, 0.0)
    (tmp_path / "points.toml").write_text(POINTS)
    png = draw("p1-frontier", [tmp_path / "points.toml"], tmp_path / "out")
    assert FIGURES["p1-frontier"].sources == "file" and png.stat().st_size > 10_000
    rows = list(csv.DictReader(open(png.with_suffix(".csv"))))
    got = {(r["point"], r["side"], r["seed"]): r for r in rows}
    assert [float(got[("1", "small", s)]["value"]) for s in "123"] == [0.95, 0.91, 0.93]  # the best per seed
    assert [got[("1", "small", s)]["run_id"] for s in "123"] == ["b1", "a2", "a3"]
    assert [float(got[("1", "large", s)]["value"]) for s in "123"] == [0.98, 0.99, 1.0]
    assert {r["verdict"] for r in rows if r["point"] == "1"} == {"yes"}
    first = got[("1", "small", "1")]
    assert first["command"] == "anchorlab sweep rates.toml" and first["n_runs"] == "2"
    assert [float(got[("2", "small", s)]["value"]) for s in "123"] == [0.95, 0.40, 0.99]
    assert got[("2", "large", "")]["status"] == "not run"  # the missing side: one row
    assert {r["verdict"] for r in rows if r["point"] == "2"} == {"no"}  # seed 2 already misses: no rescue
    assert "point" not in capsys.readouterr().err  # no side found runs of another γ only


def test_a_side_whose_runs_are_all_of_another_gamma_is_not_run_and_says_so(tmp_path, capsys):
    run(tmp_path / "rates" / "a1", 1.2, 1, 0.95, 0.0)
    (tmp_path / "points.toml").write_text(POINTS.split("[[point]]")[0] + "[[point]]" + POINTS.split("[[point]]")[1])
    rows = list(csv.DictReader(open(draw("p1-frontier", [tmp_path / "points.toml"], tmp_path / "out")
                                    .with_suffix(".csv"))))
    assert [r["status"] for r in rows if r["side"] == "large"] == ["not run"]
    assert "point 1.large: none of the 1 runs found has γ 0.3 (they have 1.2); drawn as not run" in \
        capsys.readouterr().err


def test_a_run_found_in_two_folders_is_read_once_from_its_finished_copy(tmp_path, capsys):
    # the same run (same id) trained on two machines: a finished copy and one stopped part way, listed first
    run(tmp_path / "cpu" / "r1", 1.2, 1, 0.20, 0.0, done=False)
    run(tmp_path / "gpu" / "r1", 1.2, 1, 0.95, 0.0)
    for s in (2, 3):
        run(tmp_path / "gpu" / f"r{s}", 1.2, s, 0.92, 0.0)
        run(tmp_path / "gpu" / f"l{s - 1}", 0.3, s - 1, 0.0, 0.99)
    run(tmp_path / "gpu" / "l3", 0.3, 3, 0.0, 0.99)
    (tmp_path / "points.toml").write_text(POINTS.split("[[point]]")[0] + "[[point]]"
                                          + POINTS.split("[[point]]")[1].replace('["rates"]', '["cpu", "gpu"]'))
    rows = list(csv.DictReader(open(draw("p1-frontier", [tmp_path / "points.toml"], tmp_path / "out")
                                    .with_suffix(".csv"))))
    small = {r["seed"]: r for r in rows if r["side"] == "small"}
    assert (small["1"]["value"], small["1"]["status"], small["1"]["n_runs"]) == ("0.95", "done", "1")
    assert {r["verdict"] for r in rows} == {"yes"}  # not "open" because of the unfinished copy
    err = capsys.readouterr().err
    assert f"run r1 is in {tmp_path / 'cpu' / 'r1'} and in {tmp_path / 'gpu' / 'r1'}; read once, from " \
        f"{tmp_path / 'gpu' / 'r1'}" in err


def test_a_seed_read_over_fewer_runs_than_runs_per_seed_is_partial_and_never_a_no(tmp_path):
    # 2 of 3 rates run: seed 2 misses the bar so far, and a rate still to run could raise its best
    for s, inf in {1: 0.95, 2: 0.40, 3: 0.93}.items():
        for k, m in enumerate((10.0, 30.0)):
            run(tmp_path / "rates" / f"r{s}{k}", 1.2, s, inf - 0.1 * k, 0.0, **{"train.lr_multiplier": m})
        run(tmp_path / "rates" / f"l{s}", 0.3, s, 0.0, 0.99)
    first = POINTS.split("[[point]]")[1]
    with3 = first.replace('small = { gamma = 1.2, runs = ["rates"] }',
                          'small = { gamma = 1.2, runs = ["rates"], runs_per_seed = 3 }')
    (tmp_path / "points.toml").write_text(f"[[point]]{with3}[[point]]{first}")
    rows = list(csv.DictReader(open(draw("p1-frontier", [tmp_path / "points.toml"], tmp_path / "out")
                                    .with_suffix(".csv"))))
    with3 = {r["seed"]: r for r in rows if r["point"] == "1" and r["side"] == "small"}
    assert [with3[s]["status"] for s in "123"] == ["partial"] * 3 and with3["2"]["n_runs"] == "2"
    assert {r["status"] for r in rows if r["point"] == "1" and r["side"] == "large"} == {"done"}  # its own count
    assert {r["verdict"] for r in rows if r["point"] == "1"} == {"open"}
    assert {r["verdict"] for r in rows if r["point"] == "2"} == {"no"}  # without it: what has run is all there is


def test_the_verdict_needs_every_seed_finished_at_the_bar_with_the_seen_pairs_fitted():
    ok = [{"value": 0.95, "seen_test": 0.97, "status": "done"}] * 3
    assert verdict(ok, ok, seeds=3, threshold=0.9) == "yes"
    assert verdict(ok[:2], ok, seeds=3, threshold=0.9) == "open"  # a seed short
    assert verdict([], ok, seeds=3, threshold=0.9) == "open"  # a side not run
    assert verdict([*ok[:2], {**ok[0], "status": "unfinished"}], ok, seeds=3, threshold=0.9) == "open"
    unfitted = [*ok[:2], {**ok[0], "seen_test": 0.6}]  # inferential at the bar but the seen pairs not learned
    assert verdict(unfitted, ok, seeds=3, threshold=0.9) == "no"
    low = [*ok[:2], {**ok[0], "value": 0.5}]
    assert verdict(ok, low, seeds=3, threshold=0.9) == "no"
    assert verdict(ok, [{**r, "seen_test": 0.1} for r in ok], seeds=3, threshold=0.9) == "yes"  # large: answer only
    assert verdict([low[2]], ok, seeds=3, threshold=0.9) == "no"  # one finished seed misses: the rest cannot help


def test_a_partial_seed_passes_once_at_the_bar_and_never_misses():
    """A seed read "best" over fewer rates than the side names: a best of more runs is no lower, so one already at
    the bar passes, and one below it may still pass; a seed whose every rate has run and missed is a "no"."""
    ok = {"value": 0.95, "seen_test": 0.97, "status": "done"}
    part, short = {**ok, "status": "partial"}, {**ok, "value": 0.85, "status": "partial"}
    assert verdict([part, part, ok], [ok] * 3, seeds=3, threshold=0.9) == "yes"
    assert verdict([part, short, ok], [ok] * 3, seeds=3, threshold=0.9) == "open"
    assert verdict([part, {**short, "status": "done"}, part], [ok] * 3, seeds=3, threshold=0.9) == "no"
    assert verdict([part, part, {**part, "seen_test": 0.5}], [ok] * 3, seeds=3, threshold=0.9) == "open"  # unfitted


def test_last_reading_takes_one_run_per_seed(tmp_path):
    run(tmp_path / "narrow" / "r1", 1.2, 1, 0.9, 0.0)
    run(tmp_path / "narrow" / "r1b", 1.2, 1, 0.2, 0.0, **{"train.lr_multiplier": 30.0})
    (tmp_path / "points.toml").write_text(POINTS.split("[[point]]")[0] + "[[point]]" + POINTS.split("[[point]]")[2])
    with pytest.raises(ConfigError, match=r"point 1\.small: read = \"last\" takes one run per seed"):
        draw("p1-frontier", [tmp_path / "points.toml"], tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text, field", [
    (POINTS.replace('read = "best"', 'read = "max"'), "point 1.read"),
    (POINTS.replace('read = "best"', 'read = "best"\nepoch = -3'), "point 1.epoch"),
    (POINTS.replace('runs = ["rates"] }', 'runs = ["rates"], runs_per_seed = 0 }'), "point 1.small.runs_per_seed"),
    (POINTS.replace('runs = ["narrow/*"] }', 'runs = ["narrow/*"], runs_per_seed = 3 }'),
     "point 2.small.runs_per_seed"),
    (POINTS.replace('small = { gamma = 1.2, runs = ["rates"] }', 'small = { gamma = "big", runs = ["rates"] }'),
     "point 1.small"),
    ('factor = "none"\n', "[[point]]"),
    ("[[point\n", "not a readable TOML points file"),
])
def test_a_bad_points_file_is_one_line_exit_2_nothing_written(tmp_path, capsys, text, field):
    (tmp_path / "points.toml").write_text(text)
    out = tmp_path / "out"
    assert main(["figure", "p1-frontier", str(tmp_path / "points.toml"), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err and "Traceback" not in err
    assert not out.exists()


def test_p1_frontier_takes_one_existing_file_and_checks_its_options(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["figure", "p1-frontier", str(tmp_path), "--out", str(out)]) == 2  # a directory, not a file
    assert "takes one file" in capsys.readouterr().err and not out.exists()
    (tmp_path / "points.toml").write_text(POINTS)
    assert main(["figure", "p1-frontier", str(tmp_path / "points.toml"), "--option", "threshold=2",
                 "--out", str(out)]) == 2
    assert "option threshold" in capsys.readouterr().err and not out.exists()


def test_the_committed_points_file_loads_and_each_command_names_something_that_exists():
    """docs/p1_frontier/points.toml (the frontier of docs/p1_frontier.md): every point is well formed and its command
    names a sweep file, registry entry or script of this repository."""
    import shlex
    from pathlib import Path

    from anchorlab.figures.frontier import load_points
    from anchorlab.reproduce import load_registry

    root = Path(__file__).resolve().parents[1]
    points = load_points(root / "docs" / "p1_frontier" / "points.toml")
    assert len(points) >= 10 and {p["factor"] for p in points} >= {"none", "width", "epochs", "data", "rate"}
    entries = set(load_registry())
    for p in points:
        words = shlex.split(p["command"])
        if words[:2] == ["anchorlab", "sweep"]:
            assert (root / words[2]).is_file(), p["command"]
        elif words[:2] == ["anchorlab", "reproduce"]:
            assert words[2] in entries, p["command"]
        else:
            assert words[0] == "bash" and (root / words[1]).is_file(), p["command"]


def test_the_small_side_also_shows_the_seen_pairs_test_accuracy_that_the_verdict_needs():
    from anchorlab.plotting.figures import plot_frontier

    rows = [{"seed": s, "value": 0.95, "seen_test": 0.5 + 0.1 * s, "status": "done"} for s in (1, 2, 3)]
    point = {"factor": "width", "config": "narrow", "read": "last", "verdict": "no",
             "small": {"gamma": 1.2, "rows": rows}, "large": {"gamma": 0.3, "rows": rows}}
    fig = plot_frontier([point], 0.9)
    xs = lambda ax: sorted(round(float(x), 2) for c in ax.collections for x, _ in c.get_offsets())
    assert xs(fig.axes[0]) == [0.6, 0.7, 0.8, 0.95, 0.95, 0.95]  # three answers and three seen-test ticks
    assert xs(fig.axes[1]) == [0.95, 0.95, 0.95]  # the large side: its answer only


def test_a_point_read_after_one_epoch_takes_that_evaluation_of_each_run(tmp_path):
    """``epoch = N``: each run read after epoch N, not at its end (a long run where a shorter protocol was read);
    a run short of N is unfinished for that reading, and one that went past N without evaluating there is one line."""
    for s, (early, late) in {1: (0.95, 0.10), 2: (0.92, 0.05), 3: (0.97, 0.50)}.items():
        d = run(tmp_path / "long" / f"r{s}", 1.2, s, late, 0.8)
        evals = [{"step": 10 * e, "epoch": e, "seen_test_acc": 1.0, "unseen_inferential_acc": i,
                  "unseen_symmetric_acc": 0.0} for e, i in ((3, 0.2), (6, early), (9, late))]
        (d / rundir.METRICS).write_text("".join(json.dumps(r) + "\n" for r in evals))
        d = run(tmp_path / "large" / f"r{s}", 0.3, s, 0.0, 0.99, done=s != 3)  # seed 3 stopped after epoch 6
        evals = [{"step": 10 * e, "epoch": e, "seen_test_acc": 1.0, "unseen_inferential_acc": 0.0,
                  "unseen_symmetric_acc": 0.99} for e in ((3, 6, 9) if s != 3 else (3, 6))]
        (d / rundir.METRICS).write_text("".join(json.dumps(r) + "\n" for r in evals))
    points = tmp_path / "points.toml"
    points.write_text('[[point]]\nfactor = "epochs"\nconfig = "long runs"\nread = "last"\nepoch = 6\n'
                      'small = { gamma = 1.2, runs = ["long/*"] }\nlarge = { gamma = 0.3, runs = ["large/*"] }\n')
    draw("p1-frontier", [points], tmp_path / "out")
    rows = list(csv.DictReader(open(tmp_path / "out" / "p1-frontier.csv")))
    small = [float(r["value"]) for r in rows if r["side"] == "small"]
    assert small == [0.95, 0.92, 0.97] and {r["read"] for r in rows} == {"last after epoch 6"}
    assert {r["verdict"] for r in rows} == {"yes"}  # the large seed 3 evaluated after epoch 6: read there, final
    points.write_text(points.read_text().replace("epoch = 6", "epoch = 9"))
    draw("p1-frontier", [points], tmp_path / "out")
    rows = list(csv.DictReader(open(tmp_path / "out" / "p1-frontier.csv")))
    assert [r["status"] for r in rows if r["side"] == "large"] == ["done", "done", "unfinished"]
    assert {r["verdict"] for r in rows} == {"no"}  # the small init lost it by epoch 9
    points.write_text(points.read_text().replace("epoch = 9", "epoch = 4"))
    with pytest.raises(ConfigError, match=r"epoch 4: run .* has no evaluation after epoch 4 \(it evaluated after "
                                          r"epochs 3, 6, 9\)"):
        draw("p1-frontier", [points], tmp_path / "out")
