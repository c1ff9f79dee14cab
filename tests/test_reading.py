"""lib.reading: the helpers reading cells write their sentences with, and the check that no notebook states a
number of its run by hand (every decimal number and percentage in its Markdown, and in the fixed text of its
reading cells, is a literal declared with its source in the notebook's metadata)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from lib import reading
from lib.reading import compare, md_table, pct, seq, sig, skipped, span, stated_numbers

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("text, numbers", [
    ("mean AUC 0.967 / 0.989 (paper: 0.829)", ["0.967", "0.989", "0.829"]),
    ("shares of 62 / 66 / 68 / 77 % and 26–31 %", ["62 %", "66 %", "68 %", "77 %", "26 %", "31 %"]),
    ("44.2% and 44.2 % and 0.19-0.51", ["44.2 %", "44.2 %", "0.19", "0.51"]),
    ("zuko 1.6.0; 1,000.5 points", ["1.6.0", "1,000.5"]),
    ("8 members, 10,000 steps, C = 1, 2, 4 in 2026", []),  # integers are counts, sizes, years
    ("§2.2–2.3, §5.6, arXiv 2511.10710, [spec](../docs/a-2.5.md), https://x.org/1.5", []),
    ("columns width@0.5 and below_0.9; −0.054", ["0.054"]),
])
def test_stated_numbers_finds_decimals_and_percentages(text, numbers):
    assert stated_numbers(text) == numbers


def test_reading_text_is_the_fixed_text_of_the_cell_not_its_replacement_fields():
    code = 'x = 0.5\nsay(f"""mean {auc:.3f} (paper: 0.829), {pct(s, 1)} of 44.2 %""")\nsay("plain 1.5")'
    assert sorted(stated_numbers(reading.reading_text(code))) == ["0.829", "1.5", "44.2 %"]


def test_formatting_helpers():
    assert [sig(v) for v in (150.3, 1.94, 0.00781, 0.0, float("nan"))] == ["150", "1.9", "0.0078", "0", "n/a"]
    assert span([0.021, 0.029, 0.03]) == "0.02–0.03" and span([0.971, 0.974]) == "0.97" and span([]) == "n/a"
    assert span([4.2, 150.3], fmt=sig) == "4.2–150" and span([-0.876, -0.447]) == "-0.88 to -0.45"
    assert pct(0.277, 1) == "27.7 %" and pct(float("nan")) == "n/a"
    assert seq([0.9671, 2, "C"], 2) == "0.97 / 2 / C"
    assert [compare(0.5, 0.442), compare(0.4, 0.442), compare(0.44, 0.442, tol=0.01)] == ["above", "below", "equal to"]
    assert skipped("Figure 4", "no small sets") == "*Figure 4: not measured in this run (no small sets).*"
    assert md_table([{"a": "1", "b": "x"}]) == "| a | b |\n|---|---|\n| 1 | x |"


def test_say_displays_markdown_with_a_plain_text_copy(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, raw: shown.append((obj, raw)))
    reading.say("""
        The band is **0.42** wide.
    """)
    assert shown == [({"text/markdown": "The band is **0.42** wide.", "text/plain": "The band is **0.42** wide."},
                      True)]


def test_undeclared_numbers_name_the_cell_and_the_number():
    nb = {"metadata": {"workbook": {"literals": {"0.424": "paper, Table 1"}}}, "cells": [
        {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": "paper 0.424, ours 0.021"},
        {"cell_type": "code", "id": "r1", "metadata": {"tags": ["reading"]}, "source": 'say(f"{w:.3f} vs 0.55")'},
        {"cell_type": "code", "id": "c1", "metadata": {}, "source": "x = 0.77"}]}
    assert reading.undeclared_numbers(nb) == [("m1", "0.021"), ("r1", "0.55")]
    assert reading.unused_literals({**nb, "cells": nb["cells"][1:]}) == ["0.424"]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_number_of_the_run_is_typed_into_the_text(notebook):
    """Every decimal number and percentage the notebook's text states is a declared literal (the paper's, the
    spec's, a dated record): a number of the run belongs in a reading cell, computed from the run."""
    nb = load(notebook)
    undeclared = reading.undeclared_numbers(nb)
    assert not undeclared, (f"{notebook.name}: numbers in the text that are not declared literals (state the run's "
                            f"numbers in a reading cell, or declare the paper's in metadata.workbook.literals): "
                            + ", ".join(f"{cell} {number}" for cell, number in undeclared))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_declared_literal_has_a_source_and_is_still_stated(notebook):
    nb = load(notebook)
    assert reading.literals(nb), f"{notebook.name} declares no literals"
    assert all(isinstance(source, str) and len(source) > 10 for source in reading.literals(nb).values())
    assert not reading.unused_literals(nb), f"{notebook.name}: literals no cell states: {reading.unused_literals(nb)}"


def stored_names(code: str) -> set[str]:
    """The global names a cell binds: assignment, loop and `with` targets, definitions; not the local names of
    comprehensions and functions."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            return
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(code))
    return names


def used_names(code: str) -> set[str]:
    return {node.id for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Name)}


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_reading_cells_are_hidden_and_change_nothing_the_run_uses(notebook):
    """Each reading cell is tagged for MyST-NB (`remove-input`) and collapsed in JupyterLab, and no name it assigns
    is used by another code cell, so a reading cell can be edited or removed without changing the results."""
    code = [c for c in load(notebook)["cells"] if c["cell_type"] == "code"]
    cells = [c for c in code if reading.is_reading_cell(c)]
    assert cells, f"{notebook.name} has no reading cells"
    others = set().union(*(used_names("".join(c["source"])) for c in code if not reading.is_reading_cell(c)))
    for cell in cells:
        assert set(reading.TAGS) <= set(cell["metadata"]["tags"]), cell["id"]
        assert cell["metadata"].get("jupyter", {}).get("source_hidden") is True, cell["id"]
        clash = stored_names("".join(cell["source"])) & others
        assert not clash, f"{notebook.name} {cell['id']} assigns names other cells use: {sorted(clash)}"
