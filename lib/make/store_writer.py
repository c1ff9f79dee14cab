"""The writer of the stored layers (`lib.store`): run a notebook from scratch and keep its stored entries.

    python -m lib.make.store_writer notebooks/01_ensemble_pr_curves.ipynb [--preset cpu] [--reuse-cache] [-p NAME VALUE]
    make store NB=01 [PRESET=cpu]

Runs the notebook with papermill (`SOURCE="compute"`, an empty temporary cache unless `--reuse-cache`), records
every `stored=True` entry the run computed or read (`lib.store.RECORD_ENV`), and replaces the layer
`results/<namespace>/<preset>/` with copies of exactly those entries and a manifest of the run's provenance
(`lib.store.write_layer`). It is apart from `lib.store`, which notebooks import to read the layers, because it
runs notebooks (`lib.make.report`) and records the commit (`lib.provenance`), which read the layers themselves.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from lib.cli import command_line, command_parser
from lib.paths import PROJECT_ROOT, cache_dir
from lib.store import (
    PRESET_MODULES,
    RECORD_ENV,
    read_manifest,
    read_records,
    scratch_run_info,
    shown,
    write_layer,
)


def _parser() -> argparse.ArgumentParser:
    """The options of `python -m lib.store` (module docstring)."""
    parser = command_parser("lib.make.store_writer", __doc__)
    parser.add_argument("notebook", type=Path, help="e.g. notebooks/01_ensemble_pr_curves.ipynb")
    parser.add_argument("--preset", default="cpu", help="the preset whose layer is written (default cpu; one of the "
                                                        "notebook's PRESETS)")
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
    overrides = {name: _resolve_type(value) for name, value in args.parameter}
    problem = _store_problem(args.notebook, args.preset, overrides) or _scratch_run_problem(args)
    if problem:
        parser.error(problem)
    parameters = {"PRESET": args.preset, "SOURCE": "compute", "EXPLORER": False, **overrides}
    target = _store_run(args, parameters, command_line("lib.make.store_writer", argv))
    manifest = read_manifest(target)
    print(f"{shown(target)}: {len(manifest['entries'])} entries, {manifest['total_bytes'] / 1e6:.1f} MB, "
          f"run {manifest['wall_seconds'] / 60:.1f} min wall, {manifest['cpu_seconds'] / 60:.1f} min CPU")
    return 0


def _store_problem(notebook: Path, preset: str, overrides: dict) -> str | None:
    """Why `python -m lib.store notebook --preset preset -p ...` cannot write a layer, before anything runs: a
    notebook missing, not an .ipynb or without a layer namespace, a parameter it lacks, a preset outside its
    PRESETS (`../..` would name a folder outside results/), a PRESET or SOURCE parameter that contradicts the
    command; else None."""
    from lib.make.report import arguments_problem, preset_problem

    if notebook.is_file() and notebook.name[:2] not in PRESET_MODULES:
        return f"notebook {notebook} has no stored layer (notebooks {', '.join(PRESET_MODULES)} have one)"
    problem = arguments_problem(notebook, overrides) or preset_problem(notebook, preset, "--preset")
    if problem:
        return problem
    if "PRESET" in overrides and overrides["PRESET"] != preset:
        return f"-p PRESET {overrides['PRESET']!r} contradicts --preset {preset!r}: give the preset with --preset alone"
    if overrides.get("SOURCE", "compute") != "compute":
        return (f"-p SOURCE {overrides['SOURCE']!r}: a layer is written from a run that computes its entries "
                "(SOURCE='compute', the command's own setting; --reuse-cache reads the cache instead)")
    return None


def _scratch_run_problem(args: argparse.Namespace) -> str | None:
    """Why --out and --scratch-run cannot be used as given (checked before the run), or None."""
    from lib.make.report import folder_problem

    if problem := folder_problem(args.out, "--out"):
        return problem
    if args.scratch_run is None:
        return None
    if not args.reuse_cache:
        return ("--scratch-run is the executed notebook of the run that filled the cache: give it with "
                "--reuse-cache (without it, this run computes from scratch and its own time is recorded)")
    if not args.scratch_run.is_file():
        return f"--scratch-run {args.scratch_run} does not exist (or is not a file)"
    try:
        scratch_run_info(args.scratch_run)
    except (ValueError, KeyError, TypeError, RecursionError) as err:
        return f"--scratch-run {args.scratch_run} is not a complete executed notebook: {err}"
    return None


def _store_run(args: argparse.Namespace, parameters: dict, command: str) -> Path:
    """Run the notebook with `parameters`, in an empty temporary cache unless --reuse-cache, recording its stored
    entries, and write its layer with the run's provenance; returns the layer's folder. When a step fails after
    the run started, the temporary cache it computed is kept, and stderr says where and how to reuse it."""
    from lib.device import cpu_model
    from lib.make.report import temporary_environ
    from lib.provenance import git_commit

    commit = git_commit(mark_dirty=True)
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="workbook-store-"))
    env = {RECORD_ENV: str(tmp / "records.jsonl")}
    if not args.reuse_cache:
        env["WORKBOOK_CACHE"] = str(tmp / "cache")
    try:
        with temporary_environ(env):  # the layer is written from this cache
            executed, seconds = _execute_timed(args.notebook, args.out, parameters)
            provenance = {
                "command": command, "commit": commit, "machine": cpu_model(),
                "threads": os.environ.get("OMP_NUM_THREADS", "default"),
                "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), **seconds,
                "cache": f"reused ({cache_dir()})" if args.reuse_cache else "empty (computed from scratch)",
                "parameters": parameters, "executed_notebook": shown(executed)}
            if args.scratch_run is not None:
                provenance["from_scratch"] = scratch_run_info(args.scratch_run)
            layer = write_layer(args.notebook.name[:2], args.preset, read_records(Path(env[RECORD_ENV])), provenance)
    except BaseException:
        if "WORKBOOK_CACHE" in env and Path(env["WORKBOOK_CACHE"]).exists():
            print(f"the run's cache is kept in {env['WORKBOOK_CACHE']} (what it computed): `WORKBOOK_CACHE="
                  f"{env['WORKBOOK_CACHE']} python -m lib.make.store_writer {args.notebook} --preset {args.preset} "
                  "--reuse-cache` writes the layer from it without computing again; delete the folder when done.",
                  file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(tmp, ignore_errors=True)
    return layer


def _execute_timed(notebook: Path, out: Path, parameters: dict) -> tuple[Path, dict]:
    """The notebook run by papermill into `out`: (the executed copy, {"wall_seconds", "cpu_seconds"} of the run,
    the CPU time its kernel took)."""
    from lib.make.report import execute

    start, cpu0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    executed = execute(notebook, out / notebook.name, parameters)
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return executed, {"wall_seconds": round(time.perf_counter() - start, 1),
                      "cpu_seconds": round(cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime, 1)}


if __name__ == "__main__":
    raise SystemExit(main())
