"""Tables as the reader sees them: numbers rounded to what they mean, counts as whole numbers, blanks for
missing values. The notebooks display `formatted(...)` instead of `table.round(n)`, whose float columns print
counts as `877.0` and whose fixed decimals print a runtime of 0.000181 s as `0.0002`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Integral, Real
from typing import Any

import pandas as pd

from lib.params import resolved_parameters


def _whole(values: pd.Series) -> bool:
    """True when every present value is a whole number (a count), bools excluded."""
    present = [v for v in values if not _missing(v)]
    return bool(present) and all(isinstance(v, Real) and not isinstance(v, bool) and float(v).is_integer()
                                 for v in present)


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _cell(value: object, digits: int, significant: bool, whole: bool) -> str:
    if _missing(value):
        return ""
    if isinstance(value, bool) or not isinstance(value, Real):
        return str(value)
    if whole or isinstance(value, Integral):
        return f"{int(value)}"
    return f"{value:.{digits}g}" if significant else f"{value:.{digits}f}"


def formatted(table: pd.DataFrame, digits: int = 3, *, significant: bool = False, axis: int = 0) -> pd.DataFrame:
    """`table` with every cell a string: floats to `digits` decimals (`significant`: significant digits), a column
    whose present values are all whole numbers as integers (`axis=1`: judged per row, for a transposed table
    whose rows are the quantities), missing values blank. Index and columns are kept."""
    if axis == 1:
        return formatted(table.T, digits, significant=significant).T
    out = pd.DataFrame(index=table.index, columns=table.columns, dtype=object)
    for i in range(table.shape[1]):
        values = table.iloc[:, i]
        whole = _whole(values)
        out.iloc[:, i] = [_cell(v, digits, significant, whole) for v in values]
    return out


def grouped(table: pd.DataFrame, groups: dict[str, dict[str, str]]) -> pd.DataFrame:
    """`table`'s columns under two-level headers, so that a table of ours-beside-the-paper's values fits the page:
    the quantity's name is written once above its short sub-columns instead of in every column's header.

    groups: {top header: {sub-header: a column of `table`}}, in display order; a column of `table` named nowhere
    is left out, and a name that `table` lacks is an error (a renamed column would otherwise vanish silently).
    """
    missing = [column for subs in groups.values() for column in subs.values() if column not in table.columns]
    if missing:
        raise KeyError(f"grouped: columns not in the table: {missing}")
    pairs = [(top, sub, column) for top, subs in groups.items() for sub, column in subs.items()]
    out = table[[column for _, _, column in pairs]].copy()
    out.columns = pd.MultiIndex.from_tuples([(top, sub) for top, sub, _ in pairs])
    return out


def resolved_table(config: Any, presets: Mapping[str, Any], namespace: Mapping[str, Any]) -> pd.DataFrame:
    """The table after a notebook's configuration cell: the value this run uses for each parameter that sets its
    config (a parameter left None shows the preset's), and the preset's value where the run's differs
    (`lib.params.resolved_parameters`)."""
    rows = resolved_parameters(config, presets, namespace)
    table = pd.DataFrame(rows, columns=["parameter", "value", "preset"]).set_index("parameter")
    table.columns = ["this run", f"preset {config.preset!r} where it differs"]
    table.index.name = None
    return table


def labelled(table: pd.DataFrame, by: str | list[str]) -> pd.DataFrame:
    """`table` with its columns `by` as the row labels, drawn without a header row of their own (pandas gives index
    names one, empty but for them): one label column's name moves to the header's corner cell; the names of
    several are dropped, their values saying what they are ("paired_t", "bh")."""
    out = table.set_index(by)
    if isinstance(by, str):
        out.columns.name, out.index.name = by, None
    else:
        out.index.names = [None] * len(by)
    return out
