"""Stored per-member PR curves: a versioned .npz file, so notebook 01 can show a run it did not train.

A GPU run of the `paper` preset (30 members per C, 200k-400k Adam steps each) is out of a laptop's reach,
but its result, one PR curve per member, is small (E ensembles x M members x 202 points). `save_curves`
writes the curves of `run_ensemble` results with what produced them; `load_curves` reads such a file back
and checks it before anything uses it; `stored_results` turns it into the dicts `run_ensemble` returns
(curves, band, summary), so the notebook's tables, bands and tests run on it unchanged. Samples and
training losses are not stored (30 x 10,000 samples per ensemble would not be small), so figures that need
them are skipped when the curves come from a file.

Format (FORMAT, VERSION 1), every array named:
    format ()  str        "prcurves-member-curves"
    version ()  int       1
    complexity (E,) int   C of each ensemble
    n_train (E,) int      its training-set size
    num_steps (E,) int    Adam steps per member
    precision (E, M, L) float64 in [0, 1]   member curves (L = num_angles + 2 points)
    recall (E, M, L) float64 in [0, 1]
    lambdas (L,) float64  the slopes the curves were read at
    num_dropped (E, M) int  non-finite samples dropped before evaluation
    meta ()  str          JSON: preset, command, commit, device, timing, config (free-form)

The command runs a preset's ensembles (main and Fig. 4's small-data ones) and stores their member curves:
    python -m lib.prcurves.stored --preset paper --complexities 2 4 --out results/01/curves-paper.npz
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lib.cache import atomic_write
from lib.cli import command_line, command_parser
from lib.prcurves import method as prcurves

if TYPE_CHECKING:  # named in annotations only (the experiment module is imported where it is used)
    from lib.prcurves.experiment import EnsemblePRConfig

FORMAT = "prcurves-member-curves"
VERSION = 1
KEYS = ("format", "version", "complexity", "n_train", "num_steps", "precision", "recall", "lambdas",
        "num_dropped", "meta")


def save_curves(path: Path | str, results: Sequence[dict], meta: dict[str, Any]) -> Path:
    """Write the member curves of `results` (from `experiment.run_ensemble`, same M and L) to `path`."""
    if not results:
        raise ValueError("save_curves needs at least one ensemble result.")
    arrays = {
        "format": np.array(FORMAT), "version": np.array(VERSION),
        "complexity": np.array([r["complexity"] for r in results], dtype=np.int64),
        "n_train": np.array([r["n_train"] for r in results], dtype=np.int64),
        "num_steps": np.array([r["num_steps"] for r in results], dtype=np.int64),
        "precision": np.array([[c["precision"] for c in r["curves"]] for r in results], dtype=np.float64),
        "recall": np.array([[c["recall"] for c in r["curves"]] for r in results], dtype=np.float64),
        "lambdas": np.asarray(results[0]["curves"][0]["lambdas"], dtype=np.float64),
        "num_dropped": np.array([r["num_dropped"] for r in results], dtype=np.int64),
        "meta": np.array(json.dumps(meta, default=str)),
    }
    _check(arrays, Path(path))
    def write(tmp: Path) -> None:  # a plain .npz (np.load reads it anywhere), not a checksummed cache entry
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)

    return atomic_write(Path(path), write)


def check_curves_path(path: Path | str) -> Path:
    """CURVES_FILE checked before it is opened: an existing regular .npz file (a FIFO would block the read) whose
    real path (links resolved) lies in the results root (`results/`, where `--out` puts it) or the data root
    (`$WORKBOOK_DATA`); a ValueError names the parameter and what is wrong. Any other file (/etc/passwd) is not
    read: a notebook parameter reads only the workbook's own files."""
    from lib.data.files import data_root
    from lib.paths import NotARegularFile, regular_file, results_root

    path = Path(path)
    where = f"CURVES_FILE={str(path)!r}"
    if path.suffix != ".npz":
        raise ValueError(f"{where} is not a .npz file (a file written by `python -m lib.prcurves.stored --out`).")
    if not path.exists():
        raise ValueError(f"{where}: no such file.")
    roots = (results_root(), data_root())
    if not any(path.resolve().is_relative_to(root.resolve()) for root in roots):
        raise ValueError(f"{where} lies outside the folders a notebook reads files from ({path.resolve()}); copy "
                         f"it into {roots[0]} (e.g. results/01/) or the data root {roots[1]}.")
    try:
        regular_file(path)
    except NotARegularFile as err:
        raise ValueError(f"{where}: {err.reason}.") from None
    return path


def load_curves(path: Path | str) -> dict:
    """Read and check a file written by `save_curves` (its path checked first: `check_curves_path`); raise
    ValueError naming the file and what is wrong."""
    path = check_curves_path(path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (OSError, ValueError) as err:
        raise ValueError(f"CURVES_FILE={str(path)!r} is not a readable .npz file ({err}).") from err
    _check(arrays, path)
    out = {k: arrays[k] for k in KEYS}
    out["meta"] = json.loads(str(arrays["meta"]))
    return out


def _check(arrays: dict, path: Path) -> None:
    where = f"CURVES_FILE={str(path)!r}"
    missing = [k for k in KEYS if k not in arrays]
    if missing:
        raise ValueError(f"{where} lacks {missing}; is it a file written by lib.prcurves.stored.save_curves?")
    if arrays["format"].shape != () or str(arrays["format"]) != FORMAT:
        raise ValueError(f"{where} has format {arrays['format'].tolist()!r}, expected {FORMAT!r}.")
    if arrays["version"].shape != () or int(arrays["version"]) != VERSION:
        raise ValueError(f"{where} is version {arrays['version'].tolist()!r}; this code reads version {VERSION}.")
    prec = arrays["precision"]
    if prec.ndim != 3 or prec.shape[0] < 1 or prec.shape[1] < 1 or prec.shape[2] < 2:
        raise ValueError(f"{where}: precision has shape {prec.shape}, expected (ensembles, members, points).")
    num, members, points = prec.shape
    expected = {"recall": (num, members, points), "lambdas": (points,), "complexity": (num,), "n_train": (num,),
                "num_steps": (num,), "num_dropped": (num, members), "meta": ()}
    for key, shape in expected.items():
        if arrays[key].shape != shape:
            raise ValueError(f"{where}: {key} has shape {arrays[key].shape}, expected {shape} "
                             f"(precision is {prec.shape}).")
    for key in ("precision", "recall"):
        values = arrays[key]
        if not np.issubdtype(values.dtype, np.floating) or not np.isfinite(values).all() \
                or values.min() < 0 or values.max() > 1:
            raise ValueError(f"{where}: {key} must be finite floats in [0, 1].")
    for key in ("complexity", "n_train", "num_steps"):
        if not np.issubdtype(arrays[key].dtype, np.integer) or (arrays[key] < 1).any():
            raise ValueError(f"{where}: {key} must be positive integers, got {arrays[key].tolist()}.")
    keys = list(zip(arrays["complexity"].tolist(), arrays["n_train"].tolist(), arrays["num_steps"].tolist()))
    if len(set(keys)) != len(keys):
        raise ValueError(f"{where}: two ensembles share (complexity, n_train, num_steps): {keys}.")


def stored_results(stored: dict, *, grid_size: int = 1000, band: tuple[float, float] = (10.0, 90.0),
                   dup_recall: str = "replicate") -> list[dict]:
    """One dict per stored ensemble with the keys of `experiment.run_ensemble`'s result that curves
    determine ("complexity", "n_train", "num_steps", "curves", "band", "summary", "num_dropped");
    "samples" and "losses" are None."""
    results = []
    for e, (c, n, steps) in enumerate(zip(stored["complexity"], stored["n_train"], stored["num_steps"])):
        curves = [{"precision": p, "recall": r, "lambdas": stored["lambdas"]}
                  for p, r in zip(stored["precision"][e], stored["recall"][e])]
        results.append({
            "complexity": int(c), "n_train": int(n), "num_steps": int(steps), "curves": curves,
            "band": prcurves.ensemble_band(curves, grid_size, *band, dup_recall=dup_recall),
            "summary": [prcurves.summarise(cv) for cv in curves], "num_dropped": stored["num_dropped"][e],
            "samples": None, "losses": None})
    return results


def notebook_results(stored: dict, config: EnsemblePRConfig) -> tuple[EnsemblePRConfig, dict[int, dict],
                                                                     dict[tuple[int, str], dict]]:
    """(config, results, small) for notebook 01 from a loaded file.

    results: {C: result} of the ensembles on the largest training set; small: {(C, "steps" | "epochs"):
    result} of the others ("steps" when it has the large-set ensemble's number of steps). The config's
    complexities, members, n_train, small_n and small_complexities become the file's (its compare pair is
    kept when the file has both, else the file's largest and smallest C); the rest (band, tests, grid) stays.
    """
    from dataclasses import replace

    from lib.prcurves import experiment as ex

    every = stored_results(stored, grid_size=config.grid_size, band=config.band, dup_recall=config.dup_recall)
    n_main = max(r["n_train"] for r in every)
    results = {r["complexity"]: r for r in every if r["n_train"] == n_main}
    if len(results) < 2:
        raise ValueError(f"CURVES_FILE holds the complexities {sorted(results)} at n = {n_main}; Figure 3 needs two.")
    small = {}
    for r in every:
        if r["n_train"] != n_main:
            main = results.get(r["complexity"])
            small[(r["complexity"], "steps" if main and main["num_steps"] == r["num_steps"] else "epochs")] = r
    complexities = tuple(sorted(results))
    compare = config.compare if set(config.compare) <= set(complexities) else (complexities[-1], complexities[0])
    small_ns = sorted({r["n_train"] for r in small.values()})
    config = replace(config, complexities=complexities, compare=compare, n_train=n_main,
                     num_generated=min(config.num_generated, n_main), k=None,
                     num_members=int(stored["precision"].shape[1]),
                     small_complexities=tuple(sorted({c for c, _ in small if c in results})),
                     small_n=small_ns[0] if small_ns else config.small_n)
    ex.validate(config)
    return config, results, {k: v for k, v in small.items() if k[0] in results}


def main(argv: list[str] | None = None) -> int:
    """The command (module docstring): run a preset's ensembles and store their member curves."""
    import time

    from lib.device import describe, pick_device
    from lib.prcurves import experiment as ex
    from lib.provenance import git_commit
    from lib.run import Run

    parser = command_parser("lib.prcurves.stored", __doc__)
    parser.add_argument("--preset", default="paper", choices=sorted(ex.PRESETS))
    parser.add_argument("--complexities", type=int, nargs="+", default=None)
    parser.add_argument("--members", type=int, default=None)
    parser.add_argument("--no-small", action="store_true", help="skip Fig. 4's small-training-set ensembles")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    compare = tuple(args.complexities[-2:][::-1]) if args.complexities and len(args.complexities) >= 2 else None
    small = () if args.no_small else None
    config = ex.resolve_config(args.preset, complexities=args.complexities, num_members=args.members,
                               compare=compare, small_complexities=small)
    device = pick_device(args.device, name="--device")
    run = Run(device=device, progress=True)  # the cache alone (WORKBOOK_CACHE), progress bars as before
    start = time.perf_counter()
    data = ex.ring_data(config)
    results = [ex.run_ensemble(config, complexity=c, data=data, num_steps=ex.training_steps(config, c), run=run)
               for c in config.complexities]
    small_data = ex.ring_data(config, n_train=config.small_n) if config.small_complexities else None
    for c in config.small_complexities:
        for match in ("steps", "epochs"):
            steps = ex.training_steps(config, c, config.small_n, match)
            if not any(r["complexity"] == c and r["n_train"] == len(small_data["train"]) and r["num_steps"] == steps
                       for r in results):
                results.append(ex.run_ensemble(config, complexity=c, data=small_data, num_steps=steps, run=run))
    meta = {"preset": config.preset, "command": command_line("lib.prcurves.stored", argv),
            "commit": git_commit(mark_dirty=True), "device": describe(device),
            "seconds": round(time.perf_counter() - start, 1), "num_generated": config.num_generated,
            "train": config.train}
    save_curves(args.out, results, meta)
    print(f"wrote {args.out}: {len(results)} ensembles, {meta['seconds']} s on {meta['device']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
