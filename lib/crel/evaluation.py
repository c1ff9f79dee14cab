"""Coverage-Y and area of a decoded set, and Feldman et al.'s region measured the same way (spec 02 §2.3, §3.7).

Membership is decided by the set itself, not by the spacing of the latent grid that samples it (a threshold
on the decoded grid points' own nearest-neighbour gaps shrinks with the grid, so it is biased even for a
perfect LGM):

- **Bijective LGM (the flow), exact.** y is in the decoded set Dec(S(x); x) iff Enc(y; x) is in S(x), so
  Coverage-Y = share of test y with score(Enc(y)) <= gamma, and area = the number of Y-grid points whose
  code lies in S(x) (the paper's "Area" as a grid-point count).
- **Any LGM (the CVAE), decoded-set distance.** dist(y, Dec(S(x); x)) = min over z in S(x) of
  ||Dec(z; x) - y||, found by projected gradient descent over S(x) started from the latent grid point whose
  decoding is nearest to y; y is covered iff that distance is <= `tol` (Y units). Only points whose distance
  to the decoded grid points (the "cloud") leaves the answer open are optimised: it is an upper bound of the
  set distance, so cloud distance <= thr decides "within"; cloud distance > thr + 1.5 rho (rho = the largest
  nearest-neighbour gap of the cloud, the scale at which it can miss part of the set) decides "outside"
  ([interpretation]: a margin, not a proof).
- **Feldman et al.** with either LGM: the region Dec(R(x)) of the 256-direction DQR (no inflation), and
  the signed score of y: outside, its distance to the decoded region (the same optimisation); inside,
  minus the distance to the nearest Y-grid point outside the region (membership decided the same way as
  for CReL). No region (empty R(x)) scores +inf.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy.spatial import cKDTree

from lib.crel import method as crel
from lib.crel.baselines import Grid


@dataclass(frozen=True)
class PGDSettings:
    steps: int = 40
    lr_start: float = 2.0  # in latent-grid spacings
    lr_end: float = 0.01  # in latent-grid spacings (geometric decay)


# ----------------------------------------------------------------------------------------------------
# Exact projection onto S in 2-D, vectorised over points
# ----------------------------------------------------------------------------------------------------
def _project_polygon(Z: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Nearest points of the convex polygon V: (m, 2) ccw to Z: (n, 2) (Z itself inside).

    Inside (every edge's cross product >= 0) a point is its own projection; only the points outside are
    compared with the m edges' nearest points (in PGD most iterates sit on or inside the boundary)."""
    a, ab = V, np.roll(V, -1, axis=0) - V
    ap = Z[:, None, :] - a[None]  # (n, m, 2)
    cross = ab[:, 0] * ap[..., 1] - ab[:, 1] * ap[..., 0]
    out = np.array(Z, np.float64, copy=True)
    rows = np.nonzero((cross < -1e-12).any(1))[0]
    if len(rows):
        ap = ap[rows]
        t = np.clip(np.einsum("nmi,mi->nm", ap, ab) / (ab * ab).sum(-1).clip(1e-300), 0, 1)  # foot on each edge
        off = ap - t[..., None] * ab  # from each edge's nearest point to z
        k = np.einsum("nmi,nmi->nm", off, off).argmin(1)
        out[rows] = a[k] + t[np.arange(len(rows)), k, None] * ab[k]
    return out


def set_projector(U: np.ndarray, q: np.ndarray, gamma: float, inflation: str = "ball"):
    """A function Z (n, r) -> exact projections onto S = {U w >= q} + B_gamma (or the shifted polygon for the
    half-space shift or gamma < 0), vectorised in 2-D; None if S is empty."""
    q_eff, radius = (q - gamma, 0.0) if crel.is_shifted_set(inflation, gamma) else (q, gamma)
    if U.shape[1] == 2:
        try:
            V = crel.polygon(U, q_eff)
        except ValueError:
            V = None
        if V is not None:
            def project(Z: np.ndarray) -> np.ndarray:
                W = _project_polygon(Z, V)
                if radius <= 0:
                    return W
                d = np.linalg.norm(Z - W, axis=1)
                far = d > radius
                out = Z.copy()
                out[far] = W[far] + radius * (Z[far] - W[far]) / d[far, None]
                return out
            return project
    if not crel._nonempty(U, q_eff) and radius <= 0:
        return None

    def project_loop(Z: np.ndarray) -> np.ndarray:
        return np.stack([crel.project_inflated(z, U, q, gamma, inflation) for z in Z]) if len(Z) else Z
    return project_loop


def in_set_mask(Z: np.ndarray, U: np.ndarray, q: np.ndarray, gamma: float, inflation: str = "ball") -> np.ndarray:
    """(n,) bool: exact membership of codes Z: (n, r) in S (2-D: exact polygon distances)."""
    slack = (q[None, :] - Z @ U.T).max(1)
    if gamma <= 0 or inflation == "halfspace_shift":
        return slack <= gamma + 1e-12
    keep = slack <= 0
    cand = np.nonzero(~keep & (slack <= gamma + 1e-12))[0]
    if len(cand):
        if U.shape[1] == 2:
            try:
                dist = crel.polygon_distances(Z[cand], crel.polygon(U, q))
            except ValueError:
                dist = crel.distances_to_regions(Z[cand], U, np.repeat(q[None], len(cand), 0))[0]
        else:
            dist = crel.distances_to_regions(Z[cand], U, np.repeat(q[None], len(cand), 0))[0]
        keep[cand[dist <= gamma + 1e-12]] = True
    return keep


# ----------------------------------------------------------------------------------------------------
# The decoded set at one condition
# ----------------------------------------------------------------------------------------------------
class DecodedSet:
    """Dec(S(x); x) at one condition x for a fitted CReL's LGM; S given by (U, q, gamma, inflation)."""

    def __init__(self, model: crel.CReL, x: np.ndarray, U: np.ndarray, q: np.ndarray, gamma: float,
                 inflation: str, z_grid: np.ndarray, pgd: PGDSettings = PGDSettings()):
        self.model, self.x, self.U, self.q, self.gamma, self.inflation = model, np.atleast_1d(x), U, q, gamma, inflation
        self.pgd = pgd
        self.project = set_projector(U, q, gamma, inflation) if math.isfinite(gamma) else (lambda Z: Z)
        keep = in_set_mask(z_grid, U, q, gamma, inflation) if math.isfinite(gamma) else np.ones(len(z_grid), bool)
        self.z = z_grid[keep]
        if self.project is not None and len(self.z) == 0:  # a set thinner than the grid: its Chebyshev centre
            c = crel.chebyshev_center(U, q - (gamma if crel.is_shifted_set(inflation, gamma) else 0.0))[0]
            self.z = self.project(c[None])
        self.empty = self.project is None or len(self.z) == 0
        spacing = np.ptp(z_grid, axis=0) / max(1, round(len(z_grid) ** (1 / z_grid.shape[1])) - 1)
        self.step = float(np.max(spacing))
        if self.empty:
            return
        self.points = model.decode(self.z, np.repeat(self.x[None], len(self.z), 0))
        self.tree = cKDTree(self.points)
        self.rho = float(self.tree.query(self.points, k=2)[0][:, 1].max()) if len(self.points) > 1 else math.inf

    def distances(self, Y: np.ndarray, refine: np.ndarray | None = None) -> np.ndarray:
        """Distances (m,) of Y: (m, d) to the decoded set: the cloud's upper bound, improved by projected
        gradient descent on the rows in `refine` (bool mask; default all). +inf for an empty set."""
        Y = np.atleast_2d(np.asarray(Y, np.float64))
        if self.empty:
            return np.full(len(Y), math.inf)
        dist, idx = self.tree.query(Y)
        rows = np.arange(len(Y)) if refine is None else np.nonzero(refine)[0]
        if len(rows) and self.model.lgm is not None:
            dist[rows] = np.minimum(dist[rows], self._pgd(self.z[idx[rows]], Y[rows]))
        return dist

    def within(self, Y: np.ndarray, thr: float) -> np.ndarray:
        """(m,) bool: dist(y, decoded set) <= thr, optimising only the rows the cloud leaves open."""
        Y = np.atleast_2d(np.asarray(Y, np.float64))
        if self.empty:
            return np.zeros(len(Y), bool)
        cloud = self.tree.query(Y)[0]
        open_ = (cloud > thr) & (cloud <= thr + 1.5 * self.rho)
        return self.distances(Y, refine=open_) <= thr

    def _pgd(self, z0: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return _pgd(self.model.lgm, np.asarray(z0, np.float64), np.repeat(self.x[None], len(z0), 0), Y,
                    [(np.arange(len(z0)), self.project)], self.step, self.pgd)


def _pgd(lgm: torch.nn.Module, z0: np.ndarray, x: np.ndarray, Y: np.ndarray, groups: list, step: float,
         pgd: PGDSettings) -> np.ndarray:
    """min over z in S of ||Dec(z; x) - y|| for each row (`lib.crel.method.projected_descent`) with a geometric
    step decay from pgd.lr_start to pgd.lr_end latent-grid spacings `step`. groups: [(row indices, projector onto
    that rows' set)]."""
    xt = torch.as_tensor(x, dtype=torch.float32)
    yt = torch.as_tensor(Y, dtype=torch.float32)

    def project(Z: np.ndarray) -> np.ndarray:
        out = Z.copy()
        for rows, proj in groups:
            out[rows] = proj(Z[rows])
        return out

    lrs = [float(v) for v in step * np.geomspace(pgd.lr_start, pgd.lr_end, max(1, pgd.steps))]
    return crel.projected_descent(lambda zt: torch.linalg.vector_norm(lgm.decode(zt, xt) - yt, dim=1), project(z0),
                                  project, lrs)[1]


# ----------------------------------------------------------------------------------------------------
# CReL's Coverage-Y and area
# ----------------------------------------------------------------------------------------------------
def exact_output_evaluation(model: crel.CReL, x: np.ndarray, y: np.ndarray, y_grid: Grid | None) -> dict:
    """Bijective LGM: covered = Enc(y) in S^gamma(x); area = # Y-grid points whose code is in S^gamma(x)
    (None when y_grid is None)."""
    if not getattr(model.lgm, "bijective", False):
        raise ValueError("exact_output_evaluation needs a bijective LGM (LGM='flow'); use decoded_set_evaluation.")
    covered = model.contains(x, y)
    if y_grid is None:
        return {"covered": covered, "area": None}
    pts = y_grid.points
    q = model.quantiles(x)
    area = np.array([np.sum(in_set_mask(model.latent(np.repeat(xi[None], len(pts), 0), pts), model.U, qi,
                                        model.gamma, model.inflation))
                     for xi, qi in zip(np.atleast_2d(x), q)], float)
    return {"covered": covered, "area": area}


def decoded_set_evaluation(model: crel.CReL, x: np.ndarray, y: np.ndarray, z_grid: np.ndarray, y_grid: Grid,
                           tol: float, pgd: PGDSettings = PGDSettings()) -> dict:
    """Any LGM: covered = dist(y, Dec(S^gamma(x))) <= tol; area = # Y-grid points within tol of that set."""
    q, pts = model.quantiles(x), y_grid.points
    covered, area = np.zeros(len(x), bool), np.zeros(len(x))
    for i, (xi, qi, yi) in enumerate(zip(np.atleast_2d(x), q, y)):
        dec = DecodedSet(model, xi, model.U, qi, model.gamma, model.inflation, z_grid, pgd)
        inside = dec.within(np.vstack([yi[None], pts]), tol)
        covered[i], area[i] = inside[0], inside[1:].sum()
    return {"covered": covered, "area": area}


# ----------------------------------------------------------------------------------------------------
# Feldman et al. measured the same way
# ----------------------------------------------------------------------------------------------------
@dataclass
class FeldmanRegion:
    """Feldman et al.'s region Dec(R(x)) (the DQR network of a fitted CReL along the directions U, e.g. 256, on
    its LGM; no inflation) with the signed Y-space score; membership exact for a bijective LGM, else
    dist <= tol to the decoded region. The synthetic table and the runtime study use it."""

    model: crel.CReL
    U: np.ndarray
    z_grid: np.ndarray
    y_grid: Grid
    tol: float = 0.0
    pgd: PGDSettings = PGDSettings()
    radius: float | None = None

    def _member(self, dec: DecodedSet, xi: np.ndarray, qi: np.ndarray, Y: np.ndarray) -> np.ndarray:
        if getattr(self.model.lgm, "bijective", False):
            z = self.model.latent(np.repeat(xi[None], len(Y), 0), Y)
            return in_set_mask(z, self.U, qi, 0.0)
        return dec.within(Y, self.tol)

    def _depth(self, dec: DecodedSet, xi: np.ndarray, qi: np.ndarray, yi: np.ndarray, pts: np.ndarray) -> float:
        """Distance from y (inside) to the nearest Y-grid point outside the region (+inf if none).

        Bijective: exact membership of every grid point. Otherwise only the grid points nearer to y than the
        nearest grid point the cloud already places outside (cloud distance > tol + 1.5 rho) are optimised."""
        near = np.linalg.norm(pts - yi, axis=1)
        if getattr(self.model.lgm, "bijective", False):
            outside = ~self._member(dec, xi, qi, pts)
            return float(near[outside].min()) if outside.any() else math.inf
        cloud = dec.tree.query(pts)[0]
        sure_out = cloud > self.tol + 1.5 * dec.rho
        bound = float(near[sure_out].min()) if sure_out.any() else math.inf
        cand = np.nonzero(~sure_out & (near < bound) & (cloud > self.tol))[0]  # cloud <= tol: surely inside
        if len(cand):
            out_cand = ~dec.within(pts[cand], self.tol)
            if out_cand.any():
                bound = min(bound, float(near[cand[out_cand]].min()))
        return bound

    def _region(self, xi: np.ndarray, qi: np.ndarray) -> DecodedSet:
        return DecodedSet(self.model, xi, self.U, qi, 0.0, "ball", self.z_grid, self.pgd)

    def scores(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Signed scores (n,): outside, dist(y, Dec(R(x))); inside, minus the distance to the nearest
        Y-grid point outside; +inf where R(x) is empty."""
        pts, out = self.y_grid.points, np.empty(len(x))
        x2 = np.atleast_2d(x)
        outside = []  # (row, decoded set): their distances are optimised together, one batch
        for i, (xi, qi, yi) in enumerate(zip(x2, self.model.directional_quantiles(x, self.U), y)):
            dec = self._region(xi, qi)
            if dec.empty:
                out[i] = math.inf
            elif self._member(dec, xi, qi, yi[None])[0]:
                out[i] = -self._depth(dec, xi, qi, yi, pts)
            else:
                outside.append((i, dec))
        if outside:
            rows = np.array([i for i, _ in outside])
            Y = np.asarray(y, np.float64)[rows]
            cloud, z0 = np.empty(len(rows)), np.empty((len(rows), self.z_grid.shape[1]))
            for j, (_i, dec) in enumerate(outside):
                cloud[j], k = dec.tree.query(Y[j])
                z0[j] = dec.z[k]
            groups = [(np.array([j]), dec.project) for j, (_, dec) in enumerate(outside)]
            step = max(dec.step for _, dec in outside)
            out[rows] = np.minimum(cloud, _pgd(self.model.lgm, z0, x2[rows], Y, groups, step, self.pgd))
        return out

    def calibrate(self, x_cal: np.ndarray, y_cal: np.ndarray, alpha: float) -> FeldmanRegion:
        self.radius = crel.conformal_radius(self.scores(x_cal, y_cal), alpha)
        return self

    def evaluate(self, x: np.ndarray, y: np.ndarray) -> dict:
        """Coverage-Y (n,) bool and area (n,) Y-grid counts with the calibrated radius."""
        if self.radius is None:
            raise RuntimeError("call .calibrate(x_cal, y_cal, alpha) first.")
        pts, r = self.y_grid.points, self.radius
        covered, area = np.zeros(len(x), bool), np.zeros(len(x))
        for i, (xi, qi, yi) in enumerate(zip(np.atleast_2d(x), self.model.directional_quantiles(x, self.U), y)):
            dec = self._region(xi, qi)
            if dec.empty:
                covered[i], area[i] = r == math.inf, len(pts) if r == math.inf else 0
                continue
            Y = np.vstack([yi[None], pts])
            inside = self._member(dec, xi, qi, Y)
            if r >= 0:
                ok = inside.copy()
                if r > 0:
                    ok[~inside] = dec.within(Y[~inside], r)
            else:  # a negative radius erodes: points at least |r| from every outside grid point
                outside_pts = pts[~inside[1:]]
                depth = cKDTree(outside_pts).query(Y)[0] if len(outside_pts) else np.full(len(Y), math.inf)
                ok = inside & (-depth <= r)
            covered[i], area[i] = ok[0], ok[1:].sum()
        return {"covered": covered, "area": area}
