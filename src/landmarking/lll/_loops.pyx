"""Compiled loops of Locally Linear Landmarks (see :mod:`~landmarking.lll._cpu`).

- :func:`nearest_gram_weights`: for a chunk of points whose cross products with
  every landmark are given, the K_Z nearest landmarks and the affine
  reconstruction weights from them (local Gram matrix from the differences,
  ridge, Cholesky), blocked so that the factorisation vectorises;
- :func:`given_landmark_weights`: the same weights for points whose landmarks
  are given (found by a KD-tree on data of few features);
- :func:`bounded_candidate_weights`: the same from a float32 scan of lower
  bounds on every landmark's distance (on the landmarks' leading principal axes,
  plus the gap between the norms off them), the few candidates' distances
  computed exactly in float64 and the choice proved;
- :func:`reduced_dense`: the dense reduced matrices B~ = Z D Z^T and (half of)
  Z W Z^T in one pass over the points; :func:`reduced_rows`: some rows of them,
  for reduced problems too large to hold dense;
- :func:`reconstruction_residuals`: |x_i - sum_a z_ia t_a|^2 per point.

All run in parallel over parts of the points on a pool of Python threads
(:func:`landmarking._parallel.run_parts`), each part a compiled loop that
releases the GIL and writes only its own memory, so every result is the same for
any number of threads.
"""

from collections import namedtuple

import numpy as np

from libc.math cimport INFINITY, sqrt

from landmarking._shared_loops cimport (
    lane_dot, lane_sq_distance, pair_before, pair_heap_sort, pair_offer, pair_smallest,
    pair_sort, real_t, real_x)

from .._parallel import loop_threads, run_parts

__all__ = ["BLOCK", "nearest_gram_weights", "given_landmark_weights", "BoundedSearch",
           "bounded_candidate_weights", "cell_neighbors", "reduced_dense", "reduced_rows", "reconstruction_residuals"]

cdef enum:
    _BLOCK = 64

#: Points per block of the compiled Cholesky (the vectorised dimension).
BLOCK = _BLOCK


# --------------------------------------------------------------------------- helpers

cdef inline void _runs_of_blocks(Py_ssize_t n, Py_ssize_t n_parts, Py_ssize_t* per_part):
    cdef Py_ssize_t n_blocks = (n + _BLOCK - 1) // _BLOCK
    n_parts = max(1, min(n_parts, n_blocks))
    per_part[0] = (n_blocks + n_parts - 1) // n_parts * _BLOCK


def _starts(Py_ssize_t n, Py_ssize_t n_parts):
    """(first rows, rows per run) of at most ``n_parts`` runs of whole BLOCKs."""
    cdef Py_ssize_t per_part
    _runs_of_blocks(n, n_parts, &per_part)
    return list(range(0, n, per_part)), per_part


# --------------------------------------------------------------------------- local solves

cdef void _local_gram(double xs, const double* c, const Py_ssize_t* idx, Py_ssize_t k,
                      const double[:, ::1] gram, const real_t[:, ::1] landmarks,
                      double[:, :, ::1] U, Py_ssize_t p) noexcept nogil:
    """U[a, b, p] = |y|^2 - y.t_a - y.t_b + t_a.t_b (b >= a) for the point y with
    ``xs`` = |y|^2 and ``c[a]`` = y.t_a: its local Gram matrix (y - t_a).(y - t_b),
    into lane p of the block. t_a.t_b comes from ``gram`` when it has rows, else
    as the dot product of the landmarks' rows."""
    cdef Py_ssize_t a, b, d = landmarks.shape[1]
    cdef double tt
    for a in range(k):
        for b in range(a, k):
            if gram.shape[0] > 0:
                tt = gram[idx[a], idx[b]]
            else:
                tt = lane_dot(&landmarks[idx[a], 0], &landmarks[idx[b], 0], d)
            U[a, b, p] = xs - c[a] - c[b] + tt


cdef void _cholesky_block(double reg, Py_ssize_t m, double[:, :, ::1] U, double[::1] trace,
                          signed char[::1] bad, double[:, ::1] w, double[:, ::1] weights,
                          signed char[::1] failed) noexcept nogil:
    """Affine weights of one block of ``m <= BLOCK`` points from their local Gram
    matrices, U[a, b, p] (b >= a) for point p.

    Each G gets the ridge of :func:`landmarking.local_weights.local_affine_weights`
    and a Cholesky factorisation in place, the block index last so that every step
    is a loop over the block's points, which vectorises. Sets ``weights[p]`` and
    clears ``failed[p]`` for the points whose G + r I was numerically positive
    definite and gave usable weights.
    """
    cdef Py_ssize_t k = U.shape[0], P = U.shape[2]
    cdef Py_ssize_t a, b, j, p
    cdef double d, ridge, total
    for p in range(m, P):  # a short last block: identity in the spare lanes
        for a in range(k):
            for b in range(a, k):
                U[a, b, p] = 1.0 if a == b else 0.0
    for p in range(m):
        trace[p] = 0.0
        for a in range(k):
            trace[p] += U[a, a, p]
        ridge = reg * trace[p] if trace[p] > 0 else reg
        for a in range(k):
            U[a, a, p] += ridge
    for p in range(P):
        bad[p] = 0
    for j in range(k):
        for p in range(P):
            d = U[j, j, p]
            if not d > 0:
                bad[p] = 1
                d = 1.0  # keeps the lane finite; its result is discarded
            U[j, j, p] = sqrt(d)
        for b in range(j + 1, k):
            for p in range(P):
                U[j, b, p] /= U[j, j, p]
        for a in range(j + 1, k):
            for b in range(a, k):
                for p in range(P):
                    U[a, b, p] -= U[j, a, p] * U[j, b, p]
    # U^T v = 1, then U w = v.
    for a in range(k):
        for p in range(P):
            w[a, p] = 1.0
    for a in range(k):
        for p in range(P):
            w[a, p] /= U[a, a, p]
        for b in range(a + 1, k):
            for p in range(P):
                w[b, p] -= U[a, b, p] * w[a, p]
    for a in range(k - 1, -1, -1):
        for b in range(a + 1, k):
            for p in range(P):
                w[a, p] -= U[a, b, p] * w[b, p]
        for p in range(P):
            w[a, p] /= U[a, a, p]
    for p in range(m):
        total = 0.0
        for a in range(k):
            total += w[a, p]
        if bad[p] or not (total - total == 0.0 and abs(total) >= 1e-300):
            continue
        failed[p] = 0
        for a in range(k):
            weights[p, a] = w[a, p] / total


cdef class _Work:
    """One part's work arrays (a fresh U per block would be a large allocation,
    with its page faults, every block): the Cholesky's, a heap of ``n_heap``
    pairs, the sorted candidates and one row of ``n_land`` values."""
    cdef double[:, :, ::1] U
    cdef double[::1] trace, hv, cand_v, row, pv
    cdef signed char[::1] bad, fb
    cdef double[:, ::1] w, wb
    cdef Py_ssize_t[::1] hj, cand_j, pj

    def __init__(self, Py_ssize_t k, Py_ssize_t n_heap=0, Py_ssize_t n_land=0):
        n_heap = max(k, n_heap)
        self.hv = np.empty(n_heap)
        self.hj = np.empty(n_heap, dtype=np.intp)
        self.cand_v = np.empty(n_heap)
        self.cand_j = np.empty(n_heap, dtype=np.intp)
        self.row = np.empty(n_land)
        self.pv = np.empty(n_land)
        self.pj = np.empty(n_land, dtype=np.intp)
        self.U = np.empty((k, k, _BLOCK))
        self.trace = np.empty(_BLOCK)
        self.bad = np.empty(_BLOCK, dtype=np.int8)
        self.fb = np.empty(_BLOCK, dtype=np.int8)
        self.w = np.empty((k, _BLOCK))
        self.wb = np.empty((_BLOCK, k))


cdef class _Solved:
    """A run of points' local solves: each point's landmarks ``idx`` (n x k) and its
    products ``cz`` with them, which points to solve (``todo``), and the results:
    ``weights``, and ``failed``, cleared where the weights came out."""
    cdef Py_ssize_t[:, ::1] idx
    cdef double[:, ::1] weights, cz
    cdef signed char[::1] todo, failed

    def __init__(self, idx, weights, cz, todo, failed):
        self.idx, self.weights, self.cz, self.todo, self.failed = idx, weights, cz, todo, failed


cdef void _solve_block(const double[::1] x_sq, const double[:, ::1] gram,
                       const real_t[:, ::1] landmarks, Py_ssize_t start, Py_ssize_t m,
                       double reg, _Solved out, _Work work) noexcept nogil:
    """The weights of the block's points start..start + m whose ``out.todo`` is set,
    from ``x_sq`` (|y|^2) and ``out.cz`` (y.t_a for their landmarks ``out.idx``),
    packed into the lanes of one Cholesky block."""
    cdef Py_ssize_t[:, ::1] idx = out.idx
    cdef double[:, ::1] weights = out.weights
    cdef const double[:, ::1] cz = out.cz
    cdef const signed char[::1] todo = out.todo
    cdef signed char[::1] failed = out.failed
    cdef Py_ssize_t k = idx.shape[1], p, q = 0, a
    for p in range(m):
        if todo[start + p]:
            _local_gram(x_sq[start + p], &cz[start + p, 0], &idx[start + p, 0], k, gram,
                        landmarks, work.U, q)
            work.fb[q] = 1
            q += 1
    if q == 0:
        return
    _cholesky_block(reg, q, work.U, work.trace, work.bad, work.w, work.wb, work.fb)
    q = 0
    for p in range(m):
        if todo[start + p]:
            if not work.fb[q]:
                failed[start + p] = 0
                for a in range(k):
                    weights[start + p, a] = work.wb[q, a]
            q += 1


# --------------------------------------------------------------------------- float64 path

def nearest_gram_weights(cross, x_sq, t_sq, gram, landmarks, double reg, bint solve, idx,
                         weights, n_parts):
    """Nearest landmarks and their weights for a chunk of points, compiled.

    ``cross`` holds the points' products with every landmark, ``x_sq`` and
    ``t_sq`` their squared norms. For point i, the squared distances
    |y|^2 - 2 y.t + |t|^2 (rounded as the NumPy expression ``-2 * cross + x_sq +
    t_sq``) rank the landmarks; the ``k = idx.shape[1]`` nearest, nearest first
    and ties to the lower index, go to ``idx[i]``. With ``solve``, the local Gram
    matrix G (t_a.t_b from ``gram``, or from the float64 ``landmarks`` when
    ``gram`` has no rows) gets the ridge of ``local_weights.local_affine_weights``
    and a Cholesky factorisation, and the weights, scaled to sum to one, go to
    ``weights[i]``. Returns a mask of the points left to the caller: all of them
    without ``solve``, else those whose G + r I was not numerically positive
    definite or gave no usable weights. With reg >= 1e-5 the condition number of
    G + r I is below about 1e5, so Cholesky and LAPACK's LU agree to rounding.

    The points are cut into ``n_parts`` runs of whole blocks, one thread each;
    every point's result depends on that point only.
    """
    cdef Py_ssize_t n = cross.shape[0], per_part
    failed = np.ones(n, dtype=np.int8)
    starts, per_part = _starts(n, n_parts)
    landmarks = np.ascontiguousarray(landmarks, dtype=np.float64)
    gram = np.ascontiguousarray(gram, dtype=np.float64)

    def run(start):
        rows = slice(start, min(n, start + per_part))
        m = len(range(n)[rows])
        out = _Solved(idx[rows], weights[rows], np.empty((m, idx.shape[1])),
                      np.ones(m, dtype=np.int8), failed[rows])
        _nearest_gram_run(cross[rows], x_sq[rows], t_sq, gram, landmarks, reg, solve, out,
                          _Work(idx.shape[1]))

    run_parts(run, starts, n_parts)
    return failed.astype(bool)


def _nearest_gram_run(const double[:, ::1] cross, const double[::1] x_sq,
                      const double[::1] t_sq, const double[:, ::1] gram,
                      const double[:, ::1] landmarks, double reg, bint solve, _Solved out,
                      _Work work):
    with nogil:
        _nearest_gram_part(cross, x_sq, t_sq, gram, landmarks, reg, solve, out, work)


cdef void _nearest_gram_part(const double[:, ::1] cross, const double[::1] x_sq,
                             const double[::1] t_sq, const double[:, ::1] gram,
                             const double[:, ::1] landmarks, double reg, bint solve,
                             _Solved out, _Work work) noexcept nogil:
    """:func:`nearest_gram_weights` on one run of points, sequentially, in blocks of
    BLOCK points for the Cholesky."""
    cdef Py_ssize_t[:, ::1] idx = out.idx
    cdef double[:, ::1] cz = out.cz
    cdef Py_ssize_t n = cross.shape[0], n_land = cross.shape[1], k = idx.shape[1]
    cdef Py_ssize_t blk, start, m, p, i, j, a
    cdef double* heap_v = &work.hv[0]
    cdef Py_ssize_t* heap_j = &work.hj[0]
    for blk in range((n + _BLOCK - 1) // _BLOCK):
        start = blk * _BLOCK
        m = min(<Py_ssize_t>_BLOCK, n - start)
        for p in range(m):
            i = start + p
            for j in range(n_land):
                pair_offer(heap_v, heap_j, k, j, -2.0 * cross[i, j] + x_sq[i] + t_sq[j])
            pair_heap_sort(heap_v, heap_j, k)
            for a in range(k):
                idx[i, a] = heap_j[a]
                cz[i, a] = cross[i, heap_j[a]]
        if solve:
            _solve_block(x_sq, gram, landmarks, start, m, reg, out, work)


# --------------------------------------------------------------------------- given landmarks

def given_landmark_weights(X, landmarks, idx, double reg, weights, n_parts):
    """Affine weights of each row of X from its own landmarks ``idx[i]``, compiled.

    The local Gram matrix comes from the differences, (y - t_a).(y - t_b), and
    gets the ridge and Cholesky factorisation of :func:`nearest_gram_weights`;
    the weights, scaled to sum to one, go to ``weights[i]``. ``X`` and
    ``landmarks`` are C-ordered float64, ``idx`` and ``weights`` (n x k)
    C-ordered int64 and float64. Returns a mask of the rows left to the caller:
    those whose G + r I was not numerically positive definite or gave no usable
    weights. The rows are cut into ``n_parts`` runs of whole blocks, one thread
    each; every row's result depends on that row only.
    """
    cdef Py_ssize_t n = X.shape[0], per_part
    failed = np.ones(n, dtype=np.int8)
    starts, per_part = _starts(n, n_parts)

    def run(start):
        rows = slice(start, min(n, start + per_part))
        _given_run(X[rows], landmarks, idx[rows], reg, weights[rows], failed[rows],
                   _Work(idx.shape[1]))

    run_parts(run, starts, n_parts)
    return failed.astype(bool)


def _given_run(const double[:, ::1] X, const double[:, ::1] landmarks,
               const Py_ssize_t[:, ::1] idx, double reg, double[:, ::1] weights,
               signed char[::1] failed, _Work work):
    with nogil:
        _given_part(X, landmarks, idx, reg, weights, failed, work)


cdef void _given_part(const double[:, ::1] X, const double[:, ::1] landmarks,
                      const Py_ssize_t[:, ::1] idx, double reg, double[:, ::1] weights,
                      signed char[::1] failed, _Work work) noexcept nogil:
    """:func:`given_landmark_weights` on one run of rows, in blocks of BLOCK rows
    for the Cholesky."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], k = idx.shape[1]
    cdef Py_ssize_t blk, start, m, p, i, a, b, j
    cdef double total
    for blk in range((n + _BLOCK - 1) // _BLOCK):
        start = blk * _BLOCK
        m = min(<Py_ssize_t>_BLOCK, n - start)
        for p in range(m):
            i = start + p
            for a in range(k):
                for b in range(a, k):
                    total = 0.0
                    for j in range(d):
                        total += ((X[i, j] - landmarks[idx[i, a], j])
                                  * (X[i, j] - landmarks[idx[i, b], j]))
                    work.U[a, b, p] = total
            work.fb[p] = 1
        _cholesky_block(reg, m, work.U, work.trace, work.bad, work.w, work.wb, work.fb)
        for p in range(m):
            if not work.fb[p]:
                failed[start + p] = 0
                for a in range(k):
                    weights[start + p, a] = work.wb[p, a]


# --------------------------------------------------------------------------- bounded search

#: Rows whose float32 products one thread computes and scans at a time (256 rows
#: by 10,000 landmarks: 10 MB, in cache until scanned).
SCAN_ROWS = 256


#: The rule of :func:`bounded_candidate_weights`: the ridge ``reg``, whether to
#: ``solve`` for the weights, the candidates per point ``n_cand``, the float32
#: products' bound (coef, slack, floor, limit) and the most exact distances beyond
#: the candidates, ``max_extra``.
BoundedSearch = namedtuple("BoundedSearch", "reg solve n_cand bound max_extra")


def bounded_candidate_weights(points, marks, search, results, status, n_parts):
    """Nearest landmarks from lower bounds scanned in float32, chosen and weighted
    exactly in float64, compiled.

    ``search`` is a :data:`BoundedSearch`; ``results`` = (idx, weights, cz, x_sq)
    and ``status`` are written (below). ``points`` = (X, Xc, Y32, y_sq, eps_x) for a chunk of n points: the rows
    (float32 or float64) and the rows less the landmarks' mean mu (float64),
    their search coordinates y (float32; see ``lll._LandmarkAxes``), |y|^2 in
    float64 and ``eps_x``, the float64 rounding of those per point. ``marks`` =
    (T, Tc, S32, s_sq, eps_t, gram): the same for the landmarks (T their rows,
    float32 when that holds them exactly; Tc less mu; s their search
    coordinates) and ``gram``, the Gram matrix of Tc (or an array without rows:
    then t_a.t_b are dot products of Tc's rows). ``bound`` = (coef, slack,
    floor, limit) bounds the float32 products fl(y32 . s32)
    (``lll._float32_rank_bound`` for the coordinates' count).

    For point i and landmark j, LB_ij = |y|^2 + |s_j|^2 - 2 fl(y . s_j) is a lower
    bound on |x - t_j|^2 up to err_ij = coef |y| |s_j| + slack (|y| + |s_j|)^2 +
    floor (1 + |y| + |s_j|) + eps_x[i] + eps_t[j]. The ``n_cand`` smallest (LB,
    j) pairs are the candidates; their squared distances are computed exactly
    from the differences in float64 (relative rounding at most gamma = (D + 2)
    2^-53: every term is positive) and rank them, ties to the lower index. The
    choice is proved when (LB_ij - err_ij) (1 - 2 gamma) exceeds the K_Z-th of
    those distances for every landmark j left out (then so would its computed
    distance); else every landmark whose own bound lets it come closer is
    computed too, nearest bound first (those beyond the largest bound's reach
    skipped; at most ``max_extra`` of them), which proves the choice by
    construction. The ``k = idx.shape[1]`` nearest go to ``idx[i]``, nearest
    first; the products (x - mu).(t_a - mu) to ``cz[i]`` and |x - mu|^2 to
    ``x_sq[i]``, which give the local Gram matrix as in
    :func:`nearest_gram_weights` (less the centre: nothing cancels far from the
    origin). ``status[i]`` is then 0 (weights set) or 2 (no weights: no
    ``solve``, or G + r I not numerically positive definite); 1 when the point
    needs more than ``max_extra`` exact distances, or its float32 values could
    overflow (the caller redoes it in float64).

    The points are cut into ``n_parts`` runs of whole blocks, one thread each,
    which makes its own float32 products (the caller limits BLAS to one thread),
    :data:`SCAN_ROWS` rows at a time, and scans each in the compiled loop. Every
    point's result depends on that point only.
    """
    X, Xc, Y32, y_sq, eps_x = points
    idx, weights, cz, x_sq = results
    cdef Py_ssize_t n = X.shape[0], per_part
    starts, per_part = _starts(n, n_parts)
    k = idx.shape[1]
    held = _Marks(marks)
    rule = _Rule(search)
    n_land = held.s_sq.shape[0]

    def run(start):
        # Sub-blocks of rows whose float32 products stay in cache until scanned.
        work = _Work(k, search.n_cand, n_land)
        buf = np.empty((SCAN_ROWS, n_land), dtype=np.float32)
        for lo in range(start, min(n, start + per_part), SCAN_ROWS):
            rows = slice(lo, min(n, start + per_part, lo + SCAN_ROWS))
            cross = buf[:rows.stop - lo]
            np.matmul(Y32[rows], held.S32.T, out=cross)
            m = rows.stop - lo
            out = _Solved(idx[rows], weights[rows], cz[rows], np.zeros(m, dtype=np.int8),
                          np.ones(m, dtype=np.int8))
            _bounded_run(X[rows], held.T, _Rows(Xc[rows], cross, y_sq[rows], eps_x[rows]),
                         held, rule, out, x_sq[rows], status[rows], work)

    run_parts(run, starts, n_parts)


cdef class _Rows:
    """A run of points of :func:`bounded_candidate_weights`: their rows less the
    landmarks' mean (Xc), the float32 products of their search coordinates with the
    landmarks' (cross32), |y|^2 (y_sq) and the rounding of those (eps_x)."""
    cdef const double[:, ::1] Xc
    cdef const float[:, ::1] cross32
    cdef const double[::1] y_sq, eps_x

    def __init__(self, Xc, cross32, y_sq, eps_x):
        self.Xc, self.cross32, self.y_sq, self.eps_x = Xc, cross32, y_sq, eps_x


cdef class _Marks:
    """The landmarks of :func:`bounded_candidate_weights` (its ``marks``), with the
    largest norm of their search coordinates (s_max) and the largest rounding
    (eps_t_max)."""
    cdef readonly object T, S32
    cdef const double[:, ::1] Tc, gram
    cdef const double[::1] s_sq, s_norm, eps_t
    cdef double s_max, eps_t_max

    def __init__(self, marks):
        self.T, Tc, self.S32, s_sq, eps_t, gram = marks
        self.Tc, self.s_sq, self.eps_t, self.gram = Tc, s_sq, eps_t, gram
        s_norm = np.sqrt(s_sq)
        self.s_norm = s_norm
        self.s_max = float(np.max(s_norm))
        self.eps_t_max = float(np.max(eps_t))


cdef class _Rule:
    """A :data:`BoundedSearch`, typed."""
    cdef double reg, coef, slack, floor, limit
    cdef bint solve
    cdef Py_ssize_t n_cand, max_extra

    def __init__(self, search):
        self.reg, self.solve, self.n_cand = search.reg, search.solve, search.n_cand
        self.coef, self.slack, self.floor, self.limit = search.bound
        self.max_extra = search.max_extra


def _bounded_run(const real_x[:, ::1] X, const real_t[:, ::1] T, _Rows rows, _Marks marks,
                 _Rule rule, _Solved out, double[::1] x_sq, signed char[::1] status,
                 _Work work):
    with nogil:
        _bounded_part(X, T, rows, marks, rule, out, x_sq, status, work)


cdef inline double _err32(_Rule rule, double yn, double sn) noexcept nogil:
    """The bound on the rounding of |y|^2 + |s|^2 - 2 fl32(y . s) for |y| = yn,
    |s| = sn (``lll._float32_rank_bound``)."""
    return (rule.coef * yn * sn + rule.slack * (yn * yn + sn * sn + 2.0 * yn * sn)
            + rule.floor * (1.0 + yn + sn))


cdef inline void _insert(double* cv, Py_ssize_t* cj, Py_ssize_t length, double v,
                         Py_ssize_t j) noexcept nogil:
    """Insert (v, j) into the sorted list of ``length`` pairs that already holds
    ``length - 1`` (the last slot is free)."""
    cdef Py_ssize_t b = length - 1
    while b > 0 and pair_before(v, j, cv[b - 1], cj[b - 1]):
        cv[b] = cv[b - 1]
        cj[b] = cj[b - 1]
        b -= 1
    cv[b] = v
    cj[b] = j


cdef void _bounded_part(const real_x[:, ::1] X, const real_t[:, ::1] T, _Rows rows,
                        _Marks marks, _Rule rule, _Solved out, double[::1] x_sq,
                        signed char[::1] status, _Work work) noexcept nogil:
    """:func:`bounded_candidate_weights` on one run of points, sequentially, in
    blocks of BLOCK points for the Cholesky."""
    cdef Py_ssize_t n = rows.cross32.shape[0]
    cdef Py_ssize_t blk, start, m, p, i
    cdef signed char[::1] todo = out.todo
    for blk in range((n + _BLOCK - 1) // _BLOCK):
        start = blk * _BLOCK
        m = min(<Py_ssize_t>_BLOCK, n - start)
        for p in range(m):
            i = start + p
            todo[i] = 0
            status[i] = _bounded_point(&X[i, 0], T, i, rows, marks, rule, out, x_sq, work)
            if status[i] == 2:
                todo[i] = 1
        if rule.solve:
            _solve_block(x_sq, marks.gram, marks.Tc, start, m, rule.reg, out, work)
            for p in range(m):
                if todo[start + p] and not out.failed[start + p]:
                    status[start + p] = 0


cdef signed char _bounded_point(const real_x* xrow, const real_t[:, ::1] T, Py_ssize_t i,
                                _Rows rows, _Marks marks, _Rule rule, _Solved out,
                                double[::1] x_sq, _Work work) noexcept nogil:
    """Point i's k nearest landmarks (to ``out.idx[i]``), its products with them
    (``out.cz[i]``) and ``x_sq[i]``: status 2 (the weights are left to solve), or 1
    when the point is left to the float64 path (nothing written)."""
    cdef Py_ssize_t n_land = rows.cross32.shape[1], k = out.idx.shape[1]
    cdef Py_ssize_t d = T.shape[1], c = rule.n_cand, j, a
    cdef double yn, ysq, err_max
    cdef double shrink = 1.0 - 2.0 * (d + 2) * 2.0 ** -53
    cdef double* hv = &work.hv[0]
    cdef Py_ssize_t* hj = &work.hj[0]
    cdef double* cand_v = &work.cand_v[0]
    cdef Py_ssize_t* cand_j = &work.cand_j[0]
    cdef double* row = &work.row[0]
    cdef const float* crow
    cdef const double* sq = &marks.s_sq[0]
    ysq = rows.y_sq[i]
    yn = sqrt(ysq)
    if not (yn < rule.limit and yn * marks.s_max < rule.limit):  # or NaN
        return 1
    crow = &rows.cross32[i, 0]
    # Every bound first (a loop that vectorises), then the c smallest
    # (LB, j) pairs in a max-heap (one comparison for most).
    for j in range(n_land):
        row[j] = ysq + sq[j] - 2.0 * <double>crow[j]
    pair_smallest(row, n_land, c, hv, hj)
    # The candidates' distances from the differences, sorted by (distance,
    # index).
    for a in range(c):
        j = hj[a]
        _insert(cand_v, cand_j, a + 1, lane_sq_distance(xrow, &T[j, 0], d), j)
    err_max = _err32(rule, yn, marks.s_max) + rows.eps_x[i] + marks.eps_t_max
    if not cand_v[k - 1] < (hv[0] - err_max) * shrink:
        if not _prove(xrow, T, n_land, k, err_max, shrink, rule.max_extra, work):
            return 1
    x_sq[i] = lane_dot(&rows.Xc[i, 0], &rows.Xc[i, 0], d)
    for a in range(k):
        out.idx[i, a] = cand_j[a]
        out.cz[i, a] = lane_dot(&rows.Xc[i, 0], &marks.Tc[cand_j[a], 0], d)
    return 2


cdef bint _prove(const real_x* xrow, const real_t[:, ::1] T, Py_ssize_t n_land,
                 Py_ssize_t k, double err_max, double shrink, Py_ssize_t max_extra,
                 _Work work) noexcept nogil:
    """The landmarks left out that the largest bound lets come closer than the K_Z-th
    so far, gathered, then computed nearest bound first until the bound rules the
    rest out (tau only shrinks); the k nearest in work.cand_v, cand_j. False when
    more than ``max_extra`` would need computing."""
    cdef Py_ssize_t d = T.shape[1], j, a, jt, n_extra
    cdef double* cand_v = &work.cand_v[0]
    cdef Py_ssize_t* cand_j = &work.cand_j[0]
    cdef double* row = &work.row[0]
    cdef double* pv = &work.pv[0]
    cdef Py_ssize_t* pj = &work.pj[0]
    cdef double tau = cand_v[k - 1]
    cdef double vt = work.hv[0], v, reach, dist
    jt = work.hj[0]
    reach = tau / shrink + err_max
    n_extra = 0
    for j in range(n_land):
        v = row[j]
        if v <= reach and not (v < vt or (v == vt and j <= jt)):
            if n_extra < max_extra:
                pv[n_extra] = v
                pj[n_extra] = j
            n_extra += 1
    if n_extra > max_extra:
        return False
    pair_sort(pv, pj, n_extra)
    for a in range(n_extra):
        if (pv[a] - err_max) * shrink > tau:
            break
        j = pj[a]
        dist = lane_sq_distance(xrow, &T[j, 0], d)
        if pair_before(dist, j, cand_v[k - 1], cand_j[k - 1]):
            _insert(cand_v, cand_j, k, dist, j)
            tau = cand_v[k - 1]
    return True


# --------------------------------------------------------------------------- cell graph

def cell_neighbors(X, queries, candidates, self_at, cross32, q_sq, c_sq,
                   Py_ssize_t n_cand, distances, indices):
    """The nearest candidates of each query point: the ``n_cand`` with the
    smallest float32 lower bounds of :func:`bounded_candidate_weights`, computed
    exactly in float64 and the k nearest kept, compiled.

    ``queries`` and ``candidates`` are row indices of X (float32 or float64);
    ``self_at[i]`` is the position of query i among the candidates (-1 if absent:
    a query is never its own neighbour); ``cross32`` = fl(y_q . y_c) their search
    coordinates' products and ``q_sq``, ``c_sq`` the coordinates' squared norms
    (``lll._LandmarkAxes``), so that |y_q|^2 + |y_c|^2 - 2 y_q.y_c is a lower bound
    on the squared distance up to rounding. The ``k = indices.shape[1]``
    nearest of the ``n_cand`` by exact distance, ties to the lower index, go to
    ``indices[i]`` with their distances. The bound ranks well but proves little
    between near points (what lies off the axes counts there), so the list is the
    exact k nearest of those ``n_cand``, not of every candidate; on MNIST every
    list so found was the exact one among its candidates. A query with fewer
    than k candidates gets index -1 and distance inf in the slots left.
    """
    cdef Py_ssize_t nc = cross32.shape[1]
    c = max(indices.shape[1], min(n_cand, nc))
    cell = _Cell(np.ascontiguousarray(queries, dtype=np.intp),
                 np.ascontiguousarray(candidates, dtype=np.intp),
                 np.ascontiguousarray(self_at, dtype=np.intp), cross32, q_sq, c_sq)
    _cell_run(X, cell, c, distances, indices, _Work(0, c, nc))


cdef class _Cell:
    """The queries and candidates of :func:`cell_neighbors` (its arguments, typed)."""
    cdef const Py_ssize_t[::1] queries, candidates, self_at
    cdef const float[:, ::1] cross32
    cdef const double[::1] q_sq, c_sq

    def __init__(self, queries, candidates, self_at, cross32, q_sq, c_sq):
        self.queries, self.candidates, self.self_at = queries, candidates, self_at
        self.cross32, self.q_sq, self.c_sq = cross32, q_sq, c_sq


def _cell_run(const real_x[:, ::1] X, _Cell cell, Py_ssize_t c, double[:, ::1] distances,
              Py_ssize_t[:, ::1] indices, _Work work):
    cdef const Py_ssize_t[::1] queries = cell.queries
    cdef const Py_ssize_t[::1] candidates = cell.candidates
    cdef const Py_ssize_t[::1] self_at = cell.self_at
    cdef const float[:, ::1] cross32 = cell.cross32
    cdef const double[::1] q_sq = cell.q_sq
    cdef Py_ssize_t nq = queries.shape[0], nc = candidates.shape[0], k = indices.shape[1]
    cdef Py_ssize_t d = X.shape[1]
    cdef Py_ssize_t i, j, a, q, filled
    cdef double qs, dist
    cdef double* hv = &work.hv[0]
    cdef Py_ssize_t* hj = &work.hj[0]
    cdef double* cand_v = &work.cand_v[0]
    cdef Py_ssize_t* cand_j = &work.cand_j[0]
    cdef double* row = &work.row[0]
    cdef const double* csq = &cell.c_sq[0]
    cdef const float* crow
    with nogil:
        for i in range(nq):
            q = queries[i]
            crow = &cross32[i, 0]
            qs = q_sq[i]
            for j in range(nc):  # vectorises
                row[j] = qs + csq[j] - 2.0 * <double>crow[j]
            if self_at[i] >= 0:
                row[self_at[i]] = INFINITY
            filled = min(c, nc - (1 if self_at[i] >= 0 else 0))
            if filled <= 0:
                for a in range(k):
                    distances[i, a] = INFINITY
                    indices[i, a] = -1
                continue
            # The ``filled`` smallest bounds; there are at least that many finite
            # ones, so the query's own (inf) never stays.
            pair_smallest(row, nc, filled, hv, hj)
            for a in range(filled):
                dist = lane_sq_distance(&X[q, 0], &X[candidates[hj[a]], 0], d)
                _insert(cand_v, cand_j, a + 1, dist, candidates[hj[a]])
            for a in range(k):
                if a < filled:
                    distances[i, a] = sqrt(cand_v[a])
                    indices[i, a] = cand_j[a]
                else:
                    distances[i, a] = INFINITY
                    indices[i, a] = -1


# --------------------------------------------------------------------------- reduced problem

def reduced_dense(w_indptr, w_indices, w_data, deg, z_idx, z_w, Py_ssize_t n_land,
                  Py_ssize_t n_parts, n_threads=None):
    """Dense B~ = sum_n d_n z_n z_n^T and half of C~ = Z^T W Z for symmetric W:
    H = sum_n z_n (sum_{m >= n} w_nm z_m)^T, the diagonal of W halved, so that
    C~ = H + H^T.

    Z is given by its K nonzeros per point (z_idx, z_w). Using only the upper
    triangle of W halves the gather-scatter over the edges. Each of ``n_parts``
    parts owns the rows r of B~ and H with r % n_parts == part and goes over
    every point, adding only to its own rows; each entry is then a sum over the
    points in their order, whatever ``n_parts`` and ``n_threads`` (default:
    :func:`~landmarking._parallel.loop_threads`), and the parts never write to
    the same memory. Two L x L arrays in all.
    """
    B = np.zeros((n_land, n_land))
    H = np.zeros((n_land, n_land))
    w_indptr = np.ascontiguousarray(w_indptr, dtype=np.intp)
    w_indices = np.ascontiguousarray(w_indices, dtype=np.intp)
    z_idx = np.ascontiguousarray(z_idx, dtype=np.intp)

    graph = _Reduced(w_indptr, w_indices, w_data, deg, z_idx, z_w)

    def run(part):
        _reduced_run(graph, part, n_parts, B, H)

    run_parts(run, range(n_parts), loop_threads() if n_threads is None else n_threads)
    return B, H


cdef class _Reduced:
    """The reduced problem's inputs: W as CSR arrays (w_indptr, w_indices, w_data),
    the degrees ``deg``, and Z by its K nonzeros per point (z_idx, z_w)."""
    cdef const Py_ssize_t[::1] w_indptr, w_indices
    cdef const double[::1] w_data, deg
    cdef const Py_ssize_t[:, ::1] z_idx
    cdef const double[:, ::1] z_w

    def __init__(self, w_indptr, w_indices, w_data, deg, z_idx, z_w):
        self.w_indptr, self.w_indices, self.w_data = w_indptr, w_indices, w_data
        self.deg, self.z_idx, self.z_w = deg, z_idx, z_w


cdef class _Gather:
    """A dense work vector of n values (``acc``) and its nonzero columns (``seen``,
    ``cols``), all clear between points."""
    cdef double[::1] acc
    cdef signed char[::1] seen
    cdef Py_ssize_t[::1] cols

    def __init__(self, Py_ssize_t n):
        self.acc = np.zeros(n)
        self.seen = np.zeros(n, dtype=np.int8)
        self.cols = np.empty(n, dtype=np.intp)


def _reduced_run(_Reduced graph, Py_ssize_t part, Py_ssize_t n_parts, double[:, ::1] B,
                 double[:, ::1] H):
    cdef _Gather gather = _Gather(B.shape[0])
    with nogil:
        _reduced_part(graph, part, n_parts, B, H, gather)


cdef void _reduced_part(_Reduced graph, Py_ssize_t part, Py_ssize_t n_parts,
                        double[:, ::1] B, double[:, ::1] H, _Gather gather) noexcept nogil:
    """One part of :func:`reduced_dense`: the rows r with r % n_parts == part.

    Point n's row sum_{m >= n} w_nm z_m is gathered into a dense work vector and
    added by its nonzero columns only (at most K_Z per edge), which it then
    clears; only points with a landmark among the part's rows need it.
    """
    cdef const Py_ssize_t[::1] w_indptr = graph.w_indptr
    cdef const Py_ssize_t[::1] w_indices = graph.w_indices
    cdef const double[::1] w_data = graph.w_data
    cdef const double[::1] deg = graph.deg
    cdef const Py_ssize_t[:, ::1] z_idx = graph.z_idx
    cdef const double[:, ::1] z_w = graph.z_w
    cdef double[::1] acc = gather.acc
    cdef signed char[::1] seen = gather.seen
    cdef Py_ssize_t[::1] cols = gather.cols
    cdef Py_ssize_t n = z_idx.shape[0], k = z_idx.shape[1]
    cdef Py_ssize_t i, a, b, e, mm, col, row, q, n_cols
    cdef double wv, zv, dz
    cdef bint mine
    for i in range(n):
        mine = False
        for a in range(k):
            if z_idx[i, a] % n_parts == part:
                mine = True
        if not mine:
            continue
        n_cols = 0
        for e in range(w_indptr[i], w_indptr[i + 1]):
            mm = w_indices[e]
            if mm < i:
                continue
            wv = w_data[e] if mm > i else 0.5 * w_data[e]
            for a in range(k):
                col = z_idx[mm, a]
                acc[col] += wv * z_w[mm, a]
                if not seen[col]:
                    seen[col] = 1
                    cols[n_cols] = col
                    n_cols += 1
        for a in range(k):
            row = z_idx[i, a]
            if row % n_parts != part:
                continue
            zv = z_w[i, a]
            dz = deg[i] * zv
            for b in range(k):
                B[row, z_idx[i, b]] += dz * z_w[i, b]
            for q in range(n_cols):
                col = cols[q]
                H[row, col] += zv * acc[col]
        for q in range(n_cols):
            acc[cols[q]] = 0.0
            seen[cols[q]] = 0


def reduced_rows(w_indptr, w_indices, w_data, deg, z_idx, z_w, Py_ssize_t lo,
                 Py_ssize_t hi, B, C):
    """Rows lo:hi of B~ = sum_n d_n z_n z_n^T and C~ = Z^T W Z, dense, for a W
    given whole (both triangles): B[r - lo] and C[r - lo] for landmark r.

    Z is given by its K nonzeros per point (z_idx, z_w). Point n adds to the rows
    of its own landmarks in lo:hi; its row sum_m w_nm z_m is gathered into a dense
    work vector first (at most K per edge), added by its nonzero columns only and
    then cleared. The entries are sums over the points in their order, so rows
    computed in any grouping give the same bits; the caller runs groups of rows
    on threads and keeps only their nonzero entries (:func:`.lll.reduced_problem`).
    """
    w_indptr = np.ascontiguousarray(w_indptr, dtype=np.intp)
    w_indices = np.ascontiguousarray(w_indices, dtype=np.intp)
    z_idx = np.ascontiguousarray(z_idx, dtype=np.intp)
    cdef Py_ssize_t n_land = int(z_idx.max()) + 1 if z_idx.size else 0
    n_land = max(n_land, hi)
    _reduced_rows(_Reduced(w_indptr, w_indices, w_data, deg, z_idx, z_w), lo, hi, B, C,
                  _Gather(n_land))


def _reduced_rows(_Reduced graph, Py_ssize_t lo, Py_ssize_t hi, double[:, ::1] B,
                  double[:, ::1] C, _Gather gather):
    cdef const Py_ssize_t[::1] w_indptr = graph.w_indptr
    cdef const Py_ssize_t[::1] w_indices = graph.w_indices
    cdef const double[::1] w_data = graph.w_data
    cdef const double[::1] deg = graph.deg
    cdef const Py_ssize_t[:, ::1] z_idx = graph.z_idx
    cdef const double[:, ::1] z_w = graph.z_w
    cdef double[::1] acc = gather.acc
    cdef signed char[::1] seen = gather.seen
    cdef Py_ssize_t[::1] cols = gather.cols
    cdef Py_ssize_t n = z_idx.shape[0], k = z_idx.shape[1]
    cdef Py_ssize_t i, a, b, e, mm, col, row, q, n_cols
    cdef double wv, zv, dz
    cdef bint mine
    with nogil:
        for i in range(n):
            mine = False
            for a in range(k):
                if lo <= z_idx[i, a] < hi:
                    mine = True
            if not mine:
                continue
            n_cols = 0
            for e in range(w_indptr[i], w_indptr[i + 1]):
                mm = w_indices[e]
                wv = w_data[e]
                for a in range(k):
                    col = z_idx[mm, a]
                    acc[col] += wv * z_w[mm, a]
                    if not seen[col]:
                        seen[col] = 1
                        cols[n_cols] = col
                        n_cols += 1
            for a in range(k):
                row = z_idx[i, a]
                if not lo <= row < hi:
                    continue
                zv = z_w[i, a]
                dz = deg[i] * zv
                for b in range(k):
                    B[row - lo, z_idx[i, b]] += dz * z_w[i, b]
                for q in range(n_cols):
                    col = cols[q]
                    C[row - lo, col] += zv * acc[col]
            for q in range(n_cols):
                acc[cols[q]] = 0.0
                seen[cols[q]] = 0


# --------------------------------------------------------------------------- residuals

def reconstruction_residuals(X, landmarks, z_indptr, z_indices, z_data, n_threads=None):
    """|x_i - sum_a z_ia t_a|^2 for every row of dense X, in float64.

    Z is given as CSR arrays (rows of X, columns the landmarks). Rows go in
    contiguous parts, one thread each (default:
    :func:`~landmarking._parallel.loop_threads`); each row's value depends on
    that row only, so the result does not depend on the thread count. One pass
    over X with no (n, n_features) temporaries.
    """
    cdef Py_ssize_t n = X.shape[0]
    out = np.empty(n)
    if n_threads is None:
        n_threads = loop_threads()
    per_part = max(1, -(-n // max(1, int(n_threads))))
    X = np.ascontiguousarray(X)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    landmarks = np.ascontiguousarray(landmarks, dtype=np.float64)
    z_indptr = np.ascontiguousarray(z_indptr, dtype=np.intp)
    z_indices = np.ascontiguousarray(z_indices, dtype=np.intp)
    z_data = np.ascontiguousarray(z_data, dtype=np.float64)

    def run(start):
        _residual_run(X, landmarks, z_indptr, z_indices, z_data, start,
                      min(n, start + per_part), out)

    run_parts(run, range(0, n, per_part), n_threads)
    return out


def _residual_run(const real_x[:, ::1] X, const double[:, ::1] landmarks,
                  const Py_ssize_t[::1] z_indptr, const Py_ssize_t[::1] z_indices,
                  const double[::1] z_data, Py_ssize_t start, Py_ssize_t stop,
                  double[::1] out):
    cdef double[::1] r = np.empty(X.shape[1])
    cdef Py_ssize_t i, f, e, d = X.shape[1]
    cdef double zp
    cdef const double* t
    with nogil:
        for i in range(start, stop):
            for f in range(d):
                r[f] = <double>X[i, f]
            for e in range(z_indptr[i], z_indptr[i + 1]):
                zp = z_data[e]
                t = &landmarks[z_indices[e], 0]
                for f in range(d):
                    r[f] -= zp * t[f]
            out[i] = lane_dot(&r[0], &r[0], d)
