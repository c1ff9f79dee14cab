"""Notebook 03's readings: the facts its reading cells state, computed from the run's tables.

Each `*_facts` function returns what a sentence says about the run (values, comparisons, the word "above" or
"below", who is best), from the run's tables; each `*_text` function renders the Markdown of one reading cell from
those facts (a reading cell is one call and a `say`). The sentences themselves are the sections of
docs/results/templates/readings-03.md: `TEXT(section, **facts)` (`lib.templates.Readings`) renders one with the facts
given, this module's UPPER_CASE names and the paper's numbers (`lib.regret.paper`, `{{ paper.NAME }}`). The facts are
unit-tested on small hand-made tables (tests/test_regret_readings.py); the notebook's tests check the rendered text
against the recorded results.

Tables are the notebook's pandas frames: `table` (index (loss, method name), our `paper.COLUMNS`, "accuracy" and
"paper <column>"), `whole_table` (the same for the whole networks, `lib.regret.experiment.whole_rows`), and so on;
each function names what it reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from lib.reading import compare
from lib.regret import experiment as ex
from lib.regret import paper
from lib.regret.density import ALL
from lib.regret.experiment import NUM_CLASSES, RECIPE_LABEL_SMOOTHING
from lib.regret.theorem_lp import PROBLEMS
from lib.templates import Readings

# the sentences: docs/results/templates/readings-03.md
TEXT = Readings("03", __name__, also={"NUM_CLASSES": NUM_CLASSES, "PROBLEMS": PROBLEMS,
                                     "RECIPE_LABEL_SMOOTHING": RECIPE_LABEL_SMOOTHING})

LOSS_NAMES = ex.LOSS_NAMES
LOWER_BETTER = ("AuReC", "ex-AuReC", "P-gap")  # the paper's columns where lower is better
OPTIMAL_SELECTOR = "regret-optimal E\\* (λ=1)"  # the sandbox's regret-optimal selector, Markdown-escaped
CLEANLAB = "cleanlab cross-validated q"
PROXY_NAMES = {"near-OOD AuROC": "near-OOD", "far-OOD AuROC": "far-OOD", "AL NAUC": "AL", "CE AuReC": "CE regret"}
# numbers the notebook's text states whose digits a constant of this package shares, each a different fact
OTHER_FACTS = {
    "0.1": "the paper's MC-Dropout rate p = 0.1 (spec §2.3) in the notebook's table of presets; the code's 0.1 is "
           "the `paper` preset's SGD learning rate (experiment.PRESETS)",
    "0.5": "the theorem check's λ grid starts at −0.5 (notebook 03, section 2); the code's 0.5 is the `smoke` "
           "preset's LP budget mix (experiment.PRESETS)",
    "0.58": "a record of seed 100 of the CPU-sized recipe (the other methods' far-OOD AuROC, lower end); the "
            "code's 0.580 is the paper's APPA-REAL absolute-loss r_s(Â,Ê) of the Deep Ensemble (paper.TABLE)",
    "0.96": "a record of seed 100 of the CPU-sized recipe (the other methods' far-OOD AuROC, upper end); the "
            "code's 0.960 is the paper's AL NAUC of the Deep Ensemble (paper.PROXY)",
}


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
    return TEXT("sandbox", config=config, f=sandbox_facts(sandbox_rows))


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


def theorem_text(theorem: pd.DataFrame, cv: dict) -> str:
    """cv: {"ce", "zero_one": `regret.decompose` of cleanlab's model ("A", "E": (N,) float)}."""
    return TEXT("theorem", losses={loss: theorem_facts(theorem, loss) for loss in cv}, rows=len(cv["zero_one"]["E"]),
                e_zero=float(np.mean(cv["zero_one"]["E"] == 0)), a_zero=float(np.mean(cv["zero_one"]["A"] == 0)))


def lp_text(config: ex.RegretConfig, lp_facts: dict) -> str:
    """lp_facts: {loss: `theorem_lp.lp_summary`}."""
    return TEXT("lp", config=config, lp_facts=lp_facts)


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
    heads = table.sort_index(level=0, key=lambda level: level.map(list(config.losses).index), sort_remaining=False)
    rows = best_marked_rows(heads, tuple(paper.COLUMNS),
                            lambda loss, method, c: table.loc[(loss, method), f"paper {c}"])
    return TEXT("table", config=config, frozen=config.backbone == "frozen", n_train=len(cifar["train_labels"]),
                n_rows=len(cifar["p_true"]), accuracy=table["accuracy"], test_accuracy=test_accuracy, rows=rows)


def table_claims_facts(table: pd.DataFrame, loss: str) -> dict:
    """Of the CIFAR-10H table for one loss: {"our_best", "paper_best" (the method lowest by each LOWER_BETTER
    column), "same_best", "order", "paper_order" (by AuReC, lowest first), "lowest_rs", "paper_lowest_rs" (the
    method with the lowest r_s(A*, E*)), "lowest_rs_value", "paper_lowest_rs_value" (that r_s), "ratio" (our AuReC /
    the paper's), "oracle", "paper_oracle" (AuReC − ex-AuReC)}."""
    ours = table.xs(loss)
    our_best = [ours[c].idxmin() for c in LOWER_BETTER]
    paper_best = [ours[f"paper {c}"].idxmin() for c in LOWER_BETTER]
    return {"our_best": our_best, "paper_best": paper_best, "same_best": our_best == paper_best,
            "order": order(ours["AuReC"]), "paper_order": order(ours["paper AuReC"]),
            "lowest_rs": ours["r_s(A*,E*)"].idxmin(), "paper_lowest_rs": ours["paper r_s(A*,E*)"].idxmin(),
            "lowest_rs_value": ours["r_s(A*,E*)"].min(), "paper_lowest_rs_value": ours["paper r_s(A*,E*)"].min(),
            "ratio": ours["AuReC"] / ours["paper AuReC"],
            "oracle": ours["AuReC"] - ours["ex-AuReC"], "paper_oracle": ours["paper AuReC"] - ours["paper ex-AuReC"]}


def f3_holds(table: pd.DataFrame, column: str = "r_s(A*,E*)") -> bool:
    """F3: `column` falls from CE to 0/1 loss for every row of `table` (index (loss, name))."""
    return bool((table.xs("ce")[column] - table.xs("zero_one")[column] > 0).all())


def table_claims_text(config: ex.RegretConfig, table: pd.DataFrame, evals: dict, cv: dict, n_rows: int) -> str:
    """The bullets under the CIFAR-10H table: scale, best method, F3, P-gap. evals: {(method, loss): `ex.evaluate`};
    cv: {loss: cleanlab's decomposition}; n_rows: the CIFAR-10H rows evaluated."""
    losses = {loss: {"f": table_claims_facts(table, loss),
                     "mean_regret": [evals[(m, loss)]["metrics"]["mean_E*"] for m in config.methods],
                     "cv_regret": cv[loss]["E"][: n_rows].mean()} for loss in config.losses}
    both = {"ce", "zero_one"} <= set(config.losses)
    appa = [v["P-gap"] for loss in ("squared", "absolute") for v in ex.paper_rows("APPA-REAL", loss).values()]
    pgaps = [evals[(m, "zero_one")]["metrics"]["P-gap_ref_range"] for m in config.methods] if both else []
    return TEXT("table-claims", losses=losses, both=both, table=table, f3=both and f3_holds(table), appa=appa,
                pgaps=pgaps)


def density_facts(tau_rows: list[dict], loss: str) -> dict:
    """Of `density.tau_summary` rows for one loss: {"low" (the smallest k), "tau", "tau_low", "tau_high" (its
    median τ and interval)}."""
    by_k = {r["k"]: r for r in tau_rows if r["loss"] == loss}
    low = min(by_k)
    return {"low": low, "tau": by_k[low]["median_tau"], "tau_low": by_k[low]["low"], "tau_high": by_k[low]["high"]}


def density_text(config: ex.RegretConfig, tau_rows: list[dict], stable_k: dict, mean_E: dict, n_rows: int) -> str:
    """The label-density reading; stable_k: {loss: `density.stable_from`}; mean_E: {(loss, k): mean E*}."""
    losses = {}
    for loss in config.losses:
        f = density_facts(tau_rows, loss)
        losses[loss] = {"f": f, "stable": stable_k[loss], "mean_low": mean_E[(loss, f["low"])],
                        "mean_all": mean_E[(loss, ALL)]}
    return TEXT("density", config=config, losses=losses, n_rows=n_rows)


# ----------------------------------------------------------------------------------------------------
# §3 Whole networks beside the heads
# ----------------------------------------------------------------------------------------------------
def whole_ce_rows(whole_table: pd.DataFrame) -> list[dict]:
    """The whole networks' CE table as Markdown rows, a row per quantity and a column per method: AuReC (whole ·
    head · paper, the lowest whole value in bold), r_s(Â, Ê) (whole · paper), r_s(A*, E*) (whole)."""
    ce_whole, ce_best = whole_table.xs("ce"), whole_table.xs("ce")["AuReC (whole)"].idxmin()
    rows = []
    for label, cells in (
            ("AuReC, whole · head · paper", lambda m, r: f"{'**' * (m == ce_best)}{r['AuReC (whole)']:.3f}"
             f"{'**' * (m == ce_best)} · {r['AuReC (head)']:.3f} · {paper_text(r['paper AuReC'])}"),
            ("r_s(Â, Ê), whole · paper",
             lambda m, r: f"{r['r_s(Â,Ê) (whole)']:.3f} · {paper_text(r['paper r_s(Â,Ê)'])}"),
            ("r_s(A\\*, E\\*), whole", lambda m, r: f"{r['r_s(A*,E*) (whole)']:.3f}")):
        rows.append({"CE": label, **{m: cells(m, r) for m, r in ce_whole.iterrows()}})
    return rows


def whole_text(config: ex.RegretConfig, whole: dict, whole_table: pd.DataFrame, table: pd.DataFrame,
               n_rows: int) -> str:
    """What the whole networks are and how accurate, with the CE table (whole · head · paper). whole:
    `ex.whole_predictions`; whole_table: `ex.whole_rows` as a frame; table: the heads' CIFAR-10H table."""
    if whole_table.empty:
        return TEXT("whole-skipped")
    meta = next(iter(whole.values()))["meta"]
    return TEXT("whole", meta=meta, settings=meta["settings"], n_rows=n_rows, table=table,
                whole_accuracy={paper.METHOD_NAMES[m]: w["meta"]["test_accuracy"] for m, w in whole.items()},
                rows=whole_ce_rows(whole_table) if "ce" in config.losses else [])


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
    paper_far = {paper.METHOD_NAMES[m]: v[1] for m, v in paper.PROXY.items()}
    paper_worst = min(paper_far, key=paper_far.get)
    return {"noise": noise, "far": far, "far_mean": far_mean, "far_worst": min(far_mean, key=far_mean.get),
            "paper_worst": paper_worst, "paper_worst_value": paper_far[paper_worst]}


def whole_claims_text(config: ex.RegretConfig, whole_table: pd.DataFrame, table: pd.DataFrame,
                      whole_ood: dict) -> str | None:
    """The bullets on the whole networks (order, ensemble against MC-Dropout, 0/1, scale, OOD); None without the
    whole networks under CE."""
    if whole_table.empty or "ce" not in config.losses:
        return None
    ce_whole = whole_table.xs("ce")
    return TEXT("whole-claims", config=config, whole_table=whole_table, ce_whole=ce_whole, table=table,
                orders={c: order(ce_whole[c]) for c in ("AuReC (whole)", "paper AuReC", "AuReC (head)")},
                e=ensemble_vs_dropout(ce_whole), ood=far_ood_facts(whole_ood), whole_ood=whole_ood)


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


def recipe_intro_text() -> str:
    """What the recipe comparison compares: the recipe's two choices that change the regret."""
    return TEXT("recipe-intro")


def recipe_text(recipe_table: pd.DataFrame) -> str:
    """The reading of the recipe comparison (`recipe_facts`), or why it was skipped."""
    if recipe_table.empty:
        return TEXT("recipe-skipped")
    f = recipe_facts(recipe_table)
    return TEXT("recipe", f=f, u=f["unchanged"], c=f["changed"], plain=f["plain"], worst=f["most_harmed"],
                order_unchanged=order(f["unchanged"]["AuReC"]), order_changed=order(f["changed"]["AuReC"]))


def temperature_facts(temperature_rows: list[dict]) -> dict:
    """Of `ex.temperature_rows`: {"by_T" (a frame indexed by T, ascending), "rising" (r_s(A*, E*) rises with the
    confidence, i.e. falls as T grows), "calibrated" (the T of the lowest ECE), "as_trained" (the T = 1 row or
    None)}."""
    by_T = pd.DataFrame(temperature_rows).set_index("T").sort_index()
    return {"by_T": by_T, "rising": bool(by_T["r_s(A*,E*)"].is_monotonic_decreasing),
            "calibrated": by_T["ECE"].idxmin(), "as_trained": by_T.loc[1.0] if 1.0 in by_T.index else None}


def temperature_intro_text() -> str:
    """Why r_s(A*, E*) stays low, beside the paper's F3 value under CE: the temperature study's introduction."""
    return TEXT("temperature-intro")


def temperature_text(config: ex.RegretConfig, temperature_rows: list[dict], whole_table: pd.DataFrame,
                     table: pd.DataFrame) -> str:
    """The reading of the temperature study (`temperature_facts`), or why it was skipped."""
    if not temperature_rows:
        return TEXT("temperature-skipped")
    f3 = {"ce", "zero_one"} <= set(config.losses) and not whole_table.empty
    return TEXT("temperature", f=temperature_facts(temperature_rows), ce="ce" in config.losses,
                whole_table=whole_table, table=table, f3=f3,
                f3_holds=f3 and f3_holds(whole_table, "r_s(A*,E*) (whole)"))


def temperature_after_text() -> str:
    """What the temperature study says about F3, beside spec §5.2's golden value of cleanlab's model."""
    return TEXT("temperature-after")


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
        return TEXT("components-skipped")
    f = components_facts(component_rows)
    return TEXT("components", f=f, parts=f["parts"], better_total=f["better_total"])


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


def width_text(width: dict, width_rows: list[dict], width_trend: list[dict], reference_accuracy: float) -> str:
    """The width study's bullets (`width_facts`, `trend_facts`), or why it was skipped. width: `ex.width_study`."""
    if len(width) < 2:
        return TEXT("width-skipped")
    f = width_facts(width_rows, list(width))
    return TEXT("width", f=f, by=f["by"], first=f["first"], last=f["last"], common=f["common"],
                trends=[(trend, trend_facts(trend, reference_accuracy)) for trend in width_trend],
                reference_accuracy=reference_accuracy)


# ----------------------------------------------------------------------------------------------------
# §3 Single models
# ----------------------------------------------------------------------------------------------------
def golden_facts(single_table: pd.DataFrame) -> list[dict]:
    """Cleanlab's model against spec §5.2's golden values (`paper.GOLDEN`), per loss it was decomposed under:
    [{"loss", "ours" (mean T*, A*, E*, r_s(A*, E*)), "golden", "close" (T*, A*, E* within 1e-3 of the golden
    ones)}]. single_table: index (loss, model), `ex.single_model_rows` columns."""
    out = []
    for loss, golden in paper.GOLDEN.items():
        if (loss, CLEANLAB) in single_table.index:
            row = single_table.loc[(loss, CLEANLAB)]
            ours = (row["mean T*"], row["mean A*"], row["mean E*"], row["r_s(A*,E*)"])
            out.append({"loss": loss, "ours": ours, "golden": golden,
                        "close": all(abs(a - b) <= 1e-3 for a, b in zip(ours[:3], golden[:3]))})
    return out


def single_intro_text() -> str:
    """What the single models' table decomposes, with spec §5.2's golden values."""
    return TEXT("single-intro")


def single_text(config: ex.RegretConfig, single_table: pd.DataFrame, evals: dict, n_rows: int) -> str:
    """The single models' reading: cleanlab's model against the golden values (`golden_facts`), the pretrained
    ResNets' regret against the run's models (evals: {(method, loss): `ex.evaluate`}), F3 for every model."""
    ce = single_table.xs("ce")
    resnets = [m for m in ce.index if m.startswith("ResNet")]
    zero_one = "zero_one" in single_table.index.get_level_values(0)
    return TEXT("single", config=config, n_rows=n_rows, golden=golden_facts(single_table), resnets=resnets,
                single_table=single_table, regret_of=[ce.loc[m, "mean E*"] for m in resnets],
                cv_regret=ce.loc[CLEANLAB, "mean E*"] if resnets else None,
                ours=[evals[(m, "ce")]["metrics"]["mean_E*"] for m in config.methods], zero_one=zero_one,
                f3=zero_one and f3_holds(single_table))


# ----------------------------------------------------------------------------------------------------
# §4 The proxy tasks
# ----------------------------------------------------------------------------------------------------
def proxy_facts(ranks: pd.DataFrame, al: dict) -> dict:
    """Of the ranks by task (index method name; columns PROXY_NAMES' keys present, 1 = best) and the AL results
    ({method or "random": {"nauc"}}): {"first" ({task: the method ranked first}), "verdict" (whether the proxies
    pick regret's best: "same" when every task picks one method, "none" when no proxy picks regret's, "one" when
    some do), "nauc" ({method name: NAUC}), "evidential_catastrophic" (Evidential's NAUC below half the others'
    mean; None without Evidential and another method)}."""
    first = {PROXY_NAMES[c]: ranks[c].idxmin() for c in PROXY_NAMES if c in ranks.columns}
    proxies_first = {v for k, v in first.items() if k != "CE regret"}
    if len(set(first.values())) == 1:
        verdict = "same"
    elif first.get("CE regret") not in proxies_first:
        verdict = "none"
    else:
        verdict = "one"
    nauc = {paper.METHOD_NAMES[m]: r["nauc"] for m, r in al.items() if m != "random"}
    catastrophic = None
    if "Evidential" in nauc and len(nauc) > 1:
        catastrophic = bool(nauc["Evidential"] < np.mean([v for m, v in nauc.items() if m != "Evidential"]) / 2)
    return {"first": first, "verdict": verdict, "nauc": nauc, "evidential_catastrophic": catastrophic}


def proxy_rank_rows(ranks: pd.DataFrame, paper_ranks: pd.DataFrame) -> list[dict]:
    """Markdown rows: each method's rank by each task, the paper's in brackets ("2 (1)")."""
    return [{"method": m, **{PROXY_NAMES[c]: f"{int(ranks.loc[m, c])} ({int(paper_ranks.loc[m, f'paper {c}'])})"
                             for c in PROXY_NAMES if c in ranks.columns}} for m in ranks.index]


def proxy_text(config: ex.RegretConfig, ranks: pd.DataFrame, paper_ranks: pd.DataFrame, al: dict) -> str:
    """The proxy tasks' reading: each method's rank per task beside the paper's, who is first, the NAUCs."""
    f = proxy_facts(ranks, al)
    return TEXT("proxy", config=config, rank_rows=proxy_rank_rows(ranks, paper_ranks), f=f, first=f["first"],
                nauc=f["nauc"], al=al)


# ----------------------------------------------------------------------------------------------------
# §5 synth_age
# ----------------------------------------------------------------------------------------------------
def synth_text(config: ex.RegretConfig, synth_table: pd.DataFrame, appa_table: pd.DataFrame) -> str:
    """synth_age's squared-loss reading beside the paper's APPA-REAL rows (tables indexed (loss, method name))."""
    if "squared" not in synth_table.index.get_level_values(0):
        return TEXT("synth-skipped")
    squared, appa_squared = synth_table.xs("squared"), appa_table.xs("squared")  # ours, the paper's rows
    evidential_rs = squared.loc["Evidential", "r_s(Â,Ê)"] if "Evidential" in squared.index else None
    return TEXT("synth", config=config, squared=squared, appa_squared=appa_squared, appa=appa_squared["AuReC"],
                synth_table=synth_table, appa_table=appa_table, evidential_rs=evidential_rs,
                shared=evidential_rs is not None and evidential_rs >= 0.5,
                order_ours=order(squared["AuReC"]), order_appa=order(appa_squared["AuReC"]))


# ----------------------------------------------------------------------------------------------------
# Closing note: which of the paper's claims this run shows
# ----------------------------------------------------------------------------------------------------
def _table_claims(config: ex.RegretConfig, theorem: pd.DataFrame, table: pd.DataFrame) -> list[tuple[str, bool]]:
    if "ce" not in config.losses:
        return []
    ce_theorem = theorem[theorem["loss"] == "ce"]
    ce = table.xs("ce")
    return [(TEXT("claim-theorem"), bool(ce_theorem[ce_theorem["in [1/2, 1]"]]["on the joint front"].min() == 1
                                         and ce_theorem["IGD+ of S* to it"].max() == 0)),
            (TEXT("claim-evidential-best"), all(ce[c].idxmin() == "Evidential" for c in LOWER_BETTER)),
            (TEXT("claim-ce-order"), order(ce["AuReC"]) == order(ce["paper AuReC"])),
            (TEXT("claim-scale"), bool((ce["AuReC"] / ce["paper AuReC"]).max() < 2)),
            (TEXT("claim-evidential-rs"), bool(ce.loc["Evidential", "r_s(Â,Ê)"] > 0.99))]


def claim_rows(config: ex.RegretConfig, theorem: pd.DataFrame, table: pd.DataFrame, ranks: pd.DataFrame,
               sandbox_rows: list[dict], whole_table: pd.DataFrame) -> list[tuple[str, bool]]:
    """(the paper's claim as notebook 03 checks it, whether this run shows it), from the theorem check, the
    CIFAR-10H table, the proxy ranks (1 = best), the sandbox and the whole networks' table."""
    out = _table_claims(config, theorem, table)
    if {"ce", "zero_one"} <= set(config.losses):
        out.append((TEXT("claim-f3"), f3_holds(table)))
    sandbox = sandbox_facts(sandbox_rows)
    out += [(TEXT("claim-evidential-al"), ranks["AL NAUC"].idxmax() == "Evidential"),
            (TEXT("claim-evidential-far-ood"), ranks["far-OOD AuROC"].idxmax() == "Evidential"),
            (TEXT("claim-ddu-reversal"),
             ranks["near-OOD AuROC"].idxmin() == "DDU" and ranks["CE AuReC"].idxmax() == "DDU"),
            (TEXT("claim-sandbox"), sandbox["optimal_best"])]
    if not whole_table.empty and "ce" in config.losses:
        whole_ce = whole_table.xs("ce")["AuReC (whole)"]
        out += [(TEXT("claim-whole-ensemble"), whole_ce["Deep Ensemble"] < whole_ce["MC-Dropout"]),
                (TEXT("claim-whole-evidential"), whole_ce.idxmin() == "Evidential")]
    return out


def closing_text(checked: list[tuple[str, bool]], preset: str) -> str:
    """The closing note's two bullets: the claims `claim_rows` found shown, and those not shown."""
    return TEXT("closing", checked=checked, preset=preset)
