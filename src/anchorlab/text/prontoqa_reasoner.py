"""An independent PrOntoQA reasoner: parse context sentences with regexes and forward-chain to the answer.

It shares no code or vocabulary with the generator (:mod:`anchorlab.text.prontoqa`); it knows only the
sentence grammar, so it serves as a parse-back self-check of generated labels. Worked example::

    >>> ctx = ["Jompuses are not bright.", "Jompuses are vumpuses.", "Every zumpus is bright.",
    ...        "Wren is a jompus."]
    >>> parse_answer(ctx, "True or false: Wren is not bright.")
    True

Grammar understood (X, Y nouns, maybe multi-word; P an adjective, maybe hyphenated; E a capitalized name or a
numeral; nouns are compared lower-cased, plurals undone on the last word, "Sheep are ..." is plural):
``Every|Each X is [not] a|an Y.``, ``Every|Each X is [not] P.``, ``Xs are [not] Ys.``, ``Xs are [not] P.``,
``E is [not] a|an X.``, ``E is [not] P.``. In ``Xs are Ys.`` the object counts as a noun when its singular
is a noun seen elsewhere; otherwise it is an adjective-like predicate, which is equivalent for chaining
because no rule has it as subject.
"""

from __future__ import annotations

import re

_NAME = r"[A-Za-z][a-z-]*(?: [a-z-]+)*"  # a noun phrase or adjective, maybe multi-word or hyphenated
_UNIVERSAL_SINGULAR = re.compile(rf"^(?:Every|Each) ({_NAME}) is (not )?(?:(a|an) )?({_NAME})\.$")
_UNIVERSAL_PLURAL = re.compile(rf"^(?!(?:All|No|Some|Every|Each) )({_NAME}) are (not )?({_NAME})\.$")
_FACT = re.compile(rf"^([A-Z][a-z]*|[0-9]+) is (not )?(?:(a|an) )?({_NAME})\.$")
_QUERY = re.compile(r"^True or false: (.+)$")


def _singular(phrase: str) -> str:
    """Undo English plural morphology on the last word (wumpuses -> wumpus, butterflies -> butterfly,
    prime numbers -> prime number); words without a final s (sheep) are left as they are."""
    head, _, word = phrase.rpartition(" ")
    if word.endswith("ies"):
        word = word[:-3] + "y"
    elif word.endswith("es") and word[:-2].endswith(("s", "x", "sh", "ch")):
        word = word[:-2]
    elif word.endswith("s"):
        word = word[:-1]
    return f"{head} {word}" if head else word


def _parse_fact(sentence: str) -> tuple[str, str, bool]:
    """'Max is not small.' -> ('Max', 'small', False); predicates are lower-cased ('7 is a Mersenne prime.'
    -> ('7', 'mersenne prime', True))."""
    m = _FACT.match(sentence)
    if m is None or m.group(1) in ("Every", "Each"):
        raise ValueError(f"not a fact sentence: {sentence!r}")
    return m.group(1), m.group(4).lower(), m.group(2) is None


def parse_answer(context_sentences: list[str], query: str) -> bool:
    """Re-derive the True/False label of ``query`` from ``context_sentences`` alone.

    Facts about entities are closed under the rules by forward chaining; the answer is True iff the query's
    polarity matches the derived polarity of its predicate. Raises ``ValueError`` on a sentence outside the
    grammar or when the context decides nothing about the queried predicate.
    """
    rules: list[tuple[str, str, bool, bool]] = []  # (subject noun, object, polarity, object written plural)
    nouns: set[str] = set()
    facts: set[tuple[str, str, bool]] = set()
    for s in context_sentences:
        if m := _UNIVERSAL_SINGULAR.match(s):
            subj, neg, article, obj = m.groups()
            subj, obj = subj.lower(), obj.lower()
            nouns.add(subj)
            if article:
                nouns.add(obj)
            rules.append((subj, obj, neg is None, False))
        elif (m := _UNIVERSAL_PLURAL.match(s)) and m.group(1)[0].isupper():
            subj = _singular(m.group(1).lower())
            nouns.add(subj)
            rules.append((subj, m.group(3).lower(), m.group(2) is None, True))
        else:
            entity, pred, positive = _parse_fact(s)
            if _FACT.match(s).group(3):  # 'is a/an X': X is a noun
                nouns.add(pred)
            facts.add((entity, pred, positive))
    # Plural objects: 'Jompuses are vumpuses.' names the noun 'vumpus' when that noun is known.
    implications: dict[str, list[tuple[str, bool]]] = {}
    for subj, obj, positive, plural in rules:
        if plural and _singular(obj) in nouns:
            obj = _singular(obj)
        implications.setdefault(subj, []).append((obj, positive))

    m = _QUERY.match(query)
    if m is None:
        raise ValueError(f"query must read 'True or false: <fact>.', got {query!r}")
    q_entity, q_pred, q_positive = _parse_fact(m.group(1))

    frontier = [f for f in facts if f[2]]
    while frontier:
        entity, pred, _ = frontier.pop()
        for obj, positive in implications.get(pred, []):
            new = (entity, obj, positive)
            if new not in facts:
                facts.add(new)
                if positive:  # only positive memberships fire further rules
                    frontier.append(new)
    pos, neg = (q_entity, q_pred, True) in facts, (q_entity, q_pred, False) in facts
    if pos == neg:
        state = "both polarities" if pos else "nothing"
        raise ValueError(f"context derives {state} about {q_entity!r} / {q_pred!r}")
    return pos == q_positive
