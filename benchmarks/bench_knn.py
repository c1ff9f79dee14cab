"""Candidate search of `lib.knn.neighbourhood_counts` (the kNN step of notebook 01's PR curve): faiss
brute force vs a k-d tree (scipy.spatial.cKDTree), exact either way, same thread count for both.

For each dimension D and size n: n real + n fake points (ring-like Gaussian mixture in D dimensions),
a 50/50 split, k = floor(sqrt(n)), the counts of both test halves against the training union, as
`pr_curve` runs them. Times are medians of repeats, both backends timed in the same run, and the two
results are compared (they must be identical: radius and per-group counts, ties included).
Usage: python benchmarks/bench_knn.py [--sizes 1000 5000 10000 25000 50000] [--dims 2] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from lib.device import cpu_model


def points(n: int, dim: int, seed: int) -> np.ndarray:
    """A Gaussian mixture of 8 modes on a circle (the ring of spec 01) padded with noisy extra axes."""
    rng = np.random.default_rng(seed)
    angle = 2 * np.pi * rng.integers(0, 8, n) / 8
    out = rng.normal(0, 0.1, size=(n, dim))
    out[:, 0] += 2 * np.cos(angle)
    out[:, 1 % dim] += 2 * np.sin(angle)
    return out


def run(n: int, dim: int, backend: str) -> tuple[float, list[dict]]:
    from lib.knn import neighbourhood_counts

    real, fake = points(n, dim, 1), points(n, dim, 2) * 1.05
    half = n // 2
    base = np.concatenate([real[:half], fake[:half]])
    groups = np.repeat([0, 1], [half, half])
    k = int(np.sqrt(n))
    start = time.perf_counter()
    out = [neighbourhood_counts(test, base, groups, k, backend=backend) for test in (real[half:], fake[half:])]
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 5_000, 10_000, 25_000, 50_000])
    parser.add_argument("--dims", type=int, nargs="+", default=[2])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    import faiss

    from lib.knn import choose_backend

    print(f"machine: {cpu_model()}, faiss/cKDTree threads {faiss.omp_get_max_threads()} "
          f"(OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}), medians of {args.repeats}")
    print(f"{'D':>3} {'n':>7} {'faiss s':>9} {'kdtree s':>9} {'faiss/kdtree':>12}  auto picks  identical")
    for dim in args.dims:
        for n in args.sizes:
            times = {"faiss": [], "kdtree": []}
            results = {}
            for _ in range(args.repeats):
                for backend in times:
                    t, results[backend] = run(n, dim, backend)
                    times[backend].append(t)
            same = all(np.array_equal(a["counts"], b["counts"]) and np.array_equal(a["radius"], b["radius"])
                       for a, b in zip(results["faiss"], results["kdtree"]))
            f, t = np.median(times["faiss"]), np.median(times["kdtree"])
            print(f"{dim:3d} {n:7d} {f:9.3f} {t:9.3f} {f / t:11.1f}x  {choose_backend(dim, n):>10}  {same}")


if __name__ == "__main__":
    main()
