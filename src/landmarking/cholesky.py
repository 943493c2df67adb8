"""Pivoted Cholesky of the Gaussian kernel matrix, one column at a time.

Greedy pivoting is the GP active-learning rule of Liang & Paisley (2015, eq. 3):
the next pivot is the point of largest posterior variance
Sigma(x) = k(x, x) - k(x, D_n) K_n^-1 k(x, D_n)^T, and Sigma over all points is the
diagonal of the residual K - L L^T of the partial Cholesky factor L. Random
pivoting (RPCholesky; Chen, Epperly, Tropp & Webber 2023) draws each pivot with
probability proportional to that same diagonal.

Both cost O(k^2 n) plus k kernel rows (O(k n d)) and O(k n) memory for the factor;
the n x n kernel matrix is never formed.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from sklearn.utils.extmath import row_norms

from ._progress import progress_bar
from .kernels import squared_distances

__all__ = ["pivoted_cholesky", "PIVOT_RULES"]

#: Accepted pivot rules of :func:`pivoted_cholesky`.
PIVOT_RULES = ("greedy", "random")

# A residual variance below this (relative to k(x, x) = 1) means the point is, to
# rounding error, already in the span of the pivots: dividing by its square root
# would amplify noise, so its factor column is set to zero instead.
_DEGENERATE = 1e-10


def pivoted_cholesky(
    X: np.ndarray,
    n_pivots: int,
    width: float,
    *,
    rule: str = "greedy",
    random_state: np.random.RandomState | None = None,
    verbose: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Partial pivoted Cholesky of K_ij = exp(-||x_i - x_j||^2 / width).

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Data, in memory; not modified.
    n_pivots : int
        Number of pivots, at most ``n_samples``.
    width : float
        Kernel width eta > 0 (squared data units).
    rule : {"greedy", "random"}
        "greedy": the unselected point of largest residual variance (ties go to
        the lowest index). "random": drawn with probability proportional to the
        residual variance.
    random_state : numpy.random.RandomState
        Source of the random pivots (only used by ``rule="random"``).
    verbose : bool
        Show a progress bar over pivots.

    Returns
    -------
    pivots : ndarray of shape (n_pivots,), int
        Row indices of X, in order of selection.
    pivot_variance : ndarray of shape (n_pivots,)
        Residual (posterior) variance of each pivot when it was chosen.
    residual_trace : ndarray of shape (n_pivots + 1,)
        trace(K - L L^T) before any pivot and after each one; nonincreasing.
    factor : ndarray of shape (n_samples, n_pivots)
        L, with K ~ L L^T (the Nystroem approximation on the pivots).

    Examples
    --------
    >>> X = np.array([[0.0], [0.1], [5.0]])
    >>> pivots, var, trace, L = pivoted_cholesky(X, 2, 1.0)
    >>> pivots.tolist(), trace.round(3).tolist()
    ([0, 2], [3.0, 1.02, 0.02])
    """
    n = X.shape[0]
    if rule not in PIVOT_RULES:
        raise ValueError(f"rule must be one of {PIVOT_RULES}, got {rule!r}.")
    if not 1 <= n_pivots <= n:
        raise ValueError(f"n_pivots must lie in [1, {n}], got {n_pivots}.")
    factor = np.zeros((n, n_pivots))
    # k(x, x) = 1 for the Gaussian kernel, so the residual starts at all ones.
    diag = np.ones(n)
    pivots = np.empty(n_pivots, dtype=np.intp)
    pivot_variance = np.empty(n_pivots)
    residual_trace = np.empty(n_pivots + 1)
    residual_trace[0] = n
    selected = np.zeros(n, dtype=bool)
    # Row norms once, not once per kernel row.
    sq_norms = row_norms(X, squared=True)
    for j in progress_bar(range(n_pivots), desc=f"{rule} pivoted Cholesky", disable=not verbose):
        p = _next_pivot(diag, selected, rule, random_state)
        pivots[j] = p
        pivot_variance[j] = diag[p]
        selected[p] = True
        pivot = X[p:p + 1]
        pivot = pivot.toarray() if sparse.issparse(pivot) else pivot
        row = np.exp(-squared_distances(X, pivot, X_sq_norms=sq_norms)[:, 0]
                     .astype(np.float64) / width)
        row -= factor[:, :j] @ factor[p, :j]
        if diag[p] > _DEGENERATE:
            factor[:, j] = row / np.sqrt(diag[p])
        diag -= factor[:, j] ** 2
        # Rounding can leave tiny negative variances; selected points have none.
        np.maximum(diag, 0, out=diag)
        diag[selected] = 0
        residual_trace[j + 1] = diag.sum()
    return pivots, pivot_variance, residual_trace, factor


def _next_pivot(diag, selected, rule, rng):
    if rule == "greedy":
        scores = np.where(selected, -np.inf, diag)
        return int(np.argmax(scores))
    cumulative = np.cumsum(diag)
    total = cumulative[-1]
    if not total > _DEGENERATE:
        # Every remaining point lies in the span already: any of them will do.
        return int(rng.choice(np.flatnonzero(~selected)))
    p = int(np.searchsorted(cumulative, rng.random_sample() * total, side="right"))
    p = min(p, len(diag) - 1)
    if selected[p]:
        # Only reachable through rounding at a boundary of the cumulative sum.
        p = int(np.flatnonzero(~selected)[np.argmax(diag[~selected])])
    return p
