"""Gaussian kernel features between data and landmarks, computed chunk by chunk.

phi_x(t) = exp(-||t - x||^2 / eta), with ``eta`` the kernel width (units of squared
distance). Passes over all N rows go in chunks, so memory stays bounded and float32
input stays float32.
"""

import numpy as np

from ._memory import check_memory

__all__ = ["squared_distances", "gaussian_features", "row_chunks", "resolve_kernel_width",
           "variance_kernel_width", "local_kernel_width", "KERNEL_WIDTH_RULES"]


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
    check_memory(X.dtype.itemsize * len(T) * (len(X) + 2 * min(chunk_size, len(X))),
                 what=f"the landmark features of {len(X)} rows x {len(T)} landmarks",
                 way_out="transform the rows in smaller blocks, or pass float32 data")
    out = np.empty((X.shape[0], T.shape[0]), dtype=X.dtype)
    for rows in row_chunks(X.shape[0], chunk_size):
        d2 = squared_distances(X[rows], T)
        d2 *= -1.0 / width
        np.exp(d2, out=out[rows])
    return out


#: Accepted string values of the ``kernel_width`` parameter.
KERNEL_WIDTH_RULES = ("auto", "variance")

# "auto": squared distance to the AUTO_NEIGHBOR-th nearest neighbour, median over a
# subsample of at most AUTO_SUBSAMPLE points (both fixed, so that the width never
# depends on how many landmarks are asked for).
AUTO_SUBSAMPLE = 2000
AUTO_NEIGHBOR = 20


def variance_kernel_width(X):
    """The paper's heuristic: eta = sum of the per-dimension variances of X."""
    if hasattr(X, "tocsr"):
        mean = np.asarray(X.mean(axis=0)).ravel()
        sq_mean = np.asarray(X.multiply(X).mean(axis=0)).ravel()
        return float(np.sum(sq_mean - mean**2))
    return float(np.sum(np.var(X, axis=0, dtype=np.float64)))


def local_kernel_width(X, *, random_state=None):
    """A kernel width from the data's local scale ("auto").

    eta = median over a subsample (at most :data:`AUTO_SUBSAMPLE` rows) of the
    squared distance from each row to its :data:`AUTO_NEIGHBOR`-th nearest neighbour
    in the subsample. It follows the spacing of points along the manifold, not the
    spread of the whole cloud, so on low-dimensional manifolds (two concentric
    circles, a Swiss roll) the kernel sees one sheet at a time. Scaling X by c
    scales eta by c^2; shifting X leaves it unchanged.
    """
    from sklearn.utils import check_random_state

    rng = check_random_state(random_state)
    n = X.shape[0]
    rows = np.sort(rng.choice(n, AUTO_SUBSAMPLE, replace=False)) if n > AUTO_SUBSAMPLE else np.arange(n)
    sample = X[rows]
    sample = sample.toarray() if hasattr(sample, "toarray") else np.asarray(sample, dtype=np.float64)
    k = min(AUTO_NEIGHBOR, len(rows) - 1)
    d2 = squared_distances(sample, sample)
    np.fill_diagonal(d2, np.inf)
    kth = np.partition(d2, k - 1, axis=1)[:, k - 1]
    width = float(np.median(kth))
    if not width > 0:
        # Heavily duplicated data: fall back to the global scale.
        width = variance_kernel_width(X)
    return width


def resolve_kernel_width(X, kernel_width, *, random_state=None):
    """Turn the ``kernel_width`` parameter into a positive float.

    Parameters
    ----------
    X : array of shape (n_samples, n_features), validated data
    kernel_width : float, "auto" or "variance"
    random_state : seed for the "auto" subsample

    Returns
    -------
    float
    """
    if isinstance(kernel_width, str):
        if kernel_width not in KERNEL_WIDTH_RULES:
            raise ValueError(
                f"kernel_width must be a positive number, 'auto' or 'variance'; got {kernel_width!r}."
            )
        width = (variance_kernel_width(X) if kernel_width == "variance"
                 else local_kernel_width(X, random_state=random_state))
        if not width > 0:
            raise ValueError(
                "X has zero variance (all rows identical), so no kernel width can be "
                "derived from it; pass a positive kernel_width."
            )
        return width
    if isinstance(kernel_width, bool) or not isinstance(kernel_width, (int, float, np.number)):
        raise TypeError(
            f"kernel_width must be a positive number, 'auto' or 'variance'; got {kernel_width!r}."
        )
    if not np.isfinite(kernel_width) or kernel_width <= 0:
        raise ValueError(
            f"kernel_width must be > 0, got {kernel_width!r}; pass a positive width "
            "(squared data units) or 'auto'."
        )
    return float(kernel_width)
