import shutil

import pytest

from lib.data import files


def test_every_registered_file_matches_its_checksum(data_root):
    for name in files.FILES:
        assert files.data_file(name, root=data_root).is_file()


def test_registry_matches_the_shared_sha256sums(data_root):
    lines = (data_root / "SHA256SUMS").read_text().splitlines()
    sums = dict(line.split()[::-1] for line in lines if line.strip())
    expected = {name.removeprefix("./"): digest for name, digest in sums.items()
                if not name.endswith(("LICENSE", ".txt"))}
    assert {name: f.sha256 for name, f in files.FILES.items()} == expected


def test_missing_file_error_names_file_source_and_command(tmp_path):
    with pytest.raises(files.DataFileError) as err:
        files.data_file("cifar10h/cifar10h-probs.npy", root=tmp_path)
    message = str(err.value)
    assert "cifar10h/cifar10h-probs.npy" in message and str(tmp_path) in message
    assert "python -m lib.data fetch cifar10h/cifar10h-probs.npy" in message and "CIFAR-10H" in message


def test_corrupt_file_is_refused(tmp_path, data_root):
    name = "cifar10/test_labels.npy"
    (tmp_path / "cifar10").mkdir()
    shutil.copy(data_root / name, tmp_path / name)
    assert files.data_file(name, root=tmp_path)
    with open(tmp_path / name, "r+b") as fh:
        fh.seek(200)
        fh.write(b"\x01")
    with pytest.raises(files.DataFileError, match="corrupt"):
        files.data_file(name, root=tmp_path)


def test_file_without_download_says_so(tmp_path):
    with pytest.raises(files.DataFileError, match="no direct download"):
        files.data_file("cifar10/cifar10-jpeg.zip", root=tmp_path)


def test_data_root_follows_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBOOK_DATA", str(tmp_path))
    assert files.data_root() == tmp_path
