"""Locally Linear Landmarks (Vladymyrov & Carreira-Perpinan, ECML 2013).

A fast approximate solver for Laplacian eigenmaps. Each point y_n is written as
an affine combination of its K_Z nearest landmarks, Y ~ Y~ Z (Z sparse, columns
summing to one); assuming the same in the embedding, X = X~ Z, turns the N x N
problem L x = lambda D x into the L x L problem A~ x~ = lambda B~ x~ with
A~ = Z L Z^T and B~ = Z D Z^T. The same weights place new points:
x_0 = X~ z_0 (:func:`lll_out_of_sample`).

In code Z is stored transposed, as a sparse (N x L) matrix with one row of K_Z
weights per point.

Plain functions do the numerical work (:func:`select_landmarks`,
:func:`reconstruction_weights`, :func:`reduced_problem`,
:func:`solve_reduced_problem`, :func:`lll_out_of_sample`,
:func:`nystrom_out_of_sample`); :class:`LocallyLinearLandmarks` is the
scikit-learn estimator around them, with the paper's two baselines as
``method="le-z"`` and ``method="le-nystrom"``. The compiled loops behind
:func:`reconstruction_weights` and :func:`reduced_problem` live in
:mod:`._lll_kernels`; their torch counterparts, for ``device=...``, in
:mod:`._lll_torch`.
"""

from __future__ import annotations

import time
from typing import Any, Literal, Self

import numba
import numpy as np
from scipy import linalg, sparse
from scipy.sparse.linalg import eigsh
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin, clone
from sklearn.utils import check_random_state
from sklearn.utils.extmath import row_norms
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from .._blocks import (
    block_bounds,
    check_rows,
    map_row_blocks,
    reduce_row_blocks,
    take_rows,
    to_memory,
    working_dtype,
)
from .._parallel import check_n_jobs, thread_limits
from .._torch import check_device
from .._typing import (
    ArrayLike,
    DeviceLike,
    MatrixLike,
    NDArray,
    RandomStateLike,
    SparseMatrix,
)
from .._validation import check_choice, check_positive_float, check_positive_int
from ..neighbors import NEIGHBOR_METHODS, nearest_neighbors, query_neighbors
from . import _lll_kernels as K
from . import _lll_torch
from ._lll_diagnostics import (  # noqa: F401 - LandmarkSpanWarning importable from here
    LandmarkSpanWarning,
    landmark_reconstruction_error,
    warn_if_landmarks_represent_poorly,
)
from .affinity import SYMMETRIZE, check_affinity, check_connected, degree, gaussian_affinity
from .landmark_selection import LANDMARK_STRATEGIES, select_landmarks
from .laplacian import resolve_bandwidth, spectral_embedding
from .nystrom import nystrom_out_of_sample

__all__ = ["LocallyLinearLandmarks", "select_landmarks", "reconstruction_weights",
           "reduced_problem", "solve_reduced_problem", "lll_out_of_sample",
           "nystrom_out_of_sample", "LANDMARK_STRATEGIES", "LLL_METHODS"]

LLL_METHODS = ("lll", "le-z", "le-nystrom")

#: Up to this many landmarks, Z is computed from the landmarks' Gram matrix
#: (one matrix product per chunk of points); above it, from explicit differences.
GRAM_LIMIT = 8192
#: Up to this K_Z, the nearest landmarks and the weights are vectorised NumPy
#: (a partial sort and a stacked LAPACK solve), as fast as the compiled kernel for
#: such small systems and with nothing to compile on the first call; larger K_Z
#: use the compiled kernel, which avoids the N K_Z^2 gathers.
NUMPY_MAX_K = 5
#: From this ridge on, the local systems are solved by a compiled Cholesky
#: (condition number below about 1/reg); smaller ridges use LAPACK's pivoted LU.
CHOLESKY_MIN_REG = 1e-5
#: Reduced problems up to this size are solved with dense LAPACK.
DENSE_LIMIT = 5000
#: Parts of the points whose L x L sums the compiled reduced problem adds up.
REDUCED_PARTS = 8
#: Up to this much work (stored edges of W times K_Z), the reduced problem is two
#: sparse products, as fast at that size and with nothing to compile on a first
#: call; above it, the compiled pass over the edges.
REDUCED_SPARSE_MAX_WORK = 2 ** 21


# --------------------------------------------------------------------------- weights Z

def reconstruction_weights(X: MatrixLike, landmarks: ArrayLike, n_landmark_neighbors: int, *,
                           reg: float = 1e-3, chunk_size: int = 8192,
                           verbose: bool = False) -> sparse.csr_matrix:
    """Locally linear reconstruction of each row of X from its nearest landmarks.

    For each point y, the K_Z nearest landmarks t_1..t_K give the local Gram
    matrix G_ij = (y - t_i).(y - t_j); the weights solve
    (G + r I) z = 1 and are rescaled to sum to one, with the ridge
    r = reg * trace(G) (scikit-learn's LLE convention; r = reg when G = 0).
    The ridge makes the weights unique when K_Z > D or the landmarks are
    degenerate, and keeps them finite when y coincides with a landmark;
    ``reg=0`` uses a vanishing ridge (1e-12 relative), whose limit is the
    minimum-norm exact reconstruction.

    The work is per row, one block of rows at a time (on the Dask workers for a
    Dask array); only the K_Z indices and weights per row come back. It is done
    in float64 whatever the dtype of X, on purpose: the Gram trick
    |y|^2 - 2 y.t + |t|^2 cancels about half of float32's digits, and the local
    systems have condition numbers up to 1/reg.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
        NumPy array, scipy CSR matrix, memory map, Zarr or Dask array.
    landmarks : ndarray of shape (n_landmarks, n_features)
    n_landmark_neighbors : int
        K_Z, at most n_landmarks.
    reg : float
        Relative ridge, >= 0.
    chunk_size : int
        Points per pass (at most; fewer when n_landmarks + n_features is large):
        memory stays at about chunk_size * (n_landmarks + n_features) floats,
        128 MB at most. Each pass alternates a BLAS product with a compiled
        parallel kernel, and every switch between the two thread pools costs
        time, so passes are better few and large.
    verbose : bool
        Show a progress bar over the blocks.

    Returns
    -------
    Z : scipy.sparse.csr_matrix of shape (n_samples, n_landmarks)
        K_Z nonzeros per row (the paper's Z transposed), rows summing to one.

    Examples
    --------
    >>> T = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    >>> Z = reconstruction_weights(np.array([[0.25, 0.5]]), T, 3, reg=0.0)
    >>> (Z @ T).round(6)
    array([[0.25, 0.5 ]])
    """
    if not hasattr(X, "shape"):
        X = np.asarray(X)
    n, n_land = X.shape[0], np.shape(landmarks)[0]
    local = _LocalMap(landmarks, n_landmark_neighbors, reg, X.shape[1], chunk_size)
    bounds = block_bounds(X, local.chunk_rows)
    # A progress bar needs the blocks one call at a time (sequential on Dask).
    groups = ([bounds[i:i + 2] for i in range(len(bounds) - 1)] if verbose
              else [bounds])
    parts = []
    for group in tqdm(groups, disable=not verbose, desc="LLL weights Z", leave=False):
        parts += reduce_row_blocks(_weights_of_block, X, local, bounds=group)
    return _weights_matrix(parts, n, local.k, n_land)


def _weights_matrix(parts, n, k, n_land):
    """Z^T as a sparse (n x n_land) matrix from the blocks' (indices, weights):
    K_Z weights per row; shared by the NumPy and the torch paths."""
    indices = np.concatenate([p[0] for p in parts]) if parts else np.empty((0, k), np.int64)
    weights = np.concatenate([p[1] for p in parts]) if parts else np.empty((0, k))
    indptr = np.arange(0, n * k + 1, k)
    return sparse.csr_matrix((weights.ravel(), indices.ravel(), indptr),
                             shape=(n, n_land))


def _check_local_map_args(landmarks, n_landmark_neighbors, reg, n_features):
    """(landmarks as float64, K_Z, reg) checked against X's ``n_features`` columns;
    shared by the NumPy and the torch paths."""
    landmarks = np.asarray(landmarks, dtype=np.float64)
    n_land = landmarks.shape[0]
    k = check_positive_int(n_landmark_neighbors, "n_landmark_neighbors")
    if k > n_land:
        raise ValueError(
            f"n_landmark_neighbors={k} exceeds the {n_land} landmarks; pass at most "
            f"{n_land}."
        )
    if landmarks.ndim != 2 or landmarks.shape[1] != n_features:
        raise ValueError(
            f"landmarks {landmarks.shape} must have the {n_features} columns of X."
        )
    if isinstance(reg, bool) or not np.isscalar(reg) or not (np.isfinite(reg) and reg >= 0):
        raise ValueError(f"reg must be a finite number >= 0, got {reg!r}.")
    return landmarks, k, float(reg)


class _LocalMap:
    """What every block needs to reconstruct its rows from the landmarks.

    Checked once; small (the landmarks and their Gram matrix), so it travels to
    the Dask workers with each block's task.
    """

    def __init__(self, landmarks, n_landmark_neighbors, reg, n_features, chunk_size):
        landmarks, k, reg = _check_local_map_args(landmarks, n_landmark_neighbors, reg,
                                                  n_features)
        n_land = landmarks.shape[0]
        self.landmarks, self.k, self.reg = landmarks, k, reg
        self.use_gram = n_land <= GRAM_LIMIT
        if self.use_gram:
            self.gram = landmarks @ landmarks.T
            self.t_sq = np.diag(self.gram).copy()
            self.chunk_rows = max(1, min(chunk_size, 2 ** 24 // (n_land + n_features)))
        else:
            self.gram = self.t_sq = None
            self.chunk_rows = max(1, min(chunk_size, 2 ** 24 // max(1, k * n_features)))


def _weights_of_block(block, local):
    """(indices, weights), each (n_b, K_Z): the reconstruction of a block's rows.

    Rows go in passes of ``local.chunk_rows``, whatever the block's size (a Dask
    or Zarr chunk may be large), so memory stays bounded.
    """
    n, k = block.shape[0], local.k
    indices = np.empty((n, k), dtype=np.int64)
    weights = np.empty((n, k), dtype=np.float64)
    for start in range(0, n, local.chunk_rows):
        rows = slice(start, min(n, start + local.chunk_rows))
        Xc = block[rows].astype(np.float64)
        if local.use_gram:
            x_sq = row_norms(Xc, squared=True)
            cross = np.asarray(Xc @ local.landmarks.T)
            if k <= NUMPY_MAX_K:
                idx = indices[rows] = _nearest_landmarks(cross, x_sq, local.t_sq, k)
                c = np.take_along_axis(cross, idx, axis=1)
                weights[rows] = _solve_local(_local_gram(x_sq, c, local.gram, idx), local.reg)
                continue
            idx = indices[rows]
            failed = K.nearest_gram_weights(cross, x_sq, local.t_sq, local.gram, local.reg,
                                            local.reg >= CHOLESKY_MIN_REG, idx,
                                            weights[rows], numba.get_num_threads())
            if not failed.any():
                continue
            # A small ridge, or G + r I not numerically positive definite
            # (rounding in the Gram trick): LAPACK's pivoted solver.
            sub = np.flatnonzero(failed)
            c = np.take_along_axis(cross[sub], idx[sub], axis=1)
            G = _local_gram(x_sq[sub], c, local.gram, idx[sub])
            weights[rows.start + sub] = _solve_local(G, local.reg)
            continue
        Xc = Xc.toarray() if sparse.issparse(Xc) else Xc
        _, indices[rows] = query_neighbors(local.landmarks, Xc, k)
        diff = Xc[:, None, :] - local.landmarks[indices[rows]]
        weights[rows] = _solve_local(diff @ diff.transpose(0, 2, 1), local.reg)
    return indices, weights


def _nearest_landmarks(cross, x_sq, t_sq, k):
    """The k nearest landmarks of each point, nearest first, ties to the lower index.

    Ranks by |y|^2 - 2 y.t + |t|^2 rounded exactly as the compiled kernel does.
    """
    d2 = -2.0 * cross + x_sq[:, None] + t_sq[None, :]
    n, n_land = d2.shape
    part = (np.argpartition(d2, k - 1, axis=1)[:, :k] if k < n_land
            else np.broadcast_to(np.arange(n_land), d2.shape))
    vals = np.take_along_axis(d2, part, axis=1)
    idx = np.take_along_axis(part, np.lexsort((part, vals), axis=1), axis=1)
    # A tie at the k-th distance: the partial sort may have kept a higher index.
    tied = np.flatnonzero((d2 <= vals.max(axis=1, keepdims=True)).sum(axis=1) > k)
    if tied.size:
        sub = d2[tied]
        idx[tied] = np.lexsort((np.broadcast_to(np.arange(n_land), sub.shape), sub),
                               axis=1)[:, :k]
    return idx.astype(np.int64)


def _local_gram(x_sq, c, gram, idx):
    """Stacked local Gram matrices G_ab = |y|^2 - y.t_a - y.t_b + t_a.t_b."""
    return (x_sq[:, None, None] - c[:, :, None] - c[:, None, :]
            + gram[idx[:, :, None], idx[:, None, :]])


def _solve_local(G, reg):
    """Affine weights from stacked local Gram matrices G (c, k, k)."""
    k = G.shape[1]
    trace = np.trace(G, axis1=1, axis2=2)
    # reg = 0 still gets a vanishing ridge: G is singular whenever K_Z > D (or
    # the landmarks are degenerate), and the limit of a ridge going to zero is
    # the minimum-norm exact reconstruction.
    rel = max(reg, 1e-12)
    ridge = np.where(trace > 0, rel * trace, rel)
    G = G + ridge[:, None, None] * np.eye(k)
    ones = np.ones((G.shape[0], k, 1))
    try:
        w = np.linalg.solve(G, ones)[:, :, 0]
    except np.linalg.LinAlgError:
        # A singular system (reg=0 with degenerate landmarks): least squares.
        w = np.stack([np.linalg.lstsq(g, o, rcond=None)[0][:, 0]
                      for g, o in zip(G, ones, strict=True)])
    total = w.sum(axis=1, keepdims=True)
    bad = ~np.isfinite(total[:, 0]) | (np.abs(total[:, 0]) < 1e-300)
    w[bad] = 1.0  # no usable system: plain average of the neighbours
    total[bad] = k
    return w / total


# --------------------------------------------------------------------------- reduced problem

def reduced_problem(W: SparseMatrix, Z: SparseMatrix,
                    ) -> tuple[np.ndarray | sparse.csr_matrix, np.ndarray | sparse.csr_matrix]:
    """The L x L matrices A~ = Z L Z^T and B~ = Z D Z^T (Z given as N x L).

    W must be symmetric (as :func:`~landmarking.embedding.affinity.check_affinity`
    ensures): the compiled pass reads only its upper triangle. Returns dense
    arrays when L <= 5,000 (a compiled pass over the points; two sparse
    products when nnz(W) K_Z is at most :data:`REDUCED_SPARSE_MAX_WORK`),
    sparse CSR matrices above.

    Examples
    --------
    >>> X = np.arange(6.0)[:, None]
    >>> W = sparse.diags([np.ones(5), np.ones(5)], [-1, 1]).tocsr()  # a chain
    >>> A, B = reduced_problem(W, reconstruction_weights(X, X[::2], 2))
    >>> A.shape, bool(np.allclose(A.sum(axis=1), 0))  # A~ 1 = 0
    ((3, 3), True)
    """
    deg = degree(W)
    n_land = Z.shape[1]
    W = sparse.csr_matrix(W)
    k = int(Z.indptr[1]) if Z.shape[0] else 0
    if (n_land <= DENSE_LIMIT and W.nnz * k > REDUCED_SPARSE_MAX_WORK
            and np.all(np.diff(Z.indptr) == k)):
        # L x L blocks summed in a fixed order, so that the result does not depend
        # on the number of threads; up to 8 (one per thread), within a ~1 GB budget.
        n_parts = int(max(1, min(REDUCED_PARTS, 2 ** 26 // (n_land * n_land))))
        B, H = K.reduced_dense(W.indptr, W.indices, W.data, deg,
                              Z.indices.reshape(-1, k), Z.data.reshape(-1, k),
                              n_land, n_parts)
        A = B - (H + H.T)
        return 0.5 * (A + A.T), 0.5 * (B + B.T)
    Zt = Z.T.tocsr()
    B = Zt @ sparse.csr_matrix(Z.multiply(deg[:, None]))
    C = Zt @ (W @ Z)
    A = B - C
    if Z.shape[1] <= DENSE_LIMIT:
        A, B = A.toarray(), B.toarray()
        return 0.5 * (A + A.T), 0.5 * (B + B.T)
    return (0.5 * (A + A.T)).tocsr(), (0.5 * (B + B.T)).tocsr()


def solve_reduced_problem(A: np.ndarray | SparseMatrix, B: np.ndarray | SparseMatrix,
                          n_components: int, *, random_state: RandomStateLike = None,
                          ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Trailing generalised eigenvectors of A x = lambda B x, trivial one dropped.

    Dense LAPACK for arrays; shift-invert ARPACK for sparse matrices.

    Returns
    -------
    vectors : ndarray of shape (L, n_components), B-orthonormal columns
    eigenvalues : ndarray of shape (n_components,)

    Examples
    --------
    >>> X = np.arange(6.0)[:, None]
    >>> W = sparse.diags([np.ones(5), np.ones(5)], [-1, 1]).tocsr()
    >>> A, B = reduced_problem(W, reconstruction_weights(X, X[::2], 2))
    >>> vectors, lam = solve_reduced_problem(A, B, 1)
    >>> vectors.shape, lam.round(3)
    ((3, 1), array([0.219]))
    """
    size = A.shape[0]
    if n_components + 1 > size:
        raise ValueError(
            f"n_components={n_components} needs more than {n_components} landmarks, "
            f"got {size}; use more landmarks or fewer components."
        )
    if sparse.issparse(A):
        rng = check_random_state(random_state)
        scale = B.diagonal().mean()
        vals, vecs = eigsh(A, k=n_components + 1, M=B, sigma=-1e-6 * scale,
                           which="LM", v0=rng.uniform(-1, 1, size))
    else:
        try:
            vals, vecs = linalg.eigh(A, B, subset_by_index=[0, n_components])
        except linalg.LinAlgError:
            # B~ numerically singular (landmarks with nearly collinear weight
            # columns): a tiny ridge restores definiteness.
            ridge = 1e-10 * np.trace(B) / size
            vals, vecs = linalg.eigh(A, B + ridge * np.eye(size),
                                     subset_by_index=[0, n_components])
    order = np.argsort(vals)
    return vecs[:, order[1:]], vals[order[1:]]


# --------------------------------------------------------------------------- out of sample

def lll_out_of_sample(Y_new: MatrixLike, landmarks: ArrayLike, landmark_embedding: ArrayLike,
                      n_landmark_neighbors: int, reg: float = 1e-3, *,
                      chunk_size: int = 2048) -> np.ndarray:
    """Place new points with the LLL map x_0 = X~ z_0.

    Everything it needs fits in an ``.npz`` file: the landmarks, their
    embedding, K_Z and the ridge. Each row is placed on its own, one block of
    rows at a time, so the rows may be more than fit in memory.

    Parameters
    ----------
    Y_new : array of shape (n_new, n_features)
        NumPy array, scipy CSR matrix, memory map, Zarr or Dask array.
    landmarks : ndarray of shape (n_landmarks, n_features)
    landmark_embedding : ndarray of shape (n_landmarks, n_components)
    n_landmark_neighbors : int
        K_Z used when fitting.
    reg : float
        Ridge used when fitting.
    chunk_size : int
        Points per pass, as in :func:`reconstruction_weights`.

    Returns
    -------
    ndarray of shape (n_new, n_components)
        float32 for float32 input, else float64 (the weights are computed in
        float64 either way); a lazy Dask array for Dask input, so
        ``lll_out_of_sample(big, ...).to_zarr(path)`` streams.

    Examples
    --------
    >>> T = np.array([[0.0], [1.0], [2.0]])
    >>> lll_out_of_sample(np.array([[0.5]]), T, np.array([[0.0], [10.0], [20.0]]), 2,
    ...                   reg=0.0).round(6)
    array([[5.]])
    """
    Y_new = check_rows(Y_new)
    return _lll_out_of_sample(Y_new, landmarks, landmark_embedding, n_landmark_neighbors,
                              reg, chunk_size)


def _lll_out_of_sample(Y_new, landmarks, landmark_embedding, n_landmark_neighbors, reg,
                       chunk_size=2048):
    landmark_embedding = np.asarray(landmark_embedding, dtype=np.float64)
    landmarks = np.asarray(landmarks)
    if landmark_embedding.ndim != 2 or landmark_embedding.shape[0] != landmarks.shape[0]:
        raise ValueError(
            f"landmark_embedding {landmark_embedding.shape} needs one row per landmark "
            f"({landmarks.shape[0]})."
        )
    local = _LocalMap(landmarks, n_landmark_neighbors, reg, Y_new.shape[1], chunk_size)
    return map_row_blocks(_embed_block, Y_new, local, landmark_embedding,
                          n_out=landmark_embedding.shape[1], dtype=working_dtype(Y_new),
                          block_rows=local.chunk_rows)


def _embed_block(block, local, landmark_embedding):
    """x_0 = X~ z_0 for every row of a block."""
    idx, w = _weights_of_block(block, local)
    return np.einsum("nk,nkd->nd", w, landmark_embedding[idx])


# --------------------------------------------------------------------------- estimator

class LocallyLinearLandmarks(ClassNamePrefixFeaturesOutMixin, TransformerMixin,
                             BaseEstimator):
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
        How landmarks are chosen: a strategy of :func:`select_landmarks`, an
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
        :func:`reconstruction_weights`).
    symmetrize : {"union", "mean"}, default="union"
    neighbors_method : {"auto", "exact", "approximate"}, default="auto"
        Neighbour search: exact (blocked float32 products with an exact
        re-rank), pynndescent, or ``"auto"``: exact below
        :data:`~landmarking.neighbors.APPROXIMATE_MIN_SAMPLES` points,
        pynndescent from there on when ``n_neighbors`` is at most
        :data:`~landmarking.neighbors.APPROXIMATE_MAX_NEIGHBORS`.
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
        1e-6; :func:`~landmarking.embedding.refine.refine_spectral_embedding`,
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
        :func:`reconstruction_weights`).
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

    def _check_params(self):
        check_positive_int(self.n_components, "n_components")
        check_positive_int(self.n_landmarks, "n_landmarks")
        check_positive_int(self.n_landmark_neighbors, "n_landmark_neighbors")
        check_positive_int(self.n_neighbors, "n_neighbors")
        if not isinstance(self.bandwidth, str):
            check_positive_float(self.bandwidth, "bandwidth")
        else:
            check_choice(self.bandwidth, "bandwidth", ("auto",))
        check_choice(self.method, "method", LLL_METHODS)
        if self.refine not in (True, False):
            raise ValueError(f"refine must be True or False, got {self.refine!r}.")
        if self.refine and self.method != "lll":
            raise ValueError(
                f"refine=True refines the LLL solution on the full graph; it needs "
                f"method='lll', got method={self.method!r}."
            )
        check_choice(self.symmetrize, "symmetrize", SYMMETRIZE)
        check_choice(self.neighbors_method, "neighbors_method", NEIGHBOR_METHODS)
        check_n_jobs(self.n_jobs)
        if isinstance(self.landmarks, str):
            check_choice(self.landmarks, "landmarks", LANDMARK_STRATEGIES)
        elif not (hasattr(self.landmarks, "fit") or hasattr(self.landmarks, "shape")
                  or isinstance(self.landmarks, (list, tuple))):
            raise TypeError(
                "landmarks must be 'random', 'random-pruned', 'kmeans', an array of "
                "shape (n_landmarks, n_features) or a landmark estimator with fit() "
                f"and landmarks_; got {type(self.landmarks).__name__}."
            )
        if isinstance(self.reg, bool) or not np.isscalar(self.reg) or not (
                np.isfinite(self.reg) and self.reg >= 0):
            raise ValueError(f"reg must be a finite number >= 0, got {self.reg!r}.")

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
        self._check_params()
        device = check_device(self.device)
        X = check_rows(X, estimator=self, min_samples=2)
        X = to_memory(
            X, what="LocallyLinearLandmarks.fit (its k-NN graph needs every row at once)",
            alternative="fit on a sample of rows, e.g. X[np.sort(rng.choice(N, M, "
                        "replace=False))], then embed all rows block by block with "
                        "transform() (or lll_out_of_sample()).")
        with thread_limits(self.n_jobs):
            return self._fit(X, affinity, device)

    def _fit(self, X, affinity, device):
        rng = check_random_state(self.random_state)
        timings = {}
        start = time.perf_counter()
        T, self.landmark_indices_ = self._resolve_landmarks(X, rng)
        self.landmarks_ = T
        self.n_landmarks_ = n_land = T.shape[0]
        timings["landmarks"] = time.perf_counter() - start
        if self.n_landmark_neighbors > n_land:
            raise ValueError(
                f"n_landmark_neighbors={self.n_landmark_neighbors} exceeds the "
                f"{n_land} landmarks; pass n_landmark_neighbors <= n_landmarks."
            )
        if self.n_components >= n_land:
            raise ValueError(
                f"n_components={self.n_components} needs more landmarks than "
                f"{n_land}; pass n_landmarks > n_components."
            )
        t = time.perf_counter()
        if device is None:
            Z = reconstruction_weights(X, T, self.n_landmark_neighbors, reg=self.reg,
                                       verbose=self.verbose)
        else:
            Z = _lll_torch.reconstruction_weights(X, T, self.n_landmark_neighbors,
                                                  device=device, reg=self.reg,
                                                  verbose=self.verbose)
        timings["weights"] = time.perf_counter() - t
        self.refine_result_ = None
        if self.method == "lll":
            self._fit_lll(X, Z, affinity, timings, rng, device)
        else:
            self._fit_landmark_le(X, Z, timings, rng)
        self.weights_ = Z
        self.reconstruction_error_ = landmark_reconstruction_error(X, Z, T)
        warn_if_landmarks_represent_poorly(self.reconstruction_error_, n_land,
                                           self.n_landmark_neighbors, stacklevel=4)
        # Computed in float64 on purpose (see reconstruction_weights); returned
        # in the dtype of X.
        self.embedding_ = self.embedding_.astype(X.dtype, copy=False)
        timings["total"] = time.perf_counter() - start
        self.timings_ = timings
        if self.verbose:
            print(f"LocallyLinearLandmarks({self.method}, L={n_land}): " + ", ".join(
                f"{k} {v:.2f} s" for k, v in timings.items()))
        return self

    def _affinity(self, X, timings):
        n = X.shape[0]
        if self.n_neighbors >= n:
            raise ValueError(
                f"n_neighbors={self.n_neighbors} must be smaller than the number of "
                f"samples ({n}); pass fewer neighbours."
            )
        t = time.perf_counter()
        dist, idx = nearest_neighbors(X, self.n_neighbors, method=self.neighbors_method,
                                      random_state=self.random_state, n_jobs=self.n_jobs)
        timings["neighbors"] = time.perf_counter() - t
        t = time.perf_counter()
        self.bandwidth_ = resolve_bandwidth(self.bandwidth, dist)
        W = check_affinity(gaussian_affinity(dist, idx, self.bandwidth_,
                                             symmetrize=self.symmetrize), n)
        timings["affinity"] = time.perf_counter() - t
        return W

    def _fit_lll(self, X, Z, affinity, timings, rng, device):
        if affinity is None:
            W = self._affinity(X, timings)
        else:
            t = time.perf_counter()
            W = check_affinity(affinity, X.shape[0])
            self.bandwidth_ = None
            timings["affinity"] = time.perf_counter() - t  # checking the given graph
        t = time.perf_counter()
        self.n_connected_components_ = check_connected(W)
        timings["connectivity"] = time.perf_counter() - t
        t = time.perf_counter()
        # Landmarks that reconstruct no point have an empty row in Z and a
        # singular B~: solve on the used ones, then place the rest like new points.
        used = np.flatnonzero(np.asarray(Z.getnnz(axis=0)) > 0)
        Z_used = Z[:, used] if used.size < Z.shape[1] else Z
        A, B = (reduced_problem(W, Z_used) if device is None
                else _lll_torch.reduced_problem(W, Z_used, device=device))
        timings["reduced_problem"] = time.perf_counter() - t
        t = time.perf_counter()
        # LAPACK's result on the L x L problem depends on the BLAS thread count
        # (OpenBLAS splits its reductions by thread): one thread, so that the
        # embedding does not depend on n_jobs.
        with threadpool_limits(limits=1, user_api="blas"):
            vecs, vals = solve_reduced_problem(A, B, self.n_components, random_state=rng)
        timings["eigensolver"] = time.perf_counter() - t
        t = time.perf_counter()
        emb = np.asarray(Z_used @ vecs)
        # The sign convention of deterministic_signs, applied to X~ and X together.
        signs = np.sign(emb[np.argmax(np.abs(emb), axis=0), np.arange(emb.shape[1])])
        signs[signs == 0] = 1.0
        emb *= signs
        landmark_embedding = np.empty((self.n_landmarks_, self.n_components))
        landmark_embedding[used] = vecs * signs
        unused = np.setdiff1d(np.arange(self.n_landmarks_), used)
        if unused.size:
            k = min(self.n_landmark_neighbors, used.size)
            landmark_embedding[unused] = _lll_out_of_sample(
                self.landmarks_[unused], self.landmarks_[used],
                landmark_embedding[used], k, self.reg)
        self.embedding_ = emb
        self.landmark_embedding_ = landmark_embedding
        self.eigenvalues_ = vals
        timings["embedding"] = time.perf_counter() - t
        if self.refine:
            from .refine import fit_landmark_embedding, refine_spectral_embedding

            t = time.perf_counter()
            # A few more reduced eigenvectors: guard columns that speed LOBPCG up.
            n_start = min(self.n_components + max(2, self.n_components // 5), used.size - 1)
            start = np.asarray(Z_used @ solve_reduced_problem(A, B, n_start, random_state=rng)[0])
            self.embedding_, self.eigenvalues_, self.refine_result_ = \
                refine_spectral_embedding(W, start, n_components=self.n_components)
            self.landmark_embedding_ = fit_landmark_embedding(
                Z, self.embedding_, landmark_embedding)
            timings["refine"] = time.perf_counter() - t

    def _fit_landmark_le(self, X, Z, timings, rng):
        T = self.landmarks_
        k = min(self.n_neighbors, T.shape[0] - 1)
        t = time.perf_counter()
        dist, idx = nearest_neighbors(T, k, method=self.neighbors_method,
                                      random_state=self.random_state, n_jobs=self.n_jobs)
        self.bandwidth_ = resolve_bandwidth(self.bandwidth, dist)
        W_land = check_affinity(gaussian_affinity(dist, idx, self.bandwidth_,
                                                  symmetrize=self.symmetrize))
        timings["affinity"] = time.perf_counter() - t
        self.n_connected_components_ = check_connected(W_land)
        t = time.perf_counter()
        with threadpool_limits(limits=1, user_api="blas"):  # as in _fit_lll
            vecs, vals = spectral_embedding(W_land, self.n_components, random_state=rng)
        timings["eigensolver"] = time.perf_counter() - t
        self.landmark_embedding_ = vecs
        self.eigenvalues_ = vals
        t = time.perf_counter()
        if self.method == "le-z":
            self.embedding_ = np.asarray(Z @ vecs)
        else:
            self.embedding_ = nystrom_out_of_sample(X, T, vecs, vals, self.n_neighbors,
                                                    self.bandwidth_)
        timings["embedding"] = time.perf_counter() - t

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
        device = check_device(self.device)
        X = check_rows(X, estimator=self, reset=False)
        with thread_limits(self.n_jobs):
            if self.method == "le-nystrom":
                return nystrom_out_of_sample(X, self.landmarks_, self.landmark_embedding_,
                                             self.eigenvalues_, self.n_neighbors,
                                             self.bandwidth_)
            if device is not None:
                return _lll_torch.lll_out_of_sample(
                    X, self.landmarks_, self.landmark_embedding_,
                    self.n_landmark_neighbors, self.reg, device=device)
            return _lll_out_of_sample(X, self.landmarks_, self.landmark_embedding_,
                                      self.n_landmark_neighbors, self.reg)

    def fit_transform(self, X: MatrixLike, y: Any = None,
                      affinity: SparseMatrix | None = None) -> np.ndarray:
        """Fit and return ``embedding_``."""
        return self.fit(X, y, affinity=affinity).embedding_

    @property
    def _n_features_out(self):
        return self.n_components

    def __sklearn_is_fitted__(self):
        return hasattr(self, "embedding_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
