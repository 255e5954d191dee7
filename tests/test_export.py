"""`anchorlab export`: a run's records (config, evaluations, epochs, sessions, summary, DONE / FAILED) without its
weights, each run into OUT/<name> by rename; figures and tables draw from the copy as from the run. Run
directories written here by hand (no training)."""

from __future__ import annotations

import csv
import json

import pytest

from anchorlab import rundir
from anchorlab.cli import main
from anchorlab.export import RECORDS
from tests.conftest import tiny_config


def fake_run(d, seed, evals, done=True, reference=""):
    """A run directory with records and weights (a checkpoint, the resume state, TensorBoard events)."""
    cfg = tiny_config(**{"seeds.init_seed": seed}).to_dict()
    cfg["task"]["reference"] = reference
    d.mkdir(parents=True)
    rundir.write_json(d / rundir.CONFIG, cfg)
    (d / rundir.METRICS).write_text("".join(json.dumps(
        {"step": 10 * e, "epoch": e, "seen_test_acc": 0.5, "unseen_inferential_acc": inf,
         "unseen_symmetric_acc": 0.0}) + "\n" for e, inf in enumerate(evals)))
    (d / rundir.EPOCHS).write_text(json.dumps({"epoch": 1, "step": 10, "train_loss": 2.0}) + "\n")
    (d / rundir.SESSIONS).write_text(json.dumps({"from_step": 0}) + "\n")
    (d / rundir.CKPT_DIR).mkdir()
    (d / rundir.CKPT_DIR / "step_0000000.safetensors").write_bytes(b"\0" * 1000)
    (d / rundir.CKPT_DIR / rundir.RESUME).write_bytes(b"\0" * 1000)
    (d / "events.out.tfevents.anchorlab").write_bytes(b"\0" * 100)
    (d / rundir.LOCK).write_text("{}")
    if done:
        rundir.write_json(d / rundir.SUMMARY, {"final": {"unseen_inferential_acc": evals[-1]}})
        (d / rundir.DONE).write_text("")
    return d


def test_export_copies_the_records_alone_and_figures_draw_from_the_copy(tmp_path, capsys):
    sweep = tmp_path / "sweep"
    fake_run(sweep / "a1", 1, [0.1, 0.9], reference="/data/golden/p1_authors_paper_g0.8_s1.npz")
    fake_run(sweep / "b2", 2, [0.2], done=False)
    (sweep / "sweep.json").write_text(json.dumps({"runs": {"a1": {"seed": 1}, "b2": {"seed": 2}}}))
    out = tmp_path / "docs" / "sweep"
    assert main(["export", str(sweep), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"{out / 'a1'}: 2 evaluations, done" in printed and f"{out / 'b2'}: 1 evaluations, unfinished" in printed
    assert sorted(p.name for p in out.iterdir()) == ["a1", "b2", "sweep.json"]
    assert sorted(p.name for p in (out / "a1").iterdir()) == sorted(
        f for f in RECORDS if (sweep / "a1" / f).exists())  # no checkpoints, resume state, events or LOCK
    assert (out / "a1" / rundir.METRICS).read_text() == (sweep / "a1" / rundir.METRICS).read_text()
    # the reference file by its file name (the trainer's path means nothing elsewhere), the rest as it was
    copied, original = (json.loads((d / "a1" / rundir.CONFIG).read_text()) for d in (out, sweep))
    assert copied["task"].pop("reference") == "p1_authors_paper_g0.8_s1.npz"
    original["task"].pop("reference")
    assert copied == original
    assert main(["collect", str(out), "--out", str(tmp_path / "t.csv")]) == 0
    rows = {r["run_id"]: r for r in csv.DictReader(open(tmp_path / "t.csv"))}
    assert (rows["a1"]["status"], rows["b2"]["status"]) == ("done", "unfinished")


def test_exporting_again_refreshes_the_copy_and_leaves_no_temporary_folder(tmp_path, capsys):
    run = fake_run(tmp_path / "runs" / "r", 1, [0.1], done=False)
    out = tmp_path / "docs"
    assert main(["export", str(run), "--out", str(out), "--name", "r_e210"]) == 0
    with open(run / rundir.METRICS, "a") as f:  # the run trained on; then it finished
        f.write(json.dumps({"step": 20, "epoch": 2, "unseen_inferential_acc": 0.7}) + "\n")
    (run / rundir.DONE).write_text("")
    assert main(["export", str(run), "--out", str(out), "--name", "r_e210"]) == 0
    assert f"{out / 'r_e210'}: 2 evaluations, done" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == ["r_e210"]


@pytest.mark.parametrize("args, field", [
    (["{tmp}/missing", "--out", "{tmp}/o"], "source"),
    (["{tmp}/empty", "--out", "{tmp}/o"], "source"),
    (["{tmp}/runs", "--out", "{tmp}/o", "--name", "x"], "--name"),  # two runs, one name
    (["{tmp}/runs/a", "--out", "{tmp}/o", "--name", "../x"], "--name"),
    (["{tmp}/runs/a", "{tmp}/other/a", "--out", "{tmp}/o"], "both be exported to"),
    (["{tmp}/runs", "--out", "{tmp}/runs"], "--out"),
    (["{tmp}/runs", "--out", "{tmp}/runs/exported"], "inside the source"),
    (["{tmp}/runs/a", "--out", "{tmp}/runs/a/records"], "inside the source"),
    (["{tmp}/runs/a", "--out", "{tmp}/runs"], "in place of the run"),  # runs/a's records over runs/a itself
    (["{tmp}/bad", "--out", "{tmp}/o"], "bad/config.json: not a valid JSON file"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, args, field):
    fake_run(tmp_path / "runs" / "a", 1, [0.1])  # with its weights: an export must never replace the run
    fake_run(tmp_path / "runs" / "b", 2, [0.2])
    fake_run(tmp_path / "other" / "a", 3, [0.3])
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text("{not json")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert main(["export", *(a.format(tmp=tmp_path) for a in args)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err and "Traceback" not in err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
