"""What notebook 04's reading cells state: the facts of each section (values, comparisons, counts, the lists of
extractors a rule picks), computed from the run's tables; the sentences that state them are the sections of
docs/results/templates/readings-04.md (`TEXT`, `lib.templates.Readings`).

Each `*_facts` function returns the facts of one reading cell as a dict (unit-tested on small hand-made tables in
tests/test_irs_readings.py); each `*_reading` function renders that cell's section from them, so a reading cell is
one call: `say(readings.gap_reading(gap, config))`. The thresholds the sentences apply (what counts as "linear", as
"faithful") are the constants below, which the sections state by name (`{{ LINEAR_MIN_R2 }}`); the paper's numbers
and the spec's are `lib.irs.paper`'s (`{{ paper.XL }}`). The facts of the trained generators' sections come from
`lib.irs.generators` (`diadm_facts`, `trend_facts`, `copy_facts`, `ranking_agreement`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from lib.irs import paper
from lib.irs.config import IRSConfig
from lib.irs.experiment import ADJUSTED_REAL, ADJUSTED_SYNTH
from lib.reading import compare
from lib.templates import Readings

# the sentences: docs/results/templates/readings-04.md
TEXT = Readings("04", __name__, also={"ADJUSTED_SYNTH": ADJUSTED_SYNTH, "ADJUSTED_REAL": ADJUSTED_REAL})

# Section 1: where the MLE's bias is stated, and what the ImageNet-scale interval must resolve (the paper's spec §5
# reference simulation and ImageNet-scale setting: lib.irs.paper)
LARGE_N_RATIO = 0.2  # "once n / N >= 0.2": where the MLE's bias is stated
RESOLVING_HALF_WIDTH = round(paper.XL - paper.XXL, 2)  # the paper's EDM-2-XL against XXL: resolved by a narrower one
# Section 3: "linear" in the class fraction (regime b), and the draws that carry little information (spec §2.2)
LINEAR_SLOPE_TOLERANCE, LINEAR_MIN_R2 = 0.2, 0.9
FEW_COLLISIONS = 10
LARGE_F = 0.5  # the share of the flagged draws at f >= LARGE_F is stated
# E3: an extractor whose copies retrieve their own source this often is "faithful"
FAITHFUL_HIT_RATE = 0.95
# Section 4's sets, as `experiment.toy_rows` names them
REAL_SET, DROPPED_SET = "real (SYN pool)", "drop 5 classes (SYN)"
# Numbers the notebook's text states whose digits a constant of lib.irs also has, as a different fact
OTHER_FACTS = {
    "0.02": "the memoriser's default pixel noise σ = 0.02 (IRSConfig.mem_noise, about 5 grey levels) that the text "
            "of section 3 explains; claims.COVERAGE_TOLERANCE is how far below nominal the coverage claim's pooled "
            "lower bound may lie",
}


# ----------------------------------------------------------------------------------------------------
# 1. The estimator on simulated ground truth
# ----------------------------------------------------------------------------------------------------
def simulation_facts(sim: pd.DataFrame, *, alpha_e: float, reps: int) -> dict:
    """The simulation table's facts (`experiment.simulation_table` rows): the nominal coverage 1 - 2 alpha_e and
    the binomial standard error of a coverage estimate over `reps` runs; the coverage's range, mean and largest
    distance from nominal in standard errors, and whether the mean is at or above nominal ("conservative");
    the largest |bias| once n / N >= LARGE_N_RATIO (None without such a setting); the corner (s nearest N,
    fewest samples) row; the coverage at the spec's reference case (None when not simulated) and whether it
    lies more than 2 standard errors above the spec's `paper.SPEC_COVERAGE`."""
    nominal = 1 - 2 * alpha_e
    se = float(np.sqrt(nominal * (1 - nominal) / reps))
    coverage = sim["coverage"]
    large_n = sim[sim["ratio"] >= LARGE_N_RATIO]
    spec_case = sim[np.isclose(sim["truth"], paper.SPEC_TRUTH) & np.isclose(sim["ratio"], paper.SPEC_RATIO)]
    spec = None if spec_case.empty else float(spec_case["coverage"].iloc[0])
    return {"nominal": nominal, "coverage_se": se, "coverage_min": coverage.min(), "coverage_max": coverage.max(),
            "coverage_mean": coverage.mean(), "max_se_off": (coverage - nominal).abs().max() / se,
            "relation": compare(coverage.mean(), nominal), "conservative": bool(coverage.mean() >= nominal),
            "large_n_bias": None if large_n.empty else large_n["bias"].abs().max(),
            "corner": sim.sort_values(["truth", "ratio"], ascending=[False, True]).iloc[0],
            "spec_coverage": spec, "spec_was_noise": spec is not None and spec > paper.SPEC_COVERAGE + 2 * se}


def adjusted_facts(adj_sim: dict, imagenet: dict, *, alpha_e: float) -> dict:
    """The adjusted interval's Bonferroni bound 1 - 4 alpha_e, its simulated coverage and whether it exceeds the
    nominal 1 - 2 alpha_e; the ImageNet-scale interval's half-width and whether it resolves the paper's XL from
    XXL (RESOLVING_HALF_WIDTH)."""
    half_width = (imagenet["upper"] - imagenet["lower"]) / 2
    return {"bonferroni": 1 - 4 * alpha_e, "coverage": adj_sim["coverage"],
            "conservative": bool(adj_sim["coverage"] > 1 - 2 * alpha_e), "half_width": half_width,
            "resolved": bool(half_width <= RESOLVING_HALF_WIDTH)}


def simulation_reading(sim: pd.DataFrame, adj_sim: dict, imagenet: dict, imagenet_s: float, config: IRSConfig) -> str:
    """Section 1's reading: the coverage and bias of the simulation, the corner, the adjusted interval and the
    ImageNet-scale interval."""
    f = simulation_facts(sim, alpha_e=config.alpha_e, reps=config.sim_reps)
    return TEXT("simulation", f=f, a=adjusted_facts(adj_sim, imagenet, alpha_e=config.alpha_e), corner=f["corner"],
                sim=sim, imagenet_s=imagenet_s, config=config)


# ----------------------------------------------------------------------------------------------------
# 2. The measurement gap
# ----------------------------------------------------------------------------------------------------
def gap_facts(gap: pd.DataFrame, extractors: tuple[str, ...]) -> dict:
    """The measurement gap's facts (`experiment.measurement_gap` rows with an "extractor" column): at the
    largest n, each extractor's mean [lower, estimate, upper], smallest estimate first ("top"); whether every
    interval stays below 1; the max / min ratio of the estimates ("fold"); the extractor with the smallest gap;
    the first extractor's mean estimate at the smallest and largest n."""
    n_max, n_min = int(gap["n"].max()), int(gap["n"].min())
    top = gap[gap.n == n_max].groupby("extractor")[["lower", "estimate", "upper"]].mean().sort_values("estimate")
    low = gap[gap.n == n_min].groupby("extractor")["estimate"].mean()
    first = extractors[0]
    return {"n_max": n_max, "n_min": n_min, "top": top, "below_one": bool((top["upper"] < 1).all()),
            "fold": top["estimate"].max() / top["estimate"].min(), "smallest_gap": top.index[-1], "first": first,
            "first_low": low[first], "first_high": top.loc[first, "estimate"]}


def gap_reading(gap: pd.DataFrame, config: IRSConfig, n_train: int) -> str:
    """Section 2's reading: IRS_inf of real held-out images per extractor at the largest n."""
    return TEXT("gap", f=gap_facts(gap, config.extractors), config=config, n_train=n_train)


# ----------------------------------------------------------------------------------------------------
# 3. The controlled experiment (E2) and the memorising control (E3)
# ----------------------------------------------------------------------------------------------------
def class_fraction_facts(fits: pd.DataFrame, e2: pd.DataFrame, extractors: tuple[str, ...]) -> dict:
    """The class-fraction experiment's facts: the IRS_inf,a fits {(extractor, regime): (slope, intercept, r2)};
    the extractors on which IRS_inf,a is linear in f in regime (b) (|slope - 1| <= LINEAR_SLOPE_TOLERANCE and
    R² >= LINEAR_MIN_R2), in `extractors` order, and the others; the smallest f and each extractor's mean
    IRS_inf,a there (regime b); the draws with fewer than FEW_COLLISIONS collisions, of all, and the share of
    them at f >= LARGE_F (None when none is flagged)."""
    adj = fits[fits["score"] == "irs_adj"].set_index(["extractor", "regime"])
    fit = {key: (row["slope"], row["intercept"], row["r2"]) for key, row in adj.iterrows()}
    linear = [name for name in extractors if (name, "b") in fit
              and abs(fit[(name, "b")][0] - 1) <= LINEAR_SLOPE_TOLERANCE and fit[(name, "b")][2] >= LINEAR_MIN_R2]
    flagged = e2[e2["collisions"] < FEW_COLLISIONS]
    f_min = e2["f"].min()
    small_f = e2[(e2["regime"] == "b") & (e2["f"] == f_min)].groupby("extractor")["irs_adj"].mean()
    return {"fits": fit, "linear": linear, "others": [name for name in extractors if name not in linear],
            "f_min": f_min, "small_f": small_f.to_dict(), "flagged": len(flagged), "draws": len(e2),
            "flagged_large_f": float(np.mean(flagged["f"] >= LARGE_F)) if len(flagged) else None}


def fit_text(fit: dict, names: list[str], regime: str) -> str:
    """"name slope s, intercept i, R² r" for each of `names` fitted in `regime`, joined by "; "."""
    return TEXT("fits", fit=fit, names=names, regime=regime)


def class_fraction_reading(fits: pd.DataFrame, e2: pd.DataFrame, config: IRSConfig) -> str:
    """Section 3's reading: where IRS_inf,a is linear in the class fraction, and the uninformative draws."""
    f = class_fraction_facts(fits, e2, config.extractors)
    return TEXT("class-fraction", f=f, fit=f["fits"], linear=f["linear"], others=f["others"], config=config)


def memoriser_facts(e3: pd.DataFrame, extractors: tuple[str, ...]) -> dict:
    """The memorising control's facts (`experiment.e3_rows`): each extractor's mean source-hit rate; the
    "faithful" extractors (rate >= FAITHFUL_HIT_RATE) and the others, in `extractors` order; whether every
    interval of the faithful ones covers g, and whether any of the others' does; the first extractor's
    (g, IRS_inf,a) rows and whether IRS_inf,a exceeds g on every one of them (over-correction)."""
    hits = e3.groupby("extractor")["source_hit"].mean()
    faithful = [name for name in extractors if hits.get(name, 0) >= FAITHFUL_HIT_RATE]
    spread = [name for name in extractors if name in hits.index and name not in faithful]
    first = e3[e3["extractor"] == extractors[0]]
    return {"hits": hits.to_dict(), "faithful": faithful, "spread": spread,
            "faithful_cover": bool(e3[e3["extractor"].isin(faithful)]["covers_g"].all()),
            "spread_cover_any": bool(e3[e3["extractor"].isin(spread)]["covers_g"].any()),
            "first": extractors[0], "first_adjusted": [(r.g, r.irs_adj) for r in first.itertuples()],
            "over_corrects": bool((first["irs_adj"] > first["g"]).all())}


def memoriser_reading(e3: pd.DataFrame, config: IRSConfig) -> str:
    """E3's reading: on which extractors the copies retrieve their source, IRS_inf there, the adjusted score."""
    f = memoriser_facts(e3, config.extractors)
    return TEXT("memoriser", f=f, faithful=f["faithful"], spread=f["spread"], hits=f["hits"], config=config)


def vote_reading(ballot: dict | None, heldout: dict[str, np.ndarray]) -> str:
    """Section 3b's reading from `vote.vote_summary` (`ballot`; None: fewer than two extractors voted) over the
    held-out retrievals `heldout` {extractor: (Q,) indices}."""
    if ballot is None:
        return TEXT("vote-skipped")
    return TEXT("vote", ballot=ballot, rank=ballot["ranking"], extractors=len(heldout),
                queries=len(next(iter(heldout.values()))))


# ----------------------------------------------------------------------------------------------------
# 4. Toy generators
# ----------------------------------------------------------------------------------------------------
def toy_facts(scores: pd.DataFrame, ranks: pd.DataFrame, *, memoriser: str) -> dict:
    """The toy generators' facts on one extractor: `scores` (one row per generator: irs_inf, irs_adj, fid,
    precision, recall, coverage, ...) and `ranks` (the same rows, one column per metric, 1 = judged best).
    Returns the number of sets; the memoriser's and the 5-class drop's score and rank rows (None when absent)
    and the real set's FID; the PCA-Gaussian sets, the metrics that rank one of them last and their IRS_inf."""
    pca = [g for g in scores.index if g.startswith("pca")]
    return {"sets": len(scores), "real_fid": scores.loc[REAL_SET, "fid"] if REAL_SET in scores.index else None,
            "memoriser": (scores.loc[memoriser], ranks.loc[memoriser]) if memoriser in scores.index else None,
            "dropped": (scores.loc[DROPPED_SET], ranks.loc[DROPPED_SET]) if DROPPED_SET in scores.index else None,
            "pca": pca, "pca_last": [c for c in ranks.columns if pca and ranks.loc[pca, c].max() == len(scores)],
            "pca_irs_inf": scores.loc[pca, "irs_inf"].tolist()}


def toy_reading(scores: pd.DataFrame, ranks: pd.DataFrame, extractor: str, config: IRSConfig, n_train: int) -> str:
    """Section 4's reading on one extractor: what the memoriser, the mode dropping and the PCA-Gaussians score."""
    g = min(config.mem_fractions)
    return TEXT("toy", f=toy_facts(scores, ranks, memoriser=f"memorise-{g:g}"), g=g, extractor=extractor,
                config=config, n_train=n_train)


# ----------------------------------------------------------------------------------------------------
# 5. Trained generators (their facts: lib.irs.generators)
# ----------------------------------------------------------------------------------------------------
def diadm_reading(facts: dict, extractor: str) -> str:
    """Section 5's DiADM reading from `generators.diadm_facts` (`facts`), stated on `extractor`."""
    return TEXT("diadm", d=facts[extractor], facts=facts, extractor=extractor,
                higher=[e for e in facts if facts[e]["irs_higher"]], lower=[e for e in facts if facts[e]["fid_lower"]],
                rose=[e for e in facts if facts[e]["irs_rose"]])


def ranking_intro() -> str:
    """Section 5's ranking, introduced by what the paper's Table 1 reports (its numbers: `lib.irs.paper`)."""
    return TEXT("ranking-intro")


def ranking_reading(agreement: dict, trend: dict, channels: tuple[int, ...]) -> str:
    """Section 5's ranking reading from `generators.ranking_agreement` and `generators.trend_facts`; `channels`:
    the widths (the first the main one, the last the smallest)."""
    return TEXT("ranking", agreement=agreement, trend=trend, main_c=channels[0], small_c=channels[-1])


def copying_reading(c: dict, extractor: str) -> str:
    """Section 5's copying-control reading from `generators.copy_facts` (`c`), stated on `extractor`."""
    return TEXT("copying", c=c, extractor=extractor)


# ----------------------------------------------------------------------------------------------------
# 6. The paper's scale
# ----------------------------------------------------------------------------------------------------
def paper_scale_targets() -> str:
    """Section 6's targets at the paper's scale (its numbers: `lib.irs.paper`)."""
    return TEXT("paper-scale-targets")


# ----------------------------------------------------------------------------------------------------
# What was measured
# ----------------------------------------------------------------------------------------------------
def closing_reading(sim: pd.DataFrame, gap: pd.DataFrame, fits: pd.DataFrame, e2: pd.DataFrame, e3: pd.DataFrame,
                    config: IRSConfig, n_train: int) -> str:
    """The closing list's first item: what this run measured, with the findings of sections 1 to 3."""
    return TEXT("closing", sim=sim, top=gap_facts(gap, config.extractors)["top"],
                linear=class_fraction_facts(fits, e2, config.extractors)["linear"],
                faithful=memoriser_facts(e3, config.extractors)["faithful"], config=config, n_train=n_train)
