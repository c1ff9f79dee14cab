"""Parameter validation: fail at once, naming the parameter, the value given and what is allowed.

Every check raises `ValueError` (the notebooks call these before any heavy work). A check names a setting
as its config calls it (`num_members`); inside `parameter_names(...)` the message names the notebook
parameter that sets it instead (`NUM_MEMBERS`), as the notebooks' configuration cells arrange.
"""

from __future__ import annotations

import ast
import difflib
import math
import os
import re
import tempfile
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields, is_dataclass, replace
from numbers import Integral, Real
from pathlib import Path
from types import MappingProxyType
from typing import Any, Union

import numpy as np

_NAMES: ContextVar[Mapping[str, str]] = ContextVar("parameter_names", default=MappingProxyType({}))
_LEADING_NAME = re.compile(r"[A-Za-z_][\w.]*")


def shown(name: str) -> str:
    """`name` as the user gave it: inside `parameter_names(names)` its leading setting name ("num_members",
    "train.batch_size", the "complexities" of "complexities entry", the "folds" of "folds[2]") becomes the
    notebook parameter `names` maps it to ("NUM_MEMBERS", "BATCH_SIZE", "COMPLEXITIES entry", "FOLDS[2]");
    other names are kept."""
    names, match = _NAMES.get(), _LEADING_NAME.match(name)
    if match is None or match.group() not in names:
        return name
    return names[match.group()] + name[match.end():]


@contextmanager
def parameter_names(names: Mapping[str, str]) -> Iterator[None]:
    """Within the block, the checks of this module (and messages built with `shown`) name a setting by the
    notebook parameter that sets it. `names` maps the setting names the checks use to the parameters, e.g.
    {"num_members": "NUM_MEMBERS", "ring.trunc_factor": "TRUNC_FACTOR"} (`setting_parameters`, which `configure` uses):
    a notebook's configuration cell resolves its config inside it, so `-p NUM_MEMBERS 1` is reported as
    NUM_MEMBERS=1, the name the user typed."""
    token = _NAMES.set(MappingProxyType(dict(names)))
    try:
        yield
    finally:
        _NAMES.reset(token)


def check_choice(name: str, value: Any, allowed: Iterable[Any]) -> Any:
    """`value` must be one of `allowed`."""
    allowed = list(allowed)
    if value not in allowed:
        raise ValueError(f"{shown(name)}={value!r} is not allowed; choose one of {allowed}.")
    return value


def check_int(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """`value` must be an integer (not a bool) within [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{shown(name)}={value!r} must be an integer.")
    if minimum is not None and value < minimum:
        raise ValueError(f"{shown(name)}={value!r} must be >= {minimum}.")
    if maximum is not None and value > maximum:
        raise ValueError(f"{shown(name)}={value!r} must be <= {maximum}.")
    return int(value)


MAX_SEED = 2**63 - 1  # torch and NumPy take any seed up to here, and the small offsets added to it


def check_seed(name: str, value: Any) -> int:
    """A seed: an integer in [0, 2**63 - 1]. A larger one passes an integer check, then fails at the first
    random draw ("Overflow when unpacking long long") without naming the parameter."""
    return check_int(name, value, minimum=0, maximum=MAX_SEED)


def _first_repeat(values: Iterable[Any]) -> tuple[bool, Any]:
    """(True, the first entry equal to an earlier one) or (False, None)."""
    hashed: set = set()
    unhashable: list = []
    for v in values:
        try:
            if v in hashed:
                return True, v
            hashed.add(v)
        except TypeError:
            if v in unhashable:
                return True, v
            unhashable.append(v)
    return False, None


def check_list(name: str, values: Any, *, min_len: int = 1) -> tuple:
    """`values` must be a list (or tuple) of at least `min_len` entries, none repeated; returns it as a tuple.

    Every list parameter whose entries are settings to run (levels, sizes, names) goes through this check:
    a repeated entry would run one setting twice and record it twice (a table row, a glued result), so it
    is refused, naming the repeated entry. The caller checks each entry, named f"{name} entry"."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)):
        raise ValueError(f"{shown(name)}={values!r} must be a list.")
    if len(values) < min_len:
        raise ValueError(f"{shown(name)}={values!r} must hold at least {min_len} value(s).")
    repeated, entry = _first_repeat(values)
    if repeated:
        raise ValueError(f"{shown(name)}={values!r} holds duplicates ({entry!r} more than once); "
                         "list each entry once.")
    return tuple(values)


def check_ints(name: str, values: Any, *, minimum: int | None = None, min_len: int = 1) -> tuple[int, ...]:
    """`values` must be a non-empty sequence of distinct integers, each >= minimum."""
    values = check_list(name, values, min_len=min_len)
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
    """`value` must be a finite real number within the interval given (closed unless `open_*`): NaN and
    +-inf are refused whatever the interval (an infinite noise level or truncation factor runs, and gives
    numbers that mean nothing)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{shown(name)}={value!r} must be a real number.")
    if not math.isfinite(value):
        raise ValueError(f"{shown(name)}={value!r} must be a finite real number.")
    too_low = low is not None and (value <= low if open_low else value < low)
    too_high = high is not None and (value >= high if open_high else value > high)
    if too_low or too_high:
        left, right = "(" if open_low else "[", ")" if open_high else "]"
        interval = f"{left}{'-inf' if low is None else low}, {'inf' if high is None else high}{right}"
        raise ValueError(f"{shown(name)}={value!r} must lie in {interval}.")
    return float(value)


def check_probability(name: str, value: Any) -> float:
    """`value` must lie in the open interval (0, 1), as a test level or a miscoverage rate does."""
    return check_real(name, value, low=0.0, high=1.0, open_low=True, open_high=True)


def check_percentiles(name: str, value: Any) -> tuple[float, float]:
    """`value` must be a pair (lo, hi) with 0 <= lo < hi <= 100."""
    try:
        lo, hi = value
    except (TypeError, ValueError):
        raise ValueError(f"{shown(name)}={value!r} must be a pair (lo, hi) of percentiles.") from None
    lo = check_real(f"{name}[0]", lo, low=0.0, high=100.0)
    hi = check_real(f"{name}[1]", hi, low=0.0, high=100.0)
    if lo >= hi:
        raise ValueError(f"{shown(name)}={value!r} needs lo < hi.")
    return lo, hi


def check_output_dir(name: str, value: str | Path) -> Path | None:
    """An output folder parameter (FIGURES_DIR): "" means none (returns None); otherwise the folder is
    created (with its parents) and a probe file is written in it and removed, so a path that cannot hold
    files (`/dev/null/figs`, a read-only folder, an existing file) stops the configuration cell, naming
    the parameter, instead of the first figure after minutes of work. Returns the folder."""
    if not value:
        return None
    folder = Path(value).expanduser()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        raise ValueError(f"{shown(name)}={str(value)!r} is not a writable folder ({type(err).__name__}: "
                         f"{err.strerror or err}); give a folder that can be created and written, or '' for "
                         "none.") from None
    return folder


SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")


def check_name(name: str, value: Any, allowed: Iterable[str] | None = None) -> str:
    """A name that becomes one component of a path (a preset, a notebook's namespace): letters, digits, '_',
    '-' and '.', not starting with '.' (so never '..', a '/' or an absolute path), and one of `allowed` when
    given."""
    if not isinstance(value, str) or not SAFE_NAME.match(value):
        raise ValueError(f"{shown(name)}={value!r} is not a plain name (letters, digits, '_', '-', '.'; no '/', "
                         "not starting with '.').")
    return value if allowed is None else check_choice(name, value, allowed)


def path_inside(root: str | Path, *parts: str, name: str) -> Path:
    """`root / parts`, refused (ValueError naming the parameter `name`) when it resolves outside `root`: an
    absolute part, '..' or a symbolic link that leads out. Every path built from a parameter goes through it,
    so a parameter can never make a write, and above all a delete, land outside its folder."""
    root = Path(root)
    path = root.joinpath(*parts)
    if not path.resolve().is_relative_to(root.resolve()):
        raise ValueError(f"{shown(name)}={'/'.join(map(str, parts))!r} leads outside its folder {root} "
                         f"(to {path.resolve()}); give a plain name.")
    return path


@dataclass(frozen=True)
class MemoryTerm:
    """Part of what a run holds in memory: `what` it is, its size `nbytes` (an estimate), and the settings
    it grows with, {setting name (as the checks name it): value}."""

    what: str
    nbytes: float
    grows_with: Mapping[str, Any]


def available_memory() -> int | None:
    """Bytes this machine can still give a process: MemAvailable of /proc/meminfo (else the available
    physical pages of os.sysconf), lowered to a cgroup v2 limit minus its usage where one is set (a
    container's OOM killer counts that); None where neither is known."""
    available = None
    try:
        with open("/proc/meminfo") as fh:
            rows = dict(line.split(":", 1) for line in fh if ":" in line)
        available = int(rows["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            pass
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = int(Path("/sys/fs/cgroup/memory.current").read_text())
        if limit != "max":
            available = min(available or math.inf, int(limit) - used)
    except (OSError, ValueError):
        pass
    return available


def check_memory(terms: Iterable[MemoryTerm], *, available: float | None = None) -> float:
    """Refuse a configuration whose estimated memory, the sum of `terms`, exceeds `available` bytes (default
    `available_memory()`; unknown: no check), naming the largest term and the settings it grows with.
    Returns the estimate in bytes."""
    terms = list(terms)
    total = sum(t.nbytes for t in terms)
    available = available_memory() if available is None else available
    if available is not None and terms and total > available:
        big = max(terms, key=lambda t: t.nbytes)
        named = [f"{shown(n)}={v!r}" for n, v in big.grows_with.items()]
        grows = " and ".join([", ".join(named[:-1]), named[-1]] if len(named) > 1 else named)
        raise ValueError(f"this configuration needs about {total / 1e9:,.1f} GB of memory, more than the "
                         f"{available / 1e9:,.1f} GB available; the largest part, {big.what}, takes about "
                         f"{big.nbytes / 1e9:,.1f} GB and grows with {grows}: lower it.")
    return total


def with_overrides(base: Any, overrides: Mapping[str, Any], *, flat: Iterable[str] = ()) -> Any:
    """The frozen dataclass `base` with `overrides` applied: None keeps the base value, lists become
    tuples (papermill passes lists), and an unknown name is a ValueError listing the known ones.

    Nested settings: a field that holds a dataclass takes a dict of its own overrides (applied the same
    way, e.g. notebook 02's `captions={"samples_per_image": 3}`), and the fields of the nested dataclasses
    named in `flat` are accepted at the top level too (notebook 03's head settings, `epochs=4`).
    """
    known = {f.name for f in fields(base)}
    routed = {name: {f.name for f in fields(getattr(base, name))} - known for name in flat}
    allowed = known.union(*routed.values())
    unknown = set(overrides) - allowed
    if unknown:
        raise ValueError(f"unknown parameter(s) {sorted(unknown)}; known: {sorted(allowed)}.")
    changes: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {name: {} for name in routed}
    for key, value in overrides.items():
        owner = next((name for name, names in routed.items() if key in names), None)
        if value is None:
            continue
        if owner is not None:
            nested[owner][key] = value
        elif is_dataclass(getattr(base, key)) and isinstance(value, Mapping):
            changes[key] = with_overrides(getattr(base, key), value)
        else:
            changes[key] = tuple(value) if isinstance(value, list) else value
    for name, sub in nested.items():
        if sub:
            changes[name] = with_overrides(changes.get(name, getattr(base, name)), sub)
    return replace(base, **changes)


def resolve_preset(presets: Mapping[str, Any], preset: str, overrides: Mapping[str, Any], *,
                   flat: Iterable[str] = ()) -> Any:
    """`presets[preset]` with `overrides` (see `with_overrides`); an unknown preset names the choices."""
    check_choice("PRESET", preset, presets)
    return with_overrides(presets[preset], overrides, flat=flat)
PARAMETER = "parameter"  # a config field's metadata key: the notebook parameter that sets it (None: no parameter)


def setting_parameters(template: Any, declared: Iterable[str] | None = None, prefix: str = "") -> dict[str, str]:
    """{setting path: the notebook parameter that sets it} of a config dataclass (a preset), the one place a
    notebook parameter is named: each field is set by its name in capitals (`num_members` by NUM_MEMBERS, the
    nested `train.batch_size` by BATCH_SIZE), or by the name its field metadata gives (`field(metadata={PARAMETER:
    "CLASS_DRAWS"})`; None: no parameter). A field holding a dataclass is walked into unless its metadata names a
    parameter; a top-level `preset` field is PRESET itself. One parameter may set several settings (02's
    PGD_STARTS sets both its caption and image runs'). With `declared` (the notebook's parameters), only the
    parameters it declares are kept."""
    declared = None if declared is None else set(declared)
    out: dict[str, str] = {}
    for f in fields(template):
        if not prefix and f.name == "preset":  # PRESET chooses the preset itself; it overrides nothing
            continue
        value, path = getattr(template, f.name), prefix + f.name
        if is_dataclass(value) and PARAMETER not in f.metadata:
            out |= setting_parameters(value, declared, prefix=path + ".")
            continue
        name = f.metadata.get(PARAMETER, f.name.upper())
        if name is not None and (declared is None or name in declared):
            out[path] = name
    return out


def overrides_from(namespace: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """The overrides (nested dicts for nested settings, as `with_overrides` takes them) that the notebook's
    parameters in `namespace` give the settings of `names` ({setting path: parameter})."""
    overrides: dict[str, Any] = {}
    for path, parameter in names.items():
        if parameter in namespace:
            *heads, last = path.split(".")
            level = overrides
            for head in heads:
                level = level.setdefault(head, {})
            level[last] = namespace[parameter]
    return overrides


def configure(resolve: Callable[..., Any], presets: Mapping[str, Any], namespace: Mapping[str, Any]) -> Any:
    """A notebook's config from its parameters, in one call: `resolve(PRESET, **overrides)` with the value of every
    parameter the notebook declares that sets a setting (`setting_parameters`; None keeps the preset's), resolved
    inside `parameter_names`, so that a bad value is reported under the parameter's name. The configuration cell
    calls it with `globals()`, after `check_notebook_parameters`."""
    preset = check_choice("PRESET", namespace["PRESET"], presets)
    names = setting_parameters(presets[preset], namespace.get("__annotations__", {}))
    with parameter_names(names):
        return resolve(preset, **overrides_from(namespace, names))


def resolved_parameters(config: Any, presets: Mapping[str, Any], namespace: Mapping[str, Any]) -> list[dict]:
    """One row per notebook parameter that sets `config`: {"parameter", "value" (what the run uses), "preset"
    (the preset's value where the run's differs, else "")}, for the table after the configuration cell. A
    parameter that sets several settings to different values (a preset may give them their own) shows each,
    named by its setting path."""
    names = setting_parameters(config, namespace.get("__annotations__", {}))
    base = presets[config.preset]
    paths: dict[str, list[str]] = {}
    for path, parameter in names.items():
        paths.setdefault(parameter, []).append(path)
    return [{"parameter": parameter, "value": _values(config, where),
             "preset": "" if all(_setting(config, p) == _setting(base, p) for p in where) else _values(base, where)}
            for parameter, where in paths.items()]


def _values(config: Any, paths: list[str]) -> str:
    """The value of the settings at `paths`: one value when they agree, else "path: value" for each."""
    values = [_setting(config, p) for p in paths]
    if all(v == values[0] for v in values):
        return _short(values[0])
    return "; ".join(f"{p}: {_short(v, 24, 24)}" for p, v in zip(paths, values))


def _setting(config: Any, path: str) -> Any:
    for part in path.split("."):
        config = getattr(config, part)
    return config


def _short(value: Any, width: int = 48, list_width: int = 72) -> str:
    """A setting's value as a table cell: a list or tuple as its items in brackets, strings unquoted (as many as fit
    in `list_width` characters, then how many there are in all), a string unquoted (jpeg, not 'jpeg'; an empty one
    as ''), None as "None", anything else as its repr cut at `width`."""
    if isinstance(value, (list, tuple)):
        items = [v if isinstance(v, str) else repr(list(v) if isinstance(v, tuple) else v) for v in value]
        if len(", ".join(items)) + 2 <= list_width:
            return f"[{', '.join(items)}]"
        kept: list[str] = []
        while len(", ".join([*kept, items[len(kept)]])) <= list_width - 18:
            kept.append(items[len(kept)])
        return f"[{', '.join(kept)}, …] ({len(items)} in all)"
    text = value if isinstance(value, str) and value else repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


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


MAX_THREADS_PER_CPU = 4  # NUM_THREADS above 4 threads a core only oversubscribes it; 10**6 would start 10**6


def check_threads(name: str, value: Any) -> int:
    """A thread count: an integer from 1 to MAX_THREADS_PER_CPU times this machine's CPUs (os.cpu_count)."""
    return check_int(name, value, minimum=1, maximum=MAX_THREADS_PER_CPU * (os.cpu_count() or 1))


def check_notebook_parameters(namespace: dict[str, Any]) -> None:
    """Check a notebook's parameters before any work; the configuration cell calls it with `globals()`.

    The parameters are the annotated names of the parameters cell (`__annotations__`). A name papermill
    injected that the cell does not declare (a misspelling: `-p NUM_MEMBER 3`) is an error with a
    did-you-mean suggestion; every declared parameter must match its annotation (`check_type`), so
    `-p ALPHAS 0.1` for a list or `-p EXPLORER false` for a bool stop here, naming the parameter. NUM_THREADS,
    which every notebook declares and hands to `lib.device.set_threads` on the next line, must be a thread
    count this machine can run (`check_threads`).
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
    if "NUM_THREADS" in declared and "NUM_THREADS" in namespace:
        check_threads("NUM_THREADS", namespace["NUM_THREADS"])


# ----------------------------------------------------------------------------------------------------
# Array checks: the library's public functions call these on their array arguments, so that a NaN, an
# empty input or a wrong shape is an error naming the argument instead of a number computed from it.
# ----------------------------------------------------------------------------------------------------
_SCAN_BLOCK = 1 << 22  # entries per block when scanning for NaN/inf: no full-size mask of a large array


def check_ndim(name: str, values: Any, ndim: int, shape: str = "") -> np.ndarray:
    """`values` as an array with `ndim` dimensions; `shape` names the axes in the error, e.g. "(M, R, G)"."""
    arr = np.asarray(values)
    if arr.ndim != ndim:
        expected = f"a {shape} array" if shape else f"a {ndim}-D array"
        raise ValueError(f"{name} must be {expected}; got shape {arr.shape} ({arr.ndim}-D).")
    return arr


def check_nonempty(name: str, values: Any, *, min_len: int = 1, axis: int = 0, shape: str = "") -> np.ndarray:
    """`values` as an array with at least `min_len` entries along `axis` and no empty axis (an empty grid
    or feature axis is refused too); `shape` names the axes in the error, e.g. "(members, grid)"."""
    arr = np.asarray(values)
    if arr.ndim <= 1 and arr.size < min_len:
        raise ValueError(f"{name} must hold at least {min_len} value(s); got {arr.size}.")
    if arr.ndim > 1 and (arr.shape[axis] < min_len or 0 in arr.shape):
        what = f"a {shape} array" if shape else "an array"
        entries = "entry" if min_len == 1 else "entries"
        raise ValueError(f"{name} must be {what} with at least {min_len} {entries} along axis {axis} and no "
                         f"empty axis; got shape {arr.shape}.")
    return arr


def _non_finite(arr: np.ndarray) -> tuple[int, tuple[int, ...] | None]:
    """(number of NaN/inf entries, index of the first) of a float array of at least one dimension, scanned
    in blocks of rows so that no mask as large as the array is built."""
    step = max(1, _SCAN_BLOCK // max(1, int(np.prod(arr.shape[1:]))))
    count, first = 0, None
    for start in range(0, len(arr), step):
        bad = ~np.isfinite(arr[start : start + step])
        if bad.any():
            count += int(bad.sum())
            if first is None:
                where = np.argwhere(bad)[0]
                first = (start + int(where[0]), *(int(i) for i in where[1:]))
    return count, first


def check_finite(name: str, values: Any, *, axes: tuple[str, str] = ("row", "column"), hint: str = "") -> np.ndarray:
    """`values` as a numeric array (its dtype kept) without NaN or +-inf, else a ValueError naming `name`,
    the count and the first offending entry: "row i, column j" for a 2-D array (`axes` renames the two
    axes), "index i" or "index (i, j, k)" otherwise. `hint` says what to do instead (default: only finite
    values are allowed)."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be a numeric array; got dtype {arr.dtype}.")
    if arr.dtype.kind == "f":
        count, first = _non_finite(np.atleast_1d(arr))
        if count:
            where = (f"{axes[0]} {first[0]}, {axes[1]} {first[1]}" if arr.ndim == 2
                     else f"index {first[0]}" if arr.ndim <= 1 else f"index {first}")
            raise ValueError(f"{name} holds {count} non-finite value(s) (first at {where}: "
                             f"{np.atleast_1d(arr)[first]}); {hint or 'only finite values are allowed'}.")
    return arr


def check_nonnegative(name: str, values: Any) -> np.ndarray:
    """`values` as a finite numeric array (`check_finite`) with every entry >= 0."""
    arr = check_finite(name, values)
    if arr.size and arr.min() < 0:
        first = np.unravel_index(int(np.argmax(arr < 0)), arr.shape)
        raise ValueError(f"{name} must be >= 0 everywhere; it holds {int((arr < 0).sum())} negative value(s), the "
                         f"first at index {first[0] if arr.ndim == 1 else first}: {arr[first]}.")
    return arr


def check_indices(name: str, values: Any, n: int, *, n_name: str = "n") -> np.ndarray:
    """`values` as a 1-D int64 array of indices into a set of `n` items: integer dtype (floats and bools are
    refused, not rounded) and each within [0, n); `n_name` names the size in the error."""
    arr = check_ndim(name, values, 1, "1-D (n,)")
    if arr.size == 0:
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integer indices; got dtype {arr.dtype}.")
    outside = (arr < 0) | (arr >= n)
    if outside.any():
        first = int(np.argmax(outside))
        raise ValueError(f"{name} must lie in [0, {n_name}) = [0, {n}); {int(outside.sum())} index(es) do not, "
                         f"the first at position {first}: {arr[first]}.")
    return arr.astype(np.int64, copy=False)
