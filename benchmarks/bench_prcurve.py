"""PR curve for 10,000 real vs 10,000 generated 2-D points, k = 100: `lib.prcurves` against the
straightforward implementation (full distance matrix + per-lambda decision tensor), in one run.

Each implementation runs in its own subprocess so that its peak memory (growth of the peak resident set
size over the process's state just before the computation) is its own. Times are medians of repeats.
Usage: python benchmarks/bench_prcurve.py [--n 10000] [--k 100] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from lib.device import cpu_model

ROOT = Path(__file__).resolve().parents[1]


def inputs(n: int) -> tuple[np.ndarray, ...]:
    from lib.data import ring_train_heldout
    from lib.prcurves import split_half

    d = ring_train_heldout(n, n)
    fake = d["train"] + np.random.default_rng(0).normal(0, 0.3, d["train"].shape)  # a slightly blurred model
    rng = np.random.default_rng(1)
    real_tr, real_te = split_half(d["heldout"], rng, 0.5)
    fake_tr, fake_te = split_half(fake, rng, 0.5)
    return real_tr, fake_tr, real_te, fake_te


def worker(impl: str, n: int, k: int, repeats: int) -> dict:
    """Run one implementation `repeats` times; report times, peak memory growth and the curve."""
    if impl == "ours":
        from lib.prcurves import pr_curve_from_split as curve_fn
    else:
        sys.path.insert(0, str(ROOT))
        from benchmarks.naive import naive_pr_curve_from_split as curve_fn
    args = inputs(n)
    curve_fn(*(a[:200] for a in args), k=5)  # warm-up (imports, faiss threads)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        curve = curve_fn(*args, k=k)
        times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    return {"impl": impl, "times": times, "median_s": float(np.median(times)), "peak_mb": peak / 1024,
            "precision": curve["precision"].tolist(), "recall": curve["recall"].tolist()}


def run_in_subprocess(impl: str, n: int, k: int, repeats: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--worker", impl, "--n", str(n), "--k", str(k),
                          "--repeats", str(repeats)], check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--worker", choices=["ours", "naive"])
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.n, args.k, args.repeats)))
        return
    ours = run_in_subprocess("ours", args.n, args.k, args.repeats)
    naive = run_in_subprocess("naive", args.n, args.k, max(1, args.repeats // 2))
    diff = max(np.abs(np.subtract(ours[key], naive[key])).max() for key in ("precision", "recall"))
    machine = f"{cpu_model()}, {os.cpu_count()} cores"
    print(f"PR curve, {args.n:,} real vs {args.n:,} generated 2-D points, k = {args.k}, on {machine}")
    print("| implementation | median time (s) | repeats | peak memory growth (MB) |")
    print("|---|---|---|---|")
    for res in (ours, naive):
        print(f"| {res['impl']} | {res['median_s']:.3f} | {len(res['times'])} | {res['peak_mb']:.0f} |")
    print(f"speed-up {naive['median_s'] / ours['median_s']:.1f}x, "
          f"memory ratio {naive['peak_mb'] / max(ours['peak_mb'], 1):.0f}x; max |difference| of the curves: {diff:.1e}")


if __name__ == "__main__":
    main()
