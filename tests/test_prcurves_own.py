"""lib.prcurves.own: notebook 01's evaluation on your own generators, as a function and as a command, end to end on
the example files of docs/own-models.md, checked against the notebook's own functions; bad input refused by name."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from own_models_page import ROOT, page_argv

from lib import prcurves
from lib.prcurves import experiment as ex
from lib.prcurves import own
from lib.seeds import derive_seed

EXAMPLES = ROOT / "docs" / "examples" / "01"


def example() -> tuple[np.ndarray, dict[str, list[np.ndarray]]]:
    real = np.load(EXAMPLES / "real.npy")
    return real, {name: [np.load(EXAMPLES / f"{name}_{i}.npy") for i in range(4)] for name in ("sharp", "blurry")}


def test_the_pages_command_matches_the_notebooks_functions_on_the_example_files(tmp_path, capsys):
    assert own.main(page_argv("lib.prcurves.own", tmp_path)) == 0
    printed = capsys.readouterr().out
    report = json.loads((tmp_path / "results.json").read_text())
    assert (tmp_path / "figure.png").stat().st_size > 10_000 and "wrote" in printed
    real, ensembles = example()
    config = replace(ex.PRESETS["cpu"], alpha=0.05, num_permutations=report["settings"]["num_permutations"],
                     split_seed=0)
    results = {}
    for e, (name, members) in enumerate(ensembles.items()):  # notebook 01's steps, one by one
        curves = []
        for i, fake in enumerate(members):
            r, f = ex.evaluation_sets(real.astype(np.float64), fake.astype(np.float64))
            curves.append(prcurves.pr_curve(r, f, k=prcurves.default_k(len(r)), seed=derive_seed(0, e, i)))
        band = prcurves.ensemble_band(curves, config.grid_size, *config.band, dup_recall=config.dup_recall)
        results[name] = {"band": band}
        got = report["ensembles"][name]
        assert [m["auc_raw"] for m in got["members"]] == [prcurves.auc_raw(c) for c in curves]
        np.testing.assert_allclose(got["band"]["mean"], band["mean"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(got["band"]["lo"], band["lo"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(got["auc_grid"], band["auc"], rtol=0, atol=1e-12)
    rows = ex.compare_ensembles(results["sharp"], results["blurry"], config)
    assert [(r["test"], r["correction"], r["fraction"]) for r in rows] == [
        (r["test"], r["correction"], r["fraction"]) for r in report["comparison"]["tests"]]
    assert report["comparison"]["a"] == "sharp" and report["comparison"]["b"] == "blurry"
    paper = next(r for r in rows if r["test"] == "paired_t" and r["correction"] == "none")
    assert paper["fraction"] > 0.3  # the sharp ensemble is better on much of the curve


def test_one_npz_of_every_member_is_the_same_as_one_npy_per_member(tmp_path):
    real, ensembles = example()
    np.savez(tmp_path / "sharp.npz", **{f"m{i}": m for i, m in enumerate(ensembles["sharp"])})
    np.save(tmp_path / "real.npy", real)
    argv = ["--real", str(tmp_path / "real.npy"), "--ensemble", "sharp", str(tmp_path / "sharp.npz"),
            "--num-permutations", "99"]
    own.main([*argv, "--out", str(tmp_path / "a")])
    own.main([*argv[:3], "sharp", *(str(EXAMPLES / f"sharp_{i}.npy") for i in range(4)), *argv[5:],
              "--out", str(tmp_path / "b")])
    a, b = (json.loads((tmp_path / x / "results.json").read_text()) for x in "ab")
    assert a["ensembles"] == b["ensembles"] and a["comparison"] is None  # one ensemble: nothing to compare


def test_the_function_is_the_packages_and_returns_named_results():
    real, ensembles = example()
    report = prcurves.ensemble_report(real=real, ensembles={k: v[:2] for k, v in ensembles.items()},
                                      num_permutations=99, grid_size=50, show_progress=False)
    assert set(report["ensembles"]) == {"sharp", "blurry"} and len(report["ensembles"]["sharp"]["members"]) == 2
    tests = {(r["test"], r["correction"]) for r in report["comparison"]["tests"]}
    assert ("paired_t", "none") in tests and ("permutation_maxT", "none") in tests


def _save(tmp_path, name, arr):
    path = tmp_path / name
    np.save(path, arr)
    return str(path)


@pytest.mark.parametrize("case, message", [
    ("nan", r"--ensemble sharp \(.*bad\.npy\) holds 2 non-finite value\(s\) \(first at row 3, column 0"),
    ("dimension", r"ensemble 'sharp' member 1 has dimension D = 3, real has D = 2"),
    ("few", r"ensemble 'sharp' member 1 must be a finite \(n, D\) array with n >= 8"),
    ("one member", r"ensemble 'sharp' has 1 member\(s\); a band needs at least 2"),
    ("missing", r"--ensemble sharp: '.*nowhere\.npy' does not exist"),
    ("suffix", r"--ensemble sharp: '.*samples\.csv' is not a \.npy or \.npz file"),
    ("object", r"--ensemble sharp: '.*objects\.npy' could not be read as a plain numeric array"),
    ("strings", r"--ensemble sharp \(.*strings\.npy\) must hold numbers; its dtype is <U"),
    ("compare", r"compare=\('sharp', 'other'\) must name two different ensembles"),
])
def test_bad_input_is_refused_before_any_work_naming_the_file_and_the_problem(tmp_path, capsys, case, message):
    real, ensembles = example()
    good = str(EXAMPLES / "sharp_0.npy")
    bad = {"nan": lambda: _save(tmp_path, "bad.npy", np.where(np.arange(600)[:, None] == 3, np.nan, real)),
           "dimension": lambda: _save(tmp_path, "bad.npy", np.ones((600, 3))),
           "few": lambda: _save(tmp_path, "bad.npy", real[:5]),
           "missing": lambda: str(tmp_path / "nowhere.npy"),
           "suffix": lambda: str(tmp_path / "samples.csv"),
           "object": lambda: _save(tmp_path, "objects.npy", np.array([{"a": 1}], dtype=object)),
           "strings": lambda: _save(tmp_path, "strings.npy", np.array(["a", "b"]))}
    files = [good] if case == "one member" else [good, bad[case]()] if case in bad else [good, good]
    argv = ["--real", str(EXAMPLES / "real.npy"), "--ensemble", "sharp", *files, "--out", str(tmp_path / "out")]
    if case == "compare":
        argv += ["--compare", "sharp", "other"]
    with pytest.raises(SystemExit) as stop:
        own.main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m lib.prcurves.own") and __import__("re").search(message, err), err
    assert not (tmp_path / "out").exists()  # refused before any output
