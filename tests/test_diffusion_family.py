"""lib.diffusion.family: the resolution maps, the presets both notebooks share, the core database against notebook
04's, the labels of a class-conditional set, and one trained-and-sampled set read back from the cache."""

from __future__ import annotations

import numpy as np
import pytest

from lib.diffusion import family as fam
from lib.irs import experiment as ie
from lib.irs import generators as gen


def test_downsample_averages_blocks_and_upsampling_keeps_a_flat_image_flat():
    images = np.zeros((1, 32, 32, 3), np.uint8)
    images[0, :2, :2, 0] = [[0, 100], [200, 101]]  # mean 100.25 -> 100
    low = fam.downsample(images, 16)
    assert low.shape == (1, 16, 16, 3) and low[0, 0, 0, 0] == 100 and low[0, 1, 1, 0] == 0
    flat = np.full((2, 16, 16, 3), 77, np.uint8)
    assert np.array_equal(fam.for_extractor(flat), np.full((2, 32, 32, 3), 77, np.uint8))
    with pytest.raises(ValueError, match="whole blocks"):
        fam.downsample(images, 12)


@pytest.mark.parametrize("preset", sorted(ie.PRESETS))
def test_notebook_04_and_the_core_name_the_same_family(preset):
    """Notebook 02 reads notebook 04's cache entries only while both build the same Family for a preset."""
    assert gen.family_of(ie.PRESETS[preset]) == fam.FAMILIES[preset]


def test_the_core_database_is_notebook_04s_and_a_class_set_knows_its_labels(data_root):
    config = ie.PRESETS["smoke"]
    low = gen.low_res_sets(config, ie.cifar_sets(config))
    core = fam.database(fam.FAMILIES["smoke"])
    assert np.array_equal(core["train"], low["train"]) and np.array_equal(core["train_labels"], low["train_labels"])
    assert np.array_equal(core["train_up"], low["train_up"])
    family, spec = fam.FAMILIES["smoke"], fam.GeneratedSet("class", 8, 1.0, 2.0)
    labels = fam.set_labels(family, core, spec)
    rows = fam.source_rows(family, len(core["train"]), False)
    assert len(labels) == family.n and np.array_equal(labels, core["train_labels"][rows])
    assert np.bincount(labels, minlength=10).min() > 0
    with pytest.raises(ValueError, match="not a class-conditional set"):
        fam.set_labels(family, core, fam.GeneratedSet("unconditional", 8))


def test_a_class_set_is_trained_sampled_and_then_read_from_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path))
    rng = np.random.default_rng(0)
    low = {"train": rng.integers(0, 256, (20, 8, 8, 3), dtype=np.uint8), "train_labels": np.repeat(np.arange(10), 2)}
    family = fam.Family(resolution=8, train_per_class=2, epochs=2, batch=4, steps=2, n=6)
    spec = fam.GeneratedSet("class", 8, 0.5, 2.0)
    out = fam.generated_images(family, low, spec)
    assert out["images"].shape == (6, 8, 8, 3) and out["images"].dtype == np.uint8 and (out["sources"] == -1).all()
    assert fam.set_path(family, low, spec).exists()
    assert fam.weights_path(family, low, "class", 8, fam.epochs_at(family, 0.5)).exists()

    def refuse(*args, **kwargs):
        raise AssertionError("trained again")

    monkeypatch.setattr(fam, "train_denoiser", refuse)
    monkeypatch.setattr(fam, "sample", refuse)
    again = fam.generated_images(family, low, spec)
    assert np.array_equal(again["images"], out["images"])
