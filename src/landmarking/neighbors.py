"""Nearest neighbours behind one small interface: exact or approximate.

``method="exact"`` uses scikit-learn's ``NearestNeighbors`` (brute force or trees,
chosen by scikit-learn); ``method="approximate"`` uses pynndescent's NN-descent,
which scales to millions of points. Every function returns ``(distances,
indices)`` sorted by distance, with a point never counted as its own neighbour.
"""

import numpy as np
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state

from ._validation import check_choice, check_positive_int

__all__ = ["nearest_neighbors", "query_neighbors", "NEIGHBOR_METHODS"]

NEIGHBOR_METHODS = ("exact", "approximate")


def nearest_neighbors(X, n_neighbors, *, method="exact", metric="euclidean",
                      random_state=None, n_jobs=None):
    """The ``n_neighbors`` nearest neighbours of every row of X, self excluded.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    n_neighbors : int
        Neighbours per point, < n_samples.
    method : {"exact", "approximate"}
    metric : str or callable
        Any metric scikit-learn (exact) or pynndescent (approximate) accepts.
    random_state : int, RandomState or None
        Seeds NN-descent; unused by the exact search.
    n_jobs : int or None
        Parallel jobs for the exact search.

    Returns
    -------
    distances, indices : ndarrays of shape (n_samples, n_neighbors)

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [3.0]])
    >>> nearest_neighbors(X, 1)[1].ravel()
    array([1, 0, 1])
    """
    check_choice(method, "method", NEIGHBOR_METHODS)
    n_neighbors = check_positive_int(n_neighbors, "n_neighbors")
    if n_neighbors >= X.shape[0]:
        raise ValueError(
            f"n_neighbors={n_neighbors} must be smaller than the number of samples "
            f"({X.shape[0]}); pass fewer neighbours or more data."
        )
    if method == "exact":
        nn = NearestNeighbors(n_neighbors=n_neighbors, metric=metric, n_jobs=n_jobs)
        return nn.fit(X).kneighbors()
    index = _nndescent_index(X, n_neighbors + 1, metric, random_state)
    indices, distances = index.neighbor_graph
    return _drop_self(indices, distances, n_neighbors)


def query_neighbors(reference, query, n_neighbors, *, method="exact",
                    metric="euclidean", random_state=None, n_jobs=None):
    """The ``n_neighbors`` nearest rows of ``reference`` for each row of ``query``.

    Unlike :func:`nearest_neighbors` the query points are not part of the
    reference set, so nothing is excluded.

    Returns
    -------
    distances, indices : ndarrays of shape (n_query, n_neighbors)
    """
    check_choice(method, "method", NEIGHBOR_METHODS)
    n_neighbors = check_positive_int(n_neighbors, "n_neighbors")
    if n_neighbors > reference.shape[0]:
        raise ValueError(
            f"n_neighbors={n_neighbors} exceeds the {reference.shape[0]} reference "
            "points; pass fewer neighbours."
        )
    if method == "exact":
        nn = NearestNeighbors(n_neighbors=n_neighbors, metric=metric, n_jobs=n_jobs)
        return nn.fit(reference).kneighbors(query)
    index = _nndescent_index(reference, max(n_neighbors, 10), metric, random_state)
    indices, distances = index.query(query, k=n_neighbors)
    return distances, indices


def _nndescent_index(X, n_neighbors, metric, random_state):
    try:
        from pynndescent import NNDescent
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError(
            "method='approximate' needs pynndescent; install it with "
            "`pip install landmarking[ann]` or use method='exact'."
        ) from exc
    seed = None if random_state is None else check_random_state(random_state).randint(2**31 - 1)
    return NNDescent(X, n_neighbors=n_neighbors, metric=metric, random_state=seed)


def _drop_self(indices, distances, n_neighbors):
    """Remove each point from its own neighbour list (or its farthest neighbour)."""
    n = indices.shape[0]
    is_self = indices == np.arange(n)[:, None]
    # A row that does not list itself (duplicates) drops its last entry instead.
    no_self = ~is_self.any(axis=1)
    is_self[no_self, -1] = True
    keep = ~is_self
    kept_idx = indices[keep].reshape(n, -1)[:, :n_neighbors]
    kept_dist = distances[keep].reshape(n, -1)[:, :n_neighbors]
    return kept_dist, kept_idx
