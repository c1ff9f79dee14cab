"""Other model families on the ring (lib.prcurves.families): the VAE's loss and the flow's density against known
answers, training and sampling reproducible per member seed, and the stage's stored entry read back."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from lib.prcurves import families as fam

TINY = fam.FamilySettings(hidden=16, latent_dim=2, transforms=2, bins=4, lr=1e-2)


def test_a_vae_member_has_the_parameters_of_its_two_mlps_and_output_scale():
    h, r = 128, 2
    encoder = (2 * h + h) + (h * h + h) + (h * 2 * r + 2 * r)
    decoder = (r * h + h) + (h * h + h) + (h * 2 + 2)
    assert fam.num_parameters("vae", fam.FamilySettings()) == encoder + decoder + 2


def test_the_vae_loss_is_the_gaussian_nll_when_the_code_is_the_prior_and_the_decoder_says_zero():
    """With the last layers zeroed, the encoder gives N(0, I) (KL 0) and the decoder 0, so the negative ELBO is
    -log N(x; 0, sigma^2 I) whatever the draw."""
    torch.manual_seed(0)
    vae = fam.RingVAE(TINY)
    for net in (vae.encoder, vae.decoder):
        torch.nn.init.zeros_(net[-1].weight)
        torch.nn.init.zeros_(net[-1].bias)
    x = torch.tensor([[0.3, -1.2], [2.0, 0.5]])
    sigma = math.exp(vae.log_sigma[0].item())
    expected = -stats.norm.logpdf(x.numpy(), scale=sigma).sum(axis=1).mean()
    assert vae.loss(x).item() == pytest.approx(expected, rel=1e-5)


def test_the_flow_is_a_density_it_integrates_to_one_over_the_plane():
    torch.manual_seed(1)
    flow = fam.RingFlow(TINY)
    grid = torch.linspace(-8, 8, 401)
    xx, yy = torch.meshgrid(grid, grid, indexing="ij")
    with torch.no_grad():
        density = flow.flow().log_prob(torch.stack([xx.ravel(), yy.ravel()], 1)).exp()
    cell = float(grid[1] - grid[0]) ** 2
    assert float(density.sum()) * cell == pytest.approx(1.0, abs=0.02)


@pytest.mark.parametrize("family", fam.FAMILIES)
def test_a_member_learns_a_gaussians_mean_and_scale(family):
    points = np.random.default_rng(0).normal([1.0, -2.0], [0.5, 2.0], size=(512, 2)).astype(np.float32)
    model, history = fam.train_member(family, points, seed=3, num_steps=400, batch_size=64, settings=TINY)
    samples = fam.sample_member(model, 4000, seed=3)
    assert history[-1] < history[0]
    assert np.allclose(samples.mean(0), [1.0, -2.0], atol=0.2) and np.allclose(samples.std(0), [0.5, 2.0], rtol=0.15)


@pytest.mark.parametrize("family", fam.FAMILIES)
def test_a_member_is_reproducible_from_its_seed_and_another_seed_gives_another_member(family):
    points = np.random.default_rng(1).normal(size=(128, 2)).astype(np.float32)

    def member(seed: int) -> np.ndarray:
        model, _ = fam.train_member(family, points, seed=seed, num_steps=10, batch_size=32, settings=TINY)
        return fam.sample_member(model, 50, seed=seed)

    first = member(3)
    assert np.array_equal(member(3), first) and not np.array_equal(member(4), first)


def test_the_member_seeds_are_distinct_across_families_and_members():
    seeds = {fam.member_seed(0, f, i) for f in fam.FAMILIES for i in range(30)}
    assert len(seeds) == 60


def test_the_families_stage_reads_its_stored_entry_back_without_training(tmp_path, monkeypatch):
    from lib.prcurves import experiment as ex
    from lib.run import Run

    monkeypatch.setenv("WORKBOOK_CACHE", str(tmp_path))
    config = ex.resolve_config("smoke", family_members=2, budget=20, n_train=256, num_generated=64, family=TINY)
    data = ex.ring_data(config)
    first = ex.run_family(config, "flow", data, Run())
    row = ex.summary_row(first)
    assert row["C"] == "flow" and row["members"] == 2 and 0 <= row["auc_mean"] <= 1
    assert first["samples"].shape == (2, 64, 2) and first["history"].shape[0] == 2

    def forbidden(*args, **kwargs):
        raise AssertionError("trained again although the entry is cached")

    monkeypatch.setattr(fam, "train_member", forbidden)
    again = ex.run_family(config, "flow", data, Run())
    assert np.array_equal(again["samples"], first["samples"]) and ex.summary_row(again) == row


def test_the_families_stand_beside_the_ddpms_first_members_in_one_table():
    from lib.prcurves import experiment as ex

    def result(name, aucs, width):
        band = {"recall": np.linspace(0, 1, 5), "lo": np.zeros(5), "hi": np.full(5, width), "auc": np.array(aucs),
                "members": np.zeros((len(aucs), 5))}
        return {"complexity": name, "n_train": 100, "num_steps": 10, "curves": [{}] * len(aucs), "band": band,
                "summary": [{"auc_raw": a} for a in aucs], "num_dropped": np.zeros(len(aucs), int), "parameters": 7,
                "scale": np.array([[0.3, 0.5], [0.4, 0.6]]), "samples": None}

    config = ex.resolve_config("smoke", family_members=2)
    table = ex.families_table(config, {}, {"vae": result("vae", [0.8, 0.9], 0.2)})
    assert list(table.index) == ["VAE"] and table.loc["VAE", "band width"] == pytest.approx(0.2)
    assert table.loc["VAE", "AUC mean"] == pytest.approx(0.85) and table.loc["VAE", "below 0.9"] == 1
    assert table.loc["VAE", "parameters"] == 7 and table.loc["VAE", "members"] == 2
    assert table.loc["VAE", "output sd"] == pytest.approx(0.45) and np.isnan(table.loc["VAE", "radial sd"])


def test_the_radial_spread_is_the_sd_of_the_distance_from_the_centre_per_member():
    from lib.prcurves import experiment as ex

    circle = np.stack([np.cos(np.linspace(0, 6, 50)), np.sin(np.linspace(0, 6, 50))], axis=1)
    two = np.stack([3 * circle, np.concatenate([2 * circle[:25], 4 * circle[25:]])])
    assert ex.radial_sd(two[0]) == pytest.approx(0.0, abs=1e-12) and ex.radial_sd(two) == pytest.approx(0.5)
    assert np.isnan(ex.radial_sd(None))


@pytest.mark.parametrize("families, message", [(["gan"], r"FAMILIES entry='gan' is not allowed"),
                                                (["vae", "vae"], r"FAMILIES=.* holds duplicates")])
def test_a_bad_family_is_refused_naming_the_parameter(families, message):
    from lib import params
    from lib.prcurves import experiment as ex

    notebook = {"PRESET": "smoke", "FAMILIES": families, "__annotations__": {"PRESET": str, "FAMILIES": list}}
    with pytest.raises(ValueError, match=message):
        params.configure(ex.resolve_config, ex.PRESETS, notebook)
