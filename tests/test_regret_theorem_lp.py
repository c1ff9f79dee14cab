"""The theorem as linear programs (lib.regret.theorem_lp): a known optimum, the threshold form with λ in [1/2, 1],
no threshold rule beating the LP, the fractional form against an independent Dinkelbach iteration."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

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


def test_the_lp_table_summarises_each_loss_and_problem_over_its_budgets():
    from lib.regret.theorem_lp import lp_table

    rows = [{"loss": "ce", "problem": "P_rho", "kappa": k, "mix": 0.25, "rel_gap": g, "lambda_dual": lam,
             "threshold_form": form, "fractional": frac}
            for k, g, lam, form, frac in ((0.6, 0.001, 0.6, True, 1), (0.8, 0.004, 0.9, False, 2))]
    table = lp_table(rows, {"ce": "CE"})
    assert list(table.index) == [("CE", "P_rho")]
    row = table.iloc[0]
    assert row["budgets"] == 2 and row["max |LP − threshold| / LP"] == "0.400 %" and row["dual λ"] == "0.60–0.90"
    assert row["threshold form"] == "1 of 2" and row["most fractional rows"] == 2
