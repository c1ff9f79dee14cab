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


def dinkelbach_re(A: np.ndarray, E: np.ndarray, kappa: float, rbar: float, steps: int = 30) -> float:
    """min Re / ρ s.t. ρ ≥ κ, Ri ≤ r̄ by Dinkelbach's iteration on plain LPs (independent of Charnes–Cooper)."""
    n, theta = len(A), 0.0
    for _ in range(steps):
        res = linprog((E - theta) / n, A_ub=[-np.ones(n) / n, (A + E) / n], b_ub=[-kappa, rbar], bounds=(0, 1),
                      method="highs")
        theta_new = np.sum(res.x * E) / np.sum(res.x)
        if abs(theta_new - theta) < 1e-13:
            break
        theta = theta_new
    return theta


def test_selective_regret_with_a_loose_risk_budget_is_the_mean_of_the_smallest_regrets():
    A, E = instance(200, seed=1)
    lp = tl.solve_lp(A, E, "P_Re/rho", {"kappa": 0.3, "rbar": 1e9})
    assert lp["value"] == pytest.approx(np.sort(E)[:60].mean(), rel=1e-9)  # a mean of the smallest grows with more
    assert lp["rho"] == pytest.approx(0.3, abs=1e-9)  # so the coverage binds, exactly κ n = 60 rows
    assert lp["lambda"] == pytest.approx(1.0)  # only the coverage binds: the epistemic reject option on E*


@pytest.mark.parametrize("kappa, mix", [(0.6, 0.5), (0.8, 0.25), (0.4, 0.75)])
def test_selective_regret_matches_dinkelbach_iteration_and_has_the_threshold_form(kappa, mix):
    A, E = instance(150, seed=7)
    budget = tl.budget_grid(A, E, (kappa,), (mix,))[0]
    lp = tl.solve_lp(A, E, "P_Re/rho", budget)
    assert lp["value"] == pytest.approx(dinkelbach_re(A, E, budget["kappa"], budget["rbar"]), rel=1e-8)
    assert lp["dinkelbach_value"] == pytest.approx(0.0, abs=1e-10)  # min Re − θ* ρ is 0 at the optimal ratio
    assert lp["Re"] / lp["rho"] == pytest.approx(lp["value"], rel=1e-8) and lp["Ri"] <= budget["rbar"] + 1e-9
    assert 0.5 - 1e-9 <= lp["lambda"] <= 1 + 1e-9 and tl.is_threshold_form(A, E, lp["C"], lp["lambda"])
    thr = tl.best_threshold(A, E, "P_Re/rho", budget, np.linspace(0.5, 1, 101))
    assert thr["value"] >= lp["value"] - 1e-12  # no threshold rule beats the optimum over all selectors


def vertices(A: np.ndarray, E: np.ndarray, kappa: float, rbar: float) -> list[np.ndarray]:
    """Every vertex of {C in [0, 1]^n: mean C ≥ κ, mean C·T* ≤ r̄} by enumeration: at a vertex, n independent
    constraints are active, so at most two rows are fractional, fixed by the two budgets held with equality."""
    import itertools

    n, T = len(A), A + E
    rows = {"rho": (np.ones(n), kappa * n), "Ri": (T, rbar * n)}  # sum C·row = bound when active
    found = []
    for m in range(3):
        for free in itertools.combinations(range(n), m):
            rest = [i for i in range(n) if i not in free]
            for fixed in itertools.product((0.0, 1.0), repeat=n - m):
                for active in itertools.combinations(rows, m):
                    C = np.zeros(n)
                    C[rest] = fixed
                    if m:
                        M = np.array([[rows[a][0][i] for i in free] for a in active])
                        rhs = np.array([rows[a][1] - rows[a][0][rest] @ np.array(fixed) for a in active])
                        if abs(np.linalg.det(M)) < 1e-12:
                            continue
                        C[list(free)] = np.linalg.solve(M, rhs)
                    if (C >= -1e-12).all() and (C <= 1 + 1e-12).all() and C.mean() >= kappa - 1e-12 \
                            and np.mean(C * T) <= rbar + 1e-12:
                        found.append(C)
    return found


def test_selective_regret_against_brute_force_on_a_tiny_instance():
    """Six rows: a linear-fractional program attains its optimum at a vertex of the feasible polytope, so the best
    ratio over every vertex (enumerated) is the optimum, which the LP must equal."""
    A = np.array([0.1, 0.5, 0.2, 0.9, 0.4, 0.05])
    E = np.array([0.3, 0.05, 0.2, 0.1, 0.6, 0.25])
    kappa, rbar = 0.5, 0.3
    lp = tl.solve_lp(A, E, "P_Re/rho", {"kappa": kappa, "rbar": rbar})
    best = min(np.sum(C * E) / np.sum(C) for C in vertices(A, E, kappa, rbar))
    assert lp["value"] == pytest.approx(best, rel=1e-9)
    assert lp["fractional"] == 2  # both budgets bind here: the optimum is randomised on two rows
