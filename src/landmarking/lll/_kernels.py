"""Compiled kernels of Locally Linear Landmarks (see :mod:`.lll`).

- :func:`nearest_gram_weights`: for a chunk of points, the K_Z nearest landmarks
  and the affine reconstruction weights from them (local Gram matrix, ridge,
  Cholesky), blocked so that the factorisation vectorises;
- :func:`reduced_dense`: the dense reduced matrices B~ = Z D Z^T and (half of)
  Z W Z^T in one pass over the points.

Both run in parallel over parts of the points, each part in a compiled
sequential loop that releases the GIL (``nogil=True``), on a pool of Python
threads; each part writes only its own memory. Compiling a sequential loop
takes a fraction of the time numba's ``parallel=True`` lowering takes (which
made the first fit of a session ~10 s slower than the next, with an empty
cache), and the result is the same for any number of threads.
"""

import math
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

__all__ = ["BLOCK", "sift_down", "nearest_gram_weights", "reduced_dense",
           "reconstruction_residuals"]

#: Points per block of the compiled Cholesky (the vectorised dimension).
BLOCK = 64


def _run_parts(func, parts, n_threads):
    """``func(part)`` for every part, on up to ``n_threads`` threads."""
    n_threads = max(1, min(int(n_threads), len(parts)))
    if n_threads == 1:
        for part in parts:
            func(part)
        return
    with ThreadPoolExecutor(max_workers=n_threads) as pool:
        for future in [pool.submit(func, part) for part in parts]:
            future.result()


@numba.njit(inline="always")
def sift_down(heap_v, heap_j, pos, size):
    """Restore a max-heap on (heap_v, heap_j) pairs below ``pos``."""
    while True:
        child = 2 * pos + 1
        if child >= size:
            return
        right = child + 1
        if right < size and (heap_v[right] > heap_v[child] or (
                heap_v[right] == heap_v[child] and heap_j[right] > heap_j[child])):
            child = right
        if heap_v[child] > heap_v[pos] or (heap_v[child] == heap_v[pos]
                                           and heap_j[child] > heap_j[pos]):
            heap_v[pos], heap_v[child] = heap_v[child], heap_v[pos]
            heap_j[pos], heap_j[child] = heap_j[child], heap_j[pos]
            pos = child
        else:
            return


def nearest_gram_weights(cross, x_sq, t_sq, gram, reg, solve, idx, weights, n_parts):
    """Nearest landmarks and their weights for a chunk of points, compiled.

    For point i, the squared distances |y|^2 - 2 y.t + |t|^2 (rounded as the
    NumPy expression ``-2 * cross + x_sq + t_sq``) rank the landmarks; the
    ``k = idx.shape[1]`` nearest, nearest first and ties to the lower index,
    go to ``idx[i]``. With ``solve``, the local Gram matrix G (entries rounded
    as in ``lll._local_gram``) gets the ridge of
    ``local_weights.local_affine_weights`` and a Cholesky factorisation, and
    the weights, scaled to sum to one, go to ``weights[i]``. Returns a mask of
    the points left to the caller: all of them without ``solve``, else those
    whose G + r I was not numerically positive definite or gave no usable
    weights. With reg >= 1e-5 the
    condition number of G + r I is below about 1e5, so Cholesky and LAPACK's
    LU agree to rounding.

    The points are cut into ``n_parts`` runs of whole blocks, one thread each;
    every point's result depends on that point only.
    """
    n = cross.shape[0]
    failed = np.ones(n, dtype=np.bool_)
    n_blocks = (n + BLOCK - 1) // BLOCK
    n_parts = max(1, min(int(n_parts), n_blocks))
    per_part = (n_blocks + n_parts - 1) // n_parts * BLOCK
    starts = list(range(0, n, per_part))

    def run(start):
        rows = slice(start, min(n, start + per_part))
        _nearest_gram_part(cross[rows], x_sq[rows], t_sq, gram, reg, solve, idx[rows],
                           weights[rows], failed[rows])

    _run_parts(run, starts, n_parts)
    return failed


@numba.njit(nogil=True, cache=True)
def _nearest_gram_part(cross, x_sq, t_sq, gram, reg, solve, idx, weights, failed):
    """:func:`nearest_gram_weights` on one run of points, sequentially.

    Points go in blocks of ``BLOCK``, the block index last: every step of the
    factorisation is then a loop over the block's points, which vectorises (a
    single small Cholesky is a chain of dependent scalar operations).
    """
    n, n_land = cross.shape
    k = idx.shape[1]
    P = BLOCK
    n_blocks = (n + P - 1) // P
    # Work arrays once per part: a fresh U per block would be a large
    # allocation, with its page faults, every block.
    heap_v = np.empty(k)
    heap_j = np.empty(k, dtype=np.int64)
    U = np.empty((k, k, P))
    trace = np.empty(P)
    bad = np.empty(P, dtype=np.bool_)
    w = np.empty((k, P))
    for blk in range(n_blocks):
        start = blk * P
        m = min(P, n - start)
        for p in range(m):
            # A max-heap of the k best (distance, index) pairs so far; the
            # index breaks ties, so the result is the k smallest pairs.
            i = start + p
            for j in range(n_land):
                v = -2.0 * cross[i, j] + x_sq[i] + t_sq[j]
                if j < k:
                    heap_v[j] = v
                    heap_j[j] = j
                    if j == k - 1:
                        for pos in range(k // 2 - 1, -1, -1):
                            sift_down(heap_v, heap_j, pos, k)
                elif v < heap_v[0]:  # an equal distance has the larger index
                    heap_v[0] = v
                    heap_j[0] = j
                    sift_down(heap_v, heap_j, 0, k)
            for end in range(k - 1, 0, -1):  # heapsort: nearest first
                heap_v[0], heap_v[end] = heap_v[end], heap_v[0]
                heap_j[0], heap_j[end] = heap_j[end], heap_j[0]
                sift_down(heap_v, heap_j, 0, end)
            for a in range(k):
                idx[i, a] = heap_j[a]
        if not solve:
            continue
        # Upper triangle only: the factor is U with G + r I = U^T U.
        trace[:] = 0.0
        for a in range(k):
            for p in range(m):
                i = start + p
                ia = idx[i, a]
                ca = x_sq[i] - cross[i, ia]
                for b in range(a, k):
                    ib = idx[i, b]
                    U[a, b, p] = ca - cross[i, ib] + gram[ia, ib]
                trace[p] += U[a, a, p]
        for p in range(m, P):  # a short last block: identity in the spare lanes
            for a in range(k):
                for b in range(a, k):
                    U[a, b, p] = 1.0 if a == b else 0.0
        for p in range(m):
            ridge = reg * trace[p] if trace[p] > 0 else reg
            for a in range(k):
                U[a, a, p] += ridge
        bad[:] = False
        for j in range(k):
            for p in range(P):
                d = U[j, j, p]
                if not d > 0:
                    bad[p] = True
                    d = 1.0  # keeps the lane finite; its result is discarded
                U[j, j, p] = math.sqrt(d)
            for b in range(j + 1, k):
                for p in range(P):
                    U[j, b, p] /= U[j, j, p]
            for a in range(j + 1, k):
                for b in range(a, k):
                    for p in range(P):
                        U[a, b, p] -= U[j, a, p] * U[j, b, p]
        # U^T v = 1, then U w = v.
        w[:] = 1.0
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
            if bad[p] or not (np.isfinite(total) and abs(total) >= 1e-300):
                continue
            failed[start + p] = False
            for a in range(k):
                weights[start + p, a] = w[a, p] / total


def reduced_dense(w_indptr, w_indices, w_data, deg, z_idx, z_w, n_land, n_parts,
                  n_threads=None):
    """Dense B~ = sum_n d_n z_n z_n^T and half of C~ = Z^T W Z for symmetric W:
    H = sum_n z_n (sum_{m >= n} w_nm z_m)^T, the diagonal of W halved, so that
    C~ = H + H^T.

    Z is given by its K nonzeros per point (z_idx, z_w). Using only the upper
    triangle of W halves the gather-scatter over the edges, which dominates.
    Each of ``n_parts`` parts of the points (every n_parts-th row, which
    balances the upper triangle's work) accumulates into its own L x L blocks,
    summed at the end in part order, so threads never write to the same memory
    and the sums do not depend on ``n_threads`` (default: numba's thread count,
    which ``n_jobs`` sets).
    """
    B = np.zeros((n_parts, n_land, n_land))
    C = np.zeros((n_parts, n_land, n_land))

    def run(part):
        _reduced_part(w_indptr, w_indices, w_data, deg, z_idx, z_w, part, n_parts,
                      B[part], C[part])

    if n_threads is None:
        n_threads = numba.get_num_threads()
    _run_parts(run, list(range(n_parts)), n_threads)
    return B.sum(axis=0), C.sum(axis=0)


@numba.njit(nogil=True, cache=True)
def _reduced_part(w_indptr, w_indices, w_data, deg, z_idx, z_w, part, n_parts, Bp, Cp):
    """One part of :func:`reduced_dense`: rows part, part + n_parts, ...

    The row sum_m w_nm z_m is kept dense: adding it to K rows of H is then K
    contiguous axpys of length L, which vectorise.
    """
    n, k = z_idx.shape
    n_land = Bp.shape[0]
    acc = np.zeros(n_land)
    for i in range(part, n, n_parts):
        for p in range(w_indptr[i], w_indptr[i + 1]):
            m = w_indices[p]
            if m < i:
                continue
            wv = w_data[p] if m > i else 0.5 * w_data[p]
            for a in range(k):
                acc[z_idx[m, a]] += wv * z_w[m, a]
        for a in range(k):
            row = z_idx[i, a]
            zv = z_w[i, a]
            dz = deg[i] * zv
            for b in range(k):
                Bp[row, z_idx[i, b]] += dz * z_w[i, b]
            for col in range(n_land):
                Cp[row, col] += zv * acc[col]
        acc[:] = 0.0


def reconstruction_residuals(X, landmarks, z_indptr, z_indices, z_data, n_threads=None):
    """|x_i - sum_a z_ia t_a|^2 for every row of dense X, in float64.

    Z is given as CSR arrays (rows of X, columns the landmarks). Rows go in
    contiguous parts, one thread each (default: numba's thread count); each
    row's value depends on that row only, so the result does not depend on the
    thread count. One pass over X with no (n, n_features) temporaries, where
    ``X - Z @ T`` made four.
    """
    n = X.shape[0]
    out = np.empty(n)
    if n_threads is None:
        n_threads = numba.get_num_threads()
    per_part = max(1, -(-n // max(1, int(n_threads))))
    starts = list(range(0, n, per_part))

    def run(start):
        stop = min(n, start + per_part)
        _residual_part(X, landmarks, z_indptr, z_indices, z_data, start, stop, out)

    _run_parts(run, starts, n_threads)
    return out


@numba.njit(nogil=True, cache=True)
def _residual_part(X, landmarks, z_indptr, z_indices, z_data, start, stop, out):
    """:func:`reconstruction_residuals` for rows start:stop."""
    d = X.shape[1]
    for i in range(start, stop):
        s = 0.0
        for f in range(d):
            r = np.float64(X[i, f])
            for p in range(z_indptr[i], z_indptr[i + 1]):
                r -= z_data[p] * landmarks[z_indices[p], f]
            s += r * r
        out[i] = s
