"""The Nystroem out-of-sample map of Laplacian eigenmaps on landmarks.

Used by ``LocallyLinearLandmarks(method="le-nystrom")`` (the LLL paper's
LE(Nys.) baseline) and by :meth:`LaplacianEigenmaps.transform`.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from .._blocks import check_rows, map_row_blocks, working_dtype
from .._typing import ArrayLike, MatrixLike
from ..neighbors import NeighborIndex

__all__ = ["nystrom_out_of_sample"]


def nystrom_out_of_sample(Y_new: MatrixLike, landmarks: MatrixLike,
                          landmark_embedding: ArrayLike, eigenvalues: ArrayLike,
                          n_neighbors: int, bandwidth: float, *,
                          index: NeighborIndex | None = None) -> np.ndarray:
    """The Nystroem formula for Laplacian eigenmaps on landmarks (LE(Nys.)).

    From D~^-1 W~ x~ = (1 - lambda) x~ on the landmarks, a point y goes to
    x(y) = sum_j w(y, t_j) x~_j / ((1 - lambda) sum_j w(y, t_j)), with the
    Gaussian w over its ``n_neighbors`` nearest landmarks. Row by row, one block
    at a time, like :func:`~landmarking.lll.out_of_sample.lll_out_of_sample`.

    Parameters
    ----------
    Y_new : array-like or CSR matrix of shape (n_new, n_features)
        NumPy array, CSR matrix, memory map, Zarr or Dask array.
    landmarks : ndarray or CSR matrix of shape (n_landmarks, n_features)
    landmark_embedding : ndarray of shape (n_landmarks, n_components)
    eigenvalues : ndarray of shape (n_components,)
        The lambda of each column of ``landmark_embedding``.
    n_neighbors : int
        Landmarks per point (at most all of them).
    bandwidth : float
        Gaussian width sigma.
    index : NeighborIndex, optional
        An exact index already fitted on ``landmarks`` in float64 (a fitted
        estimator keeps one, :class:`~landmarking.neighbors.LazyNeighborIndex`);
        by default one is built for this call, once for all blocks.

    Returns
    -------
    ndarray of shape (n_new, n_components)
        float32 for float32 input, else float64; lazy for Dask input.

    Examples
    --------
    >>> T = np.array([[0.0], [1.0], [2.0]])
    >>> nystrom_out_of_sample(np.array([[1.0]]), T, np.array([[-1.0], [0.0], [1.0]]),
    ...                       np.array([0.5]), 3, 1.0).round(6)
    array([[0.]])
    """
    Y_new = check_rows(Y_new)
    landmark_embedding = np.asarray(landmark_embedding, dtype=np.float64)
    eigenvalues = np.asarray(eigenvalues, dtype=np.float64)
    if index is None:
        # Sparse reference points (LaplacianEigenmaps fitted on CSR) stay sparse: the
        # neighbour search takes them as they are.
        landmarks = (landmarks.astype(np.float64) if sparse.issparse(landmarks)
                     else np.asarray(landmarks, dtype=np.float64))
        index = NeighborIndex(method="exact").fit(landmarks)
    elif index.n_reference_ != landmarks.shape[0]:
        raise ValueError(
            f"index holds {index.n_reference_} points but there are {landmarks.shape[0]} "
            "landmarks; pass the index fitted on these landmarks, or none."
        )
    k = min(n_neighbors, landmarks.shape[0])
    return map_row_blocks(_nystrom_block, Y_new, index, landmark_embedding, eigenvalues,
                          k, float(bandwidth), n_out=landmark_embedding.shape[1],
                          dtype=working_dtype(Y_new))


def _nystrom_block(block, index, landmark_embedding, eigenvalues, k, bandwidth):
    dist, idx = index.query(block.astype(np.float64), k)
    # Subtracting the smallest distance avoids underflow; it cancels in the ratio.
    d2 = dist.astype(np.float64) ** 2
    w = np.exp(-(d2 - d2[:, :1]) / (2.0 * bandwidth ** 2))
    w /= w.sum(axis=1, keepdims=True)
    mapped = np.einsum("nk,nkd->nd", w, landmark_embedding[idx])
    return mapped / (1.0 - eigenvalues)[None, :]
