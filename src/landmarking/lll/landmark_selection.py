"""Choosing landmarks among the data points, for Locally Linear Landmarks.

:func:`select_landmarks` returns row indices: uniformly at random, with the
LLL paper's pruning heuristic for more even coverage, or the data points
nearest to mini-batch k-means centres. :func:`resolve_landmarks` turns the
``landmarks`` parameter (such a strategy, an array or a landmark estimator) into
the landmarks' coordinates.
"""

from __future__ import annotations

import heapq
import math
from typing import Literal

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, clone
from sklearn.utils import check_random_state

from .._typing import ArrayLike, MatrixLike, NDArray, RandomStateLike
from .._validation import as_real_array, check_choice, check_positive_int
from ..neighbors import nearest_neighbors, query_neighbors

__all__ = ["select_landmarks", "resolve_landmarks", "LANDMARK_STRATEGIES"]

LANDMARK_STRATEGIES = ("random", "random-pruned", "kmeans")


def select_landmarks(X: ArrayLike, n_landmarks: int,
                     strategy: Literal["random", "random-pruned", "kmeans"] = "random", *,
                     prune_fraction: float = 0.25,
                     random_state: RandomStateLike = None) -> NDArray[np.int64]:
    """Pick ``n_landmarks`` rows of X as landmarks.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    n_landmarks : int
        At most n_samples.
    strategy : {"random", "random-pruned", "kmeans"}
        ``"random"``: uniform without replacement. ``"random-pruned"``: the
        paper's heuristic for more even coverage: draw
        ``ceil(prune_fraction * n_landmarks)`` extra points, then repeatedly
        drop one point of the closest remaining pair. ``"kmeans"``: the data
        point nearest to each centre of a mini-batch k-means.
    prune_fraction : float
        Extra fraction drawn by ``"random-pruned"``.
    random_state : int, RandomState or None

    Returns
    -------
    indices : ndarray of shape (n_landmarks,), int64
        Row indices of the landmarks in X.

    Examples
    --------
    >>> X = np.arange(20.0).reshape(10, 2)
    >>> select_landmarks(X, 3, random_state=0).shape
    (3,)
    """
    check_choice(strategy, "landmarks", LANDMARK_STRATEGIES)
    n = X.shape[0]
    n_landmarks = check_positive_int(n_landmarks, "n_landmarks")
    if n_landmarks > n:
        raise ValueError(
            f"n_landmarks={n_landmarks} exceeds the {n} samples; pass at most "
            f"{n} landmarks (or landmarks as an array)."
        )
    rng = check_random_state(random_state)
    if strategy == "random":
        return np.sort(rng.choice(n, n_landmarks, replace=False)).astype(np.int64)
    if strategy == "random-pruned":
        n_extra = min(n - n_landmarks, math.ceil(prune_fraction * n_landmarks))
        candidates = rng.choice(n, n_landmarks + n_extra, replace=False)
        keep = _prune_closest_pairs(X[candidates], n_extra)
        return np.sort(candidates[keep]).astype(np.int64)
    from sklearn.cluster import MiniBatchKMeans

    km = MiniBatchKMeans(n_clusters=n_landmarks, n_init=1, random_state=rng,
                         batch_size=max(1024, 3 * n_landmarks))
    centres = km.fit(X).cluster_centers_.astype(X.dtype)
    _, nearest = query_neighbors(X, centres, 1)
    chosen = np.unique(nearest[:, 0])
    if chosen.size < n_landmarks:
        # Two centres may share their nearest point: fill up at random.
        rest = np.setdiff1d(np.arange(n), chosen)
        extra = rng.choice(rest, n_landmarks - chosen.size, replace=False)
        chosen = np.concatenate([chosen, extra])
    return np.sort(chosen).astype(np.int64)


def _prune_closest_pairs(C, n_drop):
    """Indices of the rows of C left after dropping one point of each of
    ``n_drop`` successive closest pairs (lazy heap over k-NN lists)."""
    m = C.shape[0]
    if n_drop <= 0:
        return np.arange(m)
    k = min(m - 1, 16)
    dist, nbr = nearest_neighbors(C, k)
    alive = np.ones(m, dtype=bool)
    pointer = np.zeros(m, dtype=np.int64)
    heap = [(dist[i, 0], i) for i in range(m)]
    heapq.heapify(heap)
    dropped = 0
    while dropped < n_drop and heap:
        d, i = heapq.heappop(heap)
        if not alive[i]:
            continue
        j = nbr[i, pointer[i]]
        if alive[j]:
            alive[i] = False
            dropped += 1
            continue
        # i's recorded nearest neighbour is gone: move to its next live one.
        while pointer[i] < k and not alive[nbr[i, pointer[i]]]:
            pointer[i] += 1
        if pointer[i] < k:
            heapq.heappush(heap, (dist[i, pointer[i]], i))
    return np.flatnonzero(alive)


def resolve_landmarks(X: MatrixLike, spec: str | ArrayLike | BaseEstimator, n_landmarks: int,
                      rng: np.random.RandomState) -> tuple[np.ndarray, np.ndarray | None]:
    """Landmark coordinates (float64, dense) and, when they are rows of X, their
    indices: ``spec`` is a strategy of :func:`.select_landmarks`, an array, or a
    landmark estimator (cloned and fitted on X unless already fitted). X is an
    array or CSR matrix in memory (LLL gathers its rows first)."""
    if isinstance(spec, str):
        idx = select_landmarks(X, n_landmarks, spec, random_state=rng)
        T = X[idx]  # X is in memory: LLL's graph needs every row at once
        # Landmarks are dense even when X is sparse.
        T = T.toarray() if sparse.issparse(T) else T
        return T.astype(np.float64), idx
    if hasattr(spec, "fit") and not hasattr(spec, "shape"):
        est = spec
        if not hasattr(est, "landmarks_"):
            est = clone(spec).fit(X)
        if not hasattr(est, "landmarks_"):
            raise TypeError(
                f"{type(spec).__name__} has no landmarks_ after fit; pass an "
                "estimator that stores its landmarks in landmarks_."
            )
        T = as_real_array(est.landmarks_, "landmarks_")
    else:
        T = as_real_array(spec, "landmarks")
    if T.ndim != 2 or T.shape[1] != X.shape[1]:
        raise ValueError(
            f"landmarks must have shape (n_landmarks, {X.shape[1]}), got {T.shape}."
        )
    if not np.all(np.isfinite(T)):
        raise ValueError("landmarks contain NaN or infinity; pass finite landmarks.")
    return T.copy(), None
