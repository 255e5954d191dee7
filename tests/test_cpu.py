"""anchorlab.cpu: glibc keeps freed tensor memory, so re-allocating large tensors mostly stops page-faulting; a
training process flushes subnormal floats to zero unless told to keep them."""

import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest

from anchorlab import cpu

GLIBC = sys.platform == "linux" and platform.libc_ver()[0] == "glibc"

# Minor page faults over rounds 4-8 of a training-like pattern (a 64 MiB tensor and a 48 MiB result, freed every
# round), before and after keep_freed_memory. glibc as it is faults every page in again each round (~143k).
PROBE = """
import resource, torch
from anchorlab.cpu import keep_freed_memory
def faults(rounds=8, skip=3):
    total = 0
    for i in range(rounds):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        a = torch.empty(16 * 2**20).fill_(1.0)
        b = a[: 12 * 2**20] * 2.0
        del a, b
        if i >= skip:
            total += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    return total
untuned = faults()
tuned = keep_freed_memory()
print(untuned, int(tuned), faults())
"""


def probe(env: dict[str, str] | None = None) -> tuple[int, bool, int]:
    import os

    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True,
                         env={**os.environ, **(env or {})})
    untuned, tuned, after = out.stdout.split()
    return int(untuned), bool(int(tuned)), int(after)


@pytest.mark.skipif(not GLIBC, reason="glibc's mallopt only")
def test_keep_freed_memory_stops_the_page_faults():
    untuned, tuned, after = probe({cpu.MALLOC_ENV: "keep"})
    assert tuned
    assert untuned > 100_000, "glibc maps large blocks afresh every round (28,672 pages a round)"
    assert after < untuned // 3, "after keep_freed_memory most freed pages are reused"


@pytest.mark.skipif(not GLIBC, reason="glibc's mallopt only")
def test_system_setting_leaves_glibc_alone():
    untuned, tuned, after = probe({cpu.MALLOC_ENV: "system"})
    assert not tuned and after > 100_000


def test_bad_setting_names_the_variable(monkeypatch):
    monkeypatch.setattr(cpu, "_tuned", None)
    monkeypatch.setenv(cpu.MALLOC_ENV, "jemalloc")
    with pytest.raises(ValueError, match="ANCHORLAB_MALLOC='jemalloc'.*'keep'.*'system'"):
        cpu.keep_freed_memory()


# A subnormal fp32 (1e-40) survives a multiplication by 1 under IEEE rules and reads as 0 under flush-to-zero.
SUBNORMAL_PROBE = """
import torch
from anchorlab.cpu import run_environment, setup_cpu
before = torch.tensor(1e-40).mul(1.0).item()
setup_cpu(1)
print(before > 0, torch.tensor(1e-40).mul(1.0).item() > 0, run_environment(torch.device("cpu"))["denormals"])
"""


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="flush-to-zero checked on x86 cores")
@pytest.mark.parametrize("setting, survives, recorded", [(None, False, "flushed"), ("flush", False, "flushed"),
                                                          ("keep", True, "kept")])
def test_a_training_process_flushes_subnormals_unless_told_to_keep_them(setting, survives, recorded):
    import os

    env = {k: v for k, v in os.environ.items() if k != cpu.DENORMALS_ENV}
    if setting is not None:
        env[cpu.DENORMALS_ENV] = setting
    out = subprocess.run([sys.executable, "-c", SUBNORMAL_PROBE], capture_output=True, text=True, check=True,
                         env=env).stdout.split()
    assert out == ["True", str(survives), recorded]  # IEEE before the set-up, then as set; the summary says which


def test_a_bad_denormals_setting_is_one_line_and_nothing_written(tmp_path):
    import os

    from tests.tiny import TINY_ANCHOR_TOML

    (tmp_path / "t.toml").write_text(TINY_ANCHOR_TOML)
    src = str(Path(__file__).resolve().parents[1] / "src")
    for name, value, allowed in [(cpu.DENORMALS_ENV, "ftz", "'flush' (the default) and 'keep'"),
                                 (cpu.MALLOC_ENV, "jemalloc", "'keep' (the default) and 'system'")]:
        r = subprocess.run([sys.executable, "-m", "anchorlab.cli", "train", "t.toml", "--out", "r"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": src, name: value})
        assert r.returncode == 2
        assert r.stderr == f"anchorlab train: error: {name}='{value}': allowed values are {allowed}\n"
        assert not (tmp_path / "r").exists()


def test_the_environment_names_the_code(monkeypatch):
    import anchorlab
    from anchorlab import provenance

    provenance.git_commit.cache_clear()
    version = provenance.code_version()
    if (Path(__file__).resolve().parents[1] / ".git").exists():  # a checkout: its commit, and whether it is edited
        assert re.fullmatch(re.escape(anchorlab.__version__) + r"\+g[0-9a-f]{12}(\.dirty)?", version), version
        assert provenance.git_commit().startswith(version.split("+g")[1][:12])
    provenance.git_commit.cache_clear()

    def no_git(*a, **k):
        raise FileNotFoundError("git")
    monkeypatch.setattr(provenance.subprocess, "run", no_git)
    assert provenance.code_version() == anchorlab.__version__  # an installed copy without git: the version alone
    assert provenance.git_commit() == "unknown"
    provenance.git_commit.cache_clear()

    def another_repository(argv, **k):  # a copy installed inside some other checkout: not its commit
        return subprocess.CompletedProcess(argv, 0, stdout="/some/other/repo\n" if "--show-toplevel" in argv
                                           else "0123456789abcdef0123456789abcdef01234567\n")
    monkeypatch.setattr(provenance.subprocess, "run", another_repository)
    assert provenance.git_commit() == "unknown" and provenance.code_version() == anchorlab.__version__
    provenance.git_commit.cache_clear()


def test_bf16_without_kernels_is_one_warning_line_once_per_process(monkeypatch, capsys):
    import torch

    monkeypatch.setattr(cpu, "_warned_precision", False)
    monkeypatch.setattr(cpu, "native_bf16", lambda: True)
    assert not cpu.warn_precision("bf16", torch.device("cpu"))  # kernels present: silent
    monkeypatch.setattr(cpu, "native_bf16", lambda: False)
    assert not cpu.warn_precision("fp32", torch.device("cpu"))  # fp32 needs none
    assert not cpu.warn_precision("bf16", torch.device("cuda"))  # a GPU's bf16 is its own
    assert capsys.readouterr().err == ""
    assert cpu.warn_precision("bf16", torch.device("cpu"))
    assert not cpu.warn_precision("bf16", torch.device("cpu"))  # once per process (a sweep's worker runs many)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "train.precision 'bf16'" in err[0] and "'fp32'" in err[0]


def test_native_bf16_agrees_with_the_instruction_sets():
    import torch

    # oneDNN's bf16 path needs at least AVX-512 on x86; a CPU with AVX-512 BF16 or AMX always has it
    if torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported():
        assert cpu.native_bf16()
    if platform.machine() in ("x86_64", "AMD64") and not torch.cpu._is_avx512_supported():
        assert not cpu.native_bf16()


def test_a_bf16_run_on_a_cpu_without_kernels_warns_and_records_it(monkeypatch, capsys, tmp_path, tiny):
    from anchorlab import rundir
    from anchorlab.train import train

    monkeypatch.setattr(cpu, "_warned_precision", False)
    monkeypatch.setattr(cpu, "native_bf16", lambda: False)
    train(tiny.replace(**{"train.precision": "bf16", "train.epochs": 1}), tmp_path / "r", show_progress=False)
    assert "train.precision 'bf16' on a CPU without bf16 kernels" in capsys.readouterr().err
    assert rundir.read_json(tmp_path / "r" / rundir.SUMMARY)["environment"]["bf16"] == "emulated"
