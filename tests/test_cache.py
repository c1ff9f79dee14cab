import numpy as np
import pytest

from lib import cache


def test_hash_depends_on_every_setting_and_array_content():
    a = {"n": 10, "seeds": [1, 2], "x": np.arange(3)}
    assert cache.config_hash(a) == cache.config_hash({"seeds": [1, 2], "x": np.arange(3), "n": 10})
    assert cache.config_hash(a) != cache.config_hash({**a, "n": 11})
    assert cache.config_hash(a) != cache.config_hash({**a, "x": np.arange(3) + 1})


def test_path_is_named_by_label_and_hash(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path))
    path = cache.cache_path("01", "ensemble-C4", {"a": 1}, ".pt")
    assert path.parent == tmp_path / "01"
    assert path.name == f"ensemble-C4-{cache.config_hash({'a': 1})}.pt"


def test_cached_npz_computes_once_and_force_recomputes(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"x": np.arange(len(calls) + 2)}

    path = tmp_path / "entry.npz"
    first = cache.cached_npz(path, compute)
    again = cache.cached_npz(path, compute)
    assert len(calls) == 1 and np.array_equal(first["x"], again["x"])
    forced = cache.cached_npz(path, compute, force=True)
    assert len(calls) == 2 and len(forced["x"]) == 4


def test_interrupted_write_leaves_no_entry(tmp_path):
    path = tmp_path / "entry.npz"

    def broken_write(tmp):
        tmp.write_bytes(b"half a file")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cache.atomic_write(path, broken_write)
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []
