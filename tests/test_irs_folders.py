"""lib.irs.folders as the evaluation of your own generator: `irs_report` and the command with `--out`, end to end on
the example folders of docs/own-models.md, checked against `image_retrieval_score` on the same features; one
interval for the reported estimate; folders without images refused before any work; features read again when a
folder's images change."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest
from own_models_page import ROOT, page_argv

from lib import irs
from lib.irs import folders
from lib.irs.features import get_extractor

EXAMPLES = ROOT / "docs" / "examples" / "04"


def features(folder, image_size: int) -> np.ndarray:
    return get_extractor("pixels").extract_batches(folders.iter_image_folder(str(folder), image_size))


def test_the_pages_command_matches_image_retrieval_score_on_the_example_folders(tmp_path, capsys):
    argv = page_argv("lib.irs.folders", tmp_path / "out")
    assert folders.main(argv) == 0
    assert "wrote" in capsys.readouterr().out and (tmp_path / "out" / "figure.png").stat().st_size > 10_000
    report = json.loads((tmp_path / "out" / "results.json").read_text())
    size = int(argv[argv.index("--image-size") + 1])
    direct = irs.image_retrieval_score(*(features(EXAMPLES / d, size) for d in ("train", "real", "fake")),
                                       center=False)
    assert report["n"] == direct["n"] == 32 and report["chunks"] == 2  # 64 generated images: two chunks of 32
    for key in ("estimate", "lower", "upper", "k_distinct", "irs_alpha"):
        assert report["real"][key] == direct["real"][key] and report["fake"][key] == direct["fake"][key]
    assert report["adjusted"] == direct["adjusted"] == direct["adjusted_chunks"][0]  # one chunk's, with its interval
    assert report["adjusted_chunks"] == direct["adjusted_chunks"]
    assert report["adjusted_mean"] == pytest.approx(np.mean([c["estimate"] for c in direct["adjusted_chunks"]]))
    assert report["fake"]["estimate"] < report["real"]["estimate"]  # the generator copies 24 of 64 images


def test_the_function_is_the_packages():
    report = irs.irs_report(train=str(EXAMPLES / "train"), real=str(EXAMPLES / "real"), fake=str(EXAMPLES / "fake"),
                            extractor="pixels", image_size=16, n=20)
    assert report["n"] == 20 and report["settings"]["extractor"] == "pixels"


@pytest.mark.parametrize("case, message", [
    ("empty", r"fake_dir='.*empty' holds 0 image\(s\) \(looked for .* in it and its subfolders\); it needs at "
              r"least 2"),
    ("one", r"real_dir='.*one' holds 1 image\(s\)"),
    ("missing", r"train_dir='.*missing' is not a folder of images"),
])
def test_a_folder_without_images_is_refused_before_any_work_naming_it(tmp_path, capsys, case, message):
    dirs = {"train": str(EXAMPLES / "train"), "real": str(EXAMPLES / "real"), "fake": str(EXAMPLES / "fake")}
    if case == "empty":
        (tmp_path / "empty" / "sub").mkdir(parents=True)
        (tmp_path / "empty" / "notes.txt").write_text("no images")
        dirs["fake"] = str(tmp_path / "empty")
    elif case == "one":
        (tmp_path / "one").mkdir()
        shutil.copy(EXAMPLES / "real" / "000.png", tmp_path / "one")
        dirs["real"] = str(tmp_path / "one")
    else:
        dirs["train"] = str(tmp_path / "missing")
    with pytest.raises(SystemExit) as stop:
        folders.main([a for k, v in dirs.items() for a in (f"--{k}", v)] + ["--extractor", "pixels", "--out",
                                                                             str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and re.search(message, err), err
    assert not (tmp_path / "out").exists()


def test_features_are_extracted_again_when_a_folders_images_change(tmp_path, monkeypatch):
    """The features' cache was keyed by the folder's path alone: new samples written into the same folder were
    scored with the old samples' features."""
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    fake = tmp_path / "fake"
    shutil.copytree(EXAMPLES / "fake", fake)
    args = {"train": str(EXAMPLES / "train"), "real": str(EXAMPLES / "real"), "fake": str(fake),
            "extractor": "pixels", "image_size": 16}
    before = irs.irs_report(**args)
    for p in sorted(fake.glob("*.png"))[32:]:  # half the samples gone: one chunk left
        p.unlink()
    after = irs.irs_report(**args)
    assert before["chunks"] == 2 and after["chunks"] == 1
