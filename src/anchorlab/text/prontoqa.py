"""PrOntoQA (Saparov & He, ICLR 2023, v1): seeded generator of chain-of-thought ModusPonens questions.

Clean-room implementation from the facts published with PrOntoQA (arXiv 2210.01240, the v1 data format of
github.com/asaparov/prontoqa and, for the sampling process, facts read from its v1 source), no reference code.
One example:

1. Ontology: a linear chain of fictional concepts, leaf ⊂ … ⊂ root (e.g. jompus ⊂ vumpus). Every concept
   but the root carries one property from its own property family, negated with probability 1/3.
2. Proof of h hops: the entity starts at a concept, climbs h - 1 "is-a" rules, then applies the property
   rule of the concept it reaches. Chain of thought = premise + (rule, derived fact) per hop = 2h + 1
   sentences.
3. Query: the derived fact (answer True) or its negation (answer False), probability 1/2 each.

``sampling`` says how the chain and the proof are drawn. ``"reference"`` (default) is the process of the
reference v1 generator: below each concept the chain stops with probability 1/(2(h + 2)), and a walk from a
uniform start (move up with weight 1, conclude with weight 0.3 / 0.7 for a positive / negated property) must
conclude after exactly h - 1 moves, or the whole example is redrawn. ``"short"`` is this generator before
2026-11-28 (bit for bit): the chain stops with probability 1/(h + 2) and there is no walk, so contexts are
shorter (mean 12.7 sentences against 14.8 over hops 1-5) and conclusions are negated 1/3 of the time.

Ontologies: ``fictional`` (above); ``true``: one of three real taxonomies (cat, butterfly, Mersenne prime),
cut below the start concept, with fixed real properties and a real distractor (``TRUE_*`` tables);
``false``: real animal words (``FALSE_CONCEPTS``) in a random chain with at least one false is-a link,
properties drawn as for ``fictional``. See docs/prontoqa.md for which facts were inferred.

Worked example (``generate(ProntoQAConfig(min_hops=1, max_hops=1), 1, seed)`` renders like)::

    Q: Jompuses are not bright. Jompuses are vumpuses. Every zumpus is bright. Wren is a jompus.
    True or false: Wren is not bright.
    A: Wren is a jompus. Jompuses are not bright. Wren is not bright. True

(one line after "Q: "; wrapped here). "Every zumpus is bright." is the distractor: a held-out concept with
the negated conclusion property. Speed: ~9,000 examples/s (~7,000/s with the parse-back check; "short":
~35,000) on one core of a busy 2-core machine; see docs/prontoqa.md.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from anchorlab.config import ConfigError
from anchorlab.text.prontoqa_reasoner import parse_answer

FICTIONAL_CONCEPTS = ("wumpus", "yumpus", "zumpus", "dumpus", "rompus", "numpus", "tumpus", "vumpus", "impus",
                      "jompus")
PROPERTY_FAMILIES = (
    ("blue", "red", "brown", "orange"), ("small", "large"), ("metallic", "wooden", "luminous", "liquid"),
    ("transparent", "opaque"), ("nervous", "happy", "feisty", "shy"), ("bright", "dull"),
    ("sweet", "sour", "spicy", "bitter"), ("floral", "fruity", "earthy"), ("hot", "cold", "temperate"),
    ("kind", "mean", "angry", "amenable", "aggressive"),
)
ENTITIES = ("Fae", "Rex", "Sally", "Max", "Alex", "Sam", "Polly", "Stella", "Wren")
FUNCTION_WORDS = ("every", "each", "is", "are", "not", "a", "an", "true", "or", "false", "q")

ONTOLOGIES = ("fictional", "true", "false")
ORDERINGS = ("postorder", "preorder", "random")
SAMPLINGS = ("reference", "short")  # "short": the chain and proof draws before 2026-11-28 (module docstring)
MAX_HOPS_ALLOWED = 8  # 9 chain concepts (10 names minus the distractor) give at most 8 hops
NEGATION_PROBABILITY = 0.5 / 1.5  # negated weight 0.5 against 1 for the positive form
# The reference walk's weight for concluding a node's property (against 1 for moving to the parent).
CONCLUDE_WEIGHT = {True: 0.3, False: 0.7}  # by the property's polarity (True = positive)

# ---- `true` ontology: three fixed real taxonomies, root first (asaparov/prontoqa v1). -----------------------
TRUE_TAXONOMIES = (
    ("animal", "vertebrate", "mammal", "carnivore", "feline", "cat", "tabby"),
    ("animal", "invertebrate", "arthropod", "insect", "lepidopteran", "butterfly", "painted lady"),
    ("number", "real number", "integer", "natural number", "prime number", "Mersenne prime"),
)
NUMERAL_ENTITIES = ("3", "7", "31", "127", "8191", "131071")  # all Mersenne primes: 2^p - 1
# Fixed properties: concept -> the (adjective, positive) facts it may state; one is drawn per example.
# Assignment of each listed property to a concept: see docs/prontoqa.md ([INF] where inferred).
TRUE_PROPERTIES = {
    "animal": (("multicellular", True), ("unicellular", False)),
    "mammal": (("furry", True), ("warm-blooded", True), ("cold-blooded", False)),
    "carnivore": (("carnivorous", True), ("herbivorous", False)),
    "arthropod": (("segmented", True), ("small", True), ("bony", False)),
    "insect": (("six-legged", True), ("eight-legged", False)),
    "real number": (("real", True), ("imaginary", False)),
    "natural number": (("positive", True), ("negative", False)),
    "prime number": (("prime", True), ("composite", False)),
}
# Distractor concept per asked concept: the rule "<distractor> is ¬P" is true of it. Taken from the reference:
# mammal, cat, insect, butterfly, prime number; carnivore -> sheep from its true-ontology sample; rest [INF].
TRUE_DISTRACTORS = {
    "animal": "amoeba", "mammal": "reptile", "carnivore": "sheep", "cat": "dog", "arthropod": "whale",
    "insect": "crustacean", "butterfly": "moth", "real number": "imaginary number",
    "natural number": "negative number", "prime number": "composite number",
}
TRUE_PARENT = {c: t[i - 1] for t in TRUE_TAXONOMIES for i, c in enumerate(t) if i > 0}
# Longest proof per taxonomy: from its leaf up to its shallowest concept with a property.
TRUE_MAX_HOPS = tuple(len(t) - min(i for i, c in enumerate(t) if c in TRUE_PROPERTIES) for t in TRUE_TAXONOMIES)

# ---- `false` ontology: real animal words in a random counterfactual chain ([INF] pool, see docs). -------------
FALSE_CONCEPTS = ("animal", "vertebrate", "mammal", "carnivore", "feline", "cat", "tabby", "invertebrate",
                  "arthropod", "insect", "lepidopteran", "butterfly", "painted lady", "sheep", "snake", "dog",
                  "reptile", "crustacean", "moth")
IRREGULAR_PLURALS = {"sheep": "sheep", "butterfly": "butterflies", "painted lady": "painted ladies",
                     "tabby": "tabbies"}


@dataclass(frozen=True)
class ProntoQAConfig:
    """What to generate. Hops are drawn evenly (cycling) over ``min_hops..max_hops``."""

    ontology: str = "fictional"
    min_hops: int = 1
    max_hops: int = 5
    ordering: str = "postorder"
    distractor: bool = True
    sampling: str = "reference"  # "reference" (the v1 generator's process) or "short" (ours before 2026-11-28)

    def __post_init__(self) -> None:
        if self.ontology not in ONTOLOGIES:
            raise ConfigError(f"ontology must be one of {ONTOLOGIES}, got {self.ontology!r}")
        if self.ordering not in ORDERINGS:
            raise ConfigError(f"ordering must be one of {ORDERINGS}, got {self.ordering!r}")
        if self.sampling not in SAMPLINGS:
            raise ConfigError(f"sampling must be one of {SAMPLINGS}, got {self.sampling!r}")
        if not isinstance(self.distractor, bool):
            raise ConfigError(f"distractor must be True or False, got {self.distractor!r}")
        for name in ("min_hops", "max_hops"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_HOPS_ALLOWED:
                raise ConfigError(f"{name} must be an int in 1..{MAX_HOPS_ALLOWED}, got {v!r}")
        if self.min_hops > self.max_hops:
            raise ConfigError(f"min_hops must be <= max_hops, got {self.min_hops} > {self.max_hops}")
        if self.ontology == "true" and self.max_hops > max(TRUE_MAX_HOPS):
            raise ConfigError(f"max_hops: the true ontology's taxonomies are too short for {self.max_hops} hops "
                              f"(hops allowed 1..{max(TRUE_MAX_HOPS)}; the number taxonomy allows "
                              f"1..{TRUE_MAX_HOPS[2]}), got max_hops={self.max_hops}")


@dataclass(frozen=True)
class Example:
    """One question. ``context`` are the sentences before the query; ``question`` = context + query."""

    context: tuple[str, ...]
    query: str
    chain_of_thought: tuple[str, ...]
    answer: bool
    hops: int
    ontology: str = "fictional"

    @property
    def question(self) -> str:
        return " ".join(self.context) + " " + self.query

    @property
    def text(self) -> str:
        """The training string ``Q: {question}\\nA: {cot} {True|False}``."""
        return f"Q: {self.question}\nA: {' '.join(self.chain_of_thought)} {self.answer}"

    @property
    def prompt(self) -> str:
        """The evaluation prompt: ``text`` cut after ``\\nA:`` (the model writes the proof and the label)."""
        return f"Q: {self.question}\nA:"

    def to_json(self) -> dict[str, object]:
        """The reference v1 JSON record (there ``question`` is the context only)."""
        return {"question": " ".join(self.context), "query": self.query,
                "chain_of_thought": list(self.chain_of_thought), "answer": str(self.answer),
                "hops": self.hops, "ontology": self.ontology}


def plural(noun: str) -> str:
    """English plural of a concept name (wumpus -> wumpuses, butterfly -> butterflies, prime number ->
    prime numbers, sheep -> sheep); in a multi-word name only the last word inflects."""
    if noun in IRREGULAR_PLURALS:
        return IRREGULAR_PLURALS[noun]
    head, _, last = noun.rpartition(" ")
    last = last + "es" if last.endswith(("s", "x", "sh", "ch")) else last + "s"
    return f"{head} {last}" if head else last


def article(noun: str) -> str:
    return "an" if noun[0] in "aeiou" else "a"


def _cap(text: str) -> str:
    """Capitalize the first letter only ('Mersenne primes' and 'prime numbers' keep the rest)."""
    return text[0].upper() + text[1:]


def vocabulary(ontology: str = "fictional") -> set[str]:
    """Every lower-cased word the generator can emit for ``ontology`` (fictional: a closed set of 73 words;
    words of multi-word names count separately, hyphenated adjectives and numerals count as one word)."""
    words = set(FUNCTION_WORDS)
    if ontology == "true":
        concepts = {c for t in TRUE_TAXONOMIES for c in t} | set(TRUE_DISTRACTORS.values())
        words |= {e.lower() for e in ENTITIES} | set(NUMERAL_ENTITIES)
        words |= {p for opts in TRUE_PROPERTIES.values() for p, _ in opts}
    else:
        concepts = set(FICTIONAL_CONCEPTS if ontology == "fictional" else FALSE_CONCEPTS)
        words |= {e.lower() for e in ENTITIES} | {p for fam in PROPERTY_FAMILIES for p in fam}
    for c in concepts:
        words |= set(c.lower().split()) | set(plural(c).lower().split())
    return words


def _rule(rng: random.Random, subject: str, obj: str, positive: bool, is_noun: bool) -> str:
    """A universal rule in one of three surface forms: plural (1/2), 'Every' (1/4), 'Each' (1/4)."""
    neg = "" if positive else "not "
    u = rng.random()
    if u < 0.5:
        return f"{_cap(plural(subject))} are {neg}{plural(obj) if is_noun else obj}."
    quant = "Every" if u < 0.75 else "Each"
    return f"{quant} {subject} is {neg}{article(obj) + ' ' if is_noun else ''}{obj}."


def _fact(entity: str, pred: str, positive: bool, is_noun: bool) -> str:
    return f"{entity} is {'' if positive else 'not '}{article(pred) + ' ' if is_noun else ''}{pred}."


def _chain_length(rng: random.Random, hops: int) -> int:
    """``sampling = "short"``: concepts in the chain: grow below the root, stopping w.p. 1/(hops+2) per level;
    redraw if < hops+1."""
    max_len = len(FICTIONAL_CONCEPTS) - 1
    while True:
        length = 2
        while length < max_len and rng.random() >= 1 / (hops + 2):
            length += 1
        if length >= hops + 1:
            return length


def _reference_chain_length(rng: random.Random, hops: int) -> int:
    """``sampling = "reference"``: concepts in the chain, grown from the root as the v1 generator grows its
    ontology. At each concept (root included), with probability p = 1/(hops + 2) its least child count is 0,
    else 1, and its child count is uniform over {least, ..., 1}: so the chain stops there w.p. p/2. It stops at
    9 concepts (no names left). Not redrawn when short: the caller redraws the whole example."""
    p = 1 / (hops + 2)
    length = 1
    while length < len(FICTIONAL_CONCEPTS) - 1 and not (rng.random() < p and rng.random() < 0.5):
        length += 1
    return length


Props = list[tuple[str, bool] | None]  # per chain concept (leaf first): its property and polarity, or none


def _drawn_chain(rng: random.Random, hops: int, pool: tuple[str, ...],
                 length: Callable[[random.Random, int], int] = _chain_length) -> tuple[list[str], Props, str]:
    """Fictional/false: a random chain from ``pool`` (one name held out as distractor) of ``length(rng, hops)``
    concepts, one property per non-root concept from distinct families. Returns (chain leaf first, props,
    distractor concept)."""
    names = rng.sample(pool, len(pool))[:len(FICTIONAL_CONCEPTS)]
    distractor_concept = names.pop()
    chain = names[:length(rng, hops)]  # chain[0] = leaf, chain[-1] = root
    families = rng.sample(PROPERTY_FAMILIES, len(chain) - 1)
    props: Props = [(rng.choice(fam), rng.random() >= NEGATION_PROBABILITY) for fam in families]
    return chain, props + [None], distractor_concept  # the root has no property


def _is_counterfactual(chain: list[str]) -> bool:
    return any(TRUE_PARENT.get(chain[i]) != chain[i + 1] for i in range(len(chain) - 1))


def _true_chain(rng: random.Random, hops: int) -> tuple[list[str], Props, int]:
    """True: a real taxonomy cut below the start concept. Returns (chain leaf first, props, start index)."""
    taxonomy = rng.choice([t for t, m in zip(TRUE_TAXONOMIES, TRUE_MAX_HOPS) if m >= hops])  # root first
    pairs = [(d + hops - 1, d) for d, c in enumerate(taxonomy) if c in TRUE_PROPERTIES and d + hops <= len(taxonomy)]
    start_depth, _ = pairs[rng.randrange(len(pairs))]  # (start depth, asked-concept depth)
    # The context may reach below the start concept, and has >= 2 concepts (as every fictional chain).
    bottom = rng.randrange(max(start_depth, 1), len(taxonomy))
    chain = list(reversed(taxonomy[:bottom + 1]))
    props: Props = [rng.choice(TRUE_PROPERTIES[c]) if c in TRUE_PROPERTIES else None for c in chain]
    return chain, props, bottom - start_depth


def _walk_concludes_at_hops(rng: random.Random, props: Props, start: int, hops: int) -> bool:
    """The reference v1 walk from ``start`` up the chain: at each concept, move to the parent (weight 1) or
    conclude its property (weight ``CONCLUDE_WEIGHT[positive]``; a concept without a property can only move
    up). True when it concludes after exactly ``hops - 1`` moves. Drawn only as far as that is decided."""
    target = start + hops - 1
    for i in range(start, target + 1):
        prop = props[i]
        if prop is None:  # only moving up is possible: fine below the target, a rejection at it
            if i == target:
                return False
            continue
        w = CONCLUDE_WEIGHT[prop[1]]
        if (rng.random() * (1 + w) < w) != (i == target):  # concluded too early, or moved past the target
            return False
    return True


def _reference_draw(cfg: ProntoQAConfig, hops: int, rng: random.Random) -> tuple[list[str], Props, str, int]:
    """``sampling = "reference"``: (chain leaf first, props, distractor concept, start), redrawn whole until the
    reference walk from the start concludes after exactly ``hops - 1`` moves."""
    while True:
        if cfg.ontology == "true":
            chain, props, start = _true_chain(rng, hops)  # fixed taxonomies: the chain as "short" draws it
            distractor_concept = TRUE_DISTRACTORS[chain[start + hops - 1]]
        else:
            pool = FICTIONAL_CONCEPTS if cfg.ontology == "fictional" else FALSE_CONCEPTS
            chain, props, distractor_concept = _drawn_chain(rng, hops, pool, _reference_chain_length)
            if len(chain) < hops + 1 or (cfg.ontology == "false" and not _is_counterfactual(chain)):
                continue
            # start uniform over the concepts with room for h hops below a non-root property concept
            start = rng.randrange(len(chain) - hops)
        if _walk_concludes_at_hops(rng, props, start, hops):
            return chain, props, distractor_concept, start


def generate_one(cfg: ProntoQAConfig, hops: int, rng: random.Random) -> Example:
    """One example with exactly ``hops`` hops, drawn from ``rng``."""
    start: int | None = None
    if cfg.sampling == "reference":
        chain, props, distractor_concept, start = _reference_draw(cfg, hops, rng)
        entity = rng.choice(NUMERAL_ENTITIES if chain[-1] == "number" else ENTITIES)
    elif cfg.ontology == "true":
        chain, props, start = _true_chain(rng, hops)
        distractor_concept = TRUE_DISTRACTORS[chain[start + hops - 1]]
        entity = rng.choice(NUMERAL_ENTITIES if chain[-1] == "number" else ENTITIES)
    else:
        pool = FICTIONAL_CONCEPTS if cfg.ontology == "fictional" else FALSE_CONCEPTS
        chain, props, distractor_concept = _drawn_chain(rng, hops, pool)
        while cfg.ontology == "false" and not _is_counterfactual(chain):  # at least one is-a link is false
            chain, props, distractor_concept = _drawn_chain(rng, hops, pool)

    # Per node: (property rule, is-a rule to parent), each realized once and reused verbatim in the CoT.
    prop_rules = [_rule(rng, c, p[0], p[1], False) if p else None for c, p in zip(chain, props)]
    isa_rules = [_rule(rng, chain[i], chain[i + 1], True, True) for i in range(len(chain) - 1)] + [None]
    order = range(len(chain)) if cfg.ordering != "preorder" else reversed(range(len(chain)))
    rules = [r for i in order for r in (prop_rules[i], isa_rules[i]) if r is not None]
    if cfg.ordering == "random":
        rng.shuffle(rules)

    if start is None:  # "short", fictional / false: a uniform start with room for h hops, no walk (the
        # property node must not be the root); drawn after the rules, as before 2026-11-28
        start = rng.randrange(len(chain) - hops)
        entity = rng.choice(ENTITIES)
    target = start + hops - 1
    prop, positive = props[target]
    if cfg.distractor:
        rules.insert(rng.randrange(len(rules) + 1), _rule(rng, distractor_concept, prop, not positive, False))
    premise = _fact(entity, chain[start], True, True)
    cot = [premise]
    for i in range(start, target):
        cot += [isa_rules[i], _fact(entity, chain[i + 1], True, True)]
    conclusion = _fact(entity, prop, positive, False)
    cot += [prop_rules[target], conclusion]
    answer = rng.random() < 0.5
    query = "True or false: " + (conclusion if answer else _fact(entity, prop, not positive, False))
    return Example(tuple(rules) + (premise,), query, tuple(cot), answer, hops, cfg.ontology)


def generate(cfg: ProntoQAConfig, n: int, seed: int) -> list[Example]:
    """``n`` examples from ``random.Random(seed)``; example i has ``min_hops + i % (max_hops - min_hops + 1)``
    hops, so hop counts are as even as ``n`` allows."""
    if n < 0:
        raise ConfigError(f"n must be >= 0, got {n}")
    rng = random.Random(seed)
    k = cfg.max_hops - cfg.min_hops + 1
    return [generate_one(cfg, cfg.min_hops + i % k, rng) for i in range(n)]


__all__ = ["ProntoQAConfig", "SAMPLINGS", "TRUE_TAXONOMIES", "TRUE_PARENT", "FALSE_CONCEPTS", "Example",
            "generate", "generate_one", "parse_answer", "vocabulary", "plural"]
