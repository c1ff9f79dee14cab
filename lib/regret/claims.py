"""Notebook 03's claims ledger (`lib.claims`): the regret paper's claims (spec 03 §1), what the run measures for
each, and the verdict its recorded results decide.

Each `decide` reads the glued results of notebook 03 (`r`): the constrained problems solved as LPs (`theorem_lp`),
the sandbox's selectors (`sandbox_jaccard`), the CIFAR-10H tables of the heads and of the whole networks, the
rankings' paired bootstrap over the test images (`aurec_ranking`: share of draws in first place, differences to the
best with intervals, Kendall τ against the paper's ranking) and the width study's trend of AuReC in accuracy.

The rules (which numbers, which verdict) are this module's; the sentences are the sections of
docs/results/templates/claims-03.md: `CLAIM_TEXT(section, **facts)` renders one with the facts a rule passes, this
module's UPPER_CASE names and the paper's numbers (`lib.regret.paper`, `{{ paper.NAME }}`); a claim's own words, the
paper's number and what we measure are rendered at import.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from lib.claims import FAILS, HOLDS, UNDECIDED, Claim, Verdict, interval, need, need_record, side_of
from lib.regret import paper
from lib.templates import Readings

CLAIM_TEXT = Readings("03", __name__, kind="claims")  # the sentences: docs/results/templates/claims-03.md

PAPER_CE_ORDER = sorted(("mc_dropout", "ensemble", "ddu", "evidential"),
                        key=lambda m: paper.TABLE[("CIFAR-10H", "ce", m)][0])  # the paper's CE ranking, best first
PAPER_BEST_CE = paper.METHOD_NAMES[PAPER_CE_ORDER[0]]
REFERENCE_ACCURACY = 0.94  # the paper's kind of network (airbench94): the accuracy the width study extrapolates to


def _paper(loss: str, method: str, column: str) -> float:
    return paper.TABLE[("CIFAR-10H", loss, method)][paper.COLUMNS.index(column)]


def _theorem(r: Mapping[str, Any]) -> Verdict:
    lp = need(r, "theorem_lp")
    ok = all(f["all_threshold_form"] and f["lambda_in_range"] for f in lp.values())
    problems = sum(f["problems"] for f in lp.values())
    lams = [f["lambda_min"] for f in lp.values()] + [f["lambda_max"] for f in lp.values()]
    return Verdict(HOLDS if ok else FAILS, CLAIM_TEXT("theorem-ours", problems=problems, lams=lams),
                   CLAIM_TEXT("theorem-why"))


def _sandbox(r: Mapping[str, Any]) -> Verdict:
    jaccard = need(r, "sandbox_jaccard")
    proxies = {k: v for k, v in jaccard.items() if k.startswith(("AL", "Bayes OOD"))}
    if not proxies:
        return Verdict(UNDECIDED, CLAIM_TEXT("proxies-unmeasured-ours"), CLAIM_TEXT("proxies-unmeasured-why"))
    verdict = HOLDS if all(v < 1 for v in proxies.values()) else FAILS
    return Verdict(verdict, CLAIM_TEXT("proxies-ours", proxies=proxies), CLAIM_TEXT("proxies-why"))


def _best(kind: str, loss: str = "ce"):
    def decide(r: Mapping[str, Any]) -> Verdict:
        ranking = need(r, "aurec_ranking", f"{kind}/{loss}")
        best, share = ranking["best"], ranking["best_share"]
        diffs = {m: d for m, d in ranking["difference"].items() if m != best}
        runner = min(diffs, key=lambda m: diffs[m][0])
        gap = diffs[runner]
        facts = {"best": best, "aurec": ranking["aurec"][best], "share": share[best], "runner": runner, "gap": gap}
        lag = None  # the paper's best method's excess over ours, when another is best
        if best == PAPER_BEST_CE:
            verdict = HOLDS if gap[1] > 0 else UNDECIDED
        else:
            lag = ranking["difference"].get(PAPER_BEST_CE)
            verdict = FAILS if lag is not None and lag[1] > 0 else UNDECIDED
        return Verdict(verdict, CLAIM_TEXT("best-ours", **facts, lag=lag),
                       CLAIM_TEXT("best-why", n=need(r, "n_test"), reps=ranking["reps"]))
    return decide


def _ranking(kind: str):
    def decide(r: Mapping[str, Any]) -> Verdict:
        tau = need(r, "aurec_ranking", f"{kind}/ce", "tau")
        verdict = HOLDS if tau[1] > 0 else FAILS if tau[2] <= 0 else UNDECIDED
        return Verdict(verdict, CLAIM_TEXT("ranking-ours", tau=tau), CLAIM_TEXT("ranking-why"))
    return decide


def _scale(r: Mapping[str, Any]) -> Verdict:
    table, trend = need(r, "table"), need(r, "whole_width_trend")
    ens = table["ce/ensemble"]["AuReC"]
    theirs = _paper("ce", "ensemble", "AuReC")
    at_reference = trend.get(paper.METHOD_NAMES["ensemble"], {}).get(f"CE AuReC at {REFERENCE_ACCURACY:.0%}")
    ours = CLAIM_TEXT("scale-ours", ensemble=ens, accuracy=table["ce/ensemble"]["accuracy_vs_argmax_p*"],
                      at_reference=at_reference)
    return Verdict(FAILS if ens > 2 * theirs else UNDECIDED, ours, CLAIM_TEXT("scale-why"))


def _scale_zero_one(r: Mapping[str, Any]) -> Verdict:
    """The 0/1 rows: our AuReC against the paper's, and the measured cause of the gap. Under 0/1 a row's regret is
    positive only where the model's class differs from argmax p*; ranking by the true E* accepts the zero-regret
    rows first, so the oracle's AuReC is about mean E* times the disagreement rate d over 2 [derived: the regretful
    rows come last, their cumulative regret rising linearly over the last d of coverage]. That oracle bounds every
    method from below, and it is quadratic in d."""
    import math

    table = need(r, "table")
    rows = {m: table[f"zero_one/{m}"] for m in paper.METHOD_NAMES if f"zero_one/{m}" in table}
    for m in rows:  # each value the rule reads, else "not measured" naming it
        for key in ("AuReC", "oracle_AuReC", "mean_E*", "accuracy_vs_argmax_p*"):
            need(table, f"zero_one/{m}", key)
    if not rows:
        need(table, "zero_one/ensemble")
    ours = {m: row["AuReC"] for m, row in rows.items()}
    theirs = {m: _paper("zero_one", m, "AuReC") for m in rows}
    factor = [ours[m] / theirs[m] for m in rows]
    oracle = {m: row["oracle_AuReC"] for m, row in rows.items()}
    approx = {m: row["mean_E*"] * (1 - row["accuracy_vs_argmax_p*"]) / 2 for m, row in rows.items()}
    ratio = [oracle[m] / approx[m] for m in rows]
    k = sum(row["mean_E*"] / (1 - row["accuracy_vs_argmax_p*"]) for row in rows.values()) / len(rows)
    best = min(theirs.values())
    needed = math.sqrt(2 * best / k)  # the disagreement at which the oracle itself would equal the paper's best
    verdict = FAILS if min(ours.values()) > max(theirs.values()) else UNDECIDED
    d = [1 - row["accuracy_vs_argmax_p*"] for row in rows.values()]
    return Verdict(verdict, CLAIM_TEXT("scale-zero-one-ours", ours=ours, theirs=theirs, factor=factor, oracle=oracle),
                   CLAIM_TEXT("scale-zero-one-why", best=best, ratio=ratio, needed=needed, k=k, d=d))


def _truth_correlation(r: Mapping[str, Any]) -> Verdict:
    table, n = need(r, "table"), need(r, "n_test")
    se = 1.03 / math.sqrt(n - 3)  # Fisher z of a Spearman correlation (Fieller et al.)
    methods, outside = [], 0
    for method in ("mc_dropout", "ensemble", "ddu"):
        rho = table[f"ce/{method}"]["r_s(A*,E*)"]
        lo, hi = math.tanh(math.atanh(rho) - 1.96 * se), math.tanh(math.atanh(rho) + 1.96 * se)
        theirs = _paper("ce", method, "r_s(A*,E*)")
        outside += not lo <= theirs <= hi
        methods.append({"name": paper.METHOD_NAMES[method], "rho": rho, "lower": lo, "upper": hi, "theirs": theirs})
    verdict = FAILS if outside == 3 else HOLDS if outside == 0 else UNDECIDED
    return Verdict(verdict, CLAIM_TEXT("truth-correlation-ours", methods=methods),
                   CLAIM_TEXT("truth-correlation-why"))


# ------------------------------------------------------------------------------------------------------------
# The findings F1-F3 (spec §1.4) and the stated limitations
# ------------------------------------------------------------------------------------------------------------
FISHER_SE = 1.03  # Fisher z of a Spearman correlation: se = 1.03 / sqrt(n - 3) (Fieller et al.)
Z_95, Z_975 = 1.96, 2.241  # two intervals at 97.5 % each: their difference's interval holds 95 % (Bonferroni)
F3_METHODS = ("mc_dropout", "ensemble", "ddu")  # the paper's ≈ 0.88 under CE (Evidential's is 0.293)
PROXIES = ("far-OOD AuROC", "near-OOD AuROC", "AL NAUC")  # higher is better, as the paper's §1.3 table


def _fisher(rho: float, n: int, z: float = Z_95) -> tuple[float, float]:
    """The interval of a Spearman correlation of n pairs (Fisher z)."""
    half = z * FISHER_SE / math.sqrt(n - 3)
    return math.tanh(math.atanh(rho) - half), math.tanh(math.atanh(rho) + half)


def _pair(pairs: Mapping[str, Any], a: str, b: str) -> tuple[float, float, float]:
    """(mean, lower, upper) of metric(a) − metric(b) from a record {"A − B": [mean, lower, upper]} of either order."""
    if f"{a} − {b}" in pairs:
        return tuple(pairs[f"{a} − {b}"])
    mean, lower, upper = pairs[f"{b} − {a}"]
    return -mean, -upper, -lower


def _extreme(pairs: Mapping[str, Any], method: str, others, *, higher_better: bool, worst: bool = False) -> str:
    """HOLDS when `method` is decidedly the best (or the worst) of `others` and itself, each paired difference's
    interval on its side of 0; FAILS when another is decidedly better (worse) than it; else UNDECIDED."""
    sign = (1 if higher_better else -1) * (-1 if worst else 1)
    sides = []
    for other in others:
        if other != method:
            mean, lower, upper = _pair(pairs, method, other)
            sides.append(side_of(*sorted((sign * lower, sign * upper))))
    return HOLDS if all(s == HOLDS for s in sides) else FAILS if FAILS in sides else UNDECIDED


def _and(*verdicts: str) -> str:
    """A claim of several parts: holds when every part holds, fails when one fails."""
    return HOLDS if all(v == HOLDS for v in verdicts) else FAILS if FAILS in verdicts else UNDECIDED


def _behind_best(ranking: Mapping[str, Any], method: str) -> str:
    """HOLDS when `method` is decidedly behind the best AuReC (`aurec_ranking`: its excess over the best lies above
    0), FAILS when it is decidedly the best, else UNDECIDED."""
    if ranking["best"] != method:
        return HOLDS if ranking["difference"][method][1] > 0 else UNDECIDED
    lead = [d[1] for m, d in ranking["difference"].items() if m != method]
    return FAILS if lead and min(lead) > 0 else UNDECIDED


def _is_best(ranking: Mapping[str, Any], method: str) -> str:
    verdict = _behind_best(ranking, method)
    return {HOLDS: FAILS, FAILS: HOLDS}.get(verdict, UNDECIDED)


def _ranked(values: Mapping[str, float], higher_better: bool = True) -> str:
    order = sorted(values, key=values.get, reverse=higher_better)
    return CLAIM_TEXT("ranked", items=[(m, values[m]) for m in order])


def _excess(ranking: Mapping[str, Any], method: str) -> str:
    if ranking["best"] == method:
        return CLAIM_TEXT("excess-best", method=method, aurec=ranking["aurec"][method])
    return CLAIM_TEXT("excess", method=method, d=ranking["difference"][method], best=ranking["best"])


def _f1_ddu(r: Mapping[str, Any]) -> Verdict:
    ranking, proxy = need(r, "aurec_ranking", "heads/ce"), need(r, "proxy")
    ddu, methods = paper.METHOD_NAMES["ddu"], list(proxy)
    need(r, "aurec_ranking", "heads/ce", "difference", ddu), need(r, "proxy", ddu)  # a run without DDU
    far = {m: proxy[m]["far-OOD AuROC"] for m in methods}
    poor = _behind_best(ranking, ddu)
    facts = {"far": _ranked(far), "excess": _excess(ranking, ddu)}
    pairs = r.get("proxy_pairs", {}).get("heads/far-OOD AuROC")
    if pairs is None:  # the OOD part undecided
        return Verdict(FAILS if poor == FAILS else UNDECIDED, CLAIM_TEXT("f1-ddu-ours", **facts, intervals=False),
                       CLAIM_TEXT("f1-ddu-why", intervals=False))
    best_far = _extreme(pairs, ddu, methods, higher_better=True)
    return Verdict(_and(best_far, poor), CLAIM_TEXT("f1-ddu-ours", **facts, intervals=True),
                   CLAIM_TEXT("f1-ddu-why", intervals=True))


def _al_runs(r: Mapping[str, Any]) -> str:
    """How the AL NAUC column was measured: over how many seeds (`al_nauc_by_seed`), or one run."""
    seeds = max((len(v) for v in (r.get("al_nauc_by_seed") or {}).values()), default=1)
    return CLAIM_TEXT("al-runs", seeds=seeds)


def _f1_evidential(r: Mapping[str, Any]) -> Verdict:
    ranking, proxy = need(r, "aurec_ranking", "heads/ce"), need(r, "proxy")
    evidential, methods = paper.METHOD_NAMES["evidential"], list(proxy)
    need(r, "aurec_ranking", "heads/ce", "difference", evidential), need(r, "proxy", evidential)
    theirs = [(c, _ranked({paper.METHOD_NAMES[m]: paper.PROXY[m][i] for m in paper.PROXY}))
              for i, c in ((1, PROXIES[0]), (0, PROXIES[1]), (2, PROXIES[2]))]
    ours = {"columns": [(c, _ranked({m: proxy[m][c] for m in methods})) for c in PROXIES],
            "excess": _excess(ranking, evidential)}
    best = _is_best(ranking, evidential)
    rule = {"al_runs": _al_runs(r), "theirs": theirs}
    all_pairs = r.get("proxy_pairs", {})
    if not all(f"heads/{c}" in all_pairs for c in PROXIES):  # the proxies' part undecided
        return Verdict(FAILS if best == FAILS else UNDECIDED, CLAIM_TEXT("f1-evidential-ours", **ours, intervals=False),
                       CLAIM_TEXT("f1-evidential-why", **rule, intervals=False))
    worst = [_extreme(all_pairs[f"heads/{c}"], evidential, methods, higher_better=True, worst=True) for c in PROXIES]
    return Verdict(_and(*worst, best), CLAIM_TEXT("f1-evidential-ours", **ours, intervals=True),
                   CLAIM_TEXT("f1-evidential-why", **rule, intervals=True))


def _f2_pgap(r: Mapping[str, Any]) -> Verdict:
    table, n = need(r, "table"), need(r, "n_test")
    evidential = paper.METHOD_NAMES["evidential"]
    names = {paper.METHOD_NAMES[m]: m for m in ("mc_dropout", "ensemble", "ddu", "evidential")
             if f"ce/{m}" in table}
    need(r, "table", "ce/evidential")
    rs = {name: need(r, "table", f"ce/{m}", "r_s(Â,Ê)") for name, m in names.items()}
    pgap = {name: need(r, "table", f"ce/{m}", "P-gap") for name, m in names.items()}
    ci, wide = ({name: _fisher(rho, n, z) for name, rho in rs.items()} for z in (Z_95, Z_975))
    above = [side_of(wide[evidential][0] - wide[m][1], wide[evidential][1] - wide[m][0])  # Evidential − m
             for m in names if m != evidential]
    premise = HOLDS if HOLDS in above else FAILS if above and all(s == FAILS for s in above) else UNDECIDED
    lowest_rs = min(rs, key=rs.get)
    facts = {"pgap": _ranked(pgap, higher_better=False), "evidential_rs": interval(rs[evidential], *ci[evidential]),
             "lowest_rs": lowest_rs, "lowest_rs_interval": interval(rs[lowest_rs], *ci[lowest_rs])}
    pairs = r.get("pgap_pairs", {}).get("heads/ce")
    if pairs is None:  # the P-gap's part undecided
        return Verdict(FAILS if premise == FAILS else UNDECIDED, CLAIM_TEXT("f2-pgap-ours", **facts, intervals=False),
                       CLAIM_TEXT("f2-pgap-why", intervals=False))
    nearest = min((m for m in names if m != evidential), key=pgap.get, default=None)  # the next-lowest P-gap
    difference = None if nearest is None else interval(*_pair(pairs, evidential, nearest))
    return Verdict(_and(_extreme(pairs, evidential, names, higher_better=False), premise),
                   CLAIM_TEXT("f2-pgap-ours", **facts, intervals=True, evidential=evidential, nearest=nearest,
                              difference=difference),
                   CLAIM_TEXT("f2-pgap-why", intervals=True))


def _f3_loss(r: Mapping[str, Any]) -> Verdict:
    n = need(r, "n_test")
    methods, sides, near = [], [], 0
    for method in F3_METHODS:
        ce, zero_one = (need(r, "table", f"{loss}/{method}", "r_s(A*,E*)") for loss in ("ce", "zero_one"))
        (ce_lo, ce_hi), (zo_lo, zo_hi) = _fisher(ce, n, Z_975), _fisher(zero_one, n, Z_975)
        lower, upper = ce_lo - zo_hi, ce_hi - zo_lo
        sides.append(side_of(lower, upper))
        near += _fisher(zero_one, n)[0] <= _paper("zero_one", method, "r_s(A*,E*)") <= _fisher(zero_one, n)[1]
        methods.append({"name": paper.METHOD_NAMES[method], "ce": ce, "zero_one": zero_one,
                        "fall": interval(ce - zero_one, lower, upper)})
    verdict = HOLDS if all(s == HOLDS for s in sides) else FAILS if FAILS in sides else UNDECIDED
    return Verdict(verdict, CLAIM_TEXT("f3-loss-ours", methods=methods), CLAIM_TEXT("f3-loss-why", near=near))


def _density(r: Mapping[str, Any]) -> Verdict:
    rows, stable = need(r, "label_density"), need(r, "label_density_stable_k")
    by_loss: dict[str, dict[int, Mapping[str, float]]] = {}
    for key, row in rows.items():
        loss, k = key.split("/")
        if k.isdigit():  # "all" is the reference, not a draw
            by_loss.setdefault(loss, {})[int(k)] = row
    losses, changed = [], []
    for loss, ks in sorted(by_loss.items()):
        k0 = min(ks)
        row = ks[k0]
        if row["low"] < 1:
            changed.append(loss)
        losses.append({"loss": loss, "k": k0, "tau": row["median_tau"], "low": row["low"], "high": row["high"],
                       "share": row["share_same"], "stable": stable.get(loss)})
    verdict = HOLDS if changed else FAILS
    return Verdict(verdict, CLAIM_TEXT("label-density-ours", losses=losses),
                   CLAIM_TEXT("label-density-why", changed=changed))


def _approximation(r: Mapping[str, Any]) -> Verdict:
    trend = need(r, "whole_width_trend")
    slopes = {m: need(r, "whole_width_trend", m, "CE AuReC per accuracy point") for m in trend}
    widths = {m: need(r, "whole_width_trend", m, "widths") for m in slopes}
    ci = r.get("whole_width_slope_ci")
    if ci is None:  # one seed per width
        return Verdict(UNDECIDED, CLAIM_TEXT("approximation-ours", slopes=slopes, widths=widths, intervals=False),
                       CLAIM_TEXT("approximation-why", intervals=False))
    sides = [side_of(-ci[m][2], -ci[m][1]) for m in slopes]
    return Verdict(HOLDS if all(s == HOLDS for s in sides) else UNDECIDED,
                   CLAIM_TEXT("approximation-ours", slopes=slopes, widths=widths, intervals=True),
                   CLAIM_TEXT("approximation-why", intervals=True))


def _dinkelbach(r: Mapping[str, Any]) -> Verdict:
    record = CLAIM_TEXT("dinkelbach-record")
    found = {loss: [need_record(r, "theorem_lp_by_problem", loss, p, record=record) for p in ("P_Ri/rho", "P_Re/rho")]
             for loss in need(r, "theorem_lp")}
    ok = all(f["all_threshold_form"] and f["lambda_in_range"] for fs in found.values() for f in fs)
    lams = [f[k] for fs in found.values() for f in fs for k in ("lambda_min", "lambda_max")]
    problems = sum(f["problems"] for fs in found.values() for f in fs)
    return Verdict(HOLDS if ok else FAILS, CLAIM_TEXT("dinkelbach-ours", problems=problems, lams=lams),
                   CLAIM_TEXT("dinkelbach-why"))


CLAIMS = (
    Claim("03.theorem", "§1.1 theorem", CLAIM_TEXT("theorem-words"), CLAIM_TEXT("theorem-paper"),
          CLAIM_TEXT("theorem-measure"), decide=_theorem),
    Claim("03.proxies", "§1.1 proxies", CLAIM_TEXT("proxies-words"), CLAIM_TEXT("proxies-paper"),
          CLAIM_TEXT("proxies-measure"), decide=_sandbox),
    Claim("03.best-heads", "§1.2 table", CLAIM_TEXT("best-heads-words"), CLAIM_TEXT("best-paper"),
          CLAIM_TEXT("best-heads-measure"), decide=_best("heads")),
    Claim("03.best-whole", "§1.2 table", CLAIM_TEXT("best-whole-words"), CLAIM_TEXT("best-paper"),
          CLAIM_TEXT("best-whole-measure"), decide=_best("whole")),
    Claim("03.ranking-heads", "§1.2 table", CLAIM_TEXT("ranking-heads-words"), CLAIM_TEXT("ranking-paper"),
          CLAIM_TEXT("ranking-heads-measure"), decide=_ranking("heads")),
    Claim("03.ranking-whole", "§1.2 table", CLAIM_TEXT("ranking-whole-words"), CLAIM_TEXT("ranking-paper"),
          CLAIM_TEXT("ranking-whole-measure"), decide=_ranking("whole")),
    Claim("03.scale", "§1.2 table", CLAIM_TEXT("scale-words"), CLAIM_TEXT("scale-paper"),
          CLAIM_TEXT("scale-measure"), decide=_scale),
    Claim("03.scale-zero-one", "§1.2 table", CLAIM_TEXT("scale-zero-one-words"), CLAIM_TEXT("scale-zero-one-paper"),
          CLAIM_TEXT("scale-zero-one-measure"), decide=_scale_zero_one),
    Claim("03.truth-correlation", "§1.1", CLAIM_TEXT("truth-correlation-words"),
          CLAIM_TEXT("truth-correlation-paper"), CLAIM_TEXT("truth-correlation-measure"), decide=_truth_correlation),
    Claim("03.dcic", "§1.1 other experiments", CLAIM_TEXT("dcic-words"), CLAIM_TEXT("dcic-paper"),
          CLAIM_TEXT("dcic-measure"), missing=CLAIM_TEXT("dcic-missing")),
    Claim("03.appa", "§1.2 table", CLAIM_TEXT("appa-words"), CLAIM_TEXT("appa-paper"), CLAIM_TEXT("appa-measure"),
          missing=CLAIM_TEXT("appa-missing")),
    Claim("03.f1-ddu", "§1.4 F1, §1.3 table", CLAIM_TEXT("f1-ddu-words"), CLAIM_TEXT("f1-ddu-paper"),
          CLAIM_TEXT("f1-ddu-measure"), decide=_f1_ddu),
    Claim("03.f1-evidential", "§1.4 F1, §1.3 table", CLAIM_TEXT("f1-evidential-words"),
          CLAIM_TEXT("f1-evidential-paper"), CLAIM_TEXT("f1-evidential-measure"), decide=_f1_evidential),
    Claim("03.f2-pgap", "§1.4 F2", CLAIM_TEXT("f2-pgap-words"), CLAIM_TEXT("f2-pgap-paper"),
          CLAIM_TEXT("f2-pgap-measure"), decide=_f2_pgap),
    Claim("03.f3-loss", "§1.4 F3", CLAIM_TEXT("f3-loss-words"), CLAIM_TEXT("f3-loss-paper"),
          CLAIM_TEXT("f3-loss-measure"), decide=_f3_loss),
    Claim("03.dinkelbach", "§1.1 theorem", CLAIM_TEXT("dinkelbach-words"), CLAIM_TEXT("dinkelbach-paper"),
          CLAIM_TEXT("dinkelbach-measure"), decide=_dinkelbach),
    Claim("03.label-density", "§1.4 stated limitations", CLAIM_TEXT("label-density-words"),
          CLAIM_TEXT("label-density-paper"), CLAIM_TEXT("label-density-measure"), decide=_density),
    Claim("03.approximation", "§1.4 stated limitations", CLAIM_TEXT("approximation-words"),
          CLAIM_TEXT("approximation-paper"), CLAIM_TEXT("approximation-measure"), decide=_approximation),
)
