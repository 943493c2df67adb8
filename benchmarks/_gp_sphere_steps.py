"""GP landmarks on the sphere in plain NumPy: the authors' algorithm and its variants.

Used by ``gp_newsgroups_topics.py`` (issue 35). The authors' 2015 code
(``manifold_gp.py`` of Liang & Paisley; read, not copied) learns each landmark by

    t <- Proj_S(t + rho_s grad f / ||grad f||),   rho_s = (t0 + s)^-gamma,

from the uniform point ``1 / sqrt(d)`` of the sphere-orthant, on batches drawn with
replacement, with ``M phi = phi - K lstsq(K^T K, K^T phi)`` against the finished
landmarks' kernel columns K on the batch. :func:`sphere_landmarks` runs that
(``move="unit"``, ``start="uniform"``, ``replace=True``) and the variants measured
against it:

- ``move="unit"``: the authors' unit-length gradient step, then the projection
  (clip at 0, normalise);
- ``move="geodesic"``: a step of angle rho_s along the great circle in the
  direction of the gradient's tangential part, then clip and normalise;
- ``move="fraction"``: the library's scale-free step ``t + a_s (m - t)`` (m the
  gradient's weighted mean), without its step limit;
- ``start="uniform"`` (the authors'), ``"gaussian"`` (the library's: the data's
  per-dimension mean and spread, projected) or ``"mean"`` (the data's mean,
  projected);
- ``replace=False``: batches as slices of a random permutation (the library's).

Everything is the same arithmetic as the authors' except one saving that changes
no result: the finished landmarks' kernel values on all rows are computed once per
landmark (the authors recompute them on every batch), so the transcription is a
faster peer than their code.
"""

import numpy as np


def uniform_start(d):
    """The authors' start: the uniform point of the sphere-orthant."""
    return np.full(d, 1.0 / np.sqrt(d))


def project_sphere(t):
    """Clip at 0 and normalise (the authors' ``proj_sph_pos``)."""
    t = np.maximum(t, 0.0)
    norm = np.linalg.norm(t)
    return t / norm if norm > 0 else uniform_start(len(t))


def unit_step(t, grad, rho):
    """The authors' move: rho along the unit gradient, then the projection."""
    norm = np.linalg.norm(grad)
    if norm == 0:
        return t
    return project_sphere(t + rho * grad / norm)


def geodesic_step(t, grad, rho):
    """Angle rho along the great circle of the gradient's tangential part, then
    clipped into the orthant."""
    tangent = grad - (grad @ t) * t
    norm = np.linalg.norm(tangent)
    if norm == 0:
        return t
    return project_sphere(np.cos(rho) * t + np.sin(rho) * tangent / norm)


def fraction_step(t, weighted, f, a):
    """The library's scale-free move a of the way to m = weighted / f, projected."""
    if f <= 0:
        return t
    return project_sphere(t + a * (weighted / f - t))


def step_sums(Xb, t, K, eta):
    """The authors' sums on a batch Xb of unit rows: (sum_i phi_i u_i x_i, f = phi^T u)
    with phi_i = exp(-(2 - 2 x_i . t) / eta) and u = M phi = phi - K lstsq(K^T K,
    K^T phi), K the finished landmarks' kernel values on the batch (b x k).
    The gradient (eq. 10) is -(4 / eta) (t f - sum_i phi_i u_i x_i)."""
    phi = np.exp(-(2.0 - 2.0 * (Xb @ t.astype(Xb.dtype)).astype(np.float64)) / eta)
    u = phi
    if K.shape[1]:
        u = phi - K @ np.linalg.lstsq(K.T @ K, K.T @ phi, rcond=None)[0]
    weighted = ((phi * u).astype(Xb.dtype) @ Xb).astype(np.float64)
    return weighted, float(phi @ u)


def _start(start, X, rng):
    d = X.shape[1]
    if start == "uniform":
        return uniform_start(d)
    mean = X.mean(axis=0, dtype=np.float64)
    if start == "mean":
        return project_sphere(mean)
    std = X.std(axis=0, dtype=np.float64)
    return project_sphere(mean + std * rng.standard_normal(d))


def sphere_landmarks(X, n_landmarks, eta, *, move="unit", start="uniform", n_steps=1000,
                     batch_size=1000, t0=10.0, gamma=0.51, replace=True, seed=0,
                     callback=None):
    """GP landmarks of unit-norm rows X on the sphere-orthant, one after another.

    Parameters
    ----------
    X : ndarray (N, d), rows of unit norm (float32 or float64)
    n_landmarks : int
    eta : float, the kernel width
    move : {"unit", "geodesic", "fraction"}
    start : {"uniform", "gaussian", "mean"}
    n_steps, batch_size : int
    t0, gamma : float, the schedule rho_s = (t0 + s)^-gamma (a fraction for
        ``move="fraction"``, a length for "unit", an angle for "geodesic")
    replace : bool, batches drawn with replacement (the authors') or as slices of a
        permutation (a new one whenever one is used up)
    seed : int
    callback : callable, optional, called as ``callback(k, landmarks[:k + 1])``
        after landmark k (so that prefixes can be timed and scored)

    Returns
    -------
    ndarray (n_landmarks, d), float64
    """
    rng = np.random.default_rng(seed)
    N, d = X.shape
    landmarks = np.zeros((n_landmarks, d))
    # Kernel values of the finished landmarks on every row (the authors' K, cached).
    table = np.zeros((N, n_landmarks))
    perm, used = rng.permutation(N), 0
    for k in range(n_landmarks):
        t = _start(start, X, rng)
        for s in range(1, n_steps + 1):
            if replace:
                idx = rng.choice(N, size=batch_size)
            else:
                if used + batch_size > N:
                    perm, used = rng.permutation(N), 0
                idx, used = perm[used:used + batch_size], used + batch_size
            weighted, f = step_sums(X[idx], t, table[idx, :k], eta)
            rho = (t0 + s) ** -gamma
            if move == "fraction":
                t = fraction_step(t, weighted, f, rho)
                continue
            grad = -(4.0 / eta) * (t * f - weighted)
            t = unit_step(t, grad, rho) if move == "unit" else geodesic_step(t, grad, rho)
        landmarks[k] = t
        table[:, k] = np.exp(-(2.0 - 2.0 * (X @ t.astype(X.dtype)).astype(np.float64)) / eta)
        if callback is not None:
            callback(k, landmarks[:k + 1])
    return landmarks
