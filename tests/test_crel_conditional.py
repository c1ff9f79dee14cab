"""Conditional coverage per bin of x, the PGD's spread across starts, and the runtime's step factors
(lib.crel.conditional): known answers, a coverage check of the Wilson interval, invariants."""

from __future__ import annotations

import numpy as np
import pytest

from lib.crel import conditional as cc


def test_wilson_interval_known_values():
    low, high = cc.wilson_interval(90, 100)
    assert low == pytest.approx(0.8256, abs=1e-4) and high == pytest.approx(0.9448, abs=1e-4)
    assert cc.wilson_interval(0, 10)[0] == pytest.approx(0.0, abs=1e-12)
    assert all(np.isnan(cc.wilson_interval(0, 0)))


def test_wilson_interval_covers_at_its_level():
    rng = np.random.default_rng(0)
    n, p, reps = 80, 0.9, 4000
    hits = [lo <= p <= hi for lo, hi in (cc.wilson_interval(int(k), n) for k in rng.binomial(n, p, reps))]
    assert abs(np.mean(hits) - 0.95) < 0.02


def test_binned_coverage_finds_the_under_covered_region():
    rng = np.random.default_rng(1)
    x = rng.uniform(0.8, 3.2, 6000)
    covered = rng.random(6000) < np.where(x < 1.2, 0.6, 0.92)  # the first bin (0.8-1.2) under-covered
    rows = cc.binned_coverage(x, covered, alpha=0.1, num_bins=6)
    assert [r["under"] for r in rows] == [True, False, False, False, False, False]
    assert sum(r["n"] for r in rows) == 6000 and rows[0]["x_low"] == 0.8 and rows[-1]["x_high"] == pytest.approx(3.2)
    assert rows[0]["coverage"] == pytest.approx(covered[x < 1.2].mean())
    gap = cc.coverage_gap(rows, 0.1)
    assert gap["worst_bin"] == "0.8–1.2" and gap["under"] == ["0.8–1.2"] and gap["spread"] > 0.25


def test_start_spread_separates_local_optima_from_noise():
    best = np.array([[-1.0] * 30 + [-0.5] * 20])  # 30 starts reach the optimum, 20 another local optimum
    out = cc.start_spread(best, tol=1e-3)
    assert out["best_share"][0] == pytest.approx(0.6) and out["basin_std"][0] == 0.0
    assert out["std"][0] == pytest.approx(np.std([-1.0] * 30 + [-0.5] * 20))
    noisy = -1 + np.random.default_rng(2).normal(0, 1e-4, (5, 50))
    assert cc.start_spread(noisy, tol=1e-3)["median_best_share"] > 0.9


def test_step_factors():
    rows = cc.step_factors([2, 3, 5], [1.0, 3.0, 27.0])
    assert [r["factor"] for r in rows] == [3.0, 9.0] and [r["per_dim"] for r in rows] == pytest.approx([3.0, 3.0])
    linear = cc.step_factors([2, 3, 4, 5], [2.0, 3.0, 4.0, 5.0])
    assert [r["per_dim"] for r in linear] == pytest.approx([1.5, 4 / 3, 1.25])  # falling towards 1


def test_spread_verdict():
    wide = {"median_std": 0.2, "median_basin_std": 1e-5}
    assert cc.spread_verdict({"flow": wide, "cvae": wide}) == {"larger": True, "basin_within": True}
    assert cc.spread_verdict({"flow": wide, "cvae": {"median_std": 1e-4, "median_basin_std": 1e-3}}) == {
        "larger": False, "basin_within": False}
