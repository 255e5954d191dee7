"""Which code produced a result: the anchorlab checkout's git commit, asked of git once per process."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

import anchorlab


@functools.cache
def git_commit() -> str:
    """The commit of the anchorlab checkout the package runs from (``+dirty`` if tracked files of the package
    differ from it), or "unknown" (an installed copy, one inside another repository, or no git)."""
    here = Path(anchorlab.__file__).resolve().parent
    try:
        top = subprocess.run(["git", "-C", str(here), "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        if Path(top).resolve() / "src" / "anchorlab" != here:  # installed inside some other repository
            return "unknown"
        sha = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no", "--", "."],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return sha + ("+dirty" if dirty else "")


def code_version() -> str:
    """anchorlab's version with, from a git checkout, its short commit: ``0.1.0+g1a2b3c4d5e6f`` (``.dirty`` if
    edited), else the version alone. A run's ``summary.json`` records it (``environment.anchorlab``)."""
    commit = git_commit()
    if commit == "unknown":
        return anchorlab.__version__
    sha, _, dirty = commit.partition("+")
    return f"{anchorlab.__version__}+g{sha[:12]}{'.dirty' if dirty else ''}"
