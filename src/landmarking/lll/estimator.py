"""The Locally Linear Landmarks estimator (scikit-learn API).

:class:`LocallyLinearLandmarks` checks its parameters against one table
(``_parameter_rules``), resolves the device once (:func:`.backend.lll_backend`)
and runs the stages: landmarks (:mod:`.landmark_selection` or given), the
weights Z, the graph (:func:`landmarking.graph.neighbor_graph`), the reduced
problem and its eigenvectors (:mod:`.lll`), the optional refinement
(:mod:`.refined`), and the reconstruction check (:mod:`.diagnostics`). The
paper's two baselines are ``method="le-z"`` and ``method="le-nystrom"``:
Laplacian eigenmaps on the landmarks alone (:mod:`landmarking.spectral`),
placed with Z or the Nystroem formula.
"""

from __future__ import annotations

from typing import Any, Literal, Self

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin, clone
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import threadpool_limits

from .._blocks import check_rows, take_rows, to_memory
from .._parallel import thread_limits
from .._timings import stage
from .._typing import ArrayLike, DeviceLike, MatrixLike, RandomStateLike, SparseMatrix
from .._validation import Boolean, Check, Integer, Options, check_choice, check_params
from ..graph import (
    GRAPH_PARAMETER_RULES,
    GraphEmbeddingMixin,
    check_affinity,
    check_connected,
    column_signs,
    neighbor_graph,
)
from ..spectral.laplacian import spectral_embedding
from ..spectral.nystrom import nystrom_out_of_sample
from ..spectral.refine import refine_spectral_embedding
from .backend import lll_backend
from .diagnostics import landmark_reconstruction_error, warn_if_landmarks_represent_poorly
from .landmark_selection import LANDMARK_STRATEGIES, select_landmarks
from .lll import check_reg, solve_reduced_problem
from .out_of_sample import lll_map_rows
from .refined import fit_landmark_embedding

__all__ = ["LocallyLinearLandmarks", "LLL_METHODS"]

LLL_METHODS = ("lll", "le-z", "le-nystrom")


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


class LocallyLinearLandmarks(GraphEmbeddingMixin, ClassNamePrefixFeaturesOutMixin,
                             TransformerMixin, BaseEstimator):
    """Laplacian eigenmaps solved on landmarks (Locally Linear Landmarks).

    Parameters
    ----------
    n_components : int, default=2
        Embedding dimension d.
    n_landmarks : int, default=100
        Number of landmarks L (ignored when ``landmarks`` is an array or an
        estimator, which bring their own).
    n_landmark_neighbors : int, default=5
        K_Z: landmarks that reconstruct each point.
    n_neighbors : int, default=10
        K_W: neighbours per point in the Gaussian affinity.
    bandwidth : float or "auto", default="auto"
        Gaussian width sigma; ``"auto"`` is the median neighbour distance.
    landmarks : {"random", "random-pruned", "kmeans"}, ndarray or estimator, \
            default="random"
        How landmarks are chosen: a strategy of
        :func:`~landmarking.lll.landmark_selection.select_landmarks`, an
        array (n_landmarks, n_features) of points that need not be data points,
        or a landmark estimator (anything with ``fit`` that sets
        ``landmarks_``, such as :class:`landmarking.GPLandmarks`). An unfitted
        estimator is cloned and fitted on X; a fitted one is used as is.
    method : {"lll", "le-z", "le-nystrom"}, default="lll"
        ``"lll"``: the reduced problem with A~ = Z L Z^T, B~ = Z D Z^T.
        ``"le-z"``: Laplacian eigenmaps on the landmarks alone (their own
        k-NN graph), all points placed with Z. ``"le-nystrom"``: the same
        landmark embedding, points placed with the Nystroem formula.
    reg : float, default=1e-3
        Relative ridge of the local Gram matrices (see
        :func:`~landmarking.lll.lll.reconstruction_weights`).
    symmetrize : {"union", "mean"}, default="union"
    neighbors_method : {"auto", "exact", "approximate"}, default="auto"
        Neighbour search: exact (blocked float32 products with an exact
        re-rank), approximate (usearch's HNSW graph with an exact re-rank, the
        ``ann`` extra; dense data), or ``"auto"``: exact below
        :data:`~landmarking.neighbors.APPROXIMATE_MIN_SAMPLES` points,
        approximate from there on when ``n_neighbors`` is at most
        :data:`~landmarking.neighbors.APPROXIMATE_MAX_NEIGHBORS` (dense data).
    random_state : int, RandomState or None, default=None
    n_jobs : int or None, default=None
        Threads for the neighbour search, the compiled kernels and BLAS during
        ``fit`` and ``transform`` (scikit-learn's meaning: None is 1 unless in a
        ``joblib.parallel_config`` context, -1 is all cores). The landmarks and
        the neighbour graph do not depend on it; the weights can differ in the
        last bits (measured 5e-13 on a 900-point Swiss roll with 260 landmarks:
        BLAS adds up in an order that depends on its threads), and the reduced
        eigenproblem always runs on one BLAS thread so that those bits do not grow.
    verbose : bool, default=False
        Progress bar over the weight computation and stage timings.
    refine : bool, default=False
        With ``method="lll"``: start LOBPCG on the full graph from the LLL
        solution and iterate to the exact Laplacian eigenmaps (residuals below
        1e-6; :func:`~landmarking.spectral.refine.refine_spectral_embedding`,
        no preconditioner); the landmark coordinates are then
        refitted so that ``transform`` maps into the refined embedding.
    device : {"cpu", "cuda", "cuda:N", "auto"} or torch.device, default="cpu"
        Where Z, A~, B~ and the out-of-sample map are computed: ``"cpu"`` is
        the NumPy path; a CUDA device (or ``torch.device("cpu")``) runs them
        with PyTorch (extra ``landmarking[gpu]``) in float64, same results;
        ``"auto"`` is CUDA when torch sees a GPU, else ``"cpu"``. Landmarks,
        the graph W and the small L x L eigenproblem (float64) stay on the
        CPU. Device blocks are sized by scikit-learn's ``working_memory``:
        lower it (``sklearn.config_context``) if the device runs out of memory.

    Attributes
    ----------
    landmarks_ : ndarray of shape (n_landmarks_, n_features)
    landmark_indices_ : ndarray of shape (n_landmarks_,) or None
        Rows of X used as landmarks; None when the landmarks are not data points.
    landmark_embedding_ : ndarray of shape (n_landmarks_, n_components)
        X~, the embedding of the landmarks.
    embedding_ : ndarray of shape (n_samples, n_components)
        X = X~ Z for the training points; float32 for float32 input. Z, the
        reduced problem and X~ are computed in float64 on purpose (see
        :func:`~landmarking.lll.lll.reconstruction_weights`).
    eigenvalues_ : ndarray of shape (n_components,)
    weights_ : scipy.sparse.csr_matrix of shape (n_samples, n_landmarks_)
        Z transposed: each point's K_Z reconstruction weights.
    bandwidth_ : float or None
        Gaussian width used (None when only a given affinity was used).
    n_landmarks_ : int
    reconstruction_error_ : float
        ||X - Z T|| / ||X - mean||: how well the landmarks reconstruct the points; a
        ``LandmarkSpanWarning`` names the fix above 0.75.
    n_connected_components_ : int or None
        Components of the affinity graph (None for the landmark-only methods).
    timings_ : dict
        Seconds per stage: ``landmarks``, ``neighbors``, ``affinity`` (building,
        or checking a given one), ``connectivity``, ``weights``,
        ``reduced_problem``, ``eigensolver``, ``embedding``, ``refine`` (with
        ``refine=True``), ``total``.
    refine_result_ : RefineResult or None
        Iterations and residuals of the refinement (None without it).
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import make_swiss_roll
    >>> X, _ = make_swiss_roll(1000, random_state=0)
    >>> lll = LocallyLinearLandmarks(n_landmarks=100, n_neighbors=10, random_state=0)
    >>> lll.fit_transform(X).shape
    (1000, 2)
    >>> lll.transform(X[:5]).shape
    (5, 2)
    """

    _parameter_rules = {
        **GRAPH_PARAMETER_RULES,
        "n_components": Integer(),
        "n_landmarks": Integer(),
        "n_landmark_neighbors": Integer(),
        "method": Options(*LLL_METHODS),
        "refine": Boolean(),
        "landmarks": Check(_check_landmarks),
        "reg": Check(check_reg),
    }

    def __init__(self, *, n_components: int = 2, n_landmarks: int = 100,
                 n_landmark_neighbors: int = 5,
                 n_neighbors: int = 10, bandwidth: float | Literal["auto"] = "auto",
                 landmarks: Literal["random", "random-pruned", "kmeans"] | ArrayLike
                 | BaseEstimator = "random",
                 method: Literal["lll", "le-z", "le-nystrom"] = "lll",
                 reg: float = 1e-3, symmetrize: Literal["union", "mean"] = "union",
                 neighbors_method: Literal["auto", "exact", "approximate"] = "auto",
                 random_state: RandomStateLike = None, n_jobs: int | None = None,
                 verbose: bool = False, refine: bool = False,
                 device: DeviceLike = "cpu") -> None:
        self.n_components = n_components
        self.n_landmarks = n_landmarks
        self.n_landmark_neighbors = n_landmark_neighbors
        self.n_neighbors = n_neighbors
        self.bandwidth = bandwidth
        self.landmarks = landmarks
        self.method = method
        self.reg = reg
        self.symmetrize = symmetrize
        self.neighbors_method = neighbors_method
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.refine = refine
        self.device = device

    def _resolve_landmarks(self, X, rng):
        """Landmark coordinates and, when they are rows of X, their indices."""
        spec = self.landmarks
        if isinstance(spec, str):
            idx = select_landmarks(X, self.n_landmarks, spec, random_state=rng)
            T = take_rows(X, idx)
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
            T = np.asarray(est.landmarks_, dtype=np.float64)
        else:
            T = np.asarray(spec, dtype=np.float64)
        if T.ndim != 2 or T.shape[1] != X.shape[1]:
            raise ValueError(
                f"landmarks must have shape (n_landmarks, {X.shape[1]}), got {T.shape}."
            )
        if not np.all(np.isfinite(T)):
            raise ValueError("landmarks contain NaN or infinity; pass finite landmarks.")
        return T.copy(), None

    def fit(self, X: MatrixLike, y: Any = None, affinity: SparseMatrix | None = None) -> Self:
        """Learn the landmark embedding and embed X.

        The k-NN graph needs every row at once, so X is gathered into memory
        (a memory map, Zarr or Dask array too); when it does not fit, a
        ``MemoryError`` says so. The route at scale is to fit on a sample of rows
        and place all of them with :meth:`transform`, which works block by block
        (see ``examples/plot_lll_scale.py``).

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_samples, n_features)
            A NumPy array, CSR matrix, memory map, Zarr or Dask array.
        y : ignored
        affinity : sparse matrix of shape (n_samples, n_samples), optional
            A precomputed symmetric affinity W on the rows of X that replaces the
            built-in Gaussian k-NN graph (used by ``method="lll"``).

        Returns
        -------
        self
        """
        check_params(self, self._parameter_rules)
        if self.refine and self.method != "lll":
            raise ValueError(
                f"refine=True refines the LLL solution on the full graph; it needs "
                f"method='lll', got method={self.method!r}."
            )
        backend = lll_backend(self.device)
        X = check_rows(X, estimator=self, min_samples=2)
        X = to_memory(
            X, what="LocallyLinearLandmarks.fit (its k-NN graph needs every row at once)",
            alternative="fit on a sample of rows, e.g. X[np.sort(rng.choice(N, M, "
                        "replace=False))], then embed all rows block by block with "
                        "transform() (or lll_out_of_sample()).")
        with thread_limits(self.n_jobs):
            return self._fit(X, affinity, backend)

    def _fit(self, X, affinity, backend):
        rng = check_random_state(self.random_state)
        timings = {}
        with stage(timings, "total"):
            with stage(timings, "landmarks"):
                T, self.landmark_indices_ = self._resolve_landmarks(X, rng)
                self.landmarks_ = T
                self.n_landmarks_ = n_land = T.shape[0]
            if self.n_components >= n_land:
                raise ValueError(
                    f"n_components={self.n_components} needs more landmarks than "
                    f"{n_land}; pass n_landmarks > n_components."
                )
            with stage(timings, "weights"):
                Z = backend.weights(X, T, self.n_landmark_neighbors, reg=self.reg,
                                    verbose=self.verbose)
            self.refine_result_ = None
            if self.method == "lll":
                self._fit_lll(X, Z, affinity, timings, rng, backend)
            else:
                self._fit_landmark_le(X, Z, timings, rng)
            self.weights_ = Z
            self.reconstruction_error_ = landmark_reconstruction_error(X, Z, T)
            warn_if_landmarks_represent_poorly(self.reconstruction_error_, n_land,
                                               self.n_landmark_neighbors, stacklevel=4)
            # Computed in float64 on purpose (see reconstruction_weights); returned
            # in the dtype of X.
            self.embedding_ = self.embedding_.astype(X.dtype, copy=False)
        self.timings_ = timings
        if self.verbose:
            print(f"LocallyLinearLandmarks({self.method}, L={n_land}): " + ", ".join(
                f"{k} {v:.2f} s" for k, v in timings.items()))
        return self

    def _fit_lll(self, X, Z, affinity, timings, rng, backend):
        if affinity is None:
            W, self.bandwidth_ = neighbor_graph(
                X, self.n_neighbors, self.bandwidth, symmetrize=self.symmetrize,
                method=self.neighbors_method, random_state=self.random_state,
                n_jobs=self.n_jobs, timings=timings)
        else:
            with stage(timings, "affinity"):  # checking the given graph
                W = check_affinity(affinity, X.shape[0])
            self.bandwidth_ = None
        with stage(timings, "connectivity"):
            self.n_connected_components_ = check_connected(W)
        with stage(timings, "reduced_problem"):
            # Landmarks that reconstruct no point have an empty row in Z and a
            # singular B~: solve on the used ones, then place the rest like new points.
            used = np.flatnonzero(np.asarray(Z.getnnz(axis=0)) > 0)
            Z_used = Z[:, used] if used.size < Z.shape[1] else Z
            A, B = backend.reduced_problem(W, Z_used)
        # LAPACK's result on the L x L problem depends on the BLAS thread count
        # (OpenBLAS splits its reductions by thread): one thread, so that the
        # embedding does not depend on n_jobs.
        with stage(timings, "eigensolver"), threadpool_limits(limits=1, user_api="blas"):
            vecs, vals = solve_reduced_problem(A, B, self.n_components, random_state=rng)
        with stage(timings, "embedding"):
            emb = np.asarray(Z_used @ vecs)
            signs = column_signs(emb)  # X~ and X flipped together
            emb *= signs
            landmark_embedding = np.empty((self.n_landmarks_, self.n_components))
            landmark_embedding[used] = vecs * signs
            unused = np.setdiff1d(np.arange(self.n_landmarks_), used)
            if unused.size:
                k = min(self.n_landmark_neighbors, used.size)
                landmark_embedding[unused] = lll_map_rows(
                    self.landmarks_[unused], self.landmarks_[used],
                    landmark_embedding[used], k, self.reg)
            self.embedding_ = emb
            self.landmark_embedding_ = landmark_embedding
            self.eigenvalues_ = vals
        if self.refine:
            with stage(timings, "refine"):
                # A few more reduced eigenvectors: guard columns that speed LOBPCG up.
                n_start = min(self.n_components + max(2, self.n_components // 5),
                              used.size - 1)
                start = np.asarray(Z_used @ solve_reduced_problem(
                    A, B, n_start, random_state=rng)[0])
                self.embedding_, self.eigenvalues_, self.refine_result_ = \
                    refine_spectral_embedding(W, start, n_components=self.n_components)
                self.landmark_embedding_ = fit_landmark_embedding(
                    Z, self.embedding_, landmark_embedding)

    def _fit_landmark_le(self, X, Z, timings, rng):
        T = self.landmarks_
        W_land, self.bandwidth_ = neighbor_graph(
            T, min(self.n_neighbors, T.shape[0] - 1), self.bandwidth,
            symmetrize=self.symmetrize, method=self.neighbors_method,
            random_state=self.random_state, n_jobs=self.n_jobs, timings=timings)
        self.n_connected_components_ = check_connected(W_land)
        with stage(timings, "eigensolver"), threadpool_limits(limits=1, user_api="blas"):
            vecs, vals = spectral_embedding(W_land, self.n_components, random_state=rng)
        self.landmark_embedding_ = vecs
        self.eigenvalues_ = vals
        with stage(timings, "embedding"):
            if self.method == "le-z":
                self.embedding_ = np.asarray(Z @ vecs)
            else:
                self.embedding_ = nystrom_out_of_sample(X, T, vecs, vals, self.n_neighbors,
                                                        self.bandwidth_)

    def transform(self, X: MatrixLike) -> np.ndarray:
        """Place points with the fitted map (LLL weights, or Nystroem for
        ``method="le-nystrom"``).

        Each row is placed on its own, one block of rows at a time, so X may be
        larger than memory.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_new, n_features)
            A NumPy array, CSR matrix, memory map, Zarr or Dask array.

        Returns
        -------
        ndarray of shape (n_new, n_components)
            float32 for float32 input, else float64; a lazy Dask array for Dask
            input (``lll.transform(big).to_zarr(path)`` streams).
        """
        check_is_fitted(self)
        backend = lll_backend(self.device)
        X = check_rows(X, estimator=self, reset=False)
        with thread_limits(self.n_jobs):
            if self.method == "le-nystrom":
                return nystrom_out_of_sample(X, self.landmarks_, self.landmark_embedding_,
                                             self.eigenvalues_, self.n_neighbors,
                                             self.bandwidth_)
            return backend.out_of_sample(X, self.landmarks_, self.landmark_embedding_,
                                         self.n_landmark_neighbors, self.reg)

    @property
    def _n_features_out(self):
        return self.n_components
