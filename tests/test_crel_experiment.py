"""Notebook 02's experiment settings (bad values named, repeated list entries and sizes beyond memory refused) and its
synthetic table over seeds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib.crel import experiment as ex
from lib.crel import paper


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


# What each parameter of notebook 02 sets (the hand-written NOTEBOOK_PARAMETERS it replaced): the nested captions'
# and images' own folds, seed, n_directions (and the images' lgm and generator family) are set by none of them
PARAMETER_SETTINGS = {name: name.upper() for name in (
    "alphas", "num_seeds", "seed", "n_directions", "tau_dir", "folds", "inflation", "calibration_score",
    "dqr_baseline", "include_pcp", "lgm", "table_lgms", "cvae_restarts")} | {
    "captions.num_images": "CAPTION_IMAGES", "captions.latent_dim": "CAPTION_LATENT_DIM",
    "captions.samples_per_image": "SAMPLES_PER_IMAGE", "captions.pgd_starts": "PGD_STARTS",
    "captions.pgd_steps": "PGD_STEPS", "captions.lgm": "LGM", "images.generators": "IMAGE_GENERATORS",
    "images.pgd_starts": "PGD_STARTS", "images.pgd_steps": "PGD_STEPS"}


@pytest.mark.parametrize("preset", sorted(ex.PRESETS))
def test_each_notebook_parameter_sets_the_settings_its_field_metadata_names(preset):
    from notebook_runner import NOTEBOOKS, declared_parameters

    from lib.params import configure, setting_parameters

    declared = declared_parameters(NOTEBOOKS / "02_crel_conformal_reliability.ipynb")
    assert setting_parameters(ex.PRESETS[preset], declared) == PARAMETER_SETTINGS
    namespace = {"PRESET": preset, "SEED": 7, "N_DIRECTIONS": 12, "LGM": "cvae", "PGD_STEPS": 3, "FOLDS": None,
                 "__annotations__": dict.fromkeys(declared)}
    config = configure(ex.resolve_config, ex.PRESETS, namespace)
    base = ex.PRESETS[preset]
    assert (config.seed, config.n_directions, config.lgm, config.captions.lgm) == (7, 12, "cvae", "cvae")
    assert (config.captions.pgd_steps, config.images.pgd_steps, config.pgd_steps) == (3, 3, base.pgd_steps)
    assert (config.captions.seed, config.images.seed, config.images.family.seed) == (
        base.captions.seed, base.images.seed, base.images.family.seed)  # SEED is the synthetic table's alone
    assert (config.captions.n_directions, config.images.lgm, config.folds) == (
        base.captions.n_directions, base.images.lgm, base.folds)


def _table_rows() -> pd.DataFrame:
    """Rows shaped like `synthetic_table_rows`' for two seeds: CReL and Feldman per LGM, the Y-space DQR once."""
    rng = np.random.default_rng(0)
    rows = []
    for seed in (0, 1):
        for alpha in (0.1, 0.02):
            for lgm, method in (("flow", "CReL"), ("flow", "Feldman"), ("none", "DQR (Y-space)"),
                                ("cvae", "CReL"), ("cvae", "DQR (latent, uncalibrated)")):
                row = {"lgm": lgm, "method": method, "seed": seed, "alpha": alpha,
                       **{c: float("nan") for c in ex.SYNTHETIC_COLUMNS}}
                row.update(coverage_z=1 - alpha + rng.normal(0, 0.01), area=rng.uniform(80, 300))
                if method != "DQR (latent, uncalibrated)":
                    row["coverage_y"] = 1 - alpha + rng.normal(0, 0.01)
                if method == "CReL":
                    row.update(area=200.0 + seed, latent_area=3.0, gamma=0.7, pre_coverage=0.6)
                rows.append(row)
    return pd.DataFrame(rows)


@pytest.mark.parametrize("dqr_baseline", ex.DQR_BASELINES)
def test_synthetic_summary_gives_mean_and_sd_over_seeds_beside_the_papers_values(dqr_baseline):
    rows = _table_rows()
    side = ex.synthetic_summary(rows, dqr_baseline)
    assert len(side) == len(rows.drop_duplicates(["alpha", "lgm", "method"]))  # one row per (alpha, LGM, method)
    crel = side[(side["method"] == "CReL") & (side["lgm"] == "flow") & (side["alpha"] == 0.1)].iloc[0]
    assert crel["area"] == "200.5 ± 0.7" and crel["seeds"] == 2  # mean ± sd of 200 and 201 over two seeds
    assert crel["paper_coverage_z"] == paper.TABLE[("CReL", 0.1)][0]
    paired = side[side["paper_coverage_z"] != ""]["method"].unique()
    assert "DQR (Y-space)" in paired if dqr_baseline == "identity_convex" else "DQR (latent, uncalibrated)" in paired
