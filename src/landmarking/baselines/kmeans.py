"""k-means landmarks: k-means++ seeding, then Lloyd's centroids (scikit-learn)."""

from __future__ import annotations

from typing import Any, Literal, Self

from sklearn.base import BaseEstimator
from sklearn.cluster import KMeans
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from .._blocks import to_memory
from .._landmark_features import LandmarkTransformerMixin
from .._parallel import NJobs, resolve_n_jobs, thread_limits
from .._typing import MatrixLike, RandomStateLike
from .._validation import Integer
from ..kernels import resolve_kernel_width
from ._common import DEFAULT_KERNEL_WIDTH, check_fit_input

__all__ = ["KMeansLandmarks"]


class KMeansLandmarks(LandmarkTransformerMixin, BaseEstimator):
    """k-means centroids as landmarks (k-means++ seeding, then Lloyd; scikit-learn).

    The centroids keep the order of their k-means++ seeds (scikit-learn's
    ``cluster_centers_`` order). Unlike the greedy methods the list is not
    sequential: asking for more clusters moves every centroid.

    Parameters
    ----------
    n_landmarks : int, default=10
        Number of clusters.
    kernel_width : float, "auto" or "variance", default="auto"
    n_init : int, default=1
        k-means++ restarts (the best inertia wins).
    max_iter : int, default=300
        Lloyd iterations per run.
    random_state : int, RandomState instance or None, default=None
    n_jobs : int or None, default=None
        OpenMP and BLAS threads of k-means (None: all cores unless capped, -1 all
        cores); the centroids depend on it only to round-off (scikit-learn adds
        per-thread partial sums).

    Attributes
    ----------
    landmarks_ : ndarray of shape (n_landmarks, n_features)
    inertia_ : float
        Sum of squared distances of the points to their centroid.
    n_iter_ : int
    kernel_width_ : float
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from landmarking import KMeansLandmarks
    >>> X = np.random.RandomState(0).normal(size=(100, 3))
    >>> KMeansLandmarks(n_landmarks=4, random_state=0).fit(X).landmarks_.shape
    (4, 3)
    """

    _parameter_rules = {"n_landmarks": Integer(), "n_init": Integer(), "n_jobs": NJobs(),
                        "max_iter": Integer()}

    def __init__(self, *, n_landmarks: int = 10,
                 kernel_width: float | Literal["auto", "variance"] = DEFAULT_KERNEL_WIDTH,
                 n_init: int = 1, max_iter: int = 300, random_state: RandomStateLike = None,
                 n_jobs: int | None = None) -> None:
        self.n_landmarks = n_landmarks
        self.kernel_width = kernel_width
        self.n_init = n_init
        self.max_iter = max_iter
        self.random_state = random_state
        self.n_jobs = n_jobs

    def fit(self, X: MatrixLike, y: Any = None) -> Self:
        """Run k-means.

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
        X = to_memory(
            X, what="KMeansLandmarks.fit (Lloyd's k-means visits every row each iteration)",
            alternative="fit on a random sample of rows, or use RandomLandmarks or "
                        "GPLandmarks, which read X one block at a time.")
        n_threads = resolve_n_jobs(self.n_jobs)
        with thread_limits(self.n_jobs), threadpool_limits(limits=n_threads,
                                                           user_api="openmp"):
            kmeans = KMeans(n_clusters=params["n_landmarks"], init="k-means++",
                            n_init=params["n_init"], max_iter=params["max_iter"],
                            random_state=rng).fit(X)
        self.landmarks_ = kmeans.cluster_centers_
        self.inertia_ = float(kmeans.inertia_)
        self.n_iter_ = int(kmeans.n_iter_)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
