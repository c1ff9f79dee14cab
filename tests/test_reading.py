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


def prose_of(number: str) -> dict[str, str]:
    """Every text of notebook `number` a reader sees, {where: text}: its Markdown cells and reading cells' fixed
    text, its templates (results page, Findings box, reading sentences; their words and the constants typed into
    their placeholders) and its row of the README's headline template."""
    from lib.make.results import template_text
    from lib.templates import TEMPLATES, split_template

    notebook = next(path for path in NOTEBOOKS if path.name.startswith(f"{number}_"))
    prose = {f"{notebook.name} cell {cell.get('id', '?')}": text for cell in load(notebook)["cells"]
             if (text := reading.cell_text(cell)) is not None}
    for template in sorted(TEMPLATES.glob(f"{number}-*.md")) + sorted(TEMPLATES.glob(f"*-{number}.md")):
        prose[template.name] = template_text(split_template(template.read_text(encoding="utf-8"))[1])
    headlines = split_template((TEMPLATES / "headlines.md").read_text(encoding="utf-8"))[1]
    prose["headlines.md"] = template_text("\n".join(line for line in headlines.splitlines()
                                                    if line.startswith(f"| [{number}]")))
    return prose


@pytest.mark.parametrize("number", ["01", "02", "03", "04"])
def test_no_number_is_typed_both_in_prose_and_in_code(number):
    """A number the paper reports, or a threshold a sentence applies, is named once, in its package, and the prose
    states it from that name ({{ paper.NAME }} in a template, a constant in a reading's section): no text of the
    notebook types a decimal number that a module-level constant of its package also types, unless the package's
    readings declare the two as different facts that share their digits (OTHER_FACTS, with the reason)."""
    import importlib

    from lib.paths import PACKAGES

    package = PACKAGES[number]
    other = getattr(importlib.import_module(f"{package}.readings"), "OTHER_FACTS", {})
    assert all(isinstance(why, str) and len(why) > 10 for why in other.values())
    folder = Path(__file__).resolve().parents[1] / package.replace(".", "/")
    twice = reading.typed_twice(prose_of(number), folder, other)
    assert not twice, "typed in prose and in code:\n" + "\n".join(f"  {where}: {n} ({names})"
                                                                  for where, n, names in twice)
    stated = {n for text in prose_of(number).values() for n in stated_numbers(text)}
    code = {float(k) for k in reading.code_numbers(folder)}
    assert all(n in stated and float(n) in code for n in other), "OTHER_FACTS that no longer coincide"


def test_typed_twice_finds_a_paper_number_in_a_template_and_a_constant(tmp_path):
    (tmp_path / "paper.py").write_text("XL, XS = 0.77, 0.46\nscale = 0.5\n_NOTE = 'x'\n")
    (tmp_path / "readings.py").write_text("def f():\n    LOCAL = 0.25\n    return LOCAL\n")
    prose = {"04-x.md": "XL 0.77 against 0.460, 0.25 and 0.5", "cell": "77 % and 0.77"}
    twice = [("04-x.md", "0.77", "paper.XL,XS"), ("04-x.md", "0.460", "paper.XL,XS"), ("cell", "0.77", "paper.XL,XS")]
    assert reading.typed_twice(prose, tmp_path) == twice
    assert reading.typed_twice(prose, tmp_path, other_facts=["0.77"]) == [("04-x.md", "0.460", "paper.XL,XS")]
