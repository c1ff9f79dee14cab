"""k-NN manifold precision, recall, density and coverage (Kynkäänniemi et al. 2019; Naeem et al. 2020).

manifold(S) = union over s in S of the ball B(s, NN_k(s, S)), NN_k the distance to the k-th nearest
*other* point of S. Precision = share of fake points inside manifold(real); recall = share of real
points inside manifold(fake); density and coverage as in Naeem et al. (spec 01 §3.5).

`strict=True` compares with `<`, as the `prdc` package does (it then equals `prdc.compute_prdc`
exactly); `strict=False` uses Kynkäänniemi's `<=`, which differs only at ties: with `<`, identical
real and fake sets get density = coverage = 0 (clovaai/generative-evaluation-prdc#7). Radii are exact k-NN
distances (`lib.knn.exact_knn`). All three ball tests (fake in a real ball, real in a fake ball, coverage) come
from one pass over the (real, fake) pairs: a float32 GEMM bounds each pair's squared distance from below and
above, which decides nearly every pair; the few whose bounds straddle a radius are decided on exact float64
differences, as `exact_knn` computes the radii. Memory stays near 64 MB per block whatever the dimension.
"""

from __future__ import annotations

import numpy as np

from lib.knn import PAIR_ELEMENTS, U32, _augmented, _sq_norms, exact_knn
from lib.params import check_int


def knn_radii(points: np.ndarray, k: int) -> np.ndarray:
    """Distance of each point to its k-th nearest other point of the same set: (n,) float64."""
    return exact_knn(points, points, k + 1)["distances"][:, k]


def _pair_sq(a: np.ndarray, b: np.ndarray, rows: np.ndarray, cols: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Exact float64 squared distances between a[rows] and b[cols], both moved to `mean`: (P,) float64, summed
    as `lib.knn` sums them, so that a distance compared with a radius is the one the radius was taken from."""
    out = np.empty(len(rows))
    step = max(1, PAIR_ELEMENTS // a.shape[1])
    for p0 in range(0, len(rows), step):
        diff = ((a[rows[p0 : p0 + step]] - mean) - (b[cols[p0 : p0 + step]] - mean))[:, None, :]
        out[p0 : p0 + step] = np.einsum("ijd,ijd->ij", diff, diff)[:, 0]
    return out


def _decide(lo: np.ndarray, hi: np.ndarray, radii: np.ndarray, strict: bool, pairs: tuple) -> np.ndarray:
    """d < radius (d <= radius if not strict) for pairs with lo <= d^2 <= hi; those whose bounds straddle the
    radius are decided on `_pair_sq(*pairs)`: (a, b, rows, cols, mean)."""
    slack = 16 * U32  # the radius squared and the float32 thresholds round; the exact test decides the rest
    inside = hi < radii * radii * (1 - slack)
    band = ~inside & ~(lo > radii * radii * (1 + slack))
    a, b, rows, cols, mean = pairs
    dist = np.sqrt(_pair_sq(a, b, rows[band], cols[band], mean))
    inside[band] = dist < radii[band] if strict else dist <= radii[band]
    return inside


def _gemm_side(points: np.ndarray, mean: np.ndarray, scale: float, extra, step: int = 256) -> tuple:
    """float32 [scale (x - mean), *extra(|x - mean|^2)] (`lib.knn._augmented`) and the squared norms (n,) float64,
    a block of rows at a time, so that no float64 temporary of the whole set is made."""
    sq, out = np.empty(len(points)), None
    for r0 in range(0, len(points), step):
        block = points[r0 : r0 + step] - mean
        rows = slice(r0, r0 + len(block))
        sq[rows] = _sq_norms(block)
        augmented = _augmented(scale * block, *extra(sq[rows]))
        if out is None:
            out = np.empty((len(points), augmented.shape[1]), np.float32)
        out[rows] = augmented
    return out, sq


def ball_memberships(real: np.ndarray, fake: np.ndarray, real_radii: np.ndarray, fake_radii: np.ndarray,
                     strict: bool, chunk: int = 4096) -> dict:
    """For real (N, D) and fake (M, D) float64 with their k-NN radii: "fake_in_real" (M,) int64, the number of
    real balls holding each fake point; "real_in_fake" (N,) int64, of fake balls holding each real point;
    "covered" (N,) bool, whether a real point's ball holds a fake point.

    A block of at most `chunk` real rows (fewer when the float32 (rows, M) block would pass 64 MB) against all
    fake points: L = (1 - e)(|q|^2 + |x|^2) - 2 q.x by one float32 GEMM on features centred at the real mean is
    a lower bound on d^2 and L + 2e(|q|^2 + |x|^2) an upper one, e = 4 (D + 16) 2^-24 being at least twice the
    float32 rounding of the whole expression, (D + 5) 2^-24 (|q| + |x|)^2. Pairs with L above both radii are
    outside both balls; the rest (a few per point) are decided by their bounds or, where these straddle a radius,
    on exact differences centred as the radius's own search was: the real mean for fake in real, the fake mean
    for the other two.
    """
    mean_r, mean_f = real.mean(0), fake.mean(0)
    e = 4.0 * (real.shape[1] + 16) * U32
    # [-2 q, (1 - e)|q|^2, 1] . [x, 1, (1 - e)|x|^2] = L: one GEMM, no pass over the block after it
    real32, q_sq = _gemm_side(real, mean_r, -2.0, lambda sq: (sq * (1 - e), 1.0))
    fake32, x_sq = _gemm_side(fake, mean_r, 1.0, lambda sq: (1.0, sq * (1 - e)))
    # candidates: L <= radius^2, thresholds rounded up in float32
    ra2 = np.nextafter((real_radii**2 * (1 + 16 * U32)).astype(np.float32), np.float32(np.inf))
    rb2 = np.nextafter((fake_radii**2 * (1 + 16 * U32)).astype(np.float32), np.float32(np.inf))
    fake_in_real, real_in_fake = np.zeros(len(fake), np.int64), np.zeros(len(real), np.int64)
    covered = np.zeros(len(real), bool)
    step = max(1, min(chunk, (1 << 24) // max(1, len(fake))))
    for r0 in range(0, len(real), step):
        lower = np.matmul(real32[r0 : r0 + step], fake32.T)
        rows, cols = np.nonzero((lower <= ra2[r0 : r0 + step, None]) | (lower <= rb2))
        lo = lower[rows, cols].astype(np.float64)
        rows += r0
        hi = lo + 2.0 * e * (q_sq[rows] + x_sq[cols])
        ra, rb = real_radii[rows], fake_radii[cols]
        a = _decide(lo, hi, ra, strict, (real, fake, rows, cols, mean_r))
        b = _decide(lo, hi, rb, strict, (real, fake, rows, cols, mean_f))
        c = _decide(lo, hi, ra, strict, (real, fake, rows, cols, mean_f))
        fake_in_real += np.bincount(cols[a], minlength=len(fake))
        real_in_fake += np.bincount(rows[b], minlength=len(real))
        covered[rows[c]] = True
    return {"fake_in_real": fake_in_real, "real_in_fake": real_in_fake, "covered": covered}


def precision_recall_density_coverage(*, real: np.ndarray, fake: np.ndarray, k: int = 5, strict: bool = True,
                                      chunk: int = 4096) -> dict:
    """real: (N, D), fake: (M, D) float. Returns {"precision", "recall", "density", "coverage"} floats."""
    check_int("k", k, minimum=1, maximum=min(len(real), len(fake)) - 1)
    real, fake = np.asarray(real, np.float64), np.asarray(fake, np.float64)
    real_radii, fake_radii = knn_radii(real, k), knn_radii(fake, k)
    balls = ball_memberships(real, fake, real_radii, fake_radii, strict, chunk)
    fake_in_real = balls["fake_in_real"]
    return {"precision": float((fake_in_real > 0).mean()), "recall": float((balls["real_in_fake"] > 0).mean()),
            "density": float(fake_in_real.sum() / (k * len(fake))), "coverage": float(balls["covered"].mean())}


def coverage_by_k(*, real: np.ndarray, fake: np.ndarray, ks: tuple[int, ...], strict: bool = True) -> dict[int, float]:
    """Coverage (Naeem et al. 2020, spec 04 §1: "coverage depends on a hyperparameter") at each k of `ks`: the share
    of real points whose ball B(r, NN_k(r, real)) holds a fake point, i.e. whose nearest fake point lies within
    (`strict`: strictly within) their k-th nearest other real point's distance. One k-NN search of the real set at
    the largest k and one nearest-fake search serve every k; at one k it equals
    `precision_recall_density_coverage(...)["coverage"]`.

    real: (N, D), fake: (M, D) float; ks: each in [1, min(N, M) - 1]. Returns {k: coverage} floats in [0, 1].
    """
    for k in ks:
        check_int("ks entry", k, minimum=1, maximum=min(len(real), len(fake)) - 1)
    real, fake = np.asarray(real, np.float64), np.asarray(fake, np.float64)
    radii = exact_knn(real, real, max(ks) + 1)["distances"]  # column k: the k-th nearest other real point
    nearest_fake = exact_knn(real, fake, 1)["distances"][:, 0]
    inside = np.less if strict else np.less_equal
    return {k: float(inside(nearest_fake, radii[:, k]).mean()) for k in ks}
