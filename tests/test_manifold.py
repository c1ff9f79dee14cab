import numpy as np
import prdc
import pytest

from lib.manifold import ball_memberships, coverage_by_k, knn_radii, precision_recall_density_coverage


@pytest.mark.parametrize("k", [3, 5, 10])
def test_strict_version_equals_the_prdc_package(k):
    """Spec §5.5: strict `<`, radius = k-th other point, must equal prdc.compute_prdc exactly."""
    rng = np.random.default_rng(k)
    real, fake = rng.normal(size=(500, 4)), rng.normal(size=(400, 4)) * 1.2 + 0.3
    ours = precision_recall_density_coverage(real=real, fake=fake, k=k, strict=True, chunk=64)
    theirs = prdc.compute_prdc(real_features=real, fake_features=fake, nearest_k=k)
    for key in ours:
        assert ours[key] == pytest.approx(theirs[key], abs=1e-12), key


def test_inclusive_version_differs_only_at_ties():
    rng = np.random.default_rng(0)
    real, fake = rng.normal(size=(300, 2)), rng.normal(size=(300, 2))
    strict = precision_recall_density_coverage(real=real, fake=fake, k=5, strict=True)
    inclusive = precision_recall_density_coverage(real=real, fake=fake, k=5, strict=False)
    assert strict == inclusive
    # every point 6 times: k-NN radii of 0 (clovaai/generative-evaluation-prdc#7)
    repeated = np.repeat(real[:50], 6, axis=0)
    strict = precision_recall_density_coverage(real=repeated, fake=repeated.copy(), k=5, strict=True)
    assert strict == {"precision": 0.0, "recall": 0.0, "density": 0.0, "coverage": 0.0}
    inclusive = precision_recall_density_coverage(real=repeated, fake=repeated.copy(), k=5, strict=False)
    assert inclusive == {"precision": 1.0, "recall": 1.0, "density": 6 / 5, "coverage": 1.0}


def test_dropped_half_lowers_recall_not_precision():
    rng = np.random.default_rng(1)
    real = np.concatenate([rng.normal(size=(500, 2)), rng.normal(size=(500, 2)) + 8])
    fake = rng.normal(size=(1000, 2))
    out = precision_recall_density_coverage(real=real, fake=fake, k=5)
    assert out["precision"] > 0.9 and out["recall"] == pytest.approx(0.5, abs=0.05)


def direct_memberships(real, fake, real_radii, fake_radii, strict):
    """The three ball tests on full (real, fake) distance matrices, written from the definitions. A distance is
    taken as the radii are (`exact_knn`): between points moved to the mean of the set whose ball is tested, its
    squares summed by einsum, so that an exact tie between a radius and a distance stays an exact tie."""
    def dist(mean):
        diff = (real - mean)[:, None, :] - (fake - mean)[None, :, :]
        return np.sqrt(np.einsum("ijd,ijd->ij", diff, diff))

    to_real, to_fake = dist(real.mean(0)), dist(fake.mean(0))
    in_real = to_real < real_radii[:, None] if strict else to_real <= real_radii[:, None]
    in_fake = to_fake < fake_radii[None, :] if strict else to_fake <= fake_radii[None, :]
    covered = to_fake < real_radii[:, None] if strict else to_fake <= real_radii[:, None]  # as exact_knn(real, fake)
    return {"fake_in_real": in_real.sum(0), "real_in_fake": in_fake.sum(1), "covered": covered.any(1)}


def assert_memberships_equal(real, fake, real_radii, fake_radii):
    for strict in (True, False):
        expected = direct_memberships(real, fake, real_radii, fake_radii, strict)
        got = ball_memberships(real, fake, real_radii, fake_radii, strict, chunk=7)
        for key in expected:
            np.testing.assert_array_equal(got[key], expected[key], err_msg=f"{key}, strict={strict}")


def test_ball_memberships_agree_with_direct_distances_in_high_dimension():
    rng = np.random.default_rng(7)
    real = rng.normal(size=(120, 3072)) * 40 + 100  # pixel-like scale, far from the origin
    fake = rng.normal(size=(50, 3072)) * 40 + 100
    direct = np.sqrt(((real[:, None, :] - fake[None, :, :]) ** 2).sum(-1))
    real_radii = np.quantile(direct, rng.uniform(0.01, 0.3, 120), axis=1).diagonal()
    fake_radii = np.quantile(direct, rng.uniform(0.01, 0.3, 50), axis=0).diagonal()
    assert_memberships_equal(real, fake, real_radii, fake_radii)


def test_ball_memberships_decide_exact_ties_and_duplicates_as_the_direct_formula():
    rng = np.random.default_rng(8)
    half = rng.integers(-3, 4, size=(40, 512)).astype(float)
    real = np.concatenate([half, -half])  # mean exactly 0: every distance is exact in float64
    fake = np.concatenate([real[:25], -real[:25]])  # mean exactly 0 too
    direct = np.sqrt(((real[:, None, :] - fake[None, :, :]) ** 2).sum(-1))
    real_radii = np.sort(np.sqrt(((real[:, None] - real[None]) ** 2).sum(-1)), axis=1)[:, 2]
    real_radii[:5] = 0.0  # the copies of the first points sit exactly on these balls' radii
    fake_radii = np.sort(direct, axis=0)[3]  # each fake ball's radius is a real point's distance: ties
    assert (direct == real_radii[:, None]).any() and (direct == fake_radii[None, :]).any()
    assert_memberships_equal(real, fake, real_radii, fake_radii)


def test_ball_memberships_on_heavy_tailed_features():
    """Student-t(2) features (a few points with huge norms, huge radii) and duplicated points."""
    rng = np.random.default_rng(9)
    real, fake = rng.standard_t(2, size=(300, 64)), rng.standard_t(2, size=(200, 64))
    fake[:20] = real[:20]  # distance-0 pairs, and fake balls whose radius is a distance to a real point
    real_radii, fake_radii = knn_radii(real, 4), knn_radii(fake, 4)
    assert_memberships_equal(real, fake, real_radii, fake_radii)
    for mean, radii in ((real.mean(0), real_radii[:, None]), (fake.mean(0), fake_radii[None, :])):
        diff = (real - mean)[:, None, :] - (fake - mean)[None, :, :]
        assert (np.sqrt(np.einsum("ijd,ijd->ij", diff, diff)) == radii).sum() >= 5  # exact ties at the radii
    assert direct_memberships(real, fake, real_radii, fake_radii, True)["fake_in_real"].max() > 20  # huge balls


@pytest.mark.parametrize("strict", [True, False])
def test_coverage_by_k_equals_the_one_k_coverage_at_each_k(strict):
    rng = np.random.default_rng(3)
    real, fake = rng.normal(size=(300, 6)), rng.normal(0.4, 1.2, size=(280, 6))
    by_k = coverage_by_k(real=real, fake=fake, ks=(1, 3, 5, 10), strict=strict)
    for k, value in by_k.items():
        assert value == precision_recall_density_coverage(real=real, fake=fake, k=k, strict=strict)["coverage"]


def test_coverage_by_k_against_direct_distances_and_monotone_in_k():
    rng = np.random.default_rng(4)
    real, fake = rng.normal(size=(120, 3)), rng.normal(1.0, 0.5, size=(90, 3))
    d_rr = np.sqrt(((real[:, None] - real[None]) ** 2).sum(-1))
    d_rf = np.sqrt(((real[:, None] - fake[None]) ** 2).sum(-1))
    by_k = coverage_by_k(real=real, fake=fake, ks=(2, 4, 8))
    for k in (2, 4, 8):
        radius = np.sort(d_rr, axis=1)[:, k]  # column 0 is the point itself
        assert by_k[k] == pytest.approx((d_rf.min(axis=1) < radius).mean(), abs=0)
    assert by_k[2] < by_k[4] < by_k[8]  # larger balls cover more; strictly so on this draw


def test_coverage_by_k_rejects_a_k_the_sets_cannot_hold():
    with pytest.raises(ValueError, match="ks entry"):
        coverage_by_k(real=np.zeros((5, 2)), fake=np.ones((5, 2)), ks=(3, 5))
