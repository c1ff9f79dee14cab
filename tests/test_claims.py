"""The claims ledger (`lib.claims`) and notebook 04's claims (`lib.irs.claims`): verdicts decided by their rules on
hand-made results whose answers are known."""

from __future__ import annotations

import copy
import importlib
import itertools
import math
from pathlib import Path

import pytest

from lib import claims
from lib.claims import FAILS, HOLDS, OFFLINE, UNDECIDED, Claim, NotRecorded, Verdict
from lib.irs import claims as irs_claims
from lib.regret import claims as regret_claims


def test_a_verdict_is_one_of_four_and_says_why():
    with pytest.raises(ValueError, match="not one of"):
        Verdict("mostly holds", "0.5", "because")
    with pytest.raises(ValueError, match="says why"):
        Verdict(HOLDS, "0.5", "")
    with pytest.raises(ValueError, match="either"):
        Claim("x", "§1", "words", "0.1", "what")  # neither a rule nor what is missing
    with pytest.raises(ValueError, match="either"):
        Claim("x", "§1", "words", "0.1", "what", decide=lambda r: None, missing="a GPU")


def test_a_claim_the_run_did_not_measure_is_undecided_and_one_not_testable_offline_names_what_is_missing():
    measured = Claim("m", "§1", "w", "p", "q", decide=lambda r: Verdict(HOLDS, f"{claims.need(r, 'a', 'b')}", "rule"))
    offline = Claim("o", "§2", "w", "p", "q", missing="ImageNet")
    judged = dict((c.id, v) for c, v in claims.judge([measured, offline], {"a": {"c": 1}}))
    assert judged["m"].verdict == UNDECIDED and "a/b" in judged["m"].why
    assert judged["o"] == Verdict(OFFLINE, "—", "ImageNet")
    assert claims.judge([measured], {"a": {"b": 0.5}})[0][1].verdict == HOLDS
    assert claims.judge([measured], {"a": {"b": {}}})[0][1].verdict == UNDECIDED  # an empty record: stage skipped


def test_the_shared_rules_give_known_answers():
    assert claims.side_of(0.1, 0.3) == HOLDS and claims.side_of(-0.3, -0.1) == FAILS
    assert claims.side_of(-0.1, 0.3) == UNDECIDED and claims.side_of(0.9, 1.2, above=1.0) == UNDECIDED
    lower, upper = claims.wilson(90, 100)
    assert lower == pytest.approx(0.8256, abs=1e-4) and upper == pytest.approx(0.9448, abs=1e-4)
    assert claims.wilson(0, 10)[0] == 0.0 and claims.wilson(10, 10)[1] == 1.0


def _results(seeds: int = 3) -> dict:
    """Notebook 04's recorded results, as much of them as the ledger reads, with known answers."""
    def compare(mean, lower, upper, n, verdict):
        return {"per seed": "; ".join(["0.3"] * n), "mean": mean, "lower": lower, "upper": upper, "seeds": n,
                "training sd": 0.01, "verdict": verdict}
    key = "resnet56 / {} − unconditional / {}"
    return {
        "extractors": ["pixels", "resnet56"], "gen_headline": {"extractor": "resnet56"}, "n_train": 20000,
        "gap_n": 10000, "sim_reps": 1000, "alpha_e": 0.05,
        "sim_coverage": {"s0.3/n0.05": 0.905, "s0.9/n1": 0.895},
        "sim_bias": {"s0.3/n0.05": 0.02, "s0.3/n1": 0.001},
        "imagenet_scale": [0.699, 0.731, 0.764, 0.1],
        "gap_irs_inf_real": {"pixels": [0.22, 0.23, 0.24], "resnet56": [0.72, 0.74, 0.76]},
        "e2_fit": {"pixels/b/irs_adj": [0.36, 0.65, 0.43], "resnet56/b/irs_adj": [0.94, 0.08, 0.98]},
        "seed_compare": {key.format("diadm", "log IRS_inf ratio"): compare(0.35, 0.27, 0.42, seeds, HOLDS),
                         key.format("diadm", "FID gain"): compare(0.7, -0.2, 1.6, seeds, UNDECIDED),
                         key.format("class", "log IRS_inf ratio"): compare(0.15, 0.03, 0.26, 1, UNDECIDED)},
        "gen_compare": {key.format("diadm", "log IRS_inf ratio"): compare(0.25, 0.18, 0.33, 1, UNDECIDED),
                        key.format("diadm", "FID gain"): compare(0.6, 0.4, 0.8, 1, UNDECIDED),
                        key.format("class", "log IRS_inf ratio"): compare(0.06, -0.04, 0.16, 1, UNDECIDED)},
    }


def _verdicts(results: dict) -> dict[str, Verdict]:
    return {c.id: v for c, v in claims.judge(irs_claims.CLAIMS, results)}


def test_notebook_04s_claims_are_decided_by_their_rules():
    v = _verdicts(_results())
    assert v["04.intervals"].verdict == HOLDS  # pooled 0.900 of 2,000: its interval lies above 0.88
    assert v["04.imagenet-noise"].verdict == HOLDS and "misses the truth" in v["04.imagenet-noise"].why
    assert v["04.gap"].verdict == HOLDS
    assert v["04.linear"].verdict == UNDECIDED and "resnet56" in v["04.linear"].why
    assert v["04.diadm-irs"].verdict == HOLDS and "1.42 [1.31, 1.52] over 3 seeds" in v["04.diadm-irs"].ours
    assert v["04.diadm-fid"].verdict == UNDECIDED
    assert v["04.conditional"].verdict == UNDECIDED and "one training seed" in v["04.conditional"].why
    assert v["04.small-n"].verdict == HOLDS
    assert {v[c].verdict for c in ("04.best-77", "04.xs-xl", "04.deepfloyd", "04.swav")} == {OFFLINE}


def test_the_verdicts_turn_with_the_evidence():
    r = _results()
    r["sim_coverage"] = {"a": 0.80, "b": 0.82}  # 2,000 draws at 0.81: the interval lies below 0.90
    r["gap_irs_inf_real"]["pixels"] = [0.9, 1.0, 1.1]
    r["e2_fit"]["pixels/b/irs_adj"] = [1.05, 0.0, 0.95]
    r["imagenet_scale"] = [0.70, 0.75, 0.80, 0.1]  # ±5 points
    v = _verdicts(r)
    assert (v["04.intervals"].verdict, v["04.gap"].verdict, v["04.linear"].verdict,
            v["04.imagenet-noise"].verdict) == (FAILS, UNDECIDED, HOLDS, FAILS)
    one_seed = _verdicts(_results(seeds=1))["04.diadm-irs"]
    assert one_seed.verdict == UNDECIDED and "another seed" in one_seed.why


def test_a_preset_that_skips_the_generators_leaves_their_claims_undecided_not_guessed():
    r = copy.deepcopy(_results())
    del r["seed_compare"], r["gen_compare"]
    v = _verdicts(r)
    assert all(v[c].verdict == UNDECIDED and v[c].ours == "not measured by this run"
               for c in ("04.diadm-irs", "04.diadm-fid", "04.conditional"))


def test_the_ledger_lists_each_claim_with_its_verdict_and_the_counts_add_up():
    judged = claims.judge(irs_claims.CLAIMS, _results())
    text = claims.ledger_list(judged)
    assert text.count("\n- **") == len(irs_claims.CLAIMS) - 1
    assert "- **04.diadm-irs · holds.**" in text and "- **04.swav · not testable offline.**" in text
    assert claims.page_verdicts(text) == {c.id: v.verdict for c, v in judged}
    assert sum(claims.counts(judged).values()) == len(irs_claims.CLAIMS)
    assert len({c.id for c in irs_claims.CLAIMS}) == len(irs_claims.CLAIMS)


ROOT = Path(__file__).resolve().parents[1]


def test_every_verdict_the_readme_and_the_docs_state_is_the_ledgers():
    """A sentence that names a claim ("[04.diadm-irs] holds") states the verdict of the ledger page that `make
    results` wrote with it, never a stronger one; the page lists every claim of every ledger."""
    from lib.make.results import CLAIMS_MODULES, CLAIMS_PAGE, README_CLAIMS

    page = (ROOT / "docs" / "results" / CLAIMS_PAGE).read_text(encoding="utf-8")
    verdicts = claims.page_verdicts(page)
    declared = {c.id for n in CLAIMS_MODULES for c in importlib.import_module(CLAIMS_MODULES[n]).CLAIMS}
    assert set(verdicts) == declared
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    stated = [(p.name, i, v) for p in texts if p.name != CLAIMS_PAGE
              for i, v in claims.stated_verdicts(p.read_text(encoding="utf-8"))]
    assert {i for _, i, _ in stated} >= {i for _, ids in README_CLAIMS.values() for i in ids}
    assert [(name, i, v) for name, i, v in stated if verdicts.get(i) != v] == []


def test_a_stated_verdict_is_read_back_and_a_stronger_one_is_caught():
    judged = claims.judge(irs_claims.CLAIMS, _results())
    verdicts = claims.page_verdicts(claims.ledger_list(judged))
    assert verdicts["04.diadm-irs"] == HOLDS and verdicts["04.swav"] == OFFLINE
    sentence = claims.bullet(judged, ["04.conditional"])
    assert claims.stated_verdicts(sentence) == [("04.conditional", UNDECIDED)]
    assert claims.stated_verdicts("[04.conditional] holds: conditional beats unconditional") != \
        [("04.conditional", verdicts["04.conditional"])]


def _results_01() -> dict:
    """Notebook 01's recorded results, as much as its ledger reads, with known answers."""
    def d(diff, lo, hi):
        return {"difference": diff, "lower": lo, "upper": hi}
    return {
        "num_members": 30, "band_width": {"1": 0.023, "2": 0.013, "4": 0.006, "8": 0.005},
        "below_0.9": {"1": 0, "2": 0, "4": 0, "8": 0},
        "width_diff": {"1-2": d(0.010, 0.006, 0.014), "8-4": d(-0.001, -0.002, 0.0004)},
        "authors_recipe": {"C1": {"final_below": 6, "members": 8, "steps": [1000, 60000]},
                           "C8": {"final_below": 3, "members": 8, "steps": [1000, 10000]}},
        "fraction_ci": {"fraction": 0.358, "lower": 0.30, "upper": 0.41},
        "fraction_significant": {"paired_t/none": 0.358, "paired_t/bh": 0.344, "permutation_maxT/none": 0.34},
        "fig4_diff": {"steps": {"auc": d(-0.003, -0.004, -0.002), "width": d(0.004, 0.003, 0.006)},
                      "epochs": {"auc": d(-0.030, -0.040, -0.020), "width": d(0.019, 0.015, 0.023)}},
        "sampling_share": {"C1/bootstrap": 0.64, "C1/resplit": 0.497, "C4/bootstrap": 0.78, "C4/resplit": 0.72},
        "feature_spaces": {"plane": {"same_best": True, "same_order": True, "fraction": 0.358},
                           "mlp": {"same_best": True, "same_order": True, "fraction": 0.409}},
    }


def test_notebook_01s_claims_are_decided_by_their_rules():
    from lib.prcurves import claims as pr_claims

    v = {c.id: x for c, x in claims.judge(pr_claims.CLAIMS, _results_01())}
    assert v["01.band-order"].verdict == UNDECIDED  # C = 1 wider than C = 2, C = 8 against C = 4 not decided
    assert v["01.failures"].verdict == HOLDS and "6 of 8" in v["01.failures"].ours
    assert v["01.significance"].verdict == HOLDS and "outside our interval" in v["01.significance"].why
    assert v["01.data-size"].verdict == HOLDS
    assert v["01.model-uncertainty"].verdict == UNDECIDED and "C4" in v["01.model-uncertainty"].why
    assert v["01.feature-space"].verdict == FAILS and v["01.correction"].verdict == HOLDS
    fields = [s for c in pr_claims.CLAIMS for s in (c.words, c.paper, c.measure, v[c.id].ours, v[c.id].why)]
    assert all(s and "\n" not in s for s in fields)  # claims-01.md's sections: each one line of the ledger
    r = _results_01()
    r["width_diff"]["8-4"] = {"difference": -0.001, "lower": -0.0015, "upper": -0.0005}  # C = 8 narrower, decided
    r["sampling_share"] = {"C1/bootstrap": 0.64, "C1/resplit": 0.62, "C4/bootstrap": 0.78, "C4/resplit": 0.72}
    r["fig4_diff"]["steps"]["width"] = {"difference": -0.004, "lower": -0.006, "upper": -0.003}
    v = {c.id: x for c, x in claims.judge(pr_claims.CLAIMS, r)}
    assert (v["01.band-order"].verdict, v["01.model-uncertainty"].verdict, v["01.data-size"].verdict) == (
        FAILS, FAILS, FAILS)


def _per_seed(method: str, lgm: str, values: list[float], column: str, alpha: float = 0.1) -> list[dict]:
    return [{"seed": s, "lgm": lgm, "method": method, "alpha": alpha, column: v} for s, v in enumerate(values)]


def test_notebook_02s_claims_compare_methods_on_their_difference_per_seed():
    from lib.crel import claims as crel_claims

    rows = (_per_seed("CReL", "flow", [300, 310, 320, 305, 315], "area")
            + _per_seed("PCP", "flow", [200, 230, 210, 220, 215], "area")
            + _per_seed("DQR (Y-space)", "none", [700, 800, 750, 790, 760], "area")
            + _per_seed("CReL", "flow", [0.90, 0.905, 0.899, 0.902, 0.901], "coverage_y")
            + _per_seed("CReL", "cvae", [0.85, 0.95, 0.88, 0.93, 0.89], "coverage_y")
            + _per_seed("Feldman", "flow", [0.91, 0.92, 0.90, 0.93, 0.91], "coverage_y"))
    r = {"alphas": [0.1], "per_seed": rows,
         "resplit": {"mean": 0.9005, "se": 0.0007, "lower": 0.9, "upper": 0.9005, "repeats": 200, "n_cal": 2000},
         "spread": {"flow": {"median_std": 0.25, "median_basin_std": 1e-4}},
         "label_to_image_ranking": {"reversed": [["a", "b"]], "n_pairs": 15, "tau": 0.87}}
    v = {c.id: x for c, x in claims.judge(crel_claims.CLAIMS, r)}
    assert (v["02.guarantee"].verdict, v["02.coverage-flow"].verdict, v["02.coverage-cvae"].verdict) == (
        HOLDS, HOLDS, UNDECIDED)
    assert v["02.area-dqr"].verdict == HOLDS and v["02.area-pcp"].verdict == FAILS
    assert v["02.conservative"].verdict == FAILS  # Feldman covers more on every seed
    assert v["02.pgd-spread"].verdict == FAILS and "local minima" in v["02.pgd-spread"].why
    assert v["02.reversal"].verdict == UNDECIDED and v["02.coco"].verdict == OFFLINE
    assert "cause is not measured" in v["02.area-pcp"].why
    r["pcp_by_k"] = {"10": {"area": 709.0, "coverage_y": 0.891, "radius": 0.48},
                     "50": {"area": 223.0, "coverage_y": 0.904, "radius": 0.12}}
    pcp = {c.id: x for c, x in claims.judge(crel_claims.CLAIMS, r)}["02.area-pcp"]
    assert pcp.verdict == FAILS and "709 at K = 10, 223 at K = 50" in pcp.why


def test_notebook_03s_claims_read_the_paired_bootstrap_of_the_rankings():
    from lib.regret import claims as regret_claims

    def ranking(best, lead_lower, tau):
        methods = ["Evidential", "Deep Ensemble", "DDU", "MC-Dropout"]
        return {"aurec": dict.fromkeys(methods, 0.2) | {best: 0.1}, "best": best, "reps": 500,
                "best_share": dict.fromkeys(methods, 0.0) | {best: 0.99},
                "difference": {m: ([0.0, 0.0, 0.0] if m == best else [0.05, lead_lower, 0.08]) for m in methods},
                "tau": tau}
    table = {f"ce/{m}": {"AuReC": 0.23, "r_s(A*,E*)": 0.59, "accuracy_vs_argmax_p*": 0.838}
             for m in ("mc_dropout", "ensemble", "ddu", "evidential")}
    r = {"n_test": 10000, "table": table,
         "theorem_lp": {"ce": {"all_threshold_form": True, "lambda_in_range": True, "problems": 24,
                               "lambda_min": 0.5, "lambda_max": 0.94}},
         "sandbox_jaccard": {"AL: BALD": 0.4, "Bayes OOD p_ood/p_id": 0.4, "regret": 1.0},
         "whole_width_trend": {"Deep Ensemble": {"CE AuReC at 94%": 0.06}},
         "aurec_ranking": {"heads/ce": ranking("Evidential", 0.03, [0.67, 0.33, 1.0]),
                           "whole/ce": ranking("Deep Ensemble", 0.02, [0.0, -0.67, 0.67])}}
    v = {c.id: x for c, x in claims.judge(regret_claims.CLAIMS, r)}
    assert v["03.theorem"].verdict == HOLDS and v["03.proxies"].verdict == HOLDS
    assert v["03.best-heads"].verdict == HOLDS and v["03.best-whole"].verdict == FAILS
    assert v["03.ranking-heads"].verdict == HOLDS and v["03.ranking-whole"].verdict == UNDECIDED
    assert v["03.scale"].verdict == FAILS and "0.060 extrapolated" in v["03.scale"].ours
    assert v["03.truth-correlation"].verdict == FAILS and v["03.dcic"].verdict == OFFLINE
    r["aurec_ranking"]["heads/ce"]["difference"]["DDU"][1] = -0.01  # the runner-up's lead no longer decided
    r["aurec_ranking"]["heads/ce"]["difference"] |= {m: [0.05, -0.01, 0.08] for m in ("Deep Ensemble", "MC-Dropout")}
    assert {c.id: x for c, x in claims.judge(regret_claims.CLAIMS, r)}["03.best-heads"].verdict == UNDECIDED


def test_readmes_findings_are_rewritten_from_the_ledgers_and_a_paper_without_a_run_keeps_its_bullet(tmp_path):
    from lib.make import results as mr

    readme = tmp_path / "README.md"
    readme.write_text("# x\n\n<!-- findings:begin -->\n- **01 (ensemble PR curves).** old words\n- **02 (CReL).** "
                      "kept\n<!-- findings:end -->\n\nafter\n", encoding="utf-8")
    judged = {"04": claims.judge(irs_claims.CLAIMS, _results())}
    assert mr.update_findings(readme, judged)
    text = readme.read_text(encoding="utf-8")
    assert "- **02 (CReL).** kept" in text and "old words" in text and text.endswith("after\n")
    assert "[04.diadm-irs] **holds**" in text and "[04.conditional] **undecided**" in text
    assert not mr.update_findings(_no_block(tmp_path), judged)


def _no_block(tmp_path):
    path = tmp_path / "other.md"
    path.write_text("# no block\n", encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------------------------
# The claims and stated limitations added to 03's and 04's ledgers: The ledgers' findings and stated limitations
# (notebook 03's F1-F3, Dinkelbach and label density; notebook 04's recall, coverage, adjustment, DiADM everywhere,
# IRS_inf,a above 1 and the vote): each ver
# ------------------------------------------------------------------------------------------------------------
METHODS = ("MC-Dropout", "Deep Ensemble", "DDU", "Evidential")
NEW_03 = ("03.f1-ddu", "03.f1-evidential", "03.f2-pgap", "03.f3-loss", "03.dinkelbach", "03.label-density",
          "03.approximation")
KEYS = {"mc_dropout": "MC-Dropout", "ensemble": "Deep Ensemble", "ddu": "DDU", "evidential": "Evidential"}


def _v(module, results: dict) -> dict[str, Verdict]:
    return {c.id: v for c, v in claims.judge(module.CLAIMS, results)}


def test_a_result_no_notebook_records_names_the_record_that_would_decide_it():
    claim = Claim("x", "§1", "w", "p", "q", decide=lambda r: claims.need_record(r, "a", "b", record="a: {b: 1}"))
    verdict = claims.judge([claim], {"a": {}})[0][1]
    assert verdict.verdict == UNDECIDED and verdict.ours == "not measured by this run"
    assert "does not record a" in verdict.why and "a: {b: 1}" in verdict.why
    with pytest.raises(NotRecorded):
        claims.need_record({}, "a", record="a")
    assert claims.need_record({"a": 2}, "a", record="a") == 2


def _pairs(values: dict[str, float], half: float) -> dict[str, list[float]]:
    """{"A − B": [mean, lower, upper]} of every pair, each interval ± half around the difference."""
    return {f"{a} − {b}": [values[a] - values[b], values[a] - values[b] - half, values[a] - values[b] + half]
            for a, b in itertools.combinations(values, 2)}


def _ranking(aurec: dict[str, float], half: float) -> dict:
    best = min(aurec, key=aurec.get)
    return {"aurec": aurec, "best": best, "reps": 500, "best_share": {m: float(m == best) for m in aurec},
            "difference": {m: [aurec[m] - aurec[best], aurec[m] - aurec[best] - half * (m != best),
                               aurec[m] - aurec[best] + half * (m != best)] for m in aurec}, "tau": [0.3, 0.0, 0.6]}


def _results_03() -> dict:
    """Notebook 03's results, as much as the findings' rules read, with known answers (the shape of runs/03's)."""
    aurec = {"MC-Dropout": 0.23, "Deep Ensemble": 0.23, "DDU": 0.33, "Evidential": 0.19}
    rs_hat = {"mc_dropout": 0.96, "ensemble": 0.95, "ddu": 0.41, "evidential": 0.84}
    table = {f"{loss}/{m}": {"AuReC": aurec[KEYS[m]], "P-gap": 0.11 if m == "evidential" else 0.2,
                             "r_s(Â,Ê)": rs_hat[m], "r_s(A*,E*)": 0.59 if loss == "ce" else 0.19,
                             "accuracy_vs_argmax_p*": 0.84}
             for loss in ("ce", "zero_one") for m in KEYS}
    proxy = {"MC-Dropout": (0.81, 0.85, 0.793), "Deep Ensemble": (0.79, 0.82, 0.789), "DDU": (0.81, 0.83, 0.786),
             "Evidential": (0.79, 0.84, 0.773)}
    density = {f"{loss}/{k}": {"high": 1.0, "low": low, "median_tau": 1.0, "share_same": share}
               for loss, ks in (("ce", {1: (0.67, 0.6), 10: (1.0, 1.0)}), ("zero_one", {1: (1.0, 1.0)}))
               for k, (low, share) in ks.items()}
    return {"n_test": 10000, "table": table, "aurec_ranking": {"heads/ce": _ranking(aurec, 0.01)},
            "proxy": {m: {"near-OOD AuROC": v[0], "far-OOD AuROC": v[1], "AL NAUC": v[2], "CE AuReC": aurec[m]}
                      for m, v in proxy.items()},
            "theorem_lp": {loss: {"all_threshold_form": True, "lambda_in_range": True, "problems": 24,
                                  "lambda_min": 0.5, "lambda_max": 0.94} for loss in ("ce", "zero_one")},
            "label_density": density,
            "label_density_stable_k": {"ce": 10, "zero_one": 1},
            "whole_width_trend": {m: {"CE AuReC per accuracy point": -0.02, "widths": 3} for m in METHODS}}


def test_notebook_03s_findings_without_their_intervals_stay_undecided_and_name_the_record():
    v = _v(regret_claims, _results_03())
    assert v["03.f1-ddu"].verdict == UNDECIDED and "proxy_pairs" in v["03.f1-ddu"].why
    assert "DDU +0.140" in v["03.f1-ddu"].ours  # its regret part is decided: behind the best by 0.14 ± 0.01
    assert v["03.f1-evidential"].verdict == UNDECIDED and "proxy_pairs" in v["03.f1-evidential"].why
    assert v["03.f2-pgap"].verdict == UNDECIDED and "pgap_pairs" in v["03.f2-pgap"].why
    assert v["03.approximation"].verdict == UNDECIDED and "whole_width_slope_ci" in v["03.approximation"].why
    assert v["03.dinkelbach"].verdict == UNDECIDED and v["03.dinkelbach"].ours == "not measured by this run"
    assert "theorem_lp_by_problem" in v["03.dinkelbach"].why
    assert v["03.f3-loss"].verdict == HOLDS and "fall 0.400" in v["03.f3-loss"].ours
    assert v["03.label-density"].verdict == HOLDS and "stable from k = 10" in v["03.label-density"].ours


def test_notebook_03s_findings_turn_with_their_intervals():
    r = _results_03()
    far = {m: p["far-OOD AuROC"] for m, p in r["proxy"].items()}
    r["proxy_pairs"] = {"heads/far-OOD AuROC": _pairs(far | {"DDU": 0.90}, 0.01)}  # DDU decidedly best at far-OOD
    assert _v(regret_claims, r)["03.f1-ddu"].verdict == HOLDS
    r["proxy_pairs"] = {"heads/far-OOD AuROC": _pairs(far, 0.01)}  # MC-Dropout decidedly above DDU
    assert _v(regret_claims, r)["03.f1-ddu"].verdict == FAILS
    r["proxy_pairs"] = {f"heads/{c}": _pairs({m: p[c] - 0.2 * (m == "Evidential") for m, p in r["proxy"].items()},
                                             0.01) for c in regret_claims.PROXIES}  # Evidential decidedly worst
    assert _v(regret_claims, r)["03.f1-evidential"].verdict == HOLDS
    r["proxy_pairs"]["heads/AL NAUC"] = _pairs({m: p["AL NAUC"] for m, p in r["proxy"].items()} | {"DDU": 0.5}, 0.01)
    assert _v(regret_claims, r)["03.f1-evidential"].verdict == FAILS  # DDU decidedly worse at AL
    pgap = {KEYS[m]: r["table"][f"ce/{m}"]["P-gap"] for m in KEYS}
    r["pgap_pairs"] = {"heads/ce": _pairs(pgap, 0.01)}
    assert _v(regret_claims, r)["03.f2-pgap"].verdict == HOLDS  # lowest P-gap, r_s(Â,Ê) above DDU's
    assert "; P-gap Evidential − " in _v(regret_claims, r)["03.f2-pgap"].ours  # its difference with the next lowest
    r["pgap_pairs"] = {"heads/ce": _pairs(pgap | {"DDU": 0.05}, 0.01)}
    assert _v(regret_claims, r)["03.f2-pgap"].verdict == FAILS
    r["whole_width_slope_ci"] = {m: [-0.02, -0.03, -0.01] for m in METHODS}
    assert _v(regret_claims, r)["03.approximation"].verdict == HOLDS
    summary = {"problems": 6, "all_threshold_form": True, "lambda_in_range": True, "lambda_min": 0.5,
               "lambda_max": 0.9}
    r["theorem_lp_by_problem"] = {loss: {"P_Ri/rho": summary, "P_Re/rho": summary} for loss in ("ce", "zero_one")}
    assert _v(regret_claims, r)["03.dinkelbach"].verdict == HOLDS
    r["theorem_lp_by_problem"]["ce"]["P_Re/rho"] = summary | {"lambda_in_range": False, "lambda_max": 1.3}
    assert _v(regret_claims, r)["03.dinkelbach"].verdict == FAILS


def test_f2_fails_when_evidentials_rank_correlation_is_the_lowest_and_f3_turns_with_the_fall():
    r = _results_03()
    r["table"]["ce/evidential"]["r_s(Â,Ê)"] = 0.2  # below every other method's, decided
    assert _v(regret_claims, r)["03.f2-pgap"].verdict == FAILS
    for m in KEYS:
        r["table"][f"zero_one/{m}"]["r_s(A*,E*)"] = 0.59  # no fall
    assert _v(regret_claims, r)["03.f3-loss"].verdict == UNDECIDED
    r["table"]["zero_one/ddu"]["r_s(A*,E*)"] = 0.75  # a rise under 0/1, decided
    assert _v(regret_claims, r)["03.f3-loss"].verdict == FAILS


def test_label_density_fails_when_one_label_per_image_keeps_the_ranking():
    r = _results_03()
    r["label_density"]["ce/1"] |= {"low": 1.0, "share_same": 1.0}
    assert _v(regret_claims, r)["03.label-density"].verdict == FAILS


def _results_04() -> dict:
    """Notebook 04's results, as much as the new rules read, with known answers (the shape of runs/04's)."""
    extractors = ["pixels", "resnet56"]
    toy = {f"{e}/{g}": [0.5, 10.0, 0.9, recall, coverage] for e in extractors
           for g, recall, coverage in (("memorise-0.1", 0.80, 0.81), ("real (SYN pool)", 0.94, 0.97))}
    compare = {f"{e} / diadm − unconditional / {m}": {"mean": 0.3, "lower": 0.2, "upper": 0.4, "seeds": 3,
                                                      "verdict": HOLDS, "per seed": "0.3; 0.3; 0.3"}
               for e in extractors for m in ("log IRS_inf ratio", "FID gain")}
    rates = {"pixels": 0.99, "randproj": 0.98, "effnet": 0.95, "randcnn": 0.55, "resnet20": 0.54, "resnet56": 0.42}
    return {"extractors": extractors, "toy": toy, "seed_compare": compare,
            "e2_fit": {f"{e}/b/{s}": [slope, 0.05, 0.9] for e, raw, adj in (("pixels", 0.12, 0.36),
                                                                           ("resnet56", 0.68, 0.94))
                       for s, slope in (("irs_inf", raw), ("irs_adj", adj))},
            "gap_irs_inf_real": {"pixels": [0.22, 0.23, 0.24], "resnet56": [0.72, 0.74, 0.76]},
            "e3": {"pixels/g0.6": [0.59, 0.53, 0.65, 1.0, 4.15], "resnet56/g0.6": [0.43, 0.40, 0.47, 0.52, 0.60]},
            "generators": {"pixels/diadm c32 100%": [0.85, 2.3, 0.7, 0.01, 1.04]},
            "vote": {"tau": -0.6, "rates": rates, "chosen": "pixels", "threshold": 4, "share": 0.0144,
                     "linear_order": ["resnet20", "resnet56", "effnet", "randcnn", "pixels", "randproj"]}}


def test_notebook_04s_new_claims_without_their_intervals_stay_undecided_and_name_the_record():
    v = _v(irs_claims, _results_04())
    for cid, record in (("04.recall", "toy_n"), ("04.coverage-low", "toy_n"), ("04.coverage-k", "toy_coverage_by_k"),
                        ("04.adjusted", "e2_fit_ci"), ("04.beyond", "e3_adjusted")):
        assert v[cid].verdict == UNDECIDED and record in v[cid].why, cid
    assert "pixels 0.800 / 0.940 = 0.85" in v["04.recall"].ours
    assert v["04.diadm-everywhere"].verdict == HOLDS and "4 of 4 decided" in v["04.diadm-everywhere"].ours
    assert v["04.vote"].verdict == UNDECIDED and "P(τ ≤ -0.60) = 0.068" in v["04.vote"].ours
    assert v["04.nn-cost"].verdict == OFFLINE


def test_notebook_04s_new_claims_turn_with_the_evidence():
    r = _results_04()
    r["toy_n"] = 2500  # recall 0.80 against 0.94: the ratio's interval lies above 0.5; coverage's above 0.1
    v = _v(irs_claims, r)
    assert (v["04.recall"].verdict, v["04.coverage-low"].verdict) == (HOLDS, HOLDS)
    for e in r["extractors"]:
        r["toy"][f"{e}/memorise-0.1"][3:] = [0.05, 0.05]  # a tenth of the diversity, a twentieth of the recall
    v = _v(irs_claims, r)
    assert (v["04.recall"].verdict, v["04.coverage-low"].verdict) == (FAILS, FAILS)
    r["toy_coverage_by_k"] = {f"{e}/memorise-0.1": {"3": 0.5, "10": 0.9} for e in r["extractors"]}
    assert _v(irs_claims, r)["04.coverage-k"].verdict == HOLDS
    r["toy_coverage_by_k"] = {f"{e}/memorise-0.1": {"3": 0.80, "10": 0.81} for e in r["extractors"]}
    assert _v(irs_claims, r)["04.coverage-k"].verdict == FAILS
    r["e2_fit_ci"] = {"pixels/b/irs_adj": [0.95, 0.9, 1.05], "resnet56/b/irs_adj": [1.0, 0.95, 1.1]}
    assert _v(irs_claims, r)["04.adjusted"].verdict == HOLDS
    r["e2_fit_ci"]["pixels/b/irs_adj"] = [0.36, 0.3, 0.42]
    assert _v(irs_claims, r)["04.adjusted"].verdict == FAILS
    r["e3_adjusted"] = {"pixels/g0.6": [4.15, 3.6, 4.9], "resnet56/g0.6": [0.6, 0.55, 0.66]}
    assert _v(irs_claims, r)["04.beyond"].verdict == FAILS
    key = "pixels / diadm − unconditional / FID gain"
    r["seed_compare"][key] |= {"mean": -0.3, "lower": -0.4, "upper": -0.2}
    assert _v(irs_claims, r)["04.diadm-everywhere"].verdict == FAILS
    r["seed_compare"][key] |= {"mean": 0.1, "lower": -0.4, "upper": 0.6}
    assert _v(irs_claims, r)["04.diadm-everywhere"].verdict == UNDECIDED
    r["vote"]["tau"] = 1.0  # one order in 720 agrees as well
    assert _v(irs_claims, r)["04.vote"].verdict == HOLDS
    r["vote"]["tau"] = -1.0
    assert _v(irs_claims, r)["04.vote"].verdict == FAILS


def test_kendalls_tau_under_chance_has_the_known_distribution():
    taus = irs_claims._chance_tau(6)
    assert len(taus) == 720
    assert sum(t <= -0.6 + 1e-9 for t in taus) == 1 + 5 + 14 + 29  # orders with 12 or more inversions (Mahonian)
    assert sum(taus) == pytest.approx(0.0, abs=1e-9)
    lower, upper = irs_claims._ratio(0.5, 0.5, 100)
    assert lower < 1 < upper and irs_claims._ratio(0.5, 0.5, 10_000)[0] > lower


ROOT = Path(__file__).resolve().parents[1]
RUNS = {n: sorted((ROOT / "runs").glob(f"{n}_*.ipynb")) for n in ("03", "04")}


@pytest.mark.parametrize("number", ["03", "04"])
def test_every_claim_gets_a_verdict_on_the_executed_run(number):
    """On the executed notebook of `make run` (runs/, git-ignored), when there is one."""
    if not RUNS[number]:
        pytest.skip(f"no runs/{number}_*.ipynb: `make run` writes it")
    from lib.glue import read_results

    results = read_results(RUNS[number][0])
    judged = claims.judge(claims.claims_of(number), copy.deepcopy(results))
    assert all(v.verdict in claims.VERDICTS and "nan" not in v.ours for _, v in judged)
    if results.get("preset") != "cpu":
        return
    v = {c.id: x for c, x in judged}
    if number == "03":  # the cpu preset's run: F3, the label density and (with the OOD columns' pairs) F1's DDU
        assert v["03.f3-loss"].verdict == HOLDS and v["03.label-density"].verdict == HOLDS
        assert v["03.f1-ddu"].verdict in (HOLDS, FAILS) and "without interval" not in v["03.f1-ddu"].ours
        if "theorem_lp_by_problem" in results:  # a run since the notebook records the ratio problems alone
            assert v["03.dinkelbach"].verdict in (HOLDS, FAILS) and "ratio problems" in v["03.dinkelbach"].ours
            assert "without interval" not in v["03.f2-pgap"].ours  # and the P-gap's paired differences
        else:
            assert v["03.dinkelbach"].ours == "not measured by this run"
    else:
        assert v["04.nn-cost"].verdict == OFFLINE
        if "toy_coverage_by_k" in results:  # a run since the notebook records coverage at several k
            assert v["04.coverage-k"].ours.startswith("coverage moves with k on")
        else:
            assert v["04.coverage-k"].ours == "not measured by this run"
        assert v["04.vote"].verdict in (UNDECIDED, FAILS) and "τ" in v["04.vote"].ours


def test_a_run_of_fewer_methods_extractors_or_stages_leaves_the_new_claims_undecided_without_raising():
    r = _results_03()
    for name in ("ddu", "evidential"):
        del r["table"][f"ce/{name}"], r["table"][f"zero_one/{name}"]
        del r["proxy"][KEYS[name]], r["aurec_ranking"]["heads/ce"]["difference"][KEYS[name]]
    r["label_density"] = {"ce/1": r["label_density"]["ce/1"], "ce/all": r["label_density"]["ce/10"]}
    new = [c for c in regret_claims.CLAIMS if c.id in NEW_03]  # the older claims assume all four methods
    v = {c.id: x for c, x in claims.judge(new, r)}
    assert all(v[c].verdict == UNDECIDED and v[c].ours == "not measured by this run"
               for c in ("03.f1-ddu", "03.f1-evidential", "03.f2-pgap", "03.f3-loss"))
    assert v["03.label-density"].verdict == HOLDS  # "all" is the reference, not a draw
    r = _results_04()
    r["seed_compare"] = None
    del r["vote"], r["toy"]["pixels/memorise-0.1"], r["toy"]["resnet56/memorise-0.1"]
    v = _v(irs_claims, r)
    assert all(v[c].verdict == UNDECIDED and v[c].ours == "not measured by this run"
               for c in ("04.recall", "04.coverage-low", "04.diadm-everywhere", "04.vote"))


def test_the_conditional_claim_says_how_much_room_the_unconditional_arm_leaves():
    """04.conditional: the direction decided over seeds, and the size's cause: 1 / IRS_∞,a of the unconditional arm
    bounds the ratio a generator as diverse as the real data would reach."""
    from lib.irs import claims as ic

    key = "resnet56 / class − unconditional / log IRS_inf ratio"
    seeds = {"mean": 0.15, "lower": 0.09, "upper": 0.22, "seeds": 3, "per seed": "0.147; 0.134; 0.186",
             "verdict": "holds"}
    one = {"mean": 0.06, "lower": -0.07, "upper": 0.19, "seeds": 1, "per seed": "0.06", "verdict": "undecided"}
    record = {"gen_headline": {"extractor": "resnet56", "unconditional": [0.25, 2.0]}, "seed_compare": {key: seeds},
              "gen_compare": {key: one}}
    verdict = ic._conditional(record)
    assert verdict.verdict == "holds" and "would be 4.0 times it" in verdict.why and "a ratio of 33" in verdict.why


def test_the_zero_one_scale_claim_names_the_accuracy_the_papers_values_need():
    """03.scale-zero-one: fails when every AuReC exceeds every paper value; the oracle ≈ mean E* · d / 2 gives the
    disagreement d the paper's best value needs."""
    from lib.regret import claims as rc

    def table(aurec: float) -> dict:
        methods = ("mc_dropout", "ensemble", "ddu", "evidential")
        return {f"zero_one/{m}": {"AuReC": aurec, "oracle_AuReC": 0.011, "mean_E*": 0.14,
                                  "accuracy_vs_argmax_p*": 0.835} for m in methods}

    verdict = rc._scale_zero_one({"table": table(0.09)})
    k = 0.14 / 0.165
    needed = math.sqrt(2 * 0.003 / k)
    assert verdict.verdict == "fails" and f"d ≤ {needed:.3f}" in verdict.why
    assert rc._scale_zero_one({"table": table(0.01)}).verdict == "undecided"


def test_f1_evidential_says_how_many_active_learning_runs_it_rests_on():
    r = _results_03()
    assert "active learning in one run" in _v(regret_claims, r)["03.f1-evidential"].why
    r["al_nauc_by_seed"] = {m: [0.7, 0.71, 0.72] for m in r["proxy"]}
    assert "active learning over 3 seeds, paired by seed" in _v(regret_claims, r)["03.f1-evidential"].why
