"""``model.norm = "none"``: the anchor-task Transformer without LayerNorm (P2's appendix ablation, arXiv 2502.04375).

The forward is the bare residual stream x = x + Attn(x); x = x + MLP(x), with no final LayerNorm; the model
has no LayerNorm parameters or hooks, γ-init and plain and batched training take it as it is, and a reference
init (the authors' post-LN weights) refuses it with one line naming the field."""

import math

import pytest
import torch

from anchorlab import rundir
from anchorlab.batched import train_batched
from anchorlab.config import ConfigError, load_config
from anchorlab.init import GAMMA_ROLES, apply_init, count_parameters, init_table
from anchorlab.models import build_model, hook_names
from anchorlab.train import train
from tests.conftest import tiny_config


def make(norm: str, **dotted):
    cfg = tiny_config(**{"model.norm": norm, "model.n_layers": 2, "model.n_heads": 2, "init.gamma": 0.3, **dotted})
    model = build_model(cfg.model, cfg.task.vocab_size)
    return cfg, apply_init(model, cfg.init, torch.Generator().manual_seed(0))


def hand_forward(model, tokens: torch.Tensor) -> torch.Tensor:
    """x = W_E[t] + W_pos; per block x += softmax(causal(Q K^T / sqrt(d_head))) V W_O, then x += ReLU(x W_in) W_out;
    logits = x W_U + b_U. Written per head with plain matmuls, independently of the model's einsums."""
    P = tokens.shape[1]
    x = model.embed.W_E[tokens] + model.pos_embed.W_pos[:P]
    mask = torch.ones(P, P, dtype=torch.bool).tril()
    for block in model.blocks:
        a = block.attn
        heads = []
        for h in range(a.W_Q.shape[0]):
            q, k, v = x @ a.W_Q[h], x @ a.W_K[h], x @ a.W_V[h]
            scores = (q @ k.transpose(-1, -2)) / math.sqrt(a.W_Q.shape[-1])
            heads.append(scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v @ a.W_O[h])
        x = x + sum(heads)
        x = x + torch.relu(x @ block.mlp.W_in) @ block.mlp.W_out
    return x @ model.unembed.W_U + model.unembed.b_U


@torch.no_grad()
def test_forward_is_the_residual_stream_without_layernorm():
    cfg, model = make("none")
    model = model.double()  # float64: the two summation orders then agree to ~1e-12, not float32's ~1e-4
    tokens = torch.randint(0, cfg.task.vocab_size, (5, cfg.task.seq_len), generator=torch.Generator().manual_seed(1))
    expected = hand_forward(model, tokens)
    torch.testing.assert_close(model(tokens), expected, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(model(tokens, last_only=True)[:, 0], expected[:, -1], rtol=1e-10, atol=1e-10)
    # the same weights under post-LN give other logits: the check above is not void
    _, post = make("post")
    post = post.double()
    post.load_state_dict(model.state_dict(), strict=False)
    assert not torch.allclose(post(tokens), expected, atol=1e-3)


def test_no_layernorm_parameters_or_hooks_and_init_is_the_post_ln_draw():
    cfg, model = make("none")
    _, post = make("post")
    names = {n for n, _ in model.named_parameters()}
    assert not any(".ln" in n or n.startswith("ln") for n in names) and model.ln_final is None
    assert not any("ln" in n.split(".") or "ln1" in n or "ln2" in n for n in hook_names(model))
    d, L = cfg.model.d_model, cfg.model.n_layers
    assert count_parameters(post) - count_parameters(model) == L * 2 * 2 * d  # ln1, ln2: w and b of size d each
    assert {role for _, role, _, _ in init_table(model, cfg.init)} <= set(GAMMA_ROLES) | {"unembed_bias"}
    # LayerNorms draw nothing from the generator, so every other weight is the post-LN model's, value for value
    post_params = dict(post.named_parameters())
    for n, p in model.named_parameters():
        torch.testing.assert_close(p, post_params[n], rtol=0, atol=0)


def test_norm_none_trains_alone_and_batched(tmp_path):
    base = {"task.data_size": 800, "train.epochs": 3, "train.checkpoint_every": 3}
    cfgs = [tiny_config(**{"model.norm": "none", **base}),
            tiny_config(**{"model.norm": "none", "init.gamma": 0.8, "seeds.init_seed": 2, **base})]
    alone = train(cfgs[0], tmp_path / "alone", show_progress=False)
    assert (tmp_path / "alone" / "DONE").exists() and math.isfinite(alone["final_train_loss"])
    assert alone["final_train_loss"] < math.log(cfgs[0].task.vocab_size)  # it learned something
    batched = train_batched(cfgs, [tmp_path / "b0", tmp_path / "b1"], show_progress=False)
    assert batched[0]["final_train_loss"] == pytest.approx(alone["final_train_loss"], rel=1e-5)
    assert batched[0]["n_params"] == alone["n_params"] and math.isfinite(batched[1]["final_train_loss"])


def test_norm_none_on_p2s_task_trains(tmp_path):
    cfg = load_config(None, ["task.name='mem_rsn'", "task.data_size=2000", "model.norm='none'", "model.d_model=16",
                             "model.d_head=8", "model.d_mlp=32", "init.gamma=0.8", "train.batch_size=100",
                             "train.epochs=2", "train.lr=1e-3", "train.schedule='constant'", "train.eval_every=1",
                             "train.checkpoint_every=2", "train.threads=1"])
    train(cfg, tmp_path / "run", show_progress=False)
    hist = rundir.read_metrics(tmp_path / "run")
    assert (tmp_path / "run" / "DONE").exists() and all(math.isfinite(r["train_loss"]) for r in hist)
    assert hist[-1]["train_loss"] < hist[0]["train_loss"]


def test_bad_norm_lists_the_allowed_values():
    with pytest.raises(ConfigError) as e:
        load_config(None, ["model.norm='mid'"])
    assert str(e.value).startswith("model.norm") and all(v in str(e.value) for v in ("'post'", "'pre'", "'none'"))


def test_reference_init_refuses_norm_none_naming_the_field(tmp_path):
    ref = tmp_path / "ref.npz"
    sets = [f"task.reference='{ref}'", "model.norm='none'"]
    with pytest.raises(ConfigError) as e:
        load_config(None, sets)
    assert str(e.value).startswith("model.norm") and "'post'" in str(e.value)
    # without the file's init (its data and batch order only) there are no LayerNorm weights to load
    assert load_config(None, [*sets, "task.reference_parts=['data', 'order']"]).model.norm == "none"
