"""GP manifold landmarking (Liang & Paisley, ICML 2015).

Symbols of the paper, used throughout this module:

- ``x_i``: a data point; ``t``: a landmark being optimised; ``eta``: the kernel width.
- ``phi_x(t) = exp(-||t - x||^2 / eta)``: the Gaussian kernel between point and landmark.
- ``Phi``: the b x k matrix of kernel values between the b points of a minibatch and the
  k landmarks already chosen.
- ``M = I - Phi (Phi^T Phi)^-1 Phi^T``: projection out of the span of Phi (never formed).
- ``f(t) = phi(t)^T M phi(t)``: the objective (eq. 7), the squared length of phi(t)
  outside the span of the existing landmarks' columns: the GP posterior variance of the
  plug-in manifold kernel. New landmarks are drawn to dense, unexplained data.
- ``u = M phi``; the gradient (eq. 10) is
  ``grad f = -(4 / eta) (t (phi^T u) - sum_i x_i phi_i u_i) = (4 f / eta) (m - t)``
  with ``m = sum_i x_i phi_i u_i / f``, a weighted mean of the batch.

The scale-free step
-------------------
The paper's step ``t + rho_s grad f`` has units of data / eta, so the same data in
other units gives other landmarks. Here the step moves a dimensionless fraction
``a_s = (s0 + s)^-tau`` (the paper's Robbins-Monro schedule) of the way to ``m``::

    t <- Proj_S(t + a_s (m - t)),

which is the gradient step with rate ``rho_s = a_s eta / (4 f)``. ``m`` is a weighted
mean of data points, so multiplying the data by c and shifting it multiplies and
shifts ``m`` and therefore every landmark; ``eta`` from the data scales by c^2. The
weights may be negative (points already explained by earlier landmarks repel), which
can send ``m`` far away when f is small: each step is therefore limited to
``MAX_STEP_WIDTHS * sqrt(eta)`` plus the distance to the batch's nearest point (so
that a start far from the data can still reach it), again a length in data units.

Kernel values are computed relative to the batch's nearest point (a common factor
of phi that cancels from ``m``), so a landmark far from the data, whose kernel values
would underflow to zero, still gets an exact step toward it.

The paper's future work (section 6, "a joint optimization over all the
landmarks"), one block at a time (``GPLandmarks(block_size=B)``; the sequential fit
is B = 1, the same step). Further symbols:

- ``T = [t_1, ..., t_B]``: the block of B landmarks optimised together, given the
  k landmarks before them;
- ``Phi_p`` (b x k): the earlier landmarks' kernel values on a batch of b points;
  ``Phi_B`` (b x B): the block's, ``Phi_B[i, j] = phi_{x_i}(t_j)``;
- ``M = I - Phi_p (Phi_p^T Phi_p + r I)^-1 Phi_p^T``: projection out of the
  earlier span, with the fit's ridge r (symmetric; never formed);
- ``U = M Phi_B`` (b x B), ``G = Phi_B^T U = Phi_B^T M Phi_B`` (B x B).

The joint objective of a block
------------------------------
::

    J(T) = log det G = sum_j log f_j,

where f_j, the squared pivots of the Cholesky factor of G, are the sequential
objectives: f_1 is t_1's posterior variance given the earlier landmarks, f_2 is
t_2's given those and t_1, and so on (the Schur complements of G). So J is the sum
of the block's sequential log posterior variances under the plug-in manifold
kernel, and it does not depend on the order inside the block. For B = 1,
J = log f, whose ascent direction is the sequential step's.

The gradient of the joint objective
-----------------------------------
Only Phi_B depends on T. With M symmetric, dG = dPhi_B^T U + U^T dPhi_B, so::

    dJ = tr(G^-1 dG) = 2 tr(G^-1 U^T dPhi_B) = 2 sum_{i,j} (U G^-1)_{ij} dPhi_B[i, j].

Phi_B[i, j] depends on t_j alone, with d phi_{x_i}(t_j) / d t_j =
-(2 / eta) (t_j - x_i) phi_{x_i}(t_j). Writing ``W = Phi_B * (U G^-1)``
(elementwise, b x B)::

    grad_{t_j} J = -(4 / eta) sum_i W_ij (t_j - x_i)
                 = (4 / eta) (X^T W[:, j] - t_j sum_i W_ij).

The columns of W sum to one: sum_i W_ij = (Phi_B^T U G^-1)_jj = (G G^-1)_jj = 1.
Hence ``grad_{t_j} J = (4 / eta) (X^T W[:, j] - t_j)``, and the scale-free step of
the sequential fit carries over landmark by landmark::

    t_j <- Proj_S(t_j + a_s (X^T W[:, j] - t_j)),

the gradient step with rate ``a_s eta / 4``, limited as the sequential step to
``MAX_STEP_WIDTHS sqrt(eta)`` plus the distance to the batch's nearest point.
For B = 1, G = f and W = phi * u / f: the sequential step, m / f.

Relative kernel values: like the sequential step, each column of Phi_B is taken
relative to its landmark's nearest point in the batch, ``Phi_B D`` with D diagonal.
Then U -> U D, G -> D G D, U G^-1 -> U G^-1 D^-1 and W is unchanged: the step is
exact however far a landmark starts from the data, and the pivots f_j scale by
D_jj^2 (the true ones are ``f_j exp(-2 shift_j / eta)``).

A landmark whose pivot is not above ``MIN_RELATIVE_F`` (1e-10) of its
``phi^T phi`` (a landmark that duplicates an earlier one or one of the block, or
sees none of the batch) does not move on that step and is left out of the block's
span for it (:func:`pivots_with_drops`); the others then step on the factor of G
without it. For B = 1 this is the sequential rule, :func:`takes_step`.

Greedy order
------------
The landmarks of a finished block are put in the order of the greedy choice
(:func:`greedy_order`): first the one with the largest posterior variance given
the earlier landmarks on all the data, then the largest given those and it, and so
on (pivoted Cholesky of the block's Gram matrix on all the data). So every prefix
of ``landmarks_`` is a landmark set in the sense of the sequential fit.

This module holds these formulae once, for every backend: :func:`step_size`, the
move of a step (:func:`moved_landmark`, with its guard :func:`takes_step`), the
stopping rule of ``n_steps="auto"`` (:class:`_Convergence`, :func:`window_stops`),
the reference objectives and gradients (:func:`gp_objective_and_gradient`,
:func:`block_objective_and_gradient`), the factor with drops
(:func:`pivots_with_drops`), the greedy order (:func:`greedy_order`) and the
objectives on all the data from a Gram matrix (:func:`_objectives`). The NumPy
backend (:mod:`._cpu`) and the torch backend (:mod:`._torch`) call them with
their own array primitives; the compiled step (:mod:`._loops`) has compiled
twins of the move and of the factor with drops, which the tests pin to these.
"""

from types import SimpleNamespace

import numpy as np
from scipy.linalg import LinAlgError, get_lapack_funcs, solve_triangular

from .._typing import ArrayLike, NDArray
from ..spaces import project

__all__ = ["gp_objective_and_gradient", "block_objective_and_gradient", "step_size",
           "greedy_order"]

#: LAPACK's float64 triangular solve, which ``scipy.linalg.solve_triangular`` calls.
_TRTRS = get_lapack_funcs("trtrs", (np.zeros((1, 1)),))
#: Ridge added to a Gram matrix ``Phi^T Phi`` of b rows, relative to b.
RIDGE = 1e-8
#: A step moves a landmark by at most this many kernel lengths sqrt(eta).
MAX_STEP_WIDTHS = 3.0
#: ``n_steps="auto"``: at most this many steps per landmark (the paper's fixed S) ...
AUTO_MAX_STEPS = 1000
#: ... at least this many ...
AUTO_MIN_STEPS = 100
#: ... and stop when the mean batch objective over a window of this many steps ...
AUTO_WINDOW = 50
#: ... improves on the window before by less than this fraction of itself.
AUTO_TOL = 0.01
#: A step moves the landmark only when f exceeds this fraction of phi^T phi (else m
#: is noise: the batch is explained by the landmarks before).
MIN_RELATIVE_F = 1e-10


def step_size(s: int | np.ndarray, s0: float, tau: float) -> float | np.ndarray:
    """Robbins-Monro step fraction a_s = (s0 + s)^-tau for step s = 1, 2, ..."""
    return (s0 + s) ** -tau


def gp_objective_and_gradient(t: ArrayLike, X: ArrayLike, Phi: np.ndarray, eta: float, *,
                              ridge: float = RIDGE) -> tuple[float, NDArray[np.float64]]:
    """The objective f(t) (eq. 7) and its gradient (eq. 10) on a batch X.

    A direct, readable evaluation (no caching), used by tests and for reporting.

    Parameters
    ----------
    t : ndarray (d,)
    X : ndarray (b, d), the batch
    Phi : ndarray (b, k), kernel values of the existing landmarks on the batch
    eta : float, kernel width

    Returns
    -------
    f : float
    grad : ndarray (d,)
    """
    t = np.asarray(t, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    phi = np.exp(-np.sum((X - t) ** 2, axis=1) / eta)
    u = phi.copy()
    if Phi.shape[1]:
        Phi = np.asarray(Phi, dtype=np.float64)
        gram = Phi.T @ Phi + ridge * len(X) * np.eye(Phi.shape[1])
        u -= Phi @ np.linalg.solve(gram, Phi.T @ phi)
    f = float(phi @ u)
    grad = -(4.0 / eta) * (t * f - X.T @ (phi * u))
    return f, grad


def block_objective_and_gradient(T: ArrayLike, X: ArrayLike, Phi: ArrayLike, eta: float, *,
                                 ridge: float = RIDGE) -> tuple[float, NDArray[np.float64]]:
    """J(T) = log det(Phi_B^T M Phi_B) on a batch, and its gradient (B, d).

    A direct evaluation with true (not relative) kernel values, for tests and
    reports; see the module docstring for the derivation.

    Parameters
    ----------
    T : ndarray (B, d), the block's landmarks
    X : ndarray (b, d), the batch
    Phi : ndarray (b, k), the earlier landmarks' kernel values on the batch
    eta : float, kernel width
    ridge : float, relative to b, as the fit's factor

    Returns
    -------
    J : float
    grad : ndarray (B, d)
    """
    T = np.atleast_2d(np.asarray(T, dtype=np.float64))
    X = np.asarray(X, dtype=np.float64)
    d2 = ((X[:, None, :] - T[None, :, :]) ** 2).sum(axis=-1)
    Phi_B = np.exp(-d2 / eta)
    U = _project_out(Phi_B, np.asarray(Phi, dtype=np.float64), ridge * len(X))
    G = Phi_B.T @ U
    sign, J = np.linalg.slogdet(G)
    W = Phi_B * np.linalg.solve(G, U.T).T
    grad = (4.0 / eta) * (W.T @ X - T * W.sum(axis=0)[:, None])
    return float(J) if sign > 0 else -np.inf, grad


def _project_out(Phi_B, Phi_p, ridge):
    """M Phi_B: the columns of Phi_B less their ridge projection on Phi_p."""
    if Phi_p.shape[1] == 0:
        return Phi_B.copy()
    gram = Phi_p.T @ Phi_p + ridge * np.eye(Phi_p.shape[1])
    return Phi_B - Phi_p @ np.linalg.solve(gram, Phi_p.T @ Phi_B)


def pivots_with_drops(G, phi_sq, tol=MIN_RELATIVE_F):
    """Cholesky of G in index order, leaving out columns whose pivot is too small.

    Returns (f, active, L): the pivot f_j of every column given the active columns
    before it (NaN-free; a dropped column keeps its pivot), the boolean mask of the
    columns kept, and the factor L (n_active x n_active) of G restricted to them.
    """
    B = len(G)
    f = np.zeros(B)
    active = np.zeros(B, dtype=bool)
    L = np.zeros((B, B))
    n = 0
    rows = []
    for j in range(B):
        cross = G[rows, j]
        y = _forward(L[:n, :n], cross)
        f[j] = G[j, j] - y @ y
        if f[j] > tol * phi_sq[j]:
            L[n, :n] = y
            L[n, n] = np.sqrt(f[j])
            rows.append(j)
            active[j] = True
            n += 1
    return f, active, L[:n, :n]


def _forward(L, rhs):
    out = np.array(rhs, dtype=np.float64)
    for a in range(len(out)):
        out[a] = (out[a] - L[a, :a] @ out[:a]) / L[a, a]
    return out


def greedy_order(gram: ArrayLike, k: int,
                 ridge: float) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The order of a block's landmarks by the greedy choice on all the data.

    ``gram`` is Phi^T Phi (k + B square) over all the data, the earlier k landmarks
    first. Returns (order, f): the block's indices (0..B-1), largest posterior
    variance given the earlier ones first, then given those and the first chosen,
    and so on (pivoted Cholesky on the Schur complement, ties to the lower index),
    and each one's posterior variance (sum over the data, not divided by N) in
    that order.
    """
    gram = np.asarray(gram, dtype=np.float64)
    n = len(gram)
    B = n - k
    G = gram + ridge * np.eye(n)
    if k:
        Lp = np.linalg.cholesky(G[:k, :k])
        Y = np.linalg.solve(Lp, G[:k, k:])
        S = G[k:, k:] - Y.T @ Y
    else:
        S = G[k:, k:].copy()
    remaining = list(range(B))
    order, f = [], []
    for _ in range(B):
        diag = np.array([S[j, j] for j in remaining])
        pick = remaining[int(np.argmax(diag))]
        value = S[pick, pick]
        order.append(pick)
        f.append(max(value, 0.0))
        remaining.remove(pick)
        if value > 0:
            col = S[:, pick] / np.sqrt(value)
            S = S - np.outer(col, col)
    return np.asarray(order, dtype=np.int64), np.asarray(f)


def max_steps(n_steps):
    """Steps per landmark: ``n_steps``, or ``AUTO_MAX_STEPS`` for "auto" (read when
    called, so that every backend sees the same value)."""
    return AUTO_MAX_STEPS if isinstance(n_steps, str) else n_steps


def takes_step(f, phi_sq):
    """Whether a step with batch objective f and phi^T phi moves the landmark."""
    return f > MIN_RELATIVE_F * phi_sq


def moved_landmark(t, weighted, f, fraction, max_step, nearest_d2, space, ops):
    """The step's new landmark ``Proj_S(t + a (m - t))``, with m = weighted / f.

    The move is limited to ``max_step`` plus the distance to the batch's nearest
    point (``sqrt(nearest_d2)``), then projected onto ``space``. Written once for
    every backend: ``ops`` gives the array primitives (``norm`` of a vector,
    ``sqrt``, elementwise ``maximum``, ``project(t, space)``): :data:`NUMPY_OPS`
    here, torch's in :mod:`._torch`. The caller applies :func:`takes_step`.
    """
    move = fraction * (weighted / f - t)
    limit = max_step + ops.sqrt(nearest_d2)
    # limit / max(length, limit) is exactly 1 when the move is short enough.
    move = move * (limit / ops.maximum(ops.norm(move), limit))
    t = t + move
    return t if space == "euclidean" else ops.project(t, space)


#: The NumPy primitives of :func:`moved_landmark`.
NUMPY_OPS = SimpleNamespace(norm=np.linalg.norm, sqrt=np.sqrt, maximum=np.maximum,
                            project=project)


def window_stops(now, before):
    """The test of ``n_steps="auto"`` between the mean batch objective of the last
    window (``now``) and of the one before: it has stopped rising."""
    return (now > 0) & (now - before <= AUTO_TOL * now)


def first_check_window():
    """The number of the first window (counted from 1) at whose end the rule is
    checked: after at least ``AUTO_MIN_STEPS`` steps and two windows."""
    return -(-max(AUTO_MIN_STEPS, 2 * AUTO_WINDOW) // AUTO_WINDOW)


def batch_objective(f, nearest_d2, eta, b, exp):
    """f / b with the true kernel values (the relative ones times exp(-2 shift /
    eta)): an unbiased estimate of the objective on all data."""
    return f * exp(-2.0 * nearest_d2 / eta) / b


class _Convergence:
    """The rule of ``n_steps="auto"`` on the host: stop when the mean batch objective
    (:func:`batch_objective`) over the last ``AUTO_WINDOW`` steps has stopped rising
    (:func:`window_stops`), checked at the end of each window from
    :func:`first_check_window` on.
    """

    def __init__(self, max_steps):
        self.values = np.zeros(max_steps)

    def converged(self, s, f, nearest_d2, eta, b):
        self.values[s - 1] = batch_objective(f, nearest_d2, eta, b, np.exp)
        if s % AUTO_WINDOW or s // AUTO_WINDOW < first_check_window():
            return False
        before = self.values[s - 2 * AUTO_WINDOW:s - AUTO_WINDOW].mean()
        now = self.values[s - AUTO_WINDOW:s].mean()
        return bool(window_stops(now, before))


class _CholeskyFactor:
    """A lower-triangular factor L of ``Phi^T Phi + ridge I`` that grows by columns."""

    def __init__(self, capacity, ridge, L=None):
        self.L = np.zeros((capacity, capacity)) if L is None else L
        self.size = 0
        self.ridge = ridge

    @classmethod
    def of_gram(cls, gram, ridge):
        """The factor of a whole Gram matrix (k x k) at once."""
        k = len(gram)
        factor = cls(k, ridge)
        try:
            factor.L[:] = np.linalg.cholesky(gram + ridge * np.eye(k))
            factor.size = k
        except np.linalg.LinAlgError:
            # Duplicated columns whose rounding beats the ridge: column by column,
            # with the residual floored at the ridge as in append.
            for col in range(k):
                factor.append(gram[:col, col], gram[col, col])
        return factor

    def append(self, cross, diag):
        """Add a column with inner products ``cross`` (k,) to the old ones and ``diag``."""
        k = self.size
        row = _lower_solve(self.L[:k, :k], np.asarray(cross, dtype=np.float64))
        residual = diag + self.ridge - row @ row
        # Rounding can make the residual of a duplicated column slightly negative;
        # the ridge is the smallest value it can truly have.
        self.L[k, :k] = row
        self.L[k, k] = np.sqrt(max(residual, self.ridge))
        self.size = k + 1

    def solve(self, rhs):
        """(Phi^T Phi + ridge I)^-1 rhs, by two triangular solves."""
        L = self.L[: self.size, : self.size]
        y = solve_triangular(L, rhs, lower=True, check_finite=False)
        return solve_triangular(L.T, y, lower=False, check_finite=False)


def _lower_solve(L, rhs):
    """L^-1 rhs for a lower-triangular L: LAPACK's trtrs called as
    ``solve_triangular(L, rhs, lower=True)`` calls it (on L in Fortran order, else
    the transposed system of L.T), so the same bits, without the wrapper's checks
    and conversions: a fit with a sample of 1,000 batches grows each batch's
    factor by a column per landmark, 49,000 small solves in a fit of 50 landmarks,
    where the wrapper took most of the time."""
    if not len(rhs):
        return rhs[:0]
    if L.flags.f_contiguous:
        row, info = _TRTRS(L, rhs, lower=1, trans=0)
    else:
        row, info = _TRTRS(L.T, rhs, lower=0, trans=1)
    if info > 0:
        raise LinAlgError(f"singular matrix: resolution failed at diagonal {info - 1}")
    return row


def _objectives(gram, n_samples, start):
    """(1/N) phi_k^T M phi_k on all the data for landmarks k >= start.

    From the Gram matrix of all kernel columns, Phi^T Phi: the Schur complement of
    landmark k against the landmarks before it, with the fit's ridge.
    """
    factor = _CholeskyFactor(len(gram), RIDGE * n_samples)
    objectives = []
    for k in range(len(gram)):
        if k >= start:
            objectives.append(_full_objective(gram[k, k], gram[:k, k], factor, n_samples))
        factor.append(gram[:k, k], gram[k, k])
    return np.asarray(objectives)


def _full_objective(square_norm, cross, full_factor, n_samples):
    """(1/N) phi^T M phi on all the data: the posterior variance at the landmark.

    ``square_norm`` is phi^T phi and ``cross`` is Phi^T phi over all N points.
    """
    total = square_norm
    if full_factor.size:
        total -= cross @ full_factor.solve(cross)
    return max(total, 0.0) / n_samples


def _conditional_objective(gram, k, column, n_samples):
    """(1/N) phi^T M_{-k} phi on all the data: the posterior variance of a landmark
    with kernel column inner products ``column`` (Phi^T phi, then phi^T phi), given
    every landmark but k."""
    others = np.delete(np.arange(len(gram)), k)
    G = gram[np.ix_(others, others)] + RIDGE * n_samples * np.eye(len(others))
    cross = column[others]
    total = column[-1] - (cross @ np.linalg.solve(G, cross) if len(others) else 0.0)
    return max(total, 0.0) / n_samples


def extended_gram(previous, cross):
    """Phi^T Phi over all rows for landmarks 0..end-1, from the (first x first) Gram
    matrix of the first landmarks and the (end x (end - first)) cross products of all
    with the rest: a block's greedy order then costs one product of the block's
    columns, not of all."""
    end, first = cross.shape[0], previous.shape[0]
    gram = np.zeros((end, end))
    gram[:first, :first] = previous
    gram[:, first:] = cross
    gram[first:, :] = cross.T
    return gram


def reordered_gram(gram, k, order):
    """``gram`` with the landmarks k, k + 1, ... of a finished block put in ``order``."""
    index = np.concatenate([np.arange(k), k + np.asarray(order)])
    return gram[np.ix_(index, index)]


class _Gram:
    """Phi^T Phi over all rows of the kernel columns of the finished landmarks, kept
    on the host from block to block (the backend's fit state ``fit`` computes each
    block's cross products) for the blocks' greedy orders (:func:`greedy_order`) and
    the objectives at the end (:func:`_objectives`), in
    :func:`~landmarking.gp.fit.learn_gp_landmarks`."""

    def __init__(self, fit):
        self.fit, self.matrix = fit, None

    def extended(self, k, end):
        """The Gram matrix of landmarks 0..end-1 once the block k..end-1 is done. Where
        it is not kept for the first k (a run that continues others), its cross
        products are computed for all: every entry is the same sum either way."""
        kept = self.matrix is not None and len(self.matrix) == k
        first = k if kept else 0
        previous = self.matrix if kept else np.zeros((0, 0))
        self.matrix = extended_gram(previous, self.fit.block_gram(k, end, first))
        return self.matrix

    def reorder(self, k, order):
        self.fit.reorder(k, order)
        self.matrix = reordered_gram(self.matrix, k, order)

    def of(self, k):
        """Phi^T Phi (k x k) of the first k landmarks: the kept matrix, or the backend's."""
        if self.matrix is not None and len(self.matrix) == k:
            return self.matrix.copy()
        return self.fit.gram(k)
