import itertools

import numpy as np
import pytest
from scipy import stats as sps

from lib.prcurves import stats


@pytest.fixture(scope="module")
def ensembles():
    rng = np.random.default_rng(0)
    b = rng.normal(0.8, 0.05, size=(12, 40))
    a = rng.normal(0.8, 0.05, size=(12, 40))
    a[:, :15] += 0.1  # a is better on the first 15 grid points
    return a, b


@pytest.mark.parametrize("test, scipy_p", [
    ("paired_t", lambda a, b: sps.ttest_rel(a, b).pvalue),
    ("student", lambda a, b: sps.ttest_ind(a, b).pvalue),
    ("welch", lambda a, b: sps.ttest_ind(a, b, equal_var=False).pvalue),
    ("wilcoxon", lambda a, b: sps.wilcoxon(a, b).pvalue),
])
def test_pvalues_agree_with_scipy_column_by_column(ensembles, test, scipy_p):
    a, b = ensembles
    out = stats.pointwise_compare(a, b, test)
    expected = [scipy_p(a[:, j], b[:, j]) for j in range(a.shape[1])]
    np.testing.assert_allclose(out["pvalues"], expected, rtol=1e-10)
    assert out["significant"][:15].mean() > 0.8 and out["significant"][15:].mean() < 0.2
    assert out["fraction"] == pytest.approx(out["significant"].mean())


def test_significant_needs_a_better_not_just_different(ensembles):
    a, b = ensembles
    out = stats.pointwise_compare(b, a, "welch")
    assert out["pvalues"][:15].max() < 0.05 and not out["significant"].any()


def test_benjamini_hochberg_by_hand():
    p = np.array([0.01, 0.04, 0.03, 0.2, np.nan])
    ranked = np.array([0.01, 0.03, 0.04, 0.2, 1.0])
    adjusted = np.minimum.accumulate((ranked * 5 / np.arange(1, 6))[::-1])[::-1]
    np.testing.assert_allclose(stats.benjamini_hochberg(p), adjusted[[0, 2, 1, 3, 4]])


def test_zero_variance_columns_are_not_significant():
    a = np.ones((5, 3))
    b = np.ones((5, 3))
    a[:, 2] += np.linspace(0.1, 0.5, 5)
    for test in stats.TESTS:
        out = stats.pointwise_compare(a, b, test, num_permutations=99)
        assert not out["significant"][:2].any(), test


def test_maxT_equals_exhaustive_permutation_on_a_tiny_case():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(4, 6)) + 0.8, rng.normal(size=(4, 6))
    data = np.vstack([b, a])
    observed = np.abs(stats.welch_t(a, b))
    maxima = []
    for chosen in itertools.combinations(range(8), 4):  # all 70 relabelings, group "a" = chosen
        mask = np.zeros(8, bool)
        mask[list(chosen)] = True
        maxima.append(np.abs(stats.welch_t(data[mask], data[~mask])).max())
    exact = np.array([(np.array(maxima) >= o - 1e-10).mean() for o in observed])
    approx = stats.permutation_maxT(a, b, num_permutations=20_000, seed=3)
    np.testing.assert_allclose(approx, exact, atol=0.015)


def test_maxT_controls_the_family_wise_error_under_the_null():
    """500 null experiments (correlated curves, 8 vs 8 members): P(any rejection) <= alpha."""
    rng = np.random.default_rng(2)
    grid = np.linspace(0, 1, 60)
    cov = np.exp(-np.subtract.outer(grid, grid) ** 2 / 0.02) + 1e-9 * np.eye(60)
    chol = np.linalg.cholesky(cov)
    any_rejection, any_uncorrected = [], []
    for rep in range(500):
        a, b = rng.normal(size=(8, 60)) @ chol.T, rng.normal(size=(8, 60)) @ chol.T
        p = stats.permutation_maxT(a, b, num_permutations=199, seed=rep)
        any_rejection.append((p < 0.05).any())
        any_uncorrected.append((stats.pointwise_compare(a, b, "welch")["pvalues"] < 0.05).any())
    fwer = np.mean(any_rejection)
    assert fwer <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 500)  # binomial 3-sigma margin
    assert fwer >= 0.02  # and the test is not vacuous
    assert np.mean(any_uncorrected) > 2 * fwer  # uncorrected pointwise tests inflate it


def test_maxT_detects_a_real_difference(ensembles):
    a, b = ensembles
    out = stats.pointwise_compare(a, b, "permutation_maxT", num_permutations=999)
    assert out["significant"][:15].mean() > 0.5 and not out["significant"][15:].any()


@pytest.mark.parametrize("kwargs, message", [
    ({"test": "t"}, "test='t'"),
    ({"test": "welch", "alpha": 1.5}, "alpha=1.5"),
    ({"test": "welch", "correction": "bonferroni"}, "correction='bonferroni'"),
    ({"test": "permutation_maxT", "correction": "bh"}, "family-wise"),
])
def test_bad_arguments_are_refused(ensembles, kwargs, message):
    a, b = ensembles
    with pytest.raises(ValueError, match=message):
        stats.pointwise_compare(a, b, **kwargs)


def test_shape_errors():
    with pytest.raises(ValueError, match="at least 2 members"):
        stats.pointwise_compare(np.ones((1, 3)), np.ones((4, 3)), "welch")
    with pytest.raises(ValueError, match="equal sizes"):
        stats.pointwise_compare(np.ones((3, 3)), np.ones((4, 3)), "paired_t")


def test_compare_scalars_matches_scipy():
    a, b = np.array([0.9, 0.95, 0.97, 0.93]), np.array([0.8, 0.85, 0.9, 0.7, 0.88])
    out = stats.compare_scalars(a, b)
    assert out["welch_p"] == pytest.approx(sps.ttest_ind(a, b, equal_var=False).pvalue)
    assert out["mannwhitney_p"] == pytest.approx(sps.mannwhitneyu(a, b).pvalue)


@pytest.mark.parametrize("a, b, message", [
    ([0.9, np.nan, 0.97], [0.8, 0.85], r"^a holds 1 non-finite value\(s\) \(first at index 1: nan"),
    ([0.9, 0.95], [0.8, np.inf], r"^b holds 1 non-finite value\(s\) \(first at index 1: inf"),
    ([], [0.8, 0.85], r"^a must hold at least 2 value\(s\); got 0"),
    ([0.9, 0.95], [0.8], r"^b must hold at least 2 value\(s\); got 1"),
    ([[0.9, 0.95]], [0.8, 0.85], r"^a must be a 1-D \(members,\) array"),
])
def test_compare_scalars_refuses_nan_empty_and_single_members(a, b, message):
    """NaN or empty input gave NaN p-values with no error."""
    with pytest.raises(ValueError, match=message):
        stats.compare_scalars(np.array(a), np.array(b))


@pytest.mark.parametrize("test", stats.TESTS)
def test_a_zero_width_grid_is_refused(test):
    """A (members, 0) grid gave no p-values and a NaN fraction, without an error."""
    with pytest.raises(ValueError, match=r"^a must be a \(members, grid\) array .*; got shape \(6, 0\)"):
        stats.pointwise_compare(np.ones((6, 0)), np.ones((6, 0)), test, num_permutations=99)


def test_wilcoxon_with_ties_and_zeros_matches_scipy():
    """Curves of failed members are tied at 0 and 1: scipy then falls back to an exact permutation test."""
    rng = np.random.default_rng(4)
    a = np.round(rng.random((8, 30)), 1)
    b = np.round(rng.random((8, 30)), 1)
    b[:3, :10] = a[:3, :10]  # zero differences
    for alternative in ("two-sided", "greater"):
        ours = stats.wilcoxon_signflip(a, b, alternative=alternative)
        np.testing.assert_allclose(ours, sps.wilcoxon(a, b, alternative=alternative).pvalue, rtol=1e-12)


def test_wilcoxon_samples_sign_patterns_for_large_ensembles():
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(30, 5)) + 0.3, rng.normal(size=(30, 5))
    ours = stats.wilcoxon_signflip(a, b, max_flips=20_000, seed=1)
    np.testing.assert_allclose(ours, sps.wilcoxon(a, b).pvalue, atol=0.01)  # exact null vs 20k flips


@pytest.mark.parametrize("test", stats.TESTS)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("where", ["a", "b"])
def test_a_non_finite_value_is_refused_naming_the_argument(test, bad, where):
    """One NaN made permutation_maxT call half of a null grid significant (a NaN max
    statistic is exceeded by no permutation) and Wilcoxon dropped the member silently."""
    rng = np.random.default_rng(6)
    a, b = rng.normal(0.8, 0.05, size=(8, 50)), rng.normal(0.8, 0.05, size=(8, 50))
    (a if where == "a" else b)[3, 17] = bad
    with pytest.raises(ValueError, match=rf"^{where} holds 1 non-finite value.*member 3, grid point 17"):
        stats.pointwise_compare(a, b, test, num_permutations=99)


@pytest.mark.parametrize("fn", [stats.permutation_maxT, stats.wilcoxon_signflip, stats.welch_t])
def test_the_building_blocks_refuse_nan_too(fn):
    a, b = np.full((4, 3), 0.5), np.full((4, 3), 0.4)
    b[0, 0] = np.nan
    with pytest.raises(ValueError, match="^b holds 1 non-finite value"):
        fn(a, b)


def test_the_width_difference_interval_holds_the_truth_and_excludes_zero_when_the_spreads_differ():
    rng = np.random.default_rng(3)
    wide, narrow = rng.normal(0.9, 0.05, (30, 200)), rng.normal(0.9, 0.01, (30, 200))
    d = stats.bootstrap_width_difference(wide, narrow, reps=300, seed=1)
    assert d["difference"] == pytest.approx(stats.band_width(wide) - stats.band_width(narrow))
    assert 0 < d["lower"] < d["difference"] < d["upper"]
    same = stats.bootstrap_width_difference(narrow, narrow, reps=300, seed=1)
    assert same["difference"] == 0 and same["lower"] < 0 < same["upper"]
    assert stats.band_width(np.tile(np.linspace(0, 1, 5), (3, 1))) == 0.0  # identical members: no band


def test_the_significant_share_interval_resamples_pairs_and_brackets_the_share():
    rng = np.random.default_rng(4)
    base = rng.normal(0.9, 0.02, (20, 100))
    better = base + np.r_[np.full(50, 0.02), np.zeros(50)]  # better on the first half of the grid only
    ci = stats.bootstrap_fraction(better, base + rng.normal(0, 0.001, base.shape), reps=200, seed=2)
    assert ci["fraction"] == pytest.approx(0.5, abs=0.05) and ci["lower"] <= ci["fraction"] <= ci["upper"]
    with pytest.raises(ValueError, match="max-T"):
        stats.bootstrap_fraction(better, base, "permutation_maxT")


def test_the_mean_difference_is_welchs_interval():
    a, b = np.array([0.9, 0.92, 0.95, 0.91]), np.array([0.8, 0.85, 0.83])
    d = stats.mean_difference(a, b, level=0.95)
    ci = sps.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert (d["lower"], d["upper"]) == pytest.approx((ci.low, ci.high))


def test_band_coverage_of_exchangeable_members_is_the_derived_share_whatever_their_distribution():
    """Leave-one-out coverage of the 10th–90th band: for exchangeable continuous members its mean is
    (n − 1)(0.8)/(n + 1) with n the other members (0.747 at M = 30), below the nominal 0.8, whatever their
    distribution; tied values count inside."""
    rng = np.random.default_rng(3)
    shares = [stats.band_coverage(rng.normal(size=(30, 200)))["coverage"] for _ in range(30)]
    one = stats.band_coverage(rng.normal(size=(30, 200)))
    assert one["exchangeable"] == pytest.approx(28 * 0.8 / 30) and one["nominal"] == pytest.approx(0.8)
    assert abs(np.mean(shares) - one["exchangeable"]) < 0.01
    assert one["lower"] < one["coverage"] < one["upper"] and one["members"] == 30
    heavy = [stats.band_coverage(rng.standard_cauchy(size=(30, 200)))["coverage"] for _ in range(30)]
    assert abs(np.mean(heavy) - one["exchangeable"]) < 0.01  # distribution-free for exchangeable members
    assert stats.band_coverage(np.ones((10, 50)))["coverage"] == 1.0  # ties (a plateau at precision 1) count inside
    with pytest.raises(ValueError, match="at least 3 members"):
        stats.band_coverage(np.ones((2, 5)))


def test_the_no_guarantee_claim_holds_only_when_a_band_covers_less_than_its_nominal_share():
    from lib.prcurves import claims as pc

    def record(upper: float) -> dict:
        return {"band_coverage": {"1": {"coverage": upper - 0.02, "lower": upper - 0.04, "upper": upper,
                                        "nominal": 0.8, "exchangeable": 0.747, "members": 30}}}

    assert pc._no_guarantee(record(0.77)).verdict == "holds"
    assert pc._no_guarantee(record(0.85)).verdict == "undecided"
