"""Notebook 03 run by papermill: the smoke preset's recorded results, and fast failures on bad parameters."""

from __future__ import annotations

import numpy as np
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

from lib.glue import without_clocks
from lib.make.report import temporary_environ
from lib.regret import experiment as ex
from lib.regret import paper

run = notebook_runner("03_epistemic_regret_cifar10h.ipynb")
METHODS = ("mc_dropout", "ensemble", "evidential", "ddu")




smoke = smoke_fixture(run)
config_cell = config_cell_fixture(run)


def test_theorem_holds_against_every_selector(smoke):
    """The paper's problems solved as LPs over all selectors on the 10,000 CIFAR-10H rows (one budget, five forms,
    two losses in the smoke preset): the duals' λ lie in [1/2, 1], each solution is a threshold rule, and the best
    deterministic threshold rule is within the rounding of at most two fractional rows."""
    lp, text = smoke["results"]["theorem_lp"], reading_outputs(smoke["notebook"])["reading-lp"]
    assert set(lp) == {"ce", "zero_one"}
    for facts in lp.values():
        assert facts["problems"] == 5 and facts["lambda_in_range"] and facts["all_threshold_form"]
        assert facts["max_fractional"] <= 2 and facts["max_rel_gap"] < 0.01
    assert lp["ce"]["lambda_min"] > 0.5 and lp["ce"]["lambda_max"] < 1  # CE budgets bind both constraints
    assert f"[{lp['ce']['lambda_min']:.3f}, {lp['ce']['lambda_max']:.3f}]" in text


def test_label_density_study(smoke):
    """k annotations per image (k = 1, 5, all in the smoke preset, three draws): Kendall τ of the AuReC ranking
    against the full-label ranking, per loss, with its interval and the k from which the ranking is stable."""
    r, text = smoke["results"], reading_outputs(smoke["notebook"])["reading-density"]
    assert set(r["label_density"]) == {"ce/1", "ce/5", "zero_one/1", "zero_one/5"}
    for row in r["label_density"].values():
        assert -1 <= row["low"] <= row["median_tau"] <= row["high"] <= 1 and 0 <= row["share_same"] <= 1
    assert set(r["label_density_stable_k"]) == {"ce", "zero_one"}
    ce1 = r["label_density"]["ce/1"]
    assert f"k = 1 gives τ {ce1['median_tau']:.2f} [{ce1['low']:.2f}, {ce1['high']:.2f}]" in text
    aurec = r["label_density_aurec"]  # the AuReC table at k = 1, 5, all: with every annotation it is the main table's
    assert {k.rsplit("/", 1)[1] for k in aurec} == {"1", "5", "all"}
    for key, row in r["table"].items():
        loss, method = key.split("/")
        assert aurec[f"{loss}/{paper.METHOD_NAMES[method]}/all"] == pytest.approx(row["AuReC"], rel=1e-9)


def test_reading_cells_state_the_recorded_results(smoke):
    """The text that states the run's numbers is rendered by the run: each reading cell wrote Markdown, and the
    numbers in it are the recorded (glued) results, formatted as the text gives them; sections the smoke preset
    skips (the stored recipe comparison) say so."""
    text, r = reading_outputs(smoke["notebook"]), smoke["results"]
    assert set(text) == {"reading-sandbox", "reading-theorem", "reading-table", "reading-table-claims", "reading-whole",
                         "reading-whole-claims", "reading-whole-recipe", "reading-whole-temperature",
                         "reading-whole-components", "reading-whole-width", "reading-single", "reading-proxy",
                         "reading-synth", "reading-closing", "reading-lp", "reading-density",
                         "reading-whole-recipe-intro", "whole-temperature-text", "whole-temperature-reading",
                         "reading-single-intro"}
    for row in r["table"].values():
        assert f"{row['AuReC']:.3f}" in text["reading-table"] and f"{row['ex-AuReC']:.3f}" in text["reading-table"]
    assert f"{r['whole']['ce/ensemble']['AuReC']:.3f}" in text["reading-whole"]
    assert (r["theorem_max_igd_outside"] == 0) == ("reaches" not in text["reading-theorem"])  # IGD+ of S* outside
    assert all(f"{r['al_nauc'][m]:.3f}" in text["reading-proxy"] for m in METHODS)
    assert f"{r['synth']['squared/ensemble']['AuReC']:.2f}" in text["reading-synth"]
    assert f"{r['single_models']['ce/cleanlab cross-validated q']['mean T*']:.4f}" in text["reading-single"]
    recipe = r["whole_recipe"]["airbench recipe/evidential"]  # the smoke preset trains the recipe's networks too
    assert f"{100 * recipe['accuracy']:.0f} %" in text["reading-whole-recipe"]
    assert "not measured in this run" not in text["reading-whole-recipe"]
    widest = r["whole_width"]["12/24/24/Deep Ensemble"]  # the smoke preset's width study: one more width
    assert f"{widest['CE AuReC']:.3f}" in text["reading-whole-width"]
    assert f"{r['whole_width_trend']['Deep Ensemble']['CE AuReC at 94%']:.3f}" in text["reading-whole-width"]


def test_smoke_run_records_the_table(smoke):
    r = smoke["results"]
    assert r["preset"] == "smoke" and r["n_train"] == 2000 and r["n_test"] == 1000
    assert r["label_agreement"] == pytest.approx(0.9921, abs=1e-4)  # the CIFAR-10H order check (spec §5.1)
    assert set(r["table"]) == {f"{loss}/{m}" for loss in ("ce", "zero_one") for m in METHODS}
    for row in r["table"].values():
        # ex-AuReC is the excess over the model's own oracle ordering: non-negative, and AuReC - ex-AuReC
        # is that oracle's area
        assert row["ex-AuReC"] >= 0 and row["AuReC"] == pytest.approx(row["ex-AuReC"] + row["oracle_AuReC"])
        assert row["P-gap"] >= 0 and -1 <= row["r_s(Â,Ê)"] <= 1 and -1 <= row["r_s(A*,E*)"] <= 1
        assert row["AuRC"] >= row["AuReC"]  # risk = regret + aleatoric >= regret at every coverage
        assert 0.3 < row["accuracy_vs_argmax_p*"] <= 1


def test_smoke_run_single_models_match_the_golden_decomposition(smoke):
    """cleanlab's cross-validated q on the first 1,000 rows: T* = A* + E*, and the A* of the images is shared."""
    single = smoke["results"]["single_models"]
    cv, resnet = single["ce/cleanlab cross-validated q"], single["ce/ResNet-20 (JPEG test)"]
    assert cv["mean T*"] == pytest.approx(cv["mean A*"] + cv["mean E*"])
    assert cv["mean A*"] == pytest.approx(resnet["mean A*"])  # A* depends on p* only
    assert cv["accuracy"] > resnet["accuracy"]  # the JPEG copy costs the lossless-trained ResNet accuracy
    assert single["zero_one/cleanlab cross-validated q"]["r_s(A*,E*)"] < cv["r_s(A*,E*)"]  # F3's direction


def test_smoke_run_checks_the_theorem_and_the_proxies(smoke):
    r = smoke["results"]
    assert r["theorem_max_igd_outside"] < 1e-3  # λ outside [1/2, 1] is (weakly) dominated by S*
    assert r["theorem_on_front_inside"] > r["theorem_on_front_outside"]
    assert r["sandbox_jaccard"]["regret-optimal E* (λ=1)"] == 1.0
    assert r["sandbox_jaccard"]["Bayes OOD p_ood/p_id"] < 1.0  # the OOD-optimal selector rejects other inputs
    for row in r["ood_auroc"].values():
        assert set(row) == {"mnist", "gaussian_noise", "blur", "uniform_noise"}
        assert all(0 <= v <= 1 for v in row.values())
    assert set(r["al_nauc"]) == set(METHODS) | {"random"} and all(0 <= v <= 1 for v in r["al_nauc"].values())
    assert set(r["synth"]) == {f"{loss}/{m}" for loss in ("squared", "absolute") for m in METHODS}
    assert all(row["ex-AuReC"] >= 0 for row in r["synth"].values())


def test_smoke_run_records_what_the_ratio_and_pgap_claims_read(smoke):
    """The ratio problems' LPs per problem (03.dinkelbach) and the CE P-gap's paired differences between the heads
    (03.f2-pgap): both claims are then decided from the run's own records, not left "not measured"."""
    from lib import claims
    from lib.regret.claims import CLAIMS
    from lib.regret.theorem_lp import PROBLEMS

    r = smoke["results"]
    by_problem = r["theorem_lp_by_problem"]
    assert set(by_problem) == {"ce", "zero_one"} and all(set(f) == set(PROBLEMS) for f in by_problem.values())
    for loss, facts in by_problem.items():  # one budget in the smoke preset: one LP per problem
        assert all(f["problems"] == 1 for f in facts.values())
        assert sum(f["problems"] for f in facts.values()) == r["theorem_lp"][loss]["problems"]
        assert facts["P_Re/rho"]["all_threshold_form"] and facts["P_Re/rho"]["lambda_in_range"]
    pairs = r["pgap_pairs"]["heads/ce"]
    keys = {paper.METHOD_NAMES[m]: m for m in METHODS}
    assert len(pairs) == len(keys) * (len(keys) - 1) // 2
    for key, (mean, lower, upper) in pairs.items():
        a, b = key.split(" − ")
        assert lower < upper  # a percentile interval over the draws
        assert mean == pytest.approx(r["table"][f"ce/{keys[a]}"]["P-gap"] - r["table"][f"ce/{keys[b]}"]["P-gap"])
    by_seed = r["al_nauc_by_seed"]  # AL over seeds: the first run is the notebook's own, stored one
    assert set(by_seed) == set(keys) and all(len(v) == ex.AL_SEEDS for v in by_seed.values())
    assert all(by_seed[name][0] == r["al_nauc"][m] for name, m in keys.items())
    assert len(set(by_seed["Deep Ensemble"])) > 1  # other seeds, other runs
    al_pairs = r["proxy_pairs"]["heads/AL NAUC"]
    assert al_pairs["MC-Dropout − Deep Ensemble"][0] == pytest.approx(
        np.mean(by_seed["MC-Dropout"]) - np.mean(by_seed["Deep Ensemble"]))
    v = {c.id: x for c, x in claims.judge(CLAIMS, r)}
    assert "ratio problems" in v["03.dinkelbach"].ours and "without interval" not in v["03.f2-pgap"].ours
    assert "without interval" not in v["03.f1-evidential"].ours


def test_smoke_run_trains_whole_networks_beside_the_heads(smoke):
    """The smoke preset trains tiny whole networks, ours and the airbench recipe's (WHOLE_SOURCE="train", an
    empty cache); reading them from a stored layer is tested below, in test_regret_whole.py and on the committed
    layer results/03/cpu."""
    r = smoke["results"]
    assert r["whole_source"] == "train"
    assert set(r["whole_recipe"]) == {f"{v}/{m}" for v in ("airbench recipe", "ours") for m in METHODS}
    assert r["data_source"] == r["whole_data_source"] == "jpeg"  # the copy read, and the one the networks saw
    assert set(r["whole"]) == {f"{loss}/{m}" for loss in ("ce", "zero_one") for m in METHODS}
    for row in r["whole"].values():
        assert row["ex-AuReC"] >= 0 and row["AuReC"] == pytest.approx(row["ex-AuReC"] + row["oracle_AuReC"])
    assert set(r["whole_accuracy"]) == set(METHODS) and all(0 <= a <= 1 for a in r["whole_accuracy"].values())
    for row in r["whole_ood_auroc"].values():
        assert set(row) == {"mnist", "gaussian_noise", "blur", "uniform_noise"}


def test_smoke_run_records_the_width_study(smoke):
    """The preset's networks (8/16/16, all four methods) and the study's wider ones (12/24/24: MC-Dropout and the
    ensemble); the preset's rows are the whole networks' own values, and each row's paper value is the paper's."""
    r = smoke["results"]
    names = {m: paper.METHOD_NAMES[m] for m in METHODS}
    assert set(r["whole_width"]) == ({f"8/16/16/{n}" for n in names.values()}
                                     | {f"12/24/24/{names[m]}" for m in ("mc_dropout", "ensemble")})
    for m, name in names.items():
        row = r["whole_width"][f"8/16/16/{name}"]
        assert row["CE AuReC"] == r["whole"][f"ce/{m}"]["AuReC"]
        assert row["0/1 AuReC"] == r["whole"][f"zero_one/{m}"]["AuReC"]
        assert row["paper CE AuReC"] == ex.paper_rows("CIFAR-10H", "ce")[m]["AuReC"]
    wider = r["whole_width"]["12/24/24/Deep Ensemble"]
    assert wider["parameters"] > r["whole_width"]["8/16/16/Deep Ensemble"]["parameters"]
    assert set(r["whole_width_trend"]) == {"MC-Dropout", "Deep Ensemble"}  # two widths each


def test_a_stored_layer_of_the_smoke_run_round_trips(smoke, tmp_path):
    """The smoke run's stored entries (the trained heads, the whole networks' predictions), written as a layer,
    give the same glued results (clocks aside) in a run with an empty cache that trains no head and no network."""
    from lib import store

    environ = {"WORKBOOK_RESULTS": str(tmp_path / "results")}
    with temporary_environ({**environ, "WORKBOOK_CACHE": str(smoke["tmp"] / "cache")}):
        store.write_layer("03", "smoke", store.read_records(smoke["records"]), {"command": "test", "commit": "x",
                                                                               "date": "now"})
    manifest = store.read_manifest(tmp_path / "results" / "03" / "smoke")
    labels = {name.rsplit("-", 1)[0] for name in manifest["entries"]}
    assert labels == {f"{stage}-{m}" for stage in ("cifar", "synth", "whole-pred", "whole-recipe-pred")
                      for m in METHODS} | {f"al-{m}-epistemic-400" for m in METHODS} | {"al-ensemble-random-400",
                                                                                          "pred-synth-ddu"}
    stored = run(tmp_path, "stored", tmp_path / "cache", env=environ, SOURCE="stored")
    assert without_clocks(stored) == without_clocks(smoke["results"])
    text = (tmp_path / "stored.ipynb").read_text()
    assert f"{len(manifest['entries'])} results read, 0 computed." in text
    trained = [p.name for p in (tmp_path / "cache" / "03").glob("*.pt")]  # networks and heads are .pt entries
    assert trained == []


BAD_PARAMETERS = [
    ({"PRESET": "fast"}, "PRESET='fast' is not allowed"),
    ({"METHODS": ["ensemble", "laplace"]}, "METHODS entry='laplace'"),
    ({"LOSSES": ["hinge"]}, "LOSSES entry='hinge'"),
    ({"MC_SAMPLES": 1}, "MC_SAMPLES=1 must be >= 2"),
    ({"NUM_THREADS": 0}, "NUM_THREADS=0 must be >= 1"),
    ({"PROGRESS": "false"}, "PROGRESS='false' must be True or False"),
    ({"METHOD": ["ddu"]}, r"unknown parameter\(s\): METHOD \(did you mean METHODS\?\)"),
    ({"LOSSES": "ce"}, "LOSSES='ce' must be a list"),
    ({"WHOLE_SOURCE": "gpu"}, "WHOLE_SOURCE='gpu' is not allowed"),
    ({"WHOLE_SOURCE": "stored"}, r"WHOLE_SOURCE='stored' is not allowed.*'train', 'off'"),  # SOURCE decides
    ({"WHOLE_WIDTHS": [8, 8]}, r"WHOLE_WIDTHS=\(8, 8\) must list three conv-group widths"),
    ({"DATA_SOURCE": "png"}, "DATA_SOURCE='png' is not allowed"),
    ({"WIDTH_STUDY": {"24/48": ["ensemble"]}}, r"WIDTH_STUDY key '24/48' must be three positive widths"),
    ({"WIDTH_STUDY": {"24/48/48": ["laplace"]}}, r"WIDTH_STUDY methods entry='laplace'"),
    ({"WIDTH_STUDY": {"9999/9999/9999": ["ensemble"]}}, r"GB of memory.*a whole network's.*WIDTH_STUDY"),
    ({"MEMBERS": 1}, "MEMBERS=1 must be >= 2"),  # was 'members (M)'
    ({"DEPTH": 21}, "DEPTH=21 is not allowed"),
    ({"N_TEST": 50}, "N_TEST=50 must be >= 100"),
    ({"LAMBDA_KL": float("inf")}, "LAMBDA_KL=inf must be a finite real number"),  # failed after 10 cache entries
    ({"METHODS": ["ddu", "ensemble", "ddu"]}, r"METHODS=\('ddu', 'ensemble', 'ddu'\) holds duplicates \('ddu'"),
    ({"LOSSES": ["ce", "ce"]}, r"LOSSES=\('ce', 'ce'\) holds duplicates \('ce' more than once\)"),
    ({"FIGURES_DIR": "/dev/null/figs"}, r"FIGURES_DIR='/dev/null/figs' is not a writable folder"),
    ({"NUM_DIRICHLET_DRAWS": 10**12}, r"needs about [\d,.]+ GB of memory, more than the [\d,.]+ GB available; the "
                                      r"largest part, the evidential Dirichlet draws.*NUM_DIRICHLET_DRAWS=10{12}"),
    ({"MC_SAMPLES": 10**9}, r"GB of memory.*MC-Dropout's softmax passes.*MC_SAMPLES=1000000000"),
    ({"WHOLE_WIDTHS": [10**5, 10**5, 10**5]}, r"GB of memory.*a whole network's.*WHOLE_WIDTHS=\(100000, 100000"),
]


class TestEveryNotebook(NotebookChecks):
    """The checks every notebook's tests make (tests/notebook_runner.py), with notebook 03's settings."""

    run = staticmethod(run)
    presets, bad_parameters = ex.PRESETS, BAD_PARAMETERS
    max_runtime_s = 180  # about 65 s on a 2-core machine (with a fresh cache)


def test_the_data_source_is_checked_in_the_configuration_cell(config_cell):
    """DATA_SOURCE="python" needs the lossless archive (not part of the workbook's data): its absence stops the
    configuration cell. (The stored whole networks, made from the JPEG copy, are keyed by their images, so they
    are never read for the lossless archive's.)"""
    from lib.data.cifar10 import PYTHON_ARCHIVE
    from lib.data.files import data_root

    if (data_root() / PYTHON_ARCHIVE).is_file():
        pytest.skip("the lossless archive is here: DATA_SOURCE='python' is a valid run")
    config_cell.assert_rejects({"DATA_SOURCE": "python"},
                               r"Data file cifar10/cifar-10-python.tar.gz is missing.*DATA_SOURCE='jpeg'")


def test_a_bad_parameter_stops_the_whole_notebook_run_before_any_work(tmp_path):
    assert_fails_fast(run, tmp_path, {"PRESET": "fast"}, "PRESET='fast' is not allowed")  # papermill's path


def test_a_missing_data_file_stops_the_configuration_cell(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_DATA", str(tmp_path / "empty"))
    assert_fails_fast(run, tmp_path, {}, "Data file cifar10/cifar10-jpeg.zip is missing")


@pytest.mark.full
def test_cpu_preset(tmp_path):
    """The default preset (about 5 minutes on an idle 2-core CPU): every method, all 10,000 CIFAR-10H rows."""
    r = run(tmp_path, "cpu", tmp_path / "cache", cell_timeout=3600, PRESET="cpu")
    assert r["n_train"] == 50_000 and r["n_test"] == 10_000
    for loss in ("ce", "zero_one"):
        for m in METHODS:
            assert r["table"][f"{loss}/{m}"]["accuracy_vs_argmax_p*"] > 0.75
    check_findings("03", r)  # the closing cells' findings (tests/findings.py, tests/reference/findings.json)
