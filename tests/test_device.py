"""lib.device.set_threads: one thread setting for torch, the loaded BLAS pools and subprocesses."""

from __future__ import annotations

import os

import pytest
import torch
from threadpoolctl import threadpool_info

from lib.device import set_threads


def test_set_threads_sets_torch_blas_and_the_environment(monkeypatch):
    before = torch.get_num_threads()
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.setenv(var, "7")
    try:
        assert set_threads(1) == 1
        assert torch.get_num_threads() == 1
        assert os.environ["OMP_NUM_THREADS"] == os.environ["MKL_NUM_THREADS"] == "1"
        assert all(pool["num_threads"] == 1 for pool in threadpool_info())
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_set_threads_names_the_parameter(bad):
    with pytest.raises(ValueError, match=r"NUM_THREADS=.* must be"):
        set_threads(bad)
