"""Notebook 01's claims ledger (`lib.claims`): the ensemble-PR-curve paper's claims and stated limitations (spec 01
§1), what the run measures for each, and the verdict its recorded results decide.

Each `decide` reads the glued results of notebook 01 (`r`): the band widths' differences with bootstrap intervals
over the members (`width_diff`), the share of the recall grid where C = 4 beats C = 2 with its interval
(`fraction_ci`), the small-data comparisons (`fig4_diff`), the sampling-induced shares of the curves' variance,
the authors'-recipe study and the other feature spaces. The rules and the numbers they read are here; the sentences
that state them (each claim's words, the paper's number, what we measure, and each verdict's `ours` and `why`) are the
sections of docs/results/templates/claims-01.md, which `CLAIM_TEXT(name, **facts)` renders (`lib.templates.Readings`:
the sections see the thresholds below and the paper's numbers, `paper`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lib.claims import FAILS, HOLDS, UNDECIDED, Claim, Verdict, interval, need, side_of, wilson
from lib.prcurves import paper
from lib.templates import Readings

SAMPLING_DOMINATES = 0.6  # the band is mostly the estimator's noise when both decompositions give more than this
MODEL_DOMINATES = 0.4  # ... mostly the models' when both give less

CLAIM_TEXT = Readings("01", __name__, kind="claims")  # the sentences: docs/results/templates/claims-01.md


def _diff(r: Mapping[str, Any], key: str) -> tuple[float, float, float]:
    d = need(r, "width_diff", key)
    return d["difference"], d["lower"], d["upper"]


def _band_order(r: Mapping[str, Any]) -> Verdict:
    widths = need(r, "band_width")
    low_end, high_end = _diff(r, "1-2"), _diff(r, "8-4")
    sides = side_of(low_end[1], low_end[2]), side_of(high_end[1], high_end[2])
    verdict = HOLDS if sides == (HOLDS, HOLDS) else FAILS if FAILS in sides else UNDECIDED
    below = need(r, "below_0.9")
    why = CLAIM_TEXT("band-order-why", low_end=interval(*low_end, digits=4), high_end=interval(*high_end, digits=4),
                     below=below)
    return Verdict(verdict, CLAIM_TEXT("band-order-ours", widths=widths), why)


def _failures(r: Mapping[str, Any]) -> Verdict:
    recipe = need(r, "authors_recipe")
    shares = {name: wilson(s["final_below"], s["members"]) for name, s in recipe.items()}
    verdicts = [side_of(lower, upper) for lower, upper in shares.values()]
    verdict = HOLDS if verdicts and all(v == HOLDS for v in verdicts) else UNDECIDED
    return Verdict(verdict, CLAIM_TEXT("failures-ours", recipe=recipe, shares=shares),
                   CLAIM_TEXT("failures-why", failed=sum(need(r, "below_0.9").values()),
                              members=4 * need(r, "num_members")))


def _significance(r: Mapping[str, Any]) -> Verdict:
    ci = need(r, "fraction_ci")
    bh = need(r, "fraction_significant", "paired_t/bh")
    verdict = HOLDS if ci["lower"] > 0 and bh > 0 else FAILS if ci["upper"] == 0 else UNDECIDED
    matches = ci["lower"] <= paper.FRACTION_PAIRED_T <= ci["upper"]
    return Verdict(verdict, CLAIM_TEXT("significance-ours", fraction=interval(ci["fraction"], ci["lower"], ci["upper"]),
                                       bh=bh),
                   CLAIM_TEXT("significance-why", matches=matches))


def _data_size(r: Mapping[str, Any]) -> Verdict:
    diffs = need(r, "fig4_diff")
    intervals, sides = {}, []
    for match, d in diffs.items():
        auc, width = d["auc"], d["width"]
        sides += [side_of(-auc["upper"], -auc["lower"]), side_of(width["lower"], width["upper"])]
        intervals[match] = (interval(auc["difference"], auc["lower"], auc["upper"], 4),
                            interval(width["difference"], width["lower"], width["upper"], 4))
    verdict = HOLDS if sides and all(s == HOLDS for s in sides) else FAILS if FAILS in sides else UNDECIDED
    return Verdict(verdict, CLAIM_TEXT("data-size-ours", diffs=intervals), CLAIM_TEXT("data-size-why"))


def _bands_measure_models(r: Mapping[str, Any]) -> Verdict:
    shares = need(r, "sampling_share")
    by_c: dict[str, list[float]] = {}
    for key, value in shares.items():
        by_c.setdefault(key.split("/")[0], []).append(value)
    sampling = [c for c, v in by_c.items() if min(v) > SAMPLING_DOMINATES]
    model = [c for c, v in by_c.items() if max(v) < MODEL_DOMINATES]
    verdict = HOLDS if len(model) == len(by_c) else FAILS if len(sampling) == len(by_c) else UNDECIDED
    return Verdict(verdict, CLAIM_TEXT("model-uncertainty-ours", by_c=by_c),
                   CLAIM_TEXT("model-uncertainty-why", sampling=sampling, model=model))


def _feature_space(r: Mapping[str, Any]) -> Verdict:
    spaces = need(r, "feature_spaces")
    kept = [s for s, f in spaces.items() if f.get("same_best") and f.get("same_order")]
    fractions = [f["fraction"] for f in spaces.values()]
    verdict = FAILS if len(kept) == len(spaces) else HOLDS if not kept else UNDECIDED
    return Verdict(verdict, CLAIM_TEXT("feature-space-ours", kept=kept, spaces=spaces, fractions=fractions),
                   CLAIM_TEXT("feature-space-why"))


def _correction(r: Mapping[str, Any]) -> Verdict:
    f = need(r, "fraction_significant")
    raw, bh, maxt = f["paired_t/none"], f["paired_t/bh"], f.get("permutation_maxT/none")
    verdict = HOLDS if bh < raw else UNDECIDED
    return Verdict(verdict, CLAIM_TEXT("correction-ours", raw=raw, bh=bh, maxt=maxt),
                   CLAIM_TEXT("correction-why", raw=raw, bh=bh))


def _no_guarantee(r: Mapping[str, Any]) -> Verdict:
    cover = need(r, "band_coverage")
    below = [c for c, v in cover.items() if v["upper"] < v["nominal"]]
    nominal = next(iter(cover.values()))["nominal"]
    verdict = HOLDS if below else UNDECIDED
    shares = {c: interval(v["coverage"], v["lower"], v["upper"]) for c, v in cover.items()}
    return Verdict(verdict, CLAIM_TEXT("no-guarantee-ours", shares=shares, nominal=nominal),
                   CLAIM_TEXT("no-guarantee-why", exchangeable=next(iter(cover.values()))["exchangeable"], below=below))


CLAIMS = (
    Claim("01.band-order", "C5", CLAIM_TEXT("band-order-words"), CLAIM_TEXT("band-order-paper"),
          CLAIM_TEXT("band-order-measure"), decide=_band_order),
    Claim("01.failures", "spec §1 table", CLAIM_TEXT("failures-words"), CLAIM_TEXT("failures-paper"),
          CLAIM_TEXT("failures-measure"), decide=_failures),
    Claim("01.significance", "C6", CLAIM_TEXT("significance-words"), CLAIM_TEXT("significance-paper"),
          CLAIM_TEXT("significance-measure"), decide=_significance),
    Claim("01.data-size", "C7", CLAIM_TEXT("data-size-words"), CLAIM_TEXT("stated"), CLAIM_TEXT("data-size-measure"),
          decide=_data_size),
    Claim("01.model-uncertainty", "§1 definitions", CLAIM_TEXT("model-uncertainty-words"), CLAIM_TEXT("stated"),
          CLAIM_TEXT("model-uncertainty-measure"), decide=_bands_measure_models),
    Claim("01.feature-space", "§1 limitations", CLAIM_TEXT("feature-space-words"), CLAIM_TEXT("stated"),
          CLAIM_TEXT("feature-space-measure"), decide=_feature_space),
    Claim("01.no-guarantee", "§1 limitations", CLAIM_TEXT("no-guarantee-words"), CLAIM_TEXT("stated"),
          CLAIM_TEXT("no-guarantee-measure"), decide=_no_guarantee),
    Claim("01.correction", "§1 limitations", CLAIM_TEXT("correction-words"), CLAIM_TEXT("stated"),
          CLAIM_TEXT("correction-measure"), decide=_correction),
)
