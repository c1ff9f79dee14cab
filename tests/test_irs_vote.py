"""The extractor vote (lib.irs.vote): consensus against a query-by-query Counter, agreement rates by hand,
leave-one-out, the paper's threshold, ranking comparison."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from lib.irs import vote


def consensus_by_counter(retrievals: np.ndarray, min_agree: int) -> np.ndarray:
    """The consensus index of each query by counting its column (independent of lib.irs.vote)."""
    out = []
    for column in retrievals.T:
        (first, n1), *rest = Counter(column.tolist()).most_common()
        tie = bool(rest) and rest[0][1] == n1
        out.append(first if n1 >= min_agree and not tie else -1)
    return np.array(out)


def test_consensus_known_answer():
    retrievals = np.array([[1, 2, 3, 4],
                           [1, 2, 5, 6],
                           [1, 7, 5, 8],
                           [9, 7, 3, 4]])
    result = vote.consensus(retrievals, 2)
    # query 0: 1 has 3 votes; query 1: 2 and 7 tie at 2; query 2: 3 and 5 tie; query 3: 4 has 2 votes
    assert result["index"].tolist() == [1, -1, -1, 4]
    assert result["votes"].tolist() == [3, 2, 2, 2]
    assert vote.consensus(retrievals, 3)["index"].tolist() == [1, -1, -1, -1]


@pytest.mark.parametrize("min_agree", [1, 2, 3, 4, 6])
def test_consensus_matches_counter(min_agree):
    rng = np.random.default_rng(min_agree)
    retrievals = rng.integers(0, 4, size=(6, 500))  # few indices: many agreements and ties
    assert np.array_equal(vote.consensus(retrievals, min_agree)["index"], consensus_by_counter(retrievals, min_agree))


def test_consensus_refuses_bad_threshold():
    with pytest.raises(ValueError, match="min_agree"):
        vote.consensus(np.zeros((3, 5), int), 4)


def test_agreement_rates_by_hand():
    retrievals = np.array([[1, 2, 3], [1, 2, 9], [1, 8, 3]])
    index = np.array([1, 2, -1])
    assert vote.agreement_rates(retrievals, index).tolist() == [1.0, 1.0, 0.5]
    assert np.isnan(vote.agreement_rates(retrievals, np.array([-1, -1, -1]))).all()


def test_identical_extractors_agree_fully_and_outlier_least():
    rng = np.random.default_rng(0)
    base = rng.integers(0, 1000, 300)
    noisy = np.where(rng.random(300) < 0.5, rng.integers(0, 1000, 300), base)
    rows = vote.vote_table({"a": base, "b": base, "c": base, "noisy": noisy}, thresholds=(3,))
    row = rows[0]
    assert row["share"] == 1.0  # three identical rows always form a consensus
    assert row["rates"]["a"] == 1.0 and row["rates"]["noisy"] == pytest.approx(np.mean(noisy == base))
    assert row["loo_rates"]["noisy"] == pytest.approx(np.mean(noisy == base))
    assert row["chosen"] is None and row["chosen_loo"] is None  # the three twins tie at the top


def test_share_falls_with_threshold():
    rng = np.random.default_rng(1)
    retrievals = {f"e{i}": rng.integers(0, 5, 400) for i in range(5)}
    shares = [row["share"] for row in vote.vote_table(retrievals)]
    assert all(a >= b for a, b in zip(shares[1:], shares[2:]))  # from 3 on no ties: monotone
    assert [row["min_agree"] for row in vote.vote_table(retrievals)] == [2, 3, 4, 5]


def test_best_refuses_ties():
    assert vote.best({"a": 0.5, "b": 0.9}) == "b"
    assert vote.best({"a": 1.0, "b": 1.0}) is None and vote.best({"a": np.nan}) is None
    rows = vote.vote_table({"a": np.array([1, 2]), "b": np.array([1, 3])}, thresholds=(2,))
    assert rows[0]["rates"] == {"a": 1.0, "b": 1.0} and rows[0]["chosen"] is None  # all-agree: no choice


def test_paper_threshold():
    assert vote.paper_threshold(9) == 5
    assert vote.paper_threshold(6) == 4  # 6 * 5 / 9 = 3.33
    assert vote.paper_threshold(3) == 2


def test_compare_rankings():
    rates = {"a": 0.9, "b": 0.5, "c": 0.7}
    slope_gaps = {"a": 0.05, "b": 0.6, "c": 0.1}  # |slope - 1|: a most linear
    out = vote.compare_rankings(rates, slope_gaps)
    assert out["vote_order"] == ["a", "c", "b"] and out["linear_order"] == ["a", "c", "b"]
    assert out["same_best"] and out["tau"] == pytest.approx(1.0)
    reversed_out = vote.compare_rankings(rates, {"a": 0.6, "b": 0.05, "c": 0.1})
    assert not reversed_out["same_best"] and reversed_out["tau"] == pytest.approx(-1.0)  # order b, c, a: reversed


def test_pairwise_agreement_and_bloc():
    rng = np.random.default_rng(2)
    base = rng.integers(0, 50, 400)
    twin = np.where(rng.random(400) < 0.05, rng.integers(0, 50, 400), base)  # a near copy of one space
    others = {f"o{i}": np.where(rng.random(400) < 0.6, rng.integers(0, 50, 400), base) for i in range(4)}
    retrievals = {"base": base, "twin": twin, **others}
    pairs = vote.pairwise_agreement(retrievals)
    assert pairs["base"]["base"] == 1.0 and pairs["base"]["twin"] == pairs["twin"]["base"]
    assert pairs["base"]["twin"] == pytest.approx(np.mean(base == twin))
    summary = vote.vote_summary(retrievals, {name: 0.1 for name in retrievals} | {"o0": 0.0})
    assert summary["bloc"] == ["base", "twin"] and summary["bloc_agreement"] > summary["median_pair_agreement"]
    assert summary["threshold"] == 4 and summary["merged_threshold"] == 3
    assert summary["chosen"] in ("base", "twin") and summary["ranking"]["linear_order"][0] == "o0"
    assert not summary["ranking"]["same_best"]


def test_vote_summary_needs_two_extractors():
    with pytest.raises(ValueError, match="at least 2 extractors"):
        vote.vote_summary({"pixels": np.arange(5)}, {"pixels": 0.1})
    two = vote.vote_summary({"a": np.array([1, 2, 3]), "b": np.array([1, 2, 4])}, {"a": 0.1, "b": 0.2})
    assert two["threshold"] == 2 and two["share"] == pytest.approx(2 / 3) and two["merged_chosen"] == "a"
