"""`make run`'s runner (lib.report): a quiet kernel, relative paths in the injected parameters, and a
self-contained HTML report whose figures carry alt text."""

from __future__ import annotations

import json
import re

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from lib import report


def test_report_is_offline_clean_and_described(tmp_path, capfd):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    nb = new_notebook(cells=[
        new_code_cell("import matplotlib.pyplot as plt\nfrom lib.plotting import show"),
        new_code_cell('FIGURES_DIR: str = ""', metadata={"tags": ["parameters"]}),
        new_markdown_cell("| a | p\\*(y\\|x) |\n|---|---|\n| 1 | 2 |"),
        new_code_cell('fig, ax = plt.subplots()\nax.set(title="a title", xlabel="recall")\n'
                      'show(fig, "f", FIGURES_DIR)'),
        new_code_cell('from lib.glue import record\nrecord({"delta": -0.0014000000000000123})'),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(nb, folder / "t.ipynb")
    executed = report.execute(folder / "t.ipynb", tmp_path / "t.ipynb", {"FIGURES_DIR": str(tmp_path / "figs")},
                              progress_bar=False)
    html = report.to_html(executed).read_text(encoding="utf-8")
    err = capfd.readouterr().err
    assert "without encryption" not in err  # the kernel ran over IPC
    assert "not able to be represented" not in err and "Alternative text is missing" not in err
    assert (tmp_path / "figs" / "f.png").is_file()
    injected = next(c for c in json.loads(executed.read_text())["cells"]
                    if "injected-parameters" in c["metadata"].get("tags", []))
    assert "".join(injected["source"]).strip().endswith('FIGURES_DIR = "../figs"')  # no absolute path
    assert "require.js" not in html and "mathjax" not in html.lower()
    assert not re.search(r"""(src=|import\()["']https?://""", html)  # nothing is fetched from the network
    assert 'alt="Figure. a title, x: recall"' in html
    assert "<th>p*(y|x)</th>" in html  # the escaped bar stays inside its cell (unescaped: raw text)
    assert "-0.0014</td>" in html and "0000000123" not in html  # the rounded summary, not the raw glue
