"""The Manifold Sculpting estimator (Gashler, Ventura & Martinez, IEEE TSMC-B 2011).

The estimator layer only: parameters, fitted state, semi-supervision and new
points. The numerics are :func:`~landmarking.sculpting.fit.manifold_sculpting`
(the start and one run of the loop), :mod:`._incremental` (new points) and, below
them, the loop :mod:`._loop` and the compiled pass :mod:`._loops`.
"""

from __future__ import annotations

from typing import Any, Literal, Self

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .._parallel import thread_limits
from .._typing import ArrayLike, RandomStateLike
from .._validation import check_params
from ..neighbors import LazyNeighborIndex, Metric
from ._incremental import place_new_points, settle_new_points
from .fit import (
    PARAMETER_RULES,
    SculptingWarning,
    _quality,
    _sculpt_data,
    _warn_if_poor,
    schedule,
)

__all__ = ["ManifoldSculpting", "SculptingWarning"]


class ManifoldSculpting(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Manifold Sculpting: nonlinear dimensionality reduction by graduated optimisation.

    Records each point's distances to its ``n_neighbors`` nearest neighbours and
    the angles to each neighbour's most collinear neighbour, then repeatedly
    scales the dimensions beyond ``n_components`` by ``scale_rate`` (re-expanding
    the kept ones to hold the mean neighbour distance), and restores the
    relationships by hill climbing on the kept dimensions, visiting the points
    in breadth-first order from a random point. The inner pass is compiled
    ahead of time (Cython) and uses the paper's cache of the non-target contributions, so one
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
        Starting configuration. "ltsa" (the default) starts from the LTSA
        embedding (local tangent space alignment, as scikit-learn's
        ``LocallyLinearEmbedding(method="ltsa")``, in ``sculpting/ltsa.py``)
        with the same ``n_neighbors`` (Euclidean neighbours,
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
        Threads for the neighbour search and BLAS (None: scikit-learn's rule,
        ``OMP_NUM_THREADS`` if set, else the CPUs this process may use, within an
        enclosing ``threadpool_limits``, and BLAS's threads as they are; inside
        ``joblib.parallel_config(n_jobs=...)`` that many; -1 all cores). The hill climbing itself
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
        (:func:`~landmarking.sculpting._loop.neighbor_distance_error`);
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


    _parameter_rules = PARAMETER_RULES

    def _schedule(self):
        """The checked parameters, iteration bounds resolved (a ``Schedule``)."""
        return schedule(check_params(self, self._parameter_rules))

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
        plan = self._schedule()
        X = validate_data(self, X, dtype=[np.float64, np.float32], ensure_min_samples=2)
        # float64 inside on purpose: the hill climber compares errors that differ
        # by far less than float32's resolution once the fit is close.
        T, result = _sculpt_data(
            X.astype(np.float64, copy=False), plan, preprocess=self.preprocess,
            metric=self.metric, clamp_indices=clamp_indices, clamp_values=clamp_values,
            neighbors=neighbors, n_jobs=self.n_jobs, rng=self.random_state,
            verbose=self.verbose)
        self.embedding_ = T.astype(X.dtype, copy=False)
        self.error_ = result.error
        self.n_iter_ = result.n_iter
        self.best_iter_ = result.best_iter
        self.min_iter_, self.max_iter_ = result.min_iter, result.max_iter
        self.delta_ave_ = result.delta_ave
        self.eta_ = result.eta
        self.scale_ = result.scale
        self.neighbors_ = result.neighbors
        self.distance_error_ = result.distance_error
        self._n_features_out = plan.n_components
        self._X_fit = X.astype(np.float64, copy=False)
        self._Y_fit = T
        self._custom_neighbors = neighbors is not None
        self._neighbor_index = LazyNeighborIndex()  # built by the first transform
        _warn_if_poor(*_quality(result), self.preprocess)
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
        check_is_fitted(self, "embedding_")
        if self._custom_neighbors:
            raise ValueError(
                "add_samples recomputes neighbours, but this model was fitted with a "
                "precomputed neighbour list; refit on all the data with a new list instead."
            )
        X_new = validate_data(self, X_new, dtype=[np.float64, np.float32], reset=False)
        X, T, iterations, run = settle_new_points(
            self._X_fit, self._Y_fit, X_new.astype(np.float64, copy=False), self._schedule(),
            metric=self.metric, n_jobs=self.n_jobs, rng=check_random_state(self.random_state),
            verbose=self.verbose)
        self.embedding_ = T.astype(self.embedding_.dtype, copy=False)
        self._Y_fit = T
        self.distance_error_ = run["distance_error"]
        self.error_ = run["errors"]
        self.n_iter_ = len(run["errors"])
        self.best_iter_ = run["best_iter"]
        self.incremental_n_iter_ = iterations
        self.delta_ave_ = run["delta_ave"]
        self.eta_ = run["eta"]
        self.neighbors_ = run["neighbors"]
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
        if self._custom_neighbors:
            raise ValueError(
                "transform searches the new points' neighbours, but this model was "
                "fitted with a precomputed neighbour list; refit without neighbors= "
                "or place the points with your own neighbour list and add_samples."
            )
        plan = self._schedule()
        with thread_limits(self.n_jobs):
            # A loaded model has no slot (it is not saved); setdefault is atomic.
            kept = self.__dict__.setdefault("_neighbor_index", LazyNeighborIndex())
            index = kept.get(self._X_fit, method="exact", metric=self.metric,
                             n_jobs=self.n_jobs)
            Y_new = place_new_points(
                self._X_fit, self._Y_fit, self.neighbors_, X_new.astype(np.float64, copy=False),
                plan, delta_ave=self.delta_ave_, max_iter=self.max_iter_, metric=self.metric,
                index=index, rng=check_random_state(self.random_state), verbose=self.verbose)
        return Y_new.astype(X_new.dtype, copy=False)

    # The kept neighbour index is rebuilt by transform; model files leave it out.
    _persistence_transient = ("_neighbor_index",)

    def _restore_transient(self):
        self._neighbor_index = LazyNeighborIndex()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.non_deterministic = False
        return tags

