"""Parameter validation: fail at once, naming the parameter, the value given and what is allowed.

Every check raises `ValueError` (the notebooks call these before any heavy work).
"""

from __future__ import annotations

import ast
import difflib
import types
import typing
from collections.abc import Iterable
from dataclasses import fields, replace
from numbers import Integral, Real
from typing import Any, Union


def check_choice(name: str, value: Any, allowed: Iterable[Any]) -> Any:
    """`value` must be one of `allowed`."""
    allowed = list(allowed)
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not allowed; choose one of {allowed}.")
    return value


def check_int(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """`value` must be an integer (not a bool) within [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{name}={value!r} must be an integer.")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}={value!r} must be >= {minimum}.")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name}={value!r} must be <= {maximum}.")
    return int(value)


def check_ints(name: str, values: Any, *, minimum: int | None = None, min_len: int = 1) -> tuple[int, ...]:
    """`values` must be a non-empty sequence of distinct integers, each >= minimum."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ValueError(f"{name}={values!r} must be a list of integers.")
    values = tuple(values)
    if len(values) < min_len:
        raise ValueError(f"{name}={values!r} must hold at least {min_len} value(s).")
    if len(set(values)) != len(values):
        raise ValueError(f"{name}={values!r} holds duplicates.")
    for v in values:
        check_int(f"{name} entry", v, minimum=minimum)
    return tuple(int(v) for v in values)


def check_real(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    open_low: bool = False,
    open_high: bool = False,
) -> float:
    """`value` must be a finite real number within the interval given (closed unless `open_*`)."""
    if isinstance(value, bool) or not isinstance(value, Real) or value != value:
        raise ValueError(f"{name}={value!r} must be a real number.")
    too_low = low is not None and (value <= low if open_low else value < low)
    too_high = high is not None and (value >= high if open_high else value > high)
    if too_low or too_high:
        left, right = "(" if open_low else "[", ")" if open_high else "]"
        interval = f"{left}{'-inf' if low is None else low}, {'inf' if high is None else high}{right}"
        raise ValueError(f"{name}={value!r} must lie in {interval}.")
    return float(value)


def check_probability(name: str, value: Any) -> float:
    """`value` must lie in the open interval (0, 1), as a test level or a miscoverage rate does."""
    return check_real(name, value, low=0.0, high=1.0, open_low=True, open_high=True)


def check_percentiles(name: str, value: Any) -> tuple[float, float]:
    """`value` must be a pair (lo, hi) with 0 <= lo < hi <= 100."""
    try:
        lo, hi = value
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} must be a pair (lo, hi) of percentiles.") from None
    lo = check_real(f"{name}[0]", lo, low=0.0, high=100.0)
    hi = check_real(f"{name}[1]", hi, low=0.0, high=100.0)
    if lo >= hi:
        raise ValueError(f"{name}={value!r} needs lo < hi.")
    return lo, hi


def with_overrides(base: Any, overrides: dict[str, Any]) -> Any:
    """The frozen dataclass `base` with `overrides` applied: None keeps the base value, lists become
    tuples (papermill passes lists), and an unknown name is a ValueError listing the known ones."""
    known = {f.name for f in fields(base)}
    unknown = set(overrides) - known
    if unknown:
        raise ValueError(f"unknown parameter(s) {sorted(unknown)}; known: {sorted(known)}.")
    changes = {k: tuple(v) if isinstance(v, list) else v for k, v in overrides.items() if v is not None}
    return replace(base, **changes)


def check_bool(name: str, value: Any) -> bool:
    """`value` must be a real bool. Strings are refused, not parsed: papermill reads only `True` and `False`
    as booleans (`-p EXPLORER False`), so `-p EXPLORER false` arrives as the string 'false', which Python
    would treat as true; refusing it names the mistake instead of guessing."""
    if not isinstance(value, bool):
        hint = f"; papermill reads only True/False as booleans: -p {name} {str(value).capitalize()}" \
            if isinstance(value, str) and value.lower() in ("true", "false") else ""
        raise ValueError(f"{name}={value!r} must be True or False (a bool){hint}.")
    return value


def check_type(name: str, value: Any, annotation: Any) -> Any:
    """`value` must match the parameter cell's annotation: bool, int, float (an int is accepted), str, list
    (a tuple is accepted) or Optional[...] of one of them. Other annotations are not checked."""
    if typing.get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if value is None and len(args) < len(typing.get_args(annotation)):
            return value
        annotation = args[0] if len(args) == 1 else Any
    none = " (or None for the preset's value)" if value is not None and annotation is not Any else ""
    if annotation is bool:
        return check_bool(name, value)
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, Integral):
            raise ValueError(f"{name}={value!r} must be an integer{none}.")
    elif annotation is float:
        if isinstance(value, bool) or not isinstance(value, Real):
            raise ValueError(f"{name}={value!r} must be a number{none}.")
    elif annotation is str:
        if not isinstance(value, str):
            raise ValueError(f"{name}={value!r} must be a string{none}.")
    elif annotation is list:
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{name}={value!r} must be a list{none}; papermill takes lists as YAML: "
                             f"-y '{name}: [...]'.")
    return value


def injected_names(history: Iterable[str]) -> list[str]:
    """The names papermill injected: the assignments of the last executed cell that starts with papermill's
    '# Parameters' line (IPython keeps executed sources in `In`). Empty when nothing was injected."""
    for source in reversed(list(history)):
        if source.lstrip().startswith("# Parameters"):
            tree = ast.parse(source)
            return [t.id for node in tree.body if isinstance(node, ast.Assign)
                    for t in node.targets if isinstance(t, ast.Name)]
    return []


def check_notebook_parameters(namespace: dict[str, Any]) -> None:
    """Check a notebook's parameters before any work; the configuration cell calls it with `globals()`.

    The parameters are the annotated names of the parameters cell (`__annotations__`). A name papermill
    injected that the cell does not declare (a misspelling: `-p NUM_MEMBER 3`) is an error with a
    did-you-mean suggestion; every declared parameter must match its annotation (`check_type`), so
    `-p ALPHAS 0.1` for a list or `-p EXPLORER false` for a bool stop here, naming the parameter.
    """
    declared = dict(namespace.get("__annotations__", {}))
    unknown = [n for n in injected_names(namespace.get("In", [])) if n not in declared]
    if unknown:
        hints = []
        for n in unknown:
            close = difflib.get_close_matches(n, declared, n=1, cutoff=0.6)
            hints.append(f"{n} (did you mean {close[0]}?)" if close else n)
        raise ValueError(f"unknown parameter(s): {', '.join(hints)}; this notebook's parameters are "
                         f"{', '.join(declared)}.")
    for name, annotation in declared.items():
        if name in namespace:
            check_type(name, namespace[name], annotation)
