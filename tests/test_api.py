"""anchorlab.load_run / load_sweep: run and sweep directories as Python objects (tiny runs, ~1 s each)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import anchorlab
from anchorlab import rundir
from anchorlab.models import run_with_cache
from anchorlab.train import train
from tests.conftest import tiny_config
from tests.tiny import TINY_ANCHOR_TOML

pd = pytest.importorskip("pandas", reason="load_run(...).metrics needs the [notebook] extra")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("api") / "run"
    train(tiny_config(**{"task.data_size": 800, "train.epochs": 2}), d, show_progress=False)
    return d


def test_import_anchorlab_stays_light():
    code = "import sys, anchorlab; print('torch' in sys.modules, 'pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_load_run_gives_config_metrics_summary_checkpoints(run_dir):
    run = anchorlab.load_run(run_dir)
    assert run.kind == "anchor" and run.done and run.run_id == "run"
    assert anchorlab.load_run(run_dir / "config.json").path == run.path  # the file given: its run
    assert run.config == rundir.read_config(run_dir)
    history = rundir.read_metrics(run_dir)
    m = run.metrics
    assert isinstance(m, pd.DataFrame) and len(m) == len(history) == 3  # step 0 and after each epoch
    assert list(m["step"]) == [r["step"] for r in history]
    assert m["train_loss"].tolist() == pytest.approx([r["train_loss"] for r in history])
    assert isinstance(m["group_acc"].iloc[-1], dict)
    assert len(run.epochs) == 2
    assert run.summary["final_train_loss"] == history[-1]["train_loss"]
    assert run.checkpoints == rundir.checkpoint_steps(run_dir) and run.checkpoints[0] == 0
    assert "gamma=0.5" in repr(run)


def test_model_has_the_checkpoint_weights_and_hooks(run_dir):
    run = anchorlab.load_run(run_dir)
    last, first = run.model(), run.model(step=0)
    assert not last.training
    expected = rundir.load_checkpoint(run_dir, run.checkpoints[-1])
    for name, tensor in last.state_dict().items():
        torch.testing.assert_close(tensor, expected[name])
    assert not torch.equal(last.state_dict()["blocks.0.attn.W_Q"], first.state_dict()["blocks.0.attn.W_Q"])
    tokens = torch.from_numpy(run.data().inputs[:5])
    logits, cache = run_with_cache(last, tokens)
    assert cache["blocks.0.attn.hook_pattern"].shape == (5, 1, 9, 9)
    assert logits.shape[0] == 5
    with pytest.raises(FileNotFoundError, match="kept steps"):
        run.model(step=7)
    kept = run.checkpoints[-1]
    for wrong in (str(kept), float(kept)):  # a kept step of the wrong type is named as such
        with pytest.raises(TypeError, match=r"^step: expected an integer"):
            run.model(step=wrong)


def test_load_run_refuses_what_is_not_a_run(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a run directory"):
        anchorlab.load_run(tmp_path)


def test_load_sweep_is_the_collected_table(tmp_path):
    from anchorlab.cli import main
    from anchorlab.sweep import collect

    (tmp_path / "base.toml").write_text(TINY_ANCHOR_TOML)
    (tmp_path / "s.toml").write_text('name = "t"\nbase = "base.toml"\n[axes]\n"init.gamma" = [0.5, 1.0]\n')
    out = tmp_path / "sw"
    assert main(["sweep", str(tmp_path / "s.toml"), "--out", str(out), "--backend", "local"]) == 0
    table = anchorlab.load_sweep(out)
    assert len(table) == 2 and sorted(table["init.gamma"]) == [0.5, 1.0]
    assert table.to_dict("records") == [{"run_id": r["run_id"], "run_dir": str(out / r["run_id"]), **r}
                                        for r in collect(out)]  # what `anchorlab collect` writes
    with pytest.raises(FileNotFoundError, match="load_sweep"):
        anchorlab.load_run(out)


def test_load_run_of_a_language_model_run(tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    from anchorlab.cli import main
    from tests.test_lm import TINY  # the LM tests' tiny GPT-2 on PrOntoQA + stand-in stories

    d = tmp_path / "lm"
    assert main(["lm", *[a for s in TINY for a in ("--set", s)], "--out", str(d)]) == 0
    run = anchorlab.load_run(d)
    assert run.kind == "lm" and run.done
    assert "test_loss_prontoqa" in run.metrics.columns
    model = run.model()
    assert not model.training
    ids = torch.tensor([run.tokenizer().encode("Every cat is a feline.")])
    assert model(ids).shape[:2] == ids.shape
    out = model.hf(ids, output_attentions=True)  # eager attention: the patterns come back, rows summing to 1
    assert len(out.attentions) == run.config.model.n_layers
    torch.testing.assert_close(out.attentions[0].sum(-1), torch.ones(out.attentions[0].shape[:-1]))


def test_load_run_of_a_seq2seq_run(tmp_path):
    from anchorlab.text.seq2seq_config import Seq2SeqRunConfig, load_s2s_config
    from anchorlab.text.seq2seq_model import greedy_decode
    from anchorlab.text.seq2seq_train import train_seq2seq
    from tests.test_robustness import S2S_TINY

    d = tmp_path / "s2s"
    train_seq2seq(load_s2s_config(None, [*S2S_TINY, "train.epochs=2"]), d, show_progress=False)
    run = anchorlab.load_run(d)
    assert run.kind == "seq2seq" and run.done and isinstance(run.config, Seq2SeqRunConfig)
    assert run.config == rundir.read_config(d)
    assert {"em_train", "em_test", "test_loss"} <= set(run.metrics.columns) and len(run.metrics) == 2
    model = run.model()
    assert not model.training
    weights = rundir.load_checkpoint(d)
    assert all(torch.equal(v, weights[k]) for k, v in model.state_dict().items())
    rows = run.data().evals["test"].rows
    out = greedy_decode(model, rows, 4, 2, 8, torch.device("cpu"))
    assert len(out) == len(rows)
    with pytest.raises(ValueError, match="seq2seq run"):
        run.tokenizer()
