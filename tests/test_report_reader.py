"""Issue 19, what a reader of the report and the CLI sees: `anchorlab config` (TOML that reads back to the same
config, std = d_in^-γ), a report of several sources, P1 Fig. 2 over one axis, legends of at most 8 entries,
log axes limited to the data, model names in labels and captions, the γ comparison at the top, and the size."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

from anchorlab import rundir
from anchorlab.cli import main
from anchorlab.config import ConfigError, load_config
from anchorlab.figures import draw
from anchorlab.init import fan_in
from anchorlab.plotting.curves import MAX_LEGEND
from anchorlab.plotting.mechanisms import plot_covariance_eigs, plot_spectra
from anchorlab.report import write_report
from anchorlab.report.anchor import curves_figure
from anchorlab.report.config_text import config_text, std_table
from anchorlab.sweep import load_sweep, plan
from anchorlab.train import train
from tests.tiny import TINY_ANCHOR_TOML

TINY_SETS = ["model.d_model=16", "model.d_head=8", "model.d_mlp=16"]


def alts(text: str) -> list[str]:
    return re.findall(r'<img alt="([^"]*)" src="data:image/png;base64,', text)


def sweep(root, name, axes: str, base: str = TINY_ANCHOR_TOML):
    (root / f"{name}_base.toml").write_text(base)
    (root / f"{name}.toml").write_text(f'name = "{name}"\nbase = "{name}_base.toml"\n[axes]\n{axes}\n')
    for _, cfg, d in plan(load_sweep(root / f"{name}.toml"), root / name):
        train(cfg, d, show_progress=False)
    return root / name


@pytest.fixture(scope="module")
def gamma_sweep(tmp_path_factory):
    """init.gamma 0.5 / 1.0 × seeds 1, 2: four tiny composite-task runs."""
    return sweep(tmp_path_factory.mktemp("g"), "g", '"init.gamma" = [1.0, 0.5]\n"seed" = [1, 2]')


def test_config_prints_toml_that_reads_back_and_the_std_table(tmp_path, capsys):
    sets = ["init.gamma=0.7", *TINY_SETS]
    assert main(["config", *sum((["--set", s] for s in sets), [])]) == 0
    out = capsys.readouterr().out
    data = tomllib.loads(out)  # the std table is made of comments: the whole text is the config
    assert data["init"]["gamma"] == 0.7 and data["model"]["d_model"] == 16
    (tmp_path / "c.toml").write_text(out)
    cfg = load_config(None, sets)
    assert load_config(tmp_path / "c.toml") == cfg
    rows = [r for r in std_table(cfg) if r["d_in"] != ""]
    assert {r["weight"] for r in rows} >= {"embed.W_E", "blocks.0.attn.W_Q", "unembed.W_U"}
    for r in rows:
        shape = tuple(int(x) for x in r["shape"].split("x"))
        assert r["d_in"] == fan_in(r["role"], shape, cfg.init.convention)
        assert r["std"] == pytest.approx(r["d_in"] ** -0.7)
        assert re.search(rf"# {re.escape(r['weight'])}\s.*{r['std']:.6g}", out)
    # a config file of another kind reads back too; its table is said to be unavailable
    lm_toml = sorted((Path(__file__).parents[1] / "configs" / "text").glob("*.toml"))
    if lm_toml:
        lm = config_text(lm_toml[0])
        assert "not available" in lm and tomllib.loads(lm)["data"]
    assert main(["config", "--set", "init.gamma=-1"]) == 2
    assert "does not use it" not in out  # the Transformer uses every model field


def test_config_of_the_emb_mlp_marks_the_transformer_only_fields(tmp_path):
    """P2's Emb-MLP reads d_model, d_mlp and act: the other model fields are marked on their lines, and the text
    still reads back to the same config (a value set by hand included)."""
    from anchorlab.config import EMB_MLP_FIELDS

    base, sets = Path(__file__).parents[1] / "configs" / "p2" / "emb_mlp_demo.toml", ["model.n_heads=4"]
    text = config_text(base, sets)
    marked = {line.split(" = ")[0] for line in text.splitlines() if line.endswith("the Emb-MLP does not use it")}
    assert marked == {"n_heads", "d_head", "n_layers", "n_ctx", "norm", "ln_eps"}
    assert not marked & set(EMB_MLP_FIELDS)
    (tmp_path / "c.toml").write_text(text)
    assert load_config(tmp_path / "c.toml") == load_config(base, sets)


def test_fig2_over_one_axis_and_its_one_line_refusal(gamma_sweep, tmp_path, capsys):
    png = draw("p1-fig2", [gamma_sweep], tmp_path)
    assert png.is_file()
    lines = png.with_suffix(".csv").read_text().splitlines()
    assert lines[0].startswith("init.gamma,seed,") and len(lines) == 1 + 4
    seeds_only = sweep(tmp_path, "s", '"seed" = [1]')
    with pytest.raises(ConfigError, match="needs a sweep over init.gamma and model.n_layers"):
        draw("p1-fig2", [seeds_only], tmp_path)
    assert main(["figure", "p1-fig2", str(seeds_only), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_curve_legends_have_at_most_8_entries(gamma_sweep):
    d = next(p for p in sorted(gamma_sweep.iterdir()) if p.is_dir())
    fig = curves_figure(rundir.read_metrics(d), rundir.read_config(d))
    sizes = {ax.get_title(): len(ax.get_legend().get_texts()) for ax in fig.axes if ax.get_legend()}
    assert "accuracy per group" in sizes and max(sizes.values()) <= MAX_LEGEND, sizes
    texts = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert "4-3_xm0" in texts and any(t.startswith("seen pairs") for t in texts)


def test_log_axes_span_the_data_not_1e_30():
    e = np.array([3.0, 1.0, 0.2, 1e-35, 0.0])  # numerically zero eigenvalues
    fig = plot_covariance_eigs([("γ 0.5", e)], [])
    assert fig.axes[0].get_ylim()[0] > 1e-3
    fig = plot_spectra([{"W": e}])
    assert fig.axes[0].get_ylim()[0] > 1e-3


def test_report_of_two_sources_opens_with_the_gamma_comparison(gamma_sweep, tmp_path):
    runs = sorted(p for p in gamma_sweep.iterdir() if p.is_dir())
    text = write_report(runs[:1] + [gamma_sweep], tmp_path / "two.html").read_text()
    assert alts(text)[:2] == ["p1-gamma", "p1-curves"] and text.index('id="gamma"') < text.index('id="src-0"')
    assert 'id="src-1"' in text and "Transformer, 2 layers" in text
    assert "layer(s)" not in text
    # γ ascending in the collected table, inferential before symmetric
    table = text[text.index('id="s1-table"'):]
    head = re.findall(r"<th>([^<]*)</th>", table[:table.index("</thead>")])
    assert head.index("unseen_inferential_acc") < head.index("unseen_symmetric_acc")
    body = table[table.index("<tbody>"):table.index("</tbody>")]
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", tr) for tr in re.findall(r"<tr>(.*?)</tr>", body)]
    gammas = [float(r[head.index("init.gamma")]) for r in rows]
    assert gammas == [0.5, 0.5, 1.0, 1.0]
    # one γ only: no comparison
    assert "p1-gamma" not in alts(write_report(runs[0], tmp_path / "one.html").read_text())


def test_report_size_bound(gamma_sweep, tmp_path):
    page = write_report(gamma_sweep, tmp_path / "r.html")
    size = page.stat().st_size
    # 4 runs, 2 of them with figures: ~945 kB since the logit attribution and the order patching (2026-11-29),
    # when the demo's 11 runs (5 with figures) made a 2.07 MB page; a bound against a page that grows unnoticed
    assert size < 1_000_000, size
    a = alts(page.read_text())
    assert a.count("p1-fig13") == 1 and a.count("p1-fig4") == 2  # runs compared once; per-run figures per γ


@pytest.mark.parametrize("model", ["emb_mlp"])
def test_captions_name_the_model(tmp_path, model):
    sets = ["task.name='mem_rsn'", "task.data_size=2000", f"model.name='{model}'", "model.d_model=16",
            "model.d_head=8", "model.d_mlp=16", "train.batch_size=200", "train.epochs=1", "train.threads=1",
            "task.seq_len=3"]
    for g in (0.3, 0.8):
        train(load_config(None, [*sets, f"init.gamma={g}"]), tmp_path / f"r{g}", show_progress=False)
    text = write_report(tmp_path / "r0.3", tmp_path / "r.html").read_text()
    captions = re.findall(r"<figcaption>([^<]*)", text)
    assert captions and all("Emb-MLP" in c for c in captions), captions
    assert not any("Transformer" in c for c in captions) and "layer(s)" not in text
    assert "figure p2-fig6: " not in text  # reasons as one sentence, not the raw error
    out = draw("p2-fig8", [tmp_path / "r0.3", tmp_path / "r0.8"], tmp_path / "f8")
    assert out.is_file()
    from anchorlab.figures import p2 as fp2

    seen = {}
    orig = fp2.P.plot_fig8
    try:
        fp2.P.plot_fig8 = lambda left, right: seen.setdefault("left", left) and orig(left, right)
        draw("p2-fig8", [tmp_path / "r0.3", tmp_path / "r0.8"], tmp_path / "f8")
    finally:
        fp2.P.plot_fig8 = orig
    labels = [c["label"] for c in seen["left"]]
    assert len(set(labels)) == len(labels) == 2 and all("Emb-MLP" in lab for lab in labels)
