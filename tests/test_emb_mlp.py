from pathlib import Path

import pytest
import torch

from anchorlab.config import ConfigError, InitConfig, RunConfig, load_config
from anchorlab.init import apply_init, init_table
from anchorlab.models import EmbMLP, build_model, run_with_cache


def emb_cfg(**dotted) -> RunConfig:
    base = {"task.name": "mem_rsn", "task.seq_len": 3, "model.name": "emb_mlp", "model.d_model": 200,
            "model.d_mlp": 512, "model.act": "tanh"}
    base.update(dotted)
    return load_config(None, [f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in base.items()])


def make(gamma=0.5, **dotted) -> EmbMLP:
    model = build_model(emb_cfg(**dotted).model, 200)
    return apply_init(model, InitConfig(gamma=gamma), torch.Generator().manual_seed(0))


def test_output_shape_and_hooks():
    model = make()
    x = torch.tensor([[40, 11, 13], [21, 1, 2]])
    logits, cache = run_with_cache(model, x)
    assert logits.shape == (2, 1, 200) and torch.isfinite(logits).all()
    assert cache["hook_embed_sum"].shape == (2, 200) and cache["hook_post"].shape == (2, 512)


def test_matches_the_definition():
    model = make(**{"model.act": "relu"})
    x = torch.tensor([[40, 11, 13]])
    W_E, W_in, W_U = model.W_E, model.W_in, model.W_U
    expected = torch.relu((W_E[40] + W_E[11] + W_E[13]) @ W_in) @ W_U
    assert torch.allclose(model(x)[0, 0], expected, atol=1e-6)


def test_paper_config_computes_tanh_of_the_embedding_sum():
    """configs/p2/emb_mlp_paper.toml's model is G(X) = tanh(Σ_s W_E[s] W_in) W_U (P2 Definition 1, σ = tanh)."""
    cfg = load_config(Path(__file__).resolve().parents[1] / "configs" / "p2" / "emb_mlp_paper.toml")
    model = apply_init(build_model(cfg.model, cfg.task.vocab_size), cfg.init, torch.Generator().manual_seed(0))
    model = model.double()
    x = torch.tensor([[40, 11, 13], [120, 2, 7], [21, 20, 20]])
    W_E, W_in, W_U = model.W_E, model.W_in, model.W_U
    pre = torch.stack([W_E[row].sum(dim=0) for row in x]) @ W_in
    expected = torch.tanh(pre) @ W_U
    with torch.no_grad():
        torch.testing.assert_close(model(x)[:, 0], expected, rtol=1e-12, atol=1e-12)
        # not void: the pre-activations reach both signs and the non-linear part of tanh (at γ 0.3's larger init)
        assert (pre < 0).any() and (pre > 0).any()
        assert not torch.allclose(torch.relu(pre) @ W_U, expected)
        big = apply_init(build_model(cfg.model, cfg.task.vocab_size), InitConfig(gamma=0.3),
                         torch.Generator().manual_seed(0)).double()
        pre_big = big.W_E[x].sum(dim=1) @ big.W_in
        assert pre_big.abs().max() > 1  # where tanh(u) and u differ by > 20 %
        torch.testing.assert_close(big(x)[:, 0], torch.tanh(pre_big) @ big.W_U, rtol=1e-12, atol=1e-12)
        assert not torch.allclose(big(x)[:, 0], pre_big @ big.W_U, rtol=1e-3)


def test_order_invariant():
    model = make()
    a = model(torch.tensor([[40, 11, 13], [57, 3, 7]]))
    b = model(torch.tensor([[40, 13, 11], [57, 7, 3]]))
    assert torch.equal(a, b)
    assert not torch.equal(a, model(torch.tensor([[41, 11, 13], [57, 7, 4]])))


@pytest.mark.parametrize("gamma", [0.3, 0.8])
def test_init_std_by_role(gamma):
    model = make(gamma)
    rows = {name: (role, rule) for name, role, _, rule in init_table(model, InitConfig(gamma=gamma))}
    assert rows == {"W_E": ("embed", f"N(0, {200 ** -gamma:.6g})"), "W_in": ("mlp_in", f"N(0, {200 ** -gamma:.6g})"),
                    "W_U": ("unembed", f"N(0, {512 ** -gamma:.6g})")}
    for p, d_in in ((model.W_E, 200), (model.W_in, 200), (model.W_U, 512)):
        assert abs(p.detach().std().item() / d_in ** -gamma - 1) < 0.02


def test_emb_mlp_requires_seq_len_q_plus_1():
    with pytest.raises(ConfigError) as e:
        load_config(None, ["task.name='mem_rsn'", "model.name='emb_mlp'"])
    assert str(e.value).startswith("task.seq_len") and "emb_mlp" in str(e.value)
    assert emb_cfg().task.seq_len == 3
    assert RunConfig().replace(**{"model.name": "gpt"}).model.name == "gpt"
