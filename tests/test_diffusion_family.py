"""lib.diffusion.family: the resolution maps, the presets both notebooks share, the core database against notebook
04's, the labels of a class-conditional set, and one trained-and-sampled set read back from the cache."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lib import train
from lib.diffusion import family as fam
from lib.irs import experiment as ie
from lib.irs import generators as gen
from lib.run import Run


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
def test_notebooks_04_and_02_hold_the_same_family_for_a_preset(preset):
    """Notebook 02 reads notebook 04's cache entries only while both hold the same Family for a preset: each
    takes it from FAMILIES, and SEED and CIFAR_SOURCE set notebook 04's family with its own settings."""
    from lib.crel import experiment as crel

    assert ie.PRESETS[preset].family == crel.PRESETS[preset].images.family == fam.FAMILIES[preset]


def test_one_parameter_sets_the_notebooks_setting_and_the_familys():
    """SEED sets both `seed` and `family.seed` (lib.params.setting_parameters walks into the family), as
    `resolve_config(seed=...)` does; a family given another seed is refused, naming both."""
    from lib.params import setting_parameters

    names = setting_parameters(ie.PRESETS["smoke"])
    assert names["seed"] == names["family.seed"] == "SEED" and names["family.steps"] == "GEN_STEPS"
    assert names["cifar_source"] == names["family.cifar_source"] == "CIFAR_SOURCE"
    with pytest.raises(ValueError, match=r"seed=3 and the generators' family.seed=0"):
        ie.resolve_config("smoke", seed=3, family={"seed": 0})
    assert ie.resolve_config("smoke", seed=3).family.seed == 3
    assert ie.resolve_config("smoke", cifar_source="python").family.cifar_source == "python"


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
    out = fam.generated_images(family, low, spec, run=Run())
    assert out["images"].shape == (6, 8, 8, 3) and out["images"].dtype == np.uint8 and (out["sources"] == -1).all()
    assert fam.set_path(family, low, spec).exists()
    assert fam.weights_path(family, low, "class", 8, fam.epochs_at(family, 0.5)).exists()

    def refuse(*args, **kwargs):
        raise AssertionError("trained again")

    monkeypatch.setattr(fam, "train_denoiser", refuse)
    monkeypatch.setattr(fam, "sample", refuse)
    again = fam.generated_images(family, low, spec, run=Run())
    assert np.array_equal(again["images"], out["images"])


def _random_database(family: fam.Family, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    n = fam.NUM_CLASSES * family.train_per_class
    size = family.resolution
    return {"train": rng.integers(0, 256, (n, size, size, 3), dtype=np.uint8),
            "train_labels": np.repeat(np.arange(fam.NUM_CLASSES), family.train_per_class)}


def _equal(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(v, b[k]) for k, v in a.items())


def test_a_snapshot_asked_after_the_full_budget_is_the_run_at_its_epoch(monkeypatch, tmp_path):
    """With an empty cache, 100 % first, then 50 % resumed the checkpoint at its last epoch and
    returned the 100 % weights as the 50 % ones. In either order the 50 % weights are the single run's EMA at
    its epoch 2 of 4 (smoke sizes, random images)."""
    family = fam.FAMILIES["smoke"]
    low = _random_database(family)
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "full-first"))
    full = fam.trained_weights(family, low, "class", 8, 1.0, run=Run())
    late = fam.trained_weights(family, low, "class", 8, 0.5, run=Run())
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "half-first"))
    early = fam.trained_weights(family, low, "class", 8, 0.5, run=Run())
    continued = fam.trained_weights(family, low, "class", 8, 1.0, run=Run())
    assert _equal(late["ema"], early["ema"]) and len(late["history"]) == 2
    assert not _equal(late["ema"], full["ema"])
    assert _equal(continued["ema"], full["ema"])  # the 100 % run continues the 50 % one's checkpoint
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "full-first"))
    assert train.checkpoint_epoch(fam.checkpoint_path(family, low, "class", 8)) == 4  # the run's, untouched
    assert not fam.checkpoint_path(family, low, "class", 8, epochs=2).exists()  # the snapshot's own, removed


def test_a_budget_is_a_whole_number_of_epochs_and_a_set_is_labelled_with_it(tmp_path, monkeypatch):
    """A requested fraction is rounded to whole epochs, and the set is labelled with the fraction
    it trains (0.5 of 25 epochs trains 12: "48%"), never with the request; under one epoch is refused."""
    family, smoke = fam.Family(epochs=25), fam.FAMILIES["smoke"]
    assert fam.budget_fraction(family, 0.5) == 12 / 25 and fam.budget_fraction(family, 0.52) == 13 / 25
    assert fam.GeneratedSet("class", 32, fam.budget_fraction(family, 0.5)).label == "class c32 48% w1"
    assert fam.budget_fraction(family, 1.0) == 1.0 and fam.epochs_at(family, 1.0) == 25
    assert fam.budget_fraction(smoke, 0.3) == 0.25 and fam.epochs_at(smoke, 0.25) == 1
    with pytest.raises(ValueError, match=r"IMAGE_GENERATORS fraction=0\.01 is 0\.04 of the 4 training epochs"):
        fam.budget_fraction(smoke, 0.01, "IMAGE_GENERATORS fraction")
    with pytest.raises(ValueError, match=r"fraction=0\.5 is 12\.5 of the 25 training epochs.*budget_fraction"):
        fam.epochs_at(family, 0.5)  # a set asked at a fraction the run would round
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path))
    with pytest.raises(ValueError, match=r"fraction=0\.5 is 12\.5"):
        fam.set_path(family, _random_database(smoke), fam.GeneratedSet("class", 8, 0.5))
    assert fam.GeneratedSet("class", 32, 101 / 200).label == "class c32 50.5% w1"  # not rounded to "50%" or "51%"
    assert [fam.GeneratedSet("diadm", 32, f).label for f in (1.0, 0.5, 0.25)] == [
        "diadm c32 100%", "diadm c32 50%", "diadm c32 25%"]  # the labels (and file names) of exact budgets stay


def test_a_snapshot_entry_that_holds_later_weights_is_trained_again(monkeypatch, tmp_path):
    """The entries the bug wrote (…-e2 byte-identical to …-e4) keep their path, so they are told by
    their history (4 epochs, not 2) and trained again; the sets sampled from them are re-keyed (fractional sets
    only: a full-budget set's key is unchanged)."""
    family = fam.Family(resolution=8, train_per_class=2, epochs=4, batch=4, steps=2, n=6)
    low = _random_database(family)
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "damaged"))
    fam.trained_weights(family, low, "unconditional", 8, 1.0, run=Run())
    fam.weights_path(family, low, "unconditional", 8, 2).write_bytes(
        fam.weights_path(family, low, "unconditional", 8, 4).read_bytes())
    healed = fam.trained_weights(family, low, "unconditional", 8, 0.5, run=Run())
    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path / "fresh"))
    assert len(healed["history"]) == 2
    assert _equal(healed["ema"], fam.trained_weights(family, low, "unconditional", 8, 0.5, run=Run())["ema"])
    keys = {f: fam.set_key(family, low, fam.GeneratedSet("class", 8, f), None) for f in (0.5, 1.0)}
    assert keys[0.5]["snapshot"] == 2 and "snapshot" not in keys[1.0]
