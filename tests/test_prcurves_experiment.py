import numpy as np
import pytest

from lib import prcurves
from lib.prcurves import experiment as ex
from lib.prcurves import paper, stats


@pytest.mark.parametrize("preset, overrides, message", [
    ("fast", {}, "PRESET='fast'"),
    ("smoke", {"complexities": [0, 2]}, "complexities entry=0"),
    ("smoke", {"num_members": 1}, "num_members=1"),
    ("smoke", {"alpha": 1.5}, "alpha=1.5"),
    ("smoke", {"test": "t"}, "test='t'"),
    ("smoke", {"epochs": 3}, "unknown parameter"),
    ("smoke", {"budget": 0}, "budget=0"),
    ("smoke", {"budget_unit": "hours"}, "budget_unit='hours'"),
    ("smoke", {"compare": (4, 1)}, "compare="),
    ("smoke", {"num_generated": 5_000}, "num_generated=5000"),
    ("smoke", {"small_complexities": (8,)}, "small_complexities="),
    ("cpu", {"budget_unit": "epochs"}, None),
    ("paper", {"budget_unit": "steps"}, "budget=None"),
])
def test_bad_parameters_name_themselves(preset, overrides, message):
    if message is None:
        assert ex.resolve_config(preset, **overrides).budget_unit == "epochs"
        return
    with pytest.raises(ValueError, match=message):
        ex.resolve_config(preset, **overrides)


def test_none_keeps_the_preset_value():
    config = ex.resolve_config("cpu", num_members=None, complexities=[2, 4])
    assert config.num_members == ex.PRESETS["cpu"].num_members and config.complexities == (2, 4)


def test_training_steps_follow_the_budget_unit():
    paper = ex.resolve_config("paper")
    assert [ex.training_steps(paper, C) for C in (1, 2, 4, 8)] == [200_020, 200_020, 300_020, 400_020]
    assert ex.training_steps(paper, 4, n_train=2_500, match="epochs") == 75_005  # 5 batches per epoch (A2)
    assert ex.training_steps(paper, 4, n_train=2_500, match="steps") == 300_020
    cpu = ex.resolve_config("cpu", budget=2_000)
    assert ex.training_steps(cpu, 8) == 2_000
    # batch 128: 79 steps per epoch at n = 10,000 and 20 at n = 2,500, so 2,000 steps are 25.3 epochs
    assert cpu.train.batch_size == 128 and ex.training_steps(cpu, 4, n_train=2_500, match="epochs") == 506


@pytest.mark.parametrize("overrides, part, grows_with", [
    ({"n_train": 10**12}, "the members' training draws",
     "n_train=1000000000000, num_members=4 and train.batch_size=500"),
    ({"budget": 10**12}, "the training losses", "budget=1000000000000 and num_members=4"),
    ({"num_generated": 10**11, "n_train": 10**11}, "sampling all members at once", "num_generated=100000000000"),
    ({"complexities": [2, 10**9]}, "a minibatch's activations",
     r"train.batch_size=500, num_members=4 and complexities=\(2, 1000000000\)"),
    ({"ring": ex.RingSettings(trunc_factor=float("inf"))}, None, "ring.trunc_factor=inf must be a finite real"),
])
def test_sizes_beyond_the_memory_available_are_refused_naming_them(overrides, part, grows_with):
    message = grows_with if part is None else rf"GB of memory.*the largest part, {part}.*grows with {grows_with}"
    with pytest.raises(ValueError, match=message):
        ex.resolve_config("smoke", **overrides)


def test_memory_estimate_of_the_presets_is_a_few_gigabytes_at_most():
    totals = {name: sum(t.nbytes for t in ex.memory_estimate(ex.PRESETS[name])) for name in ex.PRESETS}
    assert totals["smoke"] < totals["cpu"] < totals["paper"] < 4e9  # paper: 30 members sampling 10,000 points each


def test_member_seeds_follow_A4():
    config = ex.resolve_config("smoke", base_seed=5)
    assert ex.member_seeds(config, 4) == [4005, 4006, 4007, 4008]


def test_evaluation_sets_drop_non_finite_and_truncate_real():
    heldout = np.arange(20.0).reshape(10, 2)
    fake = np.ones((6, 2))
    fake[2, 1] = np.inf
    real, kept = ex.evaluation_sets(heldout, fake)
    assert kept.shape == (5, 2) and np.array_equal(real, heldout[:5])


def test_small_training_set_is_evaluated_on_as_many_points():
    config = ex.resolve_config("smoke")
    small = ex.ring_data(config, n_train=config.small_n)
    assert len(small["train"]) == 1_000 and len(small["heldout"]) == config.num_generated


def test_variance_decomposition_is_exact():
    values = np.random.default_rng(0).normal(size=(6, 4, 30)) + np.arange(6)[:, None, None] * 0.1
    parts = stats.variance_decomposition(values)
    np.testing.assert_allclose(parts["total"], parts["model"] + parts["sampling"], rtol=1e-12)
    bands = stats.decomposition_bands(values)
    for name in ("total", "model", "sampling"):
        assert np.all(bands[name][0] <= bands[name][1])


@pytest.mark.parametrize("fn", [stats.variance_decomposition, stats.decomposition_bands])
def test_variance_decomposition_refuses_wrong_dimensions_empty_axes_and_nan(fn):
    """A 2-D array was decomposed along the wrong axes into scalars, and a NaN gave NaN parts silently."""
    values = np.random.default_rng(1).random((4, 3, 20))
    with pytest.raises(ValueError, match=r"^values must be a \(M, R, G\) array; got shape \(4, 20\) \(2-D\)"):
        fn(values[:, 0])
    with pytest.raises(ValueError, match=r"^values must be a \(M, R, G\) array .* got shape \(4, 0, 20\)"):
        fn(values[:, :0])
    values[2, 1, 7] = np.nan
    with pytest.raises(ValueError, match=r"^values holds 1 non-finite value\(s\) \(first at index \(2, 1, 7\)"):
        fn(values)


def test_resampled_curves_hold_the_member_fixed_and_vary_the_evaluation():
    config = ex.resolve_config("smoke", num_generated=400)
    data = ex.ring_data(config, n_train=400)
    samples = np.stack([data["train"], data["train"] + 0.3]).astype(np.float32)
    main = ex.member_curves(config, complexity=2, heldout=data["heldout"], samples=samples)
    assert main["precision"].shape == (2, 1, 202)
    for method in ex.RESAMPLING:
        draws = ex.member_curves(config, complexity=2, heldout=data["heldout"], samples=samples, resample=method,
                                 num_draws=3)
        assert draws["precision"].shape == (2, 3, 202)
        assert not np.allclose(draws["precision"][0, 0], draws["precision"][0, 1])
        auc = np.array([[prcurves.auc_raw({"precision": p, "recall": r}) for p, r in zip(*member)]
                        for member in zip(draws["precision"], draws["recall"])])
        assert auc[0].min() > auc[1].max()  # the shifted member stays worse under every draw


@pytest.mark.parametrize("complexities, compare, small", [
    ([1, 8], (8, 1), (8,)),  # neither 2 nor 4: once refused, though valid
    ([2, 8], (8, 2), (8,)),
    ([1, 2, 4], (4, 2), (4,)),  # the presets' values still fit: kept
    ([4, 8], (8, 4), (4,)),
])
def test_compare_and_small_complexities_follow_complexities(complexities, compare, small):
    """The notebook exposes COMPLEXITIES but neither compare nor small_complexities."""
    config = ex.resolve_config("smoke", complexities=complexities)
    assert config.compare == compare and config.small_complexities == small


def test_given_compare_is_never_rewritten():
    with pytest.raises(ValueError, match="compare="):
        ex.resolve_config("smoke", complexities=[1, 8], compare=(4, 2), small_complexities=(8,))
    config = ex.resolve_config("smoke", complexities=[1, 2, 8], compare=(1, 2), small_complexities=(2,))
    assert config.compare == (1, 2) and config.small_complexities == (2,)


def test_one_complexity_is_refused_with_the_reason():
    with pytest.raises(ValueError, match=r"complexities=\(8,\) needs at least two entries"):
        ex.resolve_config("smoke", complexities=[8])


def _fake_ensemble(complexity: int, m: int, shift: float, seed: int) -> dict:
    """A `run_ensemble`-shaped result of m synthetic member curves (precision 1 - recall^k, k per member)."""
    rng = np.random.default_rng(seed)
    recall = np.linspace(0.0, 1.0, 50)
    curves = [{"precision": np.clip(1 - recall ** (shift + rng.uniform(1, 3)), 0, 1), "recall": recall,
               "lambdas": np.linspace(0, 1, 50)} for _ in range(m)]
    return {"complexity": complexity, "n_train": 100, "num_steps": 10, "losses": rng.random((10, m)),
            "samples": rng.random((m, 5, 2)), "num_dropped": np.zeros(m, int), "curves": curves,
            "summary": [prcurves.summarise(c) for c in curves],
            "band": prcurves.ensemble_band(curves, 1000)}


def test_first_members_are_an_ensemble_of_m_and_the_members_study_reads_them():
    config = ex.resolve_config("smoke", complexities=[2, 4], num_members=6)
    results = {2: _fake_ensemble(2, 6, 0.0, 0), 4: _fake_ensemble(4, 6, 1.0, 1)}
    three = ex.first_members(config, results[4], 3)
    assert len(three["curves"]) == 3 and three["losses"].shape == (10, 3) and three["samples"].shape[0] == 3
    alone = prcurves.ensemble_band(results[4]["curves"][:3], config.grid_size)
    assert np.array_equal(three["band"]["members"], alone["members"])
    assert np.array_equal(three["band"]["lo"], alone["lo"])
    with pytest.raises(ValueError, match="m=7"):
        ex.first_members(config, results[4], 7)
    study = ex.members_study(config, results, (3, 6))
    assert list(study.index) == ["3 (ours)", "6 (ours)", "30 (paper)"]
    full = {(r["test"], r["correction"]): r["fraction"] for r in ex.compare_ensembles(results[4], results[2], config)}
    assert study.loc["6 (ours)", "paired_t"] == full["paired_t", "none"]
    assert study.loc["6 (ours)", "paired_t bh"] == full["paired_t", "bh"]
    assert study.loc["6 (ours)", "permutation_maxT"] == full["permutation_maxT", "none"]
    assert study.loc["3 (ours)", "AUC C=4"] == pytest.approx(ex.summary_row(three)["auc_mean"])
    assert study.loc["30 (paper)", "paired_t"] == paper.FRACTION_PAIRED_T
    assert study.loc["30 (paper)", "width C=2"] == paper.TABLE[2]["width"]
