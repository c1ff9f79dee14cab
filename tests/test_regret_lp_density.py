"""The theorem as linear programs (lib.regret.theorem_lp) and the label-density study (lib.regret.density):
known optima, an independent Dinkelbach iteration, the hypergeometric draw against its pmf, rankings by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import linprog

from lib.regret import density
from lib.regret import theorem_lp as tl


def instance(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A = rng.gamma(1.0, 0.3, n)
    E = rng.gamma(1.0, 0.2, n) * (1 + A)  # correlated, as A* and E* under CE
    return A, E


def test_p_ri_with_a_loose_regret_budget_takes_the_smallest_totals():
    A, E = instance()
    n, kappa = len(A), 0.4
    lp = tl.solve_lp(A, E, "P_Ri", {"kappa": kappa, "gamma": 1e9})
    assert lp["value"] == pytest.approx(np.sort(A + E)[: round(kappa * n)].sum() / n, rel=1e-9)
    assert lp["lambda"] == pytest.approx(0.5)  # only the coverage binds: selective prediction on T*


@pytest.mark.parametrize("problem", ["P_rho", "P_Ri", "P_Re"])
def test_lp_optimum_is_a_threshold_rule_with_lambda_in_the_theorem_range(problem):
    A, E = instance()
    for budget in tl.budget_grid(A, E, (0.5, 0.8), (0.25, 0.75)):
        lp = tl.solve_lp(A, E, problem, budget)
        assert 0.5 - 1e-9 <= lp["lambda"] <= 1 + 1e-9 and lp["fractional"] <= 2
        assert tl.is_threshold_form(A, E, lp["C"], lp["lambda"])
        thr = tl.best_threshold(A, E, problem, budget, np.linspace(0.5, 1, 101))
        better = thr["value"] <= lp["value"] + 1e-12 if problem == "P_rho" else thr["value"] >= lp["value"] - 1e-12
        assert better  # no threshold rule beats the optimum over all selectors
        assert abs(thr["value"] - lp["value"]) <= 2 * max(1 / len(A), np.max(A + E) / len(A))  # two rows' worth


def dinkelbach(A: np.ndarray, E: np.ndarray, kappa: float, gamma: float, steps: int = 30) -> float:
    """min Ri / ρ s.t. ρ ≥ κ, Re ≤ γ by Dinkelbach's iteration on plain LPs (independent of Charnes–Cooper)."""
    n, theta = len(A), 0.0
    for _ in range(steps):
        res = linprog((A + E - theta) / n, A_ub=[-np.ones(n) / n, E / n], b_ub=[-kappa, gamma], bounds=(0, 1),
                      method="highs")
        C = res.x
        theta_new = np.sum(C * (A + E)) / np.sum(C)
        if abs(theta_new - theta) < 1e-13:
            break
        theta = theta_new
    return theta


def test_fractional_form_matches_dinkelbach_iteration():
    A, E = instance(200, seed=3)
    budget = tl.budget_grid(A, E, (0.6,), (0.5,))[0]
    lp = tl.solve_lp(A, E, "P_Ri/rho", budget)
    assert lp["value"] == pytest.approx(dinkelbach(A, E, budget["kappa"], budget["gamma"]), rel=1e-8)
    assert lp["dinkelbach_value"] == pytest.approx(0.0, abs=1e-10)  # min Ri − θ* ρ is 0 at the optimal ratio
    assert 0.5 - 1e-9 <= lp["lambda"] <= 1 + 1e-9
    assert lp["Ri"] / lp["rho"] == pytest.approx(lp["value"], rel=1e-8) and lp["rho"] >= budget["kappa"] - 1e-9


def test_lp_rows_gaps_are_small():
    A, E = instance(400, seed=5)
    rows = tl.lp_rows(A, E, tl.budget_grid(A, E, (0.7,), (0.5,)), np.linspace(0.5, 1, 21))
    assert [r["problem"] for r in rows] == list(tl.PROBLEMS)
    assert all(r["rel_gap"] < 0.02 and r["threshold_form"] for r in rows)


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
