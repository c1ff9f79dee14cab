"""`make run`'s runner (lib.make.report): a quiet kernel, relative paths in the injected parameters, and a
self-contained HTML report whose figures carry alt text."""

from __future__ import annotations

import json
import re

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from lib.make import report


def test_report_is_offline_clean_and_described(tmp_path, capfd):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    nb = new_notebook(cells=[
        new_code_cell("import matplotlib.pyplot as plt\nfrom lib.plotting import show"),
        new_code_cell('FIGURES_DIR: str = ""', metadata={"tags": ["parameters"]}),
        new_markdown_cell("# 09 · A test report\n\nIts first heading is the page's title."),
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
    assert "<title>09 · A test report</title>" in html  # not nbconvert's "Notebook"
    assert "<th>p*(y|x)</th>" in html  # the escaped bar stays inside its cell (unescaped: raw text)
    assert "-0.0014</td>" in html and html.count("0000000123") == 1  # the summary; the raw value only in the code


def test_concurrent_runs_in_one_folder_keep_their_kernels_apart(tmp_path):
    """Two `make run`s (or a run beside the test suite) start kernels in the same notebooks/ folder at once.

    jupyter_client's default IPC sockets (`kernel-ipc-<n>` in the working folder, n counted from 1) were
    shared by such kernels, which then rejected each other's messages ("Invalid Signature") and timed out.
    """
    import subprocess
    import sys

    nb = new_notebook(cells=[new_code_cell("import os, time\npid = os.getpid()\ntime.sleep(1)"),
                             new_code_cell("from lib.glue import record\nrecord({'pid': pid})")],
                      metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(nb, tmp_path / "t.ipynb")
    code = "import sys; from lib.make.report import execute; execute(sys.argv[1], sys.argv[2], {}, progress_bar=False)"
    runs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "t.ipynb"), str(tmp_path / f"o{i}.ipynb")],
                             stderr=subprocess.PIPE, text=True) for i in range(3)]
    errors = [run.communicate(timeout=300)[1] for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0], errors
    assert not any("Invalid Signature" in e for e in errors)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o0.ipynb", "o1.ipynb", "o2.ipynb", "t.ipynb"]  # no sockets


def test_report_shows_only_the_output_of_cells_tagged_remove_input(tmp_path):
    """A reading cell (`lib.reading`) reads as text in the report: its Markdown output rendered, its code hidden;
    other cells keep their code."""
    from nbformat.v4 import new_output

    from lib.reading import CELL_METADATA

    text = "The run's mean AUC is **0.970**."
    reading = new_code_cell('say(f"The run\'s mean AUC is **{auc:.3f}**.")', metadata=CELL_METADATA,
                            outputs=[new_output("display_data", data={"text/markdown": text, "text/plain": text})])
    nb = new_notebook(cells=[new_markdown_cell("# A report"), new_code_cell("auc = 0.97  # shown"), reading])
    nbformat.write(nb, tmp_path / "t.ipynb")
    html = report.to_html(tmp_path / "t.ipynb").read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", "", html)  # code is highlighted token by token
    assert "<strong>0.970</strong>" in html  # the output, rendered as Markdown
    assert "auc = 0.97  # shown" in text  # an untagged cell keeps its code
    assert "say(" not in text and ":.3f" not in text  # the reading cell's code is not shown


def test_a_killed_run_leaves_the_previous_complete_run_in_place(tmp_path):
    """Papermill wrote the executed copy at its final path as it went: a run killed mid-way left a half-executed
    notebook there (and over the previous complete run). Now it runs into a hidden file, renamed when done."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from lib.glue import run_problem

    nb = new_notebook(cells=[new_code_cell("x = 1"), new_code_cell("import time\ntime.sleep(60)"),
                             new_code_cell("y = 2")],
                      metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(nb, tmp_path / "t.ipynb")
    output = tmp_path / "runs" / "t.ipynb"
    output.parent.mkdir()
    output.write_text("the previous complete run")
    code = "import sys; from lib.make.report import execute; execute(sys.argv[1], sys.argv[2], {}, progress_bar=False)"
    run = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "t.ipynb"), str(output)],
                           start_new_session=True, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while _cell_status(output.parent, 1) != "running":  # the sleeping cell
        assert time.monotonic() < deadline and run.poll() is None, "the run did not reach its sleeping cell"
        time.sleep(0.2)
    os.killpg(run.pid, signal.SIGKILL)  # the runner and its kernel, as a killed `make run` would be
    run.wait(timeout=30)
    assert output.read_text() == "the previous complete run"
    partial = next(output.parent.glob(".t.running-*.ipynb"))  # what the killed run left, hidden beside it
    assert "was interrupted (2 of 3 code cells did not complete" in run_problem(partial)


def _cell_status(folder, index: int) -> str | None:
    """Papermill's status of code cell `index` in the partial copy a run writes in `folder`, if any yet."""
    for path in folder.glob(".t.running-*.ipynb"):
        try:
            return json.loads(path.read_text())["cells"][index]["metadata"]["papermill"]["status"]
        except (ValueError, KeyError, IndexError):  # being written
            return None
    return None


def test_report_folds_the_plumbing_and_opens_with_the_runs_provenance(tmp_path):
    """Imports, parameters, configuration and recording sit in <details> a click opens (code and, for the last
    two, output); the run's provenance line follows the title, with a link to the executed notebook."""
    from nbformat.v4 import new_output

    cells = [new_markdown_cell("# A report\n\nIntroduction."), new_code_cell("import numpy as np"),
             new_code_cell('PRESET: str = "smoke"', metadata={"tags": ["parameters"]}),
             new_code_cell("check_notebook_parameters(globals())",
                           outputs=[new_output("stream", name="stdout", text="resolved settings\n")]),
             new_code_cell("x = np.pi  # the argument"), new_code_cell("record(headline)")]
    nb = new_notebook(cells=cells, metadata={"papermill": {"parameters": {"PRESET": "smoke"},
                                                           "end_time": "2026-12-04T10:00:00"}})
    nbformat.write(nb, tmp_path / "t.ipynb")
    html = report.to_html(tmp_path / "t.ipynb").read_text(encoding="utf-8")
    folds = re.findall(r'<details class="wb-fold">(.*?)</details>', html, re.S)
    texts = [re.sub(r"<[^>]+>", "", f) for f in folds]
    assert len(folds) == 4 and "import numpy" in texts[0] and "resolved settings" in texts[2], texts
    assert "np.pi" not in "".join(texts) and "np.pi" in re.sub(r"<[^>]+>", "", html)  # the argument stays open
    assert html.index('class="workbook-provenance"') < html.index("Introduction.")
    assert 'href="t.ipynb"' in html and "preset <code>smoke</code>" in html


def test_a_report_with_math_typesets_it_offline_with_mathjax_inline(tmp_path):
    """$...$ in the Markdown (as the book and JupyterLab render it): MathJax 3 is in the page, loaded from nowhere."""
    nb = new_notebook(cells=[new_markdown_cell(r"# Math" + "\n\nThe region $S^\\gamma(x)$.")])
    nbformat.write(nb, tmp_path / "m.ipynb")
    html = report.to_html(tmp_path / "m.ipynb").read_text(encoding="utf-8")
    assert report.mathjax_script() and "MathJax" in html and "S^\\gamma(x)" in html
    assert not re.search(r"""(src=|import\()["']https?://""", html)


@pytest.mark.parametrize("argv, message", [
    (["notebooks/missing.ipynb", "OUT"], r"notebook notebooks/missing\.ipynb does not exist"),
    (["README.md", "OUT"], r"notebook README\.md is not a notebook \(\.ipynb\)"),
    (["notebooks/04_image_retrieval_score.ipynb", "OUT", "-p", "PRSET", "smoke"],
     r"-p PRSET: not a parameter of 04_image_retrieval_score\.ipynb"),
    (["notebooks/04_image_retrieval_score.ipynb", "OUT", "-p", "PRESET", "tiny"],
     r"-p PRESET 'tiny' is not one of notebook 04's PRESETS"),
    (["notebooks/04_image_retrieval_score.ipynb", "README.md"], r"out_dir README\.md is not a folder"),
])
def test_the_report_command_checks_its_arguments_before_running(tmp_path, monkeypatch, capsys, argv, message):
    """For `python -m lib.make.report`: papermill ran a notebook given an unknown -p NAME (with a
    warning) and an unknown PRESET until the configuration cell refused it."""
    def no_run(*args, **kwargs):
        raise AssertionError("the notebook ran before the command's arguments were checked")

    monkeypatch.setattr(report, "execute", no_run)
    argv = [str(tmp_path / "out") if a == "OUT" else a for a in argv]
    with pytest.raises(SystemExit) as stop:
        report.main(argv)
    assert stop.value.code == 2 and re.search(message, " ".join(capsys.readouterr().err.split()))
    assert not (tmp_path / "out").exists()
