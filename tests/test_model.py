import dataclasses

import pytest
import torch
import torch.nn.functional as F

from anchorlab.config import RunConfig
from anchorlab.init import count_parameters
from anchorlab.models import build_model, hook_names, run_with_cache, run_with_hooks
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
    # TransformerLens's short keys name the same tensors; an ambiguous or absent one lists what there is
    assert cache["pattern", 0] is pattern and cache["resid_post", 1] is cache["blocks.1.hook_resid_post"]
    assert cache["mlp_out", 1] is cache["blocks.1.mlp.hook_mlp_out"] and cache["embed"] is cache["hook_embed"]
    with pytest.raises(KeyError, match="ln1.hook_normalized.*ln2.hook_normalized"):
        cache["normalized", 0]
    with pytest.raises(KeyError, match="no cached hook"):
        cache["pattern", 5]
    _, only = run_with_cache(model, tokens, names=["blocks.0.attn.hook_pattern"])
    assert list(only) == ["blocks.0.attn.hook_pattern"]
    with pytest.raises(KeyError):
        run_with_cache(model, tokens, names=["blocks.9.nope"])
    _, one = run_with_cache(model, tokens, names="blocks.0.attn.hook_pattern")  # one name, not its characters
    assert list(one) == ["blocks.0.attn.hook_pattern"]
    with pytest.raises(ValueError, match="no HookPoint"):  # nothing to cache: say so, not {}
        run_with_cache(torch.nn.Linear(9, 2), tokens.float())
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


def test_run_with_hooks_patches_activations_and_leaves_no_hook_behind():
    """Patching the last block's residual stream with another input's makes the logits that input's (the logits
    are resid_post @ W_U + b_U); a hook that returns None changes nothing; hooks are gone afterwards, also after
    a hook raised; an unknown name is a KeyError before the model runs."""
    model = build_initialized_model(tiny_config(**{"model.n_layers": 2}), 201)
    a, b = torch.randint(20, 100, (3, 9)), torch.randint(20, 100, (3, 9))
    plain_a, plain_b = model(a), model(b)
    _, cache_b = run_with_cache(model, b, names="blocks.1.hook_resid_post")
    seen = []
    patched = run_with_hooks(model, a, fwd_hooks=[("blocks.0.hook_resid_mid", lambda x, name: seen.append(name)),
                                                  ("blocks.1.hook_resid_post",
                                                   lambda x, name: cache_b["blocks.1.hook_resid_post"])])
    assert seen == ["blocks.0.hook_resid_mid"]
    torch.testing.assert_close(patched, plain_b, rtol=0, atol=0)
    torch.testing.assert_close(run_with_hooks(model, a, fwd_hooks=("blocks.0.hook_resid_mid", lambda x, n: None)),
                               plain_a, rtol=0, atol=0)

    def boom(x, name):
        raise RuntimeError("in the hook")
    with pytest.raises(RuntimeError, match="in the hook"):
        run_with_hooks(model, a, fwd_hooks=[("blocks.0.attn.hook_z", boom)])
    with pytest.raises(KeyError, match="blocks.7.nope"):
        run_with_hooks(model, a, fwd_hooks=[("blocks.7.nope", boom)])
    torch.testing.assert_close(model(a), plain_a, rtol=0, atol=0)  # no hook left behind
    assert not any(m._forward_hooks for m in model.modules())


def test_small_init_gives_near_uniform_attention():
    """P2 Lemma 1: at large γ the causal attention is close to the averaging operator."""
    cfg = tiny_config(**{"init.gamma": 1.5, "model.d_model": 64, "model.d_head": 32})
    model = build_initialized_model(cfg, 201)
    _, cache = run_with_cache(model, torch.randint(20, 100, (8, 9)), names=["blocks.0.attn.hook_pattern"])
    avg = torch.tril(torch.ones(9, 9)) / torch.arange(1, 10).unsqueeze(1)
    assert (cache["blocks.0.attn.hook_pattern"][:, 0] - avg).abs().max() < 1e-3


def _layer_norm(x, w, b):
    """PyTorch's LayerNorm written out: biased variance over the last axis, eps 1e-5 (SPEC I.3)."""
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + 1e-5) * w + b


def _reference_forward(model, tokens):
    """P1 eq. 3-6 (SPEC I.3) by hand from the model's weights: X = W_E[tokens] + W_pos[:P]; per block, per head
    A = softmax(causal(Q Kᵀ / √d_k)), h = LN1(x + Σ_heads A V W_O), x = LN2(h + ReLU(h W_in) W_out); no final LN;
    logits = x W_U + b_U."""
    P = tokens.shape[1]
    x = model.embed.W_E[tokens] + model.pos_embed.W_pos[:P]
    causal = torch.ones(P, P, dtype=torch.bool).tril()
    for blk in model.blocks:
        a = blk.attn
        attn_out = torch.zeros_like(x)
        for h in range(a.W_Q.shape[0]):
            q, k, v = x @ a.W_Q[h], x @ a.W_K[h], x @ a.W_V[h]
            scores = (q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5
            pattern = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
            attn_out = attn_out + (pattern @ v) @ a.W_O[h]
        h_ = _layer_norm(x + attn_out, blk.ln1.w, blk.ln1.b)
        x = _layer_norm(h_ + torch.relu(h_ @ blk.mlp.W_in) @ blk.mlp.W_out, blk.ln2.w, blk.ln2.b)
    return x @ model.unembed.W_U + model.unembed.b_U


@pytest.mark.parametrize("n_heads", [1, 2])
def test_forward_is_p1s_post_ln_relu_transformer(n_heads):
    """The model's forward (and its last_only path) equals the hand-written P1 block, with the defaults' post-LN,
    ReLU, LayerNorm eps 1e-5 and a 1/√d_k scale (d_k = 5 here, not d_model / n_heads = 8); no golden files needed.
    Non-trivial LayerNorm weights/biases and output bias so each of them is exercised."""
    cfg = tiny_config(**{"model.n_heads": n_heads, "model.d_head": 5, "model.n_layers": 2, "init.gamma": 0.3})
    assert (cfg.model.norm, cfg.model.act, cfg.model.ln_eps) == ("post", "relu", 1e-5)  # the defaults
    model = build_initialized_model(cfg, 201).double()
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("ln1.w", "ln2.w")):
                p.copy_(1 + 0.5 * torch.randn(p.shape, generator=g, dtype=p.dtype))
            elif name.endswith(("ln1.b", "ln2.b", "b_U")):
                p.copy_(0.5 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    tokens = torch.randint(0, 201, (5, 9), generator=g)
    with torch.no_grad():
        ref = _reference_forward(model, tokens)
        torch.testing.assert_close(model(tokens), ref, rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(model(tokens, last_only=True), ref[:, -1:], rtol=1e-10, atol=1e-10)
        # the comparison is sharp enough to tell the eps apart (PyTorch default 1e-5 vs 1e-6)
        other = build_model(dataclasses.replace(cfg.model, ln_eps=1e-6), 201).double()
        other.load_state_dict(model.state_dict())
        assert (other(tokens) - ref).abs().max() > 1e-8
