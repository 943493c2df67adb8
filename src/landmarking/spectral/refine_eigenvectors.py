"""Exact Laplacian eigenmaps from a good start: LOBPCG refinement.

Locally Linear Landmarks gives an embedding X = Z X~ close to the exact
Laplacian eigenmaps of the full graph, but never closer than the span of Z
allows. Started from it, a block eigensolver on the full problem reaches the
exact eigenvectors in a few iterations. This module does that:

- :func:`refine_spectral_embedding` runs LOBPCG on the normalised Laplacian
  L_sym = I - D^-1/2 W D^-1/2 from a given start block (in the coordinates of
  L x = lambda D x, as every embedding of this library is), with the trivial
  eigenvector D^1/2 1 kept out as a constraint and, optionally, pyamg's
  smoothed-aggregation preconditioner (as scikit-learn's ``amg`` solver); it
  stops on the residuals ||L_sym u - lambda u|| of the wanted eigenvectors
  only, so the start's extra columns act as guard vectors.

The LLL start itself, and the refit of the landmark coordinates after
refinement, are LLL's (:mod:`landmarking.lll.start_and_refit`); this module knows
nothing of landmarks.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy import linalg, sparse
from scipy.sparse.linalg import LinearOperator
from sklearn.exceptions import ConvergenceWarning

from .._timings import stage
from .._typing import ArrayLike, NDArray, SparseMatrix
from .._validation import check_positive_int
from ..graph import check_connected, deterministic_signs, normalized_laplacian

__all__ = ["refine_spectral_embedding", "RefineResult", "PRECONDITIONERS"]

PRECONDITIONERS = ("auto", "amg", "none")

#: Diagonal shift of L_sym before the AMG hierarchy is built (L_sym itself is
#: singular); scikit-learn's ``amg`` solver uses the same.
AMG_SHIFT = 1e-5


@dataclass
class RefineResult:
    """What :func:`refine_spectral_embedding` did.

    Attributes
    ----------
    n_iter : int
        LOBPCG iterations.
    residuals : ndarray of shape (n_components,)
        Final ||L_sym u - lambda u|| of each returned eigenvector (unit u).
    start_residuals : ndarray of shape (n_components,)
        The same for the start block (after Rayleigh-Ritz), before any iteration.
    converged : bool
        Every residual at most ``tol``.
    preconditioner : str
        ``"amg"`` or ``"none"``.
    timings : dict
        Seconds: ``setup`` (Laplacian and preconditioner), ``lobpcg``.
    """

    n_iter: int
    residuals: np.ndarray
    start_residuals: np.ndarray
    converged: bool
    preconditioner: str
    timings: dict = field(default_factory=dict)


def _amg_hierarchy(L, sqrt_deg):
    """pyamg's smoothed-aggregation hierarchy for L_sym + AMG_SHIFT I.

    Two choices differ from pyamg's defaults: the near-null-space vector is
    D^1/2 1 (the exact null vector of L_sym; pyamg assumes the constant), and the
    prolongation smoother is weighted row by row (``weighting="local"``), which
    needs no spectral-radius estimate: pyamg draws that estimate's start from
    NumPy's global random state, so the default made the result depend on it.
    """
    try:
        from pyamg import smoothed_aggregation_solver
    except ImportError as exc:
        raise ImportError(
            "preconditioner='amg' needs pyamg, which is not installed; install the "
            "optional extra with `pip install \"landmarking[amg]\"`, or pass "
            "preconditioner='none' (the default, faster on the benchmark graphs)."
        ) from exc
    shifted = (L + AMG_SHIFT * sparse.identity(L.shape[0], format="csr")).tocsr()
    return smoothed_aggregation_solver(
        shifted, B=sqrt_deg[:, None], smooth=("jacobi", {"weighting": "local"}),
        max_coarse=500)


def _amg_preconditioner(L, sqrt_deg):
    """One V-cycle of :func:`_amg_hierarchy` per column, as a LinearOperator."""
    hierarchy = _amg_hierarchy(L, sqrt_deg)
    return LinearOperator(L.shape, matvec=lambda b: _v_cycle(hierarchy, np.ravel(b)),
                          dtype=np.float64)


def _v_cycle(hierarchy, b, level=0):
    """One V-cycle of pyamg's ``hierarchy`` for A x = b from x = 0.

    The cycle of ``hierarchy.aspreconditioner()`` (``solve(b, maxiter=1)``),
    without the two residual products and norms with which ``solve`` checks
    convergence: a fifth of the preconditioner's work, which LOBPCG does not use.
    """
    levels = hierarchy.levels
    A = levels[level].A
    if level == len(levels) - 1:
        return hierarchy.coarse_solver(A, b)
    x = np.zeros_like(b)
    levels[level].presmoother(A, x, b)
    x += levels[level].P @ _v_cycle(hierarchy, levels[level].R @ (b - A @ x), level + 1)
    levels[level].postsmoother(A, x, b)
    return x


def _sym(H):
    return 0.5 * (H + H.T)


def _unit_columns(V):
    norms = np.linalg.norm(V, axis=0)
    return V[:, norms > 0] / norms[norms > 0]


def _ritz(S, AS, m):
    """Rayleigh-Ritz on the span of S's columns: the m smallest Ritz pairs.

    The basis need not be orthonormal: its Gram matrix is equilibrated and
    diagonalised (SVQB), and directions with a Gram eigenvalue below 1e-10 of
    the largest (dependent columns, which appear as LOBPCG converges) are
    dropped. Returns the Ritz values and the coefficients C (X = S C has
    orthonormal columns).
    """
    G = S.T @ S
    scale = 1.0 / np.sqrt(np.maximum(np.diag(G), 1e-300))
    G = _sym(G * np.outer(scale, scale))
    g, U = np.linalg.eigh(G)
    keep = g > 1e-10 * g[-1]
    T = scale[:, None] * (U[:, keep] / np.sqrt(g[keep]))
    H = T.T @ (S.T @ AS) @ T
    mu, C = np.linalg.eigh(_sym(H))
    return mu[:m], T @ C[:, :m]


def _lobpcg(A, X, Y, M, n_wanted, tol, max_iter):
    """Block LOBPCG for the smallest eigenpairs of A, orthogonal to Y.

    Unlike :func:`scipy.sparse.linalg.lobpcg`, it stops when the first
    ``n_wanted`` columns have residual at most ``tol``: the remaining columns
    are guard vectors, which speed the wanted ones up (the rate depends on the
    gap to the first eigenvalue outside the block) without having to converge
    themselves. Columns whose residual is below ``tol`` leave the search block
    (soft locking). One product with A per iteration; X carries orthonormal
    columns orthogonal to Y, A Y = 0.

    Returns (theta, X, residual_history, n_iter).
    """
    AX = A @ X
    theta, C = _ritz(X, AX, X.shape[1])
    X, AX = X @ C, AX @ C
    P = AP = None
    history = []
    n_iter = 0
    while True:
        R = AX - X * theta
        res = np.linalg.norm(R, axis=0)
        history.append(res)
        if np.all(res[:n_wanted] <= tol) or n_iter >= max_iter:
            break
        active = res > tol
        Wb = R[:, active]
        if M is not None:
            Wb = np.asarray(M @ Wb)
        Wb -= Y @ (Y.T @ Wb)
        Wb = _unit_columns(Wb)
        blocks, Ablocks = [X, Wb], [AX, A @ Wb]
        if P is not None:
            norms = np.linalg.norm(P, axis=0)
            use = active & (norms > 0)
            blocks.append(P[:, use] / norms[use])
            Ablocks.append(AP[:, use] / norms[use])
        S = np.hstack(blocks)
        AS = np.hstack(Ablocks)
        m = X.shape[1]
        theta, C = _ritz(S, AS, m)
        # The next search direction: the part of the update outside the old X
        # (X is the first block of S, so X_new = X C_x + P).
        P, AP = S[:, m:] @ C[m:], AS[:, m:] @ C[m:]
        X, AX = X @ C[:m] + P, AX @ C[:m] + AP
        n_iter += 1
    return theta, X, history, n_iter


def _check_start(start, n, n_components):
    start = np.asarray(start, dtype=np.float64)
    if start.ndim != 2 or start.shape[0] != n:
        raise ValueError(
            f"start must have shape ({n}, n_columns), one row per graph node, got "
            f"{start.shape}; pass the embedding of the same points as the graph."
        )
    if n_components is None:
        n_components = start.shape[1]
    n_components = check_positive_int(n_components, "n_components")
    if start.shape[1] < n_components:
        raise ValueError(
            f"start has {start.shape[1]} columns but n_components={n_components}; "
            "pass at least n_components starting vectors."
        )
    if start.shape[1] + 1 >= n:
        raise ValueError(
            f"start has {start.shape[1]} columns for a graph of {n} nodes; LOBPCG "
            "needs fewer columns than nodes - 1 (use eigen_solver='dense' on tiny "
            "graphs)."
        )
    if not np.all(np.isfinite(start)):
        raise ValueError("start contains NaN or infinity; pass a finite embedding.")
    return start, n_components


def _start_block(start, sqrt_deg):
    """(the unit trivial eigenvector D^1/2 1 as a column, the start block U0): x -> u =
    D^1/2 x, then out of the trivial direction and orthonormal."""
    trivial = (sqrt_deg / np.linalg.norm(sqrt_deg))[:, None]
    U0 = start * sqrt_deg[:, None]
    U0 -= trivial @ (trivial.T @ U0)
    U0, r = np.linalg.qr(U0)
    diag = np.abs(np.diag(r))
    if diag.min() <= 1e-10 * max(diag.max(), 1e-300):
        raise ValueError(
            "start has linearly dependent columns (after removing the constant "
            "direction); pass independent approximate eigenvectors."
        )
    return trivial, U0


def _solve(L, U0, trivial, M, n_components, tol, max_iter):
    """(eigenvalues, eigenvectors u, the start's residuals, iterations) of L_sym from
    the start block U0: LOBPCG, or LAPACK where the block is wide for the size."""
    n = L.shape[0]
    if n - 1 < 5 * U0.shape[1]:
        # A block this wide for the size gains nothing over LAPACK: solve
        # densely (the trivial eigenvector comes first).
        H = U0.T @ (L @ U0)
        mu0, V0 = np.linalg.eigh(_sym(H))
        start_residuals = np.linalg.norm(L @ (U0 @ V0) - (U0 @ V0) * mu0, axis=0)
        mu, U = linalg.eigh(L.toarray(), subset_by_index=[1, U0.shape[1]])
        n_iter = 0
    else:
        mu, U, history, n_iter = _lobpcg(L, U0, trivial, M, n_components, tol, max_iter)
        start_residuals = history[0]
        for _ in range(2):
            # A*X is carried by linear combination; where rounding in it hid a
            # residual above tol, go on from the products taken afresh.
            fresh = np.linalg.norm(L @ U[:, :n_components] - U[:, :n_components]
                                   * mu[:n_components], axis=0)
            if np.all(fresh <= tol) or n_iter >= max_iter:
                break
            mu, U, _, more = _lobpcg(L, U, trivial, M, n_components, tol,
                                     max_iter - n_iter)
            n_iter += more
    return mu, U, start_residuals, n_iter


def refine_spectral_embedding(W: SparseMatrix, start: ArrayLike, *,
                              n_components: int | None = None, tol: float = 1e-6,
                              max_iter: int = 100,
                              preconditioner: Literal["auto", "amg", "none"] = "auto",
                              ) -> tuple[NDArray[np.float64], NDArray[np.float64], RefineResult]:
    """Exact Laplacian eigenmaps of W by LOBPCG started from ``start``.

    Parameters
    ----------
    W : sparse matrix of shape (n, n)
        Symmetric nonnegative affinity of a connected graph.
    start : ndarray of shape (n, m)
        Approximate eigenvectors of L x = lambda D x (any scaling, any basis of
        the same subspace), e.g. an LLL embedding ``Z X~``; ``m >=
        n_components``. Extra columns (the next approximate eigenvectors) are
        guard vectors: they speed the wanted ones up and need not converge
        themselves (on MNIST, d = 50, 10 extra columns halved the
        iterations). The constant vector need not be included.
    n_components : int or None
        Eigenvectors to return after the trivial one; default ``m``.
    tol : float
        Stop when the residual ||L_sym u - lambda u|| (unit u) of each of the
        ``n_components`` wanted eigenvectors is at most tol.
        The eigenvectors' angle to the exact ones is about tol over the gap to
        the next eigenvalue.
    max_iter : int
        LOBPCG iterations at most; a ``ConvergenceWarning`` reports a residual
        still above ``tol`` after them.
    preconditioner : {"auto", "amg", "none"}
        ``"amg"``: pyamg (the ``amg`` extra) smoothed aggregation on L_sym + 1e-5 I (3-4x fewer
        iterations, each dearer: slower overall on the benchmark graphs);
        ``"auto"``: none.

    Returns
    -------
    embedding : ndarray of shape (n, n_components)
        D-orthonormal columns by increasing eigenvalue, signs as
        :func:`~landmarking.graph.deterministic_signs` fixes them
        (the normalisation of :func:`~landmarking.spectral.laplacian.spectral_embedding`).
    eigenvalues : ndarray of shape (n_components,)
    result : RefineResult

    Examples
    --------
    >>> from scipy import sparse
    >>> n = 200
    >>> W = sparse.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1]).tocsr()
    >>> rng = np.random.default_rng(0)
    >>> start = np.cos(np.pi * np.outer(np.arange(n) + 0.5, [1, 2, 3, 4]) / n)
    >>> start += 0.01 * rng.standard_normal(start.shape)   # 2 wanted + 2 guards
    >>> emb, lam, info = refine_spectral_embedding(W, start, n_components=2, tol=1e-6)
    >>> bool(info.converged), emb.shape
    (True, (200, 2))
    """
    if not sparse.issparse(W) or W.shape[0] != W.shape[1]:
        raise ValueError(
            f"W must be a square scipy sparse affinity matrix, got "
            f"{type(W).__name__} of shape {getattr(W, 'shape', None)}."
        )
    W = sparse.csr_matrix(W, dtype=np.float64)
    n = W.shape[0]
    start, n_components = _check_start(start, n, n_components)
    if preconditioner not in PRECONDITIONERS:
        raise ValueError(
            f"preconditioner must be one of {PRECONDITIONERS}, got {preconditioner!r}."
        )
    n_pieces = check_connected(W, warn=False)
    if n_pieces > 1:
        raise ValueError(
            f"the graph has {n_pieces} connected components, so the eigenvalue 0 "
            "has one eigenvector per component and the trailing eigenvectors are "
            "not unique; connect the graph (more neighbours, a larger bandwidth) "
            "or embed each component on its own."
        )
    timings = {}
    with stage(timings, "setup"):
        L, sqrt_deg = normalized_laplacian(W)
        trivial, U0 = _start_block(start, sqrt_deg)
        if preconditioner == "auto":
            # pyamg applies its V-cycle one column at a time; on every graph
            # measured (benchmarks/spectral_refine.py) the iterations it saved cost
            # less than the cycles, so "auto" is no preconditioner for now.
            preconditioner = "none"
        M = _amg_preconditioner(L, sqrt_deg) if preconditioner == "amg" else None
    with stage(timings, "lobpcg"):
        mu, U, start_residuals, n_iter = _solve(L, U0, trivial, M, n_components, tol,
                                                max_iter)
        start_residuals = start_residuals[:n_components]
    mu, U = mu[:n_components], U[:, :n_components]
    U /= np.linalg.norm(U, axis=0)
    residuals = np.linalg.norm(L @ U - U * mu, axis=0)
    converged = bool(np.all(residuals <= tol))
    if not converged:
        warnings.warn(
            f"LOBPCG stopped after {n_iter} iterations with eigenvector residual "
            f"{residuals.max():.2g} > tol={tol:g}; raise max_iter, loosen tol or "
            "start from a better embedding (more landmarks).",
            ConvergenceWarning, stacklevel=2,
        )
    embedding = deterministic_signs(U / sqrt_deg[:, None])
    result = RefineResult(n_iter=n_iter, residuals=residuals,
                          start_residuals=start_residuals, converged=converged,
                          preconditioner=preconditioner, timings=timings)
    return embedding, mu, result
