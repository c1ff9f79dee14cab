"""Naive reference implementations, written straight from the definitions and sharing no code with `lib`:
the tests compare the library with them on small inputs, and `make bench` times the library against them.

- `naive_pr_curve_from_split`: the kNN PR curve of spec 01 §3.2 with the full test x train distance matrix
  and a (classifiers, test points, lambdas) decision tensor, as the authors' code does;
- `naive_nondominated`, `naive_igd_plus`: the Pareto filter and IGD+ of spec 03 §4 as quadratic loops.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist


def naive_pr_curve_from_split(real_train, fake_train, real_test, fake_test, k, num_angles=200):
    train = np.vstack([real_train, fake_train])
    test = np.vstack([real_test, fake_test])
    is_real_train = np.arange(len(train)) < len(real_train)
    dist = cdist(test, train)  # (n_test, n_train) float64
    radius = np.sort(dist, axis=1)[:, k - 1]
    within = dist <= radius[:, None]
    s_p = (within & is_real_train).sum(axis=1).astype(float)
    s_q = (within & ~is_real_train).sum(axis=1).astype(float)

    inner = np.tan(np.linspace(1e-10, np.pi / 2 - 1e-10, num_angles))
    lambdas = np.concatenate([[0.0], inner, [np.inf]])
    n_lambda, n_test = len(lambdas), len(test)

    # decision[c, z, l]: does classifier c call test point z "real"? (replicated over lambda)
    rows = [np.repeat((s_q == 0)[:, None], n_lambda, axis=1)]
    for gamma in inner:
        rule = gamma * s_p > s_q if gamma < 1 else gamma * s_p >= s_q
        rows.append(np.repeat(rule[:, None], n_lambda, axis=1))
    rows.append(np.repeat((s_p > 0)[:, None], n_lambda, axis=1))
    rows.append(np.ones((n_test, n_lambda)))  # constant "real"
    rows.append(np.zeros((n_test, n_lambda)))  # constant "fake"
    decision = np.stack(rows).astype(np.float64)

    is_real_test = np.arange(n_test) < len(real_test)
    fpr = 1.0 - decision[:, is_real_test, :].mean(axis=1)  # (classifiers, lambdas)
    fnr = decision[:, ~is_real_test, :].mean(axis=1)

    precision, recall = np.empty(n_lambda), np.empty(n_lambda)
    for j, lam in enumerate(lambdas):
        if lam == 0:
            candidates = [0, -2, -1]
        elif lam == np.inf:
            candidates = [-3, -2, -1]
        else:
            candidates = list(range(decision.shape[0]))
        precision[j] = min(_times(lam, fpr[c, j]) + fnr[c, j] for c in candidates)
        recall[j] = min(fpr[c, j] + _times(fnr[c, j], np.inf if lam == 0 else 1.0 / lam) for c in candidates)
    return {"precision": precision, "recall": recall, "lambdas": lambdas}


def _times(a, b):
    """0 when either factor is 0 (so 0 * inf = 0), else the product."""
    return 0.0 if a == 0 or b == 0 else a * b


def naive_nondominated(points: np.ndarray) -> np.ndarray:
    """The nondominated rows of points: (M, d) (minimisation), by the O(M^2 d) definition."""
    keep = [i for i in range(len(points))
            if not np.any(np.all(points <= points[i], axis=1) & np.any(points < points[i], axis=1))]
    return points[keep]


def naive_igd_plus(S: np.ndarray, ref: np.ndarray) -> float:
    """IGD+(S, ref) = mean over r in ref of min over a in S of ||max(a - r, 0)||, written as loops."""
    total = 0.0
    for r in ref:
        total += min(np.sqrt(sum(max(a[k] - r[k], 0.0) ** 2 for k in range(len(r)))) for a in S)
    return total / len(ref)
