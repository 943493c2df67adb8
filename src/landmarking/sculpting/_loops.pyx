# distutils: extra_compile_args = -fno-math-errno
# (sqrt sets no errno here, so that loops of square roots vectorise: the same
# correctly rounded results, several terms at once; setup.py adds the common flags.)
"""Compiled loops of Manifold Sculpting (Gashler, Ventura & Martinez 2011).

Layout shared by every loop:

- ``T`` (n, t): the target coordinates, the only values hill climbing moves.
- ``nbr`` (n, k): neighbour indices; ``far[i, j]`` is ``m_ij``, the neighbour of
  ``v = nbr[i, j]`` most collinear with ``i`` (-1 when ``v`` has no neighbour
  other than ``i``).
- ``delta0``, ``theta0``, ``cos0 = cos(theta0)`` (n, k): the distances and
  angles to restore.
- ``junk_sq[i, j] = ||J_i - J_v||^2``, ``junk_far[i, j] = ||J_m - J_v||^2`` and
  ``junk_dot[i, j] = (J_i - J_v).(J_m - J_v)`` over the non-target dimensions
  ``J`` at scale 1. The paper's first speed-up: those dimensions only ever
  shrink by ``sigma``, so their share of every distance and angle is
  ``s2 = scale^2`` times a constant and one error evaluation costs O(k t) instead
  of O(k D).
- ``rev = (rptr, rp, rj)``: the reverse lists of :func:`reverse_lists` (empty
  for the paper's own-error move rule).
- ``terms``: :func:`point_terms`, every term a point's move changes, stored
  together for each point (its own k terms, then the other points' terms that
  involve it), so that the climber reads one block per point instead of rows of
  the (n, k) arrays scattered over memory.

The relationships and the caches are vectorised NumPy in :mod:`._loop`; this
module holds what must run one move at a time (the hill climber), and the total
error of an iteration, one pass over every term. The whole per-iteration pass
(breadth-first order, hill climbing, weights of already-adjusted neighbours) is
one compiled call that releases the GIL; Python only loops over iterations. The
hill climbing is sequential by nature (each move sees the moves before it), so
nothing here runs on several threads.

Every floating-point operation is the one the loops below spell, in that order
(the build has no fast-math and no contraction), so a pass gives the same bits as
the numba kernels it replaced; the climber only skips work whose result could not
change a decision (see :func:`_trial_error`).
"""

from typing import NamedTuple

import numpy as np

from libc.math cimport M_PI, acos, sqrt
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.stdlib cimport free, malloc

__all__ = [
    "far_indices",
    "PointTerms",
    "point_terms",
    "point_error",
    "reverse_lists",
    "no_reverse_lists",
    "adjust_point",
    "sculpt_pass",
    "Weighting",
    "total_terms",
    "mean_neighbor_distance",
    "expand_targets",
]


# ---------------------------------------------------------------------------
# The relationships of one neighbour graph, as raw pointers for nogil code
# ---------------------------------------------------------------------------

cdef struct Graph:
    double* T              # (n, t), moved in place
    Py_ssize_t n, k, t
    const int64_t* nbr      # (n, k)
    const int64_t* far      # (n, k), -1: no angle
    const double* delta0    # (n, k)
    const double* theta0    # (n, k)
    const double* cos0      # (n, k)
    const double* junk_sq   # (n, k)
    const double* junk_far  # (n, k)
    const double* junk_dot  # (n, k)
    double s2               # the dropped dimensions' squared scale
    double delta_ave
    int64_t* stamp          # (n,) the iteration in which a point was last adjusted
    int64_t it              # the iteration now
    const uint8_t* heavy    # (n,) clamped points (weighted as adjusted, never moved)
    double w_adj            # weight of an adjusted (or clamped) neighbour's terms
    Py_ssize_t n_ptr        # entries of rptr (0: no reverse lists)
    const int64_t* rptr     # (n + 1,) CSR pointers of the reverse lists
    const int64_t* rp       # owners p of the reverse terms
    const int64_t* rj       # their columns j


cdef struct Span:
    Py_ssize_t first, count


cdef inline Span _reverse_span(const Graph* g, Py_ssize_t i) noexcept nogil:
    """Where point i's reverse terms start in the reverse lists, and how many
    there are (none when the lists are empty: the paper's own move rule)."""
    cdef Span s
    if g.n_ptr > i + 1:
        s.first = g.rptr[i]
        s.count = g.rptr[i + 1] - g.rptr[i]
    else:
        s.first = 0
        s.count = 0
    return s


cdef inline double _weight(const Graph* g, Py_ssize_t judge) noexcept nogil:
    """w_adj for a term judged by a point adjusted in this iteration (or
    clamped), else 1."""
    return g.w_adj if (g.stamp[judge] == g.it or g.heavy[judge]) else 1.0


cdef const int64_t* _int64_pointer(const int64_t[::1] a):
    return &a[0] if a.shape[0] > 0 else NULL


cdef Graph _relations_graph(const double[:, ::1] T, relations, double s2,
                            double delta_ave) except *:
    """A Graph of the (n, k) arrays ``relations`` = (nbr, far, delta0, theta0, cos0,
    junk_sq, junk_far, junk_dot) over the caller's arrays (which must outlive its
    use), every weight 1 and no reverse lists."""
    cdef const int64_t[:, ::1] nbr = relations[0]
    cdef const int64_t[:, ::1] far = relations[1]
    cdef const double[:, ::1] delta0 = relations[2]
    cdef const double[:, ::1] theta0 = relations[3]
    cdef const double[:, ::1] cos0 = relations[4]
    cdef const double[:, ::1] junk_sq = relations[5]
    cdef const double[:, ::1] junk_far = relations[6]
    cdef const double[:, ::1] junk_dot = relations[7]
    cdef Py_ssize_t n = nbr.shape[0], k = nbr.shape[1]
    for name, a in (("T", T), ("far", far), ("delta0", delta0), ("theta0", theta0),
                    ("cos0", cos0), ("junk_sq", junk_sq), ("junk_far", junk_far),
                    ("junk_dot", junk_dot)):
        if a.shape[0] != n or (name != "T" and a.shape[1] != k):
            raise ValueError(f"{name} has shape {tuple(a.shape)[:2]}; the neighbour "
                             f"table is ({n}, {k}).")
    cdef Graph g
    g.T = <double*>&T[0, 0] if T.shape[0] > 0 and T.shape[1] > 0 else NULL
    g.n, g.k, g.t = n, k, T.shape[1]
    g.nbr, g.far = &nbr[0, 0], &far[0, 0]
    g.delta0, g.theta0, g.cos0 = &delta0[0, 0], &theta0[0, 0], &cos0[0, 0]
    g.junk_sq, g.junk_far, g.junk_dot = &junk_sq[0, 0], &junk_far[0, 0], &junk_dot[0, 0]
    g.s2, g.delta_ave = s2, delta_ave
    g.stamp, g.it, g.heavy, g.w_adj = NULL, 0, NULL, 1.0
    g.n_ptr, g.rptr, g.rp, g.rj = 0, NULL, NULL, NULL
    return g


cdef Graph _graph(double[:, ::1] T, relations, weighting, const uint8_t[::1] heavy,
                  rev) except *:
    """The Graph over the caller's arrays (which must outlive its use): the
    relations of :func:`_relations_graph`, weighted by ``weighting`` (a
    :class:`Weighting`, its ``heavy`` as bytes), with the reverse lists ``rev``."""
    cdef const int64_t[::1] rptr = rev[0]
    cdef const int64_t[::1] rp = rev[1]
    cdef const int64_t[::1] rj = rev[2]
    cdef int64_t[::1] stamp = weighting.stamp
    cdef Graph g = _relations_graph(T, relations, weighting.s2, weighting.delta_ave)
    if stamp.shape[0] != g.n or heavy.shape[0] != g.n:
        raise ValueError(f"stamp and heavy need one entry per point ({g.n}).")
    if rptr.shape[0] not in (0, g.n + 1) or rp.shape[0] != rj.shape[0]:
        raise ValueError("rev must be reverse_lists(nbr, far) or no_reverse_lists().")
    g.stamp, g.it, g.heavy, g.w_adj = &stamp[0], weighting.it, &heavy[0], weighting.w_adj
    g.n_ptr = rptr.shape[0]
    g.rptr, g.rp, g.rj = _int64_pointer(rptr), _int64_pointer(rp), _int64_pointer(rj)
    return g


# ---------------------------------------------------------------------------
# The error of one point, from scratch (the reference the climber must match)
# ---------------------------------------------------------------------------

cdef double _point_error(const Graph* g, Py_ssize_t i) noexcept nogil:
    cdef Py_ssize_t k = g.k, t = g.t, q, p, j, v, m, d, judge, e
    cdef double inv = 1.0 / (2.0 * g.delta_ave)
    cdef double err = 0.0, w, sq_a, sq_b, dot, da, db, r, term, denom, c, a
    cdef const double* T = g.T
    cdef Span span = _reverse_span(g, i)
    for q in range(k + span.count):
        if q < k:
            p = i
            j = q
            judge = g.nbr[i * k + j]  # own terms: weighted by the neighbour's state
        else:
            p = g.rp[span.first + q - k]
            j = g.rj[span.first + q - k]
            judge = p  # another point's term: weighted by its owner's state
        w = _weight(g, judge)
        e = p * k + j
        v = g.nbr[e]
        sq_a = g.s2 * g.junk_sq[e]
        for d in range(t):
            da = T[p * t + d] - T[v * t + d]
            sq_a += da * da
        r = (g.delta0[e] - sqrt(sq_a)) * inv
        term = r * r
        m = g.far[e]
        if m >= 0:
            sq_b = g.s2 * g.junk_far[e]
            dot = g.s2 * g.junk_dot[e]
            for d in range(t):
                db = T[m * t + d] - T[v * t + d]
                sq_b += db * db
                dot += (T[p * t + d] - T[v * t + d]) * db
            denom = sqrt(sq_a * sq_b)
            c = dot / denom if denom > 0.0 else 1.0
            # theta < theta0 exactly when cos(theta) > cos(theta0); the arccos
            # is only needed then.
            if c > g.cos0[e]:
                a = (g.theta0[e] - acos(min(1.0, c))) / M_PI
                term += a * a
        err += w * term
    return err


# ---------------------------------------------------------------------------
# The terms each point's move changes, grouped by that point (built once per run)
# ---------------------------------------------------------------------------

# The moving point's role in a term: 0, its own term (i = p); 1, a term where it
# is the neighbour v; 2, a term where it is the far end m of the angle.
cdef enum:
    _OWN = 0
    _AS_NEIGHBOR = 1
    _AS_FAR = 2


class PointTerms(NamedTuple):
    """Every term that point i's move changes, stored together for each i.

    The terms of point i are rows ``ptr[i]`` to ``ptr[i + 1]``: first its own k
    terms, then the reverse terms of other points that involve it (in the order of
    the reverse lists). So a pass reads each point's terms as one contiguous block
    instead of from rows of the (n, k) arrays scattered over memory. ``ends[q]`` is
    ``(p, v, m, judge, role)``: the term's owner, neighbour and far end of the
    angle (-1: none), the point whose state weights it, and the moving point's
    role in it (0: p, 1: v, 2: m). ``values[q]`` is ``(delta0, theta0, cos0)`` and
    ``junk[q]`` the dropped dimensions' ``(junk_sq, junk_far, junk_dot)``, with
    no rows when nothing is left to scale out.
    """

    ptr: np.ndarray
    ends: np.ndarray
    values: np.ndarray
    junk: np.ndarray


def point_terms(nbr, far, delta0, theta0, cos0, junk, rev):
    """The :class:`PointTerms` of a neighbour graph; ``junk`` is the triple of
    (n, k) caches, ``rev`` :func:`reverse_lists` or :func:`no_reverse_lists`."""
    n, k = nbr.shape
    if n >= 2 ** 31:
        raise ValueError(f"{n} points: the term tables index points in 32 bits.")
    rptr, rp, rj = rev
    n_rev = np.diff(rptr) if rptr.shape[0] else np.zeros(n, dtype=np.int64)
    ptr = np.concatenate([[0], np.cumsum(k + n_rev)]).astype(np.int64)
    has_junk = any(np.any(c) for c in junk)
    ends = np.empty((ptr[n], 5), dtype=np.int32)
    values = np.empty((ptr[n], 3))
    junk_rows = np.empty((ptr[n] if has_junk else 0, 3))

    def fill(rows, p, e, judge, role):
        """Rows ``rows`` of the tables: the terms (p, j) at ``e = p * k + j``."""
        ends[rows, 0], ends[rows, 1], ends[rows, 2] = p, nbr.ravel()[e], far.ravel()[e]
        ends[rows, 3], ends[rows, 4] = judge, role
        for column, table in enumerate((delta0, theta0, cos0)):
            values[rows, column] = table.ravel()[e]
        for column, table in enumerate(junk if has_junk else ()):
            junk_rows[rows, column] = table.ravel()[e]

    # Own terms: weighted by the neighbour's state.
    fill((ptr[:n, None] + np.arange(k)).ravel(), np.repeat(np.arange(n), k),
         np.arange(n * k), nbr.ravel(), _OWN)
    if rp.shape[0]:
        # The other points' terms, in the order of the reverse lists (for each
        # point, those where it is the neighbour first): weighted by their owner.
        target = np.repeat(np.arange(n), n_rev)
        rows = np.arange(rp.shape[0]) + np.repeat(ptr[:n] + k - rptr[:n], n_rev)
        e = rp * k + rj
        role = np.where(nbr.ravel()[e] == target, _AS_NEIGHBOR, _AS_FAR)
        fill(rows, rp, e, rp, role)
    return PointTerms(ptr, ends, values, junk_rows)


cdef struct Table:
    double* T               # (n, t), moved in place
    Py_ssize_t n, t
    const int64_t* ptr      # (n + 1,)
    const int32_t* ends     # (n_terms, 5): p, v, m, judge, role
    const double* values    # (n_terms, 3): delta0, theta0, cos0
    const double* junk      # (n_terms, 3), or NULL: nothing to scale out
    double s2
    double delta_ave
    int64_t* stamp
    int64_t it
    const uint8_t* heavy
    double w_adj


cdef Table _table(double[:, ::1] T, terms, double s2, double delta_ave, int64_t[::1] stamp,
                  int64_t it, const uint8_t[::1] heavy, double w_adj) except *:
    """The Table over the caller's arrays (which must outlive its use)."""
    cdef const int64_t[::1] ptr = terms.ptr
    cdef const int32_t[:, ::1] ends = terms.ends
    cdef const double[:, ::1] values = terms.values
    cdef const double[:, ::1] junk = terms.junk
    cdef Py_ssize_t n = T.shape[0]
    if ptr.shape[0] != n + 1 or ends.shape[0] != ptr[n] or values.shape[0] != ptr[n] \
            or ends.shape[1] != 5 or values.shape[1] != 3 \
            or junk.shape[0] not in (0, ptr[n]) or junk.shape[1] != 3:
        raise ValueError(f"terms must be point_terms(...) of the {n} points of T.")
    if stamp.shape[0] != n or heavy.shape[0] != n:
        raise ValueError(f"stamp and heavy need one entry per point ({n}).")
    cdef Table g
    g.T = &T[0, 0] if T.shape[0] > 0 and T.shape[1] > 0 else NULL
    g.n, g.t = n, T.shape[1]
    g.ptr = &ptr[0]
    g.ends = &ends[0, 0] if ends.shape[0] > 0 else NULL
    g.values = &values[0, 0] if values.shape[0] > 0 else NULL
    g.junk = &junk[0, 0] if junk.shape[0] > 0 else NULL
    g.s2, g.delta_ave = s2, delta_ave
    g.stamp, g.it, g.heavy, g.w_adj = &stamp[0], it, &heavy[0], w_adj
    return g


cdef inline double _table_weight(const Table* g, Py_ssize_t judge) noexcept nogil:
    """w_adj for a term judged by a point adjusted in this iteration (or
    clamped), else 1."""
    return g.w_adj if (g.stamp[judge] == g.it or g.heavy[judge]) else 1.0


# ---------------------------------------------------------------------------
# Hill climbing on a local copy of the terms that move with the point
# ---------------------------------------------------------------------------

# Term q of the moving point: its weight and constants, its current squared
# lengths and dot product, its distance term, and the two vectors of its angle,
# a = p - v and b = m - v (t values each), so that a trial move along one
# dimension updates each term in O(1), without reading T again. Each field is an
# array over the terms (a[d * cap + q]: dimension d). The terms come in three runs
# by the point's role: its own (n_own), then those where it is the neighbour
# (n_nbr), then those where it is the far end (the rest); so a trial updates each
# run without asking a term its role.
cdef struct Terms:
    Py_ssize_t cap, count, t
    Py_ssize_t n_own, n_nbr
    double* w
    double* d0
    double* th0
    double* c0
    double* ja       # s2 * junk_sq
    double* jb       # s2 * junk_far
    double* jd       # s2 * junk_dot
    double* sqa
    double* sqb
    double* dot
    double* dist     # the distance term ((d0 - |a|) / (2 delta_ave))^2
    double* term     # a trial's terms (work space)
    double* cosine   # a trial's cosines of the angles (work space)
    double* trial_sqa  # a trial's squared lengths and dot products (work space)
    double* trial_sqb
    double* trial_dot
    double* a        # (t, cap)
    double* b        # (t, cap)
    int64_t* has_m   # 1 when the term has an angle
    int64_t* short   # a trial's terms whose angle is below theta0 (work space)


cdef enum:
    _TERM_FIELDS = 16  # w .. trial_dot


cdef int _allocate_terms(Terms* f, Py_ssize_t cap, Py_ssize_t t) noexcept nogil:
    """Room for ``cap`` terms; returns -1 when out of memory."""
    cdef Py_ssize_t n_values = cap * (_TERM_FIELDS + 2 * t)
    cdef double* values = <double*>malloc(max(n_values, 1) * sizeof(double))
    cdef int64_t* flags = <int64_t*>malloc(max(2 * cap, 1) * sizeof(int64_t))
    if values == NULL or flags == NULL:
        free(values)
        free(flags)
        return -1
    f.cap, f.count, f.t, f.n_own, f.n_nbr = cap, 0, t, 0, 0
    f.w, f.d0, f.th0, f.c0 = values, values + cap, values + 2 * cap, values + 3 * cap
    f.ja, f.jb, f.jd = values + 4 * cap, values + 5 * cap, values + 6 * cap
    f.sqa, f.sqb, f.dot = values + 7 * cap, values + 8 * cap, values + 9 * cap
    f.dist, f.term, f.cosine = values + 10 * cap, values + 11 * cap, values + 12 * cap
    f.trial_sqa, f.trial_sqb, f.trial_dot = values + 13 * cap, values + 14 * cap, values + 15 * cap
    f.a = values + _TERM_FIELDS * cap
    f.b = f.a + t * cap
    f.has_m, f.short = flags, flags + cap
    return 0


cdef void _free_terms(Terms* f) noexcept nogil:
    free(f.w)
    free(f.has_m)


cdef Py_ssize_t _most_terms(const Table* g) noexcept nogil:
    """The most terms any one point has."""
    cdef Py_ssize_t most = 0, i
    for i in range(g.n):
        most = max(most, g.ptr[i + 1] - g.ptr[i])
    return most


cdef void _refresh_terms(Terms* f, double inv) noexcept nogil:
    """Squared lengths, dot products and distance terms of every term from its
    vectors (each term's sums over the dimensions in order; the loops run over the
    terms, so that the compiler can take several at once)."""
    cdef Py_ssize_t q, d, count = f.count
    cdef double* sqa = f.sqa
    cdef double* sqb = f.sqb
    cdef double* dot = f.dot
    cdef const double* a
    cdef const double* b
    cdef double r
    for q in range(count):
        sqa[q] = f.ja[q]
        sqb[q] = f.jb[q]
        dot[q] = f.jd[q]
    for d in range(f.t):
        a = f.a + d * f.cap
        b = f.b + d * f.cap
        for q in range(count):
            sqa[q] += a[q] * a[q]
            sqb[q] += b[q] * b[q]
            dot[q] += a[q] * b[q]
    for q in range(count):
        r = (f.d0[q] - sqrt(sqa[q])) * inv
        f.dist[q] = r * r


cdef void _gather_terms(const Table* g, Py_ssize_t i, Terms* f) noexcept nogil:
    """Copy into f every term whose value changes when point i moves, with its
    weight now (the terms and weights of :func:`_point_error`)."""
    cdef Py_ssize_t t = g.t, cap = f.cap, first = g.ptr[i], q, p, v, m, d, row
    cdef const double* T = g.T
    cdef const int32_t* end
    f.count = g.ptr[i + 1] - first
    f.n_own = 0
    f.n_nbr = 0
    for q in range(f.count):
        row = first + q
        end = g.ends + 5 * row
        p = end[0]
        v = end[1]
        m = end[2]
        f.n_own += end[4] == _OWN
        f.n_nbr += end[4] == _AS_NEIGHBOR
        f.w[q] = _table_weight(g, end[3])
        f.has_m[q] = m >= 0
        f.d0[q] = g.values[3 * row]
        f.th0[q] = g.values[3 * row + 1]
        f.c0[q] = g.values[3 * row + 2]
        if g.junk != NULL:
            f.ja[q] = g.s2 * g.junk[3 * row]
            f.jb[q] = g.s2 * g.junk[3 * row + 1]
            f.jd[q] = g.s2 * g.junk[3 * row + 2]
        else:  # what s2 times a zero cache gives
            f.ja[q] = 0.0
            f.jb[q] = 0.0
            f.jd[q] = 0.0
        for d in range(t):
            f.a[d * cap + q] = T[p * t + d] - T[v * t + d]
            f.b[d * cap + q] = T[m * t + d] - T[v * t + d] if m >= 0 else 0.0
    _refresh_terms(f, 1.0 / (2.0 * g.delta_ave))


cdef double _trial_error(Terms* f, Py_ssize_t d, double step, double inv,
                         double stop_at) noexcept nogil:
    """The error of the gathered terms if the point moved by ``step`` along d,
    or, once it is certain to be at least ``stop_at``, a number at least
    ``stop_at`` (the climber needs no more than that to reject the move).

    Three steps, each over the three runs of terms in order: the distance parts,
    whose sum in the order of the terms is at most the error (float sums of
    nonnegative numbers grow with each of them), so that a move this sum already
    rejects costs no angle; then the cosines of the angles, and the arccos of
    those below theta0; then the sum of the terms in order, as
    :func:`_point_error` adds them. The loops over terms carry nothing from one
    term to the next, so that the compiler can run several terms at once; only
    the sums run term by term.
    """
    cdef Py_ssize_t q, cap = f.cap, n_own = f.n_own, n_near = f.n_own + f.n_nbr
    cdef Py_ssize_t count = f.count
    cdef const double* a = f.a + d * cap
    cdef const double* b = f.b + d * cap
    cdef double* sq_a = f.trial_sqa
    cdef double* sq_b = f.trial_sqb
    cdef double* dot = f.trial_dot
    cdef double* term = f.term
    cdef const double* sqa = f.sqa
    cdef const double* sqb = f.sqb
    cdef const double* dot0 = f.dot
    cdef const double* d0 = f.d0
    cdef const double* w = f.w
    cdef double step2 = step * step, twice = 2.0 * step, lower = 0.0, err, r
    # The distance parts: own terms (a = x - T_v moves), then those where the
    # point is the neighbour (a = T_p - x moves); where it is the far end, the
    # p-v distance does not move.
    for q in range(n_own):
        sq_a[q] = sqa[q] + (twice * a[q] + step2)
        r = (d0[q] - sqrt(sq_a[q])) * inv
        term[q] = r * r
    for q in range(n_own, n_near):
        sq_a[q] = sqa[q] + (step2 - twice * a[q])
        r = (d0[q] - sqrt(sq_a[q])) * inv
        term[q] = r * r
    for q in range(n_near, count):
        sq_a[q] = sqa[q]
        term[q] = f.dist[q]
    for q in range(count):
        lower += w[q] * term[q]
    if lower >= stop_at:
        return lower
    # The angles: b = m - T_v does not move for own terms; b = T_m - x moves with
    # a for the neighbour's; b = x - T_v moves for the far end's.
    for q in range(n_own):
        sq_b[q] = sqb[q]
        dot[q] = dot0[q] + step * b[q]
    for q in range(n_own, n_near):
        sq_b[q] = sqb[q] + (step2 - twice * b[q])
        dot[q] = dot0[q] + (step2 - step * (a[q] + b[q]))
    for q in range(n_near, count):
        sq_b[q] = sqb[q] + (twice * b[q] + step2)
        dot[q] = dot0[q] + step * a[q]
    if _add_short_angles(f, sq_a, sq_b, dot) == 0:
        return lower
    err = 0.0
    for q in range(count):
        err += w[q] * term[q]
    return err


cdef Py_ssize_t _add_short_angles(Terms* f, const double* sq_a, const double* sq_b,
                                  const double* dot) noexcept nogil:
    """Add to ``f.term`` the angle parts of the terms whose angle is below theta0
    (theta < theta0 exactly when cos(theta) > cos(theta0)), from their squared
    lengths and dot products; returns how many there were. Which angles are short
    changes from term to term, so they are found without a branch (it would be
    mispredicted often) and only they pay for the arccos."""
    cdef Py_ssize_t q, s, n_short = 0, count = f.count
    cdef double* cosine = f.cosine
    cdef double denom, c, ang
    for q in range(count):
        denom = sqrt(sq_a[q] * sq_b[q])
        c = dot[q] / denom  # inf or nan when denom is 0: replaced next
        cosine[q] = c if denom > 0.0 else 1.0
    for q in range(count):
        f.short[n_short] = q
        n_short += f.has_m[q] & (cosine[q] > f.c0[q])
    for s in range(n_short):
        q = f.short[s]
        ang = (f.th0[q] - acos(min(1.0, cosine[q]))) / M_PI
        f.term[q] += ang * ang
    return n_short


cdef double _current_error(Terms* f) noexcept nogil:
    """The error of the gathered terms where the point stands: what
    :func:`_trial_error` gives for a step of 0 (each squared length plus 0 is
    itself, so each distance part is ``dist``), without computing it again."""
    cdef Py_ssize_t q
    cdef double err = 0.0
    for q in range(f.count):
        f.term[q] = f.dist[q]
    if _add_short_angles(f, f.sqa, f.sqb, f.dot) == 0:
        for q in range(f.count):
            err += f.w[q] * f.term[q]
        return err
    for q in range(f.count):
        err += f.w[q] * f.term[q]
    return err


cdef void _accept_move(Terms* f, Py_ssize_t d, double step, double inv) noexcept nogil:
    cdef Py_ssize_t q, cap = f.cap, n_near = f.n_own + f.n_nbr
    cdef double* a = f.a + d * cap
    cdef double* b = f.b + d * cap
    for q in range(f.n_own):
        a[q] += step
    for q in range(f.n_own, n_near):
        a[q] -= step
        b[q] -= step
    for q in range(n_near, f.count):
        b[q] += step
    _refresh_terms(f, inv)


cdef Py_ssize_t _climb(const Table* g, Py_ssize_t i, double eta, Py_ssize_t max_steps,
                       Terms* f, double* final_err) noexcept nogil:
    """The paper's hill climber (Fig. 6) on the gathered terms of point i.

    Try +eta then -eta on each target dimension, keep a move only if it lowers
    the error, and repeat rounds until one keeps no move (or ``max_steps``
    rounds kept one). A dimension is not tried again from a position where it
    already failed: once every dimension has failed in a row since the last kept
    move, the next round could keep nothing, so it is not run. The kept moves
    are exactly those of the paper's loop. Returns the rounds in which a move
    was kept; ``final_err`` gets the point's error at the end.
    """
    cdef Py_ssize_t t = g.t, d, steps = 0, failed = 0
    cdef double inv = 1.0 / (2.0 * g.delta_ave)
    cdef double err, e, step
    cdef bint improved
    err = _current_error(f)
    while steps < max_steps:
        improved = False
        for d in range(t):
            e = _trial_error(f, d, eta, inv, err)
            step = eta
            if not e < err:
                e = _trial_error(f, d, -eta, inv, err)
                step = -eta
            if e < err:
                g.T[i * t + d] += step
                _accept_move(f, d, step, inv)
                err = e
                improved = True
                failed = 0
            else:
                failed += 1
                if failed == t:
                    break
        if not improved:
            break
        steps += 1
    final_err[0] = err
    return steps


cdef int64_t _sculpt_pass(const Table* g, const int64_t* nbr, Py_ssize_t k, Py_ssize_t start,
                          const int64_t* order, double eta, Py_ssize_t max_steps, Terms* f,
                          int64_t* queue, uint8_t* seen) noexcept nogil:
    """Step 4b over every point once, in breadth-first order (see sculpt_pass)."""
    cdef Py_ssize_t n = g.n, head = 0, tail = 0, nxt = 0, i, j, v
    cdef int64_t total = 0
    cdef double err
    for i in range(n):
        seen[i] = 0
    queue[tail] = start
    tail += 1
    seen[start] = 1
    while head < n:
        if head == tail:  # the graph is not connected from start: restart the walk
            while seen[order[nxt]]:
                nxt += 1
            queue[tail] = order[nxt]
            seen[order[nxt]] = 1
            tail += 1
        i = queue[head]
        head += 1
        for j in range(k):
            v = nbr[i * k + j]
            if not seen[v]:
                seen[v] = 1
                queue[tail] = v
                tail += 1
        if not g.heavy[i]:
            _gather_terms(g, i, f)
            total += _climb(g, i, eta, max_steps, f, &err)
        g.stamp[i] = g.it
    return total


# ---------------------------------------------------------------------------
# The Python entry points
# ---------------------------------------------------------------------------

class Weighting(NamedTuple):
    """How the terms are weighted in an iteration, and scaled.

    ``s2`` is the dropped dimensions' squared scale and ``delta_ave`` the mean
    neighbour distance of the start; a term judged by a point adjusted in
    iteration ``it`` (``stamp[v] == it``) or clamped (``heavy[v]``) weighs
    ``w_adj``, any other 1. ``stamp`` (int64, one per point) changes in place.
    """

    s2: float
    delta_ave: float
    stamp: np.ndarray
    it: int
    heavy: np.ndarray
    w_adj: float


def point_error(Py_ssize_t i, double[:, ::1] T, relations, weighting, rev):
    """The error that decides point i's moves, from the (n, k) arrays directly
    (the reference the climber of :func:`adjust_point` and :func:`sculpt_pass`
    must match): ``relations`` = (nbr, far, delta0, theta0, cos0, junk_sq,
    junk_far, junk_dot), ``weighting`` a :class:`Weighting`.

    Its own terms, equation (1) of the paper, ``sum_j w_ij term(i, j)`` with
    ``w_ij = w_adj`` when neighbour j was adjusted in iteration ``it``
    (``stamp[v] == it``) or is clamped (``heavy[v]``), else 1, and

    ``term(p, j) = ((delta0 - delta) / (2 delta_ave))^2 + (max(0, theta0 - theta) / pi)^2``.

    When ``rev`` holds reverse lists (see :func:`reverse_lists`), the terms of
    other points that involve i (i as their neighbour, or as the far end of one
    of their angles) are added with the same weighting by their owner, so that
    a move which lowers this error lowers the total error; an empty ``rev``
    gives the paper's rule exactly.
    """
    heavy = _bytes(weighting.heavy)  # held here: the Graph points into it
    cdef Graph g = _graph(T, relations, weighting, heavy, rev)
    _check_point(i, g.n)
    cdef double err
    with nogil:
        err = _point_error(&g, i)
    return err


def adjust_point(Py_ssize_t i, double[:, ::1] T, double eta, Py_ssize_t max_steps, terms,
                 weighting):
    """Hill-climb point i alone (the climber of :func:`sculpt_pass`); ``terms`` is
    :func:`point_terms` of the graph, ``weighting`` a :class:`Weighting` (the
    weights as in :func:`point_error`).

    Returns
    -------
    steps : int, rounds in which at least one move was kept
    err : float, the point's error at the end (never above its error at the start)
    """
    heavy = _bytes(weighting.heavy)  # held here: the Table points into it
    cdef Table g = _table(T, terms, weighting.s2, weighting.delta_ave, weighting.stamp,
                          weighting.it, heavy, weighting.w_adj)
    _check_point(i, g.n)
    cdef Terms f
    cdef Py_ssize_t steps
    cdef double err
    if _allocate_terms(&f, _most_terms(&g), g.t) < 0:
        raise MemoryError("no room for one point's terms")
    with nogil:
        _gather_terms(&g, i, &f)
        steps = _climb(&g, i, eta, max_steps, &f, &err)
        _free_terms(&f)
    return steps, err


def sculpt_pass(double[:, ::1] T, Py_ssize_t start, const int64_t[::1] order, double eta,
                Py_ssize_t max_steps, const int64_t[:, ::1] nbr, terms, weighting):
    """Step 4b: adjust every free point once, in breadth-first order from ``start``.

    Points are visited in the order they are first reached over the neighbour
    graph ``nbr``; when the graph is not connected from ``start``, the walk
    restarts from the next unvisited point of ``order`` (a permutation of the
    points), so every point is visited. Each point is hill-climbed on its terms
    (``terms``, :func:`point_terms` of the graph; ``weighting`` a :class:`Weighting`,
    the weights as in :func:`point_error`). ``stamp[i]`` is set to ``it`` once i is
    adjusted, which
    gives its neighbours' errors the heavier weight. Clamped points (``heavy``)
    are visited but never moved. ``T`` and ``stamp`` change in place.

    Returns
    -------
    int
        The total number of hill-climbing steps (rounds that kept a move).
    """
    heavy = _bytes(weighting.heavy)  # held here: the Table points into it
    cdef Table g = _table(T, terms, weighting.s2, weighting.delta_ave, weighting.stamp,
                          weighting.it, heavy, weighting.w_adj)
    _check_point(start, g.n)
    if order.shape[0] != g.n or nbr.shape[0] != g.n:
        raise ValueError(f"order and nbr need one row per point ({g.n}).")
    cdef int64_t[::1] queue = np.empty(g.n, dtype=np.int64)
    cdef uint8_t[::1] seen = np.empty(g.n, dtype=np.uint8)
    cdef Terms f
    cdef int64_t total
    if _allocate_terms(&f, _most_terms(&g), g.t) < 0:
        raise MemoryError("no room for one point's terms")
    with nogil:
        total = _sculpt_pass(&g, &nbr[0, 0], nbr.shape[1], start, &order[0], eta, max_steps,
                             &f, &queue[0], &seen[0])
        _free_terms(&f)
    return total


cdef void _total_terms(const Graph* g, double* out) noexcept nogil:
    """out[p, j] (n x k): term (p, j), every weight 1."""
    cdef Py_ssize_t n = g.n, k = g.k, t = g.t, p, j, v, m, d, pj
    cdef const double* T = g.T
    cdef double s2 = g.s2
    cdef double twice = 2.0 * g.delta_ave, sq_a, sq_b, dot, acc, da, db, r, denom, c, a
    for p in range(n):
        for j in range(k):
            pj = p * k + j
            v = g.nbr[pj]
            m = g.far[pj]
            acc = 0.0
            for d in range(t):
                da = T[p * t + d] - T[v * t + d]
                acc += da * da
            sq_a = s2 * g.junk_sq[pj] + acc
            r = (g.delta0[pj] - sqrt(sq_a)) / twice
            out[pj] = r * r
            if m < 0:
                continue
            acc = 0.0
            for d in range(t):
                db = T[m * t + d] - T[v * t + d]
                acc += db * db
            sq_b = s2 * g.junk_far[pj] + acc
            acc = 0.0
            for d in range(t):
                acc += (T[p * t + d] - T[v * t + d]) * (T[m * t + d] - T[v * t + d])
            dot = s2 * g.junk_dot[pj] + acc
            denom = sqrt(sq_a * sq_b)
            c = dot / denom if denom > 0.0 else 1.0
            if c > g.cos0[pj]:
                a = (g.theta0[pj] - acos(min(1.0, c))) / M_PI
                out[pj] = r * r + a * a


def total_terms(const double[:, ::1] T, const int64_t[:, ::1] nbr, const int64_t[:, ::1] far,
                const double[:, ::1] delta0, const double[:, ::1] theta0,
                const double[:, ::1] cos0, junk, double s2, double delta_ave,
                double[:, ::1] out):
    """``out[p, j]``: term (p, j) of equation (1), every weight 1 (as in
    :func:`point_error`), for the total error.

    Each term is computed as the NumPy expression it replaced
    (``r = (delta0 - sqrt(sq_a)) / (2 delta_ave)``, the squared lengths summed over
    the target dimensions in order), so that ``out.sum()`` is the same number.
    """
    cdef Py_ssize_t n = nbr.shape[0], k = nbr.shape[1]
    _check_tables(n, k, far, delta0, theta0, cos0, junk[0], junk[1], junk[2], out)
    if T.shape[0] != n:
        raise ValueError(f"T has {T.shape[0]} rows for {n} points.")
    cdef Graph g = _relations_graph(T, (nbr, far, delta0, theta0, cos0, *junk), s2,
                                    delta_ave)
    with nogil:
        _total_terms(&g, &out[0, 0])


cdef double _mean_neighbor_distance(const double[:, ::1] T, const int64_t[:, ::1] nbr,
                                    const double[:, ::1] junk_sq, double s2) noexcept nogil:
    cdef Py_ssize_t n = nbr.shape[0], k = nbr.shape[1], t = T.shape[1], i, j, v, d
    cdef double acc = 0.0, sq, diff
    for i in range(n):
        for j in range(k):
            v = nbr[i, j]
            sq = s2 * junk_sq[i, j]
            for d in range(t):
                diff = T[i, d] - T[v, d]
                sq += diff * diff
            acc += sqrt(sq)
    return acc / (n * k)


def mean_neighbor_distance(const double[:, ::1] T, const int64_t[:, ::1] nbr,
                           const double[:, ::1] junk_sq, double s2):
    """Mean over all neighbour pairs of the current distance (all dimensions)."""
    cdef double mean
    with nogil:
        mean = _mean_neighbor_distance(T, nbr, junk_sq, s2)
    return mean


def expand_targets(double[:, ::1] T, const int64_t[:, ::1] nbr, const double[:, ::1] junk_sq,
                   double s2, double delta_ave, double sigma, Py_ssize_t max_rounds):
    """Step 4a's second half: divide the target dimensions by sigma until the
    mean neighbour distance is back to delta_ave. Returns the rounds taken."""
    cdef Py_ssize_t rounds = 0, i, d
    with nogil:
        while rounds < max_rounds and _mean_neighbor_distance(T, nbr, junk_sq, s2) < delta_ave:
            for i in range(T.shape[0]):
                for d in range(T.shape[1]):
                    T[i, d] /= sigma
            rounds += 1
    return rounds


def _bytes(heavy):
    """The clamped-point mask as bytes (NumPy's bool is one byte, 0 or 1)."""
    return np.ascontiguousarray(heavy, dtype=np.bool_).view(np.uint8)


def _check_tables(n, k, *tables):
    for a in tables:
        if a.shape[0] != n or a.shape[1] != k:
            raise ValueError(f"every table must be ({n}, {k}) like the neighbour indices.")


def _check_point(Py_ssize_t i, Py_ssize_t n):
    if not 0 <= i < n:
        raise IndexError(f"point {i} is not in [0, {n}).")


# ---------------------------------------------------------------------------
# NumPy helpers: the far ends of the angles and the reverse lists
# ---------------------------------------------------------------------------

def far_indices(nbr, slot):
    """``far[i, j] = nbr[nbr[i, j], slot[i, j]]``, or -1 where slot is -1."""
    far = nbr[nbr, np.maximum(slot, 0)]
    return np.ascontiguousarray(np.where(slot >= 0, far, -1), dtype=np.int64)


def reverse_lists(nbr, far):
    """For every point i, the (p, j) pairs whose term in equation (1) involves i
    other than as p: ``nbr[p, j] == i`` (i is the neighbour) or
    ``m_pj == i`` (i is the far end of the angle). CSR layout ``(ptr, p, j)``;
    each point's pairs where it is the neighbour come first (the climber reads the
    terms in runs by the point's role).
    """
    n, k = nbr.shape
    P = np.repeat(np.arange(n), k).reshape(n, k)
    J = np.tile(np.arange(k), n).reshape(n, k)
    has_m = far >= 0
    target = np.concatenate([nbr.ravel(), far[has_m]])
    owner = np.concatenate([P.ravel(), P[has_m]])
    which = np.concatenate([J.ravel(), J[has_m]])
    order = np.argsort(target, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(ptr, target + 1, 1)
    return (np.cumsum(ptr), owner[order].astype(np.int64), which[order].astype(np.int64))


def no_reverse_lists():
    """The empty reverse lists: the paper's own-error rule."""
    empty = np.zeros(0, dtype=np.int64)
    return (empty, empty, empty)
