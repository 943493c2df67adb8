"""New points for a fitted Manifold Sculpting: pseudo-incremental learning (the
paper's Section IV-D, :func:`settle_new_points`) and out-of-sample placement with
the fitted points held fixed (:func:`place_new_points`).

Both start each new point at the LLE reconstruction of its nearest fitted points'
coordinates (:func:`barycentric_weights`) and then run the loop
:func:`~landmarking.sculpting._loop.sculpt` with no dimension left to scale out.
"""

import numpy as np
from sklearn.decomposition import PCA

from .._parallel import thread_limits
from ..local_weights import local_affine_weights
from ..neighbors import query_neighbors
from ._loop import Relations, neighbor_distance_error, sculpt
from .fit import _restoring_step, neighbor_graph

__all__ = ["barycentric_weights", "settle_new_points", "place_new_points"]


def barycentric_weights(X, neighbors_X, reg=1e-3):
    """LLE reconstruction weights of each row of X from its neighbours' rows.

    ``neighbors_X`` is (n, k, D). Builds the local Gram matrices
    G_ij = (x_i - x).(x_j - x) and solves them with
    :func:`~landmarking.local_weights.local_affine_weights` (the ridge of
    ``reg`` times the trace, as scikit-learn's LLE; weights summing to one).
    """
    diff = neighbors_X - X[:, None, :]
    return local_affine_weights(np.einsum("nkd,nld->nkl", diff, diff), reg)


def settle_new_points(X_old, Y_old, X_new, plan, *, metric, n_jobs, rng, verbose):
    """Add the rows X_new to a fitted embedding Y_old of X_old, in two steps.

    The old points are clamped at their embedding while the new ones settle, then
    every point is unclamped and the whole set settles; neighbours and
    relationships are recomputed on the union. ``plan`` is the estimator's
    :class:`~landmarking.sculpting.fit.Schedule`.

    Returns
    -------
    X : the union (old rows first); T : its embedding (float64);
    iterations : the iterations of both steps; and the second step's
    ``errors, eta, best_iter``, the neighbour indices, ``delta_ave`` and
    ``distance_error``, as a dict.
    """
    n_old = X_old.shape[0]
    X = np.vstack([X_old, X_new])
    with thread_limits(n_jobs):
        nbr, dist = neighbor_graph(X, plan.n_neighbors, None, metric=metric, n_jobs=n_jobs)
        rel = Relations(PCA(svd_solver="full").fit_transform(X), nbr, dist, plan.move_rule)
        k_old = min(plan.n_neighbors, n_old)
        _, idx = query_neighbors(X_old, X_new, k_old, metric=metric, n_jobs=n_jobs)
        w = barycentric_weights(X_new, X_old[idx])
        T = np.ascontiguousarray(np.vstack([Y_old, np.einsum("nk,nkt->nt", w, Y_old[idx])]))
        heavy = np.zeros(X.shape[0], dtype=np.bool_)
        heavy[:n_old] = True
        iters = []
        for clamp in (True, False):
            heavy[:n_old] = clamp
            errors, _, eta, best = sculpt(
                T, rel.no_junk(), rel, sigma=1.0, scale=0.0, min_iter=0,
                max_iter=plan.max_iter, patience=plan.patience, heavy=heavy, expand=False,
                w_adj=plan.adjusted_weight, eta=rel.delta_ave, rng=rng, verbose=verbose,
                desc="settling new points" if clamp else "settling all points")
            iters.append(len(errors))
    return X, T, tuple(iters), {
        "errors": np.asarray(errors), "eta": eta, "best_iter": best, "neighbors": nbr,
        "delta_ave": rel.delta_ave, "distance_error": neighbor_distance_error(T, nbr, rel.delta0)}


def place_new_points(X_old, Y_old, neighbors, X_new, plan, *, delta_ave, max_iter, metric,
                     index, rng, verbose):
    """Coordinates of the rows X_new in a fitted embedding that stays as it is.

    Each new point starts at the LLE reconstruction of its nearest fitted points'
    coordinates (searched in ``index``, an exact index of X_old) and is sculpted
    with every fitted point held fixed; a row equal to a fitted point gets that
    point's coordinates. ``neighbors`` is the fit's neighbour list and
    ``delta_ave`` its mean neighbour distance, kept so that a point's placement
    does not depend on which other points come in the same batch.

    Returns
    -------
    ndarray of shape (n_new, n_components), float64
    """
    n_old, m = X_old.shape[0], X_new.shape[0]
    k = min(neighbors.shape[1], n_old)
    dist, idx = index.query(X_new, k)
    w = barycentric_weights(X_new, X_old[idx])
    Y_new = np.einsum("nk,nkt->nt", w, Y_old[idx])
    # Equal rows, tested exactly: a brute-force distance of 0 can come out ~1e-8.
    same = np.all(X_old[idx[:, 0]] == X_new, axis=1)
    Y_new[same] = Y_old[idx[same, 0]]
    if np.all(same):
        return Y_new
    nbr = np.vstack([neighbors, idx]).astype(np.int64)
    X_all = np.vstack([X_old, X_new])
    rel = Relations(X_all, nbr, None, plan.move_rule)
    if metric != "euclidean":
        rel.delta0[n_old:] = dist
    rel.delta_ave = delta_ave
    T = np.ascontiguousarray(np.vstack([Y_old, Y_new]))
    heavy = np.ones(n_old + m, dtype=np.bool_)
    heavy[n_old:] = same
    new_rows = n_old + np.flatnonzero(~same)
    sculpt(T, rel.no_junk(), rel, sigma=1.0, scale=0.0, min_iter=0,
           max_iter=max_iter, patience=plan.patience, heavy=heavy,
           expand=False, w_adj=plan.adjusted_weight, eta=_restoring_step(T, rel, new_rows),
           rng=rng, verbose=verbose, desc="placing new points")
    return T[n_old:]
