"""lib.irs.embed: image folders as feature arrays (the page's command on the example folders), the same features as
the extractor gives, accepted by the 01 command; folders without images or with one name refused by name."""

from __future__ import annotations

import re

import numpy as np
import pytest
from own_models_page import ROOT, page_argv

from lib.irs import embed, folders
from lib.irs.features import get_extractor
from lib.prcurves import own as prcurves_own

EXAMPLES = ROOT / "docs" / "examples" / "04"


def test_the_pages_command_writes_the_extractors_features_which_the_01_command_takes(tmp_path, capsys):
    argv = page_argv("lib.irs.embed", tmp_path / "feats")
    assert embed.main(argv) == 0
    assert "wrote" in capsys.readouterr().out
    size = int(argv[argv.index("--image-size") + 1])
    ex = get_extractor(argv[argv.index("--extractor") + 1])
    for name, count in (("real", 32), ("fake", 64)):
        got = np.load(tmp_path / "feats" / f"{name}.npy")
        assert got.shape == (count, ex.dim) and got.dtype == np.float32
        np.testing.assert_array_equal(got, ex.extract_batches(folders.iter_image_folder(str(EXAMPLES / name), size)))
    feats = tmp_path / "feats"
    assert prcurves_own.main(["--real", str(feats / "real.npy"), "--ensemble", "fake", str(feats / "fake.npy"),
                              str(feats / "fake.npy"), "--num-permutations", "99", "--out", str(tmp_path / "pr")]) == 0


@pytest.mark.parametrize("case, message", [
    ("empty", r"folder '.*empty' holds no image"),
    ("same name", r"folders '.*a/real' and '.*b/real' have the same name 'real'"),
    ("missing", r"folder '.*missing' is not a folder of images"),
])
def test_bad_folders_are_refused_before_any_work_naming_them(tmp_path, capsys, case, message):
    if case == "empty":
        (tmp_path / "empty").mkdir()
        given = [str(tmp_path / "empty")]
    elif case == "same name":
        for parent in "ab":
            (tmp_path / parent).mkdir()
            (tmp_path / parent / "real").symlink_to(EXAMPLES / "real")
        given = [str(tmp_path / "a" / "real"), str(tmp_path / "b" / "real")]
    else:
        given = [str(tmp_path / "missing")]
    with pytest.raises(SystemExit) as stop:
        embed.main([*given, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and re.search(message, err), err
    assert not (tmp_path / "out").exists()
