import numpy as np
import pytest

from lib import cache
from lib.paths import NotARegularFile
from lib.run import Run


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


def test_a_run_computes_an_entry_once_and_force_recomputes(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"x": np.arange(len(calls) + 2)}

    path = tmp_path / "entry.npz"
    first = Run().npz(path, compute)
    again = Run().npz(path, compute)
    assert len(calls) == 1 and np.array_equal(first["x"], again["x"])
    forced = Run(force=True).npz(path, compute)
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
# Damaged entries: checksum in a header, verified on load; delete and recompute
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

    return calls, lambda: Run().npz(path, compute)


def torch_entry(path):
    import torch

    calls = []

    def compute():
        calls.append(1)
        return {"w": torch.arange(1000.0) * len(calls), "step": 3}

    return calls, lambda: Run().torch(path, compute)


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


@pytest.mark.parametrize("suffix, entry", [(".npz", npz_entry), (".pt", torch_entry)])
def test_an_entry_without_the_checksum_header_is_refused_unread_and_recomputed(tmp_path, caplog, suffix, entry):
    """A file at a cache path without the header (not written by this workbook, or written before checksums)
    is a damaged entry: named, never opened as .npz or unpickled, deleted and recomputed with a header."""
    import torch

    path = tmp_path / f"entry{suffix}"
    if suffix == ".npz":
        np.savez(path, x=np.arange(5))
    else:
        torch.save({"w": torch.arange(5.0)}, path)
    loader = cache.load_npz if suffix == ".npz" else cache.load_torch
    with pytest.raises(cache.DamagedCacheEntry, match=rf"{path}: no checksum header"):
        loader(path)
    calls, load = entry(path)
    with caplog.at_level("WARNING", logger="lib.cache"):
        fresh = load()
    assert len(calls) == 1 and f"damaged cache entry {path}: no checksum header" in caplog.text
    assert path.read_bytes().startswith(cache.MAGIC)
    assert len(np.asarray(fresh["x" if suffix == ".npz" else "w"])) == 1000
    load()
    assert len(calls) == 1  # the recomputed entry is the one read from now on


# ----------------------------------------------------------------------------------------------------
# Trust boundary: a cache entry is data. A pickle with a code payload at a cache path is never run, with
# or without a (forged: the checksum is not a signature) header; every entry the workbook writes loads with
# torch.load(weights_only=True)
# ----------------------------------------------------------------------------------------------------
class _Payload:
    """Unpickling this runs `code` (the classic pickle attack): it would create the marker file."""

    def __init__(self, runner, code):
        self.runner, self.code = runner, code

    def __reduce__(self):
        return self.runner, (self.code,)


def _payloads(marker):
    import os
    import subprocess

    return {"exec": _Payload(exec, f"open({str(marker)!r}, 'w').close()"),
            "os.system": _Payload(os.system, f"touch {marker}"),
            "subprocess": _Payload(subprocess.check_call, ["touch", str(marker)]),
            "eval": _Payload(eval, f"__import__('pathlib').Path({str(marker)!r}).touch() or 0")}


def _plant(path, obj, forged_header):
    """torch.save `obj` at `path`, with a valid checksum header when `forged_header` (anyone can compute one)."""
    import hashlib
    import io

    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    payload = buf.getvalue()
    header = cache.MAGIC + hashlib.sha256(payload).digest() if forged_header else b""
    path.write_bytes(header + payload)


@pytest.mark.parametrize("forged_header", [False, True], ids=["no-header", "forged-header"])
@pytest.mark.parametrize("runner", ["exec", "os.system", "subprocess", "eval"])
def test_a_pickle_payload_at_a_cache_path_is_never_run(tmp_path, caplog, forged_header, runner):
    marker = tmp_path / "payload-ran"
    path = tmp_path / "entry.pt"
    _plant(path, {"w": _payloads(marker)[runner]}, forged_header)
    calls, load = torch_entry(path)
    with caplog.at_level("WARNING", logger="lib.cache"):
        value = load()
    assert not marker.exists(), "unpickling the planted entry ran its code"
    assert len(value["w"]) == 1000 and len(calls) == 1 and f"damaged cache entry {path}" in caplog.text
    reason = "holds more than data, so it is not loaded" if forged_header else "no checksum header"
    assert reason in caplog.text
    # nor with the widest list of classes a caller lets an entry build (CReL's models)
    from lib.crel.stages import MODEL_CLASSES

    _plant(path, {"w": _payloads(marker)[runner]}, forged_header)
    with pytest.raises(cache.DamagedCacheEntry, match=str(path)):
        cache.load_torch(path, allow=MODEL_CLASSES)
    assert not marker.exists()


def test_an_npz_entry_holding_a_pickled_object_array_is_never_unpickled(tmp_path, caplog):
    """.npz entries are read with allow_pickle=False: an object array behind a forged header is refused."""
    import hashlib
    import io

    marker = tmp_path / "payload-ran"
    buf = io.BytesIO()
    np.savez(buf, x=np.array([_payloads(marker)["exec"]], dtype=object))
    path = tmp_path / "entry.npz"
    path.write_bytes(cache.MAGIC + hashlib.sha256(buf.getvalue()).digest() + buf.getvalue())
    calls, load = npz_entry(path)
    with caplog.at_level("WARNING", logger="lib.cache"):
        value = load()
    assert not marker.exists() and len(calls) == 1 and len(value["x"]) == 1000
    assert f"damaged cache entry {path}: ValueError: Object arrays cannot be loaded" in caplog.text


def test_a_checkpoint_with_a_payload_is_refused_and_training_starts_over(tmp_path, caplog):
    """Training checkpoints (lib.prcurves.ddpm, lib.regret.whole) are read by the same loader."""
    import torch

    from lib.prcurves import ddpm
    from lib.regret import whole as wh

    marker = tmp_path / "payload-ran"
    points = np.random.default_rng(0).normal(size=(64, 2)).astype(np.float32)
    x, y = torch.zeros(32, 3, 32, 32), torch.arange(32) % 10
    tiny = wh.WholeSettings(widths=(4, 4, 4), epochs=1, batch_size=32, mc_samples=2, members=1, whiten_patches=10)
    for name, train in [("ddpm.ckpt", lambda c: ddpm.train_ensemble(points, complexity=1, seeds=(0,), num_steps=2,
                                                                    checkpoint=c, progress=False)),
                        ("whole.ckpt", lambda c: wh.train_network("ensemble", x, y, tiny, 0, checkpoint=c))]:
        checkpoint = tmp_path / name
        _plant(checkpoint, {"step": _payloads(marker)["eval"], "epoch": 0}, forged_header=True)  # eval gives 0
        with caplog.at_level("WARNING", logger="lib.cache"):
            try:
                train(checkpoint)
            finally:  # (the planted dict is no checkpoint: where it was unpickled, training fails after the code ran)
                assert not marker.exists(), f"resuming from {name} ran the planted code"
        assert f"damaged cache entry {checkpoint}" in caplog.text


def _assert_same(a, b, where="entry"):
    """a and b hold the same data: equal tensors, arrays (and dtypes), containers, and objects' attributes."""
    import functools
    import math

    import torch

    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, torch.Tensor):
        torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True, msg=where)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            _assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (u, v) in enumerate(zip(a, b)):
            _assert_same(u, v, f"{where}[{i}]")
    elif isinstance(a, functools.partial):
        _assert_same((a.func, a.args, a.keywords), (b.func, b.args, b.keywords), f"{where}.partial")
    elif isinstance(a, (float, np.floating)) and math.isnan(a):
        assert math.isnan(b), where
    elif hasattr(a, "__dict__") and not isinstance(a, type):  # modules, dataclasses, zuko's transforms
        _assert_same(vars(a), vars(b), f"{where}.{type(a).__name__}")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


@pytest.fixture
def stored(monkeypatch):
    """Records what `Run.torch` writes and what it reads back ({path: object}, deep copies at that moment),
    and that every read is torch.load(weights_only=True)."""
    import copy

    import torch

    written, read, flags = {}, {}, []
    save, load, torch_load = cache.atomic_torch_save, cache.load_torch, torch.load

    def spy_save(obj, path):
        written[path] = copy.deepcopy(obj)
        return save(obj, path)

    def spy_load(path, **kwargs):
        read[path] = obj = load(path, **kwargs)
        return copy.deepcopy(obj)

    def spy_torch_load(*args, **kwargs):
        flags.append(kwargs.get("weights_only"))
        return torch_load(*args, **kwargs)

    monkeypatch.setattr(cache, "atomic_torch_save", spy_save)
    monkeypatch.setattr(cache, "load_torch", spy_load)
    monkeypatch.setattr(torch, "load", spy_torch_load)
    return written, read, flags


def _forbid(monkeypatch, *targets):
    for module, name in targets:
        monkeypatch.setattr(module, name, lambda *a, _n=name, **k: pytest.fail(f"{_n} ran: a cache entry was not read"))


def _crel_table(monkeypatch, lgm):
    from lib.crel import experiment as ex

    config = ex.resolve_config("smoke", folds=(200, 200, 100, 100), cvae_epochs=1, flow_epochs=1, dqr_epochs=1,
                               z_grid_size=50, y_grid_size=50, area_eval_n_x=2, pgd_steps=1, include_feldman=False,
                               include_pcp=False, cvae_restarts=0, seed=3)
    rows = lambda: ex.synthetic_table_rows(config, 3, 0.1, Run(), lgm=lgm)  # noqa: E731
    rows()
    _forbid(monkeypatch, (ex, "train_cvae"), (ex, "train_flow"), (ex.crel, "fit"), (ex, "_measure_table_run"))
    rows()


def _captioner(monkeypatch):
    from lib.crel import captions as cap

    rng = np.random.default_rng(0)
    n_img, per = 60, 5
    texts, rows = [f"caption {k}" for k in range(n_img * per)], np.repeat(np.arange(n_img), per)
    emb = rng.normal(size=(len(texts), 16)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    s = cap.CaptionSettings(num_images=n_img, folds=(20, 15, 15, 10), samples_per_image=3, reference_samples=5,
                            near_band=(1, 3), mid_band=(5, 10), unrelated_min_rank=20, pca_dim=3, n_directions=12,
                            hidden=(8,), epochs=1, n_test=3, pgd_starts=2, pgd_steps=1)
    roles = cap.assign_roles(texts, rows, s.seed)
    pools = cap.build_pools(texts, roles, cap.neighbour_ranks(emb, roles), s)
    data = {"emb": emb, "roles": roles, "pools": pools, "folds": cap.image_folds(n_img, s), "digest": "synthetic"}
    cap.run_captioner("C", cap.captioner_weights("C"), data, s, Run())
    _forbid(monkeypatch, (cap, "_run_captioner"))
    cap.run_captioner("C", cap.captioner_weights("C"), data, s, Run())


def _regret_heads(monkeypatch):
    import torch

    from lib.regret import experiment as ex

    config = ex.resolve_config("smoke")
    head = __import__("dataclasses").replace(config.head, epochs=1)
    rng = np.random.default_rng(0)
    feats, labels = torch.as_tensor(rng.normal(size=(40, 8)), dtype=torch.float32), np.arange(40) % 10
    targets = torch.eye(10)[labels]
    trained = lambda m: ex.trained_method(config, m, feats, targets, labels, head=head,  # noqa: E731
                                          label="cifar", run=Run())
    for method in ("ensemble", "ddu", "evidential", "mc_dropout"):
        trained(method)
    _forbid(monkeypatch, (ex.uq, "fit_method"))
    for method in ("ensemble", "ddu", "evidential", "mc_dropout"):
        trained(method)


def _whole_networks(monkeypatch):
    import torch

    from lib.regret import experiment as ex

    config = ex.resolve_config("smoke", whole={"widths": [4, 4, 4], "epochs": 1, "batch_size": 32, "members": 2,
                                               "whiten_patches": 10})
    images, labels = torch.rand(32, 3, 32, 32), np.arange(32) % 10
    for method in ("ensemble", "ddu"):
        ex.whole_networks(config, method, images, labels, Run())
    _forbid(monkeypatch, (ex.wh, "train_network"))
    for method in ("ensemble", "ddu"):
        ex.whole_networks(config, method, images, labels, Run())


def _prcurves_ensemble(monkeypatch):

    from lib.prcurves import experiment as ex

    config = ex.resolve_config("smoke", num_members=2, train={"ema_decay": 0.9})
    points = np.random.default_rng(0).normal(size=(64, 2)).astype(np.float32)
    trained = lambda: ex.trained_ensemble(config, complexity=1, train_points=points, num_steps=3,  # noqa: E731
                                          run=Run())
    trained()
    _forbid(monkeypatch, (ex.ddpm, "train_ensemble"))
    trained()


def _prcurves_budget(monkeypatch):
    from lib.prcurves import budget

    spec = budget.StudySpec(complexities=(1,), num_members=2, n_train=64)
    points = np.random.default_rng(0).normal(size=(64, 2)).astype(np.float32)
    budget._train(spec, "paper", 1, 4, (2, 4), points)
    _forbid(monkeypatch, (budget.ddpm, "train_ensemble"))
    budget._train(spec, "paper", 1, 4, (2, 4), points)


@pytest.mark.filterwarnings("ignore::lib.crel.cvae.CollapseWarning")  # a 1-epoch CVAE collapses: data all the same
@pytest.mark.parametrize("kind", [lambda mp: _crel_table(mp, "cvae"), lambda mp: _crel_table(mp, "flow"), _captioner,
                                  _regret_heads, _whole_networks, _prcurves_ensemble, _prcurves_budget],
                         ids=["crel-cvae", "crel-flow", "crel-captioner", "regret-heads", "regret-whole",
                              "prcurves-ensemble", "prcurves-budget"])
def test_every_kind_of_entry_round_trips_as_data(tmp_path, monkeypatch, stored, kind):
    """Each caller of Run.torch, run twice at a tiny size: the second run reads every entry the first wrote
    (its computation is forbidden), with weights_only=True, and gets the same content back."""
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path))
    written, read, flags = stored
    kind(monkeypatch)
    assert written and set(read) == set(written)
    assert flags and all(flag is True for flag in flags)
    for path in written:
        _assert_same(written[path], read[path], path.name)


def test_checkpoints_round_trip_as_data(tmp_path, monkeypatch):
    """The resumable trainings' checkpoints (lib.prcurves.ddpm, lib.regret.whole) load with weights_only=True."""
    import torch

    from lib.prcurves import ddpm
    from lib.regret import whole as wh

    flags, torch_load = [], torch.load

    def spy_torch_load(*args, **kwargs):
        flags.append(kwargs.get("weights_only"))
        return torch_load(*args, **kwargs)

    monkeypatch.setattr(torch, "load", spy_torch_load)
    points = np.random.default_rng(0).normal(size=(64, 2)).astype(np.float32)
    ddpm.train_ensemble(points, complexity=1, seeds=(0, 1), num_steps=6, snapshots=(2,), checkpoint=tmp_path / "d.ckpt",
                        checkpoint_every=4, settings=ddpm.TrainSettings(ema_decay=0.9), progress=False)
    state = cache.load_torch(tmp_path / "d.ckpt")
    assert state["step"] == 4 and set(state["snapshots"]) == {2} and state["ema"] is not None
    tiny = wh.WholeSettings(widths=(4, 4, 4), epochs=2, batch_size=32, mc_samples=2, members=1, whiten_patches=10)
    x, y = torch.rand(64, 3, 32, 32), torch.arange(64) % 10
    wh.train_network("ddu", x, y, tiny, 0, checkpoint=tmp_path / "w.ckpt", max_steps=2)
    state = cache.load_torch(tmp_path / "w.ckpt")
    assert state["state"]["epoch"] == 1 and set(state) == {"net", "opt", "generator", "torch_rng", "state"}
    assert flags == [True, True]


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
        Run().npz(path, lambda: calls.append(1) or {"x": np.zeros(3)})
    assert calls == []  # nothing computed that could not be stored


def test_a_read_only_cache_directory_names_the_directory_when_an_entry_is_written(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "mkstemp", _refuse)
    path = tmp_path / "01" / "entry.pt"
    with pytest.raises(cache.CacheNotWritable, match=rf"the cache directory {path.parent} is not writable \("
                                                     r"entry.pt cannot be written: Permission denied\); make it "
                                                     r"writable, or point WORKBOOK_CACHE at a writable folder"):
        cache.atomic_torch_save({"a": 1}, path)


# ----------------------------------------------------------------------------------------------------
# What an entry's path may be and what a failed write says
# ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("namespace, label", [("../..", "x"), ("/elsewhere", "x"), ("01", "../x"), ("01", "a/b")])
def test_a_cache_path_outside_its_namespace_is_refused(tmp_path, monkeypatch, namespace, label):
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ValueError, match=r"leads outside its folder|holds a path separator"):
        cache.cache_path(namespace, label, {"seed": 0}, ".npz")


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_directory_or_fifo_at_an_entry_is_named_not_read(tmp_path, kind):
    import os

    path = tmp_path / "01" / "entry.npz"
    path.parent.mkdir()
    path.mkdir() if kind == "directory" else os.mkfifo(path)
    with pytest.raises(NotARegularFile, match=rf"^{path}: it is a (directory|FIFO).*not a regular file"):
        Run().npz(path, lambda: {"x": np.zeros(1)})


FSIZE_WRITE = """
import resource, sys
import numpy as np
from lib import cache
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
try:
    cache.{writer}({args})
except cache.WriteFailed as err:
    print("WriteFailed", err)
"""


@pytest.mark.parametrize("writer, args", [
    ("atomic_torch_save", "{'w': np.ones(10_000)}, sys.argv[1]"),
    ("atomic_savez", "sys.argv[1], {'w': np.ones(10_000)}"),
])
def test_a_write_cut_by_a_file_size_limit_names_the_file(tmp_path, writer, args):
    """Under `ulimit -f` (RLIMIT_FSIZE, in a subprocess: the limit is per process), torch.save's writer said only
    'RuntimeError: ... unexpected pos'; the error now names the file, and no file is left behind."""
    import subprocess
    import sys

    path = tmp_path / "entry.pt"
    out = subprocess.run([sys.executable, "-c", FSIZE_WRITE.format(writer=writer, args=args), str(path)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("WriteFailed [Errno ") and f"{path} could not be written" in out.stdout
    assert "file-size limit" in out.stdout and list(tmp_path.iterdir()) == []
