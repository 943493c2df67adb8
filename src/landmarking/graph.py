"""The neighbour graph shared by the spectral methods: from k-NN to affinity, and signs.

Laplacian eigenmaps (:mod:`landmarking.spectral`) and Locally Linear Landmarks
(:mod:`landmarking.lll`) share these building blocks, and import them from here
(this module imports neither):

- :func:`gaussian_affinity` turns a k-nearest-neighbour list into a sparse,
  symmetric affinity ``W`` with w_nm = exp(-||y_n - y_m||^2 / (2 sigma^2)) on
  every edge of the (symmetrised) graph, with the width from
  :func:`resolve_bandwidth`;
- :func:`knn_affinity` runs the neighbour search first, and
  :func:`neighbor_graph` does the same for an estimator's ``fit`` (its
  parameters checked against the data, its stages timed);
  :func:`graph_of_neighbors` is its second half, for a caller that ran its own
  search (LLL's cells graph);
- :func:`degree` and :func:`laplacian` give D = diag(W 1) and L = D - W;
- :func:`check_affinity` validates a user-given affinity and
  :func:`check_connected` warns when the graph falls apart into pieces, where
  the spectral problem has one trivial solution per piece;
- :func:`deterministic_signs` fixes the sign of eigenvectors (one rule, in
  :func:`column_signs`).
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components, reverse_cuthill_mckee
from scipy.sparse.linalg import LinearOperator

from ._memory import check_memory
from ._parallel import NJobs, loop_threads
from ._timings import stage
from ._typing import ArrayLike, MatrixLike, NDArray, RandomStateLike, SparseMatrix
from ._validation import (
    Either,
    Integer,
    Options,
    PositiveNumber,
    check_choice,
    check_n_neighbors,
    check_positive_float,
    check_positive_int,
    check_sparse_structure,
)
from .neighbors import NEIGHBOR_METHODS, NeighborMethod, nearest_neighbors

__all__ = ["gaussian_affinity", "knn_affinity", "neighbor_graph", "graph_of_neighbors",
           "resolve_bandwidth",
           "degree", "laplacian", "normalized_laplacian", "check_affinity", "check_connected",
           "deterministic_signs", "column_signs", "DisconnectedGraphWarning", "SYMMETRIZE",
           "GRAPH_PARAMETER_RULES", "GraphEmbeddingMixin", "GRAPH_SEARCHES",
           "check_search_input", "locality_order", "threaded_product"]

#: How the directed k-NN graph is made symmetric.
SYMMETRIZE = ("union", "mean")

#: Graphs with at least this many stored entries are checked by the compiled
#: passes of :mod:`._graph_loops` (no transpose); smaller ones by scipy, whose
#: symmetry check is as quick there (measured on MNIST k-NN graphs:
#: CHANGELOG.md, "Measurements retired from source comments").
COMPILED_MIN_NNZ = 1 << 20

#: The searches of a graph on all rows that LE and LLL take: those of
#: :mod:`landmarking.neighbors`, and ``"cells"``
#: (:func:`landmarking.lll.cell_graph.cells_neighbors`).
GRAPH_SEARCHES = (*NEIGHBOR_METHODS, "cells")

#: The rules (:func:`landmarking._validation.check_params`) of the parameters that
#: every estimator building a k-NN graph shares; each merges them into its table.
GRAPH_PARAMETER_RULES = {
    "n_neighbors": Integer(),
    "bandwidth": Either("auto", PositiveNumber()),
    "symmetrize": Options(*SYMMETRIZE),
    "neighbors_method": Options(*NEIGHBOR_METHODS),
    "n_jobs": NJobs(),
}


class GraphEmbeddingMixin:
    """What the estimators that embed a graph share: ``fit_transform`` passes
    ``affinity`` on, fitted means ``embedding_`` is set, sparse input is taken and
    float32 stays float32. Put it first among the bases."""

    def fit_transform(self, X: MatrixLike, y: Any = None,
                      affinity: SparseMatrix | None = None) -> np.ndarray:
        """Fit and return ``embedding_``."""
        return self.fit(X, y, affinity=affinity).embedding_

    def __sklearn_is_fitted__(self):
        return hasattr(self, "embedding_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


class DisconnectedGraphWarning(UserWarning):
    """The affinity graph has several connected components."""


def gaussian_affinity(distances: ArrayLike, indices: ArrayLike, bandwidth: float, *,
                      symmetrize: Literal["union", "mean"] = "union") -> sparse.csr_matrix:
    """Symmetric sparse Gaussian affinity from a k-nearest-neighbour list.

    Parameters
    ----------
    distances : ndarray of shape (n_samples, k)
        Euclidean distance from each point to its k nearest neighbours (self
        excluded), as returned by :func:`landmarking.neighbors.nearest_neighbors`.
    indices : ndarray of shape (n_samples, k)
        The neighbours' row indices.
    bandwidth : float
        Gaussian width sigma > 0, in data units.
    symmetrize : {"union", "mean"}
        ``"union"``: an edge exists when either end lists the other, with the
        kernel value as weight (the kernel is symmetric, so both directions
        agree). ``"mean"``: 0.5 (W + W^T), halving one-sided edges, as
        scikit-learn's ``SpectralEmbedding`` does for its k-NN graph.

    Returns
    -------
    W : scipy.sparse.csr_matrix of shape (n_samples, n_samples), float64
        Zero diagonal, symmetric, nonnegative.

    Examples
    --------
    >>> d = np.array([[1.0], [1.0], [2.0]])
    >>> i = np.array([[1], [0], [1]])
    >>> gaussian_affinity(d, i, 1.0).toarray().round(3)
    array([[0.   , 0.607, 0.   ],
           [0.607, 0.   , 0.135],
           [0.   , 0.135, 0.   ]])
    """
    bandwidth = check_positive_float(bandwidth, "bandwidth")
    check_choice(symmetrize, "symmetrize", SYMMETRIZE)
    distances = np.asarray(distances, dtype=np.float64)
    indices = np.asarray(indices)
    if distances.shape != indices.shape or distances.ndim != 2:
        raise ValueError(
            f"distances {distances.shape} and indices {indices.shape} must be 2-D "
            "arrays of the same shape (one row of neighbours per point)."
        )
    n, k = indices.shape
    check_memory(128 * n * k, what=f"the affinity graph of {n} points x {k} neighbours",
                 way_out="use fewer neighbours, fewer rows, or an out-of-core (Dask) input")
    with np.errstate(over="ignore", under="ignore"):
        width = 2.0 * bandwidth ** 2
        if not 0 < width < np.inf:
            raise ValueError(
                f"bandwidth={bandwidth!r}: its square {'underflows' if width == 0 else 'overflows'}"
                " float64; pass a bandwidth in the units of the data's distances, or "
                "'auto'.")
        # Distances whose squares overflow get weight 0 (no edge), as they should.
        values = np.exp(-(distances ** 2) / width).ravel()
    rows = np.repeat(np.arange(n), k)
    cols = indices.ravel()
    keep = cols != rows  # a duplicate point may list itself; no self-loops
    W = sparse.csr_matrix((values[keep], (rows[keep], cols[keep])), shape=(n, n))
    W.sum_duplicates()
    if symmetrize == "mean":
        return ((W + W.T) * 0.5).tocsr()
    return W.maximum(W.T).tocsr()


def knn_affinity(X: MatrixLike, n_neighbors: int, bandwidth: float, *,
                 method: NeighborMethod = "exact",
                 symmetrize: Literal["union", "mean"] = "union",
                 random_state: RandomStateLike = None,
                 n_jobs: int | None = None) -> sparse.csr_matrix:
    """Gaussian affinity on the ``n_neighbors`` nearest neighbours of each row of X.

    ``n_jobs`` threads search the neighbours (scikit-learn's meaning).

    Returns
    -------
    W : scipy.sparse.csr_matrix of shape (n_samples, n_samples)

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [3.0]])
    >>> knn_affinity(X, 1, 1.0).nnz
    4
    """
    n_neighbors = check_positive_int(n_neighbors, "n_neighbors")
    distances, indices = nearest_neighbors(X, n_neighbors, method=method,
                                           random_state=random_state, n_jobs=n_jobs)
    return gaussian_affinity(distances, indices, bandwidth, symmetrize=symmetrize)


def resolve_bandwidth(bandwidth: float | Literal["auto"], distances: ArrayLike) -> float:
    """The Gaussian width: a float as given, or ``"auto"``: the median k-NN distance."""
    if isinstance(bandwidth, str):
        check_choice(bandwidth, "bandwidth", ("auto",))
        positive = distances[distances > 0]
        if positive.size == 0:
            raise ValueError(
                "bandwidth='auto' needs some nonzero neighbour distances, but all "
                "points coincide with their neighbours; pass a float bandwidth."
            )
        return float(np.median(positive))
    return check_positive_float(bandwidth, "bandwidth")


def neighbor_graph(X: MatrixLike, n_neighbors: int, bandwidth: float | Literal["auto"], *,
                   symmetrize: Literal["union", "mean"] = "union",
                   method: NeighborMethod = "exact", random_state: RandomStateLike = None,
                   n_jobs: int | None = None, check_size: bool = True,
                   timings: dict | None = None) -> tuple[sparse.csr_matrix, float]:
    """The Gaussian k-NN affinity of an estimator's ``fit``, and the width it used.

    The neighbour search, then :func:`graph_of_neighbors`, with the seconds of
    the search and of the rest in ``timings["neighbors"]`` and
    ``timings["affinity"]``.

    Parameters
    ----------
    X : array or CSR matrix of shape (n_samples, n_features)
    n_neighbors : int
        K_W; with ``check_size``, fewer than n_samples (else a ``ValueError``
        names the fix).
    bandwidth : float or "auto"
    symmetrize, method, random_state, n_jobs
        As in :func:`knn_affinity`.
    check_size : bool
        Refuse ``n_neighbors >= n_samples``; without it the caller has capped
        ``n_neighbors`` itself.
    timings : dict, optional
        Filled with the stages' seconds.

    Returns
    -------
    W : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
    bandwidth : float
    """
    if check_size:
        check_n_neighbors(n_neighbors, X.shape[0])
    with stage(timings, "neighbors"):
        distances, indices = nearest_neighbors(X, n_neighbors, method=method,
                                               random_state=random_state, n_jobs=n_jobs)
    return graph_of_neighbors(distances, indices, bandwidth, symmetrize=symmetrize,
                              timings=timings)


def graph_of_neighbors(distances: ArrayLike, indices: ArrayLike,
                       bandwidth: float | Literal["auto"], *,
                       symmetrize: Literal["union", "mean"] = "union",
                       timings: dict | None = None) -> tuple[sparse.csr_matrix, float]:
    """The Gaussian affinity of neighbour lists that a search made, and the width it
    used: :func:`resolve_bandwidth`, then :func:`gaussian_affinity`.

    The graph is built here, square, symmetric and without self-loops, so of
    :func:`check_affinity`'s checks (for a graph from outside) only one applies:
    every point keeps an edge (a width too small for the distances makes every
    weight of a point underflow to 0).

    Parameters
    ----------
    distances, indices : ndarrays of shape (n_samples, k)
        Each row's neighbours (self excluded), as
        :func:`landmarking.neighbors.nearest_neighbors` returns them.
    bandwidth : float or "auto"
    symmetrize : {"union", "mean"}
        As in :func:`gaussian_affinity`.
    timings : dict, optional
        Its seconds are added as ``timings["affinity"]``.

    Returns
    -------
    W : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
    bandwidth : float

    Examples
    --------
    >>> d = np.array([[1.0], [1.0], [2.0]])
    >>> i = np.array([[1], [0], [1]])
    >>> W, width = graph_of_neighbors(d, i, "auto")
    >>> W.nnz, width
    (4, 1.0)
    """
    with stage(timings, "affinity"):
        bandwidth = resolve_bandwidth(bandwidth, distances)
        W = gaussian_affinity(distances, indices, bandwidth, symmetrize=symmetrize)
        _refuse_isolated_points(W)
    return W, bandwidth


def check_search_input(X: MatrixLike, neighbors_method: str,
                       affinity: SparseMatrix | None = None) -> None:
    """Refuse the cells graph on sparse X before any work is done (a given
    ``affinity`` replaces the graph, and then the search is not run)."""
    if neighbors_method == "cells" and sparse.issparse(X) and affinity is None:
        raise ValueError(
            "neighbors_method='cells' searches dense data; pass a dense X or "
            "neighbors_method='exact' for sparse input.")


def degree(W: SparseMatrix | ArrayLike) -> NDArray[np.float64]:
    """Degrees d_n = sum_m w_nm as a 1-D float64 array.

    Examples
    --------
    >>> from scipy import sparse
    >>> W = sparse.csr_matrix(np.array([[0, 1.0, 0], [1.0, 0, 2.0], [0, 2.0, 0]]))
    >>> degree(W)
    array([1., 3., 2.])
    """
    return np.asarray(W.sum(axis=1), dtype=np.float64).ravel()


def laplacian(W: SparseMatrix | ArrayLike) -> sparse.csr_matrix:
    """Graph Laplacian L = D - W (sparse CSR), with D = diag of :func:`degree`.

    Examples
    --------
    >>> from scipy import sparse
    >>> W = sparse.csr_matrix(np.array([[0, 1.0, 0], [1.0, 0, 2.0], [0, 2.0, 0]]))
    >>> laplacian(W).toarray()
    array([[ 1., -1.,  0.],
           [-1.,  3., -2.],
           [ 0., -2.,  2.]])
    """
    return (sparse.diags(degree(W)) - W).tocsr()


def normalized_laplacian(W: SparseMatrix) -> tuple[sparse.csr_matrix, NDArray[np.float64]]:
    """The normalised Laplacian L_sym = I - D^-1/2 W D^-1/2 (sparse, made exactly
    symmetric against rounding) and D^1/2; a point without an edge is refused
    (its degree is 0).

    Examples
    --------
    >>> from scipy import sparse
    >>> W = sparse.csr_matrix(np.array([[0, 1.0, 0], [1.0, 0, 1.0], [0, 1.0, 0]]))
    >>> L, sqrt_deg = normalized_laplacian(W)
    >>> np.round(L.toarray(), 3), sqrt_deg ** 2
    (array([[ 1.   , -0.707,  0.   ],
           [-0.707,  1.   , -0.707],
           [ 0.   , -0.707,  1.   ]]), array([1., 2., 1.]))
    """
    deg = degree(W)
    if np.any(deg <= 0):
        raise ValueError(
            f"{int(np.sum(deg <= 0))} points have no edge in the graph; use more "
            "neighbours or a larger bandwidth."
        )
    sqrt_deg = np.sqrt(deg)
    inv = sparse.diags(1.0 / sqrt_deg)
    L = (sparse.identity(W.shape[0], format="csr") - inv @ W @ inv).tocsr()
    return 0.5 * (L + L.T), sqrt_deg


def check_affinity(W: SparseMatrix, n_samples: int | None = None) -> sparse.csr_matrix:
    """Validate a user-given affinity and return it as float64 CSR.

    Raises a ``ValueError`` naming the fix when W is not a square, symmetric,
    nonnegative sparse matrix with finite entries, when its size differs from
    ``n_samples``, or when some point has no edge (zero degree). Self-loops are
    dropped (from a copy).

    Examples
    --------
    >>> from scipy import sparse
    >>> check_affinity(sparse.csr_matrix(np.array([[0, 1.0], [1.0, 0]])), 2).nnz
    2
    """
    if not sparse.issparse(W):
        raise TypeError(
            f"affinity must be a scipy sparse matrix, got {type(W).__name__}; "
            "convert it with scipy.sparse.csr_matrix(W)."
        )
    check_sparse_structure(W, "affinity")  # before the conversion, which trusts it
    if W.dtype.kind not in "biuf":
        raise ValueError(
            f"affinity must hold real numbers, got dtype {W.dtype}; build it from real "
            "weights (e.g. W.real where the imaginary parts are zero).")
    W = sparse.csr_matrix(W, dtype=np.float64)
    check_sparse_structure(W, "affinity")
    if W.shape[0] != W.shape[1]:
        raise ValueError(f"affinity must be square, got shape {W.shape}.")
    if n_samples is not None and W.shape[0] != n_samples:
        raise ValueError(
            f"affinity is {W.shape[0]} x {W.shape[1]} but X has {n_samples} rows; "
            "pass the affinity built on the same points as X."
        )
    if W.nnz and (not np.all(np.isfinite(W.data)) or W.data.min() < 0):
        raise ValueError("affinity must have finite, nonnegative entries.")
    if not _is_symmetric(W):
        raise ValueError(
            "affinity must be symmetric; symmetrise it first, e.g. W.maximum(W.T) "
            "or (W + W.T) / 2."
        )
    if W.diagonal().any():
        W = W.tolil()
        W.setdiag(0)
        W = W.tocsr()
        W.eliminate_zeros()
    _refuse_isolated_points(W)
    return W


def _refuse_isolated_points(W):
    """A ``ValueError`` naming the fix when some point of W has no edge (degree 0)."""
    isolated = np.flatnonzero(degree(W) <= 0)
    if isolated.size:
        raise ValueError(
            f"{isolated.size} points have no edge in the affinity graph (first at "
            f"index {isolated[0]}); use more neighbours or a larger bandwidth."
        )


def _is_symmetric(W, rtol=1e-10):
    """Whether max |w_nm - w_mn| <= rtol * max |w_nm| for a CSR matrix W.

    A large structurally symmetric matrix in canonical form (sorted indices, no
    duplicates), which is what graph builders produce, is checked in one
    compiled pass without forming W^T (a transpose of a large graph costs more
    than everything else here); anything else takes scipy's route, which on
    small graphs is the faster.
    """
    scale = max(float(max(W.data.max(), -W.data.min())) if W.nnz else 0.0, 1e-300)
    if W.has_canonical_format and W.nnz >= COMPILED_MIN_NNZ:
        from . import _graph_loops as K  # compiled; loaded on first use

        verdict = K.symmetry_pass(W.indptr, W.indices, W.data, rtol * scale,
                                  loop_threads())
        if verdict >= 0:
            return bool(verdict)
    asym = abs(W - W.T)
    return not (asym.nnz and asym.max() > rtol * scale)


def locality_order(S: SparseMatrix) -> NDArray[np.int32]:
    """An order of the rows of the symmetric sparse S (reverse Cuthill-McKee)
    in which each row's neighbours sit at nearby positions.

    In that order a product S x reads x in few places at a time, from cache,
    where the rows of a data set in no order send it all over memory
    (docs/results/spectral.md, "The eigensolver's products").
    """
    return reverse_cuthill_mckee(sparse.csr_matrix(S), symmetric_mode=True)


def threaded_product(S: SparseMatrix) -> LinearOperator:
    """S as a ``LinearOperator`` whose products run on the compiled loops'
    threads (:func:`~landmarking._parallel.loop_threads`, read now); scipy's own
    product runs on one. Each row's sum is taken in stored order, so a product
    has the same bits on any thread count.
    """
    from . import _graph_loops as K  # compiled; loaded on first use

    S = sparse.csr_matrix(S, dtype=np.float64)
    try:
        # The compiled product reads x at every stored column index: check them
        # all (and the row pointers) here, once.
        S.check_format(full_check=True)
    except ValueError as exc:
        raise ValueError(
            f"S is not a valid CSR matrix ({exc}); build it with scipy.sparse from "
            "(data, (rows, columns)) or repair its indices and indptr."
        ) from None
    n_threads = loop_threads()

    def product(x):
        x = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
        return K.csr_matvec(S.indptr, S.indices, S.data, x, n_threads)

    return LinearOperator(S.shape, matvec=product, dtype=np.float64)


def check_connected(W: SparseMatrix, *, warn: bool = True) -> int:
    """Number of connected components of the graph W; warn when more than one.

    Parameters
    ----------
    W : sparse matrix of shape (n, n)
        Edges are the stored entries, in either direction.
    warn : bool
        Emit a :class:`DisconnectedGraphWarning` when the graph has several
        components.

    Returns
    -------
    int

    Examples
    --------
    >>> from scipy import sparse
    >>> check_connected(sparse.csr_matrix(np.array([[0, 1.0], [1.0, 0]])))
    1
    """
    if sparse.issparse(W) and W.shape[0] == W.shape[1] and W.nnz >= COMPILED_MIN_NNZ:
        from . import _graph_loops as K  # compiled; loaded on first use

        W = sparse.csr_matrix(W)
        labels = K.component_labels(W.indptr, W.indices)
        n_components = int(labels.max()) + 1 if labels.size else 0
    else:
        n_components, labels = connected_components(W, directed=False)
    if n_components > 1 and warn:
        sizes = np.bincount(labels)
        warnings.warn(
            f"the affinity graph has {n_components} connected components (the "
            f"smallest has {sizes.min()} points); the embedding then has one "
            "trivial direction per extra component. Use more neighbours or a "
            "larger bandwidth.",
            DisconnectedGraphWarning,
            stacklevel=2,
        )
    return int(n_components)


def column_signs(X: ArrayLike) -> NDArray[np.float64]:
    """+1 or -1 per column of X: the sign of its entry of largest magnitude (+1 for a
    zero column). The one sign rule of every embedding here: eigenvectors are
    defined up to sign, and this fixes one."""
    X = np.asarray(X)
    signs = np.sign(X[np.argmax(np.abs(X), axis=0), np.arange(X.shape[1])])
    signs[signs == 0] = 1.0
    return signs


def deterministic_signs(X: ArrayLike) -> NDArray[np.float64]:
    """Flip each column of X so that its entry of largest magnitude is positive.

    Eigenvectors are defined up to sign; this fixes one (:func:`column_signs`),
    so that repeated fits give identical embeddings.
    """
    X = np.array(X, dtype=np.float64, copy=True)
    if X.size == 0:
        return X
    X *= column_signs(X)
    return X
