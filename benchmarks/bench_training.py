"""Ensemble training throughput, member-steps per second: M members trained as one batched model vs the
same members trained one after another, on the current device (CUDA when present).

Both run the same code (`lib.prcurves.ddpm.train_ensemble`); "sequential" calls it with one seed at a time. The
ratio batched / sequential is measured in one run, as the median of repeats, after a warm-up.
Usage: python benchmarks/bench_training.py [--members 30] [--steps 20] [--complexities 1 4] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from lib.data import gaussian_ring
from lib.device import describe, pick_device
from lib.prcurves import ddpm


def throughput(points, complexity: int, seeds: list[int], steps: int, batched: bool, device) -> float:
    start = time.perf_counter()
    groups = [seeds] if batched else [[s] for s in seeds]
    for group in groups:
        ddpm.train_ensemble(points, complexity=complexity, seeds=group, num_steps=steps, device=device, progress=False)
    if device.type == "cuda":
        import torch

        torch.cuda.synchronize()
    return len(seeds) * steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--members", type=int, default=30)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--complexities", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    device = pick_device()
    points = gaussian_ring(10_000, seed=7)
    seeds = list(range(args.members))
    print(f"DDPM training, batch 500, M = {args.members}, {args.steps} steps per member, on {describe(device)}")
    print("| C | batched (member-steps/s) | sequential (member-steps/s) | ratio |")
    print("|---|---|---|---|")
    for complexity in args.complexities:
        throughput(points, complexity, seeds[:2], 3, True, device)  # warm-up
        rates = {mode: [] for mode in ("batched", "sequential")}
        for _ in range(args.repeats):
            for mode in rates:
                rates[mode].append(throughput(points, complexity, seeds, args.steps, mode == "batched", device))
        b, s = np.median(rates["batched"]), np.median(rates["sequential"])
        print(f"| {complexity} | {b:.0f} | {s:.0f} | {b / s:.2f} |")


if __name__ == "__main__":
    main()
