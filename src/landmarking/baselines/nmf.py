"""NMF landmarks: components of a Kullback-Leibler NMF (scikit-learn), with the
factorisation weights of new rows (:func:`kl_nmf_weights`) as their features."""

from __future__ import annotations

from typing import Any, Literal, Self

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.decomposition import NMF
from sklearn.utils.validation import check_is_fitted

from .._blocks import check_rows, map_row_blocks, reduce_row_blocks, to_memory, working_dtype
from .._memory import check_memory
from .._typing import ArrayLike, MatrixLike, RandomStateLike
from .._validation import Integer, Options, check_params

__all__ = ["NMFLandmarks", "kl_nmf_weights"]


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

    _parameter_rules = {"n_landmarks": Integer(), "max_iter": Integer(),
                        "init": Options("auto", "nndsvda", "random")}

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
        params = check_params(self, self._parameter_rules)
        n_landmarks = params["n_landmarks"]
        X = check_rows(X, estimator=self, accept_sparse=("csr", "csc"), min_samples=2)
        self._check_nonnegative(X)
        X = to_memory(X, what="NMFLandmarks.fit (the multiplicative updates visit every "
                              "row each iteration)",
                      alternative="fit on a random sample of rows; transform then works "
                                  "one block at a time.")
        # The factors W (n x n_landmarks) and H (n_landmarks x d) and the updates'
        # temporaries of their size: refused at once when they cannot fit.
        check_memory(8 * 4 * n_landmarks * (X.shape[0] + X.shape[1]),
                     what=f"NMF factors of {n_landmarks} landmarks",
                     way_out="ask for fewer landmarks")
        self.init_ = self.init
        if self.init == "auto":
            # NNDSVD needs a rank-n_landmarks SVD, so at most min(n, d) components.
            self.init_ = "nndsvda" if n_landmarks <= min(X.shape) else "random"
        nmf = NMF(n_components=n_landmarks, init=self.init_, solver="mu",
                  beta_loss="kullback-leibler", max_iter=params["max_iter"], tol=self.tol,
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
