"""Result glue: record named results in a notebook, read them back from the executed copy.

In a notebook, `glue("auc_C4", 0.97)` displays the value as an output with its own MIME type (and a
readable text line). After papermill has run the notebook, `read_results("runs/01.ipynb")` returns
{"auc_C4": 0.97, ...}. Values must be JSON-serialisable after NumPy scalars and arrays are converted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lib.tables import reader_name

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
    """`value` as the summary shows it: floats to `digits` significant digits (whole numbers from 10**digits
    on), lists and dicts inline, long strings shortened, booleans as "yes"/"no" and None as "–"."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "–"
    if isinstance(value, float) and abs(value) >= 10 ** digits:
        return f"{value:.0f}"  # 12346, not 1.235e+04
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v, digits) for v in value) + "]"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_fmt(v, digits)}" for k, v in value.items()) or "-"
    if isinstance(value, str) and len(value) > 60:
        return value[:57] + "..."
    return str(value)


INLINE_ENTRIES = 8  # a dict of at most this many scalars is one row of the main table; a longer one, a table
ENTRY = "entry"  # the header above a result's table's row labels: the keys of the recorded dict


@dataclass
class Table:
    """One table of a summary: a caption (empty for the main table), the column names (the first names the row
    labels) and rows of formatted cells."""

    title: str
    columns: list[str]
    rows: list[list[str]]


class Summary:
    """The reader's view of a notebook's results: the scalars in a (result, value) table, each table-like result
    (a dict of records, or of lists whose entries `record` was given names for) in a table of its own, and the
    names of results recorded but not shown. Shown whole (no pandas row limit): HTML in front ends and reports,
    aligned text elsewhere."""

    def __init__(self, tables: list[Table], omitted: list[str] | None = None):
        self.tables = tables
        self.omitted = list(omitted or [])

    @property
    def rows(self) -> list[tuple[str, ...]]:
        """Every row of every table, its cells as tuples (the row label first)."""
        return [tuple(row) for table in self.tables for row in table.rows]

    def _repr_html_(self) -> str:
        from html import escape

        def table_html(table: Table) -> str:
            # the entries' names in the reader's words (lib.tables.READER_NAMES); the results' names, which
            # read_results returns, as code
            head = "".join(f"<th style='text-align:left'>{escape(str(reader_name(c)))}</th>" for c in table.columns)
            align = "right" if table.title else "left"  # the main table's values are mixed text
            body = "".join("<tr><th style='text-align:left'><code>" + escape(row[0]) + "</code></th>"
                           + "".join(f"<td style='text-align:{align}'>{escape(v)}</td>" for v in row[1:]) + "</tr>"
                           for row in table.rows)
            caption = f"<caption style='text-align:left'><code>{escape(table.title)}</code></caption>" \
                if table.title else ""
            return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

        html = "".join(table_html(t) for t in self.tables)
        if self.omitted:
            html += f"<p>{escape(self._omitted_line())}</p>"
        return html

    def _omitted_line(self) -> str:
        return "Also recorded (shown in the sections above): " + ", ".join(self.omitted) + "."

    def __repr__(self) -> str:
        parts = []
        for table in self.tables:
            cells = [table.columns, *table.rows]
            widths = [max(len(row[i]) for row in cells) for i in range(len(table.columns))]
            lines = ["  ".join(c.ljust(w) if i == 0 or not table.title else c.rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths))).rstrip() for row in cells]
            parts.append("\n".join(([table.title] if table.title else []) + lines))
        if self.omitted:
            parts.append(self._omitted_line())
        return "\n\n".join(parts)


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _labelled(value: list, names: Sequence[str] | None, digits: int) -> str:
    """A list inline, each entry after its name when `names` are given ('lower: 0.1, upper: 0.3')."""
    if names is None:
        return _fmt(value, digits)
    return ", ".join(f"{n}: {_fmt(v, digits)}" for n, v in zip(names, value))


def _check_names(name: str, value: Any, names: Sequence[str]) -> None:
    """`names` fit `value`: a list, or a dict of lists, of len(names) entries, or a dict of records that have
    each of the names among their keys."""
    entries = list(value.values()) if isinstance(value, dict) else [value]
    if entries and all(isinstance(v, dict) for v in entries):
        missing = [n for n in names if not any(n in v for v in entries)]
        if missing:
            raise ValueError(f"columns[{name!r}] names {missing}, which no record of {name!r} has "
                             f"(it has {sorted({k for v in entries for k in v})})")
        return
    if not entries or any(not isinstance(v, list) or len(v) != len(names) for v in entries):
        raise ValueError(f"columns[{name!r}] names {len(names)} entries ({', '.join(names)}), but {name!r} is "
                         f"not a list, or a dict of lists, of that length: {_fmt(value, 4)[:120]}")


def _needs_names(value: Any) -> bool:
    """A dict of equal-length lists of floats: a table whose columns only the notebook can name."""
    if not isinstance(value, dict) or not value:
        return False
    lists = list(value.values())
    return (all(isinstance(v, list) and len(v) >= 2 and all(isinstance(x, float) for x in v) for v in lists)
            and len({len(v) for v in lists}) == 1)


def _table(name: str, value: Any, names: Sequence[str] | None, digits: int) -> Table | None:
    """The table of a table-like result (a dict of records, whose columns `names` chooses, a dict of lists whose
    entries `names` names, a long dict of scalars or a list of records), else None (the result is one row of
    the main table)."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        value = {str(i): v for i, v in enumerate(value)}
    if not isinstance(value, dict) or not value:
        return None
    entries = list(value.items())
    if all(isinstance(v, dict) for _, v in entries):
        columns = list(names) if names is not None else list(dict.fromkeys(c for _, v in entries for c in v))
        rows = [[k, *(_fmt(v[c], digits) if c in v else "" for c in columns)] for k, v in entries]
        return Table(name, [ENTRY, *columns], rows)
    if names is not None:
        return Table(name, [ENTRY, *names], [[k, *(_fmt(x, digits) for x in v)] for k, v in entries])
    if len(entries) > INLINE_ENTRIES and all(_is_scalar(v) for _, v in entries):
        return Table(name, [ENTRY, "value"], [[k, _fmt(v, digits)] for k, v in entries])
    return None


def summary_table(results: dict[str, Any], digits: int = 3, *, columns: Mapping[str, Sequence[str]] | None = None,
                  shown: Sequence[str] | None = None, paper: Mapping[str, Any] | None = None) -> Summary:
    """The reader's summary of `results`: floats rounded to `digits` significant digits (the prose's 3), only the
    results in `shown` (default: all) displayed and the others named in one line. `columns` ({result: names})
    names the entries of a result's lists, or chooses the columns of a dict of records. `paper` ({result: the
    paper's value or a short text}) adds a "paper" column to the main table, beside our value.

    A shown dict of equal-length lists of floats must have its entries named in `columns`: unnamed, a row such
    as '[0.084, 0.063, 0.67]' cannot be read.
    """
    results, columns = to_jsonable(results), dict(columns or {})
    paper = dict(paper or {})
    unknown = sorted((set(columns) | set(shown or ()) | set(paper)) - set(results))
    if unknown:
        raise ValueError(f"summary_table: {unknown} are not among the results ({', '.join(results)})")
    for name, names in columns.items():
        _check_names(name, results[name], names)
    show_names = list(results) if shown is None else [n for n in results if n in set(shown)]
    unnamed = [n for n in show_names if n not in columns and _needs_names(results[n])]
    if unnamed:
        raise ValueError(f"summary_table: the lists of {unnamed} need names for their entries: pass "
                         f"columns={{{unnamed[0]!r}: (...)}}")
    main, tables = Table("", ["result", "value", *(["paper"] if paper else [])], []), []
    for name in show_names:
        value = results[name]
        table = _table(name, value, columns.get(name), digits)
        if table is not None:
            tables.append(table)
        else:
            ours = _labelled(value, columns.get(name), digits) if isinstance(value, list) else _fmt(value, digits)
            main.rows.append([name, ours, *([_fmt(to_jsonable(paper[name]), digits) if name in paper else ""]
                                            if paper else [])])
    return Summary(([main] if main.rows else []) + tables, [n for n in results if n not in show_names])


COLUMNS_KEY = "record_columns"  # the glued {entry: column names} of `record`'s `columns`


def record(results: dict[str, Any], digits: int = 3, *, columns: Mapping[str, Sequence[str]] | None = None,
           shown: Sequence[str] | None = None, paper: Mapping[str, Any] | None = None) -> Summary:
    """Glue every entry of `results` silently and return the rounded summary table to display.

    The notebooks end with `display(record(headline, columns=..., shown=...))`: tests and `make run` read the
    exact values back with `read_results`, the reader sees the headline results in a few short, labelled tables
    (see `summary_table`). The summary is built first, so a mislabelled headline fails before anything is glued.
    """
    summary = summary_table(results, digits, columns=columns, shown=shown, paper=paper)
    for name, value in results.items():
        glue(name, value, display=False)
    if columns:  # what each entry's lists hold, so that a results page labels them (lib.make.results)
        glue(COLUMNS_KEY, {name: list(names) for name, names in columns.items()}, display=False)
    return summary


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


class IncompleteRun(ValueError):
    """An executed notebook that cannot be published: not written by papermill, stopped on an error, or
    interrupted (killed) before its last cell; names the file."""


def run_problem(executed: str | Path) -> str | None:
    """Why the executed notebook `executed` is not a complete run, or None when it is one: papermill wrote it,
    recorded its end (metadata `duration`) and no exception, and every code cell completed (papermill's status
    of each cell; a run killed mid-way leaves 'pending' and 'running' cells and no duration)."""
    nb = json.loads(Path(executed).read_text(encoding="utf-8"))
    meta = nb.get("metadata", {}).get("papermill", {})
    if not meta:
        return f"{executed} was not written by papermill (`make run` writes the executed copies)"
    if meta.get("exception"):
        return f"{executed} is a run that stopped on an error (see its error cell)"
    code = [c for c in nb.get("cells", []) if c.get("cell_type") == "code"]
    unfinished = [c for c in code if c.get("metadata", {}).get("papermill", {}).get("status") != "completed"]
    if meta.get("duration") is None or unfinished:
        return (f"{executed} is a run that was interrupted ({len(unfinished)} of {len(code)} code cells did not "
                "complete, and papermill recorded no end): it was killed or stopped mid-way; run it again")
    return None


def read_complete_results(executed: str | Path) -> dict[str, Any]:
    """`read_results` of a complete run (`run_problem`); IncompleteRun, naming the file, otherwise."""
    problem = run_problem(executed)
    if problem:
        raise IncompleteRun(problem)
    return read_results(executed)


CLOCK_KEYS = re.compile(r"runtime|seconds|_s$|per_s$| min$")  # glued timings: they differ between any two runs
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
