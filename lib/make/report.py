"""`make run`'s runner: execute a notebook with papermill and write its self-contained HTML report.

    python -m lib.make.report notebooks/01_ensemble_pr_curves.ipynb runs -p PRESET smoke -p FIGURES_DIR docs/figures

- The kernel talks to papermill over IPC sockets (not TCP), so ipykernel has no "Kernel is running over TCP
  without encryption" warning to print.
- Path parameters (`FIGURES_DIR`) are injected relative to the notebook's folder, so the injected-parameters
  cell shows no absolute path of the machine.
- The HTML uses `notebooks/templates/report.html.j2`: JupyterLab's look without require.js or MathJax from a
  CDN (the report opens offline; a notebook with $...$ math gets the book's MathJax inline), and each figure's
  alt text from `lib.plotting.show`. Widget state is not
  embedded: the explorers are Python callbacks that need a kernel, so a report shows their static view.
- Cells tagged `remove-input` show their output only: the reading cells (`lib.reading`), whose code writes the
  text that states the run's numbers, read as text, as they do in a MyST-NB book.
- As in the book (`lib.make.book`): the plumbing cells (imports, parameters, configuration, recording) are folded
  (<details>, opened by a click), and the run's provenance line (`lib.provenance`) follows the title, with a link to
  the executed notebook beside the report. `execute` stamps that notebook with the commit it ran at.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from jupyter_client.manager import KernelManager
from jupyter_client.utils import run_sync

from lib.paths import PROJECT_ROOT
from lib.provenance import stamp

ROOT = PROJECT_ROOT  # the checkout (lib.paths)
TEMPLATE = ROOT / "notebooks" / "templates" / "report.html.j2"
PATH_PARAMETERS = ("FIGURES_DIR",)



@contextlib.contextmanager
def temporary_environ(values: Mapping[str, str]) -> Iterator[None]:
    """Set environment variables for the kernel papermill starts (it inherits them), then restore them."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update({k: str(v) for k, v in values.items()})
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class IPCKernelManager(KernelManager):
    """A kernel manager whose kernel listens on IPC sockets in a private folder of its own.

    jupyter_client names IPC sockets `<ip>-<port>` with `ip` "kernel-ipc" relative to the working folder
    and ports counted from 1, so two kernels started at once in one folder took the same sockets and
    each rejected the other's messages ("Invalid Signature"). A fresh temporary folder per kernel keeps
    concurrent runs (two `make run`s, a sweep's workers, the test suite beside a run) apart.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.transport = "ipc"
        self._socket_dir = tempfile.mkdtemp(prefix="wb-kernel-")
        self.ip = os.path.join(self._socket_dir, "ipc")

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart:
            shutil.rmtree(self._socket_dir, ignore_errors=True)

    cleanup_resources = run_sync(_async_cleanup_resources)


def execute(notebook: str | Path, output: str | Path, parameters: dict, *, cwd: str | Path | None = None,
            timeout: int | None = None, progress_bar: bool = True) -> Path:
    """Run `notebook` with `parameters` into `output` (papermill, IPC kernel); path parameters relative to cwd.

    Papermill writes the executed copy as it goes; here it writes a hidden file beside `output`, which is renamed
    to `output` when the run ends: complete, or stopped on an error (papermill records it; `lib.glue.run_problem`
    refuses it). A run killed or interrupted mid-way never replaces `output` (the previous run stays there); its
    partial copy is removed when the process can still do so."""
    import papermill as pm

    cwd = Path(cwd or Path(notebook).parent)
    parameters = {k: os.path.relpath(Path(v).resolve(), cwd.resolve()) if k in PATH_PARAMETERS and v else v
                  for k, v in parameters.items()}
    output = Path(output)
    partial = output.with_name(f".{output.stem}.running-{os.getpid()}{output.suffix}")
    try:
        pm.execute_notebook(str(notebook), str(partial), parameters=parameters, cwd=str(cwd),
                            kernel_manager_class=IPCKernelManager, progress_bar=progress_bar,
                            execution_timeout=timeout)
    except pm.PapermillExecutionError:
        stamp(partial)
        os.replace(partial, output)  # complete up to its error cell, which the reader should see
        raise
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    stamp(partial)
    os.replace(partial, output)
    return output


def mathjax_script() -> str:
    """MathJax 3 (SVG output, fonts inside) from the `sphinx-mathjax-offline` wheel the book uses, as the text of an
    inline script; "" when that wheel is not installed (the math then stays as its TeX source)."""
    import sysconfig

    path = Path(sysconfig.get_paths()["purelib"]) / "sphinx-mathjax-offline" / "static" / "mathjax" / "tex-svg.js"
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def has_math(nb) -> bool:
    """A Markdown cell (or a reading cell's Markdown output) with $...$ math."""
    texts = [c.source for c in nb.cells if c.cell_type == "markdown"]
    texts += [o.get("data", {}).get("text/markdown", "") for c in nb.cells for o in c.get("outputs", [])]
    return any(re.search(r"\$[^\s$][^$]*\$", t if isinstance(t, str) else "".join(t)) for t in texts)


def report_title(nb, fallback: str) -> str:
    """The notebook's title: the text of its first Markdown heading, else `fallback`."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("#"):
                    return line.lstrip("#").strip()
    return fallback


def to_html(executed: str | Path, output_dir: str | Path | None = None) -> Path:
    """The self-contained HTML report of an executed notebook, beside it or in `output_dir`."""
    import nbformat
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import CoalesceStreamsPreprocessor, TagRemovePreprocessor

    from lib.glue import MIME_TYPE
    from lib.make.book import add_provenance, fold_plumbing, without_progress_bars

    executed = Path(executed)
    nb = nbformat.read(executed, as_version=4)
    nb, _ = CoalesceStreamsPreprocessor().preprocess(nb, {})
    without_progress_bars(nb)
    fold_plumbing(nb)
    add_provenance(nb, executed, f' · <a href="{executed.name}" download>the executed notebook</a>')
    for cell in nb.cells:  # the silently glued results are for tests and scripts; the reader has the summary
        cell["outputs"] = [o for o in cell.get("outputs", []) if set(o.get("data", {})) != {MIME_TYPE}]
    resources = {"metadata": {"name": report_title(nb, executed.stem)},  # the page's <title>
                 "wb_mathjax": mathjax_script() if has_math(nb) else ""}  # inline: the report stays one file
    exporter = HTMLExporter(template_file=str(TEMPLATE))
    exporter.register_preprocessor(TagRemovePreprocessor(remove_input_tags={"remove-input"}), enabled=True)
    html, _ = exporter.from_notebook_node(nb, resources=resources)
    target = Path(output_dir or executed.parent) / f"{executed.stem}.html"
    target.write_text(html, encoding="utf-8")
    return target


def preset_problem(notebook: Path, preset: Any, option: str) -> str | None:
    """Why `preset` (given as `option`) is not a preset of the notebook's PRESETS (`lib.store.PRESET_MODULES`),
    or None (also for a notebook without presets there)."""
    from lib.store import PRESET_MODULES

    namespace = Path(notebook).name[:2]
    if namespace not in PRESET_MODULES:
        return None
    presets = importlib.import_module(PRESET_MODULES[namespace]).PRESETS
    if preset not in presets:
        return f"{option} {preset!r} is not one of notebook {namespace}'s PRESETS {sorted(presets)}"
    return None


def arguments_problem(notebook: Path, parameters: Mapping[str, Any]) -> str | None:
    """Why `notebook` cannot be run with `parameters`, checked before anything runs: a notebook missing or not an
    .ipynb, a parameter its `parameters` cell lacks (papermill would only warn), a PRESET outside its PRESETS;
    else None."""
    import papermill as pm

    notebook = Path(notebook)
    if not notebook.exists():
        return f"notebook {notebook} does not exist"
    if not notebook.is_file() or notebook.suffix != ".ipynb":
        return f"notebook {notebook} is not a notebook (.ipynb)"
    known = set(pm.inspect_notebook(str(notebook)))
    unknown = [name for name in parameters if name not in known]
    if unknown:
        return f"-p {unknown[0]}: not a parameter of {notebook.name} (its parameters: {', '.join(sorted(known))})"
    if "PRESET" in parameters:
        return preset_problem(notebook, parameters["PRESET"], "-p PRESET")
    return None


def folder_problem(path: Path, option: str) -> str | None:
    """Why `path` (given as `option`) cannot be the folder a command writes into: a file is there; else None."""
    return f"{option} {path} is not a folder" if Path(path).exists() and not Path(path).is_dir() else None


def main(argv: list[str] | None = None) -> None:
    from papermill.cli import _resolve_type

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("out_dir", type=Path, help="folder for the executed notebook and its HTML report")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                        help="a parameter, typed as papermill's -p does (True/False, None, numbers, text)")
    args = parser.parse_args(argv)
    parameters = {name: _resolve_type(value) for name, value in args.parameter}
    problem = arguments_problem(args.notebook, parameters) or folder_problem(args.out_dir, "out_dir")
    if problem:
        parser.error(problem)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    executed = execute(args.notebook, args.out_dir / args.notebook.name, parameters)
    print(f"{executed} and {to_html(executed)}")


if __name__ == "__main__":
    main()
