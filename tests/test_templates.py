"""lib.templates: the Findings box a notebook shows under its title, from the same template as its book page."""

from __future__ import annotations

from lib.templates import FINDINGS_CLASS, FINDINGS_MARK, FINDINGS_PENDING, NO_FINDINGS, FindingsBox, findings_text


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
