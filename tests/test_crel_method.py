"""CReL's geometry and calibration (spec 02 §3.3-3.7, §5): known answers, invariants, an independent
brute-force solver, and coverage checked over repetitions on a distribution with known quantiles."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from scipy.stats import norm

from lib import crel


# ----------------------------------------------------------------------------------------------------
# conformal_radius
# ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n, alpha", [(9, 0.1), (10, 0.1), (19, 0.05), (100, 0.02), (4000, 0.1), (49, 0.02)])
def test_conformal_radius_is_the_ceil_order_statistic(n, alpha):
    rng = np.random.default_rng(n)
    values = rng.permutation(np.arange(1, n + 1)).astype(float)  # the k-th smallest is k
    k = math.ceil((n + 1) * (1 - alpha))
    assert crel.conformal_radius(values, alpha) == k


def test_conformal_radius_edge_cases():
    assert crel.conformal_radius([0.0, 0.0, 0.0, 5.0] * 5, 0.3) == 0.0  # k = 15 of 15 zeros
    assert crel.conformal_radius([0.0, 0.0, 0.0, 5.0] * 5, 0.25) == 5.0  # k = 16
    with pytest.raises(ValueError, match="needs at least 9 calibration points"):
        crel.conformal_radius(np.ones(8), 0.1)
    assert crel.conformal_radius(np.ones(8), 0.1, allow_infinite=True) == math.inf
    for bad in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="alpha"):
            crel.conformal_radius(np.ones(100), bad)
    with pytest.raises(ValueError, match="empty"):
        crel.conformal_radius([], 0.1)
    with pytest.raises(ValueError, match="NaN"):
        crel.conformal_radius([1.0, np.nan] * 20, 0.1)
    assert crel.min_calibration_points(0.1) == 9 and crel.min_calibration_points(0.02) == 49


# ----------------------------------------------------------------------------------------------------
# distance_to_region against an independent brute-force KKT solver
# ----------------------------------------------------------------------------------------------------
def brute_force_projection(z: np.ndarray, U: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Enumerate active sets of size <= r; the feasible KKT point (multipliers >= 0) is the projection."""
    if np.all(U @ z >= q - 1e-12):
        return z
    best = None
    for size in range(1, U.shape[1] + 1):
        for S in itertools.combinations(range(len(U)), size):
            A = U[list(S)]
            gram = A @ A.T
            if np.linalg.matrix_rank(gram) < size:
                continue
            lam = np.linalg.solve(gram, q[list(S)] - A @ z)
            w = z + A.T @ lam
            if lam.min() >= -1e-10 and np.all(U @ w >= q - 1e-9):
                if best is None or np.linalg.norm(w - z) < np.linalg.norm(best - z):
                    best = w
    return best


def random_polytope(rng: np.random.Generator, r: int, K: int) -> tuple[np.ndarray, np.ndarray]:
    U = rng.standard_normal((K, r))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    center = rng.standard_normal(r)
    q = U @ center - rng.uniform(0.2, 2.0, K)  # contains a ball around `center`
    return U, q


@pytest.mark.parametrize("r, K", [(2, 7), (3, 8), (4, 9)])
def test_distance_to_region_matches_brute_force(r, K):
    rng = np.random.default_rng(10 * r + K)
    for _ in range(15):
        U, q = random_polytope(rng, r, K)
        for _ in range(4):
            z = rng.standard_normal(r) * 3
            dist, near = crel.distance_to_region(z, U, q)
            expected = brute_force_projection(z, U, q)
            assert np.allclose(near, expected, atol=1e-7)
            assert dist == pytest.approx(np.linalg.norm(expected - z), abs=1e-7)
            assert np.all(U @ near >= q - 1e-8)  # the nearest point is feasible


def test_inside_points_have_distance_zero_and_the_empty_region_is_reported():
    rng = np.random.default_rng(0)
    U, q = random_polytope(rng, 3, 12)
    center, radius = crel.chebyshev_center(U, q)
    assert radius > 0
    for _ in range(20):
        z = center + rng.standard_normal(3) * radius / 4
        dist, near = crel.distance_to_region(z, U, q)
        assert dist == 0.0 and np.array_equal(near, z)
    U2 = np.array([[1.0, 0.0], [-1.0, 0.0]])
    with pytest.raises(ValueError, match="empty"):
        crel.distance_to_region(np.zeros(2), U2, np.array([1.0, 0.0]))  # w1 >= 1 and w1 <= 0
    _, t = crel.chebyshev_center(U2, np.array([1.0, 0.0]))
    assert t == pytest.approx(-0.5)


def test_exact_2d_polygon_agrees_with_the_qp():
    rng = np.random.default_rng(3)
    U = crel.directions(32, 2)
    q = -1 - rng.random(32)
    pts = rng.standard_normal((300, 2)) * 3
    qp = crel.distances_to_regions(pts, U, np.repeat(q[None], 300, 0))[0]
    assert np.allclose(crel.polygon_distances(pts, crel.polygon(U, q)), qp, atol=1e-9)


# ----------------------------------------------------------------------------------------------------
# Projection onto the inflated set
# ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("inflation", crel.INFLATIONS)
def test_projection_is_idempotent_non_expansive_and_exact(inflation):
    rng = np.random.default_rng(5)
    U, q = random_polytope(rng, 3, 10)
    gamma = 0.4
    Z = rng.standard_normal((60, 3)) * 3
    P = np.stack([crel.project_inflated(z, U, q, gamma, inflation) for z in Z])
    for z, p in zip(Z, P):
        assert np.allclose(crel.project_inflated(p, U, q, gamma, inflation), p, atol=1e-8)
        if inflation == "ball":
            d = crel.distance_to_region(z, U, q)[0]
            assert np.linalg.norm(p - z) == pytest.approx(max(0.0, d - gamma), abs=1e-8)
            assert crel.distance_to_region(p, U, q)[0] <= gamma + 1e-8
        else:
            assert np.all(U @ p >= q - gamma - 1e-8)
    for i in range(len(Z) - 1):
        assert np.linalg.norm(P[i] - P[i + 1]) <= np.linalg.norm(Z[i] - Z[i + 1]) + 1e-9


def test_steiner_area_matches_monte_carlo():
    rng = np.random.default_rng(1)
    U, q = crel.directions(12, 2), -1 - 0.5 * rng.random(12)
    V, gamma = crel.polygon(U, q), 0.3
    box = np.abs(V).max() + gamma + 0.1
    pts = rng.uniform(-box, box, (400_000, 2))
    inside = crel.polygon_distances(pts, V) <= gamma
    mc = inside.mean() * (2 * box) ** 2
    se = math.sqrt(inside.mean() * (1 - inside.mean()) / len(pts)) * (2 * box) ** 2
    assert crel.steiner_area(V, gamma) == pytest.approx(mc, abs=4 * se)


# ----------------------------------------------------------------------------------------------------
# Calibration over repetitions on N(0, I_2) with exact directional quantiles (§5)
# ----------------------------------------------------------------------------------------------------
class ConstantQuantiles(torch.nn.Module):
    """A stand-in DQR whose quantiles do not depend on x."""

    def __init__(self, q: np.ndarray):
        super().__init__()
        self.q = torch.as_tensor(q, dtype=torch.float32)

    def forward(self, x: torch.Tensor, U: torch.Tensor) -> torch.Tensor:
        return self.q[None].expand(len(x), -1)


def exact_gaussian_model(tau: float, K: int = 64, dqr_q: np.ndarray | None = None) -> crel.CReL:
    U = crel.directions(K, 2)
    q = np.full(K, -norm.ppf(1 - tau)) if dqr_q is None else dqr_q
    return crel.CReL(U=U, dqr=ConstantQuantiles(q), lgm=None, tau_dir=tau)


def test_pre_calibration_coverage_of_exact_quantiles_is_the_known_value():
    rng = np.random.default_rng(0)
    n = 20_000
    for tau, expected in ((0.1, 0.561), (0.05, 0.742)):  # spec §5, exact-quantile geometry
        model = exact_gaussian_model(tau)
        y = rng.standard_normal((n, 2))
        inside = np.mean(model.scores(np.zeros((n, 1)), y) == 0)
        assert inside == pytest.approx(expected, abs=4 * math.sqrt(expected * (1 - expected) / n) + 0.002)


def test_coverage_over_repetitions_lies_within_the_conformal_bounds():
    alpha, n_cal, n_test, reps = 0.1, 99, 400, 150
    model = exact_gaussian_model(alpha)
    rng = np.random.default_rng(42)
    cov = np.empty(reps)
    for i in range(reps):
        model.calibrate(np.zeros((n_cal, 1)), rng.standard_normal((n_cal, 2)), alpha)
        assert model.info["pre_calibration_coverage"] < 1 - alpha or model.gamma == 0
        cov[i] = model.contains(np.zeros((n_test, 1)), rng.standard_normal((n_test, 2))).mean()
    se = cov.std(ddof=1) / math.sqrt(reps)
    assert 1 - alpha - 3 * se <= cov.mean() <= 1 - alpha + 1 / (n_cal + 1) + 3 * se


def test_calibrate_rejects_too_few_points_and_uncalibrated_use():
    model = exact_gaussian_model(0.1)
    with pytest.raises(RuntimeError, match="calibrate"):
        model.contains(np.zeros((3, 1)), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="at least 49 calibration points"):
        model.calibrate(np.zeros((20, 1)), np.zeros((20, 2)), 0.02)


# ----------------------------------------------------------------------------------------------------
# The reliability score (§3.6, §5)
# ----------------------------------------------------------------------------------------------------
def test_reliability_never_exceeds_the_metric_at_any_point_of_the_set():
    model = exact_gaussian_model(0.1, K=16)
    rng = np.random.default_rng(7)
    model.calibrate(np.zeros((200, 1)), rng.standard_normal((200, 2)), 0.1)
    gt = np.array([[0.3, -0.2], [2.0, 1.0]])

    def metric(y: torch.Tensor, g: torch.Tensor) -> torch.Tensor:  # non-convex, higher is better
        return torch.cos(2 * y[:, 0]) - 0.5 * torch.linalg.vector_norm(y - g, dim=1)

    rel = model.reliability(np.zeros((2, 1)), gt, metric, starts=50, steps=60, lr=0.05, seed=0)
    q = model.quantiles(np.zeros((1, 1)))[0]
    for i in range(2):
        assert crel.distance_to_region(rel["z"][i], model.U, q)[0] <= model.gamma + 1e-8  # z* in S
        pts = rng.uniform(-4, 4, (20_000, 2))
        pts = pts[crel.polygon_distances(pts, crel.polygon(model.U, q)) <= model.gamma]
        values = metric(torch.as_tensor(pts), torch.as_tensor(gt[i]).expand(len(pts), -1)).numpy()
        assert rel["score"][i] <= values.min() + 1e-6  # never above the metric anywhere in S
        assert rel["score"][i] >= values.min() - 0.05  # and close to the dense search
        assert rel["start_scores"].shape == (2, 50) and rel["spread"][i] >= 0


def test_dqr_recovers_known_directional_quantiles():
    rng = np.random.default_rng(0)
    n, tau = 3000, 0.1
    x = rng.uniform(-1, 1, (n, 1))
    z = np.hstack([x, -x]) + rng.standard_normal((n, 2)) * 0.5  # mean (x, -x), sd 0.5
    U = crel.directions(8, 2)
    net = crel.train_dqr(x, z, U, tau=tau, settings=crel.DQRSettings(epochs=25, batch_size=256, lr=3e-3), seed=0)
    xs = np.array([[-0.5], [0.0], [0.5]])
    with torch.no_grad():
        q = net(torch.as_tensor(xs, dtype=torch.float32), torch.as_tensor(U, dtype=torch.float32)).numpy()
    true = np.hstack([xs, -xs]) @ U.T + 0.5 * norm.ppf(tau)
    assert np.abs(q - true).max() < 0.2  # quantile se at n = 3000 is ~0.02; fit error dominates


def test_projected_descent_reaches_the_nearest_point_of_a_disc_and_never_leaves_it():
    """min over the unit disc of ||z - t|| is |t| - 1, at t / |t|; every iterate is projected, so the answer
    lies in the disc; each row keeps its best iterate, so more steps never do worse."""
    targets = torch.tensor([[3.0, 0.0], [0.0, -2.0], [0.2, 0.1]])  # the last one inside: distance 0

    def project(z: np.ndarray) -> np.ndarray:
        return z / np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1.0)

    def value(z: torch.Tensor) -> torch.Tensor:
        return torch.linalg.vector_norm(z - targets, dim=1)

    start = np.array([[-0.5, 0.5], [0.3, 0.6], [-0.9, 0.0]])
    z, val = crel.projected_descent(value, start, project, [0.5 * 0.9 ** k for k in range(100)])
    np.testing.assert_allclose(val, [2.0, 1.0, 0.0], atol=1e-3)
    np.testing.assert_allclose(z[:2], [[1.0, 0.0], [0.0, -1.0]], atol=3e-3)
    assert (np.linalg.norm(z, axis=1) <= 1 + 1e-12).all()
    _, fewer = crel.projected_descent(value, start, project, [0.5 * 0.9 ** k for k in range(5)])
    assert (val <= fewer).all()
    z0, val0 = crel.projected_descent(value, start, project, [])  # no step: the starts themselves
    np.testing.assert_array_equal(z0, start)
    np.testing.assert_allclose(val0, value(torch.as_tensor(start, dtype=torch.float32)).numpy(), rtol=1e-6)


@pytest.mark.parametrize("field, value", [("transform", "pca"), ("inflation", "box"), ("tau_dir", 1.5),
                                          ("empty_region", "ignore"), ("latent_dim", 0)])
def test_fit_settings_are_checked_before_any_training(field, value):
    from dataclasses import replace

    x = np.zeros((10, 1))
    with pytest.raises(ValueError, match=field):
        crel.fit(x, np.zeros((10, 2)), replace(crel.FitSettings(), **{field: value}))


def test_fit_cuts_the_training_rows_at_lgm_fraction_and_trains_the_dqr_on_the_rest():
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-1, 1, (40, 1)), rng.standard_normal((40, 2))
    settings = crel.FitSettings(transform="identity", n_directions=8, lgm_fraction=0.75,
                                dqr=crel.DQRSettings(hidden=(8,), epochs=1))
    m = crel.fit(x, y, settings, seed=3)
    alone = crel.train_dqr(x[30:], y[30:], m.U, tau=settings.tau_dir, settings=settings.dqr,
                           seed=3 + crel.DQR_STREAM)
    assert m.lgm is None and m.U.shape == (8, 2)
    assert all(torch.equal(a, b) for a, b in zip(m.dqr.state_dict().values(), alone.state_dict().values()))
    with pytest.raises(ValueError, match="DQR fold has 1 points"):
        crel.fit(x[:4], y[:4], settings)


@pytest.mark.parametrize("shape", [(4, 5), (20, 1), (2, 3, 4), ()])
def test_conformal_radius_refuses_distances_that_are_not_one_dimensional(shape):
    """A 2-D `distances` was flattened silently (a (n, 1) column as well): n calibration scores are 1-D."""
    with pytest.raises(ValueError, match=r"^distances must be a 1-D \(n,\) array; got shape"):
        crel.conformal_radius(np.ones(shape), 0.1)
