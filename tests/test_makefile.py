"""`make lab` and `make install`'s nbstripout git filter, run on a scratch
git repository holding a copy of the Makefile and one notebook, so that the checkout's own git config
(shared by every worktree) is never touched. The venv is the one running the tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(sys.prefix)
STAMP = VENV / ".installed"
NOTEBOOK = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))[0]

pytestmark = pytest.mark.skipif(shutil.which("make") is None or shutil.which("git") is None,
                                reason="needs make and git")


def make(cwd: Path, *args: str, env: dict | None = None) -> str:
    """Run the Makefile in `cwd` against the test venv; -o keeps make from ever re-installing it."""
    cmd = ["make", "--no-print-directory", f"VENV={VENV}", "-o", str(STAMP), *args]
    env = {k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None}
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "notebooks").mkdir(parents=True)
    shutil.copy(ROOT / "Makefile", repo / "Makefile")
    shutil.copy(NOTEBOOK, repo / "notebooks" / NOTEBOOK.name)
    git(repo, "init", "-q")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    return repo


def test_install_sets_the_nbstripout_filter_idempotently(scratch):
    if not STAMP.exists():
        pytest.skip(f"{STAMP} missing: the test venv was not installed by make")
    for _ in range(2):  # idempotent: a second run changes nothing
        assert "git filter installed" in make(scratch, "git-filter")
    assert git(scratch, "config", "--get-all", "filter.nbstripout.clean").strip() == \
        f'"{VENV / "bin" / "python"}" -m nbstripout --keep-id'
    assert git(scratch, "config", "--get-all", "filter.nbstripout.required").strip() == "true"
    attributes = (scratch / ".git" / "info" / "attributes").read_text().splitlines()
    assert attributes.count("*.ipynb filter=nbstripout") == 1 and attributes.count("*.ipynb diff=ipynb") == 1

    # the committed (stripped) notebook stays clean under the filter: the cell ids are kept
    git(scratch, "add", "--renormalize", ".")
    assert git(scratch, "status", "--porcelain") == ""
    # an autosaved notebook with outputs stages without them
    path = scratch / "notebooks" / NOTEBOOK.name
    nb = json.loads(path.read_text())
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["x" * 1000]}]
    code["execution_count"] = 7
    path.write_text(json.dumps(nb, indent=1))
    git(scratch, "add", ".")
    assert git(scratch, "diff", "--cached", "--stat") == ""


def test_git_filter_is_harmless_outside_a_git_checkout(tmp_path):
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    out = make(tmp_path, "git-filter", env={"GIT_CEILING_DIRECTORIES": str(tmp_path.parent)})
    assert "not a git checkout" in out


def test_lab_starts_jupyterlab_with_workbook_data(scratch):
    fake = scratch / "fake-jupyter"
    fake.write_text('#!/bin/sh\necho "WORKBOOK_DATA=$WORKBOOK_DATA"\necho "ARGS=$*"\n')
    fake.chmod(0o755)
    out = make(scratch, "lab", f"JUPYTER={fake}", "LAB_ARGS=--no-browser", env={"WORKBOOK_DATA": None})
    data = next(line for line in out.splitlines() if line.startswith("WORKBOOK_DATA="))
    assert data != "WORKBOOK_DATA=" and Path(data.split("=", 1)[1]).is_absolute()
    args = next(line for line in out.splitlines() if line.startswith("ARGS=")).split()
    assert args[0] == "ARGS=lab" and f"--notebook-dir={scratch}" in args and "--no-browser" in args
    assert ("--allow-root" in args) == (os.getuid() == 0)


def test_book_without_executed_notebooks_says_to_run_make_run_first(tmp_path):
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    out = subprocess.run(["make", "--no-print-directory", f"VENV={VENV}", "-o", str(STAMP), "book"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert out.returncode != 0
    assert "make book: no executed notebooks in runs/" in out.stderr and "run `make run` first" in out.stderr
    assert not (tmp_path / "runs" / "book").exists()


FAKE_TOOL = """#!/bin/sh
echo "$(basename "$0") $*" >> "$CALLS"
[ "$(basename "$0")" = make ] && echo "make-env BWRAP=$WORKBOOK_BWRAP BROWSER=$WORKBOOK_REQUIRE_BROWSER \\
SANDBOX=$WORKBOOK_REQUIRE_SANDBOX" >> "$CALLS"
case "$(basename "$0") $*" in
  *"install -y"*) for p in "$@"; do case "$p" in
      chromium) printf '#!/bin/sh\\n' > "$WORKBOOK_CHROMIUM"; chmod +x "$WORKBOOK_CHROMIUM";;
      bubblewrap) printf '#!/bin/sh\\n' > "$WORKBOOK_BWRAP"; chmod +x "$WORKBOOK_BWRAP";;
    esac; done;;
esac
case "$(basename "$0")" in sudo) "$@";; esac
"""


@pytest.mark.parametrize("installed", [(), ("chromium",), ("bubblewrap",), ("chromium", "bubblewrap")])
def test_ci_installs_debians_chromium_and_bubblewrap_when_missing_and_requires_them(tmp_path, installed):
    """.ci/run (with make and apt-get replaced by recorders): chromium and bubblewrap from one apt-get, only those
    missing, never `playwright install`; one `make test` with the browser tests in its session, a missing chromium
    or bwrap made a failure (WORKBOOK_REQUIRE_BROWSER, WORKBOOK_REQUIRE_SANDBOX) and the bwrap it checked used."""
    (tmp_path / "repo" / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "run", tmp_path / "repo" / ".ci" / "run")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("make", "apt-get", "sudo"):
        (bin_dir / tool).write_text(FAKE_TOOL)
        (bin_dir / tool).chmod(0o755)
    tools, calls = {"chromium": tmp_path / "chromium", "bubblewrap": tmp_path / "bwrap"}, tmp_path / "calls"
    for package in installed:
        tools[package].write_text("#!/bin/sh\n")
        tools[package].chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CALLS": str(calls),
           "WORKBOOK_CHROMIUM": str(tools["chromium"]), "WORKBOOK_BWRAP": str(tools["bubblewrap"])}
    env.pop("WORKBOOK_REQUIRE_SANDBOX", None)
    out = subprocess.run(["bash", str(tmp_path / "repo" / ".ci" / "run")], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    lines = calls.read_text().splitlines()
    made = [line.split(" ", 1)[1] for line in lines if line.startswith("make ")]
    installs = [line for line in lines if line.startswith("apt-get")]
    missing = [package for package in ("chromium", "bubblewrap") if package not in installed]
    assert made == ["test TEST_ARGS=--run-browser"]
    assert [line for line in lines if line.startswith("make-env")] == [
        f"make-env BWRAP={tools['bubblewrap']} BROWSER=1 SANDBOX=1"]
    assert installs == ([] if not missing else
                        ["apt-get update", f"apt-get install -y --no-install-recommends {' '.join(missing)}"])
    assert "playwright install" not in (ROOT / ".ci" / "run").read_text().replace("never `playwright install`", "")


def test_ci_fails_at_once_when_apt_get_installs_no_bwrap(tmp_path):
    """An apt-get that leaves no bwrap behind stops .ci/run before the suite, naming bwrap."""
    (tmp_path / "repo" / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "run", tmp_path / "repo" / ".ci" / "run")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("make", "apt-get", "sudo"):
        (bin_dir / tool).write_text('#!/bin/sh\necho "$(basename "$0") $*" >> "$CALLS"\n')
        (bin_dir / tool).chmod(0o755)
    (tmp_path / "chromium").write_text("#!/bin/sh\n")
    (tmp_path / "chromium").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CALLS": str(tmp_path / "calls"),
           "WORKBOOK_CHROMIUM": str(tmp_path / "chromium"), "WORKBOOK_BWRAP": str(tmp_path / "bwrap")}
    out = subprocess.run(["bash", str(tmp_path / "repo" / ".ci" / "run")], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 1 and f"no bwrap at {tmp_path / 'bwrap'} after apt-get install bubblewrap" in out.stderr
    assert not any(line.startswith("make") for line in (tmp_path / "calls").read_text().splitlines())
