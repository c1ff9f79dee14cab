"""Sphinx configuration of the workbook's book (`make book`, built by `python -m lib.make.book`).

The source folder is the checkout itself, so every relative link of README.md and the docs resolves in the
book as it does on a code host; `include_patterns` picks the pages. The notebook pages are the executed copies
of the last `make run` (runs/NN_*.ipynb, read in place of notebooks/NN_*.ipynb by `executed_notebook`), shown
as they are: MyST-NB executes nothing. The site makes no request off the machine: MathJax, the theme's fonts
and icons and the search index are all files of the build.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # lib, for a build started by sphinx-build rather than `python -m lib.make.book`
from lib.make.book import (  # noqa: E402
    DOWNLOADS, download_button, other_run_note, page_text, results_from_other_runs, set_image_alt_text)

project = "Evaluation workbook"
author = "the workbook's authors"
copyright = "the workbook's authors"  # noqa: A001 (Sphinx's name)
root_doc = "README"

extensions = [
    "myst_nb",  # notebooks and MyST markdown (it loads myst_parser)
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax 3.2.2 copied into the build (_static/mathjax), not a CDN
]

# The book's pages; everything else in the checkout is not a page (a link to such a file becomes a download).
NOTEBOOK_PAGES = "notebooks/[0-9][0-9]_*.ipynb"
GUIDES = ["docs/own-models.md", "docs/api.md", "docs/glossary.md", "docs/measurements.md", "docs/teaching.md",
          "docs/sweeps.md", "data/README.md", "benchmarks/README.md"]
include_patterns = ["README.md", NOTEBOOK_PAGES, "docs/results/claims.md", "docs/results/[0-9][0-9]-*.md",
                    "docs/specs/*.md",
                    "results/*/*/README.md", *GUIDES]
exclude_patterns = [".venv", ".git", "runs", "data/cache", "build", "**/.ipynb_checkpoints"]

myst_enable_extensions = ["dollarmath", "amsmath", "deflist"]  # deflist: the glossary
myst_heading_anchors = 3  # `[...](page.md#measured)` links to headings
nb_execution_mode = "off"  # the pages show the outputs of `make run`, not of a new execution
# the reading cells print Markdown with tables and $...$ math: MyST (CommonMark has no tables) renders them
nb_render_markdown_format = "myst"
nb_ipywidgets_js = {}  # the explorers need a kernel; a page shows their static view and loads no widget script

html_theme = "sphinx_book_theme"
html_title = project
html_static_path = ["_static"]
html_css_files = ["book.css"]
html_js_files = ["zoom.js", "copy.js"]  # click a figure to see it at full size; a copy button on code
html_favicon = "_static/favicon.svg"
templates_path = ["_templates"]
html_additional_pages = {"index": "redirect-to-readme.html"}  # the site's front page is the README
# the theme's download button would offer the stripped source of a notebook page, not the executed copy shown:
# lib.make.book.download_button adds one that offers both
html_theme_options = {"show_toc_level": 2, "home_page_in_toc": True, "use_download_button": False}
# the colour mode a first visit starts in: without it the theme logged "Got invalid theme mode: . Resetting to
# auto." on every page
html_context = {"default_mode": "auto"}
html_last_updated_fmt = None
html_copy_source = False


def executed_notebook(app, docname: str, source: list[str]) -> None:
    """A notebook page's text is the executed copy of the last run (runs/NAME.ipynb), not the stripped source."""
    if not (docname.startswith("notebooks/") and docname.count("/") == 1):
        return
    executed = Path(app.config.workbook_runs) / f"{docname.removeprefix('notebooks/')}.ipynb"
    source[0] = page_text(executed)
    app.env.note_dependency(str(executed))


def results_page_note(app, docname: str, source: list[str]) -> None:
    """A results page `make results` wrote from another run than the notebook page beside it says so at its top."""
    runs = Path(app.config.workbook_runs)
    if docname == root_doc:  # the headline table is made with the results pages
        notes = results_from_other_runs([runs / p.name for p in ROOT.glob(NOTEBOOK_PAGES)])
        note = notes and ("The table of the notebooks below comes from other runs than the notebook pages of this "
                          "book: " + "; ".join(notes) + ". `make results` then `make book` makes them agree.")
    elif docname.startswith("docs/results/") and docname.count("/") == 2:
        note = other_run_note(source[0], runs)
    else:
        return
    if note:
        title_end = source[0].index("\n", source[0].index("\n# ")) + 1 if "\n# " in source[0] else 0
        source[0] = source[0][:title_end] + f"\n```{{warning}}\n{note}\n```\n" + source[0][title_end:]


def copy_downloads(app, exception) -> None:
    """The executed notebooks the pages show, and their stripped sources, as files of the site (DOWNLOADS/)."""
    if exception is not None or app.builder.format != "html":
        return
    import shutil

    target = Path(app.outdir) / DOWNLOADS
    (target / "source").mkdir(parents=True, exist_ok=True)
    for notebook in ROOT.glob(NOTEBOOK_PAGES):
        shutil.copyfile(Path(app.config.workbook_runs) / notebook.name, target / notebook.name)
        shutil.copyfile(notebook, target / "source" / notebook.name)


def book_toc(app, docname: str, source: list[str]) -> None:
    """The README (the front page) gets the book's table of contents: a hidden toctree only the book reads."""
    if docname != root_doc:
        return
    sections = {
        "Notebooks (executed)": sorted(str(p.relative_to(ROOT).with_suffix(""))
                                       for p in ROOT.glob(NOTEBOOK_PAGES)),
        "Results in numbers": ["docs/results/claims"] + sorted(p.relative_to(ROOT).with_suffix("").as_posix()
                                                              for p in ROOT.glob("docs/results/[0-9][0-9]-*.md")),
        "Specifications": sorted(p.relative_to(ROOT).with_suffix("").as_posix() for p in ROOT.glob("docs/specs/*.md")),
        "Guides": [g.removesuffix(".md") for g in GUIDES],
        "Stored results": sorted(p.relative_to(ROOT).with_suffix("").as_posix()
                                 for p in ROOT.glob("results/*/*/README.md")),
    }
    blocks = [f"\n```{{toctree}}\n:hidden:\n:caption: {caption}\n\n" + "\n".join(f"/{d}" for d in docs) + "\n```\n"
              for caption, docs in sections.items()]
    source[0] += "\n" + "".join(blocks)


def setup(app):
    # the folder of the executed notebooks: `make run` writes runs/, lib.make.book passes its --runs (-D workbook_runs=)
    app.add_config_value("workbook_runs", str(ROOT / "runs"), "env")
    app.connect("source-read", executed_notebook)
    app.connect("source-read", book_toc)
    app.connect("source-read", results_page_note)
    app.connect("build-finished", copy_downloads)
    app.connect("doctree-read", set_image_alt_text)
    app.connect("html-page-context", download_button, priority=510)  # after the theme's prep_header_buttons
