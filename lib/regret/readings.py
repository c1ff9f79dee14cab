"""Notebook 03's readings: the facts its reading cells state, and the sentences that state them.

Each `*_facts` function returns what a sentence says about the run (values, comparisons, the word "above" or
"below", who is best), from the run's tables; each `*_text` function renders the Markdown of one reading cell
from those facts (a reading cell is one call and a `say`). The facts are unit-tested on small hand-made tables
(tests/test_regret_readings.py); the notebook's tests check the rendered text against the recorded results.

Tables are the notebook's pandas frames: `table` (index (loss, method name), our PAPER_COLUMNS, "accuracy" and
"paper <column>"), `whole_table` (the same for the whole networks, `lib.regret.experiment.whole_rows`), and so on;
each function names what it reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from lib.reading import compare, md_table, pct, seq, sig, skipped, span
from lib.regret import experiment as ex
from lib.regret.theorem_lp import PROBLEMS

LOSS_NAMES = ex.LOSS_NAMES
LOWER_BETTER = ("AuReC", "ex-AuReC", "P-gap")  # the paper's columns where lower is better
OPTIMAL_SELECTOR = "regret-optimal E\\* (λ=1)"  # the sandbox's regret-optimal selector, Markdown-escaped
# spec §5.2: cleanlab's cross-validated q on all 10,000 rows: mean T*, A*, E* and r_s(A*, E*) per loss
GOLDEN = {"ce": (0.5135, 0.1545, 0.3591, 0.825), "zero_one": (0.1033, 0.0456, 0.0578, 0.209)}
CLEANLAB = "cleanlab cross-validated q"
PROXY_NAMES = {"near-OOD AuROC": "near-OOD", "far-OOD AuROC": "far-OOD", "AL NAUC": "AL", "CE AuReC": "CE regret"}
PAPER_EVIDENTIAL_NAUC = 0.177  # spec §1.3: the paper's catastrophic evidential active-learning NAUC


def paper_text(value: Any) -> str:
    """A paper value as a table cell: "–" where the paper has none."""
    return "–" if value is None or pd.isna(value) else f"{value:g}"


def order(values: pd.Series) -> list[str]:
    """The index of `values`, lowest value first (the ranking by a lower-is-better metric)."""
    return list(values.sort_values().index)


# ----------------------------------------------------------------------------------------------------
# §1 The sandbox
# ----------------------------------------------------------------------------------------------------
def sandbox_facts(sandbox_rows: list[dict]) -> dict:
    """{"by_selector" ({escaped name: row}), "optimal" (the regret-optimal selector's regret of accepted),
    "others" ({name: row} of the other selectors), "least" (their least regret of accepted), "optimal_best" (True
    when every other selector leaves more regret)}. sandbox_rows: [{"selector", "regret of accepted", ...}]."""
    by_selector = {r["selector"].replace("*", "\\*"): r for r in sandbox_rows}  # escaped: * is Markdown emphasis
    others = {name: r for name, r in by_selector.items() if name != OPTIMAL_SELECTOR}
    least = min(others.values(), key=lambda r: r["regret of accepted"])["regret of accepted"]
    optimal = by_selector[OPTIMAL_SELECTOR]["regret of accepted"]
    return {"by_selector": by_selector, "optimal": optimal, "others": others, "least": least,
            "optimal_best": optimal < least}


def sandbox_text(config: ex.RegretConfig, sandbox_rows: list[dict]) -> str:
    f = sandbox_facts(sandbox_rows)
    by_selector, others = f["by_selector"], f["others"]
    return f"""
**Reading** (`{config.preset}` preset, {config.sandbox.num_bins} bins, {config.sandbox.n_train:,} training points,
{pct(config.sandbox.reject)} rejected). Share of each selector's rejections inside the thinly sampled hole:
{"; ".join(f"{name} {pct(r['rejected inside the hole'])}" for name, r in by_selector.items())}. The regret left among
the accepted inputs is {f["optimal"]:.3f} for the regret-optimal selector, against
{"; ".join(f"{r['regret of accepted']:.3f} for {name}" for name, r in others.items())}:
{"every other selector leaves more regret among the accepted inputs, as the paper argues"
 if f["optimal_best"] else
 "some other selector leaves as little regret as the regret-optimal one here"}.
"""


# ----------------------------------------------------------------------------------------------------
# §2 The theorem
# ----------------------------------------------------------------------------------------------------
def theorem_facts(theorem: pd.DataFrame, loss: str) -> dict:
    """Of `ex.theorem_rows` (a frame) for one loss: {"inside_all_on_front" (every λ ∈ [½, 1] point on the joint
    front), "inside_share" (their mean share on it), "outside_max_share" (the most any λ outside shares with it),
    "outside_max_igd" (the largest IGD+ of S* to a λ outside [½, 1]; 0: each weakly dominated)}."""
    rows_of = theorem[theorem["loss"] == loss]
    inside, outside = rows_of[rows_of["in [1/2, 1]"]], rows_of[~rows_of["in [1/2, 1]"]]
    return {"inside_all_on_front": bool(inside["on the joint front"].min() == 1),
            "inside_share": float(inside["on the joint front"].mean()),
            "outside_max_share": float(outside["on the joint front"].max()),
            "outside_max_igd": float(outside["IGD+ of S* to it"].max())}


def _theorem_sentence(theorem: pd.DataFrame, loss: str) -> str:
    f = theorem_facts(theorem, loss)
    on_front = ("every λ ∈ [½, 1] selector is on the joint front" if f["inside_all_on_front"] else
                f"{pct(f['inside_share'])} of the λ ∈ [½, 1] selectors' points are on the joint front")
    outside_front = ("no selector with λ < ½ or λ > 1 is" if f["outside_max_share"] == 0 else
                     f"selectors with λ outside [½, 1] share up to {pct(f['outside_max_share'])} of their "
                     "points with it")
    igd = f["outside_max_igd"]
    dominated = (f"IGD+ of S\\* to a λ outside [½, 1] reaches {sig(igd)}" if igd > 0 else
                 "IGD+ of S\\* to every λ outside [½, 1] is exactly 0: each is weakly dominated by S\\*")
    return f"under {LOSS_NAMES[loss]}, {on_front} and {outside_front}; {dominated}"


def theorem_text(theorem: pd.DataFrame, cv: dict) -> str:
    """cv: {"ce", "zero_one": `regret.decompose` of cleanlab's model ("A", "E": (N,) float)}."""
    return f"""
**Reading** ({len(cv["zero_one"]["E"]):,} CIFAR-10H rows, the cleanlab model's oracle):
{"; ".join(_theorem_sentence(theorem, loss) for loss in cv)}.
Under 0/1 loss E\\* = 0 on {pct(np.mean(cv["zero_one"]["E"] == 0), 1)} of the rows and A\\* = 0 on
{pct(np.mean(cv["zero_one"]["A"] == 0), 1)}.
"""


def _lp_sentence(loss: str, f: dict) -> str:
    return (f"under {LOSS_NAMES[loss]}, the duals' λ lie in [{f['lambda_min']:.3f}, {f['lambda_max']:.3f}] "
            f"({'inside' if f['lambda_in_range'] else 'not all inside'} [½, 1]), "
            f"{'every' if f['all_threshold_form'] else 'not every'} LP solution is a threshold rule on its λ with at "
            f"most {f['max_fractional']} fractional rows, and the best deterministic threshold rule is within "
            f"{pct(f['max_rel_gap'], 3)} of the optimum over all selectors")


def lp_text(config: ex.RegretConfig, lp_facts: dict) -> str:
    """lp_facts: {loss: `theorem_lp.lp_summary`}."""
    each = "; ".join(_lp_sentence(loss, f) for loss, f in lp_facts.items())
    return f"""
**Reading** ({sum(f["problems"] for f in lp_facts.values())} problems: {len(config.lp_kappas) * len(config.lp_mixes)}
budgets × {len(PROBLEMS)} forms × {len(lp_facts)} losses): {each}. The theorem holds against every
selector; what a deterministic rule can lose is the rounding of the fractional rows a vertex of the LP may have.
"""


# ----------------------------------------------------------------------------------------------------
# §3 The CIFAR-10H table
# ----------------------------------------------------------------------------------------------------
def best_marked_rows(frame: pd.DataFrame, columns: tuple[str, ...],
                     paper_of: Callable[[str, str, str], Any]) -> list[dict]:
    """Markdown rows of `frame` (index loss, method): our values, the lowest per loss in bold (LOWER_BETTER
    columns), the paper's beside ("paper (same order)", from `paper_of(loss, method, column)`)."""
    out = []
    for (loss, method), row in frame.iterrows():
        best = {c: frame.xs(loss)[c].min() for c in LOWER_BETTER if c in columns}
        cells = {c: (f"**{row[c]:.3f}**" if c in best and row[c] == best[c] else f"{row[c]:.3f}") for c in columns}
        out.append({"loss": LOSS_NAMES[loss], "method": method, **cells,
                    "paper (same order)": " / ".join(paper_text(paper_of(loss, method, c)) for c in columns)})
    return out


def table_text(config: ex.RegretConfig, table: pd.DataFrame, cifar: dict, test_accuracy: float | None) -> str:
    """The CIFAR-10H table as Markdown with what was measured; cifar: `ex.cifar_data` ("train_labels", "p_true");
    test_accuracy: the frozen ResNet's own classifier's (read for the frozen backbone only)."""
    frozen = config.backbone == "frozen"
    own_classifier = (f", against {pct(test_accuracy, 1)} for ResNet-{config.depth}'s own classifier on this copy"
                      if frozen else "")
    heads = table.sort_index(level=0, key=lambda level: level.map(list(config.losses).index), sort_remaining=False)
    rows = best_marked_rows(heads, tuple(ex.PAPER_COLUMNS),
                            lambda loss, method, c: table.loc[(loss, method), f"paper {c}"])
    return f"""
**What we measured** (`{config.preset}` preset: {config.backbone} ResNet-{config.depth}
{"features, heads" if frozen else "networks"} trained on {len(cifar["train_labels"]):,}
{config.data_source.upper() if config.data_source == "jpeg" else "lossless"} training images, evaluated on
{len(cifar["p_true"]):,} CIFAR-10H rows; {"heads" if frozen else "networks"}
{span(table["accuracy"], fmt=lambda a: pct(a, 1))} accurate against the human argmax{own_classifier}):

{md_table(rows)}
"""


def table_claims_facts(table: pd.DataFrame, loss: str) -> dict:
    """Of the CIFAR-10H table for one loss: {"our_best", "paper_best" (the method lowest by each LOWER_BETTER
    column), "same_best", "order", "paper_order" (by AuReC, lowest first), "lowest_rs", "paper_lowest_rs" (the
    method with the lowest r_s(A*, E*)), "ratio" (our AuReC / the paper's), "oracle", "paper_oracle" (AuReC −
    ex-AuReC)}."""
    ours = table.xs(loss)
    our_best = [ours[c].idxmin() for c in LOWER_BETTER]
    paper_best = [ours[f"paper {c}"].idxmin() for c in LOWER_BETTER]
    return {"our_best": our_best, "paper_best": paper_best, "same_best": our_best == paper_best,
            "order": order(ours["AuReC"]), "paper_order": order(ours["paper AuReC"]),
            "lowest_rs": ours["r_s(A*,E*)"].idxmin(), "paper_lowest_rs": ours["paper r_s(A*,E*)"].idxmin(),
            "ratio": ours["AuReC"] / ours["paper AuReC"],
            "oracle": ours["AuReC"] - ours["ex-AuReC"], "paper_oracle": ours["paper AuReC"] - ours["paper ex-AuReC"]}


def f3_holds(table: pd.DataFrame, column: str = "r_s(A*,E*)") -> bool:
    """F3: `column` falls from CE to 0/1 loss for every row of `table` (index (loss, name))."""
    return bool((table.xs("ce")[column] - table.xs("zero_one")[column] > 0).all())


def table_claims_text(config: ex.RegretConfig, table: pd.DataFrame, evals: dict, cv: dict, n_rows: int) -> str:
    """The bullets under the CIFAR-10H table: scale, best method, F3, P-gap. evals: {(method, loss): `ex.evaluate`};
    cv: {loss: cleanlab's decomposition}; n_rows: the CIFAR-10H rows evaluated."""
    bullets = []
    for claim_loss in config.losses:
        ours, f = table.xs(claim_loss), table_claims_facts(table, claim_loss)
        mean_regret = [evals[(m, claim_loss)]["metrics"]["mean_E*"] for m in config.methods]
        oracle, paper_oracle = f["oracle"], f["paper_oracle"]
        bullets += [
            f"**Scale, {LOSS_NAMES[claim_loss]}.** Our AuReCs are {span(f['ratio'], fmt=sig)} "
            f"times the paper's; the mean regret E\\* of our models is {span(mean_regret)} against "
            f"{cv[claim_loss]['E'][: n_rows].mean():.3f} for cleanlab's cross-validated model (next table), "
            "and "
            f"the oracle areas AuReC − ex-AuReC ({span(oracle, 3)}) are {span(oracle / paper_oracle, fmt=sig)} times "
            f"the paper's implied {span(paper_oracle, 4)} (§5.5).",
            f"**Best under {LOSS_NAMES[claim_loss]}** (lowest {' / '.join(LOWER_BETTER)}): {' / '.join(f['our_best'])} "
            f"(paper: {' / '.join(f['paper_best'])}{', the same' if f['same_best'] else ''}). By AuReC, "
            f"{' < '.join(f['order'])} "
            f"(paper: {' < '.join(f['paper_order'])}). "
            f"The lowest r_s(A\\*, E\\*) is {f['lowest_rs']}'s ({ours['r_s(A*,E*)'].min():.3f}; paper: "
            f"{f['paper_lowest_rs']}'s, {ours['paper r_s(A*,E*)'].min():g})."]
    if {"ce", "zero_one"} <= set(config.losses):
        appa = [v["P-gap"] for loss in ("squared", "absolute") for v in ex.paper_rows("APPA-REAL", loss).values()]
        bullets += [
            f"**F3 {'holds' if f3_holds(table) else 'does not hold for every model'}:** r_s(A\\*, E\\*) is "
            f"{span(table.xs('ce')['r_s(A*,E*)'])} under CE → {span(table.xs('zero_one')['r_s(A*,E*)'])} under 0/1 "
            f"(paper: {span(table.xs('ce')['paper r_s(A*,E*)'])} → {span(table.xs('zero_one')['paper r_s(A*,E*)'])}).",
            f"**P-gap.** With the `ref_range` scaling the 0/1 P-gaps are "
            f"{span(evals[(m, 'zero_one')]['metrics']['P-gap_ref_range'] for m in config.methods)}, against "
            f"{span(appa)} in the paper's APPA-REAL table (B5)."]
    return "\n".join(f"- {b}" for b in bullets)


def density_facts(tau_rows: list[dict], loss: str) -> dict:
    """Of `density.tau_summary` rows for one loss: {"low" (the smallest k), "tau", "tau_low", "tau_high" (its
    median τ and interval)}."""
    by_k = {r["k"]: r for r in tau_rows if r["loss"] == loss}
    low = min(by_k)
    return {"low": low, "tau": by_k[low]["median_tau"], "tau_low": by_k[low]["low"], "tau_high": by_k[low]["high"]}


def _density_sentence(loss: str, tau_rows: list[dict], stable_k: dict, mean_E: dict, all_k: int) -> str:
    f, stable = density_facts(tau_rows, loss), stable_k[loss]
    where = (f"the order is stable (90 % of the draws the same) from k = {stable} on" if stable is not None else
             "no k short of all annotations reproduces the order in 90 % of the draws")
    return (f"under {LOSS_NAMES[loss]}, k = {f['low']} gives τ {f['tau']:.2f} "
            f"[{f['tau_low']:.2f}, {f['tau_high']:.2f}] and mean E\\* {mean_E[(loss, f['low'])]:.3f} against "
            f"{mean_E[(loss, all_k)]:.3f} with all annotations; {where}")


def density_text(config: ex.RegretConfig, tau_rows: list[dict], stable_k: dict, mean_E: dict, n_rows: int) -> str:
    """The label-density reading; stable_k: {loss: `density.stable_from`}; mean_E: {(loss, k): mean E*}."""
    from lib.regret.density import ALL

    each = "; ".join(_density_sentence(loss, tau_rows, stable_k, mean_E, ALL) for loss in config.losses)
    return f"""
**Reading** ({len(config.methods)} methods, {config.density_draws} draws per k, {n_rows:,} rows):
{each}.
"""


# ----------------------------------------------------------------------------------------------------
# §3 Whole networks beside the heads
# ----------------------------------------------------------------------------------------------------
def whole_text(config: ex.RegretConfig, whole: dict, whole_table: pd.DataFrame, table: pd.DataFrame,
               n_rows: int) -> str:
    """What the whole networks are and how accurate, with the CE table (whole · head · paper). whole:
    `ex.whole_predictions`; whole_table: `ex.whole_rows` as a frame; table: the heads' CIFAR-10H table."""
    if whole_table.empty:
        return skipped("The whole networks", 'WHOLE_SOURCE is "off"')
    meta = next(iter(whole.values()))["meta"]
    whole_accuracy = {ex.PAPER_METHOD_NAMES[m]: w["meta"]["test_accuracy"] for m, w in whole.items()}
    whole_md_rows = []
    if "ce" in config.losses:
        ce_whole, ce_best = whole_table.xs("ce"), whole_table.xs("ce")["AuReC (whole)"].idxmin()
        for label, cells in (
                ("AuReC, whole · head · paper", lambda m, r: f"{'**' * (m == ce_best)}{r['AuReC (whole)']:.3f}"
                 f"{'**' * (m == ce_best)} · {r['AuReC (head)']:.3f} · {paper_text(r['paper AuReC'])}"),
                ("r_s(Â, Ê), whole · paper",
                 lambda m, r: f"{r['r_s(Â,Ê) (whole)']:.3f} · {paper_text(r['paper r_s(Â,Ê)'])}"),
                ("r_s(A\\*, E\\*), whole", lambda m, r: f"{r['r_s(A*,E*) (whole)']:.3f}")):
            whole_md_rows.append({"CE": label, **{m: cells(m, r) for m, r in ce_whole.iterrows()}})
    settings = meta["settings"]
    return f"""
**What we measured** (networks of {meta["date"][:10]} on {meta["device"]}, one training per network;
stored in `results/03/cpu/` for the `cpu` preset), made from the {meta["data_source"]} copy: widths
{"/".join(map(str, settings["widths"]))}, batch
{settings["batch_size"]}, {settings["epochs"]} epochs, label smoothing
{settings["label_smoothing"]:g}; evaluated on {n_rows:,} CIFAR-10H rows). The networks are
{"; ".join(f"{pct(a)} ({m})" for m, a in whole_accuracy.items())} accurate on the test images, against
{span(table["accuracy"], fmt=pct)} for the heads on pretrained features (against the human argmax) and the mid-90s of
the paper's networks.

{md_table(whole_md_rows) if whole_md_rows else ""}
"""


def ensemble_vs_dropout(ce_whole: pd.DataFrame) -> dict | None:
    """Of the whole networks' CE rows (index method name): {"ahead" (the ensemble's AuReC below MC-Dropout's),
    "ensemble", "dropout" (their rows)}; None without both methods."""
    ens, mcd = "Deep Ensemble", "MC-Dropout"
    if not {ens, mcd} <= set(ce_whole.index):
        return None
    return {"ahead": bool(ce_whole.loc[ens, "AuReC (whole)"] < ce_whole.loc[mcd, "AuReC (whole)"]),
            "ensemble": ce_whole.loc[ens], "dropout": ce_whole.loc[mcd]}


def far_ood_facts(whole_ood: dict) -> dict | None:
    """Of {method name: {OOD set: AuROC}} of the whole networks: {"noise", "far" (the sets every method has),
    "far_mean" ({method: mean AuROC over `far`}), "far_worst" (the method lowest there), "paper_worst" (the paper's
    worst far-OOD detector), "paper_worst_value"}; None unless a noise set and a far set were run."""
    noise = [s for s in ("gaussian_noise", "uniform_noise") if all(s in v for v in whole_ood.values())]
    far = [s for s in ("mnist", "uniform_noise") if all(s in v for v in whole_ood.values())]
    if not (noise and far):
        return None
    far_mean = {m: np.mean([v[s] for s in far]) for m, v in whole_ood.items()}
    paper_far = {ex.PAPER_METHOD_NAMES[m]: v[1] for m, v in ex.PAPER_PROXY.items()}
    paper_worst = min(paper_far, key=paper_far.get)
    return {"noise": noise, "far": far, "far_mean": far_mean, "far_worst": min(far_mean, key=far_mean.get),
            "paper_worst": paper_worst, "paper_worst_value": paper_far[paper_worst]}


def _ensemble_bullet(ce_whole: pd.DataFrame) -> list[str]:
    f = ensemble_vs_dropout(ce_whole)
    if f is None:
        return []
    ens, mcd, ahead = f["ensemble"], f["dropout"], f["ahead"]
    return [f"The ensemble is {'ahead of' if ahead else 'behind'} MC-Dropout (CE AuReC "
            f"{ens['AuReC (whole)']:.3f} against {mcd['AuReC (whole)']:.3f}, ex-AuReC "
            f"{ens['ex-AuReC (whole)']:.3f} against {mcd['ex-AuReC (whole)']:.3f})"
            f"{', the paper' + chr(39) + 's order' if ahead else ', unlike the paper'}; the heads give "
            f"{ens['AuReC (head)']:.3f} against {mcd['AuReC (head)']:.3f}. The ensemble's "
            f"r_s(Â, Ê) is {ens['r_s(Â,Ê) (whole)']:.3f} (paper: "
            f"{ens['paper r_s(Â,Ê)']:g})."]


def _ood_bullet(whole_ood: dict) -> list[str]:
    f = far_ood_facts(whole_ood)
    if f is None:
        return []
    far_mean, far_worst = f["far_mean"], f["far_worst"]
    return ["**OOD** (the table above the regret table): AuROC on the two noise sets "
            + "; ".join(f"{m} {span(v[s] for s in f['noise'])}" for m, v in whole_ood.items())
            + f". On the far-OOD sets ({', '.join(f['far'])}) the worst is {far_worst} (mean AuROC "
            f"{far_mean[far_worst]:.2f} against {span(v for m, v in far_mean.items() if m != far_worst)} for the "
            f"others); the paper's worst far-OOD detector is {f['paper_worst']} "
            f"({f['paper_worst_value']:g})."]


def whole_claims_text(config: ex.RegretConfig, whole_table: pd.DataFrame, table: pd.DataFrame,
                      whole_ood: dict) -> str | None:
    """The bullets on the whole networks (order, ensemble against MC-Dropout, 0/1, scale, OOD); None without the
    whole networks under CE."""
    if whole_table.empty or "ce" not in config.losses:
        return None
    ce_whole = whole_table.xs("ce")
    bullets = [
        f"**By CE AuReC the whole networks rank {' < '.join(order(ce_whole['AuReC (whole)']))}** (paper: "
        f"{' < '.join(order(ce_whole['paper AuReC']))}; heads: {' < '.join(order(ce_whole['AuReC (head)']))}).",
        *_ensemble_bullet(ce_whole)]
    if "zero_one" in config.losses:
        zo = whole_table.xs("zero_one")["AuReC (whole)"]
        bullets.append(f"Under 0/1 loss the best is {zo.idxmin()} (AuReC {zo.min():.3f}; "
                       + "; ".join(f"{m} {v:.3f}" for m, v in zo.drop(zo.idxmin()).items()) + ").")
    bullets.append(
        "**Scale:** AuReC is "
        + "; ".join(f"{span(whole_table.xs(loss)['AuReC (whole)'] / whole_table.xs(loss)['paper AuReC'], fmt=sig)} "
                    f"times the paper's under {LOSS_NAMES[loss]}" for loss in config.losses)
        + f"; r_s(A\\*, E\\*) under CE is {span(ce_whole['r_s(A*,E*) (whole)'])} (paper, in the table above: "
        f"{span(table.xs('ce')['paper r_s(A*,E*)'])}).")
    bullets += _ood_bullet(whole_ood)
    return "\n".join(f"- {b}" for b in bullets)


def recipe_facts(recipe_table: pd.DataFrame) -> dict:
    """Of the recipe comparison (index (method name, networks "airbench recipe" | "ours"), `ex.whole_diagnostics`
    columns): {"unchanged", "changed" (the two variants' rows by method), "plain" (the cross-entropy methods in
    both), "all_underconfident" (every plain network of the recipe has mean confidence below its accuracy),
    "most_harmed" (the plain method whose CE AuReC the smoothing raises most)}."""
    unchanged, changed = (recipe_table.xs(v, level="networks") for v in ("airbench recipe", "ours"))
    plain = [m for m in unchanged.index if m != "Evidential" and m in changed.index]  # the cross-entropy networks
    harm = (unchanged["AuReC"] - changed["AuReC"]).loc[plain]
    return {"unchanged": unchanged, "changed": changed, "plain": plain,
            "all_underconfident": bool((unchanged.loc[plain, "mean confidence"]
                                        < unchanged.loc[plain, "accuracy"]).all()),
            "most_harmed": harm.idxmax()}


def _evidential_recipe(unchanged: pd.DataFrame, changed: pd.DataFrame) -> str:
    if "Evidential" not in changed.index:
        return ""
    return f'''
The evidential network with scaled logits is {pct(unchanged.loc["Evidential", "accuracy"])} instead of
{pct(changed.loc["Evidential", "accuracy"])} accurate, with ECE {unchanged.loc["Evidential", "ECE"]:.2f} against
{changed.loc["Evidential", "ECE"]:.2f} (CE AuReC {unchanged.loc["Evidential", "AuReC"]:.3f} against
{changed.loc["Evidential", "AuReC"]:.3f}).'''


def recipe_text(recipe_table: pd.DataFrame) -> str:
    """The reading of the recipe comparison (`recipe_facts`), or why it was skipped."""
    if recipe_table.empty:
        return skipped("The recipe comparison", 'it needs the whole networks (WHOLE_SOURCE="train") and the CE loss')
    f = recipe_facts(recipe_table)
    unchanged, changed, plain, worst = f["unchanged"], f["changed"], f["plain"], f["most_harmed"]
    return f"""
**Reading** (the same networks, one seed, with and without the two changes). Label smoothing 0.2 leaves
{"every" if f["all_underconfident"] else "not every"}
cross-entropy network underconfident: mean confidence {span(unchanged.loc[plain, "mean confidence"])} at
{span(unchanged.loc[plain, "accuracy"], fmt=pct)} accuracy (ECE {span(unchanged.loc[plain, "ECE"])}), against
{span(changed.loc[plain, "mean confidence"])} at {span(changed.loc[plain, "accuracy"], fmt=pct)} and ECE
{span(changed.loc[plain, "ECE"])} with plain CE. The mean CE regret E\\* is {span(unchanged.loc[plain, "mean E*"])} nats
with smoothing against {span(changed.loc[plain, "mean E*"])} without. Smoothing costs {worst} the most CE
AuReC ({unchanged.loc[worst, "AuReC"]:.3f} against {changed.loc[worst, "AuReC"]:.3f}; its r_s(Â, Ê)
{unchanged.loc[worst, "r_s(Â,Ê)"]:.3f} against {changed.loc[worst, "r_s(Â,Ê)"]:.3f}). By CE AuReC the
unchanged recipe ranks {" < ".join(order(unchanged["AuReC"]))}, the changed one
{" < ".join(order(changed["AuReC"]))}.{_evidential_recipe(unchanged, changed)}
"""


def temperature_facts(temperature_rows: list[dict]) -> dict:
    """Of `ex.temperature_rows`: {"by_T" (a frame indexed by T, ascending), "rising" (r_s(A*, E*) rises with the
    confidence, i.e. falls as T grows), "calibrated" (the T of the lowest ECE), "as_trained" (the T = 1 row or
    None)}."""
    by_T = pd.DataFrame(temperature_rows).set_index("T").sort_index()
    return {"by_T": by_T, "rising": bool(by_T["r_s(A*,E*)"].is_monotonic_decreasing),
            "calibrated": by_T["ECE"].idxmin(), "as_trained": by_T.loc[1.0] if 1.0 in by_T.index else None}


def _f3_whole(config: ex.RegretConfig, whole_table: pd.DataFrame) -> str:
    if not ({"ce", "zero_one"} <= set(config.losses) and not whole_table.empty):
        return ""
    holds = f3_holds(whole_table, "r_s(A*,E*) (whole)")
    return (" The drop of r_s(A\\*, E\\*) from CE to 0/1 loss (F3) "
            f"{'holds' if holds else 'fails'} "
            f"for {'every' if holds else 'some'} whole network "
            f"({span(whole_table.xs('ce')['r_s(A*,E*) (whole)'])} → "
            f"{span(whole_table.xs('zero_one')['r_s(A*,E*) (whole)'])}).")


def temperature_text(config: ex.RegretConfig, temperature_rows: list[dict], whole_table: pd.DataFrame,
                     table: pd.DataFrame) -> str:
    """The reading of the temperature study (`temperature_facts`), or why it was skipped."""
    if not temperature_rows:
        return skipped("The temperature study", "it needs the ensemble's whole networks")
    f = temperature_facts(temperature_rows)
    by_T, calibrated, as_trained = f["by_T"], f["calibrated"], f["as_trained"]
    ce, rises, f3 = "ce" in config.losses, "rises steadily" if f["rising"] else "does not rise steadily", \
        _f3_whole(config, whole_table)
    return f"""
**Reading.** Ours under CE: r_s(A\\*, E\\*) {span(whole_table.xs("ce")["r_s(A*,E*) (whole)"]) if ce
else "n/a"} for the whole networks, {span(table.xs("ce")["r_s(A*,E*)"]) if ce else "n/a"} for the
heads. The ensemble's r_s(A\\*, E\\*) {rises} with its confidence:
{"; ".join(f"{r['r_s(A*,E*)']:.2f} at T = {T:g} (mean confidence {r['mean confidence']:.2f})" for T, r in
by_T.iloc[::-1].iterrows())}, while its accuracy is unchanged (a temperature keeps the argmax). T = {calibrated:g} is
the best calibrated (ECE {by_T.loc[calibrated, "ECE"]:.2f}); its mean E\\* is {by_T.loc[calibrated, "mean E*"]:.2f}
{"" if as_trained is None else f"against {as_trained['mean E*']:.2f} as trained (T = 1)"}.{f3}
"""


def components_facts(component_rows: dict) -> dict:
    """Of {method name: `ex.epistemic_vs_total`}: {"parts" (a frame), "better_total" (the methods whose H(q) has the
    lower CE AuReC), "closest" (the method with the highest r_s(Ê, E*)), "ddu_last" (DDU last by its Ê's AuReC),
    "ddu_entropy_better" (DDU's H(q) beats its density)}."""
    parts = pd.DataFrame(component_rows).T
    ddu = "DDU" in parts.index
    return {"parts": parts, "better_total": list(parts.index[parts["AuReC of H(q)"] < parts["AuReC of Ê"]]),
            "closest": parts["r_s(Ê,E*)"].idxmax(),
            "ddu_last": ddu and parts["AuReC of Ê"].idxmax() == "DDU",
            "ddu_entropy_better": ddu and bool(parts.loc["DDU", "AuReC of H(q)"] < parts.loc["DDU", "AuReC of Ê"])}


def components_text(component_rows: dict) -> str:
    """The reading of Ê against H(q) (`components_facts`), or why it was skipped."""
    if not component_rows:
        return skipped("The comparison of Ê with H(q)", "it needs the whole networks under CE")
    f = components_facts(component_rows)
    parts, better_total = f["parts"], f["better_total"]
    ddu = ""
    if f["ddu_last"]:
        ddu = (" DDU is last by its density's AuReC"
               + (", and its network's own entropy ranks the regret better: its last place comes from the density, "
                  "not the network" if f["ddu_entropy_better"] else "")
               + ".")
    each = [f"{m} {r['AuReC of Ê']:.3f} against {r['AuReC of H(q)']:.3f} (r_s {r['r_s(Ê,E*)']:.2f} against "
            f"{r['r_s(H(q),E*)']:.2f})" for m, r in parts.iterrows()]
    return f"""
**Reading.** CE AuReC of each whole network's Ê against its own total uncertainty H(q), and the Spearman correlation
of each with the regret: {"; ".join(each)}. H(q) ranks the CE regret better than the epistemic estimate for
{"every method" if len(better_total) == len(parts) else ", ".join(better_total) or "no method"}; the epistemic
estimate closest to the regret is {f["closest"]}'s (r_s(Ê, E\\*) {parts["r_s(Ê,E*)"].max():.2f}).{ddu}
"""


# ----------------------------------------------------------------------------------------------------
# §3 The width study
# ----------------------------------------------------------------------------------------------------
def width_facts(width_rows: list[dict], widths: list[tuple[int, int, int]]) -> dict:
    """Of `ex.width_rows` at `widths` (the study's, narrowest first): {"first", "last" (their labels "w1/w2/w3"),
    "by" ({(label, method name): row}), "common" (the methods measured at both), "accuracy_rises" (every common
    method more accurate at the last width), "moves" ({method: (CE AuReC first, last)}, when measured),
    "all_fall" (every method's CE AuReC lower at the last width), "ranked" ({label: methods by CE AuReC})}."""
    label = {w: "/".join(map(str, w)) for w in widths}
    first, last = label[widths[0]], label[widths[-1]]
    by = {(r["widths"], r["method"]): r for r in width_rows}
    common = [m for m in dict.fromkeys(r["method"] for r in width_rows) if (first, m) in by and (last, m) in by]
    out = {"first": first, "last": last, "by": by, "common": common,
           "accuracy_rises": all(by[(last, m)]["accuracy"] > by[(first, m)]["accuracy"] for m in common)}
    if "CE AuReC" in width_rows[0]:
        moves = {m: (by[(first, m)]["CE AuReC"], by[(last, m)]["CE AuReC"]) for m in common}
        out |= {"moves": moves, "all_fall": all(b < a for a, b in moves.values()),
                "ranked": {label[w]: sorted((m for m in common if (label[w], m) in by),
                                            key=lambda m, w=w: by[(label[w], m)]["CE AuReC"]) for w in widths}}
    return out


def trend_facts(trend: dict, reference_accuracy: float) -> dict:
    """Of one `ex.width_trend` row: {"at" (CE AuReC extrapolated to reference_accuracy), "slope" (per accuracy
    point), "direction" ("falls" | "rises"), "reaches_zero" (the line crosses zero before reference_accuracy), "zero_at"
    (the accuracy where it does, or None), "versus_paper" ("above" | "below" | "equal to" the paper's CE AuReC)}."""
    at, slope = trend[f"CE AuReC at {reference_accuracy:.0%}"], trend["CE AuReC per accuracy point"]
    return {"at": at, "slope": slope, "direction": "falls" if slope < 0 else "rises", "reaches_zero": at < 0,
            "zero_at": reference_accuracy - at / (100 * slope) if at < 0 else None,
            "versus_paper": compare(at, trend["paper CE AuReC"])}


def _trend_bullet(trend: dict, reference_accuracy: float) -> str:
    f, paper_aurec = trend_facts(trend, reference_accuracy), trend["paper CE AuReC"]
    low, high = trend["accuracy range"]
    text = (f"**{trend['method']}, the trend towards the paper's accuracy**: a straight line of CE AuReC "
            f"against accuracy through its {trend['widths']} widths ({pct(low, 1)}–{pct(high, 1)}) "
            f"{f['direction']} {abs(f['slope']):.3f} per accuracy point")
    if f["reaches_zero"]:  # AuReC >= 0: the fall has to slow down before that accuracy
        return text + (f" and would reach zero at {pct(f['zero_at'], 1)}, before "
                       f"{pct(reference_accuracy)}: AuReC cannot fall below zero, so the trend must flatten and "
                       f"says nothing about the value at the paper's accuracy (paper: {paper_aurec:g}).")
    return text + (f" and reaches {f['at']:.3f} at {pct(reference_accuracy)}, {f['versus_paper']} the "
                   f"paper's {paper_aurec:g}.")


def _width_aurec_bullets(f: dict) -> list[str]:
    by, first, last, common = f["by"], f["first"], f["last"], f["common"]
    r_s = {m: (by[(first, m)]["CE r_s(A*,E*)"], by[(last, m)]["CE r_s(A*,E*)"]) for m in common}
    return [
        "**CE AuReC** from " + first + " to " + last + ": "
        + "; ".join(f"{m} {a:.3f} → {b:.3f} ({b / by[(last, m)]['paper CE AuReC']:.1f}× the paper's "
                    f"{by[(last, m)]['paper CE AuReC']:g})" for m, (a, b) in f["moves"].items()) + ". "
        + ("Every method's regret falls as the networks grow." if f["all_fall"] else
           "Not every method's regret falls as the networks grow."),
        "**Order by CE AuReC** at each width: " + "; ".join(
            f"{w}: {' < '.join(r)}" for w, r in f["ranked"].items()) + ".",
        "**r_s(A\\*, E\\*) under CE**: " + "; ".join(f"{m} {a:.3f} → {b:.3f}" for m, (a, b) in r_s.items())
        + f" (paper: {span(by[(last, m)]['paper CE r_s(A*,E*)'] for m in common)})."]


def width_text(width: dict, width_rows: list[dict], width_trend: list[dict], reference_accuracy: float) -> str:
    """The width study's bullets (`width_facts`, `trend_facts`), or why it was skipped. width: `ex.width_study`."""
    if len(width) < 2:
        return skipped("The width study", "it needs the whole networks at two or more widths (WHOLE_SOURCE, "
                       "WIDTH_STUDY)")
    f = width_facts(width_rows, list(width))
    by, first, last, common = f["by"], f["first"], f["last"], f["common"]
    bullets = [
        f"**Accuracy rises with width**: from {span(by[(first, m)]['accuracy'] for m in common)} at "
        f"{first} to {span(by[(last, m)]['accuracy'] for m in common)} at {last} "
        f"({seq(common, sep=', ')}), still short of the mid-90s of networks like the paper's."
        if f["accuracy_rises"] else
        "**Accuracy does not rise with width for every method**: "
        + "; ".join(f"{m} {by[(first, m)]['accuracy']:.3f} → {by[(last, m)]['accuracy']:.3f}" for m in common) + "."]
    if "moves" in f:
        bullets += _width_aurec_bullets(f)
    bullets += [_trend_bullet(trend, reference_accuracy) for trend in width_trend]
    return "\n".join(f"- {b}" for b in bullets)


# ----------------------------------------------------------------------------------------------------
# §3 Single models
# ----------------------------------------------------------------------------------------------------
def golden_facts(single_table: pd.DataFrame) -> list[dict]:
    """Cleanlab's model against spec §5.2's golden values, per loss it was decomposed under: [{"loss", "ours" (mean
    T*, A*, E*, r_s(A*, E*)), "golden", "close" (T*, A*, E* within 1e-3 of the golden ones)}]. single_table: index
    (loss, model), `ex.single_model_rows` columns."""
    out = []
    for loss, golden in GOLDEN.items():
        if (loss, CLEANLAB) in single_table.index:
            row = single_table.loc[(loss, CLEANLAB)]
            ours = (row["mean T*"], row["mean A*"], row["mean E*"], row["r_s(A*,E*)"])
            out.append({"loss": loss, "ours": ours, "golden": golden,
                        "close": all(abs(a - b) <= 1e-3 for a, b in zip(ours[:3], golden[:3]))})
    return out


def _resnet_sentence(config: ex.RegretConfig, single_table: pd.DataFrame, evals: dict) -> str:
    resnets = [m for m in single_table.xs("ce").index if m.startswith("ResNet")]
    if not resnets:
        return ""
    regret_of = {m: single_table.loc[("ce", m), "mean E*"] for m in resnets}
    ratios = (v / single_table.loc[("ce", CLEANLAB), "mean E*"] for v in regret_of.values())
    ours = (evals[(m, "ce")]["metrics"]["mean_E*"] for m in config.methods)
    return (f" The pretrained ResNets on this copy are "
            f"{seq(pct(single_table.loc[('ce', m), 'accuracy'], 1) for m in resnets)}"
            f" accurate ({', '.join(resnets)}); their mean CE regret is {span(regret_of.values())} nats, "
            f"{span(ratios, fmt=sig)} times the "
            f"cross-validated model's, against {span(ours)} for "
            f"this run's {'heads' if config.backbone == 'frozen' else 'networks'}.")


def single_text(config: ex.RegretConfig, single_table: pd.DataFrame, evals: dict, n_rows: int) -> str:
    """The single models' reading: cleanlab's model against the golden values (`golden_facts`), the pretrained
    ResNets' regret against the run's models (evals: {(method, loss): `ex.evaluate`}), F3 for every model."""
    golden_text = [f"{LOSS_NAMES[g['loss']]}: {seq(g['ours'][:3], 4)}, r_s(A\\*, E\\*) = {g['ours'][3]:.3f} "
                   f"({'the golden values' if g['close'] else 'golden: ' + seq(g['golden'][:3], 4)})"
                   for g in golden_facts(single_table)]
    f3_text = ""
    if "zero_one" in single_table.index.get_level_values(0):
        f3_text = (f", and the CE-to-0/1 drop of r_s(A\\*, E\\*) (F3) "
                   f"{'holds' if f3_holds(single_table) else 'does not hold'} for every "
                   f"single model ({span(single_table.xs('ce')['r_s(A*,E*)'])} → "
                   f"{span(single_table.xs('zero_one')['r_s(A*,E*)'])})")
    resnet_text = _resnet_sentence(config, single_table, evals)
    return f"""
**Reading** ({n_rows:,} CIFAR-10H rows; the golden values are for all 10,000). Cleanlab's
cross-validated q: {"; ".join(golden_text)}.{resnet_text} A\\* is the same for every model (it depends on p\\*
only){f3_text}.
"""


# ----------------------------------------------------------------------------------------------------
# §4 The proxy tasks
# ----------------------------------------------------------------------------------------------------
def proxy_facts(ranks: pd.DataFrame, al: dict) -> dict:
    """Of the ranks by task (index method name; columns PROXY_NAMES' keys present, 1 = best) and the AL results
    ({method or "random": {"nauc"}}): {"first" ({task: the method ranked first}), "verdict" (whether the proxies
    pick regret's best), "nauc" ({method name: NAUC}), "evidential_catastrophic" (Evidential's NAUC below half the
    others' mean; None without Evidential and another method)}."""
    first = {PROXY_NAMES[c]: ranks[c].idxmin() for c in PROXY_NAMES if c in ranks.columns}
    proxies_first = {v for k, v in first.items() if k != "CE regret"}
    if len(set(first.values())) == 1:
        verdict = "the proxies and regret pick the same method"
    elif first.get("CE regret") not in proxies_first:
        verdict = "no proxy picks the method that regret picks: the proxies and regret disagree"
    else:
        verdict = "one proxy agrees with regret on the best method, the others do not"
    nauc = {ex.PAPER_METHOD_NAMES[m]: r["nauc"] for m, r in al.items() if m != "random"}
    catastrophic = None
    if "Evidential" in nauc and len(nauc) > 1:
        catastrophic = bool(nauc["Evidential"] < np.mean([v for m, v in nauc.items() if m != "Evidential"]) / 2)
    return {"first": first, "verdict": verdict, "nauc": nauc, "evidential_catastrophic": catastrophic}


def proxy_text(config: ex.RegretConfig, ranks: pd.DataFrame, paper_ranks: pd.DataFrame, al: dict) -> str:
    """The proxy tasks' reading: each method's rank per task beside the paper's, who is first, the NAUCs."""
    rank_rows = [{"method": m, **{PROXY_NAMES[c]: f"{int(ranks.loc[m, c])} ({int(paper_ranks.loc[m, f'paper {c}'])})"
                                  for c in PROXY_NAMES if c in ranks.columns}} for m in ranks.index]
    f = proxy_facts(ranks, al)
    first, nauc = f["first"], f["nauc"]
    catastrophic = ("" if f["evidential_catastrophic"] is None else
                    f"; the paper's catastrophic evidential NAUC ({PAPER_EVIDENTIAL_NAUC}) is "
                    f"{'reproduced' if f['evidential_catastrophic'] else 'not reproduced'}")
    return f"""
**Reading** (`{config.preset}` preset; AuROC over {config.n_ood:,} + {config.n_ood:,} images per set, AL on a
{config.al_pool:,}-image pool). Rank of each method by each task, 1 = best (the paper's rank in brackets):

{md_table(rank_rows)}

Best by near-OOD AuROC: {first.get("near-OOD", "n/a")}; by far-OOD: {first.get("far-OOD", "n/a")}; by active learning:
{first.get("AL", "n/a")}; by CE regret: {first.get("CE regret", "n/a")}. So {f["verdict"]}. The NAUCs lie within
{max(nauc.values()) - min(nauc.values()):.3f} of each other ({"; ".join(f"{m} {v:.3f}" for m, v in nauc.items())};
random acquisition {al["random"]["nauc"]:.3f}){catastrophic}.
"""


# ----------------------------------------------------------------------------------------------------
# §5 synth_age
# ----------------------------------------------------------------------------------------------------
def synth_text(config: ex.RegretConfig, synth_table: pd.DataFrame, appa_table: pd.DataFrame) -> str:
    """synth_age's squared-loss reading beside the paper's APPA-REAL rows (tables indexed (loss, method name))."""
    if "squared" not in synth_table.index.get_level_values(0):
        return skipped("The synth_age reading", "it reads the squared-loss rows")
    squared, appa_squared = synth_table.xs("squared"), appa_table.xs("squared")  # ours, the paper's rows
    appa = appa_squared["AuReC"]
    evidential_rs = squared.loc["Evidential", "r_s(Â,Ê)"] if "Evidential" in squared.index else None
    shared = ("" if evidential_rs is None or evidential_rs < 0.5 else
              " It is high because Ê_sqr = Var_p̄/(α₀+1) and Â_sqr = Var_p̄·α₀/(α₀+1) share the "
              "factor Var_p̄ (§3.2).")
    evidential = ("" if evidential_rs is None else f"The evidential r_s(Â, Ê) is {evidential_rs:.3f} (APPA-REAL: "
                  f"{appa_squared.loc['Evidential', 'r_s(Â,Ê)']:g}).")
    return f"""
**Reading** (`{config.preset}` preset, squared loss). Mean E\\*_sqr per method:
{"; ".join(f"{m} {v:.2f}" for m, v in squared["mean E*"].items())} years²; AuReC
{"; ".join(f"{m} {v:.2f}" for m, v in squared["AuReC"].items())} (APPA-REAL, a different data set:
{"; ".join(f"{m} {v:.1f}" for m, v in appa.items())}). By squared AuReC the methods rank
{" < ".join(order(squared["AuReC"]))}; APPA-REAL ranks them {" < ".join(order(appa))}.
{evidential}{shared} r_s(A\\*, E\\*) is
{span(squared["r_s(A*,E*)"])} (APPA-REAL: {span(appa_squared["r_s(A*,E*)"])}). P-gaps in natural units are in
years² / years; the `ref_range` scaling gives {span(synth_table["P-gap (ref_range)"])}, on the scale of the paper's
{span(appa_table["P-gap"])} (B5).
"""


# ----------------------------------------------------------------------------------------------------
# Closing note: which of the paper's claims this run shows
# ----------------------------------------------------------------------------------------------------
def _table_claims(config: ex.RegretConfig, theorem: pd.DataFrame, table: pd.DataFrame) -> list[tuple[str, bool]]:
    if "ce" not in config.losses:
        return []
    ce_theorem = theorem[theorem["loss"] == "ce"]
    ce = table.xs("ce")
    return [("the theorem: λ ∈ [½, 1] selectors dominate every other linear combination, exactly under CE",
             bool(ce_theorem[ce_theorem["in [1/2, 1]"]]["on the joint front"].min() == 1
                  and ce_theorem["IGD+ of S* to it"].max() == 0)),
            ("Evidential best by CE AuReC, ex-AuReC and P-gap (F1, F2)",
             all(ce[c].idxmin() == "Evidential" for c in LOWER_BETTER)),
            ("the paper's CE order of the four methods by AuReC", order(ce["AuReC"]) == order(ce["paper AuReC"])),
            ("AuReCs within a factor of 2 of the paper's (CE)", bool((ce["AuReC"] / ce["paper AuReC"]).max() < 2)),
            ("Evidential's r_s(Â, Ê) near 1 (the paper's 0.999, CE)", bool(ce.loc["Evidential", "r_s(Â,Ê)"] > 0.99))]


def claim_rows(config: ex.RegretConfig, theorem: pd.DataFrame, table: pd.DataFrame, ranks: pd.DataFrame,
               sandbox_rows: list[dict], whole_table: pd.DataFrame) -> list[tuple[str, bool]]:
    """(the paper's claim as notebook 03 checks it, whether this run shows it), from the theorem check, the
    CIFAR-10H table, the proxy ranks (1 = best), the sandbox and the whole networks' table."""
    out = _table_claims(config, theorem, table)
    if {"ce", "zero_one"} <= set(config.losses):
        out.append(("F3: r_s(A\\*, E\\*) falls from CE to 0/1 for every method", f3_holds(table)))
    sandbox = sandbox_facts(sandbox_rows)
    out += [("Evidential last at active learning", ranks["AL NAUC"].idxmax() == "Evidential"),
            ("Evidential worst at far-OOD detection", ranks["far-OOD AuROC"].idxmax() == "Evidential"),
            ("DDU's rank reversal: best at near-OOD detection, worst at CE regret",
             ranks["near-OOD AuROC"].idxmin() == "DDU" and ranks["CE AuReC"].idxmax() == "DDU"),
            ("the sandbox: OOD- and AL-optimal selectors leave more regret than the regret-optimal one",
             sandbox["optimal_best"])]
    if not whole_table.empty and "ce" in config.losses:
        whole_ce = whole_table.xs("ce")["AuReC (whole)"]
        out += [("whole networks: the ensemble ahead of MC-Dropout (CE AuReC)",
                 whole_ce["Deep Ensemble"] < whole_ce["MC-Dropout"]),
                ("whole networks: Evidential best at CE regret", whole_ce.idxmin() == "Evidential")]
    return out


def closing_text(checked: list[tuple[str, bool]], preset: str) -> str:
    """The closing note's two bullets: the claims `claim_rows` found shown, and those not shown."""
    return f"""
- **Shown by this run** (`{preset}` preset):
  {"; ".join(c for c, ok in checked if ok) or "none of the claims below"}.
- **Not shown by this run:** {"; ".join(c for c, ok in checked if not ok) or "none"}.
"""
