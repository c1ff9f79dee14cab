"""Synthetic worlds with a known p*(y|x) for notebook 03 (spec 03 §2.5 `synth_age`, and a 1-D sandbox).

`synth_age` [proposal]: ages y in {0..100}, latents u (age position) and v (ambiguity) ~ U(0, 1),
p*(y|x) ∝ (1-π) D(m₁, σ) + π D(m₂, σ) with m₁ = 2 + 86u, σ = 1.5 + 4u + 4v, π = 0.4v², m₂ = m₁ + 10 + 10v,
where D(m, σ)(y) = Φ((y+½-m)/σ) - Φ((y-½-m)/σ). Training u has its density multiplied by 0.05 on
[0.55, 0.70] (the epistemic region); test u is uniform.

The 1-D sandbox (the paper's is not described; this one is the workbook's [proposal]): x = u on a grid of
bins, v = 0.5, and a Bayesian *kernel-smoothed Dirichlet* model of p(y|x) fitted to finite training data,
so that every selector of spec §1.1 has a closed form:
- the regret-optimal selector thresholds E*(x) (λ = 1) or (1-λ)A* + λE*;
- the Bayes OOD detector thresholds p_ood(x) / p_id(x) (test inputs uniform, training density p_id);
- active learning by expected error reduction (EER: the test-density-weighted drop of the predictive
  risk after one more label at x, averaged over the predicted label) and by BALD (mutual information).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from lib.params import check_int, check_real
from lib.regret import method as regret

AGES = np.arange(101, dtype=float)


@dataclass(frozen=True)
class SynthAge:
    """Constants of `synth_age` (spec §2.5); every one is a parameter."""

    hole: tuple[float, float] = (0.55, 0.70)  # the epistemic region of u
    hole_density: float = 0.05  # training density factor inside it
    nuisance_dims: int = 6  # ε₁..ε₆ ~ N(0, 1); d = 2 + nuisance_dims
    n_votes: int | None = 38  # votes per training label; None: the exact p*
    sizes: tuple[int, int, int] = (4113, 1500, 1978)  # train / valid / test
    dim: int = 8  # 8, or 1 for the 1-D variant (x = u, v = 0.5)


def age_conditional(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """p*(y|u, v) over the ages 0..100: (N, 101) float64, rows sum to 1."""
    u, v = np.asarray(u, dtype=float)[:, None], np.asarray(v, dtype=float)[:, None]
    m1, sigma, pi = 2 + 86 * u, 1.5 + 4 * u + 4 * v, 0.4 * v**2
    m2 = m1 + 10 + 10 * v

    def discretised(m):
        return norm.cdf((AGES + 0.5 - m) / sigma) - norm.cdf((AGES - 0.5 - m) / sigma)

    p = (1 - pi) * discretised(m1) + pi * discretised(m2)
    return p / p.sum(axis=1, keepdims=True)


def sample_u(n: int, rng: np.random.Generator, settings: SynthAge, train: bool) -> np.ndarray:
    """u ~ U(0, 1), thinned to `hole_density` inside the hole for training data (rejection sampling)."""
    if not train:
        return rng.random(n)
    out = np.empty(0)
    lo, hi = settings.hole
    while len(out) < n:
        u = rng.random(2 * n)
        keep = ((u < lo) | (u > hi)) | (rng.random(2 * n) < settings.hole_density)
        out = np.concatenate([out, u[keep]])
    return out[:n]


def synth_age(settings: SynthAge, seed: int) -> dict:
    """Train / valid / test splits {"x": (n, d) float32, "p_true": (n, 101), "soft": (n, 101), "u", "v"}.

    `soft` is a histogram of n_votes draws from p* (or p* itself when n_votes is None) for training and
    validation; the test split's oracle is the exact p* (spec B14 `oracle="exact"`).
    """
    check_int("dim", settings.dim, minimum=1)
    if settings.dim not in (1, 2 + settings.nuisance_dims):
        raise ValueError(f"dim={settings.dim} must be 1 or 2 + nuisance_dims = {2 + settings.nuisance_dims}.")
    check_real("hole_density", settings.hole_density, low=0.0, high=1.0)
    rng = np.random.default_rng(seed)
    out = {}
    for name, n in zip(("train", "valid", "test"), settings.sizes):
        u = sample_u(n, rng, settings, train=name != "test")
        v = np.full(n, 0.5) if settings.dim == 1 else rng.random(n)
        p = age_conditional(u, v)
        x = u[:, None] if settings.dim == 1 else np.column_stack([u, v, rng.normal(size=(n, settings.nuisance_dims))])
        if settings.n_votes is None or name == "test":
            soft = p
        else:
            soft = np.stack([rng.multinomial(settings.n_votes, row) for row in p]) / settings.n_votes
        out[name] = {"x": x.astype(np.float32), "p_true": p, "soft": soft, "u": u, "v": v}
    return out


# ----------------------------------------------------------------------------------------------------
# The 1-D closed-form sandbox
# ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sandbox:
    """Settings of the 1-D sandbox [proposal]."""

    num_bins: int = 200
    n_train: int = 4113
    bandwidth: float = 0.01  # Gaussian kernel sd in u: how far one label informs its neighbours
    prior_strength: float = 1.0  # total Dirichlet prior mass, spread uniformly over the 101 ages
    reject: float = 0.15  # fraction of inputs each selector rejects
    seed: int = 0


def kernel(centres: np.ndarray, points: np.ndarray, bandwidth: float) -> np.ndarray:
    """(len(centres), len(points)) Gaussian weights exp(-(c - x)² / 2h²) (unnormalised: a label counts 1 at 0)."""
    return np.exp(-0.5 * ((centres[:, None] - points[None, :]) / bandwidth) ** 2)


def sandbox(settings: Sandbox, world: SynthAge | None = None) -> dict:
    """Every per-bin quantity of the 1-D sandbox: oracle A*, E*, T* (squared loss), the estimates and the
    OOD and active-learning scores. Returns arrays of length num_bins plus the training sample."""
    world = world or SynthAge(dim=1)
    rng = np.random.default_rng(settings.seed)
    x = (np.arange(settings.num_bins) + 0.5) / settings.num_bins
    p_true = age_conditional(x, np.full_like(x, 0.5))
    u = sample_u(settings.n_train, rng, world, train=True)
    y = np.array([rng.choice(101, p=row) for row in age_conditional(u, np.full_like(u, 0.5))])
    weights = kernel(x, u, settings.bandwidth)  # (bins, n)
    alpha = settings.prior_strength / 101 + weights @ np.eye(101)[y]
    q = alpha / alpha.sum(axis=1, keepdims=True)
    lo, hi = world.hole
    p_id = np.where((x >= lo) & (x <= hi), world.hole_density, 1.0)
    p_id = p_id / p_id.mean()
    out = {"x": x, "p_true": p_true, "q": q, "alpha": alpha, "train_u": u, "train_y": y, "p_id": p_id,
           "ood_ratio": 1.0 / p_id,  # p_ood = uniform test density
           "bald": regret.estimate_dirichlet(alpha, "ce")["E"],
           "eer": expected_error_reduction(alpha, x, settings.bandwidth)}
    for loss in ("squared", "absolute", "ce", "zero_one"):
        values = AGES if loss in regret.REGRESSION_LOSSES else None
        d = regret.decompose(p_true, q, loss, values=values)
        out[f"A_{loss}"], out[f"E_{loss}"], out[f"T_{loss}"] = d["A"], d["E"], d["T"]
    est = regret.estimate_dirichlet(alpha, "squared", values=AGES)
    out["A_hat_squared"], out["E_hat_squared"] = est["A"], est["E"]
    return out


def expected_error_reduction(alpha: np.ndarray, x: np.ndarray, bandwidth: float) -> np.ndarray:
    """EER(x_c) = Σ_b p_test(b) [R(α_b) - E_{y'~q_c} R(α_b + k(x_b, x_c) e_{y'})], R = predictive variance.

    The squared-loss risk of the Bayes act under the posterior predictive; test density uniform over bins.
    Closed form: the updated mean and second moment after one weighted label are rational in y'.
    """
    alpha0 = alpha.sum(axis=1)
    q = alpha / alpha0[:, None]
    m1, m2 = q @ AGES, q @ AGES**2
    now = m2 - m1**2
    k = kernel(x, x, bandwidth)  # k[b, c]: weight at bin b of a label observed at bin c
    eer = np.empty(len(x))
    for c in range(len(x)):
        w = k[:, c][:, None]  # (bins, 1)
        a0 = alpha0[:, None]
        new_m1 = (a0 * m1[:, None] + w * AGES) / (a0 + w)  # (bins, 101 possible y')
        new_m2 = (a0 * m2[:, None] + w * AGES**2) / (a0 + w)
        after = (new_m2 - new_m1**2) @ q[c]  # expectation over y' ~ q_c
        eer[c] = np.mean(now - after)
    return eer


def rejected(scores: np.ndarray, fraction: float) -> np.ndarray:
    """Boolean mask of the `fraction` highest scores (ties in index order)."""
    order = regret.selection_order(scores)
    mask = np.zeros(len(scores), dtype=bool)
    mask[order[len(scores) - int(round(fraction * len(scores))):]] = True
    return mask


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    union = np.sum(a | b)
    return float(np.sum(a & b) / union) if union else 1.0
