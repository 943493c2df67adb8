"""The CPU backend of Locally Linear Landmarks (Vladymyrov & Carreira-Perpinan, ECML
2013): the numerics on the host.

A fast approximate solver for Laplacian eigenmaps. Each point y_n is written as
an affine combination of its K_Z nearest landmarks, Y ~ Y~ Z (Z sparse, columns
summing to one); assuming the same in the embedding, X = X~ Z, turns the N x N
problem L x = lambda D x into the L x L problem A~ x~ = lambda B~ x~ with
A~ = Z L Z^T and B~ = Z D Z^T. The same weights place new points:
x_0 = X~ z_0 (:func:`~landmarking.lll.out_of_sample.lll_out_of_sample`).

In code Z is stored transposed, as a sparse (N x L) matrix with one row of K_Z
weights per point.

This module (named ``_cpu`` for where it runs, like GP's CPU backend :mod:`landmarking.gp._cpu`)
holds the CPU path of the two large computations,
:func:`reconstruction_weights` (Z) and :func:`reduced_problem` (A~, B~), and
:func:`solve_reduced_problem`, the small eigenproblem every path shares. Their
compiled loops live in :mod:`._loops`; the torch path, for ``device=...``,
in :mod:`._torch`; :func:`~landmarking.lll.backend.lll_backend` picks one.
:class:`~landmarking.lll.estimator.LocallyLinearLandmarks` is the
scikit-learn estimator around them.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import linalg, sparse
from scipy.sparse.linalg import eigsh, lobpcg
from scipy.spatial import cKDTree
from sklearn.utils import check_random_state
from sklearn.utils.extmath import row_norms

from .._blocks import block_bounds, reduce_row_blocks
from .._memory import working_memory_bytes
from .._parallel import blas_limit, loop_threads, run_parts
from .._progress import progress_bar
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
from ..neighbors import TREE_MAX_FEATURES
from . import _loops as K

__all__ = ["reconstruction_weights", "reduced_problem", "solve_reduced_problem",
           "check_reg", "check_landmark_neighbors"]

#: Up to this many landmarks the local Gram matrices read t_a.t_b from the
#: landmarks' Gram matrix (L^2 floats, 134 MB at this limit); above it the compiled loops
#: take the K_Z (K_Z + 1) / 2 dot products of each point's landmarks.
GRAM_LIMIT = 4096
#: From this ridge on, the local systems are solved by a compiled Cholesky
#: (condition number below about 1/reg); smaller ridges use LAPACK's pivoted LU.
CHOLESKY_MIN_REG = 1e-5
#: Reduced problems up to this size are solved with dense LAPACK.
DENSE_LIMIT = 5000
#: Parts (rows of the L x L sums, one thread each) of the compiled reduced problem.
REDUCED_PARTS = 8
#: Up to this much work (stored edges of W times K_Z), the reduced problem is two
#: sparse products, as fast at that size; above it, the compiled pass over the edges.
REDUCED_SPARSE_MAX_WORK = 2 ** 21
#: Candidates beyond K_Z that the float32 scan of lower bounds hands to the
#: float64 distances: the choice is proved when the K_Z-th float64 distance is
#: clear of the bounds left out. More where the bounds are looser (on the
#: landmarks' leading axes rather than all features).
RANK32_MARGIN = 8
AXES_MARGIN = 24
#: A block whose first pass has its points unproved more than once in this many
#: gives the float32 scan up: the float64 redo would cost more than the scan
#: saves.
RANK32_GIVE_UP = 8
#: The scan runs on the fewest of the landmarks' principal axes that hold this
#: share of their variance (at most MAX_SEARCH_AXES), plus the norm of what lies
#: off them, when that is at most half the features; else on every feature.
#: MNIST's 784 pixels: about 90 axes, and the scan's float32 product 8x smaller.
SEARCH_VARIANCE = 0.9
MAX_SEARCH_AXES = 128
#: Fewer features than this are scanned whole (the product is small anyway).
MIN_AXES_FEATURES = 32


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
        128 MB at most, per thread (passes run at once, one per thread).
        Passes are better few and large: each has a fixed cost in NumPy
        calls and allocations.
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
    # Blocks of scikit-learn's working memory (or the storage chunks), each done
    # in passes of local.chunk_rows (_weights_of_block): passes of one block can
    # run at once.
    bounds = block_bounds(X)
    # A progress bar needs the blocks one call at a time (sequential on Dask).
    groups = ([bounds[i:i + 2] for i in range(len(bounds) - 1)] if verbose
              else [bounds])
    parts = []
    for group in progress_bar(groups, disable=not verbose, desc="LLL weights Z", leave=False):
        parts += reduce_row_blocks(_weights_of_block, X, local, bounds=group)
    return _weights_matrix(parts, n, local.k, n_land)


def _weights_matrix(parts, n, k, n_land):
    """Z^T as a sparse (n x n_land) matrix from the blocks' (indices, weights):
    K_Z weights per row; shared by the CPU and the torch paths."""
    indices = np.concatenate([p[0] for p in parts]) if parts else np.empty((0, k), np.int64)
    weights = np.concatenate([p[1] for p in parts]) if parts else np.empty((0, k))
    indptr = np.arange(0, n * k + 1, k)
    return sparse.csr_matrix((weights.ravel(), indices.ravel(), indptr),
                             shape=(n, n_land))


#: Coordinates beyond this make squared distances (sums over the features of
#: squared differences) overflow float64 (1.8e308) in any number of features up
#: to 1e6.
_LARGEST_COORDINATE = 1e150


def _check_local_map_args(landmarks, n_landmark_neighbors, reg, n_features):
    """(landmarks as C-ordered float64, K_Z, reg) checked against X's ``n_features``
    columns; shared by the CPU and the torch paths."""
    landmarks = np.ascontiguousarray(landmarks, dtype=np.float64)
    k = check_landmark_neighbors(n_landmark_neighbors, landmarks.shape[0])
    scale = float(np.max(np.abs(landmarks))) if landmarks.size else 0.0
    if not scale < _LARGEST_COORDINATE:  # NaN fails too
        raise ValueError(
            f"landmarks hold values up to {scale:.3g}: NaN, infinity, or so large that "
            "their squared distances overflow float64; divide the data and the landmarks "
            "by a scale such as their largest absolute value.")
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

    Checked once; small (the landmarks, their norms, their Gram matrix up to
    :data:`GRAM_LIMIT` landmarks, and the search's :class:`_LandmarkAxes` or
    KD-tree), so it travels to the Dask workers with each block's task.
    ``tree``: on data of at most
    :data:`~landmarking.neighbors.TREE_MAX_FEATURES` features, dense blocks find
    each point's nearest landmarks with a KD-tree over them
    (:func:`_tree_weights`). ``axes``: with more features, by a float32 scan of
    lower bounds and a few exact float64 distances (:func:`_bounded_weights`);
    None when every landmark would be a candidate anyway.
    """

    def __init__(self, landmarks, n_landmark_neighbors, reg, n_features, chunk_size):
        landmarks, k, reg = _check_local_map_args(landmarks, n_landmark_neighbors, reg,
                                                  n_features)
        n_land = landmarks.shape[0]
        self.landmarks, self.k, self.reg = landmarks, k, reg
        self.t_sq = np.einsum("ij,ij->i", landmarks, landmarks)
        self.gram = (thread_invariant_gram(landmarks) if n_land <= GRAM_LIMIT
                     else np.empty((0, 0)))
        self.chunk_rows = max(1, min(chunk_size, 2 ** 24 // (n_land + n_features)))
        self.axes = None
        self.n_cand = k + RANK32_MARGIN
        # Few features: a KD-tree finds the nearest landmarks in time that grows
        # with log L, where the scan's grows with L (3-D roll, 300 landmarks:
        # docs/results/lll.md).
        self.tree = (cKDTree(landmarks) if n_features <= TREE_MAX_FEATURES and n_land > k
                     else None)
        # Worth it only with landmarks left out; the bound needs finite values
        # inside float32's range.
        if n_land > self.n_cand and n_features < 2 ** 20:
            axes = _LandmarkAxes(landmarks)
            self.n_cand = k + (AXES_MARGIN if axes.projects else RANK32_MARGIN)
            if n_land > self.n_cand and axes.usable:
                self.axes = axes
                # The candidates' distances read the landmarks from a float32
                # copy when it holds them exactly (landmarks taken from float32
                # data): the same values, half the memory traffic.
                landmarks32 = landmarks.astype(np.float32)
                self.landmarks_exact = (landmarks32 if np.array_equal(landmarks32, landmarks)
                                        else landmarks)


class _LandmarkAxes:
    """The landmarks seen by the float32 scan of :func:`_bounded_weights`.

    Points and landmarks are taken less the landmarks' mean mu (``centre``),
    which keeps the float32 rounding small however far the data lie from the
    origin. For many features, the landmarks' leading principal axes P
    (orthonormal rows, :data:`SEARCH_VARIANCE` of their variance): each point x
    gets the search coordinates y = (P (x - mu), r), r = sqrt(|x - mu|^2 - |P (x -
    mu)|^2) the norm of what lies off the axes; likewise s for a landmark t. By
    Pythagoras and the reverse triangle inequality

        |x - t|^2 = |P (x - t)|^2 + |(x - t) off the axes|^2 >= |y - s|^2,

    a lower bound that costs one float32 product in p + 1 coordinates instead of
    all the features. With few features there are no axes: y = x - mu, and the
    bound is the distance itself. Every float64 quantity carries a slack
    (``eps``, per row) for its own rounding, so that the bound is a bound as
    computed.
    """

    def __init__(self, landmarks):
        n_land, n_features = landmarks.shape
        self.centre = landmarks.mean(axis=0)
        centred = np.ascontiguousarray(landmarks - self.centre)
        self.centred = centred
        # The local Gram matrices of the scan's points come from their products
        # less the centre, which lose no digits to a large common offset.
        self.gram = (thread_invariant_gram(centred) if n_land <= GRAM_LIMIT
                     else np.empty((0, 0)))
        # The axes' small eigenproblem on one BLAS thread: the same axes on any
        # thread count, and no threads spinning on a busy machine (a small eigh
        # on two loaded cores took many times its time on one: CHANGELOG.md).
        with blas_limit(1):
            self.axes = _search_axes(centred)
        self.projects = self.axes is not None
        p = n_features if self.axes is None else self.axes.shape[0] + 1
        self.bound = _float32_rank_bound(p)
        # Rounding of the float64 coordinates, relative to |x - mu|^2: the
        # product with P (gamma_D per coordinate, sqrt(p) of them), P's departure
        # from orthonormal rows, and the centring.
        gamma = (n_features + 8) * 2.0 ** -53
        defect = 0.0 if self.axes is None else float(
            np.abs(self.axes @ self.axes.T - np.eye(p - 1)).sum())
        self.rel_eps = 8.0 * (np.sqrt(p) * gamma + defect + 2.0 ** -52)
        self.r_slack = self.r_max = 0.0
        # One BLAS thread: the same coordinates, and so the same bounds, on any
        # thread count.
        with blas_limit(1):
            s, self.s_sq, self.eps, r, r_slack = self._coordinates(centred)
        if self.axes is not None:
            # What the landmarks' residual norms add to every pair's slack.
            self.r_max, self.r_slack = float(r.max()), float(r_slack.max())
        self.s32 = s.astype(np.float32)
        s_norm = np.sqrt(self.s_sq)
        self.usable = bool(np.all(np.isfinite(s_norm)) and np.all(s_norm < self.bound[3]))

    def _coordinates(self, Xc):
        """(y, |y|^2, eps, r, r_slack) of the centred float64 rows Xc, before the
        landmarks' share of the residual slack."""
        x_sq = np.einsum("ij,ij->i", Xc, Xc)
        eps = self.rel_eps * x_sq
        if self.axes is None:
            return Xc, x_sq, eps, None, None
        Y = np.empty((len(Xc), self.axes.shape[0] + 1))
        np.matmul(Xc, self.axes.T, out=Y[:, :-1])
        y_sq = np.einsum("ij,ij->i", Y[:, :-1], Y[:, :-1])
        r_sq = np.maximum(x_sq - y_sq, 0.0)
        # r is known to lie within sqrt(r_sq -+ eps): its value, the midpoint,
        # is within r_slack of the true one.
        lo, hi = np.sqrt(np.maximum(r_sq - eps, 0.0)), np.sqrt(r_sq + eps)
        r, r_slack = 0.5 * (lo + hi), 0.5 * (hi - lo)
        Y[:, -1] = r
        return Y, y_sq + r * r, eps, r, r_slack

    def coordinates(self, Xc):
        """(y, |y|^2, eps) of the float64 rows Xc, less the centre: their search
        coordinates and the slack of their lower bounds against any landmark.

        The residual coordinates r_x, r_t are within slacks d_x, d_t of the true
        ones, which moves (r_x - r_t)^2 by at most (d_x + d_t) (2 (r_x + r_t) +
        d_x + d_t); with the landmarks' largest r and d that goes into each row's
        eps.
        """
        Y, y_sq, eps, r, r_slack = self._coordinates(Xc)
        if r is not None:
            d = r_slack + self.r_slack
            eps = eps + d * (2.0 * (r + self.r_max) + d)
        return Y, y_sq, eps

    def search_coordinates(self, X):
        """Every row's search coordinates (float32) and their squared norms, a block
        of rows at a time: the cells graph's (:func:`~.cell_graph.cell_graph`)
        float32 bounds against one another."""
        n = X.shape[0]
        Y = np.empty((n, self.s32.shape[1]), dtype=np.float32)
        y_sq = np.empty(n)

        def batch(start):
            rows = slice(start, min(n, start + COORDINATE_ROWS))
            Yb, y_sq[rows], _, _, _ = self._coordinates(X[rows].astype(np.float64) - self.centre)
            Y[rows] = Yb

        # Fixed batches, each product on one BLAS thread, the batches on the
        # compiled loops' threads: the same coordinates on any thread count (a
        # threaded product may round differently), and no core idle while NumPy
        # converts a batch.
        with blas_limit(1):
            run_parts(batch, range(0, n, COORDINATE_ROWS), loop_threads())
        return Y, y_sq


#: Rows whose search coordinates one thread computes at a time.
COORDINATE_ROWS = 8192


#: Rows of the landmarks' Gram matrix that one BLAS thread computes at a time.
GRAM_BLOCK_ROWS = 256


def thread_invariant_gram(A: np.ndarray) -> NDArray[np.float64]:
    """A A^T with the same bits on any number of threads.

    A threaded BLAS product may split the work, and so round, differently for
    another thread count (OpenBLAS did for 150 landmarks of 200 features).
    Here fixed blocks of :data:`GRAM_BLOCK_ROWS` rows are each one product on
    one BLAS thread, the blocks on the compiled loops' threads.
    """
    n = A.shape[0]
    G = np.empty((n, n))

    def block(start):
        rows = slice(start, min(n, start + GRAM_BLOCK_ROWS))
        np.matmul(A[rows], A.T, out=G[rows])

    with blas_limit(1):
        run_parts(block, range(0, n, GRAM_BLOCK_ROWS), loop_threads())
    return G


def _search_axes(centred):
    """The fewest principal axes of the centred landmarks (rows of an orthonormal
    matrix) that hold :data:`SEARCH_VARIANCE` of their variance, at most
    :data:`MAX_SEARCH_AXES`; None when that is more than half the features."""
    n_land, n_features = centred.shape
    if n_features < MIN_AXES_FEATURES:
        return None
    if n_features <= n_land:
        variances, vectors = np.linalg.eigh(centred.T @ centred)
        vectors = vectors[:, ::-1].T
    else:
        variances, left = np.linalg.eigh(centred @ centred.T)
        vectors = (centred.T @ left[:, ::-1]).T
    variances = np.maximum(variances[::-1], 0.0)
    held = np.cumsum(variances) / max(variances.sum(), np.finfo(float).tiny)
    p = int(np.searchsorted(held, SEARCH_VARIANCE)) + 1
    if p > min(MAX_SEARCH_AXES, n_features // 2):
        return None
    # Orthonormal to rounding (QR), whatever eigh's accuracy on close variances.
    q, _ = np.linalg.qr(vectors[:p].T)
    return np.ascontiguousarray(q.T)


def _float32_rank_bound(n_features):
    """(coef, slack, floor, limit) of the float32 scan's error bound.

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
    or Zarr chunk may be large), so memory stays bounded. Each pass finds its
    rows' landmarks by the KD-tree (:func:`_tree_weights`, few features), the
    float32 scan (:func:`_bounded_weights`) or, for the rows these leave and for
    sparse blocks, the float64 product over every landmark (:func:`_gram_weights`).

    The first pass runs alone, its compiled loops on every thread: a scan that
    proves fewer than all but one in :data:`RANK32_GIVE_UP` of its rows leaves the
    rest of the block to the float64 path. The other passes run at once, one per
    thread, each preparing its rows (NumPy) and running its compiled loops on its
    own thread, so that no thread waits while another prepares
    (docs/results/lll.md, "Passes at once").
    Every BLAS product runs on one thread, as OpenBLAS may round a product
    differently on another thread count; with passes of fixed rows, each row's
    result is the same on any number of threads.
    """
    n, k = block.shape[0], local.k
    indices = np.empty((n, k), dtype=np.int64)
    weights = np.empty((n, k), dtype=np.float64)
    if n == 0:
        return indices, weights
    dense = not sparse.issparse(block)
    if local.tree is not None and dense:
        search = _tree_weights
    elif local.axes is not None and dense:
        search = _bounded_weights
    else:
        search = None  # the float64 path for every row

    def one_pass(start):
        rows = slice(start, min(n, start + local.chunk_rows))
        if search is None:
            _gram_weights(block[rows], local, indices[rows], weights[rows])
            return 0
        left = search(block[rows], local, indices[rows], weights[rows])
        _redo_with_gram(block, rows.start + left, local, indices, weights)
        return left.size

    with blas_limit(1):
        unproved = one_pass(0)
        if search is _bounded_weights and unproved * RANK32_GIVE_UP > min(n, local.chunk_rows):
            search = None  # the float64 redo would cost more than the scan saves
        run_parts(one_pass, range(local.chunk_rows, n, local.chunk_rows), loop_threads())
    return indices, weights


def _redo_with_gram(block, sub, local, indices, weights):
    """Fill the rows ``sub`` of ``indices`` and ``weights`` by :func:`_gram_weights`."""
    if sub.size == 0:
        return
    idx, w = indices[sub], weights[sub]
    _gram_weights(block[sub], local, idx, w)
    indices[sub], weights[sub] = idx, w


def _tree_weights(X, local, idx, weights):
    """Fill ``idx`` and ``weights`` for the dense rows X of few features from the
    landmarks' KD-tree; returns the positions of the rows left for the float64
    path (``idx`` and ``weights`` unset there).

    The tree's distances are float64 sums over the differences, as the scan's
    are. A row whose K_Z-th and next distances tie (the float64 path then takes
    the lower index), or with a distance that is not finite, is left over. The
    local Gram matrices come from the differences y - t_a themselves, so they
    lose no digits to a large common offset; a row whose compiled Cholesky
    fails gets LAPACK's pivoted solver.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    n, k = X.shape[0], local.k
    asked = k + 1 if k < local.landmarks.shape[0] else k
    dist, near = local.tree.query(X, k=asked, workers=loop_threads())
    dist, near = dist.reshape(n, asked), near.reshape(n, asked).astype(np.int64)
    left = ~np.all(np.isfinite(dist), axis=1)
    if asked > k:
        left |= dist[:, k - 1] == dist[:, k]
    dist, near = dist[:, :k], np.ascontiguousarray(near[:, :k])
    # Nearest first, ties to the lower index, as in the other paths (only the
    # rows with a tie need the sort).
    tied = np.flatnonzero(np.any(dist[:, 1:] == dist[:, :-1], axis=1))
    near[tied] = np.take_along_axis(near[tied], np.lexsort((near[tied], dist[tied]), axis=1),
                                    axis=1)
    near[left] = 0  # a valid index for the compiled loop; the row is redone
    idx[:] = near
    if local.reg >= CHOLESKY_MIN_REG:
        failed = K.given_landmark_weights(X, local.landmarks, idx, local.reg, weights,
                                          loop_threads())
    else:
        failed = np.ones(n, dtype=bool)
    # A small ridge, or G + r I not numerically positive definite: LAPACK's
    # pivoted solver, on the same differences.
    sub = np.flatnonzero(failed & ~left)
    if sub.size:
        diff = X[sub, None, :] - local.landmarks[idx[sub]]
        weights[sub] = local_affine_weights(diff @ diff.transpose(0, 2, 1), local.reg)
    return np.flatnonzero(left)


def _gram_weights(X, local, idx, weights):
    """Fill ``idx`` and ``weights`` for the rows X (dense or CSR) from every
    landmark's distance (the Gram trick on one float64 product)."""
    X = X.astype(np.float64)
    x_sq = np.ascontiguousarray(row_norms(X, squared=True))
    cross = np.ascontiguousarray(X @ local.landmarks.T)
    # One BLAS product per pass for every landmark distance, then one compiled
    # pass on all threads for the nearest landmarks and the local solves.
    failed = K.nearest_gram_weights(cross, x_sq, local.t_sq, local.gram, local.landmarks,
                                    local.reg, local.reg >= CHOLESKY_MIN_REG, idx, weights,
                                    loop_threads())
    if not failed.any():
        return
    sub = np.flatnonzero(failed)
    c = np.take_along_axis(cross[sub], idx[sub], axis=1)
    weights[sub] = _pivoted_weights(x_sq[sub], c, local.gram, local.landmarks, idx[sub],
                                    local.reg)


def _pivoted_weights(x_sq, c, gram, landmarks, idx, reg):
    """Weights by LAPACK's pivoted solver, for the rows whose compiled Cholesky
    failed (a small ridge, or G + r I not numerically positive definite through
    rounding in the Gram trick): ``c`` the rows' cross products with their
    landmarks ``idx``, ``gram`` the landmarks' Gram matrix (or no rows: then
    their products from ``landmarks``)."""
    if gram.shape[0] == 0:  # the products of the rows' own landmarks only
        T = landmarks[idx]
        tt = np.einsum("nad,nbd->nab", T, T)
        return local_affine_weights(
            x_sq[:, None, None] - c[:, :, None] - c[:, None, :] + tt, reg)
    return local_affine_weights(_local_gram(x_sq, c, gram, idx), reg)


#: Exact distances a point may add to its candidates when its bound proves too
#: little, as a share of the landmarks: beyond it the float64 product over every
#: landmark (:func:`_gram_weights`, BLAS's faster arithmetic) costs less.
MAX_EXTRA_SHARE = 0.5


def _bounded_weights(X, local, idx, weights):
    """Fill ``idx`` and ``weights`` for the dense rows X from the float32 scan of
    lower bounds (:class:`_LandmarkAxes`, :func:`~._loops.bounded_candidate_weights`);
    returns the positions of the rows left unproved (``idx`` and ``weights``
    unset there) for the float64 path.

    The choice is the float64 one (the K_Z smallest float64 distances, ties to
    the lower index, up to rounding: the compiled loop's distances come from the
    differences, the float64 path's from BLAS's products). The local Gram
    matrices come from the rows less the landmarks' mean: the weights then
    differ from :func:`_gram_weights`' by rounding near the origin, and are more
    accurate far from it (where the float64 path's Gram trick cancels).
    """
    axes = local.axes
    X = np.ascontiguousarray(X)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    Xc = X.astype(np.float64) - axes.centre
    Y, y_sq, eps = axes.coordinates(Xc)
    n, k = X.shape[0], local.k
    n_land = local.landmarks.shape[0]
    cz, x_sq = np.empty((n, k)), np.empty(n)
    status = np.empty(n, dtype=np.int8)
    K.bounded_candidate_weights(
        (X, Xc, Y.astype(np.float32), y_sq, eps),
        (local.landmarks_exact, axes.centred, axes.s32, axes.s_sq, axes.eps, axes.gram),
        K.BoundedSearch(reg=local.reg, solve=local.reg >= CHOLESKY_MIN_REG,
                        n_cand=local.n_cand, bound=axes.bound,
                        max_extra=max(1, int(MAX_EXTRA_SHARE * n_land))),
        (idx, weights, cz, x_sq), status, loop_threads())
    left = np.flatnonzero(status == 2)
    if left.size:
        weights[left] = _pivoted_weights(x_sq[left], cz[left], axes.gram, axes.centred,
                                         idx[left], local.reg)
    return np.flatnonzero(status == 1)


def _nearest_landmarks(cross, x_sq, t_sq, k):
    """The k nearest landmarks of each point, nearest first, ties to the lower index.

    Ranks by |y|^2 - 2 y.t + |t|^2 rounded exactly as the compiled loop does.
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
    ensures). Returns dense arrays when L <= :data:`DENSE_LIMIT` (a compiled
    pass over the points that reads only W's upper triangle; two sparse products
    when nnz(W) K_Z is at most :data:`REDUCED_SPARSE_MAX_WORK`), sparse CSR
    matrices above, built a group of rows at a time (:func:`_sparse_reduced`),
    so that memory stays within scikit-learn's ``working_memory`` beyond their
    nonzeros.

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
    regular = bool(np.all(np.diff(Z.indptr) == k)) and k > 0
    if n_land > DENSE_LIMIT and regular:
        return _sparse_reduced(W, deg, Z.indices.reshape(-1, k), Z.data.reshape(-1, k),
                               n_land)
    if n_land <= DENSE_LIMIT and W.nnz * k > REDUCED_SPARSE_MAX_WORK and regular:
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


def _sparse_reduced(W, deg, z_idx, z_w, n_land):
    """A~ and B~ as CSR matrices, a group of rows at a time.

    Each group's rows of B~ and C~ = Z^T W Z are summed densely by the compiled
    pass (:func:`~._loops.reduced_rows`, every point in its order, so any
    grouping gives the same bits) and only their nonzero entries kept. Groups
    are sized so that the dense rows of the groups running at once (one per
    thread) fit in scikit-learn's ``working_memory``.
    """
    threads = loop_threads()
    rows = max(1, min(n_land, working_memory_bytes() // (2 * 8 * n_land * threads)))
    groups = [(lo, min(n_land, lo + rows)) for lo in range(0, n_land, rows)]
    parts = [None] * len(groups)

    def run(g):
        lo, hi = groups[g]
        B = np.zeros((hi - lo, n_land))
        C = np.zeros((hi - lo, n_land))
        K.reduced_rows(W.indptr, W.indices, W.data, deg, z_idx, z_w, lo, hi, B, C)
        parts[g] = (sparse.csr_matrix(B), sparse.csr_matrix(B - C))

    run_parts(run, range(len(groups)), threads)
    B = sparse.vstack([p[0] for p in parts], format="csr")
    A = sparse.vstack([p[1] for p in parts], format="csr")
    return (0.5 * (A + A.T)).tocsr(), (0.5 * (B + B.T)).tocsr()


#: Iterations and tolerance (on the relative residual) of LOBPCG on a sparse
#: reduced problem, and the guard columns beyond the wanted eigenvectors.
LOBPCG_MAX_ITER = 2000
LOBPCG_TOL = 1e-9
LOBPCG_GUARDS = 2


def solve_reduced_problem(A: np.ndarray | SparseMatrix, B: np.ndarray | SparseMatrix,
                          n_components: int, *, random_state: RandomStateLike = None,
                          ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Trailing generalised eigenvectors of A x = lambda B x, trivial one dropped.

    Dense LAPACK for arrays; for sparse matrices (more than :data:`DENSE_LIMIT`
    landmarks) LOBPCG with the trivial eigenvector, the constant (A~ 1 = 0: the
    rows of Z sum to one), kept out as a constraint and A~'s diagonal as
    preconditioner (much quicker than shift-invert ARPACK on thousands of
    landmarks: CHANGELOG.md), to relative residuals of
    :data:`LOBPCG_TOL`; shift-invert ARPACK when LOBPCG does not get there.

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
        solved = _lobpcg_reduced(A, B, n_components, rng)
        if solved is not None:
            return solved
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


def _lobpcg_reduced(A, B, n_components, rng):
    """(vectors, eigenvalues) of the sparse reduced problem by LOBPCG, B-orthonormal
    and in increasing order, or None when the residuals stay above tolerance."""
    size = A.shape[0]
    m = min(n_components + LOBPCG_GUARDS, size - 1)
    X0 = rng.standard_normal((size, m))
    diag = A.diagonal()
    M = sparse.diags(1.0 / np.where(diag > 0, diag, 1.0))
    ones = np.ones((size, 1))
    with warnings.catch_warnings(record=True) as caught:
        # LOBPCG says in a warning when it stops short of its tolerance; that
        # verdict is read below, and the caller then solves with ARPACK.
        warnings.simplefilter("always")
        vals, vecs = lobpcg(A, X0, B=B, M=M, Y=ones, largest=False, tol=LOBPCG_TOL * np.sqrt(
            np.abs(diag).mean()), maxiter=LOBPCG_MAX_ITER)
    if any("tolerance" in str(w.message) for w in caught):
        return None
    order = np.argsort(vals)[:n_components]
    vals, vecs = vals[order], vecs[:, order]
    if not np.all(np.isfinite(vals)) or not np.all(np.isfinite(vecs)):
        return None
    # A second guard, on the scale-free residual: LOBPCG's tolerance is absolute
    # (LOBPCG_TOL times the root mean diagonal of A~), which for a badly scaled
    # problem may mean little. At its verdict the relative residual was 1.5e-8 (300)
    # to 1.5e-7 (2,000 landmarks) on Swiss rolls; an answer whose relative residual is
    # above 1e-6 goes to ARPACK.
    Av, Bv = A @ vecs, B @ vecs
    residual = np.linalg.norm(Av - Bv * vals, axis=0) / np.maximum(
        np.linalg.norm(Av, axis=0) + np.abs(vals) * np.linalg.norm(Bv, axis=0), 1e-300)
    if not np.all(residual <= 1e3 * LOBPCG_TOL):
        return None
    return vecs, vals
