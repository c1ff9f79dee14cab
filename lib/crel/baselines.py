"""Output-space baselines of spec 02 §3.7-3.8 and the Y-grid on which coverage and area are measured.

- The Y-grid: `grid_size` points (G per axis, G^d ~ grid_size) spanning the [1 %, 99 %] quantile box of
  training responses padded by 0.2 ([interpretation], §3.7 step 2). "Area" is a count of grid points
  (Feldman's `covered_area`, [interpretation, strong numeric evidence]).
- The DQR baseline in Y (§3.8): the identity-transform region, measured exactly.
- PCP (Wang et al. 2022): union of balls of radius r around K generator samples; r the conformal
  order statistic of min_k ||Y_i - Yhat_ik||.

Feldman et al.'s region, measured like CReL's decoded set, is `lib.crel.evaluation.FeldmanRegion`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from lib.crel import cvae as cvae_mod
from lib.crel import method as crel


@dataclass(frozen=True)
class Grid:
    """A regular grid of points: lo, hi: (d,), per_axis points per axis; points: (per_axis^d, d)."""

    lo: np.ndarray
    hi: np.ndarray
    per_axis: int

    @property
    def points(self) -> np.ndarray:
        axes = [np.linspace(a, b, self.per_axis) for a, b in zip(self.lo, self.hi)]
        return np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, len(self.lo))


def quantile_box_grid(values: np.ndarray, grid_size: int, pad: float) -> Grid:
    """Grid over the [1 %, 99 %] quantile box of values: (n, d), padded by `pad`, ~grid_size points."""
    d = values.shape[1]
    lo, hi = np.quantile(values, 0.01, axis=0) - pad, np.quantile(values, 0.99, axis=0) + pad
    return Grid(lo, hi, max(2, int(round(grid_size ** (1 / d)))))


def convex_output_evaluation(model: crel.CReL, x: np.ndarray, y: np.ndarray, y_grid: Grid) -> dict:
    """The identity-transform DQR region in Y (`dqr_baseline="identity_convex"`, §3.8): exact
    membership of y and the count of grid points in the calibrated set (2-D: exact polygon distances)."""
    q, pts = model.quantiles(x), y_grid.points
    covered = model.latent_scores(np.asarray(y, np.float64), q) <= model.gamma + 1e-12
    area = np.zeros(len(x))
    shifted = crel.is_shifted_set(model.inflation, model.gamma)
    radius = 0.0 if shifted else model.gamma
    for i, qi in enumerate(q):
        qi = qi - model.gamma if shifted else qi
        if pts.shape[1] == 2:
            d = crel.polygon_distances(pts, crel.polygon(model.U, qi))
        else:
            d = crel.distances_to_regions(pts, model.U, np.repeat(qi[None], len(pts), 0))[0]
        area[i] = np.sum(d <= radius + 1e-12)
    return {"covered": covered, "area": area}


# ----------------------------------------------------------------------------------------------------
# PCP
# ----------------------------------------------------------------------------------------------------
# PCP's random streams, offsets of its seed (its calibration samples draw from the seed itself)
PCP_AREA_STREAM = 1  # the samples whose balls make the area (`PCP.evaluate`)
PCP_COVERAGE_STREAM = 2  # the samples that decide Coverage-Y on a whole test fold (notebook 02's PCP row)


def generator_samples(lgm: cvae_mod.CVAE, x: np.ndarray, num: int, seed: int) -> np.ndarray:
    """(n, num, d) CVAE samples Dec(z; x), z ~ N(0, I): the conditional generator PCP uses."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((len(x) * num, lgm.latent_dim))
    return cvae_mod.decode(lgm, z, np.repeat(x, num, 0)).reshape(len(x), num, -1)


@dataclass
class PCP:
    """Probabilistic conformal prediction (Wang et al. 2022b): union of balls B(Yhat_k, r)."""

    lgm: cvae_mod.CVAE
    num_samples: int = 50
    seed: int = 0
    radius: float | None = None

    def scores(self, x: np.ndarray, y: np.ndarray, seed: int) -> np.ndarray:
        s = generator_samples(self.lgm, x, self.num_samples, seed)
        return np.linalg.norm(s - y[:, None, :], axis=2).min(1)

    def calibrate(self, x_cal: np.ndarray, y_cal: np.ndarray, alpha: float) -> PCP:
        self.radius = crel.conformal_radius(self.scores(x_cal, y_cal, self.seed), alpha)
        return self

    def evaluate(self, x: np.ndarray, y: np.ndarray, y_grid: Grid) -> dict:
        samples = generator_samples(self.lgm, x, self.num_samples, self.seed + PCP_AREA_STREAM)
        covered = np.linalg.norm(samples - y[:, None, :], axis=2).min(1) <= self.radius
        pts = y_grid.points
        area = np.array([np.sum(cKDTree(s).query(pts)[0] <= self.radius) for s in samples])
        return {"covered": covered, "area": area}
