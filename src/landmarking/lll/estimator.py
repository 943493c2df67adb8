"""The Locally Linear Landmarks estimator (scikit-learn API).

:class:`LocallyLinearLandmarks` is a thin wrapper: it checks its parameters
against one table (:data:`.fit.PARAMETER_RULES`) and its data, runs
:func:`.fit.locally_linear_landmarks`'s stages once, and stores the
:class:`.fit.LLLResult` in trailing-underscore attributes; ``transform`` maps
new points with the fitted weights (or the Nystroem formula).
"""

from __future__ import annotations

from typing import Any, Literal, Self

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._blocks import check_rows
from .._parallel import thread_limits
from .._typing import ArrayLike, DeviceLike, MatrixLike, RandomStateLike, SparseMatrix
from ..graph import GraphEmbeddingMixin
from ..spectral.nystrom import nystrom_out_of_sample
from .backend import lll_backend
from .fit import LLL_METHODS, PARAMETER_RULES, locally_linear_landmarks

__all__ = ["LocallyLinearLandmarks", "LLL_METHODS"]

class LocallyLinearLandmarks(GraphEmbeddingMixin, ClassNamePrefixFeaturesOutMixin,
                             TransformerMixin, BaseEstimator):
    """Laplacian eigenmaps solved on landmarks (Locally Linear Landmarks).

    Parameters
    ----------
    n_components : int, default=2
        Embedding dimension d.
    n_landmarks : int or "auto", default="auto"
        Number of landmarks L (ignored when ``landmarks`` is an array or an
        estimator, which bring their own). ``"auto"``: one per 100 points, at
        least 100 and at most 10,000 (for data of at most 3 features one per
        1,000, at least 300), and at most N
        (:func:`~landmarking.lll.fit.resolve_n_landmarks`); the value used is in
        ``n_landmarks_``. Until 0.2.0 the default was 100 at every size.
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
        :func:`~landmarking.lll._cpu.reconstruction_weights`).
    symmetrize : {"union", "mean"}, default="union"
    neighbors_method : {"auto", "exact", "approximate", "cells"}, default="auto"
        Neighbour search: exact (blocked float32 products with an exact
        re-rank), approximate (usearch's HNSW graph with an exact re-rank, the
        ``ann`` extra; dense data), ``"cells"`` (each point's neighbours among
        the points of the cells of its nearest centres, the cells about 100
        points each: LLL's landmarks when they make cells of that size, which
        the weights searched anyway, else centres drawn for the graph;
        :func:`~landmarking.lll.cell_graph.graph_cells`; approximate, parallel,
        dense data), or ``"auto"``: exact below
        :data:`~landmarking.neighbors.APPROXIMATE_MIN_SAMPLES` points; from
        there on, for dense data, SciPy's exact KD-tree for at most 3
        features, else the cells (:func:`~landmarking.lll.cell_graph.graph_search`);
        sparse data: approximate when ``n_neighbors`` is at most
        :data:`~landmarking.neighbors.APPROXIMATE_MAX_NEIGHBORS`. The choice is
        in ``neighbors_method_``.
    random_state : int, RandomState or None, default=None
    n_jobs : int or None, default=None
        Threads for the neighbour search, the compiled loops and BLAS during
        ``fit`` and ``transform`` (None: for the compiled loops, ``OMP_NUM_THREADS`` if set,
        else the CPUs this process may use, within an enclosing
        ``threadpool_limits``; BLAS's threads as they are; inside
        ``joblib.parallel_config(n_jobs=...)`` that many; -1 is all cores). The landmarks and
        the neighbour graph do not depend on it; the weights can differ in the
        last bits (measured 5e-13 on a 900-point Swiss roll with 260 landmarks:
        BLAS adds up in an order that depends on its threads), and the reduced
        eigenproblem always runs on one BLAS thread so that those bits do not grow.
    verbose : bool, default=False
        Progress bar over the weight computation and stage timings.
    refine : bool, int or "auto", default="auto"
        With ``method="lll"``: start LOBPCG on the full graph from the LLL
        solution and iterate to the exact Laplacian eigenmaps (``True``:
        residuals below 1e-6;
        :func:`~landmarking.spectral.refine_eigenvectors.refine_spectral_embedding`,
        no preconditioner), or take that many LOBPCG iterations (an int: a few
        restore the local detail between landmarks that LLL's span cannot
        hold, at the cost of a few products with the graph); the landmark
        coordinates are then refitted so that ``transform`` maps into the
        refined embedding. ``"auto"``: 3 iterations from 10,000 points of more
        than 3 features on with ``method="lll"``, else none
        (:func:`~landmarking.lll.fit.resolve_refine`); the value used is in
        ``refine_``. Until 0.2.0 the default was False.
    device : {"cpu", "cuda", "cuda:N", "auto"} or torch.device, default="cpu"
        Where Z, A~, B~ and the out-of-sample map are computed: ``"cpu"`` is
        the CPU path; a CUDA device (or ``torch.device("cpu")``) runs them
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
        :func:`~landmarking.lll._cpu.reconstruction_weights`).
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
    refine_ : bool or int
        The refinement run (``refine`` with "auto" resolved).
    refine_result_ : RefineResult or None
        Iterations and residuals of the refinement (None without it).
    neighbors_method_ : str or None
        The search of the graph on all points, ``"auto"`` resolved (``"cells"``,
        ``"exact"`` or ``"approximate"``); None with a given ``affinity`` and for
        the landmark-only methods.
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

    _parameter_rules = PARAMETER_RULES

    def __init__(self, *, n_components: int = 2, n_landmarks: int | Literal["auto"] = "auto",
                 n_landmark_neighbors: int = 5,
                 n_neighbors: int = 10, bandwidth: float | Literal["auto"] = "auto",
                 landmarks: Literal["random", "random-pruned", "kmeans"] | ArrayLike
                 | BaseEstimator = "random",
                 method: Literal["lll", "le-z", "le-nystrom"] = "lll",
                 reg: float = 1e-3, symmetrize: Literal["union", "mean"] = "union",
                 neighbors_method: Literal["auto", "exact", "approximate", "cells"] = "auto",
                 random_state: RandomStateLike = None, n_jobs: int | None = None,
                 verbose: bool = False, refine: bool | int | Literal["auto"] = "auto",
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
        result = locally_linear_landmarks(X, affinity=affinity, **self.get_params(deep=False))
        # X was checked there; here only what scikit-learn records of it.
        validate_data(self, X, skip_check_array=True)
        self.landmarks_ = result.landmarks
        self.landmark_indices_ = result.landmark_indices
        self.n_landmarks_ = result.n_landmarks
        self.landmark_embedding_ = result.landmark_embedding
        self.embedding_ = result.embedding
        self.eigenvalues_ = result.eigenvalues
        self.weights_ = result.weights
        self.bandwidth_ = result.bandwidth
        self.n_connected_components_ = result.n_connected_components
        self.reconstruction_error_ = result.reconstruction_error
        self.refine_ = result.refine
        self.refine_result_ = result.refine_result
        self.neighbors_method_ = result.neighbors_method
        self.timings_ = result.timings
        return self

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
