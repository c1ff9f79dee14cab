"""Tables as the reader sees them: numbers rounded to what they mean, counts as whole numbers, blanks for
missing values. The notebooks display `formatted(...)` instead of `table.round(n)`, whose float columns print
counts as `877.0` and whose fixed decimals print a runtime of 0.000181 s as `0.0002`."""

from __future__ import annotations

import math
from numbers import Integral, Real

import pandas as pd


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
