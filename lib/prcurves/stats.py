"""Pointwise comparison of two ensembles of curves (spec 01 §3.4), with the corrections the paper lacks.

The paper compares C=4 with C=2 by a paired t-test at each recall value (alpha = 0.05, no correction).
Its members are trained independently, so pairing member i of one ensemble with member i of the other
is arbitrary (spec A3); and a test at each of 1000 grid points needs a multiplicity correction. So
beside `paired_t` this module offers Student and Welch two-sample t-tests, the Wilcoxon signed-rank
test, Benjamini-Hochberg FDR control on any of them, and a permutation max-T test, which controls the
family-wise error over the whole curve without assuming normality.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

from lib.params import check_choice, check_finite, check_int, check_ndim, check_nonempty, check_probability

TESTS = ("paired_t", "student", "welch", "wilcoxon", "permutation_maxT")
CORRECTIONS = ("none", "bh")
ALTERNATIVES = ("two-sided", "greater")


def check_finite_curves(name: str, values: np.ndarray) -> np.ndarray:
    """`values` as float64, or a ValueError naming `name` and the first non-finite entry.

    Every test here refuses NaN and +-inf rather than guessing: a NaN in one member's curve makes the
    permutation max statistic NaN (no permutation exceeds it, so every p-value sits at its floor) and
    the rank tests drop or misrank it. Drop the member, or fill its curve, before comparing.
    """
    return check_finite(name, np.asarray(values, np.float64), axes=("member", "grid point"),
                        hint="drop or repair that member's curve before comparing")


def _scipy_pvalues(a: np.ndarray, b: np.ndarray, test: str, alternative: str) -> np.ndarray:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        if test == "paired_t":
            return stats.ttest_rel(a, b, axis=0, alternative=alternative).pvalue
        return stats.ttest_ind(a, b, axis=0, equal_var=(test == "student"), alternative=alternative).pvalue


def wilcoxon_signflip(a: np.ndarray, b: np.ndarray, *, alternative: str = "two-sided", max_flips: int = 65_536,
                      seed: int = 0) -> np.ndarray:
    """Wilcoxon signed-rank p-values of the paired differences a - b, one per column, by sign flipping.

    Zero differences are dropped and tied |differences| get average ranks (scipy's zero_method="wilcox").
    The null distribution of T+ = sum of the ranks of positive differences is enumerated exactly over all
    2^n sign patterns when 2^n <= max_flips, else sampled with max_flips random patterns. It equals
    scipy.stats.wilcoxon's exact/permutation p-value, which scipy computes column by column (tens of ms
    each with ties); here all columns share one set of patterns. a, b: (n, G). Returns (G,) float64.
    """
    d = check_finite_curves("a", a) - check_finite_curves("b", b)
    n = len(d)
    ranks = stats.rankdata(np.where(d == 0, np.nan, np.abs(d)), axis=0, nan_policy="omit")
    ranks = np.nan_to_num(ranks)  # a zero difference has rank 0: it neither counts nor moves under flips
    sign = np.sign(d)
    if 2**n <= max_flips:
        flips = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
    else:
        flips = np.random.default_rng(seed).choice([-1, 1], size=(max_flips, n))
    observed = (ranks * (sign > 0)).sum(0)
    centre = ranks.sum(0) / 2  # E[T+] under the null
    exceed = np.zeros(d.shape[1])
    for chunk in np.array_split(flips, max(1, len(flips) // 1024)):
        positive = (chunk[:, :, None] * sign[None]) > 0  # (flips, n, G)
        null = np.einsum("png,ng->pg", positive, ranks)
        if alternative == "two-sided":
            exceed += (np.abs(null - centre) >= np.abs(observed - centre) - 1e-9).sum(0)
        else:
            exceed += (null >= observed - 1e-9).sum(0)
    return exceed / len(flips)


def welch_t(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Welch's t statistic per column; 0 where both groups are constant and equal (no evidence).

    a: (n_a, G), b: (n_b, G) float. Returns (G,) float64 (+-inf where only the means differ).
    """
    a, b = check_finite_curves("a", a), check_finite_curves("b", b)
    diff = a.mean(0) - b.mean(0)
    se = np.sqrt(a.var(0, ddof=1) / len(a) + b.var(0, ddof=1) / len(b))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = diff / se
    return np.where((se == 0) & (diff == 0), 0.0, t)


def _group_t(data: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Welch t of group 1 minus group 0 for each row of `labels` ((P, n) 0/1) at once: (P, G)."""
    n1 = labels.sum(1, keepdims=True)
    n0 = labels.shape[1] - n1
    s1, q1 = labels @ data, labels @ data**2
    s0, q0 = data.sum(0) - s1, (data**2).sum(0) - q1
    m1, m0 = s1 / n1, s0 / n0
    v1 = np.maximum(q1 - n1 * m1**2, 0) / (n1 - 1)
    v0 = np.maximum(q0 - n0 * m0**2, 0) / (n0 - 1)
    se, diff = np.sqrt(v1 / n1 + v0 / n0), m1 - m0
    with np.errstate(divide="ignore", invalid="ignore"):
        t = diff / se
    return np.where((se == 0) & (diff == 0), 0.0, t)


def permutation_maxT(a: np.ndarray, b: np.ndarray, *, num_permutations: int = 10_000, seed: int = 0,
                     alternative: str = "two-sided", batch: int = 256) -> np.ndarray:
    """Westfall-Young max-T p-values, family-wise over the G columns (Welch t, group labels permuted).

    a: (n_a, G), b: (n_b, G). p_j = (1 + #{perm: max_j' T*_j' >= T_j}) / (1 + num_permutations), with
    T = |t| for "two-sided" and T = t (a minus b) for "greater". Members of the two ensembles are
    exchangeable under H0 (same configuration), so labels are permuted, not signs of paired differences.
    Returns (G,) float64.
    """
    a, b = check_finite_curves("a", a), check_finite_curves("b", b)
    data = np.vstack([b, a])
    data -= data.mean(axis=0)  # centring keeps the one-pass variances below accurate
    labels0 = np.repeat([0.0, 1.0], [len(b), len(a)])
    observed = _group_t(data, labels0[None, :])[0]
    stat = np.abs if alternative == "two-sided" else (lambda x: x)
    observed = stat(observed)
    rng = np.random.default_rng(seed)
    exceed = np.zeros(data.shape[1])
    for start in range(0, num_permutations, batch):
        labels = np.stack([rng.permutation(labels0) for _ in range(min(batch, num_permutations - start))])
        max_t = stat(_group_t(data, labels)).max(axis=1)
        exceed += (max_t[:, None] >= (observed - 1e-10 * np.abs(observed))[None, :]).sum(0)  # ties count
    return (1 + exceed) / (1 + num_permutations)


def benjamini_hochberg(pvalues: np.ndarray) -> np.ndarray:
    """BH-adjusted p-values; NaN p-values are treated as 1 (never significant)."""
    return stats.false_discovery_control(np.nan_to_num(pvalues, nan=1.0), method="bh")


def pointwise_compare(a: np.ndarray, b: np.ndarray, test: str, alpha: float = 0.05, *, correction: str = "none",
                      alternative: str = "two-sided", num_permutations: int = 10_000,
                      seed: int = 0) -> dict:
    """Is ensemble `a` better than ensemble `b` at each grid point? (spec §3.4)

    a, b: (members, grid) float (precision of each member on a common recall grid); `paired_t` and
    `wilcoxon` need the same number of members. A NaN or inf anywhere raises a ValueError naming the
    argument and the entry (`check_finite_curves`), for every test: none of them can treat it soundly.
    test in TESTS; correction "bh" applies Benjamini-Hochberg (permutation_maxT is already family-wise
    and takes no correction).
    Returns {"pvalues": (grid,) float64, NaN where undefined; "significant": (grid,) bool, p < alpha
    and mean(a) > mean(b), NaN counting as not significant; "fraction": float, share of the grid
    significant; "test", "correction", "alternative"}.
    """
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    _check_compare_args(a, b, test, alpha, correction, alternative)
    if test == "permutation_maxT":
        check_int("num_permutations", num_permutations, minimum=99)
        pvalues = permutation_maxT(a, b, num_permutations=num_permutations, seed=seed, alternative=alternative)
    elif test == "wilcoxon":
        pvalues = wilcoxon_signflip(a, b, alternative=alternative, seed=seed)
    else:
        pvalues = np.asarray(_scipy_pvalues(a, b, test, alternative), np.float64)
    decision_p = benjamini_hochberg(pvalues) if correction == "bh" else pvalues
    significant = np.nan_to_num(decision_p, nan=1.0) < alpha
    significant &= a.mean(0) > b.mean(0)
    return {"pvalues": decision_p, "significant": significant, "fraction": float(significant.mean()),
            "test": test, "correction": correction, "alternative": alternative}


def _check_compare_args(a, b, test, alpha, correction, alternative) -> None:
    check_choice("test", test, TESTS)
    check_choice("correction", correction, CORRECTIONS)
    check_choice("alternative", alternative, ALTERNATIVES)
    check_probability("alpha", alpha)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(f"a and b must be (members, grid) arrays on the same grid; got {a.shape} and {b.shape}.")
    check_nonempty("a", a, axis=1, shape="(members, grid)")  # no grid point: no p-value, a NaN fraction
    check_finite_curves("a", a)
    check_finite_curves("b", b)
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"each ensemble needs at least 2 members; got {len(a)} and {len(b)}.")
    if test in ("paired_t", "wilcoxon") and len(a) != len(b):
        raise ValueError(f"test={test!r} pairs member i with member i and needs equal sizes; "
                         f"got {len(a)} and {len(b)}.")
    if test == "permutation_maxT" and correction != "none":
        raise ValueError("correction must be 'none' for permutation_maxT, which already controls the "
                         "family-wise error.")


def _member_scalars(name: str, values: np.ndarray) -> np.ndarray:
    values = check_nonempty(name, check_ndim(name, values, 1, "1-D (members,)"), min_len=2)
    return check_finite(name, values).astype(np.float64)


def compare_scalars(a: np.ndarray, b: np.ndarray) -> dict:
    """Two-sided Welch and Mann-Whitney p-values for per-member scalars (e.g. AUC) of two ensembles.

    a: (n_a,), b: (n_b,) float, finite, at least 2 each (Welch's test needs a variance per group).
    """
    a, b = _member_scalars("a", a), _member_scalars("b", b)
    return {"mean_a": float(a.mean()), "mean_b": float(b.mean()),
            "welch_p": float(stats.ttest_ind(a, b, equal_var=False).pvalue),
            "mannwhitney_p": float(stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)}


def check_member_draws(values: np.ndarray) -> np.ndarray:
    """`values` as a float64 (M, R, G) array with no empty axis and no NaN or inf (a 2-D array would be
    decomposed along the wrong axes into scalars)."""
    values = check_nonempty("values", check_ndim("values", values, 3, "(M, R, G)"), shape="(M, R, G)")
    return check_finite("values", values, hint="drop or repair that member's draw").astype(np.float64)


def variance_decomposition(values: np.ndarray) -> dict:
    """Law of total variance for curves of M members x R evaluation draws (spec 01 "total evaluation
    uncertainty"): total = model (between members) + sampling (within a member), exactly (ddof = 0).

    values: (M, R, G) float (precision of member m, draw r, at grid point g), finite, no empty axis.
    Returns {"total", "model", "sampling"}: (G,) float64. `model` still holds sampling noise / R of the
    member means.
    """
    values = check_member_draws(values)
    return {"total": values.reshape(-1, values.shape[-1]).var(axis=0),
            "model": values.mean(axis=1).var(axis=0), "sampling": values.var(axis=1).mean(axis=0)}


def decomposition_bands(values: np.ndarray, lo: float = 10, hi: float = 90) -> dict:
    """Percentile bands of the same (M, R, G) curves, around the grand mean:
    "total" over all M R curves; "model" over the M member means; "sampling" the within-member band
    averaged over members and centred on the grand mean. Each is a (lo (G,), hi (G,)) pair."""
    values = check_member_draws(values)
    mean = values.mean(axis=(0, 1))
    within = np.percentile(values, [lo, hi], axis=1) - values.mean(axis=1)[None]  # (2, M, G)
    return {"mean": mean, "total": tuple(np.percentile(values.reshape(-1, values.shape[-1]), [lo, hi], axis=0)),
            "model": tuple(np.percentile(values.mean(axis=1), [lo, hi], axis=0)),
            "sampling": tuple(mean + within.mean(axis=1))}


# ------------------------------------------------------------------------------------------------------------
# Intervals over the members, for the claims ledger (lib.prcurves.claims): a difference gets its own interval
# ------------------------------------------------------------------------------------------------------------
def band_width(members: np.ndarray, lo: float = 10, hi: float = 90) -> float:
    """The mean over the recall grid of the [lo, hi] percentile band of (M, G) member curves (the table's width)."""
    members = check_finite_curves("members", np.asarray(members, np.float64))
    p_lo, p_hi = np.percentile(members, [lo, hi], axis=0)
    return float((p_hi - p_lo).mean())


def _basic_interval(point: float, draws: np.ndarray, level: float) -> tuple[float, float]:
    """The basic (reverse-percentile) bootstrap interval [2 point - q_hi, 2 point - q_lo]: it corrects the first-order
    bias of a resampled statistic, which matters here: a resample repeats members, which narrows a percentile band
    and sharpens a pointwise test (the percentile interval of the significant share of notebook 01's C = 4 against
    C = 2, 0.282 to 0.605 around 0.358, sat almost wholly above it)."""
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(draws, [tail, 100 - tail])
    return float(2 * point - high), float(2 * point - low)


def bootstrap_width_difference(a: np.ndarray, b: np.ndarray, *, lo: float = 10, hi: float = 90, reps: int = 1000,
                               seed: int = 0, level: float = 0.95) -> dict:
    """band_width(a) - band_width(b) of two ensembles' (M, G) curves, with a basic bootstrap interval at `level`
    (each ensemble's members resampled with replacement, independently: the ensembles train independently).
    Returns {"difference", "lower", "upper", "reps"}."""
    a, b = (check_finite_curves(n, np.asarray(x, np.float64)) for n, x in (("a", a), ("b", b)))
    check_int("reps", reps, minimum=100)
    check_probability("level", level)
    rng = np.random.default_rng(seed)
    draws = np.array([band_width(a[rng.integers(0, len(a), len(a))], lo, hi)
                      - band_width(b[rng.integers(0, len(b), len(b))], lo, hi) for _ in range(reps)])
    point = band_width(a, lo, hi) - band_width(b, lo, hi)
    low, high = _basic_interval(point, draws, level)
    return {"difference": point, "lower": low, "upper": high, "reps": reps}


def bootstrap_fraction(a: np.ndarray, b: np.ndarray, test: str = "paired_t", alpha: float = 0.05, *,
                       correction: str = "none", reps: int = 1000, seed: int = 0, level: float = 0.95) -> dict:
    """The share of the grid where `a` is significantly better than `b` (`pointwise_compare`), with a basic bootstrap
    interval over the members at `level` (`_basic_interval`, clipped to [0, 1]): for a paired test the pairs (member
    i of each) are resampled together, else each ensemble on its own. Returns {"fraction", "lower", "upper",
    "reps"}."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    _check_compare_args(a, b, test, alpha, correction, "two-sided")
    if test == "permutation_maxT":
        raise ValueError("bootstrap_fraction: the permutation max-T test is resampled already; pick another test")
    check_int("reps", reps, minimum=100)
    check_probability("level", level)
    rng = np.random.default_rng(seed)
    paired = test in ("paired_t", "wilcoxon")
    draws = []
    for _ in range(reps):
        i = rng.integers(0, len(a), len(a))
        j = i if paired else rng.integers(0, len(b), len(b))
        with warnings.catch_warnings():  # a resample of identical members has no variance at some grid points
            warnings.simplefilter("ignore", RuntimeWarning)
            draws.append(pointwise_compare(a[i], b[j], test, alpha, correction=correction, seed=seed)["fraction"])
    point = pointwise_compare(a, b, test, alpha, correction=correction, seed=seed)["fraction"]
    low, high = _basic_interval(point, np.array(draws), level)
    return {"fraction": point, "lower": max(0.0, low), "upper": min(1.0, high), "reps": reps}


def mean_difference(a: np.ndarray, b: np.ndarray, *, level: float = 0.95) -> dict:
    """mean(a) - mean(b) of per-member scalars (e.g. AUC) with Welch's t interval at `level`.
    Returns {"difference", "lower", "upper"}."""
    a, b = _member_scalars("a", a), _member_scalars("b", b)
    check_probability("level", level)
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = float(np.sqrt(va + vb))
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)) if se > 0 else np.inf
    half = float(stats.t.ppf(0.5 + level / 2, df)) * se if se > 0 else 0.0
    d = float(a.mean() - b.mean())
    return {"difference": d, "lower": d - half, "upper": d + half}


def band_coverage(members: np.ndarray, *, lo: float = 10, hi: float = 90, level: float = 0.95) -> dict:
    """How often the [lo, hi] percentile band of the other members holds a member's precision (leave one out): the
    percentile band carries no formal guarantee (spec 01 §1, limitations), and this measures what it does cover.

    members: (M, G) precision curves on the common recall grid. For each member m, the band of the other M − 1
    members (NumPy's "linear" percentiles, as `ensemble_band`) and the share of the grid where m lies inside it
    (ties inside). Returns {"coverage": the mean share, "lower", "upper" (Student's t over the M shares at `level`),
    "nominal": (hi − lo) / 100, "exchangeable": the share a new exchangeable continuous draw falls inside, the
    interpolated positions' distance (1 + (n − 1) hi/100) − (1 + (n − 1) lo/100) over n + 1 with n = M − 1
    [derived: the new draw's rank among n + 1 is uniform, and the band's ends lie linearly between order
    statistics, so it does not depend on the members' distribution], "members": M}."""
    curves = check_finite_curves("members", np.asarray(members, np.float64))
    m = len(curves)
    if m < 3:
        raise ValueError(f"band_coverage needs at least 3 members, got {m}.")
    check_probability("level", level)
    shares = np.empty(m)
    for i in range(m):
        others = np.delete(curves, i, axis=0)
        p_lo, p_hi = np.percentile(others, [lo, hi], axis=0)
        shares[i] = np.mean((curves[i] >= p_lo) & (curves[i] <= p_hi))
    mean = float(shares.mean())
    half = float(stats.t.ppf(0.5 + level / 2, m - 1) * shares.std(ddof=1) / np.sqrt(m))
    n = m - 1
    return {"coverage": mean, "lower": mean - half, "upper": mean + half, "nominal": (hi - lo) / 100,
            "exchangeable": (n - 1) * (hi - lo) / 100 / (n + 1), "members": m}
