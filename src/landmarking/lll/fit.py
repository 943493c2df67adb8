"""Locally Linear Landmarks end to end: :func:`locally_linear_landmarks`.

The public function behind
:class:`~landmarking.lll.estimator.LocallyLinearLandmarks` (scikit-learn's
order: the numerical helpers of :mod:`~landmarking.lll._cpu`, this function, the thin
estimator). It runs the stages: the landmarks (:mod:`.landmark_selection`, an
array or an estimator), the weights Z, the graph (the neighbour lists of
:func:`.cell_graph.graph_neighbors`, weighted by
:func:`landmarking.graph.graph_of_neighbors`), the reduced problem and its
eigenvectors (:mod:`~landmarking.lll._cpu`), the optional refinement
(:mod:`~landmarking.lll.start_and_refit`) and the reconstruction check
(:mod:`.diagnostics`). The paper's two baselines are
``method="le-z"`` and ``method="le-nystrom"``: Laplacian eigenmaps on the
landmarks alone (:mod:`landmarking.spectral`), placed with Z or the Nystroem
formula. The device is bound once, by :func:`.backend.lll_backend`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from .._blocks import check_rows, to_memory
from .._parallel import blas_limit, thread_limits
from .._timings import stage
from .._typing import ArrayLike, DeviceLike, MatrixLike, RandomStateLike, SparseMatrix
from .._validation import (
    Check,
    Either,
    Integer,
    Options,
    check_choice,
    check_params,
    check_sparse_structure,
)
from ..graph import (
    GRAPH_PARAMETER_RULES,
    GRAPH_SEARCHES,
    check_affinity,
    check_connected,
    check_search_input,
    column_signs,
    graph_of_neighbors,
    neighbor_graph,
)
from ..neighbors import APPROXIMATE_MIN_SAMPLES, TREE_MAX_FEATURES
from ..spectral.laplacian import spectral_embedding
from ..spectral.nystrom import nystrom_out_of_sample
from ..spectral.refine_eigenvectors import RefineResult, refine_spectral_embedding
from ._cpu import check_reg, solve_reduced_problem
from .backend import LLLBackend, lll_backend
from .cell_graph import graph_neighbors, nearest_landmarks
from .diagnostics import landmark_reconstruction_error, warn_if_landmarks_represent_poorly
from .landmark_selection import LANDMARK_STRATEGIES, resolve_landmarks
from .out_of_sample import _map_rows
from .start_and_refit import fit_landmark_embedding

__all__ = ["locally_linear_landmarks", "LLLResult", "LLL_METHODS", "PARAMETER_RULES"]

LLL_METHODS = ("lll", "le-z", "le-nystrom")
#: LOBPCG iterations at most of ``refine=True`` (iterate to residuals of 1e-6).
REFINE_MAX_ITER = 100
#: The neighbour searches of LLL's graph: those of :mod:`landmarking.neighbors`,
#: and ``"cells"``, the landmarks' cells (:func:`.cell_graph.cell_graph`).
LLL_NEIGHBOR_METHODS = GRAPH_SEARCHES
#: ``n_landmarks="auto"``: one landmark per this many points (the cells graph's
#: :data:`~.cell_graph.CELL_SIZE`, so that the landmarks are its cells), at least
#: AUTO_MIN_LANDMARKS and at most AUTO_MAX_LANDMARKS (the reduced problem is dense:
#: L^3 work). On deformed digits in 10-D, LLL with N / 100 landmarks and
#: ``refine="auto"`` is within a point of exact LE's 10-NN accuracy from 100,000
#: digits up (docs/results/lll.md, "The defaults").
POINTS_PER_LANDMARK = 100
#: ... and one per this many, at least LOW_DIMENSION_MIN_LANDMARKS, for data of at
#: most :data:`~landmarking.neighbors.TREE_MAX_FEATURES` features, with no
#: refinement: a manifold of so few dimensions is spanned by a few hundred
#: landmarks whatever N, where 100 are too few and refinement buys nothing (the
#: Swiss roll from 10,000 to 1,000,000 points: docs/results/lll.md, "Few
#: features"; benchmarks/lll_auto_rules.py --tables roll).
LOW_DIMENSION_POINTS_PER_LANDMARK = 1000
LOW_DIMENSION_MIN_LANDMARKS = 300
AUTO_MIN_LANDMARKS = 100
AUTO_MAX_LANDMARKS = 10_000
#: ``refine="auto"``: this many LOBPCG iterations on the full graph, from
#: :data:`~landmarking.neighbors.APPROXIMATE_MIN_SAMPLES` points on (none below,
#: where exact Laplacian eigenmaps costs little anyway). Three iterations took LLL
#: from 13, 9 and 4 points below exact LE's 10-NN accuracy (1,000, 3,000 and
#: 10,000 landmarks, 100,000 deformed digits, 10-D) to within one point, for about
#: half of exact LE's eigensolver time.
AUTO_REFINE_ITERATIONS = 3


def _check_landmarks(value, name):
    """'random', 'random-pruned', 'kmeans', an array or a landmark estimator"""
    if isinstance(value, str):
        return check_choice(value, name, LANDMARK_STRATEGIES)
    if not (hasattr(value, "fit") or hasattr(value, "shape")
            or isinstance(value, (list, tuple))):
        raise TypeError(
            "landmarks must be 'random', 'random-pruned', 'kmeans', an array of "
            "shape (n_landmarks, n_features) or a landmark estimator with fit() "
            f"and landmarks_; got {type(value).__name__}."
        )
    return value


def _check_refine(value, name):
    """False, True, "auto", or a number of LOBPCG iterations >= 0"""
    if isinstance(value, str) and value == "auto":
        return value
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value >= 0:
        return int(value)
    raise ValueError(
        f"{name} must be False, True (iterate to convergence), 'auto' or a number of "
        f"LOBPCG iterations >= 0, got {value!r}."
    )


#: The parameters of Locally Linear Landmarks and their rules (the estimator's
#: ``_parameter_rules``; :func:`locally_linear_landmarks` checks the same).
PARAMETER_RULES = {
    **GRAPH_PARAMETER_RULES,
    "neighbors_method": Options(*LLL_NEIGHBOR_METHODS),
    "n_components": Integer(),
    "n_landmarks": Either("auto", Integer()),
    "n_landmark_neighbors": Integer(),
    "method": Options(*LLL_METHODS),
    "refine": Check(_check_refine),
    "landmarks": Check(_check_landmarks),
    "reg": Check(check_reg),
}


def check_lll_params(params) -> None:
    """Check ``params`` (the parameters as attributes: :class:`_Settings`)
    against :data:`PARAMETER_RULES` and against each other."""
    check_params(params, PARAMETER_RULES)
    asks_refine = params.refine not in (False, 0, "auto")
    if asks_refine and params.method != "lll":
        raise ValueError(
            f"refine={params.refine!r} refines the LLL solution on the full graph; it needs "
            f"method='lll', got method={params.method!r}."
        )
    if params.neighbors_method == "cells" and params.method != "lll":
        raise ValueError(
            f"neighbors_method='cells' builds the graph of all points, which "
            f"method={params.method!r} does not use (its graph joins the landmarks); "
            "pass neighbors_method='auto' or method='lll'.")


@dataclass(frozen=True)
class _Settings:
    """The parameters of one run of :func:`locally_linear_landmarks`, as given
    (each as in :class:`~landmarking.lll.estimator.LocallyLinearLandmarks`);
    :func:`check_lll_params` checks them before anything is computed."""

    n_components: int
    n_landmarks: int | Literal["auto"]
    n_landmark_neighbors: int
    n_neighbors: int
    bandwidth: float | str
    landmarks: str | ArrayLike | BaseEstimator
    method: str
    reg: float
    symmetrize: str
    neighbors_method: str
    random_state: RandomStateLike
    n_jobs: int | None
    verbose: bool
    refine: bool | int | Literal["auto"]
    device: DeviceLike


@dataclass(frozen=True)
class LLLResult:
    """What :func:`locally_linear_landmarks` computed; the estimator stores each as
    the attribute of the same name with a trailing underscore.

    Attributes
    ----------
    embedding : ndarray of shape (n_samples, n_components)
        X = X~ Z for the training points (refined when ``refine=True``); float32
        for float32 input, else float64.
    landmarks : ndarray of shape (n_landmarks, n_features)
    landmark_indices : ndarray of shape (n_landmarks,) or None
        Rows of X used as landmarks; None when the landmarks are not data points.
    landmark_embedding : ndarray of shape (n_landmarks, n_components)
        X~, the embedding of the landmarks (what ``transform`` maps with).
    eigenvalues : ndarray of shape (n_components,)
    weights : scipy.sparse.csr_matrix of shape (n_samples, n_landmarks)
        Z transposed: each point's K_Z reconstruction weights.
    bandwidth : float or None
        Gaussian width used ("auto" resolved; None when only a given affinity was
        used).
    n_connected_components : int
        Components of the affinity graph (of the landmarks' graph for the
        landmark-only methods).
    reconstruction_error : float
        ||X - Z T|| / ||X - mean||.
    refine_result : RefineResult or None
        Iterations and residuals of the refinement (None without it).
    timings : dict
        Seconds per stage (see ``LocallyLinearLandmarks.timings_``).
    neighbors_method : str or None
        The search of the graph on all points (``"auto"`` resolved: ``"cells"``,
        ``"exact"`` or ``"approximate"``); None for a given affinity and for the
        landmark-only methods.
    refine : bool or int
        The refinement run (``"auto"`` resolved): False or 0 for none, True to
        convergence, else a number of LOBPCG iterations.
    """

    embedding: np.ndarray
    landmarks: np.ndarray = field(repr=False)
    landmark_indices: np.ndarray | None = field(repr=False)
    landmark_embedding: np.ndarray = field(repr=False)
    eigenvalues: np.ndarray
    weights: sparse.csr_matrix = field(repr=False)
    bandwidth: float | None
    n_connected_components: int
    reconstruction_error: float
    refine_result: RefineResult | None
    timings: dict = field(repr=False)
    neighbors_method: str | None = None
    refine: bool | int = False

    @property
    def n_landmarks(self) -> int:
        """Landmarks used (rows of ``landmarks``)."""
        return self.landmarks.shape[0]


def locally_linear_landmarks(
    X: MatrixLike, *, n_components: int = 2, n_landmarks: int | Literal["auto"] = "auto",
    n_landmark_neighbors: int = 5, n_neighbors: int = 10,
    bandwidth: float | Literal["auto"] = "auto",
    landmarks: Literal["random", "random-pruned", "kmeans"] | ArrayLike | BaseEstimator
    = "random",
    method: Literal["lll", "le-z", "le-nystrom"] = "lll", reg: float = 1e-3,
    symmetrize: Literal["union", "mean"] = "union",
    neighbors_method: Literal["auto", "exact", "approximate", "cells"] = "auto",
    affinity: SparseMatrix | None = None, random_state: RandomStateLike = None,
    n_jobs: int | None = None, verbose: bool = False,
    refine: bool | int | Literal["auto"] = "auto",
    device: DeviceLike = "cpu",
) -> LLLResult:
    """Embed X by Locally Linear Landmarks (the function behind
    :class:`~landmarking.lll.estimator.LocallyLinearLandmarks`).

    Laplacian eigenmaps solved on landmarks: each point is an affine combination
    of its ``n_landmark_neighbors`` nearest landmarks (weights Z), and the
    N x N eigenproblem of the k-NN graph becomes an L x L one on the landmarks.

    Parameters
    ----------
    X : array-like or scipy sparse matrix of shape (n_samples, n_features)
        A NumPy array, CSR matrix, memory map, Zarr or Dask array; gathered into
        memory (the k-NN graph needs every row at once).
    n_components, n_landmarks, n_landmark_neighbors, n_neighbors, bandwidth, \
landmarks, method, reg, symmetrize, neighbors_method, random_state, n_jobs, \
verbose, refine, device
        As in :class:`~landmarking.lll.estimator.LocallyLinearLandmarks`.
    affinity : sparse matrix of shape (n_samples, n_samples), optional
        As in :meth:`LocallyLinearLandmarks.fit
        <landmarking.lll.estimator.LocallyLinearLandmarks.fit>`.

    Returns
    -------
    LLLResult
        The embedding, the landmarks and their embedding, the weights Z and what
        the run measured.

    Warns
    -----
    LandmarkSpanWarning
        When the landmarks reconstruct the points poorly (see the estimator).

    Examples
    --------
    >>> from sklearn.datasets import make_swiss_roll
    >>> X, _ = make_swiss_roll(500, random_state=0)
    >>> result = locally_linear_landmarks(X, n_landmarks=50, random_state=0)
    >>> result.embedding.shape, result.landmark_embedding.shape, result.weights.shape
    ((500, 2), (50, 2), (500, 50))
    """
    p = _Settings(
        n_components=n_components, n_landmarks=n_landmarks,
        n_landmark_neighbors=n_landmark_neighbors, n_neighbors=n_neighbors,
        bandwidth=bandwidth, landmarks=landmarks, method=method, reg=reg,
        symmetrize=symmetrize, neighbors_method=neighbors_method,
        random_state=random_state, n_jobs=n_jobs, verbose=verbose, refine=refine,
        device=device)
    check_lll_params(p)
    backend = lll_backend(device)
    with thread_limits(p.n_jobs):
        return _run(X, p, affinity, backend)


def _checked_rows(X: MatrixLike, affinity: SparseMatrix | None, p: _Settings) -> MatrixLike:
    """The one check of X: first what the graph stage would refuse (before any work
    is done on X), then its rows, all of them in memory (the k-NN graph needs
    every row at once), or a ``MemoryError`` that names the route at scale. The
    stages below take X as this returns it and check it no more."""
    check_search_input(X, p.neighbors_method, affinity)
    # The full check (symmetry, degrees) comes with the graph stage; the indices now.
    check_sparse_structure(affinity, "affinity")
    return to_memory(
        check_rows(X, min_samples=2),
        what="Locally Linear Landmarks (its k-NN graph needs every row at once)",
        alternative="fit on a sample of rows, e.g. X[np.sort(rng.choice(N, M, "
                    "replace=False))], then embed all rows block by block with "
                    "transform() (or lll_out_of_sample()).")


def _run(X: MatrixLike, p: _Settings, affinity: SparseMatrix | None,
         backend: LLLBackend) -> LLLResult:
    """The stages, from the check of X, on ``p.n_jobs`` threads."""
    X = _checked_rows(X, affinity, p)
    rng = check_random_state(p.random_state)
    timings = {}
    with stage(timings, "total"):
        n_landmarks = resolve_n_landmarks(p.n_landmarks, *X.shape)
        refine = resolve_refine(p.refine, p.method, *X.shape)
        with stage(timings, "landmarks"):
            T, landmark_indices = resolve_landmarks(X, p.landmarks, n_landmarks, rng)
        n_land = T.shape[0]
        if p.n_components >= n_land:
            raise ValueError(
                f"n_components={p.n_components} needs more landmarks than "
                f"{n_land}; pass n_landmarks > n_components."
            )
        with stage(timings, "weights"):
            Z = backend.weights(X, T, p.n_landmark_neighbors, reg=p.reg, verbose=p.verbose)
            nearest = nearest_landmarks(Z)
        if p.method == "lll":
            solved = _reduced_embedding(X, T, Z, nearest=nearest, affinity=affinity,
                                        p=p, refine=refine, backend=backend, rng=rng,
                                        timings=timings)
        else:
            solved = _landmark_le_embedding(X, T, Z, p, timings, rng)
        reconstruction_error = landmark_reconstruction_error(X, Z, T)
        warn_if_landmarks_represent_poorly(reconstruction_error, n_land,
                                           p.n_landmark_neighbors)
        # Computed in float64 on purpose (see reconstruction_weights); returned in
        # the dtype of X.
        embedding = solved["embedding"].astype(X.dtype, copy=False)
    if p.verbose:
        print(f"LocallyLinearLandmarks({p.method}, L={n_land}): " + ", ".join(
            f"{k} {v:.2f} s" for k, v in timings.items()))
    return LLLResult(
        embedding=embedding, landmarks=T, landmark_indices=landmark_indices,
        landmark_embedding=solved["landmark_embedding"], eigenvalues=solved["eigenvalues"],
        weights=Z, bandwidth=solved["bandwidth"],
        n_connected_components=solved["n_connected_components"],
        reconstruction_error=reconstruction_error,
        refine_result=solved.get("refine_result"), timings=timings,
        neighbors_method=solved.get("neighbors_method"), refine=refine)


def _reduced_embedding(X: MatrixLike, T: np.ndarray, Z: sparse.csr_matrix, *,
                       nearest: np.ndarray, affinity: SparseMatrix | None, p: _Settings,
                       refine: bool | int, backend: LLLBackend,
                       rng: np.random.RandomState, timings: dict) -> dict:
    """method="lll": the reduced problem on the full graph, X = X~ Z.

    X, T and Z are the rows, the landmarks and the weights; ``nearest`` each row's
    landmarks, nearest first (the cells the graph may search); ``affinity`` the
    given graph, if any; ``p`` the run's settings with ``refine`` resolved; the
    stages' seconds go into ``timings``."""
    n_land = T.shape[0]
    if affinity is None:
        with stage(timings, "neighbors"):
            distances, indices, method = graph_neighbors(
                X, p.neighbors_method, p.n_neighbors, landmarks=T, nearest=nearest,
                rng=rng, random_state=p.random_state, n_jobs=p.n_jobs)
        W, bandwidth = graph_of_neighbors(distances, indices, p.bandwidth,
                                          symmetrize=p.symmetrize, timings=timings)
    else:
        with stage(timings, "affinity"):  # checking the given graph
            W = check_affinity(affinity, X.shape[0])
        bandwidth = method = None
    with stage(timings, "connectivity"):
        n_components_graph = check_connected(W)
    with stage(timings, "reduced_problem"):
        # Landmarks that reconstruct no point have an empty row in Z and a
        # singular B~: solve on the used ones, then place the rest like new points.
        used = np.flatnonzero(np.asarray(Z.getnnz(axis=0)) > 0)
        Z_used = Z[:, used] if used.size < Z.shape[1] else Z
        A, B = backend.reduced_problem(W, Z_used)
    # LAPACK's result on the L x L problem depends on the BLAS thread count
    # (OpenBLAS splits its reductions by thread): one thread, so that the
    # embedding does not depend on n_jobs.
    refining = refine is not False and refine != 0
    # A refinement starts from a few more reduced eigenvectors than wanted (guard
    # columns that speed LOBPCG up): one solve gives both.
    n_solved = (min(p.n_components + max(2, p.n_components // 5), used.size - 1)
                if refining else p.n_components)
    with stage(timings, "eigensolver"), blas_limit(1):
        solved_vecs, solved_vals = solve_reduced_problem(A, B, n_solved, random_state=rng)
    vecs, vals = solved_vecs[:, :p.n_components], solved_vals[:p.n_components]
    with stage(timings, "embedding"):
        emb = np.asarray(Z_used @ vecs)
        signs = column_signs(emb)  # X~ and X flipped together
        emb *= signs
        landmark_embedding = np.empty((n_land, p.n_components))
        landmark_embedding[used] = vecs * signs
        unused = np.setdiff1d(np.arange(n_land), used)
        if unused.size:
            k = min(p.n_landmark_neighbors, used.size)
            # T and X~ are LLL's own float64 arrays: placed without a re-check.
            landmark_embedding[unused] = _map_rows(
                T[unused], T[used], landmark_embedding[used], k, p.reg)
    solved = dict(embedding=emb, landmark_embedding=landmark_embedding, eigenvalues=vals,
                  bandwidth=bandwidth, n_connected_components=n_components_graph,
                  neighbors_method=method)
    if refining:
        with stage(timings, "refine"):
            start = np.asarray(Z_used @ solved_vecs)
            with warnings.catch_warnings():
                if refine is not True:  # a set number of iterations: not converging
                    warnings.simplefilter("ignore", ConvergenceWarning)  # is expected
                solved["embedding"], solved["eigenvalues"], solved["refine_result"] = \
                    refine_spectral_embedding(
                        W, start, n_components=p.n_components,
                        max_iter=REFINE_MAX_ITER if refine is True else refine)
            solved["landmark_embedding"] = fit_landmark_embedding(
                Z, solved["embedding"], landmark_embedding)
    return solved


def resolve_n_landmarks(n_landmarks: int | Literal["auto"], n_samples: int,
                        n_features: int | None = None) -> int:
    """``n_landmarks`` with "auto" resolved: N / :data:`POINTS_PER_LANDMARK` within
    [:data:`AUTO_MIN_LANDMARKS`, :data:`AUTO_MAX_LANDMARKS`], or for data of at most
    :data:`~landmarking.neighbors.TREE_MAX_FEATURES` features N /
    :data:`LOW_DIMENSION_POINTS_PER_LANDMARK` within
    [:data:`LOW_DIMENSION_MIN_LANDMARKS`, :data:`AUTO_MAX_LANDMARKS`]; at most N."""
    if n_landmarks != "auto":
        return n_landmarks
    if _low_dimensional(n_features):
        per, least = LOW_DIMENSION_POINTS_PER_LANDMARK, LOW_DIMENSION_MIN_LANDMARKS
    else:
        per, least = POINTS_PER_LANDMARK, AUTO_MIN_LANDMARKS
    wanted = n_samples // per
    return int(min(n_samples, max(least, min(AUTO_MAX_LANDMARKS, wanted))))


def resolve_refine(refine: bool | int | Literal["auto"], method: str,
                   n_samples: int, n_features: int | None = None) -> bool | int:
    """``refine`` with "auto" resolved: :data:`AUTO_REFINE_ITERATIONS` for
    ``method="lll"`` on at least
    :data:`~landmarking.neighbors.APPROXIMATE_MIN_SAMPLES` points of more than
    :data:`~landmarking.neighbors.TREE_MAX_FEATURES` features, else 0."""
    if refine != "auto" or isinstance(refine, (bool, np.bool_)):
        return refine
    large = n_samples >= APPROXIMATE_MIN_SAMPLES
    wanted = method == "lll" and large and not _low_dimensional(n_features)
    return AUTO_REFINE_ITERATIONS if wanted else 0


def _low_dimensional(n_features):
    """Data of at most TREE_MAX_FEATURES features (None: not known, not low)."""
    return n_features is not None and n_features <= TREE_MAX_FEATURES


def _landmark_le_embedding(X, T, Z, p, timings, rng):
    """method="le-z" or "le-nystrom": Laplacian eigenmaps on the landmarks' own
    graph, every point placed with Z or the Nystroem formula."""
    W_land, bandwidth = neighbor_graph(
        T, min(p.n_neighbors, T.shape[0] - 1), p.bandwidth,
        symmetrize=p.symmetrize, method=p.neighbors_method,
        random_state=p.random_state, n_jobs=p.n_jobs, timings=timings)
    n_components_graph = check_connected(W_land)
    with stage(timings, "eigensolver"), blas_limit(1):
        vecs, vals = spectral_embedding(W_land, p.n_components, random_state=rng)
    with stage(timings, "embedding"):
        if p.method == "le-z":
            emb = np.asarray(Z @ vecs)
        else:
            emb = nystrom_out_of_sample(X, T, vecs, vals, p.n_neighbors, bandwidth)
    return dict(embedding=emb, landmark_embedding=vecs, eigenvalues=vals,
                bandwidth=bandwidth, n_connected_components=n_components_graph)
