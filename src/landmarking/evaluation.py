"""Judging landmarks: downstream classification and geometry.

Classification follows Liang & Paisley (2015, Section 5.2): landmark features
w(x) = [phi_t1(x), ..., phi_tn(x)] feed an L2-regularised (multinomial) logistic
regression whose strength lambda is chosen on a grid 1e-3, 1e-2, ..., 1e3, either
on a validation set or by cross-validation.

lambda convention: the loss is sum_i log-loss_i + (lambda / 2) ||w||^2 (summed,
not averaged, over the training points), which is scikit-learn's objective with
C = 1 / lambda. The intercept is not penalised.

Geometry: how far each landmark lies from the data, relative to the typical
nearest-neighbour spacing of the data (a landmark "on the manifold" has a ratio
of order 1), and the covering radius of the data by the landmarks (the largest
distance from a data point to its nearest landmark). Every pass over all N rows
goes block by block through :mod:`landmarking._blocks`, so memory stays bounded
and X may be a NumPy array, a scipy CSR matrix, a memory map, a Zarr array or a
Dask array (on Dask the blocks are computed by the workers).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.utils import check_random_state

from ._blocks import block_bounds, check_rows, reduce_row_blocks, take_rows, working_dtype
from ._validation import check_positive_int
from .kernels import gaussian_features, squared_distances

__all__ = ["PAPER_LAMBDAS", "landmark_features", "select_by_validation",
           "cross_validated_accuracy", "ClassificationResult", "nearest_distances",
           "nearest_neighbor_spacing", "landmark_to_data_distances", "covering_radius",
           "landmark_geometry"]

#: The paper's grid of L2 strengths, lambda in {1e-3, 1e-2, ..., 1e3}.
PAPER_LAMBDAS = 10.0 ** np.arange(-3, 4)


def landmark_features(
    model: Any, X: ArrayLike, *, kernel_width: float | None = None
) -> np.ndarray:
    """Features of X from a fitted landmark estimator or from raw landmarks.

    Parameters
    ----------
    model : fitted estimator with ``transform``, or ndarray of shape (n_landmarks, n_features)
        An estimator (``GPLandmarks``, any baseline) gives its own features;
        an array of landmarks needs ``kernel_width``.
    X : array of shape (n_samples, n_features)
        NumPy array, scipy CSR matrix, memory map, Zarr or Dask array, read one
        block at a time.
    kernel_width : float, optional
        Width eta of exp(-||x - t||^2 / eta); required when ``model`` is an array.

    Returns
    -------
    ndarray of shape (n_samples, n_landmarks)
        float32 for float32 input, else float64; a lazy Dask array for Dask input.

    Examples
    --------
    >>> X = np.array([[0.0], [1.0]])
    >>> landmark_features(np.array([[0.0]]), X, kernel_width=1.0).round(3).ravel()
    array([1.   , 0.368])
    """
    if hasattr(model, "transform"):
        return model.transform(X)
    landmarks = np.asarray(model)
    if kernel_width is None:
        raise ValueError(
            "landmark_features needs kernel_width when given an array of landmarks; "
            "pass kernel_width=..., or pass a fitted landmark estimator instead."
        )
    X = check_rows(X)
    if landmarks.ndim != 2 or landmarks.shape[1] != X.shape[1]:
        raise ValueError(
            f"landmarks must have shape (n_landmarks, {X.shape[1]}) to match X; "
            f"got {landmarks.shape}."
        )
    return gaussian_features(X, landmarks.astype(working_dtype(X)), float(kernel_width))


@dataclass
class ClassificationResult:
    """What :func:`select_by_validation` and :func:`cross_validated_accuracy` return.

    Attributes
    ----------
    lambdas : ndarray
        The grid of L2 strengths tried.
    scores : ndarray
        Validation (or mean cross-validated) accuracy per lambda.
    best_lambda : float
        The lambda of the highest score (the strongest one among ties).
    model : LogisticRegression
        Refit at ``best_lambda`` on the training data.
    test_accuracy : float or None
        Accuracy on the test set, when one was given.
    """

    lambdas: np.ndarray
    scores: np.ndarray
    best_lambda: float
    model: LogisticRegression = field(repr=False)
    test_accuracy: float | None = None


def _check_lambdas(lambdas):
    lambdas = np.asarray(lambdas, dtype=np.float64).ravel()
    if lambdas.size == 0 or not np.all(np.isfinite(lambdas)) or np.any(lambdas <= 0):
        raise ValueError(
            f"lambdas must be a nonempty list of positive numbers, got {lambdas!r}; "
            "the paper's grid is PAPER_LAMBDAS (1e-3 ... 1e3)."
        )
    return lambdas


def _best(lambdas, scores):
    # Ties go to the strongest regularisation: the simplest model that scores best.
    best = np.flatnonzero(scores == scores.max())
    return float(lambdas[best].max())


def select_by_validation(
    F_train: ArrayLike,
    y_train: ArrayLike,
    F_val: ArrayLike,
    y_val: ArrayLike,
    F_test: ArrayLike | None = None,
    y_test: ArrayLike | None = None,
    *,
    lambdas: ArrayLike = PAPER_LAMBDAS,
    max_iter: int = 1000,
    tol: float = 1e-4,
    warm_start: bool = True,
) -> ClassificationResult:
    """Choose lambda on a validation set, as in the paper's MNIST experiment.

    Fits one L2 logistic regression per lambda (C = 1 / lambda; see the module
    docstring) on the training features, scores each on the validation set, and
    reports the test accuracy of the best one.

    Parameters
    ----------
    F_train, F_val, F_test : ndarray of shape (n, n_landmarks)
        Landmark features; the test pair is optional.
    y_train, y_val, y_test : ndarray of shape (n,)
    lambdas : array-like of float, default=PAPER_LAMBDAS
    max_iter : int, default=1000
        L-BFGS iterations per fit.
    tol : float, default=1e-4
    warm_start : bool, default=True
        Fit lambdas from the largest to the smallest, each starting from the
        previous solution (same optima, up to ``tol``, in far fewer iterations).

    Returns
    -------
    ClassificationResult

    Examples
    --------
    >>> rng = np.random.RandomState(0)
    >>> F = rng.normal(size=(200, 3)); y = (F[:, 0] > 0).astype(int)
    >>> res = select_by_validation(F[:100], y[:100], F[100:], y[100:])
    >>> bool(res.scores.max() > 0.9)
    True
    """
    lambdas = _check_lambdas(lambdas)
    max_iter = check_positive_int(max_iter, "max_iter")
    scores = np.empty(len(lambdas))
    models = [None] * len(lambdas)
    solver = LogisticRegression(max_iter=max_iter, tol=tol, warm_start=warm_start)
    # From strong to weak regularisation: each fit starts from the previous optimum
    # when warm_start is on, which saves most L-BFGS iterations on large data.
    for i in np.argsort(-lambdas, kind="stable"):
        solver.set_params(C=1.0 / lambdas[i]).fit(F_train, y_train)
        scores[i] = solver.score(F_val, y_val)
        models[i] = copy.deepcopy(solver)
    best_lambda = _best(lambdas, scores)
    model = models[int(np.flatnonzero(lambdas == best_lambda)[0])]
    test = None if F_test is None else float(model.score(F_test, y_test))
    return ClassificationResult(lambdas, scores, best_lambda, model, test)


def cross_validated_accuracy(
    F: ArrayLike,
    y: ArrayLike,
    *,
    lambdas: ArrayLike = PAPER_LAMBDAS,
    cv: int = 5,
    F_test: ArrayLike | None = None,
    y_test: ArrayLike | None = None,
    max_iter: int = 1000,
    tol: float = 1e-4,
    random_state: int | np.random.RandomState | None = None,
) -> ClassificationResult:
    """Choose lambda by stratified k-fold cross-validation, then refit on all of ``F``.

    Parameters
    ----------
    F : ndarray of shape (n_samples, n_landmarks)
    y : ndarray of shape (n_samples,)
    lambdas : array-like of float, default=PAPER_LAMBDAS
    cv : int, default=5
        Number of folds (shuffled, seeded by ``random_state``).
    F_test, y_test : optional test set
    max_iter, tol : L-BFGS settings
    random_state : int, RandomState instance or None

    Returns
    -------
    ClassificationResult
        ``scores`` are the mean fold accuracies per lambda.

    Examples
    --------
    >>> rng = np.random.RandomState(0)
    >>> F = rng.normal(size=(120, 2)); y = (F[:, 1] > 0).astype(int)
    >>> res = cross_validated_accuracy(F, y, cv=3, random_state=0)
    >>> bool(res.scores.max() > 0.9)
    True
    """
    lambdas = _check_lambdas(lambdas)
    cv = check_positive_int(cv, "cv", minimum=2)
    rng = check_random_state(random_state)
    folds = StratifiedKFold(n_splits=cv, shuffle=True, random_state=rng.randint(2**31 - 1))
    scores = np.array([
        cross_val_score(LogisticRegression(C=1.0 / lam, max_iter=max_iter, tol=tol),
                        F, y, cv=folds, scoring="accuracy").mean()
        for lam in lambdas
    ])
    best_lambda = _best(lambdas, scores)
    refit = LogisticRegression(C=1.0 / best_lambda, max_iter=max_iter, tol=tol).fit(F, y)
    test = None if F_test is None else float(refit.score(F_test, y_test))
    return ClassificationResult(lambdas, scores, best_lambda, refit, test)


def nearest_distances(
    query: ArrayLike,
    reference: np.ndarray,
    *,
    exclude: np.ndarray | None = None,
    chunk_size: int = 2048,
) -> tuple[np.ndarray, np.ndarray]:
    """Euclidean distance from each query row to its nearest reference row.

    One pass over the reference rows (N), block by block, so memory is about
    ``len(query) * chunk_size`` values; ties go to the lower reference row.

    Parameters
    ----------
    query : ndarray of shape (m, d)
    reference : array of shape (n, d)
        NumPy array, scipy CSR matrix, memory map, Zarr or Dask array.
    exclude : ndarray of shape (m,) of int, optional
        For each query row, a reference row to skip (its own index, when the
        queries are reference rows); exact duplicates elsewhere still count.
    chunk_size : int
        Reference rows per block (for input without storage chunks).

    Returns
    -------
    distances : ndarray of shape (m,)
    indices : ndarray of shape (m,)
        Reference row of each nearest neighbour.
    """
    if not hasattr(reference, "shape"):
        reference = np.asarray(reference)
    query = np.asarray(query, dtype=np.float64)
    bounds = block_bounds(reference, chunk_size)
    parts = reduce_row_blocks(_two_nearest_of_block, reference, query, bounds=bounds)
    # Each block's two nearest rows per query, in block order: enough to skip one
    # excluded row and still find the nearest of the others.
    d2 = np.concatenate([p[0] for p in parts], axis=1)
    starts = bounds[:-1]
    idx = np.concatenate([p[1] + start for p, start in zip(parts, starts, strict=True)], axis=1)
    if exclude is not None:
        d2[idx == np.asarray(exclude)[:, None]] = np.inf
    # The first minimum: the earliest block, and within it the lower row.
    best = np.argmin(d2, axis=1)
    rows = np.arange(len(best))
    return np.sqrt(d2[rows, best]), idx[rows, best].astype(np.intp)


def _two_nearest_of_block(block, query):
    """Squared distance and local row of each query's two nearest rows of a block
    (ties to the lower row; a one-row block pads with inf)."""
    d2 = squared_distances(block.astype(np.float64), query).T
    rows = np.arange(d2.shape[0])
    first = np.argmin(d2, axis=1)
    first_d2 = d2[rows, first]
    if d2.shape[1] < 2:
        return np.column_stack([first_d2, np.full_like(first_d2, np.inf)]), \
            np.column_stack([first, first])
    d2[rows, first] = np.inf
    second = np.argmin(d2, axis=1)
    return (np.column_stack([first_d2, d2[rows, second]]),
            np.column_stack([first, second]))


def nearest_neighbor_spacing(
    X: ArrayLike, *, n_queries: int = 2000, random_state: int | np.random.RandomState | None = None
) -> float:
    """Median distance from a data point to its nearest other data point.

    Estimated from ``n_queries`` random rows (all rows when fewer) against all of
    X, which is exact for each query and keeps the cost at O(n_queries * N).

    Parameters
    ----------
    X : array of shape (n_samples, n_features), n_samples >= 2 (any kind
        :func:`covering_radius` accepts)
    n_queries : int, default=2000
    random_state : int, RandomState instance or None

    Returns
    -------
    float

    Examples
    --------
    >>> nearest_neighbor_spacing(np.array([[0.0], [1.0], [3.0]]))
    1.0
    """
    if not hasattr(X, "shape"):
        X = np.asarray(X)
    if X.shape[0] < 2:
        raise ValueError("nearest_neighbor_spacing needs at least 2 rows in X; pass more data.")
    n_queries = check_positive_int(n_queries, "n_queries")
    rng = check_random_state(random_state)
    n = X.shape[0]
    rows = np.arange(n) if n <= n_queries else np.sort(rng.choice(n, n_queries, replace=False))
    queries = take_rows(X, rows)
    queries = queries.toarray() if sparse.issparse(queries) else queries
    dist, _ = nearest_distances(queries, X, exclude=rows)
    return float(np.median(dist))


def landmark_to_data_distances(
    landmarks: ArrayLike, X: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Distance from each landmark to its nearest data point (chunked over X).

    Returns
    -------
    distances : ndarray of shape (n_landmarks,)
    indices : ndarray of shape (n_landmarks,)
        Nearest data row of each landmark.
    """
    return nearest_distances(np.atleast_2d(landmarks), X)


def covering_radius(
    X: np.ndarray, landmarks: ArrayLike, *, chunk_size: int = 4096
) -> tuple[float, np.ndarray]:
    """Distance from each data point to its nearest landmark; the max is the radius.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
        NumPy array, scipy CSR matrix, memory map, Zarr or Dask array.
    landmarks : ndarray of shape (n_landmarks, n_features)
    chunk_size : int
        Data rows per block (for input without storage chunks).

    Returns
    -------
    radius : float
        max over data points of the distance to the nearest landmark.
    distances : ndarray of shape (n_samples,)
        Each point's distance to its nearest landmark (mean and quantiles are
        more robust summaries than the max).

    Examples
    --------
    >>> r, d = covering_radius(np.array([[0.0], [1.0], [4.0]]), np.array([[0.0], [3.0]]))
    >>> r, d.tolist()
    (1.0, [0.0, 1.0, 1.0])
    """
    if not hasattr(X, "shape"):
        X = np.asarray(X)
    landmarks = np.atleast_2d(np.asarray(landmarks, dtype=np.float64))
    parts = reduce_row_blocks(_cover_of_block, X, landmarks,
                              bounds=block_bounds(X, chunk_size))
    out = np.concatenate(parts) if parts else np.empty(0)
    return float(out.max()), out


def _cover_of_block(block, landmarks):
    return np.sqrt(squared_distances(block.astype(np.float64), landmarks).min(axis=1))

def landmark_geometry(
    X: ArrayLike,
    landmarks: ArrayLike,
    *,
    n_queries: int = 2000,
    random_state: int | np.random.RandomState | None = None,
) -> dict[str, float | np.ndarray]:
    """Geometric summary of landmarks against the data they should sit on.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
        NumPy array, scipy CSR matrix, memory map, Zarr or Dask array.
    landmarks : ndarray of shape (n_landmarks, n_features)
    n_queries : int, default=2000
        Rows used to estimate the nearest-neighbour spacing.
    random_state : int, RandomState instance or None

    Returns
    -------
    dict with keys
        ``spacing``: median nearest-neighbour distance of the data;
        ``to_data``: each landmark's distance to its nearest data point;
        ``to_data_relative``: the same divided by ``spacing`` (about 1 or less
        means "on the data");
        ``covering_radius`` and ``covering_radius_relative``: the largest
        distance from a data point to its nearest landmark, raw and / spacing;
        ``mean_cover`` and ``mean_cover_relative``: the mean of that distance.

    Examples
    --------
    >>> X = np.linspace(0, 1, 11)[:, None]
    >>> g = landmark_geometry(X, np.array([[0.5]]))
    >>> round(g["covering_radius_relative"], 6)
    5.0
    """
    if not hasattr(X, "shape"):
        X = np.asarray(X)
    landmarks = np.atleast_2d(np.asarray(landmarks))
    spacing = nearest_neighbor_spacing(X, n_queries=n_queries, random_state=random_state)
    to_data, _ = landmark_to_data_distances(landmarks, X)
    radius, cover = covering_radius(X, landmarks)
    scale = spacing if spacing > 0 else np.nan
    return {
        "spacing": spacing,
        "to_data": to_data,
        "to_data_relative": to_data / scale,
        "covering_radius": radius,
        "covering_radius_relative": radius / scale,
        "mean_cover": float(cover.mean()),
        "mean_cover_relative": float(cover.mean()) / scale,
    }
