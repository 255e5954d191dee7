"""SCAN (Lake & Baroni 2018, arXiv 1711.00350): every command of its grammar, their action sequences, the
add-primitive splits, and a reader for the published split files.

Written from the paper's grammar and interpretation function (no data file is needed)::

    C -> S | S and S | S after S          [[S1 and S2]] = [[S1]] [[S2]]    [[S1 after S2]] = [[S2]] [[S1]]
    S -> V | V twice | V thrice           [[V twice]] = [[V]] [[V]]        [[V thrice]] = [[V]] [[V]] [[V]]
    V -> U | U R | turn R                 [[walk]] = I_WALK (look, run, jump alike); [[U R]] = I_TURN_R [[U]]
       | X opposite R | X around R        [[X opposite R]] = I_TURN_R I_TURN_R [[X]]
    X -> U | turn;  R -> left | right     [[X around R]] = (I_TURN_R [[X]]) four times; [[turn]] is empty

e.g. ``jump around left after walk twice`` → ``I_WALK I_WALK I_TURN_LEFT I_JUMP I_TURN_LEFT I_JUMP
I_TURN_LEFT I_JUMP I_TURN_LEFT I_JUMP``. Counts: 34 V phrases, 3 × 34 = 102 S phrases, and
102 + 2 × 102² = 20,910 commands (every one distinct; the longest has 9 words and 48 actions).

Add-primitive splits ("generalizing composition across primitive commands"): the test set is every command that
contains the primitive together with something else (``addprim_turn_left``: 1,208; ``addprim_jump``: 7,706);
the training set is every command without the primitive plus the primitive alone, repeated. The published
README makes the primitive 10% of the training lines; that is the default here (:func:`addprim_split`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from anchorlab.text.seq2seq import exact_match

VERBS = ("walk", "look", "run", "jump")
DIRECTIONS = ("left", "right")
REPEATS = {"twice": 2, "thrice": 3}
CONJUNCTIONS = ("and", "after")
ACTIONS = ("I_WALK", "I_LOOK", "I_RUN", "I_JUMP", "I_TURN_LEFT", "I_TURN_RIGHT")
PRIMITIVES = {"addprim_turn_left": "turn left", "addprim_jump": "jump"}  # split name -> the held-out primitive
PRIMITIVE_FRACTION = 0.1  # share of the training lines that repeat the primitive (published README)
SCAN_ENV = "ANCHORLAB_SCAN"

Pair = tuple[str, str]  # (command, action sequence), words separated by single spaces


class ScanFilesMissing(FileNotFoundError):
    """The published SCAN split files are not where they were looked for."""


def _turn(direction: str) -> tuple[str, ...]:
    return (f"I_TURN_{direction.upper()}",)


@lru_cache(maxsize=1)
def _verb_phrases() -> dict[str, tuple[str, ...]]:
    """The 34 V phrases and their actions, in grammar order."""
    phrases: dict[str, tuple[str, ...]] = {u: (f"I_{u.upper()}",) for u in VERBS}
    movers = {**{u: (f"I_{u.upper()}",) for u in VERBS}, "turn": ()}  # X: a verb or "turn" (no action)
    for x, act in movers.items():
        for r in DIRECTIONS:
            phrases[f"{x} {r}"] = _turn(r) + act
    for x, act in movers.items():
        for r in DIRECTIONS:
            phrases[f"{x} opposite {r}"] = _turn(r) * 2 + act
            phrases[f"{x} around {r}"] = (_turn(r) + act) * 4
    return phrases


@lru_cache(maxsize=1)
def _sentences() -> dict[str, tuple[str, ...]]:
    """The 102 S phrases (V, V twice, V thrice) and their actions, in grammar order."""
    out: dict[str, tuple[str, ...]] = {}
    for v, act in _verb_phrases().items():
        out[v] = act
        for word, n in REPEATS.items():
            out[f"{v} {word}"] = act * n
    return out


@lru_cache(maxsize=1)
def scan_pairs() -> tuple[Pair, ...]:
    """Every SCAN command with its action sequence (20,910), in grammar order: S, then S and S, S after S."""
    sentences = _sentences()
    pairs = [(s, " ".join(a)) for s, a in sentences.items()]
    for conj in CONJUNCTIONS:
        for s1, a1 in sentences.items():
            for s2, a2 in sentences.items():
                actions = a1 + a2 if conj == "and" else a2 + a1
                pairs.append((f"{s1} {conj} {s2}", " ".join(actions)))
    return tuple(pairs)


def commands() -> list[str]:
    """Every SCAN command (20,910 distinct strings)."""
    return [c for c, _ in scan_pairs()]


def interpret(command: str) -> str:
    """The action sequence of ``command`` (space-separated); ValueError if it is not a SCAN command."""
    words = command.split()
    sentences = _sentences()
    conjunctions = [i for i, w in enumerate(words) if w in CONJUNCTIONS]
    if not conjunctions and " ".join(words) in sentences:
        return " ".join(sentences[" ".join(words)])
    if len(conjunctions) == 1:
        i = conjunctions[0]
        first, second = " ".join(words[:i]), " ".join(words[i + 1 :])
        if first in sentences and second in sentences:
            a1, a2 = sentences[first], sentences[second]
            return " ".join(a1 + a2 if words[i] == "and" else a2 + a1)
    raise ValueError(f"not a SCAN command: {command!r}")


def contains_primitive(command: str, primitive: str) -> bool:
    """Whether the words of ``primitive`` occur contiguously in ``command`` ("turn around left" has no "turn left")."""
    w, p = command.split(), primitive.split()
    return any(w[i : i + len(p)] == p for i in range(len(w) - len(p) + 1))


@dataclass(frozen=True)
class ScanSplit:
    """A SCAN split: ``train`` (with the isolated primitive repeated) and ``test``, both (command, actions) pairs."""

    name: str
    train: tuple[Pair, ...]
    test: tuple[Pair, ...]

    @property
    def primitive(self) -> str:
        return PRIMITIVES[self.name]

    @property
    def primitive_copies(self) -> int:
        """How many training lines are the isolated primitive."""
        return sum(c == self.primitive for c, _ in self.train)


def default_primitive_copies(n_other: int) -> int:
    """Copies of the primitive that make it ``PRIMITIVE_FRACTION`` of the training lines, given ``n_other`` others."""
    return max(1, round(n_other * PRIMITIVE_FRACTION / (1 - PRIMITIVE_FRACTION)))


def addprim_split(name: str = "addprim_turn_left", primitive_copies: int | None = None) -> ScanSplit:
    """The add-primitive split ``name`` (``addprim_turn_left`` or ``addprim_jump``). Test: the commands with the
    primitive and something else. Train: the commands without it, then the primitive alone ``primitive_copies``
    times (default: 10% of the training lines, as published: 2,189 for turn left, 1,467 for jump)."""
    if name not in PRIMITIVES:
        raise ValueError(f"unknown SCAN split {name!r}; allowed {sorted(PRIMITIVES)}")
    primitive = PRIMITIVES[name]
    pairs = scan_pairs()
    test = tuple(p for p in pairs if p[0] != primitive and contains_primitive(p[0], primitive))
    other = tuple(p for p in pairs if not contains_primitive(p[0], primitive))
    copies = default_primitive_copies(len(other)) if primitive_copies is None else primitive_copies
    if copies < 1:
        raise ValueError(f"primitive_copies must be >= 1 (the primitive must be seen), got {copies}")
    return ScanSplit(name, other + ((primitive, interpret(primitive)),) * copies, test)


def action_accuracy(predictions: list[str] | list[list[str]], test: tuple[Pair, ...] | list[Pair]) -> float:
    """Exact-match accuracy of predicted action sequences against the (command, actions) pairs ``test``."""
    return exact_match(predictions, [a for _, a in test])


# --------------------------------------------------------------------------------------------------
# The published split files (github.com/brendenlake/SCAN): lines "IN: <command> OUT: <actions>"


def read_scan_file(path: str | Path) -> list[Pair]:
    """The (command, actions) pairs of one published SCAN file, blank lines skipped."""
    pairs = []
    for i, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        head, sep, actions = line.partition(" OUT: ")
        if not sep or not head.startswith("IN: "):
            raise ValueError(f"{path}:{i}: expected 'IN: <command> OUT: <actions>', got {line[:80]!r}")
        pairs.append((" ".join(head[4:].split()), " ".join(actions.split())))
    return pairs


def scan_directory(directory: str | Path | None = None) -> Path:
    """``directory``, else ``$ANCHORLAB_SCAN``; ScanFilesMissing when neither is given."""
    directory = directory or os.environ.get(SCAN_ENV)
    if not directory:
        raise ScanFilesMissing(f"no SCAN directory: pass one or set {SCAN_ENV}=DIR (a copy of github.com/brendenlake/"
                               f"SCAN, or a folder with tasks_train_<split>.txt and tasks_test_<split>.txt)")
    return Path(directory)


def load_published_split(name: str = "addprim_turn_left", directory: str | Path | None = None) -> ScanSplit:
    """The published split ``name`` read from ``directory`` (or ``$ANCHORLAB_SCAN``): its files
    ``tasks_{train,test}_<name>.txt`` directly there or under ``add_prim_split/`` (the repository's layout)."""
    root = scan_directory(directory)
    halves = {}
    for half in ("train", "test"):
        file = f"tasks_{half}_{name}.txt"
        found = [p for p in (root / file, root / "add_prim_split" / file) if p.is_file()]
        if not found:
            raise ScanFilesMissing(f"SCAN split {name}: {file} is neither in {root} nor in {root / 'add_prim_split'}"
                                   f" (set {SCAN_ENV}=DIR)")
        halves[half] = tuple(read_scan_file(found[0]))
    return ScanSplit(name, halves["train"], halves["test"])


@dataclass(frozen=True)
class SplitAgreement:
    """How a published split compares with ours: pairs whose actions differ from :func:`interpret` (or whose
    command is not in the grammar), and test / distinct-train commands only in one of the two."""

    wrong_actions: tuple[Pair, ...]
    test_only_published: tuple[str, ...]
    test_only_ours: tuple[str, ...]
    train_only_published: tuple[str, ...]
    train_only_ours: tuple[str, ...]
    primitive_copies_published: int

    @property
    def ok(self) -> bool:
        return not (self.wrong_actions or self.test_only_published or self.test_only_ours
                    or self.train_only_published or self.train_only_ours)


def compare_with_published(published: ScanSplit, ours: ScanSplit | None = None) -> SplitAgreement:
    """Check ``published`` against our split of the same name: every action sequence, the test commands, and the
    distinct training commands (the primitive's copy count is a parameter, so it is reported, not compared)."""
    ours = ours or addprim_split(published.name)
    wrong = []
    for command, actions in published.train + published.test:
        try:
            if interpret(command) != actions:
                wrong.append((command, actions))
        except ValueError:
            wrong.append((command, actions))
    test_p, test_o = {c for c, _ in published.test}, {c for c, _ in ours.test}
    train_p, train_o = {c for c, _ in published.train}, {c for c, _ in ours.train}
    return SplitAgreement(tuple(wrong), tuple(sorted(test_p - test_o)), tuple(sorted(test_o - test_p)),
                          tuple(sorted(train_p - train_o)), tuple(sorted(train_o - train_p)),
                          published.primitive_copies)
