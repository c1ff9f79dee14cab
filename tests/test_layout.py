"""The library's architecture: a core that no paper owns, and one package per paper that imports only the
core (HOUSE_STYLE "Layout"); the first layout's module paths still import."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import lib

LIB = Path(lib.__file__).resolve().parent
PAPERS = ("prcurves", "crel", "regret", "irs")


def _lib_imports(path: Path) -> set[str]:
    """Every `lib.X...` module that `path` imports, absolute or through `from lib import X`."""
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
    resolved = lib.MOVED_MODULES.get(".".join(parts[:2]), module).split(".")
    return resolved[1] if len(resolved) > 1 and resolved[1] in PAPERS else None


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


def test_the_first_layouts_module_paths_are_aliases_of_the_new_modules():
    for old, new in lib.MOVED_MODULES.items():
        assert importlib.import_module(old) is importlib.import_module(new), old
    from lib.stats import pointwise_compare  # the paths users' code was written against

    from lib.prcurves.stats import pointwise_compare as moved
    assert pointwise_compare is moved


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
