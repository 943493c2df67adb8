"""Feasible spaces for landmarks and their Euclidean projections.

A GP landmark is optimised by projected gradient ascent (Liang & Paisley 2015,
eq. 9), so each feasible set S comes with the projection Proj_S onto it:

- ``"euclidean"``: S = R^d, no projection.
- ``"nonnegative"``: the nonnegative orthant (images); clip at 0.
- ``"sphere"``: the unit sphere intersected with the nonnegative orthant (square
  roots of normalised histograms, where ||t - x||^2 = 2 - 2 t.x is the Hellinger
  distance); clip at 0, then normalise.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._validation import SPACES, check_choice

__all__ = ["project", "is_feasible", "SPACES"]


def project(t: ArrayLike, space: str) -> np.ndarray:
    """Project a point (or each row of an array) onto the feasible ``space``.

    Parameters
    ----------
    t : ndarray of shape (n_features,) or (n_points, n_features)
        Points to project; not modified.
    space : {"euclidean", "nonnegative", "sphere"}

    Returns
    -------
    ndarray of the same shape and dtype
        The nearest feasible points. On the sphere a point with no positive
        entry goes to the coordinate axis of its largest entry, the exact
        nearest point of the sphere-orthant (never a NaN).

    Examples
    --------
    >>> project(np.array([-1.0, 3.0, 4.0]), "sphere")
    array([0. , 0.6, 0.8])
    """
    check_choice(space, "space", SPACES)
    t = np.asarray(t)
    if space == "euclidean":
        return t.copy()
    clipped = np.maximum(t, 0)
    if space == "nonnegative":
        return clipped
    return _normalise_rows_onto_sphere(t, clipped)


def _normalise_rows_onto_sphere(t, clipped):
    rows_t = np.atleast_2d(t)
    rows = np.atleast_2d(clipped).copy()
    norms = np.linalg.norm(rows, axis=1)
    empty = norms == 0
    if np.any(empty):
        # Every entry <= 0: the nearest unit vector in the orthant is the axis of
        # the largest (least negative) entry, since it maximises t . s.
        axes = np.argmax(rows_t[empty], axis=1)
        rows[np.flatnonzero(empty), axes] = 1.0
        norms[empty] = 1.0
    rows /= norms[:, None]
    return rows.reshape(t.shape)


def is_feasible(t: ArrayLike, space: str, *, atol: float = 1e-6) -> bool:
    """Whether every point (row) of ``t`` lies in ``space`` up to ``atol``."""
    check_choice(space, "space", SPACES)
    t = np.atleast_2d(np.asarray(t, dtype=float))
    if not np.all(np.isfinite(t)):
        return False
    if space == "euclidean":
        return True
    if np.any(t < -atol):
        return False
    if space == "nonnegative":
        return True
    return bool(np.all(np.abs(np.linalg.norm(t, axis=1) - 1) <= atol))
