"""GP active learning landmarks (Liang & Paisley 2015, eq. 3; the paper's "Act5K"):
greedy pivoted Cholesky of the Gaussian kernel on a random subsample."""

from __future__ import annotations

from typing import Literal

from .._typing import RandomStateLike
from ._common import DEFAULT_KERNEL_WIDTH, CholeskyLandmarks

__all__ = ["ActiveLearningLandmarks"]


class ActiveLearningLandmarks(CholeskyLandmarks):
    """GP active learning (Liang & Paisley 2015, eq. 3) as greedy pivoted Cholesky.

    Each new landmark is the data point of largest GP posterior variance
    Sigma(x) = k(x, x) - k(x, D_n) K_n^-1 k(x, D_n)^T under the Gaussian kernel
    k(x, x') = exp(-||x - x'||^2 / kernel_width_), given the landmarks chosen so
    far. That is exactly greedy (largest residual diagonal) pivoted Cholesky, which
    keeps the posterior variances of all points up to date in O(k n) per step:
    O(k^2 n) in all, never the full kernel matrix. As in the paper's "Act5K",
    the points are a random subsample of ``subsample`` rows.

    The list is sequential: landmark k does not depend on how many come after it.
    The first pivot (every variance equals 1) is the first point of the subsample.

    Parameters
    ----------
    n_landmarks : int, default=10
    subsample : int or None, default=5000
        Number of rows drawn at random to choose from; None uses every row.
    kernel_width : float, "auto" or "variance", default="auto"
        Kernel width, resolved from all of X as in ``GPLandmarks``.
    random_state : int, RandomState instance or None, default=None
        Seeds the subsample and the "auto" width.
    n_jobs : int or None, default=None
        BLAS threads for the kernel rows (None: all cores unless capped, -1 all
        cores); the landmarks do not depend on it.
    verbose : bool, default=False
        Progress bar over landmarks.

    Attributes
    ----------
    landmarks_ : ndarray of shape (n_landmarks, n_features)
    indices_ : ndarray of shape (n_landmarks,)
        Row indices in X of the landmarks, in order of selection.
    objective_ : ndarray of shape (n_landmarks,)
        Posterior variance of each landmark when chosen (eq. 3); nonincreasing.
    residual_ : ndarray of shape (n_landmarks + 1,)
        Mean posterior variance over the subsample before and after each landmark.
    subsample_indices_ : ndarray
        Rows of X that were candidates.
    kernel_width_ : float
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from landmarking import ActiveLearningLandmarks
    >>> X = np.random.RandomState(0).normal(size=(200, 2))
    >>> model = ActiveLearningLandmarks(n_landmarks=4, subsample=None).fit(X)
    >>> bool(np.all(np.diff(model.objective_) <= 1e-12))
    True
    """

    _rule = "greedy"

    def __init__(self, *, n_landmarks: int = 10, subsample: int | None = 5000,
                 kernel_width: float | Literal["auto", "variance"] = DEFAULT_KERNEL_WIDTH,
                 random_state: RandomStateLike = None, n_jobs: int | None = None,
                 verbose: bool = False) -> None:
        self.n_landmarks = n_landmarks
        self.subsample = subsample
        self.kernel_width = kernel_width
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
