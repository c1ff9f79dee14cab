"""Ensemble training throughput and per-step overhead (notebook 01), on the current device.

1. Batched vs sequential: member-steps per second of M members trained as one batched model vs the same
   members trained one after another (`lib.prcurves.ddpm.train_ensemble`, one seed at a time).
2. Per-step overhead, before/after the block-drawn streams: time per Adam step at a tiny width (every
   layer 4 wide, batch 8, so the arithmetic is negligible and what remains is the cost of issuing the
   step: Python, dispatch, and the old code's per-member draws and host-to-device copies). "before" is
   lib/prcurves/ddpm.py as of commit BEFORE (per-step draws on the CPU, one member at a time), loaded from
   git; "after" is the working tree's module. Both run in this process, interleaved, medians of repeats.
3. Member-steps per second at the real width (C = 1 and 4, batch 500), before and after.

Every figure is a median over repeats after a warm-up, and ratios are taken within this run.
Usage: python benchmarks/bench_training.py [--members 30] [--steps 20] [--complexities 1 4] [--repeats 3]
       [--skip-batched] [--overhead-steps 400]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path

import numpy as np
import torch

from lib.data import gaussian_ring
from lib.device import describe, pick_device
from lib.prcurves import ddpm

BEFORE = "659801a"  # the last commit with per-step draws (before the block-drawn streams)
ROOT = Path(__file__).resolve().parents[1]


def _sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def old_module():
    """lib/prcurves/ddpm.py at commit BEFORE, imported as a separate module (None outside a git checkout)."""
    try:
        source = subprocess.run(["git", "-C", str(ROOT), "show", f"{BEFORE}:lib/prcurves/ddpm.py"],
                                check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    path = Path(tempfile.mkdtemp()) / "ddpm_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("ddpm_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["ddpm_before"] = module
    spec.loader.exec_module(module)
    return module


@contextmanager
def tiny_width(module, width: int = 4):
    """Every hidden layer `width` wide (the modules read these globals when they build a member)."""
    saved = module.HIDDEN, module.BLOCK_HIDDEN, module.EMB_DIM
    module.HIDDEN = module.BLOCK_HIDDEN = module.EMB_DIM = width
    try:
        yield
    finally:
        module.HIDDEN, module.BLOCK_HIDDEN, module.EMB_DIM = saved


def seconds_per_step(module, points, complexity, seeds, steps, batch, device) -> float:
    settings = module.TrainSettings(batch_size=batch)
    _sync(device)
    start = time.perf_counter()
    module.train_ensemble(points, complexity=complexity, seeds=seeds, num_steps=steps, settings=settings,
                          device=device, progress=False)
    _sync(device)
    return (time.perf_counter() - start) / steps


def throughput(points, complexity: int, seeds: list[int], steps: int, batched: bool, device) -> float:
    groups = [seeds] if batched else [[s] for s in seeds]
    start = time.perf_counter()
    for group in groups:
        ddpm.train_ensemble(points, complexity=complexity, seeds=group, num_steps=steps, device=device, progress=False)
    _sync(device)
    return len(seeds) * steps / (time.perf_counter() - start)


def compare(modules: dict, repeats: int, measure) -> dict[str, float]:
    """Median of `measure(module)` per module, the modules interleaved within each repeat."""
    for module in modules.values():
        measure(module)  # warm-up
    times = {name: [] for name in modules}
    for _ in range(repeats):
        for name, module in modules.items():
            times[name].append(measure(module))
    return {name: float(np.median(t)) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=30)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--complexities", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--overhead-steps", type=int, default=400, help="steps per tiny-width timing")
    parser.add_argument("--skip-batched", action="store_true", help="skip the batched-vs-sequential table")
    args = parser.parse_args()
    device = pick_device()
    if device.type == "cpu":
        torch.set_num_threads(1)
    points = gaussian_ring(10_000, seed=7)
    seeds = list(range(args.members))
    print(f"on {describe(device)}; M = {args.members}; medians of {args.repeats} repeats after a warm-up")

    if not args.skip_batched:
        print(f"\n## Batched vs sequential, batch 500, {args.steps} steps per member")
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

    before = old_module()
    modules = {"before": before, "after": ddpm} if before is not None else {"after": ddpm}
    if before is None:
        print(f"\n(commit {BEFORE} not reachable: 'before' skipped)")

    print(f"\n## Per-step overhead: width 4, batch 8, C = 1, {args.overhead_steps} steps (ms per Adam step)")
    with tiny_width(ddpm), (tiny_width(before) if before is not None else nullcontext()):
        ms = compare(modules, args.repeats, lambda m: 1e3 * seconds_per_step(
            m, points, 1, seeds, args.overhead_steps, 8, device))
    print("| version | ms per step | ms per step and member |")
    print("|---|---|---|")
    for name, value in ms.items():
        print(f"| {name} | {value:.3f} | {value / args.members:.4f} |")
    if before is not None:
        print(f"ratio before / after: {ms['before'] / ms['after']:.2f}")

    print(f"\n## Real width, batch 500, {args.steps} steps (member-steps per second)")
    print("| C | " + " | ".join(modules) + " | after / before |" if before is not None else "| C | after |")
    print("|---|" + "---|" * (len(modules) + (before is not None)))
    for complexity in args.complexities:
        sec = compare(modules, args.repeats, lambda m, c=complexity: seconds_per_step(
            m, points, c, seeds, args.steps, 500, device))
        rates = {name: args.members / s for name, s in sec.items()}
        cells = " | ".join(f"{r:.0f}" for r in rates.values())
        ratio = f" | {rates['after'] / rates['before']:.2f}" if before is not None else ""
        print(f"| {complexity} | {cells}{ratio} |")


if __name__ == "__main__":
    main()
