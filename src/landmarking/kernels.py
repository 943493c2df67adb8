"""Gaussian kernel features between data and landmarks, computed chunk by chunk.

phi_x(t) = exp(-||t - x||^2 / eta), with ``eta`` the kernel width (units of squared
distance). Passes over all N rows go in chunks, so memory stays bounded and float32
input stays float32.
"""

import numpy as np

__all__ = ["squared_distances", "gaussian_features", "row_chunks"]


def row_chunks(n_rows, chunk_size):
    """Yield ``slice`` objects that cover ``range(n_rows)`` in chunks."""
    for start in range(0, n_rows, chunk_size):
        yield slice(start, min(start + chunk_size, n_rows))


def squared_distances(X, T, *, X_sq_norms=None):
    """Exact squared Euclidean distances between rows of X and rows of T.

    Uses ||x||^2 - 2 x.t + ||t||^2 (one matrix product) and clips the rounding
    error below zero. Valid in every space: the shortcut 2 - 2 x.t is used
    nowhere, since it holds only on the unit sphere.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    T : ndarray of shape (m, d)
    X_sq_norms : ndarray of shape (n,), optional
        Precomputed ||x||^2, reused between calls.

    Returns
    -------
    ndarray of shape (n, m), dtype of X
    """
    if X_sq_norms is None:
        X_sq_norms = np.einsum("ij,ij->i", X, X)
    T = np.asarray(T, dtype=X.dtype)
    d2 = X @ T.T
    d2 *= -2
    d2 += X_sq_norms[:, None]
    d2 += np.einsum("ij,ij->i", T, T)[None, :]
    np.maximum(d2, 0, out=d2)
    return d2


def gaussian_features(X, T, width, *, chunk_size=4096):
    """Landmark features exp(-||x - t_k||^2 / width) for every row x of X.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    T : ndarray of shape (n_landmarks, n_features)
    width : float
        Kernel width eta > 0, in squared data units.
    chunk_size : int
        Rows per chunk; bounds memory at ``chunk_size * n_landmarks``.

    Returns
    -------
    ndarray of shape (n_samples, n_landmarks), dtype of X (float32 or float64)

    Examples
    --------
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0]])
    >>> gaussian_features(X, X[:1], 1.0).round(4)
    array([[1.    ],
           [0.3679]])
    """
    X = np.asarray(X)
    out = np.empty((X.shape[0], T.shape[0]), dtype=X.dtype)
    for rows in row_chunks(X.shape[0], chunk_size):
        d2 = squared_distances(X[rows], T)
        d2 *= -1.0 / width
        np.exp(d2, out=out[rows])
    return out
