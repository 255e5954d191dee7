"""The data of a real-language run: a PrOntoQA + stories mix, generated and tokenized once into the run
directory, then read back (resuming needs no generator)::

    data/train/mix.{safetensors,json}   the training rows
    data/test/mix.{safetensors,json}    held-out rows (PrOntoQA: another seed; stories: the ones after training)
    data/tokenizer.json                 for data.tokenizer = "bpe" (trained on the training texts) and
                                        "gpt2_compact" (the GPT-2 ids that the train and test texts use)
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from anchorlab.config import ConfigError
from anchorlab.text.config import LMRunConfig
from anchorlab.text.mix import TextMix, build_mix, load_mix, save_mix

DATA, TOKENIZER = "data", "tokenizer.json"
_TEST_SEED_OFFSET = 7919  # PrOntoQA test examples come from data_seed + this (disjoint from training draws)


def story_source(stories: str) -> str | Path:
    """``"sample"`` -> the real TinyStories sample path; anything else as given. The sample cannot ship with
    anchorlab; where it is absent this raises a ``ConfigError`` that says how to point at it or do without."""
    from anchorlab.text.stories import SAMPLE_ENV, sample_path

    if stories != "sample":
        return stories
    path = sample_path()
    if not (path / "stories.txt").is_file():
        raise ConfigError(f"data.stories: 'sample' is the real TinyStories sample, not found at {path}/stories.txt; "
                          f"set {SAMPLE_ENV} to its directory, or use --set data.stories='hf' (TinyStories from the "
                          "Hugging Face hub, roneneldan/TinyStories: network and the datasets extra), a stories file "
                          "(<|endoftext|>-separated .txt, .jsonl or .parquet), or 'standin' (the offline stand-in "
                          "generator, not TinyStories)")
    return path


def preflight(cfgs: Sequence[LMRunConfig]) -> None:
    """Each config's story source, before anything is written (the ``lm`` kind's preflight,
    :mod:`anchorlab.kinds`): a path that is not there, or a file no loader reads, is one line naming
    ``data.stories`` (:func:`anchorlab.text.stories.story_file`). "hf" is checked where it is read (the network)."""
    from anchorlab.text.stories import StoriesUnavailable, story_file

    for cfg in cfgs:
        dc = cfg.data
        if dc.n_stories + dc.n_test_stories == 0 or dc.stories in ("standin", "hf"):
            continue
        try:
            story_file(story_source(dc.stories))  # the sample where it is not: its own line
        except StoriesUnavailable as e:
            raise ConfigError(f"data.stories: {dc.stories!r}: {e}") from None


def build_data(cfg: LMRunConfig, directory: Path) -> None:
    """Generate, tokenize and save the train / test mixes (and the BPE) under ``directory``, atomically."""
    from anchorlab.text.prontoqa import ProntoQAConfig, generate
    from anchorlab.text.stories import load_stories
    from anchorlab.text.tokenizers import compact, gpt2_tokenizer, train_bpe

    dc, seed = cfg.data, cfg.seeds.data_seed
    pcfg = ProntoQAConfig(ontology=dc.ontology, min_hops=dc.min_hops, max_hops=dc.max_hops, ordering=dc.ordering,
                          distractor=dc.distractor, sampling=dc.prontoqa_sampling)
    qa_train = [e.text for e in generate(pcfg, dc.n_prontoqa, seed)]
    qa_test = [e.text for e in generate(pcfg, dc.n_test_prontoqa, seed + _TEST_SEED_OFFSET)]
    n_st = dc.n_stories + dc.n_test_stories
    stories = load_stories(story_source(dc.stories), n=n_st, seed=seed + 1) if n_st else []
    if len(stories) < n_st:
        raise ConfigError(f"data.n_stories: {dc.stories} holds {len(stories)} stories, fewer than "
                          f"n_stories + n_test_stories = {n_st}")
    st_train, st_test = stories[:dc.n_stories], stories[dc.n_stories:]

    tmp = directory.with_name(f".{directory.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    tok: Any
    if dc.tokenizer == "bpe":
        tok = train_bpe(qa_train + st_train, dc.bpe_vocab)
        tok.save(tmp / TOKENIZER)
    elif dc.tokenizer == "gpt2_compact":
        tok = compact(gpt2_tokenizer(), qa_train + st_train + qa_test + st_test)
        tok.save(tmp / TOKENIZER)
    else:
        tok = gpt2_tokenizer()
    record = {"stories": str(story_source(dc.stories)), "stories_is_standin": dc.stories == "standin",
              "tokenizer": tok.name, "vocab_size": tok.vocab_size, "n_ctx": dc.n_ctx, "seed": seed}
    for name, qa, st, s in (("train", qa_train, st_train, seed + 2), ("test", qa_test, st_test, seed + 3)):
        mix = build_mix(qa, st, tok, dc.n_ctx, s)
        save_mix(mix, tmp / name, dict(record, n_prontoqa=len(qa), n_stories=len(st)))
    os.replace(tmp, directory)


def load_data(run_dir: Path, cfg: LMRunConfig) -> tuple[TextMix, TextMix, Any]:
    """(train mix, test mix, tokenizer) of a run, building them first if the run has none yet."""
    from anchorlab.text.tokenizers import gpt2_tokenizer, load_tokenizer

    d = Path(run_dir) / DATA
    if not d.is_dir():
        build_data(cfg, d)
    tok = gpt2_tokenizer() if cfg.data.tokenizer == "gpt2" else load_tokenizer(d / TOKENIZER)
    return load_mix(d / "train")[0], load_mix(d / "test")[0], tok
