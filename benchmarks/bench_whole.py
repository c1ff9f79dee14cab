"""Training cost of notebook 03's whole networks (`lib.regret.whole`) on the current CPU.

What a training step of the airbench-style net costs per image, for the choices a CPU run has to make:
the widths (the recipe's 64/256/256 against the CPU-sized 16/32/32 of the stored run), the batch (the
recipe's 1024 against 256), torch's thread count (1 or 2) and the memory layout (channels_last, which
`train_network` uses, against torch's default contiguous layout). `--pair` also runs two single-threaded
processes side by side, as `store_whole --methods` does on a 2-core machine, and reports each one's time.

A step is what `train_network` does per batch: augmentation, forward, summed loss, backward, Nesterov SGD.
The images are random (convolution cost does not depend on the pixels). Every figure is the median of
`--repeats` timings of `--steps` steps after one warm-up step, and the ratios are taken within this run.
Usage: python benchmarks/bench_whole.py [--steps 4] [--repeats 3] [--pair] [--skip-recipe]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import replace

import numpy as np
import torch

from lib.device import cpu_model
from lib.regret import whole as wh


def seconds_per_image(widths: tuple[int, int, int], batch: int, threads: int, channels_last: bool, steps: int,
                      repeats: int, method: str = "ensemble") -> float:
    """Median over repeats of the time per training image (seconds) of `steps` steps."""
    torch.set_num_threads(threads)
    settings = replace(wh.WholeSettings(), widths=widths, batch_size=batch)
    layout = torch.channels_last if channels_last else torch.contiguous_format
    g = torch.Generator().manual_seed(0)
    images = torch.randn(batch, 3, 32, 32, generator=g)
    labels = torch.randint(0, wh.NUM_CLASSES, (batch,), generator=g)
    net = wh.build_network(method, settings, 0)
    wh.whiten_init(net, images)
    net.to(memory_format=layout).train()
    opt = wh.make_optimiser(net, settings)

    def step() -> None:
        x = wh.augment(images, settings.translate, g).contiguous(memory_format=layout)
        loss = wh.summed_loss(method, net(x), labels, settings)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    step()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        times.append((time.perf_counter() - start) / (steps * batch))
    return float(np.median(times))


def pair(widths: tuple[int, int, int], batch: int, steps: int, repeats: int) -> list[float]:
    """Seconds per image of each of two single-threaded processes running the same benchmark at once."""
    code = ("import json, sys; from benchmarks.bench_whole import seconds_per_image as f; "
            f"print(json.dumps(f({tuple(widths)}, {batch}, 1, True, {steps}, {repeats})))")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]
    return [json.loads(p.communicate()[0]) for p in procs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pair", action="store_true", help="also two single-threaded processes at once")
    parser.add_argument("--skip-recipe", action="store_true", help="leave out the recipe's widths (slow on a CPU)")
    args = parser.parse_args()
    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs; medians of {args.repeats} x {args.steps} steps; "
          "one epoch = 50,000 images")
    small, recipe = (16, 32, 32), (64, 256, 256)
    rows = [(small, 1024, 1, True), (small, 256, 1, True), (small, 256, 2, True), (small, 256, 1, False)]
    if not args.skip_recipe:
        rows += [(recipe, 1024, 1, True), (recipe, 256, 1, True), (recipe, 256, 2, True)]
    base = None
    print(f"{'widths':>12} {'batch':>5} {'threads':>7} {'layout':>14} {'ms/image':>9} {'s/epoch':>8} {'ratio':>6}")
    for widths, batch, threads, last in rows:
        t = seconds_per_image(widths, batch, threads, last, args.steps, args.repeats)
        base = base or t
        layout = "channels_last" if last else "contiguous"
        print(f"{'/'.join(map(str, widths)):>12} {batch:>5} {threads:>7} {layout:>14} {1e3 * t:>9.3f} "
              f"{5e4 * t:>8.0f} {t / base:>6.2f}", flush=True)
    if args.pair:
        for widths in [small] + ([] if args.skip_recipe else [recipe]):
            times = pair(widths, 256, args.steps, args.repeats)
            print(f"two 1-thread processes at once, {'/'.join(map(str, widths))}, batch 256: "
                  + ", ".join(f"{5e4 * t:.0f} s/epoch" for t in times) + " each")


if __name__ == "__main__":
    main()
