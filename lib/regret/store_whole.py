"""Train notebook 03's eight whole networks and store their predictions for readers without the compute.

    python -m lib.regret.store_whole [--preset whole] [--widths 64 256 256] [--epochs 10] [--batch-size 1024]
                                     [--label-smoothing 0] [--methods ...] [--seed 0] [--device auto] [--threads 2]
                                     [--data-source jpeg] [--out results/03/whole]

Runs `lib.regret.experiment.whole_predictions` with the `whole` preset (the airbench recipe) or `whole-cpu`
(its CPU size, the stored run's recipe), and the recipe overrides given,
cached per network and checkpointed per epoch (an interrupted run resumes), then writes one
`<method>.npz` per method (`lib.regret.whole.save_predictions`) with the command, commit, device, data
source and timings in its metadata, and a README.md table of what was stored. Notebook 03 loads them with
WHOLE_SOURCE="stored" (the default), and only with the DATA_SOURCE recorded in them (`--data-source`: "jpeg",
the JPEG copy, or "python", the official lossless archive; the test images differ between the two).

The networks are cached one by one, independently of `--methods`, so two processes can train disjoint
`--methods` at once (one core each on a 2-core CPU) and a last run with every method loads them all and
stores the predictions (its README gives that run's wall time and each network's training time).
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

from lib.cli import command_line, command_parser
from lib.data.cifar10 import ARCHIVES, SOURCES
from lib.device import describe, pick_device, set_threads
from lib.provenance import git_commit
from lib.regret import experiment as ex
from lib.regret import whole as wh


def main(argv: list[str] | None = None) -> int:
    parser = command_parser("lib.regret.store_whole", __doc__)
    parser.add_argument("--preset", choices=("whole", "whole-cpu"), default="whole",
                        help="the recipe (whole) or its CPU size (whole-cpu: widths 16 32 32, batch 256)")
    parser.add_argument("--widths", type=int, nargs=3, default=None, help="conv-group widths (recipe: 64 256 256)")
    parser.add_argument("--epochs", type=int, default=None, help="epochs per network (recipe: 10)")
    parser.add_argument("--batch-size", type=int, default=None, help="training batch (recipe: 1024)")
    parser.add_argument("--label-smoothing", type=float, default=None,
                        help="label smoothing of the CE networks (default 0; airbench: 0.2, which caps q's confidence)")
    parser.add_argument("--methods", nargs="+", choices=ex.uq.METHODS, default=None,
                        help="train and store only these methods (default: all four)")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed of the networks (ensemble members: seed ... seed + M - 1), default 0")
    parser.add_argument("--n-train", type=int, default=None, help="training images (default: all 50,000)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads (measured fastest here: see the README)")
    parser.add_argument("--data-source", choices=SOURCES, default="jpeg",
                        help="CIFAR-10 copy: jpeg (cifar10/cifar10-jpeg.zip) or python (the lossless archive)")
    parser.add_argument("--out", type=Path, default=wh.STORED_DIR)
    args = parser.parse_args(argv)
    set_threads(args.threads)
    commit = git_commit(mark_dirty=True)  # the code this run imports; the checkout may move on while it trains
    whole = {"widths": tuple(args.widths) if args.widths else None, "epochs": args.epochs,
             "batch_size": args.batch_size, "label_smoothing": args.label_smoothing}
    config = ex.resolve_config(args.preset, whole=whole, n_train=args.n_train, data_source=args.data_source,
                               methods=args.methods, seed=args.seed)
    device = pick_device(args.device)
    start = time.perf_counter()
    cifar = ex.cifar_data(config)
    preds = ex.whole_predictions(config, cifar, device=device, progress=True)
    seconds = time.perf_counter() - start
    command = command_line("lib.regret.store_whole", argv)
    common = {"command": command, "commit": commit, "device": describe(device), "host": platform.node(),
              "wall_seconds_all_methods": seconds, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    rows = []
    for method, p in preds.items():
        meta = {**p["meta"], **common}
        wh.save_predictions(args.out, method, p["test"], p["ood"], meta)
        seconds_per_epoch = sum(meta["train_seconds"]) / sum(map(len, meta["epoch_seconds"]))
        rows.append(f"| {method} | {meta['test_accuracy']:.4f} | {len(meta['train_seconds'])} | "
                    f"{sum(meta['train_seconds']) / 60:.1f} | {seconds_per_epoch:.0f} |")
    (args.out / "README.md").write_text(_readme(config, cifar, preds, common, rows), encoding="utf-8")
    print(f"stored in {args.out} ({seconds / 60:.1f} min)")
    return 0


def _readme(config: ex.RegretConfig, cifar: dict, preds: dict, common: dict, rows: list[str]) -> str:
    """The stored folder's README.md: provenance, data, recipe, wall and training time, and one row per method."""
    copy = {"jpeg": "the CIFAR-10 JPEG copy", "python": "the official lossless CIFAR-10 archive"}[config.data_source]
    n_networks = sum(len(p["meta"]["train_seconds"]) for p in preds.values())
    train_seconds = sum(sum(p["meta"]["train_seconds"]) for p in preds.values())
    return ("# Notebook 03: stored whole-network predictions\n\n"
            "Written by `lib.regret.store_whole`; loaded by notebook 03 with `WHOLE_SOURCE=\"stored\"` and "
            f"`DATA_SOURCE=\"{config.data_source}\"`.\n\n"
            f"- command: `{common['command']}`\n- commit: `{common['commit']}`\n- device: {common['device']}\n"
            f"- date: {common['date']}\n- data: {copy} (`{ARCHIVES[config.data_source]}`, "
            f"data_source {config.data_source!r}), "
            f"{len(cifar['train_labels'])} training images, all {len(cifar['p_true'])} CIFAR-10H rows\n"
            f"- recipe: `{json.dumps(wh.describe_settings(config.whole))}`\n"
            f"- wall time of this command, prediction included: {common['wall_seconds_all_methods'] / 60:.1f} min "
            f"(networks already in the cache are loaded, not retrained); training time of the {n_networks} networks, "
            f"summed: {train_seconds / 60:.1f} min\n\n"
            f"| method | test accuracy ({config.data_source}) | networks | training min | s per epoch |\n"
            "|---|---|---|---|---|\n"
            + "\n".join(rows) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
