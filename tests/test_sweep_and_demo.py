import json
from pathlib import Path

import pytest

from anchorlab import rundir
from anchorlab.config import ConfigError
from anchorlab.demo import outcome, run_demo
from anchorlab.sweep import load_sweep, plan
from tests.tiny import TINY_ANCHOR_TOML

TINY_BASE = TINY_ANCHOR_TOML


def write_sweep(tmp_path, axes: str, extra: str = "") -> str:
    (tmp_path / "base.toml").write_text(TINY_BASE)
    (tmp_path / "s.toml").write_text(f'name = "t"\nbase = "base.toml"\n{extra}\n[axes]\n{axes}\n')
    return str(tmp_path / "s.toml")


def test_expansion_seed_axis_and_manifest(tmp_path):
    spec = load_sweep(write_sweep(tmp_path, '"init.gamma" = [0.5, 0.8]\n"seed" = [1, 2]',
                                  '[set]\n"train.lr" = 3e-4'))
    rows = plan(spec, tmp_path / "out")
    assert len(rows) == 4 and len({cfg.run_id() for _, cfg, _ in rows}) == 4
    point, cfg, d = rows[1]
    assert point == {"init.gamma": 0.5, "seed": 2}
    assert (cfg.seeds.data_seed, cfg.seeds.init_seed, cfg.seeds.train_seed) == (2, 2, 2)
    assert cfg.train.lr == 3e-4 and cfg.task.data_size == 1600 and d.name == cfg.run_id()
    manifest = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert manifest["runs"][cfg.run_id()] == point


def test_another_sweeps_directory_is_refused_and_its_manifest_kept(tmp_path, capsys):
    from anchorlab.cli import main

    plan(load_sweep(write_sweep(tmp_path, '"init.gamma" = [0.5, 0.8]')), tmp_path / "out")  # sweep "t"
    before = (tmp_path / "out" / "sweep.json").read_text()
    (tmp_path / "u.toml").write_text('name = "u"\nbase = "base.toml"\n[axes]\n"init.gamma" = [1.0]\n')
    for dry in ([], ["--dry-run"]):
        assert main(["sweep", str(tmp_path / "u.toml"), "--out", str(tmp_path / "out"), *dry]) == 2
        err = capsys.readouterr().err.strip()
        assert err == (f"anchorlab sweep: error: --out: {tmp_path / 'out'} holds sweep 't' (sweep.json), not 'u'; "
                       "give another --out (or delete that directory to start it over)")
    assert (tmp_path / "out" / "sweep.json").read_text() == before
    # the same sweep with its grid grown is still this sweep: planned over the same directory
    assert len(plan(load_sweep(write_sweep(tmp_path, '"init.gamma" = [0.5, 0.8, 1.0]')), tmp_path / "out")) == 3


def test_a_gpu_this_machine_lacks_is_one_line_before_anything_is_written(tmp_path, capsys, monkeypatch):
    """train.device names a GPU: on a machine without one, `train`, `sweep` (not on Ray, whose machines may have
    one) and every run kind stop with one line naming the field, before a run or sweep directory exists."""
    import torch

    from anchorlab.cli import main

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    sweep = write_sweep(tmp_path, '"init.gamma" = [0.5]')
    for args in (["train", str(tmp_path / "base.toml"), "--set", "train.device=cuda", "--out", str(tmp_path / "r")],
                 ["sweep", sweep, "--set", "train.device=cuda:1", "--out", str(tmp_path / "s")],
                 ["lm", "--set", "train.device=cuda", "--set", "data.stories=standin", "--out", str(tmp_path / "l")]):
        assert main(args) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "train.device: 'cuda" in err and "needs a CUDA GPU" in err, err
        assert "allowed on this machine: " + ("'auto' or 'cpu'" if args[0] != "lm" else "'cpu'") in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.toml", "s.toml"]


def test_set_seed_sets_all_three_seeds_and_set_of_an_axis_is_refused(tmp_path):
    """--set seed=N (and "seed" in [set]) sets data, init and batch-order seeds, as with `anchorlab train`; an
    override of a key an axis sets would be overwritten for every run, so it is one clear error instead (the
    file's own [set] may give such a key a default: the axis beside it shows it is swept)."""
    spec = load_sweep(write_sweep(tmp_path, '"init.gamma" = [0.5, 0.8]'), ["seed=3"])
    assert {(c.seeds.data_seed, c.seeds.init_seed, c.seeds.train_seed) for _, c, _ in plan(spec, tmp_path / "o")} \
        == {(3, 3, 3)}
    spec = load_sweep(write_sweep(tmp_path, '"init.gamma" = [0.5]', '[set]\nseed = 2'))
    assert [c.seeds.train_seed for _, c, _ in plan(spec, tmp_path / "p")] == [2]
    spec = load_sweep(write_sweep(tmp_path, '"seed" = [1, 2]', '[set]\nseed = 5'))
    assert [c.seeds.data_seed for _, c, _ in plan(spec, tmp_path / "q")] == [1, 2]
    for axes, override in [('"init.gamma" = [0.5]\n"seed" = [1, 2]', "seed=1"),
                           ('"init.gamma" = [0.5]\n"seed" = [1, 2]', "seeds.init_seed=1"),
                           ('"seeds.init_seed" = [1, 2]', "seed=1"),
                           ('"init.gamma, train.lr" = [[0.5, 1e-3]]', "train.lr=1e-4")]:
        key = override.split("=")[0]
        with pytest.raises(ConfigError, match=rf"^--set {key}: {key} is an axis of "):
            load_sweep(write_sweep(tmp_path, axes), [override])


@pytest.mark.parametrize("axes, field", [('"model.d_modle" = [1]', "model.d_modle"),
                                         ('"init.gamma" = [0.5, -1.0]', "init.gamma"),
                                         ('"init.gamma" = []', "axes.init.gamma")])
def test_bad_axes_name_the_field(tmp_path, axes, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        load_sweep(write_sweep(tmp_path, axes))


def test_outcome_labels():
    base = {"seen_train_acc": 1.0, "seen_test_acc": 1.0, "unseen_inferential_acc": 0.0, "unseen_symmetric_acc": 0.0}
    assert outcome({**base, "unseen_inferential_acc": 0.95}) == "inferential"
    assert outcome({**base, "unseen_symmetric_acc": 0.95}) == "symmetric"
    assert outcome(base) == "mixed"
    assert outcome({**base, "seen_test_acc": 0.5}).startswith("memorized")
    assert outcome({**base, "seen_train_acc": 0.1, "seen_test_acc": 0.1}) == "no fit"


TINY_P2 = """
[task]
name = "mem_rsn"
seq_len = 3
data_size = 2000
[model]
name = "emb_mlp"
d_model = 16
d_mlp = 32
act = "tanh"
[train]
batch_size = 100
epochs = 2
lr = 1e-3
schedule = "constant"
eval_every = 1
threads = 1
"""


def test_demo_end_to_end_on_a_tiny_grid(tmp_path, capsys):
    spec = write_sweep(tmp_path, '"init.gamma" = [1.0, 0.5, 0.1]\n"seed" = [1]')
    (tmp_path / "p2.toml").write_text(TINY_P2)
    (tmp_path / "p2s.toml").write_text('name = "p2"\nbase = "p2.toml"\n[axes]\n"init.gamma" = [0.8, 0.3]\n')
    summary = run_demo(spec, tmp_path / "demo", workers=1, show_progress=False, p2_spec=tmp_path / "p2s.toml",
                       report_figures=0)  # the report's figures are tested in test_report.py
    assert [r["init"] for r in summary["runs"]] == ["small", "middle", "large"]
    assert (tmp_path / "demo" / "demo.png").stat().st_size > 10_000
    assert (tmp_path / "demo" / "demo_p2.png").stat().st_size > 10_000 and (tmp_path / "demo" / "demo_p2.csv").exists()
    html = (tmp_path / "demo" / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 2 and "emb_mlp" in html and "sweep p2" in html
    saved = json.loads((tmp_path / "demo" / "summary.json").read_text())
    assert len(saved["runs"]) == 3 and len(saved["checks"]) == 2
    for r in saved["runs"]:
        assert abs(r["std_W_Q"] - 16 ** -r["gamma"]) < 1e-12
    assert [(r["model"], r["gamma"]) for r in saved["p2_runs"]] == [("emb_mlp", 0.8), ("emb_mlp", 0.3)]
    assert len(saved["p2_checks"]) == 3
    out = capsys.readouterr().out
    assert "unseen_symmetric_acc" in out and "rsn_test_acc" in out
    # the tiny grid misses the inferential side: the committed paper-config result is printed, labelled, and kept
    assert not all(saved["checks"].values()) and "Not run by this demo: P1 at the paper config" in out
    assert [r["gamma"] for r in saved["paper_config_committed"]] == [0.8, 0.5]


def test_demo_p2_checks():
    from anchorlab.demo import demo_p2_checks

    runs = [{"gamma": 0.8, "rsn_test_acc": 0.55, "rsn_train_acc": 0.6, "mem_acc": 0.02},
            {"gamma": 0.8, "rsn_test_acc": 0.45, "rsn_train_acc": 0.7, "mem_acc": 0.1},
            {"gamma": 0.3, "rsn_test_acc": 0.0, "rsn_train_acc": 0.6, "mem_acc": 0.3}]
    assert list(demo_p2_checks(runs).values()) == [True, True, True]
    runs[1]["rsn_test_acc"] = 0.2  # one seed short of the bar fails the check
    runs[1]["mem_acc"] = 0.5
    runs[2]["rsn_test_acc"] = 0.25
    assert list(demo_p2_checks(runs).values()) == [False, False, False]
    assert list(demo_p2_checks([]).values()) == [False, False, False]  # no runs is no evidence


def test_sweep_and_collect_commands_resume_without_redoing(tmp_path, capsys):
    import csv

    from anchorlab.cli import main

    spec = write_sweep(tmp_path, '"init.gamma" = [0.5, 1.0]\n"model.n_layers" = [1, 2]')
    out = tmp_path / "sw"
    assert main(["sweep", spec, "--out", str(out), "--backend", "local"]) == 0
    assert "4/4 runs done" in capsys.readouterr().out
    first = {p: p.stat().st_mtime_ns for p in out.glob("*/summary.json")}
    assert len(first) == 4
    # a second invocation finds every run DONE and trains nothing
    assert main(["sweep", spec, "--out", str(out), "--backend", "local"]) == 0
    assert {p: p.stat().st_mtime_ns for p in out.glob("*/summary.json")} == first
    assert main(["collect", str(out)]) == 0
    rows = list(csv.DictReader(open(out / "summary.csv")))
    assert len(rows) == 4 and {r["status"] for r in rows} == {"done"}
    assert {(r["init.gamma"], r["model.n_layers"]) for r in rows} == {("0.5", "1"), ("0.5", "2"), ("1.0", "1"),
                                                                      ("1.0", "2")}
    for r in rows:
        assert float(r["best_seen_train_acc"]) >= float(r["seen_train_acc"])
    assert main(["figure", "p1-fig2", str(out), "--out", str(tmp_path / "fig")]) == 0
    grid = list(csv.DictReader(open(tmp_path / "fig" / "p1-fig2.csv")))
    assert len(grid) == 4 and (tmp_path / "fig" / "p1-fig2.png").stat().st_size > 10_000


def test_collect_reports_unfinished_runs(tmp_path):
    from anchorlab.sweep import collect

    spec = load_sweep(write_sweep(tmp_path, '"init.gamma" = [0.5, 1.0]'))
    plan(spec, tmp_path / "sw")
    assert {r["status"] for r in collect(tmp_path / "sw")} == {"missing"}
    with pytest.raises(ConfigError, match="sweep_dir"):
        collect(tmp_path / "nowhere")


def test_collect_reads_a_folder_of_train_runs_with_the_fields_they_differ_in(tmp_path, capsys):
    """`anchorlab collect` of `anchorlab train` runs (no sweep.json): one row per run, its coordinates the config
    fields the runs differ in (threads, evaluation cadence and the like left out), beside a sweep's own rows."""
    import csv

    from anchorlab.cli import main

    (tmp_path / "base.toml").write_text(TINY_BASE)
    folder = tmp_path / "runs"
    for name, sets in [("a", ["init.gamma=0.5"]), ("b", ["init.gamma=1.0", "train.weight_decay=0.3"]),
                       ("c", ["init.gamma=1.0", "train.threads=1", "train.eval_every=1"])]:
        argv = ["train", str(tmp_path / "base.toml"), "--out", str(folder / name)]
        assert main([*argv, *[x for s in sets for x in ("--set", s)]]) == 0
    (folder / "c" / "DONE").unlink()  # as if stopped part way: its last evaluation, marked unfinished
    (folder / "b" / "DONE").unlink()  # as if training now: a live process (this one) holds its LOCK
    (folder / "b" / "LOCK").write_text(json.dumps(rundir._me()))
    assert main(["collect", str(folder)]) == 0
    rows = {r["run_id"]: r for r in csv.DictReader(open(folder / "summary.csv"))}
    assert sorted(rows) == ["a", "b", "c"] and rows["b"]["run_dir"] == str(folder / "b")
    assert list(rows["a"])[:5] == ["run_id", "run_dir", "init.gamma", "train.weight_decay", "status"]
    assert [(rows[n]["init.gamma"], rows[n]["train.weight_decay"]) for n in "abc"] == [
        ("0.5", "0.01"), ("1.0", "0.3"), ("1.0", "0.01")]
    assert [rows[n]["status"] for n in "abc"] == ["done", "running", "unfinished"]
    assert all(0 <= float(rows[n]["unseen_inferential_acc"]) <= 1 for n in "abc")
    spec = write_sweep(tmp_path, '"init.gamma" = [0.5, 1.0]')  # a sweep beside the folder: its own rows
    assert main(["sweep", spec, "--out", str(tmp_path / "sw"), "--backend", "local"]) == 0
    assert main(["collect", str(tmp_path / "sw"), str(folder / "a"), "--out", str(tmp_path / "all.csv")]) == 0
    mixed = list(csv.DictReader(open(tmp_path / "all.csv")))
    sweep_runs = [str(tmp_path / "sw" / r["run_id"]) for r in mixed[:2]]  # each row says where its run is
    assert [r["run_dir"] for r in mixed] == [*sweep_runs, str(folder / "a")] and "wrote" in capsys.readouterr().out
    assert all(Path(d, "config.json").is_file() for d in sweep_runs)
    (folder / "summary.csv").unlink()
    assert main(["collect", str(folder / "c")]) == 0  # one run: its table beside it, not among its files
    assert [r["run_id"] for r in csv.DictReader(open(folder / "summary.csv"))] == ["c"]
    assert not (folder / "c" / "summary.csv").exists()


def test_dry_run_lists_runs_and_their_status_without_writing(tmp_path, capsys):
    from anchorlab.cli import main
    from anchorlab.train import train

    spec_path = write_sweep(tmp_path, '"init.gamma" = [0.5, 1.0]\n"seed" = [1, 2]')
    rows = plan(load_sweep(spec_path), tmp_path / "sw")
    (tmp_path / "sw" / "sweep.json").unlink()
    train(rows[0][1], rows[0][2], show_progress=False)
    rows[1][2].mkdir()
    (rows[1][2] / "config.json").write_text(json.dumps(rows[1][1].to_dict()))  # started, not finished
    assert main(["sweep", spec_path, "--out", str(tmp_path / "sw"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "4 runs" in out and "1 done, 1 partial, 2 new" in out
    assert f"{rows[3][1].run_id()}  new      init.gamma=1.0  seed=2" in out
    assert "batched" not in out  # the process back-end batches nothing
    # on the local back-end it says how the 3 runs still to train (two data seeds) would be stacked
    assert main(["sweep", spec_path, "--out", str(tmp_path / "sw"), "--dry-run", "--backend", "local",
                 "--batch-models", "2"]) == 0
    assert "batched (--backend local --batch-models 2): the 3 runs to train form 2 groups of 2 + 1 runs" \
        in capsys.readouterr().out
    assert not (tmp_path / "sw" / "sweep.json").exists()


def test_p1_fig14_lr_wd_heatmap_is_the_mean_over_seeds(tmp_path, capsys):
    import csv

    from anchorlab import rundir
    from anchorlab.cli import main

    spec = write_sweep(tmp_path, '"train.lr_multiplier" = [2.0, 4.0]\n"train.weight_decay" = [0.01, 0.1]\n'
                                 '"seed" = [1, 2]', '[set]\n"task.held_out" = [[3, 4], [4, 3]]\n"train.lr" = 1e-4')
    out = tmp_path / "sw"
    assert main(["sweep", spec, "--out", str(out), "--backend", "local"]) == 0
    # give every run a known inferential accuracy, so the expected cell means are exact
    value = {}
    for run_id, point in rundir.read_json(out / "sweep.json")["runs"].items():
        cfg = rundir.read_config(out / run_id)
        assert cfg.task.held_out == ((3, 4), (4, 3)) and cfg.seeds.init_seed == point["seed"]
        s = rundir.read_json(out / run_id / "summary.json")
        v = point["train.lr_multiplier"] / 10 + point["train.weight_decay"] + point["seed"] / 100
        s["unseen_inferential_acc"], s["seen_test_acc"] = v, (0.5 if point["train.weight_decay"] == 0.1 else 1.0)
        rundir.write_json(out / run_id / "summary.json", s)
        value[(point["train.lr_multiplier"], point["train.weight_decay"], point["seed"])] = v
    assert main(["figure", "p1-fig14", str(out), "--out", str(tmp_path / "fig")]) == 0
    table = list(csv.DictReader(open(tmp_path / "fig" / "p1-fig14.csv")))
    assert len(table) == 4
    for r in table:
        m, wd = round(float(r["peak_lr"]) / 1e-4, 6), float(r["weight_decay"])
        assert float(r["unseen_inferential_acc"]) == pytest.approx((value[(m, wd, 1)] + value[(m, wd, 2)]) / 2)
        assert r["n_seeds"] == "2" and r["hatched"] == str(wd == 0.1)
    assert {r["peak_lr"] for r in table} == {"0.0002", "0.0004"}
    assert (tmp_path / "fig" / "p1-fig14.png").stat().st_size > 10_000


def test_p1_fig14_refuses_a_sweep_that_varies_more_than_lr_wd_seed(tmp_path, capsys):
    from anchorlab.cli import main

    spec = write_sweep(tmp_path, '"init.gamma" = [0.5, 1.0]', '[set]\n"train.epochs" = 1')
    assert main(["sweep", spec, "--out", str(tmp_path / "sw"), "--backend", "local"]) == 0
    assert main(["figure", "p1-fig14", str(tmp_path / "sw"), "--out", str(tmp_path / "fig")]) == 2
    assert "runs differ in more than LR, WD and seed" in capsys.readouterr().err


def test_demo_reads_the_committed_paper_config_result(tmp_path):
    """When the demo's small-init runs miss the inferential side, it prints the committed paper-config replays
    (docs/p1_paper_vs_reference/), labelled as not run by it: smallest init first, γ 0.5 symmetric as logged."""
    from anchorlab.demo import paper_config_result, paper_config_text

    committed = paper_config_result()
    assert [r["gamma"] for r in committed] == [0.8, 0.5]
    assert all(r["d_model"] == 400 and r["precision"] == "fp32" for r in committed)
    middle = committed[1]
    assert middle["epoch"] >= 6 and middle["unseen_symmetric_acc"] >= 0.99 and middle["seen_test_acc"] >= 0.99
    text = paper_config_text(committed)
    assert text.strip().startswith("Not run by this demo") and "γ 0.8, d_model 400" in text
    assert paper_config_result(tmp_path) == []  # nothing committed: nothing printed
    # the committed runs on our own seeds (docs/p1_both_sides.md) are counted per γ, not hidden: 6 runs, and
    # the line says how many seeds reach each side
    from anchorlab.demo import seed_outcomes

    seeds = seed_outcomes()
    assert sorted(seeds) == [0.5, 0.8] and all(n == 3 for _, _, n in seeds.values())
    assert seeds[0.8] == (0, 1, 3) and seeds[0.5] == (0, 1, 3)  # docs/p1_both_sides.md's table at 0.9
    assert "γ 0.8: inferential >= 0.9 on 0/3, symmetric >= 0.9 on 1/3" in text
    assert seed_outcomes(tmp_path) == {} and "our own data seeds at this config" not in paper_config_text(
        committed, seeds={})
    # its last line names the command that trains both sides on 3 seeds, with the cost its registry entry gives
    from anchorlab.reproduce import get

    hours = get("p1-both-sides").minutes / 60
    last = text.splitlines()[-1]
    assert "anchorlab reproduce p1-both-sides" in last and f"~{hours:.0f} h on 2 CPU cores" in last
    (tmp_path / "s.toml").write_text('name = "s"\nbase = "b.toml"\n[axes]\nseed = [1]\n')
    (tmp_path / "b.toml").write_text("")
    for minutes, cost in ((90, "~90 min"), (600, "~10 h")):  # read from the registry, not written into demo.py
        (tmp_path / "reg.toml").write_text(f'[p1-both-sides]\nminutes = {minutes}\nsweeps = ["s.toml"]\n')
        assert f"estimated {cost} on 2 CPU cores" in paper_config_text(committed, tmp_path / "reg.toml")


def test_demo_states_the_committed_fit_speed_split(tmp_path):
    """The demo's paper-config block says what the seed sets, from the committed p1-fit-speed table: the fit
    epochs of the inferential-leaning runs against the others'; nothing when the table is absent or one-sided."""
    from anchorlab.demo import fit_speed_text

    committed = fit_speed_text()
    assert "Of 73 fitted" in committed
    assert "the 39 with last inferential < 0.3 fit (training loss < 1) at epochs 3-19" in committed
    assert "the 34 leaning inferential at epochs 13-26" in committed
    head = "run_id,fit_epoch,inferential,best_inferential\n"
    # d: not fitted, not counted; e: leaned inferential on the way (best 0.6) but ends below 0.3, so not leaning
    (tmp_path / "t.csv").write_text(head + "a,5,0.01,0.01\nb,6,0.1,0.1\nc,19,0.8,0.8\nd,,0.9,0.9\ne,13,0.1,0.6\n")
    text = fit_speed_text(tmp_path / "t.csv")
    assert "Of 4 fitted" in text and "the 3 with last inferential < 0.3 fit (training loss < 1) at epochs 5-13" in text
    assert "the 1 leaning inferential at epoch 19 " in text
    (tmp_path / "one.csv").write_text(head + "a,5,0.01,0.01\n")
    assert fit_speed_text(tmp_path / "one.csv") == "" and fit_speed_text(tmp_path / "none.csv") == ""


def test_demo_states_the_committed_gamma_line(tmp_path):
    """The demo's paper-config block says what the γ line's ends give, from the committed runs: per seed, in
    seed order; nothing when fewer than two γ are there."""
    from anchorlab.demo import gamma_line_text

    committed = gamma_line_text()
    assert "epoch 27, bf16 (docs/p1_both_sides.md; anchorlab reproduce p1-paper-gamma)" in committed
    assert ("γ 0.3: symmetric >= 0.9 on 3/3, inferential >= 0.9 on 0/3, leaning inferential (>= 0.5, above "
            "symmetric) on 0/3 (inferential/symmetric 0.00/1.00, 0.00/1.00, 0.00/0.98)") in committed
    assert ("γ 1.2: symmetric >= 0.9 on 0/3, inferential >= 0.9 on 0/3, leaning inferential (>= 0.5, above "
            "symmetric) on 3/3 (inferential/symmetric 0.83/0.00, 0.75/0.00, 0.65/0.13)") in committed

    def run(name, gamma, seed, inf, sym):
        d = tmp_path / name
        d.mkdir()
        (d / "config.json").write_text(json.dumps({"init": {"gamma": gamma}, "train": {"precision": "fp32"}}))
        (d / "summary.json").write_text(json.dumps({"epochs": 9, "seeds": {"data": seed},
                                                    "unseen_inferential_acc": inf, "unseen_symmetric_acc": sym}))

    run("a", 1.0, 2, 0.95, 0.0)
    assert gamma_line_text(tmp_path) == ""  # one γ only
    run("b", 1.0, 1, 0.6, 0.7)  # inferential >= 0.5 but below symmetric: not leaning inferential
    run("c", 0.2, 1, 0.0, 0.91)
    text = gamma_line_text(tmp_path)
    assert "epoch 9, fp32" in text and "γ 0.2: symmetric >= 0.9 on 1/1" in text
    assert ("γ 1: symmetric >= 0.9 on 0/2, inferential >= 0.9 on 1/2, leaning inferential (>= 0.5, above symmetric) "
            "on 1/2 (inferential/symmetric 0.60/0.70, 0.95/0.00)") in text
    assert gamma_line_text(tmp_path / "none") == ""
    other = gamma_line_text(tmp_path, intro="Compressed", source="elsewhere")
    assert other.startswith("  Compressed, epoch 9, fp32 (elsewhere): γ 0.2: symmetric >= 0.9 on 1/1")


def test_demo_states_the_committed_long_runs(tmp_path):
    """The demo's paper-config block says what the runs trained toward P1's 210 epochs give, from their committed
    records of every source: every trajectory (CPU and GPU runs of one config are each a record), small init
    first, then by seed and by epochs trained, its answer at epoch 27 and at its last evaluation, where it trained;
    then how many trajectories beyond epoch 100 answer each way; nothing when none is there."""
    from anchorlab import rundir
    from anchorlab.demo import LONG_RUNS, LONG_RUNS_GPU, long_runs_text

    committed = long_runs_text()
    s1 = rundir.read_metrics(LONG_RUNS / "lr_m30_g1.2_s1_e210")
    at27 = next(r for r in s1 if r["epoch"] == 27)
    assert committed.startswith("  Toward P1's full 210 epochs (P1 reads the end) at peak rate 0.0003, bf16")
    assert (f"    γ 1.2 seed 1  epoch 27 {at27['unseen_inferential_acc']:.2f}/{at27['unseen_symmetric_acc']:.2f} → "
            f"epoch {s1[-1]['epoch']} of 210") in committed
    s3 = rundir.read_metrics(next(d for d in LONG_RUNS_GPU.iterdir()
                                  if rundir.read_json(d / rundir.CONFIG)["init"]["gamma"] == 1.2))
    s3_27 = next(r for r in s3 if r["epoch"] == 27)
    assert (f"epoch 27 {s3_27['unseen_inferential_acc']:.2f}/{s3_27['unseen_symmetric_acc']:.2f} → "
            f"epoch {s3[-1]['epoch']} of 210" in committed and "(one H200, group of 2, unfinished)" in committed)
    assert committed.index("γ 1.2 seed 2") < committed.index("γ 1.2 seed 3") < committed.index("γ 0.3 seed 1")
    assert (LONG_RUNS / "lr_m30_g1.2_s2_e210_restart").is_dir()  # a restarted CPU run is a trajectory too
    assert committed.count("(CPU, unfinished)") >= 4

    def run(name, gamma, seed, evals, done, gpu=None):
        d = tmp_path / name
        d.mkdir()
        rundir.write_json(d / rundir.CONFIG, {"init": {"gamma": gamma}, "seeds": {"data_seed": seed},
                                              "train": {"epochs": 200, "lr": 1e-5, "lr_multiplier": 20,
                                                        "precision": "fp32"}})
        (d / rundir.METRICS).write_text("".join(json.dumps({"epoch": e, "unseen_inferential_acc": i,
                                                            "unseen_symmetric_acc": s}) + "\n" for e, i, s in evals))
        session = {"device": "cuda", "device_name": f"NVIDIA {gpu}"} if gpu else {"device": "cpu"}
        (d / rundir.SESSIONS).write_text(json.dumps(session) + "\n")
        if done:
            (d / rundir.DONE).write_text("")

    sources = [(tmp_path, "*_e210"), (tmp_path / "gpu", "*")]
    assert long_runs_text(sources) == ""
    run("a_e210", 0.3, 1, [(0, 0.0, 0.0), (9, 0.0, 0.9)], False)
    run("b_e210", 1.2, 2, [(0, 0.0, 0.0), (27, 0.8, 0.0), (200, 0.95, 0.0)], True)
    run("c_e39", 1.2, 1, [(0, 0.0, 0.0)], True)  # not a long run: another name
    (tmp_path / "gpu").mkdir()
    run("gpu/0123abcd", 1.2, 3, [(3, 0.0, 0.0), (27, 0.7, 0.0), (130, 0.5, 0.1)], False, gpu="H200")
    run("gpu/4567ef01", 0.3, 1, [(3, 0.0, 0.8), (120, 0.0, 0.99)], False, gpu="H200")
    run("gpu/89ab0000", 1.2, 2, [(27, 0.3, 0.0), (60, 0.1, 0.9)], False, gpu="H100")  # seed 2 again, shorter
    assert long_runs_text(sources) == "\n".join([
        "  Toward P1's full 210 epochs (P1 reads the end) at peak rate 0.0002, fp32, (4,3) inferential/symmetric "
        "of each trajectory (docs/p1_frontier.md; experiments/cpu_p1_m30_e210.sh, gpu_p1_m30_e210.sh):",
        "    γ 1.2 seed 2  epoch 27 0.80/0.00 → epoch 200 of 200 0.95/0.00 (CPU)",
        "                  epoch 27 0.30/0.00 → epoch 60 of 200 0.10/0.90 (one H100, unfinished)",
        "    γ 1.2 seed 3  epoch 27 0.70/0.00 → epoch 130 of 200 0.50/0.10 (one H200, unfinished)",
        "    γ 0.3 seed 1  epoch 120 of 200 0.00/0.99 (one H200, unfinished)",  # no evaluation at epoch 27
        "                  epoch 9 of 200 0.00/0.90 (CPU, unfinished)",
        "    beyond epoch 100, at the last evaluation (>= 0.9): γ 1.2 inferential on 1, symmetric on 0 of 2; "
        "γ 0.3 inferential on 0, symmetric on 1 of 1"])


def test_demo_states_the_committed_decomposition(tmp_path):
    """The demo's paper-config block says which draws set the answer, from the committed reference-parts runs:
    the latest evaluation of the longest-trained run of each crossing; nothing unless both crossings are there."""
    from anchorlab import rundir
    from anchorlab.demo import REFERENCE_PARTS, decomposition_text

    committed = decomposition_text()  # the fp32 mirror run, the longest-trained of its crossing; the data-only run
    mirror = rundir.read_metrics(REFERENCE_PARTS / "mirror_fp32")[-1]
    assert (f"our seed-3 data from the authors' init and order gives (4,3) inferential "
            f"{mirror['unseen_inferential_acc']:.3f}") in committed and f"after epoch {mirror['epoch']};" in committed
    assert "the authors' data from our seed-3 init and order gives (4,3) inferential 0.004, symmetric 0.958" \
        in committed

    def run(name, parts, evals):
        d = tmp_path / name
        d.mkdir()
        (d / "config.json").write_text(json.dumps({"task": {"reference": "f.npz", "reference_parts": parts}}))
        rows = [{"step": 10 * e, "epoch": e, "unseen_inferential_acc": i, "unseen_symmetric_acc": y,
                 "seen_test_acc": rest[0] if rest else 1.0} for e, i, y, *rest in evals]  # seen test 1 unless given
        (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    run("a", ["data"], [(0, 0.0, 0.0), (3, 0.1, 0.9)])
    assert decomposition_text(tmp_path) == ""  # one crossing only
    run("b", ["order", "init"], [(0, 0.0, 0.0), (3, 0.2, 0.1)])
    run("c", ["init", "order"], [(0, 0.0, 0.0), (6, 0.8, 0.0)])  # trained longer: this one is said
    run("e", ["data", "init"], [(12, 0.5, 0.5)])  # a crossing the line does not name: not said
    text = decomposition_text(tmp_path)
    assert "authors' init and order gives (4,3) inferential 0.800, symmetric 0.000 after epoch 6" in text
    assert "our seed-3 init and order gives (4,3) inferential 0.100, symmetric 0.900 after epoch 3" in text
    assert "alone" not in text and "after epoch 12" not in text
    run("d", ["init"], [(3, 0.3, 0.3), (9, 0.5, 0.4)])  # the init alone: said, at its latest evaluation
    text = decomposition_text(tmp_path)
    assert text.endswith("symmetric 0.900 after epoch 3; the authors' init alone (the rest ours) gives (4,3) "
                         "inferential 0.500, symmetric 0.400 after epoch 9 (docs/p1_both_sides.md)")
    run("f", ["order"], [(0, 0.0, 0.0, 0.0), (3, 0.02, 0.01, 0.04)])  # the seen pairs not fitted yet: not said
    assert "order alone" not in decomposition_text(tmp_path)
    (tmp_path / "f" / "metrics.jsonl").unlink()
    run("g", ["order"], [(6, 0.0, 1.0)])
    assert "; the authors' order alone (the rest ours) gives (4,3) inferential 0.000, symmetric 1.000 after epoch 6" \
        in decomposition_text(tmp_path)
    assert decomposition_text(tmp_path / "none") == ""


def test_demo_states_both_sides_by_p1s_protocol(tmp_path):
    """The demo's paper-config block says what P1's protocol gives at the γ line's ends, from the committed
    best-over-rates table: both sides on 3/3 seeds, each best with its own run's seen test; a best whose run does
    not fit the seen pairs (seen test < 0.9) is not counted; nothing when the table is absent or has one γ."""
    from anchorlab.demo import best_of_rates_text, paper_config_result, paper_config_text

    committed = best_of_rates_text()
    assert committed.startswith("  By P1's protocol (§4: per seed the best over the learning rates), epoch 27")
    assert "γ 1.2 inferential >= 0.9 on 3/3 seeds (0.938, 0.929, 0.955; seen test of those runs" in committed
    assert "γ 0.3 symmetric >= 0.9 on 3/3 seeds (1.000, 0.998, 0.981;" in committed
    # the answer comes first, right after the replays and the authors' log
    text = paper_config_text(paper_config_result()).splitlines()
    assert text[text.index(committed) - 1].startswith("  (the authors' γ 0.8 log")
    head = ("gamma,seed,inferential,symmetric,n_runs,seen_test_best_inferential,seen_test_best_symmetric\n")
    (tmp_path / "t.csv").write_text(head + "1.2,2,0.95,0.1,9,0.85,1.0\n1.2,1,0.93,0.0,9,0.97,1.0\n"
                                    "0.3,1,0.0,0.99,1,0.99,0.99\n")
    text = best_of_rates_text(tmp_path / "t.csv")
    assert "γ 1.2 inferential >= 0.9 on 1/2 seeds (0.930, 0.950; seen test of those runs 0.970, 0.850; " \
           "best of 9 run(s) a seed)" in text  # seed order; seed 2's best run does not fit the seen pairs
    assert "γ 0.3 symmetric >= 0.9 on 1/1 seeds" in text
    (tmp_path / "one.csv").write_text(head + "1.2,1,0.93,0.0,9,0.97,1.0\n")
    assert best_of_rates_text(tmp_path / "one.csv") == "" and best_of_rates_text(tmp_path / "none.csv") == ""


def test_only_trains_part_of_the_grid_under_the_whole_grids_ids_and_the_rest_follows(tmp_path, capsys):
    """`anchorlab sweep --only KEY=VALUE`: the points with that axis value (a tied axis's key too; a list keeps
    several values), each under the run id it has in the whole grid, so the sweep directory fills part by part:
    the manifest keeps the runs listed before, and the whole sweep afterwards trains only the rest."""
    from anchorlab.cli import main
    from anchorlab.sweep import narrow

    path = write_sweep(tmp_path, '"init.gamma, train.lr" = [[0.5, 1e-3], [1.0, 3e-4]]\n"seed" = [1, 2, 3]')
    whole = load_sweep(path)
    ids = {tuple(p.values()): cfg.run_id() for p, cfg in whole.configs()}
    part = narrow(whole, ["seed=[1, 3]", "train.lr=3e-4"])  # the tied axis, read by either of its keys
    assert [tuple(p.values()) for p in part.points()] == [(1.0, 3e-4, 1), (1.0, 3e-4, 3)]
    assert [cfg.run_id() for _, cfg in part.configs()] == [ids[(1.0, 3e-4, 1)], ids[(1.0, 3e-4, 3)]]
    out = tmp_path / "sw"
    assert main(["sweep", path, "--out", str(out), "--backend", "local", "--only", "seed=2"]) == 0
    assert "2/2 runs done" in capsys.readouterr().out
    assert main(["sweep", path, "--out", str(out), "--backend", "local", "--only", "seed=1",
                 "--only", "init.gamma=0.5"]) == 0
    manifest = json.loads((out / "sweep.json").read_text())
    assert set(manifest["runs"]) == {ids[(0.5, 1e-3, 2)], ids[(1.0, 3e-4, 2)], ids[(0.5, 1e-3, 1)]}
    assert main(["sweep", path, "--out", str(out), "--dry-run"]) == 0
    assert "3 done, 0 partial, 3 new" in capsys.readouterr().out  # the whole grid: the other three are left


def test_only_on_a_grown_grid_keeps_the_runs_listed_before_that_are_still_on_it(tmp_path):
    """A sweep whose grid grew (a new γ) run with --only: the manifest keeps every run listed before that is
    still a point of the grid (collect, status and figures read them), and drops those no longer on it."""
    from anchorlab.sweep import narrow

    out = tmp_path / "sw"
    plan(load_sweep(write_sweep(tmp_path, '"init.gamma" = [0.5, 1.0]\n"seed" = [1, 2]')), out)
    before = json.loads((out / "sweep.json").read_text())["runs"]
    assert len(before) == 4
    grown = load_sweep(write_sweep(tmp_path, '"init.gamma" = [0.5, 1.0, 1.5]\n"seed" = [1, 2]'))
    plan(narrow(grown, ["seed=1"]), out)
    runs = json.loads((out / "sweep.json").read_text())["runs"]
    assert set(before) < set(runs) and len(runs) == 5
    assert {p["init.gamma"] for p in runs.values()} == {0.5, 1.0, 1.5}
    shrunk = load_sweep(write_sweep(tmp_path, '"init.gamma" = [0.5]\n"seed" = [1, 2]'))
    plan(narrow(shrunk, ["seed=1"]), out)
    runs = json.loads((out / "sweep.json").read_text())["runs"]
    assert sorted((p["init.gamma"], p["seed"]) for p in runs.values()) == [(0.5, 1), (0.5, 2)]


@pytest.mark.parametrize("only, message", [
    ("seed=4", "--only seed: 4 is not on the axis; its values: 1, 2"),
    ("model.n_layers=2", "--only model.n_layers: not an axis of sweep t; its axis keys: init.gamma, seed"),
    ("seed", "--only seed: expected key=value"),
])
def test_only_with_a_key_or_value_off_the_grid_is_one_line_exit_2_nothing_written(tmp_path, capsys, only, message):
    from anchorlab.cli import main

    path = write_sweep(tmp_path, '"init.gamma" = [0.5, 1.0]\n"seed" = [1, 2]')
    assert main(["sweep", path, "--out", str(tmp_path / "sw"), "--only", only]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err
    assert not (tmp_path / "sw").exists()
