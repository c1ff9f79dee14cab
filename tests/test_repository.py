"""Repository conventions a new user or CI would trip over (house style, set-up files)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def test_torch_is_pinned_exactly():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert "torch==2.13.0" in deps
    assert not any(d.startswith("torchvision") for d in deps)


def test_environment_yml_installs_the_project_with_its_dev_extras():
    text = (ROOT / "environment.yml").read_text()
    assert re.search(r"^\s+- -e \.\[dev\]\s*$", text, re.M)
    python = re.search(r"python=(\d+)\.(\d+)", text)
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert python and requires == ">=3.11" and (int(python[1]), int(python[2])) >= (3, 11)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_are_committed_stripped_with_a_parameters_cell(notebook):
    nb = json.loads(notebook.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert not any(c.get("outputs") or c.get("execution_count") for c in code)
    tagged = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1
    for line in "".join(tagged[0]["source"]).splitlines():  # literals only, annotated and explained
        assert re.match(r"^[A-Z_]+: [A-Za-z\[\]]+ = .+  # .+", line), line


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_import_the_installed_lib(notebook):
    text = notebook.read_text()
    assert "sys.path" not in text and not re.search(r"np\.trapz\W", text)  # removed in NumPy 2.4


def test_ci_runs_make_test():
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_data_readme_documents_every_registered_file():
    from lib.data.files import FILES

    readme = (ROOT / "data" / "README.md").read_text()
    for name, entry in FILES.items():
        assert f"`{name}`" in readme and entry.sha256[:16] in readme, name


# Test files about the repository as a whole rather than one module of lib.
REPOSITORY_TESTS = {"test_layout.py", "test_repository.py", "test_makefile.py", "test_notebook_text.py",
                    "test_assignments.py", "test_browser.py"}


def _tested_part(name: str) -> list[Path]:
    """Where the test file `name` points: test_notebook_<NN>.py to notebook NN, test_<package>_<module>.py to
    lib/<package>/<module>.py, test_<module>.py to lib/<module>.py (or a core package lib/<module>/)."""
    stem = name.removeprefix("test_").removesuffix(".py")
    if stem.startswith("notebook_"):
        return sorted((ROOT / "notebooks").glob(f"{stem.removeprefix('notebook_')}_*.ipynb"))
    package, _, module = stem.partition("_")
    found = [ROOT / "lib" / f"{stem}.py", ROOT / "lib" / stem / "__init__.py", ROOT / "lib" / package / f"{module}.py"]
    return [p for p in found if p.is_file()]


def test_test_files_are_named_after_the_module_or_notebook_they_test():
    names = sorted(p.name for p in (ROOT / "tests").glob("test_*.py"))
    assert len(names) > 30
    unnamed = [n for n in names if n not in REPOSITORY_TESTS and not _tested_part(n)]
    assert not unnamed, f"test files named after no module of lib and no notebook: {unnamed}"


def test_the_costliest_test_files_listed_in_conftest_exist():
    """conftest.COSTLIEST_FIRST orders the parallel run by file name; a renamed file would silently drop out."""
    from conftest import COSTLIEST_FIRST

    missing = [n for n in COSTLIEST_FIRST if not (ROOT / "tests" / n).is_file()]
    assert not missing, f"conftest.COSTLIEST_FIRST names test files that do not exist: {missing}"


# "issue N" told a reader nothing: the repository has no issue tracker, so the reason is written out instead.
# docs/specs are the specifications as written. These files still carry references while they are being edited
# elsewhere; each leaves this list when its last reference goes (the test below says when).
ISSUE_REFERENCES_PENDING: set[str] = set()
ISSUE_REFERENCE = re.compile(r"\bissues? *#? *\d", re.I)


def test_no_reference_to_an_issue_number():
    patterns = ("README.md", "Makefile", "lib/**/*.py", "tests/*.py", "docs/*.md", "docs/results/**/*.md",
                "benchmarks/*", "assignments/**/*", "notebooks/*.ipynb", "results/**/*.md", "data/*.md")
    files = {p for pattern in patterns for p in ROOT.glob(pattern) if p.is_file() and "__pycache__" not in p.parts}
    found = {str(p.relative_to(ROOT)) for p in files if ISSUE_REFERENCE.search(p.read_text(errors="replace"))}
    assert found - ISSUE_REFERENCES_PENDING == set(), "say the reason instead of the issue number"
    assert ISSUE_REFERENCES_PENDING <= found, (
        f"no issue number left in {sorted(ISSUE_REFERENCES_PENDING - found)}: drop them from ISSUE_REFERENCES_PENDING")


# Notebook text that still names test files by their names before the tests were named after their modules;
# another change is editing these notebooks. Each entry goes when the notebook names the file's new name.
OLD_TEST_NAMES_PENDING: set[tuple[str, str]] = set()


def test_every_test_file_the_repository_names_exists():
    patterns = ("README.md", "Makefile", "lib/**/*.py", "tests/*.py", "docs/*.md", "docs/results/**/*.md",
                "benchmarks/*", "notebooks/*.ipynb", "results/**/*.md", "data/*.md")
    files = {p for pattern in patterns for p in ROOT.glob(pattern) if p.is_file() and "__pycache__" not in p.parts}
    files.discard(Path(__file__).resolve())  # the list above names the old names
    named = {(str(p.relative_to(ROOT)), f"tests/{m}") for p in files
             for m in re.findall(r"\b(test_\w+\.py)\b", p.read_text(errors="replace"))}
    missing = {(where, name) for where, name in named if not (ROOT / name).is_file()}
    assert missing - OLD_TEST_NAMES_PENDING == set(), "test files named that do not exist"
    assert OLD_TEST_NAMES_PENDING <= missing, (
        f"{sorted(OLD_TEST_NAMES_PENDING - missing)} no longer named: drop them from OLD_TEST_NAMES_PENDING")


def test_the_suite_stops_at_once_with_one_clear_line_when_the_data_is_missing(tmp_path):
    """A checkout without ../shared/data beside it and no WORKBOOK_DATA: one line naming the folder and the
    variable, exit status 4, instead of dozens of failed smoke runs."""
    env = {**os.environ, "WORKBOOK_DATA": str(tmp_path / "nowhere")}
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_tables.py"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 4, done.stdout + done.stderr
    assert f"the reference data is not at {tmp_path / 'nowhere'}: set WORKBOOK_DATA" in done.stdout + done.stderr


def test_the_readme_is_short_with_a_licence_and_a_citation_beside_it():
    """A newcomer reads the README in two minutes: its dated measurements live in docs/measurements.md."""
    import yaml

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    assert "MIT License" in (ROOT / "LICENSE").read_text() and "non-commercial" in readme
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0" and citation["license"] == "MIT" and citation["title"]
    assert "(docs/measurements.md)" in readme and (ROOT / "docs" / "measurements.md").is_file()
