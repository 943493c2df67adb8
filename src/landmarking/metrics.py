"""Error metrics between embeddings: alignment first, then a relative error.

- :func:`procrustes_error`: relative error of an embedding to a reference after
  the best translation, rotation/reflection and uniform scaling (the LLL paper's
  measure against exact Laplacian eigenmaps).
- :func:`affine_normalized_mse`: mean squared distance to a ground truth after
  the best affine map, divided by the squared mean nearest-neighbour distance of
  the ground truth (the Manifold Sculpting paper's measure; above 1 means
  points sit farther from their place than from their neighbours).
"""

import numpy as np
from scipy.linalg import orthogonal_procrustes

__all__ = ["procrustes_align", "procrustes_error", "affine_align",
           "affine_normalized_mse", "mean_nearest_neighbor_distance"]


def _check_pair(X, reference):
    X = np.asarray(X, dtype=float)
    reference = np.asarray(reference, dtype=float)
    if X.ndim != 2 or X.shape != reference.shape:
        raise ValueError(
            f"the embedding {X.shape} and the reference {reference.shape} must be "
            "2-D arrays of the same shape (one row per point)."
        )
    return X, reference


def procrustes_align(X, reference):
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


def procrustes_error(X, reference):
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


def affine_align(X, target):
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


def mean_nearest_neighbor_distance(points):
    """Mean Euclidean distance from each point to its nearest other point."""
    from .neighbors import nearest_neighbors

    distances, _ = nearest_neighbors(np.asarray(points, dtype=float), 1)
    return float(distances.mean())


def affine_normalized_mse(X, target):
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
