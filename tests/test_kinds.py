"""anchorlab.kinds: the run kind decided in one place; the LM tree's renamed fields still read from old run
directories and TOML files; the command line's --version and bare train."""

from __future__ import annotations

import json
import typing

import pytest

from anchorlab import kinds, rundir
from anchorlab.cli import main
from anchorlab.config import ConfigError, RunConfig
from anchorlab.sweep import expand, load_sweep, plan
from anchorlab.text.config import RENAMED, LMInitConfig, LMRunConfig, lm_from_dict, load_lm_config, upgrade
from tests.conftest import tiny_config

OLD_MODEL = {"n_layer": 2, "n_embd": 32, "n_head": 2, "activation": "gelu_new"}  # as config.json had it


def old_config_json(cfg: LMRunConfig) -> dict:
    d = cfg.to_dict()
    d["model"] = {"n_layer": cfg.model.n_layers, "n_embd": cfg.model.d_model, "n_head": cfg.model.n_heads,
                  "activation": cfg.model.activation}
    return d


def test_every_kind_names_importable_parts():
    for kind in kinds.KINDS.values():
        cls = kind.get("config_class")
        assert cls.kind == kind.name and "kind" not in cls().to_dict()  # a class constant, not a field
        for field in ("from_dict", "with_defaults", "load_config", "train", "summary_line"):
            assert callable(kind.get(field)), (kind.name, field)
        assert kinds.kind_of(cls()) is kind and kinds.kind_of_data(cls().to_dict()) is kind


def test_the_kind_of_plain_data_is_decided_by_its_data_table():
    assert kinds.kind_of_data({"data": {}}).name == "lm"
    assert kinds.kind_of_data({"task": {"name": "mem_rsn"}}).name == "anchor"
    assert kinds.kind_of_data({}).name == "anchor"
    assert isinstance(kinds.config_from_data(RunConfig().to_dict()), RunConfig)
    assert isinstance(kinds.config_from_data(LMRunConfig().to_dict()), LMRunConfig)


def test_the_lm_tree_names_its_sizes_as_the_anchor_tree():
    assert {"n_layers", "d_model", "n_heads"} <= set(LMRunConfig().to_dict()["model"])
    assert {"n_layers", "d_model", "n_heads"} <= set(RunConfig().to_dict()["model"])
    assert set(RENAMED.values()) == {"model.n_layers", "model.d_model", "model.n_heads"}


def test_an_old_config_json_loads_and_its_run_directory_opens(tmp_path):
    cfg = load_lm_config(None, ["model.n_layers=2", "model.d_model=32", "model.n_heads=2"])
    d = tmp_path / "old"
    d.mkdir()
    rundir.write_json(d / rundir.CONFIG, old_config_json(cfg))
    assert rundir.read_config(d) == cfg
    assert lm_from_dict(old_config_json(cfg)) == cfg
    assert rundir.open_run(d, cfg) == "resume"  # the same run: resumed, not refused
    with pytest.raises(ConfigError, match="model.d_model"):
        rundir.open_run(d, load_lm_config(None, ["model.n_layers=2", "model.d_model=64", "model.n_heads=2"]))


def test_old_names_in_a_toml_file_load_and_both_names_are_an_error(tmp_path):
    old = tmp_path / "old.toml"
    old.write_text("[data]\nn_prontoqa = 10\n[model]\nn_layer = 2\nn_embd = 32\nn_head = 2\n")
    new = tmp_path / "new.toml"
    new.write_text("[data]\nn_prontoqa = 10\n[model]\nn_layers = 2\nd_model = 32\nn_heads = 2\n")
    assert load_lm_config(old) == load_lm_config(new)
    with pytest.raises(ConfigError, match="model.n_layer: renamed model.n_layers"):
        load_lm_config(new, ["model.n_layer=3"])
    assert upgrade({"model": dict(OLD_MODEL)})["model"] == {"n_layers": 2, "d_model": 32, "n_heads": 2,
                                                           "activation": "gelu_new"}


def test_a_sweep_finds_a_run_directory_written_under_the_old_names(tmp_path):
    base = tmp_path / "base.toml"
    base.write_text("[data]\nn_prontoqa = 8\nn_stories = 0\nn_test_prontoqa = 4\n[model]\nn_layer = 1\n"
                    "n_embd = 16\nn_head = 2\n")
    spec_path = tmp_path / "sw.toml"
    spec_path.write_text('name = "s"\nbase = "base.toml"\n[axes]\n"init.gamma" = [0.5, 0.8]\n')
    spec = load_sweep(spec_path)
    out = tmp_path / "sw"
    (_, cfg, _), (_, other, _) = plan(spec, out)
    (out / "lm-before").mkdir()
    rundir.write_json(out / "lm-before" / rundir.CONFIG, old_config_json(cfg))
    rows = expand(spec, out)
    assert [r[2].name for r in rows] == ["lm-before", other.run_id()]


def test_the_init_conventions_agree_with_gamma_init():
    pytest.importorskip("torch")
    from anchorlab.gamma_init import CONVENTIONS

    assert typing.get_args(typing.get_type_hints(LMInitConfig)["convention"]) == CONVENTIONS


def test_version_and_bare_train(capsys):
    import anchorlab

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"anchorlab {anchorlab.__version__}"
    for cmd in ("train", "lm"):
        assert main([cmd]) == 2  # never the day-long paper-scale defaults by accident: one line saying why
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "give a config file" in err and f"anchorlab {cmd} --help" in err


def test_training_logs_the_kinds_weight_metrics_or_the_given_ones(tmp_path):
    from anchorlab.train import train

    cfg = tiny_config(**{"train.epochs": 1})
    train(cfg, tmp_path / "a", show_progress=False, weight_metrics=lambda model: {"probe": 1.5})
    rec = rundir.read_metrics(tmp_path / "a")[-1]
    assert rec["probe"] == 1.5 and "wq0_n_groups" not in rec
    train(cfg, tmp_path / "b", show_progress=False)  # GPT on the composite task: the P1 mechanism scalars
    assert "wq0_n_groups" in rundir.read_metrics(tmp_path / "b")[-1]
    assert json.loads((tmp_path / "b" / rundir.CONFIG).read_text()) == cfg.to_dict()


@pytest.mark.parametrize(("figure_name", "other"), [("p2-fig1", "lm"), ("p1-fig6", "seq2seq")])
def test_a_figure_of_one_kind_on_a_run_of_another_is_one_line_naming_both(tmp_path, figure_name, other):
    from anchorlab.figures import draw

    d = tmp_path / "run"
    d.mkdir()
    rundir.write_json(d / rundir.CONFIG, tiny_config().to_dict())  # an anchor-task run
    with pytest.raises(ConfigError, match=rf"^figure {figure_name}: .*run is not .*`anchorlab {other}`.* run \(it "
                                          r"holds a run of kind 'anchor'\)$"):
        draw(figure_name, [d], tmp_path / "fig")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=rf"^figure {figure_name}: .*empty is not a run directory"):
        draw(figure_name, [tmp_path / "empty"], tmp_path / "fig")
