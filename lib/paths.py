"""Where the workbook's files live, and the two checks a file goes through before it is read.

The checkout (`PROJECT_ROOT`), the cache root (`cache_dir`: `lib.cache`) and the stored results' root
(`results_root`: `lib.store`), each movable by an environment variable; `regular_file` refuses a directory or a
FIFO where a file should be (opening a FIFO blocks), and `sha256_file` / `sha256_from` are the one SHA-256 of a
file that the cache's header, the stored layers' manifests and the data files are checked with. `PACKAGES` names
each notebook's package once; the registries by notebook (`lib.store`, `lib.stages`, `lib.claims`, `lib.templates`)
name a module of it.

A leaf: it imports nothing from `lib`, so any module may import it without a cycle (tests/test_layout.py).
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import BinaryIO

PROJECT_ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"01": "lib.prcurves", "02": "lib.crel", "03": "lib.regret", "04": "lib.irs"}  # each notebook's package
BLOCK = 1 << 22  # bytes read at a time when a file is hashed


def cache_dir() -> Path:
    """The cache root: $WORKBOOK_CACHE, else <checkout>/data/cache, else ~/.cache/workbook."""
    if os.environ.get("WORKBOOK_CACHE"):
        return Path(os.environ["WORKBOOK_CACHE"]).expanduser()
    if (PROJECT_ROOT / "pyproject.toml").exists():
        return PROJECT_ROOT / "data" / "cache"
    return Path.home() / ".cache" / "workbook"


def results_root() -> Path:
    """$WORKBOOK_RESULTS if set (tests point it at a temporary folder), else the checkout's results/."""
    return Path(os.environ.get("WORKBOOK_RESULTS") or PROJECT_ROOT / "results")


class NotARegularFile(ValueError):
    """A directory, FIFO, socket or device where a cache entry or stored file should be; names the file."""

    def __init__(self, path: Path, kind: str):
        self.path, self.reason = Path(path), f"it is a {kind}, not a regular file"
        super().__init__(f"{path}: {self.reason}; remove it (a FIFO would block a read forever).")


_KINDS = ((stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO (named pipe)"), (stat.S_ISSOCK, "socket"),
          (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"))


def regular_file(path: Path) -> os.stat_result:
    """The stat of `path`, checked to be a regular file before anything opens it (opening a FIFO blocks)."""
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise NotARegularFile(path, next((kind for test, kind in _KINDS if test(info.st_mode)), "special file"))
    return info


def sha256_from(fh: BinaryIO, start: int = 0) -> bytes:
    """SHA-256 (32 bytes) of the bytes of the open binary file `fh` from offset `start` to its end."""
    fh.seek(start)
    digest = hashlib.sha256()
    while block := fh.read(BLOCK):
        digest.update(block)
    return digest.digest()


def sha256_file(path: Path) -> str:
    """The SHA-256 of the whole file at `path`, 64 hex digits. A directory or FIFO at `path` raises
    NotARegularFile, naming it, instead of blocking on the read."""
    regular_file(path)
    with open(path, "rb") as fh:
        return sha256_from(fh).hex()
