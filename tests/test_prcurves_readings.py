"""The facts notebook 01's reading cells state (lib.prcurves.readings), on small hand-made inputs with known answers."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from lib.prcurves import experiment as ex
from lib.prcurves import readings
from lib.prcurves.ddpm import TrainSettings


def _table(auc: dict, width: dict, below: dict, members: int = 4) -> pd.DataFrame:
    return pd.DataFrame([{"C": C, "auc_mean": auc[C], "width": width[C], "below_0.9": below[C], "members": members}
                         for C in auc]).set_index("C")


PAPER = _table({1: 0.829, 2: 0.964, 4: 0.976, 8: 0.869}, {1: 0.424, 2: 0.057, 4: 0.040, 8: 0.546},
               {1: 14, 2: 1, 4: 0, 8: 5}, members=30).astype(float)


def test_k_and_the_training_words_follow_the_config():
    config = ex.resolve_config("smoke")
    assert readings.k_used(config) == 31  # floor(sqrt(1000))
    assert readings.k_used(replace(config, k=7)) == 7
    authors = readings.training_text(replace(config, train=TrainSettings()))
    assert authors == "one time step per minibatch, a constant learning rate, no EMA"
    cpu = readings.training_text(ex.PRESETS["cpu"])
    assert cpu == "stratified time steps, 100 warm-up steps + cosine learning-rate decay, an EMA 0.999 of the weights"


def test_table_facts_compare_each_claim_with_the_paper():
    ours = _table({1: 0.95, 2: 0.97, 4: 0.85, 8: 0.99}, {1: 0.01, 2: 0.02, 4: 0.03, 8: 0.005},
                  {1: 0, 2: 0, 4: 2, 8: 0})
    f = readings.table_facts(ours, PAPER)
    assert f["good_both"] == [2] and f["good_ours_only"] == [1, 8] and f["good_paper_only"] == [4]
    assert f["order"] == ("C = 4 < 1 < 2 < 8", "C = 1 < 8 < 2 < 4")
    assert f["widest"] == (4, 8) and f["narrowest"] == (8, 4)
    assert f["failed"] == ([4], [1, 2, 8])
    assert f["width_ratio"] == pytest.approx([0.01 / 0.424, 0.02 / 0.057, 0.03 / 0.040, 0.005 / 0.546])
    assert f["narrower"]
    text = readings.table_claims_text(ours, PAPER)
    assert text.startswith("- **As in the paper:** a mean AUC of at least 0.9 for C = 2.\n")
    assert "a mean AUC of at least 0.9 also for C = 1, 8 (paper: below)" in text
    assert "members below AUC 0.9 for C = 4 (paper: C = 1, 2, 8)" in text
    assert text.endswith("times narrower than the paper's.")


def test_table_facts_when_the_run_agrees_with_the_paper_and_is_wider():
    f = readings.table_facts(PAPER.loc[[2, 4]] * [1, 2, 1, 1], PAPER)  # the paper's own rows, bands twice as wide
    assert f["good_both"] == [2, 4] and f["good_ours_only"] == [] and f["good_paper_only"] == []
    assert f["order"][0] == f["order"][1] == "C = 2 < 4"
    assert f["failed"] == ([2], [2]) and not f["narrower"]
    assert f["width_ratio"] == pytest.approx([2, 2])
    text = " ".join(readings.table_claims_text(PAPER.loc[[2, 4]] * [1, 2, 1, 1], PAPER).split())
    assert "**Unlike the paper:** none of these; and our bands are 2.0 times as wide as the paper's." in text


def _study(auc: float = 0.5, strat_gain: float = 0.3) -> pd.DataFrame:
    rows = []
    for variant, steps in readings.STUDY_POINTS:
        for C in (2, 4):
            for ema in (False, True):
                value = auc + (strat_gain if variant != "paper" else 0) + (0.1 if ema else 0)
                rows.append({"variant": variant, "C": C, "steps": steps, "ema": ema, "auc_mean": value,
                             "width": 0.01 * C + ema, "members": 4, "num_generated": 1000})
    return pd.DataFrame(rows)


def test_budget_study_facts():
    f = readings.budget_study_facts(_study(strat_gain=0.3))
    assert f["auc"]["paper", 2, 1000] == pytest.approx((0.5, 0.6))
    assert f["auc"]["stratified_t+cosine_lr+batch128", 4, 4000] == pytest.approx((0.8, 0.9))
    assert f["gain"] == pytest.approx({2: 0.3, 4: 0.3}) and f["brake"]
    assert f["ema_gain"]["stratified_t+cosine_lr", 4] == pytest.approx(0.1)
    assert f["width"]["paper", 4, 1000, True] == pytest.approx(1.04)
    assert (f["members"], f["num_generated"], f["rows"]) == (4, 1000, 20)
    assert not readings.budget_study_facts(_study(strat_gain=0.1))["brake"]
    text = readings.budget_study_text(_study())
    assert "after 1,000 Adam steps, 0.50 / 0.60 for C = 2" in text
    assert "**One t per minibatch is the main brake**: stratified t alone" in text


def test_a_budget_study_without_its_variants_is_not_read():
    partial = _study().query("variant != 'stratified_t'")
    assert readings.budget_study_facts(partial) is None
    assert readings.budget_study_text(partial).startswith("*The budget study's reading: not measured in this run")


def _rows(shares: dict) -> list[dict]:
    return [{"test": t, "correction": c, "fraction": f} for (t, c), f in shares.items()]


SHARES = {("paired_t", "none"): 0.5, ("paired_t", "bh"): 0.3, ("student", "none"): 0.6, ("student", "bh"): 0.0,
          ("welch", "none"): 0.55, ("welch", "bh"): 0.2, ("wilcoxon", "none"): 0.45, ("wilcoxon", "bh"): 0.0,
          ("permutation_maxT", "none"): 0.1}


def test_figure3_facts():
    f = readings.figure3_facts(_rows(SHARES), {"mean_a": 0.9, "mean_b": 0.8})
    assert f["uncorrected"] == [0.5, 0.6, 0.55, 0.45]
    assert f["kept"] == ["paired t + BH", "Welch + BH", "max-T"] and f["lost"] == ["Student + BH", "Wilcoxon + BH"]
    assert f["side"] == "above" and f["better"] and f["coarse"]
    lower = readings.figure3_facts(_rows({**SHARES, ("student", "none"): 0.3}), {"mean_a": 0.7, "mean_b": 0.8})
    assert lower["side"] == "around" and not lower["better"]
    assert readings.figure3_facts(_rows({k: 0.2 if c == "none" else 0.0 for k in SHARES for c in [k[1]]}),
                                  {"mean_a": 1, "mean_b": 0})["side"] == "below"


def test_figure3_text_names_what_survives_the_corrections():
    config = ex.resolve_config("smoke")
    per_model = {"mean_a": 0.9, "mean_b": 0.8, "welch_p": 0.01, "mannwhitney_p": 0.02}
    text = " ".join(readings.figure3_text(config, _rows(SHARES), per_model).split())
    assert "C = 4 is the better ensemble by per-model AUC (0.900 against 0.800" in text
    assert ("survives paired t + BH, Welch + BH, max-T but not Student + BH, Wilcoxon + BH; the uncorrected tests "
            "agree on 45 %–60 % of the grid, above the paper's 44.2 %") in text
    assert "(Wilcoxon: with 4 pairs no p-value is below 0.1250, too coarse for 1000 comparisons)" in text
    former = readings.figure3_text(config, _rows(SHARES), per_model, former="(Earlier: 0 %.)")
    assert former.endswith("the paper's\n44.2 %. (Earlier: 0 %.)")
    none = {k: (v if k[1] == "none" and k[0] != "permutation_maxT" else 0.0) for k, v in SHARES.items()}
    assert "So no recall region survives a multiplicity correction" in readings.figure3_text(config, _rows(none),
                                                                                             per_model)


def test_members_facts():
    study = pd.DataFrame({"paired_t": [0.2, 0.4, 0.442], "paired_t bh": [0.0, 0.1, np.nan],
                          "permutation_maxT": [0.0, 0.05, np.nan], "AUC C=2": [0.9, 0.95, 0.964],
                          "AUC C=4": [0.97, 0.96, 0.976], "width C=2": [0.02, 0.03, 0.057],
                          "width C=4": [0.04, 0.02, 0.04]},
                         index=["8 (ours)", "30 (ours)", "30 (paper)"])
    f = readings.members_facts(study)
    assert f["counts"] == [8, 30] and f["paired_t"] == [0.2, 0.4] and f["max_t"] == [0.0, 0.05]
    assert f["grows"] and f["auc_change"] == pytest.approx(0.05)
    assert f["width_ratio"] == pytest.approx((0.5, 1.5))
    text = " ".join(readings.members_text(ex.resolve_config("smoke"), study).split())
    assert "More members give the test more of the curve; the mean AUCs move by at most 0.050" in text
    one = readings.members_facts(study.iloc[[1, 2]])
    assert one["counts"] == [30] and not one["grows"] and one["auc_change"] == 0


def test_figure4_facts_say_under_which_budget_the_papers_direction_appears():
    row = lambda steps, auc, width: pd.Series({"steps": steps, "auc_mean": auc, "width": width})  # noqa: E731
    f = readings.figure4_facts({"-": row(800, 0.9, 0.02), "steps": row(800, 0.95, 0.01), "epochs": row(200, 0.8, 0.05)})
    assert f["steps"] == {"-": 800, "steps": 800, "epochs": 200}
    assert f["effect"]["steps"] == pytest.approx((0.05, 0.5)) and f["effect"]["epochs"] == pytest.approx((-0.1, 2.5))
    assert f["appears"] == ("epochs",)
    both = readings.figure4_facts({"-": row(8, 0.9, 0.02), "steps": row(8, 0.8, 0.03), "epochs": row(2, 0.7, 0.05)})
    assert both["appears"] == ("steps", "epochs")
    neither = readings.figure4_facts({"-": row(8, 0.9, 0.02), "steps": row(8, 0.8, 0.01), "epochs": row(2, 0.95, 0.05)})
    assert neither["appears"] == ()


def test_decomposition_facts_name_the_majority():
    shares = lambda values: [{"C": C, "resampling": m, "sampling_share": v}  # noqa: E731
                             for (C, m), v in zip([(2, "resplit"), (4, "resplit"), (2, "bootstrap"), (4, "bootstrap")],
                                                  values)]
    f = readings.decomposition_facts(shares([0.6, 0.7, 0.8, 0.9]))
    assert f == {"complexities": [2, 4], "resplit": [0.6, 0.7], "bootstrap": [0.8, 0.9], "majority": "sampling"}
    assert readings.decomposition_facts(shares([0.1, 0.2, 0.3, 0.4]))["majority"] == "model"
    assert readings.decomposition_facts(shares([0.1, 0.7, 0.3, 0.4]))["majority"] == "neither"
    table = _table({2: 0.95, 4: 0.8}, {2: 0.01, 4: 0.02}, {2: 0, 4: 3})
    config = ex.resolve_config("smoke")
    text = " ".join(readings.decomposition_text(config, shares([0.6, 0.7, 0.8, 0.9]), table).split())
    assert "is **60 % / 70 %** with re-splits and **80 % / 90 %** with the bootstrap for C = 2 / 4" in text
    assert ("mean AUC is 0.80–0.95 (3 of 8 members below 0.9), most of the spread in Figure 1 is the *estimator's*"
            in text)
    assert readings.decomposition_text(ex.resolve_config("smoke"), [], table).startswith("*The split of the variance")


def test_spaces_text_states_the_verdict():
    facts = {"plane": {"best_C": 4, "same_order": True, "width_ratio": 1.0, "fraction": 0.5, "fraction_change": 0.0},
             "fourier": {"best_C": 4, "same_order": True, "width_ratio": 1.5, "fraction": 0.3,
                         "fraction_change": -0.2},
             "mlp": {"best_C": 2, "same_order": False, "width_ratio": 0.5, "fraction": 0.5, "fraction_change": 0.0}}
    text = " ".join(readings.spaces_text(ex.resolve_config("smoke"), facts).split())
    assert "the order of all C by mean AUC is kept in fourier." in text
    assert "by a factor of 0.50–1.50 on average over C (fourier ×1.50, mlp ×0.50)" in text
    assert ("moves from 50.0 % in the plane to 30.0 % (fourier), 50.0 % (mlp) (smaller in fourier; the same in mlp)"
            in text)
    assert text.endswith("even the ranking of the complexities depends on the space; the size of the region where the "
                         "difference is significant depends on it.")
    assert readings.spaces_text(ex.resolve_config("smoke"), {}).startswith("*The feature-space comparison")


def test_the_families_facts_place_each_family_against_the_ddpms_range():
    table = pd.DataFrame({"members": [8, 8, 8, 8], "AUC mean": [0.99, 0.98, 0.7, 0.97],
                          "AUC sd": [0.01, 0.01, 0.1, 0.02], "band width": [0.02, 0.04, 0.2, 0.03],
                          "below 0.9": [0, 0, 6, 0], "output sd": [np.nan, np.nan, 0.31, np.nan],
                          "radial sd": [0.4, 0.41, 1.02, 0.39]},
                         index=["DDPM C = 1", "DDPM C = 2", "VAE", "flow (NSF)"])
    facts = readings.families_facts(table)
    assert facts["width_range"] == (0.02, 0.04) and facts["width_median"] == pytest.approx(0.03)
    vae, flow = facts["families"]["VAE"], facts["families"]["flow (NSF)"]
    assert (vae["where"], vae["differs"], vae["ratio"], vae["below"]) == ("wider than", True, pytest.approx(20 / 3), 6)
    assert (flow["where"], flow["differs"]) == ("within", False)
    assert facts["any_differs"] and facts["auc_range"] == (0.98, 0.99)
    text = " ".join(readings.families_text(ex.resolve_config("smoke"), table, 200, 0.39).split())
    assert "the VAE band is 0.200 wide, wider than the DDPMs' 0.020–0.040 (6.67× their median)" in text
    assert "the flow (NSF) band is 0.030 wide, within" in text and "does depend on the family" in text
    assert ("its decoder adds noise of sd 0.31 to every point, so its samples' distance from the centre has sd 1.02 "
            "where the held-out ring's has 0.39") in " ".join(text.split()) and text.count("decoder adds") == 1


def test_a_ddpms_radial_spread_from_a_few_diverged_samples_is_named_as_such():
    samples = np.tile(np.array([[1.0, 0.0], [0.0, 1.5]]), (3, 50, 1))  # (3 members, 100 points, 2) on the ring
    samples[1, 0] = [4000.0, 0.0]  # one diverged point in member 1
    share, members = ex.far_points(samples)
    assert (share, members) == (pytest.approx(1 / 300), 1) and ex.far_points(None)[1] == 0
    assert ex.radial_sd(samples) > 100  # the one point dominates the mean radial sd
    table = pd.DataFrame({"members": [3, 3], "AUC mean": [0.99, 0.98], "AUC sd": [0.01, 0.01],
                          "band width": [0.02, 0.03], "below 0.9": [0, 0], "output sd": [np.nan, np.nan],
                          "radial sd": [ex.radial_sd(samples), 0.4], "far points": [share, 0.0],
                          "far members": [members, 0]}, index=["DDPM C = 2", "flow (NSF)"])
    text = " ".join(readings.families_text(ex.resolve_config("smoke"), table, 200, 0.39).split())
    assert "DDPM C = 2's radial sd of" in text and "1 of its 3 members put 0.33 % of their points beyond 10" in text
    assert "flow (NSF)'s radial sd" not in text
