"""Direct logit attribution and the logit lens (analysis.attribution): the parts add up to what the model computed,
for post-LN, pre-LN and no-LN models, and each part is what its component wrote."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from anchorlab.analysis.attribution import (
    attribution_hooks,
    decompose_resid,
    held_out_attribution,
    logit_attrs,
    logit_lens,
)
from anchorlab.config import CompositeTaskConfig, ConfigError, InitConfig, ModelConfig
from anchorlab.init import apply_init
from anchorlab.models import build_model
from anchorlab.models.hooks import run_with_cache

V = 50


def model_of(norm: str, n_heads: int = 2) -> torch.nn.Module:
    m = build_model(ModelConfig(d_model=32, n_heads=n_heads, d_head=8, d_mlp=64, n_layers=2, n_ctx=9, norm=norm), V)
    apply_init(m, InitConfig(gamma=0.3), torch.Generator().manual_seed(0))
    with torch.no_grad():  # non-trivial LayerNorm weights and biases, so that each enters the check
        g = torch.Generator().manual_seed(1)
        for name, p in m.named_parameters():
            if name.endswith((".w", ".b", "b_U")):
                p.add_(0.3 * torch.randn(p.shape, generator=g))
    return m.eval()


@pytest.mark.parametrize("norm", ["post", "pre", "none"])
@pytest.mark.parametrize("heads", [False, True])
def test_parts_sum_to_the_unembedding_input_and_the_logit_difference(norm, heads):
    m = model_of(norm)
    x = torch.randint(0, V, (6, 9), generator=torch.Generator().manual_seed(2))
    logits, cache = run_with_cache(m, x, names=attribution_hooks(m, heads))
    parts = decompose_resid(m, cache, heads=heads)
    stream = sum(parts.values())
    if norm == "pre":  # the unembedding reads ln_final(resid_post)
        resid = cache["blocks.1.hook_resid_post"][:, -1]
        expected = torch.nn.functional.layer_norm(resid, (32,), m.ln_final.w, m.ln_final.b, m.ln_final.eps)
    else:
        expected = cache["blocks.1.hook_resid_post"][:, -1]
    torch.testing.assert_close(stream.float(), expected, atol=2e-5, rtol=1e-5)
    correct, wrong = torch.arange(6), torch.full((6,), 7)
    attrs = logit_attrs(m, parts, correct, wrong)
    diff = logits[:, -1].gather(1, correct[:, None])[:, 0] - logits[:, -1, 7]
    torch.testing.assert_close(sum(attrs.values()).float(), diff, atol=5e-5, rtol=1e-5)
    one = logit_attrs(m, parts, 3)  # one token for every input: the logit itself, b_U included
    torch.testing.assert_close(sum(one.values()).float(), logits[:, -1, 3], atol=5e-5, rtol=1e-5)
    expected_labels = {"post": ["0_ln1_b", "0_ln2_b", "1_ln1_b", "1_ln2_b"], "pre": ["ln_final_b"], "none": []}[norm]
    attn = ["L0H0", "L0H1", "L1H0", "L1H1"] if heads else ["0_attn_out", "1_attn_out"]
    assert sorted(parts) == sorted(["embed", "pos_embed", "0_mlp_out", "1_mlp_out", *attn, *expected_labels])
    assert list(attrs)[-1] == "b_U"


def test_each_part_is_what_its_component_wrote():
    """Without LayerNorm a part is its component's output verbatim; the heads of a layer add up to its attention
    output; a component that writes nothing gets nothing, through every frozen LayerNorm of a post-LN model."""
    x = torch.randint(0, V, (4, 9), generator=torch.Generator().manual_seed(3))
    m = model_of("none")
    _, cache = run_with_cache(m, x)
    parts = decompose_resid(m, cache)
    torch.testing.assert_close(parts["1_mlp_out"].float(), cache["blocks.1.mlp.hook_mlp_out"][:, -1])
    torch.testing.assert_close(parts["embed"].float(), cache["hook_embed"][:, -1])
    per_head = decompose_resid(m, cache, heads=True)
    torch.testing.assert_close(per_head["L0H0"] + per_head["L0H1"], parts["0_attn_out"], atol=1e-5, rtol=1e-5)

    post = model_of("post")
    with torch.no_grad():
        post.blocks[0].mlp.W_out.zero_()
    _, cache = run_with_cache(post, x, names=attribution_hooks(post))
    parts = decompose_resid(post, cache)
    assert parts["0_mlp_out"].abs().max() == 0 and parts["0_attn_out"].abs().max() > 0.01


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_the_logit_lens_ends_at_the_logits(norm):
    m = model_of(norm)
    x = torch.randint(0, V, (5, 9), generator=torch.Generator().manual_seed(4))
    logits, cache = run_with_cache(m, x)
    lens = logit_lens(m, cache)
    assert lens.shape == (2, 5, V)
    torch.testing.assert_close(lens[-1].float(), logits[:, -1], atol=5e-5, rtol=1e-5)
    if norm == "post":  # block 0 ends in its LayerNorm: the unembedding reads it as it is
        resid0 = cache["blocks.0.hook_resid_post"][:, -1]
        torch.testing.assert_close(lens[0].float(), resid0 @ m.unembed.W_U + m.unembed.b_U, atol=5e-5, rtol=1e-5)


def test_a_cache_without_the_parts_or_another_model_is_one_clear_error():
    m = model_of("post")
    _, cache = run_with_cache(m, torch.zeros(1, 9, dtype=torch.long), names="hook_embed")
    with pytest.raises(KeyError, match="attribution_hooks"):
        decompose_resid(m, cache)
    with pytest.raises(KeyError, match="hook_resid_post"):
        logit_lens(m, cache)
    with pytest.raises(TypeError, match="not anchorlab's GPT"):
        decompose_resid(torch.nn.Linear(2, 2), cache)


def test_held_out_attribution_reads_the_probe_pair():
    task = CompositeTaskConfig()
    m = build_model(ModelConfig(d_model=32, n_heads=1, d_head=16, d_mlp=64, n_layers=2, n_ctx=9), task.vocab_size)
    apply_init(m, InitConfig(gamma=0.3), torch.Generator().manual_seed(0))
    r = held_out_attribution(m.eval(), task)
    n = task.key_max - task.key_min + 1
    assert (r["inferential"], r["symmetric"]) == (-10, -6) and len(r["keys"]) == n
    total = sum(r["attrs"].values())
    assert abs(total - r["logit_diff"]).max() < 1e-4
    # the lens's last layer is the model's answer
    assert r["lens_inferential"][-1] == pytest.approx((r["answer"] == -10).mean())
    assert r["lens_symmetric"][-1] == pytest.approx((r["answer"] == -6).mean())


def test_probe_contexts_draw_the_tasks_noise_around_every_key():
    from anchorlab.analysis.attention import DEFAULT_TEMPLATE, probe_contexts, probe_tokens
    from anchorlab.analysis.attribution import HeldOutProbe

    task = CompositeTaskConfig()
    keys = [20, 57, 99]
    x = probe_contexts(task, keys, (4, 3), key_pos=5, n=4, seed=1)
    assert x.shape == (12, 9)
    assert x[:, 5].tolist() == keys * 4 and (x[:, 6] == 4).all() and (x[:, 7] == 3).all()
    noise = x[:, [0, 1, 2, 3, 4, 8]]
    assert noise.min() >= task.key_min and noise.max() <= task.key_max
    # one context per block of keys: its noise is shared by the keys, and differs between contexts
    assert (noise[0:3] == noise[0]).all() and not (noise[0] == noise[3]).all()
    assert torch.equal(x, probe_contexts(task, keys, (4, 3), 5, 4, seed=1))
    assert not torch.equal(x, probe_contexts(task, keys, (4, 3), 5, 4, seed=2))
    with pytest.raises(ValueError, match="key_pos 7"):
        probe_contexts(task, keys, (4, 3), 7, 4)
    with pytest.raises(ValueError, match="n: a number of contexts"):
        probe_contexts(task, keys, (4, 3), 2, 0)
    probe = HeldOutProbe.of(task)
    # contexts 0 is the template; moved, the template keeps its noise in order around the key and the pair
    assert torch.equal(probe.inputs(task), probe_tokens(task, probe.keys, (4, 3)))
    moved = probe.inputs(task, key_pos=0)
    assert moved[0].tolist()[3:] == [v for j, v in enumerate(DEFAULT_TEMPLATE) if j not in (2, 3, 4)]
    assert moved[0].tolist()[:3] == [probe.keys[0], 4, 3]
    # the reversed order swaps the anchors in the same contexts
    a, b = probe.inputs(task, False, 3, 2, seed=4), probe.inputs(task, True, 3, 2, seed=4)
    assert torch.equal(a[:, [4, 5]], b[:, [5, 4]]) and torch.equal(a[:, [0, 1, 2, 3, 6, 7, 8]],
                                                                     b[:, [0, 1, 2, 3, 6, 7, 8]])


def test_held_out_attribution_over_drawn_contexts_is_the_mean_of_each_context():
    from anchorlab.analysis.attribution import HeldOutProbe

    task = CompositeTaskConfig()
    m = build_model(ModelConfig(d_model=32, n_heads=1, d_head=16, d_mlp=64, n_layers=2, n_ctx=9), task.vocab_size)
    apply_init(m, InitConfig(gamma=0.3), torch.Generator().manual_seed(0))
    m.eval()
    r = held_out_attribution(m, task, key_pos=4, contexts=3, seed=7)
    assert "answer" not in r and r["contexts"] == 3
    total = sum(r["attrs"].values())
    assert abs(total - r["logit_diff"]).max() < 1e-4  # the parts still add up, context-averaged
    # the per-key value is the mean of the three contexts' values, computed one by one
    probe = HeldOutProbe.of(task)
    x = probe.inputs(task, key_pos=4, contexts=3, seed=7)
    with torch.no_grad():
        per_input = probe.margin(m(x)).reshape(3, -1)
        answers = (m(x)[:, -1].argmax(-1) - torch.tensor(probe.keys).repeat(3)).reshape(3, -1)
    assert r["logit_diff"] == pytest.approx(per_input.mean(0).numpy(), abs=1e-6)
    assert r["answer_inferential"] == pytest.approx((answers == -10).double().mean(0).numpy())
    assert r["answer_symmetric"] == pytest.approx((answers == -6).double().mean(0).numpy())


def test_attribution_figure_draws_and_checks_its_option(tmp_path):
    import csv

    from anchorlab.figures import draw
    from anchorlab.train import train
    from tests.conftest import tiny_config

    run = tmp_path / "run"
    train(tiny_config(**{"train.epochs": 1}), run, show_progress=False)
    draw("p1-attribution", [run], tmp_path / "f", heads=True)
    rows = list(csv.DictReader(open(tmp_path / "f" / "p1-attribution.csv")))
    assert (tmp_path / "f" / "p1-attribution.png").stat().st_size > 10_000
    attribution = [r for r in rows if r["kind"] == "attribution"]
    assert {r["part"] for r in attribution} >= {"L0H0", "L1H0", "b_U", "1_mlp_out"}
    assert [int(r["layer"]) for r in rows if r["kind"] == "lens"] == [0, 1]
    with pytest.raises(ConfigError, match="heads"):
        draw("p1-attribution", [run], tmp_path / "g", heads="yes")
    draw("p1-attribution", [run], tmp_path / "c", contexts=2, key_pos=0)
    rows = list(csv.DictReader(open(tmp_path / "c" / "p1-attribution.csv")))
    assert {(r["contexts"], r["key_pos"]) for r in rows} == {("2", "0")}
    for bad, match in (({"contexts": -1}, "option contexts: a whole number >= 0"),
                       ({"key_pos": 7}, "option key_pos: the key's position, 0 to 6")):
        with pytest.raises(ConfigError, match=match):
            draw("p1-attribution", [run], tmp_path / "g", **bad)
    assert not (tmp_path / "g").exists()


# ---- activation patching (analysis.patching) ------------------------------------------------------------------


def test_patch_resid_equals_one_patched_forward_pass_per_cell():
    """The batched patching (all positions of a site in one pass) gives what patching each (site, position) alone
    gives; patching from an identical input changes nothing."""
    from anchorlab.analysis.patching import patch_resid, resid_sites
    from anchorlab.models.hooks import run_with_hooks

    m = model_of("post")
    g = torch.Generator().manual_seed(5)
    clean, corrupted = torch.randint(0, V, (3, 9), generator=g), torch.randint(0, V, (3, 9), generator=g)

    def metric(logits):
        return logits[:, -1, 7] - logits[:, -1, 8]

    grid = patch_resid(m, clean, corrupted, metric)
    assert resid_sites(m) == ["blocks.0.hook_resid_pre", "blocks.1.hook_resid_pre"] and grid.shape == (2, 9)
    _, cache = run_with_cache(m, corrupted)
    for i, site in enumerate(resid_sites(m)):
        for p in range(9):
            def put(x, name, p=p):
                x = x.clone()
                x[:, p] = cache[name][:, p]
                return x
            alone = metric(run_with_hooks(m, clean, fwd_hooks=[(site, put)])).double().mean()  # no_grad inside
            assert grid[i, p] == pytest.approx(float(alone), abs=1e-4)
    with torch.no_grad():
        base = float(metric(m(clean)).double().mean())
    assert patch_resid(m, clean, clean.clone(), metric) == pytest.approx(base, abs=1e-4)
    # the corrupted run's cache, when the caller has it, stands for that pass: the same grid; a cache without a
    # site is refused, naming it
    assert np.array_equal(patch_resid(m, clean, corrupted, metric, cache=cache), grid)
    with pytest.raises(KeyError, match="blocks.1.hook_resid_pre"):
        patch_resid(m, clean, corrupted, metric, cache={"blocks.0.hook_resid_pre": cache["blocks.0.hook_resid_pre"]})


def test_order_patching_normalises_by_the_two_orders_gap():
    from anchorlab.analysis import patching
    from anchorlab.analysis.attention import DEFAULT_KEY_POS

    task = CompositeTaskConfig()
    m = build_model(ModelConfig(d_model=32, n_heads=1, d_head=16, d_mlp=64, n_layers=2, n_ctx=9), task.vocab_size)
    apply_init(m, InitConfig(gamma=0.2), torch.Generator().manual_seed(0))
    r = patching.order_patching(m.eval(), task)
    assert r["tokens"][DEFAULT_KEY_POS:DEFAULT_KEY_POS + 3] == ["x", 4, 3] and r["margin"].shape == (6, 9)
    assert r["names"] == ["embeddings", "block 1 attention", "block 1 MLP", "block 1 output", "block 2 attention",
                          "block 2 MLP"]
    assert r["sites"][3] == "blocks.1.hook_resid_pre" and r["sites"][4] == "blocks.1.attn.hook_attn_out"
    # positions holding the same token in both orders (noise, key) change nothing at the embeddings, and nothing
    # before the first anchor changes anywhere (causal attention: those positions never see the anchors)
    same = [j for j in range(9) if j not in (DEFAULT_KEY_POS + 1, DEFAULT_KEY_POS + 2)]
    assert r["margin"][0, same] == pytest.approx(r["clean"], abs=1e-6)
    assert r["margin"][:, :DEFAULT_KEY_POS + 1] == pytest.approx(r["clean"], abs=1e-6)
    assert patching.order_patching(m, task, components=False)["names"] == ["embeddings", "block 1 output"]
    gap = r["corrupted"] - r["clean"]
    if abs(gap) >= patching.MIN_GAP:
        assert r["effect"] == pytest.approx((r["margin"] - r["clean"]) / gap)
    else:
        assert np.isnan(r["effect"]).all()


def test_roles_of_positions():
    from anchorlab.analysis.patching import role_of

    assert [role_of(j, 0, 9) for j in range(9)] == ["key", "first anchor", "second anchor"] + \
        ["noise after the pair"] * 5 + ["last position"]
    assert [role_of(j, 4, 9) for j in range(9)] == ["noise before the key"] * 4 + \
        ["key", "first anchor", "second anchor", "noise after the pair", "last position"]
    # key at 6: the second anchor is the last position, a role of neither
    assert [role_of(j, 6, 9) for j in range(9)] == ["noise before the key"] * 6 + ["key", "first anchor", None]


def test_order_patching_by_role_averages_each_key_position():
    from anchorlab.analysis import patching

    task = CompositeTaskConfig()
    m = build_model(ModelConfig(d_model=32, n_heads=1, d_head=16, d_mlp=64, n_layers=2, n_ctx=9), task.vocab_size)
    apply_init(m, InitConfig(gamma=0.0), torch.Generator().manual_seed(1))
    with torch.no_grad():  # the two orders' mean margins then differ by >= MIN_GAP at every key position
        m.unembed.W_U.mul_(100)
    r = patching.order_patching_by_role(m.eval(), task, contexts=2, seed=3)
    runs = r["by_key_pos"]
    assert [x["key_pos"] for x in runs] == list(range(7)) and r["margin"].shape == (6, len(patching.ROLES))
    assert all(abs(x["corrupted"] - x["clean"]) >= patching.MIN_GAP for x in runs)  # every effect defined here
    # each key position is order_patching there, with its own contexts (seed + key position)
    again = patching.order_patching(m, task, key_pos=4, contexts=2, seed=7)
    assert np.array_equal(again["margin"], runs[4]["margin"])
    key, first, second, after, last = (patching.ROLES.index(k) for k in
                                       ("key", "first anchor", "second anchor", "noise after the pair",
                                        "last position"))
    # the key sits at key_pos, so its column is the mean of each key position's column there
    assert r["margin"][:, key] == pytest.approx(np.mean([x["margin"][:, x["key_pos"]] for x in runs], axis=0))
    # the last position and the second anchor leave out key position 6, where they are one position
    assert r["effect"][:, last] == pytest.approx(np.mean([x["effect"][:, 8] for x in runs[:6]], axis=0))
    assert r["effect"][:, second] == pytest.approx(
        np.mean([x["effect"][:, x["key_pos"] + 2] for x in runs[:6]], axis=0))
    # the noise after the pair: the mean of its positions, then of the key positions that have any (0-5)
    assert r["effect"][:, after] == pytest.approx(
        np.mean([x["effect"][:, x["key_pos"] + 3:8].mean(-1) for x in runs[:5]], axis=0))
    # causal attention: nothing before the first anchor sees the order, so patching there moves nothing
    before = patching.ROLES.index("noise before the key")
    assert r["effect"][:, [before, key]] == pytest.approx(0, abs=1e-6)
    assert np.abs(r["effect"][:, first]).max() > 0.01
    with pytest.raises(ValueError, match="contexts"):
        patching.order_patching_by_role(m, task, contexts=0)


def test_patching_figure_draws(tmp_path):
    import csv

    from anchorlab.figures import draw
    from anchorlab.train import train
    from tests.conftest import tiny_config

    run = tmp_path / "run"
    train(tiny_config(**{"train.epochs": 1}), run, show_progress=False)
    import shutil

    shutil.copytree(run, tmp_path / "run2")
    draw("p1-patching", [run, tmp_path / "run2"], tmp_path / "f")
    rows = list(csv.DictReader(open(tmp_path / "f" / "p1-patching.csv")))
    assert (tmp_path / "f" / "p1-patching.png").stat().st_size > 10_000
    assert len(rows) == 2 * 6 * 9 and {r["site_name"] for r in rows} >= {"embeddings", "block 1 output", "block 2 MLP"}
    draw("p1-patching", [run], tmp_path / "r", by="role", contexts=2)
    rows = list(csv.DictReader(open(tmp_path / "r" / "p1-patching.csv")))
    from anchorlab.analysis.patching import ROLES

    assert [r["role"] for r in rows[:6]] == list(ROLES) and len(rows) == 6 * 6
    assert {r["contexts"] for r in rows} == {"2"}
    draw("p1-patching", [run], tmp_path / "p", contexts=1, key_pos=6)
    rows = list(csv.DictReader(open(tmp_path / "p" / "p1-patching.csv")))
    assert [r["token"] for r in rows[:9]] == ["·"] * 6 + ["x", "4", "3"]
    for bad, match in (({"by": "roles"}, "option by: 'position' or 'role'"),
                       ({"by": "role", "key_pos": 2}, "by=role reads every key position"),
                       ({"contexts": 1.5}, "option contexts")):
        with pytest.raises(ConfigError, match=match):
            draw("p1-patching", [run], tmp_path / "g", **bad)
    assert not (tmp_path / "g").exists()
