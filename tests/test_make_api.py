"""lib.make.api: the book's API reference (docs/api.md) is what the docstrings give, and it covers every function
docs/own-models.md names."""

from __future__ import annotations

import re

import pytest
from own_models_page import PAGE, ROOT

from lib.make import api


def test_the_api_page_is_what_the_docstrings_give():
    assert api.PAGE.read_text(encoding="utf-8") == api.page(), "run `python -m lib.make.api` after editing a docstring"
    assert api.main(["--check"]) == 0


def test_every_function_the_own_models_page_names_has_an_entry_and_the_book_lists_both_pages():
    named = set(re.findall(r"`(lib\.\w+\.\w+_report)`", PAGE.read_text(encoding="utf-8")))
    assert named == {"lib.prcurves.ensemble_report", "lib.crel.crel_report", "lib.regret.regret_report",
                     "lib.irs.irs_report"}
    entries = set(re.findall(r"^### `([\w.]+)`$", api.page(), re.M))
    assert named <= entries
    conf = (ROOT / "docs" / "book" / "conf.py").read_text()
    assert '"docs/own-models.md", "docs/api.md"' in conf  # the book's guides, so its table of contents


def test_a_stale_page_is_reported(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(api, "PAGE", tmp_path / "api.md")
    (tmp_path / "api.md").write_text("# old\n")
    assert api.main(["--check"]) == 1 and "python -m lib.make.api" in capsys.readouterr().err


@pytest.mark.parametrize("path", [p for paths in api.SECTIONS.values() for p in paths])
def test_each_entry_shows_a_signature_without_quoted_annotations(path):
    text = api.entry(path)
    signature = text.split("```python\n")[1].split("```")[0]
    assert ": '" not in signature and signature.startswith(path.rsplit(".", 1)[1] + "(")
