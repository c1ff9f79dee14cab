"""k-NN manifold precision, recall, density and coverage (Kynkäänniemi et al. 2019; Naeem et al. 2020).

manifold(S) = union over s in S of the ball B(s, NN_k(s, S)), NN_k the distance to the k-th nearest
*other* point of S. Precision = share of fake points inside manifold(real); recall = share of real
points inside manifold(fake); density and coverage as in Naeem et al. (spec 01 §3.5).

`strict=True` compares with `<`, as the `prdc` package does (it then equals `prdc.compute_prdc`
exactly); `strict=False` uses Kynkäänniemi's `<=`, which differs only at ties: with `<`, identical
real and fake sets get density = coverage = 0 (clovaai/generative-evaluation-prdc#7). Radii are exact k-NN
distances (`lib.knn.exact_knn`); ball membership is decided on float64 GEMM distances, refined exactly near the radius,
a block of queries at a time, so memory stays near 128 MB whatever the dimension.
"""

from __future__ import annotations

import numpy as np

from lib.knn import exact_knn
from lib.params import check_int


def knn_radii(points: np.ndarray, k: int) -> np.ndarray:
    """Distance of each point to its k-th nearest other point of the same set: (n,) float64."""
    return exact_knn(points, points, k + 1)["distances"][:, k]


def _inside_counts(queries: np.ndarray, centres: np.ndarray, radii: np.ndarray, strict: bool, chunk: int) -> np.ndarray:
    """For each query, the number of balls B(centre, radius) that contain it: (nq,) int64.

    Squared distances by one GEMM per block of queries on features centred at the centres' mean (float64),
    at most `chunk` queries at a time and fewer when the (rows, N) block would pass ~128 MB, so memory stays
    flat in the dimension (notebook 04 runs it on 3,072-d pixels). The few pairs whose GEMM distance lies
    within its rounding bound of the radius are decided again on exact differences, so ties (duplicates at
    distance 0 included) are decided as exactly as by the direct formula.
    """
    mean = centres.mean(0)
    c = centres - mean
    c_sq = np.einsum("ij,ij->i", c, c)
    r_sq = radii * radii  # only to find the pairs near the radius; decisions compare distances
    counts = np.empty(len(queries), np.int64)
    chunk = max(1, min(chunk, (1 << 27) // (8 * max(1, len(centres)))))
    for q0 in range(0, len(queries), chunk):
        q = queries[q0 : q0 + chunk] - mean
        norms = np.einsum("ij,ij->i", q, q)[:, None] + c_sq[None, :]
        sq = norms - 2.0 * q @ c.T
        bound = 4 * (c.shape[1] + 2) * np.finfo(np.float64).eps * norms  # |GEMM - exact| <= bound
        rows, cols = np.nonzero(np.abs(sq - r_sq[None, :]) <= bound)
        diff = (q[rows] - c[cols])[:, None, :]
        sq[rows, cols] = np.einsum("ijd,ijd->ij", diff, diff)[:, 0]  # as lib.knn computes the radii
        dist = np.sqrt(np.maximum(sq, 0.0))
        inside = dist < radii[None, :] if strict else dist <= radii[None, :]
        counts[q0 : q0 + chunk] = inside.sum(axis=1)
    return counts


def precision_recall_density_coverage(*, real: np.ndarray, fake: np.ndarray, k: int = 5, strict: bool = True,
                                      chunk: int = 256) -> dict:
    """real: (N, D), fake: (M, D) float. Returns {"precision", "recall", "density", "coverage"} floats."""
    check_int("k", k, minimum=1, maximum=min(len(real), len(fake)) - 1)
    real, fake = np.asarray(real, np.float64), np.asarray(fake, np.float64)
    real_radii, fake_radii = knn_radii(real, k), knn_radii(fake, k)
    fake_in_real = _inside_counts(fake, real, real_radii, strict, chunk)
    real_in_fake = _inside_counts(real, fake, fake_radii, strict, chunk)
    nearest_fake = exact_knn(real, fake, 1)["distances"][:, 0]
    covered = nearest_fake < real_radii if strict else nearest_fake <= real_radii
    return {"precision": float((fake_in_real > 0).mean()), "recall": float((real_in_fake > 0).mean()),
            "density": float(fake_in_real.sum() / (k * len(fake))), "coverage": float(covered.mean())}
