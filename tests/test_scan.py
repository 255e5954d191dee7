"""SCAN generator: the pinned counts, the interpretation on published lines, the add-primitive splits, and the
reader for the published split files with its agreement check (on files the tests write)."""

from __future__ import annotations

import pytest

from anchorlab.tasks.scan import (
    ACTIONS,
    SCAN_ENV,
    ScanFilesMissing,
    action_accuracy,
    addprim_split,
    commands,
    compare_with_published,
    contains_primitive,
    interpret,
    load_published_split,
    read_scan_file,
    scan_pairs,
)

# Lines of the published addprim_turn_left test file (github.com/brendenlake/SCAN), and two README examples.
PUBLISHED = {
    "turn left after jump twice": "I_JUMP I_JUMP I_TURN_LEFT",
    "turn left twice after look opposite left twice":
        "I_TURN_LEFT I_TURN_LEFT I_LOOK I_TURN_LEFT I_TURN_LEFT I_LOOK I_TURN_LEFT I_TURN_LEFT",
    "run left twice after turn left twice": "I_TURN_LEFT I_TURN_LEFT I_TURN_LEFT I_RUN I_TURN_LEFT I_RUN",
    "turn opposite left thrice and turn left thrice": " ".join(["I_TURN_LEFT"] * 9),
    "turn left after turn opposite right twice": "I_TURN_RIGHT I_TURN_RIGHT I_TURN_RIGHT I_TURN_RIGHT I_TURN_LEFT",
    "turn left and walk opposite left": "I_TURN_LEFT I_TURN_LEFT I_TURN_LEFT I_WALK",
    "turn around left twice and turn left twice": " ".join(["I_TURN_LEFT"] * 10),
    "run around left twice after turn left":
        "I_TURN_LEFT " + " ".join(["I_TURN_LEFT I_RUN"] * 8),
    "jump around right": "I_TURN_RIGHT I_JUMP I_TURN_RIGHT I_JUMP I_TURN_RIGHT I_JUMP I_TURN_RIGHT I_JUMP",
    "jump opposite left after walk around left":
        "I_TURN_LEFT I_WALK I_TURN_LEFT I_WALK I_TURN_LEFT I_WALK I_TURN_LEFT I_WALK I_TURN_LEFT I_TURN_LEFT I_JUMP",
}


def test_pinned_counts():
    cmds = commands()
    assert len(cmds) == len(set(cmds)) == 20_910
    assert len(addprim_split("addprim_turn_left").test) == 1_208
    assert len(addprim_split("addprim_jump").test) == 7_706
    assert max(len(c.split()) for c in cmds) == 9
    assert max(len(a.split()) for _, a in scan_pairs()) == 48
    assert {w for _, a in scan_pairs() for w in a.split()} == set(ACTIONS)


@pytest.mark.parametrize("command", sorted(PUBLISHED))
def test_interpretation_matches_published_lines(command):
    assert interpret(command) == PUBLISHED[command]


def test_interpret_agrees_with_the_enumeration_and_rejects_non_commands():
    assert all(interpret(c) == a for c, a in scan_pairs()[::97])
    for bad in ("jump jump", "walk and", "turn", "walk and run after look", "turn twice", "left", "jump opposite"):
        with pytest.raises(ValueError, match="not a SCAN command"):
            interpret(bad)


def test_contains_primitive_is_word_contiguous():
    assert contains_primitive("walk and turn left twice", "turn left")
    assert not contains_primitive("turn around left", "turn left")
    assert not contains_primitive("turn opposite left", "turn left")
    assert not contains_primitive("turn right after walk left", "turn left")


@pytest.mark.parametrize(("name", "primitive", "copies", "n_train"),
                         [("addprim_turn_left", "turn left", 2_189, 21_890), ("addprim_jump", "jump", 1_467, 14_670)])
def test_addprim_split(name, primitive, copies, n_train):
    split = addprim_split(name)
    train = {c for c, _ in split.train}
    test = {c for c, _ in split.test}
    assert not train & test
    assert train | test == set(commands())
    assert all(contains_primitive(c, primitive) and c != primitive for c in test)
    assert [c for c in train if contains_primitive(c, primitive)] == [primitive]
    # default: the isolated primitive is 10% of the training lines, as in the published files
    assert split.primitive_copies == copies and len(split.train) == n_train
    assert split.primitive_copies / len(split.train) == pytest.approx(0.1)
    assert addprim_split(name, primitive_copies=5).primitive_copies == 5
    with pytest.raises(ValueError):
        addprim_split(name, primitive_copies=0)


def test_action_accuracy():
    test = addprim_split().test[:4]
    predictions = [a for _, a in test]
    predictions[1] = predictions[1] + " I_WALK"
    assert action_accuracy(predictions, test) == 0.75


def _write(path, pairs):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"IN: {c} OUT: {a}\n" for c, a in pairs))


def test_reader_parses_a_tiny_file_and_names_bad_lines(tmp_path):
    f = tmp_path / "tiny.txt"
    f.write_text("IN: jump twice OUT: I_JUMP I_JUMP\n\nIN: turn left OUT: I_TURN_LEFT\n")
    assert read_scan_file(f) == [("jump twice", "I_JUMP I_JUMP"), ("turn left", "I_TURN_LEFT")]
    f.write_text("IN: jump OUT: I_JUMP\njump I_JUMP\n")
    with pytest.raises(ValueError, match=":2:"):
        read_scan_file(f)


def test_published_split_agrees_with_ours(tmp_path, monkeypatch):
    ours = addprim_split("addprim_turn_left")
    _write(tmp_path / "add_prim_split" / "tasks_train_addprim_turn_left.txt", ours.train[::-1])
    _write(tmp_path / "add_prim_split" / "tasks_test_addprim_turn_left.txt", ours.test)
    monkeypatch.setenv(SCAN_ENV, str(tmp_path))
    published = load_published_split("addprim_turn_left")
    agreement = compare_with_published(published)
    assert agreement.ok and agreement.primitive_copies_published == 2_189


def test_disagreements_are_reported(tmp_path):
    test = [("turn left twice", "I_TURN_LEFT I_TURN_LEFT"), ("walk after turn left", "I_WALK I_TURN_LEFT")]
    _write(tmp_path / "tasks_train_addprim_turn_left.txt", [("turn left", "I_TURN_LEFT"), ("fly", "I_FLY")])
    _write(tmp_path / "tasks_test_addprim_turn_left.txt", test)
    agreement = compare_with_published(load_published_split("addprim_turn_left", tmp_path))
    assert not agreement.ok
    assert agreement.wrong_actions == (("fly", "I_FLY"), ("walk after turn left", "I_WALK I_TURN_LEFT"))
    assert agreement.train_only_published == ("fly",)
    assert len(agreement.test_only_ours) == 1_206 and not agreement.test_only_published


def test_missing_files_name_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv(SCAN_ENV, raising=False)
    with pytest.raises(ScanFilesMissing, match=SCAN_ENV):
        load_published_split("addprim_jump")
    with pytest.raises(ScanFilesMissing, match="tasks_train_addprim_jump.txt"):
        load_published_split("addprim_jump", tmp_path)
