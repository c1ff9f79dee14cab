"""Run a notebook by papermill the way the notebook tests do, and return its glued results."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import papermill as pm
import pytest

from lib.glue import MIME_TYPE, read_results
from lib.report import IPCKernelManager

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def notebook_runner(filename: str) -> Callable[..., dict]:
    """`run(tmp_path, name, cache, cell_timeout=600, **parameters)` for notebooks/`filename`.

    Each run gets the cache folder `cache` (a fresh one tests what a first run computes), except for
    decoded datasets (CIFAR-10), inputs rather than results, kept in the test session's cache so they are
    decoded once (`WORKBOOK_DATASET_CACHE`).
    Parameters default to the smoke preset without progress bars or the interactive explorer.
    """
    notebook = NOTEBOOKS / filename

    def run(tmp_path: Path, name: str, cache: Path, cell_timeout: int = 600, **parameters) -> dict:
        os.environ["WORKBOOK_DATASET_CACHE"] = os.environ["WORKBOOK_CACHE_SESSION"]
        os.environ["WORKBOOK_CACHE"] = str(cache)
        os.environ["WORKBOOK_DATA"] = str(Path(os.environ.get("WORKBOOK_DATA", "data")).resolve())  # cwd moves
        out = tmp_path / f"{name}.ipynb"
        parameters = {"PRESET": "smoke", "PROGRESS": False, "EXPLORER": False, **parameters}
        pm.execute_notebook(notebook, out, parameters=parameters, cwd=notebook.parent, progress_bar=False,
                            execution_timeout=cell_timeout, kernel_manager_class=IPCKernelManager)
        return read_results(out)

    return run


def assert_fails_fast(run: Callable[..., dict], tmp_path: Path, parameters: dict, message: str) -> None:
    """Bad `parameters` stop the notebook within a minute with an error matching `message`, before it
    writes anything to its cache."""
    start = time.perf_counter()
    with pytest.raises(pm.PapermillExecutionError, match=message):
        run(tmp_path, "bad", tmp_path / "cache", **parameters)
    assert time.perf_counter() - start < 60
    assert not (tmp_path / "cache").exists()


def assert_clean_outputs(executed: Path) -> None:
    """What a reader of the executed notebook (and of its HTML report) sees is clean: results are recorded
    silently (the glue outputs carry no text; one summary table shows them), every figure has alt text,
    no stray `PosixPath(...)` and no widget progress bars (whose state is lost outside a live front end)."""
    nb = json.loads(Path(executed).read_text(encoding="utf-8"))
    images = 0
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if MIME_TYPE in data:
                assert set(data) == {MIME_TYPE}, f"a glued result is displayed as text: {data.get('text/plain')}"
            if "image/png" in data:
                images += 1
                alt = output.get("metadata", {}).get("image/png", {}).get("alt", "")
                assert alt.startswith(("Figure", "Explorer")), f"a figure without alt text in {cell['id']}"
            assert "application/vnd.jupyter.widget-view+json" not in data, f"a widget output in {cell['id']}"
            assert "PosixPath(" not in "".join(data.get("text/plain", "")), f"a stray path in {cell['id']}"
    assert images > 0
