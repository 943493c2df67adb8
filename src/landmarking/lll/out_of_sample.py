"""The LLL map of new points, x_0 = X~ z_0 (NumPy path).

A new point is reconstructed from its K_Z nearest landmarks with the weights of
:func:`~landmarking.lll._cpu.reconstruction_weights`, and the same weights
combine the landmarks' embedding X~. Everything it needs fits in an ``.npz``
file: the landmarks, their embedding, K_Z and the ridge. The torch path's map
is :func:`landmarking.lll._torch.lll_out_of_sample`.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from .._blocks import check_rows, map_row_blocks, working_dtype
from .._typing import ArrayLike, MatrixLike
from .._validation import as_real_array
from ._cpu import _LARGEST_COORDINATE, _LocalMap, _weights_of_block

__all__ = ["lll_out_of_sample", "lll_map_rows", "check_landmark_embedding"]


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
        Points per pass, as in :func:`~landmarking.lll._cpu.reconstruction_weights`.

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
    return lll_map_rows(Y_new, landmarks, landmark_embedding, n_landmark_neighbors,
                              reg, chunk_size)


def lll_map_rows(Y_new: MatrixLike, landmarks: ArrayLike, landmark_embedding: ArrayLike,
                 n_landmark_neighbors: int, reg: float, chunk_size: int = 2048) -> np.ndarray:
    """:func:`lll_out_of_sample` of rows already validated (``_blocks.check_rows``)."""
    landmarks, landmark_embedding = check_landmark_embedding(landmarks, landmark_embedding)
    return _map_rows(Y_new, landmarks, landmark_embedding, n_landmark_neighbors, reg,
                     chunk_size)


def _map_rows(Y_new, landmarks, landmark_embedding, n_landmark_neighbors, reg,
              chunk_size=2048):
    """:func:`lll_map_rows` of arrays its caller has checked or made: validated rows,
    float64 landmarks and their embedding with one row per landmark (LLL's fit
    places its unused landmarks with it)."""
    local = _LocalMap(landmarks, n_landmark_neighbors, reg, Y_new.shape[1], chunk_size)
    return map_row_blocks(_embed_block, Y_new, local, landmark_embedding,
                          n_out=landmark_embedding.shape[1], dtype=working_dtype(Y_new),
                          block_rows=local.chunk_rows)


def _embed_block(block, local, landmark_embedding):
    """x_0 = X~ z_0 for every row of a block."""
    values = block.data if sparse.issparse(block) else block
    largest = float(np.max(np.abs(values))) if values.size else 0.0
    if not largest < _LARGEST_COORDINATE:
        raise ValueError(
            f"X holds values up to {largest:.3g}, so large that "
            "their squared distances to the landmarks overflow float64; divide the data "
            "(and fit on data divided) by a scale such as its largest absolute value.")
    idx, w = _weights_of_block(block, local)
    return np.einsum("nk,nkd->nd", w, landmark_embedding[idx])


def check_landmark_embedding(landmarks: ArrayLike, landmark_embedding: ArrayLike,
                             ) -> tuple[np.ndarray, np.ndarray]:
    """(landmarks, landmark_embedding as float64) after checking one row per landmark;
    shared by the NumPy and the torch maps."""
    landmark_embedding = as_real_array(landmark_embedding, "landmark_embedding", finite=True)
    landmarks = as_real_array(landmarks, "landmarks", finite=True)
    if landmarks.ndim != 2:
        raise ValueError(f"landmarks must be a 2-D array (n_landmarks, n_features), got "
                         f"shape {landmarks.shape}.")
    if landmark_embedding.ndim != 2 or landmark_embedding.shape[0] != landmarks.shape[0]:
        raise ValueError(
            f"landmark_embedding {landmark_embedding.shape} needs one row per landmark "
            f"({landmarks.shape[0]})."
        )
    return landmarks, landmark_embedding
