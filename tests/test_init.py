import math

import pytest
import torch

from anchorlab.config import InitConfig, RunConfig
from anchorlab.init import apply_init, fan_in, init_table
from anchorlab.models import build_model

# P1 App. A (authors' code), paper config (d_model 400, d_head 200, d_mlp 1200): parameter -> d_in
PAPER_D_IN = {
    "embed.W_E": 400, "pos_embed.W_pos": 400,
    "blocks.0.attn.W_Q": 400, "blocks.0.attn.W_K": 400, "blocks.0.attn.W_V": 400, "blocks.0.attn.W_O": 200,
    "blocks.0.mlp.W_in": 400, "blocks.0.mlp.W_out": 1200, "unembed.W_U": 400,
}


def test_paper_table_is_pinned():
    model = build_model(RunConfig().model, 201)
    rows = {name: (role, rule) for name, role, _, rule in init_table(model, InitConfig(gamma=0.8))}
    for name, d_in in PAPER_D_IN.items():
        assert rows[name][1] == f"N(0, {d_in ** -0.8:.6g})", name
    assert rows["unembed.b_U"] == ("unembed_bias", f"U(+-{1 / math.sqrt(400):.6g})")
    assert rows["blocks.1.ln2.w"][1] == "1" and rows["blocks.1.ln2.b"][1] == "0"
    # std values at the paper sizes
    assert abs(400 ** -0.8 - 0.0083) < 1e-4 and abs(1200 ** -0.8 - 0.0034) < 1e-4 and abs(200 ** -0.8 - 0.0144) < 1e-4


def test_fan_in_conventions():
    assert fan_in("embed", (201, 400), "paper") == 400 and fan_in("embed", (201, 400), "fan_in") == 201
    assert fan_in("pos_embed", (20, 400), "fan_in") == 20
    assert fan_in("attn_out", (4, 50, 400)) == 200
    assert fan_in("attn_in", (4, 400, 50)) == 400
    with pytest.raises(ValueError):
        fan_in("norm_weight", (400,))


@pytest.mark.parametrize("gamma", [0.3, 0.5, 0.8])
def test_empirical_std_matches(gamma):
    cfg = RunConfig().model  # paper widths: >= 80k entries per weight
    model = build_model(cfg, 201)
    apply_init(model, InitConfig(gamma=gamma), torch.Generator().manual_seed(0))
    params = dict(model.named_parameters())
    for name, d_in in PAPER_D_IN.items():
        std = params[name].detach().std().item()
        assert abs(std / d_in ** -gamma - 1) < 0.02, (name, std, d_in ** -gamma)
        assert abs(params[name].detach().mean().item()) < 0.05 * d_in ** -gamma
    b = params["unembed.b_U"].detach()
    assert b.abs().max() <= 0.05 and b.std() > 0.02  # U(+-0.05), not γ-scaled
    assert (params["blocks.0.ln1.w"] == 1).all() and (params["blocks.0.ln1.b"] == 0).all()


def test_role_gamma_override_and_fan_in_convention():
    model = build_model(RunConfig().model, 201)
    apply_init(model, InitConfig(gamma=0.8, convention="fan_in", role_gamma={"attn_in": 0.3}),
               torch.Generator().manual_seed(0))
    p = dict(model.named_parameters())
    assert abs(p["blocks.0.attn.W_Q"].std().item() / 400 ** -0.3 - 1) < 0.02
    assert abs(p["embed.W_E"].std().item() / 201 ** -0.8 - 1) < 0.03


def test_same_seed_same_weights():
    cfg = RunConfig().replace(**{"model.d_model": 32, "model.d_head": 16, "model.d_mlp": 64})
    a, b = build_model(cfg.model, 201), build_model(cfg.model, 201)
    apply_init(a, cfg.init, torch.Generator().manual_seed(3))
    apply_init(b, cfg.init, torch.Generator().manual_seed(3))
    for (n, x), (_, y) in zip(a.named_parameters(), b.named_parameters()):
        assert torch.equal(x, y), n
