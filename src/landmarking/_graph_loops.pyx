"""Compiled passes over a CSR graph for :mod:`.graph` (imported lazily).

The symmetry check and the component labels avoid forming W^T, which on a graph
of millions of edges costs more than everything else
:func:`~landmarking.graph.check_affinity` and
:func:`~landmarking.graph.check_connected` do. They are used only above
:data:`~landmarking.graph.COMPILED_MIN_NNZ` stored entries, where they beat
scipy's transpose; below it scipy's route is as quick. The product
:func:`csr_matvec` runs on every thread, where scipy's runs on one. Compiled ahead of
time (Cython).
"""

import numpy as np

from libc.stdint cimport int32_t, int64_t

from ._parallel import loop_threads, run_parts

__all__ = ["symmetry_pass", "component_labels", "csr_matvec"]

ctypedef fused index_t:
    int32_t
    int64_t

ctypedef fused real:
    float
    double


cdef inline Py_ssize_t _lower_bound(const index_t* indices, Py_ssize_t lo, Py_ssize_t hi,
                                    Py_ssize_t value) noexcept nogil:
    """First position in the sorted ``indices[lo:hi]`` holding >= value."""
    cdef Py_ssize_t mid
    while lo < hi:
        mid = (lo + hi) // 2
        if indices[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef int _symmetry_range(const index_t[::1] indptr, const index_t[::1] indices,
                         const real[::1] data, double tol, Py_ssize_t s, Py_ssize_t e,
                         int64_t[::1] cursor) noexcept nogil:
    """The verdict (as :func:`symmetry_pass`'s) of the rows [s, e)."""
    cdef Py_ssize_t n = indptr.shape[0] - 1, i, j, p, q
    cdef const index_t* ind = &indices[0] if indices.shape[0] else NULL
    cdef int verdict = 1
    for j in range(s, n):
        cursor[j] = _lower_bound(ind, indptr[j], indptr[j + 1], s)
    for i in range(s, e):
        for p in range(indptr[i], indptr[i + 1]):
            j = ind[p]
            if j <= i:
                continue
            q = cursor[j]
            if q >= indptr[j + 1] or ind[q] != i:
                verdict = -1
                break
            if abs(data[p] - data[q]) > tol:
                verdict = 0
            cursor[j] = q + 1
        if verdict < 0:
            break
    if verdict >= 0:
        for j in range(s, n):
            if cursor[j] != _lower_bound(ind, indptr[j], indptr[j + 1], min(e, j)):
                verdict = -1  # a lower entry (j, n) without its mirror (n, j)
                break
    return verdict


def _symmetry(const index_t[::1] indptr, const index_t[::1] indices, const real[::1] data,
              double tol, Py_ssize_t s, Py_ssize_t e):
    cdef int64_t[::1] cursor = np.empty(indptr.shape[0] - 1, dtype=np.int64)
    cdef int verdict
    with nogil:
        verdict = _symmetry_range(indptr, indices, data, tol, s, e, cursor)
    return verdict


def _same_index_dtype(indptr, indices):
    """indptr and indices C-ordered in one dtype: as they are when both are int32
    or both int64, else both int64."""
    dtype = indptr.dtype if indptr.dtype == indices.dtype and indptr.dtype in (
        np.int32, np.int64) else np.int64
    return np.ascontiguousarray(indptr, dtype=dtype), np.ascontiguousarray(indices, dtype=dtype)


def symmetry_pass(indptr, indices, data, tol, n_parts=2, n_threads=None):
    """1 if the canonical CSR pattern is symmetric with |w_nm - w_mn| <= tol,
    0 if the pattern is symmetric but some pair differs by more, -1 if the
    pattern itself is not symmetric (explicit zeros may then still make W
    symmetric, which the caller decides).

    Rows are visited in order, so the mirrors (m, n) of the upper entries
    (n, m) of a range of rows [s, e) are met in increasing n within row m: a
    cursor per row m, started at the first column >= s, pairs each one, and
    at the end it must have reached the first column >= min(e, m) (no lower
    entry of that range left unpaired). The rows are cut into ``n_parts``
    ranges, each checked with its own cursors, on ``n_threads`` threads (default
    :func:`~landmarking._parallel.loop_threads`); sequential access within
    each row avoids a search.
    """
    indptr, indices = _same_index_dtype(indptr, indices)
    data = np.ascontiguousarray(data)
    if data.dtype not in (np.float32, np.float64):
        data = data.astype(np.float64)
    n = indptr.shape[0] - 1
    n_parts = max(1, min(int(n_parts), n))
    step = (n + n_parts - 1) // n_parts
    verdicts = [1] * n_parts

    def check(part):
        verdicts[part] = _symmetry(indptr, indices, data, float(tol), part * step,
                                   min(n, (part + 1) * step))

    run_parts(check, range(n_parts), loop_threads() if n_threads is None else n_threads)
    return min(verdicts)


cdef void _union_find_labels(const index_t[::1] indptr, const index_t[::1] indices,
                             int64_t[::1] parent, int64_t[::1] labels) noexcept nogil:
    cdef Py_ssize_t n = indptr.shape[0] - 1, i, p
    cdef int64_t a, b, root, n_labels = 0
    for i in range(n):
        parent[i] = i
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            a = i
            b = indices[p]
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            while parent[b] != b:
                parent[b] = parent[parent[b]]
                b = parent[b]
            if a != b:
                if a < b:
                    parent[b] = a
                else:
                    parent[a] = b
    for i in range(n):
        root = i
        while parent[root] != root:
            root = parent[root]
        if root == i:
            labels[i] = n_labels
            n_labels += 1
        else:
            labels[i] = labels[root]


def _labels(const index_t[::1] indptr, const index_t[::1] indices):
    cdef Py_ssize_t n = indptr.shape[0] - 1
    parent = np.empty(n, dtype=np.int64)
    labels = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] parent_view = parent, labels_view = labels
    with nogil:
        _union_find_labels(indptr, indices, parent_view, labels_view)
    return labels


def component_labels(indptr, indices):
    """Component labels 0, 1, ... (in order of first row) of the undirected
    graph whose edges are the stored entries of a CSR matrix, either way.

    Union-find with path halving over the stored entries: it needs no W^T,
    which scipy's ``connected_components(directed=False)`` forms and which
    costs most of its time on a graph of millions of edges.
    """
    return _labels(*_same_index_dtype(indptr, indices))


cdef void _matvec_rows(const index_t[::1] indptr, const index_t[::1] indices,
                       const double[::1] data, const double[::1] x, double[::1] out,
                       Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    """out[i] = sum_p data[p] x[indices[p]] for the rows [s, e), in stored order."""
    cdef Py_ssize_t i, p
    cdef double total
    for i in range(s, e):
        total = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            total = total + data[p] * x[indices[p]]
        out[i] = total


def _matvec(const index_t[::1] indptr, const index_t[::1] indices, const double[::1] data,
            const double[::1] x, double[::1] out, Py_ssize_t s, Py_ssize_t e):
    with nogil:
        _matvec_rows(indptr, indices, data, x, out, s, e)


#: Rows per part of :func:`csr_matvec`: a part is a few hundred microseconds of
#: work, so that threads share out the rows evenly.
MATVEC_ROWS = 16384


def csr_matvec(indptr, indices, data, x, n_threads):
    """The product A x of a valid CSR matrix (float64 ``data``, indices within
    ``x``; the caller's matrix, which scipy built) with the float64 vector x.

    Rows are cut into parts of :data:`MATVEC_ROWS`, run on ``n_threads``
    threads; each row's sum runs in stored order, whichever thread computes it,
    so the result has the same bits on any thread count. scipy's own product
    runs on one thread.
    """
    indptr, indices = _same_index_dtype(indptr, indices)
    n = indptr.shape[0] - 1
    out = np.empty(n, dtype=np.float64)

    def rows(start):
        _matvec(indptr, indices, data, x, out, start, min(n, start + MATVEC_ROWS))

    run_parts(rows, range(0, n, MATVEC_ROWS), n_threads)
    return out
