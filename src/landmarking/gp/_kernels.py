"""Compiled (numba) steps of GP landmarking.

:func:`visit_steps` runs all the steps a landmark takes on one visit to a chunk in
one compiled call: for each step the batch's sums (:func:`_step_sums`), then the
move of the landmark and its projection (:func:`_move`), with no Python between
steps. :func:`batch_step` is one step's sums alone, for callers that step one batch
at a time (the refinement, and fits whose batch factors are not kept).

One step's sums read the batch's rows in place from the chunk (no gathered copy),
compute the kernel values, project them out of the span of the existing
landmarks' columns with the batch's Cholesky factor, and accumulate the weighted
sum of the batch. The batch is read twice: once for the distances, once for the
weighted sum, which needs the weights, which need the solve, which needs every
kernel value; the second read finds the batch in cache. A long visit reads a copy
of the chunk in its permutation's order, where a batch is consecutive rows, read
one at a time as one stream; otherwise the rows of X are scattered over the
chunk and read eight at a time (eight independent streams keep more cache misses
in flight). The batch's rows of Phi are
consecutive rows of the kernel table (the table is kept in the order of the
chunk's permutation, so a batch is a slice of it), read as one stream.

Arithmetic: the data's precision where the data is read (float32 stays float32, so
both passes run at full SIMD width: twice as fast as converting every value to
float64), float64 everywhere else: the distances are formed from the dot products
in float64 (the cancellation in ||x||^2 - 2 x.t + ||t||^2), the kernel values, the
solve and the weights are float64, and the weighted sum is accumulated in the
data's precision over blocks of 64 rows whose sums go into a float64 total.
``fastmath`` is limited to reassociation and contraction in the sums (what lets
LLVM vectorise the reductions); no assumption about NaN or infinity is made, and
the move of the landmark is compiled without it. The landmarks agree with the
NumPy step to 1e-4 relative for float32 data (tests/test_gp.py).

Imported lazily by :mod:`landmarking.gp._numpy` (``import landmarking``
does not load numba). :func:`batch_step` and :func:`visit_steps` are plain Python
here; :func:`compiled_batch_step` and :func:`compiled_visit_steps` compile them
for one data precision on first use (explicit signatures, cached on disk), so a
fit of float64 data compiles no float32 version, and a fit that never takes one
step at a time (the default) compiles no :func:`batch_step`.
"""

import functools

import numba
import numpy as np

_FASTMATH = {"reassoc", "contract"}
#: Rows summed in the data's precision before the sum is added to a float64 total.
_FLUSH = 64
#: Codes of the feasible spaces in :func:`visit_steps`.
SPACE_CODES = {"euclidean": 0, "nonnegative": 1, "sphere": 2}


def _read(dtype, ndim, layout="C"):
    # Inputs are typed read-only so that read-only arrays (a memory map opened with
    # mode="r") and writable ones both match one compiled version.
    return numba.types.Array(dtype, ndim, layout, readonly=True)


def _step_signature(data):
    # (Xc, xsq, rows, Phi, prows, k, L, t_cast, t_sq, eta, phi_work, m_out)
    #     -> (f, phi_sq, nearest)
    return numba.types.UniTuple(numba.float64, 3)(
        _read(data, 2), _read(data, 1), _read(numba.int64, 1), _read(data, 2, "A"),
        _read(numba.int64, 1), numba.int64, _read(numba.float64, 2, "A"), _read(data, 1),
        numba.float64, numba.float64, numba.float64[::1], numba.float64[::1])


def _visit_signature(data):
    # (Xc, xsq, perm, positions, bounds, batches, Phi, k, Ls, t, eta, first, s0, tau,
    #  max_step, space, in_order, phi_work, m_work, sums) -> None
    # Phi and Ls are C-ordered here: a known unit stride lets LLVM vectorise the
    # loops over their rows (with "A" layout it does not, and the step grew with k).
    return numba.types.none(
        _read(data, 2), _read(data, 1), _read(numba.int64, 1), _read(numba.int64, 1),
        _read(numba.int64, 1), _read(numba.int64, 1), _read(data, 2), numba.int64,
        _read(numba.float64, 3), numba.float64[::1], numba.float64, numba.int64,
        numba.float64, numba.float64, numba.float64, numba.int64, numba.boolean,
        numba.float64[::1], numba.float64[::1], numba.float64[:, ::1])


@numba.njit(cache=True, fastmath=_FASTMATH, nogil=True)
def _dots(Xc, rows, t_cast, out):
    """out[i] = x_{rows[i]} . t in the data's precision, eight rows at a time."""
    b = rows.shape[0]
    d = Xc.shape[1]
    zero = Xc.dtype.type(0)
    i = 0
    while i + 8 <= b:
        r0, r1, r2, r3 = rows[i], rows[i + 1], rows[i + 2], rows[i + 3]
        r4, r5, r6, r7 = rows[i + 4], rows[i + 5], rows[i + 6], rows[i + 7]
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = zero
        for j in range(d):
            tj = t_cast[j]
            a0 += Xc[r0, j] * tj
            a1 += Xc[r1, j] * tj
            a2 += Xc[r2, j] * tj
            a3 += Xc[r3, j] * tj
            a4 += Xc[r4, j] * tj
            a5 += Xc[r5, j] * tj
            a6 += Xc[r6, j] * tj
            a7 += Xc[r7, j] * tj
        out[i], out[i + 1], out[i + 2], out[i + 3] = a0, a1, a2, a3
        out[i + 4], out[i + 5], out[i + 6], out[i + 7] = a4, a5, a6, a7
        i += 8
    while i < b:
        r = rows[i]
        acc = zero
        for j in range(d):
            acc += Xc[r, j] * t_cast[j]
        out[i] = acc
        i += 1


@numba.njit(cache=True, fastmath=_FASTMATH, nogil=True)
def _dots_in_order(Xc, lo, hi, t_cast, out):
    """out[i - lo] = x_i . t for the consecutive rows lo <= i < hi, one at a time:
    one stream from memory, which the hardware prefetches best (in an unlocked
    microbenchmark on MNIST, 2.1x faster than eight scattered rows at a time and
    1.9x faster than eight consecutive ones)."""
    d = Xc.shape[1]
    zero = Xc.dtype.type(0)
    for i in range(lo, hi):
        acc = zero
        for j in range(d):
            acc += Xc[i, j] * t_cast[j]
        out[i - lo] = acc


@numba.njit(cache=True, fastmath=_FASTMATH, nogil=True)
def _weighted_sum(Xc, rows, w, m_out):
    """m_out = sum_i w_i x_{rows[i]}: eight rows at a time in the data's precision,
    over blocks of _FLUSH rows whose sums go into a float64 total (full SIMD
    width, and round-off that does not grow with the batch size)."""
    b = rows.shape[0]
    d = Xc.shape[1]
    cast = Xc.dtype.type
    zero = cast(0)
    m_out[:] = 0.0
    part = np.zeros(d, dtype=Xc.dtype)
    i = 0
    while i < b:
        if i + 8 <= b:
            r0, r1, r2, r3 = rows[i], rows[i + 1], rows[i + 2], rows[i + 3]
            r4, r5, r6, r7 = rows[i + 4], rows[i + 5], rows[i + 6], rows[i + 7]
            w0, w1, w2, w3 = cast(w[i]), cast(w[i + 1]), cast(w[i + 2]), cast(w[i + 3])
            w4, w5, w6, w7 = cast(w[i + 4]), cast(w[i + 5]), cast(w[i + 6]), cast(w[i + 7])
            for j in range(d):
                part[j] += (((w0 * Xc[r0, j] + w1 * Xc[r1, j])
                             + (w2 * Xc[r2, j] + w3 * Xc[r3, j]))
                            + ((w4 * Xc[r4, j] + w5 * Xc[r5, j])
                               + (w6 * Xc[r6, j] + w7 * Xc[r7, j])))
            i += 8
        else:
            wi = cast(w[i])
            r = rows[i]
            for j in range(d):
                part[j] += wi * Xc[r, j]
            i += 1
        if i % _FLUSH == 0 or i == b:
            for j in range(d):
                m_out[j] += part[j]
                part[j] = zero


@numba.njit(cache=True, fastmath=_FASTMATH, nogil=True)
def _step_sums(Xc, xsq, rows, Phi, prows, k, L, t_cast, t_sq, eta, phi, m_out,
               in_order=False):
    """One step's sums on the batch ``Xc[rows]``, whose kernel values of the
    finished landmarks are ``Phi[prows, :k]``; see :func:`batch_step`. With
    ``in_order``, ``rows`` are consecutive."""
    b = rows.shape[0]
    if in_order:
        _dots_in_order(Xc, rows[0], rows[0] + b, t_cast, phi)
    else:
        _dots(Xc, rows, t_cast, phi)
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
    # Phi_B^T phi, four rows of Phi at a time (one update of cross per four rows);
    # a batch's rows of Phi are usually one slice of the table, read as one stream.
    cross = np.zeros(k)
    i = 0
    while i < b:
        if i + 4 <= b:
            q0, q1, q2, q3 = prows[i], prows[i + 1], prows[i + 2], prows[i + 3]
            p0, p1, p2, p3 = phi[i], phi[i + 1], phi[i + 2], phi[i + 3]
            for j in range(k):
                cross[j] += ((Phi[q0, j] * p0 + Phi[q1, j] * p1)
                             + (Phi[q2, j] * p2 + Phi[q3, j] * p3))
            i += 4
        else:
            r = prows[i]
            p = phi[i]
            for j in range(k):
                cross[j] += Phi[r, j] * p
            i += 1
    # (L L^T) coef = cross: forward substitution, then back substitution by rows of
    # L (row a of L is column a of L^T), so that both read L row by row: a factor
    # not in cache streams in instead of costing one miss per element.
    coef = cross
    for a in range(k):
        s = coef[a]
        for c in range(a):
            s -= L[a, c] * coef[c]
        coef[a] = s / L[a, a]
    for a in range(k - 1, -1, -1):
        coef[a] /= L[a, a]
        x = coef[a]
        for c in range(a):
            coef[c] -= L[a, c] * x
    # u = M phi and the weights phi_i u_i, written over phi.
    f = 0.0
    for i in range(b):
        r = prows[i]
        u = phi[i]
        for j in range(k):
            u -= Phi[r, j] * coef[j]
        phi[i] *= u
        f += phi[i]
    _weighted_sum(Xc, rows, phi, m_out)
    return f, phi_sq, nearest


def batch_step(Xc, xsq, rows, Phi, prows, k, L, t_cast, t_sq, eta, phi, m_out):
    """One step's sums on the batch ``Xc[rows]``.

    Parameters
    ----------
    Xc : (n_c, d) float32 or float64, C-ordered: the chunk in memory.
    xsq : (n_c,) squared row norms of Xc.
    rows : (b,) int64, the batch's rows within the chunk.
    Phi : (n_Phi, >= k) kernel values of the finished landmarks.
    prows : (b,) int64, the batch's rows of Phi (``rows`` when Phi is in the chunk's
        order; a slice of positions when it is in the permutation's).
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
    return _step_sums(Xc, xsq, rows, Phi, prows, k, L, t_cast, t_sq, eta, phi, m_out)


@numba.njit(cache=True, nogil=True)
def _move(t, m, f, fraction, max_step, nearest, space):
    """t <- Proj_S(t + a (m / f - t)), the move limited to ``max_step`` plus the
    distance to the batch: the compiled twin of :func:`.objective.moved_landmark`
    (with ``spaces.project``), which ``tests/test_gp.py`` pins it to
    it; m is overwritten; no fastmath."""
    d = t.shape[0]
    length_sq = 0.0
    for j in range(d):
        step = fraction * (m[j] / f - t[j])
        m[j] = step
        length_sq += step * step
    length = np.sqrt(length_sq)
    limit = max_step + np.sqrt(nearest)
    if length > limit:
        shrink = limit / length
        for j in range(d):
            m[j] *= shrink
    for j in range(d):
        t[j] = t[j] + m[j]
    if space == 0:
        return
    largest = 0
    norm_sq = 0.0
    for j in range(d):
        if t[j] > t[largest]:
            largest = j
    for j in range(d):
        if t[j] < 0.0:
            t[j] = 0.0
        norm_sq += t[j] * t[j]
    if space == 1:
        return
    if norm_sq == 0.0:
        # Every entry <= 0: the nearest point of the sphere-orthant is the axis of
        # the largest entry.
        t[largest] = 1.0
        return
    norm = np.sqrt(norm_sq)
    for j in range(d):
        t[j] = t[j] / norm


def visit_steps(Xc, xsq, perm, positions, bounds, batches, Phi, k, Ls, t, eta, first, s0,
                tau, max_step, space, in_order, phi, m, sums):
    """The steps of one landmark on one chunk visit, in one call.

    Parameters
    ----------
    Xc, xsq : the chunk and its squared row norms (as for :func:`batch_step`).
    perm : (n_c,) int64, the chunk's permutation; batch j is ``Xc[perm[bounds[j]:
        bounds[j + 1]]]``.
    positions : (n_c,) int64, ``arange(n_c)``: the batch's rows of Phi.
    bounds : (n_batches + 1,) int64, the batches' offsets in ``perm``.
    batches : (n_steps,) int64, the batch of each step, in order.
    Phi : (n_c, >= k) kernel values of the finished landmarks, rows in the order
        of ``perm`` (batch j is rows ``bounds[j]:bounds[j + 1]``).
    k : number of columns of Phi that span.
    Ls : (n_batches, >= k, >= k) float64, the batches' Cholesky factors.
    t : (d,) float64, the landmark; moved in place.
    eta : kernel width.
    first : the number s of the first step (its fraction is (s0 + s)^-tau).
    s0, tau : the step schedule.
    max_step : the longest move, MAX_STEP_WIDTHS sqrt(eta) (plus the distance to
        the batch).
    space : :data:`SPACE_CODES` of the feasible space.
    in_order : True when ``perm`` is ``positions`` (Xc is the chunk in the
        permutation's order, a batch's rows consecutive).
    phi, m : float64 work space, (>= b,) and (d,).
    sums : (n_steps, 3) float64; on return row q holds step q's f (relative
        kernel values), phi^T phi and the nearest squared distance.
    """
    d = Xc.shape[1]
    t_cast = np.empty(d, dtype=Xc.dtype)
    for q in range(batches.shape[0]):
        j = batches[q]
        lo, hi = bounds[j], bounds[j + 1]
        t_sq = 0.0
        for a in range(d):
            t_cast[a] = t[a]
            t_sq += t[a] * t[a]
        f, phi_sq, nearest = _step_sums(Xc, xsq, perm[lo:hi], Phi, positions[lo:hi], k,
                                        Ls[j], t_cast, t_sq, eta, phi, m, in_order)
        sums[q, 0], sums[q, 1], sums[q, 2] = f, phi_sq, nearest
        if f > 1e-10 * phi_sq:
            _move(t, m, f, (s0 + first + q) ** -tau, max_step, nearest, space)


@functools.cache
def compiled_batch_step(dtype):
    """:func:`batch_step` compiled for data of ``dtype`` (float32 or float64)."""
    signature = _step_signature(numba.from_dtype(np.dtype(dtype)))
    return numba.njit(signature, cache=True, fastmath=_FASTMATH, nogil=True)(batch_step)


@functools.cache
def compiled_visit_steps(dtype):
    """:func:`visit_steps` compiled for data of ``dtype`` (float32 or float64)."""
    signature = _visit_signature(numba.from_dtype(np.dtype(dtype)))
    return numba.njit(signature, cache=True, nogil=True)(visit_steps)
