"""`make book` (lib.make.book, docs/book/conf.py): the site built from the session's smoke runs of every notebook, with
Sphinx warnings as errors; its links, figures and the absence of any request off the machine; and the checks
that stop a build before Sphinx starts."""

from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from notebook_runner import smoke_book

from lib.glue import MIME_TYPE, read_results
from lib.make import book

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


class Links(HTMLParser):
    """Every (tag, attribute, value) of an HTML page whose attribute is href or src, and the <img> alt texts."""

    def __init__(self):
        super().__init__()
        self.links: list[tuple[str, str, str]] = []
        self.alts: list[str | None] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.links += [(tag, name, attrs[name]) for name in ("href", "src") if attrs.get(name)]
        if tag == "img":
            self.alts.append(attrs.get("alt"))


def parse(page: Path) -> Links:
    links = Links()
    links.feed(page.read_text(encoding="utf-8"))
    return links


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> dict:
    built = smoke_book(tmp_path_factory)
    return {**built, "pages": sorted(p for p in built["out"].rglob("*.html") if "_static" not in p.parts)}


def test_book_builds_every_page_without_a_warning(site):
    out = site["out"]
    print(f"book built in {site['seconds']:.0f} s")  # -W: a warning would have raised BookError
    expected = ["README", *(f"notebooks/{p.stem}" for p in NOTEBOOKS), "docs/teaching", "docs/sweeps",
                *(str(p.relative_to(ROOT).with_suffix("")) for p in (ROOT / "docs" / "specs").glob("*.md")),
                *(str(p.relative_to(ROOT).with_suffix("")) for p in (ROOT / "docs" / "results").glob("[0-9]*.md"))]
    missing = [name for name in expected if not (out / f"{name}.html").is_file()]
    assert not missing, f"pages missing from the book: {missing}"
    assert 'url=README.html' in (out / "index.html").read_text(), "the front page is the README"


def test_every_page_names_its_icon_so_no_browser_asks_for_a_missing_favicon(site):
    """A page without <link rel="icon"> makes the browser fetch /favicon.ico, which the build has not: a 404 in the
    console, logged or not depending on how soon the page leaves (the redirecting front page did, once in a fresh
    clone's CI). Every page links the build's own icon, except the front page's redirect, which leaves at once:
    there a fetch of the icon is aborted by the redirect (a failed request, seen in the next CI), so its icon is
    the empty `data:,`, which asks nothing of the server."""
    out = site["out"]

    def icons(page: Path) -> list[str]:
        return [v for tag, _name, v in parse(page).links if tag == "link" and ("favicon" in v or v.startswith("data:"))]

    no_icon = [str(page.relative_to(out)) for page in site["pages"] if page != out / "index.html"
               and not [v for v in icons(page) if "favicon" in v and (page.parent / v).resolve().is_file()]]
    assert not no_icon, f"pages without an icon of the build: {no_icon}"
    assert icons(out / "index.html") == ["data:,"], "the redirect asks for no icon"


def test_notebook_pages_show_the_executed_outputs_with_alt_text(site):
    for notebook in NOTEBOOKS:
        page = site["out"] / "notebooks" / f"{notebook.stem}.html"
        links = parse(page)
        images = [v for tag, name, v in links.links if tag == "img" and "_images/" in v]
        assert images, f"{page.name} shows no figure of its run"
        unnamed = [alt for alt in links.alts if not alt or "_images/" in alt]
        assert not unnamed, f"{page.name}: figures whose alt text is their file name: {unnamed}"
        text = page.read_text(encoding="utf-8")
        assert "application/vnd.workbook.result" not in text and "Traceback" not in text


def test_notebook_pages_offer_their_downloads_in_the_header_and_their_figures_text_size(site):
    """The header's download button of a notebook page (lib.make.book.download_button) links the executed notebook
    and its source, both files of the build; each figure's <img> carries its smallest text's size (TEXT_PX_CLASS)
    from lib.plotting.show's metadata, which the reader test scales to the page; code blocks get copy.js."""
    for notebook in NOTEBOOKS:
        page = site["out"] / "notebooks" / f"{notebook.stem}.html"
        text = page.read_text(encoding="utf-8")
        header = text[text.index("dropdown-workbook-download-buttons"):text.index("</ul>", text.index(
            "dropdown-workbook-download-buttons"))]
        links = re.findall(r'href="([^"]+)"', header)
        assert links == [f"../{book.DOWNLOADS}/{notebook.name}", f"../{book.DOWNLOADS}/source/{notebook.name}"]
        assert all((page.parent / link).is_file() for link in links)
        sizes = [float(px) / 10 for px in re.findall(rf'<img[^>]*class="[^"]*{book.TEXT_PX_CLASS}(\d+)', text)]
        assert sizes and all(5 < px < 40 for px in sizes), f"{page.name}: figures' smallest text {sizes}"
        assert "_static/copy.js" in text
    assert "dropdown-workbook-download-buttons" not in (site["out"] / "docs" / "teaching.html").read_text()


def test_every_link_and_file_of_the_book_is_on_the_machine(site):
    """Each href/src of every page is an existing file of the build (README's links to notebooks and docs
    included) or a plain link out (a paper, a tool's docs); nothing a page loads comes from another host."""
    out, broken, remote = site["out"], [], []
    for page in site["pages"]:
        for tag, _attribute, value in parse(page).links:
            if re.match(r"^[a-z]+:", value) or value.startswith("//"):
                if tag != "a" and not value.startswith("data:"):
                    remote.append((page.name, tag, value))  # loaded by the page itself: a CDN
                continue
            target = value.split("#")[0].split("?")[0]
            if target and not (page.parent / target).resolve().exists():
                broken.append((str(page.relative_to(out)), value))
    assert not remote, f"pages load files from other hosts: {remote[:5]}"
    assert not broken, f"links to nothing in the book: {broken[:10]}"
    styles = [p for p in (out / "_static").rglob("*.css")]
    assert styles and not [p for p in styles if re.search(r"url\(['\"]?(https?:)?//", p.read_text(errors="replace"))]


def test_math_is_typeset_by_a_mathjax_of_the_build(site):
    page = (site["out"] / "docs" / "teaching.html").read_text(encoding="utf-8")
    assert 'class="math' in page  # docs/teaching.md has $...$ math
    scripts = re.findall(r'<script[^>]*src="([^"]*mathjax[^"]*)"', page, re.I)
    assert scripts == ["../_static/mathjax/tex-chtml.js"]
    assert (site["out"] / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").is_dir()


def test_page_text_shows_streams_as_jupyterlab_does_without_progress_bars_or_silent_results(tmp_path):
    nb = nbformat.v4.new_notebook(metadata={"papermill": {"parameters": {}}})
    cell = nbformat.v4.new_code_cell("run()")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="\rtrain:  50%|##  | 1/2"),
                    nbformat.v4.new_output("stream", name="stdout", text="\rtrain: 100%|####| 2/2"),
                    nbformat.v4.new_output("stream", name="stdout", text="\n"),
                    nbformat.v4.new_output("display_data", data={MIME_TYPE: {"name": "x", "value": 1}}),
                    nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Fig>"},
                                           metadata={"image/png": {"alt": "Figure. a curve"}})]
    nb.cells.append(cell)
    path = tmp_path / "01_x.ipynb"
    cell.outputs.insert(3, nbformat.v4.new_output("stream", name="stdout", text="trained 2 epochs\n"))
    nbformat.write(nb, path)
    provenance, shown = nbformat.reads(book.page_text(path), as_version=4).cells  # the run's line, then the cell
    assert 'class="workbook-provenance"' in provenance.source and "download the executed notebook" in provenance.source
    assert [o["output_type"] for o in shown["outputs"]] == ["stream", "display_data"]
    assert shown["outputs"][0]["text"] == "trained 2 epochs\n"  # the bar's last line is the run's, not the reader's
    assert shown["metadata"][book.ALT_KEY] == ["Figure. a curve"]


def fake_run(path: Path, papermill: dict | None) -> None:
    """An executed copy with papermill metadata `papermill` (a complete run's `duration` unless given)."""
    if papermill is not None and not papermill.get("exception"):
        papermill = {"duration": 1.0, **papermill}
    nb = nbformat.v4.new_notebook(metadata={"papermill": papermill} if papermill is not None else {})
    nbformat.write(nb, path)


def half_run(path: Path, done: int = 2, total: int = 4) -> None:
    """What a run killed mid-way left: `done` of `total` code cells completed, the rest pending, no duration."""
    cells = [nbformat.v4.new_code_cell(f"x = {i}", metadata={"papermill": {
        "status": "completed" if i < done else "pending"}}) for i in range(total)]
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"papermill": {
        "parameters": {"PRESET": "smoke"}, "duration": None, "exception": None}})
    nbformat.write(nb, path)


def test_an_interrupted_run_is_refused_naming_the_file(tmp_path):
    """A run killed after 30 of 40 cells (duration null) was accepted as a page of the book."""
    runs = tmp_path / "runs"
    runs.mkdir()
    for notebook in NOTEBOOKS:
        fake_run(runs / notebook.name, {"parameters": {"PRESET": "smoke"}})
    assert book.executed_notebooks(runs)
    half_run(runs / NOTEBOOKS[1].name)
    with pytest.raises(book.BookError, match=rf"{NOTEBOOKS[1].name} is a run that was interrupted \(2 of 4 code "
                                              r"cells did not complete"):
        book.executed_notebooks(runs)


def test_no_executed_notebooks_says_to_run_make_run_first(tmp_path):
    out = tmp_path / "site"
    with pytest.raises(book.BookError, match=r"no executed notebooks in .*run `make run` first"):
        book.build(tmp_path / "runs", out)
    assert not out.exists()  # checked before Sphinx starts
    with pytest.raises(SystemExit, match="make book: no executed notebooks"):
        book.main(["--runs", str(tmp_path / "runs"), "--out", str(out)])


def test_a_missing_or_failed_run_is_named(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    for notebook in NOTEBOOKS[1:]:
        fake_run(runs / notebook.name, {"parameters": {"PRESET": "smoke"}})
    with pytest.raises(book.BookError, match=rf"lacks the executed copies of {NOTEBOOKS[0].name}"):
        book.executed_notebooks(runs)
    fake_run(runs / NOTEBOOKS[0].name, {"exception": True})
    with pytest.raises(book.BookError, match=rf"{NOTEBOOKS[0].name} is a run that stopped on an error"):
        book.executed_notebooks(runs)
    shutil.copy(NOTEBOOKS[0], runs / NOTEBOOKS[0].name)  # the stripped source, not a run
    with pytest.raises(book.BookError, match=rf"{NOTEBOOKS[0].name} was not written by papermill"):
        book.executed_notebooks(runs)


def test_results_pages_from_another_run_are_noted(tmp_path):
    """The results pages and README table come from `make results`; a book of a newer run says they disagree."""
    run = tmp_path / NOTEBOOKS[0].name
    fake_run(run, {"parameters": {"PRESET": "smoke"}, "end_time": "2026-12-02T08:00:00"})
    page = tmp_path / "pages" / "01-x.md"
    page.parent.mkdir()
    generated = "<!-- generated by `make results` at commit abc1234 from runs/{} (preset {}, run on {}); edit ... -->\n"
    page.write_text(generated.format(run.name, "cpu", "2026-11-30") + "# Notebook 01 in numbers\n")
    assert book.results_from_other_runs([run], page.parent) == [
        "01-x.md is from the cpu run of 2026-11-30 (no fingerprint recorded), its notebook's page from the smoke run "
        f"of 2026-12-02 (fingerprint {book.run_fingerprint(run)})"]
    page.write_text(generated.format(run.name, "smoke", "2026-12-02"))  # a page older than fingerprints
    assert len(book.results_from_other_runs([run], page.parent)) == 1
    page.write_text(generated.replace("run on {}", "run on {}, fingerprint {}").format(
        run.name, "smoke", "2026-12-02", book.run_fingerprint(run)))
    assert book.results_from_other_runs([run], page.parent) == []


def glued_run(path: Path, results: dict, end_time: str = "2026-12-04T08:00:00", commit: str = "abc1234") -> Path:
    """A complete executed copy at `path` whose one cell glued `results`, stamped with `commit`."""
    cell = nbformat.v4.new_code_cell("record(results)", metadata={"papermill": {"status": "completed"}})
    cell.outputs = [nbformat.v4.new_output("display_data", data={MIME_TYPE: results})]
    nb = nbformat.v4.new_notebook(cells=[cell], metadata={
        "papermill": {"parameters": {"PRESET": "cpu"}, "end_time": end_time, "duration": 1.0},
        "workbook": {"commit": commit}})
    nbformat.write(nb, path)
    return path


def written_page(run: Path, pages: Path) -> Path:
    """The results page `make results` writes from `run` into `pages` (lib.make.results.render_page)."""
    from lib.make.results import render_page, run_info

    template = pages / "templates" / "01-x.md"
    template.parent.mkdir(parents=True, exist_ok=True)
    template.write_text("# Notebook 01 in numbers\n\n{{ r['auc'] }}\n")
    page = pages / "01-x.md"
    page.write_text(render_page(read_results(run), run_info(run), template))
    return page


@pytest.mark.parametrize("change", ["values", "commit"])
def test_results_pages_from_another_run_of_the_same_preset_and_day_are_noted(tmp_path, change):
    """The pages were matched to the notebook's run by preset and date only, so two runs of one
    day that differ in their values (or their commit) got no warning; the page records the run's fingerprint."""
    run = glued_run(tmp_path / NOTEBOOKS[0].name, {"auc": 0.9, "preset": "cpu"})
    page = written_page(run, tmp_path / "pages")
    assert book.results_from_other_runs([run], page.parent) == [] and book.other_run_note(page.read_text(),
                                                                                          tmp_path) is None
    glued_run(run, {"auc": 0.8, "preset": "cpu"} if change == "values" else {"auc": 0.9, "preset": "cpu"},
              end_time="2026-12-04T17:00:00", commit="def5678" if change == "commit" else "abc1234")
    notes = book.results_from_other_runs([run], page.parent)
    assert len(notes) == 1 and notes[0].startswith("01-x.md is from the cpu run of 2026-12-04 (fingerprint ")
    assert "numbers may differ" in book.other_run_note(page.read_text(), tmp_path)


def test_make_book_warns_on_stderr_when_the_results_pages_are_not_from_its_runs(tmp_path, monkeypatch, capsys):
    """`make run` then `make book` showed the committed run's results pages and README table
    beside the new run's notebook pages, with at most a note after the build; now a warning on stderr names the
    pages and the front page's table, and says to run `make results` first."""
    runs = tmp_path / "runs"
    runs.mkdir()
    for notebook in NOTEBOOKS:
        glued_run(runs / notebook.name, {"auc": 0.9, "preset": "cpu"})
    pages = tmp_path / "pages"
    written_page(runs / NOTEBOOKS[0].name, pages)
    glued_run(runs / NOTEBOOKS[0].name, {"auc": 0.5, "preset": "cpu"})  # `make run` again, no `make results`
    monkeypatch.setattr(book, "RESULTS_PAGES", pages)
    monkeypatch.setattr(book, "build", lambda runs, out, quiet: out / "index.html")
    book.main(["--runs", str(runs), "--out", str(tmp_path / "site")])
    err = capsys.readouterr().err
    assert err.startswith("make book: WARNING: the results pages and the front page's table") and "01-x.md" in err
    assert "`make results`, then `make book`" in err


def test_an_interrupted_or_failed_build_leaves_the_previous_site_whole_and_a_good_one_replaces_it(tmp_path,
                                                                                                  monkeypatch):
    """Sphinx built into --out in place, so an interrupted `make book` left a site of old and new
    pages. It builds into a folder beside --out and swaps it in when the build succeeded."""
    import sphinx.cmd.build

    runs = tmp_path / "runs"
    runs.mkdir()
    for notebook in NOTEBOOKS:
        fake_run(runs / notebook.name, {"parameters": {"PRESET": "smoke"}})
    out = tmp_path / "site"
    out.mkdir()
    (out / "index.html").write_text("old")
    (out / "gone.html").write_text("old")

    def sphinx_writes(outcome):
        def build_main(args):
            (Path(args[args.index(str(book.ROOT)) + 1]) / "index.html").write_text("new")  # the output folder
            if outcome == "interrupted":
                raise KeyboardInterrupt
            return 0 if outcome == "ok" else 1
        return build_main

    for outcome, error in [("interrupted", KeyboardInterrupt), ("warnings", book.BookError)]:
        monkeypatch.setattr(sphinx.cmd.build, "build_main", sphinx_writes(outcome))
        with pytest.raises(error):
            book.build(runs, out)
        assert sorted((p.name, p.read_text()) for p in out.iterdir()) == [("gone.html", "old"), ("index.html", "old")]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["runs", "site"]  # no half-built folder left
    monkeypatch.setattr(sphinx.cmd.build, "build_main", sphinx_writes("ok"))
    assert book.build(runs, out) == out.resolve() / "index.html"
    assert sorted((p.name, p.read_text()) for p in out.iterdir()) == [("index.html", "new")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs", "site"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(book.BookError, match=r"--out .*file is not a folder"):
        book.build(runs, tmp_path / "file")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_the_plumbing_cells_of_each_notebook_are_found_and_folded(notebook):
    """Imports, parameters, configuration and recording: the fixed anatomy, folded in the book and the report."""
    nb = nbformat.read(notebook, as_version=4)
    roles = book.plumbing_cells(nb)
    assert sorted(roles.values()) == ["configuration", "imports", "parameters", "recording"], roles
    found = {role: nb.cells[i].source for i, role in roles.items()}
    assert "import " in found["imports"] and "check_notebook_parameters" in found["configuration"]
    assert re.search(r'^PRESET: str = "', found["parameters"], re.M) and "record(" in found["recording"]
    book.fold_plumbing(nb)
    assert all(book.FOLDS[role] in nb.cells[i].metadata["tags"] for i, role in roles.items())
    # the notebook's own Findings box (for JupyterLab): made by the imports, written by the recording cell
    assert f'FindingsBox("{notebook.name[:2]}")' in found["imports"]
    assert "findings_box.update(headline, run)" in found["recording"]


def test_the_page_drops_the_notebooks_own_findings_box_for_its_own_under_the_title(tmp_path):
    from lib.templates import FINDINGS_MARK

    run = tmp_path / NOTEBOOKS[0].name
    fake_run(run, {"parameters": {"PRESET": "cpu"}, "end_time": "2026-12-04T08:00:00"})
    nb = nbformat.read(run, as_version=4)
    imports = nbformat.v4.new_code_cell('findings_box = FindingsBox("01")')
    imports.outputs = [nbformat.v4.new_output("display_data", data={"text/markdown": "box"},
                                              metadata={FINDINGS_MARK: True}),
                       nbformat.v4.new_output("stream", text="kept")]
    nb.cells = [nbformat.v4.new_markdown_cell("# Title\n\nintro"), imports, *nb.cells]
    book.add_provenance(nb, run)
    assert [o.output_type for o in nb.cells[1].outputs] == ["stream"]  # the box gone, the rest kept
    assert nb.cells[0].source.startswith("# Title\n\n") and "intro" in nb.cells[0].source


def test_a_results_page_from_another_run_says_so_on_the_page(tmp_path):
    run = tmp_path / NOTEBOOKS[0].name
    fake_run(run, {"parameters": {"PRESET": "cpu"}, "end_time": "2026-12-04T08:00:00"})
    page = ("<!-- generated by `make results` at commit abc1234 from runs/{} (preset cpu, run on {}); edit ... -->\n"
            "# Notebook 01 in numbers\n")
    assert book.other_run_note(page.format(run.name, "2026-12-04").replace(
        "2026-12-04", f"2026-12-04, fingerprint {book.run_fingerprint(run)}"), tmp_path) is None
    note = book.other_run_note(page.format(run.name, "2026-12-02"), tmp_path)
    assert "from the `cpu` run of 2026-12-02" in note and "the `cpu` run of 2026-12-04" in note


def test_each_notebook_page_opens_with_its_provenance_line_and_findings(site):
    """Under the title: the run (preset, date, commit, processor, stored or computed) and three or more findings,
    each with our number beside the paper's (lib.make.results.findings, from the smoke run here)."""
    for notebook in NOTEBOOKS:
        text = (site["out"] / "notebooks" / f"{notebook.stem}.html").read_text(encoding="utf-8")
        line = re.search(r'<div class="workbook-provenance">(.*?)</div>', text, re.S)
        assert line and "preset <code" in line[1] and "commit <code" in line[1], notebook.name
        assert f'href="../{book.DOWNLOADS}/{notebook.name}"' in line[1]
        assert (site["out"] / book.DOWNLOADS / notebook.name).is_file()
        box = re.search(r'<div class="workbook-findings">(.*?)</div>', text, re.S)
        assert box and box[1].count("<li>") >= 3 and "paper" in box[1], notebook.name
        article = text[text.index("<article"):]  # the page's own text, not the menus around it
        assert article.index("workbook-provenance") < article.index("workbook-findings") < article.index("<h2")
