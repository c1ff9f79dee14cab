"""A cache for expensive results: keyed by configuration hash, written atomically.

A cache entry's file name says what it depends on (`label`) plus a short hash of the full
configuration, e.g. `data/cache/01/ensemble-C4-M10-n10000-3fa2c1b9e0.pt`. Writes go to a temporary
file in the same folder and are renamed into place, so an interrupted run never leaves a half-written
entry, and two processes writing the same entry leave one whole entry (the last rename wins). The
folder is `$WORKBOOK_CACHE` if set, else the git-ignored `data/cache/` of the checkout.

Each entry (and each training checkpoint) carries its own SHA-256: the file is a 40-byte header
(`MAGIC` + the digest of the rest) followed by the usual .npz / torch.save payload. A stored layer's copy of an
entry (`lib.store`) also carries its key: `KEYED_MAGIC` + the digest of the rest, then the 32-byte SHA-256 of
the entry's configuration (`key_digest`, whose first 10 hex digits are the hash in its name), then the payload;
so a file put in another entry's place is found by what it holds, not only by its manifest row. Loading checks the
digest first, so a truncated file or a flipped bit is found before anything is unpickled; the cached_*
lookup (`lib.run.Run`) then logs the file and the reason, deletes it and recomputes (`DamagedCacheEntry`).

This module is the entry format only: the path (`cache_entry`), the checksum header, the atomic write and the
safe load. Which entries a run reads, from the cache or the stored layer, and when it computes, is `lib.run`'s.

Trust: a file at a cache path is read only as data. One without the header (not written by this
workbook, or by a version before checksums) is a damaged entry, never opened further; .npz payloads are
read with `allow_pickle=False`, .pt payloads with `torch.load(weights_only=True)`, which builds nothing
but tensors, containers, NumPy arrays and scalars (`NUMPY_GLOBALS`) and the classes a caller names in
`allow` (e.g. its model classes), so a pickle with a code payload is refused (a damaged entry) rather
than run, even under a forged header. The checksum is not a signature: it finds damage, not forgery.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import logging
import os
import pickle
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from lib.params import path_inside
from lib.paths import cache_dir, regular_file, sha256_from

MAGIC = b"WBCACHE1"  # 8 bytes, then the 32-byte SHA-256 of everything after the header
KEYED_MAGIC = b"WBKEYED1"  # a stored layer's file: as MAGIC, and the rest starts with the 32-byte key digest
HEADER_SIZE = len(MAGIC) + 32
KEY_SIZE = 32
log = logging.getLogger(__name__)

# What torch's weights_only unpickler needs for NumPy arrays and scalars of these dtypes (bool, integers,
# floats, complex, str, bytes; no object arrays): the reconstruct functions, which allocate an array or
# scalar from raw bytes and run no code of their own, and the dtype classes.
NUMPY_GLOBALS: tuple = (np._core.multiarray._reconstruct, np._core.multiarray.scalar, np.ndarray, np.dtype,
                        *sorted({type(np.dtype(code)) for code in "?bBhHiIlLqQefdgFDGUS"}, key=str))
_SAFE_GLOBALS_LOCK = threading.Lock()  # torch's allow-list is process-wide: one load at a time changes it


class DamagedCacheEntry(ValueError):
    """A cache entry or checkpoint without the header, failing its checksum, unreadable or holding more
    than data; names the file."""

    def __init__(self, path: Path, reason: str, stat: os.stat_result | None = None):
        self.path, self.reason, self.stat = Path(path), reason, stat
        super().__init__(f"damaged cache entry {path}: {reason}")


class CacheNotWritable(OSError):
    """The cache directory refuses a write or a delete (permissions, a read-only file system); names the folder."""

    def __init__(self, folder: Path, reason: str):
        self.folder = Path(folder)
        super().__init__(f"the cache directory {folder} is not writable ({reason}); make it writable, or point "
                         "WORKBOOK_CACHE at a writable folder.")


NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)


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


def canonical(config: Any) -> Any:
    """`config` in the canonical JSON types a cache key is hashed from (dataclasses as dicts, arrays by SHA-256 and
    shape): what a training checkpoint records of its run (`lib.train.train_epochs`)."""
    return _jsonable(config)


def key_digest(config: Any) -> bytes:
    """SHA-256 (32 bytes) of the canonical JSON of `config` (dicts, dataclasses, lists, arrays by content)."""
    text = json.dumps(_jsonable(config), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).digest()


def config_hash(config: Any, length: int = 10) -> str:
    """The first `length` hex digits of `key_digest(config)`: the hash in a cache entry's name."""
    return key_digest(config).hex()[:length]


class Entry(NamedTuple):
    """A cache entry's file and the configuration its name hashes (canonical JSON types): a stored layer's
    manifest records it, and a stored file is read only for the configuration it was computed for."""

    path: Path
    config: Any


def cache_entry(namespace: str, label: str, config: Any, suffix: str) -> Entry:
    """The entry <cache_dir>/<namespace>/<label>-<hash(config)><suffix> with its configuration. A label (often
    made of parameter values) with a '/' or a namespace that leads outside the cache root is refused, naming it:
    a damaged entry is deleted, so an entry's path must never land outside the cache."""
    if "/" in label or os.sep in label:
        raise ValueError(f"cache label {label!r} holds a path separator; a label names one file of its namespace")
    folder = path_inside(cache_dir(), namespace, name="cache namespace")
    return Entry(path_inside(folder, f"{label}-{config_hash(config)}{suffix}", name="cache label"), _jsonable(config))


def cache_path(namespace: str, label: str, config: Any, suffix: str) -> Path:
    """The file of `cache_entry(namespace, label, config, suffix)` (for checkpoints and entries no layer keeps)."""
    return cache_entry(namespace, label, config, suffix).path


class WriteFailed(OSError):
    """Writing a file failed part-way (a full disk, a file-size limit): names the file; nothing was left there."""

    def __init__(self, path: Path, err: BaseException):
        self.path = Path(path)
        cause = f"{type(err).__name__}: {err}"
        super().__init__(getattr(err, "errno", None) or errno.EIO,
                         f"{path} could not be written ({cause}); the disk may be full or a file-size limit "
                         f"(`ulimit -f`) reached. Nothing was left at {path}.")


def atomic_write(path: Path, write: Callable[[Path], None]) -> Path:
    """Call `write(tmp_path)` on a temporary file beside `path`, then rename it to `path`. A write that fails
    part-way (OSError, or the RuntimeError torch.save's writer raises: "unexpected pos") raises WriteFailed,
    naming `path`; a folder that refuses writes keeps its OSError (EACCES, EROFS: the callers name the folder)."""
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
    except (OSError, RuntimeError) as err:
        if isinstance(err, OSError) and err.errno in NOT_WRITABLE:
            raise
        raise WriteFailed(path, err) from err
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def _checked_writer(dump: Callable[[Any], None], key: bytes | None = None) -> Callable[[Path], None]:
    """The `atomic_write` writer of MAGIC + SHA-256 + payload (or, with `key`, KEYED_MAGIC + SHA-256 + key +
    payload): `dump(fh)` writes the payload after a placeholder header; the digest is filled in, the file synced."""
    def write(tmp: Path) -> None:
        with open(tmp, "w+b") as fh:
            fh.write(bytes(HEADER_SIZE) + (key or b""))
            dump(fh)
            fh.flush()
            digest = sha256_from(fh, HEADER_SIZE)
            fh.seek(0)
            fh.write((MAGIC if key is None else KEYED_MAGIC) + digest)
            fh.flush()
            os.fsync(fh.fileno())

    return write


def _write_checked(path: Path, dump: Callable[[Any], None]) -> Path:
    """Atomically write MAGIC + SHA-256 + payload to `path` (`_checked_writer`), then rename it into place."""
    try:
        return atomic_write(path, _checked_writer(dump))
    except OSError as err:
        if err.errno in NOT_WRITABLE:
            raise CacheNotWritable(Path(path).parent, f"{Path(path).name} cannot be written: {err.strerror}") from err
        raise


def _open_verified(path: Path) -> tuple[Any, bytes | None, os.stat_result]:
    """Open `path`, check its header and digest; return (open file positioned at the payload, the key digest a
    keyed file carries or None, its stat). Raises DamagedCacheEntry for a missing header, a bad digest or a
    truncated header, NotARegularFile for a directory or FIFO at `path`."""
    regular_file(path)
    fh = open(path, "rb")
    try:
        info = os.fstat(fh.fileno())
        head = fh.read(HEADER_SIZE)
        keyed = head[: len(MAGIC)] == KEYED_MAGIC
        if head[: len(MAGIC)] in (MAGIC, KEYED_MAGIC):
            size = HEADER_SIZE + KEY_SIZE * keyed
            if info.st_size < size or sha256_from(fh, HEADER_SIZE) != head[len(MAGIC) :]:
                raise DamagedCacheEntry(path, f"checksum mismatch ({info.st_size} bytes; truncated or altered)", info)
        elif MAGIC.startswith(head[: len(MAGIC)]) or KEYED_MAGIC.startswith(head[: len(MAGIC)]):  # cut short
            raise DamagedCacheEntry(path, f"truncated to {info.st_size} bytes", info)
        else:  # not written by this workbook (or before checksums): never unpickled
            raise DamagedCacheEntry(path, f"no checksum header ({info.st_size} bytes): not an entry this workbook "
                                          "wrote, so it is not read", info)
        fh.seek(HEADER_SIZE)
        key = fh.read(KEY_SIZE) if keyed else None
        return fh, key, info
    except BaseException:
        fh.close()
        raise


def load_npz(path: Path) -> dict:
    """The arrays of a cache entry written by `atomic_savez`, checksum verified.

    Raises DamagedCacheEntry (naming the file) on a checksum mismatch or any load error."""
    fh, _, info = _open_verified(path)
    with fh:
        try:
            with np.load(fh, allow_pickle=False) as npz:  # zipfile skips the header (data before the archive)
                return {k: npz[k] for k in npz.files}
        except Exception as err:  # BadZipFile, ValueError (an object array), ... behind a valid header
            raise DamagedCacheEntry(path, f"{type(err).__name__}: {err}", info) from err


def load_torch(path: Path, *, allow: Sequence[type | Callable] = ()) -> Any:
    """The object of a cache entry or checkpoint written by `atomic_torch_save`, checksum verified, then
    loaded with `torch.load(weights_only=True)`: tensors, containers, NumPy arrays and scalars, and the
    classes in `allow` (the caller's model classes; each may be built with any state the file holds, so
    name only classes whose construction runs no code of consequence).

    Raises DamagedCacheEntry (naming the file) on a missing header, a checksum mismatch or any load error,
    including content outside that list (the unpickler's refusal)."""
    fh, _, info = _open_verified(path)
    with fh:
        try:
            payload = io.BytesIO(fh.read())
            with _SAFE_GLOBALS_LOCK:  # add to torch's allow-list only what is not on it, and only for this load
                extra = [g for g in (*NUMPY_GLOBALS, *allow) if g not in torch.serialization.get_safe_globals()]
                with torch.serialization.safe_globals(extra):
                    return torch.load(payload, weights_only=True)
        except Exception as err:  # PytorchStreamReader errors, EOFError, UnpicklingError, ...
            raise DamagedCacheEntry(path, _load_error(err), info) from err


def _load_error(err: Exception) -> str:
    """The reason a payload did not load: for the weights_only unpickler's refusal, its one-line cause
    (e.g. "Unsupported global: GLOBAL posix.system ...") without torch's advice to load unrestricted."""
    text = str(err)
    if isinstance(err, pickle.UnpicklingError) and text.startswith("Weights only load failed"):
        text = text.split("Check the documentation of torch.load", 1)[0].strip()
        marker = "WeightsUnpickler error:"
        cause = text.rsplit(marker, 1)[1] if marker in text else text.rsplit("\n\n", 1)[-1]
        return f"it holds more than data, so it is not loaded ({cause.strip().split('. Please use')[0]})"
    return f"{type(err).__name__}: {text}"


def discard_damaged(err: DamagedCacheEntry) -> None:
    """Log a damaged entry (a WARNING of logger lib.cache: stderr unless logging is configured) and
    delete it, unless another process has meanwhile renamed a new entry into its place. A cache directory
    that refuses the delete raises CacheNotWritable, before anything is recomputed."""
    log.warning("%s; deleting it and recomputing", err)
    try:
        now = os.stat(err.path)
        if err.stat is None or (now.st_dev, now.st_ino) == (err.stat.st_dev, err.stat.st_ino):
            err.path.unlink()
    except FileNotFoundError:
        pass
    except OSError as denied:
        if denied.errno not in NOT_WRITABLE:
            raise
        raise CacheNotWritable(err.path.parent, f"the damaged entry {err.path.name} cannot be deleted: "
                                                f"{denied.strerror}") from denied


def atomic_torch_save(obj: Any, path: Path) -> Path:
    """torch.save `obj` to `path` atomically, with the checksum header (`load_torch` reads it)."""
    return _write_checked(path, lambda fh: torch.save(obj, fh))


def atomic_savez(path: Path, arrays: Mapping[str, np.ndarray]) -> Path:
    """np.savez `arrays` to `path` atomically, with the checksum header (`load_npz` reads it)."""
    return _write_checked(path, lambda fh: np.savez(fh, **arrays))


def file_key(path: Path) -> bytes | None:
    """The key digest in the header of the keyed file `path` (a stored layer's), or None for a file without one.
    Reads the header only: loading the file checks the digest that covers the key."""
    regular_file(path)
    with open(path, "rb") as fh:
        head = fh.read(HEADER_SIZE + KEY_SIZE)
    return head[HEADER_SIZE:] if head[: len(MAGIC)] == KEYED_MAGIC and len(head) == HEADER_SIZE + KEY_SIZE else None


def rekeyed_copy(src: Path, dst: Path, old: bytes, new: bytes) -> Path:
    """Copy the keyed entry `src`, which must carry the key digest `old` (checksum verified), atomically to `dst`
    with the key digest `new`; the payload is copied byte for byte (`lib.store.rekey_entry`)."""
    if len(new) != KEY_SIZE:
        raise ValueError(f"a key digest has {KEY_SIZE} bytes, not {len(new)}")
    fh, carried, info = _open_verified(src)
    with fh:
        if carried != old:
            raise DamagedCacheEntry(src, "it does not carry the key of the configuration recorded for it", info)
        return atomic_write(dst, _checked_writer(lambda out: shutil.copyfileobj(fh, out), new))


def keyed_copy(src: Path, dst: Path, key: bytes) -> Path:
    """Copy the entry `src` (checksum verified) atomically to `dst` with `key` (the `key_digest` of its
    configuration) in its header; the payload is copied byte for byte. A `src` that carries another key raises
    DamagedCacheEntry, naming it."""
    if len(key) != KEY_SIZE:
        raise ValueError(f"a key digest has {KEY_SIZE} bytes, not {len(key)}")
    fh, carried, info = _open_verified(src)
    with fh:
        if carried is not None and carried != key:
            raise DamagedCacheEntry(src, "it carries the key of another configuration than the one recorded", info)
        return atomic_write(dst, _checked_writer(lambda out: shutil.copyfileobj(fh, out), key))


# ------------------------------------------------------------------------------------------------------------
# The code an entry was computed with (`lib.lineage`), beside it
# ------------------------------------------------------------------------------------------------------------
LINEAGE_DIR = ".lineage"  # <namespace>/.lineage/<entry file name>.json: a dot folder, never taken for an entry


def lineage_path(path: Path) -> Path:
    """Where the record of the code a cache entry was computed with is kept (`lib.lineage.record`)."""
    return Path(path).parent / LINEAGE_DIR / (Path(path).name + ".json")


def write_lineage(path: Path, record: Mapping) -> None:
    """Keep `record` (`lib.lineage.record` of the computation) beside the cache entry `path`, atomically."""
    text = json.dumps(record, sort_keys=True)
    atomic_write(lineage_path(path), lambda tmp: tmp.write_text(text, encoding="utf-8"))


def read_lineage(path: Path) -> dict | None:
    """The record of the code the cache entry `path` was computed with, or None: an entry written before entries
    kept one, or whose record is unreadable (then it is as old as the first: unknown)."""
    try:
        found = json.loads(lineage_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    ok = isinstance(found, dict) and isinstance(found.get("roots"), list) and isinstance(found.get("parts"), dict)
    return found if ok else None
