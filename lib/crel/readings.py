"""What notebook 02's reading cells state: the facts (values, comparisons, the words "inside"/"below"/"reverses",
counts) computed from the run's results, and the sentences built from them. Each reading cell of the notebook is
one call of a `*_text` function here and a `say`; the facts are the functions without `_text`, unit-tested in
tests/test_crel_readings.py on small hand-made inputs.

`stats` below is the synthetic table over seeds, as the notebook makes it: `table_stats(rows)`, a groupby of the
rows of `experiment.synthetic_table_rows` by (alpha, lgm, method) with the "mean", "std" and "count" of each of
`experiment.SYNTHETIC_COLUMNS`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from lib.crel import conditional as cc
from lib.crel.experiment import PAPER_TABLE, SYNTHETIC_COLUMNS, CReLConfig, paper_dqr_row
from lib.crel.guidance_seeds import PAIR, PairOverSeeds
from lib.crel.images import PAPER_SPREAD
from lib.diffusion.family import NUM_CLASSES
from lib.reading import md_table, num, pct, seq, sig, skipped, span
from lib.tables import reader_name

PAPER_TEST_POINTS = 4000  # the paper's test fold (spec §2.2)
TABLE_ORDER = {"CReL": 0, "Feldman": 1, "DQR": 2, "PCP": 3}  # the paper's rows, in its table's order
BASELINES = (("Feldman", "Feldman et al."), ("DQR (Y-space)", "DQR in Y"), ("PCP", "PCP"))  # (method, its name)


def table_stats(rows: pd.DataFrame) -> pd.DataFrame:
    """"mean", "std" and "count" over seeds of each measured column, per (alpha, lgm, method), in the rows' order."""
    return rows.groupby(["alpha", "lgm", "method"], sort=False)[list(SYNTHETIC_COLUMNS)].agg(["mean", "std", "count"])


def paper_names(rows: pd.DataFrame, dqr_baseline: str) -> dict[str, str]:
    """{our method: the paper's row it stands beside} for every method of the rows (§3.8 [interpretation])."""
    short = paper_dqr_row(dqr_baseline)
    return {m: short.get(m, m) for m in rows["method"].unique()}


# ----------------------------------------------------------------------------------------------------
# Section 1: the guarantee
# ----------------------------------------------------------------------------------------------------
def guarantee(resplit: dict, pre: float, alpha: float) -> dict[str, bool]:
    """{"inside": the re-splits' mean coverage lies within the bounds [1 − α, 1 − α + 1/(n_cal + 1)] widened by two
    standard errors, "below": the pre-calibration coverage is below 1 − α (then the upper bound applies)}."""
    lo, hi, se = resplit["lower"], resplit["upper"], resplit["se"]
    return {"inside": bool(lo - 2 * se <= resplit["mean"] <= hi + 2 * se), "below": bool(pre < 1 - alpha)}


def resplit_text(config: CReLConfig, resplit: dict, pre: float, alpha: float) -> str:
    g, lgm = guarantee(resplit, pre, alpha), reader_name(config.lgm)
    return f"""
**Reading** (this run, `{config.preset}` preset, CReL with the {lgm} LGM, α = {alpha:g}, first seed): the test
coverage over {config.coverage_resplits} re-splits averages {resplit["mean"]:.4f} ± {resplit["se"]:.4f}, against the
bounds [{resplit["lower"]:.4f}, {resplit["upper"]:.4f}] for n_cal = {config.folds[2]:,}; the mean lies
{"inside" if g["inside"] else "outside"} them, within two standard errors. The pre-calibration coverage is {pre:.3f},
{"below" if g["below"] else "not below"} 1 − α, so the upper bound
{"applies" if g["below"] else "need not hold"}.
"""


def guard_facts(rows: pd.DataFrame) -> dict | None:
    """The collapse guard's CVAE seeds: {"trainings": {seed: trainings used}, "kept_collapsed": the seeds whose every
    training collapsed (sorted)}; None when the CVAE has no rows."""
    seeds = rows[(rows["lgm"] == "cvae") & (rows["method"] == "CReL")].drop_duplicates("seed")
    if seeds.empty:
        return None
    return {"trainings": {r.seed: 1 + len(r.collapsed_attempts) for r in seeds.itertuples()},
            "kept_collapsed": sorted({r.seed for r in seeds.itertuples() if len(r.collapsed)})}


def guard_text(rows: pd.DataFrame) -> str:
    facts = guard_facts(rows)
    if facts is None:
        return skipped("The collapse guard", "the CVAE is not among `TABLE_LGMS`")
    trainings, kept = facts["trainings"], facts["kept_collapsed"]
    replaced = [f"seed {seed} needed {n} trainings" for seed, n in trainings.items() if n > 1]
    return f"""
**The collapse guard in this run** (CVAE seeds {", ".join(map(str, trainings))}): {"; ".join(replaced) if replaced else
"every seed's first training kept both latent dimensions"}{"" if not kept else
f"; every training of seed {', '.join(map(str, kept))} collapsed, and the first one is kept"}.
"""


# ----------------------------------------------------------------------------------------------------
# Section 2: the synthetic table
# ----------------------------------------------------------------------------------------------------
def mean_sd_cell(stats: pd.DataFrame, key: tuple, column: str, digits: int = 3) -> str:
    """'mean ± sd' over seeds (no sd with one seed), blank where the method has no such column."""
    m, s = stats.loc[key, (column, "mean")], stats.loc[key, (column, "std")]
    return "" if np.isnan(m) else f"{m:.{digits}f}" + ("" if np.isnan(s) else f" ± {s:.{digits}f}")


def paper_cells(method: str, alpha: float, names: dict[str, str]) -> str:
    """The paper's Coverage-Z / Coverage-Y / Area of the row `method` stands beside ('–' where it has none)."""
    values = PAPER_TABLE.get((names[method], alpha))
    return "" if values is None else " / ".join("–" if v is None else f"{v:g}" for v in values)


def table_rows(stats: pd.DataFrame, names: dict[str, str], alphas: tuple[float, ...]) -> list[dict]:
    """The reading's table: one row per (alpha, lgm, method) the paper has a row for, by alpha, then in the paper's
    order of methods, the flow before the CVAE."""
    keys = sorted(stats.index, key=lambda k: (alphas.index(k[0]), TABLE_ORDER.get(names[k[2]], 9), k[1] != "flow"))
    return [{"α": f"{a:g}", "LGM": reader_name(lgm), "method": m,
             "Coverage-Z": mean_sd_cell(stats, (a, lgm, m), "coverage_z"),
             "Coverage-Y": mean_sd_cell(stats, (a, lgm, m), "coverage_y") + (
                 {"flow": " (exact)", "cvae": " (decoded set)"}[lgm] if m == "CReL" else ""),
             "Area (grid points)": mean_sd_cell(stats, (a, lgm, m), "area", 0),
             "paper (same order)": paper_cells(m, a, names)}
            for a, lgm, m in keys if names[m] in TABLE_ORDER]


def table_text(config: CReLConfig, seeds: list[int], rows: pd.DataFrame, stats: pd.DataFrame) -> str:
    n_test = config.folds[3]
    return f"""
**Reading the table** (this run, `{config.preset}` preset: seeds {seq(seeds, sep=", ")}, folds
{seq(config.folds, sep="/")}, LGMs {", ".join(config.table_lgms)}; mean ± sd over
{config.num_seeds} seed{"s" if config.num_seeds > 1 else ""}, the per-seed rows are above; one seed's binomial se on
{n_test:,} test points is
{", ".join(f"{np.sqrt(a * (1 - a) / n_test):.3f} at α = {a:g}" for a in config.alphas)}; Coverage-Y of the CVAE,
Feldman and PCP, and every area, are measured on the first {config.area_eval_n_x} test conditions,
`area_eval_n_x`):

{md_table(table_rows(stats, paper_names(rows, config.dqr_baseline), config.alphas))}
"""


def agg(stats: pd.DataFrame, alpha: float, lgm: str, method: str, column: str) -> tuple[float, float, int] | None:
    """(mean, sd, seeds) of a table column, None where this run has no such row or value."""
    key = (alpha, lgm, method)
    if key not in stats.index or np.isnan(stats.loc[key, (column, "mean")]):
        return None
    return stats.loc[key, (column, "mean")], stats.loc[key, (column, "std")], int(stats.loc[key, (column, "count")])


def mean_sd_text(value: tuple, digits: int = 3) -> str:
    return f"{value[0]:.{digits}f}" + ("" if np.isnan(value[1]) else f" ± {value[1]:.{digits}f}")


def against_paper(value: tuple, paper_value: float, points: int) -> tuple[float, bool]:
    """The difference of our (mean, sd, seeds) from the paper's single run, and whether it lies within two standard
    errors of a difference (ours: the sd over seeds / √seeds, or one seed's binomial se on `points` points; the
    paper's: binomial on its 4,000 test points)."""
    ours_se = value[1] / np.sqrt(value[2]) if value[2] > 1 else np.sqrt(value[0] * (1 - value[0]) / points)
    paper_se = np.sqrt(paper_value * (1 - paper_value) / PAPER_TEST_POINTS)
    return value[0] - paper_value, bool(abs(value[0] - paper_value) <= 2 * np.hypot(ours_se, paper_se))


def coverage_facts(stats: pd.DataFrame, lgm: str, alphas: tuple[float, ...], points: int) -> dict | None:
    """CReL's Coverage-Y with `lgm` against the paper: {"found": {alpha: (mean, sd, seeds)}, "paper_at": {alpha:
    the paper's row}, "checks": {alpha: [(difference, within) for Coverage-Z, Coverage-Y]}, "agree": every
    difference within two standard errors, "grows": coverage grows with 1 − alpha}; None without such rows."""
    found = {a: agg(stats, a, lgm, "CReL", "coverage_y") for a in alphas}
    found = {a: v for a, v in found.items() if v is not None}
    if not found:
        return None
    paper_at = {a: PAPER_TABLE[("CReL", a)] for a in found if ("CReL", a) in PAPER_TABLE}
    checks = {a: [against_paper(found[a], p, points) for p in paper_at[a][:2]] for a in paper_at}
    by_level = sorted(found, reverse=True)
    return {"found": found, "paper_at": paper_at, "checks": checks,
            "agree": all(ok for pair in checks.values() for _, ok in pair),
            "grows": all(found[a][0] < found[b][0] for a, b in zip(by_level, by_level[1:]))}


def coverage_bullet(config: CReLConfig, rows: pd.DataFrame, stats: pd.DataFrame, lgm: str, points: int, label: str,
                    per_seed: bool = False) -> str:
    f = coverage_facts(stats, lgm, config.alphas, points)
    if f is None:
        return f"- {skipped(label, f'the {lgm} LGM is not among `TABLE_LGMS`')}"
    found, paper_at, checks, agree, grows = f["found"], f["paper_at"], f["checks"], f["agree"], f["grows"]
    crel = rows[(rows["lgm"] == lgm) & (rows["method"] == "CReL")]
    per_seed_text = "; ".join(f"{seq(crel[crel['alpha'] == a]['coverage_y'], 2)} at α = {a:g}" for a in config.alphas)
    return (f"- **{label} {'reproduces' if agree else 'does not reproduce'} the paper's coverages.** Coverage-Y "
            + "; ".join(f"{mean_sd_text(v)} at α = {a:g}" + (f" (paper {paper_at[a][0]:g} / {paper_at[a][1]:g})"
                                                              if a in paper_at else "") for a, v in found.items())
            + ". The differences from the paper's Coverage-Z / Coverage-Y, "
            + "; ".join(f"{dz:+.3f} / {dy:+.3f} at α = {a:g}" for a, ((dz, _), (dy, _)) in checks.items())
            + f", are {'all' if agree else 'not all'} within two standard errors of a difference (our mean over "
            f"seeds, each on {points:,} points, against the paper's single run on {PAPER_TEST_POINTS:,} test points). "
            f"Coverage {'grows' if grows else 'does not grow'} with 1 − α"
            f"{', as a calibrated set must' if grows else ''}."
            + (f" Per seed: {per_seed_text}." if per_seed and config.num_seeds > 1 else ""))


def coverage_text(config: CReLConfig, rows: pd.DataFrame, stats: pd.DataFrame) -> str:
    return "\n".join([
        coverage_bullet(config, rows, stats, "flow", config.folds[3],
                        "CReL with the flow LGM (exact: Coverage-Y equals Coverage-Z)"),
        coverage_bullet(config, rows, stats, "cvae", config.area_eval_n_x,
                        f"The paper's CVAE (decoded set, tolerance {config.decoded_tolerance:g} Y units)",
                        per_seed=True),
    ])


def area_text(stats: pd.DataFrame, alphas: tuple[float, ...], lgm: str, method: str) -> str:
    """A method's area per alpha, 'mean ± sd' to whole grid points ('n/a' where not measured)."""
    return seq(f"{v[0]:.0f}" + ("" if np.isnan(v[1]) else f" ± {v[1]:.0f}") if v else "n/a"
               for v in (agg(stats, a, lgm, method, "area") for a in alphas))


def area_facts(stats: pd.DataFrame, config: CReLConfig) -> dict:
    """{"crel_lgms": the LGMs with CReL areas at every alpha, "has_dqr": the Y-space DQR has them, "pcp_lgms": the
    LGMs whose PCP has them, "smaller": the CReL LGMs whose area is below the Y-space DQR's at every alpha}."""
    def has(lgm: str, method: str) -> bool:
        return all(agg(stats, a, lgm, method, "area") for a in config.alphas)

    crel_lgms = [lgm for lgm in config.table_lgms if has(lgm, "CReL")]
    has_dqr = has("none", "DQR (Y-space)")
    smaller = [lgm for lgm in crel_lgms if has_dqr and all(
        agg(stats, a, lgm, "CReL", "area")[0] < agg(stats, a, "none", "DQR (Y-space)", "area")[0]
        for a in config.alphas)]
    return {"crel_lgms": crel_lgms, "has_dqr": has_dqr, "smaller": smaller,
            "pcp_lgms": [lgm for lgm in config.table_lgms if has(lgm, "PCP")]}


def areas_text(config: CReLConfig, stats: pd.DataFrame) -> str:
    f, alphas = area_facts(stats, config), config.alphas
    paper_area = {a: PAPER_TABLE[("CReL", a)][2] for a in alphas if ("CReL", a) in PAPER_TABLE}
    areas = [f"CReL-{reader_name(lgm)} {area_text(stats, alphas, lgm, 'CReL')}" for lgm in f["crel_lgms"]]
    if f["has_dqr"]:
        areas.append("the Y-space DQR, a convex set that must cover the curved banana, "
                     + area_text(stats, alphas, "none", "DQR (Y-space)"))
    areas += [f"PCP with the {reader_name(lgm)}'s samples {area_text(stats, alphas, lgm, 'PCP')}"
              for lgm in f["pcp_lgms"]]
    dqr_claim = ""
    if f["has_dqr"] and f["crel_lgms"]:
        smaller = f["smaller"]
        with_which = "either LGM" if len(smaller) == len(f["crel_lgms"]) else ", ".join(smaller) or "neither LGM"
        dqr_claim = (f" CReL's region is smaller than DQR's with {with_which}"
                     f"{', as in the paper' if smaller else ', unlike the paper'}.")
    return f"""
- **Areas** (Y-grid points, the paper's "Area" as a count) at α = {seq(f"{a:g}" for a in alphas)}:
  {"; ".join(areas)} (paper, CReL: {seq(f"{v:g}" for v in paper_area.values())}).{dqr_claim} Absolute areas depend on r,
  K, τ, the folds and the training budget, which the paper does not give (§2.2).
"""


# ----------------------------------------------------------------------------------------------------
# Conditional coverage and the PGD's spread
# ----------------------------------------------------------------------------------------------------
def conditional_text(config: CReLConfig, alpha: float, cond_gap: dict[str, dict]) -> str:
    def one(method: str) -> str:
        g = cond_gap[method]
        under = ", ".join(g["under"]) or "none"
        return (f"{method}: lowest {g['worst_coverage']:.3f} at x ∈ {g['worst_bin']}, spread {g['spread']:.3f} across "
                f"bins, under-covered bins: {under}")

    return f"""
**Reading** ({reader_name(config.lgm)}, α = {alpha:g}, target {1 - alpha:.2f}, {config.cond_bins} bins of x):
{"; ".join(one(m) for m in cond_gap)}.
"""


def spread_text(config: CReLConfig, alpha: float, spread: dict[str, dict]) -> str:
    def one(lgm: str) -> str:
        s = spread[lgm]
        return (f"{lgm}: median std {s['median_std']:.4f} (max {s['max_std']:.4f}), {pct(s['median_best_share'])} of "
                f"the starts within 10⁻³ of the best (median), whose own std is {s['median_basin_std']:.5f}")

    verdict = cc.spread_verdict(spread)
    larger = "larger than" if verdict["larger"] else "not everywhere larger than"
    return f"""
**Reading** ({config.spread_starts} starts × {config.spread_steps} steps at {config.spread_n_x} conditions, first
seed, α = {alpha:g}): {"; ".join(one(lgm) for lgm in spread)}. The spread across all starts is
{larger} the paper's std {PAPER_SPREAD:g}, and the starts that
reach the best value agree {"within" if verdict["basin_within"] else "less closely than"} that figure{
": the spread counts the starts that end at another local optimum of the decoded set, it is not optimiser noise"
if verdict["larger"] and verdict["basin_within"] else ""}.
"""


# ----------------------------------------------------------------------------------------------------
# Section 4: captions
# ----------------------------------------------------------------------------------------------------
def tail_reached(modes: dict[str, dict]) -> list[str]:
    """The UNREL modes whose captioner A reaches the model-free alpha-quantile on at least half the test images."""
    return [mode for mode, r in modes.items() if r["tail_sanity"] >= 0.5]


def modes_text(config: CReLConfig, modes: dict[str, dict]) -> str:
    """modes: {UNREL mode: captioner A's `run_captioner` result}, the notebook's mode first."""
    reached = tail_reached(modes)
    return f"""
In this run (`{config.preset}` preset, {config.captions.lgm} LGM), captioner A's CReL-BERT is
{seq(f"{r['crel']:.3f} ({mode})" for mode, r in modes.items())} and its tail sanity
{seq(f"{r['tail_sanity']:.2f}" for r in modes.values())}: {"both readings reach" if len(reached) == 2 else
f"only the {reached[0]} reading reaches" if reached else "neither reading reaches"} the model-free α-quantile for at
least half of the test images.
"""


def reversal_facts(results: dict[str, dict], sweep: dict[float, dict], p_fail: float) -> dict:
    """Captioner A against B: {"profile": A has the higher mean and the worse model-free alpha-quantile (the
    designed profile), "q": (A's, B's mean alpha-quantile), "at_other": the sweep's other p_fail at which A's mean
    is still above B's, [(p, its row)], "reversed_at": the p_fail at which CReL ranks A below B, "checked": those,
    or every p_fail looked at, "case": "reversed" | "b_falls" (B's worst case falls further and B's tail sanity is
    the higher) | "unseen" (A's set does not reach its failures)}."""
    a, b = results["A"], results["B"]
    q_a, q_b = float(np.mean(a["q_alpha"])), float(np.mean(b["q_alpha"]))
    at_other = [(p, v) for p, v in sweep.items() if p != p_fail and v["mean BERT-SIM"] > b["mean_rho"]]
    reversed_at = [p for p, v in [(p_fail, {"CReL-BERT": a["crel"]}), *at_other] if v["CReL-BERT"] < b["crel"]]
    case = ("reversed" if reversed_at else "b_falls" if b["crel"] < a["crel"] and b["tail_sanity"] > a["tail_sanity"]
            else "unseen")
    return {"profile": a["mean_rho"] > b["mean_rho"] and q_a < q_b, "q": (q_a, q_b), "at_other": at_other,
            "reversed_at": reversed_at, "checked": reversed_at or [p_fail] + [p for p, _ in at_other], "case": case}


def _why(case: str, b: dict, pool_sim: dict[str, float], pca_dim: int | None) -> str:
    if case == "reversed":
        return "CReL's minimum sees A's failure captions and ranks the mediocre B above the brittle A, as designed."
    if case == "b_falls":
        below_unrelated = (f": below the mean similarity of an unrelated caption ({pool_sim['unrel']:.3f})"
                           if b["crel"] <= pool_sim["unrel"] else "")
        return (f"B's worst case falls further than A's{below_unrelated}. A bijection in the captions' "
                f"{pca_dim}-dimensional PCA space, conditioned on x, can put calibrated mass on decoded points that "
                "are not captions of any pool, and CReL's minimum over a wide calibrated set is then driven by the "
                "set's extent, not by the captioner's real failure rate.")
    return ("A's calibrated set does not reach its failure captions for most test images, so CReL does not see A's "
            "failure mode.")


def reversal_text(config: CReLConfig, results: dict[str, dict], sweep: dict[float, dict],
                  pool_sim: dict[str, float]) -> str:
    if not {"A", "B"} <= set(results):
        return skipped("The rank reversal", "it needs captioners A and B")
    cs = config.captions
    A, B = results["A"], results["B"]
    f = reversal_facts(results, sweep, cs.p_fail)
    (q_A, q_B), reversed_at, at_other = f["q"], f["reversed_at"], f["at_other"]
    higher = "the higher" if A["mean_rho"] > B["mean_rho"] else "the lower"
    why = _why(f["case"], B, pool_sim, cs.pca_dim)
    return f"""
**The rank reversal** (this run: `{config.preset}` preset, {cs.lgm} LGM). The designed profile
{"holds" if f["profile"] else "does not hold"}: A has {higher} mean
BERT-SIM ({A["mean_rho"]:.3f} against B's {B["mean_rho"]:.3f}) and {"the worse" if q_A < q_B else "the better"} tail
(model-free α-quantile {q_A:.3f} against {q_B:.3f}). **CReL {"reverses the ranking" if reversed_at else
"does not reverse the ranking"}** at p_fail =
{seq((f"{p:g}" for p in f["checked"]), sep=" and " if reversed_at else " or ")}:
CReL-BERT is {A["crel"]:.3f} for A
against {B["crel"]:.3f} for B at p_fail = {cs.p_fail:g}{"".join(
    f" (at p_fail = {p:g}: {v['mean BERT-SIM']:.3f} against {B['mean_rho']:.3f} in mean, {v['CReL-BERT']:.3f} against "
    f"{B['crel']:.3f} in CReL)" for p, v in at_other)}. Tail sanity, the share of test images whose CReL(x) is at or
below the model-free α-quantile: {A["tail_sanity"]:.2f} for A, {B["tail_sanity"]:.2f} for B. {why}
"""


# ----------------------------------------------------------------------------------------------------
# Section 5: the label-to-image generators
# ----------------------------------------------------------------------------------------------------
L2I_WHY = {"samples": "its own samples have the heavier lower tail",
           "set": "its own samples do not: only the LGM's calibrated set reaches lower"}


def label_to_image_text(config: CReLConfig, facts: dict, table: pd.DataFrame) -> str:
    """facts: `lib.crel.images.section_facts`; table: `lib.crel.images.crel_table`."""
    lf, ims, real = facts, config.images, facts["real"]
    pairs = seq(f"*{a}* above *{b}* ({L2I_WHY[lf['reasons'][a, b]]}; the CReL winner's ρ is the "
                f"{'more' if lf['concentration'][a, b] else 'less'} concentrated, sd {table.at[b, 'sd of ρ']:.3f} "
                f"against {table.at[a, 'sd of ρ']:.3f})" for a, b in lf["reversed_pairs"])
    order = (f"**CReL reverses {len(lf['reversed_pairs'])} of the {lf['n_pairs']} pairs**: mean ρ puts {pairs}"
             if lf["reversed_pairs"] else f"**No pair of the {lf['n_pairs']} is reversed**")
    return f"""
**The ranking** (this run: `{config.preset}` preset, α = {ims.alpha:g}). Mean ρ ranks *{lf["best_mean"]}* first
and *{lf["worst_mean"]}* last; CReL-ρ ranks *{lf["best_crel"]}* first and *{lf["worst_crel"]}* last (Kendall τ
between the rankings {lf["tau"]:.2f}). {order}. Without guidance (the budgets and the widths), the sets lie
{lf["unguided_ranges"]["mean ρ"]:.3f} apart in mean ρ and {lf["unguided_ranges"]["CReL-ρ"]:.3f} in CReL-ρ. The
model-free α-quantile of ρ, read off the samples without any LGM, orders {len(lf["tail_reversed_pairs"])} pairs
unlike the mean. Coverage-Z on the test folds is {lf["coverage"][0]:.3f} to {lf["coverage"][1]:.3f} (nominal
{1 - ims.alpha:g}); tail sanity {lf["tail"][0]:.2f} to {lf["tail"][1]:.2f}. The worst case's spread across the
{ims.pgd_starts} starts is {lf["spread"][0]:.3f} to {lf["spread"][1]:.3f}, at least {lf["spread_ratio"]:.0f} times
the paper's {PAPER_SPREAD:g}: the starts end in different local minima of ρ(Dec(z; x)) over $S^\\gamma(x)$, so
here the minimum over many starts matters. The LGM's {ims.pca_dim}-dimensional PCA alone lowers the mean ρ of the test
samples by {lf["recon_gap"]:.3f}{
"" if not lf["collapsed"] else "; the CVAE lost a latent dimension for " + seq(lf["collapsed"])}.{
"" if real is None else f" Real held-out images: mean ρ {real['mean_rho']:.3f}, CReL-ρ {real['crel']:.3f}."}
"""


PAIR_VERDICT = {"holds": "holds", "fails": "fails", "undecided": "stays undecided"}


def guidance_seeds_text(pair: PairOverSeeds, file: str) -> str:
    """The guidance pair over training seeds (`lib.crel.guidance_seeds.compare` of the committed record `file`)."""
    def line(c, name: str) -> str:
        return (f"{name}: {seq(f'{e:+.4f}' for e in c.effects)} per seed ({sum(e > 0 for e in c.effects)} of "
                f"{c.seeds} above 0), mean {c.mean:+.4f} [{c.lower:+.4f}, {c.upper:+.4f}] ({c.level:.0%}, Student's "
                f"t over the seeds: *{c.verdict}*)")

    w2, w4 = (f"w = {w:g}" for w in PAIR)
    return f"""
**Over training seeds (width 16).** The pair {w2} / {w4} was measured again at width 16 with {len(pair.seeds)}
training seeds of the class arm, each replicate with its own LGM fit, folds and PGD starts (`lib.crel.guidance_seeds`,
`results/02/seeds/{file}`). {line(pair.mean, f"Mean ρ, {w2} − {w4}")}. {line(pair.crel, f"CReL-ρ, {w4} − {w2}")};
{w4}'s CReL is the higher in {seq(pair.classes_w4_higher)} of the {NUM_CLASSES} classes. **The reversal (the
better mean at {w2}, the better CReL at {w4}) {PAIR_VERDICT[pair.verdict]} at width 16 over {len(pair.seeds)}
seeds**; the width-32 table above is one training seed.
"""


# ----------------------------------------------------------------------------------------------------
# What was measured, and what differs from the paper
# ----------------------------------------------------------------------------------------------------
def baseline_texts(config: CReLConfig, rows: pd.DataFrame, stats: pd.DataFrame) -> list[str]:
    """One phrase per baseline measured at every alpha: its Coverage-Y, its areas and the paper's row beside."""
    names = paper_names(rows, config.dqr_baseline)
    out = []
    for base_method, base_name in BASELINES:
        base_lgm = "none" if base_method == "DQR (Y-space)" else config.lgm
        found = [agg(stats, a, base_lgm, base_method, "coverage_y") for a in config.alphas]
        if all(found):
            paper_row = {a: PAPER_TABLE.get((names.get(base_method, base_method), a)) for a in config.alphas}
            paper_text = "; ".join(f"{'/'.join('–' if v is None else f'{v:g}' for v in p)} at α = {a:g}"
                                   for a, p in paper_row.items() if p)
            out.append(f"{base_name} {seq(v[0] for v in found)} with areas "
                       f"{area_text(stats, config.alphas, base_lgm, base_method)}"
                       + (f" (paper Coverage-Z/Coverage-Y/Area {paper_text})" if paper_text else ""))
    return out


def captions_bullet(config: CReLConfig, results: dict[str, dict]) -> str:
    if not {"A", "B"} <= set(results):
        return ""
    A, B, cs = results["A"], results["B"], config.captions
    return (f"\n- **Captions** are semi-synthetic, not the paper's BLIP/GIT experiment (which needs weights "
            f"and images we do not have; its code path is tested on tiny random models). With the {cs.lgm} LGM "
            f"A's tail sanity is {A['tail_sanity']:.2f} and CReL-BERT ranks A "
            f"{'below' if A['crel'] < B['crel'] else 'above'} B ({A['crel']:.3f} against {B['crel']:.3f}) at "
            f"p_fail = {cs.p_fail:g} (section 4).")


def runtime_facts(runtime: pd.DataFrame, growth: dict[str, dict]) -> dict:
    """{"factor": (d,) how many times slower the grid baseline is than CReL, "as_paper": the grid baseline grows
    faster per dimension than CReL and than 1 (the paper's claim)}."""
    return {"factor": runtime["feldman_s"] / runtime["crel_s"],
            "as_paper": bool(growth["feldman"]["factor_per_dim"] > max(1, growth["crel"]["factor_per_dim"]))}


def closing_text(config: CReLConfig, resplit: dict, rows: pd.DataFrame, stats: pd.DataFrame, runtime: pd.DataFrame,
                 growth: dict[str, dict], steps: dict[str, list], cap_results: dict[str, dict], l2i: dict) -> str:
    """The closing bullets; l2i: `lib.crel.images.section_facts`, steps: `conditional.step_factors` per method."""
    single = rows[(rows["lgm"] == config.lgm) & (rows["method"] == "CReL")]
    single_runs = "; ".join(f"{span(single[single['alpha'] == a]['coverage_z'], 3)} (α = {a:g})"
                            for a in config.alphas)
    inside = guarantee(resplit, 0.0, config.alphas[0])["inside"]
    baselines = baseline_texts(config, rows, stats)
    rt = runtime_facts(runtime, growth)
    l2i_text = (f"\n- **Trained label-to-image generators** (section 5, notebook 04's class-conditional diffusion "
                f"arm): mean ρ ranks *{l2i['best_mean']}* first, CReL-ρ *{l2i['best_crel']}*; "
                f"{len(l2i['reversed_pairs'])} of the {l2i['n_pairs']} pairs are reversed (Kendall τ "
                f"{l2i['tau']:.2f}).")
    return f"""
- **The guarantee {"holds" if inside else "does not hold"}.** Latent coverage over {config.coverage_resplits}
  re-splits averages {resplit["mean"]:.4f} ± {resplit["se"]:.4f} against the bounds [{resplit["lower"]:.4f},
  {resplit["upper"]:.4f}]; single runs of the {reader_name(config.lgm)} give {single_runs}; the paper's single run
  gave 0.8953 and 0.9770 at α = 0.1 and 0.02.
- **CReL's table** (section 2) is read above, LGM by LGM, with its areas.
- **The baselines**, measured the same way ({reader_name(config.lgm)}; DQR in Y needs no LGM), Coverage-Y at α =
  {seq(f"{a:g}" for a in config.alphas)}: {"; ".join(baselines) or "none in this run"}. They depend on choices the
  paper does not report (§3.8).
- **Runtime** (this run). CReL's calibration costs {span(runtime["crel_s"], fmt=sig)} s per point at d =
  {seq(runtime["d"], sep=", ")} (one exact QP; ×{growth["crel"]["factor_per_dim"]:.2f} per dimension); the grid
  baseline {seq(sig(v) for v in runtime["feldman_s"])} s: {span(rt["factor"], fmt=sig)} times slower and growing
  ×{growth["feldman"]["factor_per_dim"]:.2f} per dimension{", as the paper says" if rt["as_paper"]
  else ", not the growth the paper reports"}; step by step the grid
  baseline grows {seq((f"×{s['per_dim']:.2f} ({s['from']}→{s['to']})" for s in steps["feldman"]), sep=", ")},
  CReL {seq((f"×{s['per_dim']:.2f}" for s in steps["crel"]), sep=", ")}. The grid baseline's cost
  depends on the point: inside its region it scans the whole Y-grid ({seq(num(v, 2) for v in runtime["feldman_in_s"])}
  s per point at d = {seq(runtime["d"], sep=", ")}; n/a: no timed point inside), outside it descends to the region
  ({seq(num(v, 2) for v in runtime["feldman_out_s"])} s); {seq(runtime["feldman_inside"], sep=", ")} of the
  {config.runtime_n_feldman} timed points lay inside, so the step factors of the mean move with that mix.{
  captions_bullet(config, cap_results)}
  {l2i_text}
"""
