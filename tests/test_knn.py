import numpy as np
import pytest
from scipy.spatial.distance import cdist

from lib import knn


def brute_knn(queries, base, k):
    dist = cdist(queries, base)
    order = np.argsort(dist, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(dist, order, 1), order


@pytest.mark.parametrize("dim", [2, 17])
def test_exact_knn_matches_brute_force(dim):
    rng = np.random.default_rng(dim)
    base, queries = rng.normal(size=(3_000, dim)) + 50.0, rng.normal(size=(500, dim)) + 50.0  # far from 0
    result = knn.exact_knn(queries, base, 10, query_chunk=128)
    dist, idx = brute_knn(queries, base, 10)
    np.testing.assert_array_equal(result["indices"], idx)
    np.testing.assert_allclose(result["distances"], dist, rtol=1e-12)


def test_exact_knn_resolves_ties_by_index():
    base = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, -1.0], [-1.0, 0.0], [5.0, 5.0]])
    result = knn.exact_knn(np.zeros((1, 2)), base, 3, margin=0)
    np.testing.assert_array_equal(result["indices"], [[0, 1, 2]])


def test_float32_search_chunked_over_base_equals_unchunked():
    rng = np.random.default_rng(1)
    base, queries = rng.normal(size=(2_000, 8)), rng.normal(size=(300, 8))
    d1, i1 = knn.knn_search(queries, base, 7)
    d2, i2 = knn.knn_search(queries, base, 7, query_chunk=64, base_chunk=300)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_allclose(d1, d2, rtol=1e-6)


def brute_counts(queries, base, groups, k):
    dist = cdist(queries, base)
    radius = np.sort(dist, axis=1)[:, k - 1]
    inside = dist <= radius[:, None]
    return radius, np.stack([(inside & (groups == g)).sum(1) for g in range(groups.max() + 1)], axis=1)


def test_neighbourhood_counts_match_brute_force():
    rng = np.random.default_rng(2)
    base, queries = rng.normal(size=(2_500, 2)) * 0.1 + 5.0, rng.normal(size=(400, 2)) * 0.1 + 5.0
    groups = rng.integers(0, 2, len(base))
    result = knn.neighbourhood_counts(queries, base, groups, 40, query_chunk=100)
    radius, counts = brute_counts(queries, base, groups, 40)
    np.testing.assert_allclose(result["radius"], radius, rtol=1e-12)
    np.testing.assert_array_equal(result["counts"], counts)


def test_neighbourhood_counts_include_every_tie():
    rng = np.random.default_rng(3)
    base = rng.integers(0, 4, size=(600, 2)).astype(float)  # a 4x4 lattice: massive ties and duplicates
    queries = rng.integers(0, 4, size=(50, 2)).astype(float)
    groups = rng.integers(0, 3, len(base))
    result = knn.neighbourhood_counts(queries, base, groups, 25, margin=4)
    radius, counts = brute_counts(queries, base, groups, 25)
    np.testing.assert_array_equal(result["counts"], counts)
    assert np.all(result["counts"].sum(1) >= 25) and np.any(result["counts"].sum(1) > 25)


def test_k_out_of_range_is_refused():
    with pytest.raises(ValueError, match="k=5"):
        knn.knn_search(np.zeros((2, 2)), np.zeros((3, 2)), 5)


def test_backend_choice_follows_dimension_and_size():
    """A k-d tree in low dimension, a float32 GEMM brute force otherwise."""
    assert knn.choose_backend(2, 50_000) == "kdtree" and knn.choose_backend(knn.KDTREE_MAX_DIM, 1_000) == "kdtree"
    assert knn.choose_backend(knn.KDTREE_MAX_DIM + 1, 50_000) == "gemm" and knn.choose_backend(512, 10**6) == "gemm"
    assert knn.choose_backend(2, knn.KDTREE_MIN_BASE - 1) == "gemm"
    assert knn.choose_backend(512, 10, "kdtree") == "kdtree"
    with pytest.raises(ValueError, match="backend='ball'"):
        knn.exact_knn(np.zeros((2, 2)), np.zeros((3, 2)), 1, backend="ball")


def lattice_or_continuous(kind, dim, rng):
    if kind == "lattice":  # duplicates and ties at every distance
        return (rng.integers(0, 6, size=(2_000, dim)).astype(float), rng.integers(0, 6, size=(300, dim)) + 0.0)
    return rng.normal(size=(2_000, dim)) * 0.01 + 40.0, rng.normal(size=(300, dim)) * 0.01 + 40.0  # far from 0


@pytest.mark.parametrize("kind", ["lattice", "continuous"])
@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("k, margin", [(1, 16), (30, 0), (45, 16)])
def test_every_backend_gives_identical_neighbours_and_counts(kind, dim, k, margin):
    """Exact every way: the same neighbour indices (ties by lower index), the same float64 radii and
    the same per-group counts (every point at the k-th distance counted) as brute force."""
    rng = np.random.default_rng(dim * 100 + k)
    base, queries = lattice_or_continuous(kind, dim, rng)
    groups = rng.integers(0, 3, len(base))
    knns = {b: knn.exact_knn(queries, base, k, margin=margin, backend=b) for b in ("gemm", "faiss", "kdtree")}
    counts = {b: knn.neighbourhood_counts(queries, base, groups, k, margin=margin, backend=b)
              for b in ("gemm", "faiss", "kdtree")}
    for other in ("gemm", "faiss"):
        for key in ("indices", "distances"):
            np.testing.assert_array_equal(knns["kdtree"][key], knns[other][key])
        for key in ("radius", "counts"):
            np.testing.assert_array_equal(counts["kdtree"][key], counts[other][key])
    dist, idx = brute_knn(queries, base, k)
    np.testing.assert_array_equal(knns["kdtree"]["indices"], idx)
    radius, brute = brute_counts(queries, base, groups, k)
    np.testing.assert_array_equal(counts["kdtree"]["counts"], brute)
    if kind == "lattice":
        assert np.any(counts["kdtree"]["counts"].sum(1) > k)  # the ties really are there


@pytest.mark.parametrize("num", [1, 5, 13])
def test_smallest_finds_the_smallest_values_of_each_row_with_ties(num):
    """By group minima first: the same multiset of values as a full sort, columns that hold those values."""
    rng = np.random.default_rng(num)
    block = rng.integers(0, 50, size=(40, 4 * knn.GROUP * num + 7 * knn.GROUP)).astype(np.float32)  # many ties
    block[:, -5:] = np.inf
    values, cols = knn._smallest(block, num)
    np.testing.assert_array_equal(np.sort(values, axis=1), np.sort(block, axis=1)[:, :num])
    np.testing.assert_array_equal(np.take_along_axis(block, cols, 1), values)
    assert all(len(set(row)) == num for row in cols)  # no column twice


def heavy_tailed_with_ties(rng):
    """Student-t(1) features (a few points with norms thousands of times the median) with duplicated rows, and
    queries that copy base points: exact ties at every distance the duplicates share."""
    base = rng.standard_t(1, size=(1_500, 48))
    base[500:900] = base[:400]
    queries = np.concatenate([base[rng.integers(0, 1_500, 60)], rng.standard_t(1, size=(60, 48))])
    return base, queries


@pytest.mark.parametrize("margin", [0, 8])
def test_heavy_tailed_and_tied_inputs_match_brute_force(margin):
    rng = np.random.default_rng(margin)
    base, queries = heavy_tailed_with_ties(rng)
    groups = rng.integers(0, 3, len(base))
    for k in (1, 7):
        result = knn.exact_knn(queries, base, k, margin=margin)
        dist, idx = brute_knn(queries, base, k)
        np.testing.assert_array_equal(result["indices"], idx)
        np.testing.assert_allclose(result["distances"], dist, rtol=1e-12)
        counts = knn.neighbourhood_counts(queries, base, groups, k, margin=margin)
        np.testing.assert_array_equal(counts["counts"], brute_counts(queries, base, groups, k)[1])
    assert np.any(counts["counts"].sum(1) > 7)  # ties at the k-th distance


def test_float64_fallback_finds_every_point_within_the_kth_distance():
    """The pass that uncertain rows get: all points within the k-th distance, ties included, in (distance, index)
    order, as brute force has them."""
    rng = np.random.default_rng(4)
    base, queries = heavy_tailed_with_ties(rng)
    centred = knn._Centred(base)
    rows = knn._within_kth(queries - centred.mean, centred, 3)
    dist = cdist(queries, base)
    for row, (sq, ids) in enumerate(rows):
        kth = np.sort(dist[row])[2]
        expected = np.flatnonzero(dist[row] <= kth)
        expected = expected[np.lexsort((expected, dist[row][expected]))]
        np.testing.assert_array_equal(ids, expected)
        np.testing.assert_allclose(np.sqrt(sq), dist[row][expected], rtol=1e-12)
    assert max(len(ids) for _, ids in rows) > 3  # duplicates tie
