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


# ----------------------------------------------------------------------------------------------------
# Damaged entries (issue 14 finding 14): checksum in a header, verified on load; delete and recompute
# ----------------------------------------------------------------------------------------------------
def truncate(path, keep=0.5):
    path.write_bytes(path.read_bytes()[: int(path.stat().st_size * keep)])


def flip_bit(path, where=0.6):
    raw = bytearray(path.read_bytes())
    raw[int(len(raw) * where)] ^= 0x04
    path.write_bytes(bytes(raw))


def npz_entry(path):
    calls = []

    def compute():
        calls.append(1)
        return {"x": np.arange(1000.0) * len(calls), "y": np.eye(3)}

    return calls, lambda: cache.cached_npz(path, compute)


def torch_entry(path):
    import torch

    calls = []

    def compute():
        calls.append(1)
        return {"w": torch.arange(1000.0) * len(calls), "step": 3}

    return calls, lambda: cache.cached_torch(path, compute)


@pytest.mark.parametrize("suffix, entry", [(".npz", npz_entry), (".pt", torch_entry)])
@pytest.mark.parametrize("damage", [truncate, lambda p: truncate(p, 0.0001), flip_bit,
                                    lambda p: flip_bit(p, 0.99), lambda p: flip_bit(p, 0.001)],
                         ids=["half", "header", "flip-middle", "flip-end", "flip-header"])
def test_damaged_entry_is_named_deleted_and_recomputed(tmp_path, caplog, suffix, entry, damage):
    path = tmp_path / f"entry{suffix}"
    calls, load = entry(path)
    first = load()
    damage(path)
    with caplog.at_level("WARNING", logger="lib.cache"):
        again = load()
    assert len(calls) == 2, "the damaged entry was used instead of recomputed"
    assert f"damaged cache entry {path}" in caplog.text
    key = "x" if suffix == ".npz" else "w"
    assert not np.array_equal(np.asarray(again[key]), np.asarray(first[key]))  # the recomputed value
    assert len(calls) == 2 and np.array_equal(np.asarray(load()[key]), np.asarray(again[key]))  # stored again


@pytest.mark.parametrize("suffix, loader", [(".npz", cache.load_npz), (".pt", cache.load_torch)])
def test_a_flipped_bit_is_caught_by_the_checksum_before_loading(tmp_path, suffix, loader):
    path = tmp_path / f"entry{suffix}"
    if suffix == ".npz":
        cache.atomic_savez(path, {"x": np.arange(100.0)})
    else:
        cache.atomic_torch_save({"x": np.arange(100.0)}, path)
    flip_bit(path)
    with pytest.raises(cache.DamagedCacheEntry, match=rf"{path}: checksum mismatch"):
        loader(path)


def test_entries_without_a_checksum_still_load_and_damage_is_still_caught(tmp_path):
    """Entries written before checksums existed: loaded unverified; a load error names the file."""
    import torch

    old_npz, old_pt = tmp_path / "old.npz", tmp_path / "old.pt"
    np.savez(old_npz, x=np.arange(5))
    torch.save({"a": 1}, old_pt)
    assert np.array_equal(cache.load_npz(old_npz)["x"], np.arange(5)) and cache.load_torch(old_pt) == {"a": 1}
    truncate(old_npz)
    truncate(old_pt)
    with pytest.raises(cache.DamagedCacheEntry, match=rf"{old_npz}: BadZipFile"):
        cache.load_npz(old_npz)
    with pytest.raises(cache.DamagedCacheEntry, match=str(old_pt)):
        cache.load_torch(old_pt)


def _hammer(path, value, rounds):
    for _ in range(rounds):
        cache.atomic_savez(path, {"x": np.full(200_000, value)})


def test_two_processes_writing_one_entry_leave_a_whole_one(tmp_path):
    """Concurrent writers of the same entry (two notebooks on one cache): each write is a rename of a
    whole checksummed file, so a reader only ever sees one complete entry, never a mix."""
    import multiprocessing as mp

    path = tmp_path / "shared.npz"
    cache.atomic_savez(path, {"x": np.full(200_000, 0.0)})
    ctx = mp.get_context("fork")
    writers = [ctx.Process(target=_hammer, args=(path, float(v), 15)) for v in (1, 2)]
    for w in writers:
        w.start()
    seen = set()
    while any(w.is_alive() for w in writers):
        x = cache.load_npz(path)["x"]  # raises DamagedCacheEntry on any torn or mixed file
        assert np.all(x == x[0])
        seen.add(float(x[0]))
    for w in writers:
        w.join()
        assert w.exitcode == 0
    assert float(cache.load_npz(path)["x"][0]) in (1.0, 2.0)
    assert [p.name for p in tmp_path.iterdir()] == ["shared.npz"]  # no temporary file left behind


def _refuse(*args, **kwargs):
    raise PermissionError(13, "Permission denied")


def test_a_damaged_entry_in_a_read_only_cache_directory_names_the_directory(tmp_path, monkeypatch):
    """A read-only cache folder holding one damaged entry: the entry cannot be deleted and its replacement
    cannot be written, which says so about the folder, before anything is recomputed (root ignores chmod, so the
    refusal is simulated where the cache deletes)."""
    from pathlib import Path

    path = tmp_path / "01" / "entry.npz"
    cache.atomic_savez(path, {"x": np.arange(100.0)})
    flip_bit(path)
    calls = []
    monkeypatch.setattr(Path, "unlink", _refuse)
    with pytest.raises(cache.CacheNotWritable, match=rf"the cache directory {path.parent} is not writable \(the "
                                                     r"damaged entry entry.npz cannot be deleted: Permission denied\)"):
        cache.cached_npz(path, lambda: calls.append(1) or {"x": np.zeros(3)})
    assert calls == []  # nothing computed that could not be stored


def test_a_read_only_cache_directory_names_the_directory_when_an_entry_is_written(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "mkstemp", _refuse)
    path = tmp_path / "01" / "entry.pt"
    with pytest.raises(cache.CacheNotWritable, match=rf"the cache directory {path.parent} is not writable \("
                                                     r"entry.pt cannot be written: Permission denied\); make it "
                                                     r"writable, or point WORKBOOK_CACHE at a writable folder"):
        cache.atomic_torch_save({"a": 1}, path)
