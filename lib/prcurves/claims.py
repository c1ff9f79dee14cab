"""Notebook 01's claims ledger (`lib.claims`): the ensemble-PR-curve paper's claims and stated limitations (spec 01
§1), what the run measures for each, and the verdict its recorded results decide.

Each `decide` reads the glued results of notebook 01 (`r`): the band widths' differences with bootstrap intervals
over the members (`width_diff`), the share of the recall grid where C = 4 beats C = 2 with its interval
(`fraction_ci`), the small-data comparisons (`fig4_diff`), the sampling-induced shares of the curves' variance,
the authors'-recipe study and the other feature spaces.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lib.claims import FAILS, HOLDS, UNDECIDED, Claim, Verdict, interval, need, side_of, wilson
from lib.prcurves import paper

SAMPLING_DOMINATES = 0.6  # the band is mostly the estimator's noise when both decompositions give more than this
MODEL_DOMINATES = 0.4  # ... mostly the models' when both give less


def _diff(r: Mapping[str, Any], key: str) -> tuple[float, float, float]:
    d = need(r, "width_diff", key)
    return d["difference"], d["lower"], d["upper"]


def _band_order(r: Mapping[str, Any]) -> Verdict:
    widths = need(r, "band_width")
    low_end, high_end = _diff(r, "1-2"), _diff(r, "8-4")
    sides = side_of(low_end[1], low_end[2]), side_of(high_end[1], high_end[2])
    verdict = HOLDS if sides == (HOLDS, HOLDS) else FAILS if FAILS in sides else UNDECIDED
    below = need(r, "below_0.9")
    why = (f"basic bootstrap intervals over the members (95 %): width C = 1 − C = 2 {interval(*low_end, digits=4)}, "
           f"C = 8 − C = 4 {interval(*high_end, digits=4)}; holds when both lie above 0. No member falls below "
           f"AUC {paper.FAILED_AUC} here ({' / '.join(str(v) for v in below.values())}); the paper's wide C = 1 and "
           "C = 8 bands hold its failed members (the claim below)")
    return Verdict(verdict, "width " + " / ".join(f"{v:.3f}" for v in widths.values()) + " for C = "
                   + " / ".join(str(c) for c in widths), why)


def _failures(r: Mapping[str, Any]) -> Verdict:
    recipe = need(r, "authors_recipe")
    parts, verdicts = [], []
    for name, s in recipe.items():
        lower, upper = wilson(s["final_below"], s["members"])
        verdicts.append(side_of(lower, upper))
        parts.append(f"{name}: {s['final_below']} of {s['members']} below AUC {paper.FAILED_AUC} after "
                     f"{s['steps'][-1]:,} steps [{lower:.2f}, {upper:.2f}]")
    verdict = HOLDS if verdicts and all(v == HOLDS for v in verdicts) else UNDECIDED
    return Verdict(verdict, "; ".join(parts),
                   "the authors' recipe (constant learning rate, no EMA) trained here for C = 1 and C = 8; Wilson "
                   "95 % intervals of the share failed; holds when each lies above 0. With this workbook's recipe no "
                   f"member fails ({sum(need(r, 'below_0.9').values())} of {4 * need(r, 'num_members')})")


def _significance(r: Mapping[str, Any]) -> Verdict:
    ci = need(r, "fraction_ci")
    bh = need(r, "fraction_significant", "paired_t/bh")
    verdict = HOLDS if ci["lower"] > 0 and bh > 0 else FAILS if ci["upper"] == 0 else UNDECIDED
    matches = ci["lower"] <= paper.FRACTION_PAIRED_T <= ci["upper"]
    return Verdict(verdict, f"{interval(ci['fraction'], ci['lower'], ci['upper'])} of the curve (paired t); "
                            f"{bh:.3f} with Benjamini–Hochberg",
                   "basic bootstrap over member pairs (95 %); holds when C = 4 is significantly better on some of the "
                   f"curve, with and without a correction; the paper's {paper.FRACTION_PAIRED_T} is "
                   + ("inside" if matches else "outside") + " our interval")


def _data_size(r: Mapping[str, Any]) -> Verdict:
    diffs = need(r, "fig4_diff")
    parts, sides = [], []
    for match, d in diffs.items():
        auc, width = d["auc"], d["width"]
        sides += [side_of(-auc["upper"], -auc["lower"]), side_of(width["lower"], width["upper"])]
        parts.append(f"same {match}: AUC {interval(auc['difference'], auc['lower'], auc['upper'], 4)}, width "
                     f"{interval(width['difference'], width['lower'], width['upper'], 4)}")
    verdict = HOLDS if sides and all(s == HOLDS for s in sides) else FAILS if FAILS in sides else UNDECIDED
    return Verdict(verdict, "small − large training set: " + "; ".join(parts),
                   "Welch interval of the mean AUC's difference and basic bootstrap interval of the band width's "
                   "(95 %); holds when the AUC falls and the band widens beyond their intervals under both budgets")


def _bands_measure_models(r: Mapping[str, Any]) -> Verdict:
    shares = need(r, "sampling_share")
    by_c: dict[str, list[float]] = {}
    for key, value in shares.items():
        by_c.setdefault(key.split("/")[0], []).append(value)
    sampling = [c for c, v in by_c.items() if min(v) > SAMPLING_DOMINATES]
    model = [c for c, v in by_c.items() if max(v) < MODEL_DOMINATES]
    verdict = HOLDS if len(model) == len(by_c) else FAILS if len(sampling) == len(by_c) else UNDECIDED
    return Verdict(verdict, "sampling-induced share " + "; ".join(f"{c} {min(v):.0%}–{max(v):.0%}"
                                                                   for c, v in by_c.items()),
                   f"re-split and bootstrap decompositions of the curves' variance; mostly the estimator's noise "
                   f"(> {SAMPLING_DOMINATES:.0%} by both) for {', '.join(sampling) or 'none'}; mostly the models' "
                   f"(< {MODEL_DOMINATES:.0%}) for {', '.join(model) or 'none'}; no interval on a share is recorded, "
                   "so a share between the two bars decides nothing; measured on converged members only")


def _feature_space(r: Mapping[str, Any]) -> Verdict:
    spaces = need(r, "feature_spaces")
    kept = [s for s, f in spaces.items() if f.get("same_best") and f.get("same_order")]
    fractions = [f["fraction"] for f in spaces.values()]
    verdict = FAILS if len(kept) == len(spaces) else HOLDS if not kept else UNDECIDED
    return Verdict(verdict, f"best C and order of C kept in {len(kept)} of {len(spaces)} spaces; share where "
                            f"C = 4 beats C = 2 {min(fractions):.3f}–{max(fractions):.3f}",
                   "the same samples evaluated in the plane and in fixed embeddings (standardised, random Fourier, "
                   "random MLP); the ranking does not depend on the space here, the significance share does")


def _correction(r: Mapping[str, Any]) -> Verdict:
    f = need(r, "fraction_significant")
    raw, bh, maxt = f["paired_t/none"], f["paired_t/bh"], f.get("permutation_maxT/none")
    verdict = HOLDS if bh < raw else UNDECIDED
    return Verdict(verdict, f"paired t {raw:.3f} uncorrected, {bh:.3f} with BH"
                   + (f", {maxt:.3f} permutation max-T" if maxt is not None else ""),
                   "holds when a correction shrinks the significant share; here by "
                   f"{100 * (raw - bh):.1f} points only (the members differ clearly); on the authors' own curves a "
                   "correction leaves 0 % (spec §5.6)")


def _no_guarantee(r: Mapping[str, Any]) -> Verdict:
    cover = need(r, "band_coverage")
    below = [c for c, v in cover.items() if v["upper"] < v["nominal"]]
    nominal = next(iter(cover.values()))["nominal"]
    verdict = HOLDS if below else UNDECIDED
    return Verdict(verdict, "a left-out member inside the others' band on " + "; ".join(
        f"C = {c}: {interval(v['coverage'], v['lower'], v['upper'])}" for c, v in cover.items())
        + f" of the grid (nominal {nominal:.0%})",
        "leave one member out, the 10th–90th band of the others, the share of the grid holding the member; Student's "
        "t over the members; holds when a band covers less than its nominal share beyond its interval (it is no "
        "prediction interval); exchangeable continuous members would give "
        f"{next(iter(cover.values()))['exchangeable']:.3f} [derived]" + ("" if below else ", and no C falls below "
                                                                           "the nominal share here"))


CLAIMS = (
    Claim("01.band-order", "C5", "Band widths: C = 1 widest, C = 2 and C = 4 narrowest, C = 8 wider again",
          " / ".join(f"{paper.TABLE[c]['width']}" for c in (1, 2, 4, 8)), "mean width of the 10th–90th percentile "
          "band, per C, and the differences' intervals", decide=_band_order),
    Claim("01.failures", "spec §1 table",
          f"Ensembles at C = 1 and C = 8 contain failed members (AUC below {paper.FAILED_AUC})",
          f"{paper.TABLE[1]['below_0.9']} and {paper.TABLE[8]['below_0.9']} of {paper.MEMBERS}",
          f"members below AUC {paper.FAILED_AUC} under the authors' recipe", decide=_failures),
    Claim("01.significance", "C6", "C = 4 is significantly better than C = 2 on part of the curve (paired t)",
          f"{paper.FRACTION_PAIRED_T:.1%} of the curve", "share of the recall grid where C = 4 is significantly "
          "better", decide=_significance),
    Claim("01.data-size", "C7", "A smaller training set gives wider bands and a lower AUC", "stated",
          "AUC and band width of C = 4 at a quarter of the data, same steps and same epochs", decide=_data_size),
    Claim("01.model-uncertainty", "§1 definitions", "The band measures model-induced uncertainty", "stated",
          "share of the curves' variance that is the estimator's sampling noise", decide=_bands_measure_models),
    Claim("01.feature-space", "§1 limitations", "The conclusions depend on the feature space the kNN estimator "
          "uses", "stated", "best C, order of C and significance in three other feature spaces",
          decide=_feature_space),
    Claim("01.no-guarantee", "§1 limitations", "Percentile bands carry no formal guarantee", "stated",
          "share of a left-out member's curve inside the other members' band", decide=_no_guarantee),
    Claim("01.correction", "§1 limitations", "Pointwise t-tests need a multiple-testing correction", "stated",
          "significant share with and without a correction", decide=_correction),
)
