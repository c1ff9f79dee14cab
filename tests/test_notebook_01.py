"""Notebook 01 run by papermill: the smoke preset's recorded results, determinism, and fast failures."""

from __future__ import annotations

import shutil

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

from lib.prcurves import experiment as ex
from lib.prcurves import paper

run = notebook_runner("01_ensemble_pr_curves.ipynb")
VOLATILE = {"runtime_s", "device"}




smoke = smoke_fixture(run)
config_cell = config_cell_fixture(run)


def test_feature_space_dependence(smoke):
    """The stored samples re-evaluated in three fixed embeddings: the plane's own row reproduces the main table
    (same splits, same seeds), the isotropic ring barely moves when standardised, and the reading states the
    recorded shares."""
    r, text = smoke["results"], reading_outputs(smoke["notebook"])["reading-spaces"]
    facts, rows = r["feature_spaces"], r["feature_space_rows"]
    assert set(facts) == {"plane", "standardised", "fourier", "mlp"}
    for C, (auc, _sd) in r["auc_raw"].items():
        assert rows[f"plane/C{C}"][0] == pytest.approx(auc, abs=1e-12)
        assert rows[f"plane/C{C}"][1] == pytest.approx(r["band_width"][C], abs=1e-12)
    assert facts["plane"]["fraction"] == pytest.approx(r["fraction_significant"]["paired_t/none"])
    assert facts["standardised"]["width_ratio"] == pytest.approx(1, abs=0.2)
    for f in facts.values():
        assert 0 <= f["fraction"] <= 1 and f["width_ratio"] > 0 and f["best_C"] in (2, 4)
    assert f"{100 * facts['mlp']['fraction']:.1f} % (MLP)" in text  # the space in the reader's words


def test_reading_cells_state_the_recorded_results(smoke):
    """The text that states the run's numbers is rendered by the run: each reading cell wrote Markdown, and the
    numbers in it are the recorded (glued) results, formatted as the text gives them; the budget study's are the
    committed CSV's."""
    import csv

    from lib.prcurves import budget

    text, r = reading_outputs(smoke["notebook"]), smoke["results"]
    assert set(text) == {"reading-table", "reading-table-claims", "reading-budget-study", "reading-figure-3",
                         "reading-figure-4", "reading-decomposition", "reading-spaces", "reading-members",
                         "reading-families", "reading-former-presets", "reading-budget-intro", "reading-cpu-preset",
                         "reading-frontier-intro", "frontier-reading"}
    # the paper's and the recipe's numbers, said from their names (not typed in the Markdown)
    words = {name: " ".join(said.split()) for name, said in text.items()}
    assert f"EMA {budget.EMA_DECAY}, batch 128" in words["reading-cpu-preset"]
    assert (f"{paper.TABLE[1]['below_0.9']} of {paper.MEMBERS} C = 1 members and {paper.TABLE[8]['below_0.9']} of "
            f"{paper.MEMBERS} C = 8 members below AUC {paper.FAILED_AUC}") in words["reading-frontier-intro"]
    study = r["members_study"]  # the smoke preset's M = 4: one row of ours, the paper's 30 beside it
    assert set(study) == {"4 (ours)", "30 (paper)"}
    assert study["4 (ours)"]["paired_t"] == r["fraction_significant"]["paired_t/none"]  # Figure 3's, recomputed
    assert study["4 (ours)"]["permutation_maxT"] == r["fraction_significant"]["permutation_maxT/none"]
    members_text = " ".join(text["reading-members"].split())
    assert f"on {100 * study['4 (ours)']['paired_t']:.1f} % of the recall grid" in members_text
    aucs = " / ".join(f"{mean:.3f}" for mean, _ in r["auc_raw"].values())
    assert f"mean AUC **{aucs}** for C = 2 / 4" in text["reading-table"]
    assert f"mean band width {' / '.join(f'{w:.3f}' for w in r['band_width'].values())}" in text["reading-table"]
    fractions = r["fraction_significant"]
    assert f"**{100 * fractions['paired_t/none']:.1f} %** of the recall grid" in text["reading-figure-3"]
    assert f"on {100 * fractions['permutation_maxT/none']:.1f} %." in text["reading-figure-3"]
    large, same_epochs = r["fig4"]["C4/n2000/-"], r["fig4"]["C4/n1000/epochs"]
    assert f"gives AUC {large[0]:.3f} and band width {large[1]:.3f}" in text["reading-figure-4"]
    assert f"gives AUC {same_epochs[0]:.3f} and width {same_epochs[1]:.3f}" in text["reading-figure-4"]
    shares = " / ".join(f"{100 * r['sampling_share'][f'C{C}/resplit']:.0f} %" for C in (2, 4))
    assert f"**{shares}** with re-splits" in text["reading-decomposition"]
    families = r["families"]  # the smoke preset's 2 members of each family beside the DDPMs' first 2
    assert set(families) == {"DDPM C = 2", "DDPM C = 4", "VAE", "flow (NSF)"}
    for name in ("VAE", "flow (NSF)"):
        assert f"the {name} band is {families[name][1]:.3f} wide" in " ".join(text["reading-families"].split())
    with open(budget.STUDY_CSV, newline="") as fh:
        authors = {r["ema"]: float(r["auc_mean"]) for r in csv.DictReader(fh)
                   if (r["variant"], r["C"], r["steps"]) == ("paper", "2", "1000")}
    assert f"{authors['False']:.2f} / {authors['True']:.2f} for C = 2" in text["reading-budget-study"]


def test_smoke_run_records_its_results(smoke):
    r = smoke["results"]
    assert r["preset"] == "smoke" and r["num_members"] == 4 and r["steps"] == {"2": 200, "4": 200}
    assert set(r["auc_raw"]) == {"2", "4"}
    for mean, sd in r["auc_raw"].values():
        assert 0.0 <= mean <= 1.0 and sd >= 0.0
    assert all(0.0 <= w <= 1.0 for w in r["band_width"].values())
    assert all(0 <= n <= 4 for n in r["below_0.9"].values())
    assert 0.0 <= r["auc_welch_p"] <= 1.0 and 0.0 <= r["auc_mannwhitney_p"] <= 1.0
    assert set(r["fig4"]) == {"C4/n2000/-", "C4/n1000/steps", "C4/n1000/epochs"}
    assert set(r["sampling_share"]) == {f"C{C}/{m}" for C in (2, 4) for m in ("resplit", "bootstrap")}
    assert all(0.0 <= s <= 1.0 for s in r["sampling_share"].values())


def test_corrections_never_find_more_than_the_uncorrected_test(smoke):
    fractions = smoke["results"]["fraction_significant"]
    assert len(fractions) == 9
    for test in ("paired_t", "student", "welch", "wilcoxon"):
        assert fractions[f"{test}/bh"] <= fractions[f"{test}/none"]


def test_the_smoke_run_trains_a_tiny_frontier_study_and_records_its_failure_counts(smoke):
    """The smoke preset's frontier study (2 members of C = 1 at 20 and 40 steps of the authors' recipe; the cpu
    preset's is stored, tests/test_prcurves_budget.py): its glued counts are those of its rows."""
    glued = smoke["results"]["authors_recipe"]
    assert set(glued) == {"C1"}
    c1 = glued["C1"]
    assert c1["steps"] == [20, 40] and c1["members"] == 2 and len(c1["below"]) == 2
    assert all(0 <= b <= 2 for b in c1["below"]) and c1["final_below"] == c1["below"][-1]


def test_same_seed_gives_identical_results_and_the_cache_reproduces_them(smoke, tmp_path):
    """A second run that samples and evaluates afresh from the same trained ensembles, and a run from the whole
    cache, record the smoke run's results. (That training itself repeats under the same seed, bit for bit, is
    `test_prcurves_ddpm.py::test_members_differ_and_same_seed_repeats`; retraining here would double the test's
    cost.)"""
    tmp = smoke["tmp"]
    models_only = tmp_path / "models-only-cache" / "01"
    models_only.mkdir(parents=True)
    ensembles = sorted((tmp / "cache" / "01").glob("ensemble-*"))
    assert ensembles
    for path in ensembles:
        shutil.copy(path, models_only)
    fresh = run(tmp_path, "second", models_only.parent)
    assert {p.name for p in models_only.glob("samples-*")}  # it sampled again
    cached = run(tmp_path, "cached", tmp / "cache")
    strip = lambda r: {k: v for k, v in r.items() if k not in VOLATILE}  # noqa: E731
    assert strip(fresh) == strip(smoke["results"])
    assert strip(cached) == strip(smoke["results"])
    assert cached["runtime_s"] < smoke["results"]["runtime_s"]


def test_stored_curves_reproduce_the_smoke_run_without_training(smoke, tmp_path, monkeypatch):
    """CURVES_FILE: the curves of the smoke run, stored by `python -m lib.prcurves.stored` (every ensemble from the
    smoke run's cache), give the same tables and tests, and the notebook trains nothing."""
    import sys

    from lib.prcurves import stored

    curves = tmp_path / "curves-smoke.npz"
    monkeypatch.setenv("WORKBOOK_RESULTS", str(tmp_path))  # a CURVES_FILE is read from the results or data root
    monkeypatch.setenv("WORKBOOK_CACHE", str(smoke["tmp"] / "cache"))
    monkeypatch.setattr(sys, "argv", ["stored", "--preset", "smoke", "--device", "cpu", "--out", str(curves)])
    stored.main()
    assert stored.load_curves(curves)["precision"].shape[:2] == (4, 4)  # C = 2, 4 at n = 2000; C = 4 twice at n = 1000
    r = run(tmp_path, "stored", tmp_path / "empty-cache", CURVES_FILE=str(curves))
    for key in ("num_members", "steps", "auc_raw", "band_width", "below_0.9", "fraction_significant", "fig4",
                "auc_welch_p"):
        assert r[key] == smoke["results"][key], key
    assert r["sampling_share"] == {} and r["curves_file"] == str(curves)
    assert not list((tmp_path / "empty-cache").rglob("ensemble-*"))


BAD_PARAMETERS = [
    ({"PRESET": "fast"}, "PRESET='fast' is not allowed"),
    ({"COMPLEXITIES": [0, 2]}, "COMPLEXITIES entry=0"),
    ({"NUM_MEMBERS": 1}, "NUM_MEMBERS=1 must be >= 2"),  # the config's field is num_members
    ({"ALPHA": 1.5}, "ALPHA=1.5 must lie in"),
    ({"RING_S_IS_VARIANCE": "false"}, "RING_S_IS_VARIANCE='false' must be True or False"),
    ({"NUM_MEMBER": 3}, r"unknown parameter\(s\): NUM_MEMBER \(did you mean NUM_MEMBERS\?\)"),
    ({"COMPLEXITIES": 4}, "COMPLEXITIES=4 must be a list"),
    ({"NUM_THREADS": 0}, "NUM_THREADS=0 must be >= 1"),
    ({"CURVES_FILE": "missing.npz"}, "CURVES_FILE='missing.npz': no such file"),
    ({"CURVES_FILE": "/etc/passwd"}, r"CURVES_FILE='/etc/passwd' is not a \.npz file"),  # before: read, then refused
    ({"NUM_THREADS": 10**6}, r"NUM_THREADS=1000000 must be <= \d+"),  # before: passed, to set_threads
    ({"T_SAMPLING": "uniform"}, "T_SAMPLING='uniform' is not allowed"),
    ({"EMA_DECAY": 1.0}, "EMA_DECAY=1.0 must lie in"),
    ({"NUM_GENERATED": 5_000}, "NUM_GENERATED=5000 must be <= 2000"),
    ({"TRUNC_FACTOR": float("inf")}, "TRUNC_FACTOR=inf must be a finite real number"),
    ({"COMPLEXITIES": [2, 4, 2]}, r"COMPLEXITIES=\(2, 4, 2\) holds duplicates \(2 more than once\)"),
    ({"FIGURES_DIR": "/dev/null/figs"}, r"FIGURES_DIR='/dev/null/figs' is not a writable folder"),
    ({"N_TRAIN": 10**12}, r"needs about [\d,.]+ GB of memory, more than the [\d,.]+ GB available; the largest "
                          r"part, the members' training draws.*N_TRAIN=1000000000000, NUM_MEMBERS=4 and "
                          r"BATCH_SIZE=500"),
    ({"BUDGET": 10**12}, r"GB of memory.*the training losses of every step and member.*BUDGET=1000000000000"),
    ({"BATCH_SIZE": 10**9}, r"GB of memory.*BATCH_SIZE=1000000000"),
]


class TestEveryNotebook(NotebookChecks):
    """The checks every notebook's tests make (tests/notebook_runner.py), with notebook 01's settings."""

    run = staticmethod(run)
    presets, bad_parameters = ex.PRESETS, BAD_PARAMETERS
    checked_by_name = frozenset({"CURVES_FILE"})
    max_runtime_s = 240  # about 40 s on an idle 2-core machine


def test_a_bad_parameter_stops_the_whole_notebook_run_before_any_training(tmp_path):
    assert_fails_fast(run, tmp_path, {"NUM_MEMBER": 3}, r"unknown parameter\(s\): NUM_MEMBER")  # papermill's path


@pytest.mark.full
def test_cpu_preset_findings(tmp_path):
    """The default preset (the budget study's settings; estimated 15-20 minutes on 2 idle cores, timed only on a shared
    machine so far): the findings its markdown states.

    Skipped unless `pytest --run-full` because it trains 48 DDPM members."""
    r = run(tmp_path, "cpu", tmp_path / "cache", cell_timeout=3600, PRESET="cpu")
    assert r["num_members"] == 8 and set(r["auc_raw"]) == {"1", "2", "4", "8"}
    fig4 = r["fig4"]
    assert fig4["C4/n2496/epochs"][0] < fig4["C4/n2496/steps"][0]  # A2: 4x fewer steps at the same epochs
    # converged members: the estimator's sampling noise is most of the ensemble spread (the text's finding)
    assert all(share > 0.5 for share in r["sampling_share"].values())
    assert r["runtime_s"] < 25 * 60
    check_findings("01", r)  # the table's and Figure 3's stated findings (tests/findings.py)
