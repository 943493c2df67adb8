"""Compiled (numba) step of GP landmarking: one call per minibatch step.

:func:`batch_step` does in one compiled call what the NumPy step of
:mod:`landmarking.landmarks.gp` does with a dozen array operations and their
temporaries: it reads the batch's rows in place from the chunk (no gathered copy),
computes the kernel values, projects them out of the span of the existing
landmarks' columns with the batch's Cholesky factor, and accumulates the weighted
sum of the batch. The batch is read twice: once for the distances, once for the
weighted sum, which needs the weights, which need the solve, which needs every
kernel value; the second read finds the batch in cache.

Arithmetic: the data's precision where the data is read (float32 stays float32, so
both passes run at full SIMD width: twice as fast as converting every value to
float64), float64 everywhere else: the distances are formed from the dot products
in float64 (the cancellation in ||x||^2 - 2 x.t + ||t||^2), the kernel values, the
solve and the weights are float64, and the weighted sum is accumulated in the
data's precision over blocks of 64 rows whose sums go into a float64 total.
``fastmath`` is limited to reassociation and contraction (what lets LLVM vectorise
the reductions); no assumption about NaN or infinity is made. The landmarks agree
with the NumPy step to 1e-4 relative for float32 data (tests/test_gp.py).

Imported lazily by :mod:`landmarking.landmarks.gp` (``import landmarking`` does not
load numba); the explicit signatures compile both precisions once and cache them.
"""

import numba
import numpy as np

_FASTMATH = {"reassoc", "contract"}
#: Rows summed in the data's precision before the sum is added to a float64 total.
_FLUSH = 64


def _signature(data):
    # (Xc, xsq, rows, Phi, k, L, t_cast, t_sq, eta, phi_work, m_out) -> (f, phi_sq, nearest)
    # The inputs are typed read-only so that read-only arrays (a memory map opened
    # with mode="r") and writable ones both match one compiled version.
    def read(ndim, layout, dtype=data):
        return numba.types.Array(dtype, ndim, layout, readonly=True)

    return numba.types.UniTuple(numba.float64, 3)(
        read(2, "C"), read(1, "C"), read(1, "C", numba.int64), read(2, "A"), numba.int64,
        read(2, "A", numba.float64), read(1, "C"), numba.float64, numba.float64,
        numba.float64[::1], numba.float64[::1])


@numba.njit([_signature(numba.float32), _signature(numba.float64)], cache=True,
            fastmath=_FASTMATH, nogil=True)
def batch_step(Xc, xsq, rows, Phi, k, L, t_cast, t_sq, eta, phi, m_out):
    """One step's sums on the batch ``Xc[rows]``.

    Parameters
    ----------
    Xc : (n_c, d) float32 or float64, C-ordered: the chunk in memory.
    xsq : (n_c,) squared row norms of Xc.
    rows : (b,) int64, the batch's rows within the chunk.
    Phi : (n_c, >= k) kernel values of the finished landmarks on the chunk.
    k : number of columns of Phi (and of L) that span.
    L : (>= k, >= k) float64, lower Cholesky factor of the batch's
        ``Phi_B^T Phi_B + ridge I`` (first k rows and columns used).
    t_cast : (d,) t in Xc's dtype; ``t_sq`` = ||t||^2 in float64.
    eta : kernel width.
    phi : (>= b,) float64 work space (on return phi[:b] holds the weights
        phi_i u_i).
    m_out : (d,) float64; on return sum_i phi_i u_i x_i (u = M phi).

    Returns
    -------
    f : phi^T M phi (relative kernel values)
    phi_sq : phi^T phi
    nearest : the smallest squared distance from t to the batch (the shift)
    """
    b = rows.shape[0]
    d = Xc.shape[1]
    zero = Xc.dtype.type(0)
    # Four rows at a time: four independent streams from memory keep more cache
    # misses in flight than one (the rows are scattered over the chunk); measured
    # 1.6-2.3x faster than one row at a time on MNIST.
    i = 0
    while i < b:
        if i + 4 <= b:
            r0, r1, r2, r3 = rows[i], rows[i + 1], rows[i + 2], rows[i + 3]
            a0 = a1 = a2 = a3 = zero
            for j in range(d):
                tj = t_cast[j]
                a0 += Xc[r0, j] * tj
                a1 += Xc[r1, j] * tj
                a2 += Xc[r2, j] * tj
                a3 += Xc[r3, j] * tj
            phi[i], phi[i + 1], phi[i + 2], phi[i + 3] = a0, a1, a2, a3
            i += 4
        else:
            r = rows[i]
            acc = zero
            for j in range(d):
                acc += Xc[r, j] * t_cast[j]
            phi[i] = acc
            i += 1
    nearest = np.inf
    for i in range(b):
        # The cancellation in ||x||^2 - 2 x.t + ||t||^2 is done in float64.
        d2 = np.float64(xsq[rows[i]]) - 2.0 * phi[i] + t_sq
        if d2 < 0.0:
            d2 = 0.0
        phi[i] = d2
        if d2 < nearest:
            nearest = d2
    scale = -1.0 / eta
    phi_sq = 0.0
    for i in range(b):
        p = np.exp((phi[i] - nearest) * scale)
        phi[i] = p
        phi_sq += p * p
    # Phi's rows are scattered too: four at a time here and below, as for X.
    cross = np.zeros(k)
    i = 0
    while i < b:
        if i + 4 <= b:
            r0, r1, r2, r3 = rows[i], rows[i + 1], rows[i + 2], rows[i + 3]
            p0, p1, p2, p3 = phi[i], phi[i + 1], phi[i + 2], phi[i + 3]
            for j in range(k):
                cross[j] += (Phi[r0, j] * p0 + Phi[r1, j] * p1) + (Phi[r2, j] * p2
                                                                   + Phi[r3, j] * p3)
            i += 4
        else:
            r = rows[i]
            for j in range(k):
                cross[j] += Phi[r, j] * phi[i]
            i += 1
    # (L L^T) coef = cross: forward then back substitution.
    coef = np.empty(k)
    for a in range(k):
        s = cross[a]
        for c in range(a):
            s -= L[a, c] * coef[c]
        coef[a] = s / L[a, a]
    for a in range(k - 1, -1, -1):
        s = coef[a]
        for c in range(a + 1, k):
            s -= L[c, a] * coef[c]
        coef[a] = s / L[a, a]
    # u = M phi and the weights phi_i u_i, written over phi.
    f = 0.0
    i = 0
    while i < b:
        if i + 4 <= b:
            r0, r1, r2, r3 = rows[i], rows[i + 1], rows[i + 2], rows[i + 3]
            u0, u1, u2, u3 = phi[i], phi[i + 1], phi[i + 2], phi[i + 3]
            for j in range(k):
                c = coef[j]
                u0 -= Phi[r0, j] * c
                u1 -= Phi[r1, j] * c
                u2 -= Phi[r2, j] * c
                u3 -= Phi[r3, j] * c
            phi[i] *= u0
            phi[i + 1] *= u1
            phi[i + 2] *= u2
            phi[i + 3] *= u3
            f += (phi[i] + phi[i + 1]) + (phi[i + 2] + phi[i + 3])
            i += 4
        else:
            u = phi[i]
            for j in range(k):
                u -= Phi[rows[i], j] * coef[j]
            phi[i] *= u
            f += phi[i]
            i += 1
    # The weighted sum runs in the data's precision, four rows at a time, over
    # blocks of _FLUSH rows whose sums go into a float64 total: full SIMD width,
    # and round-off that does not grow with the batch size.
    m_out[:] = 0.0
    part = np.zeros(d, dtype=Xc.dtype)
    i = 0
    while i < b:
        if i + 4 <= b:
            r0, r1, r2, r3 = rows[i], rows[i + 1], rows[i + 2], rows[i + 3]
            w0 = Xc.dtype.type(phi[i])
            w1 = Xc.dtype.type(phi[i + 1])
            w2 = Xc.dtype.type(phi[i + 2])
            w3 = Xc.dtype.type(phi[i + 3])
            for j in range(d):
                part[j] += (w0 * Xc[r0, j] + w1 * Xc[r1, j]) + (w2 * Xc[r2, j] + w3 * Xc[r3, j])
            i += 4
        else:
            w = Xc.dtype.type(phi[i])
            r = rows[i]
            for j in range(d):
                part[j] += w * Xc[r, j]
            i += 1
        if i % _FLUSH == 0 or i == b:
            for j in range(d):
                m_out[j] += part[j]
                part[j] = zero
    return f, phi_sq, nearest
