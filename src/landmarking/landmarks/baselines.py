"""Baseline landmark methods behind the ``GPLandmarks`` interface.

Every estimator here learns ``landmarks_`` (n_landmarks x n_features, in the order
the method gives) and, except :class:`NMFLandmarks`, a kernel width
``kernel_width_`` resolved from ``kernel_width`` exactly as ``GPLandmarks`` does,
so that ``transform`` yields the same Gaussian landmark features
exp(-||x - t_k||^2 / kernel_width_) and methods compare like for like.

- :class:`RandomLandmarks`: random data points (the paper's "Rand").
- :class:`ActiveLearningLandmarks`: GP active learning, eq. 3 of Liang & Paisley
  (2015), as greedy pivoted Cholesky on a random subsample (the paper's "Act5K").
- :class:`RPCholeskyLandmarks`: randomly pivoted Cholesky (not in the paper; a
  strong modern choice of Nystroem centres).
- :class:`KMeansLandmarks`: k-means++ then Lloyd centroids (scikit-learn).
- :class:`NMFLandmarks`: NMF components under the Kullback-Leibler loss, with the
  factorisation weights as features (scikit-learn).

Every ``fit`` and ``transform`` accepts NumPy arrays, scipy CSR matrices, memory
maps, Zarr and Dask arrays (landmarks are always dense). Random landmarks and
the features read the data one block at a time; the pivoted-Cholesky methods
hold their candidate rows in memory (all rows when ``subsample=None``), and
k-means and NMF hold all rows: those refuse a larger-than-memory input with a
``MemoryError`` that names the alternative.
"""

from __future__ import annotations

from typing import Any, Literal, Self

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.cluster import KMeans
from sklearn.decomposition import NMF
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import threadpool_limits

from .._blocks import (
    check_rows,
    map_row_blocks,
    reduce_row_blocks,
    take_rows,
    to_memory,
    working_dtype,
)
from .._landmark_features import LandmarkTransformerMixin
from .._memory import check_memory
from .._parallel import check_n_jobs, resolve_n_jobs, thread_limits
from .._typing import ArrayLike, MatrixLike, RandomStateLike
from .._validation import check_enough_samples, check_positive_int
from ..cholesky import pivoted_cholesky
from ..kernels import resolve_kernel_width

__all__ = ["RandomLandmarks", "ActiveLearningLandmarks", "RPCholeskyLandmarks",
           "KMeansLandmarks", "NMFLandmarks", "kl_nmf_weights"]

# Default of every Gaussian-feature baseline; the same as GPLandmarks' default so
# that features of different methods use the same kernel.
_DEFAULT_KERNEL_WIDTH: Literal["auto"] = "auto"


class _DataPointLandmarks(LandmarkTransformerMixin, BaseEstimator):
    """Shared fit for methods whose landmarks are data points chosen in order."""

    def _validate(self, X):
        n_landmarks = check_positive_int(self.n_landmarks, "n_landmarks")
        X = check_rows(X, estimator=self, min_samples=2)
        check_enough_samples(X.shape[0], n_landmarks, f"n_landmarks={n_landmarks}")
        return X, n_landmarks

    def _finish(self, X, indices, objective=None):
        self.indices_ = np.asarray(indices, dtype=np.intp)
        landmarks = take_rows(X, self.indices_)
        # Landmarks are dense even when X is sparse.
        self.landmarks_ = landmarks.toarray() if sparse.issparse(landmarks) else landmarks
        if objective is not None:
            self.objective_ = np.asarray(objective, dtype=np.float64)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


class RandomLandmarks(_DataPointLandmarks):
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
                 kernel_width: float | Literal["auto", "variance"] = _DEFAULT_KERNEL_WIDTH,
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
        X, n_landmarks = self._validate(X)
        rng = check_random_state(self.random_state)
        self.kernel_width_ = resolve_kernel_width(X, self.kernel_width, random_state=rng)
        return self._finish(X, rng.permutation(X.shape[0])[:n_landmarks])


class _CholeskyLandmarks(_DataPointLandmarks):
    """Pivoted Cholesky of the Gaussian kernel on (a subsample of) the data."""

    _rule = None

    def fit(self, X: MatrixLike, y: Any = None) -> Self:
        """Select the landmarks one pivot at a time.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        X, n_landmarks = self._validate(X)
        check_n_jobs(self.n_jobs)
        rng = check_random_state(self.random_state)
        n = X.shape[0]
        subsample = None
        if self.subsample is not None:
            subsample = check_positive_int(self.subsample, "subsample")
            if subsample < n_landmarks:
                raise ValueError(
                    f"subsample={subsample} is smaller than n_landmarks={n_landmarks}; "
                    "pass a larger subsample, or subsample=None to use every point."
                )
        # The width comes from all of X, like GPLandmarks', so that features of
        # both methods use the same kernel.
        self.kernel_width_ = resolve_kernel_width(X, self.kernel_width, random_state=rng)
        if subsample is not None and subsample < n:
            pool = np.sort(rng.choice(n, subsample, replace=False))
            candidates = take_rows(X, pool)
        else:
            pool = np.arange(n)
            candidates = to_memory(
                X, what=f"{type(self).__name__}.fit with subsample=None (every row is "
                        "a candidate pivot)",
                alternative="pass subsample=M to choose among M random rows.")
        check_memory(8 * len(pool) * (n_landmarks + X.shape[1] + 4),
                     what=f"the kernel factor of {len(pool)} points x {n_landmarks} landmarks",
                     way_out="pass a smaller subsample")
        with thread_limits(self.n_jobs):
            pivots, variance, trace, _ = pivoted_cholesky(
                candidates, n_landmarks, self.kernel_width_, rule=self._rule,
                random_state=rng, verbose=self.verbose)
        self.subsample_indices_ = pool
        # Normalised by the pool size: the mean posterior variance left over.
        self.residual_ = trace / len(pool)
        return self._finish(X, pool[pivots], objective=variance)


class ActiveLearningLandmarks(_CholeskyLandmarks):
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
        BLAS threads for the kernel rows (scikit-learn's meaning: None is 1, -1 all
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
                 kernel_width: float | Literal["auto", "variance"] = _DEFAULT_KERNEL_WIDTH,
                 random_state: RandomStateLike = None, n_jobs: int | None = None,
                 verbose: bool = False) -> None:
        self.n_landmarks = n_landmarks
        self.subsample = subsample
        self.kernel_width = kernel_width
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose


class RPCholeskyLandmarks(_CholeskyLandmarks):
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
                 kernel_width: float | Literal["auto", "variance"] = _DEFAULT_KERNEL_WIDTH,
                 random_state: RandomStateLike = None, n_jobs: int | None = None,
                 verbose: bool = False) -> None:
        self.n_landmarks = n_landmarks
        self.subsample = subsample
        self.kernel_width = kernel_width
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose


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
        OpenMP and BLAS threads of k-means (scikit-learn's meaning: None is 1, -1 all
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

    def __init__(self, *, n_landmarks: int = 10,
                 kernel_width: float | Literal["auto", "variance"] = _DEFAULT_KERNEL_WIDTH,
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
        n_landmarks = check_positive_int(self.n_landmarks, "n_landmarks")
        n_init = check_positive_int(self.n_init, "n_init")
        check_n_jobs(self.n_jobs)
        max_iter = check_positive_int(self.max_iter, "max_iter")
        X = check_rows(X, estimator=self, min_samples=2)
        check_enough_samples(X.shape[0], n_landmarks, f"n_landmarks={n_landmarks}")
        rng = check_random_state(self.random_state)
        self.kernel_width_ = resolve_kernel_width(X, self.kernel_width, random_state=rng)
        X = to_memory(
            X, what="KMeansLandmarks.fit (Lloyd's k-means visits every row each iteration)",
            alternative="fit on a random sample of rows, or use RandomLandmarks or "
                        "GPLandmarks, which read X one block at a time.")
        n_threads = resolve_n_jobs(self.n_jobs)
        with thread_limits(self.n_jobs), threadpool_limits(limits=n_threads,
                                                           user_api="openmp"):
            kmeans = KMeans(n_clusters=n_landmarks, init="k-means++", n_init=n_init,
                            max_iter=max_iter, random_state=rng).fit(X)
        self.landmarks_ = kmeans.cluster_centers_
        self.inertia_ = float(kmeans.inertia_)
        self.n_iter_ = int(kmeans.n_iter_)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


class NMFLandmarks(TransformerMixin, BaseEstimator):
    """NMF components (Kullback-Leibler loss) as landmarks, weights as features.

    Factorises X ~ W H with W, H >= 0 (scikit-learn's multiplicative-update
    solver, ``beta_loss="kullback-leibler"``), as the paper's music-tagging
    baseline. The rows of H are the landmarks; ``transform`` returns the weights W
    of new data, not Gaussian features, solved row by row with H fixed (see
    :func:`kl_nmf_weights`), so a row's features never depend on the other rows
    of the batch. NMF gives no order, so the components are
    sorted by the share of the data's total mass each one reconstructs
    (sum_i W_ik * sum_j H_kj), largest first.

    Parameters
    ----------
    n_landmarks : int, default=10
        Number of components.
    max_iter : int, default=500
    tol : float, default=1e-4
    init : {"auto", "nndsvda", "random"}, default="auto"
        Initialisation of the factors; "auto" is "nndsvda" when n_landmarks <=
        min(n_samples, n_features), else "random".
    random_state : int, RandomState instance or None, default=None

    Attributes
    ----------
    landmarks_ : ndarray of shape (n_landmarks, n_features)
        Components, largest share first.
    order_ : ndarray of shape (n_landmarks,)
        Position of each landmark among scikit-learn's components.
    mass_share_ : ndarray of shape (n_landmarks,)
        Share of the reconstructed mass per landmark (sums to 1).
    reconstruction_err_ : float
        Kullback-Leibler divergence of the fit (scikit-learn's value).
    init_ : str
        The initialisation used.
    nmf_ : sklearn.decomposition.NMF
    n_iter_ : int
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from landmarking import NMFLandmarks
    >>> X = np.random.RandomState(0).poisson(3.0, size=(50, 6)).astype(float)
    >>> model = NMFLandmarks(n_landmarks=2, random_state=0).fit(X)
    >>> model.transform(X).shape
    (50, 2)
    """

    def __init__(self, *, n_landmarks: int = 10, max_iter: int = 500, tol: float = 1e-4,
                 init: Literal["auto", "nndsvda", "random"] = "auto",
                 random_state: RandomStateLike = None) -> None:
        self.n_landmarks = n_landmarks
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.random_state = random_state

    def _check_nonnegative(self, X):
        minimum = min(reduce_row_blocks(_block_minimum, X))
        if minimum < 0:
            raise ValueError(
                f"Negative values in data passed to NMFLandmarks (minimum "
                f"{minimum:.3g}): NMF needs nonnegative data; use counts or "
                "histograms, or pick a Gaussian-feature method (e.g. KMeansLandmarks) "
                "for signed data."
            )

    def fit(self, X: MatrixLike, y: Any = None) -> Self:
        """Factorise X.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), >= 0
        y : ignored

        Returns
        -------
        self
        """
        n_landmarks = check_positive_int(self.n_landmarks, "n_landmarks")
        max_iter = check_positive_int(self.max_iter, "max_iter")
        if self.init not in ("auto", "nndsvda", "random"):
            raise ValueError(f"init must be 'auto', 'nndsvda' or 'random', got {self.init!r}.")
        X = check_rows(X, estimator=self, accept_sparse=("csr", "csc"), min_samples=2)
        self._check_nonnegative(X)
        X = to_memory(X, what="NMFLandmarks.fit (the multiplicative updates visit every "
                              "row each iteration)",
                      alternative="fit on a random sample of rows; transform then works "
                                  "one block at a time.")
        self.init_ = self.init
        if self.init == "auto":
            # NNDSVD needs a rank-n_landmarks SVD, so at most min(n, d) components.
            self.init_ = "nndsvda" if n_landmarks <= min(X.shape) else "random"
        nmf = NMF(n_components=n_landmarks, init=self.init_, solver="mu",
                  beta_loss="kullback-leibler", max_iter=max_iter, tol=self.tol,
                  random_state=self.random_state)
        weights = nmf.fit_transform(X)
        mass = weights.sum(axis=0) * nmf.components_.sum(axis=1)
        total = mass.sum()
        share = mass / total if total > 0 else np.full(n_landmarks, 1.0 / n_landmarks)
        self.order_ = np.argsort(-share, kind="stable")
        self.mass_share_ = share[self.order_]
        self.landmarks_ = nmf.components_[self.order_]
        self.reconstruction_err_ = float(nmf.reconstruction_err_)
        self.n_iter_ = int(nmf.n_iter_)
        self.nmf_ = nmf
        return self

    def transform(self, X: MatrixLike) -> np.ndarray:
        """NMF weights of X on the landmarks (columns in landmark order).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), >= 0

        Returns
        -------
        ndarray of shape (n_samples, n_landmarks)
            float32 for float32 input, else float64; lazy for Dask input.
        """
        check_is_fitted(self, "landmarks_")
        X = check_rows(X, estimator=self, reset=False, accept_sparse=("csr", "csc"))
        self._check_nonnegative(X)
        return kl_nmf_weights(X, self.landmarks_, max_iter=self.max_iter, tol=self.tol)

    def get_feature_names_out(self, input_features: ArrayLike | None = None) -> np.ndarray:
        """Names ``nmf0``, ``nmf1``, ... of the output columns."""
        check_is_fitted(self, "landmarks_")
        return np.asarray([f"nmf{k}" for k in range(len(self.landmarks_))], dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


def _block_minimum(block):
    """Smallest value of a block (a sparse block's implicit zeros count)."""
    return float(block.min()) if block.shape[0] * block.shape[1] else 0.0


def kl_nmf_weights(X: MatrixLike, components: ArrayLike, *, max_iter: int = 500,
                   tol: float = 1e-4, chunk_size: int = 2048) -> np.ndarray:
    """Nonnegative weights W minimising KL(X || W H) with the components H fixed.

    Multiplicative updates W <- W * ((X / WH) H^T) / (H 1), row by row: each row
    starts from its own scale (row sum / total component mass) and stops when its
    relative change falls below ``tol``, so its result never depends on the other
    rows. Rows are processed in blocks of ``chunk_size`` (or the storage chunks of
    a Zarr or Dask array); a sparse block is made dense one block at a time.
    float32 input is computed in float32 (``tol`` is far above its rounding).

    Parameters
    ----------
    X : array of shape (n_samples, n_features), >= 0
        NumPy array, scipy sparse matrix, memory map, Zarr or Dask array.
    components : ndarray of shape (n_components, n_features), >= 0
    max_iter : int
    tol : float
    chunk_size : int

    Returns
    -------
    ndarray of shape (n_samples, n_components)
        float32 for float32 input, else float64; lazy for Dask input.

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> kl_nmf_weights(np.array([[2.0, 3.0]]), H).round(3)
    array([[2., 3.]])
    """
    if not hasattr(X, "shape"):
        X = np.asarray(X)
    dtype = working_dtype(X)
    H = np.asarray(components, dtype=dtype)
    return map_row_blocks(_kl_weights_of_block, X, H, max_iter, tol, n_out=H.shape[0],
                          dtype=dtype, block_rows=chunk_size)


def _kl_weights_of_block(block, H, max_iter, tol):
    block = block.toarray() if sparse.issparse(block) else block
    h_mass = H.sum(axis=1)
    h_mass_safe = np.where(h_mass > 0, h_mass, 1.0).astype(H.dtype)
    eps = np.finfo(H.dtype).eps
    scale = block.sum(axis=1) / max(h_mass.sum(), eps)
    W = np.repeat(scale[:, None], H.shape[0], axis=1)
    active = np.flatnonzero(scale > 0)
    for _ in range(max_iter):
        if active.size == 0:
            break
        Wa = W[active]
        ratio = block[active] / np.maximum(Wa @ H, eps)
        new = Wa * (ratio @ H.T) / h_mass_safe
        change = np.abs(new - Wa).sum(axis=1) / np.maximum(Wa.sum(axis=1), eps)
        W[active] = new
        active = active[change > tol]
    return W
