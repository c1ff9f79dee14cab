"""lib.crel.images: rho's known answers, its differentiable path against the image path, the guarantee on an image
LGM's latent, the pipeline's invariants on a synthetic label-to-image set, and the reversal table's logic."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from lib.crel import experiment as ex
from lib.crel import images as im
from lib.crel.embeddings import calibrated_crel
from lib.linalg import PCA
from lib.run import Run

SMALL = im.ImageSettings(family=im.fam.Family(resolution=8, n=600), folds=(250, 150, 100, 100), pca_dim=12,
                         latent_dim=2, epochs=15, prototype_per_class=5, pgd_starts=4, pgd_steps=3,
                         shown_per_class=1)


def _synthetic_images(n: int, seed: int = 0, size: int = 8) -> dict:
    """Class c: a class-specific colour field plus noise, uint8 (n, size, size, 3); labels 0..9 in turn."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % 10
    base = np.random.default_rng(99).uniform(40, 215, (10, size, size, 3))
    images = base[labels] + rng.normal(0, 25, (n, size, size, 3))
    return {"images": np.clip(images, 0, 255).round().astype(np.uint8), "labels": labels}


def test_rho_is_one_for_an_image_against_its_own_feature_and_the_pixel_path_matches(data_root):
    data = _synthetic_images(10)
    probe = im.Similarity(20, np.ones((10, 64)), resolution=8)
    own = probe.features_of_images(data["images"])
    rho = im.Similarity(20, own, resolution=8)  # mu_c = image c's own feature
    assert rho.of_images(data["images"], np.arange(10)) == pytest.approx(np.ones(10), abs=1e-5)
    assert rho.of_images(data["images"], (np.arange(10) + 1) % 10).max() < 1 - 1e-3
    pixels = torch.as_tensor(data["images"].reshape(10, -1) / 255.0, dtype=torch.float32)
    smooth = rho.of_pixels(pixels, rho.prototypes).numpy()  # no rounding of the upsampled image
    assert smooth == pytest.approx(np.ones(10), abs=0.02)
    identity = PCA.fit(pixels.double().numpy(), None)  # every coordinate: the metric of codes is that of pixels
    codes = torch.as_tensor(identity.transform(pixels.double().numpy()), dtype=torch.float32)
    assert rho.metric(identity)(codes, rho.prototypes).numpy() == pytest.approx(smooth, abs=1e-5)


def test_the_guarantee_holds_on_an_image_lgms_latent(data_root):
    """Split-conformal coverage of the CVAE codes of images over 200 re-splits of pooled calibration and test scores
    (spec §5): the mean lies in [1 - alpha, 1 - alpha + 1 / (n_cal + 1)] up to 3 standard errors."""
    data = _synthetic_images(1600, seed=1)
    y = data["images"].reshape(1600, -1) / 255.0
    x = np.eye(10)[data["labels"]]
    pca = PCA.fit(y[:400], 12)
    pairs = [(x[a:b], pca.transform(y[a:b])) for a, b in ((0, 400), (400, 1000), (1000, 1600))]
    model = calibrated_crel(*pairs[:2], pairs[2], replace(SMALL, epochs=60).model_settings())
    scores = model.scores(*pairs[2])
    assert model.info["pre_calibration_coverage"] < 0.9  # gamma > 0: the upper bound applies
    res = ex.resplit_coverage(scores, 200, 0.1, 200, seed=0)
    assert res["lower"] - 3 * res["se"] <= res["mean"] <= res["upper"] + 3 * res["se"]


def test_the_pipeline_on_a_synthetic_label_to_image_set(data_root, monkeypatch):
    data = _synthetic_images(600, seed=2)
    probe = im.Similarity(20, np.ones((10, 64)), resolution=8)
    feats = probe.features_of_images(data["images"])
    protos = np.stack([feats[data["labels"] == c].mean(0) for c in range(10)])
    monkeypatch.setattr(im, "similarity", lambda s: im.Similarity(20, protos, resolution=8))
    r = im._generator_crel(SMALL, data)
    assert r["mean_rho"] == pytest.approx(float(r["rho"].mean()), abs=1e-6)
    assert np.array_equal(r["crel_per_class"], r["start_scores"].min(1))  # the best of the starts
    assert (r["crel_per_class"] <= r["rho_per_class"]).all()  # the worst case of a set holding 90 % of the codes
    assert r["worst_images"].shape == (10, 8, 8, 3) and r["typical_images"].shape == (10, 8, 8, 3)
    assert 0.0 <= r["tail_sanity"] <= 1.0 and 0.7 <= r["coverage_z"] <= 1.0 and r["gamma"] >= 0
    assert 0.5 < r["pca_variance"] <= 1.0 and r["dead_dimensions"] == []


def test_the_table_ranks_generators_and_finds_a_reversal():
    res = {name: {"mean_rho": m, "crel": c, "coverage_z": cov, "spread": 0.01, "q_alpha": np.full(10, q),
                  "gamma": 1.0, "recon_rho": 0.5, "tail_sanity": 1.0, "dead_dimensions": [],
                  "rho": np.array([m - q, m + q])}
           for name, m, c, q, cov in (("a", 0.9, 0.3, 0.2, 0.88), ("b", 0.8, 0.5, 0.4, 0.91),
                                      ("c", 0.7, 0.05, 0.1, 0.9), (im.REAL, 0.95, 0.6, 0.5, 0.93))}
    table = im.crel_table(res)
    assert table.loc["a", "rank (ρ)"] == 1 and table.loc["b", "rank (CReL)"] == 1
    assert table.loc["c", "rank (ρ)"] == table.loc["c", "rank (CReL)"] == 3
    assert table.loc["b", "sd of ρ"] == pytest.approx(0.4)
    assert pd.isna(table.loc[im.REAL, "rank (ρ)"])  # the reference is not ranked
    facts = im.reversal_facts(table)
    assert facts["best_mean"] == "a" and facts["best_crel"] == "b" and facts["worst_crel"] == "c"
    assert facts["reversed_pairs"] == [("a", "b")] and facts["n_pairs"] == 3
    assert facts["tau"] == pytest.approx(1 / 3)
    section = im.section_facts(res, table)
    assert section["reasons"] == {("a", "b"): "samples"}  # a's own samples have the lower alpha-quantile
    assert section["concentration"] == {("a", "b"): False}  # b, the CReL winner, has the wider rho (sd 0.4 > 0.2)
    assert section["tail_reversed_pairs"] == [("a", "b")] and section["coverage"] == (0.88, 0.91)
    assert section["largest_gap"] == "c" and section["smallest_gap"] == "b"  # mean - CReL: 0.65 and 0.3
    assert section["real"]["crel"] == 0.6 and section["collapsed"] == []
    assert np.isnan(section["unguided_ranges"]["mean ρ"])  # no set here is labelled w1


def test_bad_settings_are_refused_by_name():
    with pytest.raises(ValueError, match="images.folds"):
        ex.resolve_config("smoke", images={"folds": [200, 60, 50, 40]})
    with pytest.raises(ValueError, match="images.folds\\[3\\]"):
        ex.resolve_config("smoke", images={"folds": [100, 60, 50, 5]})
    with pytest.raises(ValueError, match="images.rho_depth"):
        ex.resolve_config("smoke", images={"rho_depth": 18})
    with pytest.raises(ValueError, match="IMAGE_GENERATORS|images.generators"):
        ex.resolve_config("smoke", images={"generators": [[4, 1.0, 1.0]]})


def _resolved(**images):
    """The smoke preset with these image settings, resolved as notebook 02's configuration cell resolves it (errors
    name the notebook's parameters)."""
    from lib.params import parameter_names, setting_parameters

    with parameter_names(setting_parameters(ex.PRESETS["smoke"])):
        return ex.resolve_config("smoke", images=images)


def test_generators_that_train_one_budget_are_refused_and_a_rounded_budget_is_labelled_as_trained():
    """At smoke (4 epochs) fractions 0.5 and 0.52 both train 2 epochs (two rows, one set), and
    0.01 was labelled "1 %" and trained 1 epoch (25 %)."""
    with pytest.raises(ValueError, match=r"IMAGE_GENERATORS: \[8, 0\.5, 1\] and \[8, 0\.52, 1\] are one set, "
                                         r"'class c8 50% w1'"):
        _resolved(generators=[[8, 0.5, 1], [8, 0.52, 1]])
    with pytest.raises(ValueError, match=r"IMAGE_GENERATORS fraction=0\.01 is 0\.04 of the 4 training epochs"):
        _resolved(generators=[[8, 0.01, 1.0]])
    config = _resolved(generators=[[8, 0.3, 1.0], [8, 1.0, 1.0]])
    assert [spec.label for spec in config.images.specs()] == ["class c8 25% w1", "class c8 100% w1"]


def test_generators_must_be_a_nonempty_list_of_triples():
    """[] ran every earlier section, then died in section 5 ("argmax of an empty sequence");
    [[32, 1.0]] died with "not enough values to unpack"."""
    with pytest.raises(ValueError, match=r"IMAGE_GENERATORS=(\[\]|\(\)) must hold at least 1"):
        _resolved(generators=[])
    with pytest.raises(ValueError, match=r"IMAGE_GENERATORS entry \[32, 1\.0\] must be \[width, budget fraction, "
                                         r"guidance\]"):
        _resolved(generators=[[32, 1.0]])


def test_label_to_image_asks_the_budgets_in_increasing_order(monkeypatch):
    """So that each budget continues the run's checkpoint (lib.diffusion.family.trained_weights) instead of training
    again from the start; the table keeps the parameter's order."""
    asked = []
    monkeypatch.setattr(im, "generator_crel", lambda s, spec, run=None: asked.append(spec) or {"spec": spec})
    s = replace(SMALL, family=im.fam.FAMILIES["smoke"], include_real=False,
                generators=((8, 1.0, 1.0), (8, 0.5, 1.0), (8, 1.0, 2.0), (8, 0.25, 1.0)))
    out = im.label_to_image(s, Run())
    assert [spec.fraction for spec in asked] == [0.25, 0.5, 1.0, 1.0]
    assert list(out) == ["class c8 100% w1", "class c8 50% w1", "class c8 100% w2", "class c8 25% w1"]


def test_only_a_fractional_sets_entry_is_rekeyed_for_the_snapshot_fix():
    """A CReL entry of a set before the full budget may have been measured on the full budget's samples (the
    snapshot bug): its key carries the fix; a full-budget set's key, and so the stored layer's entry, is unchanged."""
    from types import SimpleNamespace

    keys = {}
    run = SimpleNamespace(stage=lambda stage, label, key, compute: keys.setdefault(label, key), device="cpu",
                          progress=False)
    s = replace(SMALL, family=im.fam.FAMILIES["smoke"], generators=((8, 1.0, 1.0), (8, 0.5, 1.0)))
    for spec in s.specs():
        im.generator_crel(s, spec, run)
    assert keys["l2i-class-c8-50pct-w1"]["snapshot"] == 2 and set(keys["l2i-class-c8-100pct-w1"]) == {"v", "settings",
                                                                                                         "set"}
