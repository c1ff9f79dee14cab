"""One stored result recomputed and compared with the committed one (`make verify`, as `dvc repro <stage>`).

    make verify NB=01 STAGE='losses-C1-*' [PRESET=cpu] [RTOL=1e-6]

runs notebook NB with SOURCE="stored" and, for each stored entry whose label (its file name without the key)
matches STAGE, computes the entry afresh instead of reading it: its inputs come from the stored layer as in any
stored run, so one stage is recomputed alone (`lib.run.Run._verified`). Each fresh value is compared with the
layer's entry leaf by leaf (`compare`): arrays, tensors and numbers; clocks (a key naming seconds or a runtime) are
left out, since no two runs share them. The command prints one line per entry and exits 1 when an entry differs
beyond RTOL (relative to the larger magnitude, with an absolute floor ATOL for values near 0), 2 when STAGE matched
no entry.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

# keys holding wall-clock times (a clock inside a list, as a record's "seconds" column, is compared like any value)
CLOCK = re.compile(r"seconds|minutes|train min|runtime|elapsed|(^|_)times?($|_)|(^|_)s$|per_s$|_s_per_")
RTOL, ATOL = 1e-6, 1e-12
DIFFERING_SHOWN = 5  # the numeric leaves that differ most (relative), named in a comparison


def _leaves(value: Any, where: str = "") -> Iterator[tuple[str, Any]]:
    """(path, leaf) of a nested result: mappings by key, sequences by index, arrays and numbers as leaves; the
    clocks (`CLOCK`) are skipped."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not CLOCK.search(str(k)):
                yield from _leaves(v, f"{where}/{k}")
    elif isinstance(value, (list, tuple)) and not (value and all(isinstance(v, (int, float)) for v in value)):
        for i, v in enumerate(value):
            yield from _leaves(v, f"{where}[{i}]")
    elif hasattr(value, "detach"):  # a tensor
        yield where or "/", value.detach().cpu().numpy()
    elif hasattr(value, "__dict__") and not isinstance(value, type) and not isinstance(value, np.ndarray):
        yield from _leaves(vars(value), where)  # a fitted model or record: its fields
    else:
        yield where or "/", value


def compare(fresh: Any, stored: Any) -> dict:
    """{"equal": every leaf the same (NaN equal to NaN), "max_abs", "max_rel" (over the numeric leaves), "worst"
    (where the largest relative difference is), "leaves" (how many were compared), "mismatched" (leaves whose
    structure, shape or non-numeric value differs: named), "differing" ([where, largest absolute, largest relative
    difference] of the DIFFERING_SHOWN numeric leaves that differ most)}."""
    a, b = dict(_leaves(fresh)), dict(_leaves(stored))
    mismatched = sorted(set(a) ^ set(b))
    max_abs = max_rel = 0.0
    worst, equal, differing = "", not mismatched, []
    for where in sorted(set(a) & set(b)):
        x, y = a[where], b[where]
        xa, ya = np.asarray(x), np.asarray(y)
        if xa.dtype.kind in "fciub" and ya.dtype.kind in "fciub":
            if xa.shape != ya.shape:
                mismatched.append(f"{where} (shape {xa.shape} against {ya.shape})")
                equal = False
                continue
            xf, yf = xa.astype(np.complex128 if "c" in xa.dtype.kind + ya.dtype.kind else np.float64), ya.astype(
                np.complex128 if "c" in xa.dtype.kind + ya.dtype.kind else np.float64)
            both_nan = np.isnan(xf) & np.isnan(yf)
            same = (xf == yf) | both_nan
            if same.all():
                continue
            equal = False
            diff = np.where(same, 0.0, np.abs(xf - yf))
            diff = np.where(np.isnan(diff), np.inf, diff)
            scale = np.maximum(np.abs(xf), np.abs(yf))
            rel = np.where(same, 0.0, diff / np.maximum(scale, ATOL))
            differing.append((where, float(diff.max()), float(rel.max())))
            if float(diff.max()) > max_abs:
                max_abs = float(diff.max())
            if float(rel.max()) > max_rel:
                max_rel, worst = float(rel.max()), where
        elif not _same_object(x, y):
            mismatched.append(where)
            equal = False
    return {"equal": equal, "max_abs": max_abs, "max_rel": max_rel, "worst": worst or None,
            "leaves": len(set(a) & set(b)), "mismatched": mismatched,
            "differing": [list(d) for d in sorted(differing, key=lambda d: -d[2])[:DIFFERING_SHOWN]]}


def _same_object(x: Any, y: Any) -> bool:
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
        return True
    try:
        return bool(x == y)
    except (TypeError, ValueError):
        return repr(x) == repr(y)


def within(comparison: dict, rtol: float = RTOL) -> bool:
    """Whether a comparison passes: the same structure and every numeric leaf within `rtol` (relative)."""
    return not comparison["mismatched"] and comparison["max_rel"] <= rtol
