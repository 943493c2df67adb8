"""Compiled loops of the blocked exact neighbour search (see :mod:`landmarking.neighbors`).

Imported when a search runs, so that importing the library loads no numba.

The search keeps, for every query row, a max-heap of the ``m`` smallest
approximate squared distances seen so far (values in ``vals``, column indices
in ``idx``, the largest at position 0). Each tile of float32 inner products
from BLAS is pushed into the heaps by :func:`push_rows` (one heap per tile
row) and, for the symmetric search of a set against itself, by
:func:`push_columns` (one heap per tile column), so that each product is
computed once for both of its points.
"""

import numba
import numpy as np

__all__ = ["push_rows", "push_columns", "candidate_sq_distances", "nearest_candidates"]

# Tile columns that push_columns walks together: one 64-byte cache line of float32.
_LINE = 16


@numba.njit(cache=True)
def _sift_down(vals, idx, start, size):
    """Restore the max-heap property of vals[:size] below position ``start``."""
    i = start
    while True:
        left = 2 * i + 1
        if left >= size:
            return
        big = left
        if left + 1 < size and vals[left + 1] > vals[left]:
            big = left + 1
        if vals[big] <= vals[i]:
            return
        vals[i], vals[big] = vals[big], vals[i]
        idx[i], idx[big] = idx[big], idx[i]
        i = big


@numba.njit(parallel=True, cache=True)
def push_rows(G, sq_cols, col_start, vals, idx, heap_start, self_start):
    """Push tile G into the heaps of its rows (heap ``heap_start + r`` for row r).

    The candidate value of column j for row r is ``sq_cols[j] - 2 G[r, j]``
    (the squared distance less the row's own squared norm, in float64), its
    index ``col_start + j``. Only a value strictly below the heap's top enters,
    so every value left out is at least the final top. When ``self_start`` is
    not negative, row r is point ``self_start + r`` of the reference set and
    never its own candidate.
    """
    b, t = G.shape
    m = vals.shape[1]
    for r in numba.prange(b):
        hv = vals[heap_start + r]
        hi = idx[heap_start + r]
        me = self_start + r if self_start >= 0 else -1
        top = hv[0]
        for j in range(t):
            v = sq_cols[j] - 2.0 * G[r, j]
            if v < top:
                c = col_start + j
                if c == me:
                    continue
                hv[0] = v
                hi[0] = c
                _sift_down(hv, hi, 0, m)
                top = hv[0]


@numba.njit(parallel=True, cache=True)
def push_columns(G, sq_rows, row_start, vals, idx, col_start):
    """Push tile G transposed into the heaps of its columns' points.

    Column c of G belongs to point ``col_start + c``; its candidates are the
    rows ``row_start + r`` with values ``sq_rows[r] - 2 G[r, c]``. Columns are
    walked a cache line at a time, rows outer, so that G is read row by row.
    The tile must lie off the diagonal (no point meets itself).
    """
    b, t = G.shape
    m = vals.shape[1]
    n_lines = (t + _LINE - 1) // _LINE
    for line in numba.prange(n_lines):
        c0 = line * _LINE
        c1 = min(t, c0 + _LINE)
        tops = np.empty(_LINE)
        for c in range(c0, c1):
            tops[c - c0] = vals[col_start + c, 0]
        for r in range(b):
            s = sq_rows[r]
            for c in range(c0, c1):
                v = s - 2.0 * G[r, c]
                if v < tops[c - c0]:
                    i = col_start + c
                    vals[i, 0] = v
                    idx[i, 0] = row_start + r
                    _sift_down(vals[i], idx[i], 0, m)
                    tops[c - c0] = vals[i, 0]


@numba.njit(inline="always")
def _sq_distance(Q, i, X, c):
    """|Q[i] - X[c]|^2 in float64 from the differences, inlined into the kernels
    below (whose ``fastmath`` then applies to it)."""
    s = 0.0
    for f in range(Q.shape[1]):
        t = np.float64(Q[i, f]) - np.float64(X[c, f])
        s += t * t
    return s


# ``reassoc`` lets LLVM split the sum over features into SIMD lanes (2.2x on
# 3,000 MNIST rows x 187 candidates, 7.2 s -> 3.3 s at load 7; the re-rank was
# 38 s of a 20,000-digit k = 150 search against 25 s of float32 products). The
# order of the additions is fixed by the compiled code, so equal rows still
# give bit-equal distances and ties stay ties.
@numba.njit(parallel=True, cache=True, fastmath={"reassoc"})
def candidate_sq_distances(Q, X, cand):
    """Squared distances |q_i - x_cand[i, j]|^2 in float64 from the differences
    (no cancellation, unlike the |q|^2 - 2 q.x + |x|^2 of the shortlist); a
    loop avoids gathering a (b, m, n_features) array. float32 rows are read as
    they are (half the memory traffic of a float64 copy) and subtracted in
    float64, so either dtype gives the distances of the float64 values."""
    b, m = cand.shape
    out = np.empty((b, m))
    for i in numba.prange(b):
        for j in range(m):
            out[i, j] = _sq_distance(Q, i, X, cand[i, j])
    return out


@numba.njit(parallel=True, cache=True, fastmath={"reassoc"})
def nearest_candidates(Q, X, cand, rows, out_sq, out_idx):
    """The k = ``out_sq.shape[1]`` nearest of each query row's candidates: their
    squared distances (computed as :func:`candidate_sq_distances` does) and
    indices, sorted by distance, ties by the smaller index. Written into ``out_sq``
    and ``out_idx`` (float64 and int64, (b, k)); a row needs at least k candidates.

    The query rows are visited in the order ``rows`` (a permutation of
    ``range(b)``; each thread takes a contiguous run of it): an order that puts
    near points together reads their shared candidates from cache (MNIST 60,000,
    60 candidates a point: 0.99 s in index order, 0.5 s in the approximate
    search's cell order).

    One pass keeps the k best so far in order (an insertion that most
    candidates fail at its first comparison), so no (b, m) array of distances
    is sorted afterwards.
    """
    b, m = cand.shape
    k = out_sq.shape[1]
    for p in numba.prange(b):
        i = rows[p]
        best_v = out_sq[i]
        best_c = out_idx[i]
        best_v[:] = np.inf
        best_c[:] = np.iinfo(np.int64).max
        for j in range(m):
            c = cand[i, j]
            s = _sq_distance(Q, i, X, c)
            last = k - 1
            if s > best_v[last] or (s == best_v[last] and c >= best_c[last]):
                continue
            pos = last
            while pos > 0 and (best_v[pos - 1] > s
                               or (best_v[pos - 1] == s and best_c[pos - 1] > c)):
                best_v[pos] = best_v[pos - 1]
                best_c[pos] = best_c[pos - 1]
                pos -= 1
            best_v[pos] = s
            best_c[pos] = c
