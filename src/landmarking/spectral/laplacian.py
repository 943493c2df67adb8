"""Exact Laplacian eigenmaps (Belkin & Niyogi, 2003).

Solves min tr(X L X^T) s.t. X D X^T = I, X D 1 = 0 for a sparse affinity W,
L = D - W: the generalised eigenproblem L x = lambda D x, keeping the
``n_components`` eigenvectors after the trivial constant one. Internally the
symmetric form S u = (1 - lambda) u with S = D^-1/2 W D^-1/2 and x = D^-1/2 u is
solved, so each column of the embedding has x^T D x = 1, the normalisation of
scikit-learn's ``SpectralEmbedding``.

The plain function :func:`spectral_embedding` does the numerical work;
:class:`LaplacianEigenmaps` is the scikit-learn estimator around it.
"""

from __future__ import annotations

import warnings
from numbers import Real
from typing import Any, Literal, Self

import numpy as np
from scipy import linalg, sparse
from scipy.sparse.csgraph import breadth_first_order
from scipy.sparse.linalg import ArpackNoConvergence, eigsh, lobpcg
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._blocks import check_rows, map_row_blocks, to_memory, working_dtype
from .._memory import check_memory
from .._parallel import thread_limits
from .._timings import stage
from .._typing import MatrixLike, NDArray, RandomStateLike, SparseMatrix
from .._validation import Condition, Integer, Options, check_choice, check_params
from ..graph import (
    GRAPH_PARAMETER_RULES,
    GRAPH_SEARCHES,
    GraphEmbeddingMixin,
    check_affinity,
    check_connected,
    check_search_input,
    degree,
    deterministic_signs,
    graph_of_neighbors,
    locality_order,
    neighbor_graph,
    threaded_product,
)
from ..neighbors import LazyNeighborIndex, search_kind
from .nystrom import nystrom_out_of_sample
from .refine_eigenvectors import refine_spectral_embedding

__all__ = ["LaplacianEigenmaps", "spectral_embedding", "resolve_eigen_solver",
           "low_frequency_bound", "EIGEN_SOLVERS", "PARAMETER_RULES"]

EIGEN_SOLVERS = ("auto", "dense", "arpack", "lobpcg", "amg")

#: Graphs up to this size are solved densely by ``eigen_solver="auto"``.
DENSE_LIMIT = 2500
#: The tolerance ``eigen_solver="auto"`` gives ARPACK when ``tol`` is None: the
#: eigenvector residuals |S u - mu u| end near 1e-6. ARPACK was quicker than
#: LOBPCG on the 10-NN graphs of MNIST, and LOBPCG at scipy's default tolerance
#: stopped at residuals of 8e-4 and 3e-3 (benchmarks/spectral_solvers.py; the
#: table is in docs/results/spectral.md).
AUTO_ARPACK_TOL = 1e-6


#: ``eigen_solver="auto"`` solves by LOBPCG with an AMG preconditioner (``"amg"``)
#: when :func:`low_frequency_bound` of the graph is below this: the 10-NN graphs of
#: Swiss rolls of 20,000 points and more fall below it, where "amg" beat ARPACK;
#: cubes, normal points and MNIST lie above, where ARPACK won (the measurements:
#: docs/results/spectral.md, "The eigensolver behind "auto"").
AMG_BOUND_LIMIT = 5e-4
#: Extra columns of the ``"amg"`` solver's block (guard vectors). Each guard
#: saved a few iterations but cost more V-cycles than it saved (the counts are
#: in the same section of docs/results/spectral.md).
AMG_GUARDS = 0
#: Iterations of the ``"amg"`` solver when ``max_iter`` is None.
AMG_MAX_ITER = 200
#: :func:`low_frequency_bound` walks only edges heavier than this fraction of
#: the heaviest (where that leaves the graph connected).
NEGLIGIBLE_EDGE = 1e-6


class EigensolverNoConvergence(ArpackNoConvergence, ValueError):
    """ARPACK stopped before every wanted eigenvector converged (``max_iter`` too
    small for the graph): an ``ArpackNoConvergence`` as SciPy raises it, and a
    ``ValueError`` as scikit-learn raises errors that a parameter can fix."""


def _hop_distances(W, source):
    """Hops from ``source`` to every node (breadth-first search on W's pattern),
    or None when some node cannot be reached."""
    n = W.shape[0]
    order, parent = breadth_first_order(W, source, directed=True, return_predecessors=True)
    if order.size < n:
        return None
    # Each node's depth in the search tree by pointer jumping: log2(depth)
    # vectorised passes instead of a Python loop over the nodes.
    hops = np.ones(n, dtype=np.int64)
    hops[source] = 0
    up = parent.astype(np.int64)
    up[source] = source
    while True:
        further = up[up]
        if np.array_equal(further, up):
            return hops
        hops += hops[up]
        up = further


def _rayleigh_quotient(W, deg, values):
    """x^T L x / x^T D x for x = ``values`` less its D-weighted mean (None if x = 0)."""
    x = values - np.dot(deg, values) / deg.sum()
    scale = np.dot(deg * x, x)
    if scale <= 0:
        return None
    return float(max(scale - np.dot(x, W @ x), 0.0) / scale)


def low_frequency_bound(W: SparseMatrix, *, stop_above: float | None = None) -> float | None:
    """An upper bound on lambda_1, the first nonzero eigenvalue of L x = lambda D x.

    By the Rayleigh-Ritz principle any x with x^T D 1 = 0 has
    lambda_1 <= x^T L x / x^T D x. This takes x = the hop distance from a
    peripheral node (the farthest node from node 0, then the farthest from it:
    two breadth-first searches), less its D-weighted mean: a function that
    changes by at most one across an edge, so the bound is about the inverse
    square of the graph's hop diameter. A k-NN graph sampled from a
    low-dimensional manifold has a long diameter and a small lambda_1, where the
    trailing eigenvalues crowd near 0 and Krylov solvers converge slowly; a
    graph of high-dimensional data is a small world with a large lambda_1.
    Measured on 10-NN graphs: a Swiss roll of 300,000 points 5.4e-5 (lambda_1 =
    6.9e-6); MNIST's 60,000 digits 0.11 (lambda_1 = 4.8e-3). Cost: two
    breadth-first searches and one product with W, a small part of the
    eigensolver's time (docs/results/spectral.md).

    Parameters
    ----------
    W : sparse matrix of shape (n, n)
        Symmetric nonnegative affinity.
    stop_above : float or None
        When the hop distance from node 0 (the first search) already gives a
        bound above this, return that bound without the second search (the
        peripheral node lowered the bound by 1.0x on MNIST's graph, 2-4x on
        Swiss rolls): half the cost where the answer is clear.

    Returns
    -------
    float or None
        The bound, or None when the graph is disconnected (lambda_1 = 0).

    Examples
    --------
    >>> from scipy import sparse
    >>> n = 100
    >>> path = sparse.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1]).tocsr()
    >>> lam1 = 1 - np.cos(np.pi / (n - 1))     # the chain's exact lambda_1
    >>> bound = low_frequency_bound(path)
    >>> bool(lam1 <= bound < 1.3 * lam1)
    True
    """
    W = sparse.csr_matrix(W)
    paths = W
    light = W.data < NEGLIGIBLE_EDGE * W.data.max()
    if np.any(light):
        # Hops only along edges that carry weight: one far, wrong neighbour of
        # an approximate search (a Gaussian weight of 2e-29 across a 30,000-point
        # Swiss roll) shortened the hop distances and loosened the bound 1.5x.
        paths = W.copy()
        paths.data[light] = 0.0
        paths.eliminate_zeros()
    hops = _hop_distances(paths, 0)
    if hops is None and paths is not W:
        paths = W
        hops = _hop_distances(W, 0)
    if hops is None:
        return None
    deg = degree(W)
    if stop_above is not None:
        first = _rayleigh_quotient(W, deg, hops)
        if first is not None and first > stop_above:
            return first
    return _rayleigh_quotient(W, deg, _hop_distances(paths, int(np.argmax(hops))))


def _pyamg_available():
    try:
        import pyamg  # noqa: F401
    except ImportError:
        return False
    return True


def resolve_eigen_solver(eigen_solver: str, n_samples: int, n_components: int,
                         tol: float | None, affinity: SparseMatrix | None = None,
                         ) -> tuple[str, float | None]:
    """The solver and tolerance that ``eigen_solver`` and ``tol`` stand for.

    ``"auto"``: dense LAPACK up to :data:`DENSE_LIMIT` points (or when the
    eigenvectors asked for are a fifth of the points or more). Above, with
    ``tol`` (:data:`AUTO_ARPACK_TOL` when None): ``"amg"`` (LOBPCG with pyamg's
    smoothed-aggregation preconditioner) when the ``affinity`` is given and
    :func:`low_frequency_bound` finds it below :data:`AMG_BOUND_LIMIT`: the graph
    of a low-dimensional manifold, whose trailing eigenvalues crowd near 0, where
    ARPACK needs thousands of products and the preconditioned block solver a few
    dozen iterations. Else ARPACK, which is faster on the small-world graphs of
    high-dimensional data (MNIST). Without pyamg (the optional ``amg`` extra)
    every graph gets ARPACK: LOBPCG without a preconditioner was slower on Swiss
    rolls, and ``"lll-refine"``, though faster, stopped short of the residual
    after its 100 iterations and needs the data and LLL (docs/results/spectral.md,
    "The eigensolver behind "auto""). A disconnected graph, or none given, gets
    ARPACK. Any other solver is returned as given.

    Parameters
    ----------
    eigen_solver : str
    n_samples, n_components : int
    tol : float or None
    affinity : sparse matrix of shape (n_samples, n_samples), optional
        The graph W, which ``"auto"`` looks at above the dense limit.

    Returns
    -------
    (solver, tol)
    """
    if eigen_solver != "auto":
        return eigen_solver, tol
    k = n_components + 1
    if n_samples <= DENSE_LIMIT or k >= n_samples // 5:
        return "dense", tol
    tol = AUTO_ARPACK_TOL if tol is None else tol
    if affinity is not None:
        bound = low_frequency_bound(affinity, stop_above=10 * AMG_BOUND_LIMIT)
        if bound is not None and bound < AMG_BOUND_LIMIT and _pyamg_available():
            return "amg", tol
    return "arpack", tol


def spectral_embedding(W: SparseMatrix, n_components: int, *,
                       eigen_solver: Literal["auto", "dense", "arpack", "lobpcg", "amg"] = "auto",
                       tol: float | None = None, max_iter: int | None = None,
                       random_state: RandomStateLike = None,
                       ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Trailing generalised eigenvectors of L x = lambda D x for the affinity W.

    Parameters
    ----------
    W : sparse matrix of shape (n, n)
        Symmetric nonnegative affinity with no isolated point.
    n_components : int
        Eigenvectors to return after the trivial one.
    eigen_solver : {"auto", "dense", "arpack", "lobpcg", "amg"}
        ``"dense"``: LAPACK on the full matrix (n up to a few thousand);
        ``"arpack"``: ``scipy.sparse.linalg.eigsh`` on S = D^-1/2 W D^-1/2 for its
        largest eigenvalues (no factorisation); ``"lobpcg"``: the same with
        LOBPCG, started from the known trivial eigenvector; ``"amg"``: LOBPCG on
        I - S with pyamg's smoothed-aggregation preconditioner (the optional
        ``amg`` extra), from a random block (:data:`AMG_GUARDS` extra
        columns); ``"auto"``: dense up to 2,500 points, else ``"amg"`` where the
        graph is that of a low-dimensional manifold (:func:`low_frequency_bound`
        below :data:`AMG_BOUND_LIMIT`) and pyamg is installed, else arpack, to
        residuals near 1e-6 (:func:`resolve_eigen_solver`).
    tol, max_iter : float, int or None
        Passed to the iterative solvers (tol None: ARPACK to machine precision,
        scipy's default for LOBPCG, :data:`AUTO_ARPACK_TOL` for ``"amg"`` and
        ``"auto"``'s solvers; max_iter None: :data:`AMG_MAX_ITER` for ``"amg"``).
    random_state : int, RandomState or None
        Starting vectors of the iterative solvers.

    Returns
    -------
    embedding : ndarray of shape (n, n_components)
        Columns D-orthonormal, ordered by increasing eigenvalue, signs fixed by
        :func:`~landmarking.graph.deterministic_signs`.
    eigenvalues : ndarray of shape (n_components,)
        The lambda of each column (the trivial 0 excluded).

    Examples
    --------
    >>> from scipy import sparse
    >>> path = sparse.diags([np.ones(9), np.ones(9)], [-1, 1])  # 10-node chain
    >>> emb, lam = spectral_embedding(path, 1)
    >>> bool(np.all(np.diff(emb[:, 0]) > 0) or np.all(np.diff(emb[:, 0]) < 0))
    True
    """
    check_choice(eigen_solver, "eigen_solver", EIGEN_SOLVERS)
    n = W.shape[0]
    k = n_components + 1
    if k > n:
        raise ValueError(
            f"n_components={n_components} needs at least {k} points, got {n}; "
            "ask for fewer components."
        )
    deg = degree(W)
    inv_sqrt = 1.0 / np.sqrt(deg)
    S = sparse.diags(inv_sqrt) @ W @ sparse.diags(inv_sqrt)
    if not (np.all(np.isfinite(inv_sqrt)) and np.all(np.isfinite(S.data))):
        raise ValueError(
            "the affinity's degrees underflow (weights near 1e-300): the bandwidth "
            "is far smaller than the neighbour distances; use a larger bandwidth."
        )
    eigen_solver, tol = resolve_eigen_solver(eigen_solver, n, n_components, tol, affinity=W)
    rng = check_random_state(random_state)
    if eigen_solver == "amg":
        return _amg_embedding(W, n_components, tol, max_iter, rng)
    if eigen_solver == "dense":
        check_memory(24 * n * n,
                     what=f"the dense {n} x {n} eigenproblem of exact Laplacian eigenmaps",
                     way_out="use LocallyLinearLandmarks (memory linear in N) or "
                             "eigen_solver='lobpcg'")
        mu, U = linalg.eigh(S.toarray(), subset_by_index=[n - k, n - 1])
    elif eigen_solver == "arpack":
        mu, U = _arpack_embedding(S, k, tol, max_iter, rng)
    else:
        X0 = rng.standard_normal((n, k))
        X0[:, 0] = np.sqrt(deg)  # the trivial eigenvector, known exactly
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            mu, U = lobpcg(S, X0, largest=True, tol=tol,
                           maxiter=200 if max_iter is None else max_iter)
        residual = np.linalg.norm(S @ U - U * mu, axis=0)
        if np.max(residual) > 1e-3:
            warnings.warn(
                f"lobpcg stopped with eigenvector residual {np.max(residual):.2g}; "
                "raise max_iter or use eigen_solver='arpack'.",
                ConvergenceWarning, stacklevel=2,
            )
    if U.shape[1] != k or not np.all(np.isfinite(U)):
        raise ValueError(
            f"the eigensolver returned {U.shape[1]} of {k} finite eigenvectors; the "
            "graph is numerically degenerate: use a larger bandwidth or more neighbours."
        )
    order = np.argsort(-mu)
    mu, U = mu[order], U[:, order]
    embedding = U[:, 1:] * inv_sqrt[:, None]
    return deterministic_signs(embedding), 1.0 - mu[1:]


def _arpack_embedding(S, k, tol, max_iter, rng):
    """``eigen_solver="arpack"``: the k largest eigenpairs of S by
    ``scipy.sparse.linalg.eigsh``, whose products S v (most of its time) run on
    the compiled loops' threads, with the rows in :func:`locality_order`. The
    start vector is drawn in the rows' own order, so the eigenvectors come back
    in that order."""
    v0 = rng.uniform(-1, 1, S.shape[0])
    order = locality_order(S)
    product = threaded_product(S[order][:, order])
    try:
        mu, U = eigsh(product, k=k, which="LA", tol=0 if tol is None else tol,
                      maxiter=max_iter, v0=v0[order])
    except ArpackNoConvergence as exc:
        vectors = exc.eigenvectors
        if vectors is not None:
            vectors = _unpermuted(vectors, order)
        raise EigensolverNoConvergence(
            f"eigen_solver='arpack' did not converge: {exc}; raise max_iter (or leave "
            "it None), or use eigen_solver='lobpcg'.",
            exc.eigenvalues, vectors) from None
    return mu, _unpermuted(U, order)


def _unpermuted(U, order):
    """The rows of U, computed in ``order``, back in the original order."""
    out = np.empty_like(U)
    out[order] = U
    return out


def _amg_embedding(W, n_components, tol, max_iter, rng):
    """``eigen_solver="amg"``: LOBPCG on L_sym with pyamg's smoothed-aggregation
    preconditioner from a random block of ``n_components + AMG_GUARDS`` columns
    (:func:`~landmarking.spectral.refine_eigenvectors.refine_spectral_embedding`), to
    eigenvector residuals of at most ``tol``."""
    start = rng.standard_normal((W.shape[0], n_components + AMG_GUARDS))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # reported below
            embedding, eigenvalues, info = refine_spectral_embedding(
                W, start, n_components=n_components,
                tol=AUTO_ARPACK_TOL if tol is None else tol,
                max_iter=AMG_MAX_ITER if max_iter is None else max_iter,
                preconditioner="amg")
    except ImportError as exc:
        raise ImportError(
            "eigen_solver='amg' needs pyamg, which is not installed; install the "
            "optional extra with `pip install \"landmarking[amg]\"`, or use "
            "eigen_solver='auto' or 'arpack'."
        ) from exc
    if not info.converged:
        warnings.warn(
            f"eigen_solver='amg' stopped after {info.n_iter} iterations with "
            f"eigenvector residual {info.residuals.max():.2g} > tol; raise max_iter "
            "or use eigen_solver='arpack'.",
            ConvergenceWarning, stacklevel=3,
        )
    return embedding, eigenvalues


def _out_of_sample_block(block, X_fit, index, embedding, eigenvalues, n_neighbors,
                         bandwidth):
    """The Nystroem map of one block of new rows (a row equal to a fitted one
    gets that row's embedding, which the map itself only approximates); ``index``
    is the exact neighbour index on X_fit."""
    dense = block.toarray() if sparse.issparse(block) else block
    Y = nystrom_out_of_sample(dense, X_fit, embedding, eigenvalues, n_neighbors, bandwidth,
                              index=index)
    # Equal rows, tested exactly: a brute-force distance of 0 can come out ~1e-8.
    _, idx = index.query(block, 1)
    nearest = X_fit[idx[:, 0]]
    nearest = nearest.toarray() if sparse.issparse(nearest) else nearest
    same = np.all(nearest == dense, axis=1)
    Y[same] = embedding[idx[same, 0]]
    return Y


def _gaussian_graph(X, estimator, timings):
    """The Gaussian k-NN graph of an exact LE fit: (W, bandwidth, the search used).

    "auto" is the search of :func:`~landmarking.neighbors.nearest_neighbors`, not
    LLL's cells graph: the cells pay off for LLL, whose weights have found every
    point's nearest landmarks already, but exact LE would search the centres
    first, and then the cells cost it accuracy for little time (the measurements:
    docs/results/lll.md, "The cells graph for exact LE").
    """
    method = estimator.neighbors_method
    if method != "cells":
        W, bandwidth = neighbor_graph(
            X, estimator.n_neighbors, estimator.bandwidth, symmetrize=estimator.symmetrize,
            method=method, random_state=estimator.random_state, n_jobs=estimator.n_jobs,
            timings=timings)
        return W, bandwidth, search_kind(method, X, estimator.n_neighbors)
    # Loaded here, not at the top: the cells' compiled search lives with LLL
    # (import landmarking stays light).
    from ..lll.cell_graph import graph_neighbors

    with stage(timings, "neighbors"):
        distances, indices, method = graph_neighbors(
            X, method, estimator.n_neighbors, rng=estimator.random_state)
    W, bandwidth = graph_of_neighbors(distances, indices, estimator.bandwidth,
                                      symmetrize=estimator.symmetrize, timings=timings)
    return W, bandwidth, method


#: The parameters of :class:`LaplacianEigenmaps` and their rules, in the order they
#: are checked (the estimator's ``_parameter_rules``).
PARAMETER_RULES = {
    **GRAPH_PARAMETER_RULES,
    "neighbors_method": Options(*GRAPH_SEARCHES),
    "n_components": Integer(),
    "eigen_solver": Options(*EIGEN_SOLVERS, "lll-refine"),
    "tol": Condition(lambda tol: tol is None or (isinstance(tol, Real) and tol >= 0),
                     "{name} must be None or a number >= 0, got {value!r}."),
}


class LaplacianEigenmaps(GraphEmbeddingMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin,
                         BaseEstimator):
    """Exact Laplacian eigenmaps on a Gaussian k-nearest-neighbour graph.

    Parameters
    ----------
    n_components : int, default=2
        Embedding dimension d.
    n_neighbors : int, default=10
        Neighbours per point K_W in the affinity graph.
    bandwidth : float or "auto", default="auto"
        Gaussian width sigma in w = exp(-||y_n - y_m||^2 / (2 sigma^2));
        ``"auto"`` takes the median neighbour distance (resolved into
        ``bandwidth_``).
    symmetrize : {"union", "mean"}, default="union"
        How the k-NN graph is made symmetric (see
        :func:`~landmarking.graph.gaussian_affinity`).
    neighbors_method : {"auto", "exact", "approximate", "cells"}, default="auto"
        Neighbour search: exact (blocked float32 products with an exact
        re-rank), approximate (usearch's HNSW graph with an exact re-rank, the
        ``ann`` extra; dense data), ``"cells"`` (the points of each cell of about 100
        searched together among those of the cells nearest to any of them, on
        every thread:
        :func:`~landmarking.lll.cell_graph.cells_neighbors`; dense data), or
        ``"auto"``: exact below
        :data:`~landmarking.neighbors.APPROXIMATE_MIN_SAMPLES` points,
        approximate from there on when ``n_neighbors`` is at most
        :data:`~landmarking.neighbors.APPROXIMATE_MAX_NEIGHBORS` (dense data of
        more than 3 features; fewer get an exact KD-tree). The search used is
        in ``neighbors_method_``. The cells are LLL's default graph; for exact LE
        they cost accuracy for little time (docs/guide/lll.rst, "Parameters that
        matter").
    eigen_solver : {"auto", "dense", "arpack", "lobpcg", "amg", "lll-refine"}, default="auto"
        As in :func:`spectral_embedding` (``"auto"``: dense up to 2,500 points,
        else LOBPCG with an AMG preconditioner on the graph of a low-dimensional
        manifold, where ARPACK converges slowly, and ARPACK on other graphs;
        without pyamg, the ``amg`` extra, always ARPACK; resolved into
        ``eigen_solver_``); ``"lll-refine"``: Locally Linear
        Landmarks on X, then LOBPCG on the full graph started from it
        (:func:`~landmarking.lll.start_and_refit.lll_refined_embedding`, with
        guard columns): the exact eigenvectors.
    tol : float or None, default=None
        Tolerance of the iterative eigensolvers.
    max_iter : int or None, default=None
        Iterations of the iterative eigensolvers.
    n_jobs : int or None, default=None
        Threads for the neighbour search and the eigensolver's BLAS
        (None: ``OMP_NUM_THREADS`` if set, else the CPUs this process may use,
        within an enclosing ``threadpool_limits``; BLAS's threads as they are; inside
        ``joblib.parallel_config(n_jobs=...)`` that many; -1 all cores). The
        result does not depend on it beyond round-off.
    random_state : int, RandomState or None, default=None
    verbose : bool, default=False
        Print the time of each stage.

    Attributes
    ----------
    embedding_ : ndarray of shape (n_samples, n_components)
    eigenvalues_ : ndarray of shape (n_components,)
    eigen_solver_ : str
        The solver used: ``eigen_solver`` with ``"auto"`` resolved.
    bandwidth_ : float or None
        The Gaussian width used (None when ``affinity`` was given).
    neighbors_method_ : str or None
        The neighbour search used: ``neighbors_method`` with ``"auto"`` resolved
        (None when ``affinity`` was given).
    n_connected_components_ : int
    refine_result_ : RefineResult or None
        Iterations, residuals and stage times of ``"lll-refine"`` (else None).
    timings_ : dict
        Seconds per stage: ``neighbors``, ``affinity``, ``eigensolver``, ``total``.
    n_features_in_ : int

    Notes
    -----
    ``transform`` searches the fitted points with an exact neighbour index that
    the model builds on its first call and keeps (a float64 and a float32 copy
    of the fitted points and their norms), so that many small calls cost no
    rebuild; it is never saved (:func:`landmarking.save`, pickles) and is
    rebuilt on the first call after loading.

    X may be a NumPy array, a scipy CSR matrix (neighbours from scikit-learn,
    which takes CSR), or a memory map, Zarr or Dask array (loaded
    after a memory check: the exact method needs every row). float32 input gives
    a float32 ``embedding_`` and ``transform``; the affinity and the eigenproblem
    are float64 on purpose (the trailing eigenvalues of S cluster near 1 and
    float32 cannot separate them).

    Examples
    --------
    >>> from sklearn.datasets import make_swiss_roll
    >>> X, _ = make_swiss_roll(500, random_state=0)
    >>> LaplacianEigenmaps(n_neighbors=10).fit_transform(X).shape
    (500, 2)
    """

    _parameter_rules = PARAMETER_RULES

    def __init__(self, *, n_components: int = 2, n_neighbors: int = 10,
                 bandwidth: float | Literal["auto"] = "auto",
                 symmetrize: Literal["union", "mean"] = "union",
                 neighbors_method: Literal["auto", "exact", "approximate"] = "auto",
                 eigen_solver: Literal["auto", "dense", "arpack", "lobpcg", "amg",
                                       "lll-refine"] = "auto",
                 tol: float | None = None, max_iter: int | None = None,
                 n_jobs: int | None = None, random_state: RandomStateLike = None,
                 verbose: bool = False) -> None:
        self.n_components = n_components
        self.n_neighbors = n_neighbors
        self.bandwidth = bandwidth
        self.symmetrize = symmetrize
        self.neighbors_method = neighbors_method
        self.eigen_solver = eigen_solver
        self.tol = tol
        self.max_iter = max_iter
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X: MatrixLike, y: Any = None, affinity: SparseMatrix | None = None) -> Self:
        """Embed X (or the graph ``affinity`` on its rows).

        Parameters
        ----------
        X : array-like or CSR matrix of shape (n_samples, n_features)
        y : ignored
        affinity : sparse matrix of shape (n_samples, n_samples), optional
            A precomputed symmetric affinity W that replaces the built-in
            Gaussian k-NN graph (then ``n_neighbors`` and ``bandwidth`` are unused).

        Returns
        -------
        self
        """
        check_params(self, self._parameter_rules)
        X = check_rows(X, estimator=self, min_samples=2)
        check_search_input(X, self.neighbors_method, affinity)
        X = to_memory(X, what="exact Laplacian eigenmaps (a neighbour graph on every row)",
                      alternative="LocallyLinearLandmarks, which solves on landmarks")
        with thread_limits(self.n_jobs):
            self._fit(X, affinity)
        self.embedding_ = self.embedding_.astype(X.dtype, copy=False)
        self._X_fit = X
        # Filled by the first transform (building it here would slow every fit).
        self._neighbor_index = LazyNeighborIndex()
        self._n_features_out = self.n_components
        return self

    def _fit(self, X, affinity):
        timings = {}
        with stage(timings, "total"):
            if affinity is None:
                W, self.bandwidth_, self.neighbors_method_ = _gaussian_graph(
                    X, self, timings)
            else:
                W = check_affinity(affinity, X.shape[0])
                self.bandwidth_ = self.neighbors_method_ = None
            self.n_connected_components_ = check_connected(W)
            with stage(timings, "eigensolver"):
                # "auto" looks at the graph (low_frequency_bound) once, here.
                self.eigen_solver_, tol = resolve_eigen_solver(
                    self.eigen_solver, X.shape[0], self.n_components, self.tol, affinity=W)
                self.refine_result_ = None
                if self.eigen_solver == "lll-refine":
                    # Loaded here, not at the top: LLL's modules, which the other
                    # solvers never need (import landmarking stays light).
                    from ..lll.start_and_refit import lll_refined_embedding

                    self.embedding_, self.eigenvalues_, self.refine_result_ = \
                        lll_refined_embedding(X, W, self.n_components, tol=self.tol,
                                              max_iter=self.max_iter,
                                              random_state=self.random_state)
                else:
                    self.embedding_, self.eigenvalues_ = spectral_embedding(
                        W, self.n_components, eigen_solver=self.eigen_solver_, tol=tol,
                        max_iter=self.max_iter, random_state=self.random_state)
        self.timings_ = timings
        if self.verbose:
            print(f"LaplacianEigenmaps (eigen_solver_={self.eigen_solver_!r}): " + ", ".join(
                f"{k} {v:.2f} s" for k, v in timings.items()))

    def transform(self, X: MatrixLike) -> np.ndarray:
        """Map new points with the Nystroem formula of the fitted eigenproblem.

        From D^-1 W x = (1 - lambda) x, a point y goes to
        x(y) = sum_n w(y, y_n) x_n / ((1 - lambda) sum_n w(y, y_n)), the Gaussian
        w over its ``n_neighbors`` nearest fitted points
        (:func:`~landmarking.spectral.nystrom.nystrom_out_of_sample`); a row equal to a
        fitted point gets that point's embedding. Cost: one k-NN query of the
        new rows against the fitted ones, block by block, in an exact index of
        the fitted points built on the first call and kept, so that many small
        calls do not rebuild it (``benchmarks/transform_calls.py``).

        Parameters
        ----------
        X : array-like or CSR matrix of shape (n_new, n_features)

        Returns
        -------
        ndarray of shape (n_new, n_components)
            float32 for float32 input, else float64.
        """
        check_is_fitted(self, "embedding_")
        if self.bandwidth_ is None:
            raise ValueError(
                "this LaplacianEigenmaps was fitted on a precomputed affinity, so it has "
                "no Gaussian graph to place new points with; fit it on X without "
                "affinity= to use transform."
            )
        X = check_rows(X, estimator=self, reset=False)
        # A loaded model has no slot (it is not saved); setdefault is atomic, so
        # threads calling at once share one.
        kept = self.__dict__.setdefault("_neighbor_index", LazyNeighborIndex())
        index = kept.get(self._X_fit, method="exact")
        embedding = self.embedding_.astype(np.float64, copy=False)
        Y = map_row_blocks(_out_of_sample_block, X, self._X_fit, index, embedding,
                           self.eigenvalues_, self.n_neighbors, self.bandwidth_,
                           n_out=self.n_components, dtype=np.float64)
        return Y.astype(working_dtype(X), copy=False)

    # The kept neighbour index is rebuilt by transform; model files leave it out.
    _persistence_transient = ("_neighbor_index",)

    def _restore_transient(self):
        self._neighbor_index = LazyNeighborIndex()
