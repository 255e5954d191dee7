"""anchorlab.cpu: glibc keeps freed tensor memory, so re-allocating a large tensor no longer page-faults."""

import platform
import subprocess
import sys

import pytest

from anchorlab import cpu

GLIBC = sys.platform == "linux" and platform.libc_ver()[0] == "glibc"

# Minor page faults of the second of two 64 MiB allocate-fill-free rounds (16,384 pages), before and after.
PROBE = """
import resource, sys, torch
from anchorlab.cpu import keep_freed_memory
def faults():
    torch.empty(16 * 2**20).fill_(1.0)  # 64 MiB, freed at once
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    torch.empty(16 * 2**20).fill_(1.0)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
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
    assert untuned > 10_000, "glibc mmaps a 64 MiB block afresh each time (16,384 pages)"
    assert after < 1_000, "after keep_freed_memory the freed pages are reused"


@pytest.mark.skipif(not GLIBC, reason="glibc's mallopt only")
def test_system_setting_leaves_glibc_alone():
    untuned, tuned, after = probe({cpu.MALLOC_ENV: "system"})
    assert not tuned and after > 10_000


def test_bad_setting_names_the_variable(monkeypatch):
    monkeypatch.setattr(cpu, "_tuned", None)
    monkeypatch.setenv(cpu.MALLOC_ENV, "jemalloc")
    with pytest.raises(ValueError, match="ANCHORLAB_MALLOC='jemalloc'.*'keep'.*'system'"):
        cpu.keep_freed_memory()
