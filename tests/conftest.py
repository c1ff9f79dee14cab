"""Shared test settings: the data root points at the shared reference copy when it exists, and every
test session gets its own empty cache so that nothing is read from an earlier run by accident.

The suite runs in parallel (`make test`: pytest-xdist, one worker per core, `--dist loadfile`: a test file runs on
one worker, files in the order `COSTLIEST_FIRST` gives). Each worker is single-threaded (two workers on two cores,
each with several BLAS/torch threads, oversubscribe them), and the workers of one session share one session folder
(`session_root`): its cache and the notebooks' smoke runs, which `notebook_runner.shared_once` computes once per
session whichever worker asks first."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _shared_data() -> Path:
    """The shared reference data beside the checkout, or beside the local checkout it was cloned from (as the
    Makefile finds it); the first of those paths when neither exists."""
    import subprocess

    origin = subprocess.run(["git", "config", "--get", "remote.origin.url"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip().removeprefix("file://")
    candidates = [ROOT / ".." / "shared" / "data"] + ([Path(origin) / ".." / "shared" / "data"] if origin else [])
    return next((c.resolve() for c in candidates if c.is_dir()), candidates[0].resolve())


SHARED_DATA = _shared_data()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-full", action="store_true", help="also run the notebooks' default presets (slow)")
    parser.addoption("--run-browser", action="store_true",
                     help="also run the real-browser test (JupyterLab and the book in chromium; `make test-browser`)")


# The test files that cost the most (a notebook's smoke run, the assignments' build, dask clusters), in
# decreasing cost, measured with --durations on 2 cores. They are collected first, so that the parallel run
# (`make test`: one file per worker at a time, in collection order) starts them first and the cheap files
# fill in around them instead of one expensive file running alone at the end.
COSTLIEST_FIRST = ("test_notebook_01.py", "test_notebook_02.py", "test_make_sweep.py", "test_assignments.py",
                   "test_notebook_03.py", "test_notebook_04.py", "test_browser.py", "test_make_report.py",
                   "test_makefile.py", "test_data_cifar10.py", "test_models_cifar_resnet.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(COSTLIEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file keeps its own order
    opt_in = {"full": ("--run-full", "runs a notebook's default preset (tens of minutes on 2 cores); "
                                     "use `pytest --run-full -m full`"),
              "browser": ("--run-browser", "drives JupyterLab and the book in chromium: about 2.5 minutes of one core "
                                           "beyond the smoke runs; `make test TEST_ARGS=--run-browser` (as CI "
                                           "does) or `make test-browser`")}
    for marker, (option, reason) in opt_in.items():
        if not config.getoption(option):
            for item in items:
                if marker in item.keywords:
                    item.add_marker(pytest.mark.skip(reason=reason))


def pytest_configure(config: pytest.Config) -> None:
    if "WORKBOOK_DATA" not in os.environ and SHARED_DATA.is_dir():
        os.environ["WORKBOOK_DATA"] = str(SHARED_DATA)
    root = Path(os.environ.get("WORKBOOK_DATA", ROOT / "data"))
    if not os.environ.get("PYTEST_XDIST_WORKER") and not (root / "cifar10h").is_dir():
        # one clear line instead of dozens of failed smoke runs (a checkout without ../shared/data beside it)
        pytest.exit(f"the reference data is not at {root}: set WORKBOOK_DATA to the folder that holds cifar10h/, "
                    "cifar10/, coco/ and models/ (data/README.md)", returncode=4)
    if os.environ.get("PYTEST_XDIST_WORKER"):  # one core per worker, for this process and the kernels it starts
        from lib.device import set_threads

        set_threads(1)


def session_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder every worker of this test session shares (the session's base temporary folder without
    xdist; with it, the parent of the workers' own ones)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory):
    session_cache = session_root(tmp_path_factory) / "session-cache"  # writes are atomic: workers may share it
    session_cache.mkdir(exist_ok=True)
    os.environ["WORKBOOK_CACHE"] = os.environ["WORKBOOK_CACHE_SESSION"] = str(session_cache)
    yield


@pytest.fixture(autouse=True)
def _lineage_forgets_the_patches(request: pytest.FixtureRequest):
    """After a test that monkeypatches (and after its patches are undone): lib.lineage's memory of the code it walked,
    kept until a file of `lib` changes, forgets what the test patched in. A stage run under a patched function records
    its lineage through the patch (tests/test_prcurves_budget.py patches authors_recipe_spec); a later test in the same
    process would find the real function 'removed' and a stored entry 'code changed', but only in a worker that had
    already imported every module the later test imports (the memory is kept per set of loaded modules)."""
    yield
    if "monkeypatch" in request.fixturenames:
        from lib import lineage

        lineage._parts_of.cache_clear()


@pytest.fixture
def data_root() -> Path:
    root = Path(os.environ.get("WORKBOOK_DATA", ROOT / "data"))
    if not (root / "cifar10h").is_dir():
        pytest.fail(f"the reference data is not at {root}; set WORKBOOK_DATA (see data/README.md)")
    return root


@pytest.fixture
def thread_count(monkeypatch: pytest.MonkeyPatch):
    """`thread_count(n)` is `lib.device.set_threads(n)` for this test only: torch's intra-op count, the loaded
    BLAS/OpenMP pools and the thread environment variables (all process-wide) are put back afterwards."""
    import torch
    from threadpoolctl import threadpool_limits

    from lib.device import THREAD_ENV, set_threads

    for var in THREAD_ENV:  # recorded, so that monkeypatch restores (or removes) them
        if var in os.environ:
            monkeypatch.setenv(var, os.environ[var])
        else:
            monkeypatch.delenv(var, raising=False)
    before = torch.get_num_threads()
    with threadpool_limits(limits=None):  # restores every pool's count on exit
        try:
            yield set_threads
        finally:
            torch.set_num_threads(before)
