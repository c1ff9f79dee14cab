"""Which stored and cached results were computed with code that has changed since (`lib.lineage`), as `dvc status`.

    make status                                   # python -m lib.make.status: every committed layer, and the cache
    python -m lib.make.status --check             # exit status 1 when a committed entry is stale or unrecorded
    python -m lib.make.status record 04 [--preset cpu]
    python -m lib.make.status accept 04 [--preset cpu] --why "refactor: recomputed the smoke tier, identical"
    python -m lib.make.status stages [04]         # each notebook's declared stages (lib.stages): policy, form, what

Each entry of a stored layer (`results/NN/<preset>/manifest.json`, its "code") and of the cache (`<cache>/NN/
.lineage/`) records the code it was computed with: its roots and the digest of every `lib` function, class and
constant they reach. This command recomputes those digests from today's code and lists, per entry, the parts that
changed, appeared or went, grouped by the declared stage the entries belong to (`lib.stages`). A run
(`lib.run.Run`) never serves such an entry: it computes it again and says so.

- `record`: give a layer written before entries recorded their code the record of the code that reads it today.
  It runs the notebook with SOURCE='stored' in an empty cache (minutes: nothing is recomputed) and takes, for each
  entry the run read from the layer, the code the run would have computed it with. That code is *assumed* to be the
  code that computed the entry (each entry's own provenance says when that was); the manifest says so
  ("lineage"). An entry the run did not read is named and left without a record.
- `accept`: after verifying that a code change does not move a layer's results (recompute the stage, or the smoke
  tier, and compare), record today's code for the layer's stale entries, with the reason, in the manifest's
  "lineage" log. Never accept without such a check: the test over the committed layers
  (tests/test_lineage.py) then passes on the reason's word.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from lib import lineage
from lib.cache import LINEAGE_DIR
from lib.cli import command_line, command_parser
from lib.paths import PROJECT_ROOT, cache_dir, results_root
from lib.store import (
    MANIFEST,
    NAME,
    PRESET_MODULES,
    RECORD_ENV,
    entry_code,
    layer_dir,
    read_manifest,
    read_records,
    set_codes,
    shown,
    write_manifest,
)


def committed_layers() -> list[Path]:
    """Every stored layer under results/ (a folder results/NN/<preset>/ with a manifest)."""
    return sorted(p.parent for p in results_root().glob(f"*/*/{MANIFEST}") if p.parent.parent.name in PRESET_MODULES)


def layer_status(layer: Path) -> dict[str, dict | None]:
    """{entry name: its changes (`lib.lineage.changes`; empty: current), or None when it records no code}."""
    manifest = read_manifest(layer) or {"entries": {}}
    codes = {name: entry_code(manifest, name) for name in manifest["entries"]}
    return {name: (None if code is None else lineage.changes(code)) for name, code in codes.items()}


def cache_status(root: Path | None = None) -> dict[str, dict[str, dict]]:
    """{namespace: {entry name: its changes}} of the cache's entries that record their code (entries from before
    entries recorded it are not listed: their code is unknown)."""
    root = Path(root or cache_dir())
    out: dict[str, dict[str, dict]] = defaultdict(dict)
    for record_file in sorted(root.glob(f"*/{LINEAGE_DIR}/*.json")):
        entry = record_file.parent.parent / record_file.name[:-len(".json")]
        if not entry.exists():
            continue
        try:
            recorded = json.loads(record_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if lineage.valid(recorded):
            out[entry.parent.name][entry.name] = lineage.changes(recorded)
    return dict(out)


def _report(where: str, status: dict[str, dict | None], namespace: str) -> list[str]:
    """Lines on one layer or cache namespace: its counts, then its stale entries grouped by what changed, each
    group led by the declared stages its entries belong to (`lib.stages.stage_of`)."""
    stale = {n: c for n, c in status.items() if c}
    unrecorded = [n for n, c in status.items() if c is None]
    lines = [f"{where}: {len(status)} entries, {len(status) - len(stale) - len(unrecorded)} current, "
             f"{len(stale)} computed with code changed since" + (f", {len(unrecorded)} without a record of their "
                                                                 "code" if unrecorded else "")]
    groups: dict[str, list[str]] = defaultdict(list)
    for name, moved in stale.items():
        groups[lineage.describe(moved, limit=6)].append(name)
    for what, names in sorted(groups.items()):
        shown_names = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        lines.append(f"  {_stages_of(namespace, names)}{shown_names}: {what}")
    if unrecorded:
        lines.append(f"  no record: {', '.join(unrecorded[:3])}" + (f" and {len(unrecorded) - 3} more"
                                                                     if len(unrecorded) > 3 else ""))
    return lines


def _stages(namespaces: list[str]) -> int:
    """Print each notebook's declared stages: pattern, policy, form, what it is (and, on request, which are kept)."""
    from lib.stages import stages_of

    for namespace in namespaces:
        print(f"notebook {namespace}:")
        for stage in sorted(stages_of(namespace).values(), key=lambda s: s.pattern):
            print(f"  {stage.pattern:24s} {stage.policy:10s} {stage.form:5s} {stage.what}"
                  + (f"; kept: {stage.why}" if stage.why else ""))
    return 0


def _stages_of(namespace: str, names: list[str]) -> str:
    """"stage nn-*, toy-*: " for entries of declared stages (nothing for files no stage declares)."""
    from lib.stages import stage_of

    patterns = sorted({s.pattern for s in (stage_of(namespace, _label(n)) for n in names) if s is not None})
    return f"stage {', '.join(patterns)}: " if patterns else ""


def _label(name: str) -> str:
    match = NAME.match(name)
    return match["label"] if match else name


def _parser() -> argparse.ArgumentParser:
    parser = command_parser("lib.make.status", __doc__)
    parser.add_argument("action", nargs="?", default="list", choices=("list", "record", "accept", "stages"))
    parser.add_argument("namespace", nargs="?", help="the notebook of `record`, `accept` and `stages`: 01, 02, 03 "
                                                     "or 04")
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--check", action="store_true", help="list: exit 1 when a committed entry is stale or has "
                                                             "no record of its code")
    parser.add_argument("--no-cache", action="store_true", help="list: the committed layers only")
    parser.add_argument("--why", default=None, help="accept: what verified that the change does not move the results")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "runs" / "status",
                        help="record: folder for the executed notebook")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.action == "list":
        return _list(args)
    if args.action == "stages":  # the declarations: no layer needed
        return _stages([args.namespace] if args.namespace in PRESET_MODULES else list(PRESET_MODULES))
    if args.namespace not in PRESET_MODULES:
        parser.error(f"{args.action} needs the notebook's namespace, one of {', '.join(PRESET_MODULES)}; got "
                     f"{args.namespace!r}")
    layer = layer_dir(args.namespace, args.preset)
    if read_manifest(layer) is None:
        parser.error(f"--preset {args.preset}: {shown(layer)} has no stored layer")
    if args.action == "accept":
        if not args.why or not args.why.strip():
            parser.error("accept needs --why: what verified that the change does not move the layer's results")
        return _accept(layer, args.why.strip(), command_line("lib.make.status", argv))
    return _record_layer(layer, args, command_line("lib.make.status", argv))


def _list(args: argparse.Namespace) -> int:
    bad = 0
    for layer in committed_layers():
        status = layer_status(layer)
        bad += sum(1 for c in status.values() if c is None or c)
        print("\n".join(_report(shown(layer), status, layer.parent.name)))
    if not args.no_cache:
        for namespace, status in cache_status().items():
            print("\n".join(_report(f"cache {shown(cache_dir() / namespace)}", status, namespace)))
    return 1 if args.check and bad else 0


def _log(manifest: dict, event: dict) -> None:
    manifest.setdefault("lineage", []).append(event)


def _accept(layer: Path, why: str, command: str) -> int:
    from lib.provenance import git_commit

    manifest = read_manifest(layer)
    codes = {name: entry_code(manifest, name) for name in manifest["entries"]}
    changed: dict[str, str] = {}
    names = []
    for name, code in codes.items():
        moved = lineage.changes(code) if code is not None else {}
        if moved:
            changed.update(moved)
            names.append(name)
            codes[name] = {"roots": code["roots"], "parts": lineage.parts_of(code["roots"])}
    set_codes(manifest, codes)
    if not names:
        print(f"{shown(layer)}: no entry was computed with code that has changed since; nothing to accept")
        return 0
    _log(manifest, {"event": "accepted", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    "commit": git_commit(mark_dirty=True), "command": command, "entries": len(names),
                    "changed": sorted(changed), "why": why})
    write_manifest(layer, manifest)
    print(f"{shown(layer)}: {len(names)} entries now record today's code ({lineage.describe(changed)}); why: {why}")
    return 0


def _record_layer(layer: Path, args: argparse.Namespace, command: str) -> int:
    """`record` (module docstring): a stored run of the notebook in an empty cache, then the records it made."""
    from lib.make.report import execute, temporary_environ
    from lib.provenance import git_commit

    notebook = next(iter(sorted((PROJECT_ROOT / "notebooks").glob(f"{args.namespace}_*.ipynb"))), None)
    if notebook is None:
        raise SystemExit(f"no notebook notebooks/{args.namespace}_*.ipynb")
    commit = git_commit(mark_dirty=True)
    with tempfile.TemporaryDirectory(prefix="workbook-lineage-") as tmp:
        records_file = Path(tmp) / "records.jsonl"
        with temporary_environ({RECORD_ENV: str(records_file), "WORKBOOK_CACHE": str(Path(tmp) / "cache")}):
            args.out.mkdir(parents=True, exist_ok=True)
            executed = execute(notebook, args.out / notebook.name,
                               {"PRESET": args.preset, "SOURCE": "stored", "EXPLORER": False})
        read = {Path(r["path"]).name: r["code"] for r in read_records(records_file)
                if r.get("from_layer") and lineage.valid(r.get("code"))}
    manifest = read_manifest(layer)
    missing = [name for name in manifest["entries"] if name not in read]
    set_codes(manifest, {name: read.get(name) or entry_code(manifest, name) for name in manifest["entries"]})
    _log(manifest, {"event": "recorded", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    "commit": commit, "command": command, "entries": len(manifest["entries"]) - len(missing),
                    "executed_notebook": shown(executed),
                    "how": "a SOURCE='stored' run in an empty cache read each entry from this layer; the code it "
                           "would have computed the entry with, at this commit, is taken as the code that did "
                           "(assumed, not recomputed: each entry's provenance says when it was computed)"})
    write_manifest(layer, manifest)
    print(f"{shown(layer)}: recorded the code of {len(manifest['entries']) - len(missing)} entries"
          + (f"; not read by the run, left without a record: {', '.join(missing)}" if missing else ""))
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
