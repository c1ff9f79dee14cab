"""Notebook 01's readings: the facts its reading cells state, computed from the run's tables.

Each reading cell of notebooks/01_ensemble_pr_curves.ipynb is one call of a `*_text` function here and a `say`.
The facts (values, comparisons with the paper, "above"/"below", counts) come from `*_facts` functions, which
`tests/test_prcurves_readings.py` checks on small hand-made inputs; the sentences that state them are the sections
of docs/results/templates/readings-01.md, which each `*_text` function renders with `TEXT(name, **facts)`
(`lib.templates.Readings`: the sections see the UPPER_CASE names below and the paper's numbers, `paper`). A few
sections are the notebook's own prose that states a named number (the failure threshold, the EMA's decay): their
functions take no facts.
"""

from __future__ import annotations

import pandas as pd

from lib.prcurves import budget, experiment
from lib.prcurves import method as prcurves
from lib.prcurves.experiment import EnsemblePRConfig
from lib.prcurves.paper import FAILED_AUC, FRACTION_PAIRED_T
from lib.prcurves.spaces import space_verdict
from lib.reading import compare
from lib.templates import Readings

TEXT = Readings("01", __name__)  # the sentences: docs/results/templates/readings-01.md

EMA_DECAY = budget.EMA_DECAY  # the budget study's and the `cpu` preset's EMA, which the sections state
STUDY_CSV_NAME = budget.STUDY_CSV.name  # the committed budget study, named where its reading is skipped
FAR_RADIUS = experiment.FAR_RADIUS  # a DDPM sample this far from the ring's centre is diverged, as the sections say

# Numbers that the notebook's prose and this package's code both type, as different facts that share their digits
OTHER_FACTS = {
    "0.5": "the ring's spec values in §2.1 (overlap and variability 0.5, U_i − 0.5, the per-axis std ≈ 0.5); in "
           "code the recall 0.5 at which the paper's table reads a band width (paper.WIDTH_RECALLS, paper.TABLE)",
    "1.5": "the truncation radius in true standard deviations (spec §2.1) and the hours the frontier study takes "
           "to recompute; in code WIDTH_DIFFERS, the factor by which a family's band differs from the DDPMs'",
    "0.23": "a band width of the former 10,000-step run (C = 2), a record; in code the paper's band width at "
            "recall 0.95 for C = 4 (paper.TABLE)",
    "0.4": "the GPU estimate's milliseconds of arithmetic per step; in code claims.MODEL_DOMINATES and the "
           "paper's band width at recall 0.5 for C = 8 (paper.TABLE)",
    "0.05": "the paper's test level α of Fig. 3 (EnsemblePRConfig.alpha); in code the paper's band width at "
            "recall 0.8 for C = 4 (paper.TABLE)",
}


def k_used(config: EnsemblePRConfig) -> int:
    """The k of the kNN estimator this run uses: K, or floor(sqrt(num_generated)) (spec A10)."""
    return config.k or prcurves.default_k(config.num_generated)


# ----------------------------------------------------------------------------------------------------
# The table: AUC and band width per complexity
# ----------------------------------------------------------------------------------------------------
def training_text(config: EnsemblePRConfig) -> str:
    """How the run's training recipe reads: its time steps, its learning-rate schedule, its EMA."""
    return TEXT("training", train=config.train)


def table_text(config: EnsemblePRConfig, table: pd.DataFrame, paper: pd.DataFrame, steps: dict[int, int]) -> str:
    """What the run measured, beside the paper's numbers. table: `summary_row`s indexed by C; paper:
    `paper.TABLE` as a frame indexed by C; steps: {C: Adam steps per member}."""
    return TEXT("table", config=config, table=table, theirs=paper.loc[table.index], steps=steps, k=k_used(config))


def auc_order(values: pd.Series) -> str:
    """The complexities from the lowest value to the highest: "C = 8 < 1 < 2 < 4"."""
    return "C = " + " < ".join(str(C) for C in values.sort_values().index)


def table_facts(table: pd.DataFrame, paper: pd.DataFrame) -> dict:
    """How the run's table compares with the paper's, per claim: the complexities with a mean AUC of at least
    `FAILED_AUC` in both, in ours only, in the paper's only; the order of the mean AUCs (ours, paper's); the widest
    and the narrowest band (ours, paper's); the complexities with members below `FAILED_AUC` (ours, paper's); and
    "width_ratio", our band width over the paper's per C, with "narrower" when every band is narrower."""
    ours, theirs = table["auc_mean"], paper["auc_mean"].loc[table.index]
    widths, paper_widths = table["width"], paper["width"].loc[table.index]
    good, paper_good = ours >= FAILED_AUC, theirs >= FAILED_AUC
    failed, paper_failed = table["below_0.9"] > 0, paper["below_0.9"].loc[table.index] > 0
    cs = lambda mask: [int(C) for C in mask.index if mask[C]]  # noqa: E731
    ratio = (widths / paper_widths).to_numpy()
    return {"good_both": cs(good & paper_good), "good_ours_only": cs(good & ~paper_good),
            "good_paper_only": cs(~good & paper_good), "order": (auc_order(ours), auc_order(theirs)),
            "widest": (int(widths.idxmax()), int(paper_widths.idxmax())),
            "narrowest": (int(widths.idxmin()), int(paper_widths.idxmin())),
            "failed": (cs(failed), cs(paper_failed)), "width_ratio": ratio, "narrower": bool((ratio < 1).all())}


def table_claims_text(table: pd.DataFrame, paper: pd.DataFrame) -> str:
    """Which of the table's claims come out as in the paper, and which do not (`table_facts`)."""
    return TEXT("table-claims", f=table_facts(table, paper))


def former_presets_text() -> str:
    """The record of the former presets' tables (the notebook's prose below the table)."""
    return TEXT("former-presets")


# ----------------------------------------------------------------------------------------------------
# The budget study (results/01/budget_study.csv)
# ----------------------------------------------------------------------------------------------------
AUTHORS, STRATIFIED, COSINE, BATCH128 = "paper", "stratified_t", "stratified_t+cosine_lr", \
    "stratified_t+cosine_lr+batch128"
STUDY_POINTS = ((AUTHORS, 1000), (STRATIFIED, 1000), (COSINE, 1000), (BATCH128, 1000), (BATCH128, 4000))


def budget_intro_text() -> str:
    """What the budget study changes in the authors' recipe (the notebook's prose opening the study)."""
    return TEXT("budget-intro")


def budget_study_facts(study: pd.DataFrame) -> dict | None:
    """The budget study's numbers the notebook states, or None when the study lacks one of `STUDY_POINTS` (for C = 2
    and 4, with and without the EMA): "auc" {(variant, C, steps): (mean AUC without, with the EMA)}, "width"
    {(variant, C, steps, ema): band width}, "gain" {C: stratified t's AUC minus the authors' at 1,000 steps, no EMA},
    "brake" (both gains above 0.2), "ema_gain" {(variant, C): the EMA's change of the AUC at 1,000 steps}, and the
    study's "members", "num_generated" and "rows"."""
    at = study.set_index(["variant", "C", "steps", "ema"])
    needed = [(v, C, s, e) for v, s in STUDY_POINTS for C in (2, 4) for e in (False, True)]
    if not set(needed) <= set(at.index):
        return None
    auc = {(v, C, s): tuple(at.loc[(v, C, s, e), "auc_mean"] for e in (False, True)) for v, s in STUDY_POINTS
           for C in (2, 4)}
    gain = {C: auc[STRATIFIED, C, 1000][0] - auc[AUTHORS, C, 1000][0] for C in (2, 4)}
    return {"auc": auc, "width": {key: at.loc[key, "width"] for key in needed}, "gain": gain,
            "brake": min(gain.values()) > 0.2,
            "ema_gain": {(v, C): auc[v, C, 1000][1] - auc[v, C, 1000][0] for v in (STRATIFIED, COSINE) for C in (2, 4)},
            "members": study["members"].iloc[0], "num_generated": study["num_generated"].iloc[0], "rows": len(study)}


def budget_study_text(study: pd.DataFrame) -> str:
    """What the budget study measured (`budget_study_facts`), or why it is not stated."""
    return TEXT("budget-study", f=budget_study_facts(study))


def cpu_preset_text() -> str:
    """How the `cpu` preset follows from the budget study (the notebook's prose after the study's reading)."""
    return TEXT("cpu-preset")


# ----------------------------------------------------------------------------------------------------
# The authors' recipe at longer budgets (lib.prcurves.budget: the frontier study)
# ----------------------------------------------------------------------------------------------------
def frontier_intro_text() -> str:
    """Why the frontier study is run (the notebook's prose opening its section)."""
    return TEXT("frontier-intro")


def frontier_meaning_text() -> str:
    """What the frontier study shows about the paper's bands, and what it does not (the notebook's prose)."""
    return TEXT("frontier-meaning")


# ----------------------------------------------------------------------------------------------------
# Figure 3 under every test
# ----------------------------------------------------------------------------------------------------
UNCORRECTED = ("paired_t", "student", "welch", "wilcoxon")
CORRECTED = {"paired t + BH": ("paired_t", "bh"), "Student + BH": ("student", "bh"), "Welch + BH": ("welch", "bh"),
             "Wilcoxon + BH": ("wilcoxon", "bh"), "max-T": ("permutation_maxT", "none")}


def figure3_facts(rows: list[dict], per_model: dict, paper: float = FRACTION_PAIRED_T) -> dict:
    """Figure 3's comparison under every test (`compare_ensembles` rows; `stats.compare_scalars` of the AUCs):
    "fraction" {(test, correction): share of the grid}, "uncorrected" (the four tests' shares, `UNCORRECTED`'s
    order), "kept" / "lost" (the corrections of `CORRECTED` that find a region / find none), "side" ("above",
    "below" or "at" the paper's share when every uncorrected share is on that side, else "around"), "better" (the
    first ensemble's mean AUC is the higher) and "coarse" (Wilcoxon finds a region uncorrected and none with BH)."""
    fraction = {(r["test"], r["correction"]): r["fraction"] for r in rows}
    uncorrected = [fraction[test, "none"] for test in UNCORRECTED]
    kept = [name for name, key in CORRECTED.items() if fraction[key] > 0]
    sides = {compare(s, paper, ("above", "below", "at")) for s in uncorrected}
    return {"fraction": fraction, "uncorrected": uncorrected, "kept": kept,
            "lost": [name for name in CORRECTED if name not in kept],
            "side": sides.pop() if len(sides) == 1 else "around", "better": per_model["mean_a"] > per_model["mean_b"],
            "coarse": fraction["wilcoxon", "bh"] == 0 < fraction["wilcoxon", "none"]}


def figure3_text(config: EnsemblePRConfig, rows: list[dict], per_model: dict, former: str = "") -> str:
    """Figure 3's share under every test and correction, beside the paper's (`figure3_facts`); `former`, a
    sentence the notebook adds at the end (its record of earlier runs)."""
    return TEXT("figure3", config=config, f=figure3_facts(rows, per_model), per_model=per_model, former=former)


# ----------------------------------------------------------------------------------------------------
# How many members (experiment.members_study)
# ----------------------------------------------------------------------------------------------------
def members_facts(study: pd.DataFrame) -> dict:
    """What notebook 01 states of `members_study`: the ensemble sizes, the three shares at each, whether the paired
    t-test's share grows from the fewest members to the most, the largest change of a mean AUC between them, and
    the range of the ratios of band widths (most members over fewest)."""
    ours = study[study.index.str.endswith("(ours)")]
    first, last = ours.iloc[0], ours.iloc[-1]
    aucs = [c for c in ours.columns if c.startswith("AUC")]
    ratios = [last[c] / first[c] for c in ours.columns if c.startswith("width") and first[c] > 0]
    return {"counts": [int(i.split()[0]) for i in ours.index], "paired_t": list(ours["paired_t"]),
            "paired_t_bh": list(ours["paired_t bh"]), "max_t": list(ours["permutation_maxT"]),
            "grows": bool(last["paired_t"] > first["paired_t"]),
            "auc_change": float(max(abs(last[c] - first[c]) for c in aucs)),
            "width_ratio": (float(min(ratios)), float(max(ratios))) if ratios else (float("nan"),) * 2}


def members_text(config: EnsemblePRConfig, study: pd.DataFrame) -> str:
    """The members study's shares and changes (`members_facts`)."""
    return TEXT("members", config=config, f=members_facts(study))


# ----------------------------------------------------------------------------------------------------
# Feature spaces (lib.prcurves.spaces: space_facts, space_verdict)
# ----------------------------------------------------------------------------------------------------
def spaces_text(config: EnsemblePRConfig, facts: dict) -> str:
    """Do the conclusions survive a change of space? `facts`: `spaces.space_facts` ({} when not measured)."""
    others = {s: f for s, f in facts.items() if s != "plane"}
    return TEXT("spaces", config=config, facts=facts, others=others,
                kept=[s for s, f in others.items() if f["same_order"]],
                verdict=space_verdict(facts) if facts else None)


# ----------------------------------------------------------------------------------------------------
# Figure 4: a smaller training set
# ----------------------------------------------------------------------------------------------------
def figure4_facts(rows: dict[str, pd.Series]) -> dict:
    """Fig. 4 for one complexity. rows: {"-" (the large set), "steps", "epochs" (the small set at the same steps,
    the same epochs)}: each a row of the notebook's Fig. 4 table ("steps", "auc_mean", "width"). Returns "steps",
    "auc", "width" {match: value}, "effect" {"steps" | "epochs": (change of the mean AUC, ratio of band widths)
    against the large set}, and "appears": the budgets ("steps", "epochs", both or neither) under which the paper's
    direction (C7: lower AUC, wider band) holds."""
    effect = {m: (rows[m]["auc_mean"] - rows["-"]["auc_mean"], rows[m]["width"] / rows["-"]["width"])
              for m in ("steps", "epochs")}
    return {"steps": {m: int(row["steps"]) for m, row in rows.items()},
            "auc": {m: row["auc_mean"] for m, row in rows.items()},
            "width": {m: row["width"] for m, row in rows.items()},
            "effect": effect,
            "appears": tuple(m for m, (d_auc, d_width) in effect.items() if d_auc < 0 and d_width > 1)}


def figure4_texts(config: EnsemblePRConfig, results: dict, small: dict, fig4: pd.DataFrame) -> list[str]:
    """One reading per complexity of Fig. 4 with both small-set ensembles (`figure4_facts`); results: {C: the large
    set's `run_ensemble`}, small: {(C, "steps" | "epochs"): the small set's}, fig4: the notebook's table indexed by
    (C, n_train, match)."""
    if not small:
        return [TEXT("figure4", f=None)]
    cases = []
    for C in config.small_complexities:
        if (C, "steps") not in small or (C, "epochs") not in small:
            continue
        n = {"-": results[C]["n_train"], **{m: small[C, m]["n_train"] for m in ("steps", "epochs")}}
        cases.append((C, n, figure4_facts({m: fig4.loc[(C, n[m], m)] for m in n})))
    return [TEXT("figure4", config=config, C=C, n=n, f=f) for C, n, f in cases]


# ----------------------------------------------------------------------------------------------------
# Model- and sampling-induced uncertainty
# ----------------------------------------------------------------------------------------------------
def decomposition_facts(shares: list[dict]) -> dict:
    """The sampling-induced shares of the variance (the notebook's rows {"C", "resampling", "sampling_share"}):
    "complexities", "resplit" and "bootstrap" (the shares per C), and "majority": "sampling" when every share is
    above one half, "model" when every one is below, else "neither"."""
    share = pd.DataFrame(shares).set_index(["resampling", "C"])["sampling_share"]
    majority = "sampling" if (share > 0.5).all() else "model" if (share < 0.5).all() else "neither"
    return {"complexities": [int(C) for C in share["resplit"].index], "resplit": list(share["resplit"]),
            "bootstrap": list(share["bootstrap"]), "majority": majority}


def decomposition_text(config: EnsemblePRConfig, shares: list[dict], table: pd.DataFrame) -> str:
    """The split of the variance (`decomposition_facts`), with the table's AUCs beside it."""
    return TEXT("decomposition", config=config, f=decomposition_facts(shares) if shares else None, table=table,
                k=k_used(config))


# ----------------------------------------------------------------------------------------------------
# Other model families (spec 01 §8)
# ----------------------------------------------------------------------------------------------------
WIDTH_DIFFERS = 1.5  # a family's band differs in magnitude when it is this many times wider (or narrower) than
# every DDPM complexity's


def families_facts(table: pd.DataFrame) -> dict:
    """From `experiment.families_table`: the DDPMs' range of band widths and mean AUCs, and per family its band
    width, that width over the DDPMs' median, where it lies ("wider than", "narrower than", "within") against
    the DDPMs' range, its mean AUC and members below FAILED_AUC, and whether its width differs in magnitude (a
    factor WIDTH_DIFFERS beyond the DDPMs' range)."""
    is_ddpm = table.index.str.startswith("DDPM")
    ddpm, others = table[is_ddpm], table[~is_ddpm]
    lo, hi = ddpm["band width"].min(), ddpm["band width"].max()
    median = ddpm["band width"].median()
    families = {}
    for name, row in others.iterrows():
        width = row["band width"]
        where = "wider than" if width > hi else "narrower than" if width < lo else "within"
        families[name] = {"width": width, "ratio": width / median, "where": where, "auc": row["AUC mean"],
                          "output_sd": row.get("output sd", float("nan")),
                          "radial_sd": row.get("radial sd", float("nan")),
                          "auc_sd": row["AUC sd"], "below": int(row["below 0.9"]), "members": int(row["members"]),
                          "differs": bool(width > WIDTH_DIFFERS * hi or width < lo / WIDTH_DIFFERS)}
    return {"width_range": (lo, hi), "width_median": median,
            "auc_range": (ddpm["AUC mean"].min(), ddpm["AUC mean"].max()), "families": families,
            "any_differs": any(f["differs"] for f in families.values())}


def families_text(config: EnsemblePRConfig, table: pd.DataFrame, steps: int, ring_radial_sd: float) -> str:
    """The reading of the families' table; `ring_radial_sd`: the held-out ring's radial spread (`radial_sd`)."""
    return TEXT("families", config=config, facts=families_facts(table), steps=steps, ring_radial_sd=ring_radial_sd,
                far=ddpm_far_points(table))


def ddpm_far_points(table: pd.DataFrame) -> dict:
    """The DDPM rows of `experiment.families_table` with diverged samples (a member with points beyond FAR_RADIUS)."""
    if "far members" not in table.columns:
        return {}
    return {name: row for name, row in table.iterrows() if name.startswith("DDPM") and row["far members"] > 0}
