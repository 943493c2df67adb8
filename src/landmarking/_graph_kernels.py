"""Compiled passes over a CSR graph for :mod:`.graph` (imported lazily).

Both avoid forming W^T, which on a graph of millions of edges costs more than
everything else :func:`~landmarking.graph.check_affinity` and
:func:`~landmarking.graph.check_connected` do. They are used only
above :data:`~landmarking.graph.COMPILED_MIN_NNZ` stored entries,
where the compile time (paid once per machine, cached) is small beside the work.
"""

import numba
import numpy as np

__all__ = ["symmetry_pass", "component_labels"]


@numba.njit(cache=True)
def _lower_bound(indices, lo, hi, value):
    """First position in the sorted ``indices[lo:hi]`` holding >= value."""
    while lo < hi:
        mid = (lo + hi) // 2
        if indices[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(parallel=True, cache=True)
def symmetry_pass(indptr, indices, data, tol, n_parts=2):
    """1 if the canonical CSR pattern is symmetric with |w_nm - w_mn| <= tol,
    0 if the pattern is symmetric but some pair differs by more, -1 if the
    pattern itself is not symmetric (explicit zeros may then still make W
    symmetric, which the caller decides).

    Rows are visited in order, so the mirrors (m, n) of the upper entries
    (n, m) of a range of rows [s, e) are met in increasing n within row m: a
    cursor per row m, started at the first column >= s, pairs each one, and
    at the end it must have reached the first column >= min(e, m) (no lower
    entry of that range left unpaired). The ranges run in parallel, each with
    its own cursors; sequential access within each row avoids a search.
    """
    n = indptr.shape[0] - 1
    n_parts = max(1, min(n_parts, n))
    step = (n + n_parts - 1) // n_parts
    verdicts = np.ones(n_parts, dtype=np.int64)
    for part in numba.prange(n_parts):
        s, e = part * step, min(n, (part + 1) * step)
        cursor = np.empty(n, dtype=np.int64)
        for j in range(s, n):
            cursor[j] = _lower_bound(indices, indptr[j], indptr[j + 1], s)
        verdict = 1
        for i in range(s, e):
            for p in range(indptr[i], indptr[i + 1]):
                j = indices[p]
                if j <= i:
                    continue
                q = cursor[j]
                if q >= indptr[j + 1] or indices[q] != i:
                    verdict = -1
                    break
                if abs(data[p] - data[q]) > tol:
                    verdict = 0
                cursor[j] = q + 1
            if verdict < 0:
                break
        if verdict >= 0:
            for j in range(s, n):
                if cursor[j] != _lower_bound(indices, indptr[j], indptr[j + 1],
                                             min(e, j)):
                    verdict = -1  # a lower entry (j, n) without its mirror (n, j)
                    break
        verdicts[part] = verdict
    return verdicts.min()


@numba.njit(cache=True)
def component_labels(indptr, indices):
    """Component labels 0, 1, ... (in order of first row) of the undirected
    graph whose edges are the stored entries of a CSR matrix, either way.

    Union-find with path halving over the stored entries: it needs no W^T,
    which scipy's ``connected_components(directed=False)`` forms and which
    costs most of its time on a graph of millions of edges.
    """
    n = indptr.shape[0] - 1
    parent = np.arange(n)
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            a, b = i, indices[p]
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
    labels = np.empty(n, dtype=np.int64)
    n_labels = 0
    for i in range(n):
        root = i
        while parent[root] != root:
            root = parent[root]
        if root == i:
            labels[i] = n_labels
            n_labels += 1
        else:
            labels[i] = labels[root]
    return labels
