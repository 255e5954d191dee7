"""Word-level input → output examples as decoder-only next-token rows, with the loss only after the separator.

Shared by SCAN (:mod:`anchorlab.tasks.scan`) and COGS (:mod:`anchorlab.text.cogs`): both come as pairs of
whitespace-separated words, so one word is one token and :func:`build_vocabulary` lists them all. One row
(SCAN ``jump twice`` → ``I_JUMP I_JUMP``, ids shown as their words; ``-`` is IGNORE = -100, no loss)::

    position   0      1      2       3       4       5      6
    row        jump   twice  <sep>   I_JUMP  I_JUMP  <eos>  <pad> ...
    inputs     jump   twice  <sep>   I_JUMP  I_JUMP  <eos>  ...      (row[:-1])
    targets    -      -      I_JUMP  I_JUMP  <eos>   -      ...      (row[1:] where the loss is taken)
    prompt_len = 3 (input words + <sep>): greedy decoding starts from row[:prompt_len]

The loss covers only the output tokens after the separator, as the authors' COGS trainer does (it masks
everything up to its " OUT" token); the end token is scored too, because greedy decoding stops on it.
Rows are padded with ``<pad>`` to one width ``n_ctx`` and never truncated: a row that does not fit is an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

PAD, SEP, EOS = "<pad>", "<sep>", "<eos>"
SPECIALS = (PAD, SEP, EOS)  # ids 0, 1, 2 in every vocabulary
IGNORE = -100  # the ignore_index of torch's cross_entropy (same value as anchorlab.text.mix.IGNORE)

Pair = tuple[Sequence[str], Sequence[str]]


@dataclass(frozen=True)
class Vocabulary:
    """Word ↔ id table: the specials first (``<pad>`` = 0, ``<sep>`` = 1, ``<eos>`` = 2), then the words."""

    tokens: tuple[str, ...]
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.tokens[: len(SPECIALS)] != SPECIALS:
            raise ValueError(f"a vocabulary starts with {SPECIALS}, got {self.tokens[:3]}")
        if len(set(self.tokens)) != len(self.tokens):
            raise ValueError("vocabulary tokens are not unique")
        object.__setattr__(self, "_index", {t: i for i, t in enumerate(self.tokens)})

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def pad_id(self) -> int:
        return 0

    @property
    def sep_id(self) -> int:
        return 1

    @property
    def eos_id(self) -> int:
        return 2

    def encode(self, words: Iterable[str]) -> list[int]:
        """Ids of ``words``; a word outside the vocabulary raises KeyError (the vocabulary is closed)."""
        try:
            return [self._index[w] for w in words]
        except KeyError as e:
            raise KeyError(f"word {e.args[0]!r} is not in the vocabulary ({len(self)} tokens)") from None

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.tokens[int(i)] for i in ids]


def build_vocabulary(sequences: Iterable[Sequence[str]]) -> Vocabulary:
    """The specials plus every word of ``sequences``, sorted, so that the ids do not depend on the data order."""
    words = {w for seq in sequences for w in seq} - set(SPECIALS)
    return Vocabulary(SPECIALS + tuple(sorted(words)))


def pair_words(pairs: Iterable[Pair]) -> Iterable[Sequence[str]]:
    """Both sides of every pair, for :func:`build_vocabulary`."""
    for source, target in pairs:
        yield source
        yield target


@dataclass(frozen=True)
class Seq2SeqRows:
    """Encoded pairs, one row each: ``inputs``/``targets`` [N, n_ctx] int64 (IGNORE where no loss),
    ``prompt_len`` [N] (input words + separator) and ``output_len`` [N] (output words, without ``<eos>``)."""

    inputs: np.ndarray
    targets: np.ndarray
    prompt_len: np.ndarray
    output_len: np.ndarray

    def __len__(self) -> int:
        return len(self.inputs)

    @property
    def n_ctx(self) -> int:
        return self.inputs.shape[1]

    @property
    def loss_mask(self) -> np.ndarray:
        """[N, n_ctx] bool: the positions whose prediction is scored (output words and ``<eos>``)."""
        return self.targets != IGNORE


def row_length(source: Sequence[str], target: Sequence[str]) -> int:
    """Tokens in the full row of a pair: input, ``<sep>``, output, ``<eos>``."""
    return len(source) + len(target) + 2


def encode_pairs(pairs: Sequence[Pair], vocab: Vocabulary, n_ctx: int | None = None) -> Seq2SeqRows:
    """Rows of ``pairs`` (word sequences) padded to ``n_ctx`` positions (default: the longest row - 1)."""
    need = max((row_length(s, t) for s, t in pairs), default=2) - 1
    n_ctx = need if n_ctx is None else n_ctx
    if n_ctx < need:
        raise ValueError(f"n_ctx = {n_ctx} is too short: the longest pair needs {need} positions")
    rows = np.full((len(pairs), n_ctx + 1), vocab.pad_id, dtype=np.int64)
    targets = np.full((len(pairs), n_ctx), IGNORE, dtype=np.int64)
    prompt_len = np.empty(len(pairs), dtype=np.int64)
    output_len = np.empty(len(pairs), dtype=np.int64)
    for i, (source, target) in enumerate(pairs):
        ids = vocab.encode(source) + [vocab.sep_id] + vocab.encode(target) + [vocab.eos_id]
        rows[i, : len(ids)] = ids
        p = len(source) + 1
        # targets[j] = rows[j + 1]: position p - 1 (the separator) predicts the first output word
        targets[i, p - 1 : len(ids) - 1] = rows[i, p : len(ids)]
        prompt_len[i], output_len[i] = p, len(target)
    return Seq2SeqRows(rows[:, :-1].copy(), targets, prompt_len, output_len)


def output_words(ids: Iterable[int], vocab: Vocabulary) -> list[str]:
    """The words of a generated continuation up to (not including) its first ``<eos>``."""
    words = []
    for i in ids:
        if int(i) == vocab.eos_id:
            break
        words.append(vocab.tokens[int(i)])
    return words


def _words(x: str | Sequence[str]) -> tuple[str, ...]:
    return tuple(x.split()) if isinstance(x, str) else tuple(x)


def exact_match(predictions: Sequence[str | Sequence[str]], references: Sequence[str | Sequence[str]]) -> float:
    """Fraction of predictions equal word for word to their reference (strings are split on whitespace)."""
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions for {len(references)} references")
    if not references:
        raise ValueError("exact match of an empty set is undefined")
    return sum(_words(p) == _words(r) for p, r in zip(predictions, references)) / len(references)
