"""The truncated Gaussian ring of Morales, Jurie & Fadili (2025), as their code draws it (spec 01 §2.1).

Eight modes on a circle of radius 5. Mode i has a scale s_i = (overlap * radius / modes) * (1 + v (U_i - 0.5))
with v = 0.5. Its points are drawn from N(c_i, s_i I) (the authors' quirk: s_i is used as a *variance*,
so the per-axis std is sqrt(s_i)) and kept when ||x - c_i|| / s_i <= 3, so the truncation radius is
3 s_i in absolute units (the code's comment says "1.96 sigma"; the code does this). Draws use NumPy's
legacy `RandomState`, in the authors' order: U_i, then mode i's normal draws, then U_{i+1}, ...;
with seed 7 this gives the spec's s = [0.2463, 0.3322, 0.2900, ...]. Both sets are then shuffled with
one fixed seed-7 permutation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lib.params import PARAMETER, check_int, check_real, shown

MIN_ACCEPTANCE = 0.01  # a mode keeps at least 1 % of its draws, so its rejection loop ends in about a thousand rounds
MAX_ROUNDS = 100_000  # a backstop the check above keeps far away


@dataclass(frozen=True)
class RingSettings:
    """The knobs of the ring; defaults are the authors' call (`DataLoader.grT`)."""

    num_modes: int = 8
    radius: float = 5.0
    overlap: float = 0.5
    variability: float = 0.5  # the call site passes 0.5; the function default is 0.3
    trunc_factor: float = 3.0  # A6: keep ||x - c|| <= trunc_factor * s (absolute units)
    # A5: the authors' quirk; False uses s as the per-axis std (notebook 01's parameter RING_S_IS_VARIANCE)
    s_is_variance: bool = field(default=True, metadata={PARAMETER: "RING_S_IS_VARIANCE"})
    shuffle_seed: int = 7


@dataclass(frozen=True)
class RingParams:
    """centers: (modes, 2) float64; scales: (modes,) float64 (the s_i)."""

    centers: np.ndarray
    scales: np.ndarray


def ring_centers(settings: RingSettings = RingSettings()) -> np.ndarray:
    """c_i = radius (cos 2 pi i / K, sin 2 pi i / K): (K, 2) float64."""
    angles = np.linspace(0, 2 * np.pi, settings.num_modes, endpoint=False)
    return settings.radius * np.stack([np.cos(angles), np.sin(angles)], axis=1)


def acceptance(settings: RingSettings, scale: float) -> float:
    """The share of a mode's draws that the truncation keeps: ||x - c|| / s <= t with per-axis std sigma
    (sqrt(s) under the variance quirk, else s) is a chi distribution with 2 degrees of freedom below
    t s / sigma, so 1 - exp(-(t s / sigma)^2 / 2)."""
    sigma = np.sqrt(scale) if settings.s_is_variance else scale
    return float(-np.expm1(-0.5 * (settings.trunc_factor * scale / sigma) ** 2))


def check_truncation(name: str, settings: RingSettings) -> float:
    """`settings.trunc_factor` (named `name`) must be a positive real that keeps at least MIN_ACCEPTANCE of the
    draws of the narrowest mode a draw can give (scale base (1 - variability / 2)); a smaller one would make the
    rejection sampling run for hours. Returns that smallest acceptance."""
    check_real(name, settings.trunc_factor, low=0.0, open_low=True)
    base = settings.overlap * settings.radius / settings.num_modes
    narrowest = acceptance(settings, base * (1 - settings.variability / 2))
    if narrowest < MIN_ACCEPTANCE:
        raise ValueError(f"{shown(name)}={settings.trunc_factor!r} keeps only {narrowest:.2%} of a mode's draws "
                         f"(at least {MIN_ACCEPTANCE:.0%} needed, or the rejection sampling of the ring runs "
                         "practically forever); give a larger truncation factor (the authors' is 3.0).")
    return narrowest


def _draw_mode(rs: np.random.RandomState, center: np.ndarray, scale: float, count: int, settings: RingSettings):
    """`count` points of one truncated mode, drawn in batches until the mode is full (at most MAX_ROUNDS)."""
    cov = np.eye(2) * (scale if settings.s_is_variance else scale**2)
    kept: list[np.ndarray] = []
    rounds = 0
    while sum(len(k) for k in kept) < count:
        if rounds == MAX_ROUNDS:
            raise RuntimeError(f"trunc_factor={settings.trunc_factor!r}: a mode of scale {scale:.4g} was not full "
                               f"after {MAX_ROUNDS} rounds of rejection sampling (acceptance "
                               f"{acceptance(settings, scale):.2e}).")
        rounds += 1
        points = rs.multivariate_normal(center, cov, count - sum(len(k) for k in kept))
        kept.append(points[np.linalg.norm((points - center) / scale, axis=1) <= settings.trunc_factor])
    return np.concatenate(kept)[:count]


def ring_draw(n: int, seed: int, *, params: RingParams | None = None, settings: RingSettings = RingSettings()) -> dict:
    """Draw floor(n / modes) points per mode. Returns {"points": (n', 2) float64, "labels": (n',) int64,
    "params": RingParams}, shuffled by the fixed `settings.shuffle_seed` permutation.

    With `params` (the training draw's), the held-out set reuses its centres and scales, as the authors do.
    """
    check_int("n", n, minimum=settings.num_modes)
    check_int("seed", seed, minimum=0, maximum=2**32 - 1)  # RandomState's range
    check_truncation("trunc_factor", settings)
    rs = np.random.RandomState(seed)
    per_mode = n // settings.num_modes
    centers = ring_centers(settings) if params is None else params.centers
    base = settings.overlap * settings.radius / settings.num_modes
    points, scales = [], []
    for i, center in enumerate(centers):
        scale = base * (1 + settings.variability * (rs.rand() - 0.5)) if params is None else params.scales[i]
        scales.append(scale)
        points.append(_draw_mode(rs, center, scale, per_mode, settings))
    order = np.random.RandomState(settings.shuffle_seed).permutation(per_mode * len(centers))
    labels = np.repeat(np.arange(len(centers)), per_mode)
    return {"points": np.concatenate(points)[order], "labels": labels[order],
            "params": RingParams(centers=np.asarray(centers), scales=np.asarray(scales))}


def gaussian_ring(n: int, seed: int, *, params: RingParams | None = None,
                  settings: RingSettings = RingSettings()) -> np.ndarray:
    """(n', 2) float64 points of the truncated ring, n' = n rounded down to a multiple of the modes."""
    return ring_draw(n, seed, params=params, settings=settings)["points"]


def ring_train_heldout(n_train: int, n_heldout: int, *, train_seed: int = 7, heldout_seed: int = 3,
                       settings: RingSettings = RingSettings()) -> dict:
    """The authors' pair of sets: training (seed 7) and held-out (seed 3, same centres and scales).

    Returns {"train": (n', 2), "heldout": (m', 2), "train_labels", "heldout_labels", "params"}.
    """
    train = ring_draw(n_train, train_seed, settings=settings)
    heldout = ring_draw(n_heldout, heldout_seed, params=train["params"], settings=settings)
    return {"train": train["points"], "heldout": heldout["points"], "train_labels": train["labels"],
            "heldout_labels": heldout["labels"], "params": train["params"]}
