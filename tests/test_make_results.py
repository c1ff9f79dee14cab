"""Results pages: templates filled from glued results, never with a number the run did not record."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lib.glue import IncompleteRun
from lib.make import results
from lib.make.results import TABLE_CHARS, column_groups, update_readme, value_tables
from lib.paths import PROJECT_ROOT
from lib.templates import TemplateError, render

TEMPLATES = Path(__file__).resolve().parents[1] / "docs" / "results" / "templates"


def test_placeholders_take_expressions_and_format_specs():
    r = {"table": {"CReL/0.1": {"coverage_z": 0.89531}}, "sizes": {"a": 1, "b": 3}}
    text = render('Z {{ r["table"]["CReL/0.1"]["coverage_z"] :.3f }}; {{ " / ".join(r["sizes"]) }}; '
                  '{{ max(r["sizes"].values()) }}', {"r": r})
    assert text == "Z 0.895; a / b; 3"


def test_a_value_the_run_did_not_record_is_an_error_naming_the_placeholder():
    with pytest.raises(TemplateError, match=r'r\["auc"\]\["8"\].*did not record'):
        render('AUC {{ r["auc"]["8"] :.3f }}', {"r": {"auc": {"2": 0.9}}})


@pytest.mark.parametrize("glued", ["-inf", "inf", None])  # lib.glue.to_jsonable's -inf, inf and nan
def test_a_non_finite_value_under_a_number_format_names_the_template_and_the_placeholder(tmp_path, glued):
    """A glued -inf under `:.3f` raised "Unknown format code 'f' for object of type 'str'",
    naming neither the template nor the placeholder."""
    template = tmp_path / "templates" / "01-x.md"
    template.parent.mkdir()
    template.write_text("# Notebook 01\n\nAUC {{ r['auc'] :.3f }}\n")
    info = {"commit": "abc", "notebook": "01_x.ipynb", "preset": "smoke", "date": "2026-12-02", "fingerprint": "0"}
    with pytest.raises(TemplateError) as err:
        results.render_page({"auc": glued}, info, template)
    message = str(err.value)
    assert str(template) in message and "{{ r['auc'] :.3f }}" in message and repr(glued) in message


def test_value_tables_render_scalars_rows_and_dicts():
    text = value_tables({"preset": "cpu", "auc": {"2": 0.91234, "4": [0.5, 0.25]},
                         "table": {"CReL/0.1": {"z": 0.9, "y": 0.8}, "PCP/0.1": {"y": 0.7}}})
    assert "| `preset` | cpu |" in text and "| 2 | 0.9123 |" in text and "| 4 | 0.5 / 0.25 |" in text
    assert "| `table` | z | y |" in text and "| PCP/0.1 |  | 0.7 |" in text


def test_a_wide_dict_of_rows_is_cut_into_tables_that_fit_the_column_and_keep_every_value():
    columns = [f"quantity_{i:02d}_long" for i in range(12)]
    rows = {f"row{r}": {c: r + i / 1000 for i, c in enumerate(columns)} for r in range(3)}
    text = value_tables({"wide": rows})
    tables = [t.strip() for t in text.split("\n\n") if t.strip().startswith("| `wide`")]
    assert len(tables) > 1 and tables[0].startswith(f"| `wide` (1 of {len(tables)}) |")
    assert all(len(line) <= TABLE_CHARS for t in tables for line in t.splitlines())
    headers = [h.strip() for t in tables for h in t.splitlines()[0].split("|")[2:-1]]
    assert headers == [c.replace("_", " ") for c in columns]  # every column once, in order, in a reader's words
    assert all(f"| row{r} |" in t for t in tables for r in range(3))  # every row in every part
    assert column_groups(10, {"a": 200, "b": 5}) == [["a"], ["b"]]  # a column wider than the budget stands alone


def test_readme_headlines_are_replaced_between_the_markers_only(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- headlines:begin -->\nold\n<!-- headlines:end -->\nrest\n")
    assert update_readme(readme, "| new |\n")
    assert readme.read_text() == "intro\n<!-- headlines:begin -->\n| new |\n<!-- headlines:end -->\nrest\n"
    (tmp_path / "other.md").write_text("no markers\n")
    assert not update_readme(tmp_path / "other.md", "x")


def test_every_notebook_has_a_template_and_the_readme_has_the_markers():
    notebooks = sorted((TEMPLATES.parents[2] / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert {p.name[:2] for p in TEMPLATES.glob("[0-9][0-9]-*.md")} == {p.name[:2] for p in notebooks}
    readme = (TEMPLATES.parents[2] / "README.md").read_text()
    assert "<!-- headlines:begin -->" in readme and "<!-- headlines:end -->" in readme


def test_headline_rows_render_the_notebooks_that_ran_and_keep_the_others():
    from lib.make.results import headline_rows

    template = ("| # | result |\n|---|---|\n| [01](nb1) | {{ r01['auc'] :.2f }} |\n"
                "| [02](nb2) | {{ r02['cov'] :.2f }} |\n")
    current = "| # | result |\n|---|---|\n| [01](nb1) | old one |\n| [02](nb2) | old two |\n"
    table = headline_rows(template, {"r01": {"auc": 0.912}, "run01": {}}, current)
    assert table.splitlines()[2:] == ["| [01](nb1) | 0.91 |", "| [02](nb2) | old two |"]


def test_rows_table_sorts_by_its_columns_and_marks_missing_values():
    from lib.templates import rows_table

    rows = [{"method": "b", "seed": 1, "cov": 0.5}, {"method": "a", "seed": 10, "cov": 0.25},
            {"method": "a", "seed": 2}]
    assert rows_table(rows, ("method", "seed", "cov"), ".2f").splitlines() == [
        "| method | seed | cov |", "|---|---|---|", "| a | 2 | — |", "| a | 10 | 0.25 |", "| b | 1 | 0.50 |"]


def test_a_run_that_read_a_stored_layer_gives_its_from_scratch_time(tmp_path, monkeypatch):
    import json

    from lib.make.results import run_info
    from lib.templates import wall_time

    monkeypatch.setenv("WORKBOOK_RESULTS", str(tmp_path / "results"))
    executed = tmp_path / "04_image_retrieval_score.ipynb"
    executed.write_text(json.dumps({"cells": [], "metadata": {"papermill": {
        "parameters": {"PRESET": "cpu"}, "duration": 125.0, "end_time": "2026-12-02T09:00:00"}}}))
    assert run_info(executed)["stored"] is None and wall_time(run_info(executed)) == "2 min 5 s (`cpu`)"
    layer = tmp_path / "results" / "04" / "cpu"
    layer.mkdir(parents=True)
    (layer / "manifest.json").write_text(json.dumps({"commit": "abcdef123", "date": "2026-12-02 08:00 UTC",
                                                     "wall_seconds": 30.0, "entries": {"a-0123456789.npz": {
                                                         "sha256": "0" * 64, "bytes": 1, "config": {}}},
                                                     "from_scratch": {"wall_seconds": 2400.0}}))
    assert wall_time(run_info(executed)) == "2 min 5 s (`cpu`, stored results; from scratch 40 min 0 s)"
    executed.write_text(executed.read_text().replace('"PRESET": "cpu"', '"PRESET": "cpu", "SOURCE": "compute"'))
    assert run_info(executed)["stored"] is None


@pytest.mark.parametrize("template", sorted(TEMPLATES.glob("*.md")), ids=lambda p: p.stem)
def test_no_template_types_a_number_of_the_run(template):
    """Every decimal number and percentage a template states in its own words (outside its placeholders, or typed
    into them) is declared with its source in its front matter, and every declared one is still stated."""
    literals, _ = results.split_template(template.read_text(encoding="utf-8"))
    undeclared = results.undeclared_numbers(template)
    assert not undeclared, (f"{template.name} types numbers that are not declared literals (render the run's from "
                            f"its glue, declare the paper's in the front matter): {undeclared}")
    assert all(isinstance(source, str) and len(source) > 10 for source in literals.values())
    assert not results.unused_literals(template), f"{template.name}: literals it no longer states"


def test_a_typed_number_is_found_in_the_text_and_in_an_expression_but_not_in_a_key(tmp_path):
    template = tmp_path / "01-x.md"
    template.write_text('---\nliterals:\n  "0.964": "paper, Table 1"\n---\n'
                        'Band width 0.38 (paper 0.964); {{ r["t"]["0.25"] :.2f }} at T = {{ r.get("0.5") }};'
                        ' {{ dict(zip("12", (0.0030, "0.42"))) }}; {{ f"{r[\'x\']:.1%}" }}\n')
    assert results.undeclared_numbers(template) == ["0.38", "0.0030", "0.42"]
    assert results.unused_literals(template) == []
    page = results.render_page({"t": {"0.25": 1.0}, "x": 0.5}, {"commit": "abc", "notebook": "01_x.ipynb",
                                                                "preset": "smoke", "date": "2026-12-02",
                                                                "fingerprint": "0123456789ab"}, template)
    assert "literals:" not in page and "Band width 0.38" in page and "50.0%" in page


def test_a_template_reads_a_committed_study_as_typed_rows():
    from lib.templates import csv_rows

    rows = csv_rows("results/01/budget_study.csv")
    authors = [row for row in rows if row["variant"] == "paper" and row["steps"] == 1000 and not row["ema"]]
    assert [row["C"] for row in authors] == [2, 4] and all(0 < row["width"] < 1 for row in authors)
    text = render('{{ " and ".join(f\'{row["width"]:.2f}\' for row in csv_rows("results/01/budget_study.csv") '
                  'if row["variant"] == "paper" and row["steps"] == 1000 and not row["ema"]) }}', {})
    assert text == " and ".join(f"{row['width']:.2f}" for row in authors)


def test_an_interrupted_run_is_refused_before_any_page_is_written(tmp_path):
    """A run killed mid-way gave `TemplateError ... KeyError: 'n_train'`, which did not say it was interrupted."""
    import shutil

    from test_make_book import half_run

    from lib.make.results import generate, main

    out = tmp_path / "pages"
    shutil.copytree(PROJECT_ROOT / "docs" / "results" / "templates", out / "templates")
    runs = tmp_path / "runs"
    runs.mkdir()
    half_run(runs / "04_image_retrieval_score.ipynb", done=30, total=40)
    with pytest.raises(IncompleteRun, match=r"04_image_retrieval_score.ipynb is a run that was interrupted "
                                            r"\(10 of 40 code cells did not complete"):
        generate(runs, out, None)
    assert sorted(p.name for p in out.iterdir()) == ["templates"]
    (tmp_path / "README.md").write_text("# README\n")
    with pytest.raises(SystemExit, match="make results: .* was interrupted"):
        main(["--runs", str(runs), "--out", str(out), "--readme", str(tmp_path / "README.md")])


@pytest.mark.parametrize("broken, message", [
    ("--runs", r"--runs .*MISSING is not a folder"),
    ("--out", r"--out .*MISSING holds no templates/\[0-9\]\[0-9\]-\*\.md"),
    ("--readme", r"--readme .*MISSING does not exist"),
])
def test_the_results_command_checks_its_arguments_before_writing(tmp_path, capsys, broken, message):
    """For `python -m lib.make.results`: a missing --runs folder or an --out without templates
    wrote nothing and said so only as "not regenerated" lines (exit 0); a missing --readme failed after the pages
    were written."""
    import shutil

    options = {"--runs": tmp_path / "runs", "--out": tmp_path / "pages", "--readme": tmp_path / "README.md"}
    options["--runs"].mkdir()
    shutil.copytree(PROJECT_ROOT / "docs" / "results" / "templates", options["--out"] / "templates")
    options["--readme"].write_text("# README\n")
    options[broken] = tmp_path / "MISSING"
    with pytest.raises(SystemExit) as stop:
        results.main([str(x) for option, path in options.items() for x in (option, path)])
    assert stop.value.code == 2 and re.search(message, capsys.readouterr().err)
    assert sorted(p.name for p in (tmp_path / "pages").iterdir()) == ["templates"]  # nothing written


def test_findings_render_each_sentence_from_the_run_and_leave_out_what_it_did_not_record(tmp_path):
    import nbformat
    from test_templates import templates_with_findings

    from lib.glue import MIME_TYPE
    from lib.make.results import findings
    from lib.templates import FINDINGS_CLASS

    templates = templates_with_findings(tmp_path)  # an AUC sentence and a width sentence
    cell = nbformat.v4.new_code_cell("record(headline)")
    cell.outputs = [nbformat.v4.new_output("display_data", data={MIME_TYPE: {"auc": 0.9876}})]
    run = tmp_path / "07_x.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[cell], metadata={"papermill": {"parameters": {}}}), run)
    box = findings(run, templates)
    assert box.startswith(f'<div class="{FINDINGS_CLASS}">') and "- AUC 0.988 · paper 0.5." in box
    assert "width" not in box  # the run recorded no width: the sentence is left out, not filled with a stale number
    assert findings(tmp_path / "08_y.ipynb", templates) == ""  # no template


def test_a_list_the_notebook_named_the_columns_of_is_a_labelled_table_and_a_missing_value_a_dash():
    from lib.glue import COLUMNS_KEY

    text = results.value_tables({"toy": {"resnet56/real": [1.01, 0.06, None], "pixels/real": [0.99, 1.6, 0.7]},
                                 COLUMNS_KEY: {"toy": ["irs_adj", "fid", "source_hit"]}})
    assert "| `toy` | IRS_∞,a | FID | source hit |" in text  # the columns and rows in a reader's words
    assert "| ResNet-56/real | 1.01 | 0.06 | — |" in text
    assert "None" not in text and "[1.01" not in text and COLUMNS_KEY not in text
    flags = results.value_tables({"spaces": {"fourier": {"same_best": True, "fraction": 0.5}}})
    assert "| Fourier | yes | 0.5 |" in flags and "True" not in flags


RAW = {"a Python None": r"\bNone\b", "a NaN": r"\bnan\b", "a placeholder '?'": r"(?:from scratch|run in) \?",
       "a dict's repr": r"\{'", "a list of unrounded floats": r"\[-?\d+\.\d{6,}", "a 16-digit float": r"\d\.\d{12,}",
       "an unrendered block": r"written by `make results` from the claims ledger\)",
       "a Python bool in a table": r"\| (?:True|False) \|"}


def test_no_generated_page_nor_the_readme_shows_a_placeholder_or_a_raw_dump():
    """What `make results` wrote, as a reader sees it: no None, NaN, '?', dict or list repr, unrounded float."""
    root = Path(__file__).resolve().parents[1]
    pages = [root / "README.md", *sorted((root / "docs" / "results").glob("*.md"))]
    found = [f"{p.name}: {what}: {m.group(0)!r}" for p in pages for what, pattern in RAW.items()
             for m in re.finditer(pattern, p.read_text(encoding="utf-8"))]
    assert not found, "\n".join(found[:20])
