"""Notebook 03's findings (lib.regret.readings): the facts its reading cells state, on small hand-made tables
whose answers are known."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib.regret import experiment as ex
from lib.regret import paper
from lib.regret import readings as fd


def _frame(rows: list[dict], index: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows).set_index(index)


def test_the_sandbox_facts_compare_the_regret_optimal_selector_with_the_others():
    rows = [{"selector": "regret-optimal E* (λ=1)", "regret of accepted": 0.10},
            {"selector": "Bayes OOD p_ood/p_id", "regret of accepted": 0.30},
            {"selector": "AL: BALD", "regret of accepted": 0.20}]
    f = fd.sandbox_facts(rows)
    assert f["optimal"] == 0.10 and f["least"] == 0.20 and f["optimal_best"] is True
    assert list(f["by_selector"]) == ["regret-optimal E\\* (λ=1)", "Bayes OOD p_ood/p_id", "AL: BALD"]  # escaped
    assert list(f["others"]) == ["Bayes OOD p_ood/p_id", "AL: BALD"]
    rows[2]["regret of accepted"] = 0.10  # a tie: the optimal selector is no longer strictly best
    assert fd.sandbox_facts(rows)["optimal_best"] is False


def test_the_theorem_facts_separate_lambdas_inside_and_outside_the_interval():
    theorem = pd.DataFrame({"loss": ["ce"] * 4 + ["zero_one"] * 2,
                            "in [1/2, 1]": [True, True, False, False, True, False],
                            "on the joint front": [1.0, 1.0, 0.25, 0.0, 0.5, 0.0],
                            "IGD+ of S* to it": [0.0, 0.0, 0.0, 0.0, 0.0, 0.02]})
    assert fd.theorem_facts(theorem, "ce") == {"inside_all_on_front": True, "inside_share": 1.0,
                                               "outside_max_share": 0.25, "outside_max_igd": 0.0}
    zero_one = fd.theorem_facts(theorem, "zero_one")
    assert zero_one["inside_all_on_front"] is False and zero_one["inside_share"] == 0.5
    assert zero_one["outside_max_igd"] == 0.02


def _table() -> pd.DataFrame:
    """Two methods under CE and 0/1, with the paper's values beside (hand-made)."""
    rows = []
    for loss, ours, theirs, rs in (("ce", (0.2, 0.4), (0.1, 0.05), (0.8, 0.6)),
                                  ("zero_one", (0.03, 0.01), (0.016, 0.003), (0.3, 0.2))):
        for method, a, p, r in zip(("MC-Dropout", "Evidential"), ours, theirs, rs):
            rows.append({"loss": loss, "method": method, "accuracy": 0.8, "AuReC": a, "ex-AuReC": a / 2,
                         "P-gap": a, "r_s(Â,Ê)": 0.5, "r_s(A*,E*)": r, "paper AuReC": p, "paper ex-AuReC": p / 4,
                         "paper P-gap": p, "paper r_s(Â,Ê)": 0.9, "paper r_s(A*,E*)": r + 0.1})
    return _frame(rows, ["loss", "method"])


def test_the_table_facts_name_the_best_methods_and_the_orders():
    ce = fd.table_claims_facts(_table(), "ce")
    assert ce["our_best"] == ["MC-Dropout"] * 3 and ce["paper_best"] == ["Evidential"] * 3 and not ce["same_best"]
    assert ce["order"] == ["MC-Dropout", "Evidential"] and ce["paper_order"] == ["Evidential", "MC-Dropout"]
    assert ce["lowest_rs"] == "Evidential" == ce["paper_lowest_rs"]
    assert ce["ratio"].to_dict() == pytest.approx({"MC-Dropout": 2.0, "Evidential": 8.0})
    assert ce["oracle"].to_dict() == pytest.approx({"MC-Dropout": 0.1, "Evidential": 0.2})
    assert ce["paper_oracle"].to_dict() == pytest.approx({"MC-Dropout": 0.075, "Evidential": 0.0375})
    zero_one = fd.table_claims_facts(_table(), "zero_one")
    assert zero_one["our_best"] == zero_one["paper_best"] == ["Evidential"] * 3 and zero_one["same_best"]


def test_f3_holds_when_the_correlation_falls_for_every_row():
    table = _table()
    assert fd.f3_holds(table)  # 0.8 -> 0.3 and 0.6 -> 0.2
    table.loc[("zero_one", "Evidential"), "r_s(A*,E*)"] = 0.6  # equal: not a fall
    assert not fd.f3_holds(table)


def test_best_marked_rows_put_the_lowest_value_of_each_loss_in_bold():
    rows = fd.best_marked_rows(_table(), ("AuReC", "r_s(A*,E*)"), lambda loss, method, c: None)
    assert rows[0] == {"loss": "CE", "method": "MC-Dropout", "AuReC": "**0.200**", "r_s(A*,E*)": "0.800",
                       "paper (same order)": "– / –"}  # r_s is not lower-is-better: never bold
    assert rows[1]["AuReC"] == "0.400" and rows[3]["AuReC"] == "**0.010**" and rows[3]["loss"] == "0/1"
    assert fd.paper_text(0.0752) == "0.0752" and fd.paper_text(float("nan")) == "–"


def test_the_density_facts_take_the_fewest_annotations():
    rows = [{"loss": "ce", "k": k, "median_tau": t, "low": t - 0.1, "high": t + 0.1}
            for k, t in ((5, 0.8), (1, 0.4), (0, 1.0))] + [{"loss": "zero_one", "k": 1, "median_tau": 0.1,
                                                             "low": 0.0, "high": 0.2}]
    assert fd.density_facts(rows, "ce") == pytest.approx({"low": 0, "tau": 1.0, "tau_low": 0.9, "tau_high": 1.1})
    rows[2]["k"] = 20  # k = 0 means all annotations; without it the fewest is k = 1
    assert fd.density_facts(rows, "ce") == pytest.approx({"low": 1, "tau": 0.4, "tau_low": 0.3, "tau_high": 0.5})


def test_the_ensemble_is_ahead_of_mc_dropout_when_its_aurec_is_lower():
    ce = pd.DataFrame({"AuReC (whole)": [0.2, 0.3]}, index=["Deep Ensemble", "MC-Dropout"])
    assert fd.ensemble_vs_dropout(ce)["ahead"] is True
    ce["AuReC (whole)"] = [0.3, 0.2]
    assert fd.ensemble_vs_dropout(ce)["ahead"] is False
    assert fd.ensemble_vs_dropout(ce.drop("MC-Dropout")) is None


def test_the_far_ood_facts_name_the_worst_detector_here_and_in_the_paper():
    ood = {"DDU": {"mnist": 0.9, "uniform_noise": 0.7, "gaussian_noise": 0.6},
           "Evidential": {"mnist": 0.5, "uniform_noise": 0.3, "gaussian_noise": 0.8}}
    f = fd.far_ood_facts(ood)
    assert f["noise"] == ["gaussian_noise", "uniform_noise"] and f["far"] == ["mnist", "uniform_noise"]
    assert f["far_mean"] == pytest.approx({"DDU": 0.8, "Evidential": 0.4}) and f["far_worst"] == "Evidential"
    assert (f["paper_worst"], f["paper_worst_value"]) == ("Evidential", 0.726)  # spec §1.3's far-OOD column
    assert fd.far_ood_facts({"DDU": {"mnist": 0.9, "blur": 0.5}}) is None  # no noise set


def test_the_recipe_facts_find_underconfidence_and_the_most_harmed_method():
    rows = [{"method": m, "networks": n, "accuracy": 0.8, "mean confidence": c, "AuReC": a}
            for m, n, c, a in (("MC-Dropout", "airbench recipe", 0.6, 0.6), ("MC-Dropout", "ours", 0.8, 0.3),
                               ("Deep Ensemble", "airbench recipe", 0.7, 0.4), ("Deep Ensemble", "ours", 0.8, 0.3),
                               ("Evidential", "airbench recipe", 0.9, 0.9), ("Evidential", "ours", 0.8, 0.1))]
    f = fd.recipe_facts(_frame(rows, ["method", "networks"]))
    assert f["plain"] == ["MC-Dropout", "Deep Ensemble"]  # Evidential is not a cross-entropy network
    assert f["all_underconfident"] is True and f["most_harmed"] == "MC-Dropout"  # +0.3 against +0.1
    rows[2]["mean confidence"] = 0.85
    assert fd.recipe_facts(_frame(rows, ["method", "networks"]))["all_underconfident"] is False


def test_the_temperature_facts():
    rows = [{"T": t, "r_s(A*,E*)": r, "ECE": e, "mean E*": 0.1 * t} for t, r, e in
            ((1.0, 0.5, 0.05), (0.5, 0.7, 0.10), (1.5, 0.3, 0.02))]
    f = fd.temperature_facts(rows)
    assert list(f["by_T"].index) == [0.5, 1.0, 1.5] and f["rising"] is True  # falls as T grows
    assert f["calibrated"] == 1.5 and f["as_trained"]["mean E*"] == pytest.approx(0.1)
    rows[2]["r_s(A*,E*)"] = 0.9
    f = fd.temperature_facts(rows[1:])
    assert f["rising"] is False and f["as_trained"] is None


def test_the_component_facts():
    parts = {"DDU": {"AuReC of Ê": 0.5, "AuReC of H(q)": 0.3, "r_s(Ê,E*)": 0.2, "r_s(H(q),E*)": 0.6},
             "Deep Ensemble": {"AuReC of Ê": 0.2, "AuReC of H(q)": 0.25, "r_s(Ê,E*)": 0.7, "r_s(H(q),E*)": 0.65}}
    f = fd.components_facts(parts)
    assert f["better_total"] == ["DDU"] and f["closest"] == "Deep Ensemble"
    assert f["ddu_last"] is True and f["ddu_entropy_better"] is True
    del parts["DDU"]
    assert fd.components_facts(parts)["ddu_last"] is False


def test_the_width_facts_follow_each_method_from_the_narrowest_to_the_widest():
    rows = [{"widths": w, "method": m, "accuracy": a, "CE AuReC": c, "CE r_s(A*,E*)": 0.3}
            for w, m, a, c in (("8/16/16", "MC-Dropout", 0.70, 0.5), ("8/16/16", "DDU", 0.72, 0.4),
                               ("12/24/24", "MC-Dropout", 0.75, 0.3), ("12/24/24", "DDU", 0.74, 0.6))]
    f = fd.width_facts(rows, [(8, 16, 16), (12, 24, 24)])
    assert (f["first"], f["last"], f["common"]) == ("8/16/16", "12/24/24", ["MC-Dropout", "DDU"])
    assert f["accuracy_rises"] is True and f["all_fall"] is False  # DDU's AuReC rises
    assert f["moves"] == {"MC-Dropout": (0.5, 0.3), "DDU": (0.4, 0.6)}
    assert f["ranked"] == {"8/16/16": ["DDU", "MC-Dropout"], "12/24/24": ["MC-Dropout", "DDU"]}


def test_the_trend_facts_say_where_the_line_would_reach_zero():
    """Known answer: AuReC = 2 - 2 x accuracy reaches 0.12 at 94 % (below the paper's 0.2); a steeper line
    0.6 - 0.05 per point from 0.10 at 90 % crosses zero at 92 %."""
    gentle = {"CE AuReC at 94%": 0.12, "CE AuReC per accuracy point": -0.02, "paper CE AuReC": 0.2}
    f = fd.trend_facts(gentle, 0.94)
    assert f["direction"] == "falls" and not f["reaches_zero"] and f["versus_paper"] == "below"
    steep = {"CE AuReC at 94%": -0.1, "CE AuReC per accuracy point": -0.05, "paper CE AuReC": 0.07}
    f = fd.trend_facts(steep, 0.94)
    assert f["reaches_zero"] and f["zero_at"] == pytest.approx(0.92) and f["versus_paper"] == "below"
    rising = {"CE AuReC at 94%": 0.3, "CE AuReC per accuracy point": 0.01, "paper CE AuReC": 0.1}
    assert fd.trend_facts(rising, 0.94)["direction"] == "rises" and fd.trend_facts(rising, 0.94)["versus_paper"] == \
        "above"


def test_the_golden_facts_compare_cleanlab_with_spec_5_2():
    rows = [{"loss": loss, "model": fd.CLEANLAB, "mean T*": g[0], "mean A*": g[1], "mean E*": g[2] + d,
             "r_s(A*,E*)": g[3]} for (loss, g), d in zip(paper.GOLDEN.items(), (0.0, 0.01))]
    facts = fd.golden_facts(_frame(rows, ["loss", "model"]))
    assert [(g["loss"], g["close"]) for g in facts] == [("ce", True), ("zero_one", False)]
    assert facts[0]["ours"] == pytest.approx(paper.GOLDEN["ce"])


def _ranks(**columns: list[int]) -> pd.DataFrame:
    return pd.DataFrame(columns, index=["DDU", "Evidential", "Deep Ensemble"]).rename(
        columns=lambda c: {"near": "near-OOD AuROC", "far": "far-OOD AuROC", "al": "AL NAUC", "ce": "CE AuReC"}[c])


def test_the_proxy_facts_say_whether_the_proxies_pick_regrets_best_method():
    al = {"ddu": {"nauc": 0.8}, "evidential": {"nauc": 0.3}, "ensemble": {"nauc": 0.9}, "random": {"nauc": 0.7}}
    disagree = fd.proxy_facts(_ranks(near=[1, 3, 2], far=[1, 3, 2], al=[2, 3, 1], ce=[3, 1, 2]), al)
    assert disagree["first"] == {"near-OOD": "DDU", "far-OOD": "DDU", "AL": "Deep Ensemble", "CE regret": "Evidential"}
    assert disagree["verdict"] == "none"
    assert disagree["nauc"] == {"DDU": 0.8, "Evidential": 0.3, "Deep Ensemble": 0.9}  # random acquisition apart
    assert disagree["evidential_catastrophic"] is True  # 0.3 < (0.8 + 0.9) / 2 / 2
    same = fd.proxy_facts(_ranks(near=[2, 1, 3], far=[2, 1, 3], al=[2, 1, 3], ce=[2, 1, 3]), al)
    assert same["verdict"] == "same"
    one = fd.proxy_facts(_ranks(near=[2, 1, 3], far=[1, 3, 2], al=[1, 3, 2], ce=[2, 1, 3]), {"ddu": {"nauc": 0.8}})
    assert one["verdict"] == "one" and one["evidential_catastrophic"] is None


def test_the_closing_claims_and_their_text():
    """The closing note on a made-up run: the sandbox claim holds, the whole-network claims do not."""
    config = ex.resolve_config("smoke", losses=["ce"])
    theorem = pd.DataFrame({"loss": ["ce", "ce"], "in [1/2, 1]": [True, False], "on the joint front": [1.0, 0.0],
                            "IGD+ of S* to it": [0.0, 0.0]})
    table = _table().drop(index="zero_one", level=0)
    ranks = _ranks(near=[1, 3, 2], far=[1, 3, 2], al=[2, 3, 1], ce=[3, 1, 2])
    sandbox = [{"selector": fd.OPTIMAL_SELECTOR.replace("\\", ""), "regret of accepted": 0.1},
               {"selector": "AL: BALD", "regret of accepted": 0.2}]
    whole = pd.DataFrame({"loss": ["ce", "ce"], "method": ["Deep Ensemble", "MC-Dropout"],
                          "AuReC (whole)": [0.3, 0.2]}).set_index(["loss", "method"])
    checked = dict(fd.claim_rows(config, theorem, table, ranks, sandbox, whole))
    assert checked["the theorem: λ ∈ [½, 1] selectors dominate every other linear combination, exactly under CE"]
    assert not checked["Evidential best by CE AuReC, ex-AuReC and P-gap (F1, F2)"]  # MC-Dropout is, here
    assert checked["Evidential worst at far-OOD detection"] and checked["Evidential last at active learning"]
    assert checked["DDU's rank reversal: best at near-OOD detection, worst at CE regret"]
    assert checked["the sandbox: OOD- and AL-optimal selectors leave more regret than the regret-optimal one"]
    assert not checked["whole networks: the ensemble ahead of MC-Dropout (CE AuReC)"]
    assert not any("F3" in claim for claim in checked)  # one loss: F3 is not checked
    assert fd.closing_text([("a", True), ("b", False), ("c", True)], "smoke") == (
        "- **Shown by this run** (`smoke` preset):\n  a; c.\n- **Not shown by this run:** b.")


def test_a_skipped_section_says_why():
    assert fd.recipe_text(pd.DataFrame()).startswith("*The recipe comparison: not measured in this run")
    assert fd.components_text({}).startswith("*The comparison of Ê with H(q): not measured")
    assert "two or more widths" in fd.width_text({(8, 16, 16): {}}, [], [], 0.94)
    np.testing.assert_equal(fd.order(pd.Series({"a": 2.0, "b": 1.0})), ["b", "a"])
