"""Locally Linear Landmarks (Vladymyrov & Carreira-Perpinan, ECML 2013): the numerics.

A fast approximate solver for Laplacian eigenmaps. Each point y_n is written as
an affine combination of its K_Z nearest landmarks, Y ~ Y~ Z (Z sparse, columns
summing to one); assuming the same in the embedding, X = X~ Z, turns the N x N
problem L x = lambda D x into the L x L problem A~ x~ = lambda B~ x~ with
A~ = Z L Z^T and B~ = Z D Z^T. The same weights place new points:
x_0 = X~ z_0 (:func:`~landmarking.lll.out_of_sample.lll_out_of_sample`).

In code Z is stored transposed, as a sparse (N x L) matrix with one row of K_Z
weights per point.

This module holds the NumPy path of the two large computations,
:func:`reconstruction_weights` (Z) and :func:`reduced_problem` (A~, B~), and
:func:`solve_reduced_problem`, the small eigenproblem every path shares. Their
compiled loops live in :mod:`._kernels`; the torch path, for ``device=...``,
in :mod:`._torch`; :func:`~landmarking.lll.backend.lll_backend` picks one.
:class:`~landmarking.lll.estimator.LocallyLinearLandmarks` is the
scikit-learn estimator around them.
"""

from __future__ import annotations

import contextlib

import numba
import numpy as np
from scipy import linalg, sparse
from scipy.sparse.linalg import eigsh
from sklearn.utils import check_random_state
from sklearn.utils.extmath import row_norms
from threadpoolctl import ThreadpoolController
from tqdm.auto import tqdm

from .._blocks import block_bounds, reduce_row_blocks
from .._typing import (
    ArrayLike,
    MatrixLike,
    NDArray,
    RandomStateLike,
    SparseMatrix,
)
from .._validation import check_positive_int
from ..graph import degree
from ..local_weights import local_affine_weights
from ..neighbors import query_neighbors
from . import _kernels as K

__all__ = ["reconstruction_weights", "reduced_problem", "solve_reduced_problem",
           "check_reg", "check_landmark_neighbors"]

#: Up to this many landmarks, Z is computed from the landmarks' Gram matrix
#: (one matrix product per chunk of points); above it, from explicit differences.
GRAM_LIMIT = 8192
#: From this ridge on, the local systems are solved by a compiled Cholesky
#: (condition number below about 1/reg); smaller ridges use LAPACK's pivoted LU.
CHOLESKY_MIN_REG = 1e-5
#: Reduced problems up to this size are solved with dense LAPACK.
DENSE_LIMIT = 5000
#: Parts (rows of the L x L sums, one thread each) of the compiled reduced problem.
REDUCED_PARTS = 8
#: Up to this much work (stored edges of W times K_Z), the reduced problem is two
#: sparse products, as fast at that size and with nothing to compile on a first
#: call; above it, the compiled pass over the edges.
REDUCED_SPARSE_MAX_WORK = 2 ** 21
#: Candidates beyond K_Z that the float32 ranking of the landmarks hands to the
#: float64 check: the choice is proved when the K_Z-th float64 distance is clear
#: of the float32 distances left out (their error bound included).
RANK32_MARGIN = 8
#: A pass whose points are unproved more than once in this many gives the
#: float32 ranking up for the rest of its block (data far from the origin,
#: where the float32 error bound is loose): the float64 redo would cost more
#: than the float32 product saves.
RANK32_GIVE_UP = 8


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
    k = check_landmark_neighbors(n_landmark_neighbors, landmarks.shape[0])
    if landmarks.ndim != 2 or landmarks.shape[1] != n_features:
        raise ValueError(
            f"landmarks {landmarks.shape} must have the {n_features} columns of X."
        )
    return landmarks, k, check_reg(reg)


def check_landmark_neighbors(n_landmark_neighbors: int, n_landmarks: int) -> int:
    """K_Z as an int, after checking it is a positive integer of at most L landmarks."""
    k = check_positive_int(n_landmark_neighbors, "n_landmark_neighbors")
    if k > n_landmarks:
        raise ValueError(
            f"n_landmark_neighbors={k} exceeds the {n_landmarks} landmarks; pass "
            f"n_landmark_neighbors <= n_landmarks (at most {n_landmarks})."
        )
    return k


def check_reg(reg: float, name: str = "reg") -> float:
    """a finite number >= 0"""
    if isinstance(reg, bool) or not np.isscalar(reg) or not (np.isfinite(reg) and reg >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {reg!r}.")
    return float(reg)


class _LocalMap:
    """What every block needs to reconstruct its rows from the landmarks.

    Checked once; small (the landmarks and their Gram matrix), so it travels to
    the Dask workers with each block's task. ``rank32``: dense blocks rank the
    landmarks with a float32 product (half the time of the float64 one, which
    was most of the weights' time) and redo only a few candidates in float64
    (see :func:`_ranked_weights`).
    """

    def __init__(self, landmarks, n_landmark_neighbors, reg, n_features, chunk_size):
        landmarks, k, reg = _check_local_map_args(landmarks, n_landmark_neighbors, reg,
                                                  n_features)
        n_land = landmarks.shape[0]
        self.landmarks, self.k, self.reg = landmarks, k, reg
        self.use_gram = n_land <= GRAM_LIMIT
        self.rank32 = False
        if self.use_gram:
            self.gram = landmarks @ landmarks.T
            self.t_sq = np.diag(self.gram).copy()
            self.chunk_rows = max(1, min(chunk_size, 2 ** 24 // (n_land + n_features)))
            self.t_norm = np.sqrt(self.t_sq)
            self.n_cand = k + RANK32_MARGIN
            self.bound = _float32_rank_bound(n_features)
            # Worth it only with landmarks left out; the bound needs finite
            # landmarks inside float32's range.
            self.rank32 = (n_land > self.n_cand and n_features < 2 ** 20
                           and bool(np.all(self.t_norm < self.bound[3]))
                           and _rank32_proves(self))
            if self.rank32:
                self.landmarks32 = landmarks.astype(np.float32)
                # The candidates' float64 products read the landmarks from the
                # float32 copy when it holds them exactly (landmarks taken from
                # float32 data): the same values, half the memory traffic, which
                # bounds that loop (K_Z + 8 rows of the landmarks per point).
                exact = np.array_equal(self.landmarks32, landmarks)
                self.landmarks_exact = self.landmarks32 if exact else landmarks
        else:
            self.gram = self.t_sq = None
            self.chunk_rows = max(1, min(chunk_size, 2 ** 24 // max(1, k * n_features)))


def _rank32_proves(local):
    """Whether the float32 ranking would prove the choice for most points: tried
    on up to 256 of the landmarks themselves, as points.

    Far from the origin (|t|^2 large against the gaps between distances) the
    float32 error bound proves nothing, and every point would pay the float32
    product and the float64 one.
    """
    n_land, k, c = local.landmarks.shape[0], local.k, local.n_cand
    rows = np.arange(0, n_land, max(1, n_land // 256))
    d2 = local.t_sq[rows, None] + local.t_sq[None, :] - 2.0 * local.gram[rows]
    part = np.partition(d2, [k - 1, c], axis=1)  # the point itself is one of the K_Z
    coef, slack, floor, _ = local.bound
    tn, t_max = local.t_norm[rows], local.t_norm.max()
    err = (coef * tn * t_max + slack * (tn ** 2 + t_max ** 2 + 2 * tn * t_max)
           + floor * (1 + tn + t_max))
    proved = part[:, k - 1] < part[:, c] - err
    return proved.mean() * RANK32_GIVE_UP > RANK32_GIVE_UP - 1


def _float32_rank_bound(n_features):
    """(coef, slack, floor, limit) of the float32 ranking's error bound.

    With u = 2^-24 and gamma_n = n u / (1 - n u), a float32 dot product of n
    terms, in any summation order, is within gamma_n sum |x_i| |t_i| of the
    exact one; rounding x and t to float32 first adds (2u + u^2) sum |x_i| |t_i|
    and scales the sum by (1 + u)^2; Cauchy-Schwarz bounds the sum by |x| |t|.
    The distance |x|^2 + |t|^2 - 2 x.t doubles it: ``coef`` (inflated by 1e-6
    for the float64 norms' own rounding). ``slack`` (relative to |x|^2 + |t|^2
    + 2 |x| |t|) bounds float64 rounding in one distance (about (n + 2) 2^-53
    needed, 4 (n + 8) 2^-53 given),
    ``floor`` (times 1 + |x| + |t|) float32 underflow. Below ``limit`` for |x|
    and |x| max |t|, nothing overflows float32.
    """
    u = 2.0 ** -24
    n = float(n_features)
    gamma = n * u / (1.0 - n * u)
    coef = 2.0 * (gamma * (1.0 + u) ** 2 + 2.0 * u + u * u) * (1.0 + 1e-6)
    slack = 4.0 * (n + 8.0) * 2.0 ** -53
    floor = 4.0 * (n + 2.0) * 2.0 ** -149
    return coef, slack, floor, 1e38


def _weights_of_block(block, local):
    """(indices, weights), each (n_b, K_Z): the reconstruction of a block's rows.

    Rows go in passes of ``local.chunk_rows``, whatever the block's size (a Dask
    or Zarr chunk may be large), so memory stays bounded.
    """
    n, k = block.shape[0], local.k
    indices = np.empty((n, k), dtype=np.int64)
    weights = np.empty((n, k), dtype=np.float64)
    rank32 = local.rank32 and not sparse.issparse(block)
    # The float32 products of every pass in one buffer: a fresh one per pass
    # (32 MB at 8,192 rows and 1,000 landmarks, above glibc's 32 MB mmap
    # threshold) was mapped and page-faulted anew every pass.
    cross32 = (np.empty((min(n, local.chunk_rows), local.landmarks.shape[0]), np.float32)
               if rank32 else None)
    # On several threads, each of the kernel's threads makes its own product on
    # one BLAS thread (see ranked_candidate_weights). The BLAS libraries are
    # looked up once per block (3.5 ms in a fit), and only then.
    blas = ThreadpoolController() if rank32 and numba.get_num_threads() > 1 else None
    for start in range(0, n, local.chunk_rows):
        rows = slice(start, min(n, start + local.chunk_rows))
        if rank32:
            with (blas.limit(limits=1, user_api="blas") if blas is not None
                  else contextlib.nullcontext()):
                todo = _ranked_weights(block[rows], local, indices[rows], weights[rows],
                                       cross32[:rows.stop - rows.start])
            if todo.size == 0:
                continue
            if todo.size * RANK32_GIVE_UP > rows.stop - rows.start:
                rank32 = False
            # Unproved points: the float64 product over every landmark.
            sub = rows.start + todo
            idx, w = indices[sub], weights[sub]
            _gram_weights(block[sub].astype(np.float64), local, idx, w)
            indices[sub], weights[sub] = idx, w
            continue
        Xc = block[rows].astype(np.float64)
        if local.use_gram:
            _gram_weights(Xc, local, indices[rows], weights[rows])
            continue
        Xc = Xc.toarray() if sparse.issparse(Xc) else Xc
        _, indices[rows] = query_neighbors(local.landmarks, Xc, k)
        diff = Xc[:, None, :] - local.landmarks[indices[rows]]
        weights[rows] = local_affine_weights(diff @ diff.transpose(0, 2, 1), local.reg)
    return indices, weights


def _gram_weights(Xc, local, idx, weights):
    """Fill ``idx`` and ``weights`` for the float64 rows Xc from every landmark's
    distance (the Gram trick on one float64 product)."""
    x_sq = row_norms(Xc, squared=True)
    # One BLAS product per pass for every landmark distance, then one
    # compiled pass on all threads for the nearest landmarks and the local
    # solves (for every K_Z: at K_Z = 5 on 20,000 MNIST digits and 1,000
    # landmarks it took 0.48 s where the vectorised NumPy (a partial sort
    # and a stacked LAPACK solve, _nearest_landmarks and local_affine_weights)
    # took 0.78 s; the product alone 0.34 s).
    cross = np.asarray(Xc @ local.landmarks.T)
    failed = K.nearest_gram_weights(cross, x_sq, local.t_sq, local.gram, local.reg,
                                    local.reg >= CHOLESKY_MIN_REG, idx, weights,
                                    numba.get_num_threads())
    if not failed.any():
        return
    sub = np.flatnonzero(failed)
    c = np.take_along_axis(cross[sub], idx[sub], axis=1)
    weights[sub] = _pivoted_weights(x_sq[sub], c, local, idx[sub])


def _pivoted_weights(x_sq, c, local, idx):
    """Weights by LAPACK's pivoted solver, for the rows whose compiled Cholesky
    failed (a small ridge, or G + r I not numerically positive definite through
    rounding in the Gram trick): ``c`` the rows' cross products with their
    landmarks ``idx``."""
    return local_affine_weights(_local_gram(x_sq, c, local.gram, idx), local.reg)


def _ranked_weights(X, local, idx, weights, cross32):
    """Fill ``idx`` and ``weights`` for the dense rows X from a float32 ranking;
    returns the positions of the rows left unproved (``idx`` and ``weights``
    unset there) for the float64 path. ``cross32`` is a float32 work array of
    shape (len(X), n_landmarks).

    One float32 product ranks every landmark; the K_Z + ``RANK32_MARGIN``
    nearest by it are redone in float64 (their cross products in a compiled
    loop over the features), which chooses the K_Z, nearest first and ties to
    the lower index, and gives the local Gram matrices. The choice is the
    float64 one wherever the K_Z-th float64 distance is below every distance
    left out minus its float32 error bound (:func:`_float32_rank_bound`); the
    weights then differ from :func:`_gram_weights`' only by the rounding order
    of the cross products (BLAS's or the loop's).
    """
    X = np.ascontiguousarray(X)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    X32 = X if X.dtype == np.float32 else X.astype(np.float32)
    n, k = X.shape[0], local.k
    cz, x_sq = np.empty((n, k)), np.empty(n)
    status = np.empty(n, dtype=np.int8)
    K.ranked_candidate_weights(X, X32, local.landmarks32, cross32, local.landmarks_exact,
                               local.t_sq, local.t_norm,
                               local.gram, local.reg, local.reg >= CHOLESKY_MIN_REG,
                               local.n_cand, local.bound, idx, weights, cz, x_sq, status,
                               numba.get_num_threads())
    left = np.flatnonzero(status == 2)
    if left.size:
        weights[left] = _pivoted_weights(x_sq[left], cz[left], local, idx[left])
    return np.flatnonzero(status == 1)


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


# --------------------------------------------------------------------------- reduced problem

def reduced_problem(W: SparseMatrix, Z: SparseMatrix,
                    ) -> tuple[np.ndarray | sparse.csr_matrix, np.ndarray | sparse.csr_matrix]:
    """The L x L matrices A~ = Z L Z^T and B~ = Z D Z^T (Z given as N x L).

    W must be symmetric (as :func:`~landmarking.graph.check_affinity`
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
        # Each part owns rows of the two L x L sums and adds the points in their
        # order: the same bits for any number of parts or threads, and no copies.
        B, H = K.reduced_dense(W.indptr, W.indices, W.data, deg,
                              Z.indices.reshape(-1, k), Z.data.reshape(-1, k),
                              n_land, REDUCED_PARTS)
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
