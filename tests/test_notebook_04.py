"""Notebook 04 run by papermill: the smoke preset's recorded results, and fast failures on bad parameters."""

from __future__ import annotations

import pytest
from findings import check_findings
from notebook_runner import (
    NotebookChecks,
    assert_fails_fast,
    assert_tables_fit,
    config_cell_fixture,
    displayed_table_widths,
    notebook_runner,
    reading_outputs,
    smoke_fixture,
)

from lib.glue import without_clocks
from lib.irs import experiment as ie
from lib.irs import paper
from lib.make.report import temporary_environ
from lib.tables import reader_name

run = notebook_runner("04_image_retrieval_score.ipynb")


smoke = smoke_fixture(run)
config_cell = config_cell_fixture(run)


def test_every_table_shown_fits_the_page(smoke):
    """No table of the executed notebook is wider than TABLE_WIDTH_PX (the toy-generator table was 1,300 px wide
    as one table of 16 columns; it is shown as two)."""
    widths = displayed_table_widths(smoke["notebook"])
    assert any(cell == "cell-24" for cell, _ in widths), "the toy-generator tables are not shown"
    assert_tables_fit(smoke["notebook"])


def test_reading_cells_state_the_recorded_results(smoke):
    """The text that states the run's numbers is rendered by the run: each reading cell wrote Markdown, and the
    numbers in it are the recorded (glued) results, formatted as the text gives them."""
    text, r = reading_outputs(smoke["notebook"]), smoke["results"]
    assert set(text) == {"reading-simulation", "reading-gap", "reading-class-fraction", "reading-memoriser",
                         "reading-toy", "reading-diadm", "reading-ranking", "reading-copying", "reading-closing",
                         "reading-vote", "reading-ranking-intro", "reading-paper-scale-targets"}
    # the paper's numbers, said from lib.irs.paper (not typed in the Markdown)
    assert f"of {paper.XL}\nagainst {paper.XL_UNCONDITIONAL} unconditioned".replace("\n", " ") in " ".join(
        text["reading-ranking-intro"].split())
    assert f"±{100 * paper.IMAGENET_HALF_WIDTH:.1f}-point" in text["reading-paper-scale-targets"]
    coverage = r["sim_coverage"].values()
    assert f"between {min(coverage):.3f} and {max(coverage):.3f}" in text["reading-simulation"]
    for name, (lower, estimate, upper) in r["gap_irs_inf_real"].items():
        assert f"{reader_name(name)} {estimate:.2f} [{lower:.2f}, {upper:.2f}]" in text["reading-gap"]
    slope, intercept, r2 = r["e2_fit"]["resnet20/b/irs_adj"]
    assert f"ResNet-20 slope {slope:.2f}, intercept {intercept:.2f}, R² {r2:.2f}" in text["reading-class-fraction"]
    adjusted = r["e3"]["pixels/g0.1"][4]  # the intervals are the table's; the reading states the adjusted score
    assert f"in pixels space {adjusted:.2f} for g = 0.1" in text["reading-memoriser"]
    assert f"its FID ({r['toy']['resnet20/memorise-0.1'][1]:.2f})" in text["reading-toy"]
    diadm, uncond = r["generators"]["resnet20/diadm c8 100%"], r["generators"]["resnet20/unconditional c8 100%"]
    assert f"IRS_∞,a is {diadm[0]:.3f} against the unconditional arm's {uncond[0]:.3f}" in text["reading-diadm"]
    assert f"Kendall τ between the rankings: IRS_∞,a / FID {r['gen_tau']['irs_adj / fid']:.2f}" in text[
        "reading-ranking"]
    assert f"retrieve their own conditioning image {diadm[3]:.1%}" in text["reading-copying"]


def test_extractor_vote_chooses_the_correlated_bloc(smoke):
    """The vote of spec E4 on the smoke run's three extractors: pixels and its random projection retrieve the
    same image far more often than any other pair, so the rule (2 of 3 agreeing) picks one of them, not the
    class-aware resnet20 that the class-fraction fit ranks most linear."""
    v, text = smoke["results"]["vote"], reading_outputs(smoke["notebook"])["reading-vote"]
    assert v["threshold"] == 2 and v["bloc"] == ["pixels", "randproj"]
    assert v["bloc_agreement"] > 0.3 > 0.05 > v["median_pair_agreement"]
    assert v["chosen"] in ("pixels", "randproj") and v["linear_order"][0] == "resnet20" and not v["same_best"]
    assert v["rates"]["resnet20"] < 0.1 < 0.9 < v["rates"]["randproj"] and 0.3 < v["share"] < 0.9
    assert f"agree on {100 * v['share']:.1f} % of the queries" in text.replace("\n", " ")
    assert "falls in a bloc" in text


def test_smoke_run_records_its_results(smoke):
    r = smoke["results"]
    assert r["preset"] == "smoke" and r["extractors"] == ["pixels", "randproj", "resnet20"] and r["n_train"] == 2000
    assert set(r["sim_coverage"]) == {"s0.3/n0.1", "s0.3/n0.5", "s0.9/n0.1", "s0.9/n0.5"}
    assert all(0.75 <= c <= 1.0 for c in r["sim_coverage"].values())  # 90 % intervals, 40 repetitions each
    lower, estimate, upper, seconds = r["imagenet_scale"]
    assert lower < estimate < upper and 0.06 < upper - lower < 0.08 and seconds < 5
    assert r["adjusted_ci_coverage"] >= 0.8  # the conservative bounds-ratio interval


def test_real_data_falls_short_of_one_in_every_feature_space(smoke):
    gap = smoke["results"]["gap_irs_inf_real"]
    assert set(gap) == {"pixels", "randproj", "resnet20"}
    for lower, estimate, upper in gap.values():
        assert 0 < lower <= estimate <= upper < 1  # the measurement gap
    assert gap["resnet20"][1] > gap["pixels"][1]  # a learned feature space retrieves more evenly than pixels


def test_memoriser_and_class_fraction_behave_as_the_model_says(smoke):
    e3 = smoke["results"]["e3"]
    irs_inf, lower, upper, source_hit, _ = e3["pixels/g0.1"]
    assert source_hit == 1.0 and lower <= 0.1 <= upper  # exact copies: the coupon-collector model holds
    assert e3["pixels/g0.1"][0] < e3["pixels/g0.5"][0]
    slope, _, r2 = smoke["results"]["e2_fit"]["resnet20/b/irs_adj"]
    assert slope > 0.3 and r2 > 0.5  # rises with the class fraction


def test_irs_flags_the_memoriser_that_precision_and_recall_accept(smoke):
    toy = smoke["results"]["toy"]
    real, memoriser = toy["resnet20/real (SYN pool)"], toy["resnet20/memorise-0.1"]
    # [irs_adj, fid, precision, recall, coverage]
    assert memoriser[0] < 0.5 * real[0]
    assert memoriser[2] > 0.8 and memoriser[3] > 0.7


def test_coverage_is_recorded_at_several_k_and_the_ledger_decides_it(smoke):
    """The toy sets' coverage at each k of ie.COVERAGE_KS, on the same sets as the toy table (on its main extractor
    and raw pixels): at the table's k it is the table's coverage, it grows with k (larger balls), and 04.coverage-k
    gets a verdict from it."""
    from lib import claims
    from lib.irs.claims import CLAIMS

    r = smoke["results"]
    by_k, toy = r["toy_coverage_by_k"], r["toy"]
    extractors = {key.split("/")[0] for key in by_k}  # the main extractor and raw pixels, of the toy table's
    assert extractors == {"resnet20", "pixels"} and r["toy_n"] == 250
    assert set(by_k) == {key for key in toy if key.split("/")[0] in extractors}
    k_table = str(ie.PRESETS["smoke"].prdc_k)
    for key, values in by_k.items():
        assert set(values) == {str(k) for k in ie.COVERAGE_KS}  # the record's keys come back sorted as text
        assert values[k_table] == toy[key][4]  # [irs_adj, fid, precision, recall, coverage]
        assert values[str(min(ie.COVERAGE_KS))] <= values[str(max(ie.COVERAGE_KS))]
    v = {c.id: x for c, x in claims.judge(CLAIMS, r)}["04.coverage-k"]
    assert v.verdict in (claims.HOLDS, claims.FAILS, claims.UNDECIDED) and v.ours.startswith("coverage moves with k")


def test_the_trained_generators_are_measured_with_their_controls(smoke):
    """Section 5 in the smoke preset: every generated set and anchor under both evaluation extractors; the anchors
    behave as the coupon-collector model says, whatever the tiny generators learned in their 72 steps."""
    g = smoke["results"]["generators"]  # [irs_adj, fid, recall, source_hit, nn_ratio]
    sets = {key.split("/", 1)[1] for key in g}
    assert sets == {"unconditional c8 50%", "diadm c8 50%", "class c8 50% w1", "unconditional c8 100%",
                    "diadm c8 100%", "class c8 100% w1", "class c8 100% w2", "diadm c8 100% held-out cond.",
                    "real held-out (SYN)", "memorise 0.1", "memorise 0.5"}
    assert {key.split("/")[0] for key in g} == {"resnet20", "pixels"}
    for name in ("resnet20", "pixels"):
        real, copies = g[f"{name}/real held-out (SYN)"], g[f"{name}/memorise 0.1"]
        assert copies[0] < real[0] and copies[3] > 0.9 and copies[4] < 1 < g[f"{name}/diadm c8 100%"][4]
        assert 0.8 < real[4] < 1.25  # real held-out images against themselves' median: about one
    assert set(smoke["results"]["gen_tau"]) == {"irs_adj / fid", "irs_adj / recall", "fid / recall"}


BAD_PARAMETERS = [
    ({"PRESET": "fast"}, "PRESET='fast' is not allowed"),
    ({"EXTRACTORS": ["pixels", "vgg"]}, "EXTRACTORS entry='vgg'"),
    ({"FRACTIONS": [0.0, 0.5]}, "FRACTIONS entry=0.0"),
    ({"GEN_N": 1}, "GEN_N=1"),
    ({"GEN_GUIDANCE": [2.0]}, "GEN_GUIDANCE must each hold 1.0"),
    ({"GEN_CHANNELS": [4]}, "GEN_CHANNELS entry=4 must be >= 8"),
    ({"GEN_EVAL_EXTRACTORS": ["vgg"]}, "GEN_EVAL_EXTRACTORS entry='vgg'"),
    ({"GEN_STEPS": 0}, "GEN_STEPS=0 must be >= 1"),
    ({"GAP_NS": []}, r"GAP_NS=\(\) must hold at least 1 value"),
    ({"EXPLORER": "false"}, "EXPLORER='false' must be True or False"),
    ({"GAP_N": [100]}, r"unknown parameter\(s\): GAP_N \(did you mean GAP_NS\?\)"),
    ({"MEM_NOISE": "0.1"}, "MEM_NOISE='0.1' must be a number"),
    ({"NUM_THREADS": 0}, "NUM_THREADS=0 must be >= 1"),
    ({"SOURCE": "store"}, r"SOURCE='store' is not one of \('stored', 'compute'\)"),
    ({"EXTRACTORS": ["swav"]}, r"EXTRACTORS entry='swav' is not allowed"),  # needs image folders: lib.irs.folders
    ({"MEM_NOISE": float("inf")}, "MEM_NOISE=inf must be a finite real number"),  # ran, memoriser IRS 0.004
    ({"EXTRACTORS": ["pixels", "pixels"]}, r"EXTRACTORS=\('pixels', 'pixels'\) holds duplicates \('pixels'"),
    ({"FRACTIONS": [0.5, 1.0, 0.5]}, r"FRACTIONS=\(0.5, 1.0, 0.5\) holds duplicates \(0.5 more than once\)"),
    ({"GAP_NS": [250, 250]}, r"GAP_NS=\(250, 250\) holds duplicates \(250 more"),
    ({"MEM_FRACTIONS": [0.1, 0.1]}, r"MEM_FRACTIONS=\(0.1, 0.1\) holds duplicates"),
    ({"CLASS_DRAWS": 0}, "CLASS_DRAWS=0 must be >= 1"),  # the config's field is e2_reps
    ({"N_FIXED": 1}, "N_FIXED=1 must be >= 2"),
    ({"ALPHA_E": 0.6}, r"ALPHA_E=0.6 must lie in \(0.0, 0.5\)"),
    ({"FIGURES_DIR": "/dev/null/figs"}, r"FIGURES_DIR='/dev/null/figs' is not a writable folder"),
    ({"SIM_REPS": 10**12}, r"needs about [\d,.]+ GB of memory, more than the [\d,.]+ GB available; .*"
                           r"SIM_REPS=1000000000000"),
    ({"EXTRACTORS": ["efficientnet_lite0"], "EFFICIENTNET_SIZE": 10**6},
     r"GB of memory.*EfficientNet-Lite0's activations.*EFFICIENTNET_SIZE=1000000"),
]


class TestEveryNotebook(NotebookChecks):
    """The checks every notebook's tests make (tests/notebook_runner.py), with notebook 04's settings."""

    run = staticmethod(run)
    presets, bad_parameters = ie.PRESETS, BAD_PARAMETERS
    max_runtime_s = 240  # about 90 s on a loaded 2-core machine, cold cache (section 5 trains three generators)


def test_a_bad_parameter_stops_the_whole_notebook_run_before_any_work(tmp_path):
    assert_fails_fast(run, tmp_path, {"PRESET": "fast"}, "PRESET='fast' is not allowed")  # papermill's path


def test_a_missing_data_file_stops_the_configuration_cell(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_DATA", str(tmp_path / "empty"))
    assert_fails_fast(run, tmp_path, {}, "Data file cifar10/cifar10-jpeg.zip is missing")


@pytest.mark.full
def test_cpu_preset_findings(tmp_path):
    """The default preset (about 7 minutes on an idle 2-core CPU); skipped unless `pytest --run-full`."""
    r = run(tmp_path, "cpu", tmp_path / "cache", cell_timeout=3600, PRESET="cpu")
    assert all(upper < 1 for _, _, upper in r["gap_irs_inf_real"].values())
    assert all(r["e2_fit"][f"{name}/a/irs_adj"][0] > 0 for name in r["extractors"])
    assert r["runtime_s"] < 40 * 60
    check_findings("04", r)  # the closing cells' findings (tests/findings.py, tests/reference/findings.json)


def test_a_stored_layer_of_the_smoke_run_round_trips(smoke, tmp_path):
    """The smoke run's stored entries, written as a layer, give the same glued results (clocks aside) in a run
    with an empty cache that computes none of them."""
    from lib import store

    environ = {"WORKBOOK_RESULTS": str(tmp_path / "results")}
    with temporary_environ({**environ, "WORKBOOK_CACHE": str(smoke["tmp"] / "cache")}):
        store.write_layer("04", "smoke", store.read_records(smoke["records"]), {"command": "test", "commit": "x",
                                                                               "date": "now"})
    manifest = store.read_manifest(tmp_path / "results" / "04" / "smoke")
    # retrievals, the toy table and the generator study's measurements
    assert {name.split("-")[0] for name in manifest["entries"]} == {"nn", "toy", "genscores"}
    stored = run(tmp_path, "stored", tmp_path / "cache", env=environ, SOURCE="stored")
    assert without_clocks(stored) == without_clocks(smoke["results"])
    text = (tmp_path / "stored.ipynb").read_text()
    assert f"{len(manifest['entries'])} results read, 0 computed." in text
