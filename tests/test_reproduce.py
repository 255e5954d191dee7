"""anchorlab reproduce: the registry (configs/reproduce.toml) is valid data, and an entry runs its sweeps and
draws its figures (a sweep figure, a run figure picked by grid point, a runs figure) in one call."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from anchorlab.config import ConfigError
from anchorlab.figures import FIGURES
from anchorlab.reproduce import REGISTRY, get, load_registry, reproduce
from anchorlab.sweep import load_sweep
from tests.tiny import TINY_ANCHOR_TOML


def test_shipped_registry_every_sweep_loads_and_every_selection_exists():
    entries = load_registry()
    assert {"p1-fig2", "p1-fig7", "p1-fig14", "p2-fig1", "p2-fig3a", "p2-fig3b", "p2-fig7a", "p2-fig7b",
            "p2-fig8"} <= set(entries)
    for rep in entries.values():
        for files in (rep.sweeps, rep.paper):
            if not files:
                continue
            points = [p for f in files for p, _ in load_sweep(f).configs()]
            for fig in rep.figures:
                kind = FIGURES[fig.name].sources
                assert kind != "run" or len(fig.select) == 1, (rep.name, fig.name)
                assert kind != "sweep" or len(files) == 1, (rep.name, fig.name)
                for want in fig.select:
                    assert any(all(p.get(k) == v for k, v in want.items()) for p in points), (rep.name, want)
    assert all(r.minutes is not None for n, r in entries.items() if n != "p2-fig8")
    assert [f.name for f in entries["p2-fig7a"].figures] == ["p2-fig7a", "p2-fig1"]


def test_both_sides_entry_is_p1s_protocol_at_the_two_ends_of_the_gamma_line():
    """p1-both-sides: one sweep (configs/sweeps/p1_ends_rates.toml, the paper config itself, so `--paper` names
    the same file), drawn as P1 reads it (per seed the best over its rates), as the authors' code reads it (best
    epoch, train-type keys) and run by run; a cost (minutes) that the demo prints."""
    rep = load_registry()["p1-both-sides"]
    assert [p.name for p in rep.sweeps] == ["p1_ends_rates.toml"] and rep.paper == rep.sweeps
    assert [(f.name, f.options, f.out) for f in rep.figures] == [
        ("p1-gamma", {"best_of_seed": True}, ""),
        ("p1-gamma", {"best_of_seed": True, "keys": "train", "use_best_epoch": True}, "authors_reading"),
        ("p1-gamma", {}, "each_run")]
    assert not any(f.select for f in rep.figures)
    assert rep.minutes is not None and rep.minutes > 600
    assert len(load_sweep(rep.sweeps[0]).configs()) == 54


def test_both_sides_m20_entry_runs_the_single_rate_sweep_and_draws_the_curves():
    """p1-both-sides-m20: P1's two γ of its example at the authors' one rate (configs/sweeps/p1_both_sides.toml),
    the curves with the training loss, the γ comparison and the per-key answers."""
    rep = load_registry()["p1-both-sides-m20"]
    assert [p.name for p in rep.sweeps] == ["p1_both_sides.toml"] and rep.paper == rep.sweeps
    assert [f.name for f in rep.figures] == ["p1-curves", "p1-gamma", "p1-keys"]
    assert rep.figures[0].options == {"loss": True}  # the training loss under the accuracies: post-fit spikes show
    assert FIGURES["p1-curves"].sources == "runs" and rep.minutes is not None and rep.minutes > 600
    assert len(load_sweep(rep.sweeps[0]).configs()) == 6


def test_fig2c_entry_is_p1s_multi_head_post_ln_variant_per_gamma_over_4_seeds():
    """p1-fig2c (P1 Fig. 2c, arXiv 2405.05409 App. A): the CPU and paper sweeps, each the 2-layer post-LN GPT-2 variant
    (4 heads, GELU) over a γ grid × 4 seeds (P1: std over 4 runs), drawn by p1-fig2c; the sizes and grids P1 does
    not give are pinned here as chosen (docs/reproduction.md, "P1 Fig. 2c")."""
    rep = load_registry()["p1-fig2c"]
    assert [p.name for p in rep.sweeps] == ["p1_fig2c_cpu.toml"]
    assert [p.name for p in rep.paper] == ["p1_fig2c_paper.toml"]
    assert [f.name for f in rep.figures] == ["p1-fig2c"] and FIGURES["p1-fig2c"].sources == "runs"
    assert rep.minutes is not None and 10 <= rep.minutes <= 30 and "Fig. 2c" in rep.about
    grids = {"cpu": (rep.sweeps[0], (64, 4, 10, 128), [0.4, 0.55, 0.7, 0.85, 1.0]),
             "paper": (rep.paper[0], (400, 4, 64, 1200), [0.3, 0.4, 0.5, 0.6, 0.7, 0.8])}
    for scale, (path, sizes, gammas) in grids.items():
        spec = load_sweep(path)
        assert spec.axes == {"init.gamma": gammas, "seed": [1, 2, 3, 4]}, scale
        cfgs = [cfg for _, cfg in spec.configs()]
        assert len(cfgs) == 4 * len(gammas)
        assert {(c.model.d_model, c.model.n_heads, c.model.d_head, c.model.d_mlp) for c in cfgs} == {sizes}, scale
        assert {(c.model.name, c.model.n_layers, c.model.act, c.model.norm) for c in cfgs} == {
            ("gpt", 2, "gelu", "post")}, scale
        assert sorted({c.init.gamma for c in cfgs}) == gammas
        assert sorted({(c.seeds.data_seed, c.seeds.init_seed, c.seeds.train_seed) for c in cfgs}) == [
            (s, s, s) for s in (1, 2, 3, 4)]
    # the rest is P1's training as the 1-head configs have it: paper.toml at paper scale, the demo's at CPU scale
    from anchorlab.config import load_config

    root = REGISTRY.parent / "p1"
    for variant, base in (("gpt2_paper.toml", "paper.toml"), ("gpt2_cpu.toml", "cpu_demo.toml")):
        v, b = load_config(root / variant), load_config(root / base)
        assert (v.task, v.train, v.init) == (b.task, b.train, b.init), variant
        assert (v.model.n_layers, v.model.d_model, v.model.d_mlp) == (b.model.n_layers, b.model.d_model, b.model.d_mlp)


def registry(tmp_path: Path, figures: str, extra: str = "") -> Path:
    (tmp_path / "base.toml").write_text(TINY_ANCHOR_TOML)
    (tmp_path / "grid.toml").write_text('name = "grid"\nbase = "base.toml"\n[axes]\n"init.gamma" = [0.5, 1.0]\n'
                                        '"model.n_layers" = [1, 2]\n')
    (tmp_path / "reg.toml").write_text(f'[tiny]\nabout = "a test"\nminutes = 1\nsweeps = ["grid.toml"]\n{extra}'
                                       f'figures = {figures}\n')
    return tmp_path / "reg.toml"


def test_an_entry_runs_its_sweep_and_draws_its_figures(tmp_path, capsys):
    reg = registry(tmp_path, '["p1-fig2", { name = "p1-fig4", select = { "init.gamma" = 1.0, "model.n_layers" = 2 }, '
                             'out = "small" }, { name = "p1-fig13", select = [{ "init.gamma" = 1.0, '
                             '"model.n_layers" = 2 }, { "init.gamma" = 0.5, "model.n_layers" = 2 }] }, "p1-curves"]')
    out = tmp_path / "out"
    written = reproduce("tiny", out, registry=reg, workers=1, show_progress=False)
    assert written == [out / "figures" / "p1-fig2.png", out / "figures" / "small" / "p1-fig4.png",
                       out / "figures" / "p1-fig13.png", out / "figures" / "p1-curves.png"]
    assert all(p.is_file() and p.with_suffix(".csv").is_file() for p in written)
    with open(out / "figures" / "p1-fig13.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["gamma"] for r in rows} == {"1.0", "0.5"}  # the two selected runs, and only those
    curves = (out / "figures" / "p1-curves.csv").read_text().splitlines()
    assert len({line.split(",")[0] for line in curves[1:]}) == 4  # every run of the entry, no select
    summaries = sorted((out / "grid").glob("*/summary.json"))
    assert len(summaries) == 4
    stamp = [p.stat().st_mtime_ns for p in summaries]
    reproduce("tiny", out, registry=reg, workers=1, show_progress=False)  # again: nothing retrained
    assert [p.stat().st_mtime_ns for p in summaries] == stamp
    capsys.readouterr()
    assert reproduce("tiny", out, registry=reg, dry_run=True) == []
    plan = capsys.readouterr().out
    assert "4 done" in plan.replace("done,", "done")
    # the plan names each PNG the real call wrote, with the selection that tells two of one name apart
    lines = plan[plan.index("then 4 figures"):].splitlines()
    assert lines[0] == f"then 4 figures -> {out / 'figures'}"
    assert [line.split()[0] for line in lines[1:]] == [str(p.relative_to(out / "figures")) for p in written]
    assert lines[2].endswith("(runs init.gamma=1.0 model.n_layers=2)")


@pytest.mark.parametrize("figures, extra, field", [
    ('["p9-fig1"]', "", r"tiny\.figures\[0\]\.name"),
    ('[{ name = "p1-fig2", colour = "red" }]', "", r"tiny\.figures\[0\]\.colour"),
    ('["p1-fig2"]', 'paper = ["missing.toml"]\n', r"tiny\.paper: sweep file"),
    ('["p1-fig2"]', 'seeds = 3\n', r"tiny\.seeds: unknown key"),
])
def test_bad_registry_names_the_field(tmp_path, figures, extra, field):
    with pytest.raises(ConfigError, match=field):
        load_registry(registry(tmp_path, figures, extra))


def test_unknown_entry_no_paper_sweep_and_unmatched_selection(tmp_path):
    reg = registry(tmp_path, '[{ name = "p1-fig4", select = { "init.gamma" = 7.0 } }]')
    with pytest.raises(ConfigError, match="name: unknown reproduction 'nope'; allowed: tiny"):
        get("nope", reg)
    with pytest.raises(ConfigError, match="--paper: tiny has no paper-scale sweep"):
        reproduce("tiny", tmp_path / "o", paper=True, registry=reg)
    with pytest.raises(ConfigError, match=r"select: no run of the sweeps has \{'init.gamma': 7.0\}"):
        reproduce("tiny", tmp_path / "o", registry=reg, workers=1, show_progress=False)


def test_batch_models_trains_an_entrys_runs_stacked_and_is_checked_first(tmp_path, capsys, monkeypatch):
    """--batch-models K (local back-end) reaches the trainer, the dry run states the groups, and a value the
    back-end or the runs cannot take is one ConfigError before anything is written."""
    import anchorlab.execute as execute

    reg = registry(tmp_path, '["p1-gamma"]')
    out = tmp_path / "out"
    assert reproduce("tiny", out, registry=reg, backend="local", batch_models=4, dry_run=True) == []
    assert "the 4 runs to train form 2 groups of 2 + 2 runs" in capsys.readouterr().out  # 1 and 2 layers
    for kwargs, match in (({"backend": "process", "batch_models": 2}, "batch_models: 2 needs backend 'local'"),
                          ({"backend": "local", "batch_models": 0}, "allowed values are integers >= 1")):
        with pytest.raises(ConfigError, match=match):
            reproduce("tiny", out, registry=reg, workers=1, show_progress=False, **kwargs)
        assert not out.exists()  # nothing written
    seen = []
    real = execute.run_batched
    monkeypatch.setattr(execute, "run_batched", lambda todo, k, progress: seen.append((len(todo), k)) or real(
        todo, k, progress))
    written = reproduce("tiny", out, registry=reg, workers=1, backend="local", batch_models=4, show_progress=False)
    assert seen == [(4, 4)] and written == [out / "figures" / "p1-gamma.png"]
    assert len(list((out / "grid").glob("*/DONE"))) == 4


def test_only_trains_part_of_an_entry_and_draws_no_figure_until_the_whole_has_run(tmp_path, capsys):
    """`anchorlab reproduce NAME --only KEY=VALUE`: that part of the entry's grids, under the whole grids' run ids;
    no figure (a figure may select runs outside the part), a line saying how to draw what is there; then the same
    command without --only trains only the rest and draws every figure. A key off the grid: one line, exit 2."""
    from anchorlab.cli import main

    reg = registry(tmp_path, '["p1-curves"]')
    out = tmp_path / "out"
    assert reproduce("tiny", out, registry=reg, workers=1, show_progress=False, only=("model.n_layers=1",)) == []
    said = capsys.readouterr().out
    assert "no figure drawn" in said and f"anchorlab figure NAME {out / 'grid'} (NAME: p1-curves)" in said
    assert len(list((out / "grid").glob("*/DONE"))) == 2 and not (out / "figures").exists()
    first = {p: p.stat().st_mtime_ns for p in (out / "grid").glob("*/summary.json")}
    assert reproduce("tiny", out, registry=reg, workers=1, show_progress=False) == [out / "figures" / "p1-curves.png"]
    assert len(list((out / "grid").glob("*/DONE"))) == 4
    assert {p: p.stat().st_mtime_ns for p in first} == first  # the part trained first was not trained again
    with pytest.raises(ConfigError, match=r"^--only seed: not an axis of sweep grid; its axis keys: init\.gamma, "):
        reproduce("tiny", tmp_path / "o2", registry=reg, workers=1, show_progress=False, only=("seed=1",))
    assert not (tmp_path / "o2").exists()
    assert main(["reproduce", "p1-both-sides", "--out", str(tmp_path / "o3"), "--only", "seed=9"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--only seed: 9 is not on the axis; its values: 1, 2, 3" in err
    assert not (tmp_path / "o3").exists()
