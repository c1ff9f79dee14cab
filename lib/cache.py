"""A cache for expensive results: keyed by configuration hash, written atomically.

A cache entry's file name says what it depends on (`label`) plus a short hash of the full
configuration, e.g. `data/cache/01/ensemble-C4-M10-n10000-3fa2c1b9e0.pt`. Writes go to a temporary
file in the same folder and are renamed into place, so an interrupted run never leaves a corrupt
entry. The folder is `$WORKBOOK_CACHE` if set, else the git-ignored `data/cache/` of the checkout.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def cache_dir() -> Path:
    """The cache root: $WORKBOOK_CACHE, else <checkout>/data/cache, else ~/.cache/workbook."""
    if os.environ.get("WORKBOOK_CACHE"):
        return Path(os.environ["WORKBOOK_CACHE"]).expanduser()
    if (PROJECT_ROOT / "pyproject.toml").exists():
        return PROJECT_ROOT / "data" / "cache"
    return Path.home() / ".cache" / "workbook"


def _jsonable(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return _jsonable(asdict(value))
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return {"sha256": hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest(), "shape": value.shape}
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    raise TypeError(f"cannot hash a value of type {type(value).__name__} into a cache key")


def config_hash(config: Any, length: int = 10) -> str:
    """Short SHA-256 of the canonical JSON of `config` (dicts, dataclasses, lists, arrays by content)."""
    text = json.dumps(_jsonable(config), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def cache_path(namespace: str, label: str, config: Any, suffix: str) -> Path:
    """<cache_dir>/<namespace>/<label>-<hash(config)><suffix>."""
    return cache_dir() / namespace / f"{label}-{config_hash(config)}{suffix}"


def atomic_write(path: Path, write: Callable[[Path], None]) -> Path:
    """Call `write(tmp_path)` on a temporary file beside `path`, then rename it to `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual permissions
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def atomic_torch_save(obj: Any, path: Path) -> Path:
    return atomic_write(path, lambda tmp: torch.save(obj, tmp))


def atomic_savez(path: Path, arrays: Mapping[str, np.ndarray]) -> Path:
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)

    return atomic_write(path, write)


def cached_npz(path: Path, compute: Callable[[], Mapping[str, np.ndarray]], force: bool = False) -> dict:
    """Load the arrays at `path`, or compute, store and return them (`force` recomputes)."""
    if path.exists() and not force:
        with np.load(path) as npz:
            return {k: npz[k] for k in npz.files}
    arrays = {k: np.asarray(v) for k, v in compute().items()}
    atomic_savez(path, arrays)
    return arrays


def cached_torch(path: Path, compute: Callable[[], Any], force: bool = False) -> Any:
    """Load the object at `path` (torch.save format), or compute, store and return it."""
    if path.exists() and not force:
        return torch.load(path, weights_only=False)
    obj = compute()
    atomic_torch_save(obj, path)
    return obj
