"""Pareto-gap building blocks on CIFAR-10H-sized inputs: the nondominated filter of `lib.regret`
(sort + 2-D staircase sweep) against the straightforward O(M^2) filter, and one full P-gap, in one run.

The points are the 5,100 (1 - coverage, risk, regret) points of the optimal selectors for q = cleanlab's
cross-validated probabilities (spec §3.3, §5.2), plus a synthetic dense front of 10,000 points.
Times are medians of repeats. Usage: python benchmarks/bench_pareto.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks.naive import naive_nondominated
from lib import regret
from lib.data.files import data_file
from lib.device import cpu_model


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    p = np.load(data_file("cifar10h/cifar10h-probs.npy"))
    q = np.load(data_file("cifar10/test_crossval_probs.npy"))
    d = regret.decompose(p, q, "ce")
    cifar_points = regret.optimal_front(d["A"], d["E"])["points"]
    rng = np.random.default_rng(0)
    dense = rng.random((10_000, 3))
    dense[:, 2] = 2 - dense[:, 0] - dense[:, 1] + 0.05 * rng.random(10_000)
    print(f"CPU: {cpu_model()}")
    for name, pts in (("CIFAR-10H optimal selectors", cifar_points), ("dense synthetic front", dense)):
        fast = median_time(lambda pts=pts: regret.nondominated(pts), args.repeats)
        slow = median_time(lambda pts=pts: naive_nondominated(pts), max(1, args.repeats // 2))
        same = np.array_equal(np.unique(regret.nondominated(pts), axis=0), np.unique(naive_nondominated(pts), axis=0))
        print(f"{name}: {len(pts)} points, {len(regret.nondominated(pts))} nondominated; lib.regret {fast:.3f} s, "
              f"O(M^2) filter {slow:.2f} s ({slow / fast:.0f}x); identical fronts: {same}")
    full = median_time(lambda: regret.pareto_gap(d["A"], d["E"], d["A"], d["E"]), args.repeats)
    print(f"one full P-gap on 10,000 CIFAR-10H rows (2 x 5,100 selector points, filters, IGD+): {full:.2f} s")


if __name__ == "__main__":
    main()
