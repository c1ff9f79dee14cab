"""lib.linalg: the least-squares line and the PCA, on inputs with known answers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lib.linalg import PCA, linear_fit


def test_linear_fit_recovers_a_line():
    x = np.linspace(0.1, 1, 10)
    fit = linear_fit(x, 0.8 * x + 0.1)
    assert fit["slope"] == pytest.approx(0.8) and fit["intercept"] == pytest.approx(0.1) and fit["r2"] == 1.0


def test_pca_finds_the_known_axes_and_inverts_on_its_subspace():
    rng = np.random.default_rng(0)
    rotation = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    x = (rng.normal(size=(500, 3)) * [5.0, 1.0, 0.0]) @ rotation.T + [1.0, -2.0, 3.0]  # a plane in R^3
    pca = PCA.fit(x, 2)
    assert pca.components.shape == (2, 3)
    np.testing.assert_allclose(pca.components @ pca.components.T, np.eye(2), atol=1e-12)
    assert abs(pca.components[0] @ rotation[:, 0]) == pytest.approx(1.0, abs=1e-3)  # the widest axis first
    codes = pca.transform(x)
    np.testing.assert_allclose(codes.mean(0), 0.0, atol=1e-12)
    back = pca.inverse_torch(torch.as_tensor(codes)).numpy()
    np.testing.assert_allclose(back, x, atol=1e-9)  # x lies in the fitted plane


def test_pca_without_a_dimension_keeps_every_coordinate():
    x = np.random.default_rng(1).normal(size=(20, 4))
    pca = PCA.fit(x, None)
    np.testing.assert_allclose(pca.transform(x), x - x.mean(0))
