"""The compiled GP step (Cython, compiled ahead of time), for blocks of B >= 1 landmarks.

:func:`visit_steps` runs all the steps of a block of B landmarks on one chunk visit
in one call, each step as the NumPy reference :func:`._cpu.reference_step`
computes it (symbols as in :mod:`.objective`): the squared distances of the batch
to the B landmarks (:func:`_distances`), the kernel values relative to each
landmark's nearest point (:func:`_kernel_values`), the cross products with the
earlier landmarks' columns (:func:`_cross`) and the solve with the batch's
Cholesky factor, U = M Phi_B (:func:`_residuals`), G = Phi_B^T U
(:func:`_block_gram`) and its factor with the drops (:func:`_factor_with_drops`),
the weights W (:func:`_weights`), X_b^T W (:func:`_weighted_sums`), then the B
moves (:func:`_move_point`, with the projection onto the space). The sequential
fit is the block fit with B = 1: the same call. :func:`kernel_columns` and
:func:`cross_gram` compute a fit's kernel table and a block's Gram products.

Arithmetic: the data's precision where the data is read (float32 stays float32:
the dot products with the batch, and the weighted sums over blocks of _FLUSH rows
whose sums go into a float64 total), float64 everywhere else. No -ffast-math, no
fused multiply-adds: a sum is added in the order it is written. Where a loop
would be a chain of dependent additions (a dot product), it keeps interleaved
partial sums (lanes: lane l adds the products at c = l, l + LANES, ...; the lanes
are added in order, then the tail), which the compiler turns into vector
instructions; the dot products with the batch are written in C with GCC's vector
types (see the C block below). A value never depends on how many rows or
landmarks are computed with it, nor on the threads.

Threads (``n_threads``): the steps of a visit run on that many Python threads
(:func:`landmarking._parallel.run_parts`), each in compiled code without the GIL,
meeting at a barrier (:class:`_Barrier`) between the parts of a step. Each part is
split by what it computes alone (rows, landmarks, blocks of rows, tiles of
features); no sum is split, so the landmarks are the same bits on any number of
threads. The factor of G (B x B) runs on the first thread.
"""

from collections import namedtuple

import numpy as np

cimport cython
from cpython.pythread cimport (
    NOWAIT_LOCK,
    WAIT_LOCK,
    PyThread_acquire_lock,
    PyThread_allocate_lock,
    PyThread_free_lock,
    PyThread_release_lock,
    PyThread_type_lock,
)
from libc.math cimport INFINITY, exp, sqrt
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc

from landmarking._shared_loops cimport ordered_lane_dot

from .._parallel import run_parts

__all__ = ["VisitChunk", "Schedule", "visit_steps", "step_work", "kernel_columns", "cross_gram", "move", "SPACE_CODES"]

ctypedef fused real:
    float
    double

cdef enum:
    # Rows summed in the data's precision before the sum goes into a float64 total.
    _FLUSH = 64
    # Rows per block of the triangular solves for W.
    _SOLVE_ROWS = 256
    # Rows per part of the kernel tables' cross products.
    _GRAM_ROWS = 4096
    # Features per tile of X_b^T W at least (threads split the tiles).
    _MIN_TILE = 64
    # Tries of a barrier's lock before a thread sleeps on it.
    _SPIN = 200
    _EUCLIDEAN = 0
    _NONNEGATIVE = 1
    _SPHERE = 2

#: Codes of the feasible spaces in :func:`visit_steps` and :func:`move`.
SPACE_CODES = {"euclidean": _EUCLIDEAN, "nonnegative": _NONNEGATIVE, "sphere": _SPHERE}


# ---------------------------------------------------------------- dot products

# The dot products with the batch: two rows against four landmarks (each load of a
# row serves four products, each load of a landmark two) or against one. Each
# product x . t is the sum of LANES partial sums (lane l adds the terms c = l,
# l + LANES, ... in order: 8 for float32, 4 for float64, one vector register of
# AVX2), then the lanes in order, then the tail; both functions compute every
# product alike, so a value does not depend on the landmarks or rows computed with
# it. Written in C with GCC's vector types (GCC and Clang): Cython's loops over
# an array of lanes were vectorised with shuffles that made them slower than
# scalar code. Other compilers take the same arithmetic written as plain loops.
cdef extern from *:
    """
    #include <string.h>
    #if defined(__GNUC__) || defined(__clang__)
    #define LM_VECTORS 1
    typedef float lm_vec_f __attribute__((vector_size(8 * sizeof(float))));
    typedef double lm_vec_d __attribute__((vector_size(4 * sizeof(double))));
    #endif

    #define LM_DOT_LOOPS(T, LANES, S)                                                  \
    static inline T lm_total_##S(const T* lanes, const T* x, const T* t,                 \
                                 Py_ssize_t end, Py_ssize_t d) {                         \
        T s = 0;                                                                         \
        for (int l = 0; l < LANES; l++) s += lanes[l];                                   \
        for (Py_ssize_t c = end; c < d; c++) s += x[c] * t[c];                           \
        return s;                                                                        \
    }                                                                                    \
    LM_DOTS_BODY(T, LANES, S)

    /* Rows are read a kilobyte ahead (the rest of a long row, or the next rows of a
       batch held in order): the hardware's prefetcher alone left the distances
       pass a quarter slower than one read of the batch. A prefetch never faults. */
    #define LM_AHEAD 1024
    #define LM_PREFETCH(p) __builtin_prefetch((p), 0, 0)
    #ifdef LM_VECTORS
    #define LM_LOAD(V, p) ({ V v_; memcpy(&v_, (p), sizeof(V)); v_; })
    #define LM_DOTS_BODY(T, LANES, S)                                                    \
    static inline void lm_dots_2x4_##S(const T* x0, const T* x1, const T* t,             \
                                       Py_ssize_t d, T* out) {                           \
        typedef lm_vec_##S V;                                                            \
        V a[8]; T lanes[LANES];                                                          \
        Py_ssize_t end = d - d % LANES;                                                  \
        for (int j = 0; j < 8; j++) a[j] = (V){0};                                       \
        for (Py_ssize_t c = 0; c < end; c += LANES) {                                    \
            LM_PREFETCH(x0 + c + LM_AHEAD / sizeof(T));                                  \
            LM_PREFETCH(x1 + c + LM_AHEAD / sizeof(T));                                  \
            V u = LM_LOAD(V, x0 + c), w = LM_LOAD(V, x1 + c), v;                         \
            v = LM_LOAD(V, t + c);         a[0] += u * v; a[4] += w * v;                 \
            v = LM_LOAD(V, t + d + c);     a[1] += u * v; a[5] += w * v;                 \
            v = LM_LOAD(V, t + 2 * d + c); a[2] += u * v; a[6] += w * v;                 \
            v = LM_LOAD(V, t + 3 * d + c); a[3] += u * v; a[7] += w * v;                 \
        }                                                                                \
        for (int j = 0; j < 8; j++) {                                                    \
            memcpy(lanes, &a[j], sizeof(V));                                             \
            out[j] = lm_total_##S(lanes, j < 4 ? x0 : x1, t + (j % 4) * d, end, d);      \
        }                                                                                \
    }                                                                                    \
    static inline void lm_dots_2x1_##S(const T* x0, const T* x1, const T* t,             \
                                       Py_ssize_t d, T* out) {                           \
        typedef lm_vec_##S V;                                                            \
        V a = {0}, b = {0}; T lanes[LANES];                                              \
        Py_ssize_t end = d - d % LANES;                                                  \
        for (Py_ssize_t c = 0; c < end; c += LANES) {                                    \
            LM_PREFETCH(x0 + c + LM_AHEAD / sizeof(T));                                  \
            LM_PREFETCH(x1 + c + LM_AHEAD / sizeof(T));                                  \
            V v = LM_LOAD(V, t + c);                                                     \
            a += LM_LOAD(V, x0 + c) * v; b += LM_LOAD(V, x1 + c) * v;                    \
        }                                                                                \
        memcpy(lanes, &a, sizeof(V)); out[0] = lm_total_##S(lanes, x0, t, end, d);       \
        memcpy(lanes, &b, sizeof(V)); out[1] = lm_total_##S(lanes, x1, t, end, d);       \
    }                                                                                    \
    static inline T lm_dot_wide_##S(const T* x, const T* t, Py_ssize_t d) {              \
        typedef lm_vec_##S V;                                                            \
        V a[4] = {{0}, {0}, {0}, {0}}; T lanes[4 * LANES];                               \
        Py_ssize_t wide = d - d % (4 * LANES), end = d - d % LANES, c;                   \
        for (c = 0; c < wide; c += 4 * LANES) {                                          \
            LM_PREFETCH(x + c + LM_AHEAD / sizeof(T));                                   \
            LM_PREFETCH(x + c + (LM_AHEAD + 64) / sizeof(T));                            \
            for (int j = 0; j < 4; j++)                                                  \
                a[j] += LM_LOAD(V, x + c + j * LANES) * LM_LOAD(V, t + c + j * LANES);   \
        }                                                                                \
        for (; c < end; c += LANES) a[0] += LM_LOAD(V, x + c) * LM_LOAD(V, t + c);       \
        memcpy(lanes, a, sizeof(a));                                                     \
        T s = 0;                                                                         \
        for (int l = 0; l < 4 * LANES; l++) s += lanes[l];                               \
        for (c = end; c < d; c++) s += x[c] * t[c];                                      \
        return s;                                                                        \
    }
    #else
    #undef LM_PREFETCH
    #define LM_PREFETCH(p) ((void)0)
    #define LM_DOTS_BODY(T, LANES, S)                                                    \
    static inline void lm_dots_##S(const T* const* x, int rows, const T* t, int n_t,     \
                                   Py_ssize_t d, T* out) {                               \
        T a[LANES];                                                                      \
        Py_ssize_t end = d - d % LANES;                                                  \
        for (int r = 0; r < rows; r++) for (int j = 0; j < n_t; j++) {                   \
            for (int l = 0; l < LANES; l++) a[l] = 0;                                    \
            for (Py_ssize_t c = 0; c < end; c += LANES)                                  \
                for (int l = 0; l < LANES; l++) a[l] += x[r][c + l] * t[j * d + c + l];  \
            out[r * n_t + j] = lm_total_##S(a, x[r], t + j * d, end, d);                 \
        }                                                                                \
    }                                                                                    \
    static inline void lm_dots_2x4_##S(const T* x0, const T* x1, const T* t,             \
                                       Py_ssize_t d, T* out) {                           \
        const T* x[2] = {x0, x1}; lm_dots_##S(x, 2, t, 4, d, out);                       \
    }                                                                                    \
    static inline void lm_dots_2x1_##S(const T* x0, const T* x1, const T* t,             \
                                       Py_ssize_t d, T* out) {                           \
        const T* x[2] = {x0, x1}; lm_dots_##S(x, 2, t, 1, d, out);                       \
    }                                                                                    \
    static inline T lm_dot_wide_##S(const T* x, const T* t, Py_ssize_t d) {              \
        T a[4 * LANES], s = 0;                                                           \
        Py_ssize_t wide = d - d % (4 * LANES), end = d - d % LANES, c;                   \
        for (int l = 0; l < 4 * LANES; l++) a[l] = 0;                                    \
        for (c = 0; c < wide; c += 4 * LANES)                                            \
            for (int l = 0; l < 4 * LANES; l++) a[l] += x[c + l] * t[c + l];             \
        for (; c < end; c += LANES)                                                      \
            for (int l = 0; l < LANES; l++) a[l] += x[c + l] * t[c + l];                 \
        for (int l = 0; l < 4 * LANES; l++) s += a[l];                                   \
        for (c = end; c < d; c++) s += x[c] * t[c];                                      \
        return s;                                                                        \
    }
    #endif

    LM_DOT_LOOPS(float, 8, f)
    LM_DOT_LOOPS(double, 4, d)
    """
    void lm_dots_2x4_f(const float* x0, const float* x1, const float* t, Py_ssize_t d,
                       float* out) noexcept nogil
    void lm_dots_2x1_f(const float* x0, const float* x1, const float* t, Py_ssize_t d,
                       float* out) noexcept nogil
    void lm_dots_2x4_d(const double* x0, const double* x1, const double* t, Py_ssize_t d,
                       double* out) noexcept nogil
    void lm_dots_2x1_d(const double* x0, const double* x1, const double* t, Py_ssize_t d,
                       double* out) noexcept nogil
    float lm_dot_wide_f(const float* x, const float* t, Py_ssize_t d) noexcept nogil
    double lm_dot_wide_d(const double* x, const double* t, Py_ssize_t d) noexcept nogil


cdef inline void _dots_2x4(const real* x0, const real* x1, const real* T, Py_ssize_t d,
                           real* out) noexcept nogil:
    """out[4 r + j] = x_r . t_j for two rows and four landmarks (rows of T, d apart)."""
    if real is float:
        lm_dots_2x4_f(x0, x1, T, d, out)
    else:
        lm_dots_2x4_d(x0, x1, T, d, out)


cdef inline void _dots_2x1(const real* x0, const real* x1, const real* t, Py_ssize_t d,
                           real* out) noexcept nogil:
    """out[r] = x_r . t for two rows and one landmark."""
    if real is float:
        lm_dots_2x1_f(x0, x1, t, d, out)
    else:
        lm_dots_2x1_d(x0, x1, t, d, out)


cdef inline real _dot_wide(const real* x, const real* t, Py_ssize_t d) noexcept nogil:
    """x . t for one row and one landmark in 4 LANES partial sums (four independent
    chains of vector additions): the distances of a one-landmark step, read one row
    at a time (one stream from memory)."""
    if real is float:
        return lm_dot_wide_f(x, t, d)
    else:
        return lm_dot_wide_d(x, t, d)


# ---------------------------------------------------------------- a visit's arrays

cdef struct _Visit:
    # What every thread of a visit reads (and the landmarks they move): the chunk's
    # rows X (n_c x d) and their squared norms xsq, in the data's precision, as the
    # typed pointer that :func:`_visit` takes; the kernel table Phi (n_c x K, the
    # data's precision, its first k columns spanning); batch g's rows of X,
    # perm[bounds[g]:bounds[g + 1]], and of Phi, positions[...]; each step's batch
    # (batches, n_steps); the batches' Cholesky factors Ls (n_batches x ls_rows x
    # ldl, float64).
    const void* xsq
    const void* Phi
    Py_ssize_t K, k
    const int64_t* perm
    const int64_t* positions
    const int64_t* bounds
    const int64_t* batches
    Py_ssize_t n_steps
    const double* Ls
    Py_ssize_t ls_rows, ldl
    # The block: B landmarks T (B x d, float64, moved in place), their copy Tc in
    # the data's precision, and each step's sums (n_steps x B x 3, float64).
    double* T
    void* Tc
    double* sums
    Py_ssize_t B, d
    # The schedule: the kernel width, the fraction (s0 + first + q)^-tau of step q,
    # the longest move, the feasible space, the drop rule's tolerance.
    double eta, s0, tau, max_step, tol
    Py_ssize_t first
    int space


cdef struct _Batch:
    # The current step's batch: its rows of X and of Phi, and their number.
    const int64_t* rows
    const int64_t* prows
    Py_ssize_t b


cdef struct _Work:
    # (B, ld) float64 rows: distances, then kernel values Phi_B; U; W.
    double* D2
    double* UT
    double* WT
    Py_ssize_t ld
    # (B, ldc): cross products, then the solve's coefficients.
    double* coef
    Py_ssize_t ldc
    # (B, B): G and its factor; (B,): the drop rule's work.
    double* G
    double* LG
    double* y
    # (B,): squared norms of the landmarks, nearest distances, phi^T phi, pivots.
    double* t_sq
    double* nearest
    double* phi_sq
    double* f
    # (B,): the kept columns, and each column's place among them (-1: dropped).
    Py_ssize_t* active
    Py_ssize_t* slot
    # (k, B): the coefficients transposed; (B, d): the kept landmarks' targets
    # X_b^T W.
    double* coefT
    double* S
    # This thread's own work: a move (d), four widened rows of the kernel table
    # (4 k), the residuals of a row (B), the partial sums of a tile (B x width in
    # the data's precision) and their float64 totals (B x width).
    double* m
    double* R
    double* acc
    void* part
    double* total
    # The number of kept columns of the current step (shared by the threads).
    Py_ssize_t* n_active
    # This thread, of n_threads; its landmarks j0 .. j1 - 1; the features per tile
    # of the weighted sums.
    Py_ssize_t thread, n_threads, j0, j1, width


# ---------------------------------------------------------------- the parts of a step

cdef void _distances(const real* X, const _Visit* v, const _Batch* s, const _Work* w,
                     Py_ssize_t first_pair, Py_ssize_t end_pair) noexcept nogil:
    """D2[j, i] = max(||x_i||^2 - 2 x_i . t_j + ||t_j||^2, 0) for the pairs of rows
    first_pair .. end_pair - 1 of the batch (row i is X[rows[i]]): the dot products
    in the data's precision, the cancellation in float64."""
    cdef Py_ssize_t d = v.d, b = s.b, B = v.B, ld = w.ld
    cdef const real* xsq = <const real*>v.xsq
    cdef const real* Tc = <const real*>v.Tc
    cdef const int64_t* rows = s.rows
    cdef const double* t_sq = w.t_sq
    cdef double* D2 = w.D2
    cdef Py_ssize_t pair, i0, i1, j, m
    cdef real dots[8]
    cdef double s0, s1
    cdef const real* x0
    cdef const real* x1
    if B == 1:
        for i0 in range(2 * first_pair, min(b, 2 * end_pair)):
            D2[i0] = max(<double>xsq[rows[i0]] - 2.0 * _dot_wide(X + rows[i0] * d, Tc, d)
                         + t_sq[0], 0.0)
        return
    for pair in range(first_pair, end_pair):
        i0 = 2 * pair
        i1 = min(i0 + 1, b - 1)
        x0 = X + rows[i0] * d
        x1 = X + rows[i1] * d
        s0 = xsq[rows[i0]]
        s1 = xsq[rows[i1]]
        j = 0
        while j + 4 <= B:
            _dots_2x4(x0, x1, Tc + j * d, d, dots)
            for m in range(4):
                D2[(j + m) * ld + i0] = max(s0 - 2.0 * dots[m] + t_sq[j + m], 0.0)
                D2[(j + m) * ld + i1] = max(s1 - 2.0 * dots[4 + m] + t_sq[j + m], 0.0)
            j += 4
        while j < B:
            _dots_2x1(x0, x1, Tc + j * d, d, dots)
            D2[j * ld + i0] = max(s0 - 2.0 * dots[0] + t_sq[j], 0.0)
            D2[j * ld + i1] = max(s1 - 2.0 * dots[1] + t_sq[j], 0.0)
            j += 1


cdef void _kernel_values(double* D2, Py_ssize_t ld, Py_ssize_t b, Py_ssize_t j0,
                         Py_ssize_t j1, double eta, double* nearest,
                         double* phi_sq) noexcept nogil:
    """Per landmark j0 <= j < j1: its nearest squared distance, its kernel values
    relative to it (written over D2[j]: Phi_B, stored transposed) and phi_j^T phi_j."""
    cdef Py_ssize_t i, j
    cdef double near
    cdef double scale = -1.0 / eta
    cdef double* row
    for j in range(j0, j1):
        row = D2 + j * ld
        near = INFINITY
        for i in range(b):
            if row[i] < near:
                near = row[i]
        nearest[j] = near
        for i in range(b):
            row[i] = exp((row[i] - near) * scale)
        phi_sq[j] = ordered_lane_dot(row, row, b)


cdef void _cross(const real* Phi, const _Visit* v, const _Batch* s,
                 const _Work* w) noexcept nogil:
    """cross[j, a] = sum_i Phi[prows[i], a] Phi_B[i, j] (Phi_p^T phi_j) for this
    thread's landmarks j0 <= j < j1, four rows of the kernel table at a time; cross
    is the work's ``coef``. For several landmarks each row is widened to float64
    once, into R (4 x k); widening is exact, so the sums are the same either way."""
    cdef Py_ssize_t K = v.K, k = v.k, b = s.b, ld = w.ld, ldc = w.ldc
    cdef Py_ssize_t j0 = w.j0, j1 = w.j1
    cdef const int64_t* prows = s.prows
    cdef const double* PhiB = w.D2
    cdef double* cross = w.coef
    cdef double* R = w.R
    cdef Py_ssize_t i, j, a, r
    cdef double p0, p1, p2, p3
    cdef double* c
    cdef const real* r0
    cdef const real* r1
    cdef const real* r2
    cdef const real* r3
    cdef double* R1 = R + k
    cdef double* R2 = R + 2 * k
    cdef double* R3 = R + 3 * k
    cdef bint widen = j1 - j0 > 1
    for j in range(j0, j1):
        for a in range(k):
            cross[j * ldc + a] = 0.0
    i = 0
    while i + 4 <= b:
        if widen:
            for r in range(4):
                for a in range(k):
                    R[r * k + a] = Phi[prows[i + r] * K + a]
        r0 = Phi + prows[i] * K
        r1 = Phi + prows[i + 1] * K
        r2 = Phi + prows[i + 2] * K
        r3 = Phi + prows[i + 3] * K
        for j in range(j0, j1):
            p0 = PhiB[j * ld + i]
            p1 = PhiB[j * ld + i + 1]
            p2 = PhiB[j * ld + i + 2]
            p3 = PhiB[j * ld + i + 3]
            c = cross + j * ldc
            if widen:
                for a in range(k):
                    c[a] += (R[a] * p0 + R1[a] * p1) + (R2[a] * p2 + R3[a] * p3)
            else:
                for a in range(k):
                    c[a] += (r0[a] * p0 + r1[a] * p1) + (r2[a] * p2 + r3[a] * p3)
        i += 4
    while i < b:
        r0 = Phi + prows[i] * K
        for j in range(j0, j1):
            p0 = PhiB[j * ld + i]
            c = cross + j * ldc
            for a in range(k):
                c[a] += r0[a] * p0
        i += 1


cdef void _solve_factor(const double* L, Py_ssize_t ldl, Py_ssize_t k, double* coef,
                        Py_ssize_t ldc, Py_ssize_t j0, Py_ssize_t j1) noexcept nogil:
    """(L L^T)^-1 in place on rows j0 .. j1 - 1 of coef (B x k): forward
    substitution, then back substitution by rows of L (row a of L is column a of
    L^T), so that both read L row by row."""
    cdef Py_ssize_t j, a, c
    cdef double s, x
    cdef double* y
    cdef const double* row
    for j in range(j0, j1):
        y = coef + j * ldc
        for a in range(k):
            row = L + a * ldl
            s = y[a]
            for c in range(a):
                s -= row[c] * y[c]
            y[a] = s / row[a]
        for a in range(k - 1, -1, -1):
            row = L + a * ldl
            y[a] /= row[a]
            x = y[a]
            for c in range(a):
                y[c] -= row[c] * x


cdef void _residuals(const real* Phi, const _Visit* v, const _Batch* s,
                     const _Work* w) noexcept nogil:
    """UT[j, i] = Phi_B[i, j] - Phi[prows[i]] . coef[j]: M phi_j, for this thread's
    landmarks j0 <= j < j1.

    A block of at least 4 landmarks sums each product over a in order, the loop over
    the landmarks innermost (a vector operation; coef transposed into coefT, k x B);
    fewer landmarks take the LANES partial sums of ``_shared_loops.ordered_lane_dot``
    over a. The choice depends on B alone.
    """
    cdef Py_ssize_t K = v.K, k = v.k, b = s.b, ld = w.ld, B = v.B, ldc = w.ldc
    cdef Py_ssize_t j0 = w.j0, j1 = w.j1
    cdef const int64_t* prows = s.prows
    cdef const double* PhiB = w.D2
    cdef const double* coef = w.coef
    cdef double* coefT = w.coefT
    cdef double* acc = w.acc
    cdef double* UT = w.UT
    cdef Py_ssize_t i, j, a
    cdef double p
    cdef const double* t
    if B < 4:
        for i in range(b):
            for j in range(j0, j1):
                UT[j * ld + i] = PhiB[j * ld + i] - (
                    ordered_lane_dot(Phi + prows[i] * K, coef + j * ldc, k) if k else 0.0)
        return
    for j in range(j0, j1):
        for a in range(k):
            coefT[a * B + j] = coef[j * ldc + a]
    for i in range(b):
        for j in range(j0, j1):
            acc[j] = 0.0
        for a in range(k):
            p = Phi[prows[i] * K + a]
            t = coefT + a * B
            for j in range(j0, j1):
                acc[j] += p * t[j]
        for j in range(j0, j1):
            UT[j * ld + i] = PhiB[j * ld + i] - acc[j]


cdef void _block_gram(const double* PhiB, const double* UT, Py_ssize_t ld, Py_ssize_t b,
                      Py_ssize_t B, Py_ssize_t j0, Py_ssize_t j1, double* G) noexcept nogil:
    """Rows j0 .. j1 - 1 of G = Phi_B^T U (B x B), on and above the diagonal: G is
    symmetric (M is), and :func:`_mirror` copies the upper triangle down."""
    cdef Py_ssize_t j, m
    for j in range(j0, j1):
        for m in range(j, B):
            G[j * B + m] = ordered_lane_dot(PhiB + j * ld, UT + m * ld, b)


cdef void _mirror(double* G, Py_ssize_t B) noexcept nogil:
    cdef Py_ssize_t j, m
    for j in range(B):
        for m in range(j):
            G[j * B + m] = G[m * B + j]


cdef Py_ssize_t _factor_with_drops(const double* G, Py_ssize_t B, const double* phi_sq,
                                   double tol, double* f, Py_ssize_t* active,
                                   Py_ssize_t* slot, double* LG, double* y) noexcept nogil:
    """Cholesky of G in index order, leaving out the columns whose pivot is not above
    ``tol`` times their phi^T phi (:func:`.blocks.pivots_with_drops`): LG (B x B)
    holds the factor of the kept columns in its first n rows and columns, f every
    column's pivot given the kept ones before it; returns n, with the kept indices
    in active[:n] and slot[j] the place of column j among them (-1: dropped)."""
    cdef Py_ssize_t j, a, c
    cdef Py_ssize_t n = 0
    cdef double s, r
    for j in range(B):
        for a in range(n):
            s = G[active[a] * B + j]
            for c in range(a):
                s -= LG[a * B + c] * y[c]
            y[a] = s / LG[a * B + a]
        r = G[j * B + j]
        for a in range(n):
            r -= y[a] * y[a]
        f[j] = r
        slot[j] = -1
        if r > tol * phi_sq[j]:
            for a in range(n):
                LG[n * B + a] = y[a]
            LG[n * B + n] = sqrt(r)
            active[n] = j
            slot[j] = n
            n += 1
    return n


cdef void _weights(const _Work* w, Py_ssize_t b, Py_ssize_t B, Py_ssize_t first_block,
                   Py_ssize_t end_block) noexcept nogil:
    """WT[a, i] = Phi_B[i, active[a]] (U_A G_A^-1)[i, a] over the kept columns A, for
    the blocks first_block .. end_block - 1 of _SOLVE_ROWS rows of a batch of b: the
    two triangular solves with LG for a block of rows at once, each substitution
    step a vector operation over the rows."""
    cdef const double* PhiB = w.D2
    cdef const double* UT = w.UT
    cdef const double* LG = w.LG
    cdef const Py_ssize_t* active = w.active
    cdef Py_ssize_t ld = w.ld, n = w.n_active[0]
    cdef double* WT = w.WT
    cdef Py_ssize_t block, lo, m, a, c, i
    cdef double l, pivot
    cdef double* z
    cdef double* y
    cdef const double* u
    cdef const double* phi
    for block in range(first_block, end_block):
        lo = block * _SOLVE_ROWS
        m = min(b, lo + _SOLVE_ROWS) - lo
        for a in range(n):
            z = WT + a * ld + lo
            u = UT + active[a] * ld + lo
            for i in range(m):
                z[i] = u[i]
            for c in range(a):
                l = LG[a * B + c]
                y = WT + c * ld + lo
                for i in range(m):
                    z[i] -= l * y[i]
            pivot = LG[a * B + a]
            for i in range(m):
                z[i] /= pivot
        for a in range(n - 1, -1, -1):
            z = WT + a * ld + lo
            pivot = LG[a * B + a]
            for i in range(m):
                z[i] /= pivot
            for c in range(a):
                l = LG[a * B + c]
                y = WT + c * ld + lo
                for i in range(m):
                    y[i] -= l * z[i]
        for a in range(n):
            z = WT + a * ld + lo
            phi = PhiB + active[a] * ld + lo
            for i in range(m):
                z[i] *= phi[i]


cdef inline void _eight_rows(const real* X, Py_ssize_t d, const int64_t* rows,
                             const double* w, Py_ssize_t lo, Py_ssize_t width,
                             real* part) noexcept nogil:
    """part += sum of w[r] x_{rows[r]}[lo:lo + width] over eight rows r, in pairs:
    ((w0 x0 + w1 x1) + (w2 x2 + w3 x3)) + ((w4 x4 + w5 x5) + (w6 x6 + w7 x7))."""
    cdef const real* x0 = X + rows[0] * d + lo
    cdef const real* x1 = X + rows[1] * d + lo
    cdef const real* x2 = X + rows[2] * d + lo
    cdef const real* x3 = X + rows[3] * d + lo
    cdef const real* x4 = X + rows[4] * d + lo
    cdef const real* x5 = X + rows[5] * d + lo
    cdef const real* x6 = X + rows[6] * d + lo
    cdef const real* x7 = X + rows[7] * d + lo
    cdef real w0 = <real>w[0]
    cdef real w1 = <real>w[1]
    cdef real w2 = <real>w[2]
    cdef real w3 = <real>w[3]
    cdef real w4 = <real>w[4]
    cdef real w5 = <real>w[5]
    cdef real w6 = <real>w[6]
    cdef real w7 = <real>w[7]
    cdef Py_ssize_t c
    for c in range(width):
        part[c] += (((w0 * x0[c] + w1 * x1[c]) + (w2 * x2[c] + w3 * x3[c]))
                    + ((w4 * x4[c] + w5 * x5[c]) + (w6 * x6[c] + w7 * x7[c])))


cdef void _weighted_sums(const real* X, const _Visit* v, const _Batch* s, const _Work* w,
                         Py_ssize_t lo, Py_ssize_t width) noexcept nogil:
    """S[a, lo:lo + width] = sum_i WT[a, i] x_i[lo:lo + width] for the n kept columns
    a < n.

    Each sum runs over the rows in order, in the data's precision over blocks of
    _FLUSH rows added into a float64 total: no sum depends on the tiles. Four rows
    and two landmarks at a time: each load of a partial sum serves four products,
    each load of a row's value eight. ``part`` and ``total`` are this thread's work
    (n x width each).
    """
    cdef Py_ssize_t d = v.d, b = s.b, ld = w.ld, n = w.n_active[0]
    cdef const int64_t* rows = s.rows
    cdef const double* WT = w.WT
    cdef double* S = w.S
    cdef real* part = <real*>w.part
    cdef double* total = w.total
    cdef Py_ssize_t i, a, c
    cdef const real* x0
    cdef const real* x1
    cdef const real* x2
    cdef const real* x3
    cdef real w0, w1, w2, w3, v0, v1, v2, v3, y0, y1, y2, y3
    cdef real* p
    cdef real* q
    for c in range(n * width):
        part[c] = 0
        total[c] = 0.0
    i = 0
    while i < b:
        if n == 1 and i + 8 <= b:
            # One landmark (the sequential step): eight rows at a time, each load of
            # the partial sum serving eight products.
            _eight_rows(X, d, rows + i, WT + i, lo, width, part)
            i += 8
        elif i + 4 <= b:
            x0 = X + rows[i] * d + lo
            x1 = X + rows[i + 1] * d + lo
            x2 = X + rows[i + 2] * d + lo
            x3 = X + rows[i + 3] * d + lo
            a = 0
            while a < n:
                w0 = <real>WT[a * ld + i]
                w1 = <real>WT[a * ld + i + 1]
                w2 = <real>WT[a * ld + i + 2]
                w3 = <real>WT[a * ld + i + 3]
                p = part + a * width
                if a + 2 <= n:
                    v0 = <real>WT[(a + 1) * ld + i]
                    v1 = <real>WT[(a + 1) * ld + i + 1]
                    v2 = <real>WT[(a + 1) * ld + i + 2]
                    v3 = <real>WT[(a + 1) * ld + i + 3]
                    q = part + (a + 1) * width
                    for c in range(width):
                        y0 = x0[c]
                        y1 = x1[c]
                        y2 = x2[c]
                        y3 = x3[c]
                        p[c] += (w0 * y0 + w1 * y1) + (w2 * y2 + w3 * y3)
                        q[c] += (v0 * y0 + v1 * y1) + (v2 * y2 + v3 * y3)
                    a += 2
                else:
                    for c in range(width):
                        p[c] += (w0 * x0[c] + w1 * x1[c]) + (w2 * x2[c] + w3 * x3[c])
                    a += 1
            i += 4
        else:
            x0 = X + rows[i] * d + lo
            for a in range(n):
                w0 = <real>WT[a * ld + i]
                p = part + a * width
                for c in range(width):
                    p[c] += w0 * x0[c]
            i += 1
        if i % _FLUSH == 0 or i == b:
            for c in range(n * width):
                total[c] += part[c]
                part[c] = 0
    for a in range(n):
        for c in range(width):
            S[a * d + lo + c] = total[a * width + c]


cdef void _move_point(double* t, double* m, Py_ssize_t d, double f, double fraction,
                      double max_step, double nearest, int space) noexcept nogil:
    """t <- Proj_S(t + a (m / f - t)), the move limited to ``max_step`` plus the
    distance to the batch (:func:`.objective.moved_landmark`); m is overwritten."""
    cdef Py_ssize_t j
    cdef double step, length, limit
    cdef double length_sq = 0.0
    for j in range(d):
        step = fraction * (m[j] / f - t[j])
        m[j] = step
        length_sq += step * step
    length = sqrt(length_sq)
    limit = max_step + sqrt(nearest)
    # limit / max(length, limit): exactly 1 when the move is short enough.
    if length > limit:
        for j in range(d):
            m[j] = m[j] * (limit / length)
    for j in range(d):
        t[j] = t[j] + m[j]
    if space == _EUCLIDEAN:
        return
    _project(t, d, space)


cdef void _project(double* t, Py_ssize_t d, int space) noexcept nogil:
    """Proj_S (:func:`landmarking.spaces.project`) onto the nonnegative orthant or the
    sphere within it; a point with no positive entry goes to the axis of its
    largest entry."""
    cdef Py_ssize_t j
    cdef Py_ssize_t largest = 0
    cdef double norm_sq = 0.0
    cdef double norm
    for j in range(d):
        if t[j] > t[largest]:
            largest = j
    for j in range(d):
        if t[j] < 0.0:
            t[j] = 0.0
        norm_sq += t[j] * t[j]
    if space == _NONNEGATIVE:
        return
    if norm_sq == 0.0:
        t[largest] = 1.0
        return
    norm = sqrt(norm_sq)
    for j in range(d):
        t[j] = t[j] / norm


# ---------------------------------------------------------------- threads

@cython.final
cdef class _Barrier:
    """Where the threads of a visit wait for each other between the parts of a step.

    Thread 0 leads: a barrier passes once every other thread has arrived (each
    releases its ``arrived`` lock and waits on its ``leave`` lock, which thread 0
    releases when all have arrived). The locks are CPython's, taken and given
    without the GIL; a thread tries a lock _SPIN times before it sleeps on it.
    """

    cdef Py_ssize_t n
    cdef PyThread_type_lock* arrived
    cdef PyThread_type_lock* leave

    def __cinit__(self, Py_ssize_t n_threads):
        cdef Py_ssize_t i
        self.n = n_threads
        self.arrived = <PyThread_type_lock*>malloc(n_threads * sizeof(PyThread_type_lock))
        self.leave = <PyThread_type_lock*>malloc(n_threads * sizeof(PyThread_type_lock))
        if self.arrived == NULL or self.leave == NULL:
            raise MemoryError("no memory for the threads' locks")
        for i in range(n_threads):
            self.arrived[i] = PyThread_allocate_lock()
            self.leave[i] = PyThread_allocate_lock()
            if self.arrived[i] == NULL or self.leave[i] == NULL:
                raise MemoryError("no memory for the threads' locks")
            # Taken: a release says "arrived" (or "go on"), the matching take waits.
            PyThread_acquire_lock(self.arrived[i], WAIT_LOCK)
            PyThread_acquire_lock(self.leave[i], WAIT_LOCK)

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.arrived != NULL and self.leave != NULL:
            for i in range(self.n):
                if self.arrived[i] != NULL:
                    PyThread_free_lock(self.arrived[i])
                if self.leave[i] != NULL:
                    PyThread_free_lock(self.leave[i])
        free(self.arrived)
        free(self.leave)

    cdef void wait(self, Py_ssize_t thread) noexcept nogil:
        cdef Py_ssize_t i
        if self.n == 1:
            return
        if thread == 0:
            for i in range(1, self.n):
                _take(self.arrived[i])
            for i in range(1, self.n):
                PyThread_release_lock(self.leave[i])
        else:
            PyThread_release_lock(self.arrived[thread])
            _take(self.leave[thread])


    def stand_in(self, Py_ssize_t thread, Py_ssize_t n_waits):
        """Pass ``n_waits`` barriers for a thread that failed before its visit began,
        so that the other threads end their visit instead of waiting for it
        forever; the failure then reaches the caller (:func:`visit_steps`)."""
        cdef Py_ssize_t i
        with nogil:
            for i in range(n_waits):
                self.wait(thread)


cdef inline void _take(PyThread_type_lock lock) noexcept nogil:
    cdef int tries
    for tries in range(_SPIN):
        if PyThread_acquire_lock(lock, NOWAIT_LOCK):
            return
    PyThread_acquire_lock(lock, WAIT_LOCK)


# ---------------------------------------------------------------- the visit

cdef void _cast_block(const double* T, Py_ssize_t d, Py_ssize_t j0, Py_ssize_t j1, real* Tc,
                      double* t_sq) noexcept nogil:
    """Rows j0 .. j1 - 1: Tc = T in the data's precision, t_sq = squared norms of T's
    rows in float64."""
    cdef Py_ssize_t j, c
    for j in range(j0, j1):
        for c in range(d):
            Tc[j * d + c] = <real>T[j * d + c]
        t_sq[j] = ordered_lane_dot(T + j * d, T + j * d, d)


cdef inline Py_ssize_t _share(Py_ssize_t n, Py_ssize_t thread,
                              Py_ssize_t n_threads) noexcept nogil:
    """The first of this thread's n / n_threads consecutive items (of n)."""
    return thread * n // n_threads


cdef void _visit(const real* X, const _Visit* v, _Work* w, _Barrier barrier) noexcept nogil:
    """This thread's share of the steps of a visit (all of it on one thread); X is
    the chunk's rows (``v.xsq``, ``v.Phi`` and ``v.Tc`` are in its precision).

    The work arrays ``w`` point into memory all threads share. Each part of a step
    is split between the threads by what it computes alone:
    pairs of batch rows (the distances), landmarks (their kernel values, cross
    products, solves, residuals and rows of G; their moves), blocks of rows (W) and
    tiles of features (X_b^T W); the factor of G runs on the first thread. A
    barrier separates the parts. Every number is computed by the same code whatever
    the split, so the landmarks do not depend on the number of threads.
    """
    cdef const real* Phi = <const real*>v.Phi
    cdef Py_ssize_t B = v.B, d = v.d, thread = w.thread, n_threads = w.n_threads
    cdef Py_ssize_t q, g, n_pairs, n_blocks, tile, width = w.width
    cdef Py_ssize_t n_tiles = (d + width - 1) // width
    cdef _Batch s
    _cast_block(v.T, d, w.j0, w.j1, <real*>v.Tc, w.t_sq)
    barrier.wait(thread)
    for q in range(v.n_steps):
        g = v.batches[q]
        s.rows = v.perm + v.bounds[g]
        s.prows = v.positions + v.bounds[g]
        s.b = v.bounds[g + 1] - v.bounds[g]
        n_pairs = (s.b + 1) // 2
        n_blocks = (s.b + _SOLVE_ROWS - 1) // _SOLVE_ROWS
        _distances(X, v, &s, w, _share(n_pairs, thread, n_threads),
                   _share(n_pairs, thread + 1, n_threads))
        barrier.wait(thread)
        _kernel_values(w.D2, w.ld, s.b, w.j0, w.j1, v.eta, w.nearest, w.phi_sq)
        if v.k:
            _cross(Phi, v, &s, w)
            _solve_factor(v.Ls + g * v.ls_rows * v.ldl, v.ldl, v.k, w.coef, w.ldc, w.j0,
                          w.j1)
        _residuals(Phi, v, &s, w)
        barrier.wait(thread)
        _block_gram(w.D2, w.UT, w.ld, s.b, B, w.j0, w.j1, w.G)
        barrier.wait(thread)
        if thread == 0:
            _mirror(w.G, B)
            w.n_active[0] = _factor_with_drops(w.G, B, w.phi_sq, v.tol, w.f, w.active, w.slot,
                                               w.LG, w.y)
        barrier.wait(thread)
        _weights(w, s.b, B, _share(n_blocks, thread, n_threads),
                 _share(n_blocks, thread + 1, n_threads))
        barrier.wait(thread)
        tile = thread
        while tile < n_tiles:
            _weighted_sums(X, v, &s, w, tile * width, min(d, (tile + 1) * width) - tile * width)
            tile += n_threads
        barrier.wait(thread)
        _move_block(v, w, q)
        _cast_block(v.T, d, w.j0, w.j1, <real*>v.Tc, w.t_sq)
        barrier.wait(thread)


cdef void _move_block(const _Visit* v, const _Work* w, Py_ssize_t q) noexcept nogil:
    """Step q's moves of this thread's kept landmarks (each to its weighted mean of
    the batch), and the step's sums of all its landmarks."""
    cdef Py_ssize_t d = v.d, j, a, c
    cdef double fraction = (v.s0 + v.first + q) ** -v.tau
    cdef double* m = w.m
    cdef double* sums
    for j in range(w.j0, w.j1):
        a = w.slot[j]
        if a >= 0:
            for c in range(d):
                m[c] = w.S[a * d + c]
            # The weights are normalised (their columns sum to one): m / f, f = 1.
            _move_point(v.T + j * d, m, d, 1.0, fraction, v.max_step, w.nearest[j], v.space)
        sums = v.sums + (q * v.B + j) * 3
        sums[0] = w.f[j]
        sums[1] = w.phi_sq[j]
        sums[2] = w.nearest[j]


cdef class _Plan:
    """The arrays and numbers of one :func:`visit_steps` call that do not depend on
    the data's precision (those that do are :func:`_visit_share`'s arguments), held
    typed for the threads."""

    cdef const int64_t[::1] perm, positions, bounds, batches
    cdef const double[:, :, ::1] Ls
    cdef double[:, ::1] T, rows_work, coef, coefT, small, S, own
    cdef double[:, :, ::1] sums
    cdef Py_ssize_t[:, ::1] index
    cdef Py_ssize_t k, first, n_threads, width
    cdef double eta, s0, tau, max_step, tol
    cdef int space

    def __init__(self, chunk, T, schedule, work, sums, n_threads):
        self.perm, self.positions, self.bounds, self.batches = (
            chunk.perm, chunk.positions, chunk.bounds, chunk.batches)
        self.Ls, self.k = chunk.Ls, chunk.k
        self.T, self.sums = T, sums
        _, self.rows_work, self.coef, self.coefT, self.small, self.index, self.S = work
        self.eta, self.first, self.s0, self.tau = (schedule.eta, schedule.first, schedule.s0,
                                                   schedule.tau)
        self.max_step, self.space, self.tol = schedule.max_step, schedule.space, schedule.tol
        if self.sums.shape[0] != self.batches.shape[0] or self.sums.shape[1] != T.shape[0] \
                or self.sums.shape[2] != 3:
            raise ValueError(f"sums has shape {tuple(self.sums.shape)[:3]}; the visit needs "
                             f"({self.batches.shape[0]}, {T.shape[0]}, 3)")
        self.n_threads = n_threads
        # Tiles of features for the weighted sums: one for a single thread (whole
        # rows), else at least two per thread; the sums do not depend on the tiles.
        B, d = T.shape
        self.width = d if n_threads == 1 else max(_MIN_TILE, -(-d // (2 * n_threads)))
        self.own = np.empty((n_threads, _own_work(B, d, self.coef.shape[1], self.width)))

    cdef void visit(self, _Visit* v):
        """The shared part of a visit (``v.xsq``, ``v.Phi``, ``v.Tc``, ``v.K`` are the
        caller's)."""
        v.perm, v.positions = &self.perm[0], &self.positions[0]
        v.bounds, v.batches = &self.bounds[0], &self.batches[0]
        v.n_steps, v.k = self.batches.shape[0], self.k
        v.Ls, v.ls_rows, v.ldl = &self.Ls[0, 0, 0], self.Ls.shape[1], self.Ls.shape[2]
        v.T, v.sums = &self.T[0, 0], &self.sums[0, 0, 0]
        v.B, v.d = self.T.shape[0], self.T.shape[1]
        v.eta, v.s0, v.tau, v.max_step, v.tol = self.eta, self.s0, self.tau, self.max_step, self.tol
        v.first, v.space = self.first, self.space

    cdef void work(self, _Work* w, Py_ssize_t thread):
        """Thread ``thread``'s pointers into the work arrays (:func:`step_work`) and
        into its own work."""
        cdef Py_ssize_t B = self.T.shape[0], d = self.T.shape[1]
        w.D2, w.UT, w.WT = &self.rows_work[0, 0], &self.rows_work[B, 0], &self.rows_work[2 * B, 0]
        w.ld = self.rows_work.shape[1]
        w.coef, w.ldc = &self.coef[0, 0], self.coef.shape[1]
        w.G, w.LG, w.y = &self.small[0, 0], &self.small[B, 0], &self.small[2 * B, 0]
        w.t_sq, w.nearest = &self.small[2 * B + 1, 0], &self.small[2 * B + 2, 0]
        w.phi_sq, w.f = &self.small[2 * B + 3, 0], &self.small[2 * B + 4, 0]
        w.active, w.slot, w.n_active = &self.index[0, 0], &self.index[1, 0], &self.index[2, 0]
        w.coefT, w.S = &self.coefT[0, 0], &self.S[0, 0]
        w.m = &self.own[thread, 0]
        w.R = w.m + d
        w.acc = w.R + 4 * self.coef.shape[1]
        w.total = w.acc + B
        w.part = <void*>(w.total + B * self.width)
        w.thread, w.n_threads, w.width = thread, self.n_threads, self.width
        w.j0, w.j1 = _share(B, thread, self.n_threads), _share(B, thread + 1, self.n_threads)


def _visit_share(const real[:, ::1] Xc, const real[::1] xsq, const real[:, ::1] Phi,
                 real[:, ::1] Tc, _Plan plan, Py_ssize_t thread, _Barrier barrier):
    """One thread's share of :func:`visit_steps` (the GIL released): the arrays in
    the data's precision, and ``plan`` for the rest. Called by :func:`_visit_part`."""
    cdef _Visit v
    cdef _Work w
    plan.visit(&v)
    v.xsq, v.Phi, v.K, v.Tc = &xsq[0], &Phi[0, 0], Phi.shape[1], &Tc[0, 0]
    plan.work(&w, thread)
    with nogil:
        _visit(&Xc[0, 0], &v, &w, barrier)


#: Barriers a thread passes in a visit: one at the start, then these per step
#: (count the ``barrier.wait`` calls of :func:`_visit`).
_WAITS_PER_STEP = 7


def _visit_part(thread, barrier, n_steps, arguments):
    """Thread ``thread``'s share of a visit (:func:`_visit_share` on ``arguments``).

    A thread whose share fails before its visit begins (its arrays refused, no
    memory) still passes every barrier of the visit, so the other threads finish
    and the error reaches the caller instead of a hang.
    """
    try:
        _visit_share(*arguments, thread, barrier)
    except BaseException:
        barrier.stand_in(thread, 1 + _WAITS_PER_STEP * n_steps)
        raise


def _own_work(B, d, k_max, width):
    """Doubles of one thread's work in :func:`_visit_part` (the last B x width hold
    partial sums in the data's precision, at most 8 bytes each)."""
    return d + 4 * max(k_max, 1) + B + 2 * B * width


def step_work(B, batch_size, d, k_max, dtype):
    """Work arrays of :func:`visit_steps` for blocks of B, batches of up to
    ``batch_size`` rows, d features, at most ``k_max`` earlier landmarks."""
    return (np.empty((B, d), dtype=dtype), np.empty((3 * B, max(batch_size, 1))),
            np.empty((B, max(k_max, 1))), np.empty((max(k_max, 1), B)),
            np.zeros((2 * B + 5, B)), np.zeros((3, B), dtype=np.intp), np.empty((B, d)))


#: A chunk's visit (the arrays of :func:`visit_steps`): the chunk ``Xc`` (n_c, d),
#: float32 or float64, C-ordered (or its copy in the order of its permutation), and
#: its squared row norms ``xsq`` (same dtype); batch g's rows are
#: ``Xc[perm[bounds[g]:bounds[g + 1]]]`` and their rows of Phi
#: ``positions[bounds[g]:...]`` ((n_c,) and (n_batches + 1,) int64); ``batches``
#: (n_steps,) int64, each step's batch; ``Phi`` (n_c, K) the kernel table (Xc's
#: dtype), C-ordered, whose first ``k`` columns span; ``Ls`` (n_batches, >= k, >= k)
#: float64, the batches' Cholesky factors.
VisitChunk = namedtuple("VisitChunk", "Xc xsq perm positions bounds batches Phi k Ls")
#: A visit's schedule: the kernel width ``eta``, the number of the first step
#: ``first``, the fraction (s0 + s)^-tau of step s, the longest move ``max_step``,
#: the feasible ``space`` (a code of :data:`SPACE_CODES`) and the drop rule's ``tol``
#: (``objective.MIN_RELATIVE_F``).
Schedule = namedtuple("Schedule", "eta first s0 tau max_step space tol")


def visit_steps(chunk, T, schedule, work, sums, n_threads=1):
    """The steps of a block of landmarks on one chunk visit, in one call.

    Parameters
    ----------
    chunk : VisitChunk
        The chunk's rows, batches, kernel table and factors.
    T : (B, d) float64, the block's landmarks; moved in place.
    schedule : Schedule
        The kernel width and the steps' schedule.
    work : :func:`step_work`; sums : (n_steps, B, 3) float64, on return each step's
        pivots f_j (relative kernel values), phi_j^T phi_j and nearest squared
        distances.
    n_threads : threads to run on; the landmarks do not depend on it.
    """
    n_threads = max(1, int(n_threads))
    barrier = _Barrier(n_threads)
    plan = _Plan(chunk, T, schedule, work, sums, n_threads)
    n_steps = len(chunk.batches)
    arguments = (chunk.Xc, chunk.xsq, chunk.Phi, work[0], plan)
    run_parts(lambda thread: _visit_part(thread, barrier, n_steps, arguments),
              range(n_threads), n_threads)


# ---------------------------------------------------------------- kernel tables

def _columns_part(const real[:, ::1] X, const real[::1] xsq, const real[:, ::1] Tc,
                  const double[::1] t_sq, double eta, real[:, ::1] out, Py_ssize_t lo,
                  Py_ssize_t hi):
    cdef Py_ssize_t i, i0, i1, j, m
    cdef Py_ssize_t B = Tc.shape[0]
    cdef Py_ssize_t d = X.shape[1]
    cdef double scale = -1.0 / eta
    cdef double s0, s1
    cdef real dots[8]
    with nogil:
        for i in range((hi - lo + 1) // 2):
            i0 = lo + 2 * i
            i1 = min(i0 + 1, hi - 1)
            s0 = xsq[i0]
            s1 = xsq[i1]
            j = 0
            while j + 4 <= B:
                _dots_2x4(&X[i0, 0], &X[i1, 0], &Tc[j, 0], d, dots)
                for m in range(4):
                    out[i0, j + m] = <real>exp(max(s0 - 2.0 * dots[m] + t_sq[j + m], 0.0)
                                               * scale)
                    out[i1, j + m] = <real>exp(max(s1 - 2.0 * dots[4 + m] + t_sq[j + m], 0.0)
                                               * scale)
                j += 4
            while j < B:
                _dots_2x1(&X[i0, 0], &X[i1, 0], &Tc[j, 0], d, dots)
                out[i0, j] = <real>exp(max(s0 - 2.0 * dots[0] + t_sq[j], 0.0) * scale)
                out[i1, j] = <real>exp(max(s1 - 2.0 * dots[1] + t_sq[j], 0.0) * scale)
                j += 1


def kernel_columns(X, xsq, T, eta, out, n_threads=1):
    """out[i, j] = exp(-||x_i - t_j||^2 / eta) for all rows of a chunk and landmarks
    T (B, d) at once (each row read once for all of them).

    X (n, d) and xsq in float32 or float64, C-ordered; T float64; out (n, B) in X's
    dtype. The dot products in the data's precision, the distances in float64, as
    the step computes them; each value is computed alone, so a column has the same
    bits however many are computed with it and on any number of threads.
    """
    n = X.shape[0]
    if n == 0 or len(T) == 0:
        return out
    Tc = np.ascontiguousarray(T, dtype=X.dtype)
    t_sq = _row_squares(T)
    n_parts = max(1, min(int(n_threads) * 4, (n + 1) // 2))
    edges = [2 * ((n + 1) // 2 * p // n_parts) for p in range(n_parts)] + [n]
    run_parts(lambda p: _columns_part(X, xsq, Tc, t_sq, float(eta), out, edges[p],
                                      edges[p + 1]),
              range(n_parts), n_threads)
    return out


def _row_squares(T):
    """Squared norms of T's rows in float64, each summed in order (as the step)."""
    cdef const double[:, ::1] t = np.ascontiguousarray(T, dtype=np.float64)
    cdef double[::1] out = np.empty(t.shape[0])
    cdef Py_ssize_t j, c
    cdef double s
    for j in range(t.shape[0]):
        s = 0.0
        for c in range(t.shape[1]):
            s += t[j, c] * t[j, c]
        out[j] = s
    return np.asarray(out)


def _gram_part(const real[:, :] Phi, Py_ssize_t k, Py_ssize_t end, double[:, ::1] part,
               Py_ssize_t lo, Py_ssize_t hi):
    cdef Py_ssize_t i, j, a
    cdef Py_ssize_t B = end - k
    cdef double p
    cdef double* acc
    cdef double* row = <double*>malloc(max(end, 1) * sizeof(double))
    with nogil:
        for i in range(lo, hi):
            for a in range(end):
                row[a] = Phi[i, a]
            for j in range(B):
                p = row[k + j]
                acc = &part[j, 0]
                for a in range(end):
                    acc[a] += row[a] * p
    free(row)


def cross_gram(Phi, k, end, out, n_threads=1):
    """out += Phi[:, :end]^T Phi[:, k:end] ((end, end - k), float64) for a kernel table
    (n, >= end) of float32 or float64, C-ordered.

    Parts of _GRAM_ROWS rows are summed alone (each part's sum runs over its rows
    in order) and the parts added in order, so the total does not depend on the
    thread count.
    """
    n = Phi.shape[0]
    B = end - k
    if n == 0 or B <= 0:
        return out
    n_parts = -(-n // _GRAM_ROWS)
    parts = np.zeros((n_parts, B, end))
    run_parts(lambda p: _gram_part(Phi, k, end, parts[p], p * _GRAM_ROWS,
                                   min(n, (p + 1) * _GRAM_ROWS)),
              range(n_parts), n_threads)
    for part in parts:
        out += part.T
    return out


def move(double[::1] t, double[::1] m, double f, double fraction, double max_step,
         double nearest, int space):
    """t <- Proj_S(t + a (m / f - t)) in place (m overwritten): the compiled move of
    the step, which ``tests/test_gp.py`` pins to :func:`.objective.moved_landmark`."""
    with nogil:
        _move_point(&t[0], &m[0], t.shape[0], f, fraction, max_step, nearest, space)
