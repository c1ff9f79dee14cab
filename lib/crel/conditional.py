"""Two of the paper's stated limitations measured on the synthetic task (spec 02 §1, "coverage is marginal only";
§3.6, the PGD's spread across starts): coverage per bin of x, and how the worst case varies across PGD starts.
Notebook 02, section 2, calls them on the table's runs.
"""

from __future__ import annotations

import math

import numpy as np

from lib.claims import wilson
from lib.crel import paper

X_RANGE = (0.8, 3.2)  # the banana's X ~ U(0.8, 3.2) (lib.data.banana)


def wilson_interval(covered: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's score interval of a binomial proportion (95 % for z = 1.96; `lib.claims.wilson`); (nan, nan) for an
    empty bin (n = 0)."""
    if n == 0:
        return math.nan, math.nan
    return wilson(covered, n, z)


def binned_coverage(x: np.ndarray, covered: np.ndarray, alpha: float, num_bins: int = 6,
                    x_range: tuple[float, float] = X_RANGE) -> list[dict]:
    """Coverage in `num_bins` equal-width bins of x over `x_range`, each with its Wilson 95 % interval and whether
    it is significantly under (upper bound < 1 − α) or over (lower bound > 1 − α) the nominal level.

    x: (n,) or (n, 1) float conditions; covered: (n,) bool. Returns one dict per bin: {"x_low", "x_high", "n",
    "coverage", "low", "high", "under", "over"}.
    """
    x = np.asarray(x, float).reshape(len(covered), -1)[:, 0]
    covered = np.asarray(covered, bool)
    edges = np.linspace(*x_range, num_bins + 1)
    bins = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, num_bins - 1)
    rows = []
    for b in range(num_bins):
        sel = bins == b
        n, k = int(sel.sum()), int(covered[sel].sum())
        low, high = wilson_interval(k, n)
        rows.append({"x_low": float(edges[b]), "x_high": float(edges[b + 1]), "n": n,
                     "coverage": k / n if n else math.nan, "low": low, "high": high,
                     "under": bool(n and high < 1 - alpha), "over": bool(n and low > 1 - alpha)})
    return rows


def coverage_gap(rows: list[dict], alpha: float) -> dict:
    """Summary of `binned_coverage`: the worst bin (its range and coverage), the spread max − min across bins, and
    the bins significantly under / over 1 − α (as "x_low–x_high" labels)."""
    valid = [r for r in rows if r["n"]]
    worst = min(valid, key=lambda r: r["coverage"])
    label = lambda r: f"{r['x_low']:.1f}–{r['x_high']:.1f}"  # noqa: E731
    return {"worst_bin": label(worst), "worst_coverage": worst["coverage"],
            "spread": max(r["coverage"] for r in valid) - worst["coverage"], "target": 1 - alpha,
            "under": [label(r) for r in valid if r["under"]], "over": [label(r) for r in valid if r["over"]]}


def start_spread(start_scores: np.ndarray, tol: float = 1e-3) -> dict:
    """How the PGD's worst case varies across starts (spec §3.6, the paper's spread: std 0.00027).

    start_scores: (n, starts) float, each start's best value at each of n conditions (`CReL.reliability`).
    Returns {"std": (n,) std across starts, "best_share": (n,) share of starts within `tol` of the best start,
    "basin_std": (n,) std among those starts, "median_std", "max_std", "median_basin_std", "median_best_share"}:
    a large std with a small best share means the starts end in different local optima, not that PGD is noisy.
    """
    s = np.asarray(start_scores, float)
    best = s.min(axis=1, keepdims=True)
    near = s <= best + tol
    basin_std = np.array([row[m].std() for row, m in zip(s, near)])
    std = s.std(axis=1)
    return {"std": std, "best_share": near.mean(axis=1), "basin_std": basin_std, "median_std": float(np.median(std)),
            "max_std": float(std.max()), "median_basin_std": float(np.median(basin_std)),
            "median_best_share": float(np.median(near.mean(axis=1)))}


def step_factors(dims: np.ndarray, seconds: np.ndarray) -> list[dict]:
    """The runtime's growth from each dimension to the next: t(d') / t(d) and its per-dimension rate
    (t(d') / t(d)) ** (1 / (d' − d)). A linear cost gives rates that fall towards 1, an exponential one rates
    that stay constant. dims, seconds: (m,) ascending in d."""
    d, t = np.asarray(dims, float), np.asarray(seconds, float)
    return [{"from": int(d[i]), "to": int(d[i + 1]), "factor": float(t[i + 1] / t[i]),
             "per_dim": float((t[i + 1] / t[i]) ** (1 / (d[i + 1] - d[i])))} for i in range(len(d) - 1)]


def spread_verdict(spreads: dict[str, dict], paper_std: float = paper.SPREAD) -> dict:
    """`start_spread` summaries (one per LGM) against the paper's std: {"larger": every LGM's median std across all
    starts exceeds it; "basin_within": every LGM's median std among the starts that reach the best value is at most
    it}."""
    return {"larger": all(s["median_std"] > paper_std for s in spreads.values()),
            "basin_within": all(s["median_basin_std"] <= paper_std for s in spreads.values())}
