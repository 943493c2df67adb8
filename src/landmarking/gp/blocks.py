"""GP landmarks in blocks: the joint objective of B new landmarks, and its step.

The paper's future work (section 6, "a joint optimization over all the
landmarks"), one block at a time. Symbols as in :mod:`.objective`,
and:

- ``T = [t_1, ..., t_B]``: the block of B landmarks optimised together, given the
  k landmarks before them;
- ``Phi_p`` (b x k): the earlier landmarks' kernel values on a batch of b points;
  ``Phi_B`` (b x B): the block's, ``Phi_B[i, j] = phi_{x_i}(t_j)``;
- ``M = I - Phi_p (Phi_p^T Phi_p + r I)^-1 Phi_p^T``: projection out of the
  earlier span, with the fit's ridge r (symmetric; never formed);
- ``U = M Phi_B`` (b x B), ``G = Phi_B^T U = Phi_B^T M Phi_B`` (B x B).

The joint objective
-------------------
::

    J(T) = log det G = sum_j log f_j,

where f_j, the squared pivots of the Cholesky factor of G, are the sequential
objectives: f_1 is t_1's posterior variance given the earlier landmarks, f_2 is
t_2's given those and t_1, and so on (the Schur complements of G). So J is the sum
of the block's sequential log posterior variances under the plug-in manifold
kernel, and it does not depend on the order inside the block. For B = 1,
J = log f, whose ascent direction is today's.

The gradient
------------
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

the gradient step with rate ``a_s eta / 4``, limited as today to
``MAX_STEP_WIDTHS sqrt(eta)`` plus the distance to the batch's nearest point.
For B = 1, G = f and W = phi * u / f: today's step, m / f.

Relative kernel values: like the sequential step, each column of Phi_B is taken
relative to its landmark's nearest point in the batch, ``Phi_B D`` with D diagonal.
Then U -> U D, G -> D G D, U G^-1 -> U G^-1 D^-1 and W is unchanged: the step is
exact however far a landmark starts from the data, and the pivots f_j scale by
D_jj^2 (the true ones are ``f_j exp(-2 shift_j / eta)``).

A landmark whose pivot is not above ``1e-10`` of its ``phi^T phi`` (a landmark
that duplicates an earlier one or one of the block, or sees none of the batch) does
not move on that step and is left out of the block's span for it, as the
sequential step skips such a batch; the others then step on the factor of G without
it.

Greedy order
------------
The landmarks of a finished block are put in the order of the greedy choice
(:func:`greedy_order`): first the one with the largest posterior variance given
the earlier landmarks on all the data, then the largest given those and it, and so
on (pivoted Cholesky of the block's Gram matrix on all the data). So every prefix
of ``landmarks_`` is a landmark set in the sense of the sequential fit.

Implementations
---------------
:func:`block_step_numpy` is the plain NumPy reference (and the step for CSR
chunks, and where the batch factors are not kept). :class:`CompiledSteps` runs all
the steps of a block on one chunk visit in one compiled call (:mod:`._kernels`,
Cython): the distances of the batch to the B landmarks, the kernel values, the
projection out of the earlier span with the batch's Cholesky factor, G and its
factor, W, and ``X_b^T W``, then the B moves, on ``n_jobs`` threads with sums
whose order does not depend on the thread count. :func:`optimise_block` runs a
block's steps over the batches of a fit: the one host driver of the steps, for one
landmark (B = 1, the sequential fit) as for a block.
"""

import numpy as np

from .._typing import ArrayLike, NDArray
from .batches import _visit_arrays, _visit_pieces
from .objective import (
    AUTO_WINDOW,
    MIN_RELATIVE_F,
    NUMPY_OPS,
    RIDGE,
    moved_landmark,
    step_size,
)

__all__ = ["block_objective_and_gradient", "greedy_order"]

#: ``GPLandmarks(block_size="auto")``: blocks of this many landmarks when a run
#: learns at least this many, else one landmark at a time. Measured (the guide's
#: "Blocks of landmarks", ``benchmarks/gp_block_default.py``): at 50 landmarks and
#: more, blocks of 50 match or beat the sequential fit on MNIST, faces and 20
#: Newsgroups; with 12 and 25 landmarks on 20 Newsgroups they lose topic purity.
AUTO_BLOCK_SIZE = 50
#: ``n_steps=None``: steps per landmark of the sequential fit (the paper's S) ...
SEQUENTIAL_STEPS = 1000
#: ... and per block: a block of 50 reaches the sequential fit's accuracy in 100.
BLOCK_STEPS = 100


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


def _block_kernel(XB, xsq_B, T, eta):
    """Phi_B (b, B) relative to each landmark's nearest point, and the shifts (B,)."""
    dots = np.asarray(XB @ T.T.astype(XB.dtype), dtype=np.float64)
    d2 = np.asarray(xsq_B, dtype=np.float64)[:, None] - 2.0 * dots + (T * T).sum(axis=1)
    np.maximum(d2, 0, out=d2)
    shift = d2.min(axis=0)
    return np.exp((d2 - shift) * (-1.0 / eta)), shift


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


def block_step_numpy(XB, xsq_B, Phi_p, L_p, T, eta):
    """One block step's sums with NumPy operations: the reference.

    Parameters
    ----------
    XB : (b, d) the batch; ``xsq_B`` its squared row norms.
    Phi_p : (b, k) the earlier landmarks' kernel values on the batch.
    L_p : (k, k) lower Cholesky factor of ``Phi_p^T Phi_p + ridge I`` (the batch's).
    T : (B, d) float64, the block.
    eta : kernel width.

    Returns
    -------
    S : (B, d) float64, ``X_b^T W`` (row j is landmark j's target)
    f : (B,) pivots of G (relative kernel values)
    phi_sq : (B,) phi_j^T phi_j (relative)
    nearest : (B,) squared distance from each landmark to the batch
    active : (B,) bool, the landmarks that move
    """
    Phi_B, nearest = _block_kernel(XB, xsq_B, T, eta)
    if Phi_p.shape[1]:
        Phi_p = np.asarray(Phi_p, dtype=np.float64)
        y = np.linalg.solve(L_p, Phi_p.T @ Phi_B)
        U = Phi_B - Phi_p @ np.linalg.solve(L_p.T, y)
    else:
        U = Phi_B
    G = Phi_B.T @ U
    G = 0.5 * (G + G.T)
    phi_sq = (Phi_B * Phi_B).sum(axis=0)
    f, active, L = pivots_with_drops(G, phi_sq)
    S = np.zeros(T.shape)
    if active.any():
        V = np.linalg.solve(L.T, np.linalg.solve(L, U[:, active].T)).T
        W = Phi_B[:, active] * V
        # X_b^T W for a dense or a CSR batch.
        S[active] = np.asarray(XB.T @ W, dtype=np.float64).T
    return S, f, phi_sq, nearest, active


def move_block(T, S, active, fraction, max_step, nearest, space):
    """t_j <- Proj_S(t_j + a (S_j - t_j)) for the active landmarks: the sequential
    step's move (:func:`.objective.moved_landmark`) with m = S_j and f = 1 (the
    weights are normalised); T is changed in place."""
    for j in np.flatnonzero(active):
        T[j] = moved_landmark(T[j], S[j], 1.0, fraction, max_step, nearest[j], space,
                              NUMPY_OPS)
    return T


def extended_gram(previous, cross):
    """Phi^T Phi over all rows for landmarks 0..end-1, from the (k x k) Gram matrix
    of the first k and the (end x (end - k)) cross products of all with the block
    k..end-1: kept between blocks by both backends, so that a block's greedy order
    costs one product of the block's columns, not of all."""
    end, k = cross.shape[0], previous.shape[0]
    gram = np.zeros((end, end))
    gram[:k, :k] = previous
    gram[:, k:] = cross
    gram[k:, :] = cross.T
    return gram


def reordered_gram(gram, k, order):
    """``gram`` with the landmarks k, k + 1, ... of a finished block put in ``order``."""
    index = np.concatenate([np.arange(k), k + np.asarray(order)])
    return gram[np.ix_(index, index)]


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


class CompiledSteps:
    """The steps of a block (of one landmark too) on a chunk visit in one compiled
    call (:func:`._kernels.visit_steps`) for dense chunks whose batch factors are
    kept; :meth:`steps` returns None where that does not apply (CSR chunks, factors
    not kept) and the caller steps one batch at a time with the NumPy reference
    (:func:`block_steps_one_at_a_time`).

    ``n_threads``: the threads a visit runs on (the landmarks do not depend on it).
    """

    def __init__(self, n_threads=1):
        self.n_threads = n_threads
        self.work, self.key = None, None

    def _work(self, B, b, d, k, dtype):
        from ._kernels import step_work

        key = (B, d, np.dtype(dtype))
        if self.key != key or self.work[1].shape[1] < b or self.work[2].shape[1] < max(k, 1):
            self.work = step_work(B, b, d, k, dtype)
            self.key = key
        return self.work

    def steps(self, span, c, batches, chunk, T, eta, first, *, s0, tau, max_step, space,
              visit_length):
        """Steps on ``batches`` of chunk c (in order), numbered from ``first``, in one
        compiled call that moves T (B, d) in place; ``chunk`` is ``span.visit(c)``,
        ``visit_length`` the steps of the whole visit (``batches`` may be part of
        it). Returns (n_steps, B, 3): each step's pivots f_j, phi_j^T phi_j and
        nearest squared distances; or None, having done nothing."""
        from ._kernels import SPACE_CODES, visit_steps

        arrays = _visit_arrays(span, c, batches, chunk, visit_length)
        if arrays is None:
            return None
        Xc, xsq_c, perm, positions, bounds, table, k, Ls, _ = arrays
        work = self._work(T.shape[0], int(np.diff(bounds).max()), Xc.shape[1], k, Xc.dtype)
        sums = np.empty((len(batches), T.shape[0], 3))
        visit_steps(Xc, xsq_c, perm, positions, bounds, np.asarray(batches, dtype=np.int64),
                    table, k, Ls, T, float(eta), int(first), float(s0), float(tau),
                    float(max_step), SPACE_CODES[space], MIN_RELATIVE_F, work, sums,
                    self.n_threads)
        return sums


def block_steps_one_at_a_time(T, span, c, batches, chunk, eta, first, *, s0, tau, space,
                              max_step):
    """The block's steps on ``batches`` of chunk c with :func:`block_step_numpy`
    (T moved in place); returns (n_steps, B, 3) as :meth:`CompiledSteps.steps`."""
    Xc, xsq_c, Phi_c = chunk
    sums = np.empty((len(batches), T.shape[0], 3))
    for q, j in enumerate(batches):
        rows = span.chunks.batch_rows(c, j)
        positions = span.chunks.batch_positions(c, j)
        factor = span.factor(c, j, Phi_c, positions)
        k = factor.size
        S, f, phi_sq, nearest, active = block_step_numpy(
            Xc[rows], xsq_c[rows], Phi_c[positions, :k], factor.L[:k, :k], T, eta)
        move_block(T, S, active, step_size(first + q, s0, tau), max_step, nearest, space)
        sums[q, :, 0], sums[q, :, 1], sums[q, :, 2] = f, phi_sq, nearest
    return sums


def optimise_block(T, span, eta, order, *, s0, tau, space, step, max_step, rule=None,
                   step_bar=None, first_step=1):
    """The projected steps of a block of landmarks T (B, d) given the span before
    them; returns (T, steps run).

    The one host driver of the steps, for blocks and for one landmark (B = 1):
    ``order`` lists (chunk, batch) per step, a visit's steps run in one compiled
    call (``step``, a :class:`CompiledSteps`, or None for the NumPy reference
    steps); ``first_step`` numbers the first step (its fraction a_s); ``rule`` (an
    :class:`.objective._Convergence`) stops the block when the sum of its
    landmarks' batch objectives has stopped rising.
    """
    T = np.array(T, dtype=np.float64)
    fused = None if step is None else step.steps
    s = 0
    for c, chunk, now, visit_length, s in _visit_pieces(
            span, order, None if rule is None else AUTO_WINDOW):
        sums = None if fused is None else fused(
            span, c, now, chunk, T, eta, first_step + s, s0=s0, tau=tau, max_step=max_step,
            space=space, visit_length=visit_length)
        if sums is None:
            sums = block_steps_one_at_a_time(T, span, c, now, chunk, eta, first_step + s,
                                             s0=s0, tau=tau, space=space, max_step=max_step)
        for block_sums, j in zip(sums, now, strict=True):
            s += 1
            if step_bar is not None and s % 100 == 0:
                step_bar.update(100)
            if rule is not None:
                # The block's batch objective: the sum of its landmarks' true pivots.
                value = float(np.sum(np.maximum(block_sums[:, 0], 0.0)
                                     * np.exp(-2.0 * block_sums[:, 2] / eta)))
                if rule.converged(s, value, 0.0, eta, len(span.chunks.batch_rows(c, j))):
                    return T, s
    return T, s
