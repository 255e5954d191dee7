"""PrOntoQA + stories mix: rows are one document each, shifted targets, padding ignored, per-source loss."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from anchorlab.text.mix import IGNORE, SOURCES, build_mix, per_source_loss
from anchorlab.text.prontoqa import ProntoQAConfig, generate
from anchorlab.text.stories import generate_standin


class CharTokenizer:
    """One id per character; eos = 0. Enough to pin the row layout exactly."""

    eos_id = 0
    vocab_size = 128

    def encode(self, text):
        return [min(ord(c), 127) or 1 for c in text]


@pytest.fixture(scope="module")
def texts():
    qa = [e.text for e in generate(ProntoQAConfig(min_hops=1, max_hops=2), 12, seed=0)]
    return qa, generate_standin(8, seed=0)


def test_rows_targets_and_sources(texts):
    qa, stories = texts
    tok, n_ctx = CharTokenizer(), 2000  # longer than every document: nothing truncated
    mix = build_mix(qa, stories, tok, n_ctx, seed=3)
    assert len(mix) == 20 and mix.inputs.shape == mix.targets.shape == (20, n_ctx)
    assert (mix.source == 0).sum() == 12 and (mix.source == 1).sum() == 8
    # every row is the tokenized document of its source, followed by eos, then eos padding with no loss
    seen = {0: [], 1: []}
    for row in range(len(mix)):
        t = mix.targets[row]
        n = int((t != IGNORE).sum())
        doc = [int(mix.inputs[row, 0])] + t[: n - 1].tolist()
        assert t[n - 1] == tok.eos_id and (t[n:] == IGNORE).all() and mix.last[row] == n - 2
        assert (mix.inputs[row, 1:n] == t[: n - 1]).all()  # targets are inputs shifted by one
        seen[int(mix.source[row])].append("".join(map(chr, doc)))
    assert sorted(seen[0]) == sorted(qa) and sorted(seen[1]) == sorted(stories)
    assert mix.truncated == 0
    assert mix.source.tolist() != sorted(mix.source.tolist())  # shuffled
    again = build_mix(qa, stories, tok, n_ctx, seed=3)
    assert torch.equal(again.inputs, mix.inputs) and torch.equal(again.source, mix.source)


def test_truncation_keeps_full_context(texts):
    qa, stories = texts
    mix = build_mix(qa, stories, CharTokenizer(), 50, seed=0)
    assert mix.truncated == 20 and (mix.targets != IGNORE).all() and (mix.last == -1).all()
    with pytest.raises(ValueError, match="n_ctx"):
        build_mix(qa, stories, CharTokenizer(), 1, seed=0)


def test_per_source_loss_matches_manual():
    torch.manual_seed(0)
    targets = torch.tensor([[1, 2, IGNORE], [3, IGNORE, IGNORE], [0, 1, 2]])
    source = torch.tensor([0, 1, 0])
    logits = torch.randn(3, 3, 5)
    loss = per_source_loss(logits, targets, source)
    ce = lambda r, p: F.cross_entropy(logits[r, p][None], targets[r, p][None]).item()
    assert loss["prontoqa"] == pytest.approx((ce(0, 0) + ce(0, 1) + ce(2, 0) + ce(2, 1) + ce(2, 2)) / 5)
    assert loss["stories"] == pytest.approx(ce(1, 0))
    assert math.isnan(per_source_loss(logits, targets, torch.zeros(3, dtype=torch.long))["stories"])
    assert SOURCES == ("prontoqa", "stories")


def test_mix_feeds_a_gamma_initialized_gpt2(texts):
    """End to end: trained BPE -> mix -> γ-init HF GPT-2 -> per-source loss near ln(vocab) at small init."""
    transformers = pytest.importorskip("transformers", reason="needs the [hf] extra")
    pytest.importorskip("tokenizers", reason="needs the [text] extra")
    from anchorlab.init import gamma_init_
    from anchorlab.text.tokenizers import train_bpe
    torch.set_num_threads(1)
    qa, stories = texts
    tok = train_bpe(qa + stories, vocab_size=300)
    mix = build_mix(qa, stories, tok, 64, seed=0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_layer=1, n_embd=32, n_head=2, vocab_size=tok.vocab_size, n_positions=64,
        bos_token_id=tok.eos_id, eos_token_id=tok.eos_id))
    gamma_init_(model, 1.0, generator=torch.Generator().manual_seed(0))  # tiny weights: near-uniform output
    model.eval()
    with torch.no_grad():
        loss = per_source_loss(model(mix.inputs).logits, mix.targets, mix.source)
    for name in SOURCES:
        assert loss[name] == pytest.approx(math.log(tok.vocab_size), rel=0.02), name
    gamma_init_(model, 0.0)  # std 1: large init, confident random predictions, loss far above ln(vocab)
    with torch.no_grad():
        loss = per_source_loss(model(mix.inputs).logits, mix.targets, mix.source)
    assert min(loss.values()) > 1.5 * math.log(tok.vocab_size)


def test_answer_accuracy_and_source_tokens(texts):
    pytest.importorskip("tokenizers", reason="needs the [text] extra")
    from anchorlab.text.mix import answer_accuracy, label_ids, source_token_ids
    from anchorlab.text.tokenizers import train_bpe
    qa, stories = texts
    tok = train_bpe(qa * 20 + stories, vocab_size=400)
    true_id, false_id = label_ids(tok)
    mix = build_mix(qa, stories, tok, 800, seed=1)
    assert mix.truncated == 0
    rows = (mix.source == 0).nonzero().flatten()
    labels = mix.targets[rows, mix.last[rows]]
    assert sorted(set(labels.tolist())) == sorted({true_id, false_id})
    assert (mix.targets[torch.arange(len(mix)), mix.last + 1] == tok.eos_id).all()
    # logits that put the right label first give 1.0; swapping the two label logits gives 0.0
    logits = torch.zeros(len(mix), 800, tok.vocab_size)
    logits[rows, mix.last[rows], labels] = 1.0
    assert answer_accuracy(logits, mix, tok) == 1.0
    assert answer_accuracy(logits[..., _swap(tok.vocab_size, true_id, false_id)], mix, tok) == 0.0
    ids = source_token_ids(mix)
    encoded = {i for t in qa for i in tok.encode(t)}
    assert set(ids["prontoqa"].tolist()) == encoded
    only = source_token_ids(mix, exclusive=True)
    assert not set(only["prontoqa"].tolist()) & set(ids["stories"].tolist())
    assert tok.eos_id not in ids["stories"].tolist() and len(only["stories"]) > len(only["prontoqa"])
    with pytest.raises(ValueError, match="splits"):
        label_ids(CharTokenizer())


def _swap(n, a, b):
    perm = list(range(n))
    perm[a], perm[b] = b, a
    return perm


def test_make_save_load_round_trip(tmp_path):
    from anchorlab.text.mix import load_mix, make_mix, save_mix
    tok = CharTokenizer()
    tok.name = "chars"
    mix, record = make_mix(10, 6, "standin", tok, n_ctx=300, seed=4)
    assert len(mix) == 16 and (mix.source == 1).sum() == 6 and record["stories_is_standin"]
    assert record["prontoqa"]["max_hops"] == 5 and record["tokenizer"] == "chars"
    again, _ = make_mix(10, 6, "standin", tok, n_ctx=300, seed=4)
    assert torch.equal(again.inputs, mix.inputs)
    loaded, meta = load_mix(save_mix(mix, tmp_path / "mix", record))
    for field in ("inputs", "targets", "source", "last"):
        assert torch.equal(getattr(loaded, field), getattr(mix, field)), field
    assert loaded.truncated == mix.truncated and loaded.eos_id == 0 and meta["n_ctx"] == 300
    (tmp_path / "s.txt").write_text("one story\n<|endoftext|>\nanother")
    with pytest.raises(ValueError, match="n_stories: .* holds 2 stories"):
        make_mix(2, 3, tmp_path / "s.txt", tok, n_ctx=50, seed=0)
