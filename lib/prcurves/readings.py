"""Notebook 01's readings: the facts its reading cells state, and the sentences that state them.

Each reading cell of notebooks/01_ensemble_pr_curves.ipynb is one call of a `*_text` function here and a `say`.
The facts (values, comparisons with the paper, "above"/"below", counts) come from `*_facts` functions, which
`tests/test_prcurves_readings.py` checks on small hand-made inputs; the `*_text` functions only format them.
"""

from __future__ import annotations

import textwrap

import pandas as pd

from lib.prcurves import budget
from lib.prcurves import method as prcurves
from lib.prcurves.experiment import FAR_RADIUS, PAPER_FRACTION_PAIRED_T, EnsemblePRConfig
from lib.prcurves.spaces import space_verdict
from lib.reading import compare, num, pct, seq, sig, skipped, span

FAILED = budget.FAILED_AUC  # a member below this AUC_raw counts as failed (spec §1)
T_SAMPLING_WORDS = {"per_batch": "one time step per minibatch", "per_sample": "a time step per point",
                    "stratified": "stratified time steps"}


def _text(body: str) -> str:
    """A reading's Markdown: the f-string's common indentation and outer blank lines removed."""
    return textwrap.dedent(body).strip()


def k_used(config: EnsemblePRConfig) -> int:
    """The k of the kNN estimator this run uses: K, or floor(sqrt(num_generated)) (spec A10)."""
    return config.k or prcurves.default_k(config.num_generated)


# ----------------------------------------------------------------------------------------------------
# The table: AUC and band width per complexity
# ----------------------------------------------------------------------------------------------------
def training_words(config: EnsemblePRConfig) -> dict[str, str]:
    """How the run's training recipe reads: {"recipe" (its time steps), "schedule", "ema"}."""
    train = config.train
    schedule = ("a constant learning rate" if train.lr_schedule == "constant" else
                f"{train.warmup_steps} warm-up steps + {train.lr_schedule} learning-rate decay")
    return {"recipe": T_SAMPLING_WORDS[train.t_sampling], "schedule": schedule,
            "ema": f"an EMA {train.ema_decay:g} of the weights" if train.ema_decay else "no EMA"}


def table_text(config: EnsemblePRConfig, table: pd.DataFrame, paper: pd.DataFrame, steps: dict[int, int]) -> str:
    """What the run measured, beside the paper's numbers. table: `summary_row`s indexed by C; paper:
    `PAPER_TABLE` as a frame indexed by C; steps: {C: Adam steps per member}."""
    words, theirs, members = training_words(config), paper.loc[table.index], config.num_members
    return _text(f"""
    **What we measured** with the `{config.preset}` preset ({members} members per complexity,
    {seq(f"{s:,}" for s in steps.values())} Adam steps for C = {seq(steps)}, batch {config.train.batch_size},
    {words["recipe"]}, {words["schedule"]}, {words["ema"]},
    {config.num_generated:,} samples per member, k = {k_used(config)}; run time in
    the closing cell): mean AUC **{seq(table["auc_mean"])}** for C = {seq(table.index)} (paper: {
    seq(theirs["auc_mean"])}), mean band width
    {seq(table["width"])} (paper: {seq(theirs["width"])}), and {seq(table["below_0.9"])} of {members} members below AUC
    {FAILED} (paper: {seq(theirs["below_0.9"].astype(int))} of 30).
    """)


def auc_order(values: pd.Series) -> str:
    """The complexities from the lowest value to the highest: "C = 8 < 1 < 2 < 4"."""
    return "C = " + " < ".join(str(C) for C in values.sort_values().index)


def where(complexities: list[int]) -> str:
    """"C = 2, 4"."""
    return "C = " + ", ".join(str(C) for C in complexities)


def table_facts(table: pd.DataFrame, paper: pd.DataFrame) -> dict:
    """How the run's table compares with the paper's, per claim: the complexities with a mean AUC of at least
    `FAILED` in both, in ours only, in the paper's only; the order of the mean AUCs (ours, paper's); the widest and
    the narrowest band (ours, paper's); the complexities with members below `FAILED` (ours, paper's); and
    "width_ratio", our band width over the paper's per C, with "narrower" when every band is narrower."""
    ours, theirs = table["auc_mean"], paper["auc_mean"].loc[table.index]
    widths, paper_widths = table["width"], paper["width"].loc[table.index]
    good, paper_good = ours >= FAILED, theirs >= FAILED
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
    f = table_facts(table, paper)
    same = [f"a mean AUC of at least {FAILED} for {where(f['good_both'])}"] if f["good_both"] else []
    different = [f"a mean AUC of at least {FAILED} also for {where(f['good_ours_only'])} (paper: below)"] if f[
        "good_ours_only"] else []
    different += [f"a mean AUC below {FAILED} for {where(f['good_paper_only'])} (paper: above)"] if f[
        "good_paper_only"] else []
    failed = [where(cs) if cs else "no C" for cs in f["failed"]]
    claims = [  # (as in the paper?, what this run shows, what the paper shows)
        (f["order"][0] == f["order"][1], f"the order of the mean AUCs, {f['order'][0]}", f["order"][1]),
        (f["widest"][0] == f["widest"][1], f"the widest band for C = {f['widest'][0]}", f"C = {f['widest'][1]}"),
        (f["narrowest"][0] == f["narrowest"][1], f"the narrowest band for C = {f['narrowest'][0]}",
         f"C = {f['narrowest'][1]}"),
        (f["failed"][0] == f["failed"][1], f"members below AUC {FAILED} for {failed[0]}", failed[1])]
    same += [text for agree, text, _ in claims if agree]
    different += [f"{text} (paper: {paper_text})" for agree, text, paper_text in claims if not agree]
    size = (f"{span(1 / f['width_ratio'], fmt=sig)} times narrower than the paper's" if f["narrower"] else
            f"{span(f['width_ratio'], fmt=sig)} times as wide as the paper's")
    return _text(f"""
    - **As in the paper:** {"; ".join(same) or "none of these"}.
    - **Unlike the paper:** {"; ".join(different) or "none of these"}; and our bands are {size}.
    """)


# ----------------------------------------------------------------------------------------------------
# The budget study (results/01/budget_study.csv)
# ----------------------------------------------------------------------------------------------------
AUTHORS, STRATIFIED, COSINE, BATCH128 = "paper", "stratified_t", "stratified_t+cosine_lr", \
    "stratified_t+cosine_lr+batch128"
STUDY_POINTS = ((AUTHORS, 1000), (STRATIFIED, 1000), (COSINE, 1000), (BATCH128, 1000), (BATCH128, 4000))


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
    f = budget_study_facts(study)
    if f is None:
        return skipped("The budget study's reading", f"{budget.STUDY_CSV.name} lacks some of its variants or budgets")
    auc = lambda v, C, steps=1000, digits=2: seq(f["auc"][v, C, steps], digits)  # noqa: E731 (without / with EMA)
    width = lambda v, C, ema, steps=1000, digits=3: num(f["width"][v, C, steps, ema], digits)  # noqa: E731
    brake = "**One t per minibatch is the main brake**: " if f["brake"] else ""
    gain = f["ema_gain"]
    return _text(f"""
    **What we measured** ({f["members"]} members, {f["num_generated"]:,} samples each, mean
    AUC without / with the EMA; `results/01/budget_study.csv`). The authors' settings (batch 500, one t per minibatch,
    constant lr) give, after 1,000 Adam steps, {auc(AUTHORS, 2)} for C = 2 and {auc(AUTHORS, 4)} for C = 4,
    with band widths (no EMA) of {width(AUTHORS, 2, False, digits=2)} (C = 2) and
    {width(AUTHORS, 4, False, digits=2)} (C = 4). {brake}{"s" if brake else "S"}tratified t alone, same batch and
    steps, gives {auc(STRATIFIED, 2)} for C = 2 and {auc(STRATIFIED, 4)} for C = 4 (band widths with the EMA
    {width(STRATIFIED, 2, True)} and {width(STRATIFIED, 4, True)}). The EMA changes the mean AUC by
    {gain[STRATIFIED, 2]:+.2f} (C = 2) and {gain[STRATIFIED, 4]:+.2f} (C = 4) at 1,000 steps with stratified t and a
    constant learning rate, and by {gain[COSINE, 2]:+.3f} and {gain[COSINE, 4]:+.3f} with the warm-up + cosine
    schedule, which alone gives (1,000 steps) {auc(COSINE, 2, digits=3)} for C = 2 and
    {auc(COSINE, 4, digits=3)} for C = 4, band widths
    {span(f["width"][COSINE, C, 1000, e] for C in (2, 4) for e in (False, True))}. Batch 128 with
    stratified t, schedule and EMA: 1,000 steps (a quarter of the compute) give {auc(BATCH128, 2)} and
    {auc(BATCH128, 4)}; 4,000 steps (the same compute as 1,000 of batch 500) give {auc(BATCH128, 2, 4000, 3)} (width
    {width(BATCH128, 2, True, 4000)}) for C = 2 and {auc(BATCH128, 4, 4000, 3)} (width
    {width(BATCH128, 4, True, 4000)}) for C = 4. The study has {f["rows"]} rows; a rerun reads every row from the
    cache.
    """)


# ----------------------------------------------------------------------------------------------------
# Figure 3 under every test
# ----------------------------------------------------------------------------------------------------
UNCORRECTED = ("paired_t", "student", "welch", "wilcoxon")
CORRECTED = {"paired t + BH": ("paired_t", "bh"), "Student + BH": ("student", "bh"), "Welch + BH": ("welch", "bh"),
             "Wilcoxon + BH": ("wilcoxon", "bh"), "max-T": ("permutation_maxT", "none")}


def figure3_facts(rows: list[dict], per_model: dict, paper: float = PAPER_FRACTION_PAIRED_T) -> dict:
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
    f = figure3_facts(rows, per_model)
    share = lambda test, correction="none": pct(f["fraction"][test, correction], 1)  # noqa: E731
    survives = (f"So the recall region where C = {config.compare[0]} is significantly better survives "
                f"{', '.join(f['kept'])}" + (f" but not {', '.join(f['lost'])}" if f["lost"] else "") if f["kept"]
                else "So no recall region survives a multiplicity correction")
    coarse = (f" (Wilcoxon: with {config.num_members} pairs no p-value is below {2 / 2 ** config.num_members:.4f}, "
              f"too coarse for {config.grid_size} comparisons)") if f["coarse"] else ""
    better = "the better" if f["better"] else "not the better"
    return _text(f"""
    With the `{config.preset}` preset C = {config.compare[0]} is {better} ensemble by per-model AUC ({
    per_model["mean_a"]:.3f} against {per_model["mean_b"]:.3f}, Welch
    p = {sig(per_model["welch_p"])}, Mann–Whitney p = {sig(per_model["mannwhitney_p"])}). The paired t-test finds it
    significantly better on **{share("paired_t")}** of the recall grid (paper:
    {pct(PAPER_FRACTION_PAIRED_T, 1)}), the Student, Welch and Wilcoxon tests on
    {seq(pct(s, 1) for s in f["uncorrected"][1:])}; with Benjamini–Hochberg correction
    {share("paired_t", "bh")} (paired t), {share("student", "bh")} /
    {share("welch", "bh")} (Student / Welch) and {share("wilcoxon", "bh")} (Wilcoxon){coarse},
    and the permutation max-T test, which controls the family-wise error over the whole curve, on
    {share("permutation_maxT")}. {survives}; the uncorrected tests agree on
    {span(f["uncorrected"], fmt=pct)} of the grid, {f["side"]} the paper's
    {pct(PAPER_FRACTION_PAIRED_T, 1)}.{" " + former if former else ""}
    """)


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
    f = members_facts(study)
    more = (f"More members {'give' if f['grows'] else 'do not give'} the test more of the curve; the mean AUCs move "
            f"by at most {f['auc_change']:.3f}, the band widths by a factor of {f['width_ratio'][0]:.2f} to "
            f"{f['width_ratio'][1]:.2f}." if len(f["counts"]) > 1 else
            f"This run has {config.num_members} members (NUM_MEMBERS): with more than 8, the table sets the first 8 "
            "beside all of them.")
    return _text(f"""
    With {seq(f["counts"])} members the paired t-test finds C = {config.compare[0]} better than
    C = {config.compare[1]} on {seq(pct(v, 1) for v in f["paired_t"])} of the recall grid (paper, 30 members:
    {pct(PAPER_FRACTION_PAIRED_T, 1)}); with Benjamini–Hochberg on {seq(pct(v, 1) for v in f["paired_t_bh"])},
    by max-T on {seq(pct(v, 1) for v in f["max_t"])}. {more}
    """)


# ----------------------------------------------------------------------------------------------------
# Feature spaces (lib.prcurves.spaces: space_facts, space_verdict)
# ----------------------------------------------------------------------------------------------------
def spaces_text(config: EnsemblePRConfig, facts: dict) -> str:
    """Do the conclusions survive a change of space? `facts`: `spaces.space_facts` ({} when not measured)."""
    if not facts:
        return skipped("The feature-space comparison", "stored curves carry no samples to embed")
    others = {s: f for s, f in facts.items() if s != "plane"}
    kept = [s for s, f in others.items() if f["same_order"]]
    verdict = space_verdict(facts)
    moves = "; ".join(f"{word} in {', '.join(verdict[key])}" for key, word in
                      (("lower", "smaller"), ("higher", "larger"), ("same", "the same")) if verdict[key])
    order = ("kept in every other space" if len(kept) == len(others) else
             f"kept in {', '.join(kept) or 'no other space'}")
    ranking = ("the ranking of the complexities survives a change of space" if verdict["order_kept"] else
               "even the ranking of the complexities depends on the space")
    region = ("the size of the region where the difference is significant depends on it"
              if verdict["lower"] or verdict["higher"] else "so does the region where the difference is significant")
    return _text(f"""
    **Reading** ({config.num_members} members per C, C = {config.compare[0]} against C = {config.compare[1]} with
    the {config.test} test): in the plane C = {facts["plane"]["best_C"]} has the highest mean AUC; the order of
    all C by mean AUC is {order}. Band widths change by a factor of
    {span([f["width_ratio"] for f in others.values()])} on average over C ({", ".join(f"{s} ×{f['width_ratio']:.2f}"
    for s, f in others.items())}). The share of the recall grid where C = {config.compare[0]} is significantly better
    moves from {pct(facts["plane"]["fraction"], 1)} in the plane to {", ".join(f"{pct(f['fraction'], 1)} ({s})"
    for s, f in others.items())} ({moves}): {ranking}; {region}.
    """)


# ----------------------------------------------------------------------------------------------------
# Figure 4: a smaller training set
# ----------------------------------------------------------------------------------------------------
APPEARS = {"steps epochs": "under both budgets", "steps": "at the same number of steps only",
           "epochs": "at the same number of epochs only", "": "under neither budget"}


def figure4_facts(rows: dict[str, pd.Series]) -> dict:
    """Fig. 4 for one complexity. rows: {"-" (the large set), "steps", "epochs" (the small set at the same steps,
    the same epochs)}: each a row of the notebook's Fig. 4 table ("steps", "auc_mean", "width"). Returns "steps",
    "auc", "width" {match: value}, "effect" {"steps" | "epochs": (change of the mean AUC, ratio of band widths)
    against the large set}, and "appears": under which budgets the paper's direction (C7: lower AUC, wider band)
    holds."""
    effect = {m: (rows[m]["auc_mean"] - rows["-"]["auc_mean"], rows[m]["width"] / rows["-"]["width"])
              for m in ("steps", "epochs")}
    direction = " ".join(m for m, (d_auc, d_width) in effect.items() if d_auc < 0 and d_width > 1)
    return {"steps": {m: int(row["steps"]) for m, row in rows.items()},
            "auc": {m: row["auc_mean"] for m, row in rows.items()},
            "width": {m: row["width"] for m, row in rows.items()},
            "effect": effect, "appears": APPEARS[direction]}


def figure4_texts(config: EnsemblePRConfig, results: dict, small: dict, fig4: pd.DataFrame) -> list[str]:
    """One reading per complexity of Fig. 4 with both small-set ensembles (`figure4_facts`); results: {C: the large
    set's `run_ensemble`}, small: {(C, "steps" | "epochs"): the small set's}, fig4: the notebook's table indexed by
    (C, n_train, match)."""
    if not small:
        return [skipped("Figure 4's comparison", "no small-training-set ensembles")]
    texts = []
    for C in config.small_complexities:
        if (C, "steps") not in small or (C, "epochs") not in small:
            continue
        n = {"-": results[C]["n_train"], **{m: small[C, m]["n_train"] for m in ("steps", "epochs")}}
        f = figure4_facts({m: fig4.loc[(C, n[m], m)] for m in n})
        steps, auc, width, effect = f["steps"], f["auc"], f["width"], f["effect"]
        texts.append(_text(f"""
        **What we measured** (`{config.preset}` preset, C = {C}, {config.num_members} members, each evaluated on
        {config.num_generated:,} samples against as many held-out points): n = {n["-"]:,} trained for
        {steps["-"]:,} steps gives AUC {auc["-"]:.3f} and band width {width["-"]:.3f}; n =
        {n["steps"]:,} with the same {steps["steps"]:,} steps gives AUC
        {auc["steps"]:.3f} and width {width["steps"]:.3f}; n =
        {n["epochs"]:,} with the same number of *epochs* ({steps["epochs"]:,} steps) gives AUC
        {auc["epochs"]:.3f} and
        width {width["epochs"]:.3f}. So the paper's direction (C7: smaller set, wider band, lower AUC) appears
        {f["appears"]}. At the same number of steps the smaller set changes the AUC by {
        effect["steps"][0]:+.3f} and the band
        width ×{sig(effect["steps"][1])}; at the same number of epochs ({steps["epochs"]:,} against
        {steps["-"]:,} steps), by {effect["epochs"][0]:+.3f} and ×{sig(effect["epochs"][1])}.
        """))
    return texts


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
    if not shares:
        return skipped("The split of the variance", "stored curves carry no samples to resample")
    f = decomposition_facts(shares)
    verdict = {
        "sampling": (f"most of the spread in Figure 1 is the *estimator's* noise at {config.num_generated:,} "
                     f"evaluation samples (k = {k_used(config)}), not the models': the bands do not measure what the "
                     "paper says they measure, and the model-induced part is the minority"),
        "model": ("most of the spread in Figure 1 is the models': the members differ by more than the estimator's "
                  f"noise at {config.num_generated:,} evaluation samples (k = {k_used(config)}), so the bands measure "
                  "mostly what the paper says they measure"),
        "neither": ("neither part dominates everywhere: the sampling share is above one half for some complexities "
                    "and below it for others")}[f["majority"]]
    return _text(f"""
    **What we measured** (`{config.preset}` preset, {config.num_resplits} draws per member): the sampling-induced share
    of the variance, averaged over the recall grid, is **{seq(pct(s) for s in f["resplit"])}** with re-splits and
    **{seq(pct(s) for s in f["bootstrap"])}** with the bootstrap for C = {seq(f["complexities"])}. With members
    whose mean AUC is {span(table["auc_mean"])} ({table["below_0.9"].sum()} of {table["members"].sum()} members below
    {FAILED}), {verdict}. The three percentile bands are not additive: with
    {config.num_members} members, the {config.band[0]:g}th percentile of the {config.num_members * config.num_resplits}
    resampled curves can fall lower than that of the {config.num_members} member means.
    """)



# ----------------------------------------------------------------------------------------------------
# Other model families (spec 01 §8)
# ----------------------------------------------------------------------------------------------------
WIDTH_DIFFERS = 1.5  # a family's band differs in magnitude when it is this many times wider (or narrower) than
# every DDPM complexity's


def families_facts(table: pd.DataFrame) -> dict:
    """From `experiment.families_table`: the DDPMs' range of band widths and mean AUCs, and per family its band
    width, that width over the DDPMs' median, where it lies ("wider than", "narrower than", "within") against
    the DDPMs' range, its mean AUC and members below 0.9, and whether its width differs in magnitude (a factor
    WIDTH_DIFFERS beyond the DDPMs' range)."""
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
    facts = families_facts(table)
    lo, hi = facts["width_range"]
    a_lo, a_hi = facts["auc_range"]
    parts = [f"the {name} band is {num(f['width'], 3)} wide, {f['where']} the DDPMs' {num(lo, 3)}–{num(hi, 3)} "
             f"({num(f['ratio'], 2)}× their median), with mean AUC {num(f['auc'], 3)} (sd {num(f['auc_sd'], 3)}; "
             f"{f['below']} of {f['members']} members below 0.9"
             + (f"; its decoder adds noise of sd {num(f['output_sd'], 2)} to every point, so its samples' distance "
                f"from the centre has sd {num(f['radial_sd'], 2)} where the held-out ring's has "
                f"{num(ring_radial_sd, 2)}" if f["output_sd"] == f["output_sd"] else "") + ")"
             for name, f in facts["families"].items()]
    verdict = ("so on this ring the size of the model-induced uncertainty does depend on the family, as the paper "
               f"feared: at least one family's band lies beyond {num(WIDTH_DIFFERS, 1)}× the DDPMs' range"
               if facts["any_differs"] else
               f"so on this ring the size of the model-induced uncertainty stays within {num(WIDTH_DIFFERS, 1)}× "
               "the DDPMs' range for these families")
    far = ddpm_far_points(table)
    diverged = ("" if not far else " " + "; ".join(
        f"{name}'s radial sd of {num(row['radial sd'], 3)} is that of a few diverged samples: "
        f"{int(row['far members'])} of its {int(row['members'])} members put {pct(row['far points'], 2)} of their "
        f"points beyond {FAR_RADIUS:g} from the centre, which the kNN curves barely see"
        for name, row in far.items()) + ".")
    return _text(f"At M = {config.family_members} members and the DDPM's budget ({steps:,} Adam steps of batch "
                 f"{config.train.batch_size}), {'; '.join(parts)}. The DDPMs' mean AUCs span "
                 f"{num(a_lo, 3)}–{num(a_hi, 3)}; {verdict}.{diverged}")


def ddpm_far_points(table: pd.DataFrame) -> dict:
    """The DDPM rows of `experiment.families_table` with diverged samples (a member with points beyond FAR_RADIUS)."""
    if "far members" not in table.columns:
        return {}
    return {name: row for name, row in table.iterrows() if name.startswith("DDPM") and row["far members"] > 0}
