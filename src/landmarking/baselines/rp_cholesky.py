"""Randomly pivoted Cholesky landmarks (Chen, Epperly, Tropp & Webber 2023)."""

from __future__ import annotations

from typing import Literal

from .._typing import RandomStateLike
from ._common import DEFAULT_KERNEL_WIDTH, CholeskyLandmarks

__all__ = ["RPCholeskyLandmarks"]


class RPCholeskyLandmarks(CholeskyLandmarks):
    """Randomly pivoted Cholesky (Chen, Epperly, Tropp & Webber 2023).

    Like :class:`ActiveLearningLandmarks`, but each pivot is drawn with probability
    proportional to the current posterior variances instead of taking the
    largest: it spreads landmarks by density as well as by novelty and is robust
    to outliers, which greedy selection over-picks. Cost O(k^2 n); the kernel
    matrix is never formed, so by default every point is a candidate.

    Parameters
    ----------
    n_landmarks : int, default=10
    subsample : int or None, default=None
        Number of rows drawn at random to choose from; None uses every row.
    kernel_width : float, "auto" or "variance", default="auto"
    random_state : int, RandomState instance or None, default=None
        Seeds the pivots, the subsample and the "auto" width.
    n_jobs : int or None, default=None
        BLAS threads for the kernel rows; the landmarks do not depend on it.
    verbose : bool, default=False

    Attributes
    ----------
    landmarks_ : ndarray of shape (n_landmarks, n_features)
    indices_ : ndarray of shape (n_landmarks,)
    objective_ : ndarray of shape (n_landmarks,)
        Posterior variance of each landmark when drawn.
    residual_ : ndarray of shape (n_landmarks + 1,)
        Mean residual variance trace(K - L L^T) / n before and after each pivot;
        nonincreasing.
    subsample_indices_ : ndarray
    kernel_width_ : float
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from landmarking import RPCholeskyLandmarks
    >>> X = np.random.RandomState(0).normal(size=(200, 2))
    >>> model = RPCholeskyLandmarks(n_landmarks=5, random_state=0).fit(X)
    >>> model.landmarks_.shape
    (5, 2)
    """

    _rule = "random"

    def __init__(self, *, n_landmarks: int = 10, subsample: int | None = None,
                 kernel_width: float | Literal["auto", "variance"] = DEFAULT_KERNEL_WIDTH,
                 random_state: RandomStateLike = None, n_jobs: int | None = None,
                 verbose: bool = False) -> None:
        self.n_landmarks = n_landmarks
        self.subsample = subsample
        self.kernel_width = kernel_width
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
