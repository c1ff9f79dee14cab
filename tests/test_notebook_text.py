"""Static checks of the notebooks' text and code: markdown tables that render, and the house rules for
notebook code (imports in the first cell, no `__import__`, the shared parameters alike everywhere,
sections named after what of the paper they reproduce)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SHARED = ("DEVICE", "NUM_THREADS", "FORCE_RECOMPUTE", "PROGRESS", "EXPLORER", "FIGURES_DIR", "SOURCE")


def cells(path: Path, kind: str) -> list[dict]:
    return [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == kind]


def source(cell: dict) -> str:
    return "".join(cell["source"])


def table_cells(line: str) -> int:
    """The number of cells of a markdown table row: `|` separates cells unless escaped as `\\|` or inside
    a code span."""
    body = re.sub(r"`[^`]*`", "code", line.strip())
    body = body.replace("\\|", "")
    return len(body.strip("|").split("|"))


def tables(markdown: str) -> list[list[str]]:
    """The markdown tables of `markdown`: runs of lines that start with `|`, header first."""
    found, current = [], []
    for line in markdown.splitlines() + [""]:
        if line.lstrip().startswith("|"):
            current.append(line)
        elif current:
            found.append(current)
            current = []
    return found


def test_table_parser_counts_escaped_bars_and_code_spans_as_text():
    assert table_cells("| a | p\\*(y\\|x) | `a|b` |") == 3
    assert table_cells("| a | p*(y|x) |") == 3  # the unescaped bar splits the cell: the bug this test catches


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_markdown_table_row_has_the_headers_cell_count(notebook):
    for cell in cells(notebook, "markdown"):
        for table in tables(source(cell)):
            width = table_cells(table[0])
            assert re.fullmatch(r"\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?", table[1].strip()), (cell["id"], table[1])
            for row in table[1:]:
                assert table_cells(row) == width, f"{notebook.name} {cell['id']}: {row!r} has not {width} cells"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_imports_live_in_the_first_code_cell_only(notebook):
    code = cells(notebook, "code")
    for cell in code[1:]:
        for node in ast.walk(ast.parse(source(cell))):
            assert not isinstance(node, (ast.Import, ast.ImportFrom)), f"{notebook.name} {cell['id']} imports"
            assert not (isinstance(node, ast.Name) and node.id == "__import__"), f"{notebook.name} {cell['id']}"


def parameters(notebook: Path) -> dict[str, tuple[str, str]]:
    """{name: (annotation, default)} of the parameters cell, as written."""
    cell = next(c for c in cells(notebook, "code") if "parameters" in c["metadata"].get("tags", []))
    return {node.target.id: (ast.unparse(node.annotation), ast.unparse(node.value))
            for node in ast.parse(source(cell)).body if isinstance(node, ast.AnnAssign)}


def test_the_shared_parameters_have_one_name_type_and_default():
    declared = {nb.stem: parameters(nb) for nb in NOTEBOOKS}
    for name in SHARED:
        forms = {stem: p.get(name) for stem, p in declared.items()}
        assert len(set(forms.values())) == 1 and None not in forms.values(), f"{name}: {forms}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_configuration_cell_checks_parameters_threads_and_data(notebook):
    config = source(cells(notebook, "code")[2])  # imports, parameters, configuration
    assert config.startswith("check_notebook_parameters(globals())")
    assert "set_threads(NUM_THREADS)" in config


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_numbered_sections_name_what_of_the_paper_they_reproduce(notebook):
    headings = [line for c in cells(notebook, "markdown") for line in source(c).splitlines()
                if re.match(r"## (\d+ ·|Figure|Table)", line)]
    assert len(headings) >= 4
    for h in headings:
        assert re.search(r"paper|Figure \d|Table", h), h
