"""Feature-space dependence (lib.prcurves.spaces): the embeddings' invariants, non-finite samples kept out, the
plane reproducing the notebook's own curves, and the facts by hand."""

from __future__ import annotations

import numpy as np
import pytest

from lib.prcurves import spaces


def test_standardiser_and_fourier_invariants():
    rng = np.random.default_rng(0)
    ref = rng.normal([1.0, -2.0], [2.0, 0.5], (5000, 2))
    z = spaces.standardiser(ref)(ref)
    assert np.allclose(z.mean(axis=0), 0, atol=1e-12) and np.allclose(z.std(axis=0), 1)
    phi = spaces.random_fourier(dim=4000, lengthscale=1.5, seed=1)
    x, y = rng.normal(size=(2, 2))
    kernel = np.exp(-np.sum((x - y) ** 2) / (2 * 1.5**2))
    assert phi(x[None]) @ phi(y[None]).T == pytest.approx(kernel, abs=0.05)  # RFF approximate the RBF kernel
    assert np.array_equal(spaces.random_fourier(seed=3)(ref), spaces.random_fourier(seed=3)(ref))


def test_random_mlp_shape_range_and_seed():
    x = np.random.default_rng(1).normal(size=(100, 2))
    out = spaces.random_mlp((16, 8), seed=2)(x)
    assert out.shape == (100, 8) and np.abs(out).max() < 1
    assert not np.array_equal(out, spaces.random_mlp((16, 8), seed=3)(x))


def test_embed_samples_keeps_non_finite_rows_out():
    samples = np.random.default_rng(2).normal(size=(3, 50, 2))
    samples[1, 7] = np.nan
    out = spaces.embed_samples(spaces.random_fourier(dim=8), samples)
    assert out.shape == (3, 50, 8) and np.isnan(out[1, 7]).all() and np.isfinite(np.delete(out[1], 7, axis=0)).all()


def test_space_facts_by_hand():
    rows = [{"space": "plane", "C": 2, "auc_mean": 0.95, "width": 0.1, "fraction": 0.3},
            {"space": "plane", "C": 4, "auc_mean": 0.97, "width": 0.2, "fraction": 0.3},
            {"space": "mlp", "C": 2, "auc_mean": 0.96, "width": 0.3, "fraction": 0.1},
            {"space": "mlp", "C": 4, "auc_mean": 0.90, "width": 0.2, "fraction": 0.1}]
    facts = spaces.space_facts(rows)
    assert facts["plane"] == {"best_C": 4, "same_best": True, "same_order": True, "width_ratio": 1.0, "fraction": 0.3,
                              "fraction_change": 0.0}
    assert facts["mlp"]["best_C"] == 2 and not facts["mlp"]["same_best"] and not facts["mlp"]["same_order"]
    assert facts["mlp"]["width_ratio"] == pytest.approx(2.0) and facts["mlp"]["fraction_change"] == pytest.approx(-0.2)
    assert spaces.space_verdict(facts) == {"order_kept": False, "lower": ["mlp"], "higher": [], "same": []}


def test_space_rows_plane_reproduces_the_ensembles_own_curves():
    """On a tiny config the plane's rows equal `summary_row` of the ensembles themselves (same splits, same seeds);
    the standardised plane (an isotropic ring, nearly the same distances) stays close."""
    from lib import prcurves
    from lib.prcurves import experiment as ex

    config = ex.resolve_config("smoke", num_members=3)
    rng = np.random.default_rng(4)
    heldout = rng.normal(size=(400, 2)) * [2.0, 1.0]
    results = {}
    for C, spread in ((2, 1.3), (4, 1.0)):
        samples = rng.normal(size=(3, 400, 2)) * [2.0 * spread, 1.0]
        arrays = ex.member_curves(config, complexity=C, heldout=heldout, samples=samples)
        curves = ex.curve_list(arrays)
        band = prcurves.ensemble_band(curves, config.grid_size, *config.band, dup_recall=config.dup_recall)
        results[C] = {"complexity": C, "n_train": 400, "num_steps": 1, "samples": samples, "curves": curves,
                      "band": band, "summary": [prcurves.summarise(c) for c in curves], "num_dropped": np.zeros(3)}
    data = {"heldout": heldout}
    rows = spaces.space_rows(config, results, data)
    assert {r["space"] for r in rows} == set(spaces.SPACES) and len(rows) == 8
    plane = {r["C"]: r for r in rows if r["space"] == "plane"}
    for C, res in results.items():
        assert plane[C]["auc_mean"] == pytest.approx(ex.summary_row(res)["auc_mean"], abs=1e-12)
        assert plane[C]["width"] == pytest.approx(ex.summary_row(res)["width"], abs=1e-12)
    assert all(0 <= r["fraction"] <= 1 for r in rows)
