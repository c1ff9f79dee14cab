"""Precision-recall curves of generative models: the kNN estimator of spec 01 §3.2, and ensemble bands.

The estimator is the "knn" classifier family of Sykes, Simon & Rabin (AISTATS 2024) read through the
dual formula of Simon et al. (ICML 2019), as the paper's code runs it:

  1. split real X and fake Y 50/50; U = X_tr u Y_tr;
  2. for each test point z: r_k(z) = k-th distance to U, s_P = #{x in X_tr: d <= r_k}, s_Q likewise on Y_tr;
  3. classifiers f_gamma ("real" when gamma s_P > s_Q for gamma < 1, >= for gamma >= 1; f_0: s_Q = 0;
     f_inf: s_P > 0) plus the two constant classifiers, gamma in {0} u tan(linspace) u {inf};
  4. FPR = share of real test points called fake, FNR = share of fake test points called real;
  5. precision(lambda) = min_f [lambda (x) FPR + FNR], recall(lambda) = min_f [FPR + FNR (x) 1/lambda].

Decisions depend only on the integer pair (s_P, s_Q), so they are evaluated once per distinct pair
(at most a few hundred) instead of per point and per lambda: after the one kNN search, everything is
O(n log n), and no (classifiers x points x lambdas) tensor is ever built.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lib.knn import neighbourhood_counts
from lib.params import check_choice, check_finite, check_int, check_percentiles, check_probability

DUP_RECALL = ("replicate", "upper_envelope")


def lambda_grid(num_angles: int = 200) -> np.ndarray:
    """{0} u {tan(theta_j): theta = linspace(1e-10, pi/2 - 1e-10, num_angles)} u {inf}: (num_angles + 2,)."""
    inner = np.tan(np.linspace(1e-10, np.pi / 2 - 1e-10, num_angles))
    return np.concatenate([[0.0], inner, [np.inf]])


def default_k(num_real: int) -> int:
    """k = floor(sqrt(n_real)), n_real counted before the split (spec A10)."""
    return max(1, int(np.floor(np.sqrt(num_real))))


def neighbour_scores(*, real_train: np.ndarray, fake_train: np.ndarray, test: np.ndarray, k: int) -> np.ndarray:
    """(s_P, s_Q) of each test point: (n_test, 2) int64, counts of real / fake training points within
    the k-th distance to U = real_train u fake_train (ties included, spec §3.2 step 2)."""
    base = np.concatenate([real_train, fake_train])
    groups = np.repeat([0, 1], [len(real_train), len(fake_train)])
    return neighbourhood_counts(test, base, groups, k)["counts"]


def _decisions(scores: np.ndarray, gammas: np.ndarray) -> np.ndarray:
    """Boolean (n_pairs, len(gammas)): is a point with (s_P, s_Q) called "real" by f_gamma?"""
    s_p, s_q = scores[:, :1].astype(np.float64), scores[:, 1:].astype(np.float64)
    g = gammas[None, 1:-1]
    finite = np.where(g < 1, g * s_p > s_q, g * s_p >= s_q)
    return np.hstack([s_q == 0, finite, s_p > 0])


def error_rates(*, real_scores: np.ndarray, fake_scores: np.ndarray, gammas: np.ndarray) -> dict:
    """FPR and FNR of the len(gammas) score classifiers followed by f_real and f_fake (spec §3.2 steps 4-5).

    real_scores, fake_scores: (n, 2) int (s_P, s_Q) of the real / fake test points. gammas must start
    with 0 and end with inf. Returns {"fpr", "fnr"}: (len(gammas) + 2,) float64.
    """
    rates = []
    for scores in (real_scores, fake_scores):
        pairs, counts = np.unique(scores, axis=0, return_counts=True)
        rates.append(counts @ _decisions(pairs, gammas) / len(scores))  # share called "real"
    fpr = np.concatenate([1.0 - rates[0], [0.0, 1.0]])
    fnr = np.concatenate([rates[1], [1.0, 0.0]])
    return {"fpr": fpr, "fnr": fnr}


def _otimes(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a (x) b = 0 when a = 0 or b = 0, else a * b (so inf * b = inf for b > 0)."""
    a, b = np.broadcast_arrays(a, b)
    out = np.zeros(a.shape)
    nz = (a != 0) & (b != 0)
    out[nz] = a[nz] * b[nz]
    return out


def frontier(*, fpr: np.ndarray, fnr: np.ndarray, lambdas: np.ndarray) -> dict:
    """precision(lambda) = min_f [lambda (x) FPR + FNR], recall(lambda) = min_f [FPR + FNR (x) 1/lambda].

    fpr, fnr: (G + 2,) from `error_rates` (score classifiers, then f_real, f_fake). At lambda = 0 only
    {f_0, f_real, f_fake} compete, at lambda = inf only {f_inf, f_real, f_fake} (spec §3.2 step 6).
    Returns {"precision", "recall"}: (len(lambdas),) float64.
    """
    lam = lambdas[:, None]
    with np.errstate(divide="ignore"):
        inv = np.where(lam == 0, np.inf, 1.0 / lam)
    precision = _otimes(lam, fpr[None, :]) + fnr[None, :]
    recall = fpr[None, :] + _otimes(fnr[None, :], inv)
    allowed = np.ones_like(precision, bool)
    allowed[lambdas == 0, 1:-2] = False  # keep f_0 (first column) and the constants (last two)
    allowed[lambdas == np.inf, :-3] = False  # keep f_inf (third from last) and the constants
    precision, recall = np.where(allowed, precision, np.inf), np.where(allowed, recall, np.inf)
    return {"precision": precision.min(axis=1), "recall": recall.min(axis=1)}


def pr_curve_from_split(real_train: np.ndarray, fake_train: np.ndarray, real_test: np.ndarray,
                        fake_test: np.ndarray, k: int, num_angles: int = 200) -> dict:
    """The kNN PR curve of spec §3.2 from a given split; deterministic.

    All inputs: (n_i, D) float (array-like). Returns {"precision", "recall", "lambdas"}: (num_angles + 2,)
    float64, rows in ascending lambda, from (0, max recall) to (max precision, 0).
    """
    parts = {"real_train": real_train, "fake_train": fake_train, "real_test": real_test, "fake_test": fake_test}
    parts = {name: as_points(name, arr, min_rows=1) for name, arr in parts.items()}
    check_same_dimension(**parts)
    real_train, fake_train, real_test, fake_test = parts.values()
    check_int("k", k, minimum=1, maximum=len(real_train) + len(fake_train))
    check_int("num_angles", num_angles, minimum=1)
    kwargs = {"real_train": real_train, "fake_train": fake_train, "k": k}
    real_scores = neighbour_scores(test=real_test, **kwargs)
    fake_scores = neighbour_scores(test=fake_test, **kwargs)
    lambdas = lambda_grid(num_angles)
    rates = error_rates(real_scores=real_scores, fake_scores=fake_scores, gammas=lambdas)
    return {**frontier(fpr=rates["fpr"], fnr=rates["fnr"], lambdas=lambdas), "lambdas": lambdas}


def as_points(name: str, points, *, min_rows: int = 1) -> np.ndarray:
    """`points` as a float64 (n, D) array; a ValueError naming `name` if it is not numeric, not 2-D, has
    fewer than `min_rows` rows or no column, or holds a NaN/inf (the first offending row is named)."""
    try:
        arr = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be numeric, an (n, D) array of floats; np.asarray failed: {err}") from None
    if arr.ndim != 2 or len(arr) < min_rows or arr.shape[1] < 1:
        raise ValueError(f"{name} must be a finite (n, D) array with n >= {min_rows} and D >= 1; "
                         f"got shape {arr.shape}.")
    finite = np.isfinite(arr).all(axis=1)
    if not finite.all():
        raise ValueError(f"{name} must be a finite (n, D) array with n >= {min_rows}; {int((~finite).sum())} "
                         f"row(s) hold NaN/inf, the first is row {int(np.argmin(finite))}.")
    return arr


def check_same_dimension(**arrays: np.ndarray) -> None:
    """Raise a ValueError naming the arrays when their numbers of columns D differ."""
    dims = {name: arr.shape[1] for name, arr in arrays.items()}
    if len(set(dims.values())) > 1:
        names = list(arrays)
        shapes = " and ".join(f"{name} {arrays[name].shape}" for name in names)
        raise ValueError(f"{' and '.join(names)} must have the same dimension D; got {shapes}.")


def split_half(points: np.ndarray, rng: np.random.Generator, train_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """A random (train, test) split of the rows of `points`."""
    order = rng.permutation(len(points))
    cut = int(round(train_fraction * len(points)))
    return points[order[:cut]], points[order[cut:]]


def seeded_split(real: np.ndarray, fake: np.ndarray, train_fraction: float = 0.5, seed: int = 0) -> dict:
    """The split `pr_curve` uses: {"real_train", "real_test", "fake_train", "fake_test"}."""
    check_probability("train_fraction", train_fraction)
    rng = np.random.default_rng(seed)
    real_train, real_test = split_half(real, rng, train_fraction)
    fake_train, fake_test = split_half(fake, rng, train_fraction)
    return {"real_train": real_train, "real_test": real_test, "fake_train": fake_train, "fake_test": fake_test}


def pr_curve(real: np.ndarray, fake: np.ndarray, k: int | None = None, num_angles: int = 200,
             train_fraction: float = 0.5, seed: int = 0) -> dict:
    """`pr_curve_from_split` after a seeded split of each set; k defaults to floor(sqrt(len(real))).

    real: (n, D), fake: (m, D) float, or anything np.asarray turns into one (nested lists); rows with a
    non-finite value are refused (drop them first), as are real and fake of different dimension D.
    """
    real, fake = as_points("real", real, min_rows=4), as_points("fake", fake, min_rows=4)
    check_same_dimension(real=real, fake=fake)
    k = default_k(len(real)) if k is None else k
    return pr_curve_from_split(**seeded_split(real, fake, train_fraction, seed), k=k, num_angles=num_angles)


# ----------------------------------------------------------------------------------------------------
# Scalar summaries (spec §3.3)
# ----------------------------------------------------------------------------------------------------
def auc_raw(curve: dict) -> float:
    """Trapezoidal area of precision over recall after a stable sort by recall, no anchor point."""
    order = np.argsort(curve["recall"], kind="stable")
    return float(np.trapezoid(curve["precision"][order], curve["recall"][order]))


def max_f_beta(curve: dict, beta: float) -> float:
    """max over lambda of F_beta = (1 + beta^2) p r / (beta^2 p + r + 1e-10) (Sajjadi et al. 2018)."""
    p, r = curve["precision"], curve["recall"]
    return float(np.max((1 + beta**2) * p * r / (beta**2 * p + r + 1e-10)))


def summarise(curve: dict) -> dict:
    """max precision, max recall, AUC_raw, max F_8 and max F_1/8 of one curve."""
    return {"max_precision": float(curve["precision"].max()), "max_recall": float(curve["recall"].max()),
            "auc_raw": auc_raw(curve), "f8": max_f_beta(curve, 8.0), "f1_8": max_f_beta(curve, 1 / 8)}


# ----------------------------------------------------------------------------------------------------
# Ensemble aggregation (spec §2.5)
# ----------------------------------------------------------------------------------------------------
def recall_grid(grid_size: int = 1000) -> np.ndarray:
    """r_j = j / grid_size, j = 1..grid_size; grid_size >= 2 (an area needs two points)."""
    check_int("grid_size", grid_size, minimum=2)
    return np.arange(1, grid_size + 1) / grid_size


def interpolate_precision(curve: dict, grid: np.ndarray, dup_recall: str = "replicate", *,
                          name: str = "curve") -> np.ndarray:
    """Precision on the recall `grid`, after appending the anchor (recall 1, precision 0); 0 outside.

    dup_recall (spec A8): "replicate" sorts the authors' rows stably by recall and interpolates as
    SciPy's interp1d does (at a duplicated recall the last duplicate wins, just below it the segment
    runs to the first); "upper_envelope" keeps the highest precision at each recall. A NaN or inf in the
    curve is an error naming `name` (np.interp would spread it over the grid or sort it anywhere).
    """
    check_choice("dup_recall", dup_recall, DUP_RECALL)
    for key in ("recall", "precision"):
        check_finite(f"{name}[{key!r}]", curve[key], hint="drop or repair that member's curve")
    recall = np.append(curve["recall"], 1.0)
    precision = np.append(curve["precision"], 0.0)
    order = np.argsort(recall, kind="stable")
    recall, precision = recall[order], precision[order]
    if dup_recall == "upper_envelope":
        recall, first = np.unique(recall, return_index=True)
        precision = np.maximum.reduceat(precision, first)
    return np.interp(grid, recall, precision, left=0.0, right=0.0)


def member_matrix(curves: Sequence[dict], grid_size: int = 1000, dup_recall: str = "replicate") -> np.ndarray:
    """(M, grid_size) interpolated precision of each member on the common recall grid."""
    grid = recall_grid(grid_size)
    return np.stack([interpolate_precision(c, grid, dup_recall, name=f"curves[{i}]") for i, c in enumerate(curves)])


def ensemble_band(curves: Sequence[dict], grid_size: int = 1000, lo: float = 10, hi: float = 90,
                  dup_recall: str = "replicate") -> dict:
    """Mean and [lo, hi] percentile band (NumPy's "linear" method) of precision over the members.

    curves: list of M dicts from `pr_curve`. Returns {"recall": (G,), "mean", "lo", "hi": (G,),
    "members": (M, G), "auc": (M,) AUC_grid of each member} (G = grid_size).
    """
    if len(curves) < 1:
        raise ValueError("ensemble_band needs at least one curve.")
    lo, hi = check_percentiles("(lo, hi)", (lo, hi))
    members = member_matrix(curves, grid_size, dup_recall)
    grid = recall_grid(grid_size)
    p_lo, p_hi = np.percentile(members, [lo, hi], axis=0)
    return {"recall": grid, "mean": members.mean(axis=0), "lo": p_lo, "hi": p_hi, "members": members,
            "auc": np.trapezoid(members, grid, axis=1)}
