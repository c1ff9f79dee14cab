"""Notebook 02 benchmarks, in one run:

1. calibration time per point against output dimension d (= latent r) for CReL (one exact least-distance QP
   per point) and Feldman et al.'s grid score, with the spec's grid sizes (Y-grid 3e3 / 1e5 / 2e5, latent grid
   1e4 / 4e4 / 1e5); medians of repeats, ratios within the run;
2. sentence embeddings with all-MiniLM-L6-v2 (batched): sentences per second, cold and from the cache.

Usage: python benchmarks/bench_crel.py [--repeats 3] [--captions 1000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import replace

import numpy as np
import torch

from lib.crel import captions as cap
from lib.crel import experiment as ex
from lib.device import cpu_model
from lib.run import Run


def calibration_scaling(repeats: int) -> list[dict]:
    config = replace(ex.PRESETS["smoke"], runtime_dims=(2, 3, 4), runtime_y_grid=(3_000, 100_000, 200_000),
                     runtime_z_grid=(10_000, 40_000, 100_000), runtime_n_points=200, runtime_n_feldman=3,
                     runtime_epochs=5)
    runs = [ex.runtime_rows(config, Run()) for _ in range(repeats)]
    rows = []
    for j, d in enumerate(config.runtime_dims):
        crel_s = float(np.median([r[j]["crel_s"] for r in runs]))
        feld_s = float(np.median([r[j]["feldman_s"] for r in runs]))
        rows.append({"d": d, "crel_s": crel_s, "feldman_s": feld_s, "ratio": feld_s / crel_s})
    return rows


def embedding_rate(num_captions: int) -> dict:
    texts, _ = cap.load_captions(None)
    texts = texts[:num_captions]
    encoder = cap.load_encoder()
    cap.embed(texts[:64], encoder=encoder, progress=False)  # warm-up
    cold = cap.embed(texts, encoder=encoder, progress=False)["sentences_per_s"]
    start = time.perf_counter()
    cap.cached_embeddings(texts, Run())  # writes the cache
    start = time.perf_counter()
    cached = cap.cached_embeddings(texts, Run())
    return {"captions": len(texts), "sentences_per_s": cold, "cache_load_s": time.perf_counter() - start,
            "from_cache": cached["from_cache"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--captions", type=int, default=1000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    os.environ.setdefault("WORKBOOK_CACHE", tempfile.mkdtemp(prefix="bench02-"))
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, torch threads: 1 for the MLPs, 2 for MiniLM")
    rows = calibration_scaling(args.repeats)
    print("calibration seconds per point (median of", args.repeats, "runs)")
    print(f"{'d':>2} {'CReL':>10} {'Feldman grid':>13} {'ratio':>8}")
    for r in rows:
        print(f"{r['d']:>2} {r['crel_s']:>10.2e} {r['feldman_s']:>13.2e} {r['ratio']:>8.0f}")
    for m in ("crel", "feldman"):
        g = ex.growth_rates([r["d"] for r in rows], [r[f"{m}_s"] for r in rows])
        print(f"{m}: x{g['factor_per_dim']:.2f} per added dimension (log-linear fit)")
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    e = embedding_rate(args.captions)
    print(f"MiniLM: {e['sentences_per_s']:.0f} sentences/s on {e['captions']} COCO captions (batches of 256); "
          f"cached reload {e['cache_load_s']:.3f} s")


if __name__ == "__main__":
    main()
