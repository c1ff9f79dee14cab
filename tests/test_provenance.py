"""lib.provenance.git_commit: the commit of the checkout lib comes from, whatever the working directory."""

from __future__ import annotations

import subprocess
from pathlib import Path

from lib import provenance

ROOT = Path(__file__).resolve().parents[1]


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_the_commit_is_the_checkouts_from_any_working_directory(tmp_path, monkeypatch):
    """lib.prcurves.stored asked git in the working directory: run from elsewhere it recorded "unknown" or
    another repository's commit."""
    monkeypatch.chdir(tmp_path)
    head = _git("rev-parse", "HEAD")
    assert provenance.git_commit() == head and len(head) == 40
    assert provenance.git_commit(short=True) == _git("rev-parse", "--short", "HEAD")
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)docs/figures"))
    assert provenance.git_commit(mark_dirty=True) == head + ("-dirty" if dirty else "")


def test_a_figure_make_run_writes_does_not_make_the_commit_dirty_and_a_code_change_does(tmp_path, monkeypatch):
    """`make run` rewrites the gallery's tracked figures as it goes: the pages of the later notebooks said
    "-dirty" of a clean checkout. A changed source file still says so."""
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], capture_output=True, check=True)

    git("init", "-q")
    (tmp_path / "docs" / "figures").mkdir(parents=True)
    (tmp_path / "docs" / "figures" / "fig.png").write_bytes(b"one")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    monkeypatch.setattr(provenance, "PROJECT_ROOT", tmp_path)
    (tmp_path / "docs" / "figures" / "fig.png").write_bytes(b"two")
    assert not provenance.git_commit(mark_dirty=True).endswith("-dirty")
    (tmp_path / "code.py").write_text("x = 2\n")
    assert provenance.git_commit(mark_dirty=True).endswith("-dirty")


def test_outside_a_checkout_or_without_git_the_commit_is_unknown(tmp_path, monkeypatch):
    monkeypatch.setattr(provenance, "PROJECT_ROOT", tmp_path)  # a folder outside any git checkout
    assert provenance.git_commit(mark_dirty=True) == "unknown"
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on the path
    assert provenance.git_commit() == "unknown"


def _executed(path: Path, *, parameters: dict, end: str = "2026-12-04T20:10:26", stream: str = "",
              device: str | None = "cpu (AMD EPYC, 1 thread)") -> Path:
    import nbformat

    from lib.glue import MIME_TYPE

    cell = nbformat.v4.new_code_cell("record(headline)")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=stream)] if stream else []
    if device:
        cell.outputs.append(nbformat.v4.new_output("display_data", data={MIME_TYPE: {"device": device}}))
    nb = nbformat.v4.new_notebook(cells=[cell], metadata={"papermill": {"parameters": parameters, "end_time": end,
                                                                        "duration": 1.0}})
    nbformat.write(nb, path)
    return path


def test_the_run_line_names_preset_date_commit_processor_and_source(tmp_path):
    run = _executed(tmp_path / "01_x.ipynb", parameters={"PRESET": "cpu"},
                    stream="stored layer results/01/cpu: 28 results read, 2 computed.\n")
    assert "commit not recorded" in provenance.run_line(run)
    provenance.stamp(run, commit="abc1234")
    line = provenance.run_line(run, extra=" · more")
    assert line.startswith(f'<div class="{provenance.LINE_CLASS}">') and line.endswith("</div>")
    for part in ("preset `cpu`", "run on 2026-12-04", "commit `abc1234`", "on cpu (AMD EPYC, 1 thread)",
                 "28 long stages read from `results/01/cpu`, 2 computed", "ran in 1 s", " · more"):
        assert part in line, part
    provenance.stamp(run)  # this checkout's commit, as `make run` stamps it
    assert provenance.run_facts(run)["commit"].removesuffix("-dirty") == _git("rev-parse", "--short", "HEAD")


def test_the_run_line_of_a_forced_run_says_recomputed_not_none_matched(tmp_path):
    """FORCE_RECOMPUTE with SOURCE="stored" never reads the layer; the line said "none matched"."""
    forced = _executed(tmp_path / "01_x.ipynb", parameters={"PRESET": "cpu", "FORCE_RECOMPUTE": True},
                       stream="stored layer results/01/cpu: 0 results read, 30 computed.\n")
    line = provenance.run_line(forced)
    assert "recomputed: FORCE_RECOMPUTE" in line and "none matched" not in line


def test_the_run_line_says_when_everything_was_computed_or_read_from_the_cache(tmp_path):
    computed = _executed(tmp_path / "a.ipynb", parameters={"PRESET": "cpu", "SOURCE": "compute"}, device=None)
    assert "every stage computed" in provenance.run_line(computed)
    assert "processor not recorded" in provenance.run_line(computed)
    cached = _executed(tmp_path / "b.ipynb", parameters={"PRESET": "smoke"},
                       stream="stored layer results/04/smoke: 0 results read, 0 computed.\n")
    assert "read from this machine's cache" in provenance.run_line(cached)
