"""Result glue: record named results in a notebook, read them back from the executed copy.

In a notebook, `glue("auc_C4", 0.97)` displays the value as an output with its own MIME type (and a
readable text line). After papermill has run the notebook, `read_results("runs/01.ipynb")` returns
{"auc_C4": 0.97, ...}. Values must be JSON-serialisable after NumPy scalars and arrays are converted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

MIME_TYPE = "application/vnd.workbook.result+json"


def to_jsonable(value: Any) -> Any:
    """NumPy scalars and arrays, tuples and nested dicts turned into plain JSON types."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None if np.isnan(value) else ("inf" if value > 0 else "-inf")
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"cannot glue a value of type {type(value).__name__}")


def glue(name: str, value: Any) -> None:
    """Record `value` under `name` in the running notebook's outputs."""
    from IPython.display import display

    payload = to_jsonable(value)
    json.dumps(payload)  # fail here, not when the notebook is read back
    display({MIME_TYPE: {name: payload}, "text/plain": f"{name} = {payload!r}"}, raw=True)


def read_results(notebook: str | Path) -> dict[str, Any]:
    """Every glued {name: value} of an executed notebook (a later glue of the same name wins)."""
    with open(notebook, encoding="utf-8") as fh:
        nb = json.load(fh)
    results: dict[str, Any] = {}
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if MIME_TYPE in data:
                payload = data[MIME_TYPE]
                results.update(json.loads(payload) if isinstance(payload, str) else payload)
    return results
