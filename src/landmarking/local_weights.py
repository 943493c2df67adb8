"""The local affine-weights solve, written once for every method that needs it.

A point y written as an affine combination of k other points t_1..t_k (its
neighbours, or its nearest landmarks) has the weights w that minimise
|y - sum_i w_i t_i|^2 subject to sum_i w_i = 1. With the local Gram matrix
G_ij = (y - t_i).(y - t_j) they solve G w = 1, rescaled to sum to one
(Roweis & Saul's LLE). Locally Linear Landmarks builds its weights Z this way
(:func:`~landmarking.lll._cpu.reconstruction_weights`), and Manifold Sculpting
starts each new point at its LLE reconstruction
(:mod:`landmarking.sculpting._incremental`); each method builds its own Gram
matrices and calls :func:`local_affine_weights`.

The torch backend of LLL solves the same systems on the device
(:mod:`landmarking.lll._torch`), with the same ridge.
"""

from __future__ import annotations

import numpy as np

from ._typing import NDArray

__all__ = ["local_affine_weights"]

#: The smallest relative ridge: ``reg=0`` still gets this one, because G is
#: singular whenever k exceeds the dimension (or the points are degenerate), and
#: the limit of a ridge going to zero is the minimum-norm exact reconstruction.
MIN_REG = 1e-12


def local_affine_weights(G: np.ndarray, reg: float) -> NDArray[np.float64]:
    """Affine weights (summing to one) from stacked local Gram matrices G (n, k, k).

    Solves (G + r I) w = 1 with the ridge r = reg * trace(G) (reg when G = 0;
    scikit-learn's LLE convention) and rescales w to sum to one. The ridge makes
    the weights unique when k exceeds the dimension or the neighbours are
    degenerate, and keeps them finite when the point coincides with one of them.

    Parameters
    ----------
    G : array of shape (n, k, k)
        One local Gram matrix per point, G_ij = (y - t_i).(y - t_j); computed in
        float64 whatever its dtype.
    reg : float
        Relative ridge, >= 0 (checked by the caller); ``0`` uses a vanishing
        ridge of :data:`MIN_REG`.

    Returns
    -------
    ndarray of shape (n, k), float64
        Rows summing to one. A system that is singular even with the ridge gets
        its least-squares solution, and one with no usable solution the plain
        average of its neighbours.

    Examples
    --------
    >>> d = np.array([[[-0.5], [0.5]]])          # a point halfway between two others
    >>> local_affine_weights(d @ d.transpose(0, 2, 1), 1e-3).round(6)
    array([[0.5, 0.5]])
    """
    G = np.asarray(G, dtype=np.float64)
    k = G.shape[1]
    trace = np.trace(G, axis1=1, axis2=2)
    rel = max(reg, MIN_REG)
    ridge = np.where(trace > 0, rel * trace, rel)
    G = G + ridge[:, None, None] * np.eye(k)
    ones = np.ones((G.shape[0], k, 1))
    try:
        w = np.linalg.solve(G, ones)[:, :, 0]
    except np.linalg.LinAlgError:
        # A singular system (reg=0 with degenerate neighbours): least squares.
        w = np.stack([np.linalg.lstsq(g, o, rcond=None)[0][:, 0]
                      for g, o in zip(G, ones, strict=True)])
    total = w.sum(axis=1, keepdims=True)
    bad = ~np.isfinite(total[:, 0]) | (np.abs(total[:, 0]) < 1e-300)
    w[bad] = 1.0  # no usable system: plain average of the neighbours
    total[bad] = k
    return w / total
