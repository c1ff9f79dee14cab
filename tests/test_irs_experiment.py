"""Notebook 04's experiment module: validation, the controlled draws, the toy generators, FID on features."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from notebook_runner import TABLE_WIDTH_PX, table_widths_px

from lib.cache import load_torch
from lib.irs import experiment as ie
from lib.paths import PROJECT_ROOT


@pytest.mark.parametrize("overrides, message", [
    ({"extractors": ["pixels", "vgg"]}, "extractors entry='vgg'"),
    ({"fractions": [0.5, 1.5]}, "fractions entry=1.5"),
    ({"fractions": [0.0, 0.5]}, "fractions entry=0.0"),
    ({"fractions": [0.05, 0.5]}, "fractions entry 0.05 keeps floor\\(10 f\\) = 0 classes"),
    ({"family": {"n": 1}}, "family.n=1"),
    ({"n_fixed": 1}, "n_fixed=1"),
    ({"gap_ns": [1, 100]}, "gap_ns entry=1"),
    ({"gap_ns": [100, 100]}, r"gap_ns=\(100, 100\) holds duplicates \(100 more than once\)"),
    ({"mem_noise": float("inf")}, "mem_noise=inf must be a finite real number"),
    ({"e2_reps": 10**12}, r"GB of memory.*the class-fraction rows.*e2_reps=1000000000000"),
    ({"pool_split": "mixed"}, "pool_split='mixed'"),
    ({"alpha_e": 0.6}, "alpha_e=0.6"),
    ({"typo": 1}, "unknown parameter"),
])
def test_bad_parameters_fail_fast_with_the_parameter_name(overrides, message):
    with pytest.raises(ValueError, match=message):
        ie.resolve_config("smoke", **overrides)


def test_every_preset_validates_and_the_paper_preset_is_all_of_cifar10():
    for name in ("smoke", "cpu", "paper"):
        assert ie.resolve_config(name).preset == name
    paper = ie.resolve_config("paper")
    assert paper.train_per_class == 5000 and paper.pool_per_class == 500 and len(paper.extractors) == 8
    with pytest.raises(ValueError, match="extractors entry='swav' is not allowed"):  # needs folders: lib.irs.folders
        ie.resolve_config("smoke", extractors=["swav"])


def test_memory_estimate_grows_with_the_sizes_and_the_presets_fit_in_a_few_gigabytes():
    totals = {name: sum(t.nbytes for t in ie.memory_estimate(ie.PRESETS[name])) for name in ie.PRESETS}
    assert totals["smoke"] < totals["cpu"] < totals["paper"] < 4e9  # all of CIFAR-10, eight extractors: ~2.6 GB
    big = ie.memory_estimate(replace(ie.PRESETS["smoke"], extractors=("efficientnet_lite0",), efficientnet_size=448))
    assert max(big, key=lambda t: t.nbytes).grows_with == {"efficientnet_size": 448}  # 100 x 4 x 60 x 448^2: 4.8 GB


def test_class_fraction_draws_have_equal_n_and_only_the_chosen_classes():
    m = 30
    labels = np.repeat(np.arange(10), m)
    ref_idx, syn_idx = np.arange(300), np.arange(300, 600)
    rng = np.random.default_rng(0)
    syn_class = dict(zip(syn_idx, labels))
    for f, regime, n_expected in [(0.3, "b", 90), (0.3, "a", 40), (1.0, "b", 300)]:
        fake, real = ie.class_fraction_draw(f, regime, ref_idx=ref_idx, ref_labels=labels, syn_idx=syn_idx,
                                            syn_labels=labels, pool_per_class=m, n_fixed=40, pool_split="disjoint",
                                            rng=rng)
        assert len(fake) == len(real) == n_expected
        assert len({syn_class[i] for i in fake}) == math.floor(10 * f) if regime == "b" else True
        assert set(fake) <= set(syn_idx) and set(real) <= set(ref_idx)
        assert len(set(fake)) == len(fake)  # without replacement


@pytest.mark.parametrize("pool_split", ["disjoint", "shared"])
def test_the_explorers_n_cap_is_the_size_a_draw_can_reach(pool_split):
    m = 30
    labels = np.repeat(np.arange(10), m)
    for f in (0.1, 0.25, 0.5, 0.7, 1.0):
        cap = ie.class_fraction_pool_size(f, m, pool_split)
        fake, _ = ie.class_fraction_draw(f, "a", ref_idx=np.arange(300), ref_labels=labels,
                                         syn_idx=np.arange(300, 600), syn_labels=labels, pool_per_class=m,
                                         n_fixed=10_000, pool_split=pool_split, rng=np.random.default_rng(0))
        assert len(fake) == cap  # a larger n is silently cut to the cap, which the explorer shows


def test_inputs_are_checked_before_any_work(tmp_path, monkeypatch):
    names = ie.check_inputs(ie.resolve_config("smoke"))
    assert names == ["cifar10/cifar10-jpeg.zip", "cifar10/test_labels.npy",
                     "models/cifar10-resnet/resnet20-12fca82f.th"]
    monkeypatch.setenv("WORKBOOK_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="cifar10/cifar10-jpeg.zip is missing"):
        ie.check_inputs(ie.resolve_config("smoke"))
    with pytest.raises(FileNotFoundError, match="cifar-10-python.tar.gz is missing"):
        ie.check_inputs(ie.resolve_config("smoke", cifar_source="python", extractors=["pixels"]))


def test_an_empty_gap_ns_is_refused():
    with pytest.raises(ValueError, match="gap_ns"):
        ie.resolve_config("smoke", gap_ns=[])


def test_memorised_copies_stay_near_their_sources():
    train = np.random.default_rng(1).integers(0, 256, (200, 32, 32, 3), dtype=np.uint8)
    out = ie.memorised_copies(train, 0.25, 500, 0.02, seed=0)
    assert np.unique(out["sources"]).size <= 50
    diff = out["images"].astype(float) / 255 - train[out["sources"]] / 255
    assert 0.015 < diff.std() < 0.025  # sigma = 0.02 (less a little clipping, plus rounding)


def test_pca_gaussian_samples_follow_the_class_statistics():
    rng = np.random.default_rng(2)
    base = rng.integers(40, 200, (10, 1, 32, 32, 3))
    train = np.clip(base + rng.normal(0, 10, (10, 60, 32, 32, 3)), 0, 255).astype(np.uint8).reshape(600, 32, 32, 3)
    labels = np.repeat(np.arange(10), 60)
    models = ie.fit_pca_gaussians(train, labels, dims=5)
    hot = ie.sample_pca_gaussians(models, 400, seed=0)
    cold = ie.sample_pca_gaussians(models, 400, seed=0, temperature=0.5)
    assert hot.shape == (400, 32, 32, 3) and hot.dtype == np.uint8
    assert cold.astype(float).std(axis=0).mean() < hot.astype(float).std(axis=0).mean()
    only = ie.sample_pca_gaussians(models, 50, seed=0, classes=np.array([3]))
    assert np.abs(only.mean(0) - base[3, 0]).mean() < 5  # close to the class-3 mean image


def test_simulated_memoriser_is_the_coupon_collector_model():
    r = ie.simulate_estimator(5000, 1500, 2000, 60, seed=1)
    assert abs(r["bias"]) < 3 * r["sd"] / math.sqrt(60) + 1e-3
    assert r["coverage"] >= 0.8


def test_the_toy_generator_table_is_shown_as_two_tables_that_fit_the_page_with_every_value():
    """The `cpu` preset's stored toy-generator rows (6 extractors x 8 generators; the longest names and the widest
    values, FID up to 1,933) as notebook 04 shows them: each of the two tables fits TABLE_WIDTH_PX where the one
    16-column table did not, and every value of the rows is in them, rounded as the docstring says."""
    toy = pd.DataFrame([row for path in sorted((PROJECT_ROOT / "results" / "04" / "cpu").glob("toy-*.pt"))
                        for row in load_torch(path)])
    assert len(toy) == 48 and table_widths_px(toy.round(3).to_html())[0] > TABLE_WIDTH_PX  # the check can fail
    config = ie.resolve_config("cpu")
    tables = ie.toy_tables(toy, config)
    assert [title.split(" ")[0] for title in tables] == ["IRS", "FID"] and "90 % interval" in next(iter(tables))
    for title, table in tables.items():
        assert table_widths_px(table.to_html())[0] <= TABLE_WIDTH_PX, f"{title}: wider than the page"
    irs_table, knn = tables.values()
    row = toy.iloc[-1]
    shown = {**irs_table.loc[(row.extractor, row.generator)], **knn.loc[(row.extractor, row.generator)]}
    assert shown["IRS_∞ [interval]"] == f"{row.irs_inf:.3f} [{row.irs_inf_lower:.3f}, {row.irs_inf_upper:.3f}]"
    assert shown["IRS_∞,a [interval]"] == f"{row.irs_adj:.3f} [{row.irs_adj_lower:.3f}, {row.irs_adj_upper:.3f}]"
    assert (shown["n"], shown["IRS_α"], shown["IRS_∞ of real"]) == (row.n, f"{row.irs_alpha:.3f}",
                                                                     f"{row.irs_inf_real:.3f}")
    assert [shown[c] for c in ("precision", "recall", "density", "coverage")] == [
        f"{row[c]:.3f}" for c in ("precision", "recall", "density", "coverage")]
    assert (row.fid, shown["FID"]) == (pytest.approx(29.967, abs=1e-3), "30.0")  # 3 significant digits,
    assert knn.loc[("efficientnet_lite0", "pca-T0.5"), "FID"] == "1933"  # and no exponent (1933.03)
    assert irs_table.index.equals(knn.index) and len(irs_table) == len(toy)


def test_paper_scale_folders_run_end_to_end(tmp_path, monkeypatch, capsys):
    """The paper-scale command on three tiny image folders with the pixel extractor (SwAV is not here)."""
    from PIL import Image

    from lib.irs import folders
    from lib.irs.folders import main

    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "cache"))
    rng = np.random.default_rng(5)
    train = rng.integers(0, 256, (60, 40, 48, 3), dtype=np.uint8)  # not square: resized and centre-cropped
    dirs = {}
    for name, images in {"train": train, "real": train[rng.permutation(60)[:30]],
                         "fake": np.repeat(train[:5], 8, axis=0)}.items():
        dirs[name] = tmp_path / name
        (dirs[name] / "sub").mkdir(parents=True)
        for i, img in enumerate(images):
            Image.fromarray(img).save(dirs[name] / "sub" / f"{i:03d}.png")
    settings = folders.FolderSettings(str(dirs["train"]), str(dirs["real"]), str(dirs["fake"]), extractor="pixels",
                                      image_size=32)
    result = folders.folder_score(settings)
    assert result["n"] == 30 and result["real"]["k_distinct"] == 30  # real images retrieve themselves
    assert result["fake"]["k_distinct"] == 5  # copies of 5 training images
    with pytest.raises(ValueError, match="no images found"):
        next(folders.iter_image_folder(str(tmp_path / "cache"), 32))
    # the same as a command
    main(["--train", str(dirs["train"]), "--real", str(dirs["real"]), "--fake", str(dirs["fake"]),
          "--extractor", "pixels", "--image-size", "32"])
    printed = json.loads(capsys.readouterr().out)
    assert printed["n"] == 30 and printed["fake"]["k_distinct"] == 5 and printed["real"]["k_distinct"] == 30
    with pytest.raises(SystemExit):  # refused as a bad argument (usage, the message, exit status 2)
        main(["--train", str(dirs["train"]), "--real", str(dirs["real"]), "--fake", str(tmp_path / "missing")])
    assert re.search(r"fake_dir='.*missing' is not a folder", capsys.readouterr().err)


@pytest.mark.parametrize("fractions", [[0.25, 0.55, 0.95], [0.5, 0.33], [0.15]])
def test_fractions_that_are_not_multiples_of_a_tenth_are_refused_naming_fractions(fractions):
    """A draw keeps floor(10 f) whole classes: FRACTIONS [0.25, 0.55, 0.95] ran 0.2 / 0.5 / 0.9 labelled as
    0.25 / 0.55 / 0.95 (rows, fit, axis and reading)."""
    from lib.params import configure

    parameters = {"PRESET": "smoke", "FRACTIONS": fractions, "__annotations__": {"PRESET": str, "FRACTIONS": list}}
    with pytest.raises(ValueError, match=r"^FRACTIONS entry 0\.\d+ is not a multiple of 1/10: a draw keeps whole "
                                         r"classes, so it would keep \d of 10"):
        configure(ie.resolve_config, ie.PRESETS, parameters)  # as the configuration cell resolves it
    assert ie.resolve_config("smoke", fractions=[0.2, 0.3, 0.7, 1.0]).fractions == (0.2, 0.3, 0.7, 1.0)
