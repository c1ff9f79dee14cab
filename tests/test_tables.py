"""lib.tables.formatted: what a displayed table prints, cell by cell."""

from __future__ import annotations

import numpy as np
import pandas as pd

from lib.tables import formatted


def test_counts_print_as_whole_numbers_and_floats_to_the_asked_digits():
    table = pd.DataFrame({"AuRC": [2.05613, 0.23491], "ties_A*": [877.0, 958.0], "ok": [True, False],
                          "name": ["ce", "zero_one"], "paper": [0.1023, np.nan]}, index=["a", "b"])
    out = formatted(table, 4)
    assert out.to_dict("list") == {"AuRC": ["2.0561", "0.2349"], "ties_A*": ["877", "958"], "ok": ["True", "False"],
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
