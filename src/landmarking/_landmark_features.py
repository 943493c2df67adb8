"""What every landmark estimator shares: landmark features, on the host or a device.

A landmark estimator learns ``landmarks_`` (n_landmarks x n_features, in order of
selection) and a kernel width ``kernel_width_``; ``transform`` maps data to the
landmark features exp(-||x - t_k||^2 / kernel_width_).

:func:`landmark_features` is the one binding of the features to a device: it
returns the NumPy functions (:mod:`landmarking.kernels`) or their torch
counterparts (:mod:`landmarking._torch_kernels`), with the same signatures, so
that ``transform`` and the command line's ``features`` never branch on the device.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np
from sklearn.base import TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ._blocks import check_rows
from ._torch import check_device
from ._torch_kernels import features_block_torch, gaussian_features_torch
from ._typing import ArrayLike, DeviceLike, MatrixLike
from .kernels import gaussian_features

__all__ = ["LandmarkTransformerMixin", "landmark_features", "FeatureFunctions"]


class FeatureFunctions(NamedTuple):
    """The landmark features on one device.

    ``features(X, T, width, **options)`` is :func:`landmarking.kernels.gaussian_features`
    (or its torch counterpart): every row of X, in blocks. ``block(block, T, width)``
    computes one row block (a module-level function or a partial of one, so that
    :func:`landmarking._blocks.map_row_blocks` and Dask can call it per block).
    """

    features: object
    block: object


def landmark_features(device: DeviceLike = "cpu") -> FeatureFunctions:
    """The landmark-feature functions for ``device`` (resolved by
    :func:`landmarking._torch.check_device`: "cpu", "cuda", "cuda:N", "auto" or a
    torch.device). A torch device gives results equal to the CPU path's to rounding.
    """
    resolved = check_device(device)
    if resolved is None:
        return FeatureFunctions(gaussian_features, gaussian_features)
    return FeatureFunctions(partial(gaussian_features_torch, device=resolved),
                            partial(features_block_torch, device=resolved))


class LandmarkTransformerMixin(TransformerMixin):
    """``transform`` and feature names for estimators with ``landmarks_``."""

    def transform(self, X: MatrixLike) -> np.ndarray:
        """Landmark features exp(-||x - t_k||^2 / kernel_width_).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            A NumPy array, a scipy sparse matrix, a memory map, a Zarr array or a
            Dask array, read one block at a time.

        Returns
        -------
        ndarray of shape (n_samples, n_landmarks)
            float32 for float32 input, else float64; a lazy Dask array for Dask
            input (``est.transform(big).to_zarr(path)`` streams).

        Notes
        -----
        An estimator with a ``device`` parameter other than "cpu" computes the
        features on that device (resolved again here, so ``set_params(device=
        "cpu")`` moves a model fitted on a GPU to a machine without one), in blocks
        of as many rows as scikit-learn's ``working_memory`` allows; the result is
        a NumPy array equal to the CPU path's to rounding.
        """
        check_is_fitted(self, "landmarks_")
        features = landmark_features(getattr(self, "device", "cpu")).features
        X = check_rows(X, estimator=self, reset=False)
        return features(X, self.landmarks_, self.kernel_width_)

    def get_feature_names_out(self, input_features: ArrayLike | None = None) -> np.ndarray:
        """Names ``landmark0``, ``landmark1``, ... of the output columns."""
        check_is_fitted(self, "landmarks_")
        return np.asarray([f"landmark{k}" for k in range(len(self.landmarks_))], dtype=object)

    @property
    def n_landmarks_(self):
        """Number of landmarks learned so far."""
        check_is_fitted(self, "landmarks_")
        return len(self.landmarks_)

