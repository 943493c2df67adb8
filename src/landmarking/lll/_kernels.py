"""Compiled kernels of Locally Linear Landmarks (see :mod:`~landmarking.lll.lll`).

- :func:`nearest_gram_weights`: for a chunk of points, the K_Z nearest landmarks
  and the affine reconstruction weights from them (local Gram matrix, ridge,
  Cholesky), blocked so that the factorisation vectorises;
- :func:`ranked_candidate_weights`: the same from a float32 ranking of the
  landmarks, the few candidates redone in float64 and the choice proved;
- :func:`reduced_dense`: the dense reduced matrices B~ = Z D Z^T and (half of)
  Z W Z^T in one pass over the points.

All run in parallel over parts of the points, each part in a compiled
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

__all__ = ["BLOCK", "sift_down", "offer", "nearest_gram_weights", "ranked_candidate_weights",
           "reduced_dense", "reconstruction_residuals"]

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


def _runs_of_blocks(n, n_parts):
    """(first rows, rows per run) of at most ``n_parts`` runs of whole BLOCKs
    covering n points: one run a thread."""
    n_blocks = (n + BLOCK - 1) // BLOCK
    n_parts = max(1, min(int(n_parts), n_blocks))
    per_part = (n_blocks + n_parts - 1) // n_parts * BLOCK
    return list(range(0, n, per_part)), per_part


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


@numba.njit(inline="always")
def offer(heap_v, heap_j, k, j, v):
    """Offer (v, j), the j-th of a row's values in order, to the max-heap of the k
    smallest (value, index) pairs seen: the first k fill it, then a smaller value
    replaces the top (an equal one has the larger index and stays out)."""
    if j < k:
        heap_v[j] = v
        heap_j[j] = j
        if j == k - 1:
            for pos in range(k // 2 - 1, -1, -1):
                sift_down(heap_v, heap_j, pos, k)
    elif v < heap_v[0]:
        heap_v[0] = v
        heap_j[0] = j
        sift_down(heap_v, heap_j, 0, k)


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
    starts, per_part = _runs_of_blocks(n, n_parts)

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
    cz = np.empty((P, k))
    xs = np.empty(P)
    for blk in range(n_blocks):
        start = blk * P
        m = min(P, n - start)
        for p in range(m):
            # A max-heap of the k best (distance, index) pairs so far; the
            # index breaks ties, so the result is the k smallest pairs.
            i = start + p
            for j in range(n_land):
                offer(heap_v, heap_j, k, j, -2.0 * cross[i, j] + x_sq[i] + t_sq[j])
            for end in range(k - 1, 0, -1):  # heapsort: nearest first
                heap_v[0], heap_v[end] = heap_v[end], heap_v[0]
                heap_j[0], heap_j[end] = heap_j[end], heap_j[0]
                sift_down(heap_v, heap_j, 0, end)
            for a in range(k):
                idx[i, a] = heap_j[a]
        if not solve:
            continue
        for p in range(m):
            i = start + p
            xs[p] = x_sq[i]
            for a in range(k):
                cz[p, a] = cross[i, idx[i, a]]
        _cholesky_block(cz, xs, idx[start:start + m], gram, reg, m, U, trace, bad, w,
                        weights[start:start + m], failed[start:start + m])


@numba.njit(nogil=True, cache=True)
def _cholesky_block(cz, xs, idx, gram, reg, m, U, trace, bad, w, weights, failed):
    """Affine weights of one block of ``m <= BLOCK`` points from their K_Z landmarks.

    Point p has the landmarks ``idx[p]``, the cross products ``cz[p, a]`` = y.t_a
    and ``xs[p]`` = |y|^2; its local Gram matrix G_ab = |y|^2 - y.t_a - y.t_b +
    t_a.t_b (rounded as in ``lll._local_gram``) gets the ridge of
    :func:`landmarking.local_weights.local_affine_weights` and a Cholesky
    factorisation, the block index last so that every step is a loop over the
    block's points, which vectorises. Sets
    ``weights[p]`` and clears ``failed[p]`` for the points whose G + r I was
    numerically positive definite and gave usable weights. U, trace, bad and w
    are the caller's work arrays (one allocation per part, not per block).
    """
    k = idx.shape[1]
    P = U.shape[2]
    # Upper triangle only: the factor is U with G + r I = U^T U.
    trace[:] = 0.0
    for a in range(k):
        for p in range(m):
            ia = idx[p, a]
            ca = xs[p] - cz[p, a]
            for b in range(a, k):
                ib = idx[p, b]
                U[a, b, p] = ca - cz[p, b] + gram[ia, ib]
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
        failed[p] = False
        for a in range(k):
            weights[p, a] = w[a, p] / total


def ranked_candidate_weights(X, X32, landmarks32, cross32, landmarks, t_sq, t_norm, gram,
                             reg, solve, n_cand, bound, idx, weights, cz, x_sq, status,
                             n_parts):
    """Nearest landmarks ranked in float32, chosen and weighted in float64, compiled.

    ``cross32`` receives the float32 products fl(x32 . t32) of X32 (the chunk's
    points X, float32 or float64, in float32) and ``landmarks32``; ``bound`` =
    (coef, slack, floor,
    limit) bounds its error (see ``lll._float32_rank_bound``): for landmark j,
    |d32_j - |y - t_j|^2| <= err_j = coef |y| |t_j| + slack (|y|^2 + |t_j|^2 +
    2 |y| |t_j|) + floor (1 + |y| + |t_j|), where d32_j = |y|^2 + |t_j|^2 -
    2 cross32_j in float64, as long as |y| and |y| max_j |t_j| are below
    ``limit`` (no float32 overflow); other points get status 1. ``landmarks``
    may be float32 when that holds them exactly.

    For point i: the ``n_cand`` smallest (d32_j, j) pairs are the candidates;
    their cross products y.t_a are recomputed in float64 from X and
    ``landmarks`` (``cz``; |y|^2 to ``x_sq``) and their squared distances
    |y|^2 - 2 y.t_a + |t_a|^2 (rounded as in :func:`nearest_gram_weights`) rank
    them, ties to the lower index; the ``k = idx.shape[1]`` nearest go to
    ``idx[i]``, nearest first. The choice is proved to be the float64 one when
    the k-th of those distances lies below d32_j - err_j - 3 e64 for every
    landmark j left out, e64 = slack (|y|^2 + T^2 + 2 |y| T) (T = max |t|)
    bounding the float64 rounding of one distance (the candidates', or the
    float64 path's BLAS ones): a landmark left out is then farther in any
    float64 evaluation. Among the candidates the ranking is this loop's
    float64 one, which may order two distances equal to rounding (1e-13
    relative, not exact ties) otherwise than BLAS's products would.
    ``status[i]`` is then 0 (weights set, as in :func:`nearest_gram_weights`
    with ``solve``) or 2 (no weights: no ``solve``, or G + r I not numerically
    positive definite; ``idx[i]``, ``cz[i]`` and ``x_sq[i]`` are set for the
    caller's solver); 1 when unproved (the caller redoes the point in float64).

    The points are cut into ``n_parts`` runs of whole blocks, one thread each,
    which makes its own product (the caller limits BLAS to one thread) and
    then runs the compiled loop: a BLAS product on BLAS's threads left them
    spinning on the cores for a while after it, and the compiled loop that
    followed took 0.032 s where it takes 0.019 s on idle cores (8,192 MNIST
    rows, 2 cores). Every point's result depends on that point only.
    """
    n = cross32.shape[0]
    starts, per_part = _runs_of_blocks(n, n_parts)

    def run(start):
        rows = slice(start, min(n, start + per_part))
        np.matmul(X32[rows], landmarks32.T, out=cross32[rows])
        _ranked_part(X[rows], cross32[rows], landmarks, t_sq, t_norm, gram, reg, solve,
                     n_cand, bound[0], bound[1], bound[2], bound[3], idx[rows],
                     weights[rows], cz[rows], x_sq[rows], status[rows])

    _run_parts(run, starts, n_parts)


@numba.njit(nogil=True, cache=True)
def _ranked_part(X, cross32, landmarks, t_sq, t_norm, gram, reg, solve, n_cand, coef,
                 slack, floor, limit, idx, weights, cz, x_sq, status):
    """:func:`ranked_candidate_weights` on one run of points, sequentially."""
    n, n_land = cross32.shape
    k = idx.shape[1]
    c = n_cand
    P = BLOCK
    n_blocks = (n + P - 1) // P
    heap_v = np.empty(c)
    heap_j = np.empty(c, dtype=np.int64)
    vrow = np.empty(n_land)  # the row's d32, for the rare second pass
    acc = np.empty(c)
    cand_v = np.empty(c)
    cand_j = np.empty(c, dtype=np.int64)
    cand_c = np.empty(c)
    U = np.empty((k, k, P))
    trace = np.empty(P)
    bad = np.empty(P, dtype=np.bool_)
    w = np.empty((k, P))
    czb = np.empty((P, k))
    xsb = np.empty(P)
    idxb = np.empty((P, k), dtype=np.int64)
    wb = np.empty((P, k))
    fb = np.empty(P, dtype=np.bool_)
    t_max = 0.0
    for j in range(n_land):
        t_max = max(t_max, t_norm[j])
    for blk in range(n_blocks):
        start = blk * P
        m = min(P, n - start)
        for p in range(m):
            i = start + p
            xsq = _dot64(X[i], X[i])
            xn = math.sqrt(xsq)
            if not (xn < limit and xn * t_max < limit):  # float32 may overflow (or NaN)
                status[i] = 1
                continue
            # The c smallest (d32, j) pairs in a max-heap.
            for j in range(n_land):
                v = xsq + t_sq[j] - 2.0 * np.float64(cross32[i, j])
                vrow[j] = v
                offer(heap_v, heap_j, c, j, v)
            # Every landmark left out has d32 >= the heap's top: with the largest
            # error bound, one comparison proves most points (below).
            # e64 bounds the float64 rounding of any one distance of this point
            # (the candidates' here, or BLAS's in the float64 path): the chosen
            # K_Z must beat every landmark left out by more than that, in either.
            e64 = slack * (xsq + t_max * t_max + 2.0 * xn * t_max)
            err_max = (coef * xn * t_max + e64 + floor * (1.0 + xn + t_max))
            lb_min = heap_v[0] - err_max - 3.0 * e64
            for a in range(c):
                acc[a] = _dot64(X[i], landmarks[heap_j[a]])
            # Rank the candidates by (distance, index): an insertion sort.
            for a in range(c):
                j = heap_j[a]
                v = -2.0 * acc[a] + xsq + t_sq[j]
                b = a
                while b > 0 and (cand_v[b - 1] > v or (cand_v[b - 1] == v
                                                       and cand_j[b - 1] > j)):
                    cand_v[b] = cand_v[b - 1]
                    cand_j[b] = cand_j[b - 1]
                    cand_c[b] = cand_c[b - 1]
                    b -= 1
                cand_v[b] = v
                cand_j[b] = j
                cand_c[b] = acc[a]
            x_sq[i] = xsq
            for a in range(k):
                idx[i, a] = cand_j[a]
                cz[i, a] = cand_c[a]
            status[i] = 2
            if cand_v[k - 1] < lb_min:
                continue
            # Not proved with the largest bound: each landmark left out with its
            # own bound (a second pass over the row, rarely needed).
            lb_min = np.inf
            vt, jt = heap_v[0], heap_j[0]
            for j in range(n_land):
                v = vrow[j]
                if v < vt or (v == vt and j <= jt):  # a candidate
                    continue
                tn = t_norm[j]
                lb = v - (coef * xn * tn + slack * (xsq + t_sq[j] + 2.0 * xn * tn)
                          + floor * (1.0 + xn + tn)) - 3.0 * e64
                if not lb >= lb_min:  # NaN (an overflow) proves nothing
                    lb_min = lb if lb == lb else -np.inf
            if not cand_v[k - 1] < lb_min:
                status[i] = 1
        if not solve:
            continue
        # The proved points of the block, packed, through the Cholesky.
        q = 0
        for p in range(m):
            i = start + p
            if status[i] != 2:
                continue
            xsb[q] = x_sq[i]
            for a in range(k):
                czb[q, a] = cz[i, a]
                idxb[q, a] = idx[i, a]
            fb[q] = True
            q += 1
        if q == 0:
            continue
        _cholesky_block(czb, xsb, idxb, gram, reg, q, U, trace, bad, w, wb, fb)
        q = 0
        for p in range(m):
            i = start + p
            if status[i] != 2:
                continue
            if not fb[q]:
                status[i] = 0
                for a in range(k):
                    weights[i, a] = wb[q, a]
            q += 1


@numba.njit(nogil=True, cache=True, fastmath={"reassoc", "contract"})
def _dot64(x, t):
    """x.t in float64 (x and t float32 or float64), in whatever order vectorises:
    the float32 ranking's bound holds for any summation order."""
    s = 0.0
    for f in range(x.shape[0]):
        s += np.float64(x[f]) * np.float64(t[f])
    return s


def reduced_dense(w_indptr, w_indices, w_data, deg, z_idx, z_w, n_land, n_parts,
                  n_threads=None):
    """Dense B~ = sum_n d_n z_n z_n^T and half of C~ = Z^T W Z for symmetric W:
    H = sum_n z_n (sum_{m >= n} w_nm z_m)^T, the diagonal of W halved, so that
    C~ = H + H^T.

    Z is given by its K nonzeros per point (z_idx, z_w). Using only the upper
    triangle of W halves the gather-scatter over the edges. Each of ``n_parts``
    parts owns the rows r of B~ and H with r % n_parts == part and goes over
    every point, adding only to its own rows; each entry is then a sum over
    the points in their order, whatever ``n_parts`` and ``n_threads`` (default:
    numba's thread count, which ``n_jobs`` sets), and the parts never write to
    the same memory. Two L x L arrays in all: per-part copies (8 of each at
    L = 1,000, 128 MB) cost more in first-touch page faults than the sums
    (0.3 s of a fresh process's 0.37 s on MNIST).
    """
    B = np.zeros((n_land, n_land))
    H = np.zeros((n_land, n_land))

    def run(part):
        _reduced_part(w_indptr, w_indices, w_data, deg, z_idx, z_w, part, n_parts, B, H)

    if n_threads is None:
        n_threads = numba.get_num_threads()
    _run_parts(run, list(range(n_parts)), n_threads)
    return B, H


@numba.njit(nogil=True, cache=True)
def _reduced_part(w_indptr, w_indices, w_data, deg, z_idx, z_w, part, n_parts, B, H):
    """One part of :func:`reduced_dense`: the rows r with r % n_parts == part.

    Point n's row sum_{m >= n} w_nm z_m is gathered into a dense work vector
    and added by its nonzero columns only (at most K_Z per edge), which it
    then clears; only points with a landmark among the part's rows need it.
    """
    n, k = z_idx.shape
    n_land = B.shape[0]
    acc = np.zeros(n_land)
    seen = np.zeros(n_land, dtype=np.bool_)
    cols = np.empty(n_land, dtype=np.int64)
    for i in range(n):
        mine = False
        for a in range(k):
            if z_idx[i, a] % n_parts == part:
                mine = True
        if not mine:
            continue
        n_cols = 0
        for p in range(w_indptr[i], w_indptr[i + 1]):
            m = w_indices[p]
            if m < i:
                continue
            wv = w_data[p] if m > i else 0.5 * w_data[p]
            for a in range(k):
                col = z_idx[m, a]
                acc[col] += wv * z_w[m, a]
                if not seen[col]:
                    seen[col] = True
                    cols[n_cols] = col
                    n_cols += 1
        for a in range(k):
            row = z_idx[i, a]
            if row % n_parts != part:
                continue
            zv = z_w[i, a]
            dz = deg[i] * zv
            for b in range(k):
                B[row, z_idx[i, b]] += dz * z_w[i, b]
            for q in range(n_cols):
                col = cols[q]
                H[row, col] += zv * acc[col]
        for q in range(n_cols):
            acc[cols[q]] = 0.0
            seen[cols[q]] = False


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
    """:func:`reconstruction_residuals` for rows start:stop.

    The residual vector first (each entry rounded as before: x_f minus the
    terms in order), then its squared norm by :func:`_dot64`, whose sum
    vectorises: one chain of 784 dependent additions per row was most of the
    time (0.11 s on MNIST 60,000 x 1,000 landmarks).
    """
    d = X.shape[1]
    r = np.empty(d)
    for i in range(start, stop):
        for f in range(d):
            r[f] = np.float64(X[i, f])
        for p in range(z_indptr[i], z_indptr[i + 1]):
            zp = z_data[p]
            t = landmarks[z_indices[p]]
            for f in range(d):
                r[f] -= zp * t[f]
        out[i] = _dot64(r, r)
