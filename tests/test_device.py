"""lib.device.set_threads: one thread setting for torch, the loaded BLAS pools and subprocesses; one_thread and
threads_key, for cached stages whose float sums depend on the thread count."""

from __future__ import annotations

import os

import pytest
import torch
from threadpoolctl import threadpool_info

from lib.cache import cache_path
from lib.device import one_thread, set_threads, threads_key


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


def test_one_thread_runs_its_body_at_one_thread_and_restores_the_count(thread_count):
    thread_count(2)
    with one_thread():
        assert torch.get_num_threads() == 1
        assert all(pool["num_threads"] == 1 for pool in threadpool_info())
    assert torch.get_num_threads() == 2 and all(pool["num_threads"] == 2 for pool in threadpool_info())
    with pytest.raises(RuntimeError, match="inside"), one_thread():
        raise RuntimeError("inside")
    assert torch.get_num_threads() == 2 and all(pool["num_threads"] == 2 for pool in threadpool_info())

    @one_thread()
    def count() -> int:
        return torch.get_num_threads()

    assert count() == 1 and torch.get_num_threads() == 2


def test_one_thread_gives_the_single_threaded_sums(thread_count):
    """A sum of 2^20 float32 values splits across threads above torch's grain size: its last bits move with the
    count (measured here: 1.2e-4 apart at 1 and 2 threads), unless it runs at one thread."""
    x = torch.randn(2**20, generator=torch.Generator().manual_seed(0))
    thread_count(1)
    single = x.sum()
    thread_count(2)
    with one_thread():
        assert torch.equal(x.sum(), single)


def test_threads_key_is_empty_at_one_thread_and_names_any_other_count(thread_count):
    thread_count(1)
    key = {"stage": "train", "seed": 0}
    single = cache_path("xx", "entry", {**key, **threads_key()}, ".pt")
    assert threads_key() == {} and single == cache_path("xx", "entry", key, ".pt")  # the existing keys stay
    thread_count(2)
    assert threads_key() == {"cpu_threads": 2}
    assert cache_path("xx", "entry", {**key, **threads_key()}, ".pt") != single


def test_the_device_line_counts_threads_in_english(thread_count):
    from lib.device import describe

    thread_count(1)
    assert describe(torch.device("cpu")).endswith(", 1 thread)")
    thread_count(2)
    assert describe(torch.device("cpu")).endswith(", 2 threads)")


@pytest.mark.parametrize("bad", ["mps", "xla", "meta", "gpu", "cuda:x", "cpu:0:1", 0, ""])
def test_pick_device_accepts_only_the_devices_the_workbook_supports(bad):
    """"mps", "xla" and "meta" are torch devices, so they passed, and the first tensor op
    failed with a backend error that did not name DEVICE."""
    from lib.device import pick_device

    with pytest.raises(ValueError, match=r"DEVICE=.* choose 'auto', 'cpu', 'cuda' or 'cuda:N'"):
        pick_device(bad)


def test_pick_device_takes_auto_cpu_and_the_cuda_devices_present():
    from lib.device import pick_device

    assert pick_device("cpu") == torch.device("cpu") and pick_device("cpu:0") == torch.device("cpu:0")
    assert pick_device("auto") == pick_device(None) == pick_device()
    count = torch.cuda.device_count()
    with pytest.raises(ValueError, match=rf"DEVICE='cuda:{count}'.*(not available|{count} CUDA device)"):
        pick_device(f"cuda:{count}")  # one past the last
    with pytest.raises(ValueError, match=r"--device='mps'"):
        pick_device("mps", name="--device")
