"""Compiled column moments for :mod:`.kernels` and :mod:`.gp.sampling` (imported lazily).

NumPy's ``block.mean(axis=0, dtype=np.float64)`` and ``((block - mean) ** 2).sum(
axis=0, dtype=np.float64)`` on a C-ordered block of more than one column add the
rows one by one, each column on its own: these loops add them in the same order,
so they give the same bits, without NumPy's float64 copy of the block and on
numba's threads. Threads split the columns into :data:`PARTS` fixed parts; no
sum is split, so the result does not depend on the thread count.
"""

import numba
import numpy as np
from numba import prange

__all__ = ["column_sums", "column_squared_deviations", "PARTS"]

#: Fixed parts of the columns that threads take (more than any thread count here).
PARTS = 8


@numba.njit(cache=True, inline="always")
def _columns_of(part, d):
    """(first, end) of the columns in a part (of PARTS)."""
    width = (d + PARTS - 1) // PARTS
    lo = min(d, part * width)
    return lo, min(d, lo + width)


@numba.njit(parallel=True, cache=True)
def column_sums(X, out):
    """out[c] += X[0, c] + X[1, c] + ... in that order, in float64."""
    for part in prange(PARTS):
        lo, hi = _columns_of(part, X.shape[1])
        acc = out[lo:hi]
        for i in range(X.shape[0]):
            row = X[i, lo:hi]
            for c in range(hi - lo):
                acc[c] += np.float64(row[c])


@numba.njit(parallel=True, cache=True)
def column_squared_deviations(X, mean, out):
    """out[c] += (X[0, c] - mean[c])^2 + (X[1, c] - mean[c])^2 + ..., in float64."""
    for part in prange(PARTS):
        lo, hi = _columns_of(part, X.shape[1])
        centre = mean[lo:hi]
        acc = out[lo:hi]
        for i in range(X.shape[0]):
            row = X[i, lo:hi]
            for c in range(hi - lo):
                v = np.float64(row[c]) - centre[c]
                acc[c] += v * v
