"""Exact Laplacian eigenmaps from an LLL start, and the landmarks refitted after it.

:func:`lll_start` builds a start for
:func:`~landmarking.spectral.refine_eigenvectors.refine_spectral_embedding` from data and a
graph (random landmarks, the LLL weights and the reduced problem);
:func:`lll_refined_embedding` asks it for a few more eigenvectors than wanted
(guard vectors) and refines: ``LaplacianEigenmaps(eigen_solver="lll-refine")``.
:func:`fit_landmark_embedding` refits the landmark coordinates X~ to a refined
embedding, so that the LLL map places new points consistently
(``LocallyLinearLandmarks(refine=True)``).
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import cg, spsolve
from sklearn.exceptions import ConvergenceWarning

from .._timings import stage
from .._typing import ArrayLike, MatrixLike, NDArray, RandomStateLike, SparseMatrix
from .._validation import check_positive_int
from ..spectral.refine_eigenvectors import RefineResult, refine_spectral_embedding
from ._cpu import reconstruction_weights, reduced_problem, solve_reduced_problem
from .landmark_selection import select_landmarks

__all__ = ["lll_start", "lll_refined_embedding", "fit_landmark_embedding"]


def lll_start(X: MatrixLike, W: SparseMatrix, n_columns: int, *,
              n_landmarks: int | None = None, n_landmark_neighbors: int = 5,
              reg: float = 1e-3, random_state: RandomStateLike = None) -> NDArray[np.float64]:
    """An LLL embedding of the graph W on X with ``n_columns`` eigenvectors.

    Parameters
    ----------
    X : ndarray of shape (n, n_features)
    W : sparse matrix of shape (n, n)
        Affinity on the rows of X.
    n_columns : int
        Eigenvectors to return (after the trivial one).
    n_landmarks : int or None
        Default ``min(n // 2, max(1000, 10 * n_columns))`` random landmarks.
    n_landmark_neighbors : int
    reg : float
    random_state : int, RandomState or None

    Returns
    -------
    ndarray of shape (n, n_columns)
    """
    n = X.shape[0]
    if n_landmarks is None:
        n_landmarks = min(n // 2, max(1000, 10 * n_columns))
    n_landmarks = max(n_landmarks, n_columns + 2, n_landmark_neighbors)
    idx = select_landmarks(X, n_landmarks, random_state=random_state)
    Z = reconstruction_weights(X, X[idx], n_landmark_neighbors, reg=reg)
    used = np.flatnonzero(np.asarray(Z.getnnz(axis=0)) > 0)
    Z = Z[:, used] if used.size < Z.shape[1] else Z
    A, B = reduced_problem(W, Z)
    vecs, _ = solve_reduced_problem(A, B, min(n_columns, Z.shape[1] - 1),
                                    random_state=random_state)
    return np.asarray(Z @ vecs)


def lll_refined_embedding(X: MatrixLike, W: SparseMatrix, n_components: int, *,
                          tol: float | None = None, max_iter: int | None = None,
                          n_extra: int | None = None, random_state: RandomStateLike = None,
                          ) -> tuple[NDArray[np.float64], NDArray[np.float64], RefineResult]:
    """Exact Laplacian eigenmaps of W: LLL on X (:func:`lll_start`), then
    :func:`refine_spectral_embedding` (``tol`` default 1e-6, ``max_iter`` 100).

    This is ``LaplacianEigenmaps(eigen_solver="lll-refine")``. The LLL start
    carries ``n_extra`` more eigenvectors than asked for (default
    ``max(2, n_components // 5)``), guard vectors of the refinement.

    Returns
    -------
    embedding, eigenvalues, result
        As :func:`refine_spectral_embedding`; ``result.timings`` also holds
        ``start``, the seconds of the LLL start.
    """
    if n_extra is None:
        n_extra = max(2, n_components // 5)
    n_extra = check_positive_int(n_extra, "n_extra", minimum=0)
    timings = {}
    with stage(timings, "start"):
        start = lll_start(X, W, n_components + n_extra, random_state=random_state)
    embedding, eigenvalues, result = refine_spectral_embedding(
        W, start, n_components=n_components, tol=1e-6 if tol is None else tol,
        max_iter=100 if max_iter is None else max_iter)
    result.timings = {**timings, **result.timings}
    return embedding, eigenvalues, result


#: Up to this many landmarks the refit is a sparse direct solve; above, conjugate
#: gradients.
DIRECT_LIMIT = 2000


def fit_landmark_embedding(Z: SparseMatrix, embedding: ArrayLike, previous: ArrayLike, *,
                           ridge: float = 1e-8) -> NDArray[np.float64]:
    """Landmark coordinates X~ with Z X~ closest to ``embedding``.

    Solves (Z^T Z + r I) X~ = Z^T X + r X~_prev with r = ridge * mean diag(Z^T Z),
    so a landmark that reconstructs no point keeps its ``previous``
    coordinates. Used after refinement, so that the LLL map places new points
    in the refined embedding.

    Parameters
    ----------
    Z : sparse matrix of shape (n, L)
    embedding : ndarray of shape (n, d)
    previous : ndarray of shape (L, d)

    Returns
    -------
    ndarray of shape (L, d)
    """
    Z = sparse.csr_matrix(Z)
    previous = np.array(previous, dtype=np.float64)
    # Eigenvectors carry no sign: match the previous coordinates' signs first.
    flip = np.einsum("ij,ij->j", np.asarray(Z @ previous), embedding) < 0
    previous[:, flip] *= -1.0
    G = (Z.T @ Z).tocsr()
    r = ridge * max(float(G.diagonal().mean()), 1e-300)
    G = (G + r * sparse.identity(G.shape[0], format="csr")).tocsr()
    rhs = np.asarray(Z.T @ embedding) + r * previous
    if G.shape[0] <= DIRECT_LIMIT:
        sol = spsolve(G.tocsc(), rhs)
        return np.asarray(sol).reshape(previous.shape)
    # Many landmarks: the sparse LU of G fills in (CHANGELOG.md); conjugate
    # gradients from the previous coordinates, which the refined embedding moved
    # only a little, with G's diagonal as preconditioner.
    M = sparse.diags(1.0 / G.diagonal())
    out = np.empty_like(previous)
    unconverged = []
    for j in range(previous.shape[1]):
        out[:, j], info = cg(G, rhs[:, j], x0=previous[:, j], M=M,
                             maxiter=10 * G.shape[0], **_CG_TOLERANCE)
        if info != 0:
            unconverged.append((j, info))
    if unconverged:
        _warn_cg_not_converged(G, rhs, out, unconverged)
    return out


def _warn_cg_not_converged(G, rhs, out, unconverged):
    """One ConvergenceWarning for the columns cg left unconverged, with the largest
    relative residual (cg returns its last iterate, which is kept: no worse than the
    start)."""
    columns = [j for j, _ in unconverged]
    norms = np.linalg.norm(rhs[:, columns], axis=0)
    residual = float(np.max(np.linalg.norm(G @ out[:, columns] - rhs[:, columns], axis=0)
                            / np.where(norms > 0, norms, 1.0)))
    info = unconverged[0][1]
    reason = (f"stopped after {info} iterations" if info > 0
              else "broke down (the system is not positive definite in floating point)")
    warnings.warn(
        f"conjugate gradients for the landmark coordinates ({len(columns)} of "
        f"{rhs.shape[1]} columns of the refined embedding) {reason} with relative "
        f"residual up to {residual:.3g} (tolerance "
        f"{_CG_TOLERANCE.get('rtol', _CG_TOLERANCE.get('tol'))}), so the landmark "
        "embedding, and the points transform places with it, are not the refit's "
        f"solution. Use at most {DIRECT_LIMIT} landmarks (a direct solve), or "
        "refine=False.",
        ConvergenceWarning, stacklevel=3)


# scipy 1.12 renamed cg's relative tolerance from tol to rtol (and 1.14 dropped tol).
_CG_TOLERANCE = ({"rtol": 1e-10, "atol": 0.0}
                 if "rtol" in inspect.signature(cg).parameters else {"tol": 1e-10, "atol": 0.0})
