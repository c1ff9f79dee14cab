"""Stored results: a committed, read-only layer of the cache, so the default run reads what takes hours.

    make store NB=01 [PRESET=cpu]        # python -m lib.make.store_writer (the writer, apart from this layer)

The cache (`lib.cache`) names each expensive result by what it depends on plus a hash of its whole
configuration (`<namespace>/<label>-<hash>.<ext>`). Some of those entries are the slow, compact outputs a
notebook's figures and tables are made from (01's generated samples and member curves, 02's fitted models and
table rows, 03's heads and whole-network predictions, 04's features and retrievals): their call sites pass
`stored=True`. This module keeps copies of those entries in `results/<namespace>/<preset>/`, each the entry's
payload byte for byte under a header that also holds the digest of its key (`lib.cache.keyed_copy`), beside a
`manifest.json` that says which command and commit produced them, on what machine, in how much wall and CPU time,
and each entry's configuration (its cache key) and SHA-256.

Reading (`SOURCE="stored"`, the notebooks' default): an entry missing from the cache is looked up in the
stored layer of the notebook's preset before it is computed; the run (`lib.run.Run`) owns that order, and this
module reads a layer (`lookup`). The file name is the key, so a stored entry is used only for exactly the
configuration it was computed for; when the layer holds the same label under another hash, the configuration or
the code (each key carries a version) changed since the layer was written: the notebook says so in one line,
computes the entry and names the command that refreshes the layer. A stored file whose own key is not the one
asked for (another entry's bytes put in its place, whatever its manifest row says), whose SHA-256 differs from its
manifest's, or that does not load, is refused with a message naming it, and the entry is computed. Layers written
before the files carried their key are keyed by `key_layer` (the committed ones were).
`SOURCE="compute"` ignores the layer. The module holds no state: a layer is read from its manifest each time.

Writing (`lib.make.store_writer`, `make store`; `write_layer` here): runs the notebook from scratch with papermill
(`SOURCE="compute"`, an empty temporary cache unless `--reuse-cache`), records every `stored=True` entry the run
computed or read, and replaces the layer `results/<namespace>/<preset>/` with copies of exactly those entries and
the manifest. The layer is small by construction (model weights are not stored; 01's samples are, not its
networks), and every refresh stays in git's history, so keep it so (`results/` under 65 MiB: raised from 55 for the
trained generators' weights at other seeds, `results/04/seeds/`, about 1 MB an arm and seed in float16, nine at
width 16; 40.3 MiB with notebook 02's label-to-image entries, 2026-12-04, raised from 45 when notebook 01 stored the
paper's M = 30 members, about 12 MiB more; notebook 03's whole networks are 30 MB of it).

Keys: the policy for changing one
---------------------------------
A stored entry is found by its key alone (`<label>-<hash of the key>`), so a change to a key decides whether the
committed layers still serve the default run. The rules, which the comments at each key in `lib` refer to as
"key policy (lib.store)":

1. *The value changes* (the code computes differently, or reads other inputs): no run may be served an old value.
   A change of the code is found without a key change: each entry records the code it was computed with
   (`lib.lineage`; the manifest's "code" and "code_parts"), a run computes an entry whose code changed since, and
   tests/test_lineage.py fails while a committed one has (`make status` names them; refresh the layer, or record a
   change verified not to move the values with `python -m lib.make.status accept NN --why ...`). Other inputs, and
   a change the code's text does not show (a data file, a dependency's version), still need the key to change:
   bump the stage's version field (`"v"`, `..._VERSION`, now a migration salt) with a one-line comment
   "vN: what changed" beside it. The committed entries then no longer hit: a stored run names them stale and
   computes them. Refresh the layer (`make store NB=NN PRESET=...`) in the same change, or name in its commit
   message the layers left stale and why; the old files stay in git's history.
2. *The value does not change*, the key should not either, so that every committed entry still hits:
   - a new setting whose old behaviour is one of its values enters the key only when it takes another value
     (its default adds nothing: `lib.regret.experiment.source_keyed`, `lib.device.threads_key`, a restart's
     `init_seed`, a table run's `lgm_attempt`);
   - a setting that does not change a value stays out of the key (`lib.crel.experiment._NOT_IN_TABLE_KEY`);
   - an output that is retired is dropped when the entry is read, and what it depended on stays in the key
     (`lib.crel.experiment._RETIRED_COLUMNS`), rather than re-keying the entries that hold it;
   - refactoring (a function renamed or moved, a key built elsewhere) keeps the key's fields and their values;
     the tests that rebuild a committed layer's keys from the preset (tests/test_regret_whole.py and the
     notebooks' round trips of their stored layers) fail otherwise.
3. *Migrating* an entry whose value is unchanged but whose key had to change (a class it pickles moved, a field
   renamed): load the committed file, save the same value at the new cache path, then rewrite the layer from
   that cache (`make store NB=NN PRESET=... REUSE_CACHE=1`, which computes nothing the cache holds). The
   manifest keeps an entry's recorded origin and compute time only under a name it already held, so write the
   old name, its commit and its compute time into the layer's README.md, and say in the commit message which
   entries were migrated. A test reads the migrated entries from the committed layer without computing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from lib import lineage
from lib.cache import DamagedCacheEntry, atomic_write, config_hash, file_key, key_digest, keyed_copy
from lib.params import check_name, path_inside
from lib.paths import PACKAGES, PROJECT_ROOT, NotARegularFile, cache_dir, regular_file, results_root, sha256_file

SOURCES = ("stored", "compute")
MANIFEST = "manifest.json"
RECORD_ENV = "WORKBOOK_STORE_RECORD"  # set by lib.make.store_writer: the file the kernel lists its stored entries in
NAME = re.compile(r"^(?P<label>.+)-(?P<key>[0-9a-f]{10})(?P<suffix>\.[a-z]+)$")
# the module whose PRESETS the notebook of each namespace resolves its PRESET from (the writer checks --preset there)
PRESET_MODULES = {number: f"{package}.experiment" for number, package in PACKAGES.items()}


def layer_dir(namespace: str, preset: str) -> Path:
    """results/<namespace>/<preset>/: the stored layer of one notebook and preset; a namespace or preset that
    that is not a plain name (`../..`, `.`) or leads outside the results root is refused, naming it."""
    return path_inside(results_root(), check_name("namespace", namespace), check_name("PRESET", preset),
                       name="namespace/PRESET")


def shown(path: Path) -> str:
    """`path` relative to the checkout when inside it (what a reader can find), else as it is."""
    try:
        return str(Path(path).resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


class DamagedManifest(ValueError):
    """A layer's manifest.json that is not JSON or not of the manifest's form (a merge conflict, a hand edit)."""

    def __init__(self, path: Path, reason: str):
        self.path = Path(path)
        super().__init__(f"{shown(path)} is not a valid stored-layer manifest: {reason}. Restore it "
                         f"(`git checkout -- {shown(path)}`) or rewrite its layer (`make store NB=...`).")


def read_manifest(layer: Path) -> dict | None:
    """The layer's manifest, checked to have the manifest's form (`check_manifest`), or None when the layer has
    none. A manifest that is not JSON or not of that form raises DamagedManifest, naming the file."""
    path = Path(layer) / MANIFEST
    if not path.exists():
        return None
    try:
        regular_file(path)
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError, OSError, RecursionError) as err:  # RecursionError: nested too deep
        raise DamagedManifest(path, f"{type(err).__name__}: {err}") from None
    problem = manifest_problem(manifest)
    if problem:
        raise DamagedManifest(path, problem)
    return manifest


_SHA256 = re.compile(r"[0-9a-f]{64}\Z")


def write_manifest(layer: Path, manifest: dict) -> None:
    """Write the layer's manifest.json atomically (one entry per line group, as the committed ones)."""
    atomic_write(Path(layer) / MANIFEST, lambda tmp: tmp.write_text(json.dumps(manifest, indent=1) + "\n"))


def manifest_problem(manifest: Any) -> str | None:
    """What keeps `manifest` from being a layer's manifest ({"commit": str, "date": str, "entries": {file name:
    {"sha256": 64 hex digits, "bytes": int >= 0, "config": ...}}}), or None."""
    if not isinstance(manifest, dict):
        return f"it holds a {type(manifest).__name__}, not an object"
    for key in ("commit", "date"):
        if not isinstance(manifest.get(key), str):
            return f"its {key!r} is {manifest.get(key)!r}, not a string"
    entries = manifest.get("entries")
    if not isinstance(entries, dict):
        return f"its 'entries' is {type(entries).__name__}, not an object of file name: entry"
    for name, entry in entries.items():
        if not NAME.match(name) or "/" in name:
            return f"entry name {name!r} is not a cache file name (<label>-<10 hex digits>.<ext>)"
        if not isinstance(entry, dict):
            return f"entry {name!r} is a {type(entry).__name__}, not an object"
        if not isinstance(entry.get("sha256"), str) or not _SHA256.match(entry["sha256"]):
            return f"entry {name!r} has no valid 'sha256' (64 hex digits): {entry.get('sha256')!r}"
        if isinstance(entry.get("bytes"), bool) or not isinstance(entry.get("bytes"), int) or entry["bytes"] < 0:
            return f"entry {name!r} has no valid 'bytes' (an integer >= 0): {entry.get('bytes')!r}"
        if "config" not in entry:
            return f"entry {name!r} records no 'config'"
    return None


def namespace_of(path: Path) -> tuple[str, str] | None:
    """(namespace, file name) of a cache path, or None for a path outside the cache root."""
    try:
        parts = Path(path).relative_to(cache_dir()).parts
    except ValueError:
        return None
    return ("/".join(parts[:-1]), parts[-1]) if len(parts) >= 2 else None


class Found(NamedTuple):
    """What a layer holds for one cache entry: `status` "loaded" (with its `value`), "absent" (no such entry, nor
    its label under another key), "stale" (its label under another key: the configuration or a hand version of
    the code changed since the layer was written), "code changed" (the entry, computed with code that has changed
    since: `moved`, as `lib.lineage.compare` gives it) or "refused" (listed, but missing, damaged or recorded for
    another configuration: `reason`)."""

    status: str
    layer: Path
    label: str = ""
    value: Any = None
    reason: str | None = None
    moved: dict | None = None


def lookup(layer: Path, name: str, asked: Any, load: Callable[[Path], Any]) -> Found:
    """The layer's entry `name` (a cache file name), loaded with `load` when it is intact, recorded for the
    configuration `asked` (the key the run hashed into the name) and computed with code unchanged since (its
    manifest entry's "code", `lib.lineage.changes`; an entry without one is taken as it is: `make status` and a
    test name those). The manifest is read each time: the layer may change under a run."""
    manifest = read_manifest(layer)
    entries = {} if manifest is None else manifest["entries"]
    match = NAME.match(name)
    label = match["label"] if match else name
    if name not in entries:
        stale = match is not None and any((m := NAME.match(n)) and (m["label"], m["suffix"]) == (label, match["suffix"])
                                          for n in entries)
        return Found("stale" if stale else "absent", layer, label)
    kept = entry_code(manifest, name)
    if kept is not None:
        moved = lineage.changes(kept)
        if moved:
            return Found("code changed", layer, label, moved=moved)
    reason, value = _stored_value(layer / name, entries[name], load, asked)
    if reason is not None:
        return Found("refused", layer, label, reason=reason)
    return Found("loaded", layer, label, value)


def layer_entry(layer: Path, name: str, asked: Any, load: Callable[[Path], Any]) -> tuple[str | None, Any]:
    """(None, the value) of the layer's entry `name` when it is listed and intact, whatever code it was computed
    with (`make verify` compares it with a fresh computation); else (why not, None)."""
    manifest = read_manifest(layer)
    if manifest is None or name not in manifest["entries"]:
        return f"not listed in {shown(layer / MANIFEST)}", None
    return _stored_value(layer / name, manifest["entries"][name], load, asked)


def _stored_value(stored: Path, entry: dict, load: Callable[[Path], Any], asked: Any) -> tuple[str | None, Any]:
    """(None, the value) of the layer's file `stored` when it is a regular file, carries the key `asked` (the key
    the run hashed into the file name) in its own header, matches its manifest `entry` (SHA-256 and recorded
    configuration) and loads; else (why it is refused, None)."""
    if not stored.exists():
        return "listed in the manifest but missing", None
    if entry["config"] is None or _canonical(entry["config"]) != _canonical(asked):
        return ("the configuration its manifest records differs from the one this run asks for (the file holds "
                "another entry, or its manifest was edited)"), None
    try:
        carried = file_key(stored)
        if carried is None:
            return "it carries no key in its header (not a stored layer's file: the layer must be rewritten)", None
        if carried != key_digest(asked):
            return ("the key inside it is not this entry's (the file holds another entry's content, whatever its "
                    "manifest row says)"), None
        if sha256_file(stored) != entry["sha256"]:
            return f"its SHA-256 differs from the manifest's ({stored.stat().st_size} bytes; damaged or replaced)", None
        return None, load(stored)
    except (DamagedCacheEntry, NotARegularFile) as err:
        return err.reason, None


def _canonical(config: Any) -> str:
    """A configuration as the manifest's JSON holds it (tuples as lists, ...), for comparison."""
    return json.dumps(config, default=str, sort_keys=True)


CODE_TABLE = "code_parts"  # the manifest's table of part digests and sets of parts its entries' "code" name


def entry_code(manifest: dict, name: str) -> dict | None:
    """The record of the code the layer's entry `name` was computed with (`lib.lineage.record`), or None when its
    manifest holds none (a layer written before entries recorded their code)."""
    return lineage.unpack(manifest["entries"].get(name, {}).get("code"), manifest.get(CODE_TABLE, {}))


def set_codes(manifest: dict, codes: dict[str, dict | None]) -> None:
    """Give the manifest's entries the records `codes` (name -> `lib.lineage.record` or None), packed: one table
    of part digests and sets of parts (CODE_TABLE) and, per entry, its roots and its set (`lib.lineage.pack`)."""
    kept = {name: rec for name, rec in codes.items() if rec is not None and lineage.valid(rec)}
    packed, table = lineage.pack(kept)
    for name, entry in manifest["entries"].items():
        entry.pop("code", None)
        if name in packed:
            entry["code"] = packed[name]
    manifest[CODE_TABLE] = table


# ------------------------------------------------------------------------------------------------------------
# Writing a layer
# ------------------------------------------------------------------------------------------------------------
def write_layer(namespace: str, preset: str, records: list[dict], provenance: dict) -> Path:
    """Replace results/<namespace>/<preset>/ with copies of the recorded cache entries, each with its key in its
    header (`lib.cache.keyed_copy`), and their manifest. `namespace` and `preset` must be plain names
    (`layer_dir`); a run that recorded no entry writes nothing and raises ValueError, and a write that fails part-way
    (a full disk, `ulimit -f`) raises LayerNotWritten naming the file: either way the layer stays as it is."""
    target = layer_dir(namespace, preset)
    entries, sources = _layer_entries(namespace, records)
    if not entries:
        raise ValueError(f"the run recorded no stored entry of notebook {namespace}, so {shown(target)} is left as "
                         "it is: a layer is written from a run that computes (or reads from the cache) its long "
                         "stages with SOURCE='compute'.")
    before = read_manifest(target) or {"entries": {}}
    previous = before["entries"]
    codes = {name: entry.pop("code", None) for name, entry in entries.items()}
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        for name, entry in entries.items():
            _store_entry(sources[name], staging / name, entry, previous.get(name, {}))
            if codes[name] is None and previous.get(name, {}).get("sha256") == entry["sha256"]:
                codes[name] = entry_code(before, name)  # stored again unchanged: the code it was computed with
            entry.pop("code", None)
        manifest = {**provenance, "namespace": namespace, "preset": preset,
                    "total_bytes": sum(e["bytes"] for e in entries.values()), "entries": dict(sorted(entries.items()))}
        set_codes(manifest, codes)
        _replace_layer(target, staging, manifest)
    except OSError as err:
        raise LayerNotWritten(target, err) from err
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return target


class LayerNotWritten(OSError):
    """Writing a stored layer failed part-way (a full disk, a file-size limit); names the layer and the file."""

    def __init__(self, layer: Path, err: OSError):
        failed = getattr(err, "path", None) or err.filename
        what = f"its file {Path(failed).name}" if failed else "a file"
        reason = os.strerror(err.errno) if err.errno else str(err)
        super().__init__(err.errno, f"the stored layer {shown(layer)} was not written: {what} could not be written "
                                    f"({reason}; a full disk or a file-size limit, `ulimit -f`?); the layer is left "
                                    "as it was and no partial file remains.")


def _store_entry(src: Path, dst: Path, entry: dict, before: dict) -> None:
    """Copy the cache entry `src` to the layer's `dst` with its key, and complete its manifest `entry` (config,
    bytes, sha256 of the copy). A record without a configuration takes the one the layer's manifest held
    (`before`) when it hashes to the file's name; an entry stored again unchanged keeps what was recorded about
    its making."""
    if entry["config"] is None and before.get("config") is not None:
        entry["config"] = before["config"]
    if entry["config"] is None or config_hash(entry["config"]) != NAME.match(dst.name)["key"]:
        raise ValueError(f"recorded entry {src} has no configuration that hashes to its name ({entry['config']!r}): "
                         "a stored file carries its key")
    keyed_copy(src, dst, key_digest(entry["config"]))
    entry.update(bytes=dst.stat().st_size, sha256=sha256_file(dst))
    if before.get("sha256") == entry["sha256"]:
        entry.update({k: v for k, v in before.items() if k not in entry or entry[k] is None})


def _layer_entries(namespace: str, records: list[dict]) -> tuple[dict[str, dict], dict[str, Path]]:
    """({file name: its manifest entry (config, compute_seconds)}, {file name: its cache file}) of the recorded
    entries, each checked to be a file of the cache namespace `namespace`; an entry recorded twice keeps the config
    and compute time its first record gave where the second gives none."""
    entries: dict[str, dict] = {}
    sources: dict[str, Path] = {}
    for rec in records:
        if rec.get("from_layer"):  # read from the layer by a stored run: not an entry this run provides
            continue
        path = Path(rec["path"])
        located = namespace_of(path)
        if located is None or located[0] != namespace:
            raise ValueError(f"recorded entry {path} is not in the cache namespace {namespace!r} of the cache "
                             f"{cache_dir()}")
        name = located[1]
        if not path.exists():
            raise FileNotFoundError(f"recorded entry {path} is missing from the cache: was it deleted during the run?")
        sources[name] = path
        previous = entries.get(name, {})
        config = rec.get("config")
        entries[name] = {"config": previous.get("config") if config is None else config,
                         "compute_seconds": rec.get("compute_seconds") or previous.get("compute_seconds"),
                         "code": rec.get("code") or previous.get("code")}
    return entries, sources


def _replace_layer(target: Path, staging: Path, manifest: dict) -> None:
    """Put the folder `staging` (beside `target`, so the final rename stays on one disk), filled with the layer's
    files, in target's place, with target's README.md and the manifest."""
    if (target / "README.md").exists():  # the layer's own notes (how its entries were made) stay
        shutil.copyfile(target / "README.md", staging / "README.md")
    write_manifest(staging, manifest)
    os.chmod(staging, 0o755)  # mkdtemp's 0700 would be committed as is
    if target.exists():
        shutil.rmtree(target)
    os.replace(staging, target)


def key_layer(layer: Path) -> list[str]:
    """Give the files of a layer written before stored files carried their key the key its manifest
    records for each (`keyed_copy`: the payload byte for byte), and the manifest their new sha256 and bytes;
    returns the names rewritten. A file that does not match its manifest entry (SHA-256, a configuration that
    hashes to its name) raises ValueError, naming it, before that file is touched."""
    manifest = read_manifest(layer)
    rewritten = []
    for name, entry in ({} if manifest is None else manifest["entries"]).items():
        path = Path(layer) / name
        if file_key(path) is not None:
            continue
        if sha256_file(path) != entry["sha256"] or config_hash(entry["config"]) != NAME.match(name)["key"]:
            raise ValueError(f"{shown(path)} does not match its manifest entry: restore it before keying the layer")
        keyed_copy(path, path, key_digest(entry["config"]))
        entry.update(bytes=path.stat().st_size, sha256=sha256_file(path))
        rewritten.append(name)
    if rewritten:
        manifest["total_bytes"] = sum(e["bytes"] for e in manifest["entries"].values())
        write_manifest(layer, manifest)
    return rewritten


def rekey_entry(layer: Path, old_name: str, new_name: str, new_config: Any, why: str) -> Path:
    """Move the stored entry `old_name` of `layer` to `new_name` under `new_config`, for a code change that renamed
    or re-keyed an entry without changing its value (a label that now states the budget a set trained, a salt that
    keeps entries of a fixed bug from being served): the payload byte for byte under a header with the new key, the
    manifest entry moved with its provenance and a "migrated" record (old name, old configuration, why). The old
    file must match its manifest entry and carry its key; `new_config` must hash to `new_name`. Returns the new
    file; the old one is removed."""
    from lib.cache import canonical, rekeyed_copy

    manifest = read_manifest(layer)
    entries = {} if manifest is None else manifest["entries"]
    if old_name not in entries or new_name in entries:
        raise ValueError(f"{shown(Path(layer))}: {old_name!r} must be an entry of the layer and {new_name!r} not one")
    old, new = Path(layer) / old_name, Path(layer) / new_name
    entry = entries.pop(old_name)
    match = NAME.match(new_name)
    if match is None or config_hash(new_config) != match["key"]:
        raise ValueError(f"{new_name!r}: its configuration does not hash to its name")
    if sha256_file(old) != entry["sha256"]:
        raise ValueError(f"{shown(old)} does not match its manifest entry: restore it before moving it")
    rekeyed_copy(old, new, key_digest(entry["config"]), key_digest(new_config))
    entries[new_name] = {**entry, "config": canonical(new_config), "bytes": new.stat().st_size,
                         "sha256": sha256_file(new),
                         "migrated": {"from": old_name, "config": entry["config"], "why": why}}
    manifest["entries"] = dict(sorted(entries.items()))
    manifest["total_bytes"] = sum(e["bytes"] for e in manifest["entries"].values())
    write_manifest(layer, manifest)
    old.unlink()
    return new


def scratch_run_info(executed: Path) -> dict:
    """Wall time, date and parameters papermill recorded in the executed notebook of a from-scratch run."""
    from lib.glue import run_problem

    problem = run_problem(executed)
    if problem:
        raise ValueError(f"--scratch-run: {problem}")
    meta = json.loads(Path(executed).read_text(encoding="utf-8"))["metadata"]["papermill"]
    return {"executed_notebook": Path(executed).name, "wall_seconds": round(meta["duration"], 1),
            "date": (meta.get("end_time") or "")[:16].replace("T", " ") + " UTC", "parameters": meta.get("parameters")}


def read_records(path: Path) -> list[dict]:
    if not Path(path).exists():
        return []
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
