"""lib.tables: what a displayed table prints, cell by cell (formatted), and its two-level headers (grouped)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib.tables import READER_NAMES, formatted, grouped, readable, reader_name, use_reader_names


def test_counts_print_as_whole_numbers_and_floats_to_the_asked_digits():
    table = pd.DataFrame({"AuRC": [2.05613, 0.23491], "ties_A*": [877.0, 958.0], "ok": [True, False],
                          "name": ["ce", "zero_one"], "paper": [0.1023, np.nan]}, index=["a", "b"])
    out = formatted(table, 4)
    assert out.to_dict("list") == {"AuRC": ["2.0561", "0.2349"], "ties_A*": ["877", "958"], "ok": ["yes", "no"],
                                   "name": ["ce", "zero_one"], "paper": ["0.1023", ""]}
    assert list(out.index) == ["a", "b"] and list(out.columns) == list(table.columns)


def test_significant_digits_keep_small_runtimes_readable():
    runtime = pd.DataFrame({"d": [2, 3], "crel_s": [0.000181, 0.000196], "ratio": [56.634764, 122.749832]})
    out = formatted(runtime, 3, significant=True)
    assert out.to_dict("list") == {"d": ["2", "3"], "crel_s": ["0.000181", "0.000196"], "ratio": ["56.6", "123"]}


def test_a_transposed_table_is_judged_per_row():
    side = pd.DataFrame({"C=2": [0.0876, 4.0], "C=4": [0.0813, 0.0]}, index=["auc_mean", "below_0.9"])
    assert formatted(side, 3, axis=1).to_dict("index") == {"auc_mean": {"C=2": "0.088", "C=4": "0.081"},
                                                           "below_0.9": {"C=2": "4", "C=4": "0"}}
    assert formatted(side, 3).loc["below_0.9", "C=2"] == "4.000"  # per column, a count mixed with AUCs


def test_grouped_puts_each_quantity_above_its_sub_columns_and_keeps_the_values():
    table = pd.DataFrame({"AuReC": [0.2, 0.3], "paper AuReC": [0.07, 0.1], "accuracy": [0.8, 0.7], "other": [1, 2]},
                         index=["a", "b"])
    out = grouped(table, {"accuracy": {"ours": "accuracy"}, "AuReC": {"ours": "AuReC", "paper": "paper AuReC"}})
    assert list(out.columns) == [("accuracy", "ours"), ("AuReC", "ours"), ("AuReC", "paper")]
    assert out[("AuReC", "paper")].tolist() == [0.07, 0.1] and out[("accuracy", "ours")].tolist() == [0.8, 0.7]
    assert list(out.index) == ["a", "b"]


def test_grouped_names_a_column_the_table_lacks():
    table = pd.DataFrame({"AuReC": [0.2]})
    with pytest.raises(KeyError, match="paper AuReC"):
        grouped(table, {"AuReC": {"ours": "AuReC", "paper": "paper AuReC"}})


def test_labelled_rows_name_their_labels_above_them():
    from lib.tables import labelled

    table = pd.DataFrame({"T": [0.5, 1.0], "ECE": [0.1, 0.2], "test": ["a", "b"]})
    one = labelled(table, "T")
    assert list(one.index) == [0.5, 1.0] and one.columns.name == "T" and one.index.name is None
    assert one.to_html().count("<tr") == 3  # the header row and two rows: no row for the index name
    two = labelled(table, ["T", "test"])
    assert list(two.index) == [(0.5, "a"), (1.0, "b")] and list(two.index.names) == ["T", "test"]
    names_row = two.to_html().split("<tr")[2]  # pandas' row of the index names, each above its own labels
    assert names_row.index(">T<") < names_row.index(">test<")


def test_reader_names_replace_code_names_word_by_word_and_leave_the_papers_notation():
    assert reader_name("auc_mean") == "mean AUC"
    assert reader_name("rank irs_adj") == "rank IRS_∞,a"  # a word inside a label
    assert reader_name("ce/mc_dropout") == "CE/MC-Dropout"
    assert reader_name("stratified_t+cosine_lr+batch128") == "stratified t+cosine LR+batch 128"
    assert reader_name("sampling_share") == "sampling share"  # not listed: its parts apart
    for notation in ("r_s(A*,E*)", "Bayes OOD p_ood/p_id", "N_TRAIN", "C = 2", "IRS_∞,a [interval]", 3, None):
        assert reader_name(notation) == notation  # an index in the papers' notation, a parameter, not a string
    changed_twice = [name for name in READER_NAMES if reader_name(reader_name(name)) != reader_name(name)]
    assert not changed_twice  # a reader's name is final: the check on the executed notebooks relies on it


def test_readable_renames_every_label_level_and_keeps_the_values():
    table = pd.DataFrame({("auc_mean", "fourier"): [0.91, 0.95], ("width", "mlp"): [0.1, 0.2]},
                         index=pd.MultiIndex.from_tuples([("ce", 1), ("zero_one", 2)], names=["loss", "n_train"]))
    table.columns.names = ["metric", "space"]
    out = readable(table)
    assert list(out.columns) == [("mean AUC", "Fourier"), ("width", "MLP")]
    assert list(out.index) == [("CE", 1), ("0/1", 2)]
    assert list(out.index.names) == ["loss", "n train"] and list(out.columns.names) == ["metric", "space"]
    assert out.to_numpy().tolist() == table.to_numpy().tolist()
    assert list(table.columns) == [("auc_mean", "fourier"), ("width", "mlp")]  # the table itself is unchanged


def test_use_reader_names_makes_a_displayed_frame_show_them():
    from types import SimpleNamespace

    from IPython.core.formatters import HTMLFormatter

    html = HTMLFormatter()
    use_reader_names(SimpleNamespace(display_formatter=SimpleNamespace(formatters={"text/html": html})))
    shown = html(pd.DataFrame({"coverage_z": [0.9]}, index=["cvae"]))
    assert "Coverage-Z" in shown and "CVAE" in shown and "coverage_z" not in shown


def test_readable_puts_one_row_labels_name_in_the_corner_and_keeps_several_above_their_labels():
    table = pd.DataFrame({"n": [3, 4], "coverage_z": [0.9, 0.8]}, index=pd.Index(["CReL", "Feldman"], name="method"))
    out = readable(table)
    assert out.columns.name == "method" and out.index.name is None
    assert out.to_html().count("<tr") == 1 + len(table)  # one header row: pandas draws none for the name
    assert table.index.name == "method"  # the table itself keeps it
    rows = pd.MultiIndex.from_tuples([("CReL", "0.8–1.2"), ("CReL", "1.2–1.6")], names=["method", "x"])
    two = readable(table.set_axis(rows))
    # pandas would draw a corner name above the last level only, leaving the first label column unnamed
    assert two.columns.name is None and list(two.index.names) == ["method", "x"]
    pivot = table.copy()
    pivot.columns.name = "score"  # a named header keeps its name; the rows keep theirs
    assert readable(pivot).columns.name == "score" and readable(pivot).index.name == "method"


def test_the_html_a_notebook_shows_has_no_python_values_and_no_default_row_numbers():
    from lib.tables import readable_html

    table = pd.DataFrame({"extractor": ["resnet20", "pixels"], "ok": [True, None], "value": [0.5, np.nan]})
    shown = readable_html(table)
    assert "<td>yes</td>" in shown and shown.count("<td>–</td>") == 2  # None and NaN
    assert "True" not in shown and "NaN" not in shown and "None" not in shown
    assert "<th>0</th>" not in shown and "<th>1</th>" not in shown  # pandas' 0, 1, … are no labels to read
    assert "<th>a</th>" in readable_html(table.set_axis(["a", "b"]))
    pivot = pd.DataFrame({"ema": [False, True], "auc": [0.8, 0.9]}).pivot_table(columns="ema", values="auc")
    assert list(readable(pivot).columns) == ["no", "yes"] and readable(pivot).columns.name == "EMA"


def test_a_boolean_column_reads_yes_or_no_and_the_problems_their_greek_names():
    import pandas as pd

    from lib.tables import readable, reader_name

    table = pd.DataFrame({"covers_g": [True, False], "irs_inf": [0.5, 0.6]}, index=["P_rho", "P_Ri/rho"])
    shown = readable(table)
    assert shown["covers g"].tolist() == ["yes", "no"] and shown.index.tolist() == ["P_ρ", "P_Ri/ρ"]
    assert table["covers_g"].dtype == bool  # the table itself is unchanged
    assert reader_name("P_Re") == "P_Re"


def test_the_parameters_table_shows_names_and_values_as_code_under_a_named_corner():
    from dataclasses import dataclass

    from lib.tables import resolved_table

    @dataclass(frozen=True)
    class Toy:
        preset: str = "a"
        seed: int = 0
        names: tuple = ("resnet20", "pixels")

    presets = {"a": Toy(), "b": Toy(preset="b", seed=5)}
    notebook = {"PRESET": "b", "SEED": None, "NAMES": None, "__annotations__": dict.fromkeys(["PRESET", "SEED",
                                                                                            "NAMES"])}
    shown = resolved_table(presets["b"], presets, notebook).to_html()
    assert "<code>SEED</code>" in shown and "<code>5</code>" in shown  # the preset b sets it: no second value
    assert "<code>[resnet20, pixels]</code>" in shown  # one cell of code, not a Python list in a sentence
    assert ">parameter</th>" in shown and "preset b where it differs" in shown
