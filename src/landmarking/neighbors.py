"""Nearest neighbours behind one small interface: exact or approximate.

``method="exact"`` finds the true neighbours: for the Euclidean metric on dense
data by tiles of float32 matrix products from BLAS that shortlist candidates
(each product computed once for both of its points), followed by an exact
float64 re-rank (:func:`exact_knn`), otherwise with scikit-learn's
``NearestNeighbors``. ``method="approximate"`` (the ``ann`` extra) walks
usearch's HNSW graph, built on the leading principal axes of the data, and
re-ranks the candidates it finds by their exact float64 distances; usearch
ships compiled code, so a new process pays no compilation. It serves dense data
with the Euclidean metric. ``method="auto"`` picks it from
:data:`APPROXIMATE_MIN_SAMPLES` points on for at most
:data:`APPROXIMATE_MAX_NEIGHBORS` neighbours (dense Euclidean data), except for
data of at most :data:`TREE_MAX_FEATURES` features, which get SciPy's
exact KD-tree there; the exact search otherwise.
Every function returns ``(distances, indices)`` sorted by distance (ties by
index), with a point never counted as its own neighbour.

:class:`NeighborIndex` keeps a fitted search structure (the float64 and
centred float32 copies and the norms for the exact search, the HNSW graph
for the approximate one), so that many small queries against
the same reference set cost no rebuild; :class:`LazyNeighborIndex` is the slot in
which a fitted estimator keeps one, built on its first ``transform``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any, Literal, Self

import numpy as np
from scipy import sparse
from scipy.spatial import cKDTree
from sklearn import get_config
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state, gen_batches

from ._parallel import loop_threads, run_parts, thread_limits
from ._typing import ArrayLike, MatrixLike, NDArray, RandomStateLike
from ._validation import check_choice, check_n_neighbors, check_positive_int

__all__ = ["nearest_neighbors", "query_neighbors", "exact_knn", "knn_block", "search_kind",
           "prepare_reference", "NeighborIndex", "LazyNeighborIndex", "NEIGHBOR_METHODS",
           "APPROXIMATE_MIN_SAMPLES",
           "APPROXIMATE_MAX_NEIGHBORS"]

NEIGHBOR_METHODS = ("auto", "exact", "approximate")
#: The ``method`` of a neighbour search, for type checkers.
NeighborMethod = Literal["auto", "exact", "approximate"]
#: A metric name, or a function of two rows.
Metric = str | Callable[..., float]
#: ``(distances, indices)``, each of shape (n_query, n_neighbors).
Neighbors = tuple[NDArray[np.float64], NDArray[np.intp]]

#: ``method="auto"`` switches to the approximate search from this many reference
#: points on, for at most APPROXIMATE_MAX_NEIGHBORS neighbours (dense data, the
#: Euclidean metric). Measured with benchmarks/knn.py on MNIST (the table is in
#: docs/results/neighbors.md, "Where "auto" switches"): at 5,000 points the two
#: cost the same and the exact lists win; from 10,000 on the approximate search
#: is faster at recall >= 0.99, on the first call in a new process too.
APPROXIMATE_MIN_SAMPLES = 10_000
#: Above this many neighbours ``method="auto"`` stays exact: k = 50 is the
#: largest k whose recall was measured >= 0.99 (with k + 100 candidates).
APPROXIMATE_MAX_NEIGHBORS = 50
#: Up to this many features ``method="auto"`` searches dense Euclidean data with
#: an exact KD-tree (SciPy's), on every thread, from APPROXIMATE_MIN_SAMPLES
#: points on: on a 3-D Swiss roll it is quicker than the HNSW graph, and exact;
#: on 6-D data it is slower, so more features keep HNSW (docs/results/neighbors.md,
#: "Where "auto" switches"). On a million roll points the HNSW graph sent 1,496
#: points' whole lists to the next layer of the roll.
TREE_MAX_FEATURES = 3

# The OpenBLAS of NumPy 1.25 raises the invalid-operation flag in large threaded
# float32 products of finite numbers (a 2,000 x 784 product of uniform numbers did;
# every entry was right to 5e-7): the tiles multiply rows checked finite, so the
# flag is ignored there (a new errstate each time: one is not re-entrant).
def _spurious_invalid():
    return np.errstate(invalid="ignore")

# Unit roundoff of float32: the float32 shortlist is checked against a bound
# proportional to it, so that the final lists are provably the exact ones.
_U32 = float(np.finfo(np.float32).eps) / 2
# Rows and columns of one float32 product tile (see _tile_rows). Each tile is one
# BLAS call and one or two compiled loops run on threads (_neighbors_loops; numba
# parallel loops when this was measured), and every parallel region waits for its
# threads, which on a loaded machine costs more than the cache misses of a
# large tile: the largest tile measured was the quickest (CHANGELOG.md,
# "Measurements retired from source comments").
_TILE = 4096


def _resolve_method(method, n_reference, metric, X, n_neighbors):
    check_choice(method, "method", NEIGHBOR_METHODS)
    euclidean_dense = (isinstance(metric, str) and metric == "euclidean"
                       and not sparse.issparse(X))
    if method == "auto":
        if (euclidean_dense and n_reference >= APPROXIMATE_MIN_SAMPLES
                and X.shape[1] <= TREE_MAX_FEATURES):
            return "tree"
        large = (n_reference >= APPROXIMATE_MIN_SAMPLES
                 and n_neighbors <= APPROXIMATE_MAX_NEIGHBORS)
        method = "approximate" if large and euclidean_dense else "exact"
    if method == "exact":
        return "blocked" if euclidean_dense else "sklearn"
    if not euclidean_dense:
        what = "sparse input" if sparse.issparse(X) else f"metric={metric!r}"
        raise ValueError(
            f"method='approximate' searches dense data with the Euclidean metric, not "
            f"{what}; use method='exact' (scikit-learn's search for {what})."
        )
    return method


def search_kind(method: NeighborMethod, X: MatrixLike, n_neighbors: int) -> str:
    """The search :func:`nearest_neighbors` runs for the rows of X among themselves
    (Euclidean) with ``method``: ``"approximate"`` or ``"exact"`` (the blocked
    search, scikit-learn's and the KD-tree are all exact).

    Examples
    --------
    >>> X = np.zeros((20_000, 10))
    >>> search_kind("auto", X, 10), search_kind("auto", X[:100], 10)
    ('approximate', 'exact')
    """
    found = _resolve_method(method, X.shape[0], "euclidean", X, n_neighbors)
    return "approximate" if found == "approximate" else "exact"


def _check_finite(X, name="X"):
    # A NaN or infinity makes the float64 sum NaN or infinite; a finite sum
    # proves every value finite at a fraction of the cost of np.isfinite on
    # every value (a sum of finite float64 values may overflow: then look).
    if X.dtype.kind == "f" and np.isfinite(np.sum(X, dtype=np.float64)):
        return
    if not np.all(np.isfinite(X)):
        raise ValueError(
            f"{name} holds NaN or infinity; remove or impute those values before the "
            "neighbour search."
        )


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
        scikit-learn otherwise; ``"approximate"``: usearch's HNSW graph with an
        exact re-rank (dense data, Euclidean metric); ``"auto"``: from
        :data:`APPROXIMATE_MIN_SAMPLES` samples on, SciPy's exact
        KD-tree for at most :data:`TREE_MAX_FEATURES` features, else
        approximate when n_neighbors <= :data:`APPROXIMATE_MAX_NEIGHBORS`;
        exact below.
    metric : str or callable
        Any metric scikit-learn accepts (exact); "euclidean" only for
        ``"approximate"``.
    random_state : int, RandomState or None
        Seeds the approximate search (its principal axes and the order in which
        points enter the graph): the same seed gives the same lists on every run
        and thread count. Unused by the exact search.
    n_jobs : int or None
        Threads of the search (:func:`exact_knn`'s meaning; scikit-learn's
        ``n_jobs`` for other metrics; the approximate graph is built by one
        thread and searched by these).

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
    n_neighbors = check_n_neighbors(n_neighbors, X.shape[0])
    how = _resolve_method(method, X.shape[0], metric, X, n_neighbors)
    if how == "blocked":
        return exact_knn(X, n_neighbors, n_jobs=n_jobs)
    if how == "sklearn":
        nn = NearestNeighbors(n_neighbors=n_neighbors, metric=metric, n_jobs=n_jobs)
        return nn.fit(X).kneighbors()
    if how == "tree":
        return _tree_index(X, n_jobs).kneighbors(n_neighbors=n_neighbors)
    X = np.asarray(X)
    _check_finite(X)
    with nullcontext() if n_jobs is None else thread_limits(n_jobs):
        return _approximate_index(X, random_state).graph(n_neighbors)


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
    if not isinstance(reference, NeighborIndex):
        reference = NeighborIndex(method=method, metric=metric, random_state=random_state,
                                  n_jobs=n_jobs, n_neighbors=n_neighbors).fit(reference)
    return reference.query(query, n_neighbors)


class NeighborIndex:
    """A reference set prepared once for many nearest-neighbour queries.

    Parameters
    ----------
    method : {"exact", "approximate", "auto"}
        As in :func:`nearest_neighbors`.
    metric : str or callable
    random_state : int, RandomState or None
        Seeds the approximate index.
    n_jobs : int or None
        Threads of the search, as in :func:`nearest_neighbors`.
    n_neighbors : int
        The neighbour count ``"auto"`` decides by.

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
            # float64 and centred float32 copies, norms and centre, made once.
            self.prepared_ = prepare_reference(reference)
        elif self.method_ == "sklearn":
            self.index_ = NearestNeighbors(metric=self.metric, n_jobs=self.n_jobs)
            self.index_.fit(reference)
        elif self.method_ == "tree":
            self.index_ = _tree_index(reference, self.n_jobs)
        else:
            reference = np.asarray(reference)
            _check_finite(reference, "reference")
            # The shards' graphs are built on the loop threads: n_jobs bounds them.
            with nullcontext() if self.n_jobs is None else thread_limits(self.n_jobs):
                self.index_ = _approximate_index(reference, self.random_state)
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
            return exact_knn(self.prepared_[0], n_neighbors, query=query,
                             n_jobs=self.n_jobs, _prepared=self.prepared_)
        if self.method_ in ("sklearn", "tree"):
            return self.index_.kneighbors(query, n_neighbors)
        query = np.asarray(query)
        _check_finite(query, "query")
        with nullcontext() if self.n_jobs is None else thread_limits(self.n_jobs):
            return self.index_.query(query, n_neighbors)


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

def prepare_reference(
    X: ArrayLike,
) -> tuple[NDArray[np.float64], NDArray[np.float32], NDArray[np.float64],
           NDArray[np.float64]]:
    """The reference set as the blocked search reads it, computed once.

    Returns ``(X64, X32, sq, centre)``: X in float64 (for the exact re-rank),
    X less its column mean in float32 (for the products; centring leaves the
    distances as they are and shrinks the norms the float32 rounding scales
    with), the float64 squared norms of those float32 rows, and the mean.
    """
    X64 = np.ascontiguousarray(X, dtype=np.float64)
    centre = X64.mean(axis=0)
    X32 = np.empty(X64.shape, dtype=np.float32)
    # A value beyond float32's range becomes infinite here, and the check below
    # names it.
    with np.errstate(over="ignore"):
        for sl in gen_batches(X64.shape[0], 4096):
            X32[sl] = X64[sl] - centre
    sq = np.einsum("ij,ij->i", X32, X32, dtype=np.float64)
    _check_float32_norms(sq, "X")
    if sq.size and np.max(sq) < _FLOAT32_SMALLEST_NORM2 and np.ptp(X64, axis=0).any():
        raise ValueError(
            "X's rows differ by less than float32 resolves (rows of norm below 1e-18 "
            "after centring), so the neighbour search's float32 products cannot rank "
            "them; multiply the data by a scale such as 1 / its largest absolute value "
            "(the neighbours do not change with the scale)."
        )
    return X64, X32, sq, centre


#: Squared norms below this (rows of norm 1e-18) leave float32 products of two rows
#: in float32's subnormal range or at zero, where they rank nothing.
_FLOAT32_SMALLEST_NORM2 = 1e-36


def _check_float32_norms(sq, name):
    """Refuse rows whose float32 products with each other would overflow: a
    product of two rows is at most the larger squared norm, so squared norms
    within float32's range (3.4e38, rows of norm up to 1.8e19) keep every product
    finite and the shortlist's ranking meaningful."""
    if sq.size and not np.max(sq) < np.finfo(np.float32).max:  # NaN fails too
        raise ValueError(
            f"{name} holds NaN, infinity or values beyond float32's range for the "
            "neighbour search's products (rows of norm beyond 1.8e19 after centring); "
            "remove them, or divide the data by a scale such as its largest absolute "
            "value (the neighbours do not change with the scale)."
        )


def _tile_rows(n_features: int) -> int:
    """Rows (and columns) of one square float32 product tile.

    :data:`_TILE`, capped so that a tile takes at most half of scikit-learn's
    ``working_memory`` (``sklearn.config_context``).
    """
    budget = get_config()["working_memory"] * 2 ** 20
    return int(max(8, min(_TILE, np.sqrt(budget / 8))))


def exact_knn(X: ArrayLike, n_neighbors: int, *, query: ArrayLike | None = None,
              n_candidates: int | None = None, n_jobs: int | None = None,
              _prepared: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
              ) -> Neighbors:
    """Exact Euclidean k nearest neighbours by blocked float32 matrix products.

    The products ``q.x`` come from BLAS in float32 tiles; each tile is pushed
    into a heap per query row that keeps the ``n_candidates`` smallest
    approximate squared distances |q|^2 - 2 q.x + |x|^2. For the neighbours
    of X among itself each tile is computed once and pushed both ways (the
    products are symmetric), which halves the work. The shortlists are then
    re-ranked with distances computed in float64 from the differences. A row
    whose shortlist cannot be shown complete (the float32 rounding bound lets
    a point outside it be closer than the k-th inside) is re-ranked over every
    point within that bound, so the result is exact: the same lists as
    scikit-learn's exact search, ties broken by the smaller index. Tile sizes
    follow scikit-learn's ``working_memory`` (``sklearn.config_context``).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Reference points.
    n_neighbors : int
    query : ndarray of shape (n_query, n_features) or None
        None: the neighbours of the rows of X among the others (self excluded).
    n_candidates : int or None
        Shortlist length; default ``n_neighbors + max(16, n_neighbors // 4)``.
    n_jobs : int or None
        Threads for the products (BLAS) and the heaps (compiled loops), as in
        :func:`landmarking._parallel.thread_limits`; None leaves both thread
        pools as the caller set them (an estimator's ``n_jobs``, or all cores).

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
    threads = nullcontext() if n_jobs is None else thread_limits(n_jobs)
    with threads:
        if exclude_self:
            # Columns constant over X add exactly 0 to every distance: leave them out.
            spread = np.ptp(X, axis=0)
            if not np.all(np.isfinite(spread)):
                raise ValueError(
                    "X holds NaN or infinity; remove or impute those values before "
                    "the neighbour search."
                )
            varying = np.flatnonzero(spread > 0)
            Xv = X if len(varying) == X.shape[1] else X[:, varying]
            return _self_knn(prepare_reference(Xv), k, m)
        if not np.all(np.isfinite(Q)):
            raise ValueError(
                "query holds NaN or infinity; remove or impute those values before "
                "the neighbour search."
            )
        X64, X32, sq, centre = _prepared if _prepared is not None else prepare_reference(X)
        distances = np.empty((Q.shape[0], k), dtype=np.float64)
        indices = np.empty((Q.shape[0], k), dtype=np.int64)
        tile = _tile_rows(X.shape[1])
        for sl in gen_batches(Q.shape[0], tile):
            distances[sl], indices[sl] = knn_block(
                np.ascontiguousarray(Q[sl], dtype=np.float64), X64, X32, sq, k, m,
                centre=centre)
        return distances, indices


def knn_block(Qb: NDArray[np.float64], X64: NDArray[np.float64], X32: NDArray[np.float32],
              sq: NDArray[np.float64], k: int, n_candidates: int,
              self_offset: int | None = None, *,
              centre: NDArray[np.float64] | None = None) -> Neighbors:
    """Exact neighbours of one block of query rows (the per-block work of
    :func:`exact_knn` for queries, a plain function of arrays so that it can
    run per block anywhere, e.g. under ``dask.array.map_blocks``).

    Parameters
    ----------
    Qb : ndarray of shape (b, n_features), float64
    X64, X32 : ndarrays of shape (n, n_features)
        The reference points in float64 and (less ``centre``) in float32.
    sq : ndarray of shape (n,)
        Squared norms of the rows of X32.
    k, n_candidates : int
    self_offset : int or None
        When the block is rows ``self_offset:self_offset + b`` of X itself,
        each row's own index is excluded.
    centre : ndarray of shape (n_features,) or None
        What was subtracted from X before the float32 copy (see
        :func:`prepare_reference`); None for nothing.

    Returns
    -------
    distances, indices : ndarrays of shape (b, k)
    """
    from ._neighbors_loops import push_rows

    Qc = Qb if centre is None else Qb - centre
    with np.errstate(over="ignore"):  # named by the check below
        q32 = np.ascontiguousarray(Qc, dtype=np.float32)
    _check_float32_norms(np.einsum("ij,ij->i", q32, q32, dtype=np.float64), "the query")
    sq = np.asarray(sq, dtype=np.float64)
    b, n = Qb.shape[0], X64.shape[0]
    vals = np.full((b, n_candidates), np.inf)
    idx = np.zeros((b, n_candidates), dtype=np.int64)
    tile = _tile_rows(X64.shape[1])
    buf = np.empty(b * tile, dtype=np.float32)
    self_start = -1 if self_offset is None else int(self_offset)
    for J in gen_batches(n, tile):
        G = buf[:b * (J.stop - J.start)].reshape(b, -1)
        with _spurious_invalid():
            np.matmul(q32, X32[J].T, out=G)
        push_rows(G, sq[J], J.start, vals, idx, 0, self_start)
    return _rerank(Qb, q32, vals, idx, X64, X32, sq, k, self_offset)


def _self_knn(prepared, k, m):
    """Neighbours of every row of the reference set among the others: each
    tile of products X_I X_J^T (J after I) is computed once and pushed into
    the heaps of its rows and of its columns."""
    from ._neighbors_loops import push_columns, push_rows

    X64, X32, sq, _ = prepared
    n = X64.shape[0]
    vals = np.full((n, m), np.inf)
    idx = np.zeros((n, m), dtype=np.int64)
    tile = _tile_rows(X64.shape[1])
    buf = np.empty(tile * tile, dtype=np.float32)
    for r0 in range(0, n, tile):
        rows = slice(r0, min(n, r0 + tile))
        for c0 in range(r0, n, tile):
            cols = slice(c0, min(n, c0 + tile))
            G = buf[:(rows.stop - r0) * (cols.stop - c0)].reshape(rows.stop - r0, -1)
            with _spurious_invalid():
                np.matmul(X32[rows], X32[cols].T, out=G)
            push_rows(G, sq[cols], c0, vals, idx, r0, r0)
            if c0 != r0:
                push_columns(G, sq[rows], r0, vals, idx, c0)
    return _rerank(X64, X32, vals, idx, X64, X32, sq, k, 0)


def _rerank(Q64, q32, vals, idx, X64, X32, sq, k, self_offset):
    """Exact float64 order of the shortlists, and the rows whose shortlist the
    rounding bound cannot vouch for re-ranked over every point within it."""
    from ._neighbors_loops import candidate_sq_distances

    b, m = idx.shape
    n = X64.shape[0]
    cand = np.sort(idx, axis=1)  # by index, so that the stable sort breaks ties by it
    exact_sq = candidate_sq_distances(Q64, X64, cand)
    order = np.argsort(exact_sq, axis=1, kind="stable")[:, :k]
    indices = np.take_along_axis(cand, order, axis=1)
    d_sq = np.take_along_axis(exact_sq, order, axis=1)
    available = n - 1 if self_offset is not None else n
    if m < available:
        qsq = np.einsum("ij,ij->i", q32, q32, dtype=np.float64)
        bound = _rounding_bound(qsq, sq.max(), X64.shape[1])
        # Every point left out has an approximate value at least the heap's top;
        # its exact distance exceeds the k-th exact one when that value, less the
        # rounding bound, still does.
        worst = vals[:, 0] + qsq
        unsure = np.flatnonzero(worst - bound <= d_sq[:, -1])
        for start in range(0, len(unsure), 256):
            rows = unsure[start:start + 256]
            approx = q32[rows] @ X32.T
            approx = sq[None, :] - 2.0 * approx + qsq[rows, None]
            if self_offset is not None:
                approx[np.arange(len(rows)), self_offset + rows] = np.inf
            for r, i in enumerate(rows):
                near = np.flatnonzero(approx[r] <= d_sq[i, -1] + bound[i])
                dd = candidate_sq_distances(Q64[i:i + 1], X64, near[None, :])[0]
                o = np.argsort(dd, kind="stable")[:k]
                indices[i], d_sq[i] = near[o], dd[o]
    return np.sqrt(d_sq), indices


def _rounding_bound(qsq, max_sq, n_features):
    """An upper bound on |(|q|^2 - 2 fl32(q.x) + |x|^2) - |q - x|^2| per query.

    Dot products of length D in float32 err by at most about D u (|q|^2 +
    |x|^2) (u the unit roundoff); the float32 rounding of the inputs adds a
    few u more. Twice that, as a margin.
    """
    return 2.0 * (n_features + 8) * _U32 * 2.0 * (qsq + max_sq)

# --------------------------------------------------------------------------- approximate

# The approximate search walks usearch's HNSW graph (compiled C++ shipped in its
# wheel: nothing compiles at run time, so a new process pays no warm-up) built on the
# leading principal axes of the data, and re-ranks the candidates it returns by their
# exact float64 distances in the original space. The settings below were measured
# with benchmarks/knn.py and benchmarks/first_call.py on MNIST 60,000 (k = 10, 2 cores;
# docs/benchmarks.md, "Approximate neighbours in a new process", has the sweep).
#: The graph is searched on the fewest principal axes that hold this share of
#: the data's variance (estimated on a sample), but never fewer than
#: _MIN_SEARCH_DIMS (below a few dozen axes the small distances between near
#: neighbours, which the minor axes carry, are lost), and only when that is at
#: most half the features: otherwise on all features, centred.
_SEARCH_VARIANCE = 0.8
_MIN_SEARCH_DIMS = 48
#: Rows (at most) from which the principal axes are estimated.
_AXES_SAMPLE = 3000
#: HNSW edges per node and candidate list length while inserting (usearch's
#: ``connectivity`` and ``expansion_add``).
_CONNECTIVITY = 12
_EXPANSION_ADD = 40
#: Rows per cell of the work order (:func:`_cell_centres`), and the most cells.
_CELL_SIZE = 256
_MAX_CELLS = 1024
#: The share of rows inserted into the graph in a random order before the rest
#: go in cell by cell (:func:`_insertion_order`).
_RANDOM_SHARE = 0.1
_CELL_ORDER_MIN_SAMPLES = 20_000
#: From this many rows on, the rows are split at random into _SHARDS halves, each
#: with its own graph, built by its own thread at the same time as the other
#: (:class:`_ApproximateIndex`). The number of shards depends on the rows only,
#: never on the threads, so that a seed gives the same lists on any machine. Not
#: below: on 300,000 deformed digits two graphs cost exact LE 0.14-0.21 points of
#: 10-NN accuracy over three seeds, for 3% of its time; on a million they gained
#: 0.06 points and 6-15% of the graph's time (docs/results/neighbors.md, "Two
#: graphs built at once").
_SHARD_MIN_SAMPLES = 500_000
_SHARDS = 2


def _n_candidates(n_neighbors: int) -> int:
    """Candidates fetched from the graph per query point, re-ranked exactly.

    k + 50 at k = 10 (MNIST 60,000: recall 0.992); k + 100 from k = 50 on
    (MNIST 20,000, k = 50: recall 0.978 with k + 50, 0.994 with k + 100).
    """
    return n_neighbors + max(50, min(2 * n_neighbors, 100))


def _shard_candidates(n_neighbors: int) -> int:
    """Candidates fetched from each shard's graph per query point.

    Each of the k nearest is among the k nearest of its own shard, so every
    shard needs k; three fifths of :func:`_n_candidates`' margin each (k + 30 at
    k = 10) kept the recall of one graph with the whole margin on a million
    deformed digits, where half of it lost some (docs/results/neighbors.md, "Two
    graphs built at once").
    """
    margin = _n_candidates(n_neighbors) - n_neighbors
    return n_neighbors + -(-3 * margin // 5)


def _expansion_search(n_candidates: int) -> int:
    """usearch's ``expansion_search`` (HNSW's ef) for that many candidates."""
    return n_candidates


class _ApproximateIndex:
    """usearch's HNSW graphs on the principal axes of X, with an exact re-rank.

    A graph is built by one thread, inserting its rows in an order drawn from
    ``random_state``: parallel insertion into one graph makes it depend on how the
    threads interleave, so the same seed would not give the same neighbours. So
    that the insertion does not run on one core alone, from
    :data:`_SHARD_MIN_SAMPLES` rows on the rows are split at random into
    :data:`_SHARDS` shards, each with its own graph, built at the same time as the
    others on the compiled loops' threads; a query takes
    :func:`_shard_candidates` from every shard and re-ranks them together. Queries
    only read the graphs and run on the compiled loops' threads
    (:func:`~landmarking._parallel.loop_threads`; each query's result is
    independent of the others). The same ``random_state`` therefore gives the same
    lists on every run and thread count.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Dense, finite reference points, kept for the re-rank (as they are when
        C-contiguous float32 or float64, else as a float64 copy).
    random_state : int, RandomState or None
        Seeds the sample the principal axes come from, the shards and the
        insertion order.
    """

    def __init__(self, X: NDArray[np.floating], random_state: RandomStateLike) -> None:
        Index = _usearch_index_class()
        self.X_ = _rerank_dtype(X)
        X = self.X_
        rng = check_random_state(random_state)
        self.centre_, self.axes_ = _principal_axes(X, rng)
        self.projected_ = self._project(X)
        self.cell_centres_ = _cell_centres(self.projected_, rng)
        cells = self._cells(self.projected_)
        # The reference rows cell by cell: the order graph() searches them in.
        self.cell_order_ = np.argsort(cells, kind="stable")
        self.shards_ = _shard_rows(X.shape[0], rng)
        orders = [rows[_insertion_order(cells[rows], len(self.cell_centres_), rng)]
                  for rows in self.shards_]
        self.indexes_ = [Index(ndim=self.projected_.shape[1], metric="l2sq", dtype="f32",
                               connectivity=_CONNECTIVITY, expansion_add=_EXPANSION_ADD)
                         for _ in self.shards_]

        def insert(shard):
            index, order = shard
            index.add(order.astype(np.uint64), self.projected_[order], threads=1)

        run_parts(insert, zip(self.indexes_, orders, strict=True), loop_threads())

    def _cells(self, Y):
        """The cell of each projected row: its nearest cell centre."""
        return _nearest_rows(Y, self.cell_centres_)

    def _project(self, Z):
        """Z less the centre, on the principal axes (when there are any), in float32
        (the graph's precision: float32 products, twice as fast as float64)."""
        out = np.empty((Z.shape[0], self.projected_dims), dtype=np.float32)
        # Centred in the rows' own precision (float64 rows far from the origin
        # keep their differences), then float32.
        centre = self.centre_.astype(np.float32) if Z.dtype == np.float32 else self.centre_
        axes = None if self.axes_ is None else self.axes_.astype(np.float32)
        for sl in gen_batches(Z.shape[0], 4096):
            centred = (Z[sl] - centre).astype(np.float32, copy=False)
            out[sl] = centred if axes is None else centred @ axes.T
        return out

    @property
    def projected_dims(self) -> int:
        return self.X_.shape[1] if self.axes_ is None else self.axes_.shape[0]

    def _search(self, Y, count):
        """Keys of the ``count`` graph neighbours of each row of Y in every shard
        (``count`` columns a shard), all threads; and the rows some shard returned
        fewer for."""
        keys, short = [], []
        for index in self.indexes_:
            index.expansion_search = _expansion_search(count)
            found = index.search(Y, count, threads=loop_threads())
            keys.append(np.asarray(found.keys, dtype=np.int64).reshape(Y.shape[0], count))
            short.append(np.flatnonzero(np.asarray(found.counts).reshape(-1) < count))
        keys = keys[0] if len(keys) == 1 else np.hstack(keys)
        short = np.unique(np.concatenate(short))
        # The unfilled slots of a short row hold no row index: give it valid
        # distinct ones, which its exact search replaces.
        keys[short] = np.arange(keys.shape[1])
        return keys, short

    def _count(self, n_neighbors, self_search):
        """Candidates fetched from each shard per query (a self-search's own row
        comes back too)."""
        wanted = (_n_candidates(n_neighbors) if len(self.shards_) == 1
                  else _shard_candidates(n_neighbors))
        return min(min(len(rows) for rows in self.shards_), wanted + int(self_search))

    def graph(self, n_neighbors: int) -> Neighbors:
        """Each reference point's ``n_neighbors`` nearest others (self excluded)."""
        return self._search_and_rerank(self.X_, self.projected_, self.cell_order_,
                                       self._count(n_neighbors, True), n_neighbors,
                                       exclude_self=True)

    def query(self, Q: NDArray[np.floating], n_neighbors: int) -> Neighbors:
        """The ``n_neighbors`` nearest reference rows of each row of Q."""
        projected = self._project(Q)
        rows = np.argsort(self._cells(projected), kind="stable")
        return self._search_and_rerank(Q, projected, rows, self._count(n_neighbors, False),
                                       n_neighbors, exclude_self=False)

    def _search_and_rerank(self, Q, projected, rows, count, k, exclude_self):
        """Search the graph for the rows of Q (``projected``: on the axes) and
        re-rank, both in the order ``rows``, cell by cell: near rows one after
        another walk the same parts of the graph and read the same candidates
        from cache (quicker on MNIST; CHANGELOG.md, "Measurements retired from
        source comments"); the lists come back in the rows' own order and do not
        depend on it."""
        keys = np.empty((Q.shape[0], count * len(self.indexes_)), dtype=np.int64)
        keys[rows], short = self._search(projected[rows], count)
        if exclude_self:
            keys = _drop_self(keys)
        return self._rerank(Q, keys, rows[short], rows, k, exclude_self)

    def _rerank(self, Q, candidates, short, rows, k, exclude_self):
        """Exact float64 order of each row's candidates (ties by index), the rows
        visited in the order ``rows``; a row the graph returned too few candidates
        for is searched exactly."""
        from ._neighbors_loops import nearest_candidates

        # float32 queries of float32 points stay float32 (the compiled loop subtracts in
        # float64); any other pair is read in float64: the two pairs the compiled
        # loop is built for.
        Q = _rerank_dtype(Q, np.float32 if self.X_.dtype == np.float32 else np.float64)
        d_sq = np.empty((Q.shape[0], k))
        indices = np.empty((Q.shape[0], k), dtype=np.int64)
        nearest_candidates(Q, self.X_, candidates, rows, d_sq, indices)
        distances = np.sqrt(d_sq)
        if len(short):
            d, i = _exact_rows(Q, self.X_, short, k, exclude_self)
            distances[short], indices[short] = d, i
        return distances, indices


def _rerank_dtype(A, like=np.float32):
    """A as C-contiguous float32 when it is float32 and ``like`` is, else float64."""
    keep32 = A.dtype == np.float32 and like == np.float32
    return np.ascontiguousarray(A, dtype=np.float32 if keep32 else np.float64)


def _exact_rows(Q, X, rows, k, exclude_self):
    """Exact neighbours of the given rows of Q among X (their own row excluded
    when Q is X)."""
    prepared = prepare_reference(X)
    m = min(k + max(16, k // 4), X.shape[0] - int(exclude_self))
    out_d = np.empty((len(rows), k))
    out_i = np.empty((len(rows), k), dtype=np.int64)
    for j, r in enumerate(rows):
        q = np.ascontiguousarray(Q[r:r + 1], dtype=np.float64)
        out_d[j], out_i[j] = knn_block(q, *prepared[:3], k, m,
                                       self_offset=r if exclude_self else None,
                                       centre=prepared[3])
    return out_d, out_i


def _cell_centres(Y, rng):
    """Rows of Y drawn at random as the centres of cells (about
    :data:`_CELL_SIZE` rows each, at most :data:`_MAX_CELLS`): each row belongs to
    the cell of its nearest centre. Cells only order the work (near points one
    after another); they never limit where neighbours are looked for."""
    n_cells = int(np.clip(Y.shape[0] // _CELL_SIZE, 1, _MAX_CELLS))
    return Y[np.sort(rng.choice(Y.shape[0], n_cells, replace=False))]


def _shard_rows(n, rng):
    """The rows of each shard, in order: all rows below :data:`_SHARD_MIN_SAMPLES`,
    else :data:`_SHARDS` parts of a random split (no draw from ``rng`` below)."""
    if n < _SHARD_MIN_SAMPLES:
        return [np.arange(n)]
    return [np.sort(part) for part in np.array_split(rng.permutation(n), _SHARDS)]


def _nearest_rows(Y, centres):
    """The index of the nearest row of ``centres`` for each row of Y."""
    half_sq = 0.5 * np.einsum("ij,ij->i", centres, centres)
    nearest = np.empty(Y.shape[0], dtype=np.int64)
    for sl in gen_batches(Y.shape[0], 8192):
        nearest[sl] = np.argmin(half_sq - Y[sl] @ centres.T, axis=1)
    return nearest


def _insertion_order(cells, n_cells, rng):
    """The order in which the rows enter the graph: a random
    :data:`_RANDOM_SHARE` of them first, then the rest cell after cell (the cells,
    and the rows within each, in a random order); below
    :data:`_CELL_ORDER_MIN_SAMPLES` rows, whose graph is built in well under a
    second, a random order (the best graph: on 800 and 2,500 points near a 6-D
    manifold recall 1.0 for ten seeds, against 0.9998-1.0 in cell order).

    Near rows inserted together find their neighbours in cache: MNIST 60,000
    builds quicker than in a random order (CHANGELOG.md, "Measurements retired
    from source comments").
    Cell order alone loses recall (0.986-0.991 over three seeds against
    0.992-0.993), because the first cells' links stay local; the random rows
    inserted first lay the long links, and recall is back (0.992, 0.992, 0.992).
    """
    n = len(cells)
    if n < _CELL_ORDER_MIN_SAMPLES:
        return rng.permutation(n)
    first = rng.choice(n, int(_RANDOM_SHARE * n), replace=False)
    rest = np.ones(n, dtype=bool)
    rest[first] = False
    rest = np.flatnonzero(rest)
    cell_rank = rng.permutation(n_cells)
    by_cell = np.lexsort((rng.permutation(len(rest)), cell_rank[cells[rest]]))
    return np.concatenate([first, rest[by_cell]])


def _principal_axes(X, rng):
    """The mean of a sample of X's rows, and the fewest of the sample's principal
    axes (rows of a matrix) that hold :data:`_SEARCH_VARIANCE` of its variance,
    at least :data:`_MIN_SEARCH_DIMS`; None for the axes when that takes more
    than half of X's columns.

    From the eigenvectors of the sample's covariance, or of its Gram matrix when
    the sample has fewer rows than columns (whichever is smaller): one
    symmetric eigendecomposition of at most n_features x n_features.
    """
    rows = np.sort(rng.choice(X.shape[0], min(X.shape[0], _AXES_SAMPLE), replace=False))
    sample = np.asarray(X[rows], dtype=np.float64)
    centre = sample.mean(axis=0)
    sample -= centre
    m, d = sample.shape
    if min(m, d) < 2 * _MIN_SEARCH_DIMS:
        return centre, None
    if d <= m:
        variances, axes = np.linalg.eigh(sample.T @ sample)
        axes = axes.T[::-1]
    else:
        variances, left = np.linalg.eigh(sample @ sample.T)
        axes = (sample.T @ left[:, ::-1]).T
    variances = np.maximum(variances[::-1], 0.0)
    held = np.cumsum(variances) / max(variances.sum(), np.finfo(float).tiny)
    n_axes = max(_MIN_SEARCH_DIMS, int(np.searchsorted(held, _SEARCH_VARIANCE)) + 1)
    if n_axes > d // 2:
        return centre, None
    axes = axes[:n_axes]
    return centre, axes / np.linalg.norm(axes, axis=1, keepdims=True)


def _tree_index(X, n_jobs):
    """SciPy's exact KD-tree on X (:class:`_TreeIndex`), its queries on ``n_jobs``
    threads (None: :func:`~landmarking._parallel.loop_threads`)."""
    X = np.asarray(X)
    _check_finite(X)
    return _TreeIndex(X, loop_threads() if n_jobs is None else n_jobs)


class _TreeIndex:
    """SciPy's ``cKDTree`` behind scikit-learn's ``kneighbors`` call.

    SciPy's tree rather than scikit-learn's: the same lists in about half the
    time on a Swiss roll (docs/results/neighbors.md). Each query point is
    searched on its own, so the lists do not depend on the thread count; each
    list is ordered by distance, ties by index.
    """

    def __init__(self, X, n_jobs):
        self.tree = cKDTree(X)
        self.n_features = X.shape[1]
        self.n_jobs = n_jobs

    def kneighbors(self, query=None, n_neighbors=10):
        """(distances, indices) of the ``n_neighbors`` nearest rows; with no
        ``query``, of every indexed row among the others (itself left out)."""
        own = query is None
        query = self.tree.data if own else np.asarray(query, dtype=np.float64)
        if query.ndim != 2 or query.shape[1] != self.n_features:
            raise ValueError(
                f"query of shape {query.shape} must have the {self.n_features} columns of "
                "the reference points; pass rows of the same features."
            )
        if not own:
            _check_finite(query, "query")
        k = n_neighbors + own
        # One more, to see a tie at the last place: the tree may keep either of
        # the tied points, the other searches the lower index.
        asked = min(k + 1, self.tree.n)
        distances, indices = self.tree.query(query, k=asked, workers=self.n_jobs)
        distances = distances.reshape(-1, asked)
        indices = indices.reshape(-1, asked).astype(np.intp)
        tied_last = (np.flatnonzero(distances[:, k - 1] == distances[:, k]) if asked > k
                     else np.empty(0, dtype=np.intp))
        distances, indices = distances[:, :k], indices[:, :k]
        if tied_last.size:
            distances[tied_last], indices[tied_last] = exact_knn(
                self.tree.data, k, query=query[tied_last], n_jobs=self.n_jobs)
        if own:
            keep = _drop_self_mask(indices)
            distances = distances[keep].reshape(-1, n_neighbors)
            indices = indices[keep].reshape(-1, n_neighbors)
        # The tree orders each list by distance; ties go by index, as in the
        # other searches (rare in real data, so only the rows that have them).
        tied = np.flatnonzero((distances[:, 1:] == distances[:, :-1]).any(axis=1))
        if tied.size:
            order = np.lexsort((indices[tied], distances[tied]), axis=1)
            distances[tied] = np.take_along_axis(distances[tied], order, axis=1)
            indices[tied] = np.take_along_axis(indices[tied], order, axis=1)
        return distances, indices


def _usearch_index_class():
    try:
        from usearch.index import Index
    except ImportError as exc:
        raise ImportError(
            "method='approximate' needs usearch, from the `ann` extra: install it with "
            "`pip install landmarking[ann]`, or use method='exact'."
        ) from exc
    return Index


def _approximate_index(X, random_state):
    """The approximate index on dense, finite X (see :class:`_ApproximateIndex`)."""
    return _ApproximateIndex(X, random_state)


def _drop_self(indices):
    """Each row of a self-search's lists without its own point (see
    :func:`_drop_self_mask`)."""
    return indices[_drop_self_mask(indices)].reshape(indices.shape[0], -1)


def _drop_self_mask(indices):
    """True where a self-search's lists keep an entry: every entry but the row's
    own point; a row that does not list itself (a duplicate took its place)
    drops its last entry instead."""
    if np.array_equal(indices[:, 0], np.arange(indices.shape[0])):
        keep = np.ones(indices.shape, dtype=bool)  # the usual case: itself first
        keep[:, 0] = False
        return keep
    is_self = indices == np.arange(indices.shape[0])[:, None]
    is_self[~is_self.any(axis=1), -1] = True
    return ~is_self
