from pathlib import Path

import numpy as np
import pytest

from anchorlab.cli import main


@pytest.mark.parametrize("args, field", [
    (["train", "--set", "init.gamma=0"], "init.gamma"),
    (["train", "--set", "model.widht=3"], "model.widht"),
    (["train", "--set", "task.held_out=[[4,9]]"], "task.held_out"),
    (["train", "--set", "task.seq_len=2"], "task.seq_len"),
    (["train", "no_such_file.toml"], "config"),
])
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, capsys, args, field):
    out = tmp_path / "run"
    assert main([*args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err and "Traceback" not in err
    assert not out.exists()


def test_data_command_writes_the_arrays(tmp_path):
    out = tmp_path / "d.npz"
    assert main(["data", "--set", "task.data_size=1600", "--out", str(out)]) == 0
    z = np.load(out)
    n = len(z["inputs"])
    assert z["inputs"].shape == (n, 9) and z["inputs"].dtype == np.int64
    assert z["targets"].shape == (n,) and z["pair"].shape == (n, 2)
    assert z["key_is_test"].dtype == bool and z["in_train"].dtype == bool
    assert not z["in_train"][(z["pair"] == [4, 3]).all(1)].any()


def test_train_command(tmp_path, capsys):
    out = tmp_path / "r"
    args = ["train", "--out", str(out), "--set", "task.data_size=1600", "--set", "model.d_model=16",
            "--set", "model.d_head=8", "--set", "model.d_mlp=16", "--set", "train.epochs=1",
            "--set", "train.batch_size=128", "--set", "train.threads=1"]
    assert main(args) == 0
    assert (out / "DONE").exists() and "seen_test_acc" in capsys.readouterr().out


@pytest.mark.parametrize("stories, said", [("missing.txt", "missing.txt not found"),
                                           ("{tmp}/s.csv", "is a .csv file, which no loader reads")])
def test_lm_stories_that_cannot_be_read_are_one_line_before_anything_is_written(tmp_path, capsys, stories, said):
    (tmp_path / "s.csv").write_text("a story\n")
    out = tmp_path / "run"
    assert main(["lm", "--set", f"data.stories={stories.format(tmp=tmp_path)}", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("anchorlab lm: error: data.stories: ") and said in err
    assert "allowed sources are 'standin', 'sample', 'hf', a .txt / .jsonl / .parquet file" in err and not out.exists()


def test_data_makes_the_folder_of_its_output_file(tmp_path):
    out = tmp_path / "new" / "sub" / "d.npz"
    assert main(["data", "--set", "task.data_size=1600", "--out", str(out)]) == 0 and out.is_file()


@pytest.mark.parametrize("args, said", [
    (["config", "{tmp}"], "config: '{tmp}' is a directory; give a .toml file"),
    (["config", "--set", "=3"], "--set =3: the key before '=' is empty"),
    (["figure", "p1-fig10", "{tmp}", "--out", "{tmp}/f"], "source: {tmp} is not a sweep directory (no sweep.json)"),
])
def test_misplaced_arguments_name_what_was_given(tmp_path, capsys, args, said):
    assert main([a.format(tmp=tmp_path) for a in args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and said.format(tmp=tmp_path) in err and not (tmp_path / "f").exists()


@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_an_out_dir_the_file_system_refuses_is_one_line_naming_out(capsys):
    # /proc passes os.access(W_OK) for root yet refuses mkdir: the probe turns that into one line, not an Errno
    assert main(["train", "--set", "train.epochs=1", "--out", "/proc/anchorlab-no-such-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--out" in err and "Traceback" not in err


def test_top_level_help_names_the_papers_and_first_commands_that_exist(capsys):
    """`anchorlab --help` is for a user: the papers, then first commands, each one the parser accepts and whose
    config file exists (not the module's developer notes)."""
    import shlex

    from anchorlab.cli import DESCRIPTION, build_parser

    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "2405.05409" in out and "2502.04375" in out and "exit status" in out and "library call" not in out
    commands = [line.split("anchorlab ", 1)[1].split("  ")[0] for line in DESCRIPTION.splitlines()
                if "anchorlab " in line and "COMMAND" not in line]
    assert len(commands) == 3
    root = Path(__file__).resolve().parents[1]
    for command in commands:
        args = build_parser().parse_args(shlex.split(command))
        config = getattr(args, "config", None)
        assert config is None or (root / config).is_file(), command
