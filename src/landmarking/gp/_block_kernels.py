"""Compiled (numba) block steps of GP landmarking: see :mod:`.blocks`.

:func:`block_visit_steps` runs all the steps of a block of B landmarks on one
chunk visit in one call, each step as :func:`.blocks.block_step_numpy` computes
it: the squared distances as one (b x d) by (d x B) product (:func:`_distances`),
the kernel values relative to each landmark's nearest point and the cross
products with the earlier landmarks' columns (:func:`_kernel_and_cross`), the
solve with the batch's Cholesky factor, U = M Phi_B (:func:`_residuals`),
G = Phi_B^T U (:func:`_block_gram`) and its factor with the drops
(:func:`_factor_with_drops`), W (:func:`_weights`) and X_b^T W
(:func:`_weighted_sums`); then the B moves with the sequential step's compiled
move (:func:`._kernels._move`).

Threads: the loops marked ``prange`` run on numba's threads (as many as
``numba.get_num_threads()``; set them with ``numba.set_num_threads`` or
``NUMBA_NUM_THREADS``). What they split is rows, landmarks or fixed tiles of
_TILE features; no sum is ever split between threads, so every number is summed
in the same order whatever the thread count, and the landmarks are the same bit
for bit on one thread and on two (tests/gp/test_blocks.py).

Arithmetic as in :mod:`._kernels`: the data's precision where the data is read
(dot products and the weighted sums over blocks of _FLUSH rows), float64
everywhere else; ``fastmath`` limited to reassociation and contraction.

Imported lazily by :class:`.blocks.BlockStep` (``import landmarking`` does not
load numba); :func:`compiled_block_visit` compiles the visit on first use.
"""

import functools

import numba
import numpy as np
from numba import prange

from ._kernels import SPACE_CODES, _move

_FASTMATH = {"reassoc", "contract"}
#: Rows summed in the data's precision before the sum goes into a float64 total.
_FLUSH = 64
#: Features per tile of ``X_b^T W``: the tiles are what threads split.
_TILE = 64
#: Rows per block of the solves for W: the blocks are what threads split.
_SOLVE_ROWS = 256
#: A landmark moves on a step only when its pivot exceeds this fraction of phi^T phi
#: (``objective.MIN_RELATIVE_F``, the sequential step's guard).
PIVOT_TOL = 1e-10


@numba.njit(cache=True, fastmath=_FASTMATH, nogil=True, parallel=True)
def _distances(Xc, xsq, rows, Tc, t_sq, D2):
    """D2[j, i] = ||x_{rows[i]} - t_j||^2 (float64 cancellation), dot products in
    the data's precision; threads split fixed pairs of rows (each number computed
    whole, by one thread)."""
    b = rows.shape[0]
    B = Tc.shape[0]
    d = Xc.shape[1]
    zero = Xc.dtype.type(0)
    for pair in prange((b + 1) // 2):
        i0 = 2 * pair
        i1 = min(i0 + 1, b - 1)
        x0 = Xc[rows[i0]]
        x1 = Xc[rows[i1]]
        s0 = np.float64(xsq[rows[i0]])
        s1 = np.float64(xsq[rows[i1]])
        j = 0
        # Two rows and four landmarks per pass: each load serves two or four products.
        while j + 4 <= B:
            a0 = a1 = a2 = a3 = zero
            b0 = b1 = b2 = b3 = zero
            for c in range(d):
                u = x0[c]
                v = x1[c]
                t0, t1, t2, t3 = Tc[j, c], Tc[j + 1, c], Tc[j + 2, c], Tc[j + 3, c]
                a0 += u * t0
                a1 += u * t1
                a2 += u * t2
                a3 += u * t3
                b0 += v * t0
                b1 += v * t1
                b2 += v * t2
                b3 += v * t3
            D2[j, i0] = max(s0 - 2.0 * a0 + t_sq[j], 0.0)
            D2[j + 1, i0] = max(s0 - 2.0 * a1 + t_sq[j + 1], 0.0)
            D2[j + 2, i0] = max(s0 - 2.0 * a2 + t_sq[j + 2], 0.0)
            D2[j + 3, i0] = max(s0 - 2.0 * a3 + t_sq[j + 3], 0.0)
            D2[j, i1] = max(s1 - 2.0 * b0 + t_sq[j], 0.0)
            D2[j + 1, i1] = max(s1 - 2.0 * b1 + t_sq[j + 1], 0.0)
            D2[j + 2, i1] = max(s1 - 2.0 * b2 + t_sq[j + 2], 0.0)
            D2[j + 3, i1] = max(s1 - 2.0 * b3 + t_sq[j + 3], 0.0)
            j += 4
        while j < B:
            a0 = b0 = zero
            for c in range(d):
                a0 += x0[c] * Tc[j, c]
                b0 += x1[c] * Tc[j, c]
            D2[j, i0] = max(s0 - 2.0 * a0 + t_sq[j], 0.0)
            D2[j, i1] = max(s1 - 2.0 * b0 + t_sq[j], 0.0)
            j += 1


@numba.njit(cache=True, fastmath=_FASTMATH, nogil=True, parallel=True)
def _kernel_and_cross(D2, Phi, prows, k, eta, PhiB, nearest, phi_sq, cross):
    """Per landmark j (split over threads): its nearest squared distance, its kernel
    values relative to it (PhiB[j]), phi^T phi, and Phi_p^T phi_j (cross[j])."""
    B, b = D2.shape
    scale = -1.0 / eta
    for j in prange(B):
        near = np.inf
        for i in range(b):
            if D2[j, i] < near:
                near = D2[j, i]
        nearest[j] = near
        sq = 0.0
        for i in range(b):
            p = np.exp((D2[j, i] - near) * scale)
            PhiB[j, i] = p
            sq += p * p
        phi_sq[j] = sq
        for a in range(k):
            cross[j, a] = 0.0
        for i in range(b):
            q = prows[i]
            p = PhiB[j, i]
            for a in range(k):
                cross[j, a] += Phi[q, a] * p


@numba.njit(cache=True, nogil=True)
def _solve_factor(L, k, coef):
    """(L L^T)^-1 in place on each row of coef (B, >= k), by rows of L (as the
    sequential step reads it)."""
    for j in range(coef.shape[0]):
        for a in range(k):
            s = coef[j, a]
            for c in range(a):
                s -= L[a, c] * coef[j, c]
            coef[j, a] = s / L[a, a]
        for a in range(k - 1, -1, -1):
            coef[j, a] /= L[a, a]
            x = coef[j, a]
            for c in range(a):
                coef[j, c] -= L[a, c] * x


@numba.njit(cache=True, fastmath=_FASTMATH, nogil=True, parallel=True)
def _residuals(PhiB, Phi, prows, k, coef, UT):
    """UT[j, i] = phi_j[i] - Phi_p[i] . coef[j]: M phi_j, rows split over threads."""
    B, b = PhiB.shape
    for i in prange(b):
        q = prows[i]
        for j in range(B):
            u = PhiB[j, i]
            for a in range(k):
                u -= Phi[q, a] * coef[j, a]
            UT[j, i] = u


@numba.njit(cache=True, fastmath=_FASTMATH, nogil=True, parallel=True)
def _block_gram(PhiB, UT, G):
    """G = Phi_B^T U (B x B), symmetrised; one row of G per thread task."""
    B, b = PhiB.shape
    for j in prange(B):
        for m in range(B):
            s = 0.0
            for i in range(b):
                s += PhiB[j, i] * UT[m, i]
            G[j, m] = s
    for j in range(B):
        for m in range(j):
            s = 0.5 * (G[j, m] + G[m, j])
            G[j, m] = s
            G[m, j] = s


@numba.njit(cache=True, nogil=True)
def _factor_with_drops(G, phi_sq, f, active, LG, tol):
    """:func:`pivots_with_drops` compiled: LG (B x B) holds the active factor in
    its first n rows and columns; returns n, and ``active`` lists the kept indices."""
    B = G.shape[0]
    n = 0
    y = np.empty(B)
    for j in range(B):
        for a in range(n):
            s = G[active[a], j]
            for c in range(a):
                s -= LG[a, c] * y[c]
            y[a] = s / LG[a, a]
        r = G[j, j]
        for a in range(n):
            r -= y[a] * y[a]
        f[j] = r
        if r > tol * phi_sq[j]:
            for a in range(n):
                LG[n, a] = y[a]
            LG[n, n] = np.sqrt(r)
            active[n] = j
            n += 1
    return n


@numba.njit(cache=True, fastmath=_FASTMATH, nogil=True, parallel=True)
def _weights(PhiB, UT, LG, active, n, WT):
    """WT[a, i] = phi_{active[a]}[i] (U G^-1)[i, a] over the active landmarks: the
    two triangular solves with LG for _SOLVE_ROWS rows at once (each substitution
    step a vector operation over the rows); threads split those fixed blocks of
    rows, and each number is computed by one thread in a fixed order."""
    b = PhiB.shape[1]
    n_blocks = (b + _SOLVE_ROWS - 1) // _SOLVE_ROWS
    for block in prange(n_blocks):
        lo = block * _SOLVE_ROWS
        m = min(b, lo + _SOLVE_ROWS) - lo
        Z = np.empty((n, m))
        for a in range(n):
            z = Z[a]
            u = UT[active[a], lo:lo + m]
            for i in range(m):
                z[i] = u[i]
            for c in range(a):
                w = LG[a, c]
                y = Z[c]
                for i in range(m):
                    z[i] -= w * y[i]
            pivot = LG[a, a]
            for i in range(m):
                z[i] /= pivot
        for a in range(n - 1, -1, -1):
            z = Z[a]
            pivot = LG[a, a]
            for i in range(m):
                z[i] /= pivot
            for c in range(a):
                w = LG[a, c]
                y = Z[c]
                for i in range(m):
                    y[i] -= w * z[i]
        for a in range(n):
            phi = PhiB[active[a], lo:lo + m]
            out = WT[a, lo:lo + m]
            z = Z[a]
            for i in range(m):
                out[i] = phi[i] * z[i]


@numba.njit(cache=True, fastmath=_FASTMATH, nogil=True, parallel=True)
def _weighted_sums(Xc, rows, WT, n, S):
    """S[a] = sum_i WT[a, i] x_{rows[i]}, for a < n.

    Threads split the features in fixed tiles of _TILE; each sum runs over the
    rows in order, in the data's precision over blocks of _FLUSH rows added into a
    float64 total, so no sum depends on the thread count. Four rows and two
    landmarks at a time: each load of a partial sum (from L1) serves four
    products, each load of a row's tile eight (twice as fast as one row at a time
    at B = 10 and 50).
    """
    b = rows.shape[0]
    d = Xc.shape[1]
    cast = Xc.dtype.type
    n_tiles = (d + _TILE - 1) // _TILE
    for tile in prange(n_tiles):
        lo = tile * _TILE
        width = min(d, lo + _TILE) - lo
        part = np.zeros(n * _TILE, dtype=Xc.dtype)
        total = np.zeros(n * _TILE)
        i = 0
        while i < b:
            if i + 4 <= b:
                x0 = Xc[rows[i], lo:lo + width]
                x1 = Xc[rows[i + 1], lo:lo + width]
                x2 = Xc[rows[i + 2], lo:lo + width]
                x3 = Xc[rows[i + 3], lo:lo + width]
                a = 0
                while a < n:
                    w0, w1 = cast(WT[a, i]), cast(WT[a, i + 1])
                    w2, w3 = cast(WT[a, i + 2]), cast(WT[a, i + 3])
                    p = part[a * _TILE:a * _TILE + width]
                    if a + 2 <= n:
                        v0, v1 = cast(WT[a + 1, i]), cast(WT[a + 1, i + 1])
                        v2, v3 = cast(WT[a + 1, i + 2]), cast(WT[a + 1, i + 3])
                        q = part[(a + 1) * _TILE:(a + 1) * _TILE + width]
                        for c in range(width):
                            y0, y1, y2, y3 = x0[c], x1[c], x2[c], x3[c]
                            p[c] += (w0 * y0 + w1 * y1) + (w2 * y2 + w3 * y3)
                            q[c] += (v0 * y0 + v1 * y1) + (v2 * y2 + v3 * y3)
                        a += 2
                    else:
                        for c in range(width):
                            p[c] += (w0 * x0[c] + w1 * x1[c]) + (w2 * x2[c] + w3 * x3[c])
                        a += 1
                i += 4
            else:
                x = Xc[rows[i], lo:lo + width]
                for a in range(n):
                    w = cast(WT[a, i])
                    p = part[a * _TILE:a * _TILE + width]
                    for c in range(width):
                        p[c] += w * x[c]
                i += 1
            if i % _FLUSH == 0 or i == b:
                for c in range(n * _TILE):
                    total[c] += part[c]
                    part[c] = 0
        for a in range(n):
            for c in range(width):
                S[a, lo + c] = total[a * _TILE + c]


@numba.njit(cache=True, nogil=True)
def _cast_block(T, Tc, t_sq):
    """Tc = T in the data's precision (Tc's dtype), t_sq = squared norms of T's rows
    in float64."""
    for j in range(T.shape[0]):
        s = 0.0
        for c in range(T.shape[1]):
            Tc[j, c] = T[j, c]
            s += T[j, c] * T[j, c]
        t_sq[j] = s


@numba.njit(cache=True, nogil=True)
def _block_sums(Xc, xsq, rows, Phi, prows, k, L, T, eta, work, sums_q):
    """One block step's sums; returns n, the number of active landmarks (listed in
    work.active[:n], their targets in work.S[:n])."""
    (Tc, t_sq, D2f, PhiBf, nearest, phi_sq, cross, UTf, G, LG, f, active, WTf, S) = work
    B, d = T.shape
    b = rows.shape[0]
    # (B, b) views of flat buffers: C-contiguous, so the loops over a row vectorise
    # (a [:, :b] slice of a 2-D buffer would be typed non-contiguous).
    D2 = D2f[:B * b].reshape((B, b))
    PhiB = PhiBf[:B * b].reshape((B, b))
    UT = UTf[:B * b].reshape((B, b))
    WT = WTf[:B * b].reshape((B, b))
    _cast_block(T, Tc, t_sq)
    _distances(Xc, xsq, rows, Tc, t_sq, D2)
    _kernel_and_cross(D2, Phi, prows, k, eta, PhiB, nearest, phi_sq, cross)
    if k:
        _solve_factor(L, k, cross)
    _residuals(PhiB, Phi, prows, k, cross, UT)
    _block_gram(PhiB, UT, G)
    n = _factor_with_drops(G, phi_sq, f, active, LG, PIVOT_TOL)
    _weights(PhiB, UT, LG, active, n, WT)
    _weighted_sums(Xc, rows, WT, n, S)
    for j in range(B):
        sums_q[j, 0] = f[j]
        sums_q[j, 1] = phi_sq[j]
        sums_q[j, 2] = nearest[j]
    return n


@numba.njit(cache=True, fastmath=_FASTMATH, nogil=True, parallel=True)
def kernel_columns_together(Xc, xsq, T, eta, out):
    """out[i, j] = exp(-||x_i - t_j||^2 / eta) for all rows of a chunk and a block's
    landmarks T (B, d) at once: each row read once for the whole block (the
    sequential fit computes a column per pass over the data). Rows split over
    threads; dot products in the data's precision, distances in float64."""
    n, d = Xc.shape
    B = T.shape[0]
    Tc = np.empty((B, d), dtype=Xc.dtype)
    t_sq = np.empty(B)
    _cast_block(T, Tc, t_sq)
    scale = -1.0 / eta
    zero = Xc.dtype.type(0)
    # Two rows per pass (each landmark's row loaded once for both); every value
    # is computed by the same code whatever its row or column, so a column has
    # the same bits whichever block, chunk or continued run computes it.
    for pair in prange((n + 1) // 2):
        i0 = 2 * pair
        i1 = min(i0 + 1, n - 1)
        x0 = Xc[i0]
        x1 = Xc[i1]
        s0 = np.float64(xsq[i0])
        s1 = np.float64(xsq[i1])
        for j in range(B):
            t = Tc[j]
            a0 = a1 = zero
            for c in range(d):
                a0 += x0[c] * t[c]
                a1 += x1[c] * t[c]
            out[i0, j] = np.exp(max(s0 - 2.0 * a0 + t_sq[j], 0.0) * scale)
            out[i1, j] = np.exp(max(s1 - 2.0 * a1 + t_sq[j], 0.0) * scale)


@numba.njit(cache=True, fastmath=_FASTMATH, nogil=True, parallel=True)
def cross_gram(Phi, k, end, out):
    """out += Phi[:, :end]^T Phi[:, k:end] (end x (end - k)), float64: threads take
    fixed blocks of _FLUSH * 64 rows whose partial sums are added in order, so the
    total does not depend on the thread count."""
    n = Phi.shape[0]
    B = end - k
    rows = _FLUSH * 64
    n_blocks = (n + rows - 1) // rows
    # Each part is kept transposed (B x end), so that the innermost loop runs along
    # a row of Phi and of the part (the same sums, in the same order).
    parts = np.zeros((n_blocks, B, end))
    for block in prange(n_blocks):
        part = parts[block]
        row = np.empty(end)
        for i in range(block * rows, min(n, (block + 1) * rows)):
            for a in range(end):
                row[a] = np.float64(Phi[i, a])
            for j in range(B):
                p = row[k + j]
                acc = part[j]
                for a in range(end):
                    acc[a] += row[a] * p
    for block in range(n_blocks):
        out += parts[block].T


def block_visit_steps(Xc, xsq, perm, positions, bounds, batches, Phi, k, Ls, T, eta, first,
                      s0, tau, max_step, space, work, sums):
    """The steps of one block on one chunk visit, in one call.

    As :func:`._kernels.visit_steps` with a block: ``T`` (B, d) float64, moved
    in place; ``work`` from :func:`block_work`; ``sums`` (n_steps, B, 3) float64:
    on return each step's pivots f_j (relative kernel values), phi_j^T phi_j and
    nearest squared distances. Rows of a batch are ``perm[bounds[j]:bounds[j + 1]]``
    (consecutive when Xc is the chunk in the permutation's order and ``perm`` is
    ``positions``); its rows of Phi are ``positions[...]``.
    """
    S = work[13]
    active = work[11]
    m = np.empty(T.shape[1])
    t = np.empty(T.shape[1])
    for q in range(batches.shape[0]):
        j = batches[q]
        lo, hi = bounds[j], bounds[j + 1]
        n = _block_sums(Xc, xsq, perm[lo:hi], Phi, positions[lo:hi], k, Ls[j], T, eta,
                        work, sums[q])
        fraction = (s0 + first + q) ** -tau
        for a in range(n):
            land = active[a]
            for c in range(T.shape[1]):
                m[c] = S[a, c]
                t[c] = T[land, c]
            # _move takes m / f: the weights are already normalised (f = 1).
            _move(t, m, 1.0, fraction, max_step, sums[q, land, 2], space)
            for c in range(T.shape[1]):
                T[land, c] = t[c]


def block_work(B, batch_size, d, k_max, dtype):
    """Work arrays of :func:`block_visit_steps` for blocks of B, batches up to
    ``batch_size`` rows, d features, at most ``k_max`` earlier landmarks."""
    flat = B * batch_size
    return (np.empty((B, d), dtype=dtype), np.empty(B), np.empty(flat), np.empty(flat),
            np.empty(B), np.empty(B), np.empty((B, max(k_max, 1))), np.empty(flat),
            np.empty((B, B)), np.zeros((B, B)), np.empty(B), np.zeros(B, dtype=np.int64),
            np.empty(flat), np.empty((B, d)))


@functools.cache
def compiled_block_visit(dtype):
    """:func:`block_visit_steps` compiled on first use (one version per data
    precision, ``dtype``, is compiled when first called with it)."""
    return numba.njit(cache=True, nogil=True)(block_visit_steps)


__all__ = ["block_visit_steps", "block_work", "compiled_block_visit", "kernel_columns_together",
           "cross_gram", "SPACE_CODES"]
