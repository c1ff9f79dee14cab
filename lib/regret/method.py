"""Epistemic uncertainty measured by regret (spec 03): the oracle decomposition T* = A* + E*, the
estimators Â, Ê of common UQ methods, selective curves (AuReC, ex-AuReC, AuRC), the optimal and
attainable (coverage, risk, regret) fronts, and the Pareto-gap as IGD+ between them.

Conventions (spec 03 §3-§4):
- `p_true`, `q`: (N, K) float rows of class probabilities (renormalised here; K = support size).
- Losses: "ce" (cross-entropy), "zero_one" (classification); "squared", "absolute" (a distribution over
  the real support `values`, shape (K,), e.g. the ages 0..100).
- Scores are *uncertainties*: selective curves sort them ascending (most certain first). Confidence scores
  must be negated by the caller.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable

import numpy as np
from scipy.special import digamma, logsumexp
from scipy.stats import spearmanr

from lib.params import check_choice, check_finite, check_int, check_ndim, check_nonempty, check_nonnegative, check_real
from lib.progress import progress as progress_bar

CLASSIFICATION_LOSSES = ("ce", "zero_one")
REGRESSION_LOSSES = ("squared", "absolute")
LOSSES = CLASSIFICATION_LOSSES + REGRESSION_LOSSES
CURVE_NORMS = ("selective", "joint")  # spec B1
TIES = ("stable", "average")  # spec B3
PGAP_SCALES = ("none", "ref_range")  # spec B5
Q_FLOOR = 1e-12  # spec §3.1: CE clips q at 1e-12
SCORE_DECIMALS = 12  # spec B3: estimates are rounded to 1e-12 so that float noise cannot break ties


# ----------------------------------------------------------------------------------------------------
# Checks and small helpers
# ----------------------------------------------------------------------------------------------------
def check_loss(loss: str, values: np.ndarray | None) -> np.ndarray | None:
    """`loss` must be known; squared/absolute need `values` (K,), classification losses take none."""
    check_choice("loss", loss, LOSSES)
    if loss in REGRESSION_LOSSES:
        if values is None:
            raise ValueError(f"loss={loss!r} needs values=(K,) the real support of the distributions.")
        values = np.asarray(values, dtype=float)
        if values.ndim != 1 or not np.all(np.diff(values) > 0):
            raise ValueError("values must be a strictly increasing 1-D array (the support).")
        return values
    if values is not None:
        raise ValueError(f"loss={loss!r} is a classification loss; values must be None.")
    return None


def normalise_rows(probs: np.ndarray, name: str = "probs") -> np.ndarray:
    """(N, K) rows scaled to sum to 1 (spec §2.4 step 2); negative or all-zero rows are errors."""
    probs = np.asarray(probs, dtype=float)
    if probs.ndim != 2:
        raise ValueError(f"{name} must have shape (N, K); got {probs.shape}.")
    if np.any(probs < 0) or not np.all(np.isfinite(probs)):
        raise ValueError(f"{name} must hold finite non-negative probabilities.")
    sums = probs.sum(axis=1, keepdims=True)
    if np.any(sums <= 0):
        raise ValueError(f"{name} has a row that sums to 0.")
    return probs / sums


def entropy(probs: np.ndarray) -> np.ndarray:
    """Shannon entropy in nats along the last axis, with 0 log 0 = 0."""
    logp = np.log(np.where(probs > 0, probs, 1.0))
    return -(probs * logp).sum(axis=-1)


def first_argmax(probs: np.ndarray) -> np.ndarray:
    """Index of the largest entry along the last axis; ties go to the first index (spec B11)."""
    return np.argmax(probs, axis=-1)


def median_index(probs: np.ndarray) -> np.ndarray:
    """Smallest k with CDF(k) >= 0.5 along the last axis (spec §3.1, B11); a 1e-12 slack absorbs rounding."""
    cdf = np.cumsum(probs, axis=-1)
    return np.argmax(cdf >= 0.5 - 1e-12, axis=-1)


def expected_abs(probs: np.ndarray, values: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """E_{y~probs} |y - a| for one action a per row: probs (..., K), actions (...,)."""
    return (probs * np.abs(values - actions[..., None])).sum(axis=-1)


def _mean_var(probs: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = probs @ values
    var = probs @ values**2 - mean**2
    return mean, np.maximum(var, 0.0)


def _result(A: np.ndarray, E: np.ndarray) -> dict:
    E = np.maximum(E, 0.0)
    return {"A": A, "E": E, "T": A + E}


# ----------------------------------------------------------------------------------------------------
# Oracle decomposition (spec §3.1)
# ----------------------------------------------------------------------------------------------------
def decompose(p_true: np.ndarray, q: np.ndarray, loss: str, values: np.ndarray | None = None) -> dict:
    """Per-sample oracle A*, E*, T* of the model q's Bayes act, measured against p_true (spec §3.1).

    p_true, q: (N, K). Returns {"A", "E", "T"}: (N,) float64 with T = A + E and E >= 0.
    - ce: A = H(p*), E = KL(p* || q) with q clipped at 1e-12, T = -sum p* log q.
    - zero_one: A = 1 - max p*, E = max p* - p*(argmax q), T = 1 - p*(argmax q).
    - squared: A = Var_p*(y), E = (E_p* y - E_q y)^2.
    - absolute: A = E_p*|y - med p*|, T = E_p*|y - med q|, E = T - A.
    """
    values = check_loss(loss, values)
    p_true, q = normalise_rows(p_true, "p_true"), normalise_rows(q, "q")
    if p_true.shape != q.shape:
        raise ValueError(f"p_true {p_true.shape} and q {q.shape} must have the same shape.")
    if values is not None and values.shape[0] != q.shape[1]:
        raise ValueError(f"values has {values.shape[0]} entries but the distributions have K = {q.shape[1]}.")
    if loss == "ce":
        A = entropy(p_true)
        log_ratio = np.log(np.where(p_true > 0, p_true, 1.0)) - np.log(np.maximum(q, Q_FLOOR))
        return _result(A, (p_true * log_ratio).sum(axis=1))
    if loss == "zero_one":
        pick = np.take_along_axis(p_true, first_argmax(q)[:, None], axis=1)[:, 0]
        return _result(1.0 - p_true.max(axis=1), p_true.max(axis=1) - pick)
    if loss == "squared":
        mean_p, var_p = _mean_var(p_true, values)
        return _result(var_p, (mean_p - q @ values) ** 2)
    A = expected_abs(p_true, values, values[median_index(p_true)])
    return _result(A, expected_abs(p_true, values, values[median_index(q)]) - A)


# ----------------------------------------------------------------------------------------------------
# Estimators Â, Ê (spec §3.2)
# ----------------------------------------------------------------------------------------------------
def _check_samples(samples: np.ndarray) -> np.ndarray:
    samples = np.asarray(samples, dtype=float)
    if samples.ndim != 3:
        raise ValueError(f"samples must have shape (S, N, K); got {samples.shape}.")
    check_int("number of samples S", samples.shape[0], minimum=2)
    if np.any(samples < 0) or not np.all(np.isfinite(samples)):
        raise ValueError("samples must hold finite non-negative probabilities.")
    return samples / samples.sum(axis=2, keepdims=True)


def _round(estimates: dict) -> dict:
    """Clip Ê at 0 and round to 1e-12 (spec B3); T̂ = Â + Ê."""
    A = np.round(estimates["A"], SCORE_DECIMALS)
    E = np.round(np.maximum(estimates["E"], 0.0), SCORE_DECIMALS)
    return {"A": A, "E": E, "T": A + E}


def estimate(samples: np.ndarray, loss: str, values: np.ndarray | None = None) -> dict:
    """Â, Ê, T̂ from member or MC-dropout predictive samples p_s (spec §3.2, first table).

    samples: (S, N, K) with S >= 2. Returns {"A", "E", "T"}: (N,) float64.
    - ce: T̂ = H(p̄), Â = mean_s H(p_s), Ê = T̂ - Â (BALD).
    - zero_one: Â = 1 - mean_s max p_s, Ê = mean_s max p_s - max p̄.
    - squared: Â = mean_s Var_{p_s}(y), Ê = Var_s(E_{p_s} y) (ddof 0).
    - absolute: Â = mean_s E_{p_s}|y - med p_s|, Ê = mean_s [E_{p_s}|y - med p̄| - E_{p_s}|y - med p_s|].
    """
    values = check_loss(loss, values)
    samples = _check_samples(samples)
    mean = samples.mean(axis=0)
    if loss == "ce":
        A = entropy(samples).mean(axis=0)
        return _round({"A": A, "E": entropy(mean) - A})
    if loss == "zero_one":
        top = samples.max(axis=2).mean(axis=0)
        return _round({"A": 1.0 - top, "E": top - mean.max(axis=1)})
    if loss == "squared":
        means, variances = _mean_var(samples, values)
        return _round({"A": variances.mean(axis=0), "E": means.var(axis=0)})
    own = expected_abs(samples, values, values[median_index(samples)])
    pooled = expected_abs(samples, values, np.broadcast_to(values[median_index(mean)], own.shape))
    return _round({"A": own.mean(axis=0), "E": (pooled - own).mean(axis=0)})


def _check_alpha(alpha: np.ndarray) -> np.ndarray:
    alpha = np.asarray(alpha, dtype=float)
    if alpha.ndim != 2 or np.any(alpha <= 0) or not np.all(np.isfinite(alpha)):
        raise ValueError("alpha must be an (N, K) array of positive finite Dirichlet concentrations.")
    return alpha


def dirichlet_draws(alpha: np.ndarray, num_draws: int, rng: np.random.Generator) -> np.ndarray:
    """(num_draws, N, K) draws from Dir(alpha) via normalised Gamma variates."""
    gammas = rng.standard_gamma(np.broadcast_to(alpha, (num_draws, *alpha.shape)))
    return gammas / gammas.sum(axis=2, keepdims=True)


def estimate_dirichlet(alpha: np.ndarray, loss: str, values: np.ndarray | None = None, *,
                       num_draws: int = 1000, seed: int = 0, chunk: int = 512) -> dict:
    """Â, Ê, T̂ of an evidential model with Dirichlet concentrations alpha (N, K) (spec §3.2, Evidential).

    Closed forms for ce (Â = ψ(α₀+1) - Σ (α_k/α₀) ψ(α_k+1), Ê = H(p̄) - Â) and squared (Ê = Var_p̄/(α₀+1),
    Â = Var_p̄ α₀/(α₀+1)). zero_one and absolute have none: Monte Carlo with `num_draws` draws per row,
    drawn in chunks of rows from a generator seeded by `seed`.
    """
    values = check_loss(loss, values)
    alpha = _check_alpha(alpha)
    alpha0 = alpha.sum(axis=1)
    mean = alpha / alpha0[:, None]
    if loss == "ce":
        A = digamma(alpha0 + 1) - (mean * digamma(alpha + 1)).sum(axis=1)
        return _round({"A": A, "E": entropy(mean) - A})
    if loss == "squared":
        var = _mean_var(mean, values)[1]
        return _round({"A": var * alpha0 / (alpha0 + 1), "E": var / (alpha0 + 1)})
    check_int("num_draws", num_draws, minimum=2)
    rng = np.random.default_rng(seed)
    A, E = np.empty(len(alpha)), np.empty(len(alpha))
    for start in range(0, len(alpha), chunk):
        rows = slice(start, start + chunk)
        draws = dirichlet_draws(alpha[rows], num_draws, rng)
        # the Bayes act is that of the exact mean α/α₀, not of the draws' average
        if loss == "zero_one":
            A[rows] = 1.0 - draws.max(axis=2).mean(axis=0)
            E[rows] = 1.0 - A[rows] - mean[rows].max(axis=1)
        else:
            own = expected_abs(draws, values, values[median_index(draws)])
            act = np.broadcast_to(values[median_index(mean[rows])], own.shape)
            A[rows], E[rows] = own.mean(axis=0), (expected_abs(draws, values, act) - own).mean(axis=0)
    return _round({"A": A, "E": E})


def vacuity(alpha: np.ndarray) -> np.ndarray:
    """K / α₀, the evidential 'vacuity' score (spec B12), (N,)."""
    alpha = _check_alpha(alpha)
    return alpha.shape[1] / alpha.sum(axis=1)


# ----------------------------------------------------------------------------------------------------
# DDU: class-conditional Gaussian density on features (spec §2.3, code: omegafragger/DDU gmm_utils.py)
# ----------------------------------------------------------------------------------------------------
JITTERS = [0.0, float(np.finfo(float).tiny)] + [10.0**e for e in range(-308, 0, 1)]


def gda_fit(feats: np.ndarray, labels: np.ndarray, num_classes: int) -> dict:
    """Per-class mean and covariance (1/(n-1)) X^T X of centred features, with DDU's jitter ladder.

    feats: (N, D) float, labels: (N,) int in 0..num_classes-1. Returns {"means": (C, D), "chol": (C, D, D),
    "jitter": float}: the smallest jitter from [0, tiny, 1e-308, ..., 1e-1] for which every class's
    Cholesky factorisation succeeds.
    """
    feats = np.asarray(feats, dtype=np.float64)
    labels = np.asarray(labels)
    means, covs = [], []
    for c in range(num_classes):
        x = feats[labels == c]
        if len(x) < 2:
            raise ValueError(f"class/group {c} has {len(x)} training points; the GDA needs at least 2.")
        centred = x - x.mean(axis=0)
        means.append(x.mean(axis=0))
        covs.append(centred.T @ centred / (len(x) - 1))
    covs = np.stack(covs)
    eye = np.eye(feats.shape[1])
    for jitter in JITTERS:
        try:
            chol = np.linalg.cholesky(covs + jitter * eye)
            return {"means": np.stack(means), "chol": chol, "jitter": jitter}
        except np.linalg.LinAlgError:
            continue
    raise np.linalg.LinAlgError("no jitter up to 0.1 makes the class covariances positive definite.")


def gda_log_density(feats: np.ndarray, fit: dict) -> np.ndarray:
    """(N, C) log N(z | μ_c, Σ_c) for every class c."""
    feats = np.asarray(feats, dtype=np.float64)
    out = np.empty((len(feats), len(fit["means"])))
    for c, (mu, chol) in enumerate(zip(fit["means"], fit["chol"])):
        sol = np.linalg.solve(chol, (feats - mu).T)  # chol is lower triangular
        logdet = 2.0 * np.log(np.diag(chol)).sum()
        out[:, c] = -0.5 * ((sol**2).sum(axis=0) + logdet + feats.shape[1] * np.log(2 * np.pi))
    return out


def ddu_epistemic(log_density: np.ndarray) -> np.ndarray:
    """DDU's Ê = -logsumexp_c log N(z | μ_c, Σ_c), with no class priors (spec B10), (N,)."""
    return np.round(-logsumexp(log_density, axis=1), SCORE_DECIMALS)


def ddu_aleatoric(probs: np.ndarray, loss: str) -> np.ndarray:
    """DDU's Â from the softmax output: entropy for ce, 1 - max p for zero_one (spec B10, [inferred])."""
    check_choice("loss", loss, CLASSIFICATION_LOSSES)
    probs = normalise_rows(probs)
    return np.round(entropy(probs) if loss == "ce" else 1.0 - probs.max(axis=1), SCORE_DECIMALS)


# ----------------------------------------------------------------------------------------------------
# Selective curves (spec §3.3)
# ----------------------------------------------------------------------------------------------------
def check_scores(scores: np.ndarray) -> np.ndarray:
    """The uncertainty `scores` as a float64 (n,) array without NaN or inf (a NaN has no place in the order)."""
    return check_finite("scores", check_ndim("scores", scores, 1, "1-D (n,)")).astype(float, copy=False)


def tie_keys(scores: np.ndarray) -> np.ndarray:
    """The `scores` placed on [0, 1] by their range and rounded to SCORE_DECIMALS (spec B3: float noise must not
    break a tie): scores within about 1e-12 of the range (max - min) tie. The keys, so the order and the ties, do
    not change under an offset or a positive scale of the scores; an all-equal input is one tie. Scaling by the
    largest |score| instead made an offset of 1e9 tie scores 1e-3 apart, and rounding to 1e-12 in
    absolute terms made every score tie once the scores were scaled by 1e-13."""
    if len(scores) == 0:
        return scores
    low = float(np.min(scores))
    span = float(np.max(scores)) - low or 1.0
    return np.round((scores - low) / span, SCORE_DECIMALS)


def selection_order(scores: np.ndarray) -> np.ndarray:
    """Indices sorting the uncertainty `scores` ascending, ties (`tie_keys`) in index order (spec B3 'stable')."""
    return np.argsort(tie_keys(check_scores(scores)), kind="stable")


def _sorted_metric(scores: np.ndarray, metric: np.ndarray, ties: str) -> np.ndarray:
    check_choice("ties", ties, TIES)
    scores = check_nonempty("scores", check_scores(scores))  # no curve, no area: not an AuReC of 0
    metric = check_finite("metric", metric).astype(float, copy=False)
    if metric.shape != scores.shape:
        raise ValueError(f"scores {scores.shape} and metric {metric.shape} must have the same shape.")
    order = selection_order(scores)
    sorted_metric = metric[order]
    if ties == "average":  # expectation under random tie-breaking: group means within tied scores
        _, start, counts = np.unique(tie_keys(scores)[order], return_index=True, return_counts=True)
        group_sums = np.add.reduceat(sorted_metric, start)
        sorted_metric = np.repeat(group_sums / counts, counts)
    return sorted_metric


def selective_curve(*, scores: np.ndarray, metric: np.ndarray, norm: str = "selective",
                    ties: str = "stable") -> dict:
    """Coverage k/n (k = 1..n) and the mean metric over the k most certain samples (spec §3.3).

    norm="selective": val_k = (1/k) Σ_{i<=k} m_(i) (the authors' code); "joint": (1/n) Σ_{i<=k} m_(i) (B1).
    Returns {"coverage": (n,), "value": (n,)}.
    """
    check_choice("norm", norm, CURVE_NORMS)
    cumulative = np.cumsum(_sorted_metric(scores, metric, ties))
    k = np.arange(1, len(cumulative) + 1)
    return {"coverage": k / len(k), "value": cumulative / (k if norm == "selective" else len(k))}


def area_under_curve(*, scores: np.ndarray, metric: np.ndarray, norm: str = "selective",
                     ties: str = "stable") -> float:
    """Trapezoid area of the selective curve over coverage 1/n..1, no point at 0 (spec B2)."""
    curve = selective_curve(scores=scores, metric=metric, norm=norm, ties=ties)
    return float(np.trapezoid(curve["value"], curve["coverage"]))


def aurec(scores: np.ndarray, regret: np.ndarray, *, norm: str = "selective", ties: str = "stable") -> float:
    """Area under the regret-coverage curve of the uncertainty `scores` (lower is better; spec §3.3).

    scores, regret: (n,) float, n >= 1, finite; a regret is >= 0 by definition, so a negative one is an error.
    """
    return area_under_curve(scores=scores, metric=check_nonnegative("regret", regret), norm=norm, ties=ties)


def ex_aurec(scores: np.ndarray, regret: np.ndarray, *, norm: str = "selective", ties: str = "stable") -> float:
    """AuReC(scores) - AuReC(regret itself): the excess over the oracle ordering of the same model's regret.

    This is the workbook's definition (spec B4 [proposal]); the paper's exact definition is not available.
    """
    return (aurec(scores, regret, norm=norm, ties=ties)
            - aurec(regret, regret, norm=norm, ties=ties))


def aurc(scores: np.ndarray, total: np.ndarray, *, norm: str = "selective", ties: str = "stable") -> float:
    """Area under the risk-coverage curve: the same curve with the total loss T* (>= 0) as the metric."""
    return area_under_curve(scores=scores, metric=check_nonnegative("total", total), norm=norm, ties=ties)


def spearman(a: np.ndarray, b: np.ndarray) -> dict:
    """Spearman r_s with average ranks (scipy), and the number of rows in tied groups of each input (spec §6)."""
    def tied(x: np.ndarray) -> int:
        _, counts = np.unique(tie_keys(x), return_counts=True)
        return int(counts[counts > 1].sum())

    r = spearmanr(a, b).statistic
    return {"r_s": float(r), "ties_a": tied(np.asarray(a)), "ties_b": tied(np.asarray(b))}


def calibration(q: np.ndarray, labels: np.ndarray, num_bins: int = 15) -> dict:
    """{"accuracy", "mean_confidence", "ece"} of the predictive q: (N, K) against hard labels: (N,) int.

    A diagnostic beside the regret, not one of the paper's metrics: an underconfident q (mean confidence
    below accuracy) pays CE regret on every easy image. ECE is the expected calibration error of Guo et al.
    (2017): Σ_b (n_b / N) |accuracy_b − confidence_b| over `num_bins` equal-width bins of max_k q_k.
    """
    check_int("num_bins", num_bins, minimum=1)
    q = normalise_rows(q, "q")
    labels = np.asarray(labels)
    if labels.shape != (len(q),):
        raise ValueError(f"labels has shape {labels.shape}; expected ({len(q)},), one per row of q")
    confidence = q.max(axis=1)
    correct = (first_argmax(q) == labels).astype(float)
    bins = np.minimum((confidence * num_bins).astype(int), num_bins - 1)
    gap = np.abs(np.bincount(bins, correct, num_bins) - np.bincount(bins, confidence, num_bins))
    return {"accuracy": float(correct.mean()), "mean_confidence": float(confidence.mean()),
            "ece": float(gap.sum() / len(q))}


# ----------------------------------------------------------------------------------------------------
# Fronts and the Pareto-gap (spec §3.3, B5)
# ----------------------------------------------------------------------------------------------------
def default_coverages(num: int = 100) -> np.ndarray:
    """linspace(0.01, 1, 100) by default (spec §3.3 P-gap step 2)."""
    return np.linspace(1.0 / num, 1.0, num)


def selector_points(scores: np.ndarray, total: np.ndarray, regret: np.ndarray, coverages: np.ndarray, *,
                    norm: str = "selective") -> np.ndarray:
    """(len(coverages), 3) points (1 - ρ, risk, regret) of the selectors 1{score <= τ} at the coverages ρ.

    k_j = max(1, round(ρ_j n)) most certain samples are accepted; risk and regret are their mean T*, E*
    (norm="selective") or sums / n (norm="joint").
    """
    order = selection_order(scores)
    n = len(order)
    k = np.maximum(1, np.rint(np.asarray(coverages) * n).astype(int))
    cum_t = np.cumsum(np.asarray(total, dtype=float)[order])[k - 1]
    cum_e = np.cumsum(np.asarray(regret, dtype=float)[order])[k - 1]
    denom = k if norm == "selective" else n
    return np.column_stack([1.0 - k / n, cum_t / denom, cum_e / denom])


def nondominated(points: np.ndarray, keep_duplicates: bool = True) -> np.ndarray:
    """The Pareto-nondominated rows of `points` (M, 2 or 3) under minimisation.

    A row is dropped only when another row is <= in every objective and < in one (strict dominance), so
    exact duplicates of a nondominated point are all kept (`keep_duplicates`, the convention of the simple
    O(M^2) filter that produced spec §5.2's golden P-gaps; False keeps one copy). O(M log M) plus list
    insertions: a lexicographic sort, then a sweep that keeps the 2-D staircase (f2 ascending, f3
    descending) of the distinct points seen so far; a point is dominated iff some earlier distinct point
    has f2' <= f2 and f3' <= f3. Returns the kept rows in lexicographic order.
    """
    points = np.asarray(points, dtype=float)
    if points.ndim != 2 or points.shape[1] not in (2, 3):
        raise ValueError(f"points must have shape (M, 2) or (M, 3); got {points.shape}.")
    if points.shape[1] == 2:
        padded = np.column_stack([points, np.zeros(len(points))])
        return nondominated(padded, keep_duplicates)[:, :2]
    order = np.lexsort((points[:, 2], points[:, 1], points[:, 0]))
    ordered = points[order]
    new_group = np.ones(len(ordered), dtype=bool)
    new_group[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    stair_f2: list[float] = []
    stair_f3: list[float] = []
    keep = np.zeros(len(ordered), dtype=bool)
    for i in np.flatnonzero(new_group):
        f2, f3 = ordered[i, 1], ordered[i, 2]
        pos = bisect_right(stair_f2, f2)
        if pos > 0 and stair_f3[pos - 1] <= f3:
            continue
        keep[i] = True
        end = pos
        while end < len(stair_f2) and stair_f3[end] >= f3:
            end += 1
        stair_f2[pos:end] = [f2]
        stair_f3[pos:end] = [f3]
    if keep_duplicates:  # a duplicate shares its group's verdict
        keep = keep[np.maximum.accumulate(np.where(new_group, np.arange(len(ordered)), 0))]
    return ordered[keep]


def igd_plus(points: np.ndarray, reference: np.ndarray, chunk: int = 512) -> float:
    """IGD+(S; R) = (1/|R|) Σ_r min_{a in S} sqrt(Σ_k max(a_k - r_k, 0)^2) (Ishibuchi et al. 2015), minimisation.

    Duplicate rows of R are evaluated once and weighted by their count; duplicates of S are dropped.
    """
    points, reference = np.asarray(points, dtype=float), np.asarray(reference, dtype=float)
    points = np.unique(points, axis=0)
    reference, counts = np.unique(reference, axis=0, return_counts=True)
    best = np.empty(len(reference))
    for start in range(0, len(reference), chunk):
        r = reference[start:start + chunk]
        excess = np.maximum(points[None, :, :] - r[:, None, :], 0.0)
        best[start:start + chunk] = np.sqrt(np.einsum("ijk,ijk->ij", excess, excess).min(axis=1))
    return float((best * counts).sum() / counts.sum())


def standardise(x: np.ndarray) -> np.ndarray:
    """(x - mean) / sd, with sd = 0 guarded (a constant score stays constant)."""
    x = np.asarray(x, dtype=float)
    sd = x.std()
    return (x - x.mean()) / (sd if sd > 0 else 1.0)


def optimal_front(A: np.ndarray, E: np.ndarray, *, lambdas: np.ndarray | None = None,
                  coverages: np.ndarray | None = None, norm: str = "selective") -> dict:
    """Front S* of the optimal selectors 1{(1-λ)A* + λE* <= τ}, λ in [1/2, 1] (the theorem, spec §1.1).

    Returns {"points": all (len(λ) len(ρ), 3) points, "front": the nondominated ones, "lambdas"}.
    """
    lambdas = np.linspace(0.5, 1.0, 51) if lambdas is None else np.asarray(lambdas, dtype=float)
    coverages = default_coverages() if coverages is None else coverages
    total = A + E
    pts = np.concatenate([selector_points((1 - lam) * A + lam * E, total, E, coverages, norm=norm)
                          for lam in lambdas])
    return {"points": pts, "front": nondominated(pts), "lambdas": lambdas}


def attainable_front(A_hat: np.ndarray, E_hat: np.ndarray, A: np.ndarray, E: np.ndarray, *,
                     weights: np.ndarray | None = None, coverages: np.ndarray | None = None,
                     norm: str = "selective") -> dict:
    """Front S(Â, Ê) of the selectors 1{w z(Â) + (1-w) z(Ê) <= τ}, w in [0, 1], scored on the true T*, E*.

    z standardises each estimate (spec §3.3 P-gap step 4 [proposal]): DDU's Ê is a log-density.
    """
    weights = np.linspace(0.0, 1.0, 51) if weights is None else np.asarray(weights, dtype=float)
    coverages = default_coverages() if coverages is None else coverages
    za, ze = standardise(A_hat), standardise(E_hat)
    total = A + E
    pts = np.concatenate([selector_points(w * za + (1 - w) * ze, total, E, coverages, norm=norm)
                          for w in weights])
    return {"points": pts, "front": nondominated(pts), "weights": weights}


def pareto_gap_details(A_hat: np.ndarray, E_hat: np.ndarray, A: np.ndarray, E: np.ndarray, *,
                       scale: str = "none", norm: str = "selective", num_lambdas: int = 51,
                       num_weights: int = 51, num_coverages: int = 100) -> dict:
    """P-gap = IGD+(S(Â, Ê); S*) with both fronts and the scale used (spec §3.3, B5 [proposal]).

    scale="ref_range" divides every objective by its range over the reference front S*.
    """
    check_choice("scale", scale, PGAP_SCALES)
    check_choice("norm", norm, CURVE_NORMS)
    coverages = default_coverages(num_coverages)
    ref = optimal_front(A, E, lambdas=np.linspace(0.5, 1.0, num_lambdas), coverages=coverages, norm=norm)
    att = attainable_front(A_hat, E_hat, A, E, weights=np.linspace(0.0, 1.0, num_weights), coverages=coverages,
                           norm=norm)
    divisor = np.ones(3)
    if scale == "ref_range":
        span = np.ptp(ref["front"], axis=0)
        divisor = np.where(span > 0, span, 1.0)
    gap = igd_plus(att["front"] / divisor, ref["front"] / divisor)
    return {"pgap": gap, "reference": ref["front"], "attainable": att["front"], "divisor": divisor}


def pareto_gap(A_hat: np.ndarray, E_hat: np.ndarray, A: np.ndarray, E: np.ndarray, *, scale: str = "none",
               norm: str = "selective") -> float:
    """The Pareto-gap (float): see `pareto_gap_details`."""
    return float(pareto_gap_details(A_hat, E_hat, A, E, scale=scale, norm=norm)["pgap"])


def regret_metrics(A_hat: np.ndarray, E_hat: np.ndarray, A: np.ndarray, E: np.ndarray, *,
                   norm: str = "selective", ties: str = "stable", pgap_scale: str = "none") -> dict:
    """One row of the paper's table: AuReC, ex-AuReC, P-gap, r_s(Â, Ê), r_s(A*, E*), plus AuRC and joint AuReC."""
    return {
        "AuReC": aurec(E_hat, E, norm=norm, ties=ties),
        "ex-AuReC": ex_aurec(E_hat, E, norm=norm, ties=ties),
        "P-gap": pareto_gap(A_hat, E_hat, A, E, scale=pgap_scale, norm=norm),
        "r_s(Â,Ê)": spearman(A_hat, E_hat)["r_s"],
        "r_s(A*,E*)": spearman(A, E)["r_s"],
        "AuRC": aurc(E_hat, A + E, norm=norm, ties=ties),
        "AuReC_joint": aurec(E_hat, E, norm="joint", ties=ties),
        "oracle_AuReC": aurec(E, E, norm=norm, ties=ties),
        "mean_E*": float(np.mean(E)),
    }


def aurec_interval(scores: np.ndarray, regret: np.ndarray, *, reps: int = 500, seed: int = 0, level: float = 0.95,
                   norm: str = "selective", ties: str = "stable") -> dict:
    """AuReC of the uncertainty `scores` (n,) against the regret (n,) with a percentile interval at `level` from a
    bootstrap over the n points: the resampling of `aurec_ranking` (each draw takes n points with replacement from
    a generator seeded `seed`), for one method. Returns {"estimate", "lower", "upper", "reps", "level"}."""
    check_int("reps", reps, minimum=100)
    check_real("level", level, low=0.0, high=1.0, open_low=True, open_high=True)
    scores, regret = check_scores(scores), check_nonnegative("regret", regret)
    if scores.shape != regret.shape:
        raise ValueError(f"scores {scores.shape} and regret {regret.shape} must have the same shape.")
    n = len(scores)
    rng = np.random.default_rng(seed)
    draws = np.empty(reps)
    for r in range(reps):
        i = rng.integers(0, n, n)
        draws[r] = aurec(scores[i], regret[i], norm=norm, ties=ties)
    tail = 100 * (1 - level) / 2
    lower, upper = np.percentile(draws, [tail, 100 - tail])
    return {"estimate": aurec(scores, regret, norm=norm, ties=ties), "lower": float(lower), "upper": float(upper),
            "reps": reps, "level": level}


def paired_draws(statistic: Callable[[np.ndarray], list[float]], n: int, *, reps: int, seed: int,
                 progress: bool = False, desc: str = "paired bootstrap") -> np.ndarray:
    """A paired bootstrap over n points: `statistic(i)` of every method (a list, one value per method) on `reps`
    draws, each draw i resampling the n points once with replacement (a generator seeded `seed`) for every method.
    Returns (reps, methods) float64. `progress`: a text progress bar named `desc` (the P-gap's draws take minutes
    at n = 10,000)."""
    rng = np.random.default_rng(seed)
    return np.array([statistic(rng.integers(0, n, n))
                     for _ in progress_bar(range(reps), desc=desc, enabled=progress)], dtype=float)


def paired_differences(names: list[str], point: np.ndarray, draws: np.ndarray,
                       level: float = 0.95) -> dict[str, list[float]]:
    """{"A − B": [point(A) − point(B), lower, upper]} for every pair of methods A before B in `names`: the
    difference on all points and its percentile interval at `level` over the paired draws (`paired_draws`).
    point: (methods,), draws: (reps, methods) float."""
    tail = 100 * (1 - level) / 2
    return {f"{a} − {b}": [float(point[i] - point[j]),
                           *np.percentile(draws[:, i] - draws[:, j], [tail, 100 - tail]).tolist()]
            for i, a in enumerate(names) for j, b in enumerate(names) if i < j}


def pgap_draws(estimates: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]], *, reps: int = 200,
               seed: int = 0, scale: str = "none", norm: str = "selective",
               progress: bool = False) -> dict[str, np.ndarray]:
    """The methods' P-gaps (`pareto_gap`, both fronts recomputed on each draw) on all n points and on a paired
    bootstrap of them, the resampling of `aurec_ranking` (`paired_draws`). estimates[m] = (A_hat, E_hat, A, E):
    method m's estimates and its own oracle A*, E*, each (n,) float on the same points. Returns {"point":
    (methods,), "draws": (reps, methods)} float64, methods in the order of `estimates`. `progress`: a progress bar
    over the draws."""
    names = list(estimates)
    n = len(estimates[names[0]][0])
    if any(len(a) != n for m in names for a in estimates[m]):
        raise ValueError("pgap_pairs: every method's estimates and oracle must be on the same n points")
    check_int("reps", reps, minimum=100)

    def gaps(i: np.ndarray) -> list[float]:
        return [pareto_gap(*(a[i] for a in estimates[m]), scale=scale, norm=norm) for m in names]

    return {"point": np.array(gaps(np.arange(n))),
            "draws": paired_draws(gaps, n, reps=reps, seed=seed, progress=progress, desc="P-gap bootstrap")}


def pgap_pairs(estimates: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]], *, reps: int = 200,
               seed: int = 0, level: float = 0.95, scale: str = "none",
               norm: str = "selective") -> dict[str, list[float]]:
    """How sure the order of the P-gap column is (spec §1.4 F2): `paired_differences` of the methods' P-gaps over
    a paired bootstrap of the n test points (`pgap_draws`, which takes the same `estimates`). Returns
    {"A − B": [difference, lower, upper]}."""
    found = pgap_draws(estimates, reps=reps, seed=seed, scale=scale, norm=norm)
    return paired_differences(list(estimates), found["point"], found["draws"], level)


def aurec_ranking(scores: dict[str, np.ndarray], regrets: dict[str, np.ndarray], *, reps: int = 500, seed: int = 0,
                  level: float = 0.95, norm: str = "selective", ties: str = "stable",
                  reference: dict[str, float] | None = None) -> dict:
    """How sure the AuReC ranking of several methods on the same test points is: a paired bootstrap over the points
    (each draw resamples the n points once, for every method). `scores[m]`, `regrets[m]`: method m's uncertainty
    and its own regret E* (n,) on the same points. `reference`: another ranking's AuReC per method (the paper's),
    which the Kendall tau of each draw is taken against.

    Returns {"aurec": {m: AuReC}, "best": the method of the lowest AuReC, "best_share": {m: share of draws where m is
    lowest}, "difference": {m: [AuReC(m) - AuReC(best), lower, upper]} (percentile interval at `level`), "tau":
    [Kendall tau of our ranking against `reference`, lower, upper] (None without one), "reps"}."""
    from scipy.stats import kendalltau

    names = list(scores)
    n = len(next(iter(scores.values())))
    if any(len(scores[m]) != n or len(regrets[m]) != n for m in names):
        raise ValueError("aurec_ranking: every method's scores and regrets must be on the same n points")
    check_int("reps", reps, minimum=100)
    point = {m: aurec(scores[m], regrets[m], norm=norm, ties=ties) for m in names}
    best = min(point, key=point.get)
    draws = paired_draws(lambda i: [aurec(scores[m][i], regrets[m][i], norm=norm, ties=ties) for m in names], n,
                         reps=reps, seed=seed)
    tail = 100 * (1 - level) / 2
    diff = draws - draws[:, [names.index(best)]]
    out = {"aurec": point, "best": best, "reps": reps,
           "best_share": {m: float(np.mean(draws.argmin(1) == k)) for k, m in enumerate(names)},
           "difference": {m: [point[m] - point[best], *np.percentile(diff[:, k], [tail, 100 - tail]).tolist()]
                          for k, m in enumerate(names)}, "tau": None}
    if reference:
        ref = [reference[m] for m in names]
        taus = [kendalltau(row, ref).statistic for row in draws]
        out["tau"] = [float(kendalltau([point[m] for m in names], ref).statistic),
                      *np.percentile(taus, [tail, 100 - tail]).tolist()]
    return out
