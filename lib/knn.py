"""Exact k-nearest-neighbour search on faiss, chunked so that no N x N matrix is ever built.

Shared by notebooks 01 (PR curves), 02 (captions) and 04 (retrieval). faiss computes squared L2
distances in float32 (with the ||q||^2 + ||x||^2 - 2 q.x expansion, which loses precision far from
the origin); `exact_knn` and `neighbourhood_counts` therefore take a few extra float32 candidates,
recompute their distances in float64, and fall back to a float64 brute-force pass for the rare rows
where float32 rounding could have hidden a neighbour. Their results are the exact float64 ones.

In low dimension a k-d tree (`scipy.spatial.cKDTree`) finds the same candidates in about O(n log N)
instead of faiss's O(n N) brute force (2-D, as notebook 01's PR curves: 2.2x faster at n = 1,000, 3.7x
at 20,000, one thread each; benchmarks/bench_knn.py and benchmarks/README.md):
`exact_knn` and `neighbourhood_counts` pick the candidate search with `choose_backend` (dimension and
base size) and refine both the same way, so both backends return identical results, ties included.
"""

from __future__ import annotations

import faiss
import numpy as np
from scipy.spatial import cKDTree

EPS32 = float(np.finfo(np.float32).eps)
EPS64 = float(np.finfo(np.float64).eps)
BACKENDS = ("auto", "faiss", "kdtree")
KDTREE_MAX_DIM = 4  # benchmarks/bench_knn.py: the tree wins at D <= 4 at every size tried (1.8-4x), not always above
KDTREE_MIN_BASE = 1_000  # the smallest size measured (tree 1.8x faster there); below, faiss needs no build


def choose_backend(dim: int, num_base: int, backend: str = "auto") -> str:
    """"kdtree" for low dimension (<= KDTREE_MAX_DIM) and a base of at least KDTREE_MIN_BASE points,
    else "faiss"; an explicit "faiss" or "kdtree" is returned as is. Both give exact results."""
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r} must be one of {BACKENDS}.")
    if backend != "auto":
        return backend
    return "kdtree" if dim <= KDTREE_MAX_DIM and num_base >= KDTREE_MIN_BASE else "faiss"


def knn_search(queries: np.ndarray, base: np.ndarray, k: int, *, query_chunk: int = 8192,
               base_chunk: int = 262_144) -> tuple[np.ndarray, np.ndarray]:
    """faiss float32 kNN: squared L2 distances (nq, k) float32 ascending and base indices (nq, k) int64.

    Memory stays at O(query_chunk * (k + base_chunk)) beyond the inputs: queries are processed in
    chunks, and a base larger than `base_chunk` rows is searched block by block, merging top-k lists.
    """
    if not 1 <= k <= len(base):
        raise ValueError(f"k={k} must lie in [1, {len(base)}] (the number of base points).")
    queries, base = np.ascontiguousarray(queries, np.float32), np.ascontiguousarray(base, np.float32)
    dist = np.empty((len(queries), k), np.float32)
    idx = np.empty((len(queries), k), np.int64)
    for q0 in range(0, len(queries), query_chunk):
        rows = slice(q0, q0 + query_chunk)
        dist[rows], idx[rows] = _search_blocks(queries[rows], base, k, base_chunk)
    return dist, idx


def _search_blocks(queries: np.ndarray, base: np.ndarray, k: int, base_chunk: int) -> tuple[np.ndarray, np.ndarray]:
    best_d = np.full((len(queries), 0), np.inf, np.float32)
    best_i = np.empty((len(queries), 0), np.int64)
    for b0 in range(0, len(base), base_chunk):
        block = base[b0 : b0 + base_chunk]
        d, i = faiss.knn(queries, block, min(k, len(block)))
        best_d, best_i = np.hstack([best_d, d]), np.hstack([best_i, i + b0])
        if best_d.shape[1] > k:  # keep the k best of the merged lists
            keep = np.argsort(best_d, axis=1, kind="stable")[:, :k]
            best_d, best_i = np.take_along_axis(best_d, keep, 1), np.take_along_axis(best_i, keep, 1)
    return best_d, best_i


def _float32_error_bound(queries: np.ndarray, base: np.ndarray) -> np.ndarray:
    """A generous bound (per query) on faiss's float32 error in a squared distance."""
    dim = queries.shape[1]
    scale = np.einsum("ij,ij->i", queries, queries) + np.max(np.einsum("ij,ij->i", base, base))
    return 8.0 * (dim + 2) * EPS32 * scale


def _centred(queries: np.ndarray, base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Queries and base moved to the base's mean (float64): centring shrinks the float32 cancellation
    error of ||q||^2 + ||x||^2 - 2 q.x in faiss."""
    center = np.asarray(base, np.float64).mean(axis=0)
    base_c = np.asarray(base, np.float64) - center
    return np.asarray(queries, np.float64) - center, base_c


def _rows_per_chunk(requested: int | None, width: int, dim: int, budget_bytes: int = 1 << 27) -> int:
    """Query rows per chunk so that a (rows, width, dim) float64 temporary stays within the budget."""
    fit = max(1, budget_bytes // (8 * width * dim))
    return min(fit, requested) if requested else min(fit, 4096)


class _CandidateSearch:
    """The k + margin nearest candidates of query rows, by faiss (float32, brute force) or a cKDTree
    (float64); `bound` is a per-row bound on the error of the search's own squared distances."""

    def __init__(self, base_c: np.ndarray, backend: str):
        self.backend = choose_backend(base_c.shape[1], len(base_c), backend)
        if self.backend == "kdtree":
            self.tree = cKDTree(base_c, balanced_tree=False, compact_nodes=False)
            self.workers = max(1, faiss.omp_get_max_threads())  # the thread count faiss would use
        else:
            self.base32 = base_c.astype(np.float32)
        self.base_c = base_c

    def __call__(self, q: np.ndarray, num: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self.backend == "faiss":
            sq, idx = knn_search(q, self.base32, num)
            return sq, idx, _float32_error_bound(q, self.base_c)
        dist, idx = self.tree.query(q, k=num, workers=self.workers)
        dist, idx = dist.reshape(len(q), num), idx.reshape(len(q), num)
        scale = np.einsum("ij,ij->i", q, q) + np.max(np.einsum("ij,ij->i", self.base_c, self.base_c))
        return dist**2, idx.astype(np.int64), 8.0 * (q.shape[1] + 2) * EPS64 * scale


def _exact_candidates(q: np.ndarray, base_c: np.ndarray, search: _CandidateSearch, k: int, margin: int):
    """Float64 squared distances to the k + margin candidates of `search`, sorted; plus a per-row flag
    that is True where a point outside the candidates might still lie within the k-th distance."""
    if not 1 <= k <= len(base_c):
        raise ValueError(f"k={k} must lie in [1, {len(base_c)}] (the number of base points).")
    num = min(k + margin, len(base_c))
    sq32, idx, bound = search(q, num)
    diff = q[:, None, :] - base_c[idx]
    sq64 = np.einsum("ijd,ijd->ij", diff, diff)
    order = np.argsort(sq64, axis=1, kind="stable")
    sq64, idx = np.take_along_axis(sq64, order, 1), np.take_along_axis(idx, order, 1)
    if num == len(base_c):  # every point is a candidate
        return sq64, idx, np.zeros(len(q), bool)
    return sq64, idx, sq32[:, -1] - bound <= sq64[:, k - 1]


def _brute_force_sq(queries: np.ndarray, base: np.ndarray, chunk: int = 4096) -> np.ndarray:
    """Exact float64 squared distances (nq, N) for a few queries (nq small), base processed in chunks."""
    out = np.empty((len(queries), len(base)))
    for b0 in range(0, len(base), chunk):
        diff = queries[:, None, :] - base[None, b0 : b0 + chunk, :]
        out[:, b0 : b0 + chunk] = np.einsum("ijd,ijd->ij", diff, diff)
    return out


def exact_knn(queries: np.ndarray, base: np.ndarray, k: int, *, margin: int = 16,
              query_chunk: int | None = None, backend: str = "auto") -> dict:
    """Exact k nearest base points of each query, in float64.

    queries: (nq, D), base: (N, D) float. Returns {"distances": (nq, k) float64 Euclidean, ascending;
    "indices": (nq, k) int64}. Ties keep the lower base index first. Queries go in chunks sized so that
    the refinement's temporaries stay near 128 MB (or `query_chunk` rows). backend: the candidate
    search, "auto" (`choose_backend`), "faiss" or "kdtree"; the result does not depend on it.
    """
    queries, base_c = _centred(queries, base)
    search = _CandidateSearch(base_c, backend)
    dist, idx = np.empty((len(queries), k)), np.empty((len(queries), k), np.int64)
    step = _rows_per_chunk(query_chunk, k + margin, base_c.shape[1])
    for q0 in range(0, len(queries), step):
        q = queries[q0 : q0 + step]
        sq, ids, unsure = _exact_candidates(q, base_c, search, k, margin)
        sq, ids = _stable_by_index(sq, ids)
        if sq.shape[1] < len(base_c):
            unsure |= sq[:, -1] <= sq[:, k - 1]  # ties at the k-th distance may continue past the candidates
        for row in np.flatnonzero(unsure):
            full = _brute_force_sq(q[row : row + 1], base_c)[0]
            ids[row, :k] = np.argsort(full, kind="stable")[:k]
            sq[row, :k] = full[ids[row, :k]]
        dist[q0 : q0 + len(q)], idx[q0 : q0 + len(q)] = np.sqrt(sq[:, :k]), ids[:, :k]
    return {"distances": dist, "indices": idx}


def _stable_by_index(sq: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort each row by (distance, index), so that ties do not depend on faiss's internal order."""
    order = np.lexsort((ids, sq), axis=1)
    return np.take_along_axis(sq, order, 1), np.take_along_axis(ids, order, 1)


def neighbourhood_counts(queries: np.ndarray, base: np.ndarray, groups: np.ndarray, k: int, *,
                         margin: int = 16, query_chunk: int | None = None, backend: str = "auto") -> dict:
    """For each query z: r_k(z), its k-th smallest distance to `base` (1-indexed), and, per group g,
    #{x in base with groups[x] == g and d(z, x) <= r_k(z)}: every point at the k-th distance counts,
    so ties can push the total above k. Exact in float64.

    queries: (nq, D); base: (N, D); groups: (N,) int in [0, G). Returns {"radius": (nq,) float64,
    "counts": (nq, G) int64}. backend: as in `exact_knn`; the result does not depend on it.
    """
    queries, base_c = _centred(queries, base)
    search = _CandidateSearch(base_c, backend)
    groups = np.asarray(groups, np.int64)
    num_groups = int(groups.max()) + 1
    radius, counts = np.empty(len(queries)), np.zeros((len(queries), num_groups), np.int64)
    step = _rows_per_chunk(query_chunk, k + margin, base_c.shape[1])
    for q0 in range(0, len(queries), step):
        q = queries[q0 : q0 + step]
        sq, ids, unsure = _exact_candidates(q, base_c, search, k, margin)
        r2 = sq[:, k - 1]
        if sq.shape[1] < len(base_c):
            unsure |= sq[:, -1] <= r2  # a run of ties reaching past the candidates
        inside = sq <= r2[:, None]
        rows = np.repeat(np.arange(len(q)), inside.sum(1))
        flat = np.bincount(rows * num_groups + groups[ids[inside]], minlength=len(q) * num_groups)
        block = flat.reshape(len(q), num_groups)
        for row in np.flatnonzero(unsure):
            full = _brute_force_sq(q[row : row + 1], base_c)[0]
            r2[row] = np.partition(full, k - 1)[k - 1]
            block[row] = np.bincount(groups[full <= r2[row]], minlength=num_groups)
        radius[q0 : q0 + len(q)], counts[q0 : q0 + len(q)] = np.sqrt(r2), block
    return {"radius": radius, "counts": counts}


def _float32_minus(rows: np.ndarray, mean: np.ndarray | None, step: int = 4096) -> np.ndarray:
    """float32(rows - mean), the difference taken in float64 a few thousand rows at a time, so that no
    float64 copy of `rows` exists (each element rounds exactly as a whole-array subtraction would)."""
    if mean is None:
        return np.ascontiguousarray(rows, np.float32)
    out = np.empty(rows.shape, np.float32)
    for r0 in range(0, len(rows), step):
        out[r0 : r0 + step] = rows[r0 : r0 + step] - mean
    return out


def nearest_neighbour(queries: np.ndarray, base: np.ndarray, *, center: bool = True, base_chunk: int = 65_536,
                      query_chunk: int = 16_384) -> tuple[np.ndarray, np.ndarray]:
    """1-NN by streaming the base: (squared L2 distances (nq,) float32, base indices (nq,) int64).

    For bases too large to copy (notebook 04 at paper scale: 1.28 M x 2048 float32 is 10.5 GB). The base
    is read block by block (`base_chunk` rows); with `center=True` the base mean (accumulated in float64
    over the blocks) is subtracted from each block and from the queries, a float32 copy of one block at a
    time, which shrinks the float32 cancellation in ||q||^2 + ||x||^2 - 2 q.x. Memory beyond the inputs:
    one block, the centred queries and the per-query best. Ties go to the lowest base index (faiss keeps
    the first of equal distances within a block; a later block must be strictly closer). A query whose
    float32 distances to every base row overflow keeps distance inf (faiss reports index -1 there, which
    must not become row b0 - 1 of the previous block).
    """
    queries, base = np.asarray(queries), np.asarray(base)
    if base.ndim != 2 or queries.ndim != 2 or base.shape[1] != queries.shape[1] or len(base) == 0:
        raise ValueError(f"queries {queries.shape} and base {base.shape} must be (nq, D) and (N >= 1, D).")
    mean = np.zeros(base.shape[1])
    if center:
        for b0 in range(0, len(base), base_chunk):
            mean += base[b0 : b0 + base_chunk].sum(axis=0, dtype=np.float64)
        mean /= len(base)
    best_d = np.full(len(queries), np.inf, np.float32)
    best_i = np.zeros(len(queries), np.int64)
    q32 = _float32_minus(queries, mean if center else None)
    for b0 in range(0, len(base), base_chunk):
        block = _float32_minus(base[b0 : b0 + base_chunk], mean if center else None)
        for q0 in range(0, len(q32), query_chunk):
            rows = slice(q0, q0 + query_chunk)
            d, i = faiss.knn(q32[rows], block, 1)
            better = (d[:, 0] < best_d[rows]) & (i[:, 0] >= 0)  # -1: no finite distance in this block
            best_d[rows] = np.where(better, d[:, 0], best_d[rows])
            best_i[rows] = np.where(better, i[:, 0] + b0, best_i[rows])
    return best_d, best_i
