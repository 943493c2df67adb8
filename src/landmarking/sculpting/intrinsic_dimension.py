"""The intrinsic dimension of data by Manifold Sculpting (the paper's Section III-G):
scale out one dimension at a time and watch the error jump."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.decomposition import PCA
from sklearn.utils import check_random_state

from .._parallel import thread_limits
from .._typing import ArrayLike, RandomStateLike
from .._validation import as_real_array, check_positive_float, check_positive_int
from ._loop import Relations, sculpt
from .fit import SculptingWarning, manifold_sculpting

__all__ = ["estimate_intrinsic_dimension"]


def estimate_intrinsic_dimension(X: ArrayLike, *, max_dim: int | None = None,
                                 n_neighbors: int = 14, scale_rate: float = 0.99,
                                 patience: int = 50, jump: float = 10.0,
                                 n_jobs: int | None = None,
                                 random_state: RandomStateLike = None,
                                 return_errors: bool = False,
                                 ) -> int | tuple[int, np.ndarray]:
    """Estimate the intrinsic dimension by scaling out one dimension at a time.

    The paper's Section III-G: sculpt the data down to ``max_dim`` dimensions,
    then scale out the last remaining dimension, one at a time, down to 1,
    recording after each the mean relationship error per point (equation (1),
    all weights 1) of the projection. While the data still fits, the error stays
    small; once a dimension the manifold needs is removed it jumps. The estimate
    is the smallest d whose error is still within a factor ``jump`` of the
    errors before it (with an absolute floor of 1e-4 per point, so that
    round-off in an exact fit is not read as a jump).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    max_dim : int or None, default=None
        Highest dimension tried; None uses min(n_features - 1, 10).
    n_neighbors, scale_rate, patience, n_jobs, random_state
        As in :class:`~landmarking.ManifoldSculpting`.
    jump : float, default=10.0
        Factor by which the error must grow to count as a jump.
    return_errors : bool, default=False
        Also return the error for every dimension.

    Returns
    -------
    dim : int
    errors : ndarray of shape (max_dim,), only with ``return_errors``
        ``errors[d - 1]`` is the mean error per point with d dimensions kept.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> plane = rng.uniform(-1, 1, (400, 2)) @ rng.normal(size=(2, 5))
    >>> estimate_intrinsic_dimension(plane, n_neighbors=10, random_state=0)
    2
    """
    X = as_real_array(X, "X")
    if X.ndim != 2 or not np.all(np.isfinite(X)):
        raise ValueError("X must be a finite 2-D array (n_samples, n_features).")
    n, D = X.shape
    if D < 2:
        raise ValueError("X has a single feature; its intrinsic dimension is at most 1.")
    max_dim = min(D - 1, 10) if max_dim is None else check_positive_int(max_dim, "max_dim")
    if max_dim >= D:
        raise ValueError(f"max_dim={max_dim} must be smaller than n_features ({D}).")
    jump = check_positive_float(jump, "jump")
    # The principal-axes start on purpose: the estimate reads the error of the
    # scaling phase, which a spectral start skips.
    with warnings.catch_warnings():
        # A poor fit at max_dim is expected when max_dim is below the intrinsic
        # dimension; the errors below measure exactly that.
        warnings.simplefilter("ignore", SculptingWarning)
        Y, run = manifold_sculpting(X, n_components=max_dim, n_neighbors=n_neighbors,
                                    scale_rate=scale_rate, patience=patience,
                                    preprocess="pca", n_jobs=n_jobs,
                                    random_state=random_state)
    rng = check_random_state(random_state)
    sigma = scale_rate
    min_iter = run.min_iter
    with thread_limits(n_jobs):
        rel = Relations(PCA(svd_solver="full").fit_transform(X), run.neighbors)
        zero = rel.no_junk()
        errors = np.empty(max_dim)
        errors[max_dim - 1] = rel.total_error(np.ascontiguousarray(Y), zero, 0.0) / n
        for d in range(max_dim - 1, 0, -1):
            # Principal axes first, so the dimension scaled out is the thinnest one.
            Y = PCA(svd_solver="full").fit_transform(Y)
            T = np.ascontiguousarray(Y[:, :d])
            junk = rel.junk(Y[:, d:d + 1])
            heavy = np.zeros(n, dtype=np.bool_)
            sculpt(T, junk, rel, sigma=sigma, scale=1.0, min_iter=min_iter,
                    max_iter=min_iter + 10 * patience, patience=patience, heavy=heavy,
                    expand=True, w_adj=10.0, eta=run.eta, rng=rng, verbose=False)
            Y = T
            errors[d - 1] = rel.total_error(T, zero, 0.0) / n
    floored = np.maximum(errors, 1e-4)
    dim = max_dim
    for d in range(max_dim - 1, 0, -1):
        if floored[d - 1] > jump * floored[d:].max():
            break
        dim = d
    return (dim, errors) if return_errors else dim
