"""`make book`: the workbook as a static site, from the executed notebooks of the last `make run`.

    python -m lib.book --runs runs --out runs/book

Sphinx with MyST-NB and sphinx-book-theme (the `book` extra) builds README.md (the front page), the executed
notebooks in `--runs`, the results pages, the specifications and the guides into `--out`; the configuration is
docs/book/conf.py. Nothing is executed again (MyST-NB's execution is off) and nothing is downloaded: the build
reads only the checkout, and the site (MathJax, fonts, icons, search) is files of its own. Every Sphinx warning is
an error. Open `--out`/index.html in a browser, or serve the folder (`python -m http.server -d runs/book`).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from lib.glue import MIME_TYPE

ROOT = Path(__file__).resolve().parents[1]
CONF_DIR = ROOT / "docs" / "book"
NOTEBOOKS = ROOT / "notebooks"
ALT_KEY = "workbook_image_alts"  # page_text's cell metadata: the alt text of the cell's figures, in output order


class BookError(RuntimeError):
    """The book cannot be built from what is in the runs folder (nothing run, a run missing or failed)."""


def run_problem(executed: Path) -> str | None:
    """Why the executed copy `executed` cannot be a page of the book, or None when it can."""
    meta = json.loads(executed.read_text(encoding="utf-8")).get("metadata", {}).get("papermill", {})
    if not meta:
        return f"{executed} was not written by papermill (`make run` writes the executed copies)"
    if meta.get("exception"):
        return f"{executed} is a run that stopped on an error (see its error cell)"
    return None


def executed_notebooks(runs: Path, notebooks: Path = NOTEBOOKS) -> list[Path]:
    """The executed copy in `runs` of every notebook in `notebooks`; a BookError says what is missing or failed."""
    runs = Path(runs)
    sources = sorted(Path(notebooks).glob("[0-9][0-9]_*.ipynb"))
    executed = [runs / s.name for s in sources]
    missing = [p.name for p in executed if not p.is_file()]
    if len(missing) == len(sources):
        raise BookError(f"no executed notebooks in {runs}/: the book shows the outputs of the last run, so run "
                        "`make run` first (or `make run PRESET=smoke`, about 6 minutes)")
    if missing:
        raise BookError(f"{runs}/ lacks the executed copies of {', '.join(missing)}: run `make run` (every "
                        "notebook) first, so that the book shows one run of all of them")
    problems = [p for p in map(run_problem, executed) if p]
    if problems:
        raise BookError("; ".join(problems) + ": run `make run` again")
    return executed


def page_text(executed: Path) -> str:
    """The notebook text a book page shows, its outputs as JupyterLab shows them: consecutive stream outputs
    joined and a line rewritten after a carriage return shown in its last state (a progress bar's final line,
    not one block per update), and without the results glued silently (`lib.glue.glue(..., display=False)`),
    which are data for `make results` and have no form to show."""
    import nbformat
    from nbconvert.preprocessors import CoalesceStreamsPreprocessor

    nb = nbformat.reads(Path(executed).read_text(encoding="utf-8"), as_version=4)
    for cell in nb.cells:
        if "outputs" in cell:
            cell.outputs = [o for o in cell.outputs if set(o.get("data", {})) != {MIME_TYPE}]
            alts = [o.get("metadata", {}).get("image/png", {}).get("alt") for o in cell.outputs
                    if "image/png" in o.get("data", {})]
            if any(alts):
                cell.metadata[ALT_KEY] = alts
    nb, _ = CoalesceStreamsPreprocessor().preprocess(nb, {})
    return nbformat.writes(nb)


def set_image_alt_text(app, doctree) -> None:
    """Sphinx `doctree-read`: each notebook figure's <img> gets the alt text `lib.plotting.show` stored in the
    output's metadata (MyST-NB reads only width and height there), in output order from `page_text`'s list."""
    from docutils import nodes

    def is_element(name: str, value: str):
        return lambda node: isinstance(node, nodes.container) and node.get(name) == value

    for cell in doctree.findall(is_element("nb_element", "cell_code")):
        alts = iter(cell.get("cell_metadata", {}).get(ALT_KEY, []))
        for png, alt in zip(cell.findall(is_element("mime_type", "image/png")), alts):
            for image in png.findall(nodes.image):
                if alt:
                    image["alt"] = alt


def build(runs: Path, out: Path, *, quiet: bool = True) -> Path:
    """Build the book from the executed notebooks in `runs` into `out`; returns its front page (index.html).
    Checks the runs before Sphinx starts; a Sphinx warning fails the build (BookError)."""
    executed_notebooks(runs)
    from sphinx.cmd.build import build_main

    out = Path(out).resolve()
    args = ["-b", "html", "-E", "-W", "--keep-going", "-c", str(CONF_DIR), "-d", str(out / ".doctrees"),
            "-D", f"workbook_runs={Path(runs).resolve()}", str(ROOT), str(out)]
    if build_main(args + (["-q"] if quiet else [])) != 0:
        raise BookError(f"Sphinx reported warnings or errors (above); nothing in {out} is to be trusted")
    return out / "index.html"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=Path, default=ROOT / "runs", help="the executed notebooks (`make run`)")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "book", help="the site's folder")
    parser.add_argument("-v", "--verbose", action="store_true", help="Sphinx's progress, not only its warnings")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        front = build(args.runs, args.out, quiet=not args.verbose)
    except BookError as err:
        raise SystemExit(f"make book: {err}") from None
    print(f"the book is in {front.parent} (open {front}), built in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
