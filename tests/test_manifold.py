import numpy as np
import prdc
import pytest

from lib.manifold import precision_recall_density_coverage


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


def test_ball_counts_agree_with_direct_distances_in_high_dimension():
    from lib.manifold import _inside_counts

    rng = np.random.default_rng(7)
    centres = rng.normal(size=(120, 3072)) * 40 + 100  # pixel-like scale, far from the origin
    queries = rng.normal(size=(50, 3072)) * 40 + 100
    direct = np.sqrt(((queries[:, None, :] - centres[None, :, :]) ** 2).sum(-1))
    radii = np.quantile(direct, rng.uniform(0.01, 0.3, 120), axis=0).diagonal()
    for strict in (True, False):
        expected = (direct < radii if strict else direct <= radii).sum(1)
        assert np.array_equal(_inside_counts(queries, centres, radii, strict, chunk=7), expected)


def test_ball_counts_decide_exact_ties_and_duplicates_as_the_direct_formula():
    from lib.manifold import _inside_counts

    rng = np.random.default_rng(8)
    half = rng.integers(-3, 4, size=(40, 512)).astype(float)
    centres = np.concatenate([half, -half])  # mean exactly 0: every distance is exact in float64
    queries = np.concatenate([centres[:25], rng.integers(-3, 4, size=(25, 512)).astype(float)])
    direct = np.sqrt(((queries[:, None, :] - centres[None, :, :]) ** 2).sum(-1))
    radii = np.sort(np.sqrt(((centres[:, None] - centres[None]) ** 2).sum(-1)), axis=1)[:, 2]
    radii[:5] = 0.0  # the copies of the first centres sit exactly on these balls' radii
    assert (direct == radii).any()
    for strict in (True, False):
        expected = (direct < radii if strict else direct <= radii).sum(1)
        assert np.array_equal(_inside_counts(queries, centres, radii, strict, chunk=7), expected)
