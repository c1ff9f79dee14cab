"""What notebook 02's reading cells state: the facts (values, comparisons, the words "inside"/"below"/"reverses",
counts) computed from the run's results. Each reading cell of the notebook is one call of a `*_text` function here and
a `say`; the sentences themselves are the sections of docs/results/templates/readings-02.md (`TEXT`, a
`lib.templates.Readings`), rendered from the facts these functions compute, the constants below and the paper's
numbers (`lib.crel.paper`). The facts are the functions without `_text`, unit-tested in tests/test_crel_readings.py on
small hand-made inputs.

`stats` below is the synthetic table over seeds, as the notebook makes it: `table_stats(rows)`, a groupby of the
rows of `experiment.synthetic_table_rows` by (alpha, lgm, method) with the "mean", "std" and "count" of each of
`experiment.SYNTHETIC_COLUMNS`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from lib.crel import conditional as cc
from lib.crel import paper
from lib.crel.conditional import X_RANGE
from lib.crel.experiment import SYNTHETIC_COLUMNS, CReLConfig, paper_dqr_row
from lib.crel.guidance_seeds import PAIR, PairOverSeeds
from lib.diffusion.family import NUM_CLASSES
from lib.reading import seq
from lib.tables import reader_name
from lib.templates import Readings

TEXT = Readings("02", __name__)  # the sentences: docs/results/templates/readings-02.md

TABLE_ORDER = {"CReL": 0, "Feldman": 1, "DQR": 2, "PCP": 3}  # the paper's rows, in its table's order
BASELINES = (("Feldman", "Feldman et al."), ("DQR (Y-space)", "DQR in Y"), ("PCP", "PCP"))  # (method, its name)
# Numbers that the notebook's prose and a constant of this package both type, as different facts sharing their digits
# (`lib.reading.typed_twice`): {the number: why the two differ}
OTHER_FACTS = {
    "0.05": "the prose's 0.05 nats is the collapse guard's KL threshold (CReLConfig.collapse_threshold); the 0.05 of "
            "PRESETS is a p_fail of the cpu preset's caption sweep",
    "0.1": "the prose's 0.1 is the banana's noise radius (lib.data.banana), the collapse guard's sensitivity "
           "threshold (lib.crel.cvae), captioner C's UNREL weight (lib.crel.captions) and the label-to-image "
           "section's α (ImageSettings.alpha); the constants' 0.1 are the paper's α (paper.ALPHAS, which every "
           "sentence that states the paper's α names) and the ± 10 % margin of claims.PAR_MARGIN",
    "0.15": "the prose's 0.15 is captioner A's designed p_fail (CaptionSettings.p_fail, captions.captioner_weights); "
            "the 0.15 of PRESETS is one point of the cpu preset's p_fail sweep",
    "0.3": "the prose's 0.3 is captioner C's NEAR weight (lib.crel.captions) and the p_fail of a dated record of "
           "an earlier run; the 0.3 of PRESETS is one point of the cpu preset's p_fail sweep",
    "0.5": "the prose's 0.5 is a record's free bits (nats) and captioner B's NEAR and MID weights "
           "(lib.crel.captions); the 0.5 of PRESETS is the budget fraction of a label-to-image generator",
}


def table_stats(rows: pd.DataFrame) -> pd.DataFrame:
    """"mean", "std" and "count" over seeds of each measured column, per (alpha, lgm, method), in the rows' order."""
    return rows.groupby(["alpha", "lgm", "method"], sort=False)[list(SYNTHETIC_COLUMNS)].agg(["mean", "std", "count"])


def paper_names(rows: pd.DataFrame, dqr_baseline: str) -> dict[str, str]:
    """{our method: the paper's row it stands beside} for every method of the rows (§3.8 [interpretation])."""
    short = paper_dqr_row(dqr_baseline)
    return {m: short.get(m, m) for m in rows["method"].unique()}


def synthetic_task_text() -> str:
    """The synthetic task's data-generating process (section "synthetic-task"): the banana's range of x from
    `conditional.X_RANGE`."""
    return TEXT("synthetic-task", x_range=X_RANGE)


# ----------------------------------------------------------------------------------------------------
# Section 1: the guarantee
# ----------------------------------------------------------------------------------------------------
def guarantee(resplit: dict, pre: float, alpha: float) -> dict[str, bool]:
    """{"inside": the re-splits' mean coverage lies within the bounds [1 − α, 1 − α + 1/(n_cal + 1)] widened by two
    standard errors, "below": the pre-calibration coverage is below 1 − α (then the upper bound applies)}."""
    lo, hi, se = resplit["lower"], resplit["upper"], resplit["se"]
    return {"inside": bool(lo - 2 * se <= resplit["mean"] <= hi + 2 * se), "below": bool(pre < 1 - alpha)}


def resplit_text(config: CReLConfig, resplit: dict, pre: float, alpha: float) -> str:
    return TEXT("resplit", config=config, resplit=resplit, pre=pre, alpha=alpha, lgm=reader_name(config.lgm),
                g=guarantee(resplit, pre, alpha))


def guard_facts(rows: pd.DataFrame) -> dict | None:
    """The collapse guard's CVAE seeds: {"trainings": {seed: trainings used}, "kept_collapsed": the seeds whose every
    training collapsed (sorted)}; None when the CVAE has no rows."""
    seeds = rows[(rows["lgm"] == "cvae") & (rows["method"] == "CReL")].drop_duplicates("seed")
    if seeds.empty:
        return None
    return {"trainings": {r.seed: 1 + len(r.collapsed_attempts) for r in seeds.itertuples()},
            "kept_collapsed": sorted({r.seed for r in seeds.itertuples() if len(r.collapsed)})}


def guard_text(rows: pd.DataFrame) -> str:
    return TEXT("guard", guard=guard_facts(rows))


# ----------------------------------------------------------------------------------------------------
# Section 2: the synthetic table
# ----------------------------------------------------------------------------------------------------
def mean_sd_cell(stats: pd.DataFrame, key: tuple, column: str, digits: int = 3) -> str:
    """'mean ± sd' over seeds (no sd with one seed), blank where the method has no such column."""
    m, s = stats.loc[key, (column, "mean")], stats.loc[key, (column, "std")]
    return "" if np.isnan(m) else f"{m:.{digits}f}" + ("" if np.isnan(s) else f" ± {s:.{digits}f}")


def paper_cells(method: str, alpha: float, names: dict[str, str]) -> str:
    """The paper's Coverage-Z / Coverage-Y / Area of the row `method` stands beside ('–' where it has none)."""
    values = paper.TABLE.get((names[method], alpha))
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
    return TEXT("table", config=config, seeds=seeds, n_test=n_test,
                se={a: float(np.sqrt(a * (1 - a) / n_test)) for a in config.alphas},
                rows=table_rows(stats, paper_names(rows, config.dqr_baseline), config.alphas))


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
    paper's: binomial on its test points, `paper.TEST_POINTS`)."""
    ours_se = value[1] / np.sqrt(value[2]) if value[2] > 1 else np.sqrt(value[0] * (1 - value[0]) / points)
    paper_se = np.sqrt(paper_value * (1 - paper_value) / paper.TEST_POINTS)
    return value[0] - paper_value, bool(abs(value[0] - paper_value) <= 2 * np.hypot(ours_se, paper_se))


def coverage_facts(stats: pd.DataFrame, lgm: str, alphas: tuple[float, ...], points: int) -> dict | None:
    """CReL's Coverage-Y with `lgm` against the paper: {"found": {alpha: (mean, sd, seeds)}, "paper_at": {alpha:
    the paper's row}, "checks": {alpha: [(difference, within) for Coverage-Z, Coverage-Y]}, "agree": every
    difference within two standard errors, "grows": coverage grows with 1 − alpha}; None without such rows."""
    found = {a: agg(stats, a, lgm, "CReL", "coverage_y") for a in alphas}
    found = {a: v for a, v in found.items() if v is not None}
    if not found:
        return None
    paper_at = {a: paper.TABLE[("CReL", a)] for a in found if ("CReL", a) in paper.TABLE}
    checks = {a: [against_paper(found[a], p, points) for p in paper_at[a][:2]] for a in paper_at}
    by_level = sorted(found, reverse=True)
    return {"found": found, "paper_at": paper_at, "checks": checks,
            "agree": all(ok for pair in checks.values() for _, ok in pair),
            "grows": all(found[a][0] < found[b][0] for a, b in zip(by_level, by_level[1:]))}


def coverage_bullet(config: CReLConfig, rows: pd.DataFrame, stats: pd.DataFrame, lgm: str, points: int, label: str,
                    per_seed: bool = False) -> str:
    cov = coverage_facts(stats, lgm, config.alphas, points)
    crel = rows[(rows["lgm"] == lgm) & (rows["method"] == "CReL")]
    seeds = ({a: crel[crel["alpha"] == a]["coverage_y"] for a in config.alphas}
             if per_seed and config.num_seeds > 1 else None)
    ours = None if cov is None else {a: mean_sd_text(v) for a, v in cov["found"].items()}
    return TEXT("coverage-bullet", cov=cov, ours=ours, per_seed=seeds, lgm=lgm, points=points, label=label)


def coverage_text(config: CReLConfig, rows: pd.DataFrame, stats: pd.DataFrame) -> str:
    return "\n".join([
        coverage_bullet(config, rows, stats, "flow", config.folds[3], TEXT("coverage-label-flow")),
        coverage_bullet(config, rows, stats, "cvae", config.area_eval_n_x, TEXT("coverage-label-cvae", config=config),
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
    return TEXT("areas", f=f, alphas=alphas,
                paper_area=[paper.TABLE[("CReL", a)][2] for a in alphas if ("CReL", a) in paper.TABLE],
                crel_areas={reader_name(lgm): area_text(stats, alphas, lgm, "CReL") for lgm in f["crel_lgms"]},
                dqr_area=area_text(stats, alphas, "none", "DQR (Y-space)") if f["has_dqr"] else None,
                pcp_areas={reader_name(lgm): area_text(stats, alphas, lgm, "PCP") for lgm in f["pcp_lgms"]})


# ----------------------------------------------------------------------------------------------------
# Conditional coverage and the PGD's spread
# ----------------------------------------------------------------------------------------------------
def conditional_text(config: CReLConfig, alpha: float, cond_gap: dict[str, dict]) -> str:
    return TEXT("conditional", config=config, alpha=alpha, cond_gap=cond_gap, lgm=reader_name(config.lgm))


def spread_text(config: CReLConfig, alpha: float, spread: dict[str, dict]) -> str:
    return TEXT("spread", config=config, alpha=alpha, spread=spread, verdict=cc.spread_verdict(spread))


# ----------------------------------------------------------------------------------------------------
# Section 4: captions
# ----------------------------------------------------------------------------------------------------
def tail_reached(modes: dict[str, dict]) -> list[str]:
    """The UNREL modes whose captioner A reaches the model-free alpha-quantile on at least half the test images."""
    return [mode for mode, r in modes.items() if r["tail_sanity"] >= 0.5]


def modes_text(config: CReLConfig, modes: dict[str, dict]) -> str:
    """modes: {UNREL mode: captioner A's `run_captioner` result}, the notebook's mode first."""
    return TEXT("modes", config=config, modes=modes, reached=tail_reached(modes))


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


def reversal_text(config: CReLConfig, results: dict[str, dict], sweep: dict[float, dict],
                  pool_sim: dict[str, float]) -> str:
    if not {"A", "B"} <= set(results):
        return TEXT("reversal-skipped")
    return TEXT("reversal", config=config, cs=config.captions, a=results["A"], b=results["B"], pool_sim=pool_sim,
                f=reversal_facts(results, sweep, config.captions.p_fail))


# ----------------------------------------------------------------------------------------------------
# Section 5: the label-to-image generators
# ----------------------------------------------------------------------------------------------------
def label_to_image_text(config: CReLConfig, facts: dict, table: pd.DataFrame) -> str:
    """facts: `lib.crel.images.section_facts`; table: `lib.crel.images.crel_table`."""
    return TEXT("l2i", config=config, ims=config.images, lf=facts, real=facts["real"], table=table)


def guidance_seeds_text(pair: PairOverSeeds, file: str) -> str:
    """The guidance pair over training seeds (`lib.crel.guidance_seeds.compare` of the committed record `file`)."""
    return TEXT("guidance-seeds", pair=pair, file=file, scales=PAIR, classes=NUM_CLASSES)


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
            paper_row = {a: paper.TABLE.get((names.get(base_method, base_method), a)) for a in config.alphas}
            cells = {a: "/".join("–" if v is None else f"{v:g}" for v in p) for a, p in paper_row.items() if p}
            out.append(TEXT("baseline", baseline=base_name, found=[v[0] for v in found], paper_cells=cells,
                            areas=area_text(stats, config.alphas, base_lgm, base_method)))
    return out


def captions_bullet(config: CReLConfig, results: dict[str, dict]) -> str:
    if not {"A", "B"} <= set(results):
        return ""
    return "\n" + TEXT("captions", cs=config.captions, a=results["A"], b=results["B"])


def runtime_facts(runtime: pd.DataFrame, growth: dict[str, dict]) -> dict:
    """{"factor": (d,) how many times slower the grid baseline is than CReL, "as_paper": the grid baseline grows
    faster per dimension than CReL and than 1 (the paper's claim)}."""
    return {"factor": runtime["feldman_s"] / runtime["crel_s"],
            "as_paper": bool(growth["feldman"]["factor_per_dim"] > max(1, growth["crel"]["factor_per_dim"]))}


def closing_text(config: CReLConfig, resplit: dict, rows: pd.DataFrame, stats: pd.DataFrame, runtime: pd.DataFrame,
                 growth: dict[str, dict], steps: dict[str, list], cap_results: dict[str, dict], l2i: dict) -> str:
    """The closing bullets; l2i: `lib.crel.images.section_facts`, steps: `conditional.step_factors` per method."""
    single = rows[(rows["lgm"] == config.lgm) & (rows["method"] == "CReL")]
    return TEXT("closing", config=config, resplit=resplit, lgm=reader_name(config.lgm), runtime=runtime,
                growth=growth, steps=steps, l2i=l2i, rt=runtime_facts(runtime, growth),
                single={a: single[single["alpha"] == a]["coverage_z"] for a in config.alphas},
                inside=guarantee(resplit, 0.0, config.alphas[0])["inside"],
                baselines=baseline_texts(config, rows, stats), captions=captions_bullet(config, cap_results))
