"""Nearest neighbours behind one small interface: exact or approximate.

``method="exact"`` finds the true neighbours: for the Euclidean metric on dense
data by blocked float32 matrix products that shortlist candidates, followed by
an exact float64 re-rank (:func:`exact_knn`), otherwise with scikit-learn's
``NearestNeighbors``. ``method="approximate"`` uses pynndescent's NN-descent,
which scales to millions of points; ``method="auto"`` picks NN-descent from
:data:`APPROXIMATE_MIN_SAMPLES` points on for at most
:data:`APPROXIMATE_MAX_NEIGHBORS` neighbours, the exact search otherwise.
Every function returns ``(distances, indices)`` sorted by distance (ties by
index), with a point never counted as its own neighbour.

:class:`NeighborIndex` keeps a fitted search structure (the float32 copy and
norms for the exact search, the prepared NN-descent index for the approximate
one), so that many small queries against the same reference set cost no
rebuild; :class:`LazyNeighborIndex` is the slot in which a fitted estimator keeps
one, built on its first ``transform``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Literal, Self

import numpy as np
from scipy import sparse
from sklearn import get_config
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state, gen_batches

from ._typing import ArrayLike, MatrixLike, NDArray, RandomStateLike
from ._validation import check_choice, check_positive_int

__all__ = ["nearest_neighbors", "query_neighbors", "exact_knn", "knn_block",
           "NeighborIndex", "LazyNeighborIndex", "NEIGHBOR_METHODS", "APPROXIMATE_MIN_SAMPLES",
           "APPROXIMATE_MAX_NEIGHBORS"]

NEIGHBOR_METHODS = ("auto", "exact", "approximate")
#: The ``method`` of a neighbour search, for type checkers.
NeighborMethod = Literal["auto", "exact", "approximate"]
#: A metric name, or a function of two rows.
Metric = str | Callable[..., float]
#: ``(distances, indices)``, each of shape (n_query, n_neighbors).
Neighbors = tuple[NDArray[np.float64], NDArray[np.intp]]

#: ``method="auto"`` switches to NN-descent from this many reference points on,
#: for at most APPROXIMATE_MAX_NEIGHBORS neighbours. Measured with
#: benchmarks/knn.py on MNIST (docs/results.md, "Graphs and exact spectral
#: embeddings"): at 20,000 digits NN-descent took 2.9 s for 10 neighbours
#: (recall 0.98) against 44 s exact, but it compiles for about 90 s in each new
#: process, and the exact search grows as n^2: counting that compile, the two
#: cross near 30,000 points for 10 neighbours. For 150 neighbours NN-descent
#: was 2.7x slower than the exact search at 20,000 points.
APPROXIMATE_MIN_SAMPLES = 50_000
#: Above this many neighbours ``method="auto"`` stays exact (see above; the
#: limit lies between the measured 10, where NN-descent wins, and 150).
APPROXIMATE_MAX_NEIGHBORS = 50

# Unit roundoff of float32: the float32 shortlist is checked against a bound
# proportional to it, so that the final lists are provably the exact ones.
_U32 = float(np.finfo(np.float32).eps) / 2


def _resolve_method(method, n_reference, metric, X, n_neighbors):
    check_choice(method, "method", NEIGHBOR_METHODS)
    if method == "auto":
        large = (n_reference >= APPROXIMATE_MIN_SAMPLES
                 and n_neighbors <= APPROXIMATE_MAX_NEIGHBORS)
        method = "approximate" if large else "exact"
    if method == "exact":
        blocked = (isinstance(metric, str) and metric == "euclidean"
                   and not sparse.issparse(X))
        return "blocked" if blocked else "sklearn"
    return method


def nearest_neighbors(X: MatrixLike, n_neighbors: int, *, method: NeighborMethod = "exact",
                      metric: Metric = "euclidean", random_state: RandomStateLike = None,
                      n_jobs: int | None = None) -> Neighbors:
    """The ``n_neighbors`` nearest neighbours of every row of X, self excluded.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    n_neighbors : int
        Neighbours per point, < n_samples.
    method : {"exact", "approximate", "auto"}
        ``"exact"``: :func:`exact_knn` for the Euclidean metric on dense data,
        scikit-learn otherwise; ``"approximate"``: pynndescent; ``"auto"``:
        approximate from :data:`APPROXIMATE_MIN_SAMPLES` samples on when
        n_neighbors <= :data:`APPROXIMATE_MAX_NEIGHBORS`, else exact.
    metric : str or callable
        Any metric scikit-learn (exact) or pynndescent (approximate) accepts.
    random_state : int, RandomState or None
        Seeds NN-descent; unused by the exact search.
    n_jobs : int or None
        Parallel jobs for scikit-learn's exact search.

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
    how = _resolve_method(method, X.shape[0], metric, X, n_neighbors)
    if how == "blocked":
        return exact_knn(X, n_neighbors)
    if how == "sklearn":
        nn = NearestNeighbors(n_neighbors=n_neighbors, metric=metric, n_jobs=n_jobs)
        return nn.fit(X).kneighbors()
    index = _nndescent_index(X, n_neighbors + 1, metric, random_state)
    indices, distances = index.neighbor_graph
    return _drop_self(indices, distances, n_neighbors)


def query_neighbors(reference: MatrixLike | NeighborIndex, query: MatrixLike,
                    n_neighbors: int, *, method: NeighborMethod = "exact",
                    metric: Metric = "euclidean", random_state: RandomStateLike = None,
                    n_jobs: int | None = None) -> Neighbors:
    """The ``n_neighbors`` nearest rows of ``reference`` for each row of ``query``.

    Unlike :func:`nearest_neighbors` the query points are not part of the
    reference set, so nothing is excluded. ``reference`` may also be a fitted
    :class:`NeighborIndex`, which is then queried without being rebuilt
    (``method``, ``metric`` and ``random_state`` are the index's own).

    Returns
    -------
    distances, indices : ndarrays of shape (n_query, n_neighbors)
    """
    if isinstance(reference, NeighborIndex):
        return reference.query(query, n_neighbors)
    index = NeighborIndex(method=method, metric=metric, random_state=random_state,
                          n_jobs=n_jobs, n_neighbors=n_neighbors)
    return index.fit(reference).query(query, n_neighbors)


class NeighborIndex:
    """A reference set prepared once for many nearest-neighbour queries.

    Parameters
    ----------
    method : {"exact", "approximate", "auto"}
        As in :func:`nearest_neighbors`.
    metric : str or callable
    random_state : int, RandomState or None
        Seeds NN-descent.
    n_jobs : int or None
        Parallel jobs for scikit-learn's exact search.
    n_neighbors : int
        Graph degree of the NN-descent index (at least 10; larger values give
        better recall for queries of many neighbours), and the neighbour count
        ``"auto"`` decides by.

    Examples
    --------
    >>> index = NeighborIndex().fit(np.array([[0.0], [1.0], [3.0]]))
    >>> index.query(np.array([[2.9]]), 2)[1]
    array([[2, 1]])
    """

    def __init__(self, method: NeighborMethod = "exact", metric: Metric = "euclidean",
                 random_state: RandomStateLike = None, n_jobs: int | None = None,
                 n_neighbors: int = 10) -> None:
        self.method = method
        self.metric = metric
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.n_neighbors = n_neighbors

    def fit(self, reference: MatrixLike) -> Self:
        """Build the search structure on ``reference`` (n_reference, n_features)."""
        self.method_ = _resolve_method(self.method, reference.shape[0], self.metric,
                                       reference, self.n_neighbors)
        self.n_reference_ = reference.shape[0]
        if self.method_ == "blocked":
            self.reference_ = np.ascontiguousarray(reference, dtype=np.float64)
            self.reference32_ = np.ascontiguousarray(reference, dtype=np.float32)
            self.sq_norms32_ = np.einsum("ij,ij->i", self.reference32_,
                                         self.reference32_)
        elif self.method_ == "sklearn":
            self.index_ = NearestNeighbors(metric=self.metric, n_jobs=self.n_jobs)
            self.index_.fit(reference)
        else:
            self.index_ = _nndescent_index(reference, max(self.n_neighbors, 10),
                                           self.metric, self.random_state)
            # The search graph is built lazily on the first query; build it now,
            # once, rather than inside the first transform.
            self.index_.prepare()
        return self

    def query(self, query: MatrixLike, n_neighbors: int) -> Neighbors:
        """Distances and indices of the ``n_neighbors`` nearest reference rows."""
        n_neighbors = check_positive_int(n_neighbors, "n_neighbors")
        if n_neighbors > self.n_reference_:
            raise ValueError(
                f"n_neighbors={n_neighbors} exceeds the {self.n_reference_} reference "
                "points; pass fewer neighbours."
            )
        if self.method_ == "blocked":
            return exact_knn(self.reference_, n_neighbors, query=query,
                             _prepared=(self.reference_, self.reference32_,
                                        self.sq_norms32_))
        if self.method_ == "sklearn":
            return self.index_.kneighbors(query, n_neighbors)
        indices, distances = self.index_.query(query, k=n_neighbors)
        return distances, indices


class LazyNeighborIndex:
    """A :class:`NeighborIndex` that a fitted estimator keeps between queries.

    The index is built on the first :meth:`get`, not before (a model that is
    never queried pays nothing), and reused while the reference array (the same
    object) and the index parameters stay the same; another array or other
    parameters rebuild it. Threads may call :meth:`get` at once: a lock lets
    one of them build while the others wait for that index, so it is built once.

    A copy, a pickle or a deep copy starts empty and rebuilds the index on its
    first use: the index is a cache that the fitted arrays determine, and
    :func:`landmarking.save` leaves it out of model files. For the same reason
    any two compare equal.

    Examples
    --------
    >>> kept = LazyNeighborIndex()
    >>> X = np.array([[0.0], [1.0], [3.0]])
    >>> kept.get(X).query(np.array([[2.9]]), 1)[1]
    array([[2]])
    >>> kept.get(X) is kept.get(X)
    True
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reference = None
        self._params = None
        self._index = None

    def get(self, reference: MatrixLike, **params: Any) -> NeighborIndex:
        """The index on ``reference``, built on first use.

        Parameters
        ----------
        reference : ndarray or CSR matrix of shape (n_reference, n_features)
            Indexed in float64 (a float64 copy when it is not), the precision of
            the callers' queries.
        **params
            Parameters of :class:`NeighborIndex` (default: the exact search).

        Returns
        -------
        NeighborIndex
            Fitted; shared by every caller until the reference or the parameters
            change.
        """
        with self._lock:
            if (self._index is None or self._reference is not reference
                    or self._params != params):
                self._index = None  # never keep a stale index if the build fails
                self._index = NeighborIndex(**params).fit(_as_float64(reference))
                self._reference, self._params = reference, params
            return self._index

    @property
    def built(self) -> bool:
        """Whether an index is held now."""
        return self._index is not None

    def __getstate__(self):
        return {}

    # Any two slots are interchangeable (each holds, or will build, the index the
    # fitted arrays determine), so an estimator compares equal to its loaded copy.
    def __eq__(self, other):
        return isinstance(other, LazyNeighborIndex)

    def __hash__(self):
        return hash(LazyNeighborIndex)

    def __setstate__(self, state):
        self.__init__()

    def __repr__(self):
        return f"LazyNeighborIndex({'built' if self.built else 'empty'})"


def _as_float64(X):
    if sparse.issparse(X):
        return X.astype(np.float64, copy=False)
    return np.asarray(X, dtype=np.float64)


# --------------------------------------------------------------------------- blocked exact

def exact_knn(X: ArrayLike, n_neighbors: int, *, query: ArrayLike | None = None,
              n_candidates: int | None = None,
              _prepared: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
              ) -> Neighbors:
    """Exact Euclidean k nearest neighbours by blocked float32 matrix products.

    Each block of query rows gets its squared distances to every row of X
    from one float32 product (|q|^2 - 2 q.x + |x|^2), keeps the
    ``n_candidates`` smallest, and re-ranks them with distances computed in
    float64 from the differences. A row whose shortlist cannot be shown
    complete (the float32 rounding bound lets a point outside it be closer
    than the k-th inside) is re-ranked over every point within that bound, so
    the result is exact: the same lists as scikit-learn's exact search, ties
    broken by the smaller index. Rows per block follow scikit-learn's
    ``working_memory`` setting (``sklearn.config_context``).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Reference points.
    n_neighbors : int
    query : ndarray of shape (n_query, n_features) or None
        None: the neighbours of the rows of X among the others (self excluded).
    n_candidates : int or None
        Shortlist length; default ``n_neighbors + max(16, n_neighbors // 4)``.

    Returns
    -------
    distances, indices : ndarrays of shape (n_query, n_neighbors)
        float64 distances and int64 indices, sorted by (distance, index).

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [3.0], [1.0]])
    >>> exact_knn(X, 2)[1]
    array([[1, 3],
           [3, 0],
           [1, 3],
           [1, 0]])
    """
    X = np.asarray(X)
    exclude_self = query is None
    Q = X if exclude_self else np.asarray(query)
    n = X.shape[0]
    k = check_positive_int(n_neighbors, "n_neighbors")
    if Q.ndim != 2 or Q.shape[1] != X.shape[1]:
        raise ValueError(
            f"query {Q.shape} must have the {X.shape[1]} columns of the reference "
            "points."
        )
    available = n - 1 if exclude_self else n
    if k > available:
        raise ValueError(
            f"n_neighbors={k} exceeds the {available} available reference points; "
            "pass fewer neighbours."
        )
    m = n_candidates if n_candidates is not None else k + max(16, k // 4)
    m = int(min(max(m, k), available))
    if _prepared is None:
        X64 = np.ascontiguousarray(X, dtype=np.float64)
        X32 = np.ascontiguousarray(X, dtype=np.float32)
        sq32 = np.einsum("ij,ij->i", X32, X32)
    else:
        # A NeighborIndex converted once; small queries then copy nothing.
        X64, X32, sq32 = _prepared
    # Rows per block from the global memory budget: one float32 distance row
    # per query point.
    budget = get_config()["working_memory"] * 2 ** 20
    rows = int(max(1, min(Q.shape[0], budget // max(1, n * 4))))
    distances = np.empty((Q.shape[0], k), dtype=np.float64)
    indices = np.empty((Q.shape[0], k), dtype=np.int64)
    for sl in gen_batches(Q.shape[0], rows):
        offset = sl.start if exclude_self else None
        distances[sl], indices[sl] = knn_block(
            np.ascontiguousarray(Q[sl], dtype=np.float64), X64, X32, sq32, k, m,
            offset)
    return distances, indices


def knn_block(Qb: NDArray[np.float64], X64: NDArray[np.float64], X32: NDArray[np.float32],
              sq32: NDArray[np.float32], k: int, n_candidates: int,
              self_offset: int | None = None) -> Neighbors:
    """Exact neighbours of one block of query rows (the per-block work of
    :func:`exact_knn`, a plain function of arrays so that it can run per block
    anywhere, e.g. under ``dask.array.map_blocks``).

    Parameters
    ----------
    Qb : ndarray of shape (b, n_features), float64
    X64, X32 : ndarrays of shape (n, n_features)
        The reference points in float64 and float32.
    sq32 : ndarray of shape (n,)
        Squared norms of X32.
    k, n_candidates : int
    self_offset : int or None
        When the block is rows ``self_offset:self_offset + b`` of X itself,
        each row's own index is excluded.

    Returns
    -------
    distances, indices : ndarrays of shape (b, k)
    """
    from ._neighbors_kernels import candidate_sq_distances, shortlist

    b = Qb.shape[0]
    q32 = Qb.astype(np.float32)
    qsq32 = np.einsum("ij,ij->i", q32, q32)
    approx = q32 @ X32.T
    approx *= -2.0
    approx += sq32[None, :]
    approx += qsq32[:, None]
    if self_offset is not None:
        approx[np.arange(b), self_offset + np.arange(b)] = np.inf
    m = n_candidates
    # A compiled heap selection: numpy's argpartition costs several times the
    # float32 product itself here.
    part, worst = shortlist(approx, m)
    cand = np.sort(part, axis=1)  # by index, so that the stable sort breaks ties by it
    exact_sq = candidate_sq_distances(Qb, X64, cand)
    order = np.argsort(exact_sq, axis=1, kind="stable")[:, :k]
    idx = np.take_along_axis(cand, order, axis=1)
    d_sq = np.take_along_axis(exact_sq, order, axis=1)
    if m < approx.shape[1]:
        # A point outside the shortlist has an approximate distance at least the
        # shortlist's largest; its exact one is larger than the k-th exact when
        # that approximate value, less the rounding bound, still exceeds it.
        bound = _rounding_bound(qsq32, sq32.max(), Qb.shape[1])
        unsure = np.flatnonzero(worst - bound <= d_sq[:, -1])
        for i in unsure:
            near = np.flatnonzero(approx[i] <= d_sq[i, -1] + bound[i])
            sq = candidate_sq_distances(Qb[i:i + 1], X64, near[None, :])[0]
            o = np.argsort(sq, kind="stable")[:k]
            idx[i], d_sq[i] = near[o], sq[o]
    return np.sqrt(d_sq), idx


def _rounding_bound(qsq32, max_sq32, n_features):
    """An upper bound on |float32 (|q|^2 - 2 q.x + |x|^2) - |q - x|^2| per query.

    Dot products of length D in float32 err by at most about D u (|q|^2 +
    |x|^2) (u the unit roundoff); the float32 rounding of the inputs and the
    two additions add a few u more. Twice that, as a margin.
    """
    return 2.0 * (n_features + 8) * _U32 * 2.0 * (qsq32.astype(np.float64) + max_sq32)


# --------------------------------------------------------------------------- approximate

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
