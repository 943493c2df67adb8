"""GP landmarks in blocks: the joint objective of B new landmarks, and its step.

The paper's future work (section 6, "a joint optimization over all the
landmarks"), one block at a time. Symbols as in :mod:`landmarking.landmarks.gp`,
and:

- ``T = [t_1, ..., t_B]``: the block of B landmarks optimised together, given the
  k landmarks before them;
- ``Phi_p`` (b x k): the earlier landmarks' kernel values on a batch of b points;
  ``Phi_B`` (b x B): the block's, ``Phi_B[i, j] = phi_{x_i}(t_j)``;
- ``M = I - Phi_p (Phi_p^T Phi_p + r I)^-1 Phi_p^T``: projection out of the
  earlier span, with the fit's ridge r (symmetric; never formed);
- ``U = M Phi_B`` (b x B), ``G = Phi_B^T U = Phi_B^T M Phi_B`` (B x B).

The joint objective
-------------------
::

    J(T) = log det G = sum_j log f_j,

where f_j, the squared pivots of the Cholesky factor of G, are the sequential
objectives: f_1 is t_1's posterior variance given the earlier landmarks, f_2 is
t_2's given those and t_1, and so on (the Schur complements of G). So J is the sum
of the block's sequential log posterior variances under the plug-in manifold
kernel, and it does not depend on the order inside the block. For B = 1,
J = log f, whose ascent direction is today's.

The gradient
------------
Only Phi_B depends on T. With M symmetric, dG = dPhi_B^T U + U^T dPhi_B, so::

    dJ = tr(G^-1 dG) = 2 tr(G^-1 U^T dPhi_B) = 2 sum_{i,j} (U G^-1)_{ij} dPhi_B[i, j].

Phi_B[i, j] depends on t_j alone, with d phi_{x_i}(t_j) / d t_j =
-(2 / eta) (t_j - x_i) phi_{x_i}(t_j). Writing ``W = Phi_B * (U G^-1)``
(elementwise, b x B)::

    grad_{t_j} J = -(4 / eta) sum_i W_ij (t_j - x_i)
                 = (4 / eta) (X^T W[:, j] - t_j sum_i W_ij).

The columns of W sum to one: sum_i W_ij = (Phi_B^T U G^-1)_jj = (G G^-1)_jj = 1.
Hence ``grad_{t_j} J = (4 / eta) (X^T W[:, j] - t_j)``, and the scale-free step of
the sequential fit carries over landmark by landmark::

    t_j <- Proj_S(t_j + a_s (X^T W[:, j] - t_j)),

the gradient step with rate ``a_s eta / 4``, limited as today to
``MAX_STEP_WIDTHS sqrt(eta)`` plus the distance to the batch's nearest point.
For B = 1, G = f and W = phi * u / f: today's step, m / f.

Relative kernel values: like the sequential step, each column of Phi_B is taken
relative to its landmark's nearest point in the batch, ``Phi_B D`` with D diagonal.
Then U -> U D, G -> D G D, U G^-1 -> U G^-1 D^-1 and W is unchanged: the step is
exact however far a landmark starts from the data, and the pivots f_j scale by
D_jj^2 (the true ones are ``f_j exp(-2 shift_j / eta)``).

A landmark whose pivot is not above ``1e-10`` of its ``phi^T phi`` (a landmark
that duplicates an earlier one or one of the block, or sees none of the batch) does
not move on that step and is left out of the block's span for it, as the
sequential step skips such a batch; the others then step on the factor of G without
it.

Greedy order
------------
The landmarks of a finished block are put in the order of the greedy choice
(:func:`greedy_order`): first the one with the largest posterior variance given
the earlier landmarks on all the data, then the largest given those and it, and so
on (pivoted Cholesky of the block's Gram matrix on all the data). So every prefix
of ``landmarks_`` is a landmark set in the sense of the sequential fit.

Implementations
---------------
:func:`block_step_numpy` is the plain NumPy reference. :func:`block_visit_steps`
(compiled per data precision by :func:`compiled_block_visit`) runs all the steps
of a block on one chunk visit in one call: the distances as one (b x d) by (d x B)
product, the kernel values, the projection out of the earlier span with the
batch's Cholesky factor, G and its factor, W, and ``X_b^T W``, then the B moves.
Its loops run on numba's threads, each split so that every number is summed in
the same order whatever the thread count (rows, landmarks, or fixed tiles of
features are what is split; no sum is ever split between threads): the landmarks
are the same bit for bit on 1 thread and on 2.
"""

import functools

import numba
import numpy as np
from numba import prange
from scipy import sparse

from ._gp_kernels import SPACE_CODES, _move

_FASTMATH = {"reassoc", "contract"}
#: Rows summed in the data's precision before the sum goes into a float64 total.
_FLUSH = 64
#: Features per tile of ``X_b^T W``: the tiles are what threads split.
_TILE = 64
#: A landmark moves on a step only when its pivot exceeds this fraction of phi^T phi.
PIVOT_TOL = 1e-10


# ---------------------------------------------------------------------------
# The objective, its gradient, and the NumPy reference step
# ---------------------------------------------------------------------------

def block_objective_and_gradient(T, X, Phi, eta, *, ridge=1e-8):
    """J(T) = log det(Phi_B^T M Phi_B) on a batch, and its gradient (B, d).

    A direct evaluation with true (not relative) kernel values, for tests and
    reports; see the module docstring for the derivation.

    Parameters
    ----------
    T : ndarray (B, d), the block's landmarks
    X : ndarray (b, d), the batch
    Phi : ndarray (b, k), the earlier landmarks' kernel values on the batch
    eta : float, kernel width
    ridge : float, relative to b, as the fit's factor

    Returns
    -------
    J : float
    grad : ndarray (B, d)
    """
    T = np.atleast_2d(np.asarray(T, dtype=np.float64))
    X = np.asarray(X, dtype=np.float64)
    d2 = ((X[:, None, :] - T[None, :, :]) ** 2).sum(axis=-1)
    Phi_B = np.exp(-d2 / eta)
    U = _project_out(Phi_B, np.asarray(Phi, dtype=np.float64), ridge * len(X))
    G = Phi_B.T @ U
    sign, J = np.linalg.slogdet(G)
    W = Phi_B * np.linalg.solve(G, U.T).T
    grad = (4.0 / eta) * (W.T @ X - T * W.sum(axis=0)[:, None])
    return float(J) if sign > 0 else -np.inf, grad


def _project_out(Phi_B, Phi_p, ridge):
    """M Phi_B: the columns of Phi_B less their ridge projection on Phi_p."""
    if Phi_p.shape[1] == 0:
        return Phi_B.copy()
    gram = Phi_p.T @ Phi_p + ridge * np.eye(Phi_p.shape[1])
    return Phi_B - Phi_p @ np.linalg.solve(gram, Phi_p.T @ Phi_B)


def _block_kernel(XB, xsq_B, T, eta):
    """Phi_B (b, B) relative to each landmark's nearest point, and the shifts (B,)."""
    dots = np.asarray(XB @ T.T.astype(XB.dtype), dtype=np.float64)
    d2 = np.asarray(xsq_B, dtype=np.float64)[:, None] - 2.0 * dots + (T * T).sum(axis=1)
    np.maximum(d2, 0, out=d2)
    shift = d2.min(axis=0)
    return np.exp((d2 - shift) * (-1.0 / eta)), shift


def pivots_with_drops(G, phi_sq, tol=PIVOT_TOL):
    """Cholesky of G in index order, leaving out columns whose pivot is too small.

    Returns (f, active, L): the pivot f_j of every column given the active columns
    before it (NaN-free; a dropped column keeps its pivot), the boolean mask of the
    columns kept, and the factor L (n_active x n_active) of G restricted to them.
    """
    B = len(G)
    f = np.zeros(B)
    active = np.zeros(B, dtype=bool)
    L = np.zeros((B, B))
    n = 0
    rows = []
    for j in range(B):
        cross = G[rows, j]
        y = _forward(L[:n, :n], cross)
        f[j] = G[j, j] - y @ y
        if f[j] > tol * phi_sq[j]:
            L[n, :n] = y
            L[n, n] = np.sqrt(f[j])
            rows.append(j)
            active[j] = True
            n += 1
    return f, active, L[:n, :n]


def _forward(L, rhs):
    out = np.array(rhs, dtype=np.float64)
    for a in range(len(out)):
        out[a] = (out[a] - L[a, :a] @ out[:a]) / L[a, a]
    return out


def block_step_numpy(XB, xsq_B, Phi_p, L_p, T, eta):
    """One block step's sums with NumPy operations: the reference.

    Parameters
    ----------
    XB : (b, d) the batch; ``xsq_B`` its squared row norms.
    Phi_p : (b, k) the earlier landmarks' kernel values on the batch.
    L_p : (k, k) lower Cholesky factor of ``Phi_p^T Phi_p + ridge I`` (the batch's).
    T : (B, d) float64, the block.
    eta : kernel width.

    Returns
    -------
    S : (B, d) float64, ``X_b^T W`` (row j is landmark j's target)
    f : (B,) pivots of G (relative kernel values)
    phi_sq : (B,) phi_j^T phi_j (relative)
    nearest : (B,) squared distance from each landmark to the batch
    active : (B,) bool, the landmarks that move
    """
    Phi_B, nearest = _block_kernel(XB, xsq_B, T, eta)
    if Phi_p.shape[1]:
        Phi_p = np.asarray(Phi_p, dtype=np.float64)
        y = np.linalg.solve(L_p, Phi_p.T @ Phi_B)
        U = Phi_B - Phi_p @ np.linalg.solve(L_p.T, y)
    else:
        U = Phi_B
    G = Phi_B.T @ U
    G = 0.5 * (G + G.T)
    phi_sq = (Phi_B * Phi_B).sum(axis=0)
    f, active, L = pivots_with_drops(G, phi_sq)
    S = np.zeros(T.shape)
    if active.any():
        V = np.linalg.solve(L.T, np.linalg.solve(L, U[:, active].T)).T
        W = Phi_B[:, active] * V
        # X_b^T W for a dense or a CSR batch.
        S[active] = np.asarray(XB.T @ W, dtype=np.float64).T
    return S, f, phi_sq, nearest, active


def move_block(T, S, active, fraction, max_step, nearest, space):
    """t_j <- Proj_S(t_j + a (S_j - t_j)) for the active landmarks, each move limited
    to ``max_step`` plus the distance to the batch (NumPy; T is changed in place)."""
    from ..spaces import project  # noqa: PLC0415  (plain helper; spaces imports nothing GP)

    for j in np.flatnonzero(active):
        move = fraction * (S[j] - T[j])
        length = np.linalg.norm(move)
        limit = max_step + np.sqrt(nearest[j])
        if length > limit:
            move *= limit / length
        T[j] = T[j] + move
        if space != "euclidean":
            T[j] = project(T[j], space)
    return T


def greedy_order(gram, k, ridge):
    """The order of a block's landmarks by the greedy choice on all the data.

    ``gram`` is Phi^T Phi (k + B square) over all the data, the earlier k landmarks
    first. Returns (order, f): the block's indices (0..B-1), largest posterior
    variance given the earlier ones first, then given those and the first chosen,
    and so on (pivoted Cholesky on the Schur complement, ties to the lower index),
    and each one's posterior variance (sum over the data, not divided by N) in
    that order.
    """
    gram = np.asarray(gram, dtype=np.float64)
    n = len(gram)
    B = n - k
    G = gram + ridge * np.eye(n)
    if k:
        Lp = np.linalg.cholesky(G[:k, :k])
        Y = np.linalg.solve(Lp, G[:k, k:])
        S = G[k:, k:] - Y.T @ Y
    else:
        S = G[k:, k:].copy()
    remaining = list(range(B))
    order, f = [], []
    for _ in range(B):
        diag = np.array([S[j, j] for j in remaining])
        pick = remaining[int(np.argmax(diag))]
        value = S[pick, pick]
        order.append(pick)
        f.append(max(value, 0.0))
        remaining.remove(pick)
        if value > 0:
            col = S[:, pick] / np.sqrt(value)
            S = S - np.outer(col, col)
    return np.asarray(order, dtype=np.int64), np.asarray(f)


# ---------------------------------------------------------------------------
# The compiled block step
# ---------------------------------------------------------------------------

@numba.njit(cache=True, fastmath=_FASTMATH, nogil=True, parallel=True)
def _distances(Xc, xsq, rows, Tc, t_sq, D2):
    """D2[j, i] = ||x_{rows[i]} - t_j||^2 (float64 cancellation), dot products in
    the data's precision; rows split over threads (each number computed whole)."""
    b = rows.shape[0]
    B = Tc.shape[0]
    d = Xc.shape[1]
    zero = Xc.dtype.type(0)
    for i in prange(b):
        r = rows[i]
        j = 0
        # Four landmarks per read of the row.
        while j + 4 <= B:
            a0 = a1 = a2 = a3 = zero
            for c in range(d):
                x = Xc[r, c]
                a0 += x * Tc[j, c]
                a1 += x * Tc[j + 1, c]
                a2 += x * Tc[j + 2, c]
                a3 += x * Tc[j + 3, c]
            xs = np.float64(xsq[r])
            D2[j, i] = max(xs - 2.0 * a0 + t_sq[j], 0.0)
            D2[j + 1, i] = max(xs - 2.0 * a1 + t_sq[j + 1], 0.0)
            D2[j + 2, i] = max(xs - 2.0 * a2 + t_sq[j + 2], 0.0)
            D2[j + 3, i] = max(xs - 2.0 * a3 + t_sq[j + 3], 0.0)
            j += 4
        while j < B:
            acc = zero
            for c in range(d):
                acc += Xc[r, c] * Tc[j, c]
            D2[j, i] = max(np.float64(xsq[r]) - 2.0 * acc + t_sq[j], 0.0)
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
    """WT[a, i] = phi_{active[a]}[i] (U G^-1)[i, a] over the active landmarks: per
    row, two triangular solves; threads split fixed blocks of _FLUSH rows (one work
    vector per block, not per row)."""
    b = PhiB.shape[1]
    n_blocks = (b + _FLUSH - 1) // _FLUSH
    for block in prange(n_blocks):
        z = np.empty(n)
        for i in range(block * _FLUSH, min(b, (block + 1) * _FLUSH)):
            for a in range(n):
                s = UT[active[a], i]
                for c in range(a):
                    s -= LG[a, c] * z[c]
                z[a] = s / LG[a, a]
            for a in range(n - 1, -1, -1):
                z[a] /= LG[a, a]
                x = z[a]
                for c in range(a):
                    z[c] -= LG[a, c] * x
            for a in range(n):
                WT[a, i] = PhiB[active[a], i] * z[a]


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
    for j in range(B):
        s = 0.0
        for c in range(d):
            Tc[j, c] = T[j, c]
            s += T[j, c] * T[j, c]
        t_sq[j] = s
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


def block_visit_steps(Xc, xsq, perm, positions, bounds, batches, Phi, k, Ls, T, eta, first,
                      s0, tau, max_step, space, work, sums):
    """The steps of one block on one chunk visit, in one call.

    As :func:`._gp_kernels.visit_steps` with a block: ``T`` (B, d) float64, moved
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
    """:func:`block_visit_steps` compiled for data of ``dtype`` on first use."""
    return numba.njit(cache=True, nogil=True)(block_visit_steps)


# ---------------------------------------------------------------------------
# A block's steps over the batches of a fit
# ---------------------------------------------------------------------------

class BlockStep:
    """The steps of a block on a chunk visit in one compiled call
    (:func:`block_visit_steps`) for dense chunks whose batch factors are kept;
    :meth:`steps` returns None where that does not apply (CSR chunks, factors not
    kept) and the caller steps one batch at a time (:func:`block_steps_one_at_a_time`).
    """

    def __init__(self):
        self.work, self.key = None, None

    def _work(self, B, b, d, k, dtype):
        key = (B, d, np.dtype(dtype))
        if self.key != key or self.work[2].size < B * b or self.work[6].shape[1] < k:
            self.work = block_work(B, b, d, k, dtype)
            self.key = key
        return self.work

    def steps(self, span, c, batches, chunk, T, eta, first, *, s0, tau, max_step, space,
              visit_length):
        """As ``_CompiledStep.steps`` for a block T (B, d), moved in place; returns
        (n_steps, B, 3) or None."""
        Xc, xsq_c, Phi_c = chunk
        if sparse.issparse(Xc):
            return None
        Ls = span.batch_factors(c, batches, Phi_c)
        if Ls is None:
            return None
        chunks = span.chunks
        k = Phi_c.shape[1]
        positions = chunks.positions(c)
        ordered = chunks.in_order(c, Xc, xsq_c, visit_length)
        perm = chunks.permutations[c] if ordered is None else positions
        if ordered is not None:
            Xc, xsq_c = ordered
        table = Phi_c if Phi_c.flags.c_contiguous else chunks.table(c)
        work = self._work(T.shape[0], int(np.diff(chunks.batch_bounds[c]).max()), Xc.shape[1],
                          k, Xc.dtype)
        sums = np.empty((len(batches), T.shape[0], 3))
        compiled_block_visit(Xc.dtype)(
            Xc, xsq_c, perm, positions, chunks.batch_bounds[c],
            np.asarray(batches, dtype=np.int64), table, k, Ls, T, float(eta), int(first),
            float(s0), float(tau), float(max_step), SPACE_CODES[space], work, sums)
        return sums


def block_steps_one_at_a_time(T, span, c, batches, chunk, eta, first, *, s0, tau, space,
                              max_step):
    """The block's steps on ``batches`` of chunk c with :func:`block_step_numpy`
    (T moved in place); returns (n_steps, B, 3) as :meth:`BlockStep.steps`."""
    Xc, xsq_c, Phi_c = chunk
    sums = np.empty((len(batches), T.shape[0], 3))
    for q, j in enumerate(batches):
        rows = span.chunks.batch_rows(c, j)
        positions = span.chunks.batch_positions(c, j)
        factor = span.factor(c, j, Phi_c, positions)
        k = factor.size
        S, f, phi_sq, nearest, active = block_step_numpy(
            Xc[rows], xsq_c[rows], Phi_c[positions, :k], factor.L[:k, :k], T, eta)
        move_block(T, S, active, (s0 + first + q) ** -tau, max_step, nearest, space)
        sums[q, :, 0], sums[q, :, 1], sums[q, :, 2] = f, phi_sq, nearest
    return sums


def optimise_block(T, span, eta, order, *, s0, tau, space, step, max_step, rule=None,
                   window=50, step_bar=None):
    """The projected steps of a block of landmarks T (B, d) given the span before
    them; returns (T, steps run).

    As the sequential ``_optimise_landmark``: ``order`` lists (chunk, batch) per
    step, a visit's steps run in one compiled call (``step``, a :class:`BlockStep`,
    or None for the NumPy steps); ``rule`` (a ``_Convergence``) stops the block when
    the sum of its landmarks' batch objectives has stopped rising.
    """
    from itertools import groupby  # noqa: PLC0415  (stdlib; keeps the module header short)

    T = np.array(T, dtype=np.float64)
    fused = None if step is None else step.steps
    s = 0
    for c, visit in groupby(order, key=lambda pair: pair[0]):
        chunk = span.visit(c)
        batches = [j for _, j in visit]
        visit_length = len(batches)
        while batches:
            n = len(batches) if rule is None else min(len(batches), window - s % window)
            now, batches = batches[:n], batches[n:]
            sums = None if fused is None else fused(
                span, c, now, chunk, T, eta, 1 + s, s0=s0, tau=tau, max_step=max_step,
                space=space, visit_length=visit_length)
            if sums is None:
                sums = block_steps_one_at_a_time(T, span, c, now, chunk, eta, 1 + s, s0=s0,
                                                 tau=tau, space=space, max_step=max_step)
            for block_sums, j in zip(sums, now, strict=True):
                s += 1
                if step_bar is not None and s % 100 == 0:
                    step_bar.update(100)
                if rule is not None:
                    b = len(span.chunks.batch_rows(c, j))
                    value = float(np.sum(np.maximum(block_sums[:, 0], 0.0)
                                         * np.exp(-2.0 * block_sums[:, 2] / eta)))
                    if rule.converged(s, value, 0.0, eta, b):
                        return T, s
    return T, s


__all__ = ["block_objective_and_gradient", "block_step_numpy", "move_block",
           "pivots_with_drops", "greedy_order", "block_visit_steps", "block_work",
           "compiled_block_visit", "BlockStep", "block_steps_one_at_a_time",
           "optimise_block", "SPACE_CODES", "PIVOT_TOL"]
