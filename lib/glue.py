"""Result glue: record named results in a notebook, read them back from the executed copy.

In a notebook, `glue("auc_C4", 0.97)` displays the value as an output with its own MIME type (and a
readable text line). After papermill has run the notebook, `read_results("runs/01.ipynb")` returns
{"auc_C4": 0.97, ...}. Values must be JSON-serialisable after NumPy scalars and arrays are converted.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

MIME_TYPE = "application/vnd.workbook.result+json"


def to_jsonable(value: Any) -> Any:
    """NumPy scalars and arrays, tuples and nested dicts turned into plain JSON types."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None if np.isnan(value) else ("inf" if value > 0 else "-inf")
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"cannot glue a value of type {type(value).__name__}")


def glue(name: str, value: Any, *, display: bool = True) -> None:
    """Record `value` under `name` in the running notebook's outputs.

    With `display=False` the output carries only the result's own MIME type, which front ends and HTML
    reports do not render: the value is recorded silently (show the reader `summary_table` instead).
    """
    from IPython.display import display as show

    payload = to_jsonable(value)
    json.dumps(payload)  # fail here, not when the notebook is read back
    bundle = {MIME_TYPE: {name: payload}}
    if display:
        bundle["text/plain"] = f"{name} = {payload!r}"
    show(bundle, raw=True)


def _fmt(value: Any, digits: int) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v, digits) for v in value) + "]"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_fmt(v, digits)}" for k, v in value.items()) or "-"
    if isinstance(value, str) and len(value) > 60:
        return value[:57] + "..."
    return str(value)


def flatten(results: dict[str, Any], digits: int = 4, depth: int = 2) -> list[tuple[str, str]]:
    """(name, rounded value) rows of nested results: the keys of the first `depth` levels are joined with
    ' · ', deeper dicts are written inline ("key value, ..."), floats are rounded to `digits` significant
    digits and long strings shortened."""
    rows: list[tuple[str, str]] = []

    def walk(prefix: str, value: Any, level: int) -> None:
        if isinstance(value, dict) and value and level < depth:
            for k, v in value.items():
                walk(f"{prefix} · {k}" if prefix else str(k), v, level + 1)
        else:
            rows.append((prefix, _fmt(value, digits)))

    walk("", to_jsonable(results), 0)
    return rows


class Summary:
    """The reader's view of a notebook's results: a two-column table (result, value), shown whole (no
    pandas row limit) as HTML in front ends and reports and as aligned text elsewhere."""

    def __init__(self, rows: list[tuple[str, str]]):
        self.rows = rows

    def _repr_html_(self) -> str:
        from html import escape

        body = "".join(f"<tr><th style='text-align:left'>{escape(k)}</th><td style='text-align:left'>"
                       f"{escape(v)}</td></tr>" for k, v in self.rows)
        return f"<table><thead><tr><th>result</th><th>value</th></tr></thead><tbody>{body}</tbody></table>"

    def __repr__(self) -> str:
        width = max((len(k) for k, _ in self.rows), default=6)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in [("result", "value"), *self.rows])


def summary_table(results: dict[str, Any], digits: int = 4) -> Summary:
    """The rounded summary of `results` (see `flatten`)."""
    return Summary(flatten(results, digits))


def record(results: dict[str, Any], digits: int = 4) -> Summary:
    """Glue every entry of `results` silently and return the rounded summary table to display.

    The notebooks end with `record(headline)`: tests and `make run` read the exact values back with
    `read_results`, the reader sees one compact table.
    """
    for name, value in results.items():
        glue(name, value, display=False)
    return summary_table(results, digits)


def read_results(notebook: str | Path) -> dict[str, Any]:
    """Every glued {name: value} of an executed notebook (a later glue of the same name wins)."""
    with open(notebook, encoding="utf-8") as fh:
        nb = json.load(fh)
    results: dict[str, Any] = {}
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if MIME_TYPE in data:
                payload = data[MIME_TYPE]
                results.update(json.loads(payload) if isinstance(payload, str) else payload)
    return results


CLOCK_KEYS = re.compile(r"runtime|seconds|_s$|per_s$")  # glued timings: they differ between any two runs
CLOCK_LAST = ("imagenet_scale",)  # lists whose last element is a timing


def without_clocks(results: Any) -> Any:
    """`results` (read back with `read_results`) without the timings of the run, to compare two runs of the
    same configuration (a stored run against the run that stored it): keys matching CLOCK_KEYS are dropped,
    the last element of the lists named in CLOCK_LAST too."""
    if isinstance(results, dict):
        return {k: (without_clocks(v)[:-1] if k in CLOCK_LAST else without_clocks(v))
                for k, v in results.items() if not CLOCK_KEYS.search(str(k))}
    if isinstance(results, list):
        return [without_clocks(v) for v in results]
    return results
