"""CIFAR-10 loading (JPEG copy and the official python archive) and the CIFAR-10H order (lib.data.cifar10)."""

from __future__ import annotations

import io
import pickle
import tarfile

import numpy as np
import pytest

from lib.data import cifar10
from lib.data.files import DataFileError


@pytest.fixture(scope="module")
def data():
    return cifar10.load_cifar10()


def test_jpeg_copy_has_the_expected_shapes_and_balanced_classes(data):
    train, test = data["train"], data["test"]
    assert train.images.shape == (50000, 32, 32, 3) and train.images.dtype == np.uint8
    assert test.images.shape == (10000, 32, 32, 3) and len(test) == 10000
    assert np.bincount(train.labels).tolist() == [5000] * 10
    assert np.bincount(test.labels).tolist() == [1000] * 10
    assert test.labels[:8].tolist() == [3, 8, 8, 0, 6, 6, 1, 6]  # the original order (data/README.md)


def test_test_order_matches_cifar10h_and_the_lossless_anchors(data):
    report = cifar10.check_test_order(data["test"])
    assert 0.985 < report["label_agreement"] < 0.999  # humans disagree with the official label on ~1 %
    assert report["anchor_mse_median"] < 100 and report["num_anchors"] == 1139


def test_a_shuffled_test_set_fails_the_order_check(data):
    test = data["test"]
    perm = np.random.default_rng(0).permutation(len(test))
    # images and labels shuffled together: they no longer match the CIFAR-10H rows
    with pytest.raises(ValueError, match="agree with the CIFAR-10H argmax on only"):
        cifar10.check_test_order(cifar10.Split(test.images[perm], test.labels[perm]))
    # labels still in order, images shuffled: the lossless anchors catch it
    with pytest.raises(ValueError, match="anchor images differ"):
        cifar10.check_test_order(cifar10.Split(test.images[perm], test.labels))


def _fake_python_archive(path, rng):
    """A tiny archive in the official layout: 5 training batches and a test batch, channel-major rows."""
    batches = {}
    with tarfile.open(path, "w:gz") as archive:
        for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
            batch = {b"data": rng.integers(0, 256, (4, 3072), dtype=np.uint8), b"labels": list(rng.integers(0, 10, 4))}
            batches[name] = batch
            blob = pickle.dumps(batch)
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(blob)
            archive.addfile(info, io.BytesIO(blob))
    return batches


def test_python_archive_rows_are_read_channel_major(tmp_path, monkeypatch):
    batches = _fake_python_archive(tmp_path / "fake.tar.gz", np.random.default_rng(1))
    arrays = cifar10._arrays_from_batches(batches)
    assert arrays["train_images"].shape == (20, 32, 32, 3) and arrays["test_images"].shape == (4, 32, 32, 3)
    row = batches["data_batch_1"][b"data"][0]
    assert arrays["train_images"][0, 0, 1, 0] == row[1]  # red plane first
    assert arrays["train_images"][0, 0, 0, 2] == row[2 * 1024]  # then green, then blue
    assert arrays["test_labels"].tolist() == batches["test_batch"][b"labels"]


def test_missing_or_corrupt_python_archive_names_the_file_and_the_source(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_DATA", str(tmp_path))
    with pytest.raises(DataFileError, match="cifar-10-python.tar.gz.*kriz"):
        cifar10.load_cifar10("python")
    (tmp_path / "cifar10").mkdir()
    _fake_python_archive(tmp_path / cifar10.PYTHON_ARCHIVE, np.random.default_rng(2))
    with pytest.raises(DataFileError, match="MD5"):
        cifar10.load_cifar10("python")
    with pytest.raises(ValueError, match="source='png'"):
        cifar10.load_cifar10("png")
