"""Compiled loops of the blocked exact neighbour search (see :mod:`landmarking.neighbors`).

Imported when a search runs, so that importing the library loads no numba.
"""

import numba
import numpy as np

__all__ = ["shortlist", "candidate_sq_distances"]


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
def shortlist(approx, m):
    """Column indices of the m smallest entries of each row (any order) and
    the largest value among them, which every entry left out is at least.

    One pass per row with a max-heap of size m: an entry is compared with the
    heap's top and only the rare smaller one is pushed in.
    """
    b, n = approx.shape
    out = np.empty((b, m), dtype=np.int64)
    worst = np.empty(b, dtype=np.float64)
    for i in numba.prange(b):
        vals = np.empty(m, dtype=approx.dtype)
        idx = np.empty(m, dtype=np.int64)
        for j in range(m):
            vals[j] = approx[i, j]
            idx[j] = j
        for s in range(m // 2 - 1, -1, -1):
            _sift_down(vals, idx, s, m)
        top = vals[0]
        for j in range(m, n):
            v = approx[i, j]
            if v < top:
                vals[0] = v
                idx[0] = j
                _sift_down(vals, idx, 0, m)
                top = vals[0]
        out[i] = idx
        worst[i] = top
    return out, worst


@numba.njit(parallel=True, cache=True)
def candidate_sq_distances(Q, X, cand):
    """Squared distances |q_i - x_cand[i, j]|^2 in float64 from the differences
    (no cancellation, unlike the |q|^2 - 2 q.x + |x|^2 of the shortlist); a
    loop avoids gathering a (b, m, n_features) array."""
    b, m = cand.shape
    out = np.empty((b, m))
    for i in numba.prange(b):
        for j in range(m):
            c = cand[i, j]
            s = 0.0
            for f in range(Q.shape[1]):
                t = Q[i, f] - X[c, f]
                s += t * t
            out[i, j] = s
    return out
