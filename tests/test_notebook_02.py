"""Notebook 02 run by papermill: the smoke preset's recorded results, and bad parameters failing fast."""

from __future__ import annotations

import pytest
from findings import check_findings
from notebook_runner import (
    NotebookChecks,
    assert_fails_fast,
    config_cell_fixture,
    notebook_runner,
    reading_outputs,
    smoke_fixture,
)

from lib.crel import experiment as ex
from lib.crel import guidance_seeds as gs
from lib.tables import set_names

run = notebook_runner("02_crel_conformal_reliability.ipynb")




smoke = smoke_fixture(run)
config_cell = config_cell_fixture(run)


def test_reading_cells_state_the_recorded_results(smoke):
    """The text that states the run's numbers is rendered by the run: each reading cell wrote Markdown, and the
    numbers in it are the recorded (glued) results, formatted as the text gives them."""
    text, r = reading_outputs(smoke["notebook"]), smoke["results"]
    assert set(text) == {"reading-collapse", "reading-guarantee", "reading-table", "reading-table-claims",
                         "reading-table-areas", "reading-tail", "reading-rank-reversal", "reading-summary",
                         "reading-conditional", "reading-spread", "reading-l2i", "reading-l2i-seeds",
                         "reading-synthetic-task"}
    assert f"averages {r['resplit']['mean']:.4f} ± {r['resplit']['se']:.4f}" in text["reading-guarantee"]
    for lgm, shown, label in (("flow", "flow", "exact"), ("cvae", "CVAE", "decoded set")):
        row = r["table_by_lgm"][f"{lgm}/CReL/0.1"]
        assert f"| 0.1 | {shown} | CReL | {row['coverage_z_mean']:.3f} | {row['coverage_y_mean']:.3f} ({label}) |" in (
            text["reading-table"])
    flow = [r["table_by_lgm"][f"flow/CReL/{a}"]["coverage_y_mean"] for a in ("0.1", "0.02")]
    assert f"Coverage-Y {flow[0]:.3f} at α = 0.1" in text["reading-table-claims"]
    a, b = r["captions"]["A"], r["captions"]["B"]
    assert f"CReL-BERT is {a['crel']:.3f} for A against {b['crel']:.3f} for B" in text["reading-rank-reversal"]
    per_image = r["captions_A_per_image"]["tail_sanity"]
    assert f"tail sanity {a['tail_sanity']:.2f} / {per_image:.2f}" in text["reading-tail"]
    ranking, real = r["label_to_image_ranking"], r["label_to_image"]["real held-out"]
    l2i_text = " ".join(text["reading-l2i"].split())
    assert f"Mean ρ ranks *{set_names(ranking['best_mean'])}* first" in l2i_text  # a set's label in words
    assert f"(Kendall τ between the rankings {ranking['tau']:.2f})" in l2i_text
    assert f"Real held-out images: mean ρ {real['mean']:.3f}, CReL-ρ {real['crel']:.3f}." in l2i_text
    pair = gs.compare(gs.stored_record(gs.CHANNELS)[0])  # the committed seeds' record, whatever the preset
    seeds_text = " ".join(text["reading-l2i-seeds"].split())
    assert f"mean {pair.crel.mean:+.4f} [{pair.crel.lower:+.4f}, {pair.crel.upper:+.4f}]" in seeds_text
    assert f"*{pair.crel.verdict}*" in seeds_text and f"{len(pair.seeds)} seeds" in seeds_text


def test_smoke_run_records_the_synthetic_table(smoke):
    r = smoke["results"]
    assert r["preset"] == "smoke" and r["alphas"] == [0.1, 0.02] and r["seeds"] == [0]
    methods = {key.split("/")[0] for key in r["table"]}
    assert {"CReL", "Feldman", "DQR (Y-space)", "PCP"} <= methods
    for key, row in r["table"].items():
        for name in ("coverage_z", "coverage_y"):
            if name in row:
                assert 0.0 <= row[name] <= 1.0, (key, name)
        if "area" in row:
            assert 0 <= row["area"] <= 3_100  # a count of Y-grid points (55 x 55 = 3025 at most)
    for alpha in (0.1, 0.02):
        crel_row = r["table"][f"CReL/{alpha}"]
        # 500 test points: coverage within 4 binomial standard errors of 1 - alpha (a loose smoke bound)
        se = (alpha * (1 - alpha) / 500) ** 0.5
        assert abs(crel_row["coverage_z"] - (1 - alpha)) < 4 * se + 1 / 501
        assert crel_row["gamma"] >= 0 and crel_row["latent_area"] > 0
        assert crel_row["pre_coverage"] < 1 - alpha  # calibration must inflate, not shrink (§3.4)
    # with the flow LGM, exact Coverage-Y grows with 1 - alpha and sits within 0.05 of it
    assert r["lgm"] == "flow"
    flow = {a: r["table_by_lgm"][f"flow/CReL/{a}"] for a in (0.1, 0.02)}
    assert flow[0.1]["coverage_y_mean"] < flow[0.02]["coverage_y_mean"]
    for alpha, row in flow.items():
        assert abs(row["coverage_y_mean"] - (1 - alpha)) < 0.05, (alpha, row)
        assert 0 < row["area_mean"] <= 3_100
    assert {"flow", "cvae"} <= {row["lgm"] for row in r["per_seed"]}  # both LGMs, every seed listed
    assert all(isinstance(dims, list) for dims in r["collapsed"].values())


def test_smoke_run_records_the_guarantee_and_the_runtime(smoke):
    r = smoke["results"]
    rs = r["resplit"]
    assert rs["lower"] == pytest.approx(0.9) and rs["upper"] == pytest.approx(0.9 + 1 / 501)
    assert rs["lower"] - 4 * rs["se"] <= rs["mean"] <= rs["upper"] + 4 * rs["se"]
    assert set(r["runtime"]) == {"2", "3"}
    for crel_s, feldman_s in r["runtime"].values():
        assert 0 < crel_s < feldman_s  # the exact QP is cheaper than the grid at every dimension


def test_smoke_run_records_conditional_coverage_spread_and_runtime_steps(smoke):
    """Coverage per bin of x for CReL, Feldman and DQR; the worst case across PGD starts beside the paper's 0.00027;
    the runtime's step-by-step growth factors (each the ratio of the recorded seconds)."""
    r, text = smoke["results"], reading_outputs(smoke["notebook"])
    assert set(r["conditional"]) == {"CReL", "Feldman", "DQR (Y-space)"}
    for gap in r["conditional"].values():
        assert 0 <= gap["worst_coverage"] <= 1 and gap["spread"] >= 0 and gap["target"] == pytest.approx(0.9)
        assert set(gap["under"]) <= {"0.8–1.6", "1.6–2.4", "2.4–3.2"}
    crel = r["conditional"]["CReL"]
    assert f"CReL: lowest {crel['worst_coverage']:.3f} at x ∈ {crel['worst_bin']}" in text["reading-conditional"]
    assert set(r["spread"]) == {"cvae", "flow"}
    for s in r["spread"].values():
        assert 0 <= s["median_basin_std"] <= s["median_std"] <= s["max_std"] and 0 < s["median_best_share"] <= 1
    assert f"median std {r['spread']['flow']['median_std']:.4f}" in text["reading-spread"]
    for method, i in (("crel", 0), ("feldman", 1)):
        (step,) = r["runtime_steps"][method]
        assert (step["from"], step["to"]) == (2, 3)
        assert step["factor"] == pytest.approx(r["runtime"]["3"][i] / r["runtime"]["2"][i])
    for d, (inside, in_s, out_s) in r["runtime_feldman_split"].items():  # 3 timed points per d in the smoke preset
        parts = [(inside, in_s), (3 - inside, out_s)]
        assert r["runtime"][d][1] == pytest.approx(sum(c * t for c, t in parts if c) / 3)
    assert "of the 3 timed points lay inside" in " ".join(text["reading-summary"].split())


def test_smoke_run_records_the_caption_experiment(smoke):
    r = smoke["results"]
    pools = r["pool_similarity"]
    assert pools["own"] > pools["near"] > pools["mid"] > pools["unrel"]
    caps = r["captions"]
    assert set(caps) == {"A", "B"}
    assert caps["A"]["mean"] > caps["B"]["mean"]  # the designed profile (§5 hard assertion)
    assert caps["A"]["q_alpha"] < caps["B"]["q_alpha"]
    for c in caps.values():
        # a cosine; not bounded by the mean: CReL minimises over *decoded* points, the mean is over real samples
        assert -1 <= c["crel"] <= 1 and c["spread"] >= 0 and 0 <= c["tail_sanity"] <= 1
        assert isinstance(c["worst_caption"], str) and c["worst_caption"]
    assert r["sentences_per_s"] > 0


def test_smoke_run_records_the_label_to_image_generators(smoke):
    """Section 5 on notebook 04's smoke generators (class arm, width 8: w = 1 and 2 at the full budget, w = 1 at
    half), trained in the run's cache, and the real reference: cosines, a coverage, a ranking of three."""
    l2i, ranking = smoke["results"]["label_to_image"], smoke["results"]["label_to_image_ranking"]
    assert set(l2i) == {"class c8 100% w1", "class c8 100% w2", "class c8 50% w1", "real held-out"}
    for row in l2i.values():  # cosines; CReL is not bounded by the mean (it minimises over *decoded* images, which
        # for the smoke preset's 4-epoch generators are smoother, and score higher, than their noisy samples)
        assert -1 <= row["crel"] <= 1 and -1 <= row["mean"] <= 1 and row["spread"] >= 0 and 0 <= row["tail_sanity"] <= 1
        assert 0.5 <= row["coverage_z"] <= 1
    assert ranking["n_pairs"] == 3 and -1 <= ranking["tau"] <= 1
    assert {ranking["best_mean"], ranking["best_crel"]} <= set(l2i) - {"real held-out"}
    assert all(len(pair) == 2 for pair in ranking["reversed"])


BAD_PARAMETERS = [
    ({"PRESET": "fast"}, "PRESET='fast' is not allowed"),
    ({"ALPHAS": [0.1, 1.2]}, "ALPHAS entry=1.2 must lie in"),
    ({"ALPHAS": [0.0]}, "ALPHAS entry=0.0 must lie in"),
    ({"CAPTION_LATENT_DIM": 0}, "CAPTION_LATENT_DIM=0 must be >= 1"),  # the config's field is captions.latent_dim
    ({"FOLDS": [1500, 1500, 20, 500]}, "FOLDS\\[2\\]=20 calibration points are too few for alpha=0.02"),
    ({"INFLATION": "cube"}, "INFLATION='cube' is not allowed"),
    ({"LGM": "gan"}, "LGM='gan' is not allowed"),
    ({"ALPHAS": 0.1}, r"ALPHAS=0.1 must be a list"),
    ({"EXPLORER": "false"}, "EXPLORER='false' must be True or False"),
    ({"INCLUDE_PCP": "false"}, "INCLUDE_PCP='false' must be True or False"),
    ({"ALPHA": [0.1]}, r"unknown parameter\(s\): ALPHA \(did you mean ALPHAS\?\)"),
    ({"NUM_THREADS": 0}, "NUM_THREADS=0 must be >= 1"),
    ({"ALPHAS": [0.1, 0.1]}, r"ALPHAS=\(0.1, 0.1\) holds duplicates \(0.1 more than once\)"),
    ({"TABLE_LGMS": ["flow", "flow"]}, r"TABLE_LGMS=\('flow', 'flow'\) holds duplicates"),
    ({"TABLE_LGMS": ["cvae"]}, r"LGM='flow' must be one of TABLE_LGMS=\('cvae',\)"),
    ({"TAU_DIR": float("inf")}, "TAU_DIR=inf must be a finite real number"),
    ({"N_DIRECTIONS": 2}, "N_DIRECTIONS=2 must be >= 3"),
    ({"CAPTION_IMAGES": 10}, "CAPTION_IMAGES=10 must be >= 50"),
    ({"PGD_STEPS": -1}, "PGD_STEPS=-1 must be >= 0"),
    ({"FIGURES_DIR": "/dev/null/figs"}, r"FIGURES_DIR='/dev/null/figs' is not a writable folder"),
    ({"N_DIRECTIONS": 10**9}, r"needs about [\d,.]+ GB of memory, more than the [\d,.]+ GB available; the largest "
                              r"part, the DQR's quantiles.*N_DIRECTIONS=1000000000 and FOLDS="),  # was: the OOM killer
    ({"SAMPLES_PER_IMAGE": 10**8}, r"GB of memory.*SAMPLES_PER_IMAGE=100000000 and CAPTION_IMAGES=150"),
    ({"PGD_STARTS": 10**9}, r"GB of memory.*PGD_STARTS=1000000000"),
    ({"LGM": "cvae", "TABLE_LGMS": ["cvae"], "CAPTION_LATENT_DIM": 10**9}, r"GB of memory.*CAPTION_LATENT_DIM="),
]


class TestEveryNotebook(NotebookChecks):
    """The checks every notebook's tests make (tests/notebook_runner.py), with notebook 02's settings."""

    run = staticmethod(run)
    presets, bad_parameters = ex.PRESETS, BAD_PARAMETERS
    checked_by_name = frozenset({"RUN_HF_MODELS"})
    max_runtime_s = 300  # well under 2 minutes on an idle 2-core machine


def test_a_missing_data_file_stops_the_configuration_cell(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_DATA", str(tmp_path / "empty"))  # the COCO captions are needed in section 4
    assert_fails_fast(run, tmp_path, {}, "Data file coco/captions_val2017.json is missing")


@pytest.mark.full
def test_cpu_preset_findings(tmp_path):
    """The default preset (78 min on a shared 2-core CPU from a cold cache): the findings its markdown states."""
    r = run(tmp_path, "cpu", tmp_path / "cache", cell_timeout=3600, PRESET="cpu")
    check_findings("02", r)  # the closing cell's findings (tests/findings.py, tests/reference/findings.json)
