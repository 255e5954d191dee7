"""anchorlab.cpu: glibc keeps freed tensor memory, so re-allocating large tensors mostly stops page-faulting."""

import platform
import subprocess
import sys

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
