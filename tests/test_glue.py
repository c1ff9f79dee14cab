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
    table = glue.record({"delta": -0.0014000000000000123, "auc": {"C4": [0.97123456, 0.01]}, "name": "x"})
    assert shown == [{glue.MIME_TYPE: {"delta": -0.0014000000000000123}},
                     {glue.MIME_TYPE: {"auc": {"C4": [0.97123456, 0.01]}}}, {glue.MIME_TYPE: {"name": "x"}}]
    assert table.rows == [("delta", "-0.0014"), ("auc · C4", "[0.9712, 0.01]"), ("name", "x")]
    assert "<th style='text-align:left'>auc · C4</th>" in table._repr_html_()
    deep = glue.summary_table({"table": {"CReL/0.1": {"coverage": 0.8931234, "area": 115.0}}})
    assert deep.rows == [("table · CReL/0.1", "coverage 0.8931, area 115")]  # deeper levels inline


def test_without_clocks_drops_the_runs_timings_and_keeps_its_results():
    from lib.glue import without_clocks

    results = {"auc": 0.9, "runtime_s": 12.0, "feature_seconds": {"pixels": 1.0}, "sentences_per_s": 300.0,
               "imagenet_scale": [0.7, 0.73, 0.76, 0.01], "runtime": {"2": [0.1, 0.2]},
               "rows": [{"crel_s": 1.0, "coverage": 0.9}], "steps": {"1": 8000}}
    assert without_clocks(results) == {"auc": 0.9, "imagenet_scale": [0.7, 0.73, 0.76],
                                       "rows": [{"coverage": 0.9}], "steps": {"1": 8000}}
