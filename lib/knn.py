"""Exact k-nearest-neighbour search, chunked so that no N x N matrix is ever built.

Shared by notebooks 01 (PR curves), 02 (captions) and 04 (retrieval, PRDC). `exact_knn` and
`neighbourhood_counts` find k + margin candidates per query by an approximate squared distance, recompute
their distances in float64 from exact differences, and certify each row: a base point outside the candidates
is within the k-th distance only if its approximate distance is within the search's rounding bound of it. The
bound is per pair, 2 (D + 10) u (|q| + |x|)^2 for the float32 search (u = 2^-24), and a point that close has
|x| <= |q| + r_k, so heavy-tailed outliers no longer widen every row's bound. The earlier bound used the largest
norm of the whole base: on 10,000 x 512 Student-t(3) features 38.6 % of the rows of a radius search fell back to
a float64 pass over the base, one row at a time (benchmarks/README.md). The rare uncertain rows now get a float64
GEMM pass, a block of rows at a time, whose tiny error bound leaves a handful of points to decide exactly. Results
are the exact float64 ones (the squares of exact differences of the centred points, summed by einsum), ties by
lower index.

Candidate searches (`choose_backend`): "gemm", one float32 BLAS product [-2q, 1] . [x, ||x||^2] and `torch.topk`
over group minima (at one thread 3-4x faster than faiss's brute force here, and never slower than
`torch.cdist` + `topk`: benchmarks/bench_exact_knn.py); "faiss"; and in low dimension a k-d tree
(`scipy.spatial.cKDTree`), about O(n log N) instead of O(n N) (2-D, as notebook 01's PR curves: 2.2x faster than
faiss at n = 1,000, 3.7x at 20,000, one thread each; benchmarks/bench_knn.py). All give identical results, ties
included.
"""

from __future__ import annotations

import faiss
import numpy as np
import torch
from scipy.spatial import cKDTree

EPS32 = float(np.finfo(np.float32).eps)
EPS64 = float(np.finfo(np.float64).eps)
U32 = 2.0**-24  # float32 unit roundoff
GROUP = 32  # columns per group in `_smallest`
PAIR_ELEMENTS = 1 << 18  # float64 elements (2 MB) per temporary of the exact pair distances
BACKENDS = ("auto", "gemm", "faiss", "kdtree")
KDTREE_MAX_DIM = 4  # benchmarks/bench_knn.py: the tree wins at D <= 4 at every size tried (1.8-4x), not always above
KDTREE_MIN_BASE = 1_000  # the smallest size measured (tree 1.8x faster there); below, faiss needs no build


def choose_backend(dim: int, num_base: int, backend: str = "auto") -> str:
    """"kdtree" for low dimension (<= KDTREE_MAX_DIM) and a base of at least KDTREE_MIN_BASE points,
    else "gemm"; an explicit "gemm", "faiss" or "kdtree" is returned as is. All give exact results."""
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r} must be one of {BACKENDS}.")
    if backend != "auto":
        return backend
    return "kdtree" if dim <= KDTREE_MAX_DIM and num_base >= KDTREE_MIN_BASE else "gemm"


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


class _Centred:
    """A base (N, D) moved to its mean in float64, a block of rows at a time, so that no float64 copy of the whole
    base exists (each element rounds as float64(x) - mean over the whole array would). Centring shrinks the
    float32 cancellation error of ||q||^2 + ||x||^2 - 2 q.x. One pass makes `sq` (N,), the centred points'
    squared norms, and `f32`, float32 [x, ||x||^2, zeros] padded to whole groups of GROUP rows (zeros), so that one
    GEMM with [-2 q, 1] gives ||x||^2 - 2 q.x."""

    def __init__(self, base: np.ndarray, step: int = 256):
        self.points, self.step = np.asarray(base), step  # blocks small enough to stay in cache
        self.mean = self.points.mean(axis=0, dtype=np.float64)  # the same sum, row after row, as float64 copies'
        num, dim = self.points.shape
        self.sq, self.f32 = np.empty(num), np.zeros((-(-num // GROUP) * GROUP, -(-(dim + 1) // 4) * 4), np.float32)
        for r0, block in self.blocks():
            rows = slice(r0, r0 + len(block))
            self.sq[rows] = _sq_norms(block)
            self.f32[rows, :dim], self.f32[rows, dim] = block, self.sq[rows]
        self.norms = np.sqrt(self.sq)

    def __len__(self) -> int:
        return len(self.points)

    def rows(self, which) -> np.ndarray:
        """float64 rows (an index array or a slice), centred: float64(x) - mean, in one pass."""
        points = self.points[which]
        return np.subtract(points, self.mean, out=np.empty(points.shape), dtype=np.float64)

    def blocks(self):
        for r0 in range(0, len(self.points), self.step):
            yield r0, self.rows(slice(r0, r0 + self.step))


def _sq_norms(x: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", x, x)


def _augmented(x: np.ndarray, *extra) -> np.ndarray:
    """float32 [x, extra columns, zeros]: (n, D + len(extra)) padded to a multiple of 4 columns; an extra is a
    scalar or an (n,) array."""
    width = -(-(x.shape[1] + len(extra)) // 4) * 4
    out = np.zeros((len(x), width), np.float32)
    out[:, : x.shape[1]] = x
    for j, column in enumerate(extra):
        out[:, x.shape[1] + j] = column
    return out


class _CandidateSearch:
    """The `num` nearest candidates of query rows by an approximate squared distance, and a bound on its error.

    "gemm": float32 ||x||^2 - 2 q.x, one BLAS product per block of queries, then `torch.topk`; "faiss": faiss's
    float32 brute force; "kdtree": a cKDTree (float64). A call returns the candidates' indices (nq, num) and
    their approximate squared distances (nq, num) float64: no base point outside the candidates has a smaller one
    than the largest of its row. `error(q_norm, reach)` bounds |approximate - exact| for base points of norm <=
    reach: the bound grows with the norms of the pair, not with the largest norm of the base, so heavy-tailed
    outliers do not widen it. `norms` (N,): the base points' norms.
    """

    def __init__(self, base: _Centred, backend: str):
        self.dim, self.norms = base.points.shape[1], base.norms
        self.backend = choose_backend(self.dim, len(base), backend)
        if self.backend == "kdtree":
            self.tree = cKDTree(np.concatenate([b for _, b in base.blocks()]), balanced_tree=False,
                                compact_nodes=False)
            self.workers = max(1, faiss.omp_get_max_threads())  # the thread count faiss would use
        elif self.backend == "faiss":
            self.base32 = np.ascontiguousarray(base.f32[: len(base), : self.dim])
        else:
            self.base32 = base.f32  # the extra rows' columns are set to inf

    def __call__(self, q: np.ndarray, num: int) -> tuple[np.ndarray, np.ndarray]:
        if self.backend == "kdtree":
            dist, idx = self.tree.query(q, k=num, workers=self.workers)
            return idx.reshape(len(q), num).astype(np.int64), dist.reshape(len(q), num) ** 2
        if self.backend == "faiss":
            sq, idx = knn_search(q, self.base32, num)
            return idx, sq.astype(np.float64)
        approx = np.matmul(_augmented(-2.0 * q, 1.0), self.base32.T)  # numpy's BLAS: plain float32 arithmetic
        approx[:, len(self.norms) :] = np.inf
        values, idx = _smallest(approx, num)
        return idx, _sq_norms(q)[:, None] + values

    def error(self, q_norm: np.ndarray, reach: np.ndarray) -> np.ndarray:
        """Worst case, twice over, u = 2^-24: gemm (D + 4) u (|q| + |x|)^2 (the accumulation of D + 1 products,
        float32 inputs and norm); faiss (D + 5) u (|q| + |x|)^2 (float32 norms, product, sum); the tree's float64
        sum (D + 2) eps64 d^2."""
        scale = (q_norm + reach) ** 2
        if self.backend == "kdtree":
            return 8.0 * (self.dim + 2) * EPS64 * scale
        return 2.0 * (self.dim + 10) * U32 * scale


def _smallest(block: np.ndarray, num: int) -> tuple[np.ndarray, np.ndarray]:
    """The `num` smallest values of each row of block (rows, N) float32 and their columns, in no order.

    The rows are cut into groups of GROUP columns: the num smallest values lie in the num groups with the smallest
    minima (any other group's minimum is at least the largest of those num minima), so `torch.topk` runs over the
    group minima and then over num * GROUP values, not over all N (3-4x less time than one topk over the block).
    """
    rows, width = block.shape
    if width < 4 * GROUP * num:
        values, idx = torch.topk(torch.from_numpy(block), num, dim=1, largest=False, sorted=False)
        return values.numpy(), idx.numpy()
    groups = torch.from_numpy(block).view(rows, -1, GROUP)
    best = torch.topk(torch.amin(groups, dim=2), num, dim=1, largest=False, sorted=False).indices
    pool = torch.gather(groups, 1, best[:, :, None].expand(-1, -1, GROUP)).reshape(rows, -1)
    values, pos = torch.topk(pool, num, dim=1, largest=False, sorted=False)
    return values.numpy(), (torch.gather(best, 1, pos // GROUP) * GROUP + pos % GROUP).numpy()


def _exact_candidates(q: np.ndarray, base: _Centred, search: _CandidateSearch, k: int, margin: int):
    """Float64 squared distances (nq, k + margin) to the candidates of `search`, sorted by (distance, index),
    their indices, and a per-row flag, True where a point outside the candidates might lie within the k-th
    distance (ties at it included). Elsewhere every point within the k-th distance is a candidate. Candidates
    whose error bounds put them beyond the k-th distance are not refined: their distance is inf."""
    if not 1 <= k <= len(base):
        raise ValueError(f"k={k} must lie in [1, {len(base)}] (the number of base points).")
    num = min(k + margin, len(base))
    if num == len(base):  # every point is a candidate
        idx = np.broadcast_to(np.arange(num), (len(q), num))
        rows, cols = np.nonzero(np.ones(idx.shape, bool))
    else:
        idx, approx = search(q, num)
        q_norm = np.sqrt(_sq_norms(q))
        err = search.error(q_norm[:, None], search.norms[idx])
        kth_upper = np.partition(approx + err, k - 1, axis=1)[:, k - 1]  # >= the exact k-th squared distance
        rows, cols = np.nonzero(approx - err <= kth_upper[:, None] * (1 + 8 * (q.shape[1] + 2) * EPS64))
    sq = np.full(idx.shape, np.inf)
    sq[rows, cols] = _pair_sq(q, base, rows, idx[rows, cols])
    sq, idx = _stable_by_index(sq, idx)
    if num == len(base):
        return sq, idx, np.zeros(len(q), bool)
    r2 = sq[:, k - 1]
    # a point within the k-th distance has norm <= |q| + r_k; the slack covers float64 rounding of sq and norms
    reach = (q_norm + np.sqrt(r2)) * (1 + 1e-9)
    lower = approx.max(axis=1) - search.error(q_norm, reach)
    return sq, idx, ~(lower > r2 * (1 + 8 * (q.shape[1] + 2) * EPS64))  # NaN (overflow) counts as unsure


def _pair_sq(q: np.ndarray, base: _Centred, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Exact float64 squared distances between centred queries q[rows] and base points cols: (P,) float64, the
    squares of the exact differences summed by einsum (every exact distance here and in `lib.manifold`); a few
    hundred pairs at a time, so that the temporaries stay in cache."""
    out = np.empty(len(rows))
    step = max(1, PAIR_ELEMENTS // q.shape[1])
    for p0 in range(0, len(rows), step):
        diff = (q[rows[p0 : p0 + step]] - base.rows(cols[p0 : p0 + step]))[:, None, :]
        out[p0 : p0 + step] = np.einsum("ijd,ijd->ij", diff, diff)[:, 0]
    return out


def _within_kth(q: np.ndarray, base: _Centred, k: int) -> list:
    """For each query row, (squared distances, indices) of every base point within its k-th smallest exact
    float64 distance, sorted by (distance, index). A float64 product ||q||^2 + ||x||^2 - 2 q.x (error below
    (D + 5) eps64 (|q| + |x|)^2 / 2) picks the few points that can be that close; exact differences decide."""
    out = []
    step = max(1, (1 << 27) // (8 * len(base)))
    reach = base.norms.max()
    for r0 in range(0, len(q), step):
        rows = q[r0 : r0 + step]
        q_sq = _sq_norms(rows)
        approx = np.empty((len(rows), len(base)))
        for b0, block in base.blocks():
            approx[:, b0 : b0 + len(block)] = q_sq[:, None] + base.sq[b0 : b0 + len(block)] - 2.0 * (rows @ block.T)
        err = 2.0 * (q.shape[1] + 10) * EPS64 * (np.sqrt(q_sq) + reach) ** 2
        kth = np.partition(approx, k - 1, axis=1)[:, k - 1]
        for row in range(len(rows)):
            ids = np.flatnonzero(approx[row] <= kth[row] + 2.0 * err[row])
            sq, ids = _stable_by_index(_pair_sq(rows, base, np.full(len(ids), row), ids)[None], ids[None])
            keep = sq[0] <= sq[0, k - 1]
            out.append((sq[0, keep], ids[0, keep]))
    return out


def exact_knn(queries: np.ndarray, base: np.ndarray, k: int, *, margin: int = 8,
              query_chunk: int | None = None, backend: str = "auto") -> dict:
    """Exact k nearest base points of each query, in float64.

    queries: (nq, D), base: (N, D) float. Returns {"distances": (nq, k) float64 Euclidean, ascending;
    "indices": (nq, k) int64}. Ties keep the lower base index first. Queries go in chunks of at most
    `query_chunk` rows, fewer where the search's (rows, N) float32 block would pass 128 MB. backend: the candidate
    search, "auto" (`choose_backend`), "gemm", "faiss" or "kdtree"; the result does not depend on it.
    """
    base = _Centred(base)
    search = _CandidateSearch(base, backend)
    dist, idx = np.empty((len(queries), k)), np.empty((len(queries), k), np.int64)
    for q0, q in _query_chunks(queries, query_chunk, base):
        sq, ids, unsure = _exact_candidates(q, base, search, k, margin)
        rows = np.flatnonzero(unsure)
        for row, (row_sq, row_ids) in zip(rows, _within_kth(q[rows], base, k)):
            sq[row, :k], ids[row, :k] = row_sq[:k], row_ids[:k]
        dist[q0 : q0 + len(q)], idx[q0 : q0 + len(q)] = np.sqrt(sq[:, :k]), ids[:, :k]
    return {"distances": dist, "indices": idx}


def _query_chunks(queries: np.ndarray, requested: int | None, base: _Centred):
    """(first row, rows moved to the base's mean, float64) blocks of the queries, `requested` rows (default 4096)
    or fewer, so that the (rows, N) float32 block of the gemm search stays within 128 MB (the refinement works
    on a few thousand pairs at a time)."""
    step = min(requested or 4096, max(1, (1 << 25) // len(base)))
    for q0 in range(0, len(queries), step):
        yield q0, np.asarray(queries[q0 : q0 + step], np.float64) - base.mean


def _stable_by_index(sq: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort each row by (distance, index), so that ties do not depend on the search's internal order."""
    order = np.lexsort((ids, sq), axis=1)
    return np.take_along_axis(sq, order, 1), np.take_along_axis(ids, order, 1)


def neighbourhood_counts(queries: np.ndarray, base: np.ndarray, groups: np.ndarray, k: int, *,
                         margin: int = 8, query_chunk: int | None = None, backend: str = "auto") -> dict:
    """For each query z: r_k(z), its k-th smallest distance to `base` (1-indexed), and, per group g,
    #{x in base with groups[x] == g and d(z, x) <= r_k(z)}: every point at the k-th distance counts,
    so ties can push the total above k. Exact in float64.

    queries: (nq, D); base: (N, D); groups: (N,) int in [0, G). Returns {"radius": (nq,) float64,
    "counts": (nq, G) int64}. backend: as in `exact_knn`; the result does not depend on it.
    """
    base = _Centred(base)
    search = _CandidateSearch(base, backend)
    groups = np.asarray(groups, np.int64)
    num_groups = int(groups.max()) + 1
    radius, counts = np.empty(len(queries)), np.zeros((len(queries), num_groups), np.int64)
    for q0, q in _query_chunks(queries, query_chunk, base):
        sq, ids, unsure = _exact_candidates(q, base, search, k, margin)
        r2 = sq[:, k - 1]
        inside = sq <= r2[:, None]
        rows = np.repeat(np.arange(len(q)), inside.sum(1))
        flat = np.bincount(rows * num_groups + groups[ids[inside]], minlength=len(q) * num_groups)
        block = flat.reshape(len(q), num_groups)
        rows = np.flatnonzero(unsure)
        for row, (row_sq, row_ids) in zip(rows, _within_kth(q[rows], base, k)):
            r2[row], block[row] = row_sq[k - 1], np.bincount(groups[row_ids], minlength=num_groups)
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
