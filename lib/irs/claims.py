"""Notebook 04's claims ledger (`lib.claims`): the IRS paper's claims (spec 04 §1), what the run measures for each,
and the verdict its recorded results decide.

Each `decide` reads the glued results of notebook 04 (`r`): the simulation's coverages (§1), the ImageNet-scale
interval, the real data's IRS_∞ per extractor (the measurement gap, §2), the class-fraction fits (§3), and the
generator comparisons (§5): `gen_compare`, the main width's arms (one training seed: sampling noise only), and
`seed_compare`, the arms at width 16 over training seeds (`lib.irs.seed_study`, both noises counted); the toy
generators' precision, recall and coverage (§4) and the extractor vote.

Some findings need an interval the notebook does not record yet (the toy metrics' sample size, IRS_∞,a's interval,
the class-fraction slopes' interval): their claims show our point values, stay undecided, and name the record that
would decide them.

The decide functions keep the rules and compute the facts; every sentence the ledger states (a claim's words, the
paper's number, what is measured, what an offline claim needs, and each verdict's ours and why) is a section of
docs/results/templates/claims-04.md, rendered by `CLAIM_TEXT` (`lib.templates.Readings`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

from lib.claims import FAILS, HOLDS, UNDECIDED, Claim, Verdict, interval, need, need_record, side_of, wilson
from lib.irs import paper
from lib.irs.method import ALPHA_E
from lib.irs.readings import LARGE_N_RATIO, LINEAR_MIN_R2, LINEAR_SLOPE_TOLERANCE
from lib.templates import Readings

# the ledger's sentences: docs/results/templates/claims-04.md (the interval's level from ALPHA_E, the bias's n / N)
CLAIM_TEXT = Readings("04", __name__, kind="claims", also={"ALPHA_E": ALPHA_E, "LARGE_N_RATIO": LARGE_N_RATIO})
HALF_WIDTH_TOLERANCE = 0.005  # "about ±3.5 points": ours within half a point of it
COVERAGE_TOLERANCE = 0.02  # an interval covers "as stated" when the pooled coverage's lower bound is this close
SMALL_N = 0.05  # n / N of the simulation's smallest samples, where IRS fluctuates (`sim_bias`'s keys "s<s>/n<n / N>")


def _coverage(r: Mapping[str, Any]) -> Verdict:
    coverages = need(r, "sim_coverage")
    reps, alpha_e = need(r, "sim_reps"), need(r, "alpha_e")
    nominal = 1 - 2 * alpha_e
    hits = round(sum(c * reps for c in coverages.values()))
    trials = reps * len(coverages)
    lower, upper = wilson(hits, trials)
    verdict = HOLDS if lower > nominal - COVERAGE_TOLERANCE else FAILS if upper < nominal else UNDECIDED
    return Verdict(verdict, CLAIM_TEXT("intervals-ours", pooled=interval(hits / trials, lower, upper),
                                       low=min(coverages.values()), high=max(coverages.values())),
                   CLAIM_TEXT("intervals-why", settings=len(coverages), reps=reps, nominal=nominal))


def _imagenet(r: Mapping[str, Any]) -> Verdict:
    lower, estimate, upper = need(r, "imagenet_scale")[:3]
    nominal = 1 - 2 * need(r, "alpha_e")
    half = (upper - lower) / 2
    verdict = HOLDS if abs(half - paper.IMAGENET_HALF_WIDTH) <= HALF_WIDTH_TOLERANCE else FAILS
    missed = not lower <= paper.XL <= upper  # s / N: EDM-2-XL's IRS_∞,a
    return Verdict(verdict, CLAIM_TEXT("imagenet-noise-ours", half=half, estimate=interval(estimate, lower, upper)),
                   CLAIM_TEXT("imagenet-noise-why", missed=missed, nominal=nominal))


def _gap(r: Mapping[str, Any]) -> Verdict:
    real = need(r, "gap_irs_inf_real")
    below = [name for name, (lo, est, hi) in real.items() if hi < 1]
    verdict = HOLDS if len(below) == len(real) else UNDECIDED
    lows = [v[1] for v in real.values()]
    return Verdict(verdict, CLAIM_TEXT("gap-ours", low=min(lows), high=max(lows), below=len(below), total=len(real)),
                   CLAIM_TEXT("gap-why", n=need(r, "gap_n"), n_train=need(r, "n_train")))


def _linear(r: Mapping[str, Any]) -> Verdict:
    fits = need(r, "e2_fit")
    extractors = need(r, "extractors")
    linear, others = [], []
    for name in extractors:
        slope, _, r2 = fits[f"{name}/b/irs_adj"]
        (linear if abs(slope - 1) <= LINEAR_SLOPE_TOLERANCE and r2 >= LINEAR_MIN_R2 else others).append(name)
    verdict = HOLDS if not others else FAILS if not linear else UNDECIDED
    why = CLAIM_TEXT("linear-why", linear=linear, others=others, undecided=verdict == UNDECIDED)
    return Verdict(verdict, CLAIM_TEXT("linear-ours", linear=linear, total=len(extractors)), why)


def _over_seeds(r: Mapping[str, Any], arm: str, metric: str) -> Verdict:
    """The arm against the unconditional one over training seeds (width 16), on the main extractor, beside the
    main width's one seed."""
    key = f"{need(r, 'gen_headline', 'extractor')} / {arm} − unconditional / {metric}"  # the main extractor
    seeds = need(r, "seed_compare", key)
    one = need(r, "gen_compare", key)
    ratio = metric.startswith("log")
    shown = math.exp if ratio else (lambda v: v)  # a log ratio is shown as the ratio
    ours = CLAIM_TEXT("over-seeds-ours", ratio=ratio, seeds=[shown(seeds[k]) for k in ("mean", "lower", "upper")],
                      n=seeds["seeds"], one=[shown(one[k]) for k in ("mean", "lower", "upper")])
    if seeds["seeds"] < 2:
        why = CLAIM_TEXT("over-seeds-why-one-seed", side=side_of(seeds["lower"], seeds["upper"]))
        return Verdict(UNDECIDED, ours, why)
    alone = side_of(one["lower"], one["upper"])
    why = CLAIM_TEXT("over-seeds-why", n=seeds["seeds"], per_seed=seeds["per seed"], side=alone)
    return Verdict(seeds["verdict"], ours, why)


def _conditional(r: Mapping[str, Any]) -> Verdict:
    """The direction over seeds (`_over_seeds`), and the measured cause of its size against the paper's: how much
    room the unconditional arm leaves (a generator as diverse as the real data has IRS_∞,a 1)."""
    verdict = _over_seeds(r, "class", "log IRS_inf ratio")
    uncond = (r["gen_headline"].get("unconditional") or [None])[0]
    if not uncond:
        return verdict
    return Verdict(verdict.verdict, verdict.ours, CLAIM_TEXT("conditional-why", why=verdict.why, uncond=uncond))


def _small_n(r: Mapping[str, Any]) -> Verdict:
    bias = need(r, "sim_bias")
    small = {k: abs(v) for k, v in bias.items() if k.endswith(f"/n{SMALL_N:g}")}
    large = {k: abs(v) for k, v in bias.items() if not k.endswith(f"/n{SMALL_N:g}")}
    if not small or not large:
        return Verdict(UNDECIDED, CLAIM_TEXT("not-measured"), CLAIM_TEXT("small-n-no-setting"))
    ratio = max(small.values()) / max(large.values())
    verdict = HOLDS if ratio > 5 else UNDECIDED
    return Verdict(verdict, CLAIM_TEXT("small-n-ours", small=max(small.values()), large=max(large.values())),
                   CLAIM_TEXT("small-n-why", reps=need(r, "sim_reps")))


# ------------------------------------------------------------------------------------------------------------
# Recall and coverage, the adjustment, DiADM everywhere, IRS > 1, the vote
# ------------------------------------------------------------------------------------------------------------
TOY = ("irs_adj", "fid", "precision", "recall", "coverage")  # the columns of the `toy` record
LOW, REAL = "memorise-0.1", "real (SYN pool)"  # all classes present, a tenth of the training images; real data
LOW_DIVERSITY = 0.1  # the memoriser's true diversity g
SATURATED = 0.5  # recall "saturates" when a tenth of the diversity keeps more than half of real data's recall
Z_975 = 2.241  # two intervals at 97.5 % each: their ratio's interval holds 95 % (Bonferroni)
VOTE_LEVEL = 0.025  # the vote's exact test: one-sided, at this level on each side


def _ratio(p: float, q: float, n: int) -> tuple[float, float]:
    """The interval of p / q for two proportions over n each, from their Wilson intervals at 97.5 % (95 % together,
    whatever their dependence)."""
    p_lo, p_hi = wilson(round(p * n), n, Z_975)
    q_lo, q_hi = wilson(round(q * n), n, Z_975)
    return p_lo / q_hi, (p_hi / q_lo if q_lo > 0 else math.inf)


def _toy_ratio(r: Mapping[str, Any], column: str, above: float, rule: str) -> Verdict:
    """The toy generators' `column` of the all-class memoriser over real data's, per extractor: holds when every
    extractor's interval lies above `above`, fails when every one lies below, else undecided."""
    toy, i = need(r, "toy"), TOY.index(column)
    names = [e for e in need(r, "extractors") if f"{e}/{LOW}" in toy and f"{e}/{REAL}" in toy]
    if not names:
        return Verdict(UNDECIDED, CLAIM_TEXT("not-measured"), CLAIM_TEXT("toy-ratio-none"))
    ratios = {e: toy[f"{e}/{LOW}"][i] / toy[f"{e}/{REAL}"][i] for e in names}
    rows = [(e, toy[f"{e}/{LOW}"][i], toy[f"{e}/{REAL}"][i], ratios[e]) for e in names]
    n = r.get("toy_n")
    if n is None:
        return Verdict(UNDECIDED, CLAIM_TEXT("toy-ratio-ours", column=column, rows=rows, cis=None),
                       CLAIM_TEXT("toy-ratio-why-no-n", rule=rule))
    cis = {e: _ratio(toy[f"{e}/{LOW}"][i], toy[f"{e}/{REAL}"][i], n) for e in names}
    sides = [side_of(*cis[e], above=above) for e in names]
    verdict = HOLDS if all(s == HOLDS for s in sides) else FAILS if all(s == FAILS for s in sides) else UNDECIDED
    return Verdict(verdict, CLAIM_TEXT("toy-ratio-ours", column=column, rows=rows, cis=[cis[e] for e in names]),
                   CLAIM_TEXT("toy-ratio-why", rule=rule, n=n))


def _recall(r: Mapping[str, Any]) -> Verdict:
    return _toy_ratio(r, "recall", SATURATED, CLAIM_TEXT("recall-rule"))


def _coverage_low(r: Mapping[str, Any]) -> Verdict:
    return _toy_ratio(r, "coverage", LOW_DIVERSITY, CLAIM_TEXT("coverage-low-rule"))


def _coverage_k(r: Mapping[str, Any]) -> Verdict:
    record = CLAIM_TEXT("coverage-k-record")
    by_k = need_record(r, "toy_coverage_by_k", record=record)
    n = need_record(r, "toy_n", record=record)
    moved, sets = set(), set()
    for key, values in by_k.items():
        extractor = key.split("/")[0]
        sets.add(extractor)
        ks = sorted(values, key=float)
        (lo_a, hi_a), (lo_b, hi_b) = (wilson(round(values[k] * n), n, Z_975) for k in (ks[0], ks[-1]))
        if side_of(lo_b - hi_a, hi_b - lo_a) != UNDECIDED:
            moved.add(extractor)
    verdict = HOLDS if moved == sets else FAILS if not moved else UNDECIDED
    return Verdict(verdict, CLAIM_TEXT("coverage-k-ours", moved=len(moved), total=len(sets)),
                   CLAIM_TEXT("coverage-k-why"))


def _adjusted(r: Mapping[str, Any]) -> Verdict:
    fits, real = need(r, "e2_fit"), need(r, "gap_irs_inf_real")
    names = [e for e in need(r, "extractors") if f"{e}/b/irs_adj" in fits and f"{e}/b/irs_inf" in fits]
    raw = {e: fits[f"{e}/b/irs_inf"][0] for e in names}
    adj = {e: fits[f"{e}/b/irs_adj"][0] for e in names}
    lows = [v[1] for v in real.values()]
    ci = r.get("e2_fit_ci")
    facts = {"low": min(lows), "high": max(lows), "rows": [(e, raw[e], adj[e]) for e in names],
             "measured": ci is not None}
    ours, why = CLAIM_TEXT("adjusted-ours", **facts), CLAIM_TEXT("adjusted-why", **facts)
    if ci is None:
        return Verdict(UNDECIDED, ours, why)
    inside = [abs(ci[f"{e}/b/irs_adj"][1] - 1) <= LINEAR_SLOPE_TOLERANCE
              and abs(ci[f"{e}/b/irs_adj"][2] - 1) <= LINEAR_SLOPE_TOLERANCE for e in names]
    outside = [ci[f"{e}/b/irs_adj"][2] < 1 - LINEAR_SLOPE_TOLERANCE or ci[f"{e}/b/irs_adj"][1] > 1 +
               LINEAR_SLOPE_TOLERANCE for e in names]
    verdict = HOLDS if all(inside) else FAILS if any(outside) else UNDECIDED
    return Verdict(verdict, ours, why)


def _diadm_everywhere(r: Mapping[str, Any]) -> Verdict:
    seeds = need(r, "seed_compare")
    metrics = ("log IRS_inf ratio", "FID gain")
    names = sorted({k.split(" / ")[0] for k in seeds if " / diadm − unconditional / " in k})
    if not names:
        return Verdict(UNDECIDED, CLAIM_TEXT("not-measured"), CLAIM_TEXT("diadm-everywhere-none"))
    found = {(e, m): seeds[f"{e} / diadm − unconditional / {m}"] for e in names for m in metrics}
    sides = {key: side_of(v["lower"], v["upper"]) if v["seeds"] > 1 else UNDECIDED for key, v in found.items()}
    verdict = HOLDS if all(s == HOLDS for s in sides.values()) else FAILS if FAILS in sides.values() else UNDECIDED
    held = sum(s == HOLDS for s in sides.values())
    ratio, gain = ({e: found[(e, m)] for e in names} for m in metrics)
    rows = [(e, interval(*(math.exp(ratio[e][k]) for k in ("mean", "lower", "upper")), digits=2),
             interval(*(gain[e][k] for k in ("mean", "lower", "upper")), digits=2)) for e in names]
    return Verdict(verdict, CLAIM_TEXT("diadm-everywhere-ours", held=held, total=len(sides), rows=rows),
                   CLAIM_TEXT("diadm-everywhere-why"))


def _beyond(r: Mapping[str, Any]) -> Verdict:
    e3 = need(r, "e3")
    over = {k: v[4] for k, v in e3.items() if v[4] > 1}
    diadm = {k: v[0] for k, v in r.get("generators", {}).items() if "/diadm" in k}
    top = max(diadm, key=diadm.get) if diadm else None
    ci = r.get("e3_adjusted")
    above = [k for k, v in ci.items() if v[1] > 1] if ci is not None else []
    ours = CLAIM_TEXT("beyond-ours", over=len(over), total=len(e3), measured=ci is not None,
                      peak=max(over.values()) if over else None, peak_name=max(over, key=over.get) if over else None,
                      top=top, diadm=diadm[top] if top else None)
    why = CLAIM_TEXT("beyond-why", measured=ci is not None, above=above)
    if ci is None:
        return Verdict(UNDECIDED, ours, why)
    return Verdict(FAILS if above else UNDECIDED, ours, why)


def _chance_tau(n: int) -> list[float]:
    """Kendall's τ of every order of n items against a fixed one: τ's distribution under chance."""
    pairs = n * (n - 1) / 2
    return [1 - 2 * sum(p[i] > p[j] for i in range(n) for j in range(i + 1, n)) / pairs
            for p in itertools.permutations(range(n))]


def _vote(r: Mapping[str, Any]) -> Verdict:
    ballot = need(r, "vote")
    tau, names = ballot["tau"], list(ballot["rates"])
    chance = _chance_tau(len(names))
    p_low = sum(t <= tau + 1e-9 for t in chance) / len(chance)
    p_high = sum(t >= tau - 1e-9 for t in chance) / len(chance)
    verdict = HOLDS if p_high <= VOTE_LEVEL else FAILS if p_low <= VOTE_LEVEL else UNDECIDED
    ours = CLAIM_TEXT("vote-ours", tau=tau, n=len(names), p_low=p_low, p_high=p_high, chosen=ballot["chosen"],
                      linear_first=ballot["linear_order"][0], threshold=ballot["threshold"], share=ballot["share"])
    return Verdict(verdict, ours, CLAIM_TEXT("vote-why"))


CLAIMS = (
    Claim("04.intervals", "§1, §3", CLAIM_TEXT("intervals-words"), CLAIM_TEXT("intervals-paper"),
          CLAIM_TEXT("intervals-measure"), decide=_coverage),
    Claim("04.imagenet-noise", "spec §1 caveat", CLAIM_TEXT("imagenet-noise-words"), CLAIM_TEXT("imagenet-noise-paper"),
          CLAIM_TEXT("imagenet-noise-measure"), decide=_imagenet),
    Claim("04.gap", "§1, measurement gap", CLAIM_TEXT("gap-words"), CLAIM_TEXT("gap-paper"), CLAIM_TEXT("gap-measure"),
          decide=_gap),
    Claim("04.linear", "§1, controlled experiments", CLAIM_TEXT("linear-words"), CLAIM_TEXT("linear-paper"),
          CLAIM_TEXT("linear-measure"), decide=_linear),
    Claim("04.diadm-irs", "§1, DiADM table", CLAIM_TEXT("diadm-irs-words"), CLAIM_TEXT("diadm-irs-paper"),
          CLAIM_TEXT("diadm-irs-measure"), decide=lambda r: _over_seeds(r, "diadm", "log IRS_inf ratio")),
    Claim("04.diadm-fid", "§1, DiADM table", CLAIM_TEXT("diadm-fid-words"), CLAIM_TEXT("diadm-fid-paper"),
          CLAIM_TEXT("diadm-fid-measure"), decide=lambda r: _over_seeds(r, "diadm", "FID gain")),
    Claim("04.conditional", "§1, main table", CLAIM_TEXT("conditional-words"), CLAIM_TEXT("conditional-paper"),
          CLAIM_TEXT("conditional-measure"), decide=_conditional),
    Claim("04.small-n", "§1, limitations", CLAIM_TEXT("small-n-words"), CLAIM_TEXT("small-n-paper"),
          CLAIM_TEXT("small-n-measure"), decide=_small_n),
    Claim("04.best-77", "§1, further claims", CLAIM_TEXT("best-77-words"), CLAIM_TEXT("best-77-paper"),
          CLAIM_TEXT("best-77-measure"), missing=CLAIM_TEXT("best-77-missing")),
    Claim("04.xs-xl", "§1, further claims", CLAIM_TEXT("xs-xl-words"), CLAIM_TEXT("xs-xl-paper"),
          CLAIM_TEXT("xs-xl-measure"), missing=CLAIM_TEXT("xs-xl-missing")),
    Claim("04.deepfloyd", "§1, further claims", CLAIM_TEXT("deepfloyd-words"), CLAIM_TEXT("deepfloyd-paper"),
          CLAIM_TEXT("deepfloyd-measure"), missing=CLAIM_TEXT("deepfloyd-missing")),
    Claim("04.swav", "§1, measurement gap", CLAIM_TEXT("swav-words"), CLAIM_TEXT("swav-paper"),
          CLAIM_TEXT("swav-measure"), missing=CLAIM_TEXT("swav-missing")),
    Claim("04.recall", "§1, further claims", CLAIM_TEXT("recall-words"), CLAIM_TEXT("recall-paper"),
          CLAIM_TEXT("recall-measure"), decide=_recall),
    Claim("04.coverage-low", "§1, further claims", CLAIM_TEXT("coverage-low-words"), CLAIM_TEXT("coverage-low-paper"),
          CLAIM_TEXT("coverage-low-measure"), decide=_coverage_low),
    Claim("04.coverage-k", "§1, further claims", CLAIM_TEXT("coverage-k-words"), CLAIM_TEXT("coverage-k-paper"),
          CLAIM_TEXT("coverage-k-measure"), decide=_coverage_k),
    Claim("04.adjusted", "§1, main claims", CLAIM_TEXT("adjusted-words"), CLAIM_TEXT("adjusted-paper"),
          CLAIM_TEXT("adjusted-measure"), decide=_adjusted),
    Claim("04.diadm-everywhere", "§1, DiADM", CLAIM_TEXT("diadm-everywhere-words"),
          CLAIM_TEXT("diadm-everywhere-paper"), CLAIM_TEXT("diadm-everywhere-measure"), decide=_diadm_everywhere),
    Claim("04.beyond", "§1, DiADM", CLAIM_TEXT("beyond-words"), CLAIM_TEXT("beyond-paper"),
          CLAIM_TEXT("beyond-measure"), decide=_beyond),
    Claim("04.vote", "§1, measurement gap", CLAIM_TEXT("vote-words"), CLAIM_TEXT("vote-paper"),
          CLAIM_TEXT("vote-measure"), decide=_vote),
    Claim("04.nn-cost", "§1, limitations", CLAIM_TEXT("nn-cost-words"), CLAIM_TEXT("nn-cost-paper"),
          CLAIM_TEXT("nn-cost-measure"), missing=CLAIM_TEXT("nn-cost-missing")),
)
