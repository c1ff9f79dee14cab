"""The conditional banana of Feldman, Bates & Romano (mqr `datasets/datasets.py::get_k_dim_banana`), spec 02 §2.3.

d = 2, p = 1 ("nonlinear_cond_banana_k_dim_1"): X ~ U(0.8, 3.2), Z0 = U(-1, 1) pi / x, phi ~ U(0, 2 pi),
R = 0.1 U(-1, 1); Y1 = Z0 + R cos phi, Y2 = (1 - cos(x Z0)) / 2 + R sin phi + sin(x).
d = 3, 4 (the runtime tasks) are our re-implementation from the description [interpretation]: the noise
direction is uniform on the unit sphere of R^d (for d = 2 exactly (cos phi, sin phi)) and coordinate j >= 3
is (1 - cos(x Z0 + (j - 2) pi / 4)) / 2 + sin(x) plus noise.
"""

from __future__ import annotations

import numpy as np


def sample_y(x: np.ndarray, rng: np.random.Generator, d: int = 2) -> np.ndarray:
    """Y | X = x: (n, d) float64 for x: (n,)."""
    x = np.asarray(x, np.float64).ravel()
    n = len(x)
    z0 = rng.uniform(-1, 1, n) * np.pi / x
    radius = 0.1 * rng.uniform(-1, 1, n)
    if d == 2:
        phi = rng.uniform(0, 2 * np.pi, n)
        noise = np.stack([np.cos(phi), np.sin(phi)], 1)
    else:
        g = rng.standard_normal((n, d))
        noise = g / np.linalg.norm(g, axis=1, keepdims=True)
    cols = [z0, (1 - np.cos(x * z0)) / 2 + np.sin(x)]
    cols += [(1 - np.cos(x * z0 + (j - 2) * np.pi / 4)) / 2 + np.sin(x) for j in range(2, d)]
    return np.stack(cols, 1) + radius[:, None] * noise


def banana(n: int, seed: int, d: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """(x: (n, 1), y: (n, d)) float64 draws of the conditional banana with `seed`."""
    if d < 2:
        raise ValueError(f"d={d} must be >= 2.")
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.8, 3.2, n)
    return x[:, None], sample_y(x, rng, d)
