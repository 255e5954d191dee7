"""Stories: file loaders, the real sample, offline HF fails fast, the stand-in generator, story_stats."""

from __future__ import annotations

import json
import math
import sys
import time
import types

import pytest

from anchorlab.text import stories as st
from anchorlab.text.prontoqa import ProntoQAConfig, generate
from anchorlab.text.stories import (
    StoriesUnavailable,
    generate_standin,
    load_hf,
    load_stories,
    sample_path,
    story_stats,
)

STORIES = ["Once upon a time, a cat sat.\n\nIt was happy.", "Tom ran.\nHe said, \"Hi!\"", "The end"]


class WordTokenizer:
    """Whitespace words -> ids, to check story_stats against hand-computed numbers."""

    def __init__(self):
        self.ids: dict[str, int] = {}

    def encode(self, text):
        return [self.ids.setdefault(w, len(self.ids)) for w in text.split()]


def test_txt_jsonl_and_directory(tmp_path):
    txt = tmp_path / "stories.txt"
    txt.write_text(f"\n{st.SEPARATOR}\n".join(STORIES) + "\n", encoding="utf-8")
    assert load_stories(txt) == STORIES
    assert load_stories(tmp_path) == STORIES  # a directory means its stories.txt
    assert load_stories(txt, n=2) == STORIES[:2]
    jl = tmp_path / "s.jsonl"
    jl.write_text("\n".join(json.dumps({"story": s, "id": i}) for i, s in enumerate(STORIES)) + "\n\n")
    assert load_stories(jl, field="story") == STORIES
    with pytest.raises(KeyError, match="no field 'text'"):
        load_stories(jl)


def test_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow", reason="parquet needs the [parquet] extra")
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"text": STORIES}), tmp_path / "s.parquet")
    assert load_stories(tmp_path / "s.parquet") == STORIES


def test_bad_sources(tmp_path):
    with pytest.raises(StoriesUnavailable, match="not found; allowed sources are .standin."):
        load_stories(tmp_path / "missing.txt")
    (tmp_path / "s.csv").write_text("x")
    with pytest.raises(StoriesUnavailable, match=r"s\.csv is a \.csv file, which no loader reads"):
        load_stories(tmp_path / "s.csv")


def test_real_sample():
    path = sample_path()
    if not (path / "stories.txt").is_file():
        pytest.skip(f"real TinyStories sample not found at {path} (set ANCHORLAB_TINYSTORIES)")
    real = load_stories(path)
    assert len(real) == 754
    assert real[0].startswith("One day, a little girl named Lily found a needle in her room.")
    assert all(st.SEPARATOR not in s and s == s.strip("\n") for s in real)
    assert sum(map(len, real)) == 638_437  # story characters, per the sample's README


def test_sample_path_env(monkeypatch, tmp_path):
    monkeypatch.setenv(st.SAMPLE_ENV, str(tmp_path))
    assert sample_path() == tmp_path
    monkeypatch.delenv(st.SAMPLE_ENV)
    assert sample_path().parts[-3:] == ("shared", "data", "tinystories-sample")


def test_a_missing_sample_names_every_other_source(monkeypatch, tmp_path):
    from anchorlab.config import ConfigError
    from anchorlab.text.data import story_source

    monkeypatch.setenv(st.SAMPLE_ENV, str(tmp_path))  # no stories.txt there
    with pytest.raises(ConfigError) as e:
        story_source("sample")
    line = str(e.value)
    assert line.startswith("data.stories: ") and "\n" not in line
    for way in (st.SAMPLE_ENV, "'hf'", "roneneldan/TinyStories", "a stories file", "'standin'"):
        assert way in line
    assert story_source("standin") == "standin"


def test_hf_offline_fails_at_once(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    t = time.perf_counter()
    with pytest.raises(StoriesUnavailable, match="HF_HUB_OFFLINE is set"):
        load_stories("hf")
    assert time.perf_counter() - t < 1.0
    # with the variable unset but no route to the hub: a clear error, not a hang inside `datasets`
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    fake = types.ModuleType("datasets")
    fake.load_dataset = lambda *a, **k: pytest.fail("load_dataset must not be called offline")
    monkeypatch.setitem(sys.modules, "datasets", fake)
    monkeypatch.setattr(st, "_hub_reachable", lambda: False)
    with pytest.raises(StoriesUnavailable, match="not reachable"):
        load_hf(n=10)


def test_hub_probe_times_out_quickly(monkeypatch):
    def slow_connect(address, timeout):
        assert timeout <= 3.0
        raise TimeoutError("timed out")
    monkeypatch.setattr(st.socket, "create_connection", slow_connect)
    assert st._hub_reachable() is False


def test_standin_deterministic_varied_and_labelled():
    a, b = generate_standin(300, seed=1), generate_standin(300, seed=1)
    assert a == b
    assert a != generate_standin(300, seed=2)
    assert len(set(a)) == 300
    assert load_stories("standin", n=300, seed=1) == a
    assert "stand-in" in st.__doc__ and "not TinyStories" in st.generate_standin.__doc__
    words = {w.strip('.,!?"').lower() for s in a for w in s.split()}
    assert len(words) > 450
    assert all(s[0].isupper() and s.rstrip()[-1] in '.!"' for s in a)
    assert all(s.count("\n\n") == 2 for s in a)  # three paragraphs
    assert all(s.count('"') % 2 == 0 for s in a)  # dialogue quotes are closed
    assert " a a" not in " ".join(a) and " a honest" not in " ".join(a) and " an b" not in " ".join(a)


def test_story_stats_hand_computed():
    stats = story_stats(["a b", "a a b c"], WordTokenizer())
    assert stats["vocab_size"] == 3 and stats["tokens"] == 6 and stats["stories"] == 2
    probs = [3 / 6, 2 / 6, 1 / 6]
    assert stats["unigram_entropy_bits"] == pytest.approx(-sum(p * math.log2(p) for p in probs))
    assert stats["mean_tokens"] == 3 and stats["median_tokens"] == 3


def test_standin_far_more_diverse_than_prontoqa():
    """What P2 Fig. 7 needs from the story source: a much more open vocabulary than PrOntoQA's."""
    tok = WordTokenizer()
    stories = story_stats(generate_standin(300, seed=0), tok)
    qa = story_stats([e.text for e in generate(ProntoQAConfig(), 300, seed=0)], WordTokenizer())
    assert stories["distinct_words"] > 5 * qa["distinct_words"]
    assert stories["unigram_entropy_bits"] > qa["unigram_entropy_bits"] + 2
