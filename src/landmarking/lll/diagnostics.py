"""Can a Locally Linear Landmarks fit tell that its landmarks represent the data poorly?

LLL assumes that every point is an affine combination of its K_Z nearest
landmarks, Y ~ Z T (Z the N x L weights, T the landmarks), and carries that
combination over to the embedding, X = Z X~. How far the data are from that
assumption is measured where it is made, in the input space:

    ||Y - Z T||_F / ||Y - mean(Y)||_F,

the relative error of reconstructing the points from their landmarks (0: exact,
1: no better than the mean). It costs one sparse product of N K_Z D flops,
made one block of rows at a time. Above :data:`RECONSTRUCTION_WARN` the landmark
span misses most of what distinguishes the points, and the embedding cannot
separate what the landmarks do not.

The measure is a floor test, not a quality score: a low value does not prove a
good embedding (in three dimensions any four landmarks reconstruct a point
exactly, even across the layers of a Swiss roll; compare with exact eigenmaps
through :func:`landmarking.metrics.span_error` for that). The threshold is set
so that data of high intrinsic dimension with enough landmarks do not trip it:
10,000 MNIST digits give 0.74 with 100 landmarks, 0.57 with 1,000 and 0.46 with
3,000 (K_Z = 5); scikit-learn's 8x8 digits give 0.66-0.88 with 10-20 landmarks
(Procrustes error against exact eigenmaps 0.68-0.91; the worst three warn) and
0.37-0.48 with 300 (0.14-0.24).
"""

from __future__ import annotations

import inspect
import os
import warnings

import numpy as np
from scipy import sparse

from .._blocks import row_blocks
from .._typing import ArrayLike, MatrixLike, SparseMatrix
from ._loops import reconstruction_residuals

__all__ = ["LandmarkSpanWarning", "landmark_reconstruction_error",
           "warn_if_landmarks_represent_poorly", "RECONSTRUCTION_WARN"]

#: Relative reconstruction error above which a fit warns.
RECONSTRUCTION_WARN = 0.75


class LandmarkSpanWarning(UserWarning):
    """The landmarks of a Locally Linear Landmarks fit reconstruct the data poorly."""


def landmark_reconstruction_error(X: MatrixLike, weights: SparseMatrix,
                                  landmarks: ArrayLike) -> float:
    """||X - weights @ landmarks||_F / ||X - mean(X)||_F, one block of rows at a time.

    Parameters
    ----------
    X : array or sparse matrix of shape (n_samples, n_features)
        The points (any kind :func:`landmarking._blocks.check_rows` accepts).
    weights : sparse matrix of shape (n_samples, n_landmarks)
        Z transposed (``LocallyLinearLandmarks.weights_``).
    landmarks : ndarray of shape (n_landmarks, n_features)

    Returns
    -------
    float
        0 when every point is an affine combination of its landmarks; NaN when X
        is constant.

    Examples
    --------
    >>> from landmarking.lll._cpu import reconstruction_weights
    >>> X = np.random.default_rng(0).normal(size=(50, 2))
    >>> T = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    >>> round(landmark_reconstruction_error(X, reconstruction_weights(X, T, 3, reg=0), T), 6)
    0.0
    """
    weights = sparse.csr_matrix(weights)
    landmarks = np.asarray(landmarks, dtype=np.float64)
    residual = total = 0.0
    column_sums = np.zeros(landmarks.shape[1])
    n = 0
    for rows, block in row_blocks(X):
        block = block.toarray() if sparse.issparse(block) else np.asarray(block)
        if block.dtype not in (np.float32, np.float64):
            block = block.astype(np.float64)
        block = np.ascontiguousarray(block)
        # Compiled, one pass on all threads (on 30,000 MNIST digits the NumPy
        # X - Z T took as long as computing Z).
        z = weights[rows]
        residual += float(np.sum(reconstruction_residuals(
            block, landmarks, z.indptr, z.indices, z.data)))
        total += float(np.einsum("ij,ij->", block, block, dtype=np.float64))
        column_sums += block.sum(axis=0, dtype=np.float64)
        n += block.shape[0]
    # ||Y - mean||^2 = ||Y||^2 - N ||mean||^2; never below 0 through rounding.
    spread = max(total - float(column_sums @ column_sums) / max(n, 1), 0.0)
    if spread <= 1e-300:
        return float("nan")
    return float(np.sqrt(residual / spread))


def warn_if_landmarks_represent_poorly(error: float, n_landmarks: int,
                                       n_landmark_neighbors: int, *,
                                       stacklevel: int | None = None) -> str | None:
    """Issue a :class:`LandmarkSpanWarning` when ``error`` exceeds the threshold,
    pointing at ``stacklevel`` (None: the first caller outside the package)."""
    if not error > RECONSTRUCTION_WARN:  # NaN (constant data) does not warn
        return None
    message = (
        f"the landmarks reconstruct the data only to a relative error of {error:.3g} "
        f"(reconstruction_error_ = ||X - Z T|| / ||X - mean||; above "
        f"{RECONSTRUCTION_WARN:g} the landmark span misses most of what distinguishes the "
        f"points, and the embedding cannot separate what it misses). Use more landmarks "
        f"than n_landmarks={n_landmarks} or more landmark neighbours than "
        f"n_landmark_neighbors={n_landmark_neighbors}, or check that the data lie near "
        "a low-dimensional manifold."
    )
    if stacklevel is None:
        stacklevel = _stacklevel_outside_package()
    warnings.warn(message, LandmarkSpanWarning, stacklevel=stacklevel)
    return message


def _stacklevel_outside_package() -> int:
    """The ``stacklevel`` at which a warning issued by this function's caller names
    the first frame outside ``landmarking``: the user's line, whether it called
    :func:`~landmarking.locally_linear_landmarks` or the estimator's ``fit``, which
    calls it (as pandas's ``find_stack_level``)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame, level = inspect.currentframe().f_back, 1  # the caller is stacklevel 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level
