"""Runs and sweeps you can trust (issue 17): bad input is one line and exit 2 with nothing written; a re-run
skips finished runs; a dead worker fails its run, not the sweep; one writer per run directory; a diverging
run stops with its last finite resume point kept; execution fields (threads) are not a run's identity."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch

from anchorlab import rundir
from anchorlab.cli import main
from anchorlab.config import ConfigError, load_config
from anchorlab.sweep import describe, load_sweep, plan
from anchorlab.train import train
from tests.conftest import tiny_config
from tests.tiny import TINY_ANCHOR_TOML

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "anchorlab.cli"]
TINY0 = TINY_ANCHOR_TOML.replace("threads = 1", "threads = 0")  # as the shipped configs: all cores

# Files the malformed inputs below point at (written into an empty working directory first).
FILES: dict[str, str | bytes] = {
    "good.toml": TINY_ANCHOR_TOML,
    "cyc_a.toml": 'base = "cyc_b.toml"\n',
    "cyc_b.toml": 'base = "cyc_a.toml"\n[train]\nepochs = 1\n',
    "self.toml": 'base = "self.toml"\n',
    "base_int.toml": "base = 3\n",
    "base_missing.toml": 'base = "nope.toml"\n',
    "latin1.toml": b"# \xe9t\xe9\n[train]\nepochs = 1\n",
    "broken.toml": "[train\nepochs = 1\n",
    "lm_cyc.toml": 'base = "lm_cyc.toml"\n[data]\nn_prontoqa = 4\n',
    "sw_axes_not_table.toml": 'base = "good.toml"\naxes = 3\n',
    "sw_axis_not_list.toml": 'base = "good.toml"\n[axes]\n"init.gamma" = 0.5\n',
    "sw_axis_empty.toml": 'base = "good.toml"\n[axes]\n"init.gamma" = []\n',
    "sw_tied_short.toml": 'base = "good.toml"\n[axes]\n"init.gamma, train.lr" = [[0.5, 1e-3], [0.8]]\n',
    "sw_tied_flat.toml": 'base = "good.toml"\n[axes]\n"init.gamma, train.lr" = [0.5, 0.8]\n',
    "sw_axis_unknown.toml": 'base = "good.toml"\n[axes]\n"train.nope" = [1, 2]\n',
    "sw_axis_bad_value.toml": 'base = "good.toml"\n[axes]\n"init.gamma" = [0.5, -1.0]\n',
    "sw_axis_inf.toml": 'base = "good.toml"\n[axes]\n"init.gamma" = [0.5, inf]\n',
    "sw_set_not_table.toml": 'base = "good.toml"\nset = 3\n[axes]\n"init.gamma" = [0.5]\n',
    "sw_unknown_key.toml": 'base = "good.toml"\ngrid = 1\n',
    "sw_name_slash.toml": 'name = "a/b"\nbase = "good.toml"\n[axes]\n"init.gamma" = [0.5]\n',
    "sw_base_missing.toml": 'base = "nope.toml"\n[axes]\n"init.gamma" = [0.5]\n',
    "sw_base_int.toml": 'base = 1\n[axes]\n"init.gamma" = [0.5]\n',
    "sw_base_cycle.toml": 'base = "cyc_a.toml"\n[axes]\n"init.gamma" = [0.5]\n',
    "sw_latin1.toml": b'name = "\xe9"\nbase = "good.toml"\n',
    "sw_seed_big.toml": 'base = "good.toml"\n[axes]\n"seed" = [1, 4294967296]\n',
    "sw_batch_big.toml": 'base = "good.toml"\n[axes]\n"train.batch_size" = [64, 100000]\n',
    "sw_ok.toml": 'name = "ok"\nbase = "good.toml"\n[axes]\n"init.gamma" = [0.5]\n',
    "afile": "not a directory\n",
    "corrupt_run/config.json": "{not json",
    "no_runs/notes.txt": "a directory with neither sweep.json nor config.json nor run directories\n",
    "list_run/config.json": "[1, 2]",
    "corrupt_sweep/sweep.json": "{",
    "runs_not_table/sweep.json": '{"runs": [1, 2]}',
    "sweep_bad_run/r1/config.json": "{oops",
    "binary_run/config.json": b"\xff\xfe\x00",
}

# (argv, what the error line must mention): every one must exit 2 with one line on stderr and write nothing.
SET_CASES = [
    ("train.eps=-1", "train.eps"), ("train.eps=0", "train.eps"), ("model.ln_eps=inf", "model.ln_eps"),
    ("model.ln_eps=0", "model.ln_eps"), ("init.gamma=inf", "init.gamma"), ("init.gamma=nan", "init.gamma"),
    ("init.gamma=-1", "init.gamma"), ("train.lr=inf", "train.lr"), ("train.lr=nan", "train.lr"),
    ("train.lr=-1", "train.lr"), ("train.device='cpu:abc'", "train.device"), ("train.device='gpu'", "train.device"),
    ("train.device='cuda:x'", "train.device"), ("train.batch_size=100000", "train.batch_size"),
    ("model.n_ctx=5", "model.n_ctx"), ("seeds.init_seed=4294967296", "seeds.init_seed"),
    ("seeds.data_seed=-1", "seeds.data_seed"), ("train.early_stop_loss=nan", "train.early_stop_loss"),
    ("train.early_stop_loss=inf", "train.early_stop_loss"), ("train.early_stop_loss=-1", "train.early_stop_loss"),
    ("init.role_gamma.embed=inf", "init.role_gamma"), ("train.epochs=0", "train.epochs"),
    ("train.threads=-1", "train.threads"), ("train.nope=1", "train.nope"), ("train.lr", "expected key=value"),
    ("task.name='nope'", "task.name"), ("train.weight_decay=nan", "train.weight_decay"),
    ("train.beta1=1.0", "train.beta1"), ("train.grad_clip=inf", "train.grad_clip"),
    ("train.warmup_epochs=-inf", "train.warmup_epochs"), ("nosection.x=1", "nosection"),
]
LM_SET_CASES = [("train.lr=inf", "train.lr"), ("train.device='cpu:abc'", "train.device"),
                ("seeds.train_seed=4294967296", "seeds.train_seed"), ("init.gamma=inf", "init.gamma"),
                ("init.gamma=0", "init.gamma"), ("data.n_ctx=4", "data.n_ctx")]
CASES: list[tuple[list[str], str]] = [
    *[(["train", "good.toml", "--set", s, "--out", "r"], m) for s, m in SET_CASES],
    *[(["lm", "--set", s, "--out", "r"], m) for s, m in LM_SET_CASES],
    (["train", "cyc_a.toml", "--out", "r"], "cycle"), (["train", "self.toml", "--out", "r"], "cycle"),
    (["lm", "lm_cyc.toml", "--out", "r"], "cycle"), (["train", "base_int.toml", "--out", "r"], "base"),
    (["train", "base_missing.toml", "--out", "r"], "base: base_missing.toml: file 'nope.toml' does not exist"),
    (["train", "latin1.toml", "--out", "r"], "UTF-8"), (["train", "broken.toml", "--out", "r"], "broken.toml"),
    (["train", "missing.toml", "--out", "r"], "missing.toml"), (["train", "good.toml", "--out", "afile"], "afile"),
    (["train", "good.toml", "--out", "afile/sub"], "afile"),
    (["train", "good.toml", "--out", "corrupt_run"], "corrupt_run/config.json"),
    (["train", "good.toml", "--out", "list_run"], "list_run/config.json"),
    (["train", "good.toml", "--out", "binary_run"], "binary_run/config.json"),
    (["train", "good.toml", "--bogus"], "--bogus"),
    (["data", "--set", "init.gamma=inf", "--out", "x.npz"], "init.gamma"),
    (["data", "--out", "afile/x.npz"], "afile"), (["data", "--out", "corrupt_run"], "directory"),
    (["data", "latin1.toml", "--out", "x.npz"], "UTF-8"), (["data"], "--out"),
    *[(["sweep", f, "--out", "sw"], k) for f, k in [
        ("sw_axes_not_table.toml", "axes"), ("sw_axis_not_list.toml", "axes.init.gamma"),
        ("sw_axis_empty.toml", "axes.init.gamma"), ("sw_tied_short.toml", "axes.init.gamma, train.lr"),
        ("sw_tied_flat.toml", "axes.init.gamma, train.lr"), ("sw_axis_unknown.toml", "train.nope"),
        ("sw_axis_bad_value.toml", "init.gamma"), ("sw_axis_inf.toml", "init.gamma"),
        ("sw_set_not_table.toml", "set"), ("sw_unknown_key.toml", "grid"), ("sw_name_slash.toml", "name"),
        ("sw_base_missing.toml", "base: file 'nope.toml'"), ("sw_base_int.toml", "base"),
        ("sw_base_cycle.toml", "cycle"),
        ("sw_latin1.toml", "UTF-8"), ("sw_seed_big.toml", "seeds"), ("sw_batch_big.toml", "train.batch_size"),
        ("missing.toml", "missing.toml")]],
    (["sweep", "sw_ok.toml", "--out", "sw", "--workers", "0"], "--workers"),
    (["sweep", "sw_ok.toml", "--out", "sw", "--workers", "-1"], "--workers"),
    (["sweep", "sw_ok.toml", "--out", "sw", "--workers", "abc"], "--workers"),
    (["sweep", "sw_ok.toml", "--out", "sw", "--max-retries", "-1"], "--max-retries"),
    (["sweep", "sw_ok.toml", "--out", "sw", "--batch-models", "0"], "--batch-models"),
    (["sweep", "sw_ok.toml", "--out", "sw", "--gpus-per-run", "1"], "--gpus-per-run"),
    (["sweep", "sw_ok.toml", "--out", "sw", "--backend", "nope"], "--backend"),
    (["sweep", "sw_ok.toml", "--out", "sw", "--set", "train.eps=inf"], "train.eps"),
    (["sweep", "sw_ok.toml", "--out", "afile"], "afile"), (["sweep", "sw_ok.toml", "--out", "afile/x"], "afile"),
    (["sweep", "sw_ok.toml", "--out", "corrupt_sweep"], "sweep.json"),
    (["sweep", "sw_ok.toml", "--out", "runs_not_table"], "sweep.json"),
    (["sweep", "sw_ok.toml", "--out", "sweep_bad_run"], "r1/config.json"),
    (["sweep", "sw_ok.toml", "--out", "corrupt_sweep", "--dry-run"], "sweep.json"),
    (["collect", "nodir"], "nodir"), (["collect", "afile"], "afile"),
    (["collect", "corrupt_run"], "corrupt_run/config.json"),
    (["collect", "no_runs"], "no_runs holds no sweep.json"), (["collect", "corrupt_sweep", "nodir"], "nodir"),
    (["collect", "corrupt_sweep"], "sweep.json"), (["collect", "runs_not_table"], "sweep.json"),
    (["collect", "corrupt_sweep", "--out", "corrupt_run"], "directory"),
    (["figure", "nope", "corrupt_run"], "nope"), (["figure", "p2-fig3b", "nodir"], "nodir"),
    (["figure", "p2-fig3b", "corrupt_sweep"], "sweep.json"), (["figure", "p2-fig3b", "corrupt_run", "--step", "-1"],
                                                               "--step"),
    (["figure", "p2-fig3b", "corrupt_run", "--out", "afile"], "afile"),
    (["figure", "p2-fig3b", "corrupt_run", "--option", "noequals"], "key=value"),
    (["report", "corrupt_run", "nodir"], "nodir"), (["report", "nodir"], "nodir"),
    (["report", "corrupt_run"], "corrupt_run/config.json"), (["report", "corrupt_sweep"], "sweep.json"),
    (["report", "list_run", "--out", "corrupt_run"], "directory"),
    (["report", "corrupt_run", "--max-run-figures", "-1"], "--max-run-figures"),
    (["reproduce", "nope"], "nope"), (["reproduce", "p2-fig3b", "--workers", "0"], "--workers"),
    (["reproduce", "p2-fig3b", "--out", "afile"], "afile"),
    (["reproduce", "p2-fig3b", "--set", "train.eps=-1", "--out", "rp"], "train.eps"),
    (["reproduce", "p2-fig3b", "--backend", "nope"], "--backend"),
    (["demo", "--workers", "0", "--out", "d"], "--workers"), (["demo", "--config", "missing.toml", "--out", "d"],
                                                             "missing.toml"),
    (["demo", "--config", "sw_latin1.toml", "--out", "d"], "UTF-8"),
    (["demo", "--config", "sw_base_cycle.toml", "--out", "d"], "cycle"),
    (["demo", "--config", "sw_axes_not_table.toml", "--out", "d"], "axes"),
    (["demo", "--config", "sw_ok.toml", "--out", "afile"], "afile"),
    (["nope"], "nope"), ([], "required"),
]


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad_inputs")
    for name, content in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return root


@pytest.mark.parametrize("argv, mention", CASES, ids=[" ".join(a) or "(none)" for a, _ in CASES])
def test_malformed_input_is_one_line_exit_2_and_writes_nothing(argv, mention, workdir, monkeypatch, capsys):
    monkeypatch.chdir(workdir)
    before = _tree(workdir)
    with pytest.raises(SystemExit) if _argparse_error(argv) else _no_exit():
        code = main(argv)
    if _argparse_error(argv):
        code = 2
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert mention in err, err
    assert _tree(workdir) == before, _tree(workdir) - before


class _no_exit:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _argparse_error(argv: list[str]) -> bool:
    """Errors argparse itself reports (SystemExit 2 with one line, through cli.Parser.error)."""
    return (not argv or argv[0] == "nope" or "--bogus" in argv or "abc" in argv or ("nope" in argv and "--backend"
            in argv) or argv == ["data"])


def test_malformed_inputs_through_real_processes(workdir):
    """A few of the table's cases as a user runs them: a fresh process, its exit status and stderr."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    before = _tree(workdir)
    for argv in (["train", "latin1.toml", "--out", "r"], ["sweep", "sw_ok.toml", "--out", "sw", "--workers", "0"],
                 ["report", "corrupt_run", "nodir"], ["train", "cyc_a.toml"]):
        p = subprocess.run(CLI + argv, cwd=workdir, capture_output=True, text=True, env=env, timeout=120)
        assert p.returncode == 2 and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert _tree(workdir) == before


def test_broken_pipe_ends_quietly(workdir):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    p = subprocess.Popen(CLI + ["figure", "list"], cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env)
    p.stdout.readline()
    p.stdout.close()  # the reader leaves, as `| head -1` does
    err = p.stderr.read().decode()
    p.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipe" not in err


# ------------------------------------------------------------------------------------------------------------
# Run identity and re-runs


def test_threads_are_not_part_of_a_runs_identity(tmp_path, capsys):
    cfg = load_config(ROOT / "configs" / "p1" / "cpu_demo.toml")
    assert cfg.run_id() == "5ec6d3da27d7"  # anchor run ids of existing directories are unchanged
    one = cfg.replace(**{"train.threads": 1})
    assert one.run_id() == cfg.run_id()
    small = tiny_config(**{"train.threads": 0, "train.epochs": 1})
    train(small.replace(**{"train.threads": 1}), tmp_path / "r", show_progress=False)
    assert rundir.open_run(tmp_path / "r", small) == "done"  # stored threads = 1, asked threads = 0: the same run
    assert json.loads((tmp_path / "r" / "config.json").read_text())["train"]["threads"] == 1  # stored as run
    assert rundir.read_json(tmp_path / "r" / "summary.json")["run_id"] == small.run_id()
    with pytest.raises(ConfigError, match=r"^init\.gamma: .* holds a run with a different config"):
        rundir.open_run(tmp_path / "r", small.replace(**{"init.gamma": 0.8}))


def test_rerunning_a_finished_sweep_trains_nothing_and_exits_0(tmp_path, capsys):
    (tmp_path / "base.toml").write_text(TINY0)
    (tmp_path / "s.toml").write_text('name = "t"\nbase = "base.toml"\n[set]\n"train.epochs" = 1\n'
                                     '[axes]\n"init.gamma" = [0.5, 1.0]\n')
    argv = ["sweep", str(tmp_path / "s.toml"), "--out", str(tmp_path / "sw"), "--workers", "2"]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert "2 runs: 0 done, 2 to train" in first
    t = time.time()
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "2 runs: 2 done, 0 to train" in out and "failed" not in out and time.time() - t < 10
    rows = [json.loads((d / "summary.json").read_text())["run_id"] for d in sorted((tmp_path / "sw").iterdir())
            if d.is_dir()]
    assert rows == sorted(d.name for d in (tmp_path / "sw").iterdir() if d.is_dir())  # one run_id everywhere
    assert main(["collect", str(tmp_path / "sw")]) == 0
    assert sorted(ln.split(",")[0] for ln in (tmp_path / "sw" / "summary.csv").read_text().splitlines()[1:]) == rows


def test_rerunning_the_demo_trains_nothing(tmp_path, capsys):
    from anchorlab.demo import run_demo

    (tmp_path / "base.toml").write_text(TINY0)
    (tmp_path / "d.toml").write_text('name = "demo"\nbase = "base.toml"\n[set]\n"train.epochs" = 1\n'
                                     '[axes]\n"init.gamma" = [1.0, 0.5, 0.1]\n')
    kw = {"workers": 2, "show_progress": False, "p2_spec": None, "report": False}
    assert not run_demo(tmp_path / "d.toml", tmp_path / "demo", **kw)["failed_runs"]
    capsys.readouterr()
    t = time.time()
    assert not run_demo(tmp_path / "d.toml", tmp_path / "demo", **kw)["failed_runs"]
    assert "3 runs: 3 done, 0 to train" in capsys.readouterr().out and time.time() - t < 10


def test_duplicate_grid_points_train_once_and_show_at_dry_run(tmp_path):
    (tmp_path / "base.toml").write_text(TINY_ANCHOR_TOML)
    (tmp_path / "s.toml").write_text('name = "t"\nbase = "base.toml"\n[axes]\n"init.gamma" = [0.5, 0.5, 1.0]\n')
    spec = load_sweep(tmp_path / "s.toml")
    text = describe(spec, tmp_path / "sw")
    assert "2 runs" in text and "1 duplicate grid point(s) merged" in text and not (tmp_path / "sw").exists()
    assert len(plan(spec, tmp_path / "sw")) == 2


def test_failed_sweep_exits_1_and_names_each_failure(tmp_path, capsys):
    (tmp_path / "base.toml").write_text(TINY_ANCHOR_TOML)
    (tmp_path / "s.toml").write_text('name = "t"\nbase = "base.toml"\n[set]\n"train.epochs" = 1\n'
                                     '[axes]\n"init.gamma" = [0.5, 1.0]\n')
    spec = load_sweep(tmp_path / "s.toml")
    bad = plan(spec, tmp_path / "sw")[1][2]
    bad.mkdir()
    (bad / rundir.LOCK).write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname()}))  # a live writer
    assert main(["sweep", str(tmp_path / "s.toml"), "--out", str(tmp_path / "sw"), "--backend", "local"]) == 1
    out = capsys.readouterr().out
    assert f"run failed: {bad}: {bad}: another process (pid {os.getpid()}" in out and "1/2 runs done" in out


# ------------------------------------------------------------------------------------------------------------
# One writer per run directory


def _second_writer_refused(argv: list[str], cwd: Path, env: dict[str, str]) -> None:
    """Start ``argv`` (a long run into ``cwd``/r), wait for its writer lock, and check that the same command run
    again is refused with one line naming the first writer's pid; the first is then killed (its lock left)."""
    first = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        for _ in range(600):
            if (cwd / "r" / rundir.LOCK).exists() and (cwd / "r" / rundir.LOCK).read_text():
                break
            time.sleep(0.1)
        second = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env, timeout=120)
        assert second.returncode == 2 and len(second.stderr.strip().splitlines()) == 1, second.stderr
        assert f"another process (pid {first.pid}" in second.stderr
    finally:
        first.send_signal(signal.SIGKILL)  # its lock is left behind: stale
        first.wait()


def test_a_second_writer_is_refused_and_a_stale_lock_taken_over(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    (tmp_path / "good.toml").write_text(TINY_ANCHOR_TOML)
    _second_writer_refused(CLI + ["train", "good.toml", "--set", "train.epochs=400", "--out", "r"], tmp_path, env)
    (tmp_path / "r" / rundir.CKPT_DIR / ".resume.safetensors.tmp").write_bytes(b"half")  # a kill's debris
    assert (tmp_path / "r" / rundir.LOCK).exists()
    with rundir.writer_lock(tmp_path / "r"):  # the dead writer's lock is taken over, the debris removed
        assert json.loads((tmp_path / "r" / rundir.LOCK).read_text())["pid"] == os.getpid()
        assert not list((tmp_path / "r" / rundir.CKPT_DIR).glob(".*.tmp*"))
    assert not (tmp_path / "r" / rundir.LOCK).exists()
    third = subprocess.run(CLI + ["train", "good.toml", "--set", "train.epochs=2", "--out", "r"], cwd=tmp_path,
                           capture_output=True, text=True, env=env, timeout=300)
    assert third.returncode == 2 and third.stderr.startswith("anchorlab train: error: train.epochs: "), third.stderr


@pytest.mark.skipif(not Path("/proc/sys/kernel/random/boot_id").exists(), reason="Linux /proc boot and start times")
def test_a_lock_whose_pid_was_given_to_another_process_is_stale(tmp_path):
    """A LOCK names a live pid of this host; it is still stale if that pid now belongs to a later process (the
    machine rebooted, or the pid was reused): the boot id or start time it records differs."""
    me, host = os.getpid(), socket.gethostname()
    live = {"pid": me, "host": host, "boot": rundir._boot_id(), "started": rundir._start_time(me)}
    for holder, stale in [(live, False), ({**live, "boot": "a-boot-before-this-one"}, True),
                          ({**live, "started": str(int(live["started"]) - 1)}, True),
                          ({"pid": me, "host": host}, False),  # a lock of before these fields: the pid decides
                          ({**live, "host": "another-machine", "boot": "x"}, False)]:  # not checkable from here
        run = tmp_path / f"r{len(list(tmp_path.iterdir()))}"
        run.mkdir()
        (run / rundir.LOCK).write_text(json.dumps(holder))
        if stale:
            with rundir.writer_lock(run):
                assert json.loads((run / rundir.LOCK).read_text())["started"] == live["started"]
            assert not (run / rundir.LOCK).exists()
        else:
            with pytest.raises(rundir.RunLocked, match=f"pid {me} on {holder['host']}"):
                with rundir.writer_lock(run):
                    pass
            assert json.loads((run / rundir.LOCK).read_text()) == holder  # left as it was


def test_another_hosts_lock_goes_stale_without_its_heartbeat(tmp_path, monkeypatch):
    """A lock from another host (a shared file system) is respected while its holder touches it, taken over once
    it has not been touched for LOCK_STALE_S; and a holder whose directory was taken over stops at its next
    epoch boundary instead of writing on (save_resume checks the lock)."""
    run, other = tmp_path / "r", {"pid": 4242, "host": "another-machine", "boot": "b", "started": "1"}
    (run / rundir.CKPT_DIR).mkdir(parents=True)
    (run / rundir.LOCK).write_text(json.dumps(other))
    with pytest.raises(rundir.RunLocked, match="pid 4242 on another-machine"):
        with rundir.writer_lock(run):
            pass
    old = time.time() - rundir.LOCK_STALE_S - 60
    os.utime(run / rundir.LOCK, (old, old))
    monkeypatch.setattr(rundir, "LOCK_HEARTBEAT_S", 0.05)
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.AdamW(model.parameters())
    with rundir.writer_lock(run):  # taken over: no heartbeat for 11 minutes
        mine = json.loads((run / rundir.LOCK).read_text())
        assert mine["pid"] == os.getpid()
        os.utime(run / rundir.LOCK, (old, old))
        time.sleep(0.5)
        assert time.time() - (run / rundir.LOCK).stat().st_mtime < 5  # this holder's heartbeat touched it again
        rundir.save_resume(run, model, opt, 1, 1)  # still ours: written
        (run / rundir.LOCK).write_text(json.dumps(other))  # the other host took the directory over meanwhile
        with pytest.raises(rundir.RunLocked, match="took over this run directory"):
            rundir.save_resume(run, model, opt, 2, 2)
    assert json.loads((run / rundir.LOCK).read_text()) == other  # its lock is left to it
    assert rundir.resume_point(run) == (1, 1)  # and nothing of step 2 was written


def test_a_ray_retry_outwaits_a_lost_nodes_lock(tmp_path, monkeypatch):
    """With OTHER_HOST_WAIT_S (set in Ray workers) a fresh lock of another host is waited on until it goes stale
    (its node lost: no more heartbeats), then taken over; without it, refused at once."""
    run = tmp_path / "r"
    run.mkdir()
    (run / rundir.LOCK).write_text(json.dumps({"pid": 4242, "host": "lost-node", "boot": "b", "started": "1"}))
    monkeypatch.setattr(rundir, "LOCK_STALE_S", 0.6)
    monkeypatch.setattr(rundir, "LOCK_HEARTBEAT_S", 0.1)
    with pytest.raises(rundir.RunLocked, match="lost-node"):
        with rundir.writer_lock(run):
            pass
    monkeypatch.setattr(rundir, "OTHER_HOST_WAIT_S", 5.0)
    t0 = time.monotonic()
    with rundir.writer_lock(run):
        assert json.loads((run / rundir.LOCK).read_text())["pid"] == os.getpid()
    assert 0.3 < time.monotonic() - t0 < 4.0  # it waited for the lock to go stale, not for the whole wait


def test_ctrl_c_is_one_line_and_the_same_command_resumes(tmp_path):
    """SIGINT to a training CLI: one line, exit 130, no traceback, the lock released (not a FAILED run), and the
    same command then resumes and finishes."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    (tmp_path / "good.toml").write_text(TINY_ANCHOR_TOML)
    argv = CLI + ["train", "good.toml", "--set", "train.epochs=40", "--out", "r"]
    first = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    for _ in range(900):
        if len(rundir.read_metrics(tmp_path / "r", rundir.EPOCHS)) >= 2:
            break
        time.sleep(0.1)
    first.send_signal(signal.SIGINT)
    _, err = first.communicate(timeout=120)
    assert first.returncode == 130, err
    assert err.strip().splitlines()[-1] == ("anchorlab train: interrupted; the same command resumes each unfinished "
                                            "run from its last epoch boundary") and "Traceback" not in err
    assert not (tmp_path / "r" / rundir.LOCK).exists() and not (tmp_path / "r" / rundir.FAILED).exists()
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert rundir.read_json(tmp_path / "r" / rundir.SUMMARY)["sessions"][-1]["from_step"] > 0  # resumed, not anew


@pytest.mark.parametrize("backend", ["process", pytest.param("ray", marks=pytest.mark.slow)])
def test_ctrl_c_on_a_sweep_stops_its_workers_quietly_and_the_same_command_resumes(tmp_path, backend):
    """A terminal's Ctrl-C reaches the whole process group: the process back-end's workers leave it to the sweep,
    which stops them; Ray's tasks are cancelled and waited for before the local cluster goes down. One line, exit
    130, no worker traceback, no lock or FAILED left behind; the same command then resumes both runs."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    if backend == "ray":
        pytest.importorskip("ray")
        ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Ray's unix sockets allow ~107 characters
        env.update(RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled", RAY_TMPDIR=ray_tmp)
    (tmp_path / "base.toml").write_text(TINY_ANCHOR_TOML)
    (tmp_path / "s.toml").write_text('name = "t"\nbase = "base.toml"\n[set]\n"train.epochs" = 60\n'
                                     '[axes]\n"init.gamma" = [0.5, 1.0]\n')
    argv = CLI + ["sweep", "s.toml", "--out", "sw", "--backend", backend, "--workers", "2"]
    try:
        sweep = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                 env=env, start_new_session=True)
        for _ in range(1200):
            runs = list(tmp_path.glob("sw/*/epochs.jsonl"))
            if len(runs) == 2 and all(len(rundir.read_metrics(r.parent, rundir.EPOCHS)) >= 2 for r in runs):
                break
            time.sleep(0.1)
        os.killpg(sweep.pid, signal.SIGINT)
        _, err = sweep.communicate(timeout=120)
        assert sweep.returncode == 130 and "Traceback" not in err and "KeyboardInterrupt" not in err, err
        assert err.strip().endswith("anchorlab sweep: interrupted; the same command resumes each unfinished run "
                                    "from its last epoch boundary")
        assert not list(tmp_path.glob("sw/*/LOCK")) and not list(tmp_path.glob("sw/*/FAILED"))
        assert not list(tmp_path.glob("sw/*/DONE"))  # interrupted mid-run, not after it
        done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
        assert done.returncode == 0, done.stderr
        for run in tmp_path.glob("sw/*/"):
            assert rundir.read_json(run / rundir.SUMMARY)["sessions"][-1]["from_step"] > 0  # resumed, not anew
    finally:
        if backend == "ray":
            shutil.rmtree(ray_tmp, ignore_errors=True)


# ------------------------------------------------------------------------------------------------------------
# Workers that die


@pytest.mark.parametrize("retries", [0, 1])
def test_a_killed_sweep_worker_fails_its_run_and_the_sweep_finishes(tmp_path, retries):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    (tmp_path / "base.toml").write_text(TINY_ANCHOR_TOML)
    (tmp_path / "s.toml").write_text('name = "t"\nbase = "base.toml"\n[set]\n"train.epochs" = 2\n'
                                     '[axes]\n"init.gamma, train.epochs" = [[0.5, 400], [1.0, 2]]\n')
    sweep = subprocess.Popen(CLI + ["sweep", "s.toml", "--out", "sw", "--workers", "2", "--max-retries", str(retries)],
                             cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    long_run = plan(load_sweep(tmp_path / "s.toml"), tmp_path / "probe")[0][2].name
    lock = tmp_path / "sw" / long_run / rundir.LOCK
    for _ in range(900):
        if lock.exists() and lock.read_text() and (tmp_path / "sw" / long_run / rundir.METRICS).exists():
            break
        time.sleep(0.1)
    first = json.loads(lock.read_text())["pid"]
    os.kill(first, signal.SIGKILL)
    if retries:  # the run starts again and resumes; kill it for good once it has taken the dead one's lock
        for _ in range(900):
            text = lock.read_text() if lock.exists() else ""
            if text and json.loads(text)["pid"] != first:
                break
            time.sleep(0.1)
        os.kill(json.loads(lock.read_text())["pid"], signal.SIGKILL)
    out, _ = sweep.communicate(timeout=300)
    assert sweep.returncode == 1, out
    assert f"run failed: {Path('sw') / long_run}: worker process died (killed by SIGKILL)" in out
    assert ("starting it again (1/1)" in out) == bool(retries)
    assert "1/2 runs done" in out and "Traceback" not in out and "leaked semaphore" not in out


# ------------------------------------------------------------------------------------------------------------
# NaN and divergence


def _error_lines(err: str) -> list[str]:
    """The lines of stderr the CLI printed (a tqdm bar shares the stream)."""
    return [ln[ln.index("anchorlab "):] for ln in err.replace("\r", "\n").splitlines() if "anchorlab " in ln]


def _finite_files(run_dir: Path) -> None:
    from safetensors.torch import load_file

    for f in (run_dir / rundir.CKPT_DIR).glob("*.safetensors"):
        assert all(bool(torch.isfinite(t).all()) for t in load_file(str(f)).values()), f


@pytest.mark.parametrize("model", ["gpt", "emb_mlp"])
def test_a_diverging_run_stops_named_and_keeps_finite_state(tmp_path, model, capsys):
    extra = ["--set", "task.name='mem_rsn'", "--set", "task.seq_len=3", "--set", "task.data_size=2000",
             "--set", "model.name='emb_mlp'"] if model == "emb_mlp" else []
    (tmp_path / "good.toml").write_text(TINY_ANCHOR_TOML)
    argv = ["train", str(tmp_path / "good.toml"), *extra, "--set", "train.lr=1e3", "--set", "train.lr_multiplier=1.0",
            "--set", "train.grad_clip=0.0", "--set", "train.epochs=5", "--out", str(tmp_path / "r")]
    assert main(argv) == 1
    out = capsys.readouterr().err
    err = _error_lines(out)  # the progress bar aside
    assert len(err) == 1 and f"run {tmp_path / 'r'} diverged at step" in err[0], err
    assert any(ln.startswith("anchorlab train: run ") for ln in out.split("\n")), out  # the bar closed first
    err = err[0]
    assert "(loss nan)" in err or "(loss inf)" in err or "non-finite weights" in err
    assert (tmp_path / "r" / rundir.FAILED).exists() and not rundir.is_done(tmp_path / "r")
    _finite_files(tmp_path / "r")
    assert all(all(v == v for v in r.values() if isinstance(v, float)) for r in rundir.read_metrics(tmp_path / "r",
                                                                                                 rundir.EPOCHS))


def test_a_diverging_lm_run_stops_named(tmp_path, capsys):
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    from tests.test_lm import TINY

    argv = ["lm", *[x for s in TINY + ["train.lr=1e6", "train.grad_clip=0.0", "train.epochs=4", "train.eval_every=1"]
                    for x in ("--set", s)], "--out", str(tmp_path / "r")]
    assert main(argv) == 1
    out = capsys.readouterr().err
    err = _error_lines(out)
    assert len(err) == 1 and "diverged at step" in err[0] and "Traceback" not in out, out
    assert any(ln.startswith("anchorlab lm: run ") for ln in out.split("\n")), out  # the bar closed first
    assert (tmp_path / "r" / rundir.FAILED).exists()
    _finite_files(tmp_path / "r")


def test_a_diverging_run_of_a_batch_fails_alone(tmp_path):
    from anchorlab.backends.common import SweepProgress
    from anchorlab.backends.local import run_batched

    cfgs = [tiny_config(**{"train.epochs": 3}),
            tiny_config(**{"train.epochs": 3, "train.lr": 1e3, "train.lr_multiplier": 1.0, "train.grad_clip": 0.0})]
    jobs = [(c, tmp_path / f"b{k}") for k, c in enumerate(cfgs)]
    results = run_batched(jobs, 2, SweepProgress(jobs, 0, 0, False))
    assert results[0].error is None and rundir.is_done(tmp_path / "b0")
    assert "diverged at step" in results[1].error and (tmp_path / "b1" / rundir.FAILED).exists()
    _finite_files(tmp_path / "b1")


# ------------------------------------------------------------------------------------------------------------
# The seq2seq kind (SCAN, COGS, addition): the same identity, lock and divergence contract

S2S_TINY = ["seq2seq.task=scan", "seq2seq.n_train=12", "seq2seq.n_test=8", "model.arch=gpt", "model.n_layers=1",
            "model.d_model=16", "model.n_heads=2", "train.batch_size=13", "train.eval_every=1000",
            "train.eval_train_rows=4", "train.checkpoint_every=1000", "train.threads=1"]


def _sets(items: list[str]) -> list[str]:
    return [x for s in items for x in ("--set", s)]


def test_threads_are_not_part_of_a_seq2seq_runs_identity(tmp_path):
    from anchorlab.config_tools import run_id_of
    from anchorlab.text.seq2seq_config import load_s2s_config
    from anchorlab.text.seq2seq_train import train_seq2seq

    one = load_s2s_config(None, [*S2S_TINY, "train.epochs=1"])
    assert one.run_id() == "s2s-" + run_id_of(one.to_dict())  # at the default threads (1): the id as before
    cfg = load_s2s_config(None, [*S2S_TINY, "train.threads=0", "train.epochs=1"])
    assert cfg.run_id() == one.run_id()
    train_seq2seq(one, tmp_path / "r", show_progress=False)
    assert rundir.open_run(tmp_path / "r", cfg) == "done"  # stored threads = 1, asked threads = 0: the same run
    assert rundir.read_json(tmp_path / "r" / "summary.json")["run_id"] == cfg.run_id()


def test_a_second_seq2seq_writer_is_refused(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    _second_writer_refused(CLI + ["seq2seq", *_sets([*S2S_TINY, "train.epochs=100000"]), "--out", "r"], tmp_path,
                           env)
    assert not (tmp_path / "r" / rundir.FAILED).exists()  # the refused writer wrote nothing


def test_a_diverging_seq2seq_run_stops_named(tmp_path, capsys):
    argv = ["seq2seq", *_sets([*S2S_TINY, "train.lr=1e6", "train.grad_clip=0.0", "train.epochs=6",
                               "train.eval_every=1"]), "--out", str(tmp_path / "r")]
    assert main(argv) == 1
    out = capsys.readouterr().err
    err = _error_lines(out)
    assert len(err) == 1 and f"run {tmp_path / 'r'} diverged at step" in err[0] and "Traceback" not in out, out
    assert "(loss nan)" in err[0] or "(loss inf)" in err[0] or "non-finite weights" in err[0]
    assert any(ln.startswith("anchorlab seq2seq: run ") for ln in out.split("\n")), out  # not after the bar
    assert (tmp_path / "r" / rundir.FAILED).exists() and not rundir.is_done(tmp_path / "r")
    _finite_files(tmp_path / "r")
    assert all(v == v for r in rundir.read_metrics(tmp_path / "r") for v in r.values() if isinstance(v, float))


def test_a_sweep_file_given_to_train_is_one_line_naming_the_sweep_command(tmp_path, capsys):
    from anchorlab.cli import main

    sweep = ROOT / "configs" / "demo.toml"
    rc = main(["train", str(sweep), "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert f"{sweep} is a sweep" in err and f"`anchorlab sweep {sweep}`" in err
    assert str(ROOT / "configs" / "p1" / "cpu_demo.toml") in err
    assert not (tmp_path / "r").exists()
    one = ROOT / "configs" / "sweeps" / "p2_fig8_ranges_cpu.toml"  # a sweep of one run: a name, no axes
    assert main(["train", str(one), "--out", str(tmp_path / "r")]) == 2
    assert f"{one} is a sweep file" in capsys.readouterr().err and not (tmp_path / "r").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without a GPU")
def test_a_dry_run_refuses_what_the_run_would_refuse(tmp_path, capsys):
    """--dry-run prints the plan, then the same checks as the real command: exit 0 only where it would start."""
    from anchorlab.cli import main

    sweep = str(ROOT / "configs" / "sweeps" / "p2_emb_mlp_cpu.toml")
    assert main(["sweep", sweep, "--dry-run", "--out", str(tmp_path / "ok")]) == 0
    capsys.readouterr()
    rc = main(["sweep", sweep, "--set", "train.device=cuda", "--dry-run", "--out", str(tmp_path / "gpu")])
    out, err = capsys.readouterr()
    assert rc == 2 and "6 new" in out and err.strip().count("\n") == 0
    assert "train.device: 'cuda' needs a CUDA GPU" in err
    assert not (tmp_path / "gpu").exists() and not (tmp_path / "ok").exists()


@pytest.mark.parametrize("cmd, config, right", [
    ("train", "configs/text/p1_fig7_gpt2_quick_cpu.toml", "lm"), ("lm", "configs/p1/cpu_demo.toml", "train"),
    ("seq2seq", "configs/text/p1_fig7_gpt2_quick_cpu.toml", "lm"), ("data", "configs/real/scan_cpu.toml", "seq2seq"),
])
def test_a_config_of_another_run_kind_is_one_line_naming_its_command(tmp_path, capsys, cmd, config, right):
    from anchorlab.cli import main

    path = str(ROOT / config)
    rc = main([cmd, path, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert f"which `anchorlab {cmd}` does not take: run it with `anchorlab {right} {path}`" in err
    assert not (tmp_path / "out").exists()
