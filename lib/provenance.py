"""Where a stored result came from: the commit of the checkout whose code produced it.

Stored results (01's member curves, 03's whole-network predictions) and the generated results pages record it.
"""

from __future__ import annotations

import subprocess

from lib.paths import PROJECT_ROOT


def git_commit(*, short: bool = False, mark_dirty: bool = False) -> str:
    """The HEAD commit of the checkout `lib` is imported from (whatever the working directory), abbreviated
    with `short`; with `mark_dirty`, "-dirty" is appended when a tracked file differs from it. "unknown"
    outside a git checkout or without git."""
    git = ["git", "-C", str(PROJECT_ROOT)]
    try:
        commit = subprocess.run([*git, "rev-parse", *(["--short"] if short else []), "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = mark_dirty and subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"],
                                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("-dirty" if dirty else "")
