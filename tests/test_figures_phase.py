"""Figures from logged metrics (anchorlab.figures.phase, .gamma, .curves): p1-curves draws from run directories
written here by hand (config.json + metrics.jsonl with known values, no training, no checkpoints)
and its CSV holds those values."""

from __future__ import annotations

import csv
import json

import pytest

from anchorlab import rundir
from anchorlab.config import ConfigError
from anchorlab.figures import FIGURES, draw
from tests.conftest import tiny_config

# (epoch, step, inferential, symmetric, seen test, inferential _xel) per evaluation, two runs
CURVES = {
    (0.8, 1): [(0, 0, 0.01, 0.02, 0.03, 0.011), (3, 30, 0.40, 0.05, 0.60, 0.41), (6, 60, 0.93, 0.01, 0.97, 0.94)],
    (0.5, 1): [(0, 0, 0.02, 0.01, 0.04, 0.021), (3, 30, 0.00, 0.75, 0.95, 0.0)],  # unfinished: no DONE
}


def fake_run(d, gamma, seed, evals, done, **dotted):
    """A run directory holding what training would have written for these evaluations (nothing else)."""
    cfg = tiny_config(**{"init.gamma": gamma, "seeds.init_seed": seed, **dotted})
    d.mkdir(parents=True)
    rundir.write_json(d / rundir.CONFIG, cfg.to_dict())
    (d / rundir.METRICS).write_text("".join(json.dumps(
        {"step": s, "epoch": e, "train_loss": 1.0, "seen_test_acc": t, "unseen_inferential_acc": i,
         "unseen_symmetric_acc": y, "unseen_inferential_acc_xel": ix, "unseen_symmetric_acc_xel": y}) + "\n"
        for e, s, i, y, t, ix in evals))
    if done:
        (d / rundir.DONE).write_text("")
    return d


def test_p1_curves_draws_the_logged_values_of_each_run(tmp_path):
    runs = [fake_run(tmp_path / f"g{g}_s{s}", g, s, ev, done=(g == 0.8)) for (g, s), ev in CURVES.items()]
    png = draw("p1-curves", runs, tmp_path / "out")
    assert FIGURES["p1-curves"].sources == "runs"  # registered (draw loads every recipe module)
    assert png == tmp_path / "out" / "p1-curves.png" and png.stat().st_size > 10_000
    rows = list(csv.DictReader(open(png.with_suffix(".csv"))))
    # one row per evaluation, runs ordered by γ (the middle init's panel first), each run's epochs in order
    assert [(float(r["gamma"]), int(r["epoch"])) for r in rows] == [(0.5, 0), (0.5, 3), (0.8, 0), (0.8, 3), (0.8, 6)]
    for r in rows:
        e, s, i, y, t, ix = next(ev for ev in CURVES[(float(r["gamma"]), 1)] if ev[0] == int(r["epoch"]))
        assert (int(r["step"]), float(r["inferential"]), float(r["symmetric"]), float(r["seen_test"]),
                float(r["inferential_xel"])) == (s, i, y, t, ix)
        assert r["seed"] == "1" and r["pair"] == "(4,3)" and r["d_model"] == "16"
        assert float(r["std_W_Q"]) == pytest.approx(16 ** -float(r["gamma"]))
    assert {r["gamma"]: r["status"] for r in rows} == {"0.5": "unfinished", "0.8": "done"}


def test_p1_curves_takes_a_sweep_directory_and_refuses_runs_without_evaluations(tmp_path):
    fake_run(tmp_path / "sw" / "a", 0.8, 2, CURVES[(0.8, 1)], done=True)
    (tmp_path / "sw" / "sweep.json").write_text(json.dumps({"runs": {"a": {"init.gamma": 0.8, "seed": 2}}}))
    rows = list(csv.DictReader(open(draw("p1-curves", [tmp_path / "sw"], tmp_path / "o").with_suffix(".csv"))))
    assert [r["seed"] for r in rows] == ["2"] * 3
    other = fake_run(tmp_path / "other" / "a", 0.8, 3, CURVES[(0.8, 1)][:2], done=False)  # same name, another run
    rows = list(csv.DictReader(open(draw("p1-curves", [tmp_path / "sw", other], tmp_path / "o").with_suffix(".csv"))))
    assert [(r["seed"], r["epoch"]) for r in rows] == [("2", "0"), ("2", "3"), ("2", "6"), ("3", "0"), ("3", "3")]
    empty = fake_run(tmp_path / "empty", 0.8, 1, [], done=False)
    with pytest.raises(ConfigError, match="p1-curves: needs composite-task"):
        draw("p1-curves", [empty], tmp_path / "o2")


def test_p1_curves_and_gamma_name_what_else_differs_between_runs_of_one_gamma_and_seed(tmp_path):
    """Two runs of one γ and seed at two weight decays are two lines (bars) labelled by it (the CSV carries it),
    while the fields that leave the arithmetic alone (threads, evaluation cadence) and the seed label nothing."""
    ev = CURVES[(0.8, 1)]
    runs = [fake_run(tmp_path / "a", 1.2, 1, ev, done=True, **{"train.weight_decay": 0.01, "train.threads": 1}),
            fake_run(tmp_path / "b", 1.2, 1, ev, done=True, **{"train.weight_decay": 1.0, "train.eval_every": 1}),
            fake_run(tmp_path / "c", 1.2, 2, ev, done=True, **{"train.weight_decay": 1.0})]
    rows = list(csv.DictReader(open(draw("p1-curves", runs, tmp_path / "o").with_suffix(".csv"))))
    assert [(r["run_id"], r["seed"], r["varied"], float(r["train.weight_decay"])) for r in rows[::3]] == [
        ("a", "1", "weight_decay 0.01", 0.01), ("b", "1", "weight_decay 1", 1.0), ("c", "2", "weight_decay 1", 1.0)]
    assert not any(k.startswith(("train.threads", "train.eval_every", "seeds.")) for k in rows[0])
    same = list(csv.DictReader(open(draw("p1-curves", runs[1:2], tmp_path / "p").with_suffix(".csv"))))
    assert {r["varied"] for r in same} == {""}  # one run: nothing to tell apart
    # p1-gamma: a bar per weight decay (the CSV names it); the width is not named by its bars, so it is varied
    gamma = list(csv.DictReader(open(draw("p1-gamma", runs, tmp_path / "g").with_suffix(".csv"))))
    assert [(r["run_id"], r["varied"]) for r in gamma] == [("a", "weight_decay 0.01"), ("b", "weight_decay 1"),
                                                            ("c", "weight_decay 1")]
    wide = fake_run(tmp_path / "w", 1.2, 1, ev, done=True, **{"model.d_model": 32, "train.weight_decay": 1.0})
    gamma = list(csv.DictReader(open(draw("p1-gamma", [runs[1], wide], tmp_path / "h").with_suffix(".csv"))))
    assert [r["varied"] for r in gamma] == ["d_model 16", "d_model 32"]


def test_p1_gamma_gives_an_unfinished_run_its_init_std(tmp_path):
    from anchorlab.figures.gamma import gamma_rows

    runs = [fake_run(tmp_path / f"g{g}_s{s}", g, s, ev, done=False) for (g, s), ev in CURVES.items()]
    rows = gamma_rows(runs)
    assert [r["status"] for r in rows] == ["unfinished"] * 2
    assert [r["std"] for r in rows] == pytest.approx([16 ** -0.5, 16 ** -0.8])  # d_model 16, d_in of W_Q


def test_p1_gamma_best_of_seed_is_p1s_best_over_each_seeds_runs(tmp_path):
    """With best_of_seed, the runs of one (γ, seed), e.g. at several learning rates, make one dot: each accuracy
    the highest over them, taken separately (P1 §4), and the CSV names the run that gave it."""
    ev = lambda i, y, t: [(0, 0, 0.0, 0.0, 0.0, 0.0), (6, 60, i, y, t, i)]
    runs = [fake_run(tmp_path / "a", 1.2, 1, ev(0.30, 0.40, 0.99), done=True, **{"train.lr_multiplier": 10.0}),
            fake_run(tmp_path / "b", 1.2, 1, ev(0.92, 0.00, 0.95), done=True, **{"train.lr_multiplier": 20.0}),
            fake_run(tmp_path / "c", 1.2, 2, ev(0.50, 0.10, 0.90), done=True),
            fake_run(tmp_path / "d", 0.3, 1, ev(0.00, 0.99, 1.00), done=True)]
    each = list(csv.DictReader(open(draw("p1-gamma", runs, tmp_path / "o1").with_suffix(".csv"))))
    assert len(each) == 4  # without the option: one dot per run
    png = draw("p1-gamma", runs, tmp_path / "o2", best_of_seed=True)
    rows = {(float(r["gamma"]), int(r["seed"])): r for r in csv.DictReader(open(png.with_suffix(".csv")))}
    assert sorted(rows) == [(0.3, 1), (1.2, 1), (1.2, 2)]
    best = rows[(1.2, 1)]
    assert (float(best["inferential"]), float(best["symmetric"]), float(best["seen_test"])) == (0.92, 0.40, 0.99)
    assert (best["n_runs"], best["best_inferential_run"], best["best_symmetric_run"]) == ("2", "b", "a")
    # the seen test of the run that gave each best, not the seed's best seen test (0.99 is run a's)
    assert (float(best["seen_test_best_inferential"]), float(best["seen_test_best_symmetric"])) == (0.95, 0.99)
    # and which rate each best came from (the varied config field of that run)
    assert (best["best_inferential_at"], best["best_symmetric_at"]) == ("lr_multiplier 20", "lr_multiplier 10")
    assert rows[(1.2, 2)]["n_runs"] == "1" and float(rows[(1.2, 2)]["inferential"]) == 0.5
    with pytest.raises(ConfigError, match=r"option best_of_seed: true or false, not 'maybe'"):  # and nothing drawn
        draw("p1-gamma", runs, tmp_path / "o3", best_of_seed="maybe")
    assert not (tmp_path / "o3").exists()


def test_a_run_found_under_two_folders_is_drawn_once_from_its_further_copy(tmp_path, capsys):
    """The same run (one id) trained on two machines, both folders given: one dot, from the copy that got further
    (here the one with more evaluations), and a line on stderr; a dot per copy would count the seed twice."""
    evals = CURVES[(0.8, 1)]
    fake_run(tmp_path / "cpu" / "r1", 0.8, 1, evals[:2], done=False)
    fake_run(tmp_path / "gpu" / "r1", 0.8, 1, evals, done=False)
    fake_run(tmp_path / "gpu" / "r2", 0.5, 1, CURVES[(0.5, 1)], done=False)
    png = draw("p1-gamma", [tmp_path / "cpu", tmp_path / "gpu"], tmp_path / "out")
    rows = list(csv.DictReader(open(png.with_suffix(".csv"))))
    assert sorted((r["run_id"], float(r["inferential"])) for r in rows) == [("r1", 0.93), ("r2", 0.0)]
    assert f"run r1 is in {tmp_path / 'cpu' / 'r1'} and in {tmp_path / 'gpu' / 'r1'}; read once, from " \
        f"{tmp_path / 'gpu' / 'r1'}" in capsys.readouterr().err


def test_p1_curves_tells_a_cooled_down_branch_from_its_source(tmp_path, monkeypatch):
    from anchorlab.figures import curves as recipes

    peak = fake_run(tmp_path / "peak", 0.8, 1, CURVES[(0.8, 1)], done=True, **{"train.epochs": 6})
    cooled = fake_run(tmp_path / "cool", 0.8, 1, CURVES[(0.8, 1)], done=True,
                      **{"train.epochs": 6, "train.cooldown_epochs": 2})
    seen = {}
    monkeypatch.setattr(recipes, "plot_probe_curves", lambda curves, **kw: seen.setdefault("c", curves) and None)
    monkeypatch.setattr(recipes, "save_figure", lambda fig, rows, out, name: seen.setdefault("rows", rows))
    recipes.p1_curves([peak, cooled], tmp_path / "o")
    assert [c["label"] for c in seen["c"]] == ["seed 1", "seed 1, cooled from epoch 4"]  # two markers, one panel
    assert len({c["group"] for c in seen["c"]}) == 1
    assert {r["cooldown_from"] for r in seen["rows"]} == {None, 4}


def test_p1_curves_tells_apart_trajectories_of_one_config_by_where_they_trained(tmp_path, monkeypatch):
    """Runs of one config trained on the CPU and on a GPU in batched groups round differently: each is its own
    trajectory, labelled with where it trained (sessions.jsonl), and two of one place with their directory's
    name; a run alone of its seed in its panel keeps the plain label. A graphed step (train.cuda_graph) is bit
    for bit the eager one, so it does not tell runs apart."""
    from anchorlab.figures import curves as recipes

    def sessions(d, *rows):
        (d / rundir.SESSIONS).write_text("".join(json.dumps(r) + "\n" for r in rows))
        return d

    six = {"device": "cuda", "device_name": "NVIDIA H200", "batch_group": list("abcdef")}
    cpu = sessions(fake_run(tmp_path / "cpu", 1.2, 1, CURVES[(0.8, 1)], done=False), {"device": "cpu"})
    gpu = sessions(fake_run(tmp_path / "gpu", 1.2, 1, CURVES[(0.8, 1)], done=False, **{"train.cuda_graph": True}),
                   {"device": "cpu"}, six)  # its last GPU session names it
    gpu2 = sessions(fake_run(tmp_path / "gpu2", 1.2, 1, CURVES[(0.8, 1)], done=False), six)
    alone = sessions(fake_run(tmp_path / "alone", 0.3, 1, CURVES[(0.5, 1)], done=False),
                     {"device": "cuda", "device_name": "NVIDIA H100", "batch_group": ["x"]})
    seen = {}
    monkeypatch.setattr(recipes, "plot_probe_curves", lambda curves, **kw: seen.setdefault("c", curves) and None)
    monkeypatch.setattr(recipes, "save_figure", lambda fig, rows, out, name: seen.setdefault("rows", rows))
    recipes.p1_curves([cpu, gpu, gpu2, alone], tmp_path / "o")
    assert sorted(c["label"] for c in seen["c"]) == ["seed 1", "seed 1, CPU", "seed 1, H200, group of 6, gpu",
                                                     "seed 1, H200, group of 6, gpu2"]
    assert {r["run_id"]: r["trained_on"] for r in seen["rows"]} == {
        "cpu": "CPU", "gpu": "H200, group of 6", "gpu2": "H200, group of 6", "alone": "H100"}
    assert rundir.trained_on(tmp_path / "nowhere") == ""  # no sessions logged


def _png_width(path):
    import struct

    return struct.unpack(">I", path.read_bytes()[16:20])[0]  # the IHDR width of a PNG


def _epochs(d, losses):
    (d / rundir.EPOCHS).write_text("".join(json.dumps({"epoch": e + 1, "step": 10 * (e + 1), "train_loss": x}) + "\n"
                                           for e, x in enumerate(losses)))


def test_p1_fit_speed_places_each_run_at_its_first_epoch_below_the_threshold(tmp_path):
    fast = fake_run(tmp_path / "fast", 0.5, 1, CURVES[(0.5, 1)], done=True)
    _epochs(fast, [4.7, 0.9, 0.01])                      # below 1.0 at epoch 2
    slow = fake_run(tmp_path / "slow", 0.8, 1, CURVES[(0.8, 1)], done=True)
    _epochs(slow, [4.7, 4.0, 3.0, 1.5, 0.99, 0.2])       # below 1.0 at epoch 5; below 2.0 at epoch 4
    mech = {"wq0_n_groups": 5.0, "stable_rank/blocks.0.attn.W_Q": 1.1, "embed_cov_top_share": 0.13}
    recs = [{**r, **(mech if r["epoch"] == 6 else {})} for r in rundir.read_metrics(slow)]
    (slow / rundir.METRICS).write_text("".join(json.dumps(r) + "\n" for r in recs))  # as training logs them
    stuck = fake_run(tmp_path / "stuck", 0.8, 2, CURVES[(0.8, 1)], done=True)
    _epochs(stuck, [4.7, 4.6, 4.5])                      # finished on the plateau: "not fitted", kept
    early = fake_run(tmp_path / "early", 0.8, 3, CURVES[(0.8, 1)][:1], done=False)
    _epochs(early, [4.7])                                # still training on the plateau: nothing to place, left out
    png = draw("p1-fit-speed", [fast, slow, stuck, early], tmp_path / "out")
    rows = {r["run_id"]: r for r in csv.DictReader(open(png.with_suffix(".csv")))}
    assert set(rows) == {"fast", "slow", "stuck"} and png.stat().st_size > 10_000
    assert (rows["fast"]["fit_epoch"], rows["slow"]["fit_epoch"], rows["stuck"]["fit_epoch"]) == ("2", "5", "")
    assert rows["stuck"]["last_trained_epoch"] == "3"
    # the outcome is the last evaluation's; the best inferential is over all evaluations
    assert (float(rows["fast"]["symmetric"]), float(rows["slow"]["inferential"])) == (0.75, 0.93)
    assert float(rows["fast"]["best_inferential"]) == 0.02
    assert rows["slow"]["reference_parts"] == "" and rows["slow"]["gamma"] == "0.8"
    # the early readout: inferential over seen-pair test accuracy at the evaluation of epoch 6 (default)
    assert (float(rows["slow"]["early_inferential"]), float(rows["slow"]["early_seen_test"])) == (0.93, 0.97)
    assert float(rows["slow"]["early_ratio"]) == pytest.approx(0.93 / 0.97)
    assert rows["fast"]["early_ratio"] == "" and rows["fast"]["early_epoch"] == "6"  # not evaluated at epoch 6
    # with the mechanism scalars logged at that evaluation (none where not logged)
    assert [float(rows["slow"][k]) for k in ("early_wq0_groups", "early_wq0_stable_rank", "early_embed_top_share")] \
        == [5.0, 1.1, 0.13]
    assert rows["fast"]["early_wq0_groups"] == rows["stuck"]["early_embed_top_share"] == ""
    # a fourth panel where a run has the embedding share: the figure is wider than the three-panel one below
    loose = draw("p1-fit-speed", [slow], tmp_path / "o2", loss_threshold=2.0, early_epoch=3)
    row = next(csv.DictReader(open(loose.with_suffix(".csv"))))
    assert row["early_embed_top_share"] == ""  # nothing logged at epoch 3: three panels
    assert _png_width(png) > _png_width(loose) * 1.2
    assert row["fit_epoch"] == "4" and float(row["early_ratio"]) == pytest.approx(0.40 / 0.60)
    for bad in ({"early_epoch": 0}, {"early_epoch": "x"}, {"loss_threshold": -1.0}, {"loss_threshold": "a"}):
        with pytest.raises(ConfigError, match="p1-fit-speed: option"):
            draw("p1-fit-speed", [slow], tmp_path / "o4", **bad)
    with pytest.raises(ConfigError, match="p1-fit-speed: needs composite-task"):
        draw("p1-fit-speed", [early], tmp_path / "o3")


def test_p1_condensation_draws_the_logged_mechanism_scalars_with_each_runs_answer(tmp_path):
    """Per evaluation, the three logged scalars in the CSV; each run's answer at its last evaluation labels all
    its rows; runs that logged no scalar are left out, and none at all is refused."""
    small = fake_run(tmp_path / "small", 0.8, 1, CURVES[(0.8, 1)], done=True)       # ends inferential 0.93
    middle = fake_run(tmp_path / "middle", 0.5, 2, CURVES[(0.5, 1)], done=False)    # ends symmetric 0.75
    bare = fake_run(tmp_path / "bare", 0.8, 3, CURVES[(0.8, 1)], done=True)         # logged no scalar
    scalars = {small: [(200.0, 14.0, 0.03), (3.0, 1.2, 0.2), (2.0, 1.01, 0.6)], middle: [(200.0, 15.0, 0.03), None]}
    for d, per_eval in scalars.items():
        recs = [{**r, **({} if s is None else dict(zip(("wq0_n_groups", "stable_rank/blocks.0.attn.W_Q",
                                                        "embed_cov_top_share"), s)))}
                for r, s in zip(rundir.read_metrics(d), per_eval)]
        (d / rundir.METRICS).write_text("".join(json.dumps(r) + "\n" for r in recs))
    png = draw("p1-condensation", [small, middle, bare], tmp_path / "out")
    assert FIGURES["p1-condensation"].sources == "runs" and png.stat().st_size > 10_000
    rows = list(csv.DictReader(open(png.with_suffix(".csv"))))
    assert {r["run_id"] for r in rows} == {"small", "middle"}
    got = {(r["run_id"], int(r["epoch"])): r for r in rows}
    assert [float(got[("small", e)]["wq0_groups"]) for e in (0, 3, 6)] == [200.0, 3.0, 2.0]
    assert [float(got[("small", e)]["wq0_stable_rank"]) for e in (0, 3, 6)] == [14.0, 1.2, 1.01]
    assert float(got[("small", 6)]["embed_top_share"]) == 0.6 and got[("middle", 3)]["embed_top_share"] == ""
    assert {r["run_id"]: r["last_answer"] for r in rows} == {"small": "inferential", "middle": "symmetric"}
    assert rows[0]["flow_symmetric"] == rows[0]["order_separation"] == ""  # not logged: three panels
    with pytest.raises(ConfigError, match="p1-condensation: needs composite-task"):
        draw("p1-condensation", [bare], tmp_path / "o2")
    # runs that logged the readouts too (2-layer runs since 2026-11-28): two more panels, their values in the CSV
    recs = [{**r, "flow_symmetric": 0.3 + 0.1 * i, "order_separation": 0.2 / (i + 1)}
            for i, r in enumerate(rundir.read_metrics(small))]
    (small / rundir.METRICS).write_text("".join(json.dumps(r) + "\n" for r in recs))
    wide = draw("p1-condensation", [small, middle], tmp_path / "o3")
    got = {(r["run_id"], int(r["epoch"])): r for r in csv.DictReader(open(wide.with_suffix(".csv")))}
    assert float(got[("small", 6)]["flow_symmetric"]) == pytest.approx(0.5)
    assert got[("middle", 3)]["flow_symmetric"] == ""
    assert _png_width(wide) > _png_width(png) * 1.4


def test_the_keys_option_reads_one_key_type_of_the_held_out_pair(tmp_path):
    """keys=train draws the train-type-key values (what the authors' log and figure code read) instead of the
    pooled ones, says so in the CSV; a bad value is one line naming the option, nothing drawn."""
    runs = [fake_run(tmp_path / f"g{g}_s{s}", g, s, ev, done=(g == 0.8)) for (g, s), ev in CURVES.items()]
    rows = list(csv.DictReader(open(draw("p1-curves", runs, tmp_path / "c", keys="train").with_suffix(".csv"))))
    assert [float(r["inferential"]) for r in rows] == [0.021, 0.0, 0.011, 0.41, 0.94]  # the _xel column
    assert {r["keys"] for r in rows} == {"train"}
    rows = list(csv.DictReader(open(draw("p1-gamma", runs, tmp_path / "g", keys="train").with_suffix(".csv"))))
    assert [(float(r["gamma"]), float(r["inferential"]), r["keys"]) for r in rows] == [(0.5, 0.0, "train"),
                                                                                       (0.8, 0.94, "train")]
    pooled = list(csv.DictReader(open(draw("p1-gamma", runs, tmp_path / "p").with_suffix(".csv"))))
    assert [float(r["inferential"]) for r in pooled] == [0.0, 0.93] and {r["keys"] for r in pooled} == {"both"}
    for name in ("p1-curves", "p1-gamma", "p1-fit-speed"):
        with pytest.raises(ConfigError, match=rf"figure {name}: option keys: one of both .* got 'xel'"):
            draw(name, runs, tmp_path / "bad", keys="xel")
    assert not (tmp_path / "bad").exists()
    # runs that log no test-type values (as these) give p1-gamma nothing to draw: it says why
    with pytest.raises(ConfigError, match=r"per key type \(keys=test\)"):
        draw("p1-gamma", runs, tmp_path / "bad", keys="test")


def test_fig2_best_epoch_on_one_key_type_reads_each_runs_history(tmp_path):
    """P1 Fig. 2 over γ with keys=train: the final values come from the summaries; with --best-epoch, the best
    train-type-key value over each run's evaluations (summaries record the best of the pooled values only)."""
    sw = tmp_path / "sw"
    middle = [(0, 0, 0.02, 0.01, 0.04, 0.021), (3, 30, 0.10, 0.75, 0.95, 0.30), (6, 60, 0.05, 0.9, 0.97, 0.2)]
    evals = {"a": (0.5, middle), "b": (0.8, CURVES[(0.8, 1)])}
    for name, (gamma, ev) in evals.items():
        d = fake_run(sw / name, gamma, 1, ev, done=True)
        last = ev[-1]
        rundir.write_json(d / rundir.SUMMARY, {
            "unseen_inferential_acc": last[2], "unseen_symmetric_acc": last[3], "seen_test_acc": last[4],
            "unseen_inferential_acc_xel": last[5], "unseen_symmetric_acc_xel": last[3],
            "best": {"unseen_inferential_acc": max(e[2] for e in ev), "unseen_symmetric_acc": max(e[3] for e in ev),
                     "seen_test_acc": max(e[4] for e in ev)}})
    points = {n: {"init.gamma": g, "seed": 1} for n, (g, _) in evals.items()}
    (sw / "sweep.json").write_text(json.dumps({"axes": {"init.gamma": [0.5, 0.8]}, "runs": points}))

    def table(**options):
        png = draw("p1-fig2", [sw], tmp_path / str(len(options)) / "_".join(map(str, options.values())), **options)
        return {float(r["init.gamma"]): float(r["inferential"]) for r in csv.DictReader(open(png.with_suffix(".csv")))}

    assert table(keys="train") == {0.5: 0.2, 0.8: 0.94}
    assert table(keys="train", use_best_epoch=True) == {0.5: 0.30, 0.8: 0.94}  # 0.30 at epoch 3, from metrics.jsonl
    assert table(use_best_epoch=True) == {0.5: 0.10, 0.8: 0.93}  # pooled: the summaries' best
    assert table() == {0.5: 0.05, 0.8: 0.93}


def test_p1_gamma_best_epoch_and_keys_give_the_authors_reading(tmp_path):
    """best_of_seed + keys=train + --best-epoch: per seed the best over its runs and over their evaluations, on the
    train-type keys (the authors' plotting code); each mapping taken separately."""
    runs = [fake_run(tmp_path / "a", 1.2, 1, CURVES[(0.8, 1)], done=True),  # _xel inferential 0.011, 0.41, 0.94
            fake_run(tmp_path / "b", 1.2, 1, [(0, 0, 0.0, 0.0, 0.0, 0.0), (3, 30, 0.5, 0.3, 0.9, 0.96),
                                              (6, 60, 0.2, 0.1, 0.99, 0.25)], done=True)]
    png = draw("p1-gamma", runs, tmp_path / "o", best_of_seed=True, keys="train", use_best_epoch=True)
    (row,) = list(csv.DictReader(open(png.with_suffix(".csv"))))
    assert (float(row["inferential"]), float(row["symmetric"]), float(row["seen_test"])) == (0.96, 0.3, 0.99)
    assert (row["best_inferential_run"], row["keys"], row["evaluation"], row["n_runs"]) == ("b", "train", "best", "2")
    last = list(csv.DictReader(open(draw("p1-gamma", runs, tmp_path / "l", best_of_seed=True,
                                         keys="train").with_suffix(".csv"))))
    assert float(last[0]["inferential"]) == 0.94 and last[0]["evaluation"] == "last"


def test_figure_list_names_each_figures_options_and_flags():
    from anchorlab.figures import describe, options_of

    assert options_of("p1-gamma") == (["best_of_seed=false", "keys=both", "epoch=-1"], ["--best-epoch"])
    assert options_of("p1-fig3b") == (["n_per_pair=50", "seed=5"], ["--method pca|tsne", "--step N"])
    lines = describe().splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("p1-fig2 "))
    assert lines[i + 1].split() == ["--option", "KEY=VALUE", "(defaults):", "keys=both;", "flags:", "--best-epoch"]


def test_probe_curves_legend_wraps_long_run_labels_inside_the_figure():
    """Runs told apart by long labels (seed and rate, say) get as many legend rows as the width needs, the figure
    growing by a row each, so that no label is cut at the edges."""
    from anchorlab.plotting.figures import plot_probe_curves
    from anchorlab.plotting.style import plt

    def curves(labels):
        return [{"group": "γ 1.2", "label": lab, "epoch": [0, 3], "inferential": [0.0, 0.5], "symmetric": [0.0, 0.1],
                 "seen_test": [0.0, 0.6]} for lab in labels]

    short = plot_probe_curves(curves(["seed 1", "seed 2"]))
    long = plot_probe_curves(curves([f"seed {s}, lr_multiplier {m}" for s in (1, 2, 3) for m in (20, 30)]))
    assert short.get_size_inches()[1] == pytest.approx(3.4) and long.get_size_inches()[1] > 3.5
    renderer = long.canvas.get_renderer()
    for legend in long.legends:
        box = legend.get_window_extent(renderer)
        assert box.x0 >= 0 and box.x1 <= long.bbox.width
    plt.close(short), plt.close(long)


def test_p1_curves_with_loss_adds_each_epochs_training_loss_under_the_accuracies(tmp_path):
    from anchorlab.plotting.figures import plot_probe_curves

    run = fake_run(tmp_path / "g08", 0.8, 1, CURVES[(0.8, 1)], done=True)
    losses = {1: 4.1, 2: 3.2, 3: 2.5, 4: 0.9, 5: 0.02, 6: 0.3}  # a spike after the fit at epoch 6
    (run / rundir.EPOCHS).write_text("".join(json.dumps({"epoch": e, "step": 10 * e, "train_loss": v}) + "\n"
                                             for e, v in losses.items()))
    rows = list(csv.DictReader(open(draw("p1-curves", [run], tmp_path / "o", loss=True).with_suffix(".csv"))))
    assert [int(r["epoch"]) for r in rows] == [0, 1, 2, 3, 4, 5, 6]  # every trained epoch, in order
    assert [r["train_loss"] for r in rows] == ["", *map(str, losses.values())]  # epoch 0 trained nothing
    evals = {e: (i, t) for e, _, i, _, t, _ in CURVES[(0.8, 1)]}
    for r in rows:
        if int(r["epoch"]) in evals:
            assert (float(r["inferential"]), float(r["seen_test"])) == evals[int(r["epoch"])]
        else:
            assert r["inferential"] == r["seen_test"] == "" and r["step"] == str(10 * int(r["epoch"]))
        assert r["gamma"] == "0.8" and r["seed"] == "1" and r["status"] == "done"
    plain = list(csv.DictReader(open(draw("p1-curves", [run], tmp_path / "p").with_suffix(".csv"))))
    assert [int(r["epoch"]) for r in plain] == [0, 3, 6] and "train_loss" not in plain[0]  # without: unchanged

    curve = {"group": "γ 0.8", "label": "seed 1", "epoch": [0, 3], "inferential": [0.1, 0.9], "symmetric": [0, 0],
             "seen_test": [0.2, 1.0]}
    fig = plot_probe_curves([{**curve, "loss_epoch": [1, 2, 3], "loss": [4.0, 1.0, 0.01]}])
    top, bottom = fig.axes[:2]
    assert bottom.get_yscale() == "log" and list(bottom.lines[0].get_ydata()) == [4.0, 1.0, 0.01]
    assert top.get_yscale() == "linear" and len(plot_probe_curves([curve]).axes) == 1


def test_p1_curves_panels_run_draws_a_panel_per_run_with_its_loss_on_the_right(tmp_path):
    from anchorlab.plotting.figures import plot_probe_grid
    from anchorlab.plotting.style import plt

    def curve(group: str, label: str, loss: list[float] | None = None) -> dict:
        extra = {"loss_epoch": list(range(1, len(loss) + 1)), "loss": loss} if loss else {}
        return {"group": group, "label": label, "epoch": [0, 3], "inferential": [0.1, 0.9], "symmetric": [0, 0],
                "seen_test": [0.2, 1.0], **extra}
    curves = [curve("γ 0.3\nTransformer 2L", f"seed {s}", [4.0, 0.1, 1e-5]) for s in (1, 2)] + \
        [curve("γ 1.2\nTransformer 2L", f"seed {s}", [4.0, 2.0, 1e-3]) for s in (1, 2, 3)]
    fig = plot_probe_grid(curves)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    accuracy = [ax for ax in visible if ax.get_yscale() == "linear"]
    loss = [ax for ax in visible if ax.get_yscale() == "log"]
    assert len(accuracy) == len(loss) == 5  # 5 runs on a grid of 2 rows of 4: 3 panels hidden
    assert [ax.get_title() for ax in accuracy] == ["γ 0.3\nseed 1", "γ 0.3\nseed 2", "γ 1.2\nseed 1",
                                                    "γ 1.2\nseed 2", "γ 1.2\nseed 3"]
    assert "Transformer 2L" in fig._suptitle.get_text()  # the line every panel shares, said once
    assert list(loss[4].lines[0].get_ydata()) == [4.0, 2.0, 1e-3]
    assert len({ax.get_ylim() for ax in loss}) == 1  # one loss scale for every panel
    plt.close(fig)
    run = fake_run(tmp_path / "g08", 0.8, 1, CURVES[(0.8, 1)], done=True)
    assert draw("p1-curves", [run], tmp_path / "o", panels="run").is_file()
    with pytest.raises(ConfigError, match="option panels: one of group .* or run"):
        draw("p1-curves", [run], tmp_path / "o2", panels="seed")
    assert not (tmp_path / "o2").exists()


def test_p1_gamma_title_stays_inside_a_narrow_figure():
    """Two γ make a narrow figure; P1's best-over-runs title is longer than its axes, and is wrapped rather than
    cut at the figure's left edge (as it was before the wrap)."""
    from anchorlab.plotting.figures import plot_gamma_comparison

    rows = [{"gamma": g, "inferential": 0.5, "symmetric": 0.5, "std": 0.1, "model": "Transformer 2L"}
            for g in (0.3, 1.2)]
    title = "P1: held-out pair (4,3) per γ, best over each seed's runs (P1 §4; bars: mean over seeds)"
    fig = plot_gamma_comparison(rows, title=title)
    fig.canvas.draw()
    box, page = fig.axes[0].title.get_window_extent(), fig.bbox
    assert page.x0 <= box.x0 and box.x1 <= page.x1
    assert fig.axes[0].get_title().replace("\n", " ") == title


def test_p1_gamma_tick_labels_of_several_varied_fields_do_not_overlap():
    """Runs differing in weight decay and rate besides γ: each bar's tick names only what differs (the line every
    run shares goes under the axis once), and no two tick labels overlap."""
    from anchorlab.plotting.figures import plot_gamma_comparison

    rows = [{"gamma": g, "inferential": 0.5, "symmetric": 0.3, "std": 0.1,
             "model": f"Transformer 2L\nweight_decay {wd:g}\nlr_multiplier {m:g}"}
            for g in (0.3, 1.2) for wd in (0.01, 0.1) for m in (10, 30)]
    fig = plot_gamma_comparison(rows)
    fig.canvas.draw()
    ax = fig.axes[0]
    labels = [t for t in ax.get_xticklabels() if t.get_text()]
    assert len(labels) == 8 and not any("Transformer 2L" in t.get_text() for t in labels)
    assert "every run: Transformer 2L" in ax.get_xlabel()
    assert all("weight_decay" in t.get_text() and "lr_multiplier" in t.get_text() for t in labels)
    boxes = sorted((t.get_window_extent() for t in labels), key=lambda b: b.x0)
    assert all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:]))
    assert fig.bbox.y0 <= min(b.y0 for b in boxes)  # the taller labels still fit in the figure


def test_p1_gamma_draws_unfinished_runs_hollow_and_says_so():
    """A run still training is its last evaluation so far, not a result: its dots are hollow (white face) and the
    legend says what hollow means; a figure of finished runs has no hollow dot and no such entry."""
    import numpy as np
    from matplotlib.collections import PathCollection
    from matplotlib.colors import to_rgba

    from anchorlab.plotting.figures import plot_gamma_comparison

    rows = [{"gamma": 1.2, "inferential": 0.8, "symmetric": 0.0, "status": "done"},
            {"gamma": 1.482, "inferential": 0.2, "symmetric": 0.1, "status": "unfinished"},
            {"gamma": 1.482, "inferential": 0.3, "symmetric": 0.1, "status": "done"}]

    def dots(fig, hollow):  # the scatter dots' heights, hollow (white face) or filled
        scatters = [c for c in fig.axes[0].collections if isinstance(c, PathCollection) and len(c.get_offsets())]
        return sorted(round(float(y), 2) for c in scatters
                      for (_, y), face in zip(c.get_offsets(), np.broadcast_to(c.get_facecolors(),
                                                                               (len(c.get_offsets()), 4)))
                      if (tuple(face) == to_rgba("white")) == hollow)

    fig = plot_gamma_comparison(rows)
    assert dots(fig, hollow=True) == [0.1, 0.2]
    assert dots(fig, hollow=False) == [0.0, 0.1, 0.3, 0.8]
    assert any("unfinished" in t.get_text() for t in fig.axes[0].get_legend().get_texts())
    finished = plot_gamma_comparison([{**r, "status": "done"} for r in rows])
    assert dots(finished, hollow=True) == []
    assert not any("unfinished" in t.get_text() for t in finished.axes[0].get_legend().get_texts())


def test_p1_gamma_reads_each_run_after_one_epoch(tmp_path, capsys):
    """``--option epoch=N``: each run's evaluation after epoch N (final for that reading), a run short of N its last
    evaluation, unfinished; -1 (the default) the end; a bad value or N beside --best-epoch is one line, exit 2."""
    from anchorlab.cli import main

    runs = [fake_run(tmp_path / f"g{g}_s{s}", g, s, ev, done=False) for (g, s), ev in CURVES.items()]
    draw("p1-gamma", runs, tmp_path / "out", epoch=3)
    rows = list(csv.DictReader(open(tmp_path / "out" / "p1-gamma.csv")))
    assert [(r["gamma"], r["inferential"], r["status"], r["evaluation"]) for r in rows] == [
        ("0.5", "0.0", "done", "epoch 3"), ("0.8", "0.4", "done", "epoch 3")]
    draw("p1-gamma", runs, tmp_path / "out", epoch=6)
    rows = list(csv.DictReader(open(tmp_path / "out" / "p1-gamma.csv")))
    assert [(r["gamma"], r["inferential"], r["status"]) for r in rows] == [
        ("0.5", "0.0", "unfinished"), ("0.8", "0.93", "done")]  # γ 0.5 has not reached epoch 6
    for options in (["--option", "epoch=-2"], ["--option", "epoch=3", "--best-epoch"], ["--option", "epoch=4"]):
        assert main(["figure", "p1-gamma", *map(str, runs), "--out", str(tmp_path / "bad"), *options]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "epoch" in err and "Traceback" not in err
    assert not (tmp_path / "bad").exists()


# P1 Fig. 2c: (γ, seed) -> the final (inferential, symmetric) of one run; γ 0.5 has 4 seeds, γ 0.8 three
FIG2C = {(0.5, 1): (0.10, 0.90), (0.5, 2): (0.00, 1.00), (0.5, 3): (0.20, 0.70), (0.5, 4): (0.10, 0.80),
         (0.8, 1): (0.90, 0.00), (0.8, 2): (0.60, 0.30), (0.8, 3): (0.75, 0.05)}
MULTI_HEAD = {"model.n_heads": 4, "model.d_head": 4, "model.act": "gelu", "model.norm": "post"}


def test_mean_std_is_the_mean_and_population_std_of_each_group():
    from anchorlab.phase import mean_std

    rows = [{"model": "m", "gamma": g, "seed": s, "inferential": i, "symmetric": y} for (g, s), (i, y) in FIG2C.items()]
    stats = mean_std(rows, ("model", "gamma"), ("inferential", "symmetric"))
    assert [(s["gamma"], s["n"]) for s in stats] == [(0.5, 4), (0.8, 3)]
    for s in stats:
        inf = [i for (g, _), (i, _) in FIG2C.items() if g == s["gamma"]]
        assert s["inferential_mean"] == pytest.approx(sum(inf) / len(inf))
        var = sum((v - s["inferential_mean"]) ** 2 for v in inf) / len(inf)  # population variance (ddof 0)
        assert s["inferential_std"] == pytest.approx(var ** 0.5)
    assert stats[0]["symmetric_mean"] == pytest.approx(0.85) and stats[0]["symmetric_std"] == pytest.approx(0.1118034)
    assert mean_std(rows[:1], ("gamma",), ("inferential",)) == [{"gamma": 0.5, "n": 1, "inferential_mean": 0.1,
                                                                   "inferential_std": 0.0}]


def test_p1_fig2c_draws_mean_and_std_over_each_gammas_seeds(tmp_path):
    """p1-fig2c reads the runs as p1-gamma does and writes one CSV row per γ: the mean and (population) std of the
    held-out pair's accuracies over its seeds, the seeds and runs behind them and the block they trained; the
    figure has a bar with ± std error bars per γ and answer."""
    from matplotlib.container import ErrorbarContainer

    from anchorlab.figures.gamma import p1_fig2c

    ev = lambda i, y: [(0, 0, 0.0, 0.0, 0.0, 0.0), (3, 30, i, y, 1.0, i)]
    runs = [fake_run(tmp_path / f"g{g}_s{s}", g, s, ev(i, y), done=(g, s) != (0.8, 3), **MULTI_HEAD)
            for (g, s), (i, y) in FIG2C.items()]
    for d, ((g, s), (i, y)) in zip(runs, FIG2C.items()):
        if (g, s) != (0.8, 3):  # a finished run's final values come from its summary
            rundir.write_json(d / rundir.SUMMARY, {"unseen_inferential_acc": i, "unseen_symmetric_acc": y,
                                                   "seen_test_acc": 1.0})
    png = draw("p1-fig2c", runs, tmp_path / "out")
    assert FIGURES["p1-fig2c"].sources == "runs" and png == tmp_path / "out" / "p1-fig2c.png"
    rows = list(csv.DictReader(open(png.with_suffix(".csv"))))
    assert [(r["gamma"], r["n_runs"], r["seeds"], r["status"]) for r in rows] == [
        ("0.5", "4", "1 2 3 4", "done"), ("0.8", "3", "1 2 3", "unfinished")]
    assert [float(r["inferential_mean"]) for r in rows] == pytest.approx([0.1, 0.75])
    assert [float(r["inferential_std"]) for r in rows] == pytest.approx([0.0707107, 0.1224745])
    assert [float(r["symmetric_mean"]) for r in rows] == pytest.approx([0.85, 0.35 / 3])
    assert rows[0]["run_ids"] == "g0.5_s1 g0.5_s2 g0.5_s3 g0.5_s4" and rows[0]["pair"] == "(4,3)"
    assert rows[0]["architecture"] == "4 heads × d_head 4, d_model 16, d_mlp 32, GELU, post-LN"
    assert float(rows[0]["std_W_Q"]) == pytest.approx(16 ** -0.5)
    # the plot: 2 γ × 2 answers, each a bar at the mean with ± std error bars
    import matplotlib.pyplot as plt

    from anchorlab.figures.gamma import gamma_rows
    from anchorlab.phase import mean_std
    from anchorlab.plotting.figures import plot_gamma_comparison

    shown = gamma_rows(runs)
    fig = plot_gamma_comparison(shown, spread=mean_std(shown, ("model", "gamma"), ("inferential", "symmetric")))
    ax = fig.axes[0]
    assert sum(isinstance(c, ErrorbarContainer) for c in ax.containers) == 4
    assert sorted(round(p.get_height(), 4) for p in ax.patches) == sorted(
        round(v, 4) for v in (0.1, 0.75, 0.85, 0.35 / 3))
    plt.close(fig)
    # read at one epoch, with the options p1-gamma takes; a bad value is one line naming the figure
    at0 = list(csv.DictReader(open(p1_fig2c(runs, tmp_path / "e0", epoch=0).with_suffix(".csv"))))
    assert {r["inferential_mean"] for r in at0} == {"0.0"} and {r["evaluation"] for r in at0} == {"epoch 0"}
    with pytest.raises(ConfigError, match="figure p1-fig2c: option keys"):
        draw("p1-fig2c", runs, tmp_path / "bad", keys="middle")


def test_legends_and_csvs_name_the_held_out_pairs_answers_from_the_task(tmp_path, monkeypatch):
    """The answer in "inferential (4,3) → x−10" comes from each run's task (anchors' shifts and the reversed
    pair's rule), not from P1's defaults: a run probing (2,1), whose reverse (1,2) maps to x, reads x+6 / x.
    Runs of different tasks drawn together name no answer rather than a wrong one."""
    import anchorlab.figures.gamma as G
    from anchorlab.figures.curves import curve_rows
    from anchorlab.plotting.figures import plot_gamma_comparison, reading_label

    evals = CURVES[0.8, 1]
    task = {"task.held_out": ((2, 1),), "task.probe_pair": (2, 1), "task.non_inferential": ((1, 2, 0),)}
    custom = [fake_run(tmp_path / f"c{s}", 0.8, s, evals, done=True, **task) for s in (1, 2)]
    default = fake_run(tmp_path / "d1", 0.8, 1, evals, done=True)
    columns = ("pair", "inferential_answer", "symmetric_answer")
    assert {tuple(r[k] for k in columns) for r in G.gamma_rows(custom)} == {("(2,1)", "x+6", "x")}
    assert {tuple(r[k] for k in columns) for r in G.gamma_rows([default])} == {("(4,3)", "x−10", "x−6")}
    assert {r["inferential_answer"] for r in curve_rows(custom)} == {"x+6"}
    seen = []
    monkeypatch.setattr(G, "plot_gamma_comparison", lambda rows, **kw: seen.append(kw["answers"])
                        or plot_gamma_comparison(rows, **kw))
    draw("p1-gamma", custom, tmp_path / "a")
    draw("p1-gamma", [*custom, default], tmp_path / "b")
    assert seen == [("x+6", "x"), None]
    assert reading_label("inferential", "(2,1)", ("x+6", "x")) == "inferential (2,1) → x+6"
    assert reading_label("symmetric", "(2,1) / (4,3)", None) == "symmetric (2,1) / (4,3)"
