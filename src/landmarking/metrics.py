"""Error metrics between embeddings: alignment first, then a relative error.

- :func:`procrustes_error`: relative error of an embedding to a reference after
  the best translation, rotation/reflection and uniform scaling (the LLL paper's
  measure against exact Laplacian eigenmaps).
- :func:`span_error`: the smallest relative error that *any* embedding in the
  column span of a basis can reach (for LLL, the span of the weights Z: a floor
  under the error of every solver of the reduced problem).
- :func:`affine_normalized_mse`: mean squared distance to a ground truth after
  the best affine map, divided by the squared mean nearest-neighbour distance of
  the ground truth (the Manifold Sculpting paper's measure; above 1 means
  points sit farther from their place than from their neighbours).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy import linalg, sparse
from scipy.linalg import orthogonal_procrustes

__all__ = ["procrustes_align", "procrustes_error", "span_error", "affine_align",
           "affine_normalized_mse", "mean_nearest_neighbor_distance"]

# Dense normal equations: 12,000 columns are 1.2 GB and a Cholesky of seconds.
MAX_SPAN_COLUMNS = 12_000


def _check_pair(X, reference):
    X = np.asarray(X, dtype=float)
    reference = np.asarray(reference, dtype=float)
    if X.ndim != 2 or X.shape != reference.shape:
        raise ValueError(
            f"the embedding {X.shape} and the reference {reference.shape} must be "
            "2-D arrays of the same shape (one row per point)."
        )
    return X, reference


def procrustes_align(X: ArrayLike, reference: ArrayLike) -> np.ndarray:
    """Translate, rotate (or reflect) and scale X to best match ``reference``.

    Returns
    -------
    ndarray of the shape of X: the aligned embedding.
    """
    X, reference = _check_pair(X, reference)
    Xc = X - X.mean(axis=0)
    Rc = reference - reference.mean(axis=0)
    R, scale = orthogonal_procrustes(Xc, Rc)
    norm = np.sum(Xc * Xc)
    s = scale / norm if norm > 0 else 0.0
    return s * (Xc @ R) + reference.mean(axis=0)


def procrustes_error(X: ArrayLike, reference: ArrayLike) -> float:
    """Relative error ||reference - align(X)||_F / ||reference - mean||_F.

    0 for an embedding equal to the reference up to a similarity transform;
    1 for an embedding that explains nothing of it.

    Examples
    --------
    >>> ref = np.random.default_rng(0).normal(size=(50, 2))
    >>> round(procrustes_error(3 * ref[:, ::-1] + 1, ref), 12)
    0.0
    """
    X, reference = _check_pair(X, reference)
    aligned = procrustes_align(X, reference)
    Rc = reference - reference.mean(axis=0)
    denom = np.linalg.norm(Rc)
    if denom == 0:
        raise ValueError("the reference embedding is constant; the error is undefined.")
    return float(np.linalg.norm(reference - aligned) / denom)


def span_error(
    basis: ArrayLike | sparse.spmatrix | sparse.sparray,
    reference: ArrayLike,
    *,
    per_column: bool = False,
) -> float | tuple[float, np.ndarray]:
    """Smallest relative error of any embedding built from the columns of ``basis``.

    min over C and c of ||reference - (basis C + 1 c)||_F / ||reference - mean||_F,
    by least squares. Every embedding of the form ``basis @ C`` scores at least
    this under :func:`procrustes_error` (a similarity transform of it is still in
    the span, and so is the translation), so the number separates what a basis
    cannot represent from what a solver gets wrong. For Locally Linear
    Landmarks the basis is the weight matrix Z (``weights_``, N x L): no
    solver of the reduced L x L problem can do better than ``span_error(Z, exact)``.

    Parameters
    ----------
    basis : ndarray or sparse matrix of shape (n_samples, n_basis)
        At most ``MAX_SPAN_COLUMNS`` (12,000) columns: the normal equations are
        solved densely (a 20,000-column Cholesky crashed inside OpenBLAS 0.3.31
        on our test machine, a known class of bugs in its large SYRK kernels).
    reference : ndarray of shape (n_samples, n_components)
    per_column : bool
        Also return the error of each reference column on its own.

    Returns
    -------
    error : float
    column_errors : ndarray of shape (n_components,)
        Only when ``per_column``.

    Examples
    --------
    >>> B = np.random.default_rng(0).normal(size=(100, 5))
    >>> round(span_error(B, B[:, :2] @ [[1.0, 2.0], [3.0, -1.0]] + 7.0), 12)
    0.0
    """
    reference = np.asarray(reference, dtype=float)
    if not sparse.issparse(basis):
        basis = np.asarray(basis, dtype=float)
    if reference.ndim != 2:
        raise ValueError(f"reference must be 2-D (one row per point), got {reference.shape}.")
    if basis.ndim != 2 or basis.shape[0] != reference.shape[0]:
        raise ValueError(
            f"basis {basis.shape} and reference {reference.shape} must be 2-D with "
            "the same number of rows (one per point)."
        )
    if basis.shape[1] > MAX_SPAN_COLUMNS:
        raise ValueError(
            f"basis has {basis.shape[1]} columns; span_error solves dense normal "
            f"equations and takes at most {MAX_SPAN_COLUMNS}. Pass fewer columns "
            "(for LLL: fewer landmarks)."
        )
    values = basis.data if sparse.issparse(basis) else basis
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(reference))):
        raise ValueError("basis and reference must be finite; remove NaN and infinity first.")
    centred = reference - reference.mean(axis=0)
    denom = np.linalg.norm(centred)
    if denom == 0:
        raise ValueError("the reference embedding is constant; the error is undefined.")
    ones = np.ones((basis.shape[0], 1))
    if sparse.issparse(basis):
        B = sparse.hstack([sparse.csr_matrix(basis, dtype=float), ones], format="csr")
    else:
        B = np.hstack([basis, ones])
    gram = B.T @ B
    gram = gram.toarray() if sparse.issparse(gram) else gram
    solve = _normal_equation_solver(gram)
    coef = solve(B.T @ reference)
    # Iterative refinement: the normal equations square the condition number
    # and the ridge biases the solution; the floor must not be overstated.
    for _ in range(2):
        coef += solve(B.T @ (reference - B @ coef))
    residual = reference - B @ coef
    error = float(np.linalg.norm(residual) / denom)
    if not per_column:
        return error
    with np.errstate(invalid="ignore", divide="ignore"):
        columns = np.linalg.norm(residual, axis=0) / np.linalg.norm(centred, axis=0)
    return error, columns


def _normal_equation_solver(gram):
    """Solve with the Cholesky factor of the Gram matrix plus a tiny ridge.

    The Gram matrix is singular whenever the constant is already in the span
    (LLL's rows of Z sum to one) or columns repeat; a ridge of 1e-10 of its
    largest diagonal entry makes it factorable and only drops directions the
    data cannot see. Should rounding still defeat Cholesky, a pseudo-inverse
    from one eigendecomposition takes over.
    """
    ridge = 1e-10 * max(float(np.max(np.diag(gram), initial=0.0)), 1e-300)
    try:
        factor = linalg.cho_factor(gram + ridge * np.eye(len(gram)))
        return lambda rhs: linalg.cho_solve(factor, rhs)
    except linalg.LinAlgError:
        values, vectors = linalg.eigh(gram)
        keep = values > 1e-12 * values[-1]
        vectors, inverse = vectors[:, keep], 1.0 / values[keep]
        return lambda rhs: vectors @ (inverse[:, None] * (vectors.T @ rhs))


def affine_align(X: ArrayLike, target: ArrayLike) -> np.ndarray:
    """Least-squares affine map of X (n x p) onto ``target`` (n x q)."""
    X = np.asarray(X, dtype=float)
    target = np.asarray(target, dtype=float)
    if X.ndim != 2 or target.ndim != 2 or X.shape[0] != target.shape[0]:
        raise ValueError(
            f"X {X.shape} and target {target.shape} must be 2-D with the same "
            "number of rows."
        )
    design = np.hstack([X, np.ones((X.shape[0], 1))])
    coef, *_ = np.linalg.lstsq(design, target, rcond=None)
    return design @ coef


def mean_nearest_neighbor_distance(points: ArrayLike) -> float:
    """Mean Euclidean distance from each point to its nearest other point."""
    from .neighbors import nearest_neighbors

    distances, _ = nearest_neighbors(np.asarray(points, dtype=float), 1)
    return float(distances.mean())


def affine_normalized_mse(X: ArrayLike, target: ArrayLike) -> float:
    """The Manifold Sculpting paper's normalised mean squared error.

    Mean squared distance between ``target`` and the best affine image of X,
    divided by lambda, the squared mean nearest-neighbour distance of ``target``.

    Examples
    --------
    >>> u = np.random.default_rng(0).uniform(size=(200, 2))
    >>> affine_normalized_mse(u @ [[2.0, 1.0], [0.0, 1.0]] + 5, u) < 1e-20
    True
    """
    aligned = affine_align(X, target)
    mse = np.mean(np.sum((np.asarray(target, dtype=float) - aligned) ** 2, axis=1))
    lam = mean_nearest_neighbor_distance(target) ** 2
    return float(mse / lam)
