"""Run a notebook by papermill the way the notebook tests do, and return its glued results."""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import time
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

import papermill as pm
import pytest
from conftest import session_root
from filelock import FileLock

from lib.glue import MIME_TYPE, read_results
from lib.make.report import IPCKernelManager, temporary_environ
from lib.provenance import stamp

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def notebook_runner(filename: str) -> Callable[..., dict]:
    """`run(tmp_path, name, cache, cell_timeout=600, env=None, **parameters)` for notebooks/`filename`.

    Each run gets the cache folder `cache` (a fresh one tests what a first run computes), except for
    decoded datasets (CIFAR-10), inputs rather than results, kept in the test session's cache so they are
    decoded once (`WORKBOOK_DATASET_CACHE`).
    Parameters default to the smoke preset without progress bars or the interactive explorer; `env` adds
    environment variables for the kernel.
    """
    notebook = NOTEBOOKS / filename

    def run(tmp_path: Path, name: str, cache: Path, cell_timeout: int = 600, env: dict | None = None,
            **parameters) -> dict:
        out = tmp_path / f"{name}.ipynb"
        parameters = {"PRESET": "smoke", "PROGRESS": False, "EXPLORER": False, **parameters}
        with temporary_environ({"WORKBOOK_DATASET_CACHE": os.environ["WORKBOOK_CACHE_SESSION"],
                                "WORKBOOK_CACHE": str(cache),  # the data root absolute: the kernel's cwd moves
                                "WORKBOOK_DATA": str(Path(os.environ.get("WORKBOOK_DATA", "data")).resolve()),
                                **(env or {})}):
            pm.execute_notebook(notebook, out, parameters=parameters, cwd=notebook.parent, progress_bar=False,
                                execution_timeout=cell_timeout, kernel_manager_class=IPCKernelManager)
        stamp(out)  # as `make run` does (lib.make.report.execute): the pages built from it name its commit
        return read_results(out)

    run.notebook = notebook
    return run


def shared_once(tmp_path_factory: pytest.TempPathFactory, name: str, compute: Callable[[Path], dict]) -> dict:
    """`compute(folder)` run once per test session, whichever worker asks first; the others wait for it and
    read what it returned. `folder` (in the session folder every worker shares) is where it writes its files.
    A computation that failed is not retried: every later caller gets the same error."""
    root = session_root(tmp_path_factory) / "shared" / name
    root.mkdir(parents=True, exist_ok=True)
    done = root / "result.pickle"
    with FileLock(str(root) + ".lock"):
        if not done.exists():
            try:
                value = {"ok": compute(root)}
            except Exception as err:  # noqa: BLE001  (recorded for the other callers, then raised)
                value = {"error": f"{type(err).__name__}: {err}"}
            done.write_bytes(pickle.dumps(value))
        value = pickle.loads(done.read_bytes())
    if "error" in value:
        pytest.fail(f"the shared run {name!r} failed: {value['error']}")
    return value["ok"]


def smoke_run(tmp_path_factory: pytest.TempPathFactory, run: Callable[..., dict]) -> dict:
    """The notebook's smoke run, run once per test session (across xdist workers): {"results", "seconds",
    "tmp" (the run's folder, its cache in tmp / "cache"), "notebook" (the executed copy), "number", "records"
    (the entries of its stored layer, as `python -m lib.make.store_writer` records them)}. Tests that write files
    put them in their own tmp_path, not in "tmp"."""

    def compute(tmp: Path) -> dict:
        from lib.store import RECORD_ENV

        start = time.perf_counter()
        results = run(tmp, "smoke", tmp / "cache", env={RECORD_ENV: str(tmp / "records.jsonl")})
        return {"results": results, "seconds": time.perf_counter() - start, "tmp": tmp,
                "notebook": tmp / "smoke.ipynb", "number": run.notebook.name[:2], "records": tmp / "records.jsonl"}

    return shared_once(tmp_path_factory, f"smoke-{run.notebook.stem}", compute)


def smoke_fixture(run: Callable[..., dict]):
    """The fixture every notebook test file uses for its smoke run (`smoke_run`)."""

    @pytest.fixture(scope="module")
    def smoke(tmp_path_factory: pytest.TempPathFactory) -> dict:
        return smoke_run(tmp_path_factory, run)

    return smoke


def reading_outputs(executed: Path) -> dict[str, str]:
    """{cell id: the Markdown it rendered, whitespace collapsed} of every reading cell (`lib.reading`) of an executed
    notebook; each one rendered text and raised no error."""
    texts = {}
    for cell in json.loads(Path(executed).read_text(encoding="utf-8"))["cells"]:
        if "reading" not in cell["metadata"].get("tags", []):
            continue
        outputs = cell.get("outputs", [])
        assert not any(o["output_type"] == "error" for o in outputs), f"reading cell {cell['id']} failed"
        markdown = ["".join(o["data"]["text/markdown"]) for o in outputs if "text/markdown" in o.get("data", {})]
        assert markdown and all(m.strip() for m in markdown), f"reading cell {cell['id']} rendered no text"
        texts[cell["id"]] = " ".join(" ".join(markdown).split())
    return texts


def smoke_book(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The book (`make book`) built once per test session from `smoke_runs_folder`: {"out" (the site's folder),
    "runs" (the executed notebooks), "seconds" (the build's wall time)}."""
    from lib.make.book import build

    def compute(folder: Path) -> dict:
        runs = smoke_runs_folder(tmp_path_factory, folder / "runs")
        start = time.perf_counter()
        front = build(runs, folder / "site")
        return {"out": front.parent, "runs": runs, "seconds": time.perf_counter() - start}

    return shared_once(tmp_path_factory, "book", compute)


def smoke_runs_folder(tmp_path_factory: pytest.TempPathFactory, folder: Path) -> Path:
    """`folder` filled as `make run` fills runs/: the executed smoke copy of every notebook, named as it is."""
    folder.mkdir(parents=True, exist_ok=True)
    for notebook in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        shutil.copy(smoke_run(tmp_path_factory, notebook_runner(notebook.name))["notebook"], folder / notebook.name)
    return folder


def assert_results_page_renders(smoke: dict) -> str:
    """The notebook's docs/results template fills from the smoke run's glued results (no key it names is
    missing), as `make results` fills it from the default preset's run; returns the page."""
    from lib.make.results import render_page, run_info

    template = next((NOTEBOOKS.parent / "docs" / "results" / "templates").glob(f"{smoke['number']}-*.md"))
    page = render_page(smoke["results"], run_info(smoke["notebook"]), template)
    assert "{{" not in page and f"Preset `{smoke['results']['preset']}`" in page
    return page


class ConfigCell:
    """A notebook's imports run once in one kernel, then its parameters cell, papermill's injected
    parameters and its configuration cell once per case: the bad-parameter cases of a notebook share one
    kernel start and one set of imports (seconds each instead of a papermill run each). The kernel's cache
    folder is `cache`, which a rejected case must leave uncreated (nothing computed before the check)."""

    def __init__(self, notebook: Path, cache: Path):
        import nbformat

        cells = [c for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code"]
        first = next(i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", []))
        self.imports, self.parameters, self.config = cells[:first], cells[first].source, cells[first + 1].source
        self.cache = cache
        env = {**os.environ, "WORKBOOK_CACHE": str(cache),
               "WORKBOOK_DATA": str(Path(os.environ.get("WORKBOOK_DATA", "data")).resolve())}
        self.manager = IPCKernelManager(kernel_name="python3")  # no TCP port two kernels could both pick
        self.manager.start_kernel(cwd=str(notebook.parent), env=env)
        self.client = self.manager.blocking_client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=300)
        for cell in self.imports:
            assert self._execute(cell.source) is None, "the notebook's imports failed"

    def _execute(self, code: str) -> str | None:
        reply = self.client.execute_interactive(code, timeout=600, output_hook=lambda msg: None)
        content = reply["content"]
        return None if content["status"] == "ok" else f"{content['ename']}: {content['evalue']}"

    def error(self, parameters: dict) -> str | None:
        """The configuration cell's error with the smoke preset and `parameters` injected, or None."""
        from papermill.translators import translate_parameters

        injected = {"PRESET": "smoke", "PROGRESS": False, "EXPLORER": False, **parameters}
        assert self._execute(self.parameters) is None
        assert self._execute(translate_parameters("python3", "python", injected, "Parameters")) is None
        return self._execute(self.config)

    def assert_rejects(self, parameters: dict, message: str) -> None:
        """`parameters` stop the configuration cell within a minute, with an error matching `message`,
        before anything is written to the cache."""
        start = time.perf_counter()
        error = self.error(parameters)
        assert error is not None and re.search(message, error), f"{parameters}: {error}"
        assert time.perf_counter() - start < 60
        assert not self.cache.exists()

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def config_cell_fixture(run: Callable[..., dict]):
    """A module-scoped `config_cell` fixture: one ConfigCell kernel for the notebook of `run`."""

    @pytest.fixture(scope="module")
    def config_cell(tmp_path_factory: pytest.TempPathFactory):
        cell = ConfigCell(run.notebook, tmp_path_factory.mktemp("config") / "cache")
        yield cell
        cell.close()

    return config_cell


class NotebookChecks:
    """The checks every notebook's test file makes, written once. A file subclasses it with its notebook's settings,
    `class TestEveryNotebook(NotebookChecks)`, and pytest runs them with that file's `smoke` and `config_cell`
    fixtures: on the worker that runs the rest of the file, from the session's one smoke run of the notebook."""

    run: Callable[..., dict]  # notebook_runner(<the notebook>)
    presets: dict  # the package's PRESETS: their dataclass names the parameters (lib.params.setting_parameters)
    checked_by_name: frozenset[str] = frozenset()  # parameters whose checks use their own name
    max_runtime_s: float  # what the smoke run may take, with room for a loaded CI machine
    bad_parameters: list[tuple[dict, str]]  # (parameters, the error they raise) for the configuration cell

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if metafunc.function.__name__ == "test_bad_parameters_fail_before_any_work":
            metafunc.parametrize("parameters, message", self.bad_parameters)

    def test_smoke_run_reads_cleanly(self, smoke):
        assert_clean_outputs(smoke["notebook"])

    def test_results_page_renders_from_the_smoke_run(self, smoke):
        assert_results_page_renders(smoke)

    def test_the_findings_box_under_the_title_shows_what_the_book_page_shows(self, smoke):
        """The notebook's own box (lib.templates.FindingsBox: what JupyterLab shows, under the imports) ends the run
        with the findings that the book and the report put under the page's title, from the recorded results."""
        from lib.templates import FINDINGS_MARK, NO_FINDINGS, findings_text

        nb = json.loads(Path(smoke["notebook"]).read_text(encoding="utf-8"))
        first = next(c for c in nb["cells"] if c["cell_type"] == "code")
        boxes = [(c["id"], "".join(o["data"]["text/markdown"])) for c in nb["cells"] for o in c.get("outputs", [])
                 if o.get("metadata", {}).get(FINDINGS_MARK)]
        expected = findings_text(smoke["number"], smoke["results"])
        assert expected.count("\n- ") >= 3  # three sentences or more, even on the smoke preset
        assert len(boxes) == 1 and boxes[0][0] == first["id"] and boxes[0][1].endswith(expected or NO_FINDINGS)
        line = boxes[0][1].removesuffix(expected).strip()  # which run: as the book's line says it, but live
        r = smoke["results"]
        assert line.startswith('<div class="workbook-provenance">') and "**This run:**" in line
        assert f"preset `{r['preset']}`" in line and f"on {r['device']}" in line and "commit `" in line

    def test_smoke_run_stays_small(self, smoke):
        """The bound guards against a preset that silently grew."""
        assert smoke["results"]["runtime_s"] < self.max_runtime_s

    def test_every_parameter_is_named_in_the_configuration_cells_errors(self):
        from lib.params import setting_parameters

        declared = declared_parameters(self.run.notebook)
        for preset in self.presets.values():  # every preset's config is set by the same parameters
            assert_parameters_are_named(self.run.notebook, setting_parameters(preset, declared), self.checked_by_name)

    def test_bad_parameters_fail_before_any_work(self, config_cell, parameters, message):
        config_cell.assert_rejects(parameters, message)  # the configuration cell, in one kernel for all cases


COMMON_PARAMETERS = {"PRESET", "DEVICE", "NUM_THREADS", "FORCE_RECOMPUTE", "PROGRESS", "EXPLORER", "FIGURES_DIR",
                     "SOURCE"}


def declared_parameters(notebook: Path) -> list[str]:
    """The annotated names of the notebook's cell tagged `parameters`, in order."""
    import ast

    import nbformat

    cell = next(c for c in nbformat.read(notebook, as_version=4).cells if "parameters" in c.metadata.get("tags", []))
    return [node.target.id for node in ast.parse(cell.source).body if isinstance(node, ast.AnnAssign)]


def assert_parameters_are_named(notebook: Path, names: dict[str, str], checked_by_name: set[str] = frozenset()) -> None:
    """`names` (setting -> parameter, as `lib.params.setting_parameters` derives them) names only parameters the
    notebook declares, and every declared parameter but the common ones and `checked_by_name` (checks that use the
    parameter's own name) is among them, so a range error in the configuration cell names what the user passed."""
    declared = declared_parameters(notebook)
    assert set(names.values()) <= set(declared), set(names.values()) - set(declared)
    assert set(declared) - COMMON_PARAMETERS - set(checked_by_name) == set(names.values())


def assert_fails_fast(run: Callable[..., dict], tmp_path: Path, parameters: dict, message: str) -> None:
    """Bad `parameters` stop the notebook within a minute with an error matching `message`, before it
    writes anything to its cache."""
    start = time.perf_counter()
    with pytest.raises(pm.PapermillExecutionError, match=message):
        run(tmp_path, "bad", tmp_path / "cache", **parameters)
    assert time.perf_counter() - start < 60
    assert not (tmp_path / "cache").exists()


HEADLINE_ROWS = 40  # the most rows the headline summary may show (about 1,000 px in a browser)


# A displayed table's width as JupyterLab draws it (sans-serif, 0.5 em padding on each side of a cell), from its
# text: the widest cell of each column. Calibrated on the widths chromium drew in `make test-browser`: a character
# of a bold header cell, a digit, a capital or a sign takes CHAR_PX; a lower-case letter, a space or light
# punctuation in a body cell takes NARROW_CHAR_PX. Against chromium, on the 31 tables wider than 500 px of the
# smoke runs at f86abc9, the estimate was 0.93-1.08 times the drawn width, median 1.00.
TABLE_WIDTH_PX = 900  # the widest a table may be: the page width left beside JupyterLab's sidebar or the book's menu
CHAR_PX, NARROW_CHAR_PX, CELL_PADDING_PX = 7.8, 6.5, 13
NARROW = set("abcdefghijklmnopqrstuvwxyz .,:;()'")


def text_px(text: str, bold: bool) -> float:
    """The width in px of a cell's text (CHAR_PX, NARROW_CHAR_PX above)."""
    return sum(CHAR_PX if bold or ch not in NARROW else NARROW_CHAR_PX for ch in text)


class TableText(HTMLParser):
    """The text of every cell of every <table> in an HTML output, as [table][row] -> [(text, colspan, rowspan, bold)]
    (a header cell, <th>, is bold)."""

    def __init__(self):
        super().__init__()
        self.tables: list[list[list[tuple[str, int, int, bool]]]] = []
        self._cell: list[str] | None = None
        self._span = (1, 1, False)

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            attrs = dict(attrs)
            self._cell, self._span = [], (int(attrs.get("colspan") or 1), int(attrs.get("rowspan") or 1), tag == "th")

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self.tables and self.tables[-1]:
            self.tables[-1][-1].append((" ".join("".join(self._cell).split()), *self._span))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def table_widths_px(html: str) -> list[float]:
    """The estimated width in px of each table in `html` at its widest (no cell wrapped)."""
    parser = TableText()
    parser.feed(html)
    return [_width_px(rows) for rows in parser.tables]


def markdown_table_widths_px(markdown: str) -> list[float]:
    """The estimated width in px of each pipe table in `markdown` (a reading cell's output), as drawn: emphasis
    marks and backslash escapes take no room."""
    tables, rows = [], []
    for line in markdown.splitlines() + [""]:
        line = line.strip()
        if line.startswith("|") and line.endswith("|") and len(line) > 1:
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line[1:-1])]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):  # the header's separator row
                rows.append([(re.sub(r"[*`\\]", "", c), 1, 1, not rows) for c in cells])  # the header is bold
        elif rows:
            tables.append(rows)
            rows = []
    return [_width_px(rows) for rows in tables]


def _width_px(rows: list[list[tuple[str, int, int, bool]]]) -> float:
    """Per column, its widest cell, plus each cell's padding; a cell spanning rows holds its column in those rows,
    and a cell spanning columns (a two-level header) widens them evenly where its text is wider than they are."""
    px: dict[int, float] = {}
    spans: list[tuple[int, int, float]] = []  # (first column, columns, text px) of each cell spanning columns
    held: dict[int, int] = {}  # column -> rows still covered by a cell from a row above
    for row in rows:
        position = 0
        for text, colspan, rowspan, bold in row:
            while held.get(position, 0) > 0:
                position += 1
            if colspan == 1:
                px[position] = max(px.get(position, 0), text_px(text, bold))
            else:
                spans.append((position, colspan, text_px(text, bold)))
            for column in range(position, position + colspan):
                held[column] = rowspan
            position += colspan
        held = {column: left - 1 for column, left in held.items() if left > 1}
    for first, count, width in spans:
        columns = range(first, first + count)
        short = width - sum(px.get(c, 0) for c in columns) - (count - 1) * CELL_PADDING_PX
        for column in columns:
            px[column] = px.get(column, 0) + max(short, 0) / count
    return sum(width + CELL_PADDING_PX for width in px.values())


def displayed_table_widths(executed: Path) -> list[tuple[str, float]]:
    """(cell id, estimated px) of every table an executed notebook displays: HTML tables and the Markdown tables of
    its reading cells."""
    nb = json.loads(Path(executed).read_text(encoding="utf-8"))
    widths = []
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "text/html" in data:
                widths += [(cell.get("id", "?"), w) for w in table_widths_px("".join(data["text/html"]))]
            elif "text/markdown" in data:
                widths += [(cell.get("id", "?"), w) for w in markdown_table_widths_px("".join(data["text/markdown"]))]
    return widths


def assert_tables_fit(executed: Path) -> None:
    """No table the executed notebook shows is wider than TABLE_WIDTH_PX (estimated)."""
    wide = [(cell, round(px)) for cell, px in displayed_table_widths(executed) if px > TABLE_WIDTH_PX]
    assert not wide, f"tables wider than {TABLE_WIDTH_PX} px (cell id, estimated px): {wide}"


def assert_clean_outputs(executed: Path) -> None:
    """What a reader of the executed notebook (and of its HTML report) sees is clean: results are recorded
    silently (the glue outputs carry no text) and one short, labelled summary table shows the headline, every
    figure has alt text, a number ("Figure 1:", "Figure A:"; one each) and no legend on its data, no table wider
    than the page or headed by code names, no stray `PosixPath(...)` and no widget progress bars (whose state is
    lost outside a live front end)."""
    nb = json.loads(Path(executed).read_text(encoding="utf-8"))
    images, labels = 0, set()
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if MIME_TYPE in data:
                assert set(data) == {MIME_TYPE}, f"a glued result is displayed as text: {data.get('text/plain')}"
            if "image/png" in data:
                images += 1
                meta = output.get("metadata", {}).get("image/png", {})
                alt = meta.get("alt", "")
                assert alt.startswith(("Figure", "Explorer")), f"a figure without alt text in {cell['id']}"
                if not alt.startswith("Explorer"):  # numbered as lib.plotting.show numbers it, once each
                    label = re.search(r"\bFigure (\w+):", alt)
                    assert label, f"an unnumbered figure in {cell['id']}: {alt[:80]}"
                    assert label.group(1) not in labels, f"two figures {label.group(1)} ({cell['id']})"
                    labels.add(label.group(1))
                assert not meta.get("legend_over_data"), f"a legend on the data in {cell['id']}: {meta.get('alt')}"
            assert "application/vnd.jupyter.widget-view+json" not in data, f"a widget output in {cell['id']}"
            assert "PosixPath(" not in "".join(data.get("text/plain", "")), f"a stray path in {cell['id']}"
    assert images > 0
    assert_headline_shown(nb)
    assert_tables_fit(executed)
    assert_headers_in_readers_words(nb)


def assert_headers_in_readers_words(nb: dict) -> None:
    """No header or row label of a table the notebook shows is a code name (`lib.tables.reader_name` would change
    it), except the recorded results' names, shown as code (`lib.glue.record`): every table went through the
    notebook's `use_reader_names()`, none around it (a Styler, `to_html`)."""
    import html as html_module

    from lib.tables import reader_name

    found = []
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            for th in re.findall(r"<th[^>]*>(.*?)</th>", "".join(output.get("data", {}).get("text/html", "")), re.S):
                if "<code>" not in th:
                    text = " ".join(html_module.unescape(re.sub(r"<[^>]+>", "", th)).split())
                    if reader_name(text) != text:
                        found.append((cell.get("id"), text))
    assert not found, f"tables show code names (cell id, label): {found}"


def assert_headline_shown(nb: dict) -> None:
    """The cell that records the results shows them, in at most HEADLINE_ROWS rows (`lib.glue.summary_table`
    refuses lists of unnamed numbers)."""
    recording = [c for c in nb["cells"] if any(MIME_TYPE in o.get("data", {}) for o in c.get("outputs", []))]
    html = ["".join(o["data"]["text/html"]) for o in recording[-1]["outputs"] if "text/html" in o.get("data", {})]
    assert len(html) == 1, f"the results of {recording[-1]['id']} are recorded but no summary table is shown"
    rows = html[0].count("<tr>")
    assert 0 < rows <= HEADLINE_ROWS, f"the headline summary has {rows} rows (at most {HEADLINE_ROWS})"
