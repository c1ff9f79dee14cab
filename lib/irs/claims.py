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
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

from lib.claims import FAILS, HOLDS, UNDECIDED, Claim, Verdict, interval, need, need_record, side_of, wilson
from lib.irs import paper
from lib.irs.readings import LINEAR_MIN_R2, LINEAR_SLOPE_TOLERANCE
from lib.reading import pct

IMAGENET_SCALE = f"N = {paper.IMAGENET_TRAIN:,}, n = {paper.IMAGENET_SAMPLES:,}"  # the paper's database and samples
HALF_WIDTH_TOLERANCE = 0.005  # "about ±3.5 points": ours within half a point of it
COVERAGE_TOLERANCE = 0.02  # an interval covers "as stated" when the pooled coverage's lower bound is this close


def _coverage(r: Mapping[str, Any]) -> Verdict:
    coverages = need(r, "sim_coverage")
    reps, alpha_e = need(r, "sim_reps"), need(r, "alpha_e")
    nominal = 1 - 2 * alpha_e
    hits = round(sum(c * reps for c in coverages.values()))
    trials = reps * len(coverages)
    lower, upper = wilson(hits, trials)
    verdict = HOLDS if lower > nominal - COVERAGE_TOLERANCE else FAILS if upper < nominal else UNDECIDED
    return Verdict(verdict, f"{interval(hits / trials, lower, upper)} pooled; {min(coverages.values()):.3f}–"
                            f"{max(coverages.values()):.3f} per setting",
                   f"{len(coverages)} simulated settings × {reps} repetitions, nominal {nominal:.2f}; holds when the "
                   f"pooled coverage's 95 % Wilson interval reaches above {nominal - COVERAGE_TOLERANCE:.2f}, fails "
                   "when it lies below nominal")


def _imagenet(r: Mapping[str, Any]) -> Verdict:
    lower, estimate, upper = need(r, "imagenet_scale")[:3]
    nominal = 1 - 2 * need(r, "alpha_e")
    half = (upper - lower) / 2
    verdict = HOLDS if abs(half - paper.IMAGENET_HALF_WIDTH) <= HALF_WIDTH_TOLERANCE else FAILS
    missed = not lower <= paper.XL <= upper  # s / N: EDM-2-XL's IRS_∞,a
    return Verdict(verdict, f"±{100 * half:.1f} points ({interval(estimate, lower, upper)})",
                   f"one draw at {IMAGENET_SCALE}, s = {paper.XL:g} N; the rule: within "
                   f"{100 * HALF_WIDTH_TOLERANCE:.1f} point of ±{100 * paper.IMAGENET_HALF_WIDTH:.1f}"
                   + (f"; this draw's interval misses the truth {paper.XL:g}, as one {100 * nominal:.0f} % "
                      f"interval in {round(1 / (1 - nominal))} does: the simulation's coverage (the claim above) is "
                      "what decides the intervals" if missed else ""))


def _gap(r: Mapping[str, Any]) -> Verdict:
    real = need(r, "gap_irs_inf_real")
    below = [name for name, (lo, est, hi) in real.items() if hi < 1]
    verdict = HOLDS if len(below) == len(real) else UNDECIDED
    lows = [v[1] for v in real.values()]
    return Verdict(verdict, f"real data's IRS_∞ {min(lows):.2f}–{max(lows):.2f}; below 1 on {len(below)} of "
                            f"{len(real)} extractors", "holds when every extractor's 90 % interval of the real "
                                                       "held-out images' IRS_∞ lies below 1 (n = "
                            f"{need(r, 'gap_n'):,} against N = {need(r, 'n_train'):,})")


def _linear(r: Mapping[str, Any]) -> Verdict:
    fits = need(r, "e2_fit")
    extractors = need(r, "extractors")
    linear, others = [], []
    for name in extractors:
        slope, _, r2 = fits[f"{name}/b/irs_adj"]
        (linear if abs(slope - 1) <= LINEAR_SLOPE_TOLERANCE and r2 >= LINEAR_MIN_R2 else others).append(name)
    verdict = HOLDS if not others else FAILS if not linear else UNDECIDED
    why = (f"linear (|slope − 1| ≤ {LINEAR_SLOPE_TOLERANCE}, R² ≥ {LINEAR_MIN_R2}, regime b) on "
           f"{', '.join(linear) or 'none'}; not on {', '.join(others) or 'none'}")
    if verdict == UNDECIDED:
        why += ("; it depends on the extractor, and the paper's (SwAV on ImageNet) is not available offline")
    return Verdict(verdict, f"linear on {len(linear)} of {len(extractors)} extractors", why)


def _over_seeds(r: Mapping[str, Any], arm: str, metric: str) -> Verdict:
    """The arm against the unconditional one over training seeds (width 16), on the main extractor, beside the
    main width's one seed."""
    key = f"{need(r, 'gen_headline', 'extractor')} / {arm} − unconditional / {metric}"  # the main extractor
    seeds = need(r, "seed_compare", key)
    one = need(r, "gen_compare", key)
    ratio = metric.startswith("log")
    show = (lambda v: f"{math.exp(v):.2f}") if ratio else (lambda v: f"{v:.2f}")
    what = "IRS_∞ ratio" if ratio else "FID gain"
    ours = (f"{what} {show(seeds['mean'])} [{show(seeds['lower'])}, {show(seeds['upper'])}] over {seeds['seeds']} "
            f"seed{'s' if seeds['seeds'] > 1 else ''} (width 16); {show(one['mean'])} [{show(one['lower'])}, "
            f"{show(one['upper'])}] at width 32 (one seed)")
    if seeds["seeds"] < 2:
        why = ("one training seed: its interval holds sampling noise only "
               f"({'above' if seeds['lower'] > 0 else 'below' if seeds['upper'] < 0 else 'around'} no effect); "
               "another seed of each arm decides it")
        return Verdict(UNDECIDED, ours, why)
    alone = {HOLDS: "above", FAILS: "below", UNDECIDED: "around"}[side_of(one["lower"], one["upper"])]
    why = (f"Student's t over {seeds['seeds']} training seeds (per seed {seeds['per seed']}), each arm's sampling "
           f"error inside; holds when the interval lies above no effect (the direction; the paper's size is another "
           f"matter: its data and models differ); width 32's one seed: its sampling interval lies {alone} no effect")
    return Verdict(seeds["verdict"], ours, why)


def _conditional(r: Mapping[str, Any]) -> Verdict:
    """The direction over seeds (`_over_seeds`), and the measured cause of its size against the paper's: how much
    room the unconditional arm leaves (a generator as diverse as the real data has IRS_∞,a 1)."""
    verdict = _over_seeds(r, "class", "log IRS_inf ratio")
    uncond = (r["gen_headline"].get("unconditional") or [None])[0]
    if not uncond:
        return verdict
    return Verdict(verdict.verdict, verdict.ours,
                   verdict.why + f"; the size: the unconditional arm already reaches IRS_∞,a {uncond:.2f} (width 32), "
                   f"so even a generator as diverse as the real data would be {1 / uncond:.1f} times it, where the "
                   f"paper's unconditional EDM-2-XL at {paper.XL_UNCONDITIONAL} leaves room for a ratio of "
                   f"{1 / paper.XL_UNCONDITIONAL:.0f}")


def _small_n(r: Mapping[str, Any]) -> Verdict:
    bias = need(r, "sim_bias")
    small = {k: abs(v) for k, v in bias.items() if k.endswith("/n0.05")}
    large = {k: abs(v) for k, v in bias.items() if not k.endswith("/n0.05")}
    if not small or not large:
        return Verdict(UNDECIDED, "not measured by this run", "the simulation has no setting at n = 0.05 N")
    ratio = max(small.values()) / max(large.values())
    verdict = HOLDS if ratio > 5 else UNDECIDED
    return Verdict(verdict, f"largest |bias| {max(small.values()):.3f} at n = 0.05 N against "
                            f"{max(large.values()):.4f} at n ≥ 0.2 N",
                   f"mean bias of IRS_∞ over {need(r, 'sim_reps')} repetitions per setting; holds when it is over "
                   "5 times larger at the smallest n")


# ------------------------------------------------------------------------------------------------------------
# Recall and coverage, the adjustment, DiADM everywhere, IRS > 1, the vote
# ------------------------------------------------------------------------------------------------------------
TOY = ("irs_adj", "fid", "precision", "recall", "coverage")  # the columns of the `toy` record
LOW, REAL = "memorise-0.1", "real (SYN pool)"  # all classes present, a tenth of the training images; real data
LOW_DIVERSITY = 0.1  # the memoriser's true diversity g
SATURATED = 0.5  # recall "saturates" when a tenth of the diversity keeps more than half of real data's recall
Z_975 = 2.241  # two intervals at 97.5 % each: their ratio's interval holds 95 % (Bonferroni)
TOY_N_RECORD = ("toy_n: the number of real reference images (= generated images) each toy generator's precision, "
                "recall and coverage count over")


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
        return Verdict(UNDECIDED, "not measured by this run", f"the toy generators include no {LOW} and {REAL}")
    ratios = {e: toy[f"{e}/{LOW}"][i] / toy[f"{e}/{REAL}"][i] for e in names}
    ours = f"{column} of {LOW} over {REAL}'s: " + ", ".join(
        f"{e} {toy[f'{e}/{LOW}'][i]:.3f} / {toy[f'{e}/{REAL}'][i]:.3f} = {ratios[e]:.2f}" for e in names)
    n = r.get("toy_n")
    if n is None:
        return Verdict(UNDECIDED, ours + " (no interval)", f"{rule}; the run records the proportions without the "
                                                           f"number of images they count over: it needs {TOY_N_RECORD}")
    cis = {e: _ratio(toy[f"{e}/{LOW}"][i], toy[f"{e}/{REAL}"][i], n) for e in names}
    sides = [side_of(*cis[e], above=above) for e in names]
    verdict = HOLDS if all(s == HOLDS for s in sides) else FAILS if all(s == FAILS for s in sides) else UNDECIDED
    return Verdict(verdict, ours + "; intervals " + ", ".join(f"[{cis[e][0]:.2f}, {cis[e][1]:.2f}]" for e in names),
                   f"{rule}; n = {n:,} per set, each metric taken as a proportion of n images (their k-NN "
                   "indicators are not independent, so the Wilson interval is approximate)")


def _recall(r: Mapping[str, Any]) -> Verdict:
    return _toy_ratio(r, "recall", SATURATED,
                      f"a memoriser of {LOW_DIVERSITY:.0%} of the training images (every class present) against "
                      "real held-out images, per extractor, the ratio's interval from two Wilson intervals at 97.5 %; "
                      f"holds when on every extractor it keeps more than {SATURATED:.0%} of real data's recall "
                      "(saturated), fails when on every one it keeps less")


def _coverage_low(r: Mapping[str, Any]) -> Verdict:
    return _toy_ratio(r, "coverage", LOW_DIVERSITY,
                      f"a memoriser of {LOW_DIVERSITY:.0%} of the training images (its diversity) against real "
                      "held-out images, per extractor, the ratio's interval from two Wilson intervals at 97.5 %; "
                      f"holds when on every extractor coverage credits it with more than its diversity "
                      f"{LOW_DIVERSITY}, fails when on every one with less")


def _coverage_k(r: Mapping[str, Any]) -> Verdict:
    record = ("toy_coverage_by_k: {\"<extractor>/<generator>\": {\"<k>\": coverage}} at two or more k of the "
              "k-NN balls (the notebook records coverage at its one k), with " + TOY_N_RECORD)
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
    return Verdict(verdict, f"coverage moves with k on {len(moved)} of {len(sets)} extractors",
                   "each toy generator's coverage at the smallest and the largest k, the difference's interval from "
                   "two Wilson intervals at 97.5 %; holds when on every extractor some generator's coverage moves "
                   "decidedly with k, fails when none does")


def _adjusted(r: Mapping[str, Any]) -> Verdict:
    fits, real = need(r, "e2_fit"), need(r, "gap_irs_inf_real")
    names = [e for e in need(r, "extractors") if f"{e}/b/irs_adj" in fits and f"{e}/b/irs_inf" in fits]
    raw = {e: fits[f"{e}/b/irs_inf"][0] for e in names}
    adj = {e: fits[f"{e}/b/irs_adj"][0] for e in names}
    lows = [v[1] for v in real.values()]
    ours = (f"real data's IRS_∞ {min(lows):.2f}–{max(lows):.2f} across extractors; slope in the class fraction, raw → "
            "adjusted: " + ", ".join(f"{e} {raw[e]:.2f} → {adj[e]:.2f}" for e in names))
    rule = (f"ideal generators (held-out images of a fraction f of the classes, regime b): were the extractor's own "
            f"bias removed, IRS_∞,a would follow f with slope 1 on every extractor; holds when every extractor's "
            f"slope interval lies within 1 ± {LINEAR_SLOPE_TOLERANCE}, fails when some extractor's lies outside it")
    ci = r.get("e2_fit_ci")
    if ci is None:
        return Verdict(UNDECIDED, ours + " (no interval)",
                       f"{rule}; the slopes are recorded without an interval: it needs e2_fit_ci: "
                       "{\"<extractor>/b/irs_adj\": [slope, lower, upper]} over the class draws")
    inside = [abs(ci[f"{e}/b/irs_adj"][1] - 1) <= LINEAR_SLOPE_TOLERANCE
              and abs(ci[f"{e}/b/irs_adj"][2] - 1) <= LINEAR_SLOPE_TOLERANCE for e in names]
    outside = [ci[f"{e}/b/irs_adj"][2] < 1 - LINEAR_SLOPE_TOLERANCE or ci[f"{e}/b/irs_adj"][1] > 1 +
               LINEAR_SLOPE_TOLERANCE for e in names]
    verdict = HOLDS if all(inside) else FAILS if any(outside) else UNDECIDED
    return Verdict(verdict, ours, rule)


def _diadm_everywhere(r: Mapping[str, Any]) -> Verdict:
    seeds = need(r, "seed_compare")
    metrics = ("log IRS_inf ratio", "FID gain")
    names = sorted({k.split(" / ")[0] for k in seeds if " / diadm − unconditional / " in k})
    if not names:
        return Verdict(UNDECIDED, "not measured by this run", "the run compares no DiADM arm over seeds")
    found = {(e, m): seeds[f"{e} / diadm − unconditional / {m}"] for e in names for m in metrics}
    sides = {key: side_of(v["lower"], v["upper"]) if v["seeds"] > 1 else UNDECIDED for key, v in found.items()}
    verdict = HOLDS if all(s == HOLDS for s in sides.values()) else FAILS if FAILS in sides.values() else UNDECIDED
    held = sum(s == HOLDS for s in sides.values())
    ratio, gain = ({e: found[(e, m)] for e in names} for m in metrics)
    ours = f"{held} of {len(sides)} decided above no effect: " + "; ".join(
        f"{e} IRS_∞ ratio {interval(*(math.exp(ratio[e][k]) for k in ('mean', 'lower', 'upper')), digits=2)}, "
        f"FID gain {interval(*(gain[e][k] for k in ('mean', 'lower', 'upper')), digits=2)}" for e in names)
    return Verdict(verdict, ours,
                   "DiADM against the unconditional arm over training seeds (width 16, Student's t), on every "
                   "evaluation extractor of one dataset (CIFAR-10; the paper's four datasets are not offline, and "
                   "the conditioning extractor, where listed, is the circular case); holds when both gains lie above "
                   "no effect on every extractor, fails when one lies below")


def _beyond(r: Mapping[str, Any]) -> Verdict:
    e3 = need(r, "e3")
    over = {k: v[4] for k, v in e3.items() if v[4] > 1}
    diadm = {k: v[0] for k, v in r.get("generators", {}).items() if "/diadm" in k}
    top = max(diadm, key=diadm.get) if diadm else None
    ours = (f"memorisers (copies of training images only) with IRS_∞,a above 1: {len(over)} of {len(e3)}"
            + (f", up to {max(over.values()):.2f} ({max(over, key=over.get)})" if over else "")
            + (f"; DiADM's highest IRS_∞,a {diadm[top]:.2f} ({top})" if top else ""))
    rule = ("a memoriser copies training images and so covers nothing beyond the training distribution: fails when "
            "one's IRS_∞,a lies above 1 with its interval (IRS_∞,a > 1 then does not mean beyond); it cannot hold on "
            "copies, only fail or stay undecided")
    ci = r.get("e3_adjusted")
    if ci is None:
        return Verdict(UNDECIDED, ours + " (no interval)",
                       f"{rule}; IRS_∞,a is recorded without an interval: it needs e3_adjusted: "
                       "{\"<extractor>/g<g>\": [irs_adj, lower, upper]} (the bounds-ratio interval with the real "
                       "reference at the same n)")
    above = [k for k, v in ci.items() if v[1] > 1]
    return Verdict(FAILS if above else UNDECIDED, ours, rule + (f"; above 1: {', '.join(above)}" if above else ""))


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
    verdict = HOLDS if p_high <= 0.025 else FAILS if p_low <= 0.025 else UNDECIDED
    ours = (f"τ {tau:.2f} between the vote's ranking and the class-fraction linearity's over {len(names)} "
            f"extractors (chance: P(τ ≤ {tau:.2f}) = {p_low:.3f}, P(τ ≥ {tau:.2f}) = {p_high:.3f}); the vote picks "
            f"{ballot['chosen']}, the linearity {ballot['linear_order'][0]}; consensus (≥ {ballot['threshold']} of "
            f"{len(names)} agree) on {ballot['share']:.1%} of the queries")
    return Verdict(verdict, ours,
                   "the paper's rule on our extractors (≥ ⌈E · 5/9⌉ of E agree), judged by an independent criterion: "
                   "how linearly each extractor's IRS_∞,a follows the class fraction; exact test over every order of "
                   "the extractors, holds when the vote agrees more than chance (one-sided 2.5 %), fails when it "
                   "agrees less")


_PAPER = paper.DIADM.loc["ImageNet-512"]
_HALF_POINTS = f"{100 * paper.IMAGENET_HALF_WIDTH:.1f}"  # "about ±3.5 points"


def _offline(what: str) -> str:
    return f"needs {what}, which this machine does not have (no network, no ImageNet-scale models)"


CLAIMS = (
    Claim("04.intervals", "§1, §3", "The coupon-collector model's bounds are confidence intervals for IRS_∞",
          "exact 90 % intervals", "coverage of the simulated truth by the 90 % interval", decide=_coverage),
    Claim("04.imagenet-noise", "spec §1 caveat",
          f"At ImageNet scale (50k samples) the 90 % interval is about ±{_HALF_POINTS} points, so {paper.XL} against "
          f"{paper.XXL} is within noise", f"±{_HALF_POINTS} points", f"half-width of the interval at {IMAGENET_SCALE}",
          decide=_imagenet),
    Claim("04.gap", "§1, measurement gap", "Every extractor under-measures the diversity of real data",
          "9 of 9 extractors", "IRS_∞ of real held-out images, per extractor", decide=_gap),
    Claim("04.linear", "§1, controlled experiments", "IRS is linear in the true class fraction", "linear",
          "slope and R² of IRS_∞,a on the class fraction f, per extractor", decide=_linear),
    Claim("04.diadm-irs", "§1, DiADM table", "DiADM improves IRS over the unconditional generator",
          f"IRS_∞,a {_PAPER['EDM IRS_∞,a']} → {_PAPER['DiADM IRS_∞,a']} (ImageNet-512)",
          "IRS_∞ of DiADM over the unconditional arm's (one real reference: the ratio of IRS_∞,a)",
          decide=lambda r: _over_seeds(r, "diadm", "log IRS_inf ratio")),
    Claim("04.diadm-fid", "§1, DiADM table", "DiADM improves FID over the unconditional generator",
          f"FID {_PAPER['EDM FID']} → {_PAPER['DiADM FID']} (ImageNet-512)",
          "FID (test reference) of the unconditional arm minus DiADM's", decide=lambda r: _over_seeds(r, "diadm",
                                                                                                     "FID gain")),
    Claim("04.conditional", "§1, main table",
          "Class-conditional generation covers more of the training data than unconditional",
          f"IRS_∞,a {paper.XL} against {paper.XL_UNCONDITIONAL} (EDM-2-XL), a ratio of about "
          f"{paper.XL / paper.XL_UNCONDITIONAL:.0f}",
          "IRS_∞ of the class-conditional arm over the unconditional arm's",
          decide=_conditional),
    Claim("04.small-n", "§1, limitations", "IRS fluctuates at small sample sizes", "stated",
          "bias of IRS_∞ over simulated repetitions, by sample size", decide=_small_n),
    Claim("04.best-77", "§1, further claims", f"The best model (EDM-2-XL) covers {pct(paper.XL)} of the training data",
          f"{paper.XL}", "IRS_∞,a of EDM-2-XL on ImageNet",
          missing=_offline("EDM-2-XL and ImageNet's 1.28 M training images")),
    Claim("04.xs-xl", "§1, further claims",
          f"EDM-2 XS → XL raises IRS from {pct(paper.XS)} to {pct(paper.XL)} while FID moves 0.9",
          f"{paper.XS} → {paper.XL}", "IRS_∞,a of EDM-2 XS and XL", missing=_offline("the EDM-2 family's samples")),
    Claim("04.deepfloyd", "§1, further claims",
          "DeepFloyd reaches about 50 % diversity when the prompt leaves gender unspecified", "about 0.5",
          "IRS of DeepFloyd's samples", missing=_offline("DeepFloyd IF")),
    Claim("04.swav", "§1, measurement gap", "A vote of 9 extractors picks SwAV as the best", "SwAV",
          "the ensemble vote over the paper's 9 extractors",
          missing=_offline("SwAV, DINOv2, CLIP and the paper's other extractors (the vote runs here on 6)")),
    Claim("04.recall", "§1, further claims", "Recall saturates once all classes are present (at 0.8 on ImageNet)",
          "0.8",
          "recall of a memoriser of a tenth of the training images (every class present) over real data's",
          decide=_recall),
    Claim("04.coverage-low", "§1, further claims", "Coverage overestimates low diversity", "stated",
          "coverage of a memoriser of a tenth of the training images over real data's, against its diversity 0.1",
          decide=_coverage_low),
    Claim("04.coverage-k", "§1, further claims", "Coverage depends on a hyperparameter", "stated",
          "coverage of the toy generators at several k of the k-NN balls", decide=_coverage_k),
    Claim("04.adjusted", "§1, main claims", "IRS_∞,a removes the extractor's own bias (the measurement gap)",
          "stated", "slope of IRS_∞ and IRS_∞,a in the class fraction, per extractor", decide=_adjusted),
    Claim("04.diadm-everywhere", "§1, DiADM", "DiADM improves FID and IRS everywhere (the paper: on each of its "
          "four datasets)", "4 of 4 datasets", "DiADM over the unconditional arm over training seeds, on every "
          "evaluation extractor of the one offline dataset (CIFAR-10)",
          decide=_diadm_everywhere),
    Claim("04.beyond", "§1, DiADM", "IRS > 1 (DiADM on FFHQ) is read as covering beyond the training distribution",
          f"IRS_∞,a {paper.DIADM.loc['FFHQ', 'DiADM IRS_∞,a']} (FFHQ)",
          "IRS_∞,a of memorisers, which copy training images only", decide=_beyond),
    Claim("04.vote", "§1, measurement gap", "An ensemble vote (≥ 5 of 9 extractors agree on a retrieval) serves "
          "as pseudo ground truth for choosing the extractor", "≥ 5 of 9",
          "the vote's ranking of our extractors against their linearity in the class fraction", decide=_vote),
    Claim("04.nn-cost", "§1, limitations", "Nearest-neighbour retrieval is costly at scale", "stated",
          f"time of the retrieval at the paper's scale ({IMAGENET_SCALE}, d = 2,048)",
          missing="a timing of the retrieval at the paper's scale, which needs ImageNet's features (not on this "
                  "machine); the run records only its own CIFAR-10 times of cached or stored retrievals "
                  "(feature_seconds), which say nothing about scale"),
)
