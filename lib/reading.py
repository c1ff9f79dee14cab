"""Reading cells: the sentences of a notebook that state its own run's numbers, rendered from the run.

A notebook explains its figures and tables in Markdown. Where a sentence states a number of the run (a mean
AUC, a coverage, a share of the grid), the sentence is written by a *reading cell* instead: a code cell tagged
`reading` and `remove-input`, whose input is collapsed in JupyterLab (cell metadata
`"jupyter": {"source_hidden": true}`), that says Markdown rendered from the run's variables::

    say(readings.gap_reading(gap, config, n_train))

The sentence itself is a section of the paper's `docs/results/templates/readings-NN.md` (`lib.templates.Readings`),
filled from the facts the package's readings module computes; the helpers below (`num`, `pct`, `span`, `compare`,
...) are what those templates format with.

Why reading cells, not MyST-NB's `glue` roles: a reading cell's output is an ordinary `text/markdown` display,
which JupyterLab, the HTML report (`lib.make.report`, which hides the inputs of cells tagged `remove-input`),
papermill's executed copy and a MyST-NB book all render the same way, with no role resolver that only the
book has (in JupyterLab a `{glue}` role is shown as its raw text). And the text is recomputed on every run,
so it stays true after a rerun with another preset or other parameters; a number typed into Markdown would
not. What stays literal in the Markdown is what the run does not produce and no code names (the spec's
constants, dated records of other runs; a number the code names, the paper's above all, is said by a reading cell
from that name: `typed_twice`); each such number is declared with its source in the notebook's
metadata, `metadata["workbook"]["literals"]`, and `tests/test_reading.py` fails on any decimal number or
percentage in a Markdown cell (or in the fixed text of a reading cell) that is not declared there.

A reading cell must not fail when its section was skipped (a preset without that stage, an empty table):
it says so instead (`skipped`).
"""

from __future__ import annotations

import ast
import math
import numbers
import re
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

TAGS = ("reading", "remove-input")
CELL_METADATA = {"tags": list(TAGS), "jupyter": {"source_hidden": True}}
LITERALS_KEY = ("workbook", "literals")


def say(text: str) -> None:
    """Display `text` (Markdown, dedented and stripped) as the cell's output: `text/markdown` for front ends,
    reports and books, the same text as `text/plain` for consoles. A generated set's short label in it ("class c32
    100% w2") is said in words, and so is every code name in its prose ("resnet20": "ResNet-20";
    `lib.tables.in_readers_words`)."""
    from IPython.display import display

    from lib.tables import in_readers_words

    body = in_readers_words(textwrap.dedent(text).strip())
    display({"text/markdown": body, "text/plain": body}, raw=True)


def num(value: Any, digits: int = 3) -> str:
    """`value` with `digits` decimals; "n/a" for None or NaN (a quantity this run did not measure)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def pct(value: float, digits: int = 0) -> str:
    """A share as a percentage with a thin space: 0.277 -> "27.7 %" (digits=1)."""
    return "n/a" if value is None or math.isnan(value) else f"{100 * value:.{digits}f} %"


def seq(values: Iterable[Any], digits: int = 3, sep: str = " / ") -> str:
    """Values joined by `sep`, floats with `digits` decimals: "0.967 / 0.989"."""
    return sep.join(num(v, digits) if isinstance(v, numbers.Real) and not isinstance(v, numbers.Integral)
                    else str(v) for v in values)


def sig(value: Any, digits: int = 2) -> str:
    """`value` to `digits` significant digits, never in exponent form: 150.3 -> "150", 1.94 -> "1.9",
    0.00781 -> "0.0078"; "n/a" for None or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if value == 0 or math.isinf(value):
        return f"{value:g}"
    return f"{value:.{max(0, digits - 1 - math.floor(math.log10(abs(value))))}f}"


def span(values: Iterable[float], digits: int = 2, unit: str = "", fmt: Callable[[float], str] | None = None) -> str:
    """The range min–max of `values` ("0.97–1.00"; "-0.88 to 0.45" when it starts below 0), or the one value when
    both ends read alike; each end formatted by `fmt` (default: `digits` decimals)."""
    fmt = fmt or (lambda v: num(v, digits))
    values = [v for v in values if v is not None and not math.isnan(v)]
    if not values:
        return "n/a"
    low, high = fmt(min(values)), fmt(max(values))
    if low == high:
        return f"{low}{unit}"
    return f"{low} to {high}{unit}" if min(values) < 0 else f"{low}–{high}{unit}"  # "-0.88–-0.45" misreads


def compare(value: float, reference: float, words: tuple[str, str, str] = ("above", "below", "equal to"),
            tol: float = 0.0) -> str:
    """`words[0]` when value > reference + tol, `words[1]` when below reference - tol, else `words[2]`:
    how a sentence compares the run's number with the paper's without knowing which it will be."""
    if value > reference + tol:
        return words[0]
    if value < reference - tol:
        return words[1]
    return words[2]


def skipped(what: str, why: str) -> str:
    """The sentence a reading cell renders when its section has nothing to read: "*what: not measured in this
    run (why).*"."""
    return f"*{what}: not measured in this run ({why}).*"


def md_table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    """A Markdown table of `rows` (dicts of already formatted cells), header from `columns` or the first row."""
    if columns is None:
        columns = list(rows[0]) if rows else []
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(row.get(c, "")) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


# -- the check that no number of the run is typed by hand -------------------------------------------------

_IGNORED = re.compile(
    r"\]\([^)]*\)"  # link targets
    r"|https?://\S+"  # bare addresses
    r"|arXiv[:\s]*\[?\d{4}\.\d{4,5}"  # arXiv identifiers
    r"|§\s?\d+(?:\.\d+)*(?:\s?[–-]\s?\d+(?:\.\d+)*)?"  # spec sections: §2.1, §2.2–2.3
)
_NUM = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)*"  # 7, 0.424, 10,000, 1,000.5, 1.6.0
_SEP = r"\s?/\s?|\s?–\s?|-"  # lists and ranges: 0.967 / 0.989, 26–31 %, 0.19-0.51
_CHAIN = re.compile(rf"(?<![\w.@]){_NUM}(?:(?:{_SEP}){_NUM})*(?P<percent>\s?%)?")


def stated_numbers(text: str) -> list[str]:
    """The decimal numbers and percentages that `text` states, normalised: "0.424", "44.2 %", "1.6.0".

    Every member of a list or range that ends in a percent sign is a percentage ("62 / 66 %" states
    "62 %" and "66 %"). Other integers are not counted (counts, sizes, years); spec section numbers (§2.1),
    arXiv identifiers and link targets are not numbers the text states."""
    found = []
    for match in _CHAIN.finditer(_IGNORED.sub(" ", text)):
        numbers = re.findall(_NUM, match.group(0))
        if match.group("percent"):
            found += [f"{n} %" for n in numbers]
        else:
            found += [n for n in numbers if "." in n]
    return found


def reading_text(code: str) -> str:
    """The fixed text of a reading cell: its string constants, among them the literal parts of its f-strings
    (the replacement fields are the run's numbers)."""
    return "\n".join(node.value for node in ast.walk(ast.parse(code))
                     if isinstance(node, ast.Constant) and isinstance(node.value, str))


def is_reading_cell(cell: dict) -> bool:
    """A code cell tagged `reading`."""
    return cell.get("cell_type") == "code" and "reading" in cell.get("metadata", {}).get("tags", [])


def cell_text(cell: dict) -> str | None:
    """The text a cell states in its own words: a Markdown cell's source, a reading cell's fixed text, else
    None."""
    src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
    if cell.get("cell_type") == "markdown":
        return src
    return reading_text(src) if is_reading_cell(cell) else None


def literals(nb: dict) -> dict[str, str]:
    """The notebook's declared literals {number: its source}."""
    return nb.get("metadata", {}).get(LITERALS_KEY[0], {}).get(LITERALS_KEY[1], {})


def undeclared_numbers(nb: dict) -> list[tuple[str, str]]:
    """(cell id, number) for every number a Markdown cell or a reading cell's fixed text states that the
    notebook's metadata does not declare as a literal."""
    declared = literals(nb)
    return [(cell.get("id", "?"), n) for cell in nb["cells"] if (text := cell_text(cell)) is not None
            for n in stated_numbers(text) if n not in declared]


def unused_literals(nb: dict) -> list[str]:
    """Declared literals that no Markdown cell or reading cell states any more."""
    stated = {n for cell in nb["cells"] if (text := cell_text(cell)) is not None for n in stated_numbers(text)}
    return sorted(set(literals(nb)) - stated)


# -- the check that no number is typed twice, in prose and in code ---------------------------------------

def code_numbers(package: Path) -> dict[float, list[str]]:
    """The decimal numbers the modules of `package` (a folder of `lib`) name at module level, in an assignment to
    UPPER_CASE names (a constant, a table of the paper's values): {0.77: ["paper.XL"], ...}."""
    found: dict[float, list[str]] = {}
    for module in sorted(Path(package).glob("*.py")):
        for node in ast.parse(module.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) and node.value is not None else []
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            if not names or not all(n.lstrip("_").isupper() for n in names):
                continue
            for constant in ast.walk(node.value):
                if isinstance(constant, ast.Constant) and type(constant.value) is float:
                    found.setdefault(constant.value, []).append(f"{module.stem}.{','.join(names)}")
    return found


def typed_twice(prose: dict[str, str], package: Path, other_facts: Iterable[str] = ()) -> list[tuple[str, str, str]]:
    """(where, number, the code's names) for every decimal number that a text of `prose` {where: text} states and
    a module of `package` also types (`code_numbers`): one fact typed in two places, which the prose should state
    from the code's name instead (a template's `{{ paper.NAME }}`, a reading's constant). `other_facts`: numbers
    whose digits the two share by coincidence (a different fact on each side), declared with the reason by the
    caller. Percentages are not compared (a share in prose is a fraction in code)."""
    code = code_numbers(package)
    out = []
    for where, text in prose.items():
        for number in stated_numbers(text):
            try:
                value = float(number.replace(",", ""))
            except ValueError:  # "1.6.0", "44.2 %"
                continue
            if value in code and number not in other_facts:
                out.append((where, number, ", ".join(sorted(set(code[value])))))
    return out
