"""lib.metrics: the AuROC against pairwise counting, and the Fréchet distance against the matrix square root."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import linalg

from lib.metrics import auroc, frechet_distance


def test_auroc_matches_pairwise_counting():
    rng = np.random.default_rng(4)
    neg, pos = rng.integers(0, 5, 40).astype(float), rng.integers(2, 8, 30).astype(float)
    pairs = np.mean([(p > n) + 0.5 * (p == n) for p in pos for n in neg])
    assert auroc(negatives=neg, positives=pos) == pytest.approx(pairs)


@pytest.mark.parametrize("n, dim", [(300, 12), (40, 70)])
def test_frechet_distance_equals_the_matrix_square_root_formula(n, dim):
    rng = np.random.default_rng(3)
    real, fake = rng.normal(size=(n, dim)), rng.normal(size=(n, dim)) * 1.4 + 0.3
    c_r, c_f = np.cov(real, rowvar=False), np.cov(fake, rowvar=False)
    root = linalg.sqrtm(c_r @ c_f).real
    ref = ((real.mean(0) - fake.mean(0)) ** 2).sum() + np.trace(c_r + c_f - 2 * root)
    assert frechet_distance(real=real, fake=fake) == pytest.approx(ref, rel=1e-6)
    assert frechet_distance(real=real, fake=real) == pytest.approx(0.0, abs=1e-8)
