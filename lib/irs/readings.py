"""What notebook 04's reading cells state: the facts of each section (values, comparisons, counts, the lists of
extractors a rule picks), computed from the run's tables, and the sentences that state them.

Each `*_facts` function returns the facts of one reading cell as a dict (unit-tested on small hand-made tables in
tests/test_irs_readings.py); each `*_reading` function renders that cell's Markdown from them, so a reading cell is
one call: `say(readings.gap_reading(gap, config))`. The thresholds the sentences apply (what counts as "linear", as
"faithful") are the constants below. The facts of the trained generators' sections come from
`lib.irs.generators` (`diadm_facts`, `trend_facts`, `copy_facts`, `ranking_agreement`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from lib.irs.config import IRSConfig
from lib.reading import compare, num, pct, sig, skipped, span
from lib.templates import Readings

TEXT = Readings("04", __name__)  # the sentences: docs/results/templates/readings-04.md

# Section 1: the spec's reference simulation (§5) and what the reading tests against it
SPEC_COVERAGE = 0.85  # spec §5: the reference simulation's coverage at N = 10k, s = 9k, n = 2k
# the ImageNet-scale setting section 1 simulates (spec §1's caveat): the database, a model's samples, its coverage
IMAGENET_TRAIN, IMAGENET_SAMPLES, IMAGENET_COVERED = 1_281_167, 50_000, 0.77
SPEC_TRUTH, SPEC_RATIO = 0.9, 0.2  # that simulation's s / N and n / N
LARGE_N_RATIO = 0.2  # "once n / N >= 0.2": where the MLE's bias is stated
RESOLVING_HALF_WIDTH = 0.02  # the paper's EDM-2-XL 0.77 against XXL 0.75: resolved by a narrower interval
# Section 3: "linear" in the class fraction (regime b), and the draws that carry little information (spec §2.2)
LINEAR_SLOPE_TOLERANCE, LINEAR_MIN_R2 = 0.2, 0.9
FEW_COLLISIONS = 10
LARGE_F = 0.5  # the share of the flagged draws at f >= LARGE_F is stated
# E3: an extractor whose copies retrieve their own source this often is "faithful"
FAITHFUL_HIT_RATE = 0.95
# Section 4's sets, as `experiment.toy_rows` names them
REAL_SET, DROPPED_SET = "real (SYN pool)", "drop 5 classes (SYN)"


# ----------------------------------------------------------------------------------------------------
# 1. The estimator on simulated ground truth
# ----------------------------------------------------------------------------------------------------
def simulation_facts(sim: pd.DataFrame, *, alpha_e: float, reps: int) -> dict:
    """The simulation table's facts (`experiment.simulation_table` rows): the nominal coverage 1 - 2 alpha_e and
    the binomial standard error of a coverage estimate over `reps` runs; the coverage's range, mean and largest
    distance from nominal in standard errors, and whether the mean is at or above nominal ("conservative");
    the largest |bias| once n / N >= LARGE_N_RATIO (None without such a setting); the corner (s nearest N,
    fewest samples) row; the coverage at the spec's reference case (None when not simulated) and whether it
    lies more than 2 standard errors above the spec's SPEC_COVERAGE."""
    nominal = 1 - 2 * alpha_e
    se = float(np.sqrt(nominal * (1 - nominal) / reps))
    coverage = sim["coverage"]
    large_n = sim[sim["ratio"] >= LARGE_N_RATIO]
    spec_case = sim[np.isclose(sim["truth"], SPEC_TRUTH) & np.isclose(sim["ratio"], SPEC_RATIO)]
    spec = None if spec_case.empty else float(spec_case["coverage"].iloc[0])
    return {"nominal": nominal, "coverage_se": se, "coverage_min": coverage.min(), "coverage_max": coverage.max(),
            "coverage_mean": coverage.mean(), "max_se_off": (coverage - nominal).abs().max() / se,
            "relation": compare(coverage.mean(), nominal), "conservative": bool(coverage.mean() >= nominal),
            "large_n_bias": None if large_n.empty else large_n["bias"].abs().max(),
            "corner": sim.sort_values(["truth", "ratio"], ascending=[False, True]).iloc[0],
            "spec_coverage": spec, "spec_was_noise": spec is not None and spec > SPEC_COVERAGE + 2 * se}


def adjusted_facts(adj_sim: dict, imagenet: dict, *, alpha_e: float) -> dict:
    """The adjusted interval's Bonferroni bound 1 - 4 alpha_e, its simulated coverage and whether it exceeds the
    nominal 1 - 2 alpha_e; the ImageNet-scale interval's half-width and whether it resolves 0.77 from 0.75."""
    half_width = (imagenet["upper"] - imagenet["lower"]) / 2
    return {"bonferroni": 1 - 4 * alpha_e, "coverage": adj_sim["coverage"],
            "conservative": bool(adj_sim["coverage"] > 1 - 2 * alpha_e), "half_width": half_width,
            "resolved": bool(half_width <= RESOLVING_HALF_WIDTH)}


def simulation_reading(sim: pd.DataFrame, adj_sim: dict, imagenet: dict, imagenet_s: float, config: IRSConfig) -> str:
    """Section 1's reading: the coverage and bias of the simulation, the corner, the adjusted interval and the
    ImageNet-scale interval."""
    f = simulation_facts(sim, alpha_e=config.alpha_e, reps=config.sim_reps)
    a, corner = adjusted_facts(adj_sim, imagenet, alpha_e=config.alpha_e), f["corner"]
    spec_text = ("" if f["spec_coverage"] is None else
                 f" (The spec's reference simulation gave coverage {SPEC_COVERAGE} at N = 10k, s = 9k, n = 2k; we "
                 f"measure {f['spec_coverage']:.3f} at s = {SPEC_TRUTH} N, n / N = {SPEC_RATIO}"
                 + (", so that value was probably sampling noise at fewer repetitions" if f["spec_was_noise"] else "")
                 + ".)")
    bias_text = ("" if f["large_n_bias"] is None else
                 f"The MLE's bias is below {f['large_n_bias']:.3f} once n / N ≥ {LARGE_N_RATIO}. ")
    return f"""
**Reading** (`{config.preset}` preset: N = {config.sim_n_train:,}, {len(sim)} settings × {config.sim_reps}
repetitions; a coverage estimate has a binomial standard error of {f["coverage_se"]:.3f}). Coverage lies between
{f["coverage_min"]:.3f} and {f["coverage_max"]:.3f},
i.e. within {f["max_se_off"]:.1f} standard
errors of {f["nominal"]:.2f}, and {f["relation"]} it on average
({f["coverage_mean"]:.3f}){"; an exact interval of a discrete model errs on the conservative side" if
f["conservative"] else ""}. {bias_text}The corner s = {corner["truth"]:g} N, n / N =
{corner["ratio"]:g}: {pct(corner["capped"])} of the runs have no more collisions than s = N would give (IRS_∞ capped
at 1), the MLE is biased by {corner["bias"]:+.2f} with an sd of {corner["sd"]:.2f}, and the interval is
{corner["width"]:.2f} wide.{spec_text}

The adjusted score's interval [L_synth / U_real, U_synth / L_real] is our proposal (the paper and package give none):
by Bonferroni it covers with at least 1 − 4 α_e = {pct(a["bonferroni"])}; in the simulation above (s_synth =
0.5 N, s_real = 0.8 N, n = N / 2) it covered {pct(a["coverage"], 1)}{", i.e. it is conservative" if
a["conservative"] else ""}. At ImageNet scale (N = {IMAGENET_TRAIN:,}, n = {IMAGENET_SAMPLES:,},
s = {IMAGENET_COVERED:g} N) the interval is about ±{100 * a["half_width"]:.1f} points wide and takes
{imagenet_s:.2f} s here, so the paper's 0.77 vs 0.75 (EDM-2-XL vs XXL) is
{"resolved" if a["resolved"] else "within noise"}.
"""


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
    return "; ".join(f"{name} slope {fit[(name, regime)][0]:.2f}, intercept {fit[(name, regime)][1]:.2f}, "
                     f"R² {fit[(name, regime)][2]:.2f}" for name in names if (name, regime) in fit)


def class_fraction_reading(fits: pd.DataFrame, e2: pd.DataFrame, config: IRSConfig) -> str:
    """Section 3's reading: where IRS_inf,a is linear in the class fraction, and the uninformative draws."""
    f = class_fraction_facts(fits, e2, config.extractors)
    fit, linear, others = f["fits"], f["linear"], f["others"]
    at_small_f = (f"; at f = {f['f_min']:g}: " + ", ".join(f"{f['small_f'][name]:.2f}" for name in linear)
                  if linear else "")
    return f"""
**Reading** (`{config.preset}` preset, {config.e2_reps} class draws per f; "linear" here: slope within \
{LINEAR_SLOPE_TOLERANCE} of 1 and
R² ≥ {LINEAR_MIN_R2} in regime (b)). IRS_∞,a is linear in the class fraction on {", ".join(linear) or "no extractor"}
({fit_text(fit, linear, "b")}{at_small_f}),
and not on {", ".join(others) or "none"} ({fit_text(fit, others, "b")}). Regime (a) (n = {config.n_fixed} for every f)
gives {fit_text(fit, list(config.extractors), "a")}. {f["flagged"]} of all {f["draws"]} draws
({pct(f["flagged_large_f"]) if f["flagged"] else "none"} of them at f ≥ {LARGE_F}) have fewer than \
{FEW_COLLISIONS} collisions.
"""


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
    faithful, spread, hits = f["faithful"], f["spread"], f["hits"]
    faithful_text = "" if not faithful else (
        ": there " + ("every interval of IRS_∞ covers g, as the model says it must" if f["faithful_cover"] else
                      "not every interval of IRS_∞ covers g") + " (the table above)")
    spread_text = "" if not spread else (
        f"On {', '.join(f'{name} ({pct(hits[name])})' for name in spread)} the retrievals spread to "
        f"neighbours, and {'not every' if f['spread_cover_any'] else 'no'} interval covers g. ")
    faithful_hits = ", ".join(f"{name} ({pct(hits[name])})" for name in faithful) or "no extractor"
    return f"""
**Reading** (`{config.preset}` preset, n = {config.family.n:,} per set, pixel noise σ = {config.mem_noise:g}). The
copies retrieve their own source on {faithful_hits}{faithful_text}.
{spread_text}The adjusted score of a memoriser is g / IRS_∞,real: in {f["first"]} space
{"; ".join(f"{adj:.2f} for g = {g:g}" for g, adj in f["first_adjusted"])}{", so it over-corrects" if
f["over_corrects"] else ""}.
"""


def vote_reading(ballot: dict | None, heldout: dict[str, np.ndarray]) -> str:
    """Section 3b's reading from `vote.vote_summary` (`ballot`; None: fewer than two extractors voted) over the
    held-out retrievals `heldout` {extractor: (Q,) indices}."""
    if ballot is None:
        return skipped("The extractor vote", "it needs at least two extractors")
    rank, bloc = ballot["ranking"], " and ".join(ballot["bloc"])
    merged = ("no extractor (every one agrees equally with the consensus)" if ballot["merged_chosen"] is None else
              f'{ballot["merged_chosen"]} ({"the" if ballot["merged_ranking"]["same_best"] else "not the"} most '
              "linear)")
    cause = (f"The choice falls in a bloc: {bloc} retrieve the same image for {pct(ballot['bloc_agreement'])} of "
             f"the queries, the median pair for {pct(ballot['median_pair_agreement'], 1)}, so the consensus is "
             "mostly theirs. "
             if ballot["chosen_in_bloc"] else f"The most agreeing pair is {bloc} ({pct(ballot['bloc_agreement'])}). ")
    return f"""
**Reading** ({len(heldout)} extractors, {len(next(iter(heldout.values()))):,} held-out queries). At least
{ballot["threshold"]} of {len(heldout)} agree on {pct(ballot["share"], 1)} of the queries; there the rule chooses
**{ballot["chosen"] or "no single extractor (a tie)"}** (leave-one-out: {ballot["chosen_loo"]}), while the
class-fraction fit ranks {rank["linear_order"][0]} most linear ({"the same" if rank["same_best"] else "a different"}
extractor; Kendall τ of the two rankings {num(rank["tau"], 2)}). {cause}Counted as one voter, that pair leaves the
rule choosing {merged}. Agreement rewards extractors that see the same space, not only ones that see classes:
the vote needs independent voters.
"""


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
    f, text = toy_facts(scores, ranks, memoriser=f"memorise-{g:g}"), []
    if f["memoriser"] is not None:
        row, rank = f["memoriser"]
        text.append(
            f"The memoriser that copies {pct(g)} of the training set can only ever produce "
            f"{round(g * n_train):,} distinct images; its FID ({row['fid']:.2f}) ranks "
            f"{int(rank['fid'])} of {f['sets']} (real images: {f['real_fid']:.2f}), its precision "
            f"{row['precision']:.2f}, recall {row['recall']:.2f} and coverage {row['coverage']:.2f}, while "
            f"IRS_∞ = {row['irs_inf']:.2f} states its reach in the unit of the question (a fraction of the training "
            f"set) and IRS_∞,a ranks it {int(rank['irs_adj'])}.")
    if f["dropped"] is not None:
        row, rank = f["dropped"]
        text.append(
            f"Mode dropping (5 of 10 classes): precision {row['precision']:.2f} (rank {rank['precision']:g}), "
            f"recall {row['recall']:.2f}, coverage {row['coverage']:.2f}, FID {row['fid']:.2f} and IRS_∞,a "
            f"{row['irs_adj']:.2f} (ranks {rank['recall']:g}, {rank['coverage']:g}, {rank['fid']:g} "
            f"and {rank['irs_adj']:g}).")
    if f["pca"]:
        text.append(f"The PCA-Gaussians are ranked last by {', '.join(f['pca_last']) or 'no metric'}; their IRS_∞ is "
                    f"{span(f['pca_irs_inf'])}.")
    return f"""
**Reading** (`{config.preset}` preset, {extractor} features; the table above has every extractor; rank 1 = judged \
best or
most diverse). {" ".join(text)}
"""


# ----------------------------------------------------------------------------------------------------
# 5. Trained generators (their facts: lib.irs.generators)
# ----------------------------------------------------------------------------------------------------
def diadm_reading(facts: dict, extractor: str) -> str:
    """Section 5's DiADM reading from `generators.diadm_facts` (`facts`), stated on `extractor`."""
    d = facts[extractor]
    higher, lower = [e for e in facts if facts[e]["irs_higher"]], [e for e in facts if facts[e]["fid_lower"]]
    return f"""
**Reading** ({extractor} features). DiADM's IRS_∞,a is {d['irs_diadm']:.3f} against the unconditional arm's
{d['irs_uncond']:.3f}; its FID {sig(d['fid_diadm'], 3)} against {sig(d['fid_uncond'], 3)}
({"intervals apart" if d["fid_better"] or d["fid_worse"] else "intervals overlapping"}). DiADM's IRS_∞,a is
the higher under {len(higher)} of {len(facts)} extractors ({", ".join(higher) or "none"}), beyond both intervals under
{", ".join(e for e in facts if facts[e]["irs_rose"]) or "none"}; its FID the lower under {", ".join(lower) or "none"}.
"""


def ranking_reading(agreement: dict, trend: dict, channels: tuple[int, ...]) -> str:
    """Section 5's ranking reading from `generators.ranking_agreement` and `generators.trend_facts`; `channels`:
    the widths (the first the main one, the last the smallest)."""
    main_c, small_c = channels[0], channels[-1]
    by_width = "; ".join(f"{a} {p[small_c][0]:.3f} → {p[main_c][0]:.3f}" for a, p in trend["widths"].items())
    return f"""
**Reading.** Kendall τ between the rankings: {", ".join(f"{k} {v:.2f}" for k, v in agreement["tau"].items())};
IRS_∞,a and FID order {len(agreement["disagree"])} of the {agreement["pairs"]} pairs of sets oppositely. Width
{small_c} → {main_c} (full budget), IRS_∞,a: {by_width}. Guidance of the class arm, IRS_∞,a:
{" / ".join(f"w {w:g}: {v[0]:.3f}" for w, v in trend["guidance"].items())}.
"""


def copying_reading(c: dict, extractor: str) -> str:
    """Section 5's copying-control reading from `generators.copy_facts` (`c`), stated on `extractor`."""
    return TEXT("copying", c=c, extractor=extractor)


# ----------------------------------------------------------------------------------------------------
# What was measured
# ----------------------------------------------------------------------------------------------------
def closing_reading(sim: pd.DataFrame, gap: pd.DataFrame, fits: pd.DataFrame, e2: pd.DataFrame, e3: pd.DataFrame,
                    config: IRSConfig, n_train: int) -> str:
    """The closing list's first item: what this run measured, with the findings of sections 1 to 3."""
    top = gap_facts(gap, config.extractors)["top"]
    linear = class_fraction_facts(fits, e2, config.extractors)["linear"]
    faithful = memoriser_facts(e3, config.extractors)["faithful"]
    return f"""
- **Measured in this run** (`{config.preset}` preset): the estimator's interval coverage on simulated truth
  ({span(sim["coverage"], 3)} for a nominal {pct(1 - 2 * config.alpha_e)}); the measurement gap of
  {len(config.extractors)} offline extractors on CIFAR-10 ({span(top["estimate"])} at n = {max(config.gap_ns):,},
  N = {n_train:,}); the class-fraction experiment (linear on {", ".join(linear) or "no extractor"}); the memorising
  control (copies that retrieve their source on {", ".join(faithful) or "no extractor"}); and toy generators ranked
  by IRS against FID and precision/recall/density/coverage on the same features.
"""
