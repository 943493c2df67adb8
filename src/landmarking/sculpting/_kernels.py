"""Compiled kernels of Manifold Sculpting (Gashler, Ventura & Martinez 2011).

Layout shared by every kernel:

- ``T`` (n, t): the target coordinates, the only values hill climbing moves.
- ``nbr`` (n, k): neighbour indices; ``far[i, j]`` is ``m_ij``, the neighbour of
  ``v = nbr[i, j]`` most collinear with ``i`` (-1 when ``v`` has no neighbour
  other than ``i``). ``slot[i, j]`` is its position in ``nbr[v]``.
- ``delta0``, ``theta0`` (n, k): the distances and angles to restore.
- ``junk_sq[i, j] = ||J_i - J_v||^2``, ``junk_far[i, j] = ||J_m - J_v||^2`` and
  ``junk_dot[i, j] = (J_i - J_v).(J_m - J_v)`` over the non-target dimensions
  ``J`` at scale 1. The paper's first speed-up: those dimensions only ever
  shrink by ``sigma``, so their share of every distance and angle is
  ``scale^2`` times a constant and one error evaluation costs O(k t) instead of
  O(k D).

The relationships, the caches and the total error are vectorised NumPy in
:mod:`._loop` (nothing to compile); this module holds only what must run
one move at a time.

Every per-term quantity is stored in row ``i`` of an (n, k) array, so that a
term reads one contiguous row plus the coordinates of ``v`` and ``m``; the only
random accesses left are to ``T``.

The whole per-iteration pass (breadth-first order, hill climbing, weights of
already-adjusted neighbours) is one compiled call; Python only loops over
iterations.
"""

import numpy as np
from numba import njit

__all__ = [
    "far_indices",
    "point_error",
    "reverse_lists",
    "no_reverse_lists",
    "term_buffers",
    "gather_terms",
    "trial_error",
    "climb",
    "adjust_point",
    "sculpt_pass",
    "mean_neighbor_distance",
    "expand_targets",
]


def far_indices(nbr, slot):
    """``far[i, j] = nbr[nbr[i, j], slot[i, j]]``, or -1 where slot is -1."""
    far = nbr[nbr, np.maximum(slot, 0)]
    return np.ascontiguousarray(np.where(slot >= 0, far, -1), dtype=np.int64)


@njit(cache=True)
def _reverse_span(rptr, i):
    """Where point i's reverse terms start in the reverse lists, and how many
    there are (none when the lists are empty: the paper's own move rule)."""
    if rptr.shape[0] > i + 1:
        return rptr[i], rptr[i + 1] - rptr[i]
    return 0, 0


@njit(cache=True)
def point_error(i, T, nbr, far, delta0, theta0, cos0, junk_sq, junk_far, junk_dot, s2,
                delta_ave, stamp, it, heavy, w_adj, rev):
    """The error that decides point i's moves.

    Its own terms, equation (1) of the paper, ``sum_j w_ij term(i, j)`` with
    ``w_ij = w_adj`` when neighbour j was adjusted in iteration ``it``
    (``stamp[v] == it``) or is clamped (``heavy[v]``), else 1, and

    ``term(p, j) = ((delta0 - delta) / (2 delta_ave))^2 + (max(0, theta0 - theta) / pi)^2``.

    When ``rev`` holds reverse lists (see :func:`reverse_lists`), the terms of
    other points that involve i (i as their neighbour, or as the far end of one
    of their angles) are added with the same weighting by their owner, so that
    a move which lowers this error lowers the total error; an empty ``rev``
    gives the paper's rule exactly.
    """
    # The term is written out here, once, rather than in a helper: a call per
    # term that passes a dozen arrays costs twice the arithmetic of the term.
    k = nbr.shape[1]
    t = T.shape[1]
    inv = 1.0 / (2.0 * delta_ave)
    rptr, rp, rj = rev
    first, n_rev = _reverse_span(rptr, i)
    err = 0.0
    for q in range(k + n_rev):
        if q < k:
            p = i
            j = q
            judge = nbr[i, j]  # own terms: weighted by the neighbour's state
        else:
            p = rp[first + q - k]
            j = rj[first + q - k]
            judge = p  # another point's term: weighted by its owner's state
        w = w_adj if (stamp[judge] == it or heavy[judge]) else 1.0
        v = nbr[p, j]
        sq_a = s2 * junk_sq[p, j]
        for d in range(t):
            da = T[p, d] - T[v, d]
            sq_a += da * da
        r = (delta0[p, j] - np.sqrt(sq_a)) * inv
        term = r * r
        m = far[p, j]
        if m >= 0:
            sq_b = s2 * junk_far[p, j]
            dot = s2 * junk_dot[p, j]
            for d in range(t):
                db = T[m, d] - T[v, d]
                sq_b += db * db
                dot += (T[p, d] - T[v, d]) * db
            denom = np.sqrt(sq_a * sq_b)
            c = dot / denom if denom > 0.0 else 1.0
            # theta < theta0 exactly when cos(theta) > cos(theta0); the arccos
            # is only needed then.
            if c > cos0[p, j]:
                a = (theta0[p, j] - np.arccos(min(1.0, c))) / np.pi
                term += a * a
        err += w * term
    return err


# Hill climbing works on a local copy of the terms that move with the point:
# row q of F holds one term's weight and constants, its current squared
# lengths and dot product, and the two vectors of its angle, so that a trial
# move along one dimension updates each term in O(1), without reading T or the
# neighbour lists again. Columns of F:
_W, _D0, _TH0, _C0, _JA, _JB, _JD, _SQA, _SQB, _DOT, _DIST = range(11)
_VEC = 11  # then a (t values: p - v) and b (t values: m - v)
# I[q] = (role, m): role 0 is i's own term (i = p), 1 a term where i is the
# neighbour v, 2 a term where i is the far end m of the angle; m < 0: no angle.
_OWN, _AS_NEIGHBOR, _AS_FAR = 0, 1, 2


def term_buffers(nbr, rev, t):
    """Work arrays (F, I) big enough for the terms of any one point."""
    rptr = rev[0]
    most = int(np.max(np.diff(rptr))) if rptr.shape[0] > 1 else 0
    cap = nbr.shape[1] + most
    return np.empty((cap, _VEC + 2 * t)), np.empty((cap, 2), dtype=np.int64)


@njit(cache=True)
def _refresh_term(q, F, t, inv):
    """Squared lengths, dot product and distance term of row q from its vectors."""
    sq_a = F[q, _JA]
    sq_b = F[q, _JB]
    dot = F[q, _JD]
    for d in range(t):
        a = F[q, _VEC + d]
        b = F[q, _VEC + t + d]
        sq_a += a * a
        sq_b += b * b
        dot += a * b
    F[q, _SQA] = sq_a
    F[q, _SQB] = sq_b
    F[q, _DOT] = dot
    r = (F[q, _D0] - np.sqrt(sq_a)) * inv
    F[q, _DIST] = r * r


@njit(cache=True)
def gather_terms(i, T, nbr, far, delta0, theta0, cos0, junk_sq, junk_far, junk_dot, s2,
                 delta_ave, stamp, it, heavy, w_adj, rev, F, I):
    """Copy into (F, I) every term whose value changes when point i moves.

    The same terms and weights as :func:`point_error`. Returns their number.
    """
    k = nbr.shape[1]
    t = T.shape[1]
    inv = 1.0 / (2.0 * delta_ave)
    rptr, rp, rj = rev
    first, n_rev = _reverse_span(rptr, i)
    for q in range(k + n_rev):
        if q < k:
            p = i
            j = q
            judge = nbr[i, j]
            role = _OWN
        else:
            p = rp[first + q - k]
            j = rj[first + q - k]
            judge = p
            role = _AS_NEIGHBOR if nbr[p, j] == i else _AS_FAR
        v = nbr[p, j]
        m = far[p, j]
        F[q, _W] = w_adj if (stamp[judge] == it or heavy[judge]) else 1.0
        F[q, _D0] = delta0[p, j]
        F[q, _TH0] = theta0[p, j]
        F[q, _C0] = cos0[p, j]
        F[q, _JA] = s2 * junk_sq[p, j]
        F[q, _JB] = s2 * junk_far[p, j]
        F[q, _JD] = s2 * junk_dot[p, j]
        I[q, 0] = role
        I[q, 1] = m
        for d in range(t):
            F[q, _VEC + d] = T[p, d] - T[v, d]
            F[q, _VEC + t + d] = T[m, d] - T[v, d] if m >= 0 else 0.0
        _refresh_term(q, F, t, inv)
    return k + n_rev


@njit(cache=True)
def trial_error(F, I, n_terms, d, step, inv, t):
    """The error of the gathered terms if point i moved by ``step`` along d."""
    step2 = step * step
    err = 0.0
    for q in range(n_terms):
        role = I[q, 0]
        a_d = F[q, _VEC + d]
        b_d = F[q, _VEC + t + d]
        sq_a = F[q, _SQA]
        sq_b = F[q, _SQB]
        dot = F[q, _DOT]
        if role == _OWN:  # a = x - T_v moves, b does not
            sq_a += 2.0 * step * a_d + step2
            dot += step * b_d
        elif role == _AS_NEIGHBOR:  # a = T_p - x and b = T_m - x both move
            sq_a += step2 - 2.0 * step * a_d
            sq_b += step2 - 2.0 * step * b_d
            dot += step2 - step * (a_d + b_d)
        else:  # b = x - T_v moves; the p-v distance does not
            sq_b += 2.0 * step * b_d + step2
            dot += step * a_d
        if role == _AS_FAR:
            term = F[q, _DIST]
        else:
            r = (F[q, _D0] - np.sqrt(sq_a)) * inv
            term = r * r
        if I[q, 1] >= 0:
            denom = np.sqrt(sq_a * sq_b)
            c = dot / denom if denom > 0.0 else 1.0
            if c > F[q, _C0]:
                ang = (F[q, _TH0] - np.arccos(min(1.0, c))) / np.pi
                term += ang * ang
        err += F[q, _W] * term
    return err


@njit(cache=True)
def _accept_move(F, I, n_terms, d, step, t, inv):
    for q in range(n_terms):
        role = I[q, 0]
        if role == _OWN:
            F[q, _VEC + d] += step
        elif role == _AS_NEIGHBOR:
            F[q, _VEC + d] -= step
            F[q, _VEC + t + d] -= step
        else:
            F[q, _VEC + t + d] += step
        _refresh_term(q, F, t, inv)


@njit(cache=True)
def climb(i, T, eta, max_steps, F, I, n_terms, delta_ave):
    """The paper's hill climber (Fig. 6) on the gathered terms of point i.

    Try +eta then -eta on each target dimension, keep a move only if it
    lowers the error, and repeat rounds until one keeps no move (or
    ``max_steps`` rounds kept one). A dimension is not tried again from a
    position where it already failed: once every dimension has failed in a row
    since the last kept move, the next round could keep nothing, so it is not
    run. The kept moves are exactly those of the paper's loop.

    Returns
    -------
    steps : int, rounds in which at least one move was kept
    err : float, the point's error at the end (never above its error at the start)
    """
    t = T.shape[1]
    inv = 1.0 / (2.0 * delta_ave)
    # The error where the point stands: no move on the last dimension. Passed
    # as variables: a literal 0 would have numba compile trial_error twice.
    last = t - 1
    err = trial_error(F, I, n_terms, last, eta * 0.0, inv, t)
    steps = 0
    failed = 0
    while steps < max_steps:
        improved = False
        for d in range(t):
            e = trial_error(F, I, n_terms, d, eta, inv, t)
            step = eta
            if not e < err:
                e = trial_error(F, I, n_terms, d, -eta, inv, t)
                step = -eta
            if e < err:
                T[i, d] += step
                _accept_move(F, I, n_terms, d, step, t, inv)
                err = e
                improved = True
                failed = 0
            else:
                failed += 1
                if failed == t:
                    break
        if not improved:
            break
        steps += 1
    return steps, err


def adjust_point(i, T, eta, max_steps, nbr, far, delta0, theta0, cos0, junk_sq, junk_far,
                 junk_dot, s2, delta_ave, stamp, it, heavy, w_adj, rev):
    """Hill-climb point i alone (see :func:`climb`); the terms as in :func:`point_error`.

    Returns ``(steps, err)``.
    """
    F, I = term_buffers(nbr, rev, T.shape[1])
    n_terms = gather_terms(i, T, nbr, far, delta0, theta0, cos0, junk_sq, junk_far, junk_dot,
                           s2, delta_ave, stamp, it, heavy, w_adj, rev, F, I)
    return climb(i, T, eta, max_steps, F, I, n_terms, delta_ave)


@njit(cache=True)
def sculpt_pass(T, start, order, eta, max_steps, nbr, far, delta0, theta0, cos0,
                junk_sq, junk_far, junk_dot, s2, delta_ave, stamp, it, heavy, w_adj, rev, F, I):
    """Step 4b: adjust every free point once, in breadth-first order from ``start``.

    Points are visited in the order they are first reached over the neighbour
    graph; when the graph is not connected from ``start``, the walk restarts
    from the next unvisited point of ``order`` (a random permutation), so every
    point is visited. ``stamp[i]`` is set to ``it`` once i is adjusted, which
    gives its neighbours' errors the heavier weight. Clamped points
    (``heavy``) are visited but never moved. ``F`` and ``I`` are work arrays
    from :func:`term_buffers`.

    Returns the total number of hill-climbing steps.
    """
    n, k = nbr.shape
    queue = np.empty(n, dtype=np.int64)
    seen = np.zeros(n, dtype=np.bool_)
    head = 0
    tail = 0
    total = 0
    nxt = 0
    queue[tail] = start
    tail += 1
    seen[start] = True
    while head < n:
        if head == tail:
            while seen[order[nxt]]:
                nxt += 1
            queue[tail] = order[nxt]
            seen[order[nxt]] = True
            tail += 1
        i = queue[head]
        head += 1
        for j in range(k):
            v = nbr[i, j]
            if not seen[v]:
                seen[v] = True
                queue[tail] = v
                tail += 1
        if not heavy[i]:
            n_terms = gather_terms(i, T, nbr, far, delta0, theta0, cos0, junk_sq, junk_far,
                                   junk_dot, s2, delta_ave, stamp, it, heavy, w_adj, rev, F, I)
            steps, _ = climb(i, T, eta, max_steps, F, I, n_terms, delta_ave)
            total += steps
        stamp[i] = it
    return total


def reverse_lists(nbr, far):
    """For every point i, the (p, j) pairs whose term in equation (1) involves i
    other than as p: ``nbr[p, j] == i`` (i is the neighbour) or
    ``m_pj == i`` (i is the far end of the angle). CSR layout ``(ptr, p, j)``.
    """
    n, k = nbr.shape
    P = np.repeat(np.arange(n), k).reshape(n, k)
    J = np.tile(np.arange(k), n).reshape(n, k)
    has_m = far >= 0
    target = np.concatenate([nbr.ravel(), far[has_m]])
    owner = np.concatenate([P.ravel(), P[has_m]])
    which = np.concatenate([J.ravel(), J[has_m]])
    order = np.argsort(target, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(ptr, target + 1, 1)
    return (np.cumsum(ptr), owner[order].astype(np.int64), which[order].astype(np.int64))


def no_reverse_lists():
    """The empty reverse lists: the paper's own-error rule."""
    empty = np.zeros(0, dtype=np.int64)
    return (empty, empty, empty)


@njit(cache=True)
def mean_neighbor_distance(T, nbr, junk_sq, s2):
    """Mean over all neighbour pairs of the current distance (all dimensions)."""
    n, k = nbr.shape
    t = T.shape[1]
    acc = 0.0
    for i in range(n):
        for j in range(k):
            v = nbr[i, j]
            sq = s2 * junk_sq[i, j]
            for d in range(t):
                diff = T[i, d] - T[v, d]
                sq += diff * diff
            acc += np.sqrt(sq)
    return acc / (n * k)


@njit(cache=True)
def expand_targets(T, nbr, junk_sq, s2, delta_ave, sigma, max_rounds):
    """Step 4a's second half: divide the target dimensions by sigma until the
    mean neighbour distance is back to delta_ave. Returns the rounds taken."""
    rounds = 0
    while rounds < max_rounds and mean_neighbor_distance(T, nbr, junk_sq, s2) < delta_ave:
        for i in range(T.shape[0]):
            for d in range(T.shape[1]):
                T[i, d] /= sigma
        rounds += 1
    return rounds
