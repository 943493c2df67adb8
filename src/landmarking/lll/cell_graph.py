"""The k-nearest-neighbour graph from the landmarks' cells (LLL at scale).

Locally Linear Landmarks finds every point's K_Z nearest landmarks anyway, for
its weights Z. Each landmark's *cell* holds the points it is nearest to (an
inverted file, the partition of IVF search), and a point's neighbours lie, with
few exceptions, in the cells of its nearest landmarks. :func:`cell_graph` searches
there: the points of a cell, together, against every point of the cells their
``n_probes`` nearest landmarks own. Candidates are ranked by the float32 lower
bounds of the landmark search (:class:`~landmarking.lll._cpu._LandmarkAxes`: the
landmarks' leading principal axes plus the norm off them, one small matrix
product per cell), the k + :data:`CELL_CANDIDATES` nearest by that bound are
computed exactly in float64, and the k nearest kept. A neighbour outside those
cells is missed: the graph is approximate (MNIST's 60,000 digits with 1,000
landmarks, ``n_probes=5``: 94% of the exact lists' entries, the same share as
when every candidate is computed exactly), but deterministic, every point's list
independent of the others and of the thread count, and the cells searched in
parallel, where an HNSW index is built by one thread. A cell's float32 block of
bounds (its points x its candidates) is kept within ``working_memory /
BLOCKS_PER_BUDGET`` (16 MiB by default) by searching a large cell's points a piece
at a time: duplicate rows all fall into one cell, which would otherwise form a
block quadratic in their number.
"""

from __future__ import annotations

import contextlib

import numpy as np
from scipy import sparse
from sklearn.utils import check_random_state, gen_batches

from .._parallel import blas_limit, loop_threads, run_parts
from .._typing import ArrayLike, MatrixLike, NDArray, RandomStateLike
from .._validation import check_n_neighbors, check_positive_int
from ..neighbors import (
    APPROXIMATE_MIN_SAMPLES,
    TREE_MAX_FEATURES,
    _exact_rows,
    nearest_neighbors,
    search_kind,
)
from . import _loops as K
from ._cpu import _LandmarkAxes, reconstruction_weights

__all__ = ["cell_graph", "graph_cells", "cells_neighbors", "graph_search", "graph_neighbors",
           "uses_cells", "nearest_landmarks",
           "CELL_CANDIDATES", "CELL_SIZE", "CELL_PROBES"]

#: Candidates past k, by the bound, whose exact distances are taken (MNIST: the
#: lists equal those from every candidate's exact distance).
CELL_CANDIDATES = 24
#: Cells a thread takes at a time (the unit of work handed out).
CELLS_PER_TASK = 64
#: Points per cell of the graph's own partition (:func:`graph_cells`). A cell's
#: search costs its points times the points of the cells they bring, so the graph's
#: time grows with the cell size, and so does its recall. 100 points keep exact LE's
#: 10-NN accuracy on deformed digits within a point of the HNSW graph's, in less
#: time from 100,000 digits on (the table per cell size: docs/results/lll.md,
#: "The defaults"; benchmarks/lll_auto_rules.py prints it).
CELL_SIZE = 100
#: Cells each point brings to its cell's search in the graph's own partition.
CELL_PROBES = 5
#: LLL's landmarks serve as the cells when each point has at least this many of
#: them (K_Z) ...
CELLS_MIN_PROBES = 3
#: ... and a cell holds between CELL_SIZE / REUSE_SPREAD and CELL_SIZE *
#: REUSE_SPREAD points on average: then their search is the one the weights did
#: already. Otherwise the graph draws its own :func:`graph_cells`.
REUSE_SPREAD = 2


def cell_graph(X: ArrayLike, landmarks: ArrayLike, nearest: NDArray[np.integer],
               n_neighbors: int, *, n_probes: int | None = None,
               ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """The ``n_neighbors`` nearest points of every row of X among the points of the
    cells of its nearest landmarks (self excluded).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Dense float32 or float64 rows, in memory.
    landmarks : ndarray of shape (n_landmarks, n_features)
    nearest : ndarray of shape (n_samples, m)
        Each row's nearest landmarks, nearest first (the indices of LLL's Z); the
        first is the row's cell.
    n_neighbors : int
    n_probes : int or None
        Cells each point brings to its cell's search: those of its ``n_probes``
        nearest landmarks (default and at most m).

    Returns
    -------
    distances, indices : ndarrays of shape (n_samples, n_neighbors)
        Exact Euclidean distances (float64) and row indices, sorted by (distance,
        index); a row whose cells hold too few points gets its exact neighbours
        among all rows.

    Raises
    ------
    ValueError
        When ``n_neighbors`` is not below the number of rows.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 3))
    >>> T = X[::10]
    >>> nearest = np.argsort(((X[:, None] - T[None]) ** 2).sum(axis=2), axis=1)[:, :5]
    >>> d, i = cell_graph(X, T, nearest, 4)
    >>> d.shape, bool(np.all(i != np.arange(500)[:, None]))
    ((500, 4), True)
    """
    X = np.ascontiguousarray(X)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    n = X.shape[0]
    k = check_n_neighbors(n_neighbors, n)
    nearest = np.asarray(nearest)
    probes = nearest.shape[1] if n_probes is None else min(
        check_positive_int(n_probes, "n_probes"), nearest.shape[1])
    axes = _LandmarkAxes(np.asarray(landmarks, dtype=np.float64))
    Y, y_sq = axes.search_coordinates(X)
    cells = nearest[:, 0]
    order = np.argsort(cells, kind="stable")
    starts = np.searchsorted(cells[order], np.arange(axes.centred.shape[0] + 1))
    distances = np.empty((n, k))
    indices = np.empty((n, k), dtype=np.int64)
    search = _CellSearch(X, Y, y_sq, order, starts,
                         np.ascontiguousarray(nearest[:, :probes]), k)
    tasks = list(gen_batches(len(starts) - 1, CELLS_PER_TASK))
    threads = loop_threads()

    def run(task):
        for cell in range(task.start, task.stop):
            search.cell(cell, distances, indices)

    # Each thread's products on one BLAS thread (the threads already fill the
    # cores), set once here in the calling thread: BLAS's thread count is one
    # setting for the whole process.
    with blas_limit(1) if threads > 1 else contextlib.nullcontext():
        run_parts(run, tasks, threads)
    short = np.flatnonzero(indices[:, -1] < 0)
    if short.size:
        distances[short], indices[short] = _exact_rows(X, X, short, k, exclude_self=True)
    return distances, indices


def nearest_landmarks(Z: sparse.csr_matrix) -> NDArray[np.integer]:
    """Each row's landmarks, nearest first, read from LLL's weights Z (every row
    holds its K_Z landmarks, stored in that order): the cells the graph on all
    rows may search (the ``nearest`` of :func:`graph_neighbors`)."""
    return Z.indices.reshape(Z.shape[0], -1).copy()


def uses_cells(X: MatrixLike, neighbors_method: str) -> bool:
    """Whether the graph on all rows of X is the cells graph (:func:`cells_neighbors`):
    asked for, or ``"auto"`` on dense data of at least
    :data:`~landmarking.neighbors.APPROXIMATE_MIN_SAMPLES` points and more than
    :data:`~landmarking.neighbors.TREE_MAX_FEATURES` features (fewer get the exact
    KD-tree). The choice depends on the data alone, never on a method's other
    parameters."""
    if neighbors_method != "auto":
        return neighbors_method == "cells"
    return (not sparse.issparse(X) and X.shape[0] >= APPROXIMATE_MIN_SAMPLES
            and X.shape[1] > TREE_MAX_FEATURES)


def graph_search(X: MatrixLike, neighbors_method: str, n_neighbors: int) -> str:
    """The search of a graph on all rows of X (LLL's and exact LE's):
    ``neighbors_method`` with "auto" resolved to ``"cells"``, ``"exact"`` or
    ``"approximate"``.

    "auto" takes the cells graph where :func:`uses_cells` says so; else the choice
    of :func:`~landmarking.neighbors.nearest_neighbors`
    (:func:`~landmarking.neighbors.search_kind`).

    Examples
    --------
    >>> X = np.zeros((20_000, 10))
    >>> graph_search(X, "auto", 10), graph_search(X[:, :3], "auto", 10)
    ('cells', 'exact')
    """
    if uses_cells(X, neighbors_method):
        return "cells"
    if neighbors_method != "auto":
        return neighbors_method
    return search_kind("auto", X, n_neighbors)


def graph_neighbors(X: MatrixLike, neighbors_method: str, n_neighbors: int, *,
                    landmarks: ArrayLike | None = None,
                    nearest: NDArray[np.integer] | None = None,
                    rng: RandomStateLike = None, random_state: RandomStateLike = None,
                    n_jobs: int | None = None,
                    ) -> tuple[str, NDArray[np.float64], NDArray[np.int64]]:
    """The neighbour lists of LLL's graph on all rows of X, and the search that
    made them (:func:`graph_search`'s answer): the cells graph
    (:func:`cells_neighbors`) where :func:`uses_cells` says so, else
    :func:`~landmarking.neighbors.nearest_neighbors` with ``neighbors_method``.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Checked rows in memory.
    neighbors_method : {"auto", "exact", "approximate", "cells"}
    n_neighbors : int
    landmarks, nearest : optional
        LLL's landmarks and every row's nearest ones, reused as the cells when
        they have the graph's size (see :func:`graph_cells`).
    rng : int, RandomState or None
        Draws the cells' centres when the landmarks are not reused (LLL passes
        its run's random stream).
    random_state : int, RandomState or None
        Seeds the approximate search, as in
        :func:`~landmarking.neighbors.nearest_neighbors` (LLL passes its
        ``random_state`` as given, so that its graph is exact LE's).
    n_jobs : int or None
        Threads of :func:`~landmarking.neighbors.nearest_neighbors`.

    Returns
    -------
    distances, indices : ndarrays of shape (n_samples, n_neighbors)
        Sorted by distance, self excluded.
    search : str
        ``"cells"``, ``"exact"`` or ``"approximate"``.

    Raises
    ------
    ValueError
        When ``n_neighbors`` is not below the number of rows.

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(500, 5))
    >>> d, i, search = graph_neighbors(X, "auto", 10)
    >>> d.shape, search
    ((500, 10), 'exact')
    """
    n_neighbors = check_n_neighbors(n_neighbors, X.shape[0])
    if uses_cells(X, neighbors_method):
        search = "cells"
        distances, indices = cells_neighbors(X, n_neighbors, landmarks=landmarks,
                                             nearest=nearest, random_state=rng)
    else:
        search = search_kind(neighbors_method, X, n_neighbors)
        distances, indices = nearest_neighbors(X, n_neighbors, method=neighbors_method,
                                               random_state=random_state, n_jobs=n_jobs)
    return distances, indices, search


def cells_neighbors(X: ArrayLike, n_neighbors: int, *, landmarks: ArrayLike | None = None,
                    nearest: NDArray[np.integer] | None = None,
                    random_state: RandomStateLike = None,
                    ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """The cells graph of X on its own partition: :func:`graph_cells`, then
    :func:`cell_graph`.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    n_neighbors : int
    landmarks, nearest : optional
        LLL's landmarks and every row's nearest ones, reused as the cells when
        they have the graph's size (see :func:`graph_cells`).
    random_state : int, RandomState or None
        Draws the centres when the landmarks are not reused.

    Returns
    -------
    distances, indices : ndarrays of shape (n_samples, n_neighbors)
        As :func:`cell_graph`'s.

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(2000, 5))
    >>> d, i = cells_neighbors(X, 10, random_state=0)
    >>> d.shape, bool(np.all(np.diff(d, axis=1) >= 0))
    ((2000, 10), True)
    """
    centres, cells = graph_cells(X, landmarks, nearest, random_state=random_state)
    return cell_graph(X, centres, cells, n_neighbors)


def graph_cells(X: ArrayLike, landmarks: ArrayLike | None = None,
                nearest: NDArray[np.integer] | None = None, *,
                random_state: RandomStateLike = None,
                ) -> tuple[np.ndarray, NDArray[np.integer]]:
    """The partition the cells graph searches: its centres and every row's nearest.

    The cells are sized for the graph, from the number of rows alone: about
    :data:`CELL_SIZE` points each. LLL's own landmarks and their nearest lists
    (``landmarks``, ``nearest``: what the weights Z found) are the partition when
    they make cells of about that size (within a factor :data:`REUSE_SPREAD`) and
    bring at least :data:`CELLS_MIN_PROBES` cells per point; otherwise the centres
    are ``n_samples / CELL_SIZE`` rows drawn at random and each row's
    :data:`CELL_PROBES` nearest centres are found by the landmark search of the
    weights (:func:`~landmarking.lll._cpu.reconstruction_weights`).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    landmarks : ndarray of shape (n_landmarks, n_features), optional
    nearest : ndarray of shape (n_samples, m), optional
        Each row's nearest landmarks, nearest first.
    random_state : int, RandomState or None
        Draws the centres when the landmarks are not reused.

    Returns
    -------
    centres : ndarray of shape (n_cells, n_features)
    nearest : ndarray of shape (n_samples, n_probes)
        Each row's nearest centres, nearest first: the first is its cell.

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(1000, 5))
    >>> centres, nearest = graph_cells(X, random_state=0)
    >>> centres.shape, nearest.shape
    ((10, 5), (1000, 5))
    """
    n = X.shape[0]
    if landmarks is not None and nearest is not None and reusable_cells(
            n, landmarks.shape[0], nearest.shape[1]):
        return landmarks, nearest
    n_cells = max(1, min(n, round(n / CELL_SIZE)))
    rng = check_random_state(random_state)
    centres = np.asarray(X[np.sort(rng.choice(n, n_cells, replace=False))], np.float64)
    weights = reconstruction_weights(X, centres, min(CELL_PROBES, n_cells))
    return centres, weights.indices.reshape(n, -1)


def reusable_cells(n_samples: int, n_landmarks: int, n_probes: int) -> bool:
    """Whether LLL's landmarks make cells of the graph's size (:func:`graph_cells`)."""
    mean_size = n_samples / n_landmarks
    return (n_probes >= CELLS_MIN_PROBES
            and CELL_SIZE / REUSE_SPREAD <= mean_size <= CELL_SIZE * REUSE_SPREAD)


class _CellSearch:
    """What every cell's search reads: the rows, their coordinates, the cells."""

    def __init__(self, X, Y, y_sq, order, starts, probes, k):
        # Imported here, apart from the module's thread imports.
        from .._memory import BLOCKS_PER_BUDGET, working_memory_bytes

        self.X, self.Y, self.y_sq = X, Y, y_sq
        self.order, self.starts, self.probes, self.k = order, starts, probes, k
        # One cell's float32 block of bounds (its queries x its candidates) holds at
        # most this many bytes: a cell of many duplicate rows is searched a piece of
        # its queries at a time, as scikit-learn's chunked computations are.
        self.block_bytes = working_memory_bytes() // BLOCKS_PER_BUDGET

    def query_rows(self, n_queries, n_candidates):
        """Queries searched at once against ``n_candidates``: the block's bytes
        within :attr:`block_bytes`, at least one row."""
        return max(1, min(n_queries, self.block_bytes // (4 * max(n_candidates, 1))))

    def members(self, cell):
        return self.order[self.starts[cell]:self.starts[cell + 1]]

    def cell(self, cell, distances, indices):
        """Search the candidates of one cell's points and write their lists."""
        queries = self.members(cell)
        if queries.size == 0:
            return
        probed = np.unique(self.probes[queries])
        # The cell's own points come first among the candidates (a point's own
        # landmark is its nearest, so its cell is always probed).
        others = probed[probed != cell]
        candidates = np.concatenate([queries, *(self.members(c) for c in others)])
        Y_cand, c_sq = self.Y[candidates].T, self.y_sq[candidates]
        # Every query's list depends on its own row of the block only: the pieces
        # give the lists of the whole block.
        for rows in gen_batches(queries.size, self.query_rows(queries.size,
                                                              candidates.size)):
            part = queries[rows]
            cross = self.Y[part] @ Y_cand
            d = np.empty((part.size, self.k))
            i = np.empty((part.size, self.k), dtype=np.intp)
            K.cell_neighbors(self.X, part, candidates, np.arange(rows.start, rows.stop),
                             cross, self.y_sq[part], c_sq, self.k + CELL_CANDIDATES, d, i)
            distances[part], indices[part] = d, i
