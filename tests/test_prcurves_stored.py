"""The stored-curves file (lib.prcurves.stored): round trip of a small run's curves, and bad files refused."""

import json

import numpy as np
import pytest
import torch

from lib.prcurves import experiment as ex
from lib.prcurves import stored
from lib.run import Run


@pytest.fixture(scope="module")
def run(tmp_path_factory, monkeypatch_module):
    """Two tiny ensembles through the notebook's own pipeline (train, sample, PR curves), cached in tmp."""
    monkeypatch_module.setenv("WORKBOOK_CACHE", str(tmp_path_factory.mktemp("cache")))
    torch.set_num_threads(1)
    config = ex.resolve_config("smoke", n_train=300, complexities=[1, 2], compare=(2, 1), num_members=2, budget=20,
                               num_generated=120, small_complexities=[], train={"batch_size": 64})
    data = ex.ring_data(config)
    results = [ex.run_ensemble(config, complexity=c, data=data, num_steps=20, run=Run()) for c in config.complexities]
    return config, results


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


@pytest.fixture(autouse=True)
def results_root(tmp_path, monkeypatch):
    """The tests' files lie in tmp_path, made the results root: a CURVES_FILE is read only from there or the data
    root."""
    monkeypatch.setenv("WORKBOOK_RESULTS", str(tmp_path))


@pytest.fixture
def good_file(run, tmp_path):
    _, results = run
    return stored.save_curves(tmp_path / "curves.npz", results, {"preset": "smoke", "commit": "abc"})


def test_round_trip_gives_the_same_tables_and_tests(run, good_file):
    config, results = run
    loaded = stored.load_curves(good_file)
    assert loaded["meta"] == {"preset": "smoke", "commit": "abc"}
    assert loaded["precision"].shape == (2, 2, config.num_angles + 2)
    back = stored.stored_results(loaded, grid_size=config.grid_size, band=config.band, dup_recall=config.dup_recall)
    for original, restored in zip(results, back):
        assert restored["samples"] is None and restored["losses"] is None
        assert ex.summary_row(restored) == ex.summary_row(original)
        np.testing.assert_array_equal(restored["band"]["members"], original["band"]["members"])
    rows_original = ex.compare_ensembles(results[1], results[0], config)
    rows_back = ex.compare_ensembles(back[1], back[0], config)
    for a, b in zip(rows_original, rows_back):
        assert (a["test"], a["correction"], a["fraction"]) == (b["test"], b["correction"], b["fraction"])


def _rewrite(path, **changes):
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays.update(changes)
    for key in [k for k, v in changes.items() if v is None]:
        del arrays[key]
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize("changes, message", [
    ({"version": np.array(2)}, "version 2; this code reads version 1"),
    ({"format": np.array("something-else")}, "format"),
    ({"recall": None}, "lacks ['recall']"),
    ({"lambdas": np.zeros(5)}, "lambdas has shape (5,)"),
    ({"num_dropped": np.zeros((2, 3), dtype=np.int64)}, "num_dropped has shape (2, 3)"),
    ({"precision": np.zeros((2, 202))}, "precision has shape (2, 202)"),
    ({"complexity": np.array([1, 1]), "num_steps": np.array([20, 20])}, "share (complexity, n_train, num_steps)"),
])
def test_bad_files_are_refused_naming_the_problem(good_file, changes, message):
    _rewrite(good_file, **changes)
    with pytest.raises(ValueError, match="CURVES_FILE=") as err:
        stored.load_curves(good_file)
    assert message in str(err.value)


def test_precision_out_of_range_and_unreadable_files(good_file, tmp_path):
    with np.load(good_file) as npz:
        bad = npz["precision"].copy()
    bad[0, 0, 0] = 1.5
    _rewrite(good_file, precision=bad)
    with pytest.raises(ValueError, match=r"precision must be finite floats in \[0, 1\]"):
        stored.load_curves(good_file)
    with pytest.raises(ValueError, match="no such file"):
        stored.load_curves(tmp_path / "missing.npz")
    (tmp_path / "text.npz").write_text(json.dumps({"not": "npz"}))
    with pytest.raises(ValueError, match="not a readable .npz"):
        stored.load_curves(tmp_path / "text.npz")


def test_a_curves_file_outside_the_results_or_data_root_or_not_an_npz_is_refused_unread(good_file, tmp_path,
                                                                                        monkeypatch):
    """CURVES_FILE=/etc/passwd was opened (and only then found unreadable); a FIFO would block
    the notebook. A CURVES_FILE must be a regular .npz file inside results/ or the data root, links resolved."""
    import os

    outside = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    outside.mkdir()
    (outside / "curves.npz").write_bytes(good_file.read_bytes())
    (tmp_path / "link.npz").symlink_to(outside / "curves.npz")
    os.mkfifo(tmp_path / "pipe.npz")
    (tmp_path / "curves.json").write_text("{}")
    for path, message in [("/etc/passwd", r"is not a \.npz file"), (outside / "curves.npz", "lies outside"),
                          (tmp_path / "link.npz", "lies outside"), (tmp_path / "pipe.npz", "FIFO"),
                          (tmp_path / "curves.json", r"is not a \.npz file")]:
        with pytest.raises(ValueError, match=rf"^CURVES_FILE='{path}'.*{message}"):
            stored.load_curves(path)
    monkeypatch.setenv("WORKBOOK_DATA", str(outside))  # the data root is the other place a file may lie
    assert stored.load_curves(outside / "curves.npz")["meta"]["commit"] == "abc"


def test_notebook_results_take_the_files_ensembles(run, good_file):
    config, results = run
    other = ex.resolve_config("smoke")  # complexities (2, 4), 4 members: the file's replace them
    new_config, main, small = stored.notebook_results(stored.load_curves(good_file), other)
    assert new_config.complexities == (1, 2) and new_config.num_members == 2 and new_config.compare == (2, 1)
    assert new_config.n_train == len(ex.ring_data(config)["train"])
    assert small == {} and new_config.small_complexities == ()
    assert ex.summary_row(main[2]) == ex.summary_row(results[1])
