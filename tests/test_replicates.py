"""lib.replicates: comparisons over training seeds (known answers, the interval's coverage under the model it
assumes, the verdicts, bad input)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from lib.replicates import compare_over_seeds, log_ratio_se


def test_known_answer_three_seeds():
    c = compare_over_seeds([0.2, 0.3, 0.4], [0.05, 0.05, 0.05])
    half = stats.t.ppf(0.975, 2) * 0.1 / math.sqrt(3)  # sd of (0.2, 0.3, 0.4) is 0.1
    assert c.mean == pytest.approx(0.3) and c.spread == pytest.approx(0.1)
    assert (c.lower, c.upper) == pytest.approx((0.3 - half, 0.3 + half))
    assert c.training_sd == pytest.approx(math.sqrt(0.01 - 0.0025))
    assert c.verdict == "holds" and c.same_sign == 3 and c.seeds == 3


def test_verdicts_follow_the_interval_and_flip_with_the_sign():
    assert compare_over_seeds([-0.2, -0.3, -0.4], [0.05] * 3).verdict == "fails"
    assert compare_over_seeds([0.3, -0.1, 0.2], [0.05] * 3).verdict == "undecided"
    up, down = compare_over_seeds([0.1, 0.5], [0.0, 0.0]), compare_over_seeds([-0.1, -0.5], [0.0, 0.0])
    assert (up.lower, up.upper) == pytest.approx((-down.upper, -down.lower))


def test_one_seed_is_never_decided_and_keeps_the_sampling_interval():
    c = compare_over_seeds([0.5], [0.1])
    assert c.verdict == "undecided" and "one training seed" in c.why
    assert (c.lower, c.upper) == pytest.approx((0.5 - 1.959964 * 0.1, 0.5 + 1.959964 * 0.1), rel=1e-6)
    assert math.isnan(c.spread) and math.isnan(c.training_sd)


def test_the_interval_covers_the_effect_at_its_level_with_training_noise():
    """Under d_s = delta + t_s + e_s (tau = 0.1, se = 0.05), 3 seeds: the t interval covers delta in 95 % of 4,000
    draws (binomial 99.9 % band about +-1.1 points), while an interval of the sampling error alone does not."""
    rng = np.random.default_rng(0)
    delta, tau, se, reps = 0.2, 0.1, 0.05, 4000
    covered = naive = 0
    for _ in range(reps):
        d = delta + tau * rng.standard_normal(3) + se * rng.standard_normal(3)
        c = compare_over_seeds(d, [se] * 3)
        covered += c.lower <= delta <= c.upper
        naive += abs(d.mean() - delta) <= 1.96 * se / math.sqrt(3)
    assert abs(covered / reps - 0.95) < 0.012
    assert naive / reps < 0.75  # counting sampling noise alone undercovers badly


def test_log_ratio_se_inverts_a_symmetric_log_interval():
    est, se = 0.4, 0.07
    lower, upper = est * math.exp(-1.959964 * se), est * math.exp(1.959964 * se)
    assert log_ratio_se(lower, upper, level=0.95) == pytest.approx(se, rel=1e-6)


@pytest.mark.parametrize("effects, se, match", [
    ([], [], "1-d of one length"), ([0.1, 0.2], [0.1], "1-d of one length"),
    ([0.1, float("nan")], [0.1, 0.1], "finite"), ([0.1, 0.2], [0.1, -0.1], ">= 0"),
])
def test_bad_input_is_named(effects, se, match):
    with pytest.raises(ValueError, match=match):
        compare_over_seeds(effects, se)


def test_bad_level_and_interval_are_named():
    with pytest.raises(ValueError, match="level"):
        compare_over_seeds([0.1, 0.2], [0.1, 0.1], level=1.0)
    with pytest.raises(ValueError, match="0 < lower <= upper"):
        log_ratio_se(0.0, 0.5, level=0.95)
