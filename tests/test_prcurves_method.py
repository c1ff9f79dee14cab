import itertools

import numpy as np
import pytest
from scipy.interpolate import interp1d

from benchmarks.naive import naive_pr_curve_from_split
from lib import prcurves as pr
from lib.data import ring_draw, ring_train_heldout


@pytest.fixture(scope="module")
def rings():
    d = ring_train_heldout(4_000, 4_000)
    full = ring_draw(4_576, 7)  # 572 per mode: 7 modes give 4,004 points
    dropped = full["points"][full["labels"] != 0][:4_000]
    noise = d["train"] + np.random.default_rng(0).normal(0, 0.3, d["train"].shape)
    return {"real": d["heldout"], "same": d["train"], "dropped": dropped, "noise": noise,
            "shift": d["train"] + np.array([0.5, 0.0])}


def split(real, fake, seed=0):
    rng = np.random.default_rng(seed)
    return (*pr.split_half(real, rng, 0.5), *pr.split_half(fake, rng, 0.5))


@pytest.mark.parametrize("case", ["same", "dropped", "noise", "shift"])
def test_matches_the_straightforward_implementation(rings, case):
    real_tr, real_te, fake_tr, fake_te = split(rings["real"][:1_500], rings[case][:1_500], seed=4)
    ours = pr.pr_curve_from_split(real_tr, fake_tr, real_te, fake_te, k=38)
    naive = naive_pr_curve_from_split(real_tr, fake_tr, real_te, fake_te, k=38)
    for key in ("precision", "recall", "lambdas"):
        np.testing.assert_allclose(ours[key], naive[key], rtol=0, atol=1e-15)


def test_matches_naive_with_ties_and_small_k():
    rng = np.random.default_rng(5)
    parts = [rng.integers(0, 6, size=(120, 2)).astype(float) for _ in range(4)]
    for k in (1, 3, 10):
        ours = pr.pr_curve_from_split(*parts, k=k, num_angles=50)
        naive = naive_pr_curve_from_split(*parts, k=k, num_angles=50)
        np.testing.assert_allclose(ours["precision"], naive["precision"], atol=1e-15)
        np.testing.assert_allclose(ours["recall"], naive["recall"], atol=1e-15)


def test_invariants(rings):
    for case in ("same", "dropped", "noise", "shift"):
        c = pr.pr_curve(rings["real"], rings[case], k=63, seed=1)
        p, r, lam = c["precision"], c["recall"], c["lambdas"]
        assert p.shape == r.shape == lam.shape == (202,)
        assert np.all((0 <= p) & (p <= 1)) and np.all((0 <= r) & (r <= 1))
        assert np.all(np.diff(p) >= -1e-15) and np.all(np.diff(r) <= 1e-15)
        assert p[0] == 0 and r[-1] == 0
        finite = (lam > 0) & np.isfinite(lam)
        np.testing.assert_allclose(r[finite], p[finite] / lam[finite], rtol=1e-13, atol=1e-15)


def test_limits_follow_the_classifier_rules():
    rates = {"fpr": np.array([0.3, 0.2, 0.0, 0.0, 1.0]), "fnr": np.array([0.0, 0.1, 0.6, 1.0, 0.0])}
    out = pr.frontier(**rates, lambdas=np.array([0.0, 1.0, np.inf]))
    assert out["recall"][0] == pytest.approx(0.3)  # beta(0) = FPR_0 since FNR_0 = 0
    assert out["precision"][-1] == pytest.approx(0.6)  # alpha(inf) = FNR_inf since FPR_inf = 0
    rates["fpr"][2] = 0.01
    assert pr.frontier(**rates, lambdas=np.array([np.inf]))["precision"][0] == 1.0  # jumps to 1


def test_dual_formula_on_discrete_distributions():
    rng = np.random.default_rng(6)
    for _ in range(5):
        p, q = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
        subsets = [np.array(s, bool) for s in itertools.product([0, 1], repeat=6)]
        fpr = np.array([p[~a].sum() for a in subsets])  # classifier "real on A": real mass outside A
        fnr = np.array([q[a].sum() for a in subsets])
        lambdas = np.tan(np.linspace(0.05, np.pi / 2 - 0.05, 25))
        out = pr.frontier(fpr=fpr, fnr=fnr, lambdas=lambdas)
        np.testing.assert_allclose(out["precision"], [np.minimum(lam * p, q).sum() for lam in lambdas], atol=1e-14)
        np.testing.assert_allclose(out["recall"], [np.minimum(p, q / lam).sum() for lam in lambdas], atol=1e-14)


def test_sanity_values_on_the_ring(rings):
    """Spec §5.3 (N = 4,000, k = 63): the confirmed rows hard, the ordering of all four."""
    same = [pr.summarise(pr.pr_curve(rings["real"], rings["same"], k=63, seed=s)) for s in range(3)]
    grid = pr.recall_grid()
    same_auc = [np.trapezoid(pr.interpolate_precision(pr.pr_curve(rings["real"], rings["same"], k=63, seed=s), grid),
                             grid) for s in range(3)]
    assert all(0.99 <= a <= 1.0 for a in same_auc)
    assert all(s["max_precision"] == 1.0 and s["max_recall"] == 1.0 for s in same)
    dropped = pr.summarise(pr.pr_curve(rings["real"], rings["dropped"], k=63, seed=0))
    assert dropped["max_recall"] == pytest.approx(7 / 8, abs=0.015)
    assert 0.85 <= dropped["auc_raw"] <= 0.89
    auc = {case: pr.auc_raw(pr.pr_curve(rings["real"], rings[case], k=63, seed=0)) for case in rings if case != "real"}
    assert auc["same"] > auc["noise"] > auc["dropped"] > auc["shift"]


def test_identical_sets_give_a_curve_near_one(rings):
    c = pr.pr_curve(rings["real"], rings["real"].copy(), seed=2)
    assert pr.auc_raw(c) > 0.99


def test_replicate_interpolation_matches_scipy():
    curve = {"recall": np.array([0.9, 0.9, 0.9, 0.5, 0.0]), "precision": np.array([0.0, 0.2, 0.4, 0.8, 0.9])}
    grid = np.linspace(0.001, 1.0, 997)
    ours = pr.interpolate_precision(curve, grid, "replicate")
    r, p = np.append(curve["recall"], 1.0), np.append(curve["precision"], 0.0)
    scipy_ = interp1d(r, p, bounds_error=False, fill_value=0.0)(grid)
    np.testing.assert_allclose(ours, scipy_, atol=1e-15)
    envelope = pr.interpolate_precision(curve, grid, "upper_envelope")
    assert np.all(envelope >= ours - 1e-15) and envelope[grid < 0.9][-1] > ours[grid < 0.9][-1]


def test_ensemble_band_shapes_and_order(rings):
    curves = [pr.pr_curve(rings["real"][:1_000], rings[c][:1_000], seed=s) for c in ("same", "noise") for s in range(3)]
    band = pr.ensemble_band(curves, grid_size=200)
    assert band["members"].shape == (6, 200) and band["recall"][-1] == 1.0
    assert np.all(band["lo"] <= band["hi"]) and np.all(band["lo"] <= band["members"].max(0))
    np.testing.assert_allclose(band["mean"], band["members"].mean(0))
    np.testing.assert_allclose(band["auc"], np.trapezoid(band["members"], band["recall"], axis=1))


@pytest.mark.parametrize("grid_size", [0, 1, -5, 10.0])
def test_ensemble_band_refuses_a_grid_without_area(grid_size):
    """grid_size=0 returned empty arrays and an AUC of 0."""
    curve = {"recall": np.linspace(0, 1, 5), "precision": np.linspace(1, 0, 5)}
    with pytest.raises(ValueError, match=rf"^grid_size={grid_size!r} must be"):
        pr.ensemble_band([curve, curve], grid_size=grid_size)


@pytest.mark.parametrize("key", ["recall", "precision"])
def test_ensemble_band_refuses_a_non_finite_curve_naming_the_member(key):
    """A NaN curve gave a band (and AUCs) of NaN, or misplaced points, without an error."""
    good = {"recall": np.linspace(0, 1, 5), "precision": np.linspace(1, 0, 5)}
    bad = {k: v.copy() for k, v in good.items()}
    bad[key][2] = np.nan
    with pytest.raises(ValueError, match=rf"^curves\[1\]\['{key}'\] holds 1 non-finite value\(s\) \(first at index 2"):
        pr.ensemble_band([good, bad, good], grid_size=50)


def test_bad_inputs_are_refused(rings):
    with pytest.raises(ValueError, match="train_fraction"):
        pr.pr_curve(rings["real"], rings["same"], train_fraction=1.0)
    bad = rings["same"].copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="fake must be a finite"):
        pr.pr_curve(rings["real"], bad)
    with pytest.raises(ValueError, match="dup_recall"):
        pr.interpolate_precision({"recall": np.ones(2), "precision": np.ones(2)}, np.ones(3), "first")


def test_plain_lists_are_accepted(rings):
    """Plain lists gave an AttributeError (`list` has no `ndim`)."""
    real, fake = rings["real"][:400], rings["noise"][:400]
    listed = pr.pr_curve(real.tolist(), fake.tolist(), k=10)
    arrays = pr.pr_curve(real, fake, k=10)
    np.testing.assert_array_equal(listed["precision"], arrays["precision"])
    np.testing.assert_array_equal(listed["recall"], arrays["recall"])


@pytest.mark.parametrize("real_shape, fake_shape, message", [
    ((100, 2), (100, 3), r"real and fake must have the same dimension D; got real \(100, 2\) and fake \(100, 3\)"),
    ((100,), (100, 2), r"real must be a finite \(n, D\) array"),
    ((100, 2), (3, 2), r"fake must be a finite \(n, D\) array with n >= 4.*; got shape \(3, 2\)"),
    ((100, 0), (100, 0), r"real must be a finite \(n, D\) array with n >= 4 and D >= 1"),
])
def test_shape_errors_name_real_or_fake(real_shape, fake_shape, message):
    """Real and fake of different dimension raised NumPy's concatenate error."""
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=message):
        pr.pr_curve(rng.normal(size=real_shape), rng.normal(size=fake_shape))


def test_non_numeric_input_names_the_argument():
    with pytest.raises(ValueError, match="fake must be numeric"):
        pr.pr_curve(np.zeros((10, 2)), [["a", "b"]] * 10)
