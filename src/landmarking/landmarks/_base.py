"""What every landmark estimator shares: landmark features and their checks.

A landmark estimator learns ``landmarks_`` (n_landmarks x n_features, in order of
selection) and a kernel width ``kernel_width_``; ``transform`` maps data to the
landmark features exp(-||x - t_k||^2 / kernel_width_).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._blocks import check_rows
from .._typing import ArrayLike, MatrixLike
from ..kernels import gaussian_features

__all__ = ["LandmarkTransformerMixin"]


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
        """
        check_is_fitted(self, "landmarks_")
        X = check_rows(X, estimator=self, reset=False)
        return gaussian_features(X, self.landmarks_, self.kernel_width_)

    def get_feature_names_out(self, input_features: ArrayLike | None = None) -> np.ndarray:
        """Names ``landmark0``, ``landmark1``, ... of the output columns."""
        check_is_fitted(self, "landmarks_")
        return np.asarray([f"landmark{k}" for k in range(len(self.landmarks_))], dtype=object)

    @property
    def n_landmarks_(self):
        """Number of landmarks learned so far."""
        check_is_fitted(self, "landmarks_")
        return len(self.landmarks_)

