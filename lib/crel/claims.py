"""Notebook 02's claims ledger (`lib.claims`): the CReL paper's claims (spec 02 §1), what the run measures for
each, and the verdict its recorded results decide.

Each `decide` reads the glued results of notebook 02 (`r`): the synthetic table per seed (`per_seed`: every method,
LGM and α on the same seeds, so two methods are compared on their difference per seed, Student's t over the seeds),
the guarantee over re-splits (`resplit`), the PGD's spread across starts and the trained label-to-image ranking.
The sentences (each claim's words, the paper's number, what is measured, and the `ours` and `why` of its verdict)
are the sections of docs/results/templates/claims-02.md (`CLAIM_TEXT`, a `lib.templates.Readings`), rendered from
the facts each `decide` computes, the constants below and the paper's numbers (`lib.crel.paper`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lib.claims import FAILS, HOLDS, UNDECIDED, Claim, NotMeasured, Verdict, interval, need, side_of, t_interval
from lib.crel import paper
from lib.crel.experiment import RUNTIME_REPEATS
from lib.linalg import slope_interval
from lib.templates import Readings

# the sentences: docs/results/templates/claims-02.md
CLAIM_TEXT = Readings("02", __name__, kind="claims", also={"RUNTIME_REPEATS": RUNTIME_REPEATS})

COVERAGE_TOLERANCE = 0.02  # as notebook 04's ledger: a coverage "as stated" reaches above 1 - alpha - this
ALPHA = paper.ALPHAS[0]  # the α of the paper's headline rows


def _values(r: Mapping[str, Any], lgm: str, method: str, alpha: float, column: str) -> dict[int, float]:
    """{seed: value} of one method's column in the synthetic table."""
    rows = need(r, "per_seed")
    out = {row["seed"]: row[column] for row in rows if row["lgm"] == lgm and row["method"] == method
           and row["alpha"] == alpha and row.get(column) is not None}
    if len(out) < 2:
        raise NotMeasured(f"per_seed/{lgm}/{method}/{alpha}/{column}")
    return out


def _paired(a: dict[int, float], b: dict[int, float]) -> tuple[float, float, float, int]:
    seeds = sorted(a.keys() & b.keys())
    mean, lower, upper = t_interval([a[s] - b[s] for s in seeds])
    return mean, lower, upper, len(seeds)


def _guarantee(r: Mapping[str, Any]) -> Verdict:
    g = need(r, "resplit")
    lower, upper = g["mean"] - 2 * g["se"], g["mean"] + 2 * g["se"]
    inside = lower <= g["upper"] and upper >= g["lower"]
    verdict = HOLDS if inside else FAILS
    return Verdict(verdict, CLAIM_TEXT("guarantee-ours", ci=interval(g["mean"], lower, upper, 4), g=g),
                   CLAIM_TEXT("guarantee-why", g=g))


def _coverage_y(lgm: str):
    def decide(r: Mapping[str, Any]) -> Verdict:
        cis, verdicts = [], []
        for alpha in need(r, "alphas"):
            values = _values(r, lgm, "CReL", alpha, "coverage_y")
            mean, lower, upper = t_interval(values.values())
            nominal = 1 - alpha
            verdicts.append(HOLDS if lower > nominal - COVERAGE_TOLERANCE else FAILS if upper < nominal
                            else UNDECIDED)
            cis.append((alpha, interval(mean, lower, upper, 4)))
        verdict = HOLDS if all(v == HOLDS for v in verdicts) else FAILS if FAILS in verdicts else UNDECIDED
        return Verdict(verdict, CLAIM_TEXT("coverage-y-ours", cis=cis, n=len(values)),
                       CLAIM_TEXT("coverage-y-why", lgm=lgm))
    return decide


def _area_against(method: str, paper_larger: bool):
    def decide(r: Mapping[str, Any]) -> Verdict:
        other = _values(r, "flow" if method != "DQR (Y-space)" else "none", method, ALPHA, "area")
        crel = _values(r, "flow", "CReL", ALPHA, "area")
        mean, lower, upper, n = _paired(other, crel)
        side = side_of(lower, upper)
        verdict = side if paper_larger else {HOLDS: FAILS, FAILS: HOLDS, UNDECIDED: UNDECIDED}[side]
        ours = CLAIM_TEXT("area-ours", method=method, ci=interval(mean, lower, upper, 1), n=n,
                          crel=sum(crel.values()) / len(crel))
        by_k = {}
        if method == "PCP":
            by_k = dict(sorted((r.get("pcp_by_k") or {}).items(), key=lambda kv: int(kv[0])))  # JSON sorts as text
        unexplained = method == "PCP" and not by_k and verdict == FAILS
        return Verdict(verdict, ours, CLAIM_TEXT("area-why", by_k=by_k, unexplained=unexplained))
    return decide


def _conservative(r: Mapping[str, Any]) -> Verdict:
    crel = _values(r, "flow", "CReL", ALPHA, "coverage_y")
    feldman = _values(r, "flow", "Feldman", ALPHA, "coverage_y")
    mean, lower, upper, n = _paired(crel, feldman)
    return Verdict(side_of(lower, upper), CLAIM_TEXT("conservative-ours", ci=interval(mean, lower, upper, 4), n=n),
                   CLAIM_TEXT("conservative-why"))


PAR_MARGIN = 0.10  # "on par" [proposal]: the paired area difference within ± 10 % of Feldman's mean area


def _area_par(r: Mapping[str, Any]) -> Verdict:
    feldman = _values(r, "flow", "Feldman", ALPHA, "area")
    crel = _values(r, "flow", "CReL", ALPHA, "area")
    mean, lower, upper, n = _paired(crel, feldman)
    scale = sum(feldman.values()) / len(feldman)
    lo, hi = lower / scale, upper / scale
    verdict = HOLDS if -PAR_MARGIN < lo and hi < PAR_MARGIN else FAILS if lo > PAR_MARGIN or hi < -PAR_MARGIN \
        else UNDECIDED
    return Verdict(verdict, CLAIM_TEXT("area-feldman-ours", ci=interval(mean, lower, upper, 1), lo=lo, hi=hi,
                                       scale=scale, n=n),
                   CLAIM_TEXT("area-feldman-why"))


def _runtime(r: Mapping[str, Any]) -> Verdict:
    import math

    runtime = {int(d): v for d, v in need(r, "runtime").items()}
    if len(runtime) < 3:
        raise NotMeasured("runtime (at least three dimensions)")
    dims = sorted(runtime)
    crel = slope_interval([math.log(d) for d in dims], [math.log(runtime[d][0]) for d in dims])
    feldman = slope_interval(dims, [math.log(runtime[d][1]) for d in dims])
    linear = HOLDS if crel[2] < 1 else FAILS if crel[1] > 1 else UNDECIDED
    grows = side_of(feldman[1], feldman[2])
    verdict = HOLDS if (linear, grows) == (HOLDS, HOLDS) else FAILS if FAILS in (linear, grows) else UNDECIDED
    factor = [math.exp(v) for v in feldman[:3]]  # Feldman's factor per dimension [its interval]
    return Verdict(verdict, CLAIM_TEXT("runtime-ours", crel=crel, factor=factor, dims=dims),
                   CLAIM_TEXT("runtime-why"))


def _marginal(r: Mapping[str, Any]) -> Verdict:
    cond = need(r, "conditional")
    crel, others = cond["CReL"], {m: g for m, g in cond.items() if m != "CReL"}
    verdict = HOLDS if crel["under"] else UNDECIDED
    return Verdict(verdict, CLAIM_TEXT("marginal-ours", crel=crel, others=others),
                   CLAIM_TEXT("marginal-why", crel=crel, others=others))


def _reconstruction(r: Mapping[str, Any]) -> Verdict:
    sets = {label: v for label, v in need(r, "label_to_image").items() if v.get("rank_mean") is not None}
    gaps = [v["mean"] - v["recon"] for v in sets.values()]
    if len(gaps) < 2:
        raise NotMeasured("label_to_image (two generators)")
    mean, lower, upper = t_interval(gaps)
    return Verdict(side_of(lower, upper),
                   CLAIM_TEXT("reconstruction-ours", ci=interval(mean, lower, upper, 3), n=len(gaps)),
                   CLAIM_TEXT("reconstruction-why"))


def _concentration(r: Mapping[str, Any]) -> Verdict:
    seeds = need(r, "guidance_seeds")
    sd = need(seeds, "sd_w4_minus_w2")
    lower, upper = sd["lower"], sd["upper"]
    verdict = {HOLDS: FAILS, FAILS: HOLDS, UNDECIDED: UNDECIDED}[side_of(lower, upper)]
    above = sum(e > 0 for e in sd["per_seed"])
    return Verdict(verdict, CLAIM_TEXT("concentration-ours", ci=interval(sd["mean"], lower, upper, 4),
                                       n=len(sd["per_seed"]), above=above),
                   CLAIM_TEXT("concentration-why"))
def gaussian_halfspace_coverage(alpha: float) -> float:
    """The coverage of {z : u·z ≤ q_{1−α} for every direction u} under a standard 2-D Gaussian latent: the disk of
    radius z_{1−α}, so 1 − exp(−z²_{1−α} / 2) [derived; K = 64 directions give a polygon whose area exceeds the
    disk's by 0.08 %]. An uncalibrated DQR in a Gaussian latent space intersects K halfspaces of marginal coverage
    1 − α each, so this is the joint coverage it can reach, well below 1 − α."""
    import math

    from scipy.stats import norm

    z = float(norm.ppf(1 - alpha))
    return 1 - math.exp(-z * z / 2)


def _dqr_row(r: Mapping[str, Any]) -> Verdict:
    lgm = need(r, "lgm")
    levels, sides = [], []
    for alpha in need(r, "alphas"):
        values = _values(r, lgm, "DQR (latent, uncalibrated)", alpha, "coverage_z")
        mean, lower, upper = t_interval(values.values())
        reported = paper.TABLE[("DQR", alpha)][0]
        gaussian = gaussian_halfspace_coverage(alpha)
        sides.append(side_of(lower, upper, above=reported))
        levels.append({"alpha": alpha, "ci": interval(mean, lower, upper, 4), "reported": reported,
                       "gaussian": gaussian, "matches": lower <= gaussian <= upper})
    low, high = min(need(r, "alphas")), max(need(r, "alphas"))
    area = _values(r, "none", "DQR (Y-space)", low, "area")
    wide = _values(r, "none", "DQR (Y-space)", high, "area")
    a_mean, a_lower, a_upper, n = _paired(area, wide)
    verdict = FAILS if FAILS in sides else HOLDS if all(s == HOLDS for s in sides) else UNDECIDED
    return Verdict(verdict, CLAIM_TEXT("dqr-row-ours", levels=levels, n=len(area), lgm=lgm, low=low, high=high,
                                       area_ci=interval(a_mean, a_lower, a_upper, 1)),
                   CLAIM_TEXT("dqr-row-why", levels=levels, matched=sum(level["matches"] for level in levels),
                              order=side_of(a_lower, a_upper)))


def _spread(r: Mapping[str, Any]) -> Verdict:
    spread = need(r, "spread")
    median = max(s["median_std"] for s in spread.values())
    basin = max(s["median_basin_std"] for s in spread.values())
    verdict = HOLDS if median <= paper.SPREAD else FAILS
    return Verdict(verdict, CLAIM_TEXT("pgd-spread-ours", median=median, basin=basin),
                   CLAIM_TEXT("pgd-spread-why", verdict=verdict))


def _reversal(r: Mapping[str, Any]) -> Verdict:
    ranking = need(r, "label_to_image_ranking")
    facts = {"pairs": ranking["reversed"], "n_pairs": ranking["n_pairs"], "tau": ranking["tau"]}
    seeds = r.get("guidance_seeds")
    if not seeds:  # not recorded, or recorded empty: the seeds were measured for another preset
        facts["seeds"] = None
        return Verdict(UNDECIDED, CLAIM_TEXT("reversal-ours", **facts), CLAIM_TEXT("reversal-why", **facts))
    mean, worst = seeds["mean_w2_minus_w4"], seeds["crel_w4_minus_w2"]
    facts |= {"seeds": seeds, "n": len(seeds["seeds"]),
              "mean_ci": interval(mean["mean"], mean["lower"], mean["upper"], 4),
              "crel_ci": interval(worst["mean"], worst["lower"], worst["upper"], 4)}
    return Verdict({"holds": HOLDS, "fails": FAILS}.get(seeds["verdict"], UNDECIDED),
                   CLAIM_TEXT("reversal-ours", **facts), CLAIM_TEXT("reversal-why", **facts))


CLAIMS = (
    Claim("02.guarantee", "§1 coverage", CLAIM_TEXT("guarantee-words"), CLAIM_TEXT("guarantee-paper"),
          CLAIM_TEXT("guarantee-measure"), decide=_guarantee),
    Claim("02.coverage-flow", "§1 coverage", CLAIM_TEXT("coverage-flow-words"), CLAIM_TEXT("coverage-flow-paper"),
          CLAIM_TEXT("coverage-flow-measure"), decide=_coverage_y("flow")),
    Claim("02.coverage-cvae", "§1 coverage", CLAIM_TEXT("coverage-cvae-words"), CLAIM_TEXT("coverage-cvae-paper"),
          CLAIM_TEXT("coverage-cvae-measure"), decide=_coverage_y("cvae")),
    Claim("02.area-dqr", "§1 table", CLAIM_TEXT("area-dqr-words"), CLAIM_TEXT("area-dqr-paper"),
          CLAIM_TEXT("area-dqr-measure"), decide=_area_against("DQR (Y-space)", paper_larger=True)),
    Claim("02.area-pcp", "§1 table", CLAIM_TEXT("area-pcp-words"), CLAIM_TEXT("area-pcp-paper"),
          CLAIM_TEXT("area-pcp-measure"), decide=_area_against("PCP", paper_larger=True)),
    Claim("02.dqr-row", "§1 table", CLAIM_TEXT("dqr-row-words"), CLAIM_TEXT("dqr-row-paper"),
          CLAIM_TEXT("dqr-row-measure"), decide=_dqr_row),
    Claim("02.conservative", "§1 coverage", CLAIM_TEXT("conservative-words"), CLAIM_TEXT("conservative-paper"),
          CLAIM_TEXT("conservative-measure"), decide=_conservative),
    Claim("02.pgd-spread", "§1 further claims", CLAIM_TEXT("pgd-spread-words"), CLAIM_TEXT("pgd-spread-paper"),
          CLAIM_TEXT("pgd-spread-measure"), decide=_spread),
    Claim("02.reversal", "§1", CLAIM_TEXT("reversal-words"), CLAIM_TEXT("reversal-paper"),
          CLAIM_TEXT("reversal-measure"), decide=_reversal),
    Claim("02.area-feldman", "§1 table", CLAIM_TEXT("area-feldman-words"), CLAIM_TEXT("area-feldman-paper"),
          CLAIM_TEXT("area-feldman-measure"), decide=_area_par),
    Claim("02.runtime", "§1 further claims", CLAIM_TEXT("runtime-words"), CLAIM_TEXT("runtime-paper"),
          CLAIM_TEXT("runtime-measure"), decide=_runtime),
    Claim("02.marginal", "§1 limitations", CLAIM_TEXT("marginal-words"), CLAIM_TEXT("marginal-paper"),
          CLAIM_TEXT("marginal-measure"), decide=_marginal),
    Claim("02.reconstruction", "§1 limitations", CLAIM_TEXT("reconstruction-words"),
          CLAIM_TEXT("reconstruction-paper"), CLAIM_TEXT("reconstruction-measure"), decide=_reconstruction),
    Claim("02.concentration", "§1 further claims", CLAIM_TEXT("concentration-words"),
          CLAIM_TEXT("concentration-paper"), CLAIM_TEXT("concentration-measure"), decide=_concentration),
    Claim("02.coco", "§1 image-to-text table", CLAIM_TEXT("coco-words"), CLAIM_TEXT("coco-paper"),
          CLAIM_TEXT("coco-measure"), missing=CLAIM_TEXT("coco-missing")),
    Claim("02.t2i", "§1 further claims", CLAIM_TEXT("t2i-words"), CLAIM_TEXT("t2i-paper"),
          CLAIM_TEXT("t2i-measure"), missing=CLAIM_TEXT("t2i-missing")),
)
