"""The workbook in a real browser (`make test-browser`): Playwright from PyPI drives Debian's chromium
(/usr/bin/chromium; never `playwright install`, which downloads a browser).

- JupyterLab: each notebook, with PRESET="smoke" in its parameters cell, is opened and run with Run > Run All
  Cells; no error output may be shown. Then every control of its explorer (the `ipywidgets.interact` cell) is
  moved as a reader moves it (a slider dragged, another dropdown entry picked, a checkbox clicked) and the
  explorer's figure must change, with no error shown.
- The book (`make book`, built from the same smoke runs): every page loads, every <img> has loaded, the math is
  typeset, the search finds the notebooks, and no request leaves the machine.

The kernels read the cache of the session's smoke runs (tests/notebook_runner.py), so a notebook's run in
JupyterLab shows what its smoke run computed, quickly. Screenshots of each explorer before and after each move
go to $WORKBOOK_BROWSER_SHOTS (default: this test's temporary folder). Skipped unless pytest is given
--run-browser (`make test-browser`), and with the reason when chromium is not installed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from notebook_runner import TABLE_WIDTH_PX, notebook_runner, smoke_book, smoke_run

from lib.tables import code_name_pattern

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
CHROMIUM = Path(os.environ.get("WORKBOOK_CHROMIUM", "/usr/bin/chromium"))
RUN_TIMEOUT_S = 900  # one notebook's Run All (a smoke run from the cache takes a minute alone, 3 beside two trainings)
REDRAW_TIMEOUT_S = 120  # one explorer redraw after a control moved
CONTROL_TIMEOUT_S = 300  # every move of one explorer control, redraws included
ACTION_TIMEOUT_MS = 30_000  # one browser action (a click, a locator, a screenshot)
# one book page's load (its load event, its images, MathJax's typesetting): over 30 s for one page once when `make
# test` ran these tests beside the other worker's (CI, 2 cores)
PAGE_LOAD_TIMEOUT_MS = 180_000

pytestmark = [
    pytest.mark.browser,
    # .ci/run sets WORKBOOK_REQUIRE_BROWSER: there a missing chromium fails the tests instead of skipping them
    pytest.mark.skipif(not CHROMIUM.is_file() and not os.environ.get("WORKBOOK_REQUIRE_BROWSER"),
                       reason=f"Debian's chromium is not installed at {CHROMIUM} "
                       "(`apt-get install chromium`; never `playwright install`, which downloads a browser)"),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_http(url: str, timeout_s: float, what: str) -> None:
    """Wait until `url` answers; fails, naming `what`, after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError as err:
            if time.monotonic() > deadline:
                pytest.fail(f"{what} did not answer within {timeout_s:.0f} s ({err})")
            time.sleep(0.5)


def off_machine(url: str) -> bool:
    """A request to a host other than this machine's loopback (data: and blob: URLs are no requests)."""
    return not re.match(r"^(data:|blob:|about:|https?://(127\.0\.0\.1|localhost)(:\d+)?/)", url)


def smoke_copy(notebook: Path, folder: Path) -> Path:
    """The notebook with PRESET = "smoke" in its parameters cell, written to `folder`: what a reader types."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", []))
    text = "".join(cell["source"])
    assert re.search(r'^PRESET: str = "\w+"', text, re.M), "the parameters cell sets PRESET first"
    cell["source"] = re.sub(r'^PRESET: str = "\w+"', 'PRESET: str = "smoke"', text, count=1, flags=re.M)
    target = folder / notebook.name
    target.write_text(json.dumps(nb), encoding="utf-8")
    return target


@contextlib.contextmanager
def jupyterlab(folder: Path, kernel_env: dict[str, str]) -> Iterator[str]:
    """JupyterLab serving `folder` on a free loopback port with a token of its own, its settings, runtime and
    config folders temporary (no news or update checks, every cell kept in the page), its kernels started with
    `kernel_env` added to this environment, and its app object in the page (`window.jupyterapp`: the test reads
    the notebook's model, since a reading cell's collapsed input shows no execution count). Yields "base
    URL|token"."""
    settings = folder.parent / "lab-settings" / "@jupyterlab"
    for plugin, values in {"notebook-extension/tracker": {"windowingMode": "none"},
                           "apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False}}.items():
        (settings / plugin).parent.mkdir(parents=True, exist_ok=True)
        (settings / f"{plugin}.jupyterlab-settings").write_text(json.dumps(values))
    port, token = free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(folder.parent / "lab-config"),
           "JUPYTER_RUNTIME_DIR": str(folder.parent / "lab-runtime"), "JUPYTERLAB_SETTINGS_DIR": str(settings.parent),
           "JUPYTERLAB_WORKSPACES_DIR": str(folder.parent / "lab-workspaces"), **kernel_env,
           "WORKBOOK_DATA": str(Path(os.environ.get("WORKBOOK_DATA", ROOT / "data")).resolve())}
    args = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
            f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={folder}",
            "--LabApp.expose_app_in_browser=True"]
    if os.geteuid() == 0:
        args.append("--allow-root")
    log = folder.parent / "lab.log"
    with open(log, "w") as out:
        server = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        # minutes when the server's imports share the cores with training processes at a higher priority
        wait_for_http(f"{base}/api/status?token={token}", timeout_s=600, what=f"JupyterLab (its log: {log})")
        yield f"{base}|{token}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = Path(os.environ.get("WORKBOOK_BROWSER_SHOTS") or tmp_path_factory.mktemp("shots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """JupyterLab on a folder of smoke copies of the notebooks, its kernels on a copy of the smoke runs' caches."""
    root = tmp_path_factory.mktemp("lab")
    work, cache = root / "notebooks", root / "cache"
    work.mkdir()
    for notebook in NOTEBOOKS:
        run = smoke_run(tmp_path_factory, notebook_runner(notebook.name))
        shutil.copytree(run["tmp"] / "cache", cache, dirs_exist_ok=True)
        smoke_copy(notebook, work)
    # the smoke runs' decoded CIFAR-10 is in the session's cache (notebook_runner), their results in `cache`
    kernel_env = {"WORKBOOK_CACHE": str(cache), "WORKBOOK_DATASET_CACHE": os.environ["WORKBOOK_CACHE_SESSION"]}
    with jupyterlab(work, kernel_env) as url:
        yield url


# JavaScript evaluated in the notebook page: the state of the open notebook, from its model (a cell whose input
# is collapsed, as a reading cell's is, shows no prompt), and the errors its outputs show.
CELL_STATE = """() => {
  const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const model = panel && panel.content && panel.content.model;
  const counts = [];
  for (let i = 0; model && i < model.cells.length; i++) {
    const cell = model.cells.get(i);
    if (cell.type === 'code') counts.push(cell.executionCount);
  }
  const kernel = panel && panel.sessionContext && panel.sessionContext.session
                 && panel.sessionContext.session.kernel;
  const errors = [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')]
    .filter(e => /application\\/vnd\\.jupyter\\.(stderr|error)/.test(e.getAttribute('data-mime-type') || '')
                 || /Traceback \\(most recent call last\\)/.test(e.textContent))
    .map(e => e.textContent.slice(0, 600));
  const dialogs = [...document.querySelectorAll('.jp-Dialog')].map(e => e.textContent.slice(0, 200));
  return {counts, errors, dialogs, kernel: kernel ? kernel.status : 'none', idle: !!kernel && kernel.status === 'idle'};
}"""
# the width of every table the outputs show, at its widest (no cell wrapped): [code cell position from 1, px]
TABLE_WIDTHS = """() => {
  const cells = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')];
  return [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output table')].map(table => {
    const width = table.style.width;
    table.style.width = 'max-content';
    const px = table.getBoundingClientRect().width;
    table.style.width = width;
    return [cells.indexOf(table.closest('.jp-CodeCell')) + 1, Math.round(px)];
  });
}"""
# the explorer's figure (its image data) or, when it shows none, its text
EXPLORER_VIEW = """(box) => {
  const out = box.querySelector('.widget-output');
  const img = out && out.querySelector('img');
  return img ? img.getAttribute('src') : (out ? 'text:' + out.textContent : '');
}"""


def not_run(state: dict) -> list[int]:
    """The positions (from 1) of the code cells that have no execution count."""
    return [i for i, count in enumerate(state["counts"], 1) if count is None]


def run_all(page, name: str, timeout_s: float) -> dict:
    """Run > Run All Cells, then wait until every code cell has its execution count and the kernel is idle, or
    an error is shown; fails, naming the notebook and the cells still waiting, after `timeout_s`. Returns the last
    CELL_STATE."""
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    deadline = time.monotonic() + timeout_s
    while True:
        time.sleep(2)
        state = page.evaluate(CELL_STATE)
        if state["idle"] and state["counts"] and (not not_run(state) or state["errors"]):
            return state
        if time.monotonic() > deadline:
            pytest.fail(f"{name}: Run All did not finish within {timeout_s:.0f} s: code cells {not_run(state)} of "
                        f"{len(state['counts'])} have not run; kernel {state['kernel']}, dialogs {state['dialogs']}")


def open_notebook(page, url: str, name: str) -> None:
    """Open the notebook in JupyterLab and wait for its kernel (accepting the kernel dialog's default)."""
    base, token = url.split("|")
    # reset: no tab of an earlier notebook restored
    page.goto(f"{base}/lab/tree/{name}?reset&token={token}", timeout=PAGE_LOAD_TIMEOUT_MS)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
    deadline = time.monotonic() + 120
    while not (state := page.evaluate(CELL_STATE))["idle"]:
        if page.locator(".jp-Dialog .jp-mod-accept").count():  # "Select Kernel": Python 3 preselected
            page.locator(".jp-Dialog .jp-mod-accept").click()
        if time.monotonic() > deadline:
            pytest.fail(f"{name}: the kernel did not start within 2 minutes (kernel {state['kernel']}, dialogs "
                        f"{state['dialogs']})")
        time.sleep(1)


def shut_down_kernels(url: str) -> None:
    """Shut down every kernel of the JupyterLab at `url` (the next notebook runs beside none)."""
    base, token = url.split("|")
    headers = {"Authorization": f"token {token}"}
    with urllib.request.urlopen(urllib.request.Request(f"{base}/api/sessions", headers=headers), timeout=30) as r:
        sessions = json.load(r)
    for session in sessions:
        request = urllib.request.Request(f"{base}/api/sessions/{session['id']}", headers=headers, method="DELETE")
        urllib.request.urlopen(request, timeout=60).close()


def controls(box) -> list:
    """The explorer's controls: every child of the interact box but its output."""
    return [c for c in box.locator(":scope > .jupyter-widgets, :scope > .widget-inline-hbox").all()
            if "widget-output" not in (c.get_attribute("class") or "")]


def moves(page, control) -> list[tuple[str, Callable[[], None]]]:
    """Ways a reader changes `control`, tried in turn until the figure changes: (what it does, doing it)."""
    kind = control.get_attribute("class") or ""
    def words(text: str) -> str:
        return " ".join(re.split(r"[\s\u200b]+", text)).strip()

    # a checkbox's description is beside it, its label empty
    label = words((control.locator(".widget-label").all_inner_texts() or [""])[0]) or words(control.inner_text())
    if "widget-dropdown" in kind:
        select = control.locator("select")
        options = select.locator("option").all_inner_texts()
        current = select.evaluate("s => s.selectedIndex")
        return [(f"{label}: picked {options[i]!r}", lambda i=i: select.select_option(index=i))
                for i in range(len(options)) if i != current][:3]
    if "widget-slider" in kind:
        def drag(end: float) -> None:
            handle, base = control.locator(".noUi-handle"), control.locator(".noUi-base")
            handle.scroll_into_view_if_needed()
            h, b = handle.bounding_box(), base.bounding_box()
            page.mouse.move(h["x"] + h["width"] / 2, h["y"] + h["height"] / 2)
            page.mouse.down()
            page.mouse.move(b["x"] + end * b["width"], h["y"] + h["height"] / 2, steps=10)
            page.mouse.up()

        return [(f"{label}: dragged to the {side} end", lambda end=end: drag(end))
                for side, end in (("right", 1.0), ("left", 0.0))]
    if "widget-checkbox" in kind:
        return [(f"{label}: clicked", lambda: control.locator("input").click())]
    pytest.fail(f"an explorer control this test cannot move: {label} ({kind})")


def wait_for_redraw(page, box, before: str, what: str) -> str:
    """The explorer's view once the redraw the move asked for is over: the kernel went busy and is idle again
    (a second later too: a redraw queued behind it), or it never went busy within 10 s (nothing to redraw).
    Fails, naming `what` (the notebook, the control and the move), when it is not over within REDRAW_TIMEOUT_S."""
    start = time.monotonic()
    busy_seen, idle_since = False, None
    while True:
        time.sleep(0.25)
        state = page.evaluate(CELL_STATE)
        busy_seen |= not state["idle"]
        idle_since = (idle_since or time.monotonic()) if state["idle"] else None
        settled = idle_since is not None and time.monotonic() - idle_since > 1
        if settled and (busy_seen or box.evaluate(EXPLORER_VIEW) != before or time.monotonic() - start > 10):
            return box.evaluate(EXPLORER_VIEW)
        if time.monotonic() - start > REDRAW_TIMEOUT_S:
            pytest.fail(f"{what}: the explorer did not redraw within {REDRAW_TIMEOUT_S} s (kernel {state['kernel']}, "
                        f"dialogs {state['dialogs']}, errors {state['errors'][:1]})")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_notebook_runs_in_jupyterlab_and_each_explorer_control_redraws(browser, lab, shots, notebook):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(ACTION_TIMEOUT_MS)  # a locator or click that cannot happen fails, it does not hang
    remote = []
    page.on("request", lambda request: remote.append(request.url) if off_machine(request.url) else None)
    try:
        explore_in_jupyterlab(page, lab, shots, notebook)
    finally:
        page.close()
        shut_down_kernels(lab)
    assert not remote, f"JupyterLab requested files off the machine: {remote[:5]}"


def explore_in_jupyterlab(page, lab: str, shots: Path, notebook: Path) -> None:
    """Run the notebook in JupyterLab, then move each explorer control (the test above)."""
    start = time.monotonic()
    open_notebook(page, lab, notebook.name)
    state = run_all(page, notebook.name, RUN_TIMEOUT_S)
    page.screenshot(path=shots / f"{notebook.stem}-lab.png")
    assert not state["errors"], f"{notebook.name} shows errors in JupyterLab: {state['errors'][:3]}"
    print(f"{notebook.name}: Run All in {time.monotonic() - start:.0f} s ({len(state['counts'])} code cells)")
    widths = page.evaluate(TABLE_WIDTHS)
    print(f"{notebook.name}: tables [code cell, px]: {widths}")
    wide = [(cell, px) for cell, px in widths if px > TABLE_WIDTH_PX]
    assert not wide, f"{notebook.name}: tables wider than {TABLE_WIDTH_PX} px [code cell, px]: {wide}"

    boxes = page.locator(".widget-interact").all()
    assert boxes, f"{notebook.name} shows no explorer (EXPLORER is True in the smoke copy)"
    unchanged = []
    for b, box in enumerate(boxes):
        for c, control in enumerate(controls(box)):
            if not move_until_redrawn(page, box, control, shots / f"{notebook.stem}-explorer{b}-control{c}",
                                      f"{notebook.name}, explorer {b}, control {c}"):
                unchanged.append(f"control {c}")
    assert not unchanged, f"{notebook.name}: explorer controls whose moves drew no new figure: {unchanged}"


def move_until_redrawn(page, box, control, shot: Path, where: str) -> bool:
    """Move `control` in each of its ways (`moves`) until the explorer's figure changes; True when it did. Each move
    must redraw without an error shown; all of them together must end within CONTROL_TIMEOUT_S."""
    deadline = time.monotonic() + CONTROL_TIMEOUT_S
    for m, (did, move) in enumerate(moves(page, control)):
        what = f"{where} ({did})"
        before = box.evaluate(EXPLORER_VIEW)
        move()
        after = wait_for_redraw(page, box, before, what)
        box.screenshot(path=f"{shot}-move{m}.png")
        errors = page.evaluate(CELL_STATE)["errors"]
        assert not errors, f"{what}: an error is shown: {errors[:2]}"
        redrawn = after != before and not after.startswith("text:")
        print(f"{what}: " + ("the figure changed" if redrawn else f"no new figure ({after[:120]!r})"))
        if redrawn:
            return True
        assert time.monotonic() < deadline, f"{what}: its moves took more than {CONTROL_TIMEOUT_S} s"
    return False


class Pending:
    """The requests a page has started and not yet finished (or failed), to name them when a wait times out."""

    def __init__(self, page):
        self.urls: dict[object, str] = {}
        page.on("request", lambda request: self.urls.__setitem__(request, request.url))
        page.on("requestfinished", lambda request: self.urls.pop(request, None))
        page.on("requestfailed", lambda request: self.urls.pop(request, None))

    def __str__(self) -> str:
        return ", ".join(sorted(self.urls.values())[:10]) or "none"


# MathJax, where a page loads it, has typeset the page: its startup promise resolved (it exists once MathJax has
# read its configuration; a page without MathJax has no script of it)
MATH_READY = """() => !document.querySelector('script[src*="mathjax"], script[src*="MathJax"]')
  || !!(window.MathJax && MathJax.startup && MathJax.startup.promise)"""


def open_book_page(page, pending: Pending, url: str):
    """Go to `url` and wait for what the checks read: the load event (the document's scripts, stylesheets and images
    done), every image decoded, and MathJax's typesetting finished. Never for the network to fall silent:
    Playwright's "networkidle" was lost on 1 visit of about 4 to notebook pages (microsoft/playwright#42598), and
    MathJax may fetch fonts later without changing what is checked. A wait that times out names the page and the
    requests still in flight."""
    try:
        response = page.goto(url, wait_until="load", timeout=PAGE_LOAD_TIMEOUT_MS)
        page.wait_for_function("() => [...document.images].every(i => i.complete)", timeout=PAGE_LOAD_TIMEOUT_MS)
        page.wait_for_function(MATH_READY, timeout=PAGE_LOAD_TIMEOUT_MS)
        page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    except Exception as err:  # playwright's TimeoutError: name what the page was still waiting for
        pytest.fail(f"{url} did not finish loading within {PAGE_LOAD_TIMEOUT_MS / 1000:.0f} s; requests in flight: "
                    f"{pending}; {type(err).__name__}: {str(err).splitlines()[0]}")
    return response


def test_book_loads_every_page_with_its_images_and_requests_nothing_off_the_machine(browser, shots,
                                                                                     tmp_path_factory):
    site = book_site(tmp_path_factory)
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                               "--directory", str(site)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    pending = Pending(page)
    remote, failed, problems = [], [], []
    page.on("request", lambda request: remote.append(request.url) if off_machine(request.url) else None)
    page.on("requestfailed", lambda request: failed.append(request.url))
    page.on("response", lambda response: failed.append(f"{response.status} {response.url}")
            if response.status >= 400 else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    # an error the console shows a reader who opens it (the theme's "Got invalid theme mode" was one, on every page)
    page.on("console", lambda message: problems.append(f"console: {message.text} ({message.location.get('url')})")
            if message.type == "error" else None)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/", timeout_s=120, what="the book's HTTP server")
        pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html") if "_static" not in p.parts)
        for path in pages:
            response = open_book_page(page, pending, f"http://127.0.0.1:{port}/{path}")
            assert response is not None and response.ok, f"{path} did not load"
            broken = page.evaluate("() => [...document.images].filter(i => !i.complete || i.naturalWidth === 0)"
                                   ".map(i => i.getAttribute('src'))")
            assert not broken, f"{path}: images that did not load: {broken}"
        page.goto(f"http://127.0.0.1:{port}/docs/teaching.html", timeout=PAGE_LOAD_TIMEOUT_MS)
        page.wait_for_selector("mjx-container", timeout=PAGE_LOAD_TIMEOUT_MS)  # MathJax (of the build) typeset the math
        page.screenshot(path=shots / "book-teaching-math.png")
        page.goto(f"http://127.0.0.1:{port}/search.html?q=explorer", timeout=PAGE_LOAD_TIMEOUT_MS)
        page.wait_for_selector("#search-results li", timeout=PAGE_LOAD_TIMEOUT_MS)
        found = page.locator("#search-results li a").all_inner_texts()
        page.screenshot(path=shots / "book-search.png")
        assert any(t.startswith("0") for t in found), f"the search finds no notebook for 'explorer': {found}"
        open_book_page(page, pending, f"http://127.0.0.1:{port}/")
        assert page.url.endswith("/README.html"), "the front page is the README"
        page.screenshot(path=shots / "book-front.png")
    finally:
        page.close()
        server.terminate()
        server.wait(timeout=30)
    print(f"book: {len(pages)} pages loaded with their images")
    assert not failed, f"requests that failed: {failed[:5]}"
    assert not problems, f"script errors in the book's pages: {problems[:5]}"
    assert not remote, f"the book requested files off the machine: {remote[:5]}"


# JavaScript evaluated in a book page once MathJax is done: what a reader would see that the book should not show.
# Its argument: {codeNames: a regular expression of the code names a reader should not read
# (`lib.tables.code_name_pattern`),
# minTextPx: lib.plotting.MIN_TEXT_PX, textPxClass: lib.make.book.TEXT_PX_CLASS}.
READER_PROBLEMS = """(args) => {
  const article = document.querySelector('article.bd-article') || document.body;
  const shown = e => e.checkVisibility ? e.checkVisibility() : e.offsetParent !== null;
  const text = e => e.textContent.replace(/\\s+/g, ' ').trim();
  const out = {tableRows: [], dollars: [], clipped: [], unfolded: [], provenance: 0, codeNames: [], python: [],
               unnamedIndex: [], smallText: [], unsized: []};
  // a Markdown table left as text: a paragraph of pipes with a |---| rule, or one row | a | b |
  for (const e of article.querySelectorAll('p, li')) {
    const t = text(e);
    if (/\\|\\s*[-—:]{3,}\\s*\\|/.test(t) || /^\\|.*\\|.*\\|$/.test(t)) out.tableRows.push(t.slice(0, 120));
  }
  // the text a reader reads: outside code, scripts and typeset math
  const readable = (root, skip) => {
    const nodes = [];
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {acceptNode: n =>
      n.parentElement.closest('code, pre, script, style, mjx-container, .highlight, kbd' + skip)
        ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT});
    for (let n; (n = walker.nextNode());) nodes.push(n);
    return nodes;
  };
  // a $ that MathJax did not typeset (math left as source, or a lone dollar)
  for (const n of readable(article, '')) {
    const m = n.textContent.match(/.{0,30}\\$.{0,30}/);
    if (m) out.dollars.push(m[0].replace(/\\s+/g, ' '));
  }
  // a code name in prose (tables keep the short labels the notebooks explain; figures are checked from their texts)
  const codeName = new RegExp(args.codeNames);
  for (const n of readable(article, ', table, .cell_input')) {
    const m = n.textContent.match(codeName);
    if (m) out.codeNames.push(m[0] + ' in "' + n.textContent.replace(/\\s+/g, ' ').trim().slice(0, 90) + '"');
  }
  // Python's list, dict, None, True or False where a reader reads, in a sentence or a table cell
  const pythonic = /\\[\\s*'|\\{\\s*'|'\\s*:\\s|(?<![.!?:]\\s|^)\\b(None|True|False)\\b/;
  for (const n of readable(article, ', .cell_input')) {
    const m = n.textContent.match(pythonic);
    if (m) out.python.push(n.textContent.replace(/\\s+/g, ' ').trim().slice(0, 90));
  }
  for (const cell of article.querySelectorAll('td, th')) {  // a cell of code (a parameter's value) is code
    const code = cell.querySelector('code');
    if (/^(True|False|None|nan|NaN)$/.test(text(cell)) && !(code && text(code) === text(cell)))
      out.python.push('a table cell: ' + text(cell));
  }
  // a table whose row labels (th in its body) have no name in the header above them
  for (const table of article.querySelectorAll('table')) {
    const first = [...table.querySelectorAll('tbody tr')].map(r => r.cells[0]).filter(Boolean);
    if (!first.length || !first.every(c => c.tagName === 'TH')) continue;
    const head = [...table.querySelectorAll('thead tr')].map(r => r.cells[0]).filter(Boolean);
    if (head.length && head.every(c => text(c).replace(/\\u00a0/g, '') === ''))
      out.unnamedIndex.push(text(table).slice(0, 80));
  }
  // a table wider than the text column must sit in a box of its own that scrolls sideways
  const column = article.getBoundingClientRect().width;
  for (const table of article.querySelectorAll('table')) {
    if (!shown(table) || table.scrollWidth <= column + 1) continue;
    let box = table.parentElement, boxed = false;
    for (; box && box !== article; box = box.parentElement) {
      const x = getComputedStyle(box).overflowX;
      if ((x === 'auto' || x === 'scroll') && box.getBoundingClientRect().width <= column + 1) { boxed = true; break; }
    }
    if (!boxed) out.clipped.push(text(table).slice(0, 80));
  }
  // a notebook figure's smallest text, at the size the page shows the figure (the class lib.make.book gives it)
  for (const img of article.querySelectorAll('div.cell_output img')) {
    const cls = [...img.classList].find(c => c.startsWith(args.textPxClass));
    if (!cls) { out.unsized.push((img.alt || img.src).slice(0, 80)); continue; }
    const px = Number(cls.slice(args.textPxClass.length)) / 10 * img.getBoundingClientRect().width / img.naturalWidth;
    if (px < args.minTextPx) out.smallText.push(px.toFixed(1) + ' px: ' + (img.alt || img.src).slice(0, 70));
  }
  // the plumbing cells' code (imports, parameters, configuration, recording) is folded: not shown until opened
  const cells = [...article.querySelectorAll('div.cell')].filter(c => c.querySelector('.cell_input'));
  const roles = cells.map((c, i) => {
    const code = c.querySelector('.cell_input').textContent;
    if (i === 0) return 'imports';
    if (/tag_(injected-)?parameters/.test(c.className)) return 'parameters';
    if (code.includes('check_notebook_parameters(')) return 'configuration';
    return null;
  });
  const recording = cells.map(c => /\\brecord\\(/.test(c.querySelector('.cell_input').textContent)).lastIndexOf(true);
  if (recording >= 0) roles[recording] = 'recording';
  cells.forEach((c, i) => {
    if (roles[i] && shown(c.querySelector('.cell_input'))) out.unfolded.push(roles[i] + ': '
      + text(c.querySelector('.cell_input')).slice(0, 60));
  });
  const line = article.querySelector('div.workbook-provenance');
  const firstSection = article.querySelector('h2');
  out.provenance = line && shown(line) && (!firstSection
    || (line.compareDocumentPosition(firstSection) & Node.DOCUMENT_POSITION_FOLLOWING)) ? 1 : 0;
  return out;
}"""

# JavaScript evaluated in a page at a phone's width: the page scrolls sideways when its document is wider than the
# window; returns the widest elements that stick out (what a reader would have to scroll to).
SIDEWAYS = """() => {
  const width = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth <= width + 1) return [];
  const name = e => e.tagName.toLowerCase() + (e.className && typeof e.className === 'string'
    ? '.' + e.className.trim().split(/\\s+/).slice(0, 2).join('.') : '');
  const clipped = e => { // inside a box that scrolls or clips sideways: it cannot widen the page
    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement)
      if (['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(a).overflowX)) return true;
    return false;
  };
  return [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > width + 1)
    .filter(e => !clipped(e) && ![...e.children].some(c => c.getBoundingClientRect().right > width + 1))
    .slice(0, 3).map(e => name(e) + ': ' + e.textContent.replace(/\\s+/g, ' ').trim().slice(0, 60));
}"""

def book_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site the book tests read: $WORKBOOK_BOOK (`make test-browser READ_BOOK=runs/book`: the last `make book`,
    of a real `make run`) when set, else the book of the session's smoke runs."""
    if os.environ.get("WORKBOOK_BOOK"):
        site = Path(os.environ["WORKBOOK_BOOK"]).resolve()
        if not (site / "index.html").is_file():
            pytest.fail(f"WORKBOOK_BOOK={site} holds no book (no index.html): run `make book` first")
        return site
    return smoke_book(tmp_path_factory)["out"]


def figure_problems(site: Path, limit: int | None = 5) -> dict[str, list[str]]:
    """What the figures of the book's executed notebooks (DOWNLOADS/) show that a reader should not read: a code
    name in a figure's texts (its titles, labels, ticks, legend; `lib.plotting.figure_texts`), by notebook."""
    from lib.make.book import DOWNLOADS

    pattern = re.compile(code_name_pattern())
    found = {}
    for notebook in sorted((site / DOWNLOADS).glob("[0-9][0-9]_*.ipynb")):
        nb = json.loads(notebook.read_text(encoding="utf-8"))
        hits = [f"{m.group(0)!r} in {t!r}" for cell in nb["cells"] for o in cell.get("outputs", [])
                for t in o.get("metadata", {}).get("image/png", {}).get("texts", [])
                for m in [pattern.search(t)] if m]
        if hits:
            found[notebook.name] = hits[:limit]
    return found


def test_book_pages_show_tables_math_folds_and_provenance_as_a_reader_sees_them(browser, shots, tmp_path_factory):
    """Every page of the book, as a reader sees it at 1,400 px: no Markdown table left as a paragraph of pipes, no
    $ left untypeset, no code name in prose or in a figure's labels (the reader's names of lib.tables), no Python
    list, dict, None or True/False in a sentence or a table, no table whose row labels have no name, no table wider
    than the text column outside a scroll box of its own, no figure whose smallest text the page shows under
    lib.plotting.MIN_TEXT_PX, the plumbing cells of each notebook page folded, each notebook and results page
    opening with its run's provenance line, and each notebook page's header offering its downloads. At 390 px (a
    phone), no page scrolls sideways."""
    from lib.make.book import TEXT_PX_CLASS
    from lib.plotting import MIN_TEXT_PX

    site = book_site(tmp_path_factory)
    args = {"codeNames": code_name_pattern(), "minTextPx": MIN_TEXT_PX, "textPxClass": TEXT_PX_CLASS}
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                               "--directory", str(site)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(ACTION_TIMEOUT_MS)
    pending = Pending(page)
    found: dict[str, dict] = {}
    sideways: dict[str, list[str]] = {}
    downloads: dict[str, list[str]] = {}
    try:
        wait_for_http(f"http://127.0.0.1:{port}/", timeout_s=120, what="the book's HTTP server")
        pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                       if "_static" not in p.parts and p.name not in {"genindex.html", "search.html", "index.html"})
        for path in pages:
            open_book_page(page, pending, f"http://127.0.0.1:{port}/{path}")
            found[path] = page.evaluate(READER_PROBLEMS, args)
            if path.startswith("notebooks/"):
                downloads[path] = page.evaluate("() => [...document.querySelectorAll("
                                                "'.dropdown-workbook-download-buttons a')].map(a => a.href)")
        for path in ("notebooks/02_crel_conformal_reliability.html", "notebooks/03_epistemic_regret_cifar10h.html"):
            page.goto(f"http://127.0.0.1:{port}/{path}", timeout=PAGE_LOAD_TIMEOUT_MS)
            page.screenshot(path=shots / f"book-{Path(path).stem}.png", full_page=True)
        page.set_viewport_size({"width": 390, "height": 844})
        for path in pages:
            open_book_page(page, pending, f"http://127.0.0.1:{port}/{path}")
            if wide := page.evaluate(SIDEWAYS):
                sideways[path] = wide
    finally:
        page.close()
        server.terminate()
        server.wait(timeout=30)
    needs_line = [p for p in found if p.startswith("notebooks/") or re.match(r"docs/results/\d\d-", p)]
    assert len(needs_line) == 2 * len(NOTEBOOKS), needs_line
    missing = {p: links for p, links in downloads.items()
               if len(links) != 2 or not all((site / urllib.parse.urlsplit(u).path.lstrip("/")).is_file()
                                             for u in links)}
    problems = {
        "Markdown table rows shown as text": {p: f["tableRows"][:2] for p, f in found.items() if f["tableRows"]},
        "untypeset $": {p: f["dollars"][:3] for p, f in found.items() if f["dollars"]},
        "code names in prose": {p: f["codeNames"][:3] for p, f in found.items() if f["codeNames"]},
        "code names in figures": figure_problems(site),
        "Python's lists, dicts, None, True or False": {p: f["python"][:3] for p, f in found.items() if f["python"]},
        "tables whose row labels have no name": {p: f["unnamedIndex"][:2] for p, f in found.items()
                                                 if f["unnamedIndex"]},
        "tables wider than the column without a scroll box": {p: f["clipped"][:2] for p, f in found.items()
                                                              if f["clipped"]},
        f"figure text under {MIN_TEXT_PX} px at 1,400 px": {p: f["smallText"][:3] for p, f in found.items()
                                                             if f["smallText"]},
        "figures without their text size (lib.plotting.show)": {p: f["unsized"][:3] for p, f in found.items()
                                                                if f["unsized"]},
        "plumbing cells not folded": {p: f["unfolded"] for p, f in found.items() if f["unfolded"]},
        "pages without their provenance line at the top": [p for p in needs_line if not found[p]["provenance"]],
        "notebook pages without their two downloads in the header": missing,
        "pages that scroll sideways at 390 px": sideways,
    }
    print(f"book: {len(found)} pages read as a reader sees them, at 1,400 px and at 390 px")
    left = {k: v for k, v in problems.items() if v}
    everything = {"found": found, "sideways": sideways, "figures": figure_problems(site, limit=None)}
    (shots / "reader-problems.json").write_text(json.dumps(everything, indent=1, ensure_ascii=False))
    assert not left, "what a reader should not see:\n" + json.dumps(left, indent=1, ensure_ascii=False)
