"""What the Gaussian-feature baselines share: the checks at the top of ``fit``, and
the fit of the methods whose landmarks are data points chosen in order (random
points, and the two pivoted-Cholesky methods of :mod:`.active_learning` and
:mod:`.rp_cholesky`)."""

from __future__ import annotations

from typing import Any, Literal, Self

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state

from .._blocks import check_rows, take_rows, to_memory
from .._landmark_features import LandmarkTransformerMixin
from .._memory import check_memory
from .._parallel import NJobs, thread_limits
from .._typing import MatrixLike
from .._validation import AnyOf, Integer, NoneValue, check_enough_samples, check_params
from ..cholesky import pivoted_cholesky
from ..kernels import resolve_kernel_width

__all__ = ["DEFAULT_KERNEL_WIDTH", "check_fit_input", "DataPointLandmarks",
           "CholeskyLandmarks"]

# Default of every Gaussian-feature baseline; the same as GPLandmarks' default so
# that features of different methods use the same kernel.
DEFAULT_KERNEL_WIDTH: Literal["auto"] = "auto"


def check_fit_input(estimator, X):
    """The checks at the top of a Gaussian-feature baseline's ``fit``.

    Checks the estimator's ``_parameter_rules``, then X (at least two rows, and at
    least ``n_landmarks``). Returns ``(X, params)``, the checked parameter values.
    """
    params = check_params(estimator, estimator._parameter_rules)
    X = check_rows(X, estimator=estimator, min_samples=2)
    n_landmarks = params["n_landmarks"]
    check_enough_samples(X.shape[0], n_landmarks, f"n_landmarks={n_landmarks}")
    return X, params


class DataPointLandmarks(LandmarkTransformerMixin, BaseEstimator):
    """Shared fit for methods whose landmarks are data points chosen in order."""

    _parameter_rules = {"n_landmarks": Integer()}

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


class CholeskyLandmarks(DataPointLandmarks):
    """Pivoted Cholesky of the Gaussian kernel on (a subsample of) the data."""

    _rule = None
    _parameter_rules = {"n_landmarks": Integer(), "n_jobs": NJobs(),
                        "subsample": AnyOf(NoneValue(), Integer())}

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
        X, params = check_fit_input(self, X)
        n_landmarks, subsample = params["n_landmarks"], params["subsample"]
        if subsample is not None and subsample < n_landmarks:
            raise ValueError(
                f"subsample={subsample} is smaller than n_landmarks={n_landmarks}; "
                "pass a larger subsample, or subsample=None to use every point."
            )
        rng = check_random_state(self.random_state)
        n = X.shape[0]
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
