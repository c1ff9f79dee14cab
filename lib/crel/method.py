"""CReL, conformal reliability of a conditional generator (Gao et al., ICML 2026; spec 02 §2.1, §3).

The three-fold pipeline: a conditional VAE maps outputs to latent codes z in R^r (`lib.crel.cvae`);
directional quantile regression (DQR) fits, for K unit directions u_k, the tau-quantile q_k(x) of u_k^T z
given x, so the region R(x) = {w : U w >= q(x)} is convex (§3.1); calibration codes get the exact
Euclidean distance E_i = dist(Z_i, R(X_i)) (a small QP, §3.3), gamma is their ceil((n+1)(1-alpha))-th
smallest value (§3.4) and the prediction set is S(x) = R(x) + B_gamma (§3.5). The reliability score is
min over z in S(x) of rho(Dec(z; x), GT), found by projected gradient descent from 50 starts (§3.6).

Geometry conventions: U: (K, r) unit directions as rows; q: (K,) or (n, K) DQR outputs.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy.optimize import linprog, nnls
from torch import nn

from lib.crel import cvae as cvae_mod
from lib.nn import mlp
from lib.params import check_choice, check_int, check_ndim, check_probability
from lib.train import Epochs, float_rows, make_optimiser, seeded, train_epochs

INFLATIONS = ("ball", "halfspace_shift")
CALIBRATION_SCORES = ("nonneg", "signed")
EMPTY_REGION = ("shift", "error")
TRANSFORMS = ("cvae", "identity")


# ----------------------------------------------------------------------------------------------------
# Conformal calibration (§3.4)
# ----------------------------------------------------------------------------------------------------
def conformal_rank(n: int, alpha: float) -> int:
    """k = ceil((n + 1)(1 - alpha)), the 1-based rank of the calibration score used as gamma."""
    check_probability("alpha", alpha)
    check_int("n (calibration points)", n, minimum=1)
    return math.ceil((n + 1) * (1 - alpha) - 1e-12)


def min_calibration_points(alpha: float) -> int:
    """The smallest n_cal for which ceil((n+1)(1-alpha)) <= n, i.e. gamma is finite."""
    check_probability("alpha", alpha)
    return math.ceil((1 - alpha) / alpha - 1e-12)


def conformal_radius(distances: np.ndarray, alpha: float, *, allow_infinite: bool = False) -> float:
    """gamma = the ceil((n+1)(1-alpha))-th smallest of `distances` (n,) (spec §3.4, paper step 4).

    If that rank exceeds n the set must be the whole space: gamma = +inf when `allow_infinite`, else a
    ValueError says how many calibration points alpha needs. Infinite scores are legitimate: +inf is "no
    region covers this point" (Feldman's score when R(x) holds no grid point), -inf "deep inside"; when the
    order statistic falls on a +inf score, gamma = +inf (the set is the whole space) with a RuntimeWarning.
    NaN is rejected.
    """
    d = check_ndim("distances", distances, 1, "1-D (n,)").astype(np.float64, copy=False)
    if d.size == 0:
        raise ValueError("distances is empty: conformal calibration needs at least one calibration point.")
    if np.isnan(d).any():
        raise ValueError(f"distances holds {int(np.isnan(d).sum())} NaN value(s).")
    k = conformal_rank(d.size, alpha)
    if k > d.size:
        if allow_infinite:
            return math.inf
        raise ValueError(f"alpha={alpha} needs at least {min_calibration_points(alpha)} calibration points "
                         f"(ceil((n+1)(1-alpha)) <= n); got n={d.size}.")
    gamma = float(np.partition(d, k - 1)[k - 1])
    if gamma == math.inf:
        warnings.warn(f"{int(np.isposinf(d).sum())} of {d.size} calibration scores are +inf (points no region "
                      f"covers) and the rank-{k} order statistic falls on them: gamma = +inf, the prediction set "
                      "is the whole space.", RuntimeWarning, stacklevel=2)
    return gamma


# ----------------------------------------------------------------------------------------------------
# Directions (§2.2, §3.1)
# ----------------------------------------------------------------------------------------------------
def directions(num: int, dim: int, seed: int = 0) -> np.ndarray:
    """(num, dim) float64 unit vectors: evenly spaced angles for dim 2, a Fibonacci sphere for dim 3,
    normalised Gaussian draws (seeded) otherwise; dim 1 gives +1 and -1."""
    check_int("n_directions", num, minimum=2)
    check_int("latent_dim", dim, minimum=1)
    if dim == 1:
        return np.array([[1.0], [-1.0]] * (num // 2) + [[1.0]] * (num % 2))
    if dim == 2:
        a = 2 * np.pi * np.arange(num) / num
        return np.stack([np.cos(a), np.sin(a)], 1)
    if dim == 3:
        i = np.arange(num) + 0.5
        phi, theta = np.arccos(1 - 2 * i / num), np.pi * (1 + 5 ** 0.5) * i
        return np.stack([np.cos(theta) * np.sin(phi), np.sin(theta) * np.sin(phi), np.cos(phi)], 1)
    u = np.random.default_rng(seed).standard_normal((num, dim))
    return u / np.linalg.norm(u, axis=1, keepdims=True)


# ----------------------------------------------------------------------------------------------------
# Exact distance and projection (§3.3, §3.5)
# ----------------------------------------------------------------------------------------------------
def distance_to_region(z: np.ndarray, U: np.ndarray, q: np.ndarray) -> tuple[float, np.ndarray]:
    """Exact Euclidean distance of z: (r,) to R = {w : U w >= q} and the nearest point w*: (r,).

    min ||w - z|| s.t. U w >= q is a least-distance program; with v = w - z it is min ||v|| s.t.
    U v >= c, c = q - U z, solved exactly by NNLS (Lawson & Hanson 1974, ch. 23): u = argmin_{u>=0}
    ||E u - f|| with E = [U^T; c^T], f = e_{r+1}; then v = -res[:r] / res[r] for res = E u - f.
    A zero residual means R is empty (ValueError). Points inside give (0, z).
    """
    z = np.asarray(z, np.float64)
    U, q = np.asarray(U, np.float64), np.asarray(q, np.float64)
    c = q - U @ z
    if c.max() <= 0:
        return 0.0, z.copy()
    r = len(z)
    E = np.vstack([U.T, c[None, :]])
    f = np.zeros(r + 1)
    f[-1] = 1.0
    u, _ = nnls(E, f, maxiter=50 * E.shape[1])
    res = E @ u - f
    if abs(res[-1]) < 1e-12:
        raise ValueError("the region {w : U w >= q} is empty (the directional quantiles cross).")
    v = -res[:r] / res[-1]
    return float(np.linalg.norm(v)), z + v


def distances_to_regions(Z: np.ndarray, U: np.ndarray, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise `distance_to_region`: Z: (n, r), Q: (n, K) -> distances (n,), nearest points (n, r)."""
    Z, Q = np.atleast_2d(Z), np.atleast_2d(Q)
    dist, near = np.zeros(len(Z)), np.array(Z, np.float64, copy=True)
    outside = np.nonzero((Q - Z @ U.T).max(1) > 0)[0]
    for i in outside:
        dist[i], near[i] = distance_to_region(Z[i], U, Q[i])
    return dist, near


def is_shifted_set(inflation: str, gamma: float) -> bool:
    """Is S^gamma the region with every half-space moved by gamma, {U w >= q - gamma}? True for the half-space
    shift inflation and for a negative (signed-score, §3.4) gamma, which erodes R; False for the ball
    R + B_gamma (§3.5). At gamma = 0 both readings give R itself."""
    return inflation == "halfspace_shift" or gamma < 0


def project_inflated(z: np.ndarray, U: np.ndarray, q: np.ndarray, gamma: float,
                     inflation: str = "ball") -> np.ndarray:
    """Exact projection of z: (r,) onto S = R + B_gamma ("ball", §3.5: project onto R, then move back
    towards z by gamma) or onto {U w >= q - gamma} ("halfspace_shift"); gamma < 0 with "ball" erodes R
    to {U w >= q + |gamma|} (the signed-score ablation, §3.4)."""
    check_choice("inflation", inflation, INFLATIONS)
    if is_shifted_set(inflation, gamma):
        return distance_to_region(z, U, q - gamma)[1]
    d, w = distance_to_region(z, U, q)
    if d <= gamma:
        return np.asarray(z, np.float64).copy()
    return w + gamma * (z - w) / d


def chebyshev_center(U: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, float]:
    """The centre c and radius t of the largest ball in {U w >= q} (linprog): max t s.t. u_k^T c - t >= q_k.

    t < 0 means the region is empty; {U w >= q + t} then contains c (§3.3, empty_region="shift").
    """
    K, r = U.shape
    cost = np.zeros(r + 1)
    cost[-1] = -1.0
    a_ub = np.hstack([-U, np.ones((K, 1))])  # -u^T c + t <= -q
    bounds = [(None, None)] * r + [(None, 1e6)]
    sol = linprog(cost, A_ub=a_ub, b_ub=-np.asarray(q, np.float64), bounds=bounds, method="highs")
    if sol.status != 0:
        raise RuntimeError(f"Chebyshev-centre LP failed: {sol.message}")
    return sol.x[:r], float(sol.x[-1])


# ----------------------------------------------------------------------------------------------------
# Directional quantile regression (§3.1)
# ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DQRSettings:
    hidden: tuple[int, ...] = (64, 64, 64)  # mqr `losses.py::predict_y`
    epochs: int = 100
    batch_size: int = 256
    directions_per_batch: int = 32  # mqr --num_u
    lr: float = 1e-3


class DQRNet(nn.Module):
    """q_u(x): an MLP of [x (standardised), u] -> the tau-quantile of u^T z given x."""

    def __init__(self, x_dim: int, z_dim: int, hidden: tuple[int, ...]):
        super().__init__()
        self.net = mlp([x_dim + z_dim, *hidden, 1], nn.LeakyReLU, negative_slope=0.2)
        self.register_buffer("x_mean", torch.zeros(x_dim))
        self.register_buffer("x_std", torch.ones(x_dim))
        self.register_buffer("scale", torch.ones(()))

    def forward(self, x: torch.Tensor, U: torch.Tensor) -> torch.Tensor:
        """(n, K) quantiles for x: (n, p) and directions U: (K, r)."""
        n, K = len(x), len(U)
        xs = ((x - self.x_mean) / self.x_std)[:, None, :].expand(n, K, -1)
        inp = torch.cat([xs, U[None].expand(n, K, -1)], 2)
        return self.net(inp).squeeze(-1) * self.scale


def pinball_loss(residual: torch.Tensor, tau: float) -> torch.Tensor:
    """Mean check loss rho_tau(e) = max(tau e, (tau - 1) e) for e = u^T z - q (§3.1)."""
    return torch.maximum(tau * residual, (tau - 1) * residual).mean()


def train_dqr(x: np.ndarray, z: np.ndarray, U: np.ndarray, *, tau: float, settings: DQRSettings, seed: int,
              device: torch.device | str = "cpu") -> DQRNet:
    """Fit q_u(x) by the pinball loss at level tau on u^T z - q_u(x), over the directions U (§3.1); each batch
    draws `directions_per_batch` of them."""
    gen = seeded(seed)
    xt, zt, Ut = float_rows(x, z, U)
    net = DQRNet(xt.shape[1], zt.shape[1], settings.hidden)
    net.x_mean, net.x_std = xt.mean(0), xt.std(0).clamp_min(1e-8) if len(xt) > 1 else torch.ones(xt.shape[1])
    net.scale = zt.std(0).mean().clamp_min(1e-8)
    net.to(device)
    xt, zt, Ut = xt.to(device), zt.to(device), Ut.to(device)
    per_batch = min(settings.directions_per_batch, len(Ut))

    def batch_loss(idx: torch.Tensor, _epoch: int) -> torch.Tensor:
        u = Ut[torch.randperm(len(Ut), generator=gen)[:per_batch].to(device)]
        return pinball_loss(zt[idx] @ u.T - net(xt[idx], u), tau)

    train_epochs(net, batch_loss, make_optimiser(net, lr=settings.lr), num_items=len(xt),
                 plan=Epochs(settings.epochs, settings.batch_size), generator=gen, index_device=device)
    return net.cpu()


# ----------------------------------------------------------------------------------------------------
# The fitted CReL object
# ----------------------------------------------------------------------------------------------------
Metric = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass
class CReL:
    """A fitted LGM + DQR; `calibrate` sets gamma; `contains` and `reliability` use the calibrated set."""

    U: np.ndarray
    dqr: DQRNet
    lgm: cvae_mod.CVAE | None  # None: identity transform (the latent space is the output space)
    tau_dir: float
    inflation: str = "ball"
    calibration_score: str = "nonneg"
    empty_region: str = "shift"
    gamma: float | None = None
    alpha: float | None = None
    info: dict = field(default_factory=dict)

    # -- latent space ---------------------------------------------------------------------------------
    @property
    def latent_dim(self) -> int:
        return self.U.shape[1]

    def latent(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Z = encoder mean mu(y, x): (n, r) float64 (identity: y itself)."""
        y = np.asarray(y, np.float64).reshape(len(y), -1)
        return y.copy() if self.lgm is None else cvae_mod.encode_mean(self.lgm, y, _as2d(x, len(y)))

    def decode(self, z: np.ndarray, x: np.ndarray) -> np.ndarray:
        z = np.asarray(z, np.float64)
        return z.copy() if self.lgm is None else cvae_mod.decode(self.lgm, z, _as2d(x, len(z)))

    def quantiles(self, x: np.ndarray) -> np.ndarray:
        """q(x): (n, K) float64, shifted by the Chebyshev radius where the region is empty (§3.3)."""
        return self._fix_empty(self.directional_quantiles(x))

    @torch.no_grad()
    def directional_quantiles(self, x: np.ndarray, U: np.ndarray | None = None) -> np.ndarray:
        """The DQR's quantiles of x: (n, p) along the rows of U: (K, r) (default: the fitted directions), (n, K)
        float64, as fitted (empty regions not shifted)."""
        U = self.U if U is None else U
        return self.dqr(torch.as_tensor(_as2d(x), dtype=torch.float32),
                        torch.as_tensor(U, dtype=torch.float32)).double().numpy()

    def _fix_empty(self, q: np.ndarray) -> np.ndarray:
        # A region is non-empty iff its Chebyshev radius is >= 0; only rows whose LDP fails need the LP.
        empty = 0
        for i in range(len(q)):
            if not _nonempty(self.U, q[i]):
                _, t = chebyshev_center(self.U, q[i])
                if self.empty_region == "error":
                    raise ValueError(f"the DQR region at condition {i} is empty (Chebyshev radius {t:.3g}).")
                q[i] = q[i] + t - 1e-9
                empty += 1
        self.info["empty_regions"] = self.info.get("empty_regions", 0) + empty
        return q

    # -- scores and calibration -----------------------------------------------------------------------
    def latent_scores(self, z: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Conformity scores of codes z: (n, r) for regions q: (n, K) (§3.4, §3.5)."""
        slack = z @ self.U.T - q  # >= 0 on every row inside R
        if self.inflation == "halfspace_shift":
            return np.maximum(-slack.min(1), 0.0)
        dist = distances_to_regions(z, self.U, q)[0]
        if self.calibration_score == "signed":
            return np.where(dist > 0, dist, -slack.min(1))
        return dist

    def scores(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return self.latent_scores(self.latent(x, y), self.quantiles(_as2d(x, len(y))))

    def calibrate(self, x_cal: np.ndarray, y_cal: np.ndarray, alpha: float) -> CReL:
        """gamma = the ceil((n+1)(1-alpha))-th smallest score of the calibration pairs; returns self."""
        check_probability("alpha", alpha)
        n = len(y_cal)
        if conformal_rank(n, alpha) > n:
            raise ValueError(f"alpha={alpha} needs at least {min_calibration_points(alpha)} calibration points; "
                             f"got {n}.")
        s = self.scores(x_cal, y_cal)
        self.gamma, self.alpha = conformal_radius(s, alpha), alpha
        self.info.update(pre_calibration_coverage=float(np.mean(s <= 0)), n_cal=n, cal_scores=s)
        return self

    def _require_calibrated(self) -> float:
        if self.gamma is None:
            raise RuntimeError("call .calibrate(x_cal, y_cal, alpha) first.")
        return self.gamma

    def contains(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """(n,) bool: is Z(x_i, y_i) in S^gamma(x_i)? (latent coverage, §2.3 Coverage-Z)."""
        return self.scores(x, y) <= self._require_calibrated() + 1e-12

    def project(self, z: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Exact projection of each row of z: (n, r) onto S^gamma of the matching row of q: (n, K)."""
        g = self._require_calibrated()
        eroded = is_shifted_set(self.inflation, g)
        out = np.array(z, np.float64, copy=True)
        outside = np.nonzero((q - (g if eroded else 0.0) - z @ self.U.T).max(1) > 0)[0]  # the rest lie in R
        for i in outside:
            out[i] = project_inflated(z[i], self.U, q[i], g, self.inflation)
        return out

    # -- the reliability score (§3.6) -----------------------------------------------------------------
    def reliability(self, x: np.ndarray, gt: np.ndarray, metric: Metric, *, z_init: np.ndarray | None = None,
                    starts: int = 50, steps: int = 100, lr: float = 0.05, seed: int = 0) -> dict:
        """CReL(x) = min_{z in S^gamma(x)} metric(Dec(z; x), gt) by projected gradient descent.

        x: (n, p) conditions; gt: (n, g) references; metric(y_pred (B, d), gt (B, g)) -> (B,) (higher is
        better, differentiable). Starts: z_init (n, r) (e.g. the code of an observed output; default the
        Chebyshev centre) + N(0, I), projected. Each step moves by lr along the normalised gradient and
        is projected exactly onto S^gamma; every start keeps its best iterate, so each reported z* lies in
        S^gamma. Returns {"score": (n,), "z": (n, r),
        "y": (n, d) = Dec(z*), "start_scores": (n, starts), "spread": (n,) std across starts}.
        """
        self._require_calibrated()
        x = _as2d(x)
        n, r = len(x), self.latent_dim
        check_int("starts", starts, minimum=1)
        check_int("steps", steps, minimum=0)
        q = self.quantiles(x)
        if z_init is None:
            z_init = np.stack([chebyshev_center(self.U, qi)[0] for qi in q])
        rng = np.random.default_rng(seed)
        z0 = (np.asarray(z_init, np.float64)[:, None, :] + rng.standard_normal((n, starts, r))).reshape(-1, r)
        q_rep, x_rep = np.repeat(q, starts, 0), np.repeat(x, starts, 0)
        gt_rep = np.repeat(np.asarray(gt, np.float64).reshape(n, -1), starts, 0)
        xt, gtt = torch.as_tensor(x_rep, dtype=torch.float32), torch.as_tensor(gt_rep, dtype=torch.float32)
        best_z, best_val = projected_descent(lambda zt: metric(self._decode_t(zt, xt), gtt), self.project(z0, q_rep),
                                             lambda z: self.project(z, q_rep), [lr] * steps)
        vals = best_val.reshape(n, starts)
        pick = vals.argmin(1)
        z_star = best_z.reshape(n, starts, r)[np.arange(n), pick]
        return {"score": vals.min(1), "z": z_star, "y": self.decode(z_star, x), "start_scores": vals,
                "spread": vals.std(1)}

    def _decode_t(self, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return z if self.lgm is None else self.lgm.decode(z, x)


def projected_descent(value: Callable[[torch.Tensor], torch.Tensor], z: np.ndarray,
                      project: Callable[[np.ndarray], np.ndarray],
                      lrs: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """min over a set of value(z) by projected gradient descent, every row at once (§3.6).

    value: float32 codes (B, r) -> (B,) differentiable; z: (B, r) starts, already in the set; project: (B, r) ->
    their projections onto it. Step k moves each row by lrs[k] along its normalised gradient and projects it
    back. Every iterate is evaluated (the last without a step after it), and each row keeps its best one, so the
    answer lies in the set. Returns (best z (B, r), its value (B,)), float64.
    """
    best_z, best_val = np.array(z, np.float64, copy=True), None
    for k in range(len(lrs) + 1):
        step = k < len(lrs)
        zt = torch.as_tensor(z, dtype=torch.float32).requires_grad_(step)
        with torch.set_grad_enabled(step):
            val_t = value(zt)
        val = val_t.detach().double().numpy()
        if best_val is None:
            best_val = val.copy()
        else:
            better = val < best_val
            best_val[better], best_z[better] = val[better], z[better]
        if not step:
            break
        (g,) = torch.autograd.grad(val_t.sum(), zt)
        g = g.double().numpy()
        z = project(z - lrs[k] * g / np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-12))
    return best_z, best_val


# The classes a stored CReL is made of, its LGM's aside (lib.crel.cvae's and lib.crel.flow's CACHE_CLASSES): what
# loading its cache entry may build (lib.cache.load_torch's `allow`)
CACHE_CLASSES = (CReL, DQRNet, nn.Sequential, nn.Linear, nn.LeakyReLU)


def _nonempty(U: np.ndarray, q: np.ndarray) -> bool:
    """Feasibility of {U w >= q} via the LDP/NNLS residual (§3.3)."""
    try:
        distance_to_region(np.zeros(U.shape[1]), U, q)
        return True
    except ValueError:
        return False


def _as2d(x: np.ndarray, n: int | None = None) -> np.ndarray:
    x = np.asarray(x, np.float64)
    if x.ndim == 1:
        x = x[:, None] if n is None or len(x) == n else x[None, :]
    return x


@dataclass(frozen=True)
class FitSettings:
    """How `fit` builds a CReL (spec §2.1 steps 1-3): the latent space, the DQR region and the set's options."""

    latent_dim: int = 2  # r of a CVAE trained by `fit` (a given LGM, or transform="identity", sets r itself)
    n_directions: int = 64  # K
    tau_dir: float = 0.1  # the per-direction quantile level ([interp.])
    transform: str = "cvae"  # "identity": no LGM, the DQR in the output space (the DQR baseline of §3.8)
    lgm_fraction: float = 0.5  # without a given DQR fold: the share of the training rows the CVAE trains on
    cvae: cvae_mod.CVAESettings = cvae_mod.CVAESettings()
    dqr: DQRSettings = DQRSettings()
    inflation: str = "ball"  # §3.5
    calibration_score: str = "nonneg"  # §3.4
    empty_region: str = "shift"  # §3.3

    def check(self) -> None:
        """Raise ValueError naming the field, the value and what is allowed."""
        check_choice("transform", self.transform, TRANSFORMS)
        check_choice("inflation", self.inflation, INFLATIONS)
        check_choice("calibration_score", self.calibration_score, CALIBRATION_SCORES)
        check_choice("empty_region", self.empty_region, EMPTY_REGION)
        check_probability("tau_dir", self.tau_dir)
        check_int("latent_dim", self.latent_dim, minimum=1)


# The random streams of `fit`, offsets of its seed: the CVAE and the directions draw from seed itself
DQR_STREAM = 1  # the DQR's initialisation, batch order and directions per batch


def fit(x_train: np.ndarray, y_train: np.ndarray, settings: FitSettings = FitSettings(), *,
        x_dqr: np.ndarray | None = None, y_dqr: np.ndarray | None = None, lgm: cvae_mod.CVAE | None = None,
        seed: int = 0, device: torch.device | str = "cpu") -> CReL:
    """Fit CReL's LGM (on I_lgm) and DQR (on I_dqr) (spec §2.1 steps 1-3); calibrate with `.calibrate`.

    x_train: (n, p), y_train: (n, d). Unless (x_dqr, y_dqr) are given, the first `settings.lgm_fraction` of the
    rows train the CVAE and the rest the DQR. A trained `lgm` (a CVAE or a flow) is used as is (then x_train,
    y_train are not read unless x_dqr is None).
    """
    settings.check()
    (x_lgm, y_lgm), (x_dqr, y_dqr) = _fit_folds(x_train, y_train, x_dqr, y_dqr, settings.lgm_fraction)
    if settings.transform == "identity":
        lgm = None
    elif lgm is None:
        lgm = cvae_mod.train_cvae(x_lgm, y_lgm, latent_dim=settings.latent_dim, settings=settings.cvae, seed=seed,
                                  device=device)
    U = directions(settings.n_directions, y_dqr.shape[1] if lgm is None else lgm.latent_dim, seed)
    z_dqr = y_dqr.copy() if lgm is None else cvae_mod.encode_mean(lgm, y_dqr, x_dqr)
    dqr = train_dqr(x_dqr, z_dqr, U, tau=settings.tau_dir, settings=settings.dqr, seed=seed + DQR_STREAM,
                    device=device)
    return CReL(U=U, dqr=dqr, lgm=lgm, tau_dir=settings.tau_dir, inflation=settings.inflation,
                calibration_score=settings.calibration_score, empty_region=settings.empty_region)


def _fit_folds(x_train: np.ndarray, y_train: np.ndarray, x_dqr: np.ndarray | None, y_dqr: np.ndarray | None,
               lgm_fraction: float) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """((x, y) of the LGM's fold, (x, y) of the DQR's), 2-D float64: the given DQR fold, else a cut of the
    training rows at lgm_fraction."""
    x_train = _as2d(x_train)
    y_train = np.asarray(y_train, np.float64).reshape(len(y_train), -1)
    if x_dqr is None:
        cut = int(round(lgm_fraction * len(x_train)))
        lgm_fold, dqr_fold = (x_train[:cut], y_train[:cut]), (x_train[cut:], y_train[cut:])
    else:
        lgm_fold = (x_train, y_train)
        dqr_fold = (_as2d(x_dqr), np.asarray(y_dqr, np.float64).reshape(len(y_dqr), -1))
    if len(dqr_fold[0]) < 2:
        raise ValueError(f"the DQR fold has {len(dqr_fold[0])} points; give more training data or change "
                         "lgm_fraction.")
    return lgm_fold, dqr_fold


# ----------------------------------------------------------------------------------------------------
# Exact 2-D geometry: the polygon, point distances and the Steiner area (§3.3, §3.7)
# ----------------------------------------------------------------------------------------------------
def polygon(U: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Vertices (V, 2), counter-clockwise, of the bounded polygon {U w >= q} in 2-D (HalfspaceIntersection
    around the Chebyshev centre). Raises ValueError if it is empty or has no interior."""
    from scipy.spatial import ConvexHull, HalfspaceIntersection

    c, t = chebyshev_center(U, q)
    if t <= 1e-12:
        raise ValueError(f"the region has no interior (Chebyshev radius {t:.3g}).")
    hs = np.hstack([-U, np.asarray(q)[:, None]])  # scipy form: A w + b <= 0  <=>  -U w + q <= 0
    pts = HalfspaceIntersection(hs, c).intersections
    hull = ConvexHull(pts)
    return pts[hull.vertices]


def polygon_distances(points: np.ndarray, vertices: np.ndarray) -> np.ndarray:
    """Exact distance of each of points: (P, 2) to the convex polygon vertices: (V, 2) ccw (0 inside)."""
    a, b = vertices, np.roll(vertices, -1, axis=0)
    ab = b - a
    ap = points[:, None, :] - a[None]
    t = np.clip((ap * ab).sum(-1) / (ab * ab).sum(-1).clip(1e-300), 0, 1)
    d = np.linalg.norm(ap - t[..., None] * ab, axis=-1).min(1)
    cross = ab[None, :, 0] * ap[..., 1] - ab[None, :, 1] * ap[..., 0]
    inside = (cross >= -1e-12).all(1)
    return np.where(inside, 0.0, d)


def steiner_area(vertices: np.ndarray, gamma: float) -> float:
    """Area of polygon + B_gamma in 2-D: A + gamma * perimeter + pi gamma^2 (Steiner formula, §3.7)."""
    x, y = vertices[:, 0], vertices[:, 1]
    area = 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))
    perim = np.linalg.norm(vertices - np.roll(vertices, -1, axis=0), axis=1).sum()
    return float(area + gamma * perim + math.pi * gamma ** 2)
