"""lib.provenance.git_commit: the commit of the checkout lib comes from, whatever the working directory."""

from __future__ import annotations

import subprocess
from pathlib import Path

from lib import provenance

ROOT = Path(__file__).resolve().parents[1]


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_the_commit_is_the_checkouts_from_any_working_directory(tmp_path, monkeypatch):
    """lib.prcurves.stored asked git in the working directory: run from elsewhere it recorded "unknown" or
    another repository's commit."""
    monkeypatch.chdir(tmp_path)
    head = _git("rev-parse", "HEAD")
    assert provenance.git_commit() == head and len(head) == 40
    assert provenance.git_commit(short=True) == _git("rev-parse", "--short", "HEAD")
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    assert provenance.git_commit(mark_dirty=True) == head + ("-dirty" if dirty else "")


def test_outside_a_checkout_or_without_git_the_commit_is_unknown(tmp_path, monkeypatch):
    monkeypatch.setattr(provenance, "PROJECT_ROOT", tmp_path)  # a folder outside any git checkout
    assert provenance.git_commit(mark_dirty=True) == "unknown"
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on the path
    assert provenance.git_commit() == "unknown"
