"""Linear algebra that belongs to no one paper: a least-squares line, and a PCA with its inverse."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


def linear_fit(x: np.ndarray, y: np.ndarray) -> dict:
    """Least-squares y = slope x + intercept and R^2 (x, y: (n,) float)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    slope, intercept = np.polyfit(x, y, 1)
    resid = y - (slope * x + intercept)
    r2 = 1.0 - resid @ resid / ((y - y.mean()) @ (y - y.mean()))
    return {"slope": float(slope), "intercept": float(intercept), "r2": float(r2)}


def slope_interval(x: np.ndarray, y: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """(slope, lower, upper) of the least-squares line of y on x, Student's t interval on n − 2 degrees of freedom
    (the points taken as independent, with one noise variance)."""
    from scipy.stats import t as student

    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 3:
        raise ValueError(f"a slope's interval needs at least 3 points, got {len(x)}")
    slope, intercept = np.polyfit(x, y, 1)
    resid = y - (slope * x + intercept)
    se = float(np.sqrt(resid @ resid / (len(x) - 2) / np.sum((x - x.mean()) ** 2)))
    half = float(student.ppf(0.5 + level / 2, len(x) - 2)) * se
    return float(slope), float(slope) - half, float(slope) + half


@dataclass
class PCA:
    """Principal components of rows x: (n, D): codes (x - mean) @ components.T, rows of `components` (k, D)
    orthonormal; with k = None, every coordinate (the identity, no rotation)."""

    mean: np.ndarray
    components: np.ndarray  # (k, D)

    @classmethod
    def fit(cls, x: np.ndarray, k: int | None) -> PCA:
        mean = x.mean(0)
        if k is None:
            return cls(mean, np.eye(x.shape[1]))
        _, _, vt = np.linalg.svd(x - mean, full_matrices=False)
        return cls(mean, vt[:k])

    def transform(self, x: np.ndarray) -> np.ndarray:
        """(n, D) -> (n, k) codes."""
        return (x - self.mean) @ self.components.T

    def inverse_torch(self, y: torch.Tensor) -> torch.Tensor:
        """(n, k) codes -> (n, D) points of the principal subspace, differentiably (torch, y's dtype)."""
        return y @ torch.as_tensor(self.components, dtype=y.dtype) + torch.as_tensor(self.mean, dtype=y.dtype)
