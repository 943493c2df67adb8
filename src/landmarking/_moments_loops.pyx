"""Compiled column moments for :mod:`.kernels` and :mod:`.gp.sampling`.

NumPy's ``block.mean(axis=0, dtype=np.float64)`` and ``((block - mean) ** 2).sum(
axis=0, dtype=np.float64)`` on a C-ordered block of more than one column add the
rows one by one, each column on its own: these loops add them in the same order,
so they give the same bits, without NumPy's float64 copy of the block. Threads
split the columns into :data:`PARTS` fixed parts; no sum is split, so the result
does not depend on the thread count.
"""

from ._parallel import loop_threads, run_parts

__all__ = ["column_sums", "column_squared_deviations", "PARTS"]

cdef enum:
    _PARTS = 8

#: Fixed parts of the columns that threads take (more than any thread count here).
PARTS = _PARTS

ctypedef fused real:
    float
    double


cdef inline (Py_ssize_t, Py_ssize_t) _columns_of(Py_ssize_t part, Py_ssize_t d) noexcept nogil:
    """(first, end) of the columns in a part (of PARTS)."""
    cdef Py_ssize_t width = (d + _PARTS - 1) // _PARTS
    cdef Py_ssize_t lo = min(d, part * width)
    return lo, min(d, lo + width)


cdef void _sums_part(const real[:, ::1] X, double[::1] out, Py_ssize_t part) noexcept nogil:
    cdef Py_ssize_t lo, hi, i, c
    lo, hi = _columns_of(part, X.shape[1])
    cdef double* acc = &out[0]
    cdef const real* row
    for i in range(X.shape[0]):
        row = &X[i, 0]
        for c in range(lo, hi):
            acc[c] += <double>row[c]


cdef void _deviations_part(const real[:, ::1] X, const double[::1] mean, double[::1] out,
                           Py_ssize_t part) noexcept nogil:
    cdef Py_ssize_t lo, hi, i, c
    cdef double v
    lo, hi = _columns_of(part, X.shape[1])
    cdef double* acc = &out[0]
    cdef const double* centre = &mean[0]
    cdef const real* row
    for i in range(X.shape[0]):
        row = &X[i, 0]
        for c in range(lo, hi):
            v = <double>row[c] - centre[c]
            acc[c] += v * v


def _sums(const real[:, ::1] X, double[::1] out, Py_ssize_t part):
    with nogil:
        _sums_part(X, out, part)


def _deviations(const real[:, ::1] X, const double[::1] mean, double[::1] out,
                Py_ssize_t part):
    with nogil:
        _deviations_part(X, mean, out, part)


def column_sums(X, out, n_threads=None):
    """out[c] += X[0, c] + X[1, c] + ... in that order, in float64.

    X is C-ordered float32 or float64 with at least one column; ``n_threads``
    defaults to :func:`~landmarking._parallel.loop_threads`.
    """
    if X.shape[0] == 0 or X.shape[1] == 0:
        return
    run_parts(lambda part: _sums(X, out, part), range(PARTS),
              loop_threads() if n_threads is None else n_threads)


def column_squared_deviations(X, mean, out, n_threads=None):
    """out[c] += (X[0, c] - mean[c])^2 + (X[1, c] - mean[c])^2 + ..., in float64."""
    if X.shape[0] == 0 or X.shape[1] == 0:
        return
    run_parts(lambda part: _deviations(X, mean, out, part), range(PARTS),
              loop_threads() if n_threads is None else n_threads)
