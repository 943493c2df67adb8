"""Random landmarks: data points drawn uniformly at random (the paper's "Rand")."""

from __future__ import annotations

from typing import Any, Literal, Self

from sklearn.utils import check_random_state

from .._typing import MatrixLike, RandomStateLike
from ..kernels import resolve_kernel_width
from ._common import DEFAULT_KERNEL_WIDTH, DataPointLandmarks, check_fit_input

__all__ = ["RandomLandmarks"]


class RandomLandmarks(DataPointLandmarks):
    """Landmarks drawn uniformly at random, without replacement, from the data.

    The draw is a random permutation of the rows cut after ``n_landmarks``, so the
    list is sequential: with the same ``random_state``, the first k landmarks do
    not depend on how many are asked for.

    Parameters
    ----------
    n_landmarks : int, default=10
        Number of landmarks.
    kernel_width : float, "auto" or "variance", default="auto"
        Width eta of the Gaussian features exp(-||x - t||^2 / eta), resolved as in
        ``GPLandmarks`` (see :func:`landmarking.kernels.resolve_kernel_width`).
    random_state : int, RandomState instance or None, default=None
        Seeds the draw and the "auto" width's subsample.

    Attributes
    ----------
    landmarks_ : ndarray of shape (n_landmarks, n_features)
        The chosen rows of X, in order of selection.
    indices_ : ndarray of shape (n_landmarks,)
        Their row indices in X.
    kernel_width_ : float
        The resolved kernel width.
    n_features_in_ : int
        Number of features seen in ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> from landmarking import RandomLandmarks
    >>> X = np.random.RandomState(0).normal(size=(100, 3))
    >>> model = RandomLandmarks(n_landmarks=5, random_state=0).fit(X)
    >>> model.transform(X).shape
    (100, 5)
    """

    def __init__(self, *, n_landmarks: int = 10,
                 kernel_width: float | Literal["auto", "variance"] = DEFAULT_KERNEL_WIDTH,
                 random_state: RandomStateLike = None) -> None:
        self.n_landmarks = n_landmarks
        self.kernel_width = kernel_width
        self.random_state = random_state

    def fit(self, X: MatrixLike, y: Any = None) -> Self:
        """Draw the landmarks.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        X, params = check_fit_input(self, X)
        rng = check_random_state(self.random_state)
        self.kernel_width_ = resolve_kernel_width(X, self.kernel_width, random_state=rng)
        return self._finish(X, rng.permutation(X.shape[0])[:params["n_landmarks"]])
