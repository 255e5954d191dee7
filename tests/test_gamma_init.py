"""γ-init for any model: true fan-in per weight (incl. GPT-2's in×out Conv1D), ties, norms, overrides, errors."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from anchorlab.config import ConfigError
from anchorlab.init import gamma_init_

transformers = pytest.importorskip("transformers", reason="HF models need the [hf] extra (pip install -e .[hf])")

GAMMA = 0.5


def _gpt2():
    cfg = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=64,
                                  bos_token_id=99, eos_token_id=99)
    return transformers.GPT2LMHeadModel(cfg)


def _llama():
    cfg = transformers.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                                   num_key_value_heads=1, vocab_size=100, max_position_embeddings=64,
                                   tie_word_embeddings=False, bos_token_id=0, eos_token_id=1, pad_token_id=None)
    return transformers.LlamaForCausalLM(cfg)


def _mark_small_params(model: nn.Module) -> dict[str, torch.Tensor]:
    """Give every 1-D parameter (biases, norm weights) a recognisable value; return copies."""
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1:
                p.copy_(torch.linspace(-3.0, 3.0, p.numel()))
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.dim() == 1}


def _assert_std_close(model: nn.Module, expected: dict[str, float]) -> None:
    params = dict(model.named_parameters())
    for name, std in expected.items():
        emp = params[name].std().item()
        assert abs(emp / std - 1) < 0.10, f"{name}: empirical std {emp:.4g}, target {std:.4g}"


def test_gpt2_true_fan_in_per_weight_and_conv1d_uses_input_width():
    torch.manual_seed(0)
    model = _gpt2()
    rows = gamma_init_(model, GAMMA, generator=torch.Generator().manual_seed(1))
    table = {r.name: r for r in rows}
    d, f = 32, 128
    expected_fan_in = {
        "transformer.wte.weight": d,  # P1 App. A (authors' code): embeddings use size(1) = d_model, not the vocabulary
        "transformer.wpe.weight": d,
        "transformer.h.0.attn.c_attn.weight": d,  # Conv1D [in=32, out=96]: n_embd, not 3·n_embd
        "transformer.h.0.attn.c_proj.weight": d,
        "transformer.h.0.mlp.c_fc.weight": d,
        "transformer.h.1.mlp.c_proj.weight": f,  # Conv1D [in=128, out=32]
    }
    for name, d_in in expected_fan_in.items():
        assert table[name].fan_in == d_in, name
        assert table[name].std == pytest.approx(d_in ** -GAMMA)
    _assert_std_close(model, {r.name: r.std for r in rows})
    c_attn = model.transformer.h[0].attn.c_attn.weight.std().item()
    assert abs(c_attn - 32 ** -GAMMA) < abs(c_attn - 96 ** -GAMMA)
    # every ≥2-D parameter is in the table exactly once; the tied lm_head is not drawn a second time
    assert sorted(table) == sorted(n for n, p in model.named_parameters() if p.dim() >= 2)


def test_gpt2_tied_embeddings_stay_tied_and_biases_norms_untouched():
    model = _gpt2()
    before = _mark_small_params(model)
    gamma_init_(model, 0.3)
    assert model.lm_head.weight is model.transformer.wte.weight
    assert model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr()
    after = dict(model.named_parameters())
    for name, value in before.items():
        assert torch.equal(after[name], value), f"{name} changed"
    # the tied output layer computes with the freshly drawn embedding
    model.eval()  # no dropout
    ids = torch.tensor([[1, 2, 3]])
    logits = model(ids).logits
    hidden = model.transformer(ids).last_hidden_state
    assert torch.allclose(logits, hidden @ model.transformer.wte.weight.T, atol=1e-5)


def test_llama_fan_in_norms_untouched_and_untied_head():
    model = _llama()
    before = _mark_small_params(model)
    rows = gamma_init_(model, 0.4, generator=torch.Generator().manual_seed(2))
    table = {r.name: r for r in rows}
    assert table["model.embed_tokens.weight"].fan_in == 32
    assert table["lm_head.weight"].fan_in == 32
    assert table["model.layers.0.self_attn.k_proj.weight"].fan_in == 32  # [16, 32] (one KV head)
    assert table["model.layers.1.mlp.down_proj.weight"].fan_in == 64
    _assert_std_close(model, {r.name: r.std for r in rows if dict(model.named_parameters())[r.name].numel() >= 1024})
    for name, value in before.items():
        assert torch.equal(dict(model.named_parameters())[name], value), f"{name} changed"
    assert len(rows) == 1 + 2 * 7 + 1


def test_overrides_by_module_glob_last_match_wins():
    model = _gpt2()
    rows = gamma_init_(model, 0.5, overrides={"transformer.h.*.mlp.*": 0.8, "transformer.h.1.mlp.c_fc": 0.2,
                                              "transformer.wte": 0.1})
    table = {r.name: r.std for r in rows}
    subtree = {r.name: r.std for r in gamma_init_(_gpt2(), 0.5, overrides={"transformer.h.0": 0.9})}
    assert subtree["transformer.h.0.attn.c_attn.weight"] == pytest.approx(32 ** -0.9)  # a block covers its layers
    assert subtree["transformer.h.0.mlp.c_proj.weight"] == pytest.approx(128 ** -0.9)
    assert subtree["transformer.h.1.attn.c_attn.weight"] == pytest.approx(32 ** -0.5)
    assert table["transformer.h.0.mlp.c_fc.weight"] == pytest.approx(32 ** -0.8)
    assert table["transformer.h.1.mlp.c_proj.weight"] == pytest.approx(128 ** -0.8)
    assert table["transformer.h.1.mlp.c_fc.weight"] == pytest.approx(32 ** -0.2)
    assert table["transformer.wte.weight"] == pytest.approx(32 ** -0.1)
    assert table["transformer.h.0.attn.c_attn.weight"] == pytest.approx(32 ** -0.5)
    _assert_std_close(model, {"transformer.h.0.mlp.c_fc.weight": 32 ** -0.8, "transformer.wte.weight": 32 ** -0.1})


def test_authors_gpt2_convention_uses_weight_size1_and_keeps_embeddings_at_002():
    model = _gpt2()
    table = {r.name: r for r in gamma_init_(model, GAMMA, convention="authors_gpt2")}
    assert table["transformer.h.0.attn.c_attn.weight"].fan_in == 96  # Conv1D size(1) = output width
    assert table["transformer.h.0.mlp.c_proj.weight"].fan_in == 32
    assert table["transformer.wte.weight"].std == 0.02
    _assert_std_close(model, {"transformer.h.0.attn.c_attn.weight": 96 ** -GAMMA, "transformer.wte.weight": 0.02,
                              "transformer.wpe.weight": 0.02})
    last = {r.name: r.std for r in gamma_init_(model, GAMMA, convention="authors_gpt2_last_token")}
    assert last["transformer.h.1.attn.c_proj.weight"] == pytest.approx(0.02 / 2.0)  # 0.02 / sqrt(2·2)
    assert last["transformer.h.0.attn.c_attn.weight"] == pytest.approx(96 ** -GAMMA)


def test_same_generator_seed_same_weights_and_plain_modules():
    def draw(seed=5):
        net = nn.Sequential(nn.Embedding(50, 16), nn.Linear(16, 64), nn.LayerNorm(64), nn.Linear(64, 8))
        gamma_init_(net, 0.7, generator=torch.Generator().manual_seed(seed))
        return net
    draw_other_seed = lambda: draw(6)
    a, b = draw(), draw()
    for (n, p), q in zip(a.named_parameters(), b.parameters()):
        assert torch.equal(p, q) or p.dim() == 1, n  # biases keep PyTorch's (unseeded) default
    assert not torch.equal(a[0].weight, draw_other_seed()[0].weight)
    assert a[3].weight.std().item() == pytest.approx(64 ** -0.7, rel=0.15)
    assert torch.equal(a[2].weight, torch.ones(64))  # LayerNorm weight untouched


@pytest.mark.parametrize("gamma", [-0.1, float("nan"), float("inf"), "0.5", True, None, torch.tensor(0.5)])
def test_bad_gamma_names_the_field(gamma):
    with pytest.raises(ConfigError, match="^gamma: allowed values"):
        gamma_init_(nn.Linear(4, 4), gamma)


def test_numpy_gamma_is_a_number():
    np = pytest.importorskip("numpy")
    assert gamma_init_(nn.Linear(4, 4), np.float32(0.5))[0].std == pytest.approx(0.5)


@pytest.mark.parametrize("model", ["gpt2", None, torch.zeros(3, 3), [nn.Linear(3, 3)]])
def test_a_non_module_is_one_type_error(model):
    with pytest.raises(TypeError, match="^model: expected a torch.nn.Module, got "):
        gamma_init_(model, 0.5)


def test_bad_convention_override_and_unknown_weight_are_errors():
    with pytest.raises(ConfigError, match=r"^convention: allowed values are \['fan_in', 'authors_gpt2'"):
        gamma_init_(nn.Linear(4, 4), 0.5, convention="paper")
    with pytest.raises(ConfigError, match=r"^overrides\.transformer\.h\.\*\.mpl: covers no drawn weight"):
        gamma_init_(_gpt2(), 0.5, overrides={"transformer.h.*.mpl": 0.8})
    with pytest.raises(ConfigError, match=r"^overrides\.lm_head: covers no drawn weight"):  # tied: drawn as wte
        gamma_init_(_gpt2(), 0.5, overrides={"lm_head": 0.8})
    with pytest.raises(ConfigError, match=r"^overrides: allowed values are a dict"):
        gamma_init_(nn.Linear(4, 4), 0.5, overrides=[("*", 0.5)])
    with pytest.raises(ConfigError, match=r"^overrides\.\*: allowed values"):
        gamma_init_(nn.Linear(4, 4), 0.5, overrides={"*": -1})

    class Odd(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.table = nn.Parameter(torch.zeros(3, 3))
    odd = Odd()
    before = odd.lin.weight.detach().clone()
    with pytest.raises(TypeError, match="table"):
        gamma_init_(odd, 0.5)
    assert torch.equal(odd.lin.weight, before)  # rejected before anything was drawn
    lin = nn.Linear(4, 4)
    before = lin.weight.detach().clone()
    with pytest.raises(TypeError, match="no fan-in rule"):
        gamma_init_(nn.Sequential(lin, nn.Bilinear(2, 2, 2)), 0.5)
    assert torch.equal(lin.weight, before)
    with pytest.raises(ConfigError, match="n_layer"):
        gamma_init_(nn.Linear(4, 4), 0.5, convention="authors_gpt2_last_token")


def test_torch_multihead_attention_in_proj():
    net = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=256, batch_first=True)
    table = {r.name: r for r in gamma_init_(net, 0.5)}
    assert table["self_attn.in_proj_weight"].fan_in == 64  # [3·64, 64]
    assert table["self_attn.out_proj.weight"].fan_in == 64
    assert table["linear2.weight"].fan_in == 256
    _assert_std_close(net, {"self_attn.in_proj_weight": 64 ** -0.5, "linear2.weight": 256 ** -0.5})


def test_padding_row_stays_zero_and_a_root_weight_takes_a_star_override():
    """An embedding's padding_idx row is zero after γ-init, as torch and HF leave it (a Llama pad token); the
    other rows are drawn. A model that is itself one layer is covered by the override "*" (its weight's owner
    is the root, which has no name)."""
    emb = nn.Embedding(50, 16, padding_idx=3)
    rows = gamma_init_(emb, GAMMA)
    assert rows[0].fan_in == 16 and torch.all(emb.weight[3] == 0)
    others = torch.cat([emb.weight[:3], emb.weight[4:]])
    assert torch.all(others != 0) and abs(others.std().item() / 16 ** -GAMMA - 1) < 0.15
    lin = nn.Linear(200, 100)
    (row,) = gamma_init_(lin, GAMMA, overrides={"*": 1.0})
    assert row.std == pytest.approx(200 ** -1.0) and abs(lin.weight.std().item() / 200 ** -1.0 - 1) < 0.05


def test_our_own_model_is_pointed_to_apply_init():
    from anchorlab.config import RunConfig
    from anchorlab.models import build_model

    model = build_model(RunConfig().model, 120)
    with pytest.raises(TypeError, match=r"anchorlab\.init\.apply_init"):
        gamma_init_(model, GAMMA)
