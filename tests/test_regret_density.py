"""The label-density study (lib.regret.density): the hypergeometric draw against its pmf and its bounds, k = every
annotation reproducing the full labels, Kendall τ and the stable k by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from lib.regret import density


def test_subsample_counts_sums_and_bounds():
    rng = np.random.default_rng(0)
    counts = rng.multinomial(50, [0.5, 0.3, 0.2], size=100)
    for k in (1, 5, 50):
        sub = density.subsample_counts(counts, k, rng)
        assert (sub.sum(axis=1) == k).all() and (sub <= counts).all() and (sub >= 0).all()
    assert np.array_equal(density.subsample_counts(counts, 50, rng), counts)  # every annotation drawn
    assert np.array_equal(density.subsample_counts(counts, density.ALL, rng), counts)
    with pytest.raises(ValueError, match="k must lie"):
        density.subsample_counts(counts, 51, rng)


def test_subsample_counts_is_hypergeometric():
    """Class 0's count among k = 4 of (3, 2, 0, 5) annotations follows the hypergeometric pmf (chi-square)."""
    counts = np.tile([3, 2, 0, 5], (20_000, 1))
    sub = density.subsample_counts(counts, 4, np.random.default_rng(1))
    observed = np.bincount(sub[:, 0], minlength=4)
    expected = stats.hypergeom(10, 3, 4).pmf(np.arange(4)) * len(sub)
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    assert (sub[:, 2] == 0).all()


def test_density_rows_at_full_k_equal_all():
    rng = np.random.default_rng(2)
    counts = rng.multinomial(20, np.full(4, 0.25), size=60)
    q = rng.dirichlet(np.ones(4), size=60)
    evals = {(m, loss): {"q": q, "E_hat": rng.random(60)} for m in ("m1", "m2") for loss in ("ce", "zero_one")}
    rows = density.density_rows(evals, counts, (20, density.ALL), draws=2, seed=0)
    by = {(r["k"], r["draw"], r["method"]): r for r in rows}
    for method in ("m1", "m2"):
        assert by[(20, 1, method)]["AuReC"] == pytest.approx(by[(0, 0, method)]["AuReC"])
    taus = density.ranking_taus(rows)
    assert all(t["tau"] == pytest.approx(1) and t["same"] for t in taus if t["k"] == 20)  # k = every annotation


def test_ranking_taus_and_stability_by_hand():
    full = {"a": 0.1, "b": 0.2, "c": 0.3}
    rows = [{"k": 0, "draw": 0, "method": m, "loss": "ce", "AuReC": v} for m, v in full.items()]
    orders = {(1, 0): (0.3, 0.2, 0.1), (1, 1): (0.1, 0.3, 0.2), (5, 0): (0.1, 0.2, 0.3), (5, 1): (0.2, 0.1, 0.3),
              (10, 0): (0.1, 0.2, 0.3), (10, 1): (0.1, 0.25, 0.3)}
    for (k, draw), values in orders.items():
        rows += [{"k": k, "draw": draw, "method": m, "loss": "ce", "AuReC": v} for m, v in zip(full, values)]
    taus = {(t["k"], t["draw"]): t for t in density.ranking_taus(rows)}
    assert taus[(1, 0)]["tau"] == pytest.approx(-1) and taus[(1, 1)]["tau"] == pytest.approx(1 / 3)
    assert taus[(5, 0)]["same"] and not taus[(5, 1)]["same"] and taus[(10, 1)]["same"]
    summary = density.tau_summary(list(taus.values()))
    assert [s["share_same"] for s in summary] == [0.0, 0.5, 1.0]
    assert density.stable_from(summary, "ce") == 10 and density.stable_from(summary, "ce", share=0.5) == 5
