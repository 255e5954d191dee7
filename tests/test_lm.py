"""anchorlab.text (config, data, model, train) / figures.text: a tiny γ-initialized GPT-2 (2 layers, d_model 32) on a
PrOntoQA + stand-in stories mix; each run takes ~1-3 s on one core."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from anchorlab import rundir  # noqa: E402
from anchorlab.cli import main  # noqa: E402
from anchorlab.config import ConfigError  # noqa: E402
from anchorlab.figures import draw  # noqa: E402
from anchorlab.rundir import read_config as read_lm_config  # noqa: E402
from anchorlab.text.config import LMRunConfig, load_lm_config  # noqa: E402
from anchorlab.text.data import load_data  # noqa: E402
from anchorlab.text.mix import IGNORE  # noqa: E402
from anchorlab.text.model import backward_batch, build_lm, mean_pairwise_cosine, micro_batches, scored_lengths  # noqa: E402
from anchorlab.text.train import train_lm  # noqa: E402

TINY = ["data.n_prontoqa=48", "data.n_stories=32", "data.n_test_prontoqa=24", "data.n_test_stories=8",
        "data.stories='standin'", "data.tokenizer='bpe'", "data.bpe_vocab=600", "data.n_ctx=160",
        "model.n_layers=2", "model.d_model=32", "model.n_heads=2", "train.epochs=3", "train.batch_size=16",
        "train.lr=3e-3", "train.eval_every=3", "train.eval_train_rows=16", "train.checkpoint_every=1",
        "train.threads=1"]


def tiny(*extra: str) -> LMRunConfig:
    return load_lm_config(None, TINY + list(extra))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("lm")
    out = []
    for g in (0.5, 0.8):
        d = base / f"g{g}"
        train_lm(tiny(f"init.gamma={g}"), d, show_progress=False)
        out.append(d)
    return out


def test_losses_fall_and_every_metric_is_logged(runs):
    hist = rundir.read_metrics(runs[0])
    assert rundir.is_done(runs[0])
    steps = [r["step"] for r in hist]
    assert steps == sorted(steps) and steps[0] == 0 and steps[-1] == 15  # 80 rows / 16 = 5 steps x 3 epochs
    first, last = hist[0], hist[-1]
    for key in ("train_loss_prontoqa", "train_loss_stories", "test_loss_prontoqa", "test_loss_stories"):
        assert last[key] < first[key] - 0.3, key
    assert first["train_loss"] is None and last["train_loss"] > 0
    for key in ("test_acc_prontoqa", "train_acc_prontoqa"):
        assert 0.0 <= last[key] <= 1.0
    for key in ("emb_cos_prontoqa", "emb_cos_stories", "emb_cos_prontoqa_all", "emb_cos_stories_all"):
        assert -1.0 <= last[key] <= 1.0
    # PrOntoQA (closed vocabulary, fixed templates) is learned faster than the stories, even here
    assert last["train_loss_prontoqa"] < last["train_loss_stories"]
    assert read_lm_config(runs[0]) == tiny("init.gamma=0.5")


def test_resume_gives_the_uninterrupted_result(runs, tmp_path, monkeypatch):
    cfg = tiny("init.gamma=0.5")
    real_save_resume = rundir.save_resume

    def crash_after_first_epoch(run_dir, model, opt, step, epoch, **kw):
        real_save_resume(run_dir, model, opt, step, epoch, **kw)
        if epoch == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(rundir, "save_resume", crash_after_first_epoch)
    with pytest.raises(KeyboardInterrupt):
        train_lm(cfg, tmp_path / "r", show_progress=False)
    monkeypatch.setattr(rundir, "save_resume", real_save_resume)
    assert not rundir.is_done(tmp_path / "r")
    train_lm(cfg, tmp_path / "r", show_progress=False)
    assert rundir.read_metrics(tmp_path / "r") == rundir.read_metrics(runs[0])
    a, b = rundir.load_checkpoint(tmp_path / "r"), rundir.load_checkpoint(runs[0])
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_checkpoint_reloads_with_tied_embeddings(runs):
    cfg = read_lm_config(runs[0])
    model = build_lm(cfg, 600, 0)
    model.load_state_dict(rundir.load_checkpoint(runs[0]))
    hf = model.hf
    assert hf.lm_head.weight.data_ptr() == hf.transformer.wte.weight.data_ptr()
    assert torch.equal(hf.transformer.wte.weight, rundir.load_checkpoint(runs[0])["hf.transformer.wte.weight"])


def test_build_lm_draws_gamma_init():
    for g in (0.3, 0.8):
        w = build_lm(tiny(f"init.gamma={g}"), 600, 0).hf.transformer.h[0].mlp.c_fc.weight  # [in 32, out 128]
        assert w.std().item() == pytest.approx(32 ** -g, rel=0.1)


def test_lm_defaults_are_the_paper_values():
    """LMRunConfig's defaults are the paper scale its docstring claims (P2 Fig. 1 / 7 [S2]): 5,000 PrOntoQA + 5,000
    story rows, 200 epochs, HF GPT-2 small (12 layers, d_model 768, 12 heads, GPT-2's gelu_new) with GPT-2's BPE;
    PrOntoQA's 1-5 hops. (The default story source is the offline stand-in; paper runs set data.stories.)"""
    c = LMRunConfig().validate()
    assert (c.data.n_prontoqa, c.data.n_stories, c.train.epochs) == (5000, 5000, 200)
    assert (c.model.n_layers, c.model.d_model, c.model.n_heads, c.model.activation) == (12, 768, 12, "gelu_new")
    assert (c.data.tokenizer, c.data.min_hops, c.data.max_hops) == ("gpt2", 1, 5)
    assert c.total_steps() == -(-10_000 // c.train.batch_size) * 200  # one row per example and per story
    assert load_lm_config(None) == c


def test_built_gpt2_has_no_dropout():
    """The authors' HF GPT-2 runs set dropout to 0 (SPEC E12): the built model's config says so, no dropout module
    has p > 0, and two forward passes in train mode agree exactly; the sizes reach HF's config."""
    model = build_lm(tiny(), 600, 0)
    hf = model.hf.config
    assert (hf.resid_pdrop, hf.embd_pdrop, hf.attn_pdrop) == (0.0, 0.0, 0.0)
    assert (hf.n_layer, hf.n_embd, hf.n_head, hf.vocab_size, hf.n_positions) == (2, 32, 2, 600, 160)
    dropouts = [m for m in model.modules() if isinstance(m, torch.nn.Dropout)]
    assert dropouts and all(m.p == 0 for m in dropouts)
    model.train()
    ids = torch.randint(0, 600, (2, 24), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(model(ids), model(ids))


def test_fused_gelu_is_gpt2s_gelu():
    """model.activation = "gelu_pytorch_tanh" reaches HF's MLP and computes GPT-2's gelu_new to float rounding."""
    ref, fused = build_lm(tiny(), 600, 0), build_lm(tiny("model.activation='gelu_pytorch_tanh'"), 600, 0)
    assert type(ref.hf.transformer.h[0].mlp.act) is not type(fused.hf.transformer.h[0].mlp.act)
    fused.load_state_dict(ref.state_dict())
    ids = torch.randint(0, 600, (3, 40), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(fused(ids), ref(ids), rtol=0, atol=1e-5)


def test_mean_pairwise_cosine():
    assert mean_pairwise_cosine(torch.ones(4, 3) * torch.tensor([[1.0], [2.0], [3.0], [4.0]])) == pytest.approx(1.0)
    assert mean_pairwise_cosine(torch.eye(5)) == pytest.approx(0.0)
    e = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # pair cosines 0, 1/√2, 1/√2
    assert mean_pairwise_cosine(e) == pytest.approx((2 ** -0.5) * 2 / 3)


@pytest.mark.parametrize("name", ["p2-fig1", "p2-fig7a", "p2-fig7b", "p1-fig7", "p1-fig7-curves"])
def test_each_figure_writes_png_and_csv(runs, tmp_path, name):
    png = draw(name, runs, tmp_path)
    assert png.stat().st_size > 5000 and png.read_bytes()[:4] == b"\x89PNG"
    lines = png.with_suffix(".csv").read_text().splitlines()
    assert len(lines) >= 3  # header + a row per run at least
    if name == "p2-fig7a":
        header = lines[0].split(",")
        row = dict(zip(header, lines[-1].split(",")))
        lq, ls = float(row["L_prontoqa"]), float(row["L_stories"])
        assert float(row["delta_L"]) == pytest.approx((ls - lq) / lq)
    if name == "p1-fig7-curves":  # a row per run and evaluation, its accuracies as logged
        header = lines[0].split(",")
        hist = [r for d in runs for r in rundir.read_metrics(d) if "test_acc_prontoqa" in r]
        assert len(lines) - 1 == len(hist)
        rows = [dict(zip(header, line.split(","))) for line in lines[1:]]
        assert sorted(float(r["test_acc"]) for r in rows) == sorted(r["test_acc_prontoqa"] for r in hist)


def test_fig7_marks_a_size_that_never_converged_at_its_last_step():
    """A data size where a run never reached the level is an open triangle at the last step trained (it used to
    be left out, so a panel could show nothing), named in the legend; a converged size is not marked."""
    import math

    from anchorlab.plotting.text import plot_data_size

    fig = plot_data_size([{"label": "a", "n": [300, 3000], "steps": [450.0, math.nan], "acc": [0.5, 0.8],
                           "unconverged": [math.nan, 6000]}], "t")
    a1 = fig.axes[0]
    (marks,) = [line for line in a1.get_lines() if line.get_marker() == "^" and len(line.get_xdata())]
    assert list(marks.get_xdata()) == [300, 3000] and math.isnan(marks.get_ydata()[0])
    assert marks.get_ydata()[1] == 6000 and marks.get_markerfacecolor() == "none"
    assert [t.get_text() for t in a1.get_legend().get_texts()] == ["not converged by this step"]


def test_figure_labels_tell_init_conventions_apart():
    from anchorlab.figures.text import _label

    assert _label(tiny("init.gamma=0.3")) == "γ = 0.3"
    assert _label(tiny("init.gamma=0.3", "init.convention='authors_gpt2'", "seeds.init_seed=2")) == \
        "γ = 0.3, authors gpt2, seed 2"
    assert _label(tiny('init.overrides={"*.wte" = 0.94}')) == "γ = 0.5, *.wte γ 0.94"


def test_figure_rejects_a_non_lm_run(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"task": {"name": "composite"}}))
    with pytest.raises(ConfigError, match="not an `anchorlab lm` run"):
        draw("p2-fig1", [tmp_path], tmp_path / "out")


@pytest.mark.parametrize("override, field", [
    ("model.n_heads=3", "model.n_heads"), ("data.foo=1", "data.foo"), ("init.convention='xyz'", "init.convention"),
    ("init.gamma=-1", "init.gamma"), ("data.tokenizer='wordpiece'", "data.tokenizer"),
    ("train.batch_size=0", "train.batch_size"), ("data.max_hops=9", "data.max_hops"),
    ("data.ontology='mixed'", "data.ontology"), ("data.ordering='sorted'", "data.ordering"),
    ("model.activation='relu'", "model.activation"), ("train.micro_batches=0", "train.micro_batches"),
    ("train.micro_batches=17", "train.micro_batches"), ("data.prontoqa_sampling='long'", "data.prontoqa_sampling"),
])
def test_config_errors_name_the_field(override, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        tiny(override)


def test_ontology_option_reaches_the_generator(tmp_path):
    assert tiny("data.ontology=true").data.ontology == "true"  # --set parses `true` as a bool; the field takes it
    with pytest.raises(ConfigError, match=r"data\.max_hops.*1\.\.7"):
        tiny("data.ontology='true'", "data.max_hops=8")
    from anchorlab.text.data import build_data
    from anchorlab.text.mix import load_mix
    from anchorlab.text.tokenizers import load_tokenizer

    cfg = tiny("data.ontology='false'", "data.n_stories=0", "data.n_test_stories=0", "data.tokenizer='gpt2_compact'",
               "data.distractor=false")
    build_data(cfg, tmp_path / "data")
    tok = load_tokenizer(tmp_path / "data" / "tokenizer.json")
    text = tok.decode(load_mix(tmp_path / "data" / "train")[0].inputs[0].tolist())
    assert "mammal" in text or "animal" in text or "vertebrate" in text, text  # real concept words, not wumpus
    assert "umpus" not in text


def test_compact_gpt2_run(tmp_path):
    """data.tokenizer = "gpt2_compact": GPT-2's segmentation with the used ids only; labels are single tokens."""
    d = tmp_path / "r"
    s = train_lm(tiny("data.tokenizer='gpt2_compact'", "train.epochs=1"), d, show_progress=False)
    rec = json.loads((d / "data" / "train" / "mix.json").read_text())
    assert rec["tokenizer"].startswith("gpt2-compact") and rec["vocab_size"] < 2000
    assert build_lm(read_lm_config(d), rec["vocab_size"], 0).get_input_embeddings().weight.shape[0] == rec["vocab_size"]
    assert 0.0 <= s["test_acc_prontoqa"] <= 1.0


def test_bpe_too_small_for_the_labels_names_the_field(tmp_path):
    with pytest.raises(ConfigError, match=r"data\.bpe_vocab"):
        train_lm(tiny("data.bpe_vocab=300"), tmp_path / "r", show_progress=False)


def test_run_id_is_stable_and_config_sensitive():
    assert tiny().run_id() == tiny().run_id()
    assert tiny().run_id() != tiny("init.gamma=0.8").run_id()


def test_cli_lm(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[data]\nstories = 'standin'\n")
    args = ["lm", str(cfg), "--out", str(tmp_path / "run")] + [a for s in TINY for a in ("--set", s)]
    assert main(args + ["--set", "train.epochs=1"]) == 0
    assert "test acc PrOntoQA" in capsys.readouterr().out
    assert rundir.is_done(tmp_path / "run")
    assert main(["lm", str(cfg), "--set", "model.d_model=30", "--set", "model.n_heads=4"]) == 2
    assert "model.n_heads" in capsys.readouterr().err


def test_cli_figure_option(runs, tmp_path):
    out = tmp_path / "f"
    assert main(["figure", "p2-fig7b", *map(str, runs), "--out", str(out), "--option", "all_tokens=true"]) == 0
    assert "all" in (out / "p2-fig7b.csv").read_text().splitlines()[1].split(",")
    assert main(["figure", "p2-fig1", *map(str, runs), "--out", str(out), "--option", "level=0.9"]) == 2


@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parents[1] / "configs" / "text").glob("*.toml")),
                         ids=lambda p: p.name)
def test_every_lm_config_loads(path):
    cfg = load_lm_config(path)
    assert cfg.data.n_prontoqa > 0 and cfg.run_id().startswith("lm-")


def test_run_made_before_a_field_existed_still_matches(tmp_path):
    """A config.json written before data.ontology existed is that field's default, so the run resumes."""
    d = tmp_path / "r"
    assert rundir.open_run(d, tiny()) == "new"
    stored = json.loads((d / rundir.CONFIG).read_text())
    del stored["data"]["ontology"]
    (d / rundir.CONFIG).write_text(json.dumps(stored))
    assert rundir.open_run(d, tiny()) == "resume"
    with pytest.raises(ConfigError, match=r"data\.ontology"):
        rundir.open_run(d, tiny("data.ontology='false'"))


def test_prontoqa_sampling_reaches_the_generator(tmp_path, monkeypatch):
    from anchorlab.text import prontoqa
    from anchorlab.text.data import build_data

    seen, real = [], prontoqa.generate
    monkeypatch.setattr(prontoqa, "generate", lambda cfg, n, seed: seen.append(cfg.sampling) or real(cfg, n, seed))
    build_data(tiny("data.prontoqa_sampling=short", "data.n_stories=0", "data.n_test_stories=0"), tmp_path / "d")
    assert seen == ["short", "short"]  # train and test
    toml = tmp_path / "c.toml"
    toml.write_text("[data]\nn_prontoqa = 10\n")
    assert load_lm_config(toml).data.prontoqa_sampling == tiny().data.prontoqa_sampling == "reference"


def test_a_run_made_before_prontoqa_sampling_existed_is_a_short_run(tmp_path):
    """Runs made before data.prontoqa_sampling existed drew PrOntoQA as "short" does, not as the default: their
    config.json (without the field) reads as "short", a "short" config keeps their run id (the default config's
    id before the field, lm-6bd931bd4cbb), and the default config is another run."""
    assert load_lm_config(None, ["data.prontoqa_sampling=short"]).run_id() == "lm-6bd931bd4cbb"
    assert LMRunConfig().run_id() != "lm-6bd931bd4cbb"
    old = tiny("data.prontoqa_sampling=short")
    d = tmp_path / old.run_id()
    assert rundir.open_run(d, old) == "new"
    stored = json.loads((d / rundir.CONFIG).read_text())
    del stored["data"]["prontoqa_sampling"]
    (d / rundir.CONFIG).write_text(json.dumps(stored))
    assert read_lm_config(d) == old and read_lm_config(d).run_id() == d.name
    assert rundir.open_run(d, old) == "resume"
    with pytest.raises(ConfigError, match=r"data\.prontoqa_sampling"):
        rundir.open_run(d, tiny())  # the default draws other PrOntoQA data: not this run


def test_micro_batches_split_a_batch_by_length():
    targets = torch.full((6, 10), IGNORE)
    for row, last in enumerate((9, 2, 5, 0, 7, 3)):
        targets[row, last] = 1
    targets[3] = IGNORE  # a row with nothing scored
    lengths = scored_lengths(targets)
    assert lengths.tolist() == [10, 3, 6, 0, 8, 4]
    rows = torch.tensor([5, 0, 2, 3, 1, 4])
    assert micro_batches(rows, lengths, 1)[0] is rows  # k = 1: the batch as drawn, same order
    groups = micro_batches(rows, lengths, 3)
    assert [g.tolist() for g in groups] == [[3, 1], [5, 2], [4, 0]]
    assert sorted(torch.cat(micro_batches(rows, lengths, 4)).tolist()) == sorted(rows.tolist())


def test_micro_batches_give_the_batch_gradient(runs):
    """Accumulating length-sorted micro-batches backpropagates the whole batch's loss: same loss and gradient."""
    cfg = read_lm_config(runs[0])
    train, _, tok = load_data(runs[0], cfg)
    rows, lengths = torch.arange(0, 80, 5), scored_lengths(train.targets)
    assert len(set(lengths[rows].tolist())) > 3  # rows of many lengths: the groups are cut differently
    grads, losses = [], []
    for k in (1, 3, 16):
        model = build_lm(cfg, tok.vocab_size, tok.eos_id)
        loss, sums = backward_batch(model, train, rows, lengths, k, torch.device("cpu"))
        losses.append((loss.item(), sums))
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
    for (loss, sums), g in zip(losses[1:], grads[1:], strict=True):
        assert loss == pytest.approx(losses[0][0], rel=1e-6)
        assert torch.allclose(sums, losses[0][1], rtol=1e-5)
        for n in g:
            assert torch.allclose(g[n], grads[0][n], rtol=1e-4, atol=1e-7), n


def test_micro_batch_run_tracks_the_plain_run(runs, tmp_path):
    d = tmp_path / "mb3"
    train_lm(tiny("init.gamma=0.5", "train.micro_batches=3"), d, show_progress=False)
    ref, got = rundir.read_metrics(runs[0]), rundir.read_metrics(d)
    assert [r["step"] for r in ref] == [r["step"] for r in got]
    for a, b in zip(ref[1:], got[1:], strict=True):
        for key in ("train_loss", "train_loss_prontoqa", "test_loss_stories"):
            assert b[key] == pytest.approx(a[key], rel=1e-3), key


def test_a_source_the_mix_lacks_is_left_out_not_shown_as_nan():
    """A PrOntoQA-only run (P1 Fig. 7) has no story rows: its stories loss is NaN by construction, which the final
    line leaves out (a shown nan reads as a diverged run)."""
    from anchorlab.text.train import summary_line

    s = {"step": 30, "train_loss_prontoqa": 0.5, "train_loss_stories": float("nan"), "test_acc_prontoqa": 0.75}
    line = summary_line(tiny(), s)
    assert line == "step 30, train loss PrOntoQA 0.5, test acc PrOntoQA 0.75" and "nan" not in line
