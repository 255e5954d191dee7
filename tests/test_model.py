import pytest
import torch
import torch.nn.functional as F

from anchorlab.config import RunConfig
from anchorlab.init import count_parameters
from anchorlab.models import build_model, hook_names, run_with_cache
from anchorlab.train import build_initialized_model
from tests.conftest import tiny_config


def test_paper_parameter_count():
    assert count_parameters(build_model(RunConfig().model, 201)) == 2_732_201


def test_parameter_names_follow_transformer_lens():
    names = {n for n, _ in build_model(RunConfig().model, 201).named_parameters()}
    for n in ("embed.W_E", "pos_embed.W_pos", "unembed.W_U", "unembed.b_U"):
        assert n in names
    for layer in (0, 1):
        for w in ("attn.W_Q", "attn.W_K", "attn.W_V", "attn.W_O", "mlp.W_in", "mlp.W_out",
                  "ln1.w", "ln1.b", "ln2.w", "ln2.b"):
            assert f"blocks.{layer}.{w}" in names
    assert not any("bias" in n for n in names)  # bias-free linears; the only bias is b_U


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_shapes_finite_and_causal(norm):
    cfg = tiny_config(**{"model.norm": norm, "init.gamma": 0.5})
    model = build_initialized_model(cfg, 201)
    tokens = torch.randint(20, 100, (4, 9))
    logits = model(tokens)
    assert logits.shape == (4, 9, 201) and torch.isfinite(logits).all()
    # causality: the output at position i does not depend on inputs after i
    emb = model.embed.W_E
    x = F.embedding(tokens, emb).detach().requires_grad_(True)
    h = x + model.pos_embed.W_pos[:9]
    for block in model.blocks:
        h = block(h)
    (h[:, 4] * torch.randn_like(h[:, 4])).sum().backward()  # a random readout (LN outputs sum to const)
    assert x.grad[:, 5:].abs().max() == 0 and x.grad[:, :5].abs().max() > 0


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_last_position_pruning_is_exact(norm):
    cfg = tiny_config(**{"model.norm": norm, "model.n_layers": 2})
    tokens, y = torch.randint(20, 100, (16, 9)), torch.randint(0, 201, (16,))
    grads = []
    for last_only in (False, True):
        model = build_initialized_model(cfg, 201).double()
        logits = model(tokens, last_only=last_only)[:, -1]
        F.cross_entropy(logits, y).backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
    for n in grads[0]:
        torch.testing.assert_close(grads[0][n], grads[1][n], rtol=1e-9, atol=1e-12, msg=n)


def test_hooks_and_cache():
    cfg = tiny_config(**{"model.n_layers": 2})
    model = build_initialized_model(cfg, 201)
    names = hook_names(model)
    for n in ("hook_embed", "blocks.0.attn.hook_pattern", "blocks.1.hook_resid_mid", "blocks.1.mlp.hook_post"):
        assert n in names
    tokens = torch.randint(20, 100, (3, 9))
    logits, cache = run_with_cache(model, tokens)
    torch.testing.assert_close(logits, model(tokens))
    pattern = cache["blocks.0.attn.hook_pattern"]
    assert pattern.shape == (3, 1, 9, 9)
    torch.testing.assert_close(pattern.sum(-1), torch.ones(3, 1, 9))
    assert pattern.triu(1).abs().max() == 0  # causal: softmax probabilities, not raw scores
    assert cache["blocks.0.hook_resid_mid"].shape == (3, 9, 16)
    _, only = run_with_cache(model, tokens, names=["blocks.0.attn.hook_pattern"])
    assert list(only) == ["blocks.0.attn.hook_pattern"]
    with pytest.raises(KeyError):
        run_with_cache(model, tokens, names=["blocks.9.nope"])
    # stop_early: the same activations, and nothing after the last one asked for runs
    ran = []
    handle = model.blocks[0].mlp.register_forward_hook(lambda *_: ran.append("mlp 0"))
    names = ["blocks.0.attn.hook_pattern", "blocks.0.hook_resid_mid"]
    out, early = run_with_cache(model, tokens, names=names, stop_early=True)
    assert out is None and list(early) == names and ran == []
    for n in names:
        torch.testing.assert_close(early[n], cache[n], rtol=0, atol=0)
    out, _ = run_with_cache(model, tokens, names=names)
    handle.remove()
    assert ran == ["mlp 0"] and out is not None  # without it the whole model runs


def test_small_init_gives_near_uniform_attention():
    """P2 Lemma 1: at large γ the causal attention is close to the averaging operator."""
    cfg = tiny_config(**{"init.gamma": 1.5, "model.d_model": 64, "model.d_head": 32})
    model = build_initialized_model(cfg, 201)
    _, cache = run_with_cache(model, torch.randint(20, 100, (8, 9)), names=["blocks.0.attn.hook_pattern"])
    avg = torch.tril(torch.ones(9, 9)) / torch.arange(1, 10).unsqueeze(1)
    assert (cache["blocks.0.attn.hook_pattern"][:, 0] - avg).abs().max() < 1e-3
