"""Notebook 03's whole networks outside the notebook: train them into the cache, and the one-off conversion of
the files they were first stored in into notebook 03's stored layer.

    python -m lib.regret.store_whole [--preset cpu] [--variant ours] [--methods ...] [--seed 0] [--n-train N]
                                     [--widths 16 32 32] [--epochs 10] [--batch-size 256] [--label-smoothing 0]
                                     [--device auto] [--threads 1] [--data-source jpeg]
    python -m lib.regret.store_whole --convert results/03/whole results/03/whole-recipe

Training: runs `lib.regret.experiment.whole_predictions` for the preset's configuration (and the recipe
overrides given), which trains the networks (cached one by one, checkpointed per epoch: an interrupted run
resumes) and caches each method's predictions under the key notebook 03 looks up. The networks and predictions
are cached per method, so two processes can train disjoint `--methods` at once (one core each on a 2-core CPU);
`python -m lib.store notebooks/03_epistemic_regret_cifar10h.ipynb --preset cpu --reuse-cache` then runs the
notebook, reads them from the cache and writes them into the stored layer results/03/cpu/. The keys hold the
thread count when it is not 1 (`lib.device.threads_key`): train with the notebook's NUM_THREADS (1).

Conversion (`convert`, `--convert`): the eight networks of each variant were trained once (34 and 33 min of one
core, 2026-12-01) and their predictions stored as one `<method>.npz` per method in results/03/whole/ (ours) and
results/03/whole-recipe/ (the airbench recipe unchanged), before the stored layer existed. The conversion checks
that each file is what the `cpu` preset computes (recipe, network version, seed, data source, sizes), writes its
arrays unchanged as the cache entry `whole_predictions` looks up (the same key: `whole_prediction_entry`), with the
file's metadata and the conversion's provenance, and writes the layer results/03/cpu/ from those entries
(`lib.store.write_layer`; it replaces the folder) with the original commands, commits, machine and times in its
manifest. No network is trained. results/03/cpu/README.md tells the story of those runs. The layer written,
the two folders were removed from the checkout; `git show 0f091fb:results/03/whole/ddu.npz` recovers a file.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from lib.cli import command_line, command_parser
from lib.data.cifar10 import SOURCES
from lib.device import one_thread, pick_device, set_threads
from lib.regret import experiment as ex
from lib.regret import whole as wh
from lib.regret.stages import CACHE_NAMESPACE
from lib.run import Run

LEGACY_VERSION = 1  # the version field of the files in results/03/whole*/


def _parser() -> argparse.ArgumentParser:
    """The command's options (module docstring)."""
    parser = command_parser("lib.regret.store_whole", __doc__)
    parser.add_argument("--preset", choices=sorted(ex.PRESETS), default="cpu",
                        help="the notebook preset whose whole networks are trained (cpu: widths 16 32 32, batch 256)")
    parser.add_argument("--variant", choices=ex.WHOLE_VARIANTS, default="ours",
                        help="ours (plain CE, unscaled evidential logits) or recipe (airbench unchanged)")
    parser.add_argument("--widths", type=int, nargs=3, default=None, help="conv-group widths (recipe: 64 256 256)")
    parser.add_argument("--epochs", type=int, default=None, help="epochs per network (recipe: 10)")
    parser.add_argument("--batch-size", type=int, default=None, help="training batch (recipe: 1024)")
    parser.add_argument("--label-smoothing", type=float, default=None,
                        help="label smoothing of the CE networks of variant ours (default 0; airbench: 0.2)")
    parser.add_argument("--methods", nargs="+", choices=ex.uq.METHODS, default=None,
                        help="train only these methods (default: all four)")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed of the networks (ensemble members: seed ... seed + M - 1), default 0")
    parser.add_argument("--n-train", type=int, default=None, help="training images (default: all 50,000)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads; the cache keys hold a count other than 1 (the notebook's NUM_THREADS)")
    parser.add_argument("--data-source", choices=SOURCES, default="jpeg",
                        help="CIFAR-10 copy: jpeg (cifar10/cifar10-jpeg.zip) or python (the lossless archive)")
    parser.add_argument("--convert", type=Path, nargs=2, metavar=("OURS_DIR", "RECIPE_DIR"), default=None,
                        help="write the stored layer of --preset from the pre-layer folders results/03/whole and "
                             "results/03/whole-recipe instead of training (no other option applies)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """The command (module docstring): train the preset's whole networks into the cache, or `--convert`."""
    args = _parser().parse_args(argv)
    command = command_line("lib.regret.store_whole", argv)
    set_threads(args.threads)
    if args.convert is not None:
        config = ex.resolve_config(args.preset)
        layer = convert(dict(zip(ex.WHOLE_VARIANTS, args.convert)), config, ex.cifar_data(config), command=command)
        print(f"wrote {layer} ({len(json.loads((layer / 'manifest.json').read_text())['entries'])} entries)")
        return 0
    _train(args, command, Run(device=pick_device(args.device, name="--device"), progress=True))
    return 0


def _train(args: argparse.Namespace, command: str, run: Run) -> None:
    """Train (or find in the cache) the whole networks the options ask for with `run` (compute: the cache, else
    train), and print what each method got."""
    whole = {"widths": tuple(args.widths) if args.widths else None, "epochs": args.epochs,
             "batch_size": args.batch_size, "label_smoothing": args.label_smoothing}
    config = ex.resolve_config(args.preset, whole=whole, n_train=args.n_train, data_source=args.data_source,
                               methods=args.methods, seed=args.seed, whole_source="train")
    start = time.perf_counter()
    cifar = ex.cifar_data(config)
    preds = ex.whole_predictions(config, cifar, run, variant=args.variant)
    for method, p in preds.items():
        print(f"{method}: test accuracy {p['meta']['test_accuracy']:.4f}, {len(p['meta']['train_seconds'])} "
              f"network(s), {sum(p['meta']['train_seconds']) / 60:.1f} min of training; cached as {p['path']}")
    print(f"{command}: {(time.perf_counter() - start) / 60:.1f} min")


def _check_legacy(path: Path, meta: dict, config: ex.RegretConfig, variant: str, method: str, cifar: dict) -> None:
    """Refuse (ValueError naming the file) a pre-layer file that is not what `config` computes for `variant`."""
    settings, versions = ex.whole_variant(config, variant)
    expected = {"version": LEGACY_VERSION, "method": method, "network_version": versions[method],
                "settings": wh.describe_settings(settings), "seed": config.seed, "data_source": config.data_source,
                "n_train": len(cifar["train_labels"]), "n_test": len(cifar["test_images"]), "n_ood": config.n_ood}
    found = {**meta, "network_version": meta.get("network_version", 1)}  # written before versions: 1
    wrong = {k: (found.get(k), v) for k, v in expected.items() if found.get(k) != v}
    if wrong:
        raise ValueError(f"{path} is not what PRESET={config.preset!r} computes for the variant {variant!r}: "
                         + "; ".join(f"{k} {got!r}, expected {want!r}" for k, (got, want) in wrong.items()))


@one_thread()  # the files' networks were trained at one thread: their keys hold no thread count
def convert(folders: dict[str, Path], config: ex.RegretConfig, cifar: dict, *, command: str) -> Path:
    """Write the pre-layer predictions in `folders` ({variant: folder of <method>.npz}) as the cache entries
    `whole_predictions(config, cifar, variant=...)` looks up, then the stored layer results/03/<preset>/ from
    them (replacing it); returns the layer's folder. Each file is checked first (`_check_legacy`), and its arrays
    are kept as they are. Nothing is trained: the key is computed from the images, not from the networks."""
    from lib import store
    from lib.provenance import git_commit

    start = time.perf_counter()
    inputs = ex.whole_inputs(config, cifar)
    made = {"command": command, "commit": git_commit(mark_dirty=True)}
    records, origins = [], {}
    for variant, folder in folders.items():
        for method in config.methods:
            record, origin = _convert_file(Path(folder), variant, method, config, cifar, inputs, made)
            records.append(record)
            origins[Path(record["path"]).name] = origin
    provenance = _conversion_provenance(config, made, origins, wall_seconds=time.perf_counter() - start)
    layer = store.write_layer(CACHE_NAMESPACE, config.preset, records, provenance)
    manifest = store.read_manifest(layer)  # each entry's origin beside its key (kept when stored again unchanged)
    for name, origin in origins.items():
        manifest["entries"][name]["origin"] = origin
    (layer / store.MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return layer


def _convert_file(folder: Path, variant: str, method: str, config: ex.RegretConfig, cifar: dict, inputs: dict,
                  made: dict) -> tuple[dict, dict]:
    """One pre-layer file, folder/<method>.npz, checked and written as its cache entry (arrays unchanged, the
    metadata told of the conversion, `made`: its command and commit); returns (the layer's record of the entry,
    the file's origin: where, when and how its networks were trained)."""
    from lib.cache import atomic_savez

    path = folder / f"{method}.npz"
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(str(arrays["meta"]))
    _check_legacy(path, meta, config, variant, method, cifar)
    if set(k[4:] for k in arrays if k.startswith("ood_")) != {"id", *config.ood_sets}:
        raise ValueError(f"{path}: its OOD sets are not 'id' and OOD_SETS {config.ood_sets}")
    origin = {k: meta[k] for k in ("command", "commit", "device", "host", "date", "train_seconds",
                                   "wall_seconds_all_methods") if k in meta}
    meta = {**meta, "variant": variant, "network_version": meta.get("network_version", 1),
            "converted": {"from": f"results/03/{folder.name}/{method}.npz", **made}}
    target = ex.whole_prediction_entry(config, method, inputs, variant)
    atomic_savez(target.path, {**arrays, "meta": np.array(json.dumps(meta, default=str))})
    wh.from_arrays({**arrays, "meta": np.array(json.dumps(meta))}, str(target.path))  # the format reads back
    record = {"path": str(target.path), "config": target.config,
              "compute_seconds": round(sum(meta["train_seconds"]), 1)}
    return record, {"file": meta["converted"]["from"], **origin}


def _conversion_provenance(config: ex.RegretConfig, made: dict, origins: dict[str, dict], *,
                           wall_seconds: float) -> dict:
    """The layer manifest's provenance of a conversion: its own command, commit and time, and (as the cost of the
    entries) the training of the files' networks, summed from their `origins`."""
    from lib.device import cpu_model

    trained = sum(sum(o["train_seconds"]) for o in origins.values())
    networks = sum(len(o["train_seconds"]) for o in origins.values())
    return {
        **made, "machine": cpu_model(), "threads": "1", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "wall_seconds": round(wall_seconds, 1), "cpu_seconds": None,
        "cache": "converted from the pre-layer files of results/03/whole and results/03/whole-recipe: no network "
                 f"trained here; their {networks} networks took {trained / 60:.1f} min of one core to train (each "
                 "entry's compute_seconds and origin)",
        "from_scratch": {"wall_seconds": round(trained, 1), "date": max(o["date"] for o in origins.values()),
                         "parameters": {"PRESET": config.preset},
                         "what": f"the training of the {networks} networks, summed (one core each)"},
        "parameters": {"PRESET": config.preset}, "readme": f"results/03/{config.preset}/README.md"}


if __name__ == "__main__":
    raise SystemExit(main())
