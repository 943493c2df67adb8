"""Local tangent space alignment (Zhang & Zha 2004): Manifold Sculpting's "ltsa" start.

LTSA fits a t-dimensional tangent space to every point's neighbourhood and finds the
global coordinates whose neighbourhoods those tangent spaces describe best: the
eigenvectors of the alignment matrix

    M = sum_i S_i (I - G_i G_i^T) S_i^T,   G_i = [1 / sqrt(k), U_i]   (k x (t + 1)),

for its eigenvalues 2 to t + 1 (the first is 0, for the constant vector), where
S_i selects point i's k neighbours and U_i holds the top t left singular vectors of
their centred coordinates. This is scikit-learn's ``LocallyLinearEmbedding(
method="ltsa")`` (the same neighbourhoods, without the point itself, and the same
M), written for a neighbour list that is already known: the local bases in
batches of points instead of one point at a time, M assembled as a sparse matrix,
and, above :data:`DENSE_MAX` points, its eigenvectors by shift-invert Lanczos
(ARPACK on a sparse LU of M) instead of a dense eigensolver, which costs O(n^3).
On one core the dense solver and Lanczos tie at about 500 points, and Lanczos
pulls ahead as n grows (the timings: CHANGELOG.md, "Measurements retired from source comments").
"""

import numpy as np
from scipy import sparse
from scipy.linalg import eigh
from sklearn.utils import gen_batches

from .._blocks import rows_per_block
from .._parallel import blas_limit
from .._typing import NDArray

__all__ = ["ltsa_embedding", "alignment_matrix", "DENSE_MAX"]

#: Up to this many points the eigenvectors come from the dense eigensolver
#: (scikit-learn's ``eigen_solver="dense"``), above it from shift-invert Lanczos.
DENSE_MAX = 500


def local_bases(X: NDArray[np.float64], nbr: NDArray[np.int64], t: int) -> NDArray[np.float64]:
    """U_i for every point: the top t left singular vectors of its neighbours'
    centred coordinates, shape (n, k, t)."""
    n, k = nbr.shape
    U = np.empty((n, k, t))
    for rows in gen_batches(n, rows_per_block(8 * k * (2 * X.shape[1] + k))):
        local = X[nbr[rows]]
        local -= local.mean(axis=1, keepdims=True)
        U[rows] = np.linalg.svd(local, full_matrices=False)[0][:, :, :t]
    return U


def alignment_matrix(X: NDArray[np.float64], nbr: NDArray[np.int64], t: int) -> sparse.csr_array:
    """LTSA's alignment matrix M (n x n, sparse CSR) of the neighbourhoods ``nbr``."""
    n, k = nbr.shape
    G = np.concatenate([np.full((n, k, 1), 1.0 / np.sqrt(k)), local_bases(X, nbr, t)], axis=2)
    W = np.eye(k) - G @ G.transpose(0, 2, 1)  # (n, k, k): I - G_i G_i^T
    rows = np.broadcast_to(nbr[:, :, None], W.shape)
    cols = np.broadcast_to(nbr[:, None, :], W.shape)
    return sparse.csr_array((W.ravel(), (rows.ravel(), cols.ravel())), shape=(n, n))


def ltsa_embedding(X: NDArray[np.float64], nbr: NDArray[np.int64], t: int,
                   random_state: np.random.RandomState) -> NDArray[np.float64]:
    """LTSA's t-dimensional embedding of the rows of X with neighbour lists ``nbr``
    (n, k), the point itself not among its neighbours.

    ``random_state`` (a NumPy RandomState) starts Lanczos above
    :data:`DENSE_MAX` points. The linear algebra runs with BLAS on one thread, so
    the embedding does not depend on BLAS's thread count (and a shared machine's
    busy cores do not stall the dense eigensolver).
    """
    n = X.shape[0]
    with blas_limit(1):
        M = alignment_matrix(X, nbr, t)
        if n <= DENSE_MAX:
            _, vectors = eigh(M.toarray(), subset_by_index=(1, t), overwrite_a=True)
            return vectors
        return _bottom_eigenvectors(M, t, random_state)


def _bottom_eigenvectors(M, t, random_state):
    """Eigenvectors 2 to t + 1 of the positive semi-definite M, by shift-invert
    Lanczos around a shift just below 0 (M itself is singular: M 1 = 0)."""
    from scipy.sparse.linalg import eigsh  # ARPACK: loaded only for large inputs

    n = M.shape[0]
    # SuperLU, under the shift-invert, takes 32-bit indices only (scipy < 1.12
    # refuses others): the same matrix in that layout.
    M = sparse.csc_matrix(M)
    M.indices, M.indptr = M.indices.astype(np.intc), M.indptr.astype(np.intc)
    shift = -1e-10 * M.diagonal().mean()
    v0 = random_state.uniform(-1.0, 1.0, n)
    values, vectors = eigsh(M, k=t + 1, sigma=shift, which="LM", v0=v0, tol=0.0)
    vectors = vectors[:, np.argsort(values)[1:]]
    # An eigenvector's sign is arbitrary (Lanczos takes it from v0): each one's
    # largest entry positive, so that the start does not depend on random_state.
    largest = np.abs(vectors).argmax(axis=0)
    return vectors * np.sign(vectors[largest, np.arange(t)])
