import numpy as np
import pytest

from lib.data import RingSettings, gaussian_ring, ring_draw, ring_train_heldout

# spec 01 §2.1: the authors' scales with seed 7
AUTHORS_SCALES = [0.2463, 0.3322, 0.2900, 0.3401, 0.2776, 0.2710, 0.2956, 0.2944]


@pytest.fixture(scope="module")
def ring():
    return ring_train_heldout(10_000, 10_000)


def test_seed_7_reproduces_the_authors_scales(ring):
    np.testing.assert_allclose(ring["params"].scales, AUTHORS_SCALES, atol=5e-5)


def test_seed_7_statistics(ring):
    x, labels = ring["train"], ring["train_labels"]
    stds = [x[labels == i].std(axis=0) for i in range(8)]
    assert 0.33 - 0.05 <= np.min(stds) and np.max(stds) <= 0.45 + 0.05
    radius = np.linalg.norm(x, axis=1)
    assert radius.min() == pytest.approx(4.03, abs=0.05) and radius.max() == pytest.approx(6.01, abs=0.05)
    assert radius.mean() == pytest.approx(5.015, abs=0.05)


def test_every_point_within_truncation_of_its_centre(ring):
    for key in ("train", "heldout"):
        x, labels = ring[key], ring[f"{key}_labels"]
        dist = np.linalg.norm(x - ring["params"].centers[labels], axis=1)
        assert np.all(dist <= 3 * ring["params"].scales[labels] + 1e-12)


def test_counts_round_down_to_multiple_of_modes():
    x = gaussian_ring(2_500, seed=7)
    assert x.shape == (2_496, 2)
    assert np.all(np.bincount(ring_draw(2_500, 7)["labels"]) == 312)


def test_heldout_reuses_params_but_not_points(ring):
    again = ring_draw(10_000, 3, params=ring["params"])
    np.testing.assert_array_equal(again["points"], ring["heldout"])
    assert not np.allclose(ring["train"], ring["heldout"])
    assert np.all(ring["params"].scales >= 0.234) and np.all(ring["params"].scales <= 0.391)


def test_variance_quirk_can_be_switched_off():
    quirk = ring_draw(4_000, 7)
    as_std = ring_draw(4_000, 7, settings=RingSettings(s_is_variance=False))
    spread = lambda d: np.mean([d["points"][d["labels"] == i].std() for i in range(8)])
    assert spread(as_std) < spread(quirk)


def test_bad_n_is_refused():
    with pytest.raises(ValueError, match="n=4"):
        gaussian_ring(4, seed=7)
