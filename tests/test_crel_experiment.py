"""Notebook 02's experiment settings: bad values named, repeated list entries and sizes beyond memory refused."""

from __future__ import annotations

import pytest

from lib.crel import experiment as ex


@pytest.mark.parametrize("overrides, message", [
    ({"alphas": [0.1, 1.2]}, r"alphas entry=1.2 must lie in \(0.0, 1.0\)"),
    ({"alphas": [0.1, 0.02, 0.1]}, r"alphas=\(0.1, 0.02, 0.1\) holds duplicates \(0.1 more than once\)"),
    ({"table_lgms": ["flow", "cvae", "flow"]}, r"table_lgms=.* holds duplicates \('flow' more than once\)"),
    ({"table_lgms": ["cvae"]}, r"lgm='flow' must be one of table_lgms=\('cvae',\)"),
    ({"tau_dir": float("inf")}, "tau_dir=inf must be a finite real number"),
    ({"kl_mult": float("inf")}, "kl_mult=inf must be a finite real number"),
    ({"captions": {"latent_dim": 0}}, "captions.latent_dim=0 must be >= 1"),
    ({"captions": {"num_images": 10}}, "captions.num_images=10 must be >= 50"),
    ({"n_directions": 10**9}, r"GB of memory.*the DQR's quantiles of a fold in every direction.*"
                              r"n_directions=1000000000 and folds=\(1500, 1500, 500, 500\)"),
    ({"captions": {"samples_per_image": 10**8}}, r"GB of memory.*captions.samples_per_image=100000000"),
    ({"captions": {"pgd_starts": 10**9}}, r"GB of memory.*the captions' PGD starts.*captions.pgd_starts=1000000000"),
    ({"captions": {"lgm": "cvae", "latent_dim": 10**9}}, r"GB of memory.*captions.latent_dim=1000000000"),
])
def test_bad_settings_are_refused_naming_them(overrides, message):
    with pytest.raises(ValueError, match=message):
        ex.resolve_config("smoke", **overrides)


def test_memory_estimate_of_the_presets_is_well_under_a_gigabyte():
    totals = {name: sum(t.nbytes for t in ex.memory_estimate(ex.PRESETS[name])) for name in ex.PRESETS}
    assert totals["smoke"] < totals["cpu"] < totals["paper"] < 1e9
    for name in ex.PRESETS:
        assert ex.resolve_config(name).preset == name
