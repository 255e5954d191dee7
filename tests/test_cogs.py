"""COGS loader on a small sample in the published format (written here, a few lines per file), the one-line
error without data, and the in- and out-of-distribution exact-match metrics."""

from __future__ import annotations

import pytest

from anchorlab.text.cogs import (
    COGS_ENV,
    GEN_TYPES,
    SPLITS,
    STRUCTURAL_TYPES,
    CogsExample,
    CogsUnavailable,
    generalization_accuracy,
    in_distribution_accuracy,
    load_cogs,
    read_tsv,
)
from anchorlab.text.seq2seq import build_vocabulary, encode_pairs, pair_words

# Our own sentences in COGS's form: pre-spaced words and logical-form atoms, tab-separated columns.
LINES = {
    "train": [("A cat smiled .", "cat ( x _ 1 ) AND smile . agent ( x _ 2 , x _ 1 )", "in_distribution"),
              ("Emma saw the dog .", "* dog ( x _ 3 ) ; see . agent ( x _ 1 , Emma ) AND see . theme ( x _ 1 , x _ 3 )",
               "in_distribution"),
              ("hedgehog", "LAMBDA a . hedgehog ( a )", "exposure_example_subj_common")],
    "train_100": [("A cat smiled .", "cat ( x _ 1 ) AND smile . agent ( x _ 2 , x _ 1 )", "in_distribution")],
    "dev": [("The dog ran .", "* dog ( x _ 1 ) ; run . agent ( x _ 2 , x _ 1 )", "in_distribution")],
    "test": [("Emma smiled .", "smile . agent ( x _ 1 , Emma )", "in_distribution"),
             ("A dog ran .", "dog ( x _ 1 ) AND run . agent ( x _ 2 , x _ 1 )", "in_distribution")],
    "gen": [("Emma saw the hedgehog .",
             "* hedgehog ( x _ 3 ) ; see . agent ( x _ 1 , Emma ) AND see . theme ( x _ 1 , x _ 3 )",
             "subj_to_obj_common"),
            ("Emma saw a hedgehog .",
             "hedgehog ( x _ 3 ) AND see . agent ( x _ 1 , Emma ) AND see . theme ( x _ 1 , x _ 3 )",
             "subj_to_obj_common"),
            ("A hedgehog saw Emma .",
             "hedgehog ( x _ 1 ) AND see . agent ( x _ 2 , x _ 1 ) AND see . theme ( x _ 2 , Emma )",
             "subj_to_obj_common"),
            ("The cat smiled .", "* cat ( x _ 1 ) ; smile . agent ( x _ 2 , x _ 1 )", "pp_recursion")],
}


@pytest.fixture
def cogs_dir(tmp_path):
    for split, rows in LINES.items():
        (tmp_path / f"{split}.tsv").write_text("".join("\t".join(r) + "\n" for r in rows))
    return tmp_path


@pytest.fixture
def no_hub(monkeypatch):
    monkeypatch.delenv(COGS_ENV, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # never reach for the network in tests


def test_generalization_types():
    assert len(GEN_TYPES) == len(set(GEN_TYPES)) == 21
    assert set(STRUCTURAL_TYPES) < set(GEN_TYPES)
    assert SPLITS == ("train", "train_100", "dev", "test", "gen")


def test_loads_every_split_and_column_from_the_variable(cogs_dir, monkeypatch):
    monkeypatch.setenv(COGS_ENV, str(cogs_dir))
    data = load_cogs(SPLITS)
    assert {s: len(v) for s, v in data.items()} == {s: len(v) for s, v in LINES.items()}
    assert data["train"][1] == CogsExample(*LINES["train"][1])
    assert [e.gen_type for e in data["gen"]] == ["subj_to_obj_common"] * 3 + ["pp_recursion"]
    sentence, lf = data["test"][0].pair
    assert sentence == ["Emma", "smiled", "."] and lf[:3] == ["smile", ".", "agent"]
    assert load_cogs(("dev",), directory=cogs_dir)["dev"] == data["dev"]


def test_sample_encodes_with_the_shared_seq2seq_rows(cogs_dir):
    data = load_cogs(("train", "gen"), directory=cogs_dir)
    pairs = [e.pair for e in data["train"] + data["gen"]]
    vocab = build_vocabulary(pair_words(pairs))
    rows = encode_pairs(pairs, vocab)
    assert rows.loss_mask.sum() == sum(len(lf) + 1 for _, lf in pairs)  # logical-form words + <eos>


def test_without_data_one_line_names_the_variable_and_the_files(no_hub, tmp_path):
    with pytest.raises(CogsUnavailable) as e:
        load_cogs()
    message = str(e.value)
    assert COGS_ENV in message and "gen.tsv" in message and "train_100.tsv" in message and "\n" not in message
    (tmp_path / "train.tsv").write_text("\t".join(LINES["train"][0]) + "\n")
    with pytest.raises(CogsUnavailable, match="test.tsv"):
        load_cogs(("train", "test"), directory=tmp_path)


def test_malformed_files_are_rejected(tmp_path):
    bad = tmp_path / "dev.tsv"
    bad.write_text("\t".join(LINES["dev"][0]) + "\nA cat smiled .\tcat ( x _ 1 )\n")
    with pytest.raises(ValueError, match=r"dev.tsv:2: expected 3"):
        read_tsv(bad)
    (tmp_path / "gen.tsv").write_text("A cat smiled .\tcat ( x _ 1 )\tnot_a_type\n")
    with pytest.raises(ValueError, match="not_a_type"):
        load_cogs(("gen",), directory=tmp_path)


def test_in_distribution_exact_match(cogs_dir):
    test = load_cogs(("test",), directory=cogs_dir)["test"]
    right = test[1].logical_form
    assert in_distribution_accuracy([test[0].logical_form, right], test) == 1.0
    assert in_distribution_accuracy([test[0].logical_form, right.replace("x _ 2", "x _ 3")], test) == 0.5


def test_generalization_accuracy_weights_types_equally(cogs_dir):
    gen = load_cogs(("gen",), directory=cogs_dir)["gen"]
    predictions = [e.logical_form for e in gen]
    predictions[3] = "* cat ( x _ 1 )"  # the one pp_recursion example is wrong
    acc = generalization_accuracy(predictions, gen)
    assert acc.per_type == {"pp_recursion": 0.0, "subj_to_obj_common": 1.0}
    assert acc.n_per_type == {"pp_recursion": 1, "subj_to_obj_common": 3}
    assert acc.mean == 0.5 and acc.overall == 0.75  # equal weight per type, not per example
    with pytest.raises(ValueError):
        generalization_accuracy(predictions[:2], gen)
