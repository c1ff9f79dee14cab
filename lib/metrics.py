"""Scores that compare two samples and belong to no one paper: the AuROC of a score separating two groups,
and the Fréchet distance between Gaussian fits of two feature sets (the FID formula)."""

from __future__ import annotations

import math

import numpy as np


def auroc(*, negatives: np.ndarray, positives: np.ndarray) -> float:
    """AuROC of scores separating positives (OOD, higher score) from negatives, ties counted half."""
    from scipy.stats import rankdata

    ranks = rankdata(np.concatenate([negatives, positives]))
    n_pos, n_neg = len(positives), len(negatives)
    return float((ranks[n_neg:].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def frechet_distance(*, real: np.ndarray, fake: np.ndarray) -> float:
    """||mu_r - mu_f||^2 + Tr(C_r + C_f - 2 (C_r C_f)^{1/2}) of Gaussian fits (real, fake: (n, D) float).

    Tr (C_r C_f)^{1/2} is computed without a D x D matrix square root: for D <= n as the sum of square roots
    of the eigenvalues of C_r^{1/2} C_f C_r^{1/2} (symmetric), otherwise as the nuclear norm of
    X_r X_f^T / (n - 1) with X the centred (n, D) features (the same nonzero eigenvalues), which keeps
    3072-d pixel features cheap at n = 2,500.
    """
    real, fake = np.asarray(real, np.float64), np.asarray(fake, np.float64)
    xr, xf = real - real.mean(0), fake - fake.mean(0)
    mean_term = float(((real.mean(0) - fake.mean(0)) ** 2).sum())
    trace_r, trace_f = (xr * xr).sum() / (len(xr) - 1), (xf * xf).sum() / (len(xf) - 1)
    if real.shape[1] <= min(len(xr), len(xf)):
        evals, evecs = np.linalg.eigh(xr.T @ xr / (len(xr) - 1))
        root_r = (evecs * np.sqrt(np.clip(evals, 0, None))) @ evecs.T
        inner = np.linalg.eigvalsh(root_r @ (xf.T @ xf / (len(xf) - 1)) @ root_r)
        cross = np.sqrt(np.clip(inner, 0, None)).sum()
    else:
        cross = np.linalg.svd(xr @ xf.T, compute_uv=False).sum() / math.sqrt((len(xr) - 1) * (len(xf) - 1))
    return float(mean_term + trace_r + trace_f - 2 * cross)
