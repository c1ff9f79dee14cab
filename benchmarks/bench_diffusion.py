"""The image-diffusion family's cost on this core (`lib.diffusion`, notebook 04 §5), beside the core's own
convolution and matrix-product rates measured in the same run, so that a loaded or a different machine reads
its figures as ratios.

1. Reference rates, one thread: a 3 x 3 convolution (32 -> 32 channels, 128 images of 16 x 16, forward) and a
   float32 matrix product (512 x 512 x 512), in GFLOP/s.
2. Training: images per second of `lib.diffusion` (EDM loss, Adam step, EMA) at the recipe's batch, for each
   (resolution, width) given; the `cpu` preset's arms are 16 x 16 at widths 32 and 16, the `paper` preset's
   32 x 32 at 64.
3. Sampling: images per second per network evaluation (batch 500), the same settings.

Every figure is a median over repeats after a warm-up. Usage:
python benchmarks/bench_diffusion.py [--settings 16:32 16:16 32:64] [--repeats 3] [--steps 4]
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

from benchmarks.bench_pareto import median_time
from lib.device import cpu_model
from lib.diffusion import Recipe, build_denoiser, edm_loss
from lib.diffusion.training import WithEMA


def _median_seconds(fn, repeats: int) -> float:
    """`median_time` after one warm-up call (the first call builds the graph and allocates)."""
    fn()
    return median_time(fn, repeats)


def reference_rates(repeats: int) -> dict:
    """GFLOP/s of a 3 x 3 convolution and of a float32 matrix product on one thread."""
    x, w = torch.randn(128, 32, 16, 16), torch.randn(32, 32, 3, 3)
    conv = 2 * 128 * 32 * 32 * 9 * 16 * 16 / _median_seconds(lambda: F.conv2d(x, w, padding=1), repeats)
    a, b = torch.randn(512, 512), torch.randn(512, 512)
    gemm = 2 * 512**3 / _median_seconds(lambda: a @ b, repeats)
    return {"conv_gflops": conv / 1e9, "gemm_gflops": gemm / 1e9}


def diffusion_rates(resolution: int, channels: int, *, steps: int, repeats: int) -> dict:
    """Training images per second (recipe batch) and sampling images per second per network evaluation."""
    torch.manual_seed(0)
    recipe = Recipe(channels=channels)
    trainer = WithEMA(build_denoiser(recipe, resolution=resolution, condition="class", cond_dim=10))
    optimiser = torch.optim.Adam(trainer.model.parameters(), lr=1e-4)
    x = torch.randn(recipe.batch_size, 3, resolution, resolution)
    c = torch.eye(10)[torch.arange(recipe.batch_size) % 10]
    generator = torch.Generator().manual_seed(0)

    def train() -> None:
        for step in range(steps):
            optimiser.zero_grad()
            edm_loss(trainer.model, x, c, generator=generator).backward()
            optimiser.step()
            trainer.update(recipe.ema_decay, step)

    noise, sigma = torch.randn(500, 3, resolution, resolution), torch.full((500,), 1.0)
    model = trainer.ema.eval()

    def evaluate() -> None:
        with torch.no_grad():
            model(noise, sigma, c[:1].expand(500, 10))

    return {"resolution": resolution, "channels": channels,
            "parameters": sum(p.numel() for p in trainer.model.parameters()),
            "train_images_per_s": steps * recipe.batch_size / _median_seconds(train, repeats),
            "sample_images_per_s_per_eval": 500 / _median_seconds(evaluate, repeats)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--settings", nargs="+", default=["16:32", "16:16", "32:64"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    ref = reference_rates(args.repeats)
    print(f"{cpu_model()}, one thread: conv {ref['conv_gflops']:.1f} GFLOP/s, GEMM {ref['gemm_gflops']:.1f} GFLOP/s")
    print("| resolution | width | parameters | training images/s | per conv GFLOP/s | sampling images/s per "
          "evaluation | per conv GFLOP/s |")
    print("|---|---|---|---|---|---|---|")
    for setting in args.settings:
        resolution, channels = (int(v) for v in setting.split(":"))
        r = diffusion_rates(resolution, channels, steps=args.steps, repeats=args.repeats)
        print(f"| {resolution} | {channels} | {r['parameters']:,} | {r['train_images_per_s']:.1f} | "
              f"{r['train_images_per_s'] / ref['conv_gflops']:.2f} | {r['sample_images_per_s_per_eval']:.0f} | "
              f"{r['sample_images_per_s_per_eval'] / ref['conv_gflops']:.1f} |")


if __name__ == "__main__":
    main()
