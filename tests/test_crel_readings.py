"""lib.crel.readings: the facts notebook 02's reading cells state, on small hand-made inputs with known answers."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from lib.crel import experiment as ex
from lib.crel import paper
from lib.crel import readings as fd

NAN = float("nan")


def table_row(alpha, lgm, method, seed, cov_z=NAN, cov_y=NAN, area=NAN, collapsed=(), attempts=()) -> dict:
    return dict(alpha=alpha, lgm=lgm, method=method, seed=seed, coverage_z=cov_z, coverage_y=cov_y, area=area,
                latent_area=NAN, gamma=0.0, pre_coverage=NAN, collapsed=list(collapsed),
                collapsed_attempts=list(attempts))


def two_seed_rows() -> pd.DataFrame:
    """CReL (flow, cvae), Feldman (flow), the Y-space DQR and the latent DQR at alpha 0.1 and 0.02, seeds 0 and 1."""
    rows = []
    for seed, (c1, c2) in enumerate(((0.88, 0.97), (0.90, 0.99))):
        for a, c in ((0.1, c1), (0.02, c2)):
            rows += [table_row(a, "flow", "CReL", seed, c, c, 100 + 10 * seed),
                     table_row(a, "cvae", "CReL", seed, c, c - 0.1, 300, collapsed=[1] if seed else [],
                               attempts=[0, 1] if seed else []),
                     table_row(a, "flow", "DQR (latent, uncalibrated)", seed, 0.5),
                     table_row(a, "flow", "Feldman", seed, NAN, 0.9, 120),
                     table_row(a, "none", "DQR (Y-space)", seed, 0.92, 0.92, 200)]
    return pd.DataFrame(rows)


CONFIG = replace(ex.PRESETS["smoke"], alphas=(0.1, 0.02), table_lgms=("cvae", "flow"), num_seeds=2)


@pytest.mark.parametrize("mean, pre, inside, below", [(0.6, 0.25, True, True), (1.0, 0.75, True, False),
                                                      (1.0 + 1e-9, 0.5, False, False), (0.25, 0.49, True, True),
                                                      (0.25 - 1e-9, 0.5, False, False)])
def test_the_guarantee_holds_within_two_standard_errors_of_the_bounds(mean, pre, inside, below):
    resplit = {"mean": mean, "se": 0.125, "lower": 0.5, "upper": 0.75}  # widened by 2 se: [0.25, 1.0]
    assert fd.guarantee(resplit, pre, alpha=0.5) == {"inside": inside, "below": below}  # below: pre < 1 - alpha


def test_the_resplit_reading_states_the_words_of_its_facts():
    config = replace(CONFIG, coverage_resplits=7)
    resplit = {"mean": 0.95, "se": 0.001, "lower": 0.9, "upper": 0.91}
    text = fd.resplit_text(config, resplit, 0.95, 0.1)
    assert "the mean lies\noutside them" in text
    assert "is 0.950,\nnot below 1 − α, so the upper bound\nneed not hold." in text
    assert "over 7 re-splits averages 0.9500 ± 0.0010" in text


def test_the_collapse_guard_counts_each_cvae_seeds_trainings():
    rows = two_seed_rows()
    assert fd.guard_facts(rows) == {"trainings": {0: 1, 1: 3}, "kept_collapsed": [1]}
    assert fd.guard_facts(rows[rows["lgm"] != "cvae"]) is None
    text = fd.guard_text(rows)
    assert "(CVAE seeds 0, 1): seed 1 needed 3 trainings; every training of seed 1 collapsed, and the first" in text
    assert fd.guard_text(rows[rows["lgm"] != "cvae"]).startswith("*The collapse guard: not measured in this run")


def test_table_cells_are_mean_and_sd_over_seeds_and_the_papers_row_beside():
    rows = two_seed_rows()
    stats = fd.table_stats(rows)
    assert fd.mean_sd_cell(stats, (0.1, "flow", "CReL"), "coverage_z") == f"0.890 ± {np.std([0.88, 0.9], ddof=1):.3f}"
    assert fd.mean_sd_cell(stats, (0.1, "flow", "CReL"), "area", 0) == "105 ± 7"
    assert fd.mean_sd_cell(stats, (0.1, "flow", "Feldman"), "coverage_z") == ""
    one_seed = fd.table_stats(rows[rows["seed"] == 0])
    assert fd.mean_sd_cell(one_seed, (0.1, "flow", "CReL"), "coverage_z") == "0.880"
    names = fd.paper_names(rows, "identity_convex")
    assert names["DQR (Y-space)"] == "DQR" and names["DQR (latent, uncalibrated)"] == "DQR (latent, uncalibrated)"
    assert fd.paper_names(rows, "latent_uncalibrated")["DQR (latent, uncalibrated)"] == "DQR"
    assert fd.paper_cells("CReL", 0.1, names) == "0.8953 / 0.8915 / 232.7"
    assert fd.paper_cells("Feldman", 0.1, names) == "– / 0.894 / 234.5"
    assert fd.paper_cells("Feldman", 0.02, names) == ""


def test_the_reading_table_follows_the_papers_order_flow_first():
    stats = fd.table_stats(two_seed_rows())
    table = fd.table_rows(stats, fd.paper_names(two_seed_rows(), "identity_convex"), (0.1, 0.02))
    assert [(r["α"], r["LGM"], r["method"]) for r in table] == [
        ("0.1", "flow", "CReL"), ("0.1", "CVAE", "CReL"), ("0.1", "flow", "Feldman"), ("0.1", "none", "DQR (Y-space)"),
        ("0.02", "flow", "CReL"), ("0.02", "CVAE", "CReL"), ("0.02", "flow", "Feldman"),
        ("0.02", "none", "DQR (Y-space)")]
    assert table[0]["Coverage-Y"].endswith(" (exact)") and table[1]["Coverage-Y"].endswith(" (decoded set)")
    assert not table[2]["Coverage-Y"].endswith(")")


def test_a_difference_from_the_paper_is_within_two_standard_errors_or_not():
    paper_se = math.sqrt(0.8953 * 0.1047 / paper.TEST_POINTS)
    close = fd.against_paper((0.89, 0.01, 4), 0.8953, 4000)
    assert close[0] == pytest.approx(-0.0053) and close[1] is True  # 0.0053 <= 2 hypot(0.005, 0.0048)
    far = fd.against_paper((0.87, 0.01, 4), 0.8953, 4000)
    assert far[0] == pytest.approx(-0.0253) and far[1] is False
    one_seed = fd.against_paper((0.88, NAN, 1), 0.8953, 100)  # one seed: its binomial se on 100 points
    assert one_seed[1] is True and 0.0153 <= 2 * math.hypot(math.sqrt(0.88 * 0.12 / 100), paper_se)


def test_coverage_facts_against_the_paper_and_their_growth_with_the_level():
    stats = fd.table_stats(two_seed_rows())
    f = fd.coverage_facts(stats, "flow", (0.1, 0.02), 4000)
    assert f["found"][0.1][:2] == (pytest.approx(0.89), pytest.approx(np.std([0.88, 0.9], ddof=1)))
    assert f["found"][0.1][2] == 2 and f["grows"] is True
    assert set(f["paper_at"]) == {0.1, 0.02} and f["agree"] is True  # within 2 se of the paper at both levels
    assert [d for d, _ in f["checks"][0.1]] == [pytest.approx(0.89 - 0.8953), pytest.approx(0.89 - 0.8915)]
    assert fd.coverage_facts(stats, "missing", (0.1, 0.02), 4000) is None
    shrinking = two_seed_rows()
    shrinking.loc[shrinking["alpha"] == 0.02, "coverage_y"] = 0.5
    assert fd.coverage_facts(fd.table_stats(shrinking), "flow", (0.1, 0.02), 4000)["grows"] is False
    assert "does not grow with 1 − α." in fd.coverage_text(CONFIG, shrinking, fd.table_stats(shrinking))


def test_area_facts_name_the_lgms_whose_region_is_smaller_than_the_y_space_dqr():
    rows = two_seed_rows()  # CReL flow ~105, CReL cvae 300, DQR in Y 200
    f = fd.area_facts(fd.table_stats(rows), CONFIG)
    assert f == {"crel_lgms": ["cvae", "flow"], "has_dqr": True, "smaller": ["flow"], "pcp_lgms": []}
    text = fd.areas_text(CONFIG, fd.table_stats(rows))
    assert "CReL's region is smaller than DQR's with flow, as in the paper." in text
    assert fd.area_text(fd.table_stats(rows), (0.1, 0.02), "none", "DQR (Y-space)") == "200 ± 0 / 200 ± 0"
    assert fd.area_text(fd.table_stats(rows[rows["seed"] == 0]), (0.1, 0.02), "flow", "CReL") == "100 / 100"
    no_dqr = rows[rows["method"] != "DQR (Y-space)"]
    assert fd.area_facts(fd.table_stats(no_dqr), CONFIG)["smaller"] == []


def test_tail_sanity_reached_by_half_the_test_images():
    modes = {"shared": {"tail_sanity": 0.5, "crel": 0.2}, "per_image": {"tail_sanity": 0.49, "crel": 0.3}}
    assert fd.tail_reached(modes) == ["shared"]
    assert "only the shared reading reaches" in fd.modes_text(CONFIG, modes)
    modes["per_image"]["tail_sanity"] = 0.7
    assert "both readings reach" in fd.modes_text(CONFIG, modes)


def captioners(a_crel: float, b_crel: float, a_tail: float = 0.2, b_tail: float = 0.8) -> dict:
    return {"A": {"mean_rho": 0.6, "q_alpha": np.array([0.1, 0.1]), "crel": a_crel, "tail_sanity": a_tail},
            "B": {"mean_rho": 0.5, "q_alpha": np.array([0.3, 0.3]), "crel": b_crel, "tail_sanity": b_tail}}


def test_the_rank_reversal_and_its_reason():
    sweep = {0.15: {"mean BERT-SIM": 0.6, "CReL-BERT": 0.2}, 0.3: {"mean BERT-SIM": 0.55, "CReL-BERT": 0.1},
             0.5: {"mean BERT-SIM": 0.45, "CReL-BERT": 0.0}}  # at 0.5 A's mean is below B's: not looked at
    f = fd.reversal_facts(captioners(0.2, 0.3), sweep, 0.15)
    assert f["profile"] is True and f["q"] == (pytest.approx(0.1), pytest.approx(0.3))
    assert f["reversed_at"] == [0.15, 0.3] and f["checked"] == [0.15, 0.3] and f["case"] == "reversed"
    g = fd.reversal_facts(captioners(0.4, 0.35), {0.3: {"mean BERT-SIM": 0.55, "CReL-BERT": 0.4}}, 0.15)
    assert g["reversed_at"] == [] and g["checked"] == [0.15, 0.3] and g["case"] == "b_falls"
    assert fd.reversal_facts(captioners(0.4, 0.35, a_tail=0.9), {}, 0.15)["case"] == "unseen"
    text = fd.reversal_text(CONFIG, captioners(0.4, 0.35), {}, {"unrel": 0.36})
    assert "**CReL does not reverse the ranking** at p_fail =\n0.15:" in text
    assert "B's worst case falls further than A's: below the mean similarity of an unrelated caption (0.360)" in text
    assert fd.reversal_text(CONFIG, {"A": {}}, {}, {}).startswith("*The rank reversal: not measured")


def test_runtime_facts_the_grid_baselines_growth_against_crels():
    runtime = pd.DataFrame({"d": [2, 3], "crel_s": [0.01, 0.02], "feldman_s": [0.1, 1.0]})
    f = fd.runtime_facts(runtime, {"crel": {"factor_per_dim": 2.0}, "feldman": {"factor_per_dim": 10.0}})
    assert list(f["factor"]) == [pytest.approx(10.0), pytest.approx(50.0)] and f["as_paper"] is True
    assert fd.runtime_facts(runtime, {"crel": {"factor_per_dim": 0.5}, "feldman": {"factor_per_dim": 0.9}})[
        "as_paper"] is False  # the grid must grow, not only faster than CReL


def test_the_captions_bullet_ranks_a_below_or_above_b():
    assert "CReL-BERT ranks A below B (0.200 against 0.300)" in fd.captions_bullet(CONFIG, captioners(0.2, 0.3))
    assert "CReL-BERT ranks A above B (0.400 against 0.300)" in fd.captions_bullet(CONFIG, captioners(0.4, 0.3))
    assert fd.captions_bullet(CONFIG, {"A": {}}) == ""


def test_the_baselines_stand_beside_the_papers_rows():
    config = replace(CONFIG, lgm="flow", dqr_baseline="identity_convex")
    rows = two_seed_rows()
    texts = fd.baseline_texts(config, rows, fd.table_stats(rows))
    assert texts == ["Feldman et al. 0.900 / 0.900 with areas 120 ± 0 / 120 ± 0 (paper Coverage-Z/Coverage-Y/Area "
                     "–/0.894/234.5 at α = 0.1)",
                     "DQR in Y 0.920 / 0.920 with areas 200 ± 0 / 200 ± 0 (paper Coverage-Z/Coverage-Y/Area "
                     "0.8823/0.9145/287.4 at α = 0.1; 0.9818/0.9872/749.1 at α = 0.02)"]
