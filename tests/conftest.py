"""Shared test settings: the data root points at the shared reference copy when it exists, and every
test session gets its own empty cache so that nothing is read from an earlier run by accident."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = (ROOT / ".." / "shared" / "data").resolve()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-full", action="store_true", help="also run the notebooks' default presets (slow)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-full"):
        return
    skip = pytest.mark.skip(reason="runs a notebook's default preset (tens of minutes on 2 cores); "
                                   "use `pytest --run-full -m full`")
    for item in items:
        if "full" in item.keywords:
            item.add_marker(skip)


def pytest_configure(config: pytest.Config) -> None:
    if "WORKBOOK_DATA" not in os.environ and SHARED_DATA.is_dir():
        os.environ["WORKBOOK_DATA"] = str(SHARED_DATA)


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory):
    session_cache = str(tmp_path_factory.mktemp("cache"))
    os.environ["WORKBOOK_CACHE"] = os.environ["WORKBOOK_CACHE_SESSION"] = session_cache
    yield


@pytest.fixture
def data_root() -> Path:
    root = Path(os.environ.get("WORKBOOK_DATA", ROOT / "data"))
    if not (root / "cifar10h").is_dir():
        pytest.fail(f"the reference data is not at {root}; set WORKBOOK_DATA (see data/README.md)")
    return root
