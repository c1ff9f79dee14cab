"""Image Retrieval Score (Dombrowski et al., CVPR 2025; spec 04 §1-§3): retrieval, IRS_alpha, IRS_inf.

Every query image (a generated or a held-out real one) retrieves its nearest training image in a
feature space (exact L2 on unnormalised features, spec §2.1 step 3). With k distinct training images
retrieved by n queries from a training set of N images,

* IRS_alpha = k / N (alpha = n / N), the raw fraction reached by this sample;
* IRS_inf = s_hat / N, where s_hat is the maximum-likelihood number of *reachable* training images
  under the coupon-collector (occupancy) model: the n queries land uniformly on s reachable images,
  so P(K = k | s) = S(n, k) s! / ((s - k)! s^n) (S = Stirling numbers of the second kind; spec §3);
* the interval [L, U] / N with L = min{s : P(K >= k | s) >= alpha_e} and
  U = max{s : P(K <= k | s) >= alpha_e}: a two-sided exact (Clopper-Pearson style) interval with
  alpha_e per tail, 90 % for the authors' alpha_e = 0.05;
* IRS_inf,a = IRS_inf(synthetic) / IRS_inf(real held-out) at equal n (the "measurement gap" removed).

The search over s is a bisection in both cases (K is stochastically increasing in s, and the
likelihood ratio L(s+1)/L(s) changes sign once), so the cost does not grow with N: about 60
evaluations of a tail sum over at most n terms. Unlike the authors' package it terminates for every k,
including k >= N - 1 and k = n (spec §5, "termination bug").
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.special import gammaln, lambertw, logsumexp

from lib.knn import nearest_neighbour
from lib.params import check_finite, check_indices, check_int

STIRLING_EXACT_MAX = 5000  # spec §3: exact recurrence up to this n, Temme's asymptotic form above
ALPHA_E = 0.05  # the authors' error probability per tail (BeyondFID default_config.py:128)
NON_FINITE_FEATURES = ("the nearest neighbour of or among NaN/inf features is undefined (the search would "
                       "return index -1 or a wrong one); drop or repair that row")


# ----------------------------------------------------------------------------------------------------
# log Stirling numbers of the second kind
# ----------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=8)
def _log_stirling_exact_row(n: int) -> np.ndarray:
    """log S(n, j) for j = 0..n by the recurrence S(m, j) = j S(m-1, j) + S(m-1, j-1), in log space.

    O(n^2) time, O(n) memory. Entry j = 0 is -inf (n >= 1).
    """
    row = np.array([0.0])  # S(0, 0) = 1
    log_j = np.log(np.arange(1, n + 1, dtype=np.float64))
    for m in range(1, n + 1):
        new = np.full(m + 1, -np.inf)
        new[1:m] = np.logaddexp(log_j[: m - 1] + row[1:m], row[: m - 1])
        new[m] = 0.0  # S(m, m) = 1
        row = new
    row.setflags(write=False)
    return row


def _logsumexp(x: np.ndarray) -> float:
    """log(sum(exp(x))) of a 1-D float64 array (-inf if empty or all -inf), without scipy's per-call cost."""
    top = x.max(initial=-np.inf)
    return float(top + np.log(np.exp(x - top).sum())) if np.isfinite(top) else float(top)


@functools.lru_cache(maxsize=16)
def _log_stirling_high(n: int, c_max: int) -> np.ndarray:
    """log S(n, n - c) for c = 0..c_max (entry c: j = n - c blocks, c "collisions"), exact.

    By the second-order Eulerian numbers <<c, i>> (Graham, Knuth & Patashnik, Concrete Mathematics,
    eq. 6.43): S(n, n - c) = sum_i <<c, i>> C(n + c - 1 - i, 2c), a sum of positive terms, with
    <<c, i>> = (i + 1) <<c-1, i>> + (2c - 1 - i) <<c-1, i-1>> and <<0, 0>> = 1. Everything in log space:
    O(c_max^2) time whatever n, where the Stirling recurrence needs O(n c_max). What irs_inf needs when
    k is close to n.
    """
    log_fact = gammaln(np.arange(n + c_max + 1, dtype=np.float64) + 1.0)  # log x! for x = 0..n + c_max
    log_i = np.log(np.arange(1, 2 * c_max + 1, dtype=np.float64))  # log_i[x - 1] = log x
    out = np.empty(c_max + 1)
    out[0] = 0.0  # S(n, n) = 1
    euler = np.array([0.0])  # log <<0, i>>, i = 0: <<0, 0>> = 1
    for c in range(1, c_max + 1):
        new = np.full(c, -np.inf)  # i = 0..c-1; euler holds <<c-1, i>> for i = 0..max(c-2, 0)
        new[: len(euler)] = euler + log_i[: len(euler)]  # (i + 1) <<c-1, i>>
        if c >= 2:  # + (2c - 1 - i) <<c-1, i-1>> for i = 1..c-1
            new[1:] = np.logaddexp(new[1:], euler + log_i[c - 1 : 2 * c - 2][::-1])
        euler = new
        i = np.arange(min(c, n - c))  # C(n + c - 1 - i, 2c) = 0 once n + c - 1 - i < 2c
        top = n + c - 1 - i
        out[c] = _logsumexp(euler[i] + log_fact[top] - log_fact[2 * c] - log_fact[top - 2 * c])
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=16)
def _log_stirling_low(n: int, j_max: int) -> np.ndarray:
    """log S(n, j) for j = 0..j_max by the row recurrence of `_log_stirling_exact_row`, truncated at
    j_max (entries above j_max never feed those below): O(n j_max) time. For k far below n."""
    row = np.array([0.0])  # S(0, 0) = 1
    log_j = np.log(np.arange(1, j_max + 1, dtype=np.float64))
    for m in range(1, n + 1):
        width = min(m, j_max) + 1
        new = np.full(width, -np.inf)
        top = min(m - 1, j_max)  # len(row) = top + 1: new[j] = log(j S(m-1, j) + S(m-1, j-1)), j = 1..top
        new[1 : top + 1] = np.logaddexp(log_j[:top] + row[1 : top + 1], row[:top])
        if m <= j_max:
            new[m] = 0.0  # S(m, m) = 1
        row = new
    row.setflags(write=False)
    return row


def temme_G(v: np.ndarray) -> np.ndarray:
    """The root G in (0, 1) of G = v exp(G - v) for v > 1: G = -W_0(-v e^{-v}) (spec §3, closed form).

    Two Newton steps on phi(-delta) = phi(eps) with G = 1 - delta, v = 1 + eps, phi(x) = x - log1p(x),
    restore full precision near the branch point v -> 1 where W_0 loses digits.
    """
    v = np.asarray(v, np.float64)
    G = np.real(-lambertw(-v * np.exp(-v), 0))
    eps, delta = v - 1.0, 1.0 - G
    target = eps - np.log1p(eps)
    near = (eps < 0.5) & (delta > 0)  # far from v = 1, W_0 is accurate and Newton in delta ill-conditioned
    for _ in range(2):
        d = delta[near]
        resid = (-d - np.log1p(-d)) - target[near]
        delta[near] = np.clip(d - resid * (1.0 - d) / d, 1e-300, 1.0)
    return 1.0 - delta


def log_stirling_temme(n: int, k: np.ndarray) -> np.ndarray:
    """Temme's (1993) uniform asymptotic log S(n, k) for 1 <= k <= n (spec §3; BeyondFID irs.py l.51-77).

    Exact values at k = n (0), k = 1 (0) and k = n - 1 (log C(n, 2)).
    """
    k = np.asarray(k, np.int64)
    kf = k.astype(np.float64)
    out = np.zeros(k.shape)
    mid = (k > 1) & (k < n - 1)
    if np.any(mid):
        km = kf[mid]
        v = n / km
        G = temme_G(v)
        log_binom = gammaln(n + 1.0) - gammaln(km + 1.0) - gammaln(n - km + 1.0)
        out[mid] = (0.5 * np.log((v - 1.0) / (v * (1.0 - G))) + (n - km) * np.log((v - 1.0) / (v - G))
                    + n * np.log(km) - km * np.log(n) + km * (1.0 - G) + log_binom)
    if n >= 3:
        out[k == n - 1] = math.log(n * (n - 1) / 2)
    return out


def log_stirling2(n: int, *, exact_max: int = STIRLING_EXACT_MAX) -> np.ndarray:
    """log S(n, j) for j = 0..n, float64 (n + 1,); exact for n <= exact_max, else Temme's form."""
    if n < 1:
        raise ValueError(f"n={n!r} must be >= 1.")
    if n <= exact_max:
        return _log_stirling_exact_row(n)
    out = np.empty(n + 1)
    out[0] = -np.inf
    out[1:] = log_stirling_temme(n, np.arange(1, n + 1))
    return out


# ----------------------------------------------------------------------------------------------------
# The occupancy (coupon-collector) model
# ----------------------------------------------------------------------------------------------------
def log_falling_over_power(n_samples: int, s: int, j_max: int) -> np.ndarray:
    """log(s! / ((s - j)! s^n)) for j = 0..j_max (j_max <= s): the factor of P(K = j | s) besides S(n, j).

    Written as sum_{i < j} log1p(-i / s) - (n - j) log s, which keeps its precision for every s. The
    textbook form gammaln(s + 1) - gammaln(s - j + 1) - n log s subtracts numbers of size s log s: at
    s = 1e16 they are 3.5e17 apart from zero with a float spacing of 64, so the tails came out as
    garbage (a wrong lower bound at N = 1e16, OverflowError at N >= 1e17). O(j_max) time.
    """
    falling = np.concatenate(([0.0], np.cumsum(np.log1p(-np.arange(j_max, dtype=np.float64) / s))))
    return falling - (n_samples - np.arange(j_max + 1)) * math.log(s)


def log_occupancy_pmf(n_samples: int, s: int, log_s2: np.ndarray | None = None) -> np.ndarray:
    """log P(K = j | s) for j = 0..min(n, s): n uniform draws from s items hit K distinct ones."""
    log_s2 = log_stirling2(n_samples) if log_s2 is None else log_s2
    j_max = min(n_samples, s)
    return log_s2[: j_max + 1] + log_falling_over_power(n_samples, s, j_max)


def _tail_probabilities(n_samples: int, k: int, s: int, log_s2: np.ndarray) -> tuple[float, float]:
    """(P(K <= k | s), P(K >= k | s)), each normalised by the total so Temme's error cancels to first order."""
    logp = log_occupancy_pmf(n_samples, s, log_s2)
    total = logsumexp(logp)
    lower = math.exp(logsumexp(logp[: k + 1]) - total)
    upper = math.exp(logsumexp(logp[k:]) - total) if k < len(logp) else 0.0
    return lower, upper


def _exact_tails(n_samples: int, k: int, s: int) -> tuple[float, float]:
    """(P(K <= k | s), P(K >= k | s)) from exact Stirling numbers, computing only one side of k.

    The exact pmf sums to 1, so one tail gives the other: P(K <= k) = 1 - P(K >= k) + P(K = k). The
    cheaper side is built: log S(n, j) for j >= k (`_log_stirling_high`, about (n - k)^2 operations) or
    for j <= k (`_log_stirling_low`, n k), instead of the whole O(n^2) row built up front.
    Agrees with the full-row tails to rounding (~1e-13 absolute); the tails are only compared with
    alpha_e, so no decision of the bisections changes (tests/test_irs_method.py checks them side by side).
    """
    n = n_samples
    high = (n - k) ** 2 <= n * k  # the cheaper side: about (n - k)^2 operations above k, n k below
    if high:  # j = k..min(n, s)
        j = np.arange(k, min(n, s) + 1)
        log_s2 = _log_stirling_high(n, n - k)[n - j]
    else:  # j = 0..k (k <= s always: s ranges over [k, N])
        j = np.arange(0, k + 1)
        log_s2 = _log_stirling_low(n, k)
    logp = log_s2 + log_falling_over_power(n, s, int(j[-1]))[j]
    p_k = math.exp(logp[0] if high else logp[-1])
    side = math.exp(_logsumexp(logp))
    lower, upper = (1.0 - side + p_k, side) if high else (side, 1.0 - side + p_k)
    return min(max(lower, 0.0), 1.0), min(max(upper, 0.0), 1.0)


def log_likelihood(n_samples: int, k: int, s: np.ndarray) -> np.ndarray:
    """log P(K = k | s) up to the constant log S(n, k), for an array of s (-inf where s < k)."""
    s = np.asarray(s, np.float64)
    out = np.full(s.shape, -np.inf)
    ok = s >= k
    out[ok] = gammaln(s[ok] + 1.0) - gammaln(s[ok] - k + 1.0) - n_samples * np.log(s[ok])
    return out


def mle_reachable(n_train: int, n_samples: int, k: int) -> int:
    """Maximum-likelihood s in [k, n_train] (spec §3). The smallest maximiser on exact ties.

    log L(s+1) - log L(s) = -log1p(-k/(s+1)) - n log1p(1/s) is positive on a prefix of s and negative
    after it (it decreases while positive and tends to 0 from below), so the MLE is the first s where
    it is <= 0, found by bisection; for k = n it stays positive and the MLE is n_train.

    The case k = n is answered directly: there the difference is n (n - 1) / (2 s^2) + O(s^-3), a second
    order term that float64 computes as the difference of two first-order ones, so it came out <= 0 for
    small n at N >= 1e16 (s_hat = 6.9e15 instead of N = 1e16 at n = k = 2).
    """
    check_counts(n_train, n_samples, k)
    if k == n_samples:  # L(s) = prod_{i<n} (1 - i/s) grows with s
        return n_train

    def rises(s: int) -> bool:
        return -math.log1p(-k / (s + 1)) - n_samples * math.log1p(1.0 / s) > 0.0

    lo, hi = k, n_train  # invariant: the MLE lies in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if rises(mid):
            lo = mid + 1
        else:
            hi = mid
    return lo


def _bisect(turned, lo: int, hi: int) -> tuple[int, int]:
    """(lo, hi) narrowed to neighbours (hi - lo <= 1) around the one place where `turned` turns true, for
    `turned` false at lo and true at hi (neither evaluated here); each step keeps that invariant."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if turned(mid) else (mid, hi)
    return lo, hi


def _bisect_last_true(predicate, lo: int, hi: int) -> int:
    """The largest s in [lo, hi] with predicate(s), for predicate true on a prefix and predicate(lo)."""
    if predicate(hi):
        return hi
    return _bisect(lambda s: not predicate(s), lo, hi)[0]


def _bisect_first_true(predicate, lo: int, hi: int) -> int | None:
    """The smallest s in [lo, hi] with predicate(s), for predicate true on a suffix; None if never true."""
    if not predicate(hi):
        return None
    if predicate(lo):
        return lo
    return _bisect(predicate, lo, hi)[1]


def check_counts(n_train: int, n_samples: int, k_distinct: int) -> None:
    """Validate (N, n, k): integers with N >= 1, n >= 2, 1 <= k <= min(n, N); ValueError otherwise."""
    for name, value in (("n_train", n_train), ("n_samples", n_samples), ("k_distinct", k_distinct)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ValueError(f"{name}={value!r} must be an integer.")
    if n_train < 1:
        raise ValueError(f"n_train={n_train!r} must be >= 1.")
    if n_samples < 2:
        raise ValueError(f"n_samples={n_samples!r} must be >= 2 (with one sample the likelihood is flat in s).")
    if not 1 <= k_distinct <= min(n_samples, n_train):
        raise ValueError(f"k_distinct={k_distinct!r} must lie in [1, min(n_samples, n_train)] = "
                         f"[1, {min(n_samples, n_train)}].")


def irs_inf(n_train: int, n_samples: int, k_distinct: int, alpha_e: float = ALPHA_E, *,
            exact_max: int = STIRLING_EXACT_MAX) -> dict:
    """IRS_inf and its interval from k distinct retrievals of n queries in a training set of N (spec §3).

    Returns {"lower", "estimate", "upper"} as fractions of n_train, the counts {"s_lower", "s_hat",
    "s_upper"}, "irs_alpha" = k/N, "alpha" = n/N, "collisions" = n - k, and "consistent": False when
    even s = N makes k this large improbable (P(K >= k | N) < alpha_e; then s_lower = N).
    With alpha_e = 0.05 per tail the interval is a two-sided 90 % interval.
    """
    check_counts(n_train, n_samples, k_distinct)
    n_train, n_samples, k = int(n_train), int(n_samples), int(k_distinct)
    if not 0.0 < alpha_e < 0.5:
        raise ValueError(f"alpha_e={alpha_e!r} must lie in (0, 0.5) (the error probability per tail).")
    if n_samples <= exact_max:  # exact Stirling numbers, only on the cheaper side of k
        tails = functools.lru_cache(maxsize=None)(lambda s: _exact_tails(n_samples, k, s))
    else:
        log_s2 = log_stirling2(n_samples, exact_max=exact_max)
        tails = functools.lru_cache(maxsize=None)(lambda s: _tail_probabilities(n_samples, k, s, log_s2))
    s_hat = mle_reachable(n_train, n_samples, k)
    s_upper = _bisect_last_true(lambda s: tails(s)[0] >= alpha_e, k, n_train)
    s_lower = _bisect_first_true(lambda s: tails(s)[1] >= alpha_e, k, n_train)
    consistent = s_lower is not None
    s_lower = n_train if s_lower is None else s_lower
    return {"lower": s_lower / n_train, "estimate": s_hat / n_train, "upper": s_upper / n_train,
            "s_lower": s_lower, "s_hat": s_hat, "s_upper": s_upper, "k_distinct": k, "n_samples": n_samples,
            "n_train": n_train, "irs_alpha": k / n_train, "alpha": n_samples / n_train,
            "collisions": n_samples - k, "consistent": consistent, "alpha_e": alpha_e}


def moment_estimate(n_train: int, n_samples: int, k_distinct: int) -> float:
    """The s solving E[K | s] = s (1 - (1 - 1/s)^n) = k (continuous, capped at n_train); spec §5 check."""
    check_counts(n_train, n_samples, k_distinct)
    expected = lambda s: s * -math.expm1(n_samples * math.log1p(-1.0 / s)) if s > 1 else 1.0  # noqa: E731
    if expected(n_train) <= k_distinct:
        return float(n_train)
    lo, hi = float(k_distinct), float(n_train)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if expected(mid) < k_distinct else (lo, mid)
    return 0.5 * (lo + hi)


def adjusted_score(synthetic: dict, real: dict) -> dict:
    """IRS_inf,a = s_hat(synthetic) / s_hat(real) (spec §3), with the conservative bounds-ratio interval
    [L_synth / U_real, U_synth / L_real] (a proposal, spec §4 `adjusted_ci`): if each interval covers its
    truth with probability >= 1 - 2 alpha_e, the ratio interval covers the true ratio with probability
    >= 1 - 4 alpha_e (Bonferroni; 80 % for alpha_e = 0.05), usually much more.
    """
    if synthetic["n_samples"] != real["n_samples"]:
        raise ValueError(f"IRS_inf,a needs equal n: synthetic n={synthetic['n_samples']}, real n={real['n_samples']}.")
    return {"estimate": synthetic["s_hat"] / real["s_hat"], "lower": synthetic["s_lower"] / real["s_upper"],
            "upper": synthetic["s_upper"] / real["s_lower"]}


# ----------------------------------------------------------------------------------------------------
# Retrieval
# ----------------------------------------------------------------------------------------------------
def nearest_train(train_feats: np.ndarray, query_feats: np.ndarray, *, center: bool = True,
                  query_chunk: int = 16_384, base_chunk: int = 65_536) -> np.ndarray:
    """Index of the nearest training feature (exact squared L2, float32 as in BeyondFID) of each query.

    train_feats: (N, D), query_feats: (n, D) float. Returns (n,) int64. Uses the shared faiss search
    (`lib.knn.nearest_neighbour`), which streams the training set in blocks of `base_chunk` rows and the
    queries in chunks of `query_chunk`: no n x N distance matrix and no copy of the training set exist,
    so memory beyond the inputs is bounded by the chunk sizes (at N = 1.28 M, D = 2048: one 512 MB
    block). On equal distances the lower training index wins. `center=True` subtracts the training mean
    (block by block) to shrink float32 cancellation in ||q||^2 + ||x||^2 - 2 q.x; it changes no exact
    distance, only rounding.
    """
    train_feats, query_feats = np.asarray(train_feats), np.asarray(query_feats)
    if train_feats.ndim != 2 or query_feats.ndim != 2 or train_feats.shape[1] != query_feats.shape[1]:
        raise ValueError(f"train_feats {train_feats.shape} and query feats {query_feats.shape} must be (N, D) and "
                         f"(n, D) with the same D.")
    check_finite("train_feats", train_feats, hint=NON_FINITE_FEATURES)
    check_finite("query_feats", query_feats, hint=NON_FINITE_FEATURES)
    dist, index = nearest_neighbour(query_feats, train_feats, center=center, base_chunk=base_chunk,
                                    query_chunk=query_chunk)
    if not np.all(np.isfinite(dist)):  # finite in float64, but a float32 distance overflowed
        row = int(np.argmin(np.isfinite(dist)))
        raise ValueError(f"query_feats row {row}: every float32 squared distance to train_feats is inf or NaN "
                         f"(features too large for float32); rescale the features.")
    return index


def retrieval_result(n_train: int, indices: np.ndarray, alpha_e: float = ALPHA_E) -> dict:
    """IRS_alpha, IRS_inf and interval (see `irs_inf`) for retrieved training indices (n,) int, each in
    [0, n_train) (a float, negative or too large index is an error, not one more distinct image)."""
    check_int("n_train", n_train, minimum=1)
    indices = check_indices("indices", indices, n_train, n_name="n_train")
    return irs_inf(n_train, len(indices), int(np.unique(indices).size), alpha_e)


def equal_n_chunks(num_real: int, num_fake: int, *, seed: int = 42) -> tuple[np.ndarray, list[np.ndarray]]:
    """Row indices for equal-n evaluation (spec §2.1 steps 2 and 6, without the package's bug).

    n = min(num_real, num_fake). The real set is subsampled to n (seeded); the synthetic set is cut into
    floor(num_fake / n) disjoint chunks of n after a seeded shuffle. Every chunk is used (the package
    keeps only the last one).
    """
    rng = np.random.default_rng(seed)
    n = min(num_real, num_fake)
    real_rows = np.sort(rng.permutation(num_real)[:n])
    perm = rng.permutation(num_fake)
    return real_rows, [np.sort(perm[i * n : (i + 1) * n]) for i in range(num_fake // n)]


def image_retrieval_score(train_feats: np.ndarray, real_feats: np.ndarray, fake_feats: np.ndarray,
                          alpha_e: float = ALPHA_E, *, seed: int = 42, center: bool = True) -> dict:
    """The Image Retrieval Score of a generator (spec §2.1 steps 2-5, §3).

    train_feats: (N, D) training features; real_feats: (n_r, D) held-out real features; fake_feats:
    (n_f, D) generated features, all from one extractor. Both query sets are brought to n = min(n_r, n_f)
    (`equal_n_chunks`); with several synthetic chunks, each is scored against the same real set.

    Returns {"real": irs_inf dict, "fake": irs_inf dict of the first chunk, "fake_chunks": list of them,
    "adjusted": {"estimate", "lower", "upper"} of the first chunk (its estimate with its own bounds-ratio
    interval, see `adjusted_score`), "adjusted_chunks": list, "adjusted_mean": the mean of the chunks'
    estimates (a point without an interval: the chunks share the real set, so their intervals do not
    combine into one for the mean), "n": n, "indices_real", "indices_fake": retrieved training indices}.
    """
    train_feats = check_finite("train_feats", train_feats, hint=NON_FINITE_FEATURES)
    real_feats = check_finite("real_feats", real_feats, hint=NON_FINITE_FEATURES)
    fake_feats = check_finite("fake_feats", fake_feats, hint=NON_FINITE_FEATURES)
    if len(real_feats) < 2 or len(fake_feats) < 2:
        raise ValueError(f"need at least 2 real and 2 fake features, got {len(real_feats)} and {len(fake_feats)}.")
    real_rows, fake_chunks = equal_n_chunks(len(real_feats), len(fake_feats), seed=seed)
    idx_real = nearest_train(train_feats, real_feats[real_rows], center=center)
    idx_fake = nearest_train(train_feats, fake_feats, center=center)
    real = retrieval_result(len(train_feats), idx_real, alpha_e)
    fakes = [retrieval_result(len(train_feats), idx_fake[rows], alpha_e) for rows in fake_chunks]
    adjusted = [adjusted_score(f, real) for f in fakes]
    return {"real": real, "fake": fakes[0], "fake_chunks": fakes, "adjusted": adjusted[0], "adjusted_chunks": adjusted,
            "adjusted_mean": float(np.mean([a["estimate"] for a in adjusted])), "n": len(real_rows),
            "indices_real": idx_real, "indices_fake": idx_fake}
