"""lib.templates: the Findings box a notebook shows under its title, from the same template as its book page, and
the reading cells' sentences, sections of one template file per paper."""

from __future__ import annotations

import re
import sys
import types

import pytest

from lib.paths import PACKAGES, PROJECT_ROOT
from lib.templates import (
    FINDINGS_CLASS,
    FINDINGS_MARK,
    FINDINGS_PENDING,
    NO_FINDINGS,
    FindingsBox,
    Readings,
    TemplateError,
    findings_text,
)


def templates_with_findings(tmp_path):
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "findings-07.md").write_text('---\nliterals:\n  "0.5": "paper"\n---\n'
                                              '- AUC {{ r["auc"] :.3f }} · paper 0.5.\n'
                                              '- width {{ r["width"] :.2f }} · paper 0.5.\n')
    return templates


def test_findings_text_renders_each_sentence_the_run_recorded(tmp_path):
    templates = templates_with_findings(tmp_path)
    box = findings_text("07", {"auc": 0.9876}, templates)
    assert box.startswith(f'<div class="{FINDINGS_CLASS}">') and "- AUC 0.988 · paper 0.5." in box
    assert "width" not in box  # not recorded: left out, never a stale number
    assert findings_text("07", {}, templates) == "" and findings_text("08", {"auc": 1.0}, templates) == ""


class Handle:
    def __init__(self):
        self.shown = []

    def update(self, obj, metadata):
        assert metadata == {FINDINGS_MARK: True}  # how the book finds the box, to put its own under the title
        self.shown.append(obj.data)


def test_the_box_shows_a_placeholder_then_the_runs_findings_in_the_same_display(tmp_path, monkeypatch):
    shown, handle = [], Handle()

    def display(obj, metadata, display_id):
        assert display_id is True and metadata == {FINDINGS_MARK: True}  # one display, updated at the end of the run
        shown.append(obj.data)
        return handle

    monkeypatch.setattr("IPython.display.display", display)
    box = FindingsBox("07", templates_with_findings(tmp_path))
    assert shown == [FINDINGS_PENDING]
    import numpy as np

    text = box.update({"auc": np.float64(0.9876)})  # as the notebook holds it, before it is recorded
    assert handle.shown == [text] and "- AUC 0.988 · paper 0.5." in text
    assert box.update({"other": 0.1}) == NO_FINDINGS  # nothing this template states was measured


def test_the_box_opens_with_the_line_of_the_run_going_on(tmp_path, monkeypatch):
    from lib.run import Run

    monkeypatch.setattr("IPython.display.display", lambda obj, metadata, display_id: Handle())
    run = Run.for_notebook("07", "smoke", source="stored", force=False, device="cpu", progress=False)  # no layer for 07
    run.counts["computed"] = 2
    text = FindingsBox("07", templates_with_findings(tmp_path)).update(
        {"auc": 0.9876, "preset": "smoke", "device": "cpu (AMD EPYC, 1 thread)"}, run)
    line, box = text.split("\n\n</div>\n\n", 1)
    assert line.startswith('<div class="workbook-provenance">\n\n**This run:** preset `smoke` · run on 20')
    assert "· commit `" in line and "· on cpu (AMD EPYC, 1 thread) ·" in line
    assert "2 long stages computed, none matched in `results/07/smoke`" in line
    assert box.startswith(f'<div class="{FINDINGS_CLASS}">') and "- AUC 0.988" in box


def test_a_from_scratch_cost_never_shows_a_placeholder_and_names_what_its_wall_time_leaves_out():
    from lib.templates import wall_time

    untimed = {"duration_s": 167, "preset": "cpu", "notebook": "01_ensemble_pr_curves.ipynb",
               "stored": {"from_scratch_s": None}}
    assert wall_time(untimed) == ("2 min 47 s (`cpu`, stored results; from scratch not timed as one run "
                                  "(results/01/cpu/README.md))")
    more = {"duration_s": 145, "preset": "cpu", "notebook": "04_image_retrieval_score.ipynb",
            "stored": {"from_scratch_s": 2862, "from_scratch_also": "the generators' training"}}
    assert wall_time(more).endswith("from scratch 47 min 42 s + the generators' training)")
    assert "?" not in wall_time(untimed) + wall_time(more)


def test_a_reading_renders_its_section_with_the_module_s_constants_the_paper_and_its_parts(tmp_path, monkeypatch):
    module = types.ModuleType("lib_fake_readings")
    module.THRESHOLD, module.lower = 0.9, 0.1
    monkeypatch.setitem(sys.modules, module.__name__, module)
    (tmp_path / "readings-01.md").write_text(
        '---\nliterals: {}\n---\n<!-- reading: main -->\n**Reading.** {{ "; ".join(part("item", x=x) for x in xs) }}'
        ' with R² ≥ {{ THRESHOLD }}\n(paper {{ paper.__name__ }}).\n\n<!-- reading: item -->\n{{ x :.2f }}/{{ y }}\n')
    readings = Readings("01", module.__name__, templates=tmp_path)
    assert readings("main", xs=[0.5, 0.25], y="b") == ("**Reading.** 0.50/b; 0.25/b with R² ≥ 0.9\n"
                                                        "(paper lib.prcurves.paper).")
    assert list(readings.sections()) == ["main", "item"]
    with pytest.raises(TemplateError, match="y"):  # only UPPER_CASE names of the module are passed
        readings("item", x=1.0, lower=module.lower)


@pytest.mark.parametrize("text, problem", [("stray\n<!-- reading: a -->\nx\n", "before the first"),
                                           ("<!-- reading: a -->\nx\n<!-- reading: a -->\ny\n", "named twice")])
def test_a_readings_file_has_only_sections_each_named_once(tmp_path, text, problem):
    (tmp_path / "readings-01.md").write_text(text)
    with pytest.raises(TemplateError, match=problem):
        Readings("01", "lib.reading", templates=tmp_path).sections()


def test_an_unknown_section_is_named_with_the_file_s_sections(tmp_path):
    (tmp_path / "readings-01.md").write_text("<!-- reading: a -->\n{{ part('b') }}\n")
    with pytest.raises(TemplateError, match=r"no section 'b' \(sections: a\)"):
        Readings("01", "lib.reading", templates=tmp_path)("a")


SECTION_USE = re.compile(r"""(?:TEXT|part)\(\s*["']([\w.-]+)["']""")  # TEXT(...), CLAIM_TEXT(...), part(...)


@pytest.mark.parametrize("number", sorted(PACKAGES))
def test_every_section_of_a_paper_s_sentences_is_said_and_every_one_said_exists(number):
    """The sections of readings-NN.md and claims-NN.md (where the paper's ledger has one) are exactly those its
    package's code (`TEXT("name", ...)`, `CLAIM_TEXT(...)`) and the files' own sections (`part("name")`) name: no
    sentence is dead, none is missing, and no name is used in both files."""
    package = PROJECT_ROOT / PACKAGES[number].replace(".", "/")
    files = [Readings(number, "lib.reading", kind=kind) for kind in Readings.KINDS]
    files = [f for f in files if f.path.is_file()]
    sections = [name for f in files for name in f.sections()]
    assert len(set(sections)) == len(sections), "a section name used in both files"
    code = "\n".join(p.read_text(encoding="utf-8") for p in sorted(package.glob("*.py")))
    named = set(SECTION_USE.findall(code)).union(*(SECTION_USE.findall(f.path.read_text(encoding="utf-8"))
                                                   for f in files))
    assert set(sections) == named


def test_a_claims_file_has_claim_sections(tmp_path):
    (tmp_path / "claims-01.md").write_text("<!-- claim: band-why -->\nwidths {{ w\n:.2f }}\nwrapped\n")
    assert Readings("01", "lib.reading", templates=tmp_path, kind="claims")("band-why", w=0.5) == "widths 0.50 wrapped"
    (tmp_path / "claims-01.md").write_text("<!-- reading: band-why -->\nx\n")
    with pytest.raises(TemplateError, match="before the first '<!-- claim: name -->'"):
        Readings("01", "lib.reading", templates=tmp_path, kind="claims").sections()


def test_a_reading_states_another_module_s_constant_given_as_also(tmp_path):
    (tmp_path / "readings-01.md").write_text("<!-- reading: a -->\nR² ≥ {{ OTHER_MIN }}\n")
    assert Readings("01", "lib.reading", templates=tmp_path, also={"OTHER_MIN": 0.9})("a") == "R² ≥ 0.9"
