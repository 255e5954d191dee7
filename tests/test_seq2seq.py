"""Seq2seq rows: vocabulary order, the worked example of the module docstring, loss only after the separator,
no truncation, decoding up to <eos>, exact match."""

from __future__ import annotations

import numpy as np
import pytest

from anchorlab.text.seq2seq import (
    IGNORE,
    SPECIALS,
    Vocabulary,
    build_vocabulary,
    encode_pairs,
    exact_match,
    output_words,
    pair_words,
)

PAIRS = [("jump twice".split(), "I_JUMP I_JUMP".split()),
         ("walk left and run".split(), "I_TURN_LEFT I_WALK I_RUN".split()),
         ("look".split(), "I_LOOK".split())]


@pytest.fixture
def vocab() -> Vocabulary:
    return build_vocabulary(pair_words(PAIRS))


def test_vocabulary_specials_first_then_sorted_words_independent_of_order(vocab):
    assert vocab.tokens[:3] == SPECIALS == ("<pad>", "<sep>", "<eos>")
    assert (vocab.pad_id, vocab.sep_id, vocab.eos_id) == (0, 1, 2)
    words = vocab.tokens[3:]
    assert list(words) == sorted(words) and len(words) == 12  # 7 input words + 5 actions
    assert build_vocabulary(pair_words(PAIRS[::-1])) == vocab
    assert vocab.decode(vocab.encode(["run", "I_RUN"])) == ["run", "I_RUN"]
    with pytest.raises(KeyError, match="'fly'"):
        vocab.encode(["fly"])
    with pytest.raises(ValueError):
        Vocabulary(("a", "<pad>", "<sep>", "<eos>"))


def test_worked_example_of_the_docstring(vocab):
    rows = encode_pairs(PAIRS[:1], vocab, n_ctx=7)
    ids = vocab.encode
    row = ids(["jump", "twice", "<sep>", "I_JUMP", "I_JUMP", "<eos>", "<pad>", "<pad>"])
    assert rows.inputs[0].tolist() == row[:-1]
    assert rows.targets[0].tolist() == [IGNORE, IGNORE, *ids(["I_JUMP", "I_JUMP", "<eos>"]), IGNORE, IGNORE]
    assert rows.loss_mask[0].tolist() == [False, False, True, True, True, False, False]
    assert (rows.prompt_len[0], rows.output_len[0]) == (3, 2)
    assert rows.inputs.dtype == rows.targets.dtype == np.int64


def test_loss_only_on_output_tokens_after_the_separator(vocab):
    rows = encode_pairs(PAIRS, vocab)
    assert rows.n_ctx == max(len(s) + len(t) + 2 for s, t in PAIRS) - 1  # longest row, minus one
    for i, (source, target) in enumerate(PAIRS):
        scored = np.flatnonzero(rows.loss_mask[i])
        p = rows.prompt_len[i]
        assert rows.inputs[i, p - 1] == vocab.sep_id  # the first scored prediction is made at <sep>
        assert scored.tolist() == list(range(p - 1, p + len(target)))
        assert vocab.decode(rows.targets[i, scored]) == [*target, "<eos>"]
        # the prompt that greedy decoding starts from is the input words and the separator
        assert vocab.decode(rows.inputs[i, :p]) == [*source, "<sep>"]
    assert (rows.targets[~rows.loss_mask] == IGNORE).all()


def test_padding_and_no_truncation(vocab):
    wide = encode_pairs(PAIRS, vocab, n_ctx=12)
    assert wide.inputs.shape == (3, 12) and (wide.inputs[2, 4:] == vocab.pad_id).all()
    with pytest.raises(ValueError, match="too short"):
        encode_pairs(PAIRS, vocab, n_ctx=5)


def test_output_words_stop_at_the_first_eos(vocab):
    generated = vocab.encode(["I_WALK", "I_RUN", "<eos>", "I_JUMP"])
    assert output_words(generated, vocab) == ["I_WALK", "I_RUN"]
    assert output_words(vocab.encode(["I_WALK"]), vocab) == ["I_WALK"]


def test_exact_match_word_for_word():
    assert exact_match(["I_JUMP  I_JUMP", ["I_RUN"], "I_WALK"], [["I_JUMP", "I_JUMP"], "I_RUN", "I_WALK I_WALK"]) \
        == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        exact_match(["a"], ["a", "b"])
    with pytest.raises(ValueError):
        exact_match([], [])
