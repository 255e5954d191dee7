"""P1's real-task runs (kind ``seq2seq``: SCAN, COGS, addition): the loss only on the output tokens, batched greedy
decoding and exact match, a memorised tiny SCAN set decoded exactly, a tiny SCAN sweep end to end through the CLI
with its Fig. 6 drawing, COGS on a self-written sample, the one-line exit 2 without COGS files, and the registry."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import torch

from anchorlab import kinds, rundir
from anchorlab.cli import main
from anchorlab.tasks import addition as A
from anchorlab.text.cogs import COGS_ENV, GEN_TYPES
from anchorlab.text.seq2seq import IGNORE
from anchorlab.text.seq2seq_config import Seq2SeqRunConfig, load_s2s_config, s2s_from_dict
from anchorlab.text.seq2seq_data import task_rows
from anchorlab.text.seq2seq_model import exact_match_flags, greedy_decode, output_loss, references
from anchorlab.text.seq2seq_train import train_seq2seq

CPU = torch.device("cpu")
# A model small and fast enough to memorise 12 SCAN commands (+ 1 "turn left") in 150 full-batch steps.
TINY = ["seq2seq.task=scan", "seq2seq.n_train=12", "seq2seq.n_test=20", "model.arch=gpt", "model.n_layers=2",
        "model.d_model=64", "model.n_heads=2", "train.epochs=150", "train.batch_size=13", "train.lr=3e-3",
        "train.eval_every=1000", "train.eval_train_rows=13", "train.checkpoint_every=1000", "train.threads=1"]


def scan_cfg(*extra: str) -> Seq2SeqRunConfig:
    return load_s2s_config(None, [*TINY, *extra])


def test_loss_mask_covers_exactly_the_output_and_its_end_token():
    data = task_rows(scan_cfg("seq2seq.n_train=50"))
    rows = data.train
    for i in range(len(rows)):
        p, n = int(rows.prompt_len[i]), int(rows.output_len[i])
        scored = np.flatnonzero(rows.targets[i] != IGNORE)
        assert scored.tolist() == list(range(p - 1, p + n))  # from <sep>'s prediction to <eos>'s
        assert rows.targets[i, p + n - 1] == data.eos_id
    # addition: only the 4 answer digits are scored
    add = task_rows(load_s2s_config(None, ["seq2seq.task=addition", "seq2seq.n_train=100", "seq2seq.n_test=10"]))
    assert (add.train.targets != IGNORE).sum(1).tolist() == [4] * 100
    assert np.flatnonzero(add.train.targets[0] != IGNORE).tolist() == list(range(A.ANSWER_TARGETS.start,
                                                                                  A.ANSWER_TARGETS.stop))
    assert [r for r in references(add.evals["test"].rows)] == add.evals["test"].rows.targets[:, 7:11].tolist()


def test_output_loss_ignores_every_prompt_position():
    rows = task_rows(scan_cfg("seq2seq.n_train=20")).train
    x, y = torch.as_tensor(rows.inputs), torch.as_tensor(rows.targets)
    base = torch.randn(len(rows), rows.n_ctx, 30)

    def model_with(logits):
        return lambda ids: logits[:, :ids.shape[1]]

    loss, count = output_loss(model_with(base), x, y)
    assert count == int((y != IGNORE).sum())
    prompt = base.clone()
    for i, p in enumerate(rows.prompt_len):
        prompt[i, :p - 1] += 100 * torch.randn(p - 1, 30)  # predictions of input words: no loss
    assert torch.allclose(output_loss(model_with(prompt), x, y)[0], loss)
    output = base.clone()
    output[0, rows.prompt_len[0]] += 100 * torch.randn(30)  # an output word's prediction: loss
    assert not torch.allclose(output_loss(model_with(output), x, y)[0], loss)


class Oracle(torch.nn.Module):
    """Predicts each row's reference continuation (looked up by prefix), or ``wrong`` at one position."""

    def __init__(self, rows, eos, vocab, wrong_at=None):
        super().__init__()
        self.next = {}
        for i, ref in enumerate(references(rows)):
            p = int(rows.prompt_len[i])
            full = rows.inputs[i, :p].tolist() + ref + ([eos] if eos is not None else [])
            for j in range(p, len(full)):
                self.next[tuple(full[:j])] = full[j]
        self.vocab, self.wrong_at = vocab, wrong_at

    def forward(self, ids):
        out = torch.zeros(ids.shape[0], ids.shape[1], self.vocab)
        for b, row in enumerate(ids.tolist()):
            t = self.next.get(tuple(row), 0)
            if self.wrong_at is not None and len(row) == self.wrong_at:
                t = (t + 1) % self.vocab
            out[b, -1, t] = 1.0
        return out


@pytest.mark.parametrize("task", ["scan", "addition"])
def test_greedy_decoding_of_an_oracle_is_exact_and_one_wrong_token_is_not(task):
    cfg = scan_cfg("seq2seq.n_train=40") if task == "scan" else load_s2s_config(
        None, ["seq2seq.task=addition", "seq2seq.n_train=10", "seq2seq.n_test=30"])
    data = task_rows(cfg)
    rows = data.evals["test"].rows
    oracle = Oracle(rows, data.eos_id, data.vocab_size)
    pred = greedy_decode(oracle, rows, data.max_new(rows), data.eos_id, batch_size=7, device=CPU)
    assert exact_match_flags(pred, rows).all()
    assert [len(p) for p in pred] == rows.output_len.tolist()  # stopped at <eos> (SCAN) / after 4 digits
    wrong = Oracle(rows, data.eos_id, data.vocab_size, wrong_at=int(rows.prompt_len.min()) + 1)
    flags = exact_match_flags(greedy_decode(wrong, rows, data.max_new(rows), data.eos_id, 7, CPU), rows)
    assert not flags[(rows.prompt_len == rows.prompt_len.min()) & (rows.output_len > 1)].any()


def test_a_memorised_tiny_set_decodes_exactly(tmp_path):
    s = train_seq2seq(scan_cfg(), tmp_path / "run", show_progress=False)
    assert s["em_train"] == 1.0  # every training command decoded exactly (13 rows scored)
    assert s["train_loss"] < 0.3 and s["n_train_lines"] == 13 and s["primitive_copies"] == 1
    data = json.loads((tmp_path / "run" / "data.json").read_text())
    assert data["tokens"][:3] == ["<pad>", "<sep>", "<eos>"]


def test_tiny_scan_sweep_through_the_cli_and_its_fig6(tmp_path, capsys):
    base = tmp_path / "tiny.toml"
    base.write_text("[seq2seq]\ntask = 'scan'\nn_train = 12\nn_test = 20\n"
                    "[model]\narch = 'gpt'\nn_layers = 2\nd_model = 64\nn_heads = 2\n"
                    "[train]\nepochs = 150\nbatch_size = 13\nlr = 3e-3\neval_every = 1000\neval_train_rows = 13\n"
                    "checkpoint_every = 1000\nthreads = 1\n")
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(f'name = "tiny"\nbase = "{base.name}"\n[axes]\n'
                     '"init.gamma, train.weight_decay" = [[0.7, 0.1], [0.3, 0.01]]\n')
    out = tmp_path / "out"
    assert main(["sweep", str(sweep), "--out", str(out), "--backend", "local", "--workers", "1"]) == 0
    manifest = json.loads((out / "sweep.json").read_text())
    assert len(manifest["runs"]) == 2
    for run_id in manifest["runs"]:
        assert isinstance(rundir.read_config(out / run_id), Seq2SeqRunConfig)
        assert rundir.read_json(out / run_id / "summary.json")["em_train"] == 1.0
    assert main(["figure", "p1-fig6", str(out), "--out", str(tmp_path / "fig")]) == 0
    with open(tmp_path / "fig" / "p1-fig6.csv") as f:
        rows = list(csv.DictReader(f))
    assert sorted((float(r["gamma"]), float(r["weight_decay"])) for r in rows) == [(0.3, 0.01), (0.7, 0.1)]
    assert {r["n_train"] for r in rows} == {"12"} and all(float(r["em_train"]) == 1.0 for r in rows)
    assert (tmp_path / "fig" / "p1-fig6.png").stat().st_size > 0


@pytest.fixture
def cogs_sample(tmp_path, monkeypatch):
    from tests.test_cogs import LINES

    for split, lines in LINES.items():
        (tmp_path / f"{split}.tsv").write_text("".join("\t".join(r) + "\n" for r in lines))
    monkeypatch.setenv(COGS_ENV, str(tmp_path))
    return tmp_path


def test_cogs_run_on_a_self_written_sample(cogs_sample, tmp_path):
    cfg = load_s2s_config(None, ["seq2seq.task=cogs", "model.arch=gpt2", "model.n_layers=1", "model.d_model=32",
                                 "model.n_heads=2", "train.epochs=3", "train.batch_size=2", "train.lr=1e-3",
                                 "train.threads=1"])
    s = train_seq2seq(cfg, tmp_path / "run", show_progress=False)
    assert s["n_train"] == 3 and s["n_test"] == 2 and s["n_gen"] == 4 and s["gen_types"] == 2
    final = rundir.read_metrics(tmp_path / "run")[-1]
    per_type = {k.split(":", 1)[1]: v for k, v in final.items() if k.startswith("em_gen:")}
    assert set(per_type) == {"subj_to_obj_common", "pp_recursion"} and set(per_type) <= set(GEN_TYPES)
    assert final["em_gen"] == pytest.approx(sum(per_type.values()) / 2)  # equal weight per type
    assert 0 <= final["em_gen_overall"] <= 1 and "em_test" in final


def test_without_cogs_files_commands_stop_with_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(COGS_ENV, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["seq2seq", "--set", "seq2seq.task=cogs", "--out", str(tmp_path / "run")]) == 2
    assert main(["sweep", "configs/sweeps/p1_fig6_cogs_cpu.toml", "--out", str(tmp_path / "sw")]) == 2
    assert main(["reproduce", "p1-fig6", "--out", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(COGS_ENV in line for line in err)
    assert not (tmp_path / "run").exists() and not (tmp_path / "sw").exists() and not (tmp_path / "rep").exists()


def test_registry_kind_and_configs(capsys):
    assert main(["reproduce", "list"]) == 0
    listed = {line.split()[0] for line in capsys.readouterr().out.splitlines()}
    assert {"p1-fig6", "p1-fig6a", "p1-fig17a"} <= listed
    assert kinds.kind_of_data({"seq2seq": {}}).name == "seq2seq"
    assert isinstance(kinds.config_from_data(Seq2SeqRunConfig().to_dict()), Seq2SeqRunConfig)
    from anchorlab.sweep import load_sweep

    for name, n in (("p1_fig6_scan_cpu", 18), ("p1_fig6_cogs_cpu", 18), ("p1_fig17a_cpu", 6),
                    ("p1_fig6_scan_paper", 24), ("p1_fig6_cogs_paper", 30), ("p1_fig17a_paper", 6)):
        cfgs = load_sweep(f"configs/sweeps/{name}.toml").configs()
        assert len(cfgs) == n and len({c.run_id() for _, c in cfgs}) == n
        assert {(c.init.gamma, c.train.weight_decay) for _, c in cfgs} == {(0.7, 0.1), (0.3, 0.01)}
    with pytest.raises(Exception, match="init.convention"):
        s2s_from_dict({"seq2seq": {}, "model": {"arch": "gpt"}, "init": {"convention": "authors_gpt2"}})


def test_arch_p1_is_p1s_decoder_with_p1s_init_table():
    """arch "p1" (P1 App. A): post-LN, ReLU, d_head = d_model / 2 (one head), MLP 3 d_model, every weight at
    d_in^-γ with the embeddings at d_model^-γ; arch "gpt" keeps its pre-LN GELU decoder with embeddings at vocab^-γ."""
    from anchorlab.models.gpt import GPT
    from anchorlab.text.seq2seq_model import build_model

    cfg = load_s2s_config("configs/real/addition_cpu.toml")
    assert cfg.model.arch == "p1" and (cfg.model.n_layers, cfg.model.n_heads, cfg.model.d_model) == (2, 1, 128)
    model = build_model(cfg, vocab_size=12, n_ctx=12, eos_id=None)
    assert isinstance(model, GPT)
    m = model.cfg
    assert (m.norm, m.act, m.d_head, m.d_mlp, m.n_ctx) == ("post", "relu", 64, 384, 12)
    d_model, gamma = 128, cfg.init.gamma
    assert gamma == 0.7
    for name, d_in in (("embed.W_E", d_model), ("pos_embed.W_pos", d_model), ("blocks.0.attn.W_Q", d_model),
                       ("blocks.0.attn.W_O", 64), ("blocks.0.mlp.W_in", d_model), ("blocks.0.mlp.W_out", 384),
                       ("unembed.W_U", d_model)):
        std = dict(model.named_parameters())[name].std().item()
        assert abs(std / d_in ** -gamma - 1) < 0.15, (name, std, d_in ** -gamma)
    old = build_model(load_s2s_config("configs/real/addition_cpu.toml", ["model.arch=gpt"]), 12, 12, None)
    assert (old.cfg.norm, old.cfg.act, old.cfg.d_head, old.cfg.d_mlp) == ("pre", "gelu", 128, 512)
    assert abs(old.embed.W_E.std().item() / 12 ** -gamma - 1) < 0.15  # apply_init's "fan_in": one-hot width
    with pytest.raises(Exception, match="model.n_heads"):
        load_s2s_config("configs/real/addition_cpu.toml", ["model.n_heads=128"])  # d_head = 128 / 256 is no width


def test_arch_p1_memorises_a_tiny_set(tmp_path):
    s = train_seq2seq(scan_cfg("model.arch=p1"), tmp_path / "run", show_progress=False)
    assert s["em_train"] == 1.0 and s["arch"] == "p1"


def test_paper_scale_real_task_configs_use_the_authors_global_batch():
    """The authors' COGS trainer: AdamW, lr 5e-5 constant, a per-device batch of 20 on 7 GPUs (global 140)."""
    from anchorlab.text.config import load_lm_config

    for cfg in (load_s2s_config("configs/real/scan_paper.toml"), load_s2s_config("configs/real/cogs_paper.toml"),
                load_lm_config("configs/text/p2_fig7_paper.toml")):
        assert (cfg.train.batch_size, cfg.train.lr, cfg.train.schedule) == (140, 5e-5, "constant")
