"""Manifold Sculpting (Gashler, Ventura & Martinez, IEEE TSMC-B 2011).

Graduated optimisation: the neighbourhood relationships (distances, and angles
to each neighbour's most collinear neighbour) are recorded once; then, over
many iterations, the dimensions that will be dropped are scaled down by
``sigma`` while hill climbing on the kept dimensions restores the
relationships. Before any scaling the error is exactly zero, so the climber only
has to follow a slowly moving optimum rather than find one.

The relationships, errors and iteration loop live in :mod:`._sculpting_core`,
the compiled hill climber in :mod:`._sculpting_kernels`, imported on first use
(so that importing this module loads no numba); this module is the
estimator layer (validation, preprocessing, semi-supervision,
pseudo-incremental learning) and :func:`estimate_intrinsic_dimension`.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Literal, Self

import numpy as np
from scipy.linalg import orthogonal_procrustes
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin, clone
from sklearn.decomposition import PCA
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .._memory import check_memory
from .._parallel import check_n_jobs, thread_limits
from .._typing import ArrayLike, RandomStateLike
from .._validation import (
    check_choice,
    check_open_interval,
    check_positive_float,
    check_positive_int,
)
from ..kernels import row_chunks
from ..neighbors import LazyNeighborIndex, Metric, nearest_neighbors, query_neighbors
from ._sculpting_core import Relations, neighbor_distance_error, sculpt

__all__ = ["ManifoldSculpting", "estimate_intrinsic_dimension", "SculptingWarning"]

PREPROCESS_CHOICES = ("pca", "none", "ltsa")
# Up to this many samples the "ltsa" start uses a dense eigensolver (0.75 s at
# 2,000 points on one core, against 2.7 s for ARPACK's shift-invert); above it
# the dense solver's O(n^3) loses.
_LTSA_DENSE_MAX = 3000
MOVE_RULES = ("total", "point")

# Above this mean relative error of the neighbour distances the fit warns. A
# restored sheet is far below it (0.0005-0.002 on the paper's S-curve and on the
# star-hole Swiss roll from the LTSA start); the paper's principal-axes start,
# which folds that roll, leaves 0.06.
DISTORTION_WARN = 0.02


class SculptingWarning(UserWarning):
    """Manifold Sculpting could tell that its embedding is poor."""


def default_min_iter(scale_rate):
    """The paper's minimum number of iterations, ceil(log_sigma(0.01)).

    After it, at most 1% of the original spread is left in the dropped
    dimensions.

    Examples
    --------
    >>> default_min_iter(0.99)
    459
    """
    return int(math.ceil(math.log(0.01) / math.log(scale_rate)))


def _barycentric_weights(X, neighbors_X, reg=1e-3):
    """LLE reconstruction weights of each row of X from its neighbours' rows.

    ``neighbors_X`` is (n, k, D). Solves G w = 1 with G the local Gram matrix
    (plus a ridge of ``reg`` times its trace, as scikit-learn's LLE does) and
    normalises w to sum to one.
    """
    diff = neighbors_X - X[:, None, :]
    G = np.einsum("nkd,nld->nkl", diff, diff)
    trace = np.trace(G, axis1=1, axis2=2)
    ridge = np.where(trace > 0, reg * trace, reg)
    G = G + ridge[:, None, None] * np.eye(G.shape[1])
    w = np.linalg.solve(G, np.ones(G.shape[:2])[..., None])[..., 0]
    return w / w.sum(axis=1, keepdims=True)


# Up to this many starting columns get a full linear calibration (p(p+1)/2
# unknowns); wider starts are only rescaled.
_MAX_CALIBRATED = 10


def _calibrate(P, rel, *, linear):
    """Bring a starting configuration to the data's metric.

    Spectral embeddings (LLE, HLLE, LTSA, Laplacian eigenmaps) come out
    whitened: each axis has unit variance whatever the manifold's extent, so
    their neighbour distances are off by a different factor along each axis,
    and sculpting from them would first have to undo that shear point by point.
    With ``linear``, the symmetric matrix M minimising
    ``sum (dP^T M dP - delta0^2)^2`` over all neighbour pairs is found by linear
    least squares and P is mapped by M^(1/2) (its nonnegative part), the linear
    map that best restores the neighbour distances; otherwise P is only
    scaled so that its mean neighbour distance is delta_ave.
    """
    P = np.ascontiguousarray(P)
    if linear:
        p = P.shape[1]
        rows, cols = np.triu_indices(p)
        factor = np.where(rows == cols, 1.0, 2.0)
        # Normal equations accumulated over chunks of points: the design matrix
        # has n * k rows.
        gram = np.zeros((rows.size, rows.size))
        rhs = np.zeros(rows.size)
        for chunk in row_chunks(P.shape[0], 4096):
            diff = P[chunk, None, :] - P[rel.nbr[chunk]]
            design = (diff[..., rows] * diff[..., cols] * factor).reshape(-1, rows.size)
            gram += design.T @ design
            rhs += design.T @ (rel.delta0[chunk] ** 2).ravel()
        coef = np.linalg.lstsq(gram, rhs, rcond=None)[0]
        M = np.zeros((p, p))
        M[rows, cols] = coef
        M = M + np.triu(M, 1).T
        w, V = np.linalg.eigh(M)
        if np.any(w > 0):
            P = np.ascontiguousarray(P @ (V * np.sqrt(np.maximum(w, 0.0))) @ V.T)
    mean = rel.mean_distance(P, rel.no_junk(), 1.0)
    return P * (rel.delta_ave / mean) if mean > 0 else P


def _ltsa_start(X, t, k, rng):
    """LTSA's t-dimensional embedding of X with k neighbours (the "ltsa" start)."""
    from sklearn.manifold import LocallyLinearEmbedding

    if k <= t:
        raise ValueError(
            f"preprocess='ltsa' needs n_neighbors > n_components (got {k} <= {t}); "
            "raise n_neighbors or use preprocess='pca'."
        )
    solver = "dense" if X.shape[0] <= _LTSA_DENSE_MAX else "arpack"
    return LocallyLinearEmbedding(
        n_neighbors=k, n_components=t, method="ltsa", eigen_solver=solver,
        random_state=rng.randint(np.iinfo(np.int32).max)).fit_transform(X)


def _restoring_step(T, rel, rows=slice(None)):
    """A first step the size of the typical distance error of ``rows`` (not a
    whole neighbour distance), clipped to [1e-3, 1] times delta_ave."""
    now = np.linalg.norm(T[rows, None, :] - T[rel.nbr[rows]], axis=2)
    typical = np.mean(np.abs(now - rel.delta0[rows]))
    return float(np.clip(typical, 1e-3 * rel.delta_ave, rel.delta_ave))


def _warn_if_poor(errors, best_iter, min_iter, distance_error, preprocess):
    """Warn when a fit can tell that its answer is poor (the measure and the fix)."""
    first = max(min_iter - 1, 0)
    if best_iter == first and errors.size > first + 1 and errors[first] > 0:
        warnings.warn(
            f"the neighbourhood error did not fall after the scaling phase "
            f"(error_ {errors[first]:.4g} at iteration {first}, no lower value in the "
            f"{errors.size - first - 1} iterations after); the embedding is where the "
            "scaling left it. Use scale_rate=0.999, more neighbours, or "
            "preprocess='ltsa'.",
            SculptingWarning, stacklevel=3,
        )
    if distance_error > DISTORTION_WARN:
        fix = ("start from preprocess='ltsa' (the principal-axes start folds rolled "
               "sheets)" if isinstance(preprocess, str) and preprocess in ("pca", "none")
               else "use more neighbours, or check that the data lie on a manifold "
                    "of n_components dimensions (estimate_intrinsic_dimension)")
        warnings.warn(
            f"the embedding restores the neighbour distances only to a mean relative "
            f"error of {distance_error:.3g} (distance_error_; a restored manifold is "
            f"below {DISTORTION_WARN}); it is probably folded or torn: {fix}.",
            SculptingWarning, stacklevel=3,
        )


class ManifoldSculpting(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Manifold Sculpting: nonlinear dimensionality reduction by graduated optimisation.

    Records each point's distances to its ``n_neighbors`` nearest neighbours and
    the angles to each neighbour's most collinear neighbour, then repeatedly
    scales the dimensions beyond ``n_components`` by ``scale_rate`` (re-expanding
    the kept ones to hold the mean neighbour distance), and restores the
    relationships by hill climbing on the kept dimensions, visiting the points
    in breadth-first order from a random point. The inner pass is compiled with
    numba and uses the paper's cache of the non-target contributions, so one
    error evaluation costs O(k t) whatever the input dimension.

    Parameters
    ----------
    n_components : int, default=2
        Target dimension t; must be smaller than the number of features.
    n_neighbors : int, default=14
        Neighbours per point k (the paper uses 14 to 18).
    scale_rate : float, default=0.99
        sigma in (0, 1): the factor applied to the dropped dimensions at every
        iteration. 0.999 is slower and more robust on hard manifolds.
    patience : int, default=50
        Stop once the error has not improved for this many iterations (counted
        after ``min_iter``).
    min_iter : int or None, default=None
        Minimum iterations; None uses ceil(log_sigma(0.01)) (459 at 0.99), after
        which 99% of the spread is gone from the dropped dimensions.
    max_iter : int or None, default=None
        Hard cap on iterations (``min_iter`` is lowered to it if larger); None
        uses ``min_iter + 10 * patience``.
    preprocess : {"ltsa", "pca", "none"}, ndarray or estimator, default="ltsa"
        Starting configuration. "ltsa" (the default) starts from scikit-learn's
        LTSA embedding with the same ``n_neighbors`` (Euclidean neighbours,
        whatever ``metric``; a spectral start, already unfolded: sculpting then
        only restores the distances and angles, and ``scale_rate``,
        ``min_iter`` and the scaling phase play no part). "pca" is the paper's
        start: the data rotated onto its principal axes without dropping any
        dimension (distances unchanged), then graduated scaling. "none" uses
        the centred data as given (its first t columns are kept).
        On the paper's own star-hole Swiss roll the principal-axes start scales
        out the roll's width and ends folded (normalised MSE 183-262 at 2,000
        points, as the reference C++ code does), while "ltsa" reaches
        0.00016-0.0012 (see docs/results.md); "pca" remains right where LTSA
        itself fails, e.g. on the translated-image manifold.
        An array of shape (n_samples, p) with p >= t, or an estimator whose
        ``fit_transform(X)`` gives one (e.g. scikit-learn's
        ``LocallyLinearEmbedding``), seeds the run. LTSA, array and estimator
        starts are mapped linearly to best restore the neighbour distances
        (up to 10 columns; wider ones are only rescaled).
    metric : str or callable, default="euclidean"
        Distance for the neighbourhoods and for the distances to restore (any
        metric scikit-learn's ``NearestNeighbors`` accepts). Angles are measured
        in the Euclidean input space. With a non-Euclidean metric the start is
        not an exact optimum; the distances are restored toward the metric's.
    adjusted_weight : float, default=10.0
        Weight of a neighbour's terms once it has been adjusted in the current
        iteration (1 before), the paper's w_ij.
    move_rule : {"total", "point"}, default="total"
        What a hill-climbing move must lower. "point" is the paper's rule: the
        moving point's own error e_i (equation (1)). "total" adds the terms of
        the other points that involve it (as their neighbour, or as the far end
        of one of their angles), so every accepted move lowers the total error.
        The paper's rule is cheaper per move but is not a descent on the total
        error: on the benchmark Swiss roll it can raise the total error by
        orders of magnitude in a pass (see docs/results.md); "total" never does.
    n_jobs : int or None, default=None
        Threads for the neighbour search and BLAS (scikit-learn's meaning: None
        is 1 unless in a joblib context, -1 all cores). The hill climbing itself
        is sequential; the result does not depend on ``n_jobs``.
    random_state : int, RandomState or None, default=None
        Seeds the start point of every breadth-first pass.
    verbose : bool, default=False
        Show a progress bar over iterations.

    Attributes
    ----------
    embedding_ : ndarray of shape (n_samples, n_components)
    error_ : ndarray of shape (n_iter_,)
        Total error (equation (1) summed over points, all weights 1) after each
        iteration.
    n_iter_ : int
        Iterations run.
    best_iter_ : int
        Iteration whose state ``embedding_`` holds (the lowest error after
        ``min_iter``).
    min_iter_, max_iter_ : int
        The resolved iteration bounds.
    delta_ave_ : float
        Mean distance between neighbours in the input.
    eta_ : float
        Hill-climbing step size at the end.
    scale_ : float
        Fraction of the original spread left in the dropped dimensions when
        they were dropped.
    neighbors_ : ndarray of shape (n_samples, n_neighbors)
        Neighbour indices used.
    distance_error_ : float
        Mean relative error of the neighbour distances in ``embedding_``
        (:func:`~landmarking.embedding._sculpting_core.neighbor_distance_error`);
        above 0.02 the fit warns.
    n_features_in_ : int

    Warns
    -----
    SculptingWarning
        When the fit can tell that its embedding is poor: the error did not fall
        after the scaling phase, or ``distance_error_`` exceeds 0.02 (a folded
        or torn embedding). Each message names the measure and the fix.

    Notes
    -----
    float32 input gives a float32 ``embedding_`` and ``transform``; the
    relationships and the hill climbing run in float64 on purpose, because
    the climber compares errors that differ by less than float32's resolution
    once the fit is close.

    Examples
    --------
    >>> from landmarking.datasets import make_sculpting_s_curve
    >>> from landmarking.metrics import affine_normalized_mse
    >>> X, uv = make_sculpting_s_curve(300, random_state=0)
    >>> model = ManifoldSculpting(n_neighbors=12, scale_rate=0.95, random_state=0)
    >>> Y = model.fit_transform(X)
    >>> Y.shape
    (300, 2)
    >>> affine_normalized_mse(Y, uv) < 0.01
    True
    """

    def __init__(self, *, n_components: int = 2, n_neighbors: int = 14,
                 scale_rate: float = 0.99, patience: int = 50,
                 min_iter: int | None = None, max_iter: int | None = None,
                 preprocess: Literal["ltsa", "pca", "none"] | ArrayLike | BaseEstimator = "ltsa",
                 metric: Metric = "euclidean",
                 adjusted_weight: float = 10.0, move_rule: Literal["total", "point"] = "total",
                 n_jobs: int | None = None, random_state: RandomStateLike = None,
                 verbose: bool = False) -> None:
        self.n_components = n_components
        self.n_neighbors = n_neighbors
        self.scale_rate = scale_rate
        self.patience = patience
        self.min_iter = min_iter
        self.max_iter = max_iter
        self.preprocess = preprocess
        self.metric = metric
        self.adjusted_weight = adjusted_weight
        self.move_rule = move_rule
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ checks
    def _check_params(self):
        t = check_positive_int(self.n_components, "n_components")
        k = check_positive_int(self.n_neighbors, "n_neighbors")
        sigma = check_open_interval(self.scale_rate, "scale_rate", 0.0, 1.0)
        patience = check_positive_int(self.patience, "patience")
        min_iter = (default_min_iter(sigma) if self.min_iter is None
                    else check_positive_int(self.min_iter, "min_iter", minimum=0))
        max_iter = (min_iter + 10 * patience if self.max_iter is None
                    else check_positive_int(self.max_iter, "max_iter"))
        w_adj = check_positive_float(self.adjusted_weight, "adjusted_weight")
        check_choice(self.move_rule, "move_rule", MOVE_RULES)
        check_n_jobs(self.n_jobs)
        if isinstance(self.preprocess, str):
            check_choice(self.preprocess, "preprocess", PREPROCESS_CHOICES)
        elif not (hasattr(self.preprocess, "fit_transform") or hasattr(self.preprocess, "shape")
                  or isinstance(self.preprocess, (list, tuple))):
            raise TypeError(
                "preprocess must be 'pca', 'none', 'ltsa', an array of starting coordinates or an "
                f"estimator with fit_transform, got {type(self.preprocess).__name__}."
            )
        # max_iter is a hard cap, so min_iter never exceeds it.
        return t, k, sigma, patience, min(min_iter, max_iter), max_iter, w_adj

    def _check_shapes(self, X, t, k):
        n, D = X.shape
        if t >= D:
            raise ValueError(
                f"n_components={t} must be smaller than the number of features "
                f"(n_features={D}); Manifold Sculpting removes dimensions, so ask for "
                "fewer components."
            )
        if k >= n:
            raise ValueError(
                f"n_neighbors={k} must be smaller than the number of samples ({n}); "
                "pass fewer neighbours or more data."
            )

    # -------------------------------------------------------------- fit parts
    def _neighbors(self, X, k, neighbors):
        if neighbors is None:
            dist, idx = nearest_neighbors(X, k, metric=self.metric, n_jobs=self.n_jobs)
            return idx, (None if self.metric == "euclidean" else dist)
        if isinstance(neighbors, tuple) and len(neighbors) == 2:
            dist, idx = (np.asarray(a) for a in neighbors)
        else:
            dist, idx = None, np.asarray(neighbors)
        if idx.ndim != 2 or idx.shape[0] != X.shape[0] or idx.shape[1] < 1:
            raise ValueError(
                f"neighbors must be an (n_samples, n_neighbors) index array (or a "
                f"(distances, indices) pair), got shape {idx.shape} for {X.shape[0]} samples."
            )
        if not np.issubdtype(idx.dtype, np.integer) or idx.min() < 0 or idx.max() >= X.shape[0]:
            raise ValueError("neighbors must hold integer row indices in [0, n_samples).")
        if np.any(idx == np.arange(X.shape[0])[:, None]):
            raise ValueError("neighbors must not list a point as its own neighbour.")
        if dist is not None and (dist.shape != idx.shape or not np.all(np.isfinite(dist))
                                 or np.any(dist < 0)):
            raise ValueError("neighbor distances must be finite, >= 0 and shaped like the indices.")
        return idx.astype(np.int64), dist

    def _start(self, X, X_rel, rel, t, exact_start, rng):
        """Starting configuration P (n, p >= t), centred, in the data's units."""
        pre = self.preprocess
        if isinstance(pre, str) and pre == "ltsa":
            pre = _ltsa_start(X, t, rel.nbr.shape[1], rng)
        elif isinstance(pre, str):
            P = np.array(X_rel if pre == "pca" else X - X.mean(axis=0), dtype=float)
            if not exact_start:
                P = _calibrate(P, rel, linear=False)
            return P
        P = clone(pre).fit_transform(X) if hasattr(pre, "fit_transform") else pre
        P = np.array(P, dtype=float)
        if P.ndim != 2 or P.shape[0] != X.shape[0] or P.shape[1] < t:
            raise ValueError(
                f"the preprocessed data has shape {P.shape}; it needs one row per "
                f"sample ({X.shape[0]}) and at least n_components={t} columns."
            )
        if not np.all(np.isfinite(P)):
            raise ValueError("the preprocessed data contains NaN or infinity.")
        return _calibrate(P - P.mean(axis=0), rel, linear=P.shape[1] <= _MAX_CALIBRATED)

    @staticmethod
    def _check_clamps(clamp_indices, clamp_values, n, t):
        if clamp_indices is None and clamp_values is None:
            return None, None
        if clamp_indices is None or clamp_values is None:
            raise ValueError("pass clamp_indices and clamp_values together.")
        idx = np.asarray(clamp_indices)
        if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
            raise ValueError("clamp_indices must be a 1-D array of integer row indices.")
        if idx.size and (idx.min() < -n or idx.max() >= n):
            raise ValueError(f"clamp_indices must lie in [0, {n}).")
        idx = np.mod(idx, n)
        if np.unique(idx).size != idx.size:
            raise ValueError("clamp_indices must not repeat a point.")
        vals = np.asarray(clamp_values, dtype=float)
        if vals.ndim == 1 and t == 1:
            vals = vals[:, None]
        if vals.shape != (idx.size, t):
            raise ValueError(
                f"clamp_values must have shape (len(clamp_indices), n_components) = "
                f"({idx.size}, {t}), got {vals.shape}."
            )
        if not np.all(np.isfinite(vals)):
            raise ValueError("clamp_values contains NaN or infinity.")
        return idx, vals

    @staticmethod
    def _place_clamped(T, idx, vals):
        """Move the free points rigidly into the clamped points' frame, then pin those."""
        src = T[idx]
        mu_s, mu_v = src.mean(axis=0), vals.mean(axis=0)
        R = np.eye(T.shape[1])
        if idx.size > 1:
            R, _ = orthogonal_procrustes(src - mu_s, vals - mu_v)
        T[...] = (T - mu_s) @ R + mu_v
        T[idx] = vals

    # --------------------------------------------------------------- public
    def fit(self, X: ArrayLike, y: Any = None, *, clamp_indices: ArrayLike | None = None,
            clamp_values: ArrayLike | None = None,
            neighbors: ArrayLike | tuple[ArrayLike, ArrayLike] | None = None) -> Self:
        """Sculpt X down to ``n_components`` dimensions.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored
        clamp_indices : array of int or None
            Semi-supervision: points held fixed at ``clamp_values`` throughout
            (they are never moved, and neighbours weigh them as adjusted).
        clamp_values : ndarray of shape (len(clamp_indices), n_components) or None
            Their coordinates, in the units of the data's distances (the other
            points start rigidly aligned to them, and the target dimensions are
            not re-expanded since the clamped points fix the scale).
        neighbors : ndarray of shape (n_samples, k), or (distances, indices), or None
            A precomputed neighbour list (custom relationships); with distances,
            those are the distances to restore. Overrides ``n_neighbors`` and
            ``metric``.

        Returns
        -------
        self
        """
        t, k, sigma, patience, min_iter, max_iter, w_adj = self._check_params()
        X = validate_data(self, X, dtype=[np.float64, np.float32], ensure_min_samples=2)
        out_dtype = X.dtype
        # float64 inside on purpose: the hill climber compares errors that differ
        # by far less than float32's resolution once the fit is close.
        X = X.astype(np.float64, copy=False)
        n = X.shape[0]
        if neighbors is not None:
            k_given = np.asarray(neighbors[1] if isinstance(neighbors, tuple) else neighbors)
            k = k_given.shape[1] if k_given.ndim == 2 else k
        self._check_shapes(X, t, k)
        clamp_idx, clamp_vals = self._check_clamps(clamp_indices, clamp_values, n, t)
        rng = check_random_state(self.random_state)

        check_memory(8 * n * (16 * k + 2 * X.shape[1]),
                     what=f"the neighbour tables of {n} points x {k} neighbours",
                     way_out="use fewer neighbours (n_neighbors) or fewer rows")
        with thread_limits(self.n_jobs):
            nbr, dist = self._neighbors(X, k, neighbors)
            # A lossless rotation onto the principal axes: same distances and angles,
            # at most min(n, D) columns, which makes the relations cheaper on images.
            X_rel = PCA(svd_solver="full").fit_transform(X)
            rel = Relations(X_rel, nbr, dist, self.move_rule)
            if not rel.delta_ave > 0:
                raise ValueError(
                    "all neighbours coincide (mean neighbour distance 0); remove duplicate "
                    "rows or pass more distinct data."
                )
            P = self._start(X, X_rel, rel, t, exact_start=dist is None, rng=rng)
            T = np.ascontiguousarray(P[:, :t])
            junk = rel.junk(P[:, t:])
            eta = rel.delta_ave
            if not np.any(junk[0]):
                # Nothing to scale out (a start with exactly t columns): only the
                # restoring passes remain, from a step the size of the typical
                # distance error rather than a whole neighbour distance.
                min_iter = 0 if self.min_iter is None else min_iter
                eta = _restoring_step(T, rel)
            heavy = np.zeros(n, dtype=np.bool_)
            if clamp_idx is not None:
                self._place_clamped(T, clamp_idx, clamp_vals)
                heavy[clamp_idx] = True

            errors, scale, eta, best = sculpt(
                T, junk, rel, sigma=sigma, scale=1.0, min_iter=min_iter,
                max_iter=max_iter, patience=patience, heavy=heavy,
                expand=clamp_idx is None, w_adj=w_adj, eta=eta, rng=rng,
                verbose=self.verbose)

        self.embedding_ = T.astype(out_dtype, copy=False)
        self.error_ = np.asarray(errors)
        self.n_iter_ = len(errors)
        self.best_iter_ = best
        self.min_iter_, self.max_iter_ = min_iter, max_iter
        self.delta_ave_ = rel.delta_ave
        self.eta_ = eta
        self.scale_ = scale
        self.neighbors_ = nbr
        self.distance_error_ = neighbor_distance_error(T, nbr, rel.delta0)
        self._n_features_out = t
        self._X_fit = X
        self._Y_fit = T
        self._custom_neighbors = neighbors is not None
        self._neighbor_index = LazyNeighborIndex()  # built by the first transform
        _warn_if_poor(self.error_, best, min_iter, self.distance_error_, self.preprocess)
        return self

    def fit_transform(self, X: ArrayLike, y: Any = None, **fit_params: Any) -> np.ndarray:
        """Fit and return ``embedding_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored
        **fit_params : clamp_indices, clamp_values, neighbors (see :meth:`fit`)

        Returns
        -------
        ndarray of shape (n_samples, n_components)
        """
        return self.fit(X, y, **fit_params).embedding_

    def add_samples(self, X_new: ArrayLike) -> Self:
        """Pseudo-incremental learning (the paper's Section IV-D).

        New points join a fitted model in two steps: the old points are clamped
        at their embedding while the new ones settle (they start at the LLE
        reconstruction of their nearest old points' coordinates), then every
        point is unclamped and the whole set settles. Neighbours and
        relationships are recomputed on the union. Both steps stop once the
        error has not improved for ``patience`` iterations.

        Parameters
        ----------
        X_new : array-like of shape (n_new, n_features)

        Returns
        -------
        self
            ``embedding_`` now has the old rows first, then the new ones;
            ``error_`` and ``n_iter_`` describe the second (unclamped) step, and
            ``incremental_n_iter_`` gives the iterations of both steps.
        """
        check_is_fitted(self, "embedding_")
        if self._custom_neighbors:
            raise ValueError(
                "add_samples recomputes neighbours, but this model was fitted with a "
                "precomputed neighbour list; refit on all the data with a new list instead."
            )
        X_new = validate_data(self, X_new, dtype=[np.float64, np.float32], reset=False)
        X_new = X_new.astype(np.float64, copy=False)
        t, k, _, patience, _, max_iter, w_adj = self._check_params()
        X_old, Y_old = self._X_fit, self._Y_fit
        n_old = X_old.shape[0]
        X = np.vstack([X_old, X_new])
        rng = check_random_state(self.random_state)

        with thread_limits(self.n_jobs):
            nbr, dist = self._neighbors(X, k, None)
            rel = Relations(PCA(svd_solver="full").fit_transform(X), nbr, dist,
                             self.move_rule)
            k_old = min(k, n_old)
            _, idx = query_neighbors(X_old, X_new, k_old, metric=self.metric,
                                     n_jobs=self.n_jobs)
            w = _barycentric_weights(X_new, X_old[idx])
            T = np.ascontiguousarray(np.vstack([Y_old, np.einsum("nk,nkt->nt", w, Y_old[idx])]))
            heavy = np.zeros(X.shape[0], dtype=np.bool_)
            heavy[:n_old] = True
            iters = []
            for clamp in (True, False):
                heavy[:n_old] = clamp
                errors, _, eta, best = sculpt(
                    T, rel.no_junk(), rel, sigma=1.0, scale=0.0, min_iter=0,
                    max_iter=max_iter, patience=patience, heavy=heavy, expand=False,
                    w_adj=w_adj, eta=rel.delta_ave, rng=rng, verbose=self.verbose,
                    desc="settling new points" if clamp else "settling all points")
                iters.append(len(errors))

        self.embedding_ = T.astype(self.embedding_.dtype, copy=False)
        self._Y_fit = T
        self.distance_error_ = neighbor_distance_error(T, nbr, rel.delta0)
        self.error_ = np.asarray(errors)
        self.n_iter_ = len(errors)
        self.best_iter_ = best
        self.incremental_n_iter_ = tuple(iters)
        self.delta_ave_ = rel.delta_ave
        self.eta_ = eta
        self.neighbors_ = nbr
        self._X_fit = X
        return self

    def transform(self, X: ArrayLike) -> np.ndarray:
        """Place new points in the fitted embedding, which stays as it is.

        Each new point starts at the LLE reconstruction of its ``n_neighbors``
        nearest fitted points' coordinates and is then sculpted with every
        fitted point held fixed (the first step of :meth:`add_samples`): its
        neighbours are searched among the fitted points only, so it restores its
        distances and angles to them. A row equal to a fitted point gets that
        point's coordinates. Nothing of the fitted model changes.

        Cost: a neighbour query of the m new rows against the n fitted ones
        (in an exact index of the fitted points, built on the first call and
        kept until :meth:`add_samples` changes them), the relationships of all
        n + m points (O((n + m) k^2 D) once), then passes of O((n + m) k)
        until the error has not improved for ``patience`` passes (at most
        ``max_iter_``). For a one-off batch that is about one restoring phase of
        a fit; :meth:`add_samples` goes on to let every point settle.

        Parameters
        ----------
        X : array-like of shape (n_new, n_features)

        Returns
        -------
        ndarray of shape (n_new, n_components)
            float32 for float32 input, else float64.
        """
        check_is_fitted(self, "embedding_")
        X_new = validate_data(self, X, dtype=[np.float64, np.float32], reset=False)
        out_dtype = X_new.dtype
        X_new = X_new.astype(np.float64, copy=False)
        if self._custom_neighbors:
            raise ValueError(
                "transform searches the new points' neighbours, but this model was "
                "fitted with a precomputed neighbour list; refit without neighbors= "
                "or place the points with your own neighbour list and add_samples."
            )
        t, _, _, patience, _, _, w_adj = self._check_params()
        X_old, Y_old = self._X_fit, self._Y_fit
        n_old, m = X_old.shape[0], X_new.shape[0]
        k = min(self.neighbors_.shape[1], n_old)
        rng = check_random_state(self.random_state)
        with thread_limits(self.n_jobs):
            # A loaded model has no slot (it is not saved); setdefault is atomic.
            kept = self.__dict__.setdefault("_neighbor_index", LazyNeighborIndex())
            index = kept.get(X_old, method="exact", metric=self.metric, n_jobs=self.n_jobs)
            dist, idx = index.query(X_new, k)
            w = _barycentric_weights(X_new, X_old[idx])
            Y_new = np.einsum("nk,nkt->nt", w, Y_old[idx])
            # Equal rows, tested exactly: a brute-force distance of 0 can come out ~1e-8.
            same = np.all(X_old[idx[:, 0]] == X_new, axis=1)
            Y_new[same] = Y_old[idx[same, 0]]
            if np.all(same):
                return Y_new.astype(out_dtype, copy=False)
            nbr = np.vstack([self.neighbors_, idx]).astype(np.int64)
            X_all = np.vstack([X_old, X_new])
            rel = Relations(X_all, nbr, None, self.move_rule)
            if self.metric != "euclidean":
                rel.delta0[n_old:] = dist
            # The fit's scale, so that a point's placement does not depend on
            # which other points come in the same batch.
            rel.delta_ave = self.delta_ave_
            T = np.ascontiguousarray(np.vstack([Y_old, Y_new]))
            heavy = np.ones(n_old + m, dtype=np.bool_)
            heavy[n_old:] = same
            new_rows = n_old + np.flatnonzero(~same)
            sculpt(T, rel.no_junk(), rel, sigma=1.0, scale=0.0, min_iter=0,
                    max_iter=self.max_iter_, patience=patience, heavy=heavy,
                    expand=False, w_adj=w_adj, eta=_restoring_step(T, rel, new_rows),
                    rng=rng, verbose=self.verbose, desc="placing new points")
        return T[n_old:].astype(out_dtype, copy=False)

    # The kept neighbour index is rebuilt by transform; model files leave it out.
    _persistence_transient = ("_neighbor_index",)

    def _restore_transient(self):
        self._neighbor_index = LazyNeighborIndex()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.non_deterministic = False
        return tags


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
        As in :class:`ManifoldSculpting`.
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
    X = np.asarray(X, dtype=float)
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
    model = ManifoldSculpting(n_components=max_dim, n_neighbors=n_neighbors,
                              scale_rate=scale_rate, patience=patience, preprocess="pca",
                              n_jobs=n_jobs, random_state=random_state)
    with warnings.catch_warnings():
        # A poor fit at max_dim is expected when max_dim is below the intrinsic
        # dimension; the errors below measure exactly that.
        warnings.simplefilter("ignore", SculptingWarning)
        model.fit(X)
    rng = check_random_state(random_state)
    sigma = model.scale_rate
    min_iter = model.min_iter_
    nbr = model.neighbors_
    with thread_limits(n_jobs):
        rel = Relations(PCA(svd_solver="full").fit_transform(X), nbr)
        Y = model.embedding_
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
                    expand=True, w_adj=10.0, eta=model.eta_, rng=rng, verbose=False)
            Y = T
            errors[d - 1] = rel.total_error(T, zero, 0.0) / n
    floored = np.maximum(errors, 1e-4)
    dim = max_dim
    for d in range(max_dim - 1, 0, -1):
        if floored[d - 1] > jump * floored[d:].max():
            break
        dim = d
    return (dim, errors) if return_errors else dim
