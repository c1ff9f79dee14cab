"""CIFAR-10 images and labels, and the CIFAR-10H human soft labels (notebooks 03 and 04).

Two sources of the same images:
- `"jpeg"` (default, what the tests use): `cifar10/cifar10-jpeg.zip` under the data root, a JPEG
  (quality 75) copy of CIFAR-10. Test image i is `test/{i:05d}.jpg`, in the original test order, so
  row i matches CIFAR-10H row i and `cifar10/test_labels.npy`. The training images are stored per
  class (`train/<class>/NNNN.jpg`); we return them class by class (airplane first), which is not the
  original training order (nothing here depends on it).
- `"python"`: the official lossless archive `cifar10/cifar-10-python.tar.gz` (from
  https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz), when a user has it; original order.

Decoding 60,000 JPEGs takes a few tens of seconds, so the arrays are decoded once and cached
(`<cache>/cifar10/...npz`). JPEG caveat (see data/README.md): classifiers trained on the lossless
images lose accuracy on the JPEG copy (ResNet-20: 91.8 % -> about 81 %); say which copy a result used.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lib.cache import cache_path, config_hash
from lib.data.files import DataFileError, data_file, data_root
from lib.run import pinned_npz

CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
SOURCES = ("jpeg", "python")
JPEG_ARCHIVE = "cifar10/cifar10-jpeg.zip"
PYTHON_ARCHIVE = "cifar10/cifar-10-python.tar.gz"
ARCHIVES = {"jpeg": JPEG_ARCHIVE, "python": PYTHON_ARCHIVE}  # the file each source reads, under the data root
DATASET_CACHE_ENV = "WORKBOOK_DATASET_CACHE"
PYTHON_ARCHIVE_MD5 = "c58f30108f718f92721af3b95e74349a"  # published by the dataset's authors


@dataclass(frozen=True)
class Split:
    """One split of CIFAR-10: `images` (N, 32, 32, 3) uint8 RGB, `labels` (N,) int64 in 0..9."""

    images: np.ndarray
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)


def _decode_jpeg_zip() -> dict[str, np.ndarray]:
    from PIL import Image  # pillow comes with matplotlib

    path = data_file(JPEG_ARCHIVE)
    arrays: dict[str, list] = {"train_images": [], "train_labels": [], "test_images": []}
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        for label, cls in enumerate(CLASSES):
            for i in range(5000):
                arrays["train_images"].append(_read_jpeg(archive, f"train/{cls}/{i:04d}.jpg", Image))
                arrays["train_labels"].append(label)
        for i in range(10000):
            name = f"test/{i:05d}.jpg"
            if name not in names:
                raise DataFileError(f"{path}: {name} is missing; the archive is not the expected JPEG copy")
            arrays["test_images"].append(_read_jpeg(archive, name, Image))
    test_labels = np.load(data_file("cifar10/test_labels.npy")).astype(np.int64)
    return {"train_images": np.stack(arrays["train_images"]), "test_images": np.stack(arrays["test_images"]),
            "train_labels": np.asarray(arrays["train_labels"], dtype=np.int64), "test_labels": test_labels}


def _read_jpeg(archive: zipfile.ZipFile, name: str, image_module) -> np.ndarray:
    with archive.open(name) as fh:
        image = np.asarray(image_module.open(io.BytesIO(fh.read())).convert("RGB"))
    if image.shape != (32, 32, 3):
        raise DataFileError(f"{archive.filename}: {name} has shape {image.shape}, expected (32, 32, 3)")
    return image


def _read_python_archive() -> dict[str, np.ndarray]:
    path = data_root() / PYTHON_ARCHIVE
    if not path.exists():
        raise DataFileError(
            f"{path} is missing: the lossless CIFAR-10 archive is not part of the workbook's data. Download "
            f"https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz into {path.parent}, or use source='jpeg'.")
    digest = hashlib.md5(path.read_bytes()).hexdigest()
    if digest != PYTHON_ARCHIVE_MD5:
        raise DataFileError(f"{path}: MD5 {digest} does not match the published {PYTHON_ARCHIVE_MD5}; "
                            "the download is corrupt, fetch it again.")
    batches = {}
    with tarfile.open(path) as archive:
        for member in archive.getmembers():
            stem = member.name.rsplit("/", 1)[-1]
            if stem.startswith(("data_batch_", "test_batch")):
                batches[stem] = pickle.load(archive.extractfile(member), encoding="bytes")
    return _arrays_from_batches(batches)


def _arrays_from_batches(batches: dict) -> dict[str, np.ndarray]:
    """The official pickled batches -> arrays; rows are 3072 bytes, channel-major (R, G, B planes)."""
    def images(batch) -> np.ndarray:
        return np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)

    train = [batches[f"data_batch_{i}"] for i in range(1, 6)]
    return {"train_images": np.concatenate([images(b) for b in train]),
            "train_labels": np.concatenate([np.asarray(b[b"labels"], dtype=np.int64) for b in train]),
            "test_images": images(batches["test_batch"]),
            "test_labels": np.asarray(batches["test_batch"][b"labels"], dtype=np.int64)}


def load_cifar10(source: str = "jpeg") -> dict[str, Split]:
    """CIFAR-10 as {"train": Split (50000 images), "test": Split (10000, original order)}.

    Decoded once and cached (a damaged cache entry is decoded again).
    """
    if source not in SOURCES:
        raise ValueError(f"source={source!r} is not a CIFAR-10 source; choose one of {SOURCES}")
    read = _decode_jpeg_zip if source == "jpeg" else _read_python_archive
    arrays = pinned_npz(decoded_path(source), read)
    return {"train": Split(arrays["train_images"], arrays["train_labels"]),
            "test": Split(arrays["test_images"], arrays["test_labels"])}


def check_archive(source: str, parameter: str = "source") -> str:
    """Cheap check before any work that the archive of `source` is there (the JPEG copy also by SHA-256; the
    lossless archive's MD5 is checked when it is read); returns its name. Raises DataFileError naming the
    archive, and `parameter` (how the caller chooses the source) for the way out."""
    from lib.params import check_choice

    check_choice(parameter, source, SOURCES)
    if source == "jpeg":
        data_file(JPEG_ARCHIVE)
    elif not (data_root() / PYTHON_ARCHIVE).is_file():
        raise DataFileError(
            f"Data file {PYTHON_ARCHIVE} is missing (looked for {data_root() / PYTHON_ARCHIVE}): the lossless "
            "CIFAR-10 archive is not part of the workbook's data. Download "
            f"https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz there, or use {parameter}='jpeg'.")
    return ARCHIVES[source]


def decoded_path(source: str) -> Path:
    """Where the decoded arrays are cached: under `$WORKBOOK_DATASET_CACHE` if set (decoded inputs can be
    shared by runs that otherwise start from an empty cache, as the notebook tests do), else the cache."""
    config = {"source": source, "version": 1}
    if os.environ.get(DATASET_CACHE_ENV):
        return Path(os.environ[DATASET_CACHE_ENV]) / "cifar10" / f"cifar10-{source}-{config_hash(config)}.npz"
    return cache_path("cifar10", f"cifar10-{source}", config, ".npz")


def cifar10h_probs() -> np.ndarray:
    """CIFAR-10H soft labels (Peterson et al. 2019): (10000, 10) float64, rows = test images in order."""
    return np.load(data_file("cifar10h/cifar10h-probs.npy"))


def cifar10h_counts() -> np.ndarray:
    """CIFAR-10H raw annotation counts: (10000, 10) int64, 47-63 annotators per image."""
    return np.load(data_file("cifar10h/cifar10h-counts.npy"))


def check_test_order(test: Split, probs: np.ndarray | None = None, min_agreement: float = 0.97) -> dict:
    """Check that test image i, its label and CIFAR-10H row i belong together.

    Two checks: (1) the stored labels agree with the soft labels' argmax on ~99 % of rows (humans
    disagree with the official label on about 1 %); (2) every lossless anchor image is nearest, by
    pixel MSE, to the test image at its own index (JPEG error gives MSE ~50, a wrong image thousands).
    Raises ValueError naming the failed check; returns the measured agreement and anchor figures.
    """
    probs = cifar10h_probs() if probs is None else probs
    agreement = float(np.mean(probs.argmax(axis=1) == test.labels))
    if agreement < min_agreement:
        raise ValueError(f"CIFAR-10 test labels agree with the CIFAR-10H argmax on only {agreement:.1%} of rows "
                         f"(expected about 99 %): the test images or soft labels are not in the original order")
    with np.load(data_file("cifar10/test_lossless_anchors.npz")) as anchors:
        idx, lossless = anchors["idx"], anchors["x"].astype(np.float32)
    at_index = ((test.images[idx].astype(np.float32) - lossless) ** 2).mean(axis=(1, 2, 3))
    wrong = [int(i) for i, mse in zip(idx, at_index) if mse > 400.0]
    if wrong:
        raise ValueError(f"{len(wrong)} lossless anchor images differ from the test image at their index "
                         f"(first: {wrong[:5]}): the test images are not in the original order")
    return {"label_agreement": agreement, "anchor_mse_median": float(np.median(at_index)),
            "anchor_mse_max": float(at_index.max()), "num_anchors": len(idx)}
