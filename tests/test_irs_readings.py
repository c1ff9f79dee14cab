"""Notebook 04's reading facts (lib.irs.readings) on small hand-made tables whose answers are known."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from lib.irs import readings


def simulation_table() -> pd.DataFrame:
    """Three settings: the corner (s = 0.9 N, n / N = 0.1), the spec's case (0.9, 0.2) and (0.3, 0.5)."""
    return pd.DataFrame({"truth": [0.3, 0.9, 0.9], "ratio": [0.5, 0.1, 0.2], "coverage": [0.96, 0.87, 0.93],
                         "bias": [0.001, 0.08, -0.004], "sd": [0.01, 0.12, 0.03], "width": [0.02, 0.31, 0.09],
                         "capped": [0.0, 0.25, 0.0]})


def test_simulation_facts_state_coverage_in_standard_errors_and_the_corner():
    f = readings.simulation_facts(simulation_table(), alpha_e=0.05, reps=100)
    assert f["nominal"] == pytest.approx(0.9) and f["coverage_se"] == pytest.approx(0.03)  # sqrt(0.9 * 0.1 / 100)
    assert (f["coverage_min"], f["coverage_max"]) == (0.87, 0.96)
    assert f["coverage_mean"] == pytest.approx(0.92) and f["max_se_off"] == pytest.approx(2.0)  # |0.96 - 0.9| / 0.03
    assert f["relation"] == "above" and f["conservative"] is True
    assert f["large_n_bias"] == pytest.approx(0.004)  # n / N >= 0.2: the rows of bias 0.001 and -0.004
    assert (f["corner"]["truth"], f["corner"]["ratio"], f["corner"]["capped"]) == (0.9, 0.1, 0.25)
    assert f["spec_coverage"] == 0.93 and f["spec_was_noise"] is True  # 0.93 > 0.85 + 2 x 0.03


def test_simulation_facts_below_nominal_without_the_spec_case_or_large_n():
    sim = simulation_table().iloc[[1]].assign(coverage=0.84)  # only the corner, n / N = 0.1
    f = readings.simulation_facts(sim, alpha_e=0.05, reps=100)
    assert f["relation"] == "below" and f["conservative"] is False
    assert f["large_n_bias"] is None and f["spec_coverage"] is None and f["spec_was_noise"] is False
    assert f["max_se_off"] == pytest.approx(2.0)


@pytest.mark.parametrize("lower, upper, resolved", [(0.76, 0.78, True), (0.70, 0.80, False)])
def test_adjusted_facts_say_whether_the_interval_resolves_077_from_075(lower, upper, resolved):
    a = readings.adjusted_facts({"coverage": 0.95}, {"lower": lower, "upper": upper}, alpha_e=0.05)
    assert a["bonferroni"] == pytest.approx(0.8) and a["coverage"] == 0.95 and a["conservative"] is True
    assert a["half_width"] == pytest.approx((upper - lower) / 2) and a["resolved"] is resolved
    assert readings.adjusted_facts({"coverage": 0.85}, {"lower": 0.7, "upper": 0.8}, alpha_e=0.05)[
        "conservative"] is False


def gap_table() -> pd.DataFrame:
    """Two extractors at n = 100 and 1000 (two subsamples at 100): pixels reaches 0.2 / 0.4, resnet 0.5 / 0.8."""
    rows = [("pixels", 100, 0.1, 0.18, 0.3), ("pixels", 100, 0.1, 0.22, 0.3), ("pixels", 1000, 0.3, 0.4, 0.5),
            ("resnet20", 100, 0.4, 0.5, 0.6), ("resnet20", 1000, 0.7, 0.8, 1.0)]
    return pd.DataFrame(rows, columns=["extractor", "n", "lower", "estimate", "upper"])


def test_gap_facts_sort_by_estimate_and_name_the_smallest_gap():
    f = readings.gap_facts(gap_table(), ("pixels", "resnet20"))
    assert (f["n_max"], f["n_min"]) == (1000, 100)
    assert list(f["top"].index) == ["pixels", "resnet20"] and f["top"].loc["resnet20", "upper"] == 1.0
    assert f["below_one"] is False  # resnet20's upper bound reaches 1
    assert f["fold"] == pytest.approx(2.0) and f["smallest_gap"] == "resnet20"
    assert f["first"] == "pixels" and f["first_low"] == pytest.approx(0.2) and f["first_high"] == pytest.approx(0.4)


def test_gap_reading_states_every_extractor_and_the_move_with_n():
    config = SimpleNamespace(preset="smoke", extractors=("resnet20", "pixels"))
    text = readings.gap_reading(gap_table(), config, n_train=2000)
    assert "Not every extractor's interval stays below 1: pixels 0.40 [0.30, 0.50]; resnet20 0.80 [0.70, 1.00]" in text
    assert "varies 2.0-fold" in text and "resnet20: 0.50 at n = 100,\n0.80 at n = 1,000" in text


def class_fraction_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    fits = pd.DataFrame([("a", "b", "irs_adj", 1.1, -0.05, 0.95), ("b", "b", "irs_adj", 0.5, 0.3, 0.99),
                         ("c", "b", "irs_adj", 0.9, 0.1, 0.8), ("a", "a", "irs_adj", 0.7, 0.2, 0.6),
                         ("a", "b", "irs_inf", 0.3, 0.1, 0.9)],
                        columns=["extractor", "regime", "score", "slope", "intercept", "r2"])
    e2 = pd.DataFrame({"extractor": ["a", "a", "b", "b"], "regime": ["b", "b", "b", "a"], "f": [0.2, 0.2, 1.0, 0.2],
                       "irs_adj": [0.25, 0.35, 0.9, 0.1], "collisions": [3, 50, 8, 12]})
    return fits, e2


def test_class_fraction_facts_apply_the_linearity_rule_to_irs_adj_in_regime_b():
    fits, e2 = class_fraction_tables()
    f = readings.class_fraction_facts(fits, e2, ("c", "b", "a"))
    assert f["linear"] == ["a"]  # b: slope 0.5; c: R² 0.8; a's irs_inf fit is not the one judged
    assert f["others"] == ["c", "b"] and f["fits"][("a", "a")] == (0.7, 0.2, 0.6)
    assert f["f_min"] == 0.2 and f["small_f"] == {"a": pytest.approx(0.3)}
    assert (f["flagged"], f["draws"], f["flagged_large_f"]) == (2, 4, 0.5)  # collisions 3 (f 0.2) and 8 (f 1.0)
    assert readings.fit_text(f["fits"], ["a", "missing"], "b") == "a slope 1.10, intercept -0.05, R² 0.95"


def test_class_fraction_facts_without_flagged_draws():
    fits, e2 = class_fraction_tables()
    f = readings.class_fraction_facts(fits, e2.assign(collisions=20), ("a",))
    assert f["flagged"] == 0 and f["flagged_large_f"] is None


def memoriser_table() -> pd.DataFrame:
    return pd.DataFrame({"extractor": ["pixels", "pixels", "resnet20", "resnet20"], "g": [0.1, 0.5, 0.1, 0.5],
                         "source_hit": [1.0, 0.98, 0.4, 0.5], "irs_inf": [0.1, 0.5, 0.3, 0.6],
                         "lower": [0.09, 0.45, 0.25, 0.55], "upper": [0.11, 0.55, 0.35, 0.65],
                         "covers_g": [True, True, False, False], "irs_adj": [0.25, 1.2, 0.2, 0.4]})


def test_memoriser_facts_split_faithful_extractors_and_detect_over_correction():
    f = readings.memoriser_facts(memoriser_table(), ("pixels", "resnet20", "randcnn"))
    assert f["faithful"] == ["pixels"] and f["spread"] == ["resnet20"]  # randcnn has no rows
    assert f["hits"] == {"pixels": pytest.approx(0.99), "resnet20": pytest.approx(0.45)}
    assert f["faithful_cover"] is True and f["spread_cover_any"] is False
    assert f["first"] == "pixels" and f["first_adjusted"] == [(0.1, 0.25), (0.5, 1.2)]
    assert f["over_corrects"] is True  # 0.25 > 0.1 and 1.2 > 0.5
    assert readings.memoriser_facts(memoriser_table(), ("resnet20", "pixels"))["over_corrects"] is False


def test_memoriser_reading_names_the_spread_and_leaves_the_intervals_to_the_table():
    config = SimpleNamespace(preset="smoke", extractors=("pixels", "resnet20"), family=SimpleNamespace(n=250),
                             mem_noise=0.02)
    text = readings.memoriser_reading(memoriser_table(), config)
    assert ("their own source on pixels (99 %): there every interval of IRS_∞ covers g, as the model says it must "
            "(the table above)") in text
    assert "[0.090, 0.110]" not in text  # the intervals are the table's, not one long sentence's
    assert "On resnet20 (45 %) the retrievals spread" in text and "and no interval covers g." in text
    assert "0.25 for g = 0.1; 1.20 for g = 0.5, so it over-corrects." in text


def toy_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    index = ["real (SYN pool)", "drop 5 classes (SYN)", "memorise-0.1", "pca-T1", "pca-T0.5"]
    scores = pd.DataFrame({"irs_inf": [0.6, 0.35, 0.1, 0.2, 0.15], "irs_adj": [1.0, 0.55, 0.17, 0.33, 0.25],
                           "fid": [1.0, 5.0, 0.5, 30.0, 40.0], "precision": [0.8, 0.9, 0.95, 0.1, 0.2],
                           "recall": [0.8, 0.5, 0.85, 0.3, 0.2], "coverage": [0.8, 0.6, 0.9, 0.1, 0.05]},
                          index=index)
    ranks = pd.DataFrame({"irs_adj": [1, 2, 5, 3, 4], "fid": [2, 3, 1, 4, 5], "precision": [3, 2, 1, 5, 4],
                          "recall": [2, 3, 1, 4, 5], "coverage": [2, 3, 1, 4, 5]}, index=index)
    return scores, ranks


def test_toy_facts_find_the_sets_and_the_metrics_that_rank_a_pca_gaussian_last():
    scores, ranks = toy_tables()
    f = readings.toy_facts(scores, ranks, memoriser="memorise-0.1")
    assert f["sets"] == 5 and f["real_fid"] == 1.0 and f["pca"] == ["pca-T1", "pca-T0.5"]
    assert f["pca_last"] == ["fid", "precision", "recall", "coverage"]  # IRS_inf,a ranks the memoriser last
    assert f["pca_irs_inf"] == [0.2, 0.15]
    assert f["memoriser"][0]["fid"] == 0.5 and f["memoriser"][1]["irs_adj"] == 5 and f["dropped"][1]["fid"] == 3
    assert readings.toy_facts(scores, ranks, memoriser="memorise-0.3")["memoriser"] is None


def test_toy_reading_states_the_memorisers_ranks():
    scores, ranks = toy_tables()
    config = SimpleNamespace(preset="smoke", mem_fractions=(0.1, 0.5))
    text = readings.toy_reading(scores, ranks, "resnet20", config, n_train=2000)
    assert "can only ever produce 200 distinct images; its FID (0.50) ranks 1 of 5 (real images: 1.00)" in text
    assert "IRS_∞,a ranks it 5." in text and "their IRS_∞ is 0.15–0.20." in text


def test_vote_reading_without_a_ballot_says_the_section_was_skipped():
    assert readings.vote_reading(None, {"pixels": np.arange(3)}) == (
        "*The extractor vote: not measured in this run (it needs at least two extractors).*")


def test_generator_readings_name_the_extractors_on_which_diadm_wins():
    facts = {e: {"irs_diadm": 0.4, "irs_uncond": 0.3, "fid_diadm": 12.34, "fid_uncond": 20.0, "irs_higher": higher,
                 "fid_lower": e == "pixels", "irs_rose": False, "irs_fell": False, "fid_worse": False,
                 "fid_better": True} for e, higher in (("resnet20", True), ("pixels", False))}
    text = readings.diadm_reading(facts, "resnet20")
    assert "IRS_∞,a is 0.400 against the unconditional arm's\n0.300; its FID 12.3 against 20.0" in text
    assert "(intervals apart)" in text and "under 1 of 2 extractors (resnet20)" in text
    assert "beyond both intervals under\nnone; its FID the lower under pixels." in text
    trend = {"widths": {"class": {8: (0.5, 9.0), 16: (0.6, 8.0)}}, "guidance": {1.0: (0.6, 8.0), 2.0: (0.4, 9.0)}}
    agreement = {"tau": {"irs_adj / fid": 0.5}, "disagree": [("a", "b")], "pairs": 3}
    text = readings.ranking_reading(agreement, trend, (16, 8))
    assert "irs_adj / fid 0.50;\nIRS_∞,a and FID order 1 of the 3 pairs" in text
    assert "Width\n8 → 16 (full budget), IRS_∞,a: class 0.500 → 0.600." in text and "w 1: 0.600 / w 2: 0.400" in text


def test_closing_reading_repeats_the_sections_findings():
    fits, e2 = class_fraction_tables()
    config = SimpleNamespace(preset="smoke", extractors=("pixels", "resnet20"), alpha_e=0.05, gap_ns=(100, 1000))
    fits = fits.assign(extractor=fits["extractor"].map({"a": "resnet20", "b": "pixels", "c": "randcnn"}))
    text = readings.closing_reading(simulation_table(), gap_table(), fits, e2, memoriser_table(), config, 2000)
    assert "(0.870–0.960 for a nominal 90 %)" in text and "(0.40–0.80 at n = 1,000,\n  N = 2,000)" in text
    assert "(linear on resnet20)" in text and "retrieve their source on pixels)" in text
    assert not math.isnan(readings.simulation_facts(simulation_table(), alpha_e=0.05, reps=100)["max_se_off"])
