"""The small example files of docs/own-models.md, written deterministically (NumPy's PCG64, fixed seeds):

    python docs/examples/make_examples.py            # rewrites docs/examples/01 ... 04

01/  real.npy (600, 2) a ring of 8 Gaussians; sharp_0..3.npy and blurry_0..3.npy (600, 2): two ensembles of 4
     "generators" of the ring (per member a random scale and shift; the blurry ones with 3x the spread).
02/  conditions.npy (240, 2) x; samples.npy (240, 6, 8) six sampled outputs per condition, embedded in 8-D;
     reference.npy (240, 8) the true output of each condition (the generator is biased where x_0 > 0.5).
03/  member_0..2.npy (400, 10) predicted probabilities of a 3-member ensemble; soft_labels.npy (400, 10) the
     annotators' label distributions; score.npy (400,) an uncertainty score (the members' disagreement).
04/  train/, real/, fake/: 16 x 16 PNG images (64 training images, 32 held-out ones of the same kind, 64 from a
     "generator" that copies 24 of the training images with a little noise).
The tests (tests/test_own_models.py) check that this script reproduces the committed files byte for byte.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def ring(rng: np.random.Generator, n: int, spread: float, scale: float = 1.0, shift=(0.0, 0.0)) -> np.ndarray:
    """n points of a ring of 8 Gaussians of radius 2 (sd `spread`), scaled and shifted: (n, 2) float32."""
    angle = 2 * np.pi * rng.integers(0, 8, n) / 8
    centres = 2.0 * np.column_stack([np.cos(angle), np.sin(angle)])
    return (scale * (centres + spread * rng.normal(size=(n, 2))) + np.asarray(shift)).astype(np.float32)


def write_01(folder: Path) -> None:
    rng = np.random.default_rng(1)
    np.save(folder / "real.npy", ring(rng, 600, 0.1))
    for name, spread in (("sharp", 0.1), ("blurry", 0.3)):
        for i in range(4):
            np.save(folder / f"{name}_{i}.npy", ring(rng, 600, spread, rng.uniform(0.95, 1.05),
                                                     0.05 * rng.normal(size=2)))


def write_02(folder: Path) -> None:
    rng = np.random.default_rng(2)
    n, m, d = 240, 6, 8
    x = rng.uniform(-1, 1, size=(n, 2))
    mix = rng.normal(size=(4, d))
    truth = np.tanh(np.column_stack([x, x[:, :1] * x[:, 1:], np.sin(2 * x[:, :1])]) @ mix)
    bias = np.where(x[:, :1] > 0.5, 0.8, 0.0) * mix[0]  # the generator misses where x_0 > 0.5
    samples = truth[:, None, :] + bias[:, None, :] + 0.15 * rng.normal(size=(n, m, d))
    np.save(folder / "conditions.npy", x.astype(np.float32))
    np.save(folder / "samples.npy", samples.astype(np.float32))
    np.save(folder / "reference.npy", truth.astype(np.float32))


def write_03(folder: Path) -> None:
    rng = np.random.default_rng(3)
    n, k = 400, 10
    labels = rng.integers(0, k, n)
    sharpness = rng.uniform(0.2, 6, n)  # easy images have one clear label, hard ones spread over several
    soft = rng.dirichlet(np.ones(k), n) + sharpness[:, None] * np.eye(k)[labels]
    soft = (soft / soft.sum(1, keepdims=True)).astype(np.float64)
    members = []
    for i in range(3):
        logits = np.log(soft) + rng.normal(scale=1.0, size=(n, k))
        p = np.exp(logits - logits.max(1, keepdims=True))
        members.append(p / p.sum(1, keepdims=True))
        np.save(folder / f"member_{i}.npy", members[-1].astype(np.float32))
    np.save(folder / "soft_labels.npy", soft)
    np.save(folder / "score.npy", np.stack(members).std(axis=0).sum(axis=1).astype(np.float32))


def blob_image(rng: np.random.Generator) -> np.ndarray:
    """A 16 x 16 RGB image of two soft coloured blobs: (16, 16, 3) uint8 (smooth, so its PNG is small)."""
    yy, xx = np.mgrid[0:16, 0:16]
    img = np.zeros((16, 16, 3))
    for _ in range(2):
        cy, cx, r = rng.uniform(3, 13), rng.uniform(3, 13), rng.uniform(2, 5)
        img += np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * r**2))[..., None] * rng.uniform(0, 1, 3)
    return (255 * np.clip(img, 0, 1)).astype(np.uint8)


def write_04(folder: Path) -> None:
    from PIL import Image

    rng = np.random.default_rng(4)
    train = [blob_image(rng) for _ in range(64)]
    real = [blob_image(rng) for _ in range(32)]
    fake = [np.clip(train[i].astype(int) + rng.integers(-3, 4, (16, 16, 3)), 0, 255).astype(np.uint8)
            for i in rng.integers(0, 24, 64)]  # copies of the first 24 training images: two chunks of 32
    for name, images in (("train", train), ("real", real), ("fake", fake)):
        (folder / name).mkdir(parents=True, exist_ok=True)
        for i, img in enumerate(images):
            Image.fromarray(img).save(folder / name / f"{i:03d}.png", optimize=False)


WRITERS = {"01": write_01, "02": write_02, "03": write_03, "04": write_04}


def main(root: Path = HERE) -> None:
    for name, write in WRITERS.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        write(root / name)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
