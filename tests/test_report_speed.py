"""What keeps the report fast, asserted without timing (the timing is benchmarks/report.py): every embedded
figure is drawn once, and the report's PNG is the pixels savefig draws; a sweep draws its single-run mechanism
figures for at most two representative runs and names them; the fixed layouts that replace tight_layout keep
every label inside the figure and off the other panels."""

from __future__ import annotations

import functools
import io
import re

import numpy as np
import pytest
from matplotlib.figure import Figure

from anchorlab import rundir
from anchorlab.plotting.curves import plot_training_curves
from anchorlab.plotting.mechanisms import plot_covariance_eigs, plot_spectra
from anchorlab.plotting.p2 import plot_sets_over_training
from anchorlab.report import html as report_html
from anchorlab.report import write_report
from anchorlab.report.anchor import curves_figure, representative
from anchorlab.train import train
from tests.conftest import tiny_config
from tests.test_report_reader import sweep


def alts(text: str) -> list[str]:
    return re.findall(r'<img alt="([^"]*)" src="data:image/png;base64,', text)


@pytest.fixture(scope="module")
def composite_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("speed") / "run"
    train(tiny_config(**{"train.epochs": 2}), d, show_progress=False)
    return d


@pytest.fixture(scope="module")
def three_gammas(tmp_path_factory):
    """A composite-task sweep over three γ, one seed: three grid points, as the demo's P1 grid."""
    return sweep(tmp_path_factory.mktemp("g3"), "g3", '"init.gamma" = [1.0, 0.5, 0.1]')


def test_each_embedded_figure_is_drawn_once(composite_run, tmp_path, monkeypatch):
    draws = []
    original = Figure.draw

    @functools.wraps(original)
    def counted(self, renderer):
        draws.append(self)
        return original(self, renderer)

    monkeypatch.setattr(Figure, "draw", counted)
    text = write_report(composite_run, tmp_path / "r.html").read_text()
    # a layout engine left on a figure (tight_layout leaves one) makes savefig draw it twice
    assert len(draws) == len(alts(text)) == 10  # the run figures of P1 (RUN_FIGURES) and the curves


def test_report_png_is_the_pixels_savefig_draws(composite_run):
    from PIL import Image

    history, cfg = rundir.read_metrics(composite_run), rundir.read_config(composite_run)
    buf = io.BytesIO()
    curves_figure(history, cfg).savefig(buf, format="png", dpi=report_html.DPI)
    png = report_html.fig_png(curves_figure(history, cfg))
    assert png == report_html.small_png(buf.getvalue())
    with Image.open(io.BytesIO(png)) as im:
        assert im.mode == "P" and im.size == Image.open(io.BytesIO(buf.getvalue())).size


def test_representative_runs_reason_most_and_memorize_most(tmp_path):
    runs = [tmp_path / n for n in "abcd"]
    rows = [{"run_id": "a", "unseen_inferential_acc": 0.2, "unseen_symmetric_acc": 0.1},
            {"run_id": "b", "unseen_inferential_acc": 0.5, "unseen_symmetric_acc": 0.9},
            {"run_id": "c", "unseen_inferential_acc": 0.5, "unseen_symmetric_acc": 1.0},
            {"run_id": "d", "status": "unfinished"}]
    chosen = representative(runs, rows, "composite")
    assert list(chosen) == [runs[1], runs[2]]  # b: the first of the most inferential; c: the most symmetric left
    assert "inferential" in chosen[runs[1]] and "symmetric" in chosen[runs[2]]
    # the same run is never chosen twice; runs without a value come last
    assert list(representative(runs[2:], rows, "composite")) == [runs[2], runs[3]]
    p2 = [{"run_id": "a", "mem_acc": 0.6, "rsn_test_acc": 0.0}, {"run_id": "b", "mem_acc": 0.0, "rsn_test_acc": 0.5}]
    assert list(representative(runs[:2], p2, "mem_rsn")) == [runs[1], runs[0]]
    assert representative(runs[:1], p2, "mem_rsn") == {runs[0]: "reasons most: highest D_rsn,test accuracy"}
    assert list(representative(runs, rows, "other task")) == [runs[0]]
    assert representative([], rows, "composite") == {}


def test_sweep_draws_single_run_figures_for_two_representative_runs(three_gammas, tmp_path):
    text = write_report(three_gammas, tmp_path / "r.html").read_text()
    a = alts(text)
    # the figures that compare runs: once, over the three grid points; the single-run ones for two runs only
    assert a.count("p1-fig3") == a.count("p1-fig5") == a.count("p1-fig13") == 1
    assert a.count("p1-fig4") == a.count("p1-fig3b") == a.count("training curves") == 2
    assert "curves and single-run mechanism figures for 2 representative run(s)" in text
    named = re.search(r"representative run\(s\) of those compared: (.*?)</p>", text).group(1)
    assert "most inferential" in named and "most symmetric" in named
    assert text.count("its own figures are drawn for the representative runs only") == 1


def test_mem_rsn_sweep_keeps_to_the_papers_model(tmp_path):
    base = ("[task]\nname = 'mem_rsn'\ndata_size = 2000\nseq_len = 3\n[model]\nname = 'emb_mlp'\nd_model = 8\n"
            "d_mlp = 16\n[train]\nbatch_size = 200\nepochs = 1\nthreads = 1\n")
    text = write_report(sweep(tmp_path, "p2", '"init.gamma" = [0.3, 0.8]', base), tmp_path / "r.html").read_text()
    a = alts(text)
    assert a.count("p2-fig4") == 2 and "p2-fig5" not in a  # P2 Fig. 4 is the Emb-MLP's; Fig. 5, 6 the Transformer's
    assert text.count("left out on a sweep's page: p2-fig5, p2-fig6 (P2 draws them for the Transformer)") == 2


def assert_laid_out(fig: Figure) -> None:
    """Every panel's labels inside the figure, no two panels' labels overlapping, the title above them."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    boxes = [ax.get_tightbbox(renderer) for ax in fig.axes if ax.get_visible()]
    for b in boxes:
        assert page.x0 - 1 <= b.x0 and b.x1 <= page.x1 + 1 and page.y0 - 1 <= b.y0 and b.y1 <= page.y1 + 1, b
    for i, b in enumerate(boxes):
        for c in boxes[i + 1:]:
            assert not b.overlaps(c), (b, c)
    if fig._suptitle is not None:
        title = fig._suptitle.get_window_extent(renderer)
        assert title.y1 <= page.y1 + 1 and all(not title.overlaps(b) for b in boxes)


def test_fixed_layouts_fit(composite_run):
    assert_laid_out(curves_figure(rundir.read_metrics(composite_run), rundir.read_config(composite_run)))
    epochs = list(range(13))
    wide = {f"line {k}": [10.0 ** (k - 12 + e / 4) for e in epochs] for k in range(6)}  # log ticks 10^-12 .. 10^3
    assert_laid_out(plot_training_curves(epochs, {"loss": wide, "accuracy": {"a": [e / 12 for e in epochs]},
                                                  **{f"panel {k}": {"b": epochs} for k in range(3)}},
                                         log_panels=("loss",), ncols=4, title="every run of the sweep"))
    rng = np.random.default_rng(0)
    spectra = [{f"blocks.{i}.attn.W_{m}": np.sort(rng.random(32))[::-1] * 10.0 ** -i for i in range(3) for m in "QKVO"}
               for _ in range(3)]
    assert_laid_out(plot_spectra(spectra, [f"γ {g}, Transformer 2L, seed 1" for g in (1, 0.5, 0.1)],
                                 notes={n: "sr 1.0 / 2.0 / 3.0" for n in spectra[0]}, title="singular values"))
    e = np.sort(rng.random(64))[::-1] ** 8
    assert_laid_out(plot_covariance_eigs([("γ 1, Transformer 2L, seed 1", e), ("γ 0.5, Transformer 2L, seed 1", e)],
                                         [("γ 1", np.arange(0, 4000, 1000), rng.random((4, 4)) * 0.05)] * 2))
    sets = ("mem", "rsn_train", "rsn_test")
    panel = {"epoch": list(range(10)), "loss": {s: [np.linspace(5, 1e-3, 10)] for s in sets},
             "acc": {s: [np.linspace(0, 1, 10)] for s in sets}}
    assert_laid_out(plot_sets_over_training([{**panel, "title": "γ = 0.3  (1 run)"}, {**panel, "title": "γ = 0.8"}],
                                            "P2 Emb-MLP: loss and accuracy on D_mem, D_rsn,train, D_rsn,test"))
