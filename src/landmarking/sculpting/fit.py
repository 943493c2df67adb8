"""Manifold Sculpting as a plain function (Gashler, Ventura & Martinez, IEEE TSMC-B 2011).

Graduated optimisation: the neighbourhood relationships (distances, and angles
to each neighbour's most collinear neighbour) are recorded once; then, over
many iterations, the dimensions that will be dropped are scaled down by
``sigma`` while hill climbing on the kept dimensions restores the
relationships. Before any scaling the error is exactly zero, so the climber only
has to follow a slowly moving optimum rather than find one.

The three layers, as umap's: :func:`manifold_sculpting` here (checks, the
neighbour graph, the start, one call of the loop), the loop
:func:`~landmarking.sculpting._loop.sculpt` with the relationships it restores
(:mod:`._loop`, vectorised NumPy), and the compiled hill-climbing pass
(:mod:`._loops`, Cython, compiled when the package is built).
:class:`~landmarking.sculpting.estimator.ManifoldSculpting` is the
estimator over this function.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Literal, NamedTuple

import numpy as np
from scipy.linalg import orthogonal_procrustes
from sklearn.base import BaseEstimator, clone
from sklearn.decomposition import PCA
from sklearn.utils import check_array, check_random_state

from .._memory import check_memory
from .._parallel import NJobs, thread_limits
from .._typing import ArrayLike, RandomStateLike
from .._validation import (
    AnyOf,
    Integer,
    NoneValue,
    OpenInterval,
    Options,
    PositiveNumber,
    as_real_array,
    check_choice,
    check_n_neighbors,
    check_params,
)
from ..kernels import _squared_scale, row_chunks
from ..neighbors import Metric, nearest_neighbors
from ._loop import Relations, neighbor_distance_error, sculpt
from .ltsa import ltsa_embedding

__all__ = ["manifold_sculpting", "SculptingResult", "SculptingWarning", "PARAMETER_RULES"]

PREPROCESS_CHOICES = ("pca", "none", "ltsa")
MOVE_RULES = ("total", "point")

# Above this mean relative error of the neighbour distances the fit warns. A
# restored sheet is far below it (0.0005-0.002 on the paper's S-curve and on the
# star-hole Swiss roll from the LTSA start); the paper's principal-axes start,
# which folds that roll, leaves 0.06.
DISTORTION_WARN = 0.02


class SculptingWarning(UserWarning):
    """Manifold Sculpting could tell that its embedding is poor."""


def default_min_iter(scale_rate: float) -> int:
    """The paper's minimum number of iterations, ceil(log_sigma(0.01)).

    After it, at most 1% of the original spread is left in the dropped
    dimensions.

    Examples
    --------
    >>> default_min_iter(0.99)
    459
    """
    return int(math.ceil(math.log(0.01) / math.log(scale_rate)))


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


def _ltsa_start(X, t, nbr, euclidean, n_jobs, rng):
    """LTSA's t-dimensional embedding of X (the "ltsa" start) over the Euclidean
    k-neighbourhoods, k = ``nbr.shape[1]``: ``nbr`` itself when ``euclidean`` says
    that it holds them."""
    k = nbr.shape[1]
    if k <= t:
        raise ValueError(
            f"preprocess='ltsa' needs n_neighbors > n_components (got {k} <= {t}); "
            "raise n_neighbors or use preprocess='pca'."
        )
    seed = rng.randint(np.iinfo(np.int32).max)
    if not euclidean:
        nbr = nearest_neighbors(X, k, n_jobs=n_jobs)[1]
    return ltsa_embedding(X, nbr, t, np.random.RandomState(seed))


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




class _Start:
    """The rule of ``preprocess``: one of the named starts, an array of starting
    coordinates or an estimator with ``fit_transform``."""

    def check(self, value, name):
        if isinstance(value, str):
            return check_choice(value, name, PREPROCESS_CHOICES)
        if not (hasattr(value, "fit_transform") or hasattr(value, "shape")
                or isinstance(value, (list, tuple))):
            raise TypeError(
                "preprocess must be 'pca', 'none', 'ltsa', an array of starting coordinates or "
                f"an estimator with fit_transform, got {type(value).__name__}."
            )
        return value


#: The parameters of Manifold Sculpting and their rules, in the order they are checked
#: (the estimator's ``_parameter_rules``; :func:`manifold_sculpting` checks the same).
PARAMETER_RULES = {
    "n_components": Integer(),
    "n_neighbors": Integer(),
    "scale_rate": OpenInterval(0.0, 1.0),
    "patience": Integer(),
    "min_iter": AnyOf(NoneValue(), Integer(minimum=0)),
    "max_iter": AnyOf(NoneValue(), Integer()),
    "adjusted_weight": PositiveNumber(),
    "move_rule": Options(*MOVE_RULES),
    "n_jobs": NJobs(),
    "preprocess": _Start(),
}


class Schedule(NamedTuple):
    """The checked parameters with the iteration bounds resolved.

    ``min_iter`` never exceeds ``max_iter`` (a hard cap); ``default_min_iter`` says
    that the user left ``min_iter`` to the library, so that a start with nothing to
    scale out may skip the scaling phase.
    """

    n_components: int
    n_neighbors: int
    scale_rate: float
    patience: int
    min_iter: int
    max_iter: int
    adjusted_weight: float
    move_rule: str
    default_min_iter: bool


def schedule(params):
    """The :class:`Schedule` of parameters checked against :data:`PARAMETER_RULES`."""
    min_iter = (default_min_iter(params["scale_rate"]) if params["min_iter"] is None
                else params["min_iter"])
    max_iter = (min_iter + 10 * params["patience"] if params["max_iter"] is None
                else params["max_iter"])
    return Schedule(params["n_components"], params["n_neighbors"], params["scale_rate"],
                    params["patience"], min(min_iter, max_iter), max_iter,
                    params["adjusted_weight"], params["move_rule"], params["min_iter"] is None)


@dataclass(frozen=True)
class SculptingResult:
    """What a run of :func:`manifold_sculpting` measured; the estimator stores each
    as the attribute of the same name with a trailing underscore.

    Attributes
    ----------
    error : ndarray of shape (n_iter,)
        Total error (equation (1) summed over points, all weights 1) after each
        iteration.
    n_iter : int
        Iterations run.
    best_iter : int
        Iteration whose state the embedding holds (the lowest error after
        ``min_iter``).
    min_iter, max_iter : int
        The iteration bounds used.
    delta_ave : float
        Mean distance between neighbours in the input.
    eta : float
        Hill-climbing step size at the end.
    scale : float
        Fraction of the original spread left in the dropped dimensions when they
        were dropped.
    neighbors : ndarray of shape (n_samples, n_neighbors)
        Neighbour indices used.
    distance_error : float
        Mean relative error of the neighbour distances in the embedding; above
        0.02 the run warns.
    """

    error: np.ndarray
    n_iter: int
    best_iter: int
    min_iter: int
    max_iter: int
    delta_ave: float
    eta: float
    scale: float
    neighbors: np.ndarray = field(repr=False)
    distance_error: float



def _check_shapes(X, t, k):
    n, D = X.shape
    if t >= D:
        raise ValueError(
            f"n_components={t} must be smaller than the number of features "
            f"(n_features={D}); Manifold Sculpting removes dimensions, so ask for "
            "fewer components."
        )
    check_n_neighbors(k, n)

def neighbor_graph(X, k, neighbors, *, metric, n_jobs):
    """Neighbour indices (n, k) and, for a non-Euclidean metric or given distances,
    the distances to restore (else None): searched, or the precomputed ``neighbors``."""
    if neighbors is None:
        dist, idx = nearest_neighbors(X, k, metric=metric, n_jobs=n_jobs)
        return idx, (None if metric == "euclidean" else dist)
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

def _start(X, X_rel, rel, t, exact_start, euclidean, n_jobs, rng, preprocess):
    """Starting configuration P (n, p >= t), centred, in the data's units.
    ``euclidean``: ``rel.nbr`` are the Euclidean neighbours that LTSA uses."""
    pre = preprocess
    if isinstance(pre, str) and pre == "ltsa":
        pre = _ltsa_start(X, t, rel.nbr, euclidean, n_jobs, rng)
    elif isinstance(pre, str):
        P = np.array(X_rel if pre == "pca" else X - X.mean(axis=0), dtype=float)
        if not exact_start:
            P = _calibrate(P, rel, linear=False)
        return P
    P = clone(pre).fit_transform(X) if hasattr(pre, "fit_transform") else pre
    P = np.array(as_real_array(P, "preprocess"))  # a copy: the start is moved in place
    if P.ndim != 2 or P.shape[0] != X.shape[0] or P.shape[1] < t:
        raise ValueError(
            f"the preprocessed data has shape {P.shape}; it needs one row per "
            f"sample ({X.shape[0]}) and at least n_components={t} columns."
        )
    if not np.all(np.isfinite(P)):
        raise ValueError("the preprocessed data contains NaN or infinity.")
    return _calibrate(P - P.mean(axis=0), rel, linear=P.shape[1] <= _MAX_CALIBRATED)

def check_clamps(clamp_indices, clamp_values, n, t):
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
    vals = as_real_array(clamp_values, "clamp_values")
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

def _place_clamped(T, idx, vals):
    """Move the free points rigidly into the clamped points' frame, then pin those."""
    src = T[idx]
    mu_s, mu_v = src.mean(axis=0), vals.mean(axis=0)
    R = np.eye(T.shape[1])
    if idx.size > 1:
        R, _ = orthogonal_procrustes(src - mu_s, vals - mu_v)
    T[...] = (T - mu_s) @ R + mu_v
    T[idx] = vals



def _quality(result):
    """The arguments of :func:`_warn_if_poor` from a run's result."""
    return result.error, result.best_iter, result.min_iter, result.distance_error


def _check_squares_fit(X):
    """Refuse data whose squared distances, or the products of two of them that the
    angles take, leave float64's range: the relations would come out infinite or
    NaN (entries beyond about 1e76)."""
    scale, square = _squared_scale(X)
    with np.errstate(over="ignore"):
        fourth = square * square
    if not np.isfinite(fourth):
        raise ValueError(
            f"X's entries reach {scale:.3g} in absolute value, so squared distances "
            "(and the products of two that the angles take) overflow float64; divide X "
            "by a scale such as np.abs(X).max() first (the embedding is then in the new "
            "units: multiply it back by the same scale).")


def _sculpt_data(X, plan, *, preprocess, metric, clamp_indices, clamp_values, neighbors,
                 n_jobs, rng, verbose):
    """Manifold Sculpting of float64 X with checked parameters ``plan`` (a
    :class:`Schedule`): the embedding (float64) and its :class:`SculptingResult`."""
    t, k, min_iter = plan.n_components, plan.n_neighbors, plan.min_iter
    n = X.shape[0]
    if neighbors is not None:
        k_given = np.asarray(neighbors[1] if isinstance(neighbors, tuple) else neighbors)
        k = k_given.shape[1] if k_given.ndim == 2 else k
    _check_shapes(X, t, k)
    _check_squares_fit(X)
    clamp_idx, clamp_vals = check_clamps(clamp_indices, clamp_values, n, t)
    rng = check_random_state(rng)
    # The (n, k) tables of the relationships, and the climber's tables of every
    # point's terms (three per neighbour: measured 205 bytes per point and neighbour
    # with dropped dimensions, 300 while they are built).
    check_memory(8 * n * (48 * k + 2 * X.shape[1]),
                 what=f"the neighbour tables of {n} points x {k} neighbours",
                 way_out="use fewer neighbours (n_neighbors) or fewer rows")
    with thread_limits(n_jobs):
        nbr, dist = neighbor_graph(X, k, neighbors, metric=metric, n_jobs=n_jobs)
        # A lossless rotation onto the principal axes: same distances and angles,
        # at most min(n, D) columns, which makes the relations cheaper on images.
        X_rel = PCA(svd_solver="full").fit_transform(X)
        rel = Relations(X_rel, nbr, dist, plan.move_rule)
        if not rel.delta_ave > 0:
            raise ValueError(
                "all neighbours coincide (mean neighbour distance 0); remove duplicate "
                "rows or pass more distinct data."
            )
        P = _start(X, X_rel, rel, t, exact_start=dist is None,
                   euclidean=neighbors is None and metric == "euclidean", n_jobs=n_jobs,
                   rng=rng, preprocess=preprocess)
        T = np.ascontiguousarray(P[:, :t])
        junk = rel.junk(P[:, t:])
        eta = rel.delta_ave
        if not np.any(junk[0]):
            # Nothing to scale out (a start with exactly t columns): only the
            # restoring passes remain, from a step the size of the typical
            # distance error rather than a whole neighbour distance.
            min_iter = 0 if plan.default_min_iter else min_iter
            eta = _restoring_step(T, rel)
        heavy = np.zeros(n, dtype=np.bool_)
        if clamp_idx is not None:
            _place_clamped(T, clamp_idx, clamp_vals)
            heavy[clamp_idx] = True

        errors, scale, eta, best = sculpt(
            T, junk, rel, sigma=plan.scale_rate, scale=1.0, min_iter=min_iter,
            max_iter=plan.max_iter, patience=plan.patience, heavy=heavy,
            expand=clamp_idx is None, w_adj=plan.adjusted_weight, eta=eta, rng=rng,
            verbose=verbose)
    if not np.isfinite(T).all():
        # Seen with n_components=1 from the PCA start on a few points per neighbour
        # list: the climb's step collapses and the embedding runs out of float64.
        raise ValueError(
            f"Manifold Sculpting diverged: the embedding left float64's range after "
            f"{len(errors)} iterations ({n} points, {k} neighbours, "
            f"preprocess={preprocess!r}). Use more neighbours (n_neighbors), "
            f"preprocess='ltsa', or another random_state.")
    return T, SculptingResult(
        error=np.asarray(errors), n_iter=len(errors), best_iter=best, min_iter=min_iter,
        max_iter=plan.max_iter, delta_ave=rel.delta_ave, eta=eta, scale=scale, neighbors=nbr,
        distance_error=neighbor_distance_error(T, nbr, rel.delta0))


def manifold_sculpting(
    X: ArrayLike, *, n_components: int = 2, n_neighbors: int = 14, scale_rate: float = 0.99,
    patience: int = 50, min_iter: int | None = None, max_iter: int | None = None,
    preprocess: Literal["ltsa", "pca", "none"] | ArrayLike | BaseEstimator = "ltsa",
    metric: Metric = "euclidean", adjusted_weight: float = 10.0,
    move_rule: Literal["total", "point"] = "total", clamp_indices: ArrayLike | None = None,
    clamp_values: ArrayLike | None = None,
    neighbors: ArrayLike | tuple[ArrayLike, ArrayLike] | None = None,
    n_jobs: int | None = None, random_state: RandomStateLike = None, verbose: bool = False,
) -> tuple[np.ndarray, SculptingResult]:
    """Sculpt X down to ``n_components`` dimensions (the function behind
    :class:`~landmarking.sculpting.estimator.ManifoldSculpting`).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    n_components, n_neighbors, scale_rate, patience, min_iter, max_iter, preprocess, \
metric, adjusted_weight, move_rule, n_jobs, random_state, verbose
        As in :class:`~landmarking.sculpting.estimator.ManifoldSculpting`.
    clamp_indices, clamp_values, neighbors
        As in :meth:`ManifoldSculpting.fit
        <landmarking.sculpting.estimator.ManifoldSculpting.fit>`.

    Returns
    -------
    embedding : ndarray of shape (n_samples, n_components)
        float32 for float32 input, else float64.
    result : SculptingResult
        The errors, iterations, step size and neighbours of the run.

    Warns
    -----
    SculptingWarning
        When the run can tell that its embedding is poor (see ``ManifoldSculpting``).

    Examples
    --------
    >>> from landmarking.datasets import make_sculpting_s_curve
    >>> X, uv = make_sculpting_s_curve(300, random_state=0)
    >>> Y, result = manifold_sculpting(X, n_neighbors=12, scale_rate=0.95, random_state=0)
    >>> Y.shape, result.distance_error < 0.02
    ((300, 2), True)
    """
    given = SimpleNamespace(
        n_components=n_components, n_neighbors=n_neighbors, scale_rate=scale_rate,
        patience=patience, min_iter=min_iter, max_iter=max_iter,
        adjusted_weight=adjusted_weight, move_rule=move_rule, n_jobs=n_jobs,
        preprocess=preprocess)
    plan = schedule(check_params(given, PARAMETER_RULES))
    X = check_array(X, dtype=[np.float64, np.float32], ensure_min_samples=2)
    # float64 inside on purpose: the hill climber compares errors that differ by far
    # less than float32's resolution once the fit is close.
    T, result = _sculpt_data(
        X.astype(np.float64, copy=False), plan, preprocess=preprocess, metric=metric,
        clamp_indices=clamp_indices, clamp_values=clamp_values, neighbors=neighbors,
        n_jobs=n_jobs, rng=random_state, verbose=verbose)
    _warn_if_poor(*_quality(result), preprocess)
    return T.astype(X.dtype, copy=False), result
