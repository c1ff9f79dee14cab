"""The library's architecture: a core that no paper owns, and one package per paper that imports only the
core (the README's "Layout"); no import cycle inside lib; every `lib` path the repository names exists."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

import lib

LIB = Path(lib.__file__).resolve().parent
PAPERS = ("prcurves", "crel", "regret", "irs")


def _lib_imports(path: Path) -> set[str]:
    """Every `lib.<...>` module that `path` imports, absolute or through `from lib import X`."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("lib.")}
        elif isinstance(node, ast.ImportFrom) and node.module and (node.module == "lib" or
                                                                    node.module.startswith("lib.")):
            found |= {f"{node.module}.{a.name}" if node.module == "lib" else node.module for a in node.names}
    return found


def _owner(module: str) -> str | None:
    """The paper package a dotted `lib.` path belongs to, or None for the core."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in PAPERS else None


@pytest.mark.parametrize("paper", PAPERS)
def test_a_paper_package_imports_only_the_core_and_itself(paper):
    for path in sorted((LIB / paper).glob("*.py")):
        foreign = {m for m in _lib_imports(path) if _owner(m) not in (None, paper)}
        assert not foreign, f"{path.relative_to(LIB.parent)} imports another paper's package: {sorted(foreign)}"


def test_the_core_imports_no_paper_package():
    core = [p for p in LIB.rglob("*.py") if p.relative_to(LIB).parts[0] not in PAPERS]
    assert len(core) > 10
    for path in core:
        papers = {m for m in _lib_imports(path) if _owner(m) is not None}
        assert not papers, f"{path.relative_to(LIB.parent)} (core) imports a paper's package: {sorted(papers)}"


REPO = LIB.parent
# Where the repository names `lib` paths; docs/specs is the specification as written, and the course's texts
# (docs/teaching.md, assignments/) are checked by tests/test_assignments.py.
NAMING_FILES = ("README.md", "Makefile", "docs/*.md", "docs/results/**/*.md", "benchmarks/*", "lib/**/*.py",
                "tests/*.py", "notebooks/*.ipynb", "results/**/*.md", "data/*.md")


def _module_part(dotted: str) -> str:
    """The longest importable prefix of a dotted `lib...` name."""
    def is_module(name: str) -> bool:
        try:
            return importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a parent is not a package
            return False
    parts = dotted.split(".")
    return next(".".join(parts[:i]) for i in range(len(parts), 0, -1) if is_module(".".join(parts[:i])))


def _named_lib_paths() -> dict[str, set[str]]:
    """Every dotted `lib.<...>` name in the repository's code and text, with the files that name it."""
    named: dict[str, set[str]] = {}
    # the course's texts are checked by test_assignments.py, which itself names made-up paths on purpose
    course = {REPO / "docs" / "teaching.md", REPO / "tests" / "test_assignments.py"}
    files = {p for pattern in NAMING_FILES for p in REPO.glob(pattern) if p.is_file()} - course
    for path in sorted(files):
        for name in re.findall(r"(?<![\w/.])lib(?:\.[A-Za-z_]\w*)+", path.read_text(errors="replace")):
            named.setdefault(name, set()).add(str(path.relative_to(REPO)))
    return named


def test_every_lib_path_the_repository_names_exists():
    """An import, a docstring or a page that names a module or function under an old or mistyped path."""
    named = _named_lib_paths()
    assert {"lib.prcurves.stats", "lib.crel.method", "lib.irs.experiment"} <= set(named)  # the scan finds them
    missing = {}
    for name, files in named.items():
        module = _module_part(name)
        obj = importlib.import_module(module)
        for attr in name.split(".")[module.count(".") + 1:]:
            if not hasattr(obj, attr):
                missing[name] = sorted(files)
                break
            obj = getattr(obj, attr)
    assert not missing, f"paths that do not exist: {missing}"


def test_the_papers_public_functions_keep_their_package_paths():
    import lib.crel
    import lib.irs
    import lib.prcurves
    import lib.regret

    assert lib.prcurves.pr_curve.__module__ == "lib.prcurves.method"
    assert lib.crel.conformal_radius.__module__ == "lib.crel.method" and callable(lib.crel.fit)
    assert lib.regret.decompose.__module__ == "lib.regret.method"
    assert lib.irs.irs_inf.__module__ == "lib.irs.method"
    assert lib.prcurves.pointwise_compare.__module__ == "lib.prcurves.stats"


def _modules(folder: Path) -> set[str]:
    """The modules and subpackages of the package at `folder` (its __init__ and __main__ left out)."""
    files = {p.stem for p in folder.glob("*.py")} - {"__init__", "__main__"}
    return files | {p.name for p in folder.iterdir() if (p / "__init__.py").is_file()}


@pytest.mark.parametrize("package", ["lib", *PAPERS])
def test_a_package_docstring_names_every_module(package):
    folder = LIB if package == "lib" else LIB / package
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text()))
    missing = _modules(folder) - set(re.findall(r"`(?:lib\.)?(\w+)`", doc))
    assert not missing, f"{folder.relative_to(REPO)}/__init__.py's docstring does not name {sorted(missing)}"


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, dict[str, str]]:
    """{module: {lib module it imports: where ("lib/cache.py:330", the first such import)}} for every module of lib,
    from its source: imports at the top and inside functions alike (a lazy import only postpones a cycle).
    `from P import name` imports the module P.name when there is one, else P."""
    modules = {_module_name(p): p for p in LIB.rglob("*.py")}
    graph: dict[str, dict[str, str]] = {}
    for name, path in modules.items():
        edges: dict[str, str] = {}
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                           for a in node.names]
            else:
                continue
            for target in targets:
                if target in modules and target != name:
                    edges.setdefault(target, f"{path.relative_to(REPO)}:{node.lineno}")
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, dict[str, str]]) -> dict[frozenset, str]:
    """{the modules of each import cycle: one loop through them (`_loop`)}: the strongly connected components of
    more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: dict[frozenset, str] = {}

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = {stack.pop()}
            while v not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found[frozenset(component)] = _loop(graph, component)

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def _loop(graph: dict[str, dict[str, str]], component: set[str]) -> str:
    """The shortest loop through `component`'s first module, each import with where it is:
    "m.a (m/a.py:1) -> m.b (m/b.py:2) -> m.a"."""
    start = min(component)
    came_from: dict[str, str] = {}
    queue = [start]
    while start not in came_from:  # breadth first, inside the component, back to `start`
        here = queue.pop(0)
        for module in sorted(graph[here]):
            if module in component and module not in came_from:
                came_from[module] = here
                queue.append(module)
    loop = [start, came_from[start]]
    while loop[-1] != start:
        loop.append(came_from[loop[-1]])
    loop.reverse()
    return " -> ".join(f"{a} ({graph[a][b]})" for a, b in zip(loop, loop[1:])) + f" -> {start}"


def test_the_import_graph_finds_a_planted_cycle():
    graph = {"m.a": {"m.b": "m/a.py:1"}, "m.b": {"m.c": "m/b.py:2"}, "m.d": {},
             "m.c": {"m.a": "m/c.py:3", "m.d": "m/c.py:4"}}
    assert _cycles(graph) == {frozenset({"m.a", "m.b", "m.c"}):
                              "m.a (m/a.py:1) -> m.b (m/b.py:2) -> m.c (m/c.py:3) -> m.a"}
    assert "lib.device" in _import_graph()["lib.run"]  # a lazy import, inside a function, counts


def test_lib_has_no_import_cycle():
    """A cycle (`a` imports `b`, which imports `a`, however late) makes the order of imports matter and hides which
    module owns what; lib.paths is the leaf that the cache, the store and the rest import, and the run (lib.run)
    is the one module that calls both the cache and the store."""
    cycles = _cycles(_import_graph())
    assert not cycles, "import cycles in lib:\n" + "\n".join(cycles.values())


def _readme_layout() -> dict[str, str]:
    """The README's layout block under lib/: {first column (e.g. "params, cache, glue" or "crel/"): description,
    continuation lines included}."""
    block = (REPO / "README.md").read_text().split("## Layout", 1)[1].split("```")[1]
    entries: dict[str, str] = {}
    inside, last = False, None
    for line in block.splitlines():
        if line.startswith("lib/"):
            inside = True
        elif inside and re.match(r"^  \S", line):
            last, _, text = line.strip().partition("  ")
            entries[last] = text
        elif inside and line.startswith("    ") and last:
            entries[last] += " " + line.strip()
        elif line.strip():
            inside = False
    return entries


def test_the_readme_layout_lists_every_module():
    entries = _readme_layout()
    packages = {name.rstrip("/") for name in entries if name.endswith("/")}
    core = {m for name in entries if not name.endswith("/") for m in name.split(", ")}
    assert packages == {p.name for p in LIB.iterdir() if (p / "__init__.py").is_file()}
    assert core == _modules(LIB) - packages, "the README's layout block lists the core's modules in its first column"
    for package in packages:
        missing = {m for m in _modules(LIB / package) if not re.search(rf"\b{m}\b", entries[f"{package}/"])}
        assert not missing, f"the README's layout entry for lib/{package}/ does not name {sorted(missing)}"
