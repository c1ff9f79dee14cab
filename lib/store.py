"""Stored results: a committed, read-only layer of the cache, so the default run reads what takes hours.

    python -m lib.store notebooks/01_ensemble_pr_curves.ipynb [--preset cpu] [--reuse-cache] [-p NAME VALUE]
    make store NB=01 [PRESET=cpu]

The cache (`lib.cache`) names each expensive result by what it depends on plus a hash of its whole
configuration (`<namespace>/<label>-<hash>.<ext>`). Some of those entries are the slow, compact outputs a
notebook's figures and tables are made from (01's generated samples and member curves, 02's fitted models and
table rows, 03's heads and whole-network predictions, 04's features and retrievals): their call sites pass
`stored=True`. This module keeps copies of those entries, byte for byte, in `results/<namespace>/<preset>/`
beside a `manifest.json` that says which command and commit produced them, on what machine, in how much
wall and CPU time, and each entry's configuration (its cache key) and SHA-256.

Reading (`SOURCE="stored"`, the notebooks' default): an entry missing from the cache is looked up in the
stored layer of the notebook's preset (`use`) before it is computed. The file name is the key, so a stored
entry is used only for exactly the configuration it was computed for; when the layer holds the same label
under another hash, the configuration or the code (each key carries a version) changed since the layer was
written: the notebook says so in one line, computes the entry and names the command that refreshes the layer.
A stored file whose SHA-256 differs from its manifest's, or that does not load, is refused with a message
naming it, and the entry is computed. `SOURCE="compute"` ignores the layer.

Writing (`main`): runs the notebook from scratch with papermill (`SOURCE="compute"`, an empty temporary
cache unless `--reuse-cache`), records every `stored=True` entry the run computed or read, and replaces the
layer `results/<namespace>/<preset>/` with copies of exactly those entries and the manifest. The layer is
small by construction (model weights are not stored; 01's samples are, not its networks), and every refresh
stays in git's history, so keep it so (`results/` under 40 MB).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lib.cache import PROJECT_ROOT, DamagedCacheEntry, _sha256_from, cache_dir, known_config
from lib.cli import command_line, command_parser

SOURCES = ("stored", "compute")
MANIFEST = "manifest.json"
RECORD_ENV = "WORKBOOK_STORE_RECORD"  # set by `main`: the file the notebook's kernel lists its stored entries in
NAME = re.compile(r"^(?P<label>.+)-(?P<key>[0-9a-f]{10})(?P<suffix>\.[a-z]+)$")

_active: dict[str, Any] = {"source": "compute", "namespace": None, "preset": None}
_counts: dict[str, int] = {"loaded": 0, "computed": 0, "stale": 0, "refused": 0}
_told: set[str] = set()


def results_root() -> Path:
    """$WORKBOOK_RESULTS if set (tests point it at a temporary folder), else the checkout's results/."""
    return Path(os.environ.get("WORKBOOK_RESULTS") or PROJECT_ROOT / "results")


def layer_dir(namespace: str, preset: str) -> Path:
    """results/<namespace>/<preset>/: the stored layer of one notebook and preset."""
    return results_root() / namespace / preset


def use(source: str, namespace: str, preset: str) -> str:
    """Make `source` ("stored" or "compute") the way this process finds the entries of notebook `namespace`
    (e.g. "01") under `preset`; returns one line for the notebook to print. Called by each notebook's
    configuration cell; the parameter is named SOURCE there."""
    if source not in SOURCES:
        raise ValueError(f"SOURCE={source!r} is not one of {SOURCES}: 'stored' reads the committed results of the "
                         "long stages where their configuration matches, 'compute' recomputes them.")
    _active.update(source=source, namespace=namespace, preset=preset)
    _counts.update(dict.fromkeys(_counts, 0))
    _told.clear()
    layer = layer_dir(namespace, preset)
    if source == "compute":
        return f"SOURCE='compute': the long stages are computed (or read from the cache {cache_dir()})."
    manifest = read_manifest(layer)
    if manifest is None:
        return f"SOURCE='stored': there is no stored layer for PRESET={preset!r} ({_shown(layer)}): computing."
    return (f"SOURCE='stored': results of the long stages are read from {_shown(layer)} where their configuration "
            f"matches ({len(manifest['entries'])} stored, commit {manifest['commit'][:10]}, "
            f"{manifest['date']}); SOURCE='compute' recomputes them.")


def _shown(path: Path) -> str:
    """`path` relative to the checkout when inside it (what a reader can find), else as it is."""
    try:
        return str(Path(path).resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def read_manifest(layer: Path) -> dict | None:
    """The layer's manifest, or None when the layer has none."""
    path = Path(layer) / MANIFEST
    if not path.exists():
        return None
    return json.loads(path.read_text())


def _manifest_entries(namespace: str) -> dict[str, dict]:
    """{file name: manifest entry} of the active layer (read each time: the layer may change under a run)."""
    if _active["source"] != "stored" or _active["namespace"] != namespace:
        return {}
    manifest = read_manifest(layer_dir(namespace, _active["preset"]))
    return {} if manifest is None else manifest["entries"]


def sha256_file(path: Path) -> str:
    """The SHA-256 of the whole file (the manifest's check; the cache's own header covers only the payload)."""
    with open(path, "rb") as fh:
        return _sha256_from(fh, 0).hex()


def namespace_of(path: Path) -> tuple[str, str] | None:
    """(namespace, file name) of a cache path, or None for a path outside the cache root."""
    try:
        parts = Path(path).relative_to(cache_dir()).parts
    except ValueError:
        return None
    return ("/".join(parts[:-1]), parts[-1]) if len(parts) >= 2 else None


def load_stored(path: Path, load: Callable[[Path], Any]) -> tuple[bool, Any]:
    """(True, value) when the active stored layer holds the cache entry `path` intact, loaded with `load`;
    else (False, None), after one line to the reader when the layer's entry is stale or damaged."""
    located = namespace_of(path)
    if located is None:
        return False, None
    namespace, name = located
    entries = _manifest_entries(namespace)
    if not entries:
        return False, None
    stored = layer_dir(namespace, _active["preset"]) / name
    if name not in entries:
        _tell_if_stale(namespace, name, entries)
        return False, None
    reason = None
    if not stored.exists():
        reason = "listed in the manifest but missing"
    elif sha256_file(stored) != entries[name]["sha256"]:
        reason = f"its SHA-256 differs from the manifest's ({stored.stat().st_size} bytes; damaged or replaced)"
    else:
        try:
            value = load(stored)
        except DamagedCacheEntry as err:
            reason = err.reason
    if reason is not None:
        _counts["refused"] += 1
        print(f"stored result {_shown(stored)} refused: {reason}; computing it instead "
              f"({refresh_command(namespace)} rewrites the layer).")
        return False, None
    _counts["loaded"] += 1
    return True, value


def _tell_if_stale(namespace: str, name: str, entries: dict) -> None:
    """One line, once per run, when the layer holds this label under another key."""
    match = NAME.match(name)
    if match is None:
        return
    label, suffix = match["label"], match["suffix"]
    others = [n for n in entries if (m := NAME.match(n)) and m["label"] == label and m["suffix"] == suffix]
    if not others:
        return
    _counts["stale"] += 1
    if namespace not in _told:
        _told.add(namespace)
        print(f"stored result {label} (and any later ones) of {_shown(layer_dir(namespace, _active['preset']))} is "
              f"stale: its configuration or the code changed since the layer was written, so it is computed; "
              f"{refresh_command(namespace)} refreshes the layer.")


def refresh_command(namespace: str) -> str:
    preset = _active["preset"] or "cpu"
    return f"`make store NB={namespace} PRESET={preset}`"


def note_computed(path: Path, seconds: float) -> None:
    """Count an entry computed in this run and, under `main`, record it for the layer."""
    _counts["computed"] += 1
    record(path, seconds)


def record(path: Path, seconds: float | None = None) -> None:
    """Under `main` (RECORD_ENV set), append the cache entry `path` to the list of entries the layer keeps."""
    target = os.environ.get(RECORD_ENV)
    if not target:
        return
    line = {"path": str(path), "config": known_config(path), "compute_seconds": seconds}
    with open(target, "a") as fh:
        fh.write(json.dumps(line, default=str) + "\n")


def summary() -> str:
    """One line on where this run's stored-layer entries came from (printed at a notebook's end)."""
    if _active["source"] != "stored":
        return "SOURCE='compute': nothing was read from a stored layer."
    c = _counts
    return (f"stored layer {_shown(layer_dir(_active['namespace'], _active['preset']))}: {c['loaded']} results read, "
            f"{c['computed']} computed" + (f", {c['stale']} stale" if c["stale"] else "")
            + (f", {c['refused']} refused" if c["refused"] else "") + ".")


# ------------------------------------------------------------------------------------------------------------
# Writing a layer
# ------------------------------------------------------------------------------------------------------------
def write_layer(namespace: str, preset: str, records: list[dict], provenance: dict) -> Path:
    """Replace results/<namespace>/<preset>/ with copies of the recorded cache entries and their manifest."""
    entries, sources = _layer_entries(namespace, records)
    target = layer_dir(namespace, preset)
    previous = (read_manifest(target) or {}).get("entries", {})
    for name, entry in entries.items():  # an entry stored again unchanged keeps what was recorded about its making
        before = previous.get(name, {})
        if before.get("sha256") == entry["sha256"]:
            entry.update({k: v for k, v in before.items() if k not in entry or entry[k] is None})
    manifest = {**provenance, "namespace": namespace, "preset": preset,
                "total_bytes": sum(e["bytes"] for e in entries.values()), "entries": dict(sorted(entries.items()))}
    _replace_layer(target, sources, manifest)
    return target


def _layer_entries(namespace: str, records: list[dict]) -> tuple[dict[str, dict], dict[str, Path]]:
    """({file name: its manifest entry (config, bytes, sha256, compute_seconds)}, {file name: its cache file}) of
    the recorded entries, each checked to be a file of the cache namespace `namespace`; an entry recorded twice
    keeps the config and compute time its first record gave where the second gives none."""
    entries: dict[str, dict] = {}
    sources: dict[str, Path] = {}
    for rec in records:
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
        entries[name] = {"config": rec.get("config") or previous.get("config"), "bytes": path.stat().st_size,
                         "sha256": sha256_file(path),
                         "compute_seconds": rec.get("compute_seconds") or previous.get("compute_seconds")}
    return entries, sources


def _replace_layer(target: Path, sources: dict[str, Path], manifest: dict) -> None:
    """Fill a folder staged beside `target` (so the final rename stays on one disk) with copies of `sources`
    ({file name: file}), target's README.md and the manifest, then put it in target's place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        for name, src in sources.items():
            shutil.copyfile(src, staging / name)
        if (target / "README.md").exists():  # the layer's own notes (how its entries were made) stay
            shutil.copyfile(target / "README.md", staging / "README.md")
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        os.chmod(staging, 0o755)  # mkdtemp's 0700 would be committed as is
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging)


def annotate(layer: Path, previous_scratch: dict, origins: dict[str, dict], seconds: dict[str, float],
             what: str, unit: str = "of one core") -> dict:
    """After a layer is rewritten from a reused cache that holds entries made outside the notebook (networks
    trained by a command, a study converted from its first file): give each named entry its `origin` (command,
    commit, machine, ...) and `compute_seconds`, and set the manifest's `from_scratch` to `previous_scratch` (the
    from-scratch record of the layer before; `read_manifest(...)["from_scratch"]`) plus those seconds, `what`
    saying what they were and `unit` what their seconds are of (a GPU's, say). Returns the manifest written."""
    manifest = read_manifest(layer)
    unknown = set(origins) - set(manifest["entries"])
    if unknown:
        raise ValueError(f"{_shown(layer)} holds no entries {sorted(unknown)}")
    for name, origin in origins.items():
        manifest["entries"][name].update({"origin": origin, "compute_seconds": round(seconds[name], 1)})
    extra = sum(seconds[name] for name in origins)
    manifest["from_scratch"] = {**previous_scratch, "wall_seconds": round(previous_scratch["wall_seconds"] + extra, 1),
                                "what": f"{previous_scratch.get('what', 'the run from scratch')}; plus {what} "
                                        f"({extra / 60:.0f} min {unit}; each entry's origin)"}
    (layer / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def scratch_run_info(executed: Path) -> dict:
    """Wall time, date and parameters papermill recorded in the executed notebook of a from-scratch run."""
    meta = json.loads(Path(executed).read_text(encoding="utf-8")).get("metadata", {}).get("papermill", {})
    if meta.get("duration") is None:
        raise ValueError(f"--scratch-run {executed}: not a notebook executed by papermill (no duration recorded)")
    return {"executed_notebook": Path(executed).name, "wall_seconds": round(meta["duration"], 1),
            "date": (meta.get("end_time") or "")[:16].replace("T", " ") + " UTC", "parameters": meta.get("parameters")}


def read_records(path: Path) -> list[dict]:
    if not Path(path).exists():
        return []
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def _parser() -> argparse.ArgumentParser:
    """The options of `python -m lib.store` (module docstring)."""
    parser = command_parser("lib.store", __doc__)
    parser.add_argument("notebook", type=Path, help="e.g. notebooks/01_ensemble_pr_curves.ipynb")
    parser.add_argument("--preset", default="cpu", help="the preset whose layer is written (default cpu)")
    parser.add_argument("--reuse-cache", action="store_true",
                        help=f"read entries already in the cache ({cache_dir()}) instead of computing everything "
                             "in an empty one; the manifest says so")
    parser.add_argument("--scratch-run", type=Path, default=None,
                        help="with --reuse-cache: the executed notebook of the from-scratch run that filled the cache; "
                             "the manifest records its wall time and date as the cost of the stored entries")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "runs" / "store",
                        help="folder for the executed notebook of the run")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                        help="another notebook parameter, as papermill's -p (the layer is then not the preset's)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """The command (module docstring): run the notebook from scratch and write its stored layer."""
    from papermill.cli import _resolve_type

    parser = _parser()
    args = parser.parse_args(argv)
    if not args.notebook.exists():
        parser.error(f"notebook {args.notebook} does not exist")
    parameters = {"PRESET": args.preset, "SOURCE": "compute", "EXPLORER": False,
                  **{name: _resolve_type(value) for name, value in args.parameter}}
    target = _store_run(args, parameters, command_line("lib.store", argv))
    manifest = read_manifest(target)
    print(f"{_shown(target)}: {len(manifest['entries'])} entries, {manifest['total_bytes'] / 1e6:.1f} MB, "
          f"run {manifest['wall_seconds'] / 60:.1f} min wall, {manifest['cpu_seconds'] / 60:.1f} min CPU")
    return 0


def _store_run(args: argparse.Namespace, parameters: dict, command: str) -> Path:
    """Run the notebook with `parameters`, in an empty temporary cache unless --reuse-cache, recording its stored
    entries, and write its layer with the run's provenance; returns the layer's folder."""
    from lib.device import cpu_model
    from lib.provenance import git_commit
    from lib.report import temporary_environ

    commit = git_commit(mark_dirty=True)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="workbook-store-") as tmp:
        env = {RECORD_ENV: str(Path(tmp) / "records.jsonl")}
        if not args.reuse_cache:
            env["WORKBOOK_CACHE"] = str(Path(tmp) / "cache")
        with temporary_environ(env):  # the layer is written from this cache
            executed, seconds = _execute_timed(args.notebook, args.out, parameters)
            provenance = {
                "command": command, "commit": commit, "machine": cpu_model(),
                "threads": os.environ.get("OMP_NUM_THREADS", "default"),
                "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), **seconds,
                "cache": f"reused ({cache_dir()})" if args.reuse_cache else "empty (computed from scratch)",
                "parameters": parameters, "executed_notebook": _shown(executed)}
            if args.scratch_run is not None:
                provenance["from_scratch"] = scratch_run_info(args.scratch_run)
            return write_layer(args.notebook.name[:2], args.preset, read_records(Path(env[RECORD_ENV])), provenance)


def _execute_timed(notebook: Path, out: Path, parameters: dict) -> tuple[Path, dict]:
    """The notebook run by papermill into `out`: (the executed copy, {"wall_seconds", "cpu_seconds"} of the run,
    the CPU time its kernel took)."""
    from lib.report import execute

    start, cpu0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    executed = execute(notebook, out / notebook.name, parameters)
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return executed, {"wall_seconds": round(time.perf_counter() - start, 1),
                      "cpu_seconds": round(cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime, 1)}


if __name__ == "__main__":
    raise SystemExit(main())
