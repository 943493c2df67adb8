"""Manifold Sculpting's relationships, errors and iteration loop (no estimator here).

:class:`Relations` records what sculpting restores for one neighbour graph
(distances, each neighbour's most collinear neighbour and the angle to it) and
evaluates the total error; :func:`sculpt` runs the paper's iterations on it. The
relationships and the dropped-dimension caches are vectorised NumPy (in blocks of
rows within scikit-learn's ``working_memory``); the hill climber, which must see
each move before the next, and the total error of every iteration are compiled
(:mod:`._loops`, Cython, compiled when the package is built).
"""

import numpy as np
from sklearn.utils import gen_batches

from .._blocks import rows_per_block
from . import _loops as K

__all__ = ["Relations", "sculpt", "neighbor_relations", "junk_caches",
           "neighbor_distance_error"]

# Cap on hill-climbing rounds per point and visit, so that one badly placed
# point cannot stall a pass; the adaptive eta keeps typical counts near 1.
_MAX_CLIMB_STEPS = 30
# Cap on the 1/sigma rounds of the re-expansion step in one iteration.
_MAX_EXPAND_ROUNDS = 10_000


def neighbor_distance_error(T, nbr, delta0):
    """Mean relative error |y_i - y_v| / delta_iv - 1 over all neighbour pairs.

    How far the embedding ``T`` is from restoring the distances it was asked to
    keep; pairs at distance 0 are left out.

    Examples
    --------
    >>> T = np.array([[0.0], [1.0], [3.0]])
    >>> float(neighbor_distance_error(
    ...     T, np.array([[1], [0], [1]]), np.array([[1.0], [1.0], [1.0]])))
    0.3333333333333333
    """
    now = np.linalg.norm(T[:, None, :] - T[nbr], axis=2)
    keep = delta0 > 0
    if not np.any(keep):
        return 0.0
    return float(np.mean(np.abs(now[keep] - delta0[keep]) / delta0[keep]))


def _relations_block(X, nbr, rows):
    """delta0, slot and theta0 (see :func:`neighbor_relations`) of ``rows``."""
    own = nbr[rows]                                   # (c, k): v
    A = X[rows, None, :] - X[own]                     # (c, k, D): i - v
    B = X[nbr[own]] - X[own][:, :, None, :]           # (c, k, k, D): m - v
    na = np.einsum("ckd,ckd->ck", A, A)
    nb = np.einsum("ckld,ckld->ckl", B, B)
    dot = np.einsum("ckd,ckld->ckl", A, B)
    denom = np.sqrt(na[:, :, None] * nb)
    with np.errstate(invalid="ignore", divide="ignore"):
        angle = np.where(denom > 0, np.arccos(np.clip(dot / denom, -1.0, 1.0)), 0.0)
    i = np.arange(X.shape[0])[rows]
    far = nbr[own]
    valid = (far != i[:, None, None]) & (far != own[:, :, None])
    angle = np.where(valid, angle, -np.inf)
    slot = np.argmax(angle, axis=2)                   # the first of equal angles
    theta = np.take_along_axis(angle, slot[..., None], axis=2)[..., 0]
    none = ~valid.any(axis=2)
    return np.sqrt(na), np.where(none, -1, slot), np.where(none, 0.0, theta)


def neighbor_relations(X, nbr):
    """Distances, most collinear neighbours and angles of every neighbour pair.

    For point i and neighbour v = nbr[i, j], m is the neighbour of v (other than
    i) that makes the angle i-v-m closest to pi.

    Returns
    -------
    delta0 : (n, k) Euclidean distances ||X_i - X_v||
    slot : (n, k) int64, position of m in nbr[v] (-1 if none)
    theta0 : (n, k) the angle at v between i and m, in [0, pi]
    """
    n, k = nbr.shape
    delta0, theta0 = np.empty((n, k)), np.empty((n, k))
    slot = np.empty((n, k), dtype=np.int64)
    step = rows_per_block(8 * k * k * (3 * X.shape[1] + 4))
    for rows in gen_batches(n, step):
        delta0[rows], slot[rows], theta0[rows] = _relations_block(X, nbr, rows)
    return delta0, slot, theta0


def junk_caches(J, nbr, far):
    """The dropped dimensions' shares of the squared distances and of the angles'
    dot products: ``junk_sq``, ``junk_far`` and ``junk_dot``, each (n, k)."""
    n, k = nbr.shape
    out = [np.zeros((n, k)) for _ in range(3)]
    if J.shape[1] == 0:
        return tuple(out)
    has = far >= 0
    safe = np.where(has, far, 0)
    for rows in gen_batches(n, rows_per_block(8 * k * 3 * J.shape[1])):
        A = J[rows, None, :] - J[nbr[rows]]
        B = J[safe[rows]] - J[nbr[rows]]
        out[0][rows] = np.einsum("ckd,ckd->ck", A, A)
        out[1][rows] = np.where(has[rows], np.einsum("ckd,ckd->ck", B, B), 0.0)
        out[2][rows] = np.where(has[rows], np.einsum("ckd,ckd->ck", A, B), 0.0)
    return tuple(out)


class Relations:
    """The relationships to restore, for one neighbour graph (all (n, k))."""

    def __init__(self, X_rel, nbr, distances=None, move_rule="total"):
        self.nbr = np.ascontiguousarray(nbr, dtype=np.int64)
        delta0, slot, theta0 = neighbor_relations(np.asarray(X_rel, dtype=float), self.nbr)
        if distances is not None:
            delta0 = np.ascontiguousarray(distances, dtype=float)
        self.delta0, self.slot, self.theta0 = delta0, slot, theta0
        self.far = K.far_indices(self.nbr, slot)
        self.cos0 = np.cos(theta0)
        self.delta_ave = float(delta0.mean())
        self.rev = (K.reverse_lists(self.nbr, self.far) if move_rule == "total"
                    else K.no_reverse_lists())

    def junk(self, J):
        """The caches ``(junk_sq, junk_far, junk_dot)`` of the columns J to scale out."""
        return junk_caches(np.asarray(J, dtype=float), self.nbr, self.far)

    def terms(self, junk):
        """Every point's terms in one block each (:func:`._loops.point_terms`), for
        the passes with the dropped-dimension caches ``junk``."""
        return K.point_terms(self.nbr, self.far, self.delta0, self.theta0, self.cos0, junk,
                             self.rev)

    def no_junk(self):
        """The caches of a start with nothing left to scale out."""
        return tuple(np.zeros_like(self.delta0) for _ in range(3))

    def total_error(self, T, junk, s2):
        """Sum over all points of equation (1) with every weight 1."""
        terms = np.empty_like(self.delta0)
        K.total_terms(np.ascontiguousarray(T, dtype=float), self.nbr, self.far, self.delta0,
                      self.theta0, self.cos0, junk, s2, self.delta_ave, terms)
        return float(np.sum(terms))

    def mean_distance(self, T, junk, s2):
        """Mean over all neighbour pairs of the current distance (all dimensions)."""
        A = T[:, None, :] - T[self.nbr]
        return float(np.mean(np.sqrt(s2 * junk[0] + np.einsum("nkt,nkt->nk", A, A))))


def sculpt(T, junk, rel, *, sigma, scale, min_iter, max_iter, patience,
            heavy, expand, w_adj, eta, rng, verbose, desc="sculpting"):
    """Steps 4 (a, b, c) of the paper until the stopping rule holds.

    Runs at least ``min_iter`` iterations, then stops once the total error has
    not improved on its best (counted from ``min_iter`` on) for ``patience``
    iterations, or at ``max_iter``. ``T`` is updated in place and then set to
    the best state seen after ``min_iter``.

    Returns
    -------
    errors : list of float, the total error after each iteration
    scale : float, what is left of the dropped dimensions' spread
    eta : float, the final step size
    best_iter : int, the iteration whose state T holds
    """
    n = T.shape[0]
    stamp = np.full(n, -1, dtype=np.int64)
    order = rng.permutation(n).astype(np.int64)
    free = np.flatnonzero(~heavy)
    terms = rel.terms(junk)
    has_junk = bool(np.any(junk[0]))
    errors = []
    best_err, best_iter, best_T = np.inf, -1, T.copy()
    bar = None
    if verbose:
        from .._progress import progress_bar  # tqdm's import only when a bar is shown

        bar = progress_bar(total=max_iter, desc=desc, leave=False)
    try:
        for it in range(max_iter):
            if has_junk:
                scale *= sigma
                if expand:
                    K.expand_targets(T, rel.nbr, junk[0], scale * scale, rel.delta_ave, sigma,
                                     _MAX_EXPAND_ROUNDS)
            s2 = scale * scale
            start = int(free[rng.randint(free.size)]) if free.size else 0
            steps = K.sculpt_pass(T, start, order, eta, _MAX_CLIMB_STEPS, rel.nbr, terms,
                                  K.Weighting(s2, rel.delta_ave, stamp, it, heavy, w_adj))
            # Step 4c: keep the number of steps per iteration near the number of points.
            eta = eta * 1.1 if steps >= free.size else eta * 0.9
            err = rel.total_error(T, junk, s2)
            errors.append(err)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(error=f"{err:.4g}")
            if it + 1 >= min_iter:
                if err < best_err:
                    best_err, best_iter = err, it
                    best_T[...] = T
                elif it - best_iter >= patience:
                    break
    finally:
        if bar is not None:
            bar.close()
    if best_iter >= 0:
        T[...] = best_T
    return errors, scale, eta, best_iter
