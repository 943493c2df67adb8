"""Compiled loops of the neighbour searches (see :mod:`landmarking.neighbors`).

The exact search keeps, for every query row, a max-heap of the ``m`` smallest
approximate squared distances seen so far (values in ``vals``, column indices
in ``idx``, the largest at position 0). Each tile of float32 inner products
from BLAS is pushed into the heaps by :func:`push_rows` (one heap per tile
row) and, for the symmetric search of a set against itself, by
:func:`push_columns` (one heap per tile column), so that each product is
computed once for both of its points. The shortlists are then re-ranked by
exact float64 distances (:func:`candidate_sq_distances`); the approximate
search re-ranks its graph's candidates with :func:`nearest_candidates`.

Compiled ahead of time (Cython). Each loop cuts its rows (or columns) into
runs that threads take (:func:`~landmarking._parallel.run_parts`); every heap,
distance and list is computed by one thread from its own inputs, so no result
depends on the thread count or on how the rows were cut.
"""

import numpy as np

from libc.math cimport INFINITY
from libc.stdint cimport INT64_MAX, int64_t

from landmarking._shared_loops cimport value_sift_down, wide_lane_sq_distance

from ._parallel import loop_threads, run_parts

__all__ = ["push_rows", "push_columns", "candidate_sq_distances", "nearest_candidates"]

cdef enum:
    # Tile columns that push_columns walks together: one 64-byte cache line of float32.
    _LINE = 16
    # Products push_rows tests at once before it looks at them one by one.
    _SCAN = 64
    # At most this many runs of rows per call: enough for threads to even out on a
    # busy machine, few enough that each run is long.
    _MAX_PARTS = 16

#: Work (products pushed, or features subtracted) below which a run of rows is not
#: worth a thread: starting the threads of a call costs about as much as some
#: 10^5 of these steps.
_MIN_PART_WORK = 1 << 17

ctypedef fused real:
    float
    double


def _runs(n, work_each):
    """[lo, hi) runs cutting range(n) into at most _MAX_PARTS equal parts, each of at
    least _MIN_PART_WORK work (``work_each`` per item), or one run."""
    n_parts = int(min(_MAX_PARTS, n, max(1, n * work_each // _MIN_PART_WORK)))
    step = -(-n // max(1, n_parts))
    return [(lo, min(n, lo + step)) for lo in range(0, n, step)]


def _run_all(func, n, work_each, n_threads):
    """``func(lo, hi)`` for the runs of range(n) (see :func:`_runs`)."""
    if n > 0:
        run_parts(lambda run: func(*run), _runs(n, work_each),
                  loop_threads() if n_threads is None else n_threads)


# --------------------------------------------------------------------------- heaps

cdef inline bint _any_below(const double* sq, const real* g, double top,
                            Py_ssize_t n) noexcept nogil:
    """Whether sq[j] - 2 g[j] < top for some j < n: a count without branches,
    which the compiler vectorises (a block of _SCAN values costs a few cycles)."""
    cdef Py_ssize_t j, below = 0
    for j in range(n):
        below += (sq[j] - 2.0 * <double>g[j]) < top
    return below > 0


cdef inline bint _any_below_each(double s, const real* g, const double* tops,
                                 Py_ssize_t n) noexcept nogil:
    """Whether s - 2 g[c] < tops[c] for some c < n (as :func:`_any_below`)."""
    cdef Py_ssize_t c, below = 0
    for c in range(n):
        below += (s - 2.0 * <double>g[c]) < tops[c]
    return below > 0


cdef void _push_rows_run(const real[:, ::1] G, const double[::1] sq_cols, int64_t col_start,
                         double[:, ::1] vals, int64_t[:, ::1] idx, Py_ssize_t heap_start,
                         int64_t self_start, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    cdef Py_ssize_t t = G.shape[1], m = vals.shape[1], r, j, j0, j1, block
    cdef double v, top
    cdef int64_t me, c
    cdef double* hv
    cdef int64_t* hi_
    cdef const real* g
    cdef const double* sq = &sq_cols[0]
    for r in range(lo, hi):
        hv = &vals[heap_start + r, 0]
        hi_ = &idx[heap_start + r, 0]
        me = self_start + r if self_start >= 0 else -1
        g = &G[r, 0]
        top = hv[0]
        for block in range((t + _SCAN - 1) // _SCAN):
            j0 = block * _SCAN
            j1 = min(t, j0 + _SCAN)
            if not _any_below(sq + j0, g + j0, top, j1 - j0):
                continue  # most blocks: nothing enters the heap
            for j in range(j0, j1):
                v = sq[j] - 2.0 * <double>g[j]
                if v < top:
                    c = col_start + j
                    if c == me:
                        continue
                    hv[0] = v
                    hi_[0] = c
                    value_sift_down(hv, hi_, m)
                    top = hv[0]


cdef void _push_columns_run(const real[:, ::1] G, const double[::1] sq_rows,
                            int64_t row_start, double[:, ::1] vals, int64_t[:, ::1] idx,
                            Py_ssize_t col_start, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    # lo, hi: lines of _LINE columns.
    cdef Py_ssize_t b = G.shape[0], t = G.shape[1], m = vals.shape[1]
    cdef Py_ssize_t line, c0, c1, c, r, i
    cdef double tops[_LINE]
    cdef double s, v
    cdef const real* g
    for line in range(lo, hi):
        c0 = line * _LINE
        c1 = min(t, c0 + _LINE)
        for c in range(c0, c1):
            tops[c - c0] = vals[col_start + c, 0]
        for r in range(b):
            s = sq_rows[r]
            g = &G[r, 0]
            if not _any_below_each(s, g + c0, tops, c1 - c0):
                continue  # most rows: nothing enters these heaps
            for c in range(c0, c1):
                v = s - 2.0 * <double>g[c]
                if v < tops[c - c0]:
                    i = col_start + c
                    vals[i, 0] = v
                    idx[i, 0] = row_start + r
                    value_sift_down(&vals[i, 0], &idx[i, 0], m)
                    tops[c - c0] = vals[i, 0]


def _push_rows(const real[:, ::1] G, const double[::1] sq_cols, int64_t col_start,
               double[:, ::1] vals, int64_t[:, ::1] idx, Py_ssize_t heap_start,
               int64_t self_start, Py_ssize_t lo, Py_ssize_t hi):
    with nogil:
        _push_rows_run(G, sq_cols, col_start, vals, idx, heap_start, self_start, lo, hi)


def _push_columns(const real[:, ::1] G, const double[::1] sq_rows, int64_t row_start,
                  double[:, ::1] vals, int64_t[:, ::1] idx, Py_ssize_t col_start,
                  Py_ssize_t lo, Py_ssize_t hi):
    with nogil:
        _push_columns_run(G, sq_rows, row_start, vals, idx, col_start, lo, hi)


def push_rows(G, sq_cols, col_start, vals, idx, heap_start, self_start, n_threads=None):
    """Push tile G into the heaps of its rows (heap ``heap_start + r`` for row r).

    The candidate value of column j for row r is ``sq_cols[j] - 2 G[r, j]``
    (the squared distance less the row's own squared norm, in float64), its
    index ``col_start + j``. Only a value strictly below the heap's top enters,
    so every value left out is at least the final top. When ``self_start`` is
    not negative, row r is point ``self_start + r`` of the reference set and
    never its own candidate.

    G is C-ordered float32 (or float64), ``sq_cols`` float64, ``vals`` and ``idx``
    C-ordered float64 and int64 of shape (heaps, m). Threads take runs of rows
    (``n_threads`` defaults to :func:`~landmarking._parallel.loop_threads`).
    """
    b, t = G.shape
    sq_cols = np.ascontiguousarray(sq_cols, dtype=np.float64)
    _run_all(lambda lo, hi: _push_rows(G, sq_cols, col_start, vals, idx, heap_start,
                                       self_start, lo, hi),
             b, t, n_threads)


def push_columns(G, sq_rows, row_start, vals, idx, col_start, n_threads=None):
    """Push tile G transposed into the heaps of its columns' points.

    Column c of G belongs to point ``col_start + c``; its candidates are the
    rows ``row_start + r`` with values ``sq_rows[r] - 2 G[r, c]``. Columns are
    walked a cache line at a time, rows outer, so that G is read row by row;
    threads take runs of lines. The tile must lie off the diagonal (no point
    meets itself).
    """
    b, t = G.shape
    sq_rows = np.ascontiguousarray(sq_rows, dtype=np.float64)
    _run_all(lambda lo, hi: _push_columns(G, sq_rows, row_start, vals, idx, col_start,
                                          lo, hi),
             -(-t // _LINE), b * _LINE, n_threads)


# --------------------------------------------------------------------------- re-rank

cdef inline const double* _as_double(const real* row, double* buffer,
                                     Py_ssize_t d) noexcept nogil:
    """A float64 row: ``row`` itself, or (float32) its values copied into
    ``buffer``, once per query row, so that only the candidates' values are
    converted in the distance loop."""
    cdef Py_ssize_t f
    if real is double:
        return row
    else:
        for f in range(d):
            buffer[f] = <double>row[f]
        return buffer


cdef void _candidate_run(const real[:, ::1] Q, const real[:, ::1] X,
                         const int64_t[:, ::1] cand, double[:, ::1] out, double* buffer,
                         Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    cdef Py_ssize_t d = Q.shape[1], m = cand.shape[1], i, j
    cdef const double* q
    for i in range(lo, hi):
        q = _as_double(&Q[i, 0], buffer, d)
        for j in range(m):
            out[i, j] = wide_lane_sq_distance(q, &X[cand[i, j], 0], d)


cdef void _nearest_run(const real[:, ::1] Q, const real[:, ::1] X,
                       const int64_t[:, ::1] cand, const int64_t[::1] rows,
                       double[:, ::1] out_sq, int64_t[:, ::1] out_idx, double* buffer,
                       Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    cdef Py_ssize_t d = Q.shape[1], m = cand.shape[1], k = out_sq.shape[1]
    cdef Py_ssize_t p, i, j, pos, last = k - 1
    cdef int64_t c
    cdef double s
    cdef double* best_v
    cdef int64_t* best_c
    cdef const double* q
    for p in range(lo, hi):
        i = rows[p]
        q = _as_double(&Q[i, 0], buffer, d)
        best_v = &out_sq[i, 0]
        best_c = &out_idx[i, 0]
        for j in range(k):
            best_v[j] = INFINITY
            best_c[j] = INT64_MAX
        for j in range(m):
            c = cand[i, j]
            s = wide_lane_sq_distance(q, &X[c, 0], d)
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


def _candidates(const real[:, ::1] Q, const real[:, ::1] X, const int64_t[:, ::1] cand,
                double[:, ::1] out, Py_ssize_t lo, Py_ssize_t hi):
    cdef double[::1] buffer = np.empty(Q.shape[1] + 1)
    with nogil:
        _candidate_run(Q, X, cand, out, &buffer[0], lo, hi)


def _nearest(const real[:, ::1] Q, const real[:, ::1] X, const int64_t[:, ::1] cand,
             const int64_t[::1] rows, double[:, ::1] out_sq, int64_t[:, ::1] out_idx,
             Py_ssize_t lo, Py_ssize_t hi):
    cdef double[::1] buffer = np.empty(Q.shape[1] + 1)
    with nogil:
        _nearest_run(Q, X, cand, rows, out_sq, out_idx, &buffer[0], lo, hi)


def _same_float_rows(Q, X):
    """Q and X C-ordered in one dtype: both as they are when both are float32 or
    both float64, else both float64 (exact: the distances are those of the float64
    values either way)."""
    dtype = Q.dtype if Q.dtype == X.dtype and Q.dtype in (np.float32, np.float64) \
        else np.float64
    return np.ascontiguousarray(Q, dtype=dtype), np.ascontiguousarray(X, dtype=dtype)


def candidate_sq_distances(Q, X, cand, n_threads=None):
    """Squared distances |q_i - x_cand[i, j]|^2 in float64 from the differences
    (no cancellation, unlike the |q|^2 - 2 q.x + |x|^2 of the shortlist); a
    loop avoids gathering a (b, m, n_features) array. float32 rows are read as
    they are (half the memory traffic of a float64 copy) and subtracted in
    float64, so either dtype gives the distances of the float64 values. Threads
    take runs of rows."""
    Q, X = _same_float_rows(Q, X)
    cand = np.ascontiguousarray(cand, dtype=np.int64)
    b, m = cand.shape
    out = np.empty((b, m))
    _run_all(lambda lo, hi: _candidates(Q, X, cand, out, lo, hi), b, m * Q.shape[1],
             n_threads)
    return out


def nearest_candidates(Q, X, cand, rows, out_sq, out_idx, n_threads=None):
    """The k = ``out_sq.shape[1]`` nearest of each query row's candidates: their
    squared distances (computed as :func:`candidate_sq_distances` does) and
    indices, sorted by distance, ties by the smaller index. Written into ``out_sq``
    and ``out_idx`` (C-ordered float64 and int64, (b, k)); a row needs at least k
    candidates.

    The query rows are visited in the order ``rows`` (a permutation of
    ``range(b)``; each thread takes contiguous runs of it): an order that puts
    near points together reads their shared candidates from cache (quicker on
    MNIST in the approximate search's cell order than in index order; CHANGELOG.md, 'Measurements retired from source comments').

    One pass keeps the k best so far in order (an insertion that most
    candidates fail at its first comparison), so no (b, m) array of distances
    is sorted afterwards.
    """
    Q, X = _same_float_rows(Q, X)
    cand = np.ascontiguousarray(cand, dtype=np.int64)
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    b, m = cand.shape
    if out_sq.shape[1] == 0:
        return
    _run_all(lambda lo, hi: _nearest(Q, X, cand, rows, out_sq, out_idx, lo, hi),
             b, m * Q.shape[1], n_threads)
