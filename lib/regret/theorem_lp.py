"""The optimal-selector theorem against every selector (spec 03 §1.1): the constrained problems as linear programs.

With coverage ρ(C) = mean C, risk Ri(C) = mean C·T* and regret Re(C) = mean C·E* (joint normalisation, T* = A* + E*),
each of the paper's problems is a linear program in C ∈ [0, 1]^n:

- P_ρ: maximise ρ subject to Ri ≤ r̄, Re ≤ γ;
- P_Ri: minimise Ri subject to ρ ≥ κ, Re ≤ γ;
- P_Re: minimise Re subject to ρ ≥ κ, Ri ≤ r̄;
- P_Ri/ρ and P_Re/ρ (the fractional, Dinkelbach forms: the selective risk and the selective regret): minimise
  Ri / ρ subject to ρ ≥ κ, Re ≤ γ, and Re / ρ subject to ρ ≥ κ, Ri ≤ r̄; each an LP after the Charnes–Cooper
  substitution y = C / ρ(C), t = 1 / ρ(C).

HiGHS solves them over *all* selectors; the theorem says the optimum is a threshold rule on (1 − λ)A* + λE* with
λ ∈ [½, 1]. The LP's duals give that λ: the Lagrangian's coefficient of C_i is α₀ + α_A A*_i + α_E E*_i, so
λ = α_E / (α_A + α_E). A vertex solution has at most as many fractional C_i as active constraints (two), so a
deterministic threshold rule reaches the LP value up to those rows. Notebook 03, section 2, reports both.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.optimize import linprog

PROBLEMS = ("P_rho", "P_Ri", "P_Re", "P_Ri/rho", "P_Re/rho")
RATIOS = ("P_Ri/rho", "P_Re/rho")  # the fractional forms: their objective is divided by ρ
# problem -> (objective quantity, sense, [(constrained quantity, "<=" | ">=", budget name)])
SPECS = {
    "P_rho": ("rho", "max", [("Ri", "<=", "rbar"), ("Re", "<=", "gamma")]),
    "P_Ri": ("Ri", "min", [("rho", ">=", "kappa"), ("Re", "<=", "gamma")]),
    "P_Re": ("Re", "min", [("rho", ">=", "kappa"), ("Ri", "<=", "rbar")]),
    "P_Ri/rho": ("Ri", "min", [("rho", ">=", "kappa"), ("Re", "<=", "gamma")]),
    "P_Re/rho": ("Re", "min", [("rho", ">=", "kappa"), ("Ri", "<=", "rbar")]),
}
# each quantity's per-row coefficient as (constant, coefficient of A*, coefficient of E*)
TRIPLES = {"rho": (1.0, 0.0, 0.0), "Ri": (0.0, 1.0, 1.0), "Re": (0.0, 0.0, 1.0)}


def _row(quantity: str, A: np.ndarray, E: np.ndarray) -> np.ndarray:
    c0, ca, ce = TRIPLES[quantity]
    return c0 + ca * A + ce * E


def _values(C: np.ndarray, A: np.ndarray, E: np.ndarray) -> dict[str, float]:
    return {q: float(np.mean(C * _row(q, A, E))) for q in TRIPLES}


def solve_lp(A: np.ndarray, E: np.ndarray, problem: str, budgets: dict[str, float]) -> dict:
    """The exact optimum over all selectors C ∈ [0, 1]^n (HiGHS).

    A, E: (n,) float64 oracle A*, E*. budgets: {"kappa", "rbar", "gamma"} (those the problem uses).
    Returns {"value", "C": (n,) float64, "rho", "Ri", "Re", "fractional": count of 0 < C_i < 1 (tolerance 1e-9),
    "lambda": the λ of the dual (for the ratios, of their Dinkelbach step: `solve_fractional`), "status"}.
    """
    if problem in RATIOS:
        return solve_fractional(A, E, budgets, problem)
    quantity, sense, constraints = SPECS[problem]
    n = len(A)
    sign = -1.0 if sense == "max" else 1.0
    c = sign * _row(quantity, A, E) / n
    a_ub, b_ub, triples = [], [], []
    for q, op, name in constraints:
        s = 1.0 if op == "<=" else -1.0
        a_ub.append(s * _row(q, A, E) / n)
        b_ub.append(s * budgets[name])
        triples.append(s * np.array(TRIPLES[q]))
    res = linprog(c, A_ub=np.array(a_ub), b_ub=np.array(b_ub), bounds=(0, 1), method="highs")
    if res.status != 0:
        return {"value": np.nan, "status": res.message, "fractional": 0, "lambda": np.nan}
    C = res.x
    mu = -np.asarray(res.ineqlin.marginals)  # >= 0: the multipliers of the constraints
    alpha = sign * np.array(TRIPLES[quantity]) + sum(m * t for m, t in zip(mu, triples))
    lam = alpha[2] / (alpha[1] + alpha[2]) if alpha[1] + alpha[2] > 0 else np.nan
    return {"value": float(-res.fun if sense == "max" else res.fun), "C": C, **_values(C, A, E),
            "fractional": int(np.sum((C > 1e-9) & (C < 1 - 1e-9))), "lambda": float(lam), "status": "optimal"}


def solve_fractional(A: np.ndarray, E: np.ndarray, budgets: dict[str, float], problem: str = "P_Ri/rho") -> dict:
    """min Q / ρ over all selectors (Q = Ri for P_Ri/ρ, subject to ρ ≥ κ, Re ≤ γ; Q = Re for P_Re/ρ, subject to
    ρ ≥ κ, Ri ≤ r̄), by Charnes–Cooper: variables (y, t) with y = tC, mean y = 1, 0 ≤ y_i ≤ t, t ≤ 1 / κ (ρ ≥ κ),
    mean y·q ≤ b t for the other budget (q its per-row quantity, b its bound); C = y / t. Its λ comes from the
    Dinkelbach step: the LP min Q − θ* ρ at the optimal ratio θ*, under the same constraints (its duals, as in
    `solve_lp`). A, E: (n,) float64 oracle A*, E*; returns `solve_lp`'s dict plus "dinkelbach_value" (0 at θ*)."""
    quantity, _, constraints = SPECS[problem]
    (other, _, name), = [c for c in constraints if c[0] != "rho"]  # the one budget besides the coverage
    n = len(A)
    c = np.append(_row(quantity, A, E) / n, 0.0)
    a_eq = np.append(np.ones(n) / n, 0.0)[None, :]
    budget_rows = sparse.csr_matrix([np.append(_row(other, A, E) / n, -budgets[name]), np.append(np.zeros(n), 1.0)])
    box = sparse.hstack([sparse.eye(n), -np.ones((n, 1))])  # y_i - t <= 0
    a_ub = sparse.vstack([budget_rows, box]).tocsr()
    b_ub = np.concatenate([[0.0, 1.0 / budgets["kappa"]], np.zeros(n)])
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0], bounds=(0, None), method="highs")
    if res.status != 0:
        return {"value": np.nan, "status": res.message, "fractional": 0, "lambda": np.nan}
    C = np.clip(res.x[:n] / res.x[n], 0.0, 1.0)
    theta = float(res.fun)
    step = _dinkelbach_step(A, E, theta, budgets, problem)
    return {"value": theta, "C": C, **_values(C, A, E), "fractional": int(np.sum((C > 1e-9) & (C < 1 - 1e-9))),
            "lambda": step["lambda"], "dinkelbach_value": step["value"], "status": "optimal"}


def _dinkelbach_step(A: np.ndarray, E: np.ndarray, theta: float, budgets: dict[str, float],
                     problem: str = "P_Ri/rho") -> dict:
    """min mean C·(q − θ) (q the ratio's numerator per row: T* for P_Ri/ρ, E* for P_Re/ρ) subject to ρ ≥ κ and the
    other budget (value 0 at the optimal ratio θ*), with its dual λ: the Lagrangian's coefficient of C_i is
    (q_i − θ) − μ_ρ + μ (the other budget's row), so λ = α_E / (α_A + α_E) as in `solve_lp`."""
    quantity, _, constraints = SPECS[problem]
    (other, _, name), = [c for c in constraints if c[0] != "rho"]
    n = len(A)
    c = (_row(quantity, A, E) - theta) / n
    a_ub = np.array([-np.ones(n) / n, _row(other, A, E) / n])
    res = linprog(c, A_ub=a_ub, b_ub=[-budgets["kappa"], budgets[name]], bounds=(0, 1), method="highs")
    mu = -np.asarray(res.ineqlin.marginals)
    alpha = (np.array(TRIPLES[quantity]) - np.array([theta, 0.0, 0.0]) - mu[0] * np.array(TRIPLES["rho"])
             + mu[1] * np.array(TRIPLES[other]))
    return {"value": float(res.fun), "lambda": float(alpha[2] / (alpha[1] + alpha[2]))}


def prefix_values(A: np.ndarray, E: np.ndarray, lam: float, tie_key: np.ndarray) -> dict[str, np.ndarray]:
    """ρ, Ri, Re of the threshold rules 1{(1 − λ)A* + λE* ≤ τ} for every τ: the k = 0..n rows of lowest score
    accepted (ties ordered by `tie_key`, ascending). Returns {"rho", "Ri", "Re": (n + 1,) float64}."""
    n = len(A)
    order = np.lexsort((tie_key, (1 - lam) * A + lam * E))
    zero = np.zeros(1)
    return {"rho": np.arange(n + 1) / n, "Ri": np.concatenate([zero, np.cumsum((A + E)[order])]) / n,
            "Re": np.concatenate([zero, np.cumsum(E[order])]) / n}


def best_threshold(A: np.ndarray, E: np.ndarray, problem: str, budgets: dict[str, float],
                   lambdas: np.ndarray) -> dict:
    """The best deterministic threshold rule on (1 − λ)A* + λE* over `lambdas` and every τ (ties broken by A* or
    by E*, whichever is better). Returns {"value", "lambda", "rho", "Ri", "Re"}; value NaN when none is feasible."""
    quantity, sense, constraints = SPECS[problem]
    best = {"value": np.nan, "lambda": np.nan}
    for lam in lambdas:
        for tie_key in (A, E):
            v = prefix_values(A, E, lam, tie_key)
            ok = np.ones(len(v["rho"]), bool)
            for q, op, name in constraints:
                ok &= v[q] <= budgets[name] + 1e-12 if op == "<=" else v[q] >= budgets[name] - 1e-12
            ok[0] &= problem not in RATIOS  # a ratio needs ρ > 0
            if not ok.any():
                continue
            obj = v[quantity] / np.where(v["rho"] > 0, v["rho"], 1.0) if problem in RATIOS else v[quantity]
            k = np.flatnonzero(ok)[np.argmax(obj[ok]) if sense == "max" else np.argmin(obj[ok])]
            if np.isnan(best["value"]) or (obj[k] > best["value"] if sense == "max" else obj[k] < best["value"]):
                best = {"value": float(obj[k]), "lambda": float(lam), **{q: float(v[q][k]) for q in TRIPLES}}
    return best


def budget_grid(A: np.ndarray, E: np.ndarray, kappas: tuple[float, ...], mixes: tuple[float, ...]) -> list[dict]:
    """Budgets between the two ends of the theorem at each coverage κ: r̄ = Ri(½) + m·(Ri(1) − Ri(½)) and
    γ = Re(1) + m·(Re(½) − Re(1)), with Ri(λ), Re(λ) the risk and regret of the λ threshold rule at coverage κ;
    so that both constraints can bind. Returns [{"kappa", "mix", "rbar", "gamma"}]."""
    n = len(A)
    half, one = prefix_values(A, E, 0.5, E), prefix_values(A, E, 1.0, A)
    out = []
    for kappa in kappas:
        k = int(round(kappa * n))
        for m in mixes:
            out.append({"kappa": kappa, "mix": m, "rbar": half["Ri"][k] + m * (one["Ri"][k] - half["Ri"][k]),
                        "gamma": one["Re"][k] + m * (half["Re"][k] - one["Re"][k])})
    return out


def is_threshold_form(A: np.ndarray, E: np.ndarray, C: np.ndarray, lam: float, tol: float = 1e-9) -> bool:
    """Whether the selector C accepts (C = 1) every row whose score (1 − λ)A* + λE* is below that of any row it
    rejects (C = 0): a threshold rule, randomised only where C is fractional."""
    score = (1 - lam) * A + lam * E
    accepted, rejected = score[C > 1 - tol], score[C < tol]
    return bool(len(accepted) == 0 or len(rejected) == 0 or accepted.max() <= rejected.min() + tol)


def lp_rows(A: np.ndarray, E: np.ndarray, budgets: list[dict], lambdas: np.ndarray,
            problems: tuple[str, ...] = PROBLEMS) -> list[dict]:
    """One row per (budget, problem): the LP optimum over all selectors, its dual λ, its fractional rows, the best
    threshold rule over `lambdas` ∪ {the dual λ}, and the relative gap |LP − threshold| / |LP|."""
    rows = []
    for b in budgets:
        for problem in problems:
            lp = solve_lp(A, E, problem, b)
            grid = np.unique(np.append(lambdas, lp["lambda"] if 0.5 <= lp["lambda"] <= 1 else []))
            thr = best_threshold(A, E, problem, b, grid)
            gap = abs(lp["value"] - thr["value"]) / max(abs(lp["value"]), 1e-300)
            rows.append({"kappa": b["kappa"], "mix": b["mix"], "problem": problem, "lp": lp["value"],
                         "threshold": thr["value"], "rel_gap": float(gap), "lambda_dual": lp["lambda"],
                         "lambda_threshold": thr["lambda"], "fractional": lp["fractional"],
                         "threshold_form": is_threshold_form(A, E, lp["C"], lp["lambda"])})
    return rows


def lp_summary(rows: list[dict]) -> dict:
    """What notebook 03 states about `lp_rows`: how many problems, the largest relative gap between the LP and the
    best threshold rule, the range of the duals' λ, whether every LP solution has the threshold form, and the most
    fractional rows of any solution."""
    lams = [r["lambda_dual"] for r in rows if np.isfinite(r["lambda_dual"])]
    return {"problems": len(rows), "max_rel_gap": float(max(r["rel_gap"] for r in rows)),
            "lambda_min": float(min(lams)), "lambda_max": float(max(lams)),
            "lambda_in_range": bool(all(0.5 - 1e-9 <= v <= 1 + 1e-9 for v in lams)),
            "all_threshold_form": bool(all(r["threshold_form"] for r in rows)),
            "max_fractional": int(max(r["fractional"] for r in rows))}


def lp_table(rows: list[dict], loss_names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The reader's table of `lp_rows` (each row with its "loss", named by `loss_names` where it has a name): one
    row per loss and problem, over the budgets
    (κ, mix): how many, the largest relative gap between the LP and the best threshold rule, the range of the
    duals' λ, how many LP solutions have the threshold form, and the most fractional rows of any solution."""
    out = []
    for (loss, problem), group in pd.DataFrame(rows).groupby(["loss", "problem"], sort=False):
        lams = group["lambda_dual"][np.isfinite(group["lambda_dual"])]
        out.append({"loss": (loss_names or {}).get(loss, loss), "problem": problem, "budgets": len(group),
                    "max |LP − threshold| / LP": f"{100 * group['rel_gap'].max():.3f} %",  # as the reading says
                    "dual λ": f"{lams.min():.2f}–{lams.max():.2f}" if len(lams) else "",
                    "threshold form": f"{int(group['threshold_form'].sum())} of {len(group)}",
                    "most fractional rows": int(group["fractional"].max())})
    return pd.DataFrame(out).set_index(["loss", "problem"])  # the names go to the corner cell when shown
