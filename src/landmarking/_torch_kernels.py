"""Gaussian kernel passes on a torch device, block by block.

The torch counterparts of :func:`landmarking.kernels.squared_distances` and
:func:`landmarking.kernels.gaussian_features`, with the same formula and the same
precision rule (float32 stays float32), so that the torch path on the CPU gives
the CPU path's values to rounding. Blocks travel to the device, are computed
there in one matrix product, and come back as NumPy arrays; the passes go through
:func:`landmarking._blocks.map_row_blocks`, so every kind of input works and the
block size follows scikit-learn's ``working_memory`` like the CPU path.
"""

import numpy as np
from scipy import sparse

from ._blocks import map_row_blocks, rows_per_block
from ._torch import device_memory, to_tensor
from .kernels import _features_inputs

__all__ = ["squared_distances_torch", "gaussian_features_torch", "features_block_torch"]

#: What to lower when a block of landmark features does not fit on the device.
BLOCK_SIZE_FIX = ("the block size: the rows per block follow scikit-learn's working "
                  "memory, e.g. `with sklearn.config_context(working_memory=256):`")


def squared_distances_torch(X, T, *, X_sq_norms=None):
    """||x - t||^2 for rows of X (tensor, n x d) and T (tensor, m x d), clipped at 0.

    ||x||^2 - 2 x.t + ||t||^2 in X's dtype, as
    :func:`landmarking.kernels.squared_distances` computes it.
    """
    if X_sq_norms is None:
        X_sq_norms = (X * X).sum(dim=1)
    d2 = X @ T.T
    d2 *= -2
    d2 += X_sq_norms[:, None]
    d2 += (T * T).sum(dim=1)[None, :]
    return d2.clamp_min_(0)


def features_block_torch(block, T, width, device):
    """Landmark features of one row block (NumPy or CSR) computed on ``device``.

    A module-level function of the block and explicit arguments, so that
    :func:`landmarking._blocks.map_row_blocks` (and Dask) can call it per block.
    A CSR block is densified on the host first; the result is a NumPy array of
    the block's dtype.
    """
    if sparse.issparse(block):
        block = block.toarray()
    with device_memory(device, lower=BLOCK_SIZE_FIX):
        Xb = to_tensor(block, device)
        Tb = to_tensor(np.asarray(T, dtype=block.dtype), device)
        d2 = squared_distances_torch(Xb, Tb)
        d2 *= -1.0 / width
        return d2.exp_().cpu().numpy()


def gaussian_features_torch(X, T, width, device, *, chunk_size=None, out=None):
    """Landmark features exp(-||x - t_k||^2 / width) computed on a torch device.

    Same arguments and returns as :func:`landmarking.kernels.gaussian_features`,
    plus ``device`` (a ``torch.device``); the features equal the CPU path's to
    rounding. Each block of ``chunk_size`` rows (default: what fits in
    scikit-learn's ``working_memory``) is sent to the device, computed there in
    one matrix product, and copied back into the NumPy result.

    Raises
    ------
    MemoryError
        When the host result would not fit, or a block does not fit on the device
        (naming the block size to lower).
    """
    X, T, dtype = _features_inputs(X, T, out)
    if chunk_size is None:
        chunk_size = rows_per_block(8 * (X.shape[1] + T.shape[0]))
    return map_row_blocks(features_block_torch, X, T, width, device, n_out=T.shape[0],
                          dtype=dtype, block_rows=chunk_size, out=out)
