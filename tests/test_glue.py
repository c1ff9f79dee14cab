import json

import nbformat
import numpy as np
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from lib import glue


def test_glued_values_read_back(tmp_path):
    outputs = []
    for name, value in [("auc", np.float32(0.5)), ("curve", np.arange(3)), ("auc", 0.75), ("nan", float("nan"))]:
        payload = glue.to_jsonable(value)
        outputs.append(new_output("display_data", data={glue.MIME_TYPE: {name: payload}, "text/plain": "x"}))
    nb = new_notebook(cells=[new_code_cell("x", outputs=outputs)])
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    assert glue.read_results(path) == {"auc": 0.75, "curve": [0, 1, 2], "nan": None}


def test_unserialisable_value_is_refused():
    with pytest.raises(TypeError, match="cannot glue"):
        glue.to_jsonable(object())


def test_glue_displays_mime_bundle(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, raw: shown.append(obj))
    glue.glue("fraction", np.float64(0.25))
    assert shown[0][glue.MIME_TYPE] == {"fraction": 0.25}
    json.dumps(shown[0])


def test_silent_glue_has_no_text_and_record_shows_a_rounded_table(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, raw: shown.append(obj))
    table = glue.record({"delta": -0.0014000000000000123, "auc": {"C4": [0.97123456, 0.01]}, "name": "x"},
                        columns={"auc": ("mean", "sd")})
    assert shown == [{glue.MIME_TYPE: {"delta": -0.0014000000000000123}},
                     {glue.MIME_TYPE: {"auc": {"C4": [0.97123456, 0.01]}}}, {glue.MIME_TYPE: {"name": "x"}},
                     {glue.MIME_TYPE: {glue.COLUMNS_KEY: {"auc": ["mean", "sd"]}}}]  # a results page labels them
    assert table.tables[0].rows == [["delta", "-0.0014"], ["name", "x"]]
    assert (table.tables[1].title, table.tables[1].columns, table.tables[1].rows) == (
        "auc", ["entry", "mean", "sd"], [["C4", "0.971", "0.01"]])  # the glued list, its entries named
    html = table._repr_html_()
    assert "<th style='text-align:left'>mean</th>" in html and "<code>auc</code></caption>" in html
    assert "<th style='text-align:left'><code>delta</code></th>" in html  # a result's name: what read_results gives
    deep = glue.summary_table({"table": {"CReL/0.1": {"coverage_z": 0.8931234, "area": 115.0}}})
    assert "<th style='text-align:left'>Coverage-Z</th>" in deep._repr_html_()  # an entry's name: the reader's
    deep = glue.summary_table({"table": {"CReL/0.1": {"coverage": 0.8931234, "area": 115.0}}})
    assert deep.tables[0].columns == ["entry", "coverage", "area"]  # a dict of records: one table, its keys as columns
    assert deep.rows == [("CReL/0.1", "0.893", "115")]


def test_headline_lists_without_entry_names_are_refused_before_anything_is_glued(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, raw: shown.append(obj))
    with pytest.raises(ValueError, match=r"\['e2_fit'\] need names.*columns=\{'e2_fit'"):
        glue.record({"e2_fit": {"pixels/a/irs_inf": [0.08426, 0.06325, 0.6681]}})
    with pytest.raises(ValueError, match=r"columns\['e2_fit'\] names 2 entries \(slope, r2\)"):
        glue.record({"e2_fit": {"pixels/a/irs_inf": [0.08426, 0.06325, 0.6681]}}, columns={"e2_fit": ("slope", "r2")})
    assert shown == []
    # lists of integers (indices, seeds) and of unequal length are no table: they stay inline
    inline = glue.summary_table({"seeds": [0, 1], "collapsed": {"cvae/seed 0": [1, 2], "cvae/seed 1": [0]}})
    assert inline.rows == [("seeds", "[0, 1]"), ("collapsed", "cvae/seed 0: [1, 2], cvae/seed 1: [0]")]


def test_summary_shows_the_chosen_results_and_names_the_others():
    results = {"preset": "smoke", "auc": 0.5, "per_seed": [{"seed": 0, "area": 12.0}], "runtime_s": 1.0}
    summary = glue.summary_table(results, shown=["preset", "auc"])
    assert summary.rows == [("preset", "smoke"), ("auc", "0.5")]
    assert summary.omitted == ["per_seed", "runtime_s"]
    assert "Also recorded (shown in the sections above): per_seed, runtime_s." in repr(summary)
    with pytest.raises(ValueError, match=r"\['aucs'\] are not among the results"):
        glue.summary_table(results, shown=["aucs"])


def test_summary_rounds_to_what_the_numbers_mean():
    summary = glue.summary_table({"ratio": 74.295183, "ties": 877.0, "n": 50_000, "seconds": 12345.678,
                                  "small": 1.23456e-5, "imagenet": [0.1234567, 0.2, 0.3]},
                                 columns={"imagenet": ("lower", "estimate", "upper")})
    assert dict(summary.rows) == {"ratio": "74.3", "ties": "877", "n": "50000", "seconds": "12346",
                                  "small": "1.23e-05", "imagenet": "lower: 0.123, estimate: 0.2, upper: 0.3"}


def test_the_headline_shows_the_papers_value_beside_ours_where_it_has_one():
    summary = glue.summary_table({"share": 0.27712, "auc": 0.98, "preset": "cpu"}, paper={"share": 0.442, "auc": "—"})
    assert summary.tables[0].columns == ["result", "value", "paper"]
    assert summary.rows == [("share", "0.277", "0.442"), ("auc", "0.98", "—"), ("preset", "cpu", "")]
    assert glue.summary_table({"share": 0.5}).tables[0].columns == ["result", "value"]  # no paper, no column
    with pytest.raises(ValueError, match=r"\['typo'\] are not among the results"):
        glue.summary_table({"share": 0.5}, paper={"typo": 1})


def test_columns_choose_what_a_table_of_records_shows():
    table = {"CReL/0.1": {"coverage_z": 0.888, "area": 101.7, "gamma": 0.78}, "Feldman/0.1": {"area": 285.5}}
    summary = glue.summary_table({"table": table}, columns={"table": ("coverage_z", "area")})
    assert summary.tables[0].columns == ["entry", "coverage_z", "area"]
    assert summary.rows == [("CReL/0.1", "0.888", "102"), ("Feldman/0.1", "", "286")]
    with pytest.raises(ValueError, match=r"columns\['table'\] names \['coverage'\], which no record"):
        glue.summary_table({"table": table}, columns={"table": ("coverage",)})


def test_without_clocks_drops_the_runs_timings_and_keeps_its_results():
    from lib.glue import without_clocks

    results = {"auc": 0.9, "runtime_s": 12.0, "feature_seconds": {"pixels": 1.0}, "sentences_per_s": 300.0,
               "imagenet_scale": [0.7, 0.73, 0.76, 0.01], "runtime": {"2": [0.1, 0.2]},
               "rows": [{"crel_s": 1.0, "coverage": 0.9, "train min": 3.2}], "steps": {"1": 8000}}
    assert without_clocks(results) == {"auc": 0.9, "imagenet_scale": [0.7, 0.73, 0.76],
                                       "rows": [{"coverage": 0.9}], "steps": {"1": 8000}}
