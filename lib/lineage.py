"""The code a result depends on: a fingerprint of it, so that a stored or cached result knows when its code changed.

A cache key names what a result was computed *from* (its configuration); it cannot name what it was computed
*with*. This module reads that from the code itself, as `dvc.lock` records the dependencies of a stage:

- **Roots** (`roots_of`): where a computation starts. For the `compute` callable a stage hands to the run
  (`lib.run.Run.npz`), the function it is defined in (a stage's nested `def compute()` or lambda stands for its
  stage function, whose source holds it) and the `lib` functions and classes it captured (closure cells, default
  arguments: `lambda f=folder: ...`).
- **Parts** (`parts_of`): the roots and, transitively, every function and class of `lib` their code refers to:
  global names, attributes of `lib` modules (`store.layer_dir`), names imported inside a function, the classes of
  the `lib` objects a closure captured. Each part is named `module:qualname` and digested over its source with
  comments, docstrings, blank lines and indentation of the whole block removed (`normalised_source`): editing a
  comment or moving a function changes nothing, editing a line of code changes its part. Module-level constants a
  part reads (a number, a string, a tuple of them) are parts too, digested by value.
- What decides *where a result comes from* rather than *what it is* is not followed (`NOT_FOLLOWED`: the run, the
  cache and store formats, progress bars, provenance, the commands): editing the lookup does not make every result
  stale.

A record (`record`) is {"roots": [...], "parts": {name: digest}}; `changes(record)` says which parts changed, were
added or were removed since it was made, recomputing the parts from the recorded roots (so it needs no callable:
`make status` checks a committed layer this way). The source is read as text (`inspect.getsource`), not as the
interpreter's AST or bytecode, so a record made under one Python version reads the same under another.

What it cannot see: code outside `lib` (numpy, torch: their versions are the environment's, recorded in each
layer's manifest), data files (the configuration's checksums name them), and calls made through names it cannot
resolve statically (a function looked up in a dict built at import time is followed only when the dict's values
are named in the code). It over-approximates rather than under: a class counts whole, a name that matches an
attribute of a module the code uses counts.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import inspect
import io
import os
import sys
import textwrap
import tokenize
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

PACKAGE = "lib"
# modules that decide where a result comes from, how it is shown or how a command runs, never what it is
NOT_FOLLOWED = ("lib.run", "lib.cache", "lib.store", "lib.lineage", "lib.progress", "lib.provenance", "lib.paths",
                "lib.cli", "lib.make", "lib.glue", "lib.reading", "lib.templates", "lib.tables", "lib.plotting")
_SCALARS = (bool, int, float, complex, str, bytes, type(None))
_MISSING = object()


def followed(module: str | None) -> bool:
    """Whether code of `module` counts as code a result depends on (a `lib` module outside NOT_FOLLOWED)."""
    if not module or not (module == PACKAGE or module.startswith(PACKAGE + ".")):
        return False
    return not any(module == m or module.startswith(m + ".") for m in NOT_FOLLOWED)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# ------------------------------------------------------------------------------------------------------------
# One part: its normalised source
# ------------------------------------------------------------------------------------------------------------
def normalised_source(source: str) -> str:
    """`source` (a function's or class's text) without comments, docstrings, blank lines and the block's common
    indentation: the text whose change is a change of the code."""
    import ast

    source = textwrap.dedent(source)
    lines = source.splitlines(keepends=True)
    drop: set[tuple[int, int, int, int]] = set()  # (start line, start col, end line, end col), 1-based lines
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a lambda's line cut out of an expression: compare it as text
        tree = None
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)) and node.body:
                first = node.body[0]
                if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                        and isinstance(first.value.value, str)):
                    drop.add((first.lineno, first.col_offset, first.end_lineno, first.end_col_offset))
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                drop.add((tok.start[0], tok.start[1], tok.end[0], tok.end[1]))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    # cut the dropped spans from the end backwards, so that earlier positions stay valid
    for start_line, start_col, end_line, end_col in sorted(drop, reverse=True):
        head = lines[start_line - 1][:start_col]
        tail = lines[end_line - 1][end_col:]
        lines[start_line - 1:end_line] = [head + tail]
    kept = [line.rstrip() for line in "".join(lines).splitlines()]
    return "\n".join(line for line in kept if line.strip()) + "\n"


@functools.cache
def _source_digest(obj: Any) -> str | None:
    """The digest of `obj`'s normalised source, or None when it has none (a builtin, a generated method)."""
    try:
        return _digest(normalised_source(inspect.getsource(obj)))
    except (OSError, TypeError):
        return None


def part_name(obj: Any) -> str:
    """`module:qualname` of a function or class."""
    return f"{obj.__module__}:{obj.__qualname__}"


def resolve(name: str) -> Any:
    """The function or class a part name (`module:qualname`) names today; LookupError when it is gone."""
    module_name, _, qualname = name.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as err:
        raise LookupError(f"module {module_name} is gone") from err
    for attr in qualname.split("."):
        if attr == "<locals>" or not hasattr(obj, attr):
            raise LookupError(f"{name} is gone")
        obj = getattr(obj, attr)
    return obj


# ------------------------------------------------------------------------------------------------------------
# Roots and the closure of parts
# ------------------------------------------------------------------------------------------------------------
def _unwrap(obj: Any) -> Any:
    if isinstance(obj, functools.partial):
        return obj.func
    if isinstance(obj, (staticmethod, classmethod)):
        return obj.__func__
    if isinstance(obj, types.MethodType):
        return obj.__func__
    return inspect.unwrap(obj) if callable(obj) else obj


def _is_part(obj: Any) -> bool:
    obj = _unwrap(obj)
    return (inspect.isfunction(obj) or inspect.isclass(obj)) and followed(getattr(obj, "__module__", None))


def _enclosing(func: types.FunctionType) -> Any | None:
    """The named function or class a nested function or lambda is defined in (its source holds it), or None."""
    qualname = func.__qualname__
    if "<locals>" not in qualname and "<lambda>" not in qualname:
        return None
    outer = qualname.split(".<locals>")[0]
    try:
        return resolve(f"{func.__module__}:{outer}")
    except LookupError:
        return None


def _named(obj: Any) -> Any | None:
    """The function or class itself, or for a nested function or lambda the named one whose source holds it (None
    for a lambda at a module's top level: its names are followed where it is used)."""
    if "<" not in obj.__qualname__:
        return obj
    return _enclosing(obj) if "<locals>" in obj.__qualname__ else None


def roots_of(compute: Callable) -> list[str]:
    """The part names a computation starts from (module docstring): the named function `compute` is, or the one it
    is defined in, and the `lib` functions, classes and objects' classes it captured (cells, defaults). A
    `compute` defined outside `lib` (a notebook's cell) contributes what it captured and the `lib` names its code
    uses."""
    func = _unwrap(compute)
    if not inspect.isfunction(func):
        return [part_name(type(func))] if _is_part(type(func)) else []
    roots: set[str] = set()
    enclosing = _enclosing(func)
    if enclosing is not None and _is_part(enclosing):
        roots.add(part_name(_unwrap(enclosing)))
    elif _is_part(func) and "<" not in func.__qualname__:
        roots.add(part_name(func))
    else:  # not lib code: the lib names it uses are its roots
        roots.update(part_name(_unwrap(o)) for o in _referenced(func.__code__, func.__globals__) if _is_part(o))
    captured = [c.cell_contents for c in (func.__closure__ or ()) if _cell_filled(c)]
    captured += list(func.__defaults__ or ()) + list((func.__kwdefaults__ or {}).values())
    for value in captured:
        for obj in _objects_in(value):
            roots.add(part_name(_unwrap(obj)))
    return sorted(roots)


def _cell_filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
        return True
    except ValueError:
        return False


def _objects_in(value: Any, depth: int = 0) -> Iterable[Any]:
    """The lib functions and classes a captured value is or holds (its class, a partial's function, the items of a
    short tuple, list or dict)."""
    if _is_part(value):
        named = _named(_unwrap(value))
        if named is not None:
            yield named
    elif _is_part(type(value)):  # an instance of a lib class: its class, and what it holds (an extractor's network)
        yield type(value)
        if depth < 2:
            for item in getattr(value, "__dict__", {}).values():
                yield from _objects_in(item, depth + 1)
    elif isinstance(value, functools.partial):
        yield from _objects_in(value.func, depth + 1)
    elif depth < 2 and isinstance(value, (tuple, list)) and len(value) <= 64:
        for item in value:
            yield from _objects_in(item, depth + 1)
    elif depth < 2 and isinstance(value, Mapping) and len(value) <= 64:
        for item in value.values():
            yield from _objects_in(item, depth + 1)


def _code_objects(code: types.CodeType) -> Iterable[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _referenced(code: types.CodeType, namespace: Mapping[str, Any]) -> list[Any]:
    """The objects the code (and the functions, lambdas and comprehensions nested in it) refers to: its global
    names looked up in `namespace`, and the attributes of the `lib` modules among them (or imported inside it)
    that any of its names match."""
    names: set[str] = set()
    for c in _code_objects(code):
        names.update(c.co_names)
    found: list[Any] = []
    modules: list[types.ModuleType] = []
    for name in names:
        if name in namespace:
            value = namespace[name]
            (modules if isinstance(value, types.ModuleType) else found).append(value)
        if name == PACKAGE or name.startswith(PACKAGE + "."):  # an import of a lib module inside the code
            try:  # imported here too: a fresh process (`make status`) reaches what the run's kernel had imported
                modules.append(importlib.import_module(name))
            except ImportError:
                pass
    seen: set[str] = set()
    while modules:
        module = modules.pop()
        if module.__name__ in seen or not module.__name__.startswith(PACKAGE):
            continue
        seen.add(module.__name__)
        for name in names:
            value = getattr(module, name, None)
            if value is None and hasattr(module, "__path__"):  # a subpackage not imported yet in this process
                value = _submodule(module.__name__, name)
            if isinstance(value, types.ModuleType):
                modules.append(value)
            elif value is not None:
                found.append(value)
                if not name.startswith("__") and _is_constant(value) and followed(module.__name__):
                    found.append(_Constant(module.__name__, name, value))
    for name in names:  # module-level constants of the code's own module
        value = namespace.get(name, _MISSING)
        if not name.startswith("__") and _is_constant(value) and followed(namespace.get("__name__")):
            found.append(_Constant(namespace["__name__"], name, value))
    return found


@functools.cache
def _submodule(package: str, name: str) -> types.ModuleType | None:
    """`package.name` imported when it is a module of the package, else None: what `package.name` resolves to in
    a process that imported it, whether or not this one had (the walk must not depend on what was imported)."""
    if not name.isidentifier():
        return None
    try:
        if importlib.util.find_spec(f"{package}.{name}") is None:
            return None
        return importlib.import_module(f"{package}.{name}")
    except (ImportError, ValueError):
        return None


class _Constant:
    """A module-level number, string or tuple of them that a part reads: a part digested by its value."""

    def __init__(self, module: str, name: str, value: Any):
        self.name, self.value = f"{module}:{name}", value


def _is_constant(value: Any) -> bool:
    if isinstance(value, _SCALARS):
        return not isinstance(value, (str, bytes)) or len(value) <= 10_000
    if isinstance(value, (tuple, frozenset)) and len(value) <= 256:
        return all(isinstance(v, _SCALARS) for v in value)
    return False


def _children(obj: Any) -> list[Any]:
    """The objects a part's code refers to: a function's references; a class's bases and the references of every
    function defined in its body."""
    if inspect.isclass(obj):
        out: list[Any] = [b for b in obj.__bases__ if _is_part(b)]
        module = sys.modules.get(obj.__module__)
        namespace = vars(module) if module else {}
        for value in vars(obj).values():
            value = value.fget if isinstance(value, property) else _unwrap(value)
            if inspect.isfunction(value) and value.__module__ == obj.__module__:
                out += _referenced(value.__code__, value.__globals__)
            elif inspect.isclass(value) and _is_part(value):
                out.append(value)
        return out + [o for o in _class_level(obj, namespace)]
    func = _unwrap(obj)
    return _referenced(func.__code__, func.__globals__) if inspect.isfunction(func) else []


def _class_level(cls: type, namespace: Mapping[str, Any]) -> list[Any]:
    """Objects a class body names outside its methods (field defaults, decorators): the names of its source that
    resolve in its module."""
    try:
        code = compile(textwrap.dedent(inspect.getsource(cls)), "<class>", "exec")
    except (OSError, TypeError, SyntaxError):
        return []
    return _referenced(code, namespace)


def parts_of(roots: Iterable[str]) -> dict[str, str]:
    """{part name: digest} of the roots and every part they refer to, transitively (module docstring). A root that
    no longer exists is a part with the digest "gone". Kept per set of roots until a file of `lib` changes (a
    reload in a live kernel: `_generation`)."""
    return dict(_parts_of(tuple(sorted(set(roots))), _generation()))


def _generation() -> tuple:
    """The modification times of the `lib` modules loaded: what keeps `_parts_of`'s memory current."""
    out = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if path and (name == PACKAGE or name.startswith(PACKAGE + ".")):
            try:
                out.append((name, os.stat(path).st_mtime_ns))
            except OSError:
                out.append((name, None))
    return tuple(sorted(out))


@functools.cache
def _parts_of(roots: tuple[str, ...], generation: tuple) -> tuple[tuple[str, str], ...]:
    parts: dict[str, str] = {}
    stack: list[Any] = []
    for name in roots:
        try:
            stack.append(resolve(name))
        except LookupError:
            parts[name] = "gone"
    while stack:
        obj = stack.pop()
        if isinstance(obj, _Constant):
            parts.setdefault(obj.name, _digest(repr(obj.value)))
            continue
        obj = _unwrap(obj)
        if not _is_part(obj) or (obj := _named(obj)) is None:
            continue
        name = part_name(obj)
        if name in parts:
            continue
        parts[name] = _source_digest(obj) or "no-source"
        stack.extend(_children(obj))
    return tuple(sorted(parts.items()))


def record(compute: Callable) -> dict:
    """{"roots", "parts"} of a computation (`roots_of`, `parts_of`): what a stored or cached entry keeps."""
    roots = roots_of(compute)
    return {"roots": roots, "parts": parts_of(roots)}


def compare(before: Mapping[str, str], now: Mapping[str, str]) -> dict[str, str]:
    """{part name: "changed" | "added" | "removed"} from the parts `before` to the parts `now`."""
    out = {name: "changed" for name in now.keys() & before.keys() if now[name] != before[name]}
    out.update({name: "added" for name in now.keys() - before.keys()})
    out.update({name: "removed" for name in before.keys() - now.keys()})
    out.update({name: "removed" for name, digest in now.items() if digest == "gone"})
    return dict(sorted(out.items()))


def changes(recorded: Mapping) -> dict[str, str]:
    """What changed in the code a record depends on since it was made (`compare`, its roots' parts recomputed
    today); empty when nothing did."""
    return compare(recorded["parts"], parts_of(recorded["roots"]))


def pack(records: Mapping[str, Mapping]) -> tuple[dict[str, dict], dict[str, Any]]:
    """Records of several entries (name -> record) packed for a manifest: ({name: {"roots", "parts": group}},
    {"digests": {part: digest}, "groups": {group: [part names]}}): one digest per part, one list per set of parts
    that several entries share (most of a layer's entries share a stage). An entry whose digest of a part differs
    from the table's (computed with other code than the others) keeps its own {part: digest}. `unpack` reverses."""
    digests: dict[str, str] = {}
    for rec in records.values():
        for part, digest in rec["parts"].items():
            digests.setdefault(part, digest)
    groups: dict[tuple[str, ...], str] = {}
    packed = {}
    for name, rec in records.items():
        if all(digests[p] == d for p, d in rec["parts"].items()):
            group = groups.setdefault(tuple(sorted(rec["parts"])), f"g{len(groups)}")
            packed[name] = {"roots": list(rec["roots"]), "parts": group}
        else:
            packed[name] = {"roots": list(rec["roots"]), "parts": dict(rec["parts"])}
    return packed, {"digests": dict(sorted(digests.items())),
                    "groups": {group: list(parts) for parts, group in groups.items()}}


def unpack(code: Any, table: Mapping) -> dict | None:
    """The record of one entry from its packed form and the table (`pack`); None when it is not of that form or
    names a group or part the table lacks."""
    if not isinstance(code, Mapping) or not isinstance(code.get("roots"), list) or not isinstance(table, Mapping):
        return None
    parts = code.get("parts")
    if isinstance(parts, str):
        names = (table.get("groups") or {}).get(parts)
        digests = table.get("digests") or {}
        if not isinstance(names, list) or not all(isinstance(p, str) and p in digests for p in names):
            return None
        parts = {p: digests[p] for p in names}
    record = {"roots": code["roots"], "parts": parts}
    return record if valid(record) else None


def valid(recorded: Any) -> bool:
    """Whether `recorded` has a record's form: {"roots": [str], "parts": {str: str}}."""
    return (isinstance(recorded, Mapping) and isinstance(recorded.get("roots"), list)
            and all(isinstance(r, str) for r in recorded["roots"]) and isinstance(recorded.get("parts"), Mapping)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in recorded["parts"].items()))


def describe(found: Mapping[str, str], limit: int = 4) -> str:
    """`changes(...)` as a short phrase: "lib.manifold:knn_radii changed, lib.knn:_refine added (and 3 more)"."""
    items = [f"{name.replace(':', '.')} {how}" for name, how in found.items()]
    more = f" (and {len(items) - limit} more)" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more
