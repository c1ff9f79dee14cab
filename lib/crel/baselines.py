"""Output-space baselines of spec 02 §3.7-3.8 and the Y-grid on which coverage and area are measured.

- The Y-grid: `grid_size` points (G per axis, G^d ~ grid_size) spanning the [1 %, 99 %] quantile box of
  training responses padded by 0.2 ([interpretation], §3.7 step 2). "Area" is a count of grid points
  (Feldman's `covered_area`, [interpretation, strong numeric evidence]).
- Decoded clouds (§3.7 step 3): latent grid points inside a latent set are decoded; h is the 0.9-quantile
  of nearest-neighbour distances among them; y is in the region iff its distance to the cloud is <= h.
- Feldman et al. (ST-DQR): the same LGM and DQR (256 directions), the cloud of R(x) (no inflation), and a
  *signed radius* ([interpretation]): outside, the distance to the cloud; inside, minus the distance to
  the nearest out-of-region grid point. The radius is the conformal order statistic of calibration scores.
- PCP (Wang et al. 2022): union of balls of radius r around K generator samples; r the conformal
  order statistic of min_k ||Y_i - Yhat_ik||.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
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


# ----------------------------------------------------------------------------------------------------
# Decoded clouds
# ----------------------------------------------------------------------------------------------------
@dataclass
class Cloud:
    """A decoded point cloud with its KD-tree and threshold h (§3.7 step 3)."""

    points: np.ndarray
    tree: cKDTree
    h: float

    def distance(self, y: np.ndarray) -> np.ndarray:
        return self.tree.query(np.atleast_2d(y))[0]


def make_cloud(decoded: np.ndarray, max_points: int, rng: np.random.Generator, h_quantile: float = 0.9) -> Cloud:
    if len(decoded) > max_points:
        decoded = decoded[rng.choice(len(decoded), max_points, replace=False)]
    tree = cKDTree(decoded)
    if len(decoded) < 2:
        return Cloud(decoded, tree, 0.0)
    nn = tree.query(decoded, k=2)[0][:, 1]
    return Cloud(decoded, tree, float(np.quantile(nn, h_quantile)))


def latent_cloud(model: crel.CReL, x: np.ndarray, z_grid: np.ndarray, q: np.ndarray, U: np.ndarray, gamma: float,
                 max_points: int, rng: np.random.Generator, inflation: str = "ball") -> Cloud | None:
    """Decode the latent grid points of the set at one condition x: (p,): {dist(z, {U z >= q}) <= gamma} for the
    ball inflation, {U z >= q - gamma} for the half-space shift or a negative (signed-score) gamma."""
    slack = (q[None, :] - z_grid @ U.T).max(1)
    if crel.is_shifted_set(inflation, gamma) or gamma == 0:  # at gamma = 0 the set is R: the slack test is exact
        keep = slack <= gamma
    elif U.shape[1] == 2:
        keep = slack <= 0
        try:
            keep |= crel.polygon_distances(z_grid, crel.polygon(U, q)) <= gamma
        except ValueError:
            keep = slack <= gamma
    else:  # conservative pre-filter, then exact distances
        cand = np.nonzero(slack <= gamma * math.sqrt(U.shape[1]) + 1e-12)[0]
        dist = crel.distances_to_regions(z_grid[cand], U, np.repeat(q[None], len(cand), 0))[0]
        keep = np.zeros(len(z_grid), bool)
        keep[cand[dist <= gamma]] = True
    if not keep.any():
        return None
    decoded = model.decode(z_grid[keep], np.repeat(np.atleast_2d(x), keep.sum(), 0))
    return make_cloud(decoded, max_points, rng)


def signed_cloud_scores(cloud: Cloud | None, y: np.ndarray, grid_pts: np.ndarray) -> np.ndarray:
    """Feldman's signed score of y: (m, d) ([interpretation]): outside the region (distance to the cloud
    > h) the distance to the cloud; inside, minus the distance to the nearest out-of-region grid point."""
    if cloud is None:
        return np.full(len(y), np.inf)
    d_y = cloud.distance(y)
    out_grid = grid_pts[cloud.distance(grid_pts) > cloud.h]
    scores = d_y.copy()
    inside = d_y <= cloud.h
    if inside.any():
        scores[inside] = -cKDTree(out_grid).query(y[inside])[0] if len(out_grid) else -np.inf
    return scores


# ----------------------------------------------------------------------------------------------------
# Feldman et al. (ST-DQR with grid calibration)
# ----------------------------------------------------------------------------------------------------
@dataclass
class FeldmanRegion:
    """Feldman et al.'s output-space region on a fitted CReL (shared LGM + DQR) with `n_directions`."""

    model: crel.CReL
    U: np.ndarray
    z_grid: np.ndarray
    y_grid: Grid
    max_points: int = 20_000
    seed: int = 0
    radius: float | None = None

    def _quantiles(self, x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            q = self.model.dqr(torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(self.U, dtype=torch.float32))
        return q.double().numpy()

    def cloud(self, x: np.ndarray, q: np.ndarray, rng: np.random.Generator) -> Cloud | None:
        return latent_cloud(self.model, x, self.z_grid, q, self.U, 0.0, self.max_points, rng)

    def scores(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Signed scores (n,) of pairs x: (n, p), y: (n, d): one region per condition."""
        rng = np.random.default_rng(self.seed)
        q, pts = self._quantiles(x), self.y_grid.points
        return np.array([signed_cloud_scores(self.cloud(xi, qi, rng), yi[None], pts)[0]
                         for xi, qi, yi in zip(x, q, y)])

    def calibrate(self, x_cal: np.ndarray, y_cal: np.ndarray, alpha: float) -> FeldmanRegion:
        self.radius = crel.conformal_radius(self.scores(x_cal, y_cal), alpha)
        return self

    def evaluate(self, x: np.ndarray, y: np.ndarray) -> dict:
        """Coverage-Y (n,) bool and area (n,) grid-point counts at conditions x: (n, p), y: (n, d)."""
        rng = np.random.default_rng(self.seed + 1)
        q, pts = self._quantiles(x), self.y_grid.points
        covered, area = np.zeros(len(x), bool), np.zeros(len(x))
        for i, (xi, qi, yi) in enumerate(zip(x, q, y)):
            cloud = self.cloud(xi, qi, rng)
            s = signed_cloud_scores(cloud, np.vstack([yi[None], pts]), pts)
            covered[i], area[i] = s[0] <= self.radius, np.sum(s[1:] <= self.radius)
        return {"covered": covered, "area": area}


def crel_output_evaluation(model: crel.CReL, x: np.ndarray, y: np.ndarray, z_grid: np.ndarray, y_grid: Grid,
                           max_points: int = 20_000, seed: int = 0) -> dict:
    """CReL's Coverage-Y and area ([interpretation], §3.7): decode the latent grid points in S^gamma(x);
    y is covered iff its distance to the decoded cloud is <= h; area = grid points within h."""
    rng = np.random.default_rng(seed)
    q, pts = model.quantiles(x), y_grid.points
    covered, area = np.zeros(len(x), bool), np.zeros(len(x))
    for i, (xi, qi, yi) in enumerate(zip(x, q, y)):
        cloud = latent_cloud(model, xi, z_grid, qi, model.U, model.gamma, max_points, rng, model.inflation)
        if cloud is None:
            continue
        covered[i] = cloud.distance(yi[None])[0] <= cloud.h
        area[i] = np.sum(cloud.distance(pts) <= cloud.h)
    return {"covered": covered, "area": area}


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
        samples = generator_samples(self.lgm, x, self.num_samples, self.seed + 1)
        covered = np.linalg.norm(samples - y[:, None, :], axis=2).min(1) <= self.radius
        pts = y_grid.points
        area = np.array([np.sum(cKDTree(s).query(pts)[0] <= self.radius) for s in samples])
        return {"covered": covered, "area": area}
