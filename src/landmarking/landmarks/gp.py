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

Speed
-----
- The minibatches are the consecutive blocks of one random permutation of the data,
  cycled in a random order; the permuted copy makes every batch a contiguous slice.
- Kernel values of finished landmarks on all N points are computed once, when the
  landmark is finished; a batch's Phi is a slice of that table.
- The Cholesky factor of each batch's Gram matrix ``Phi^T Phi`` is kept and grows by
  one row per landmark, so a step costs O(b d + b k + k^2) and ``M`` (b x b) is never
  formed. A tiny ridge keeps the factor defined when two landmarks coincide or a batch
  sees none of a landmark's neighbourhood.
- Threads: a step's matrix-vector products are too small to gain from BLAS threads,
  and threaded BLAS loses badly when the cores are busy (ten times slower measured on
  2 shared cores), so the step loop runs BLAS on one thread, within a
  ``threadpoolctl`` limit that ends with the loop. Everything else keeps the user's
  settings.
"""

import time
from concurrent.futures import ThreadPoolExecutor
from itertools import groupby
from numbers import Real

import numpy as np
from scipy import sparse
from scipy.linalg import solve_triangular
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from .._blocks import check_rows, chunk_bounds, reduce_row_blocks, take_rows, working_dtype
from .._checkpoint import check_checkpoint, landmark_checkpoint
from .._memory import available_memory
from .._validation import (
    SPACES,
    check_choice,
    check_enough_samples,
    check_feasible_for_space,
    check_positive_int,
)
from ..kernels import _features_of_block, column_mean_std, resolve_kernel_width
from ..spaces import project
from ._base import LandmarkTransformerMixin

__all__ = ["GPLandmarks", "learn_gp_landmarks", "step_size", "gp_objective_and_gradient"]

#: Ridge added to a Gram matrix ``Phi^T Phi`` of b rows, relative to b.
RIDGE = 1e-8
#: A step moves a landmark by at most this many kernel lengths sqrt(eta).
MAX_STEP_WIDTHS = 3.0
#: Cholesky factors of all batches are kept while they fit in this many bytes.
FACTOR_CACHE_BYTES = 512 * 2**20
#: Kernel values of finished landmarks on all rows are kept while they fit in this
#: many bytes; beyond, they are recomputed for each visited chunk.
KERNEL_TABLE_BYTES = 2 * 2**30


def step_size(s, s0, tau):
    """Robbins-Monro step fraction a_s = (s0 + s)^-tau for step s = 1, 2, ..."""
    return (s0 + s) ** -tau


def gp_objective_and_gradient(t, X, Phi, eta, *, ridge=RIDGE):
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


class _CholeskyFactor:
    """A lower-triangular factor L of ``Phi^T Phi + ridge I`` that grows by columns."""

    def __init__(self, capacity, ridge):
        self.L = np.zeros((capacity, capacity))
        self.size = 0
        self.ridge = ridge

    def append(self, cross, diag):
        """Add a column with inner products ``cross`` (k,) to the old ones and ``diag``."""
        k = self.size
        row = solve_triangular(self.L[:k, :k], cross, lower=True) if k else cross[:0]
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


class _BatchGram:
    """Per-batch Cholesky factors, extended lazily to the current number of landmarks.

    When all factors would not fit in ``FACTOR_CACHE_BYTES`` the factor is rebuilt
    at each step instead (same result, more work).
    """

    def __init__(self, n_batches, capacity, batch_sizes):
        self.capacity = capacity
        self.keep = n_batches * capacity**2 * 8 <= FACTOR_CACHE_BYTES
        self.factors = {}
        self.batch_sizes = batch_sizes

    def factor(self, j, Phi_B):
        """The factor of batch j for the columns of ``Phi_B`` (b x k)."""
        k = Phi_B.shape[1]
        factor = self.factors.get(j) if self.keep else None
        if factor is None:
            factor = _CholeskyFactor(self.capacity, RIDGE * self.batch_sizes[j])
            if self.keep:
                self.factors[j] = factor
        for col in range(factor.size, k):
            new = Phi_B[:, col].astype(np.float64)
            cross = Phi_B[:, :col].T.astype(np.float64) @ new if col else new[:0]
            factor.append(cross, new @ new)
        return factor


def _kernel_on_batch(XB, xsq_B, t_cast, t_sq, eta):
    """phi_x(t) on a batch, divided by its largest value; returns (phi, log scale).

    The true kernel values are ``phi * exp(-shift / eta)``. ``XB`` may be dense or
    CSR.
    """
    d2 = np.asarray(XB @ t_cast).ravel()
    d2 *= -2
    d2 += xsq_B
    d2 += t_sq
    np.maximum(d2, 0, out=d2)
    shift = float(d2.min())
    d2 -= shift
    d2 *= -1.0 / eta
    return np.exp(d2, out=d2), shift


def _weighted_sum(weights, XB):
    """sum_i weights_i x_i for a dense or CSR batch."""
    if sparse.issparse(XB):
        return np.asarray(XB.T @ weights).ravel()
    # weights @ XB, not XB.T @ weights: numpy runs the latter far slower.
    return weights @ XB


def _optimise_landmark(t, chunks, gram, eta, order, *, k, s0, tau, space, step_bar=None):
    """Run the S projected steps of Algorithm 1 for one landmark; returns t.

    ``order`` lists (chunk, batch) per step; the steps on one chunk are consecutive,
    so each visit reads the chunk once.
    """
    max_step = MAX_STEP_WIDTHS * np.sqrt(eta)
    t = np.asarray(t, dtype=np.float64).copy()
    s = 0
    for c, visit in groupby(order, key=lambda step: step[0]):
        Xc, xsq_c, Phi_c = chunks.visit(c, k)
        for _, j in visit:
            s += 1
            rows = chunks.batch_rows(c, j)
            XB = Xc[rows]
            phi, nearest_d2 = _kernel_on_batch(XB, xsq_c[rows], t.astype(Xc.dtype), t @ t, eta)
            if k:
                Phi_B = Phi_c[rows]
                coef = gram.factor(chunks.batch_id(c, j), Phi_B).solve(Phi_B.T @ phi)
                u = phi - Phi_B @ coef.astype(phi.dtype)
            else:
                u = phi
            weights = phi * u
            f = float(weights.sum(dtype=np.float64))
            if f > 1e-10 * float(phi @ phi):
                step = step_size(s, s0, tau) * (_weighted_sum(weights, XB) / f - t)
                length = np.linalg.norm(step)
                limit = max_step + np.sqrt(nearest_d2)
                if length > limit:
                    step *= limit / length
                t = t + step
                if space != "euclidean":
                    t = project(t, space)
            if step_bar is not None and s % 100 == 0:
                step_bar.update(100)
    return t


def _initial_point(k, init, mean, std, rng, space):
    if isinstance(init, str):
        t = mean + std * rng.standard_normal(mean.shape[0])
    else:
        t = np.asarray(init[k], dtype=np.float64)
    return project(t, space)


def _batches(n_samples, batch_size):
    """Start offsets of the consecutive batches; the last one takes the remainder."""
    n_batches = max(1, n_samples // batch_size)
    bounds = np.arange(n_batches + 1) * batch_size
    bounds[-1] = n_samples
    return bounds


def _batch_order(rng, batches_per_chunk, n_steps):
    """(chunk, batch) for each step: the chunks in a random order, the batches of
    each chunk in a random order, repeated until there are ``n_steps``."""
    order = []
    while len(order) < n_steps:
        for c in rng.permutation(len(batches_per_chunk)):
            order.extend((int(c), int(j)) for j in rng.permutation(batches_per_chunk[c]))
            if len(order) >= n_steps:
                break
    return order[:n_steps]


def _kernel_columns(block, landmarks, eta):
    """Kernel values (n_b, k) of landmarks on a block: one block of Phi.

    One landmark at a time: a matrix-vector product rounds differently from a
    matrix product, so computing columns singly makes every column the same bits
    however many are computed together (a continued run, a kept or recomputed table).
    """
    columns = np.empty((block.shape[0], len(landmarks)), dtype=block.dtype)
    for j, t in enumerate(landmarks.astype(block.dtype)):
        columns[:, j] = _features_of_block(block, t[None, :], eta)[:, 0]
    return columns


def _kernel_gram(block, landmarks, eta):
    """Phi_b^T Phi_b (k, k), float64, of one block."""
    columns = _kernel_columns(block, landmarks, eta).astype(np.float64)
    return columns.T @ columns


def _row_norms(block):
    if sparse.issparse(block):
        return np.asarray(block.multiply(block).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", block, block)


class _Chunks:
    """The data's chunks, each with its batches and the kernel values Phi on it.

    Chunk c (rows ``bounds[c]:bounds[c + 1]``) is cut into batches by a permutation
    of its rows drawn from ``(seed, c)``; batch j is a slice of that permutation, so
    no permuted copy of the data is made. Phi (kernel values of the finished
    landmarks) on a chunk is computed when the chunk is visited, for the landmarks
    finished since its last visit. It is kept for every chunk when the whole table
    (n_samples x n_landmarks values) fits in ``KERNEL_TABLE_BYTES`` and in half the
    memory available, and otherwise recomputed at each visit for the visited chunk
    only.
    """

    def __init__(self, X, bounds, batch_size, landmarks, eta, seed):
        self.X, self.bounds, self.landmarks, self.eta = X, bounds, landmarks, eta
        self.dtype = working_dtype(X)
        sizes = np.diff(bounds)
        self.permutations = [np.random.default_rng([seed, 0xB47C, c]).permutation(n)
                             for c, n in enumerate(sizes)]
        self.batch_bounds = [_batches(n, batch_size) for n in sizes]
        self.batches_per_chunk = [len(b) - 1 for b in self.batch_bounds]
        self.first_batch = np.concatenate([[0], np.cumsum(self.batches_per_chunk)])
        table = X.shape[0] * len(landmarks) * self.dtype.itemsize
        available = available_memory()
        self.keep = table <= KERNEL_TABLE_BYTES and (available is None or table < available / 2)
        self.kept = {}
        self.planned, self.pending, self.reader = [], {}, None

    @property
    def n_batches(self):
        return int(self.first_batch[-1])

    def batch_sizes(self):
        return np.concatenate([np.diff(b) for b in self.batch_bounds])

    def batch_id(self, c, j):
        return int(self.first_batch[c]) + j

    def batch_rows(self, c, j):
        bounds = self.batch_bounds[c]
        return self.permutations[c][bounds[j]:bounds[j + 1]]

    def plan(self, order):
        """Announce the chunks the next steps visit, so each next one is read ahead.

        With more than one chunk, a background thread reads the next chunk while the
        steps run on the current one (one extra chunk in memory); it ends in
        :meth:`close`.
        """
        self.planned = [c for c, _ in groupby(step[0] for step in order)]

    def _read(self, c):
        return take_rows(self.X, slice(int(self.bounds[c]), int(self.bounds[c + 1])))

    def _next_read(self, c):
        """Chunk c, read ahead if it was planned; starts reading the next planned one."""
        if self.planned and self.planned[0] == c:
            self.planned.pop(0)
        pending = self.pending.pop(c, None)
        Xc = pending.result() if pending is not None else self._read(c)
        if self.planned and len(self.bounds) > 2 and self.planned[0] not in self.pending:
            if self.reader is None:
                self.reader = ThreadPoolExecutor(1, thread_name_prefix="landmarking-read")
            self.pending[self.planned[0]] = self.reader.submit(self._read, self.planned[0])
        return Xc

    def close(self):
        if self.reader is not None:
            self.reader.shutdown(cancel_futures=True)
            self.reader = None
        self.pending.clear()

    def visit(self, c, k):
        """(rows, their squared norms, Phi with k columns) of chunk c."""
        Xc = self._next_read(c)
        if not self.keep:
            return Xc, _row_norms(Xc), _kernel_columns(Xc, self.landmarks[:k], self.eta)
        xsq, Phi = self._kept_columns(c, k, Xc)
        return Xc, xsq, Phi

    def _kept_columns(self, c, k, Xc=None):
        """Squared norms and Phi (k columns) kept for chunk c; reads it only if needed."""
        if c not in self.kept or self.kept[c][2] < k:
            Xc = self._next_read(c) if Xc is None else Xc
            if c not in self.kept:
                Phi = np.zeros((Xc.shape[0], len(self.landmarks)), dtype=self.dtype)
                self.kept[c] = [_row_norms(Xc), Phi, 0]
            xsq, Phi, done = self.kept[c]
            Phi[:, done:k] = _kernel_columns(Xc, self.landmarks[done:k], self.eta)
            self.kept[c][2] = k
        return self.kept[c][0], self.kept[c][1][:, :k]

    def gram(self, k):
        """Phi^T Phi (k x k) over all rows, summed over the chunks in order."""
        if not self.keep:
            parts = reduce_row_blocks(_kernel_gram, self.X, self.landmarks[:k], self.eta,
                                      bounds=self.bounds)
        else:
            n_chunks = len(self.bounds) - 1
            self.planned = [c for c in range(n_chunks)
                            if c not in self.kept or self.kept[c][2] < k]
            parts = []
            for c in range(n_chunks):
                Phi = self._kept_columns(c, k)[1].astype(np.float64)
                parts.append(Phi.T @ Phi)
        total = np.zeros((k, k))
        for part in parts:
            total += part
        return total


def _objectives(gram, n_samples):
    """(1/N) phi_k^T M phi_k on all the data for every landmark k.

    From the Gram matrix of all kernel columns, Phi^T Phi: the Schur complement of
    landmark k against the landmarks before it, with the fit's ridge.
    """
    factor = _CholeskyFactor(len(gram), RIDGE * n_samples)
    objectives = []
    for k in range(len(gram)):
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


def learn_gp_landmarks(X, n_landmarks, *, kernel_width, n_steps=1000, batch_size=1000,
                       s0=10.0, tau=0.51, space="euclidean", init="gaussian",
                       previous_landmarks=None, seed=0, chunk_size=None, callback=None,
                       verbose=False):
    """Learn landmarks one after another by stochastic projected ascent on f.

    The plain-array function behind :class:`landmarking.GPLandmarks`; ``X`` must
    already be validated (finite, 2-D, feasible for ``space``). It may be a NumPy
    array, a CSR matrix, a memory map, a Zarr array or a Dask array: X is read one
    chunk at a time and never copied whole.

    Parameters
    ----------
    X : array of shape (n_samples, n_features), float32 or float64 (or any kind
        :func:`landmarking._blocks.check_rows` accepts)
    n_landmarks : int
        Total number of landmarks, counting ``previous_landmarks``.
    kernel_width : float
        eta > 0.
    n_steps, batch_size, s0, tau, chunk_size : see :class:`landmarking.GPLandmarks`
    space : {"euclidean", "nonnegative", "sphere"}
    init : "gaussian" or ndarray (n_landmarks, n_features)
    previous_landmarks : ndarray (k, n_features), optional
        Landmarks of an earlier run on the same data with the same settings; they
        are kept and the run continues with landmark k + 1.
    seed : int
        Landmark k draws its start and its order of chunks and batches from
        ``(seed, k)``, and the batches of chunk c come from a permutation drawn from
        ``(seed, c)``, so landmark k never depends on how many landmarks are asked
        for.
    callback : callable, optional
        Called as ``callback(landmarks, objectives, seconds)`` right after each
        landmark is finished: the landmarks so far (k + 1 rows, a view: copy to
        keep) and the ``objectives`` and ``seconds`` of the new ones so far. The
        objectives are computed for all landmarks at the end, in one pass over the
        data: they are NaN in every call but the last, which comes after that pass.
        Used to save a run as it goes
        (``GPLandmarks.fit(checkpoint=...)``).
    verbose : bool
        tqdm progress bars over landmarks and steps.

    Returns
    -------
    landmarks : ndarray (n_landmarks, n_features), float64
    objectives : ndarray (n_landmarks,)
        f at each landmark (the previous ones included) on all the data, divided
        by N, computed after the last landmark in one pass.
    seconds : ndarray (n_landmarks - k,)
        Wall time for each new landmark.

    If interrupted (``KeyboardInterrupt``), the exception carries the partial
    result in its ``partial_result`` attribute before it propagates.

    Notes
    -----
    Memory: one chunk of X (rows x n_features) at a time, plus the kernel table
    Phi, n_samples x n_landmarks values of X's dtype, when it fits in
    ``KERNEL_TABLE_BYTES`` (else only the visited chunk's Phi, recomputed at each
    visit), plus the batches' Cholesky factors (at most ``FACTOR_CACHE_BYTES``).
    The objectives are computed after the last landmark, in one more pass.
    """
    n_samples, n_features = X.shape
    previous = (np.zeros((0, n_features)) if previous_landmarks is None
                else np.asarray(previous_landmarks, dtype=np.float64))
    n_previous = previous.shape[0]
    landmarks = np.zeros((n_landmarks, n_features))
    landmarks[:n_previous] = previous

    bounds = chunk_bounds(X, chunk_size)
    chunks = _Chunks(X, bounds, batch_size, landmarks, kernel_width, seed)
    gram = _BatchGram(chunks.n_batches, n_landmarks, chunks.batch_sizes())
    mean, std = column_mean_std(X, bounds)
    seconds = []
    outer = tqdm(range(n_previous, n_landmarks), desc="landmarks", disable=not verbose,
                 unit="landmark")
    try:
        for k in outer:
            start = time.perf_counter()
            rng = np.random.default_rng([seed, k])
            t0 = _initial_point(k, init, mean, std, rng, space)
            order = _batch_order(rng, chunks.batches_per_chunk, n_steps)
            chunks.plan(order)
            with tqdm(total=n_steps, desc=f"landmark {k + 1}", leave=False,
                      disable=not verbose, unit="step") as step_bar, \
                    threadpool_limits(limits=1, user_api="blas"):
                landmarks[k] = _optimise_landmark(t0, chunks, gram, kernel_width, order, k=k,
                                                  s0=s0, tau=tau, space=space,
                                                  step_bar=step_bar)
            seconds.append(time.perf_counter() - start)
            if callback is not None and k < n_landmarks - 1:
                callback(landmarks[:k + 1], np.full(len(seconds), np.nan), np.asarray(seconds))
        objectives = _objectives(chunks.gram(n_landmarks), n_samples)
        if callback is not None and n_landmarks > n_previous:
            callback(landmarks, objectives[n_previous:], np.asarray(seconds))
    except KeyboardInterrupt as interrupt:
        done = n_previous + len(seconds)
        chunks.close()
        objectives = _objectives(chunks.gram(done), n_samples)
        interrupt.partial_result = (landmarks[:done].copy(), objectives,
                                    np.asarray(seconds))
        raise
    finally:
        chunks.close()
    return landmarks, objectives, np.asarray(seconds)


class GPLandmarks(LandmarkTransformerMixin, BaseEstimator):
    """Landmarks on the data manifold by Gaussian-process landmarking.

    Landmarks are chosen one after another; each maximises the posterior variance
    of a Gaussian process with the plug-in manifold kernel given the landmarks
    before it (Liang & Paisley 2015), by stochastic projected ascent on minibatches.
    They are points of the ambient space (not data points) that lie on the data,
    spread along it, in order of importance. See :mod:`landmarking.landmarks.gp`
    for the mathematics and the scale-free step.

    Parameters
    ----------
    n_landmarks : int, default=10
        Number of landmarks to learn.
    n_steps : int, default=1000
        Steps of stochastic ascent per landmark (the paper's S).
    batch_size : int, default=1000
        Points per minibatch (|B_s|); all points when the data has fewer.
    s0, tau : float, default=10, 0.51
        Step schedule a_s = (s0 + s)^-tau, the fraction of the way to the weighted
        mean m moved at step s; tau in (0.5, 1] for Robbins-Monro convergence.
    kernel_width : float, "auto" or "variance", default="auto"
        eta in phi_x(t) = exp(-||t - x||^2 / eta), in squared data units.
        "variance" is the paper's heuristic, the sum of the per-dimension variances;
        it is far too wide for low-dimensional manifolds. "auto" follows the data's
        local spacing: the median squared distance to the 20th nearest neighbour in
        a subsample of 2,000 points. The value used is ``kernel_width_``.
    space : {"euclidean", "nonnegative", "sphere"}, default="euclidean"
        Where landmarks live: anywhere; the nonnegative orthant (images); or the
        unit sphere within the nonnegative orthant (square-root histograms).
    init : "gaussian" or array of shape (n_landmarks, n_features), default="gaussian"
        Starting points: draws from a Gaussian with the data's mean and
        per-dimension variance (the paper's), or one given row per landmark.
    chunk_size : int or None, default=None
        Rows per chunk the minibatches are drawn from. Each landmark visits the
        chunks in a random order and, within a chunk, its batches (slices of a
        fixed random permutation of the chunk's rows) in a random order, so one
        chunk at a time is read. None: the storage chunks of a Zarr or Dask array,
        and all rows as one chunk for other input (the paper's sampling). The
        landmarks depend on the chunks: the same data in any container with the
        same chunks gives the same landmarks. Data sorted by class should be
        shuffled, or cut into small chunks, since the last chunk a landmark visits
        weighs most.
    warm_start : bool, default=False
        When True and the estimator is fitted, ``fit`` keeps the landmarks it has
        and continues the list up to ``n_landmarks``.
    random_state : int, RandomState or None, default=None
        Seeds the batches and the starting points.
    verbose : bool, default=False
        Progress bars over landmarks and steps.

    Attributes
    ----------
    landmarks_ : ndarray of shape (n_landmarks, n_features)
        The landmarks, in order of selection.
    objective_ : ndarray of shape (n_landmarks,)
        The objective each landmark reached: (1/N) phi^T M phi on all the data.
    kernel_width_ : float
        The kernel width eta used.
    landmark_seconds_ : ndarray of shape (n_landmarks,)
        Wall time spent on each landmark.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of str
        Column names of a DataFrame given to ``fit``.
    seed_ : int
        The seed drawn from ``random_state``; landmark k depends only on it, k and
        the landmarks before it.

    Examples
    --------
    >>> from landmarking import GPLandmarks
    >>> from landmarking.datasets import make_concentric_circles
    >>> X, _ = make_concentric_circles(500, random_state=0)
    >>> gp = GPLandmarks(n_landmarks=6, n_steps=200, random_state=0).fit(X)
    >>> gp.landmarks_.shape, gp.transform(X).shape
    ((6, 2), (500, 6))
    """

    def __init__(self, *, n_landmarks=10, n_steps=1000, batch_size=1000, s0=10.0, tau=0.51,
                 kernel_width="auto", space="euclidean", init="gaussian", chunk_size=None,
                 warm_start=False, random_state=None, verbose=False):
        self.n_landmarks = n_landmarks
        self.n_steps = n_steps
        self.batch_size = batch_size
        self.s0 = s0
        self.tau = tau
        self.kernel_width = kernel_width
        self.space = space
        self.init = init
        self.chunk_size = chunk_size
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y=None, *, previous_landmarks=None, checkpoint=None):
        """Learn ``n_landmarks`` landmarks of X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            A NumPy array, a scipy sparse matrix (CSR; the landmarks are dense), a
            memory map, a Zarr array or a Dask array; never read whole into memory
            (see :func:`learn_gp_landmarks` for the memory used).
        y : ignored
        previous_landmarks : array of shape (k, n_features), optional
            Landmarks of an earlier run with the same data, settings and seed
            (e.g. loaded from a file); kept as the first k rows while the run
            continues, giving what one longer run would give.
        checkpoint : str, path or callable, optional
            Save the run as it goes, so that a killed process (out of memory, a
            preempted node) loses at most the last second of work. A path to an
            ``.npz``: the landmarks so far, rewritten atomically after finished
            landmarks (at most once a second, and at the end) and marked
            ``complete=False`` until the run ends; resume with the same
            ``random_state`` and ``fit(X, previous_landmarks=read_result(path)
            ["landmarks"])``. A callable: called as ``checkpoint(landmarks,
            objective, seconds)`` after each finished landmark, with all so far.

        Returns
        -------
        self
        """
        check_checkpoint(checkpoint)
        X = self._validate_fit_data(X)
        if previous_landmarks is None and self.warm_start and hasattr(self, "landmarks_"):
            previous_landmarks = self.landmarks_
            previous_objective = self.objective_
            previous_seconds = self.landmark_seconds_
        else:
            previous_objective = previous_seconds = np.zeros(0)
            self.seed_ = int(check_random_state(self.random_state).randint(2**31 - 1))
            self.kernel_width_ = resolve_kernel_width(X, self.kernel_width,
                                                      random_state=self.seed_)
        previous = self._check_previous(previous_landmarks, X.shape[1])
        self._run(X, previous, previous_objective, previous_seconds, checkpoint=checkpoint)
        return self

    def extend(self, X, n_more):
        """Learn ``n_more`` landmarks after the ones already fitted (same X).

        The first landmarks stay as they are; the result equals a single fit with
        ``n_landmarks + n_more`` landmarks and the same seed.

        Returns
        -------
        self
        """
        check_is_fitted(self, "landmarks_")
        n_more = check_positive_int(n_more, "n_more")
        X = check_rows(X, estimator=self, reset=False)
        check_feasible_for_space(X, self.space)
        total = len(self.landmarks_) + n_more
        if not isinstance(self.init, str) and len(self.init) < total:
            raise ValueError(
                f"init has {len(self.init)} starting points but {total} landmarks are "
                "needed; pass more rows in init or use init='gaussian'."
            )
        self._run(X, self.landmarks_, self.objective_, self.landmark_seconds_,
                  n_landmarks=total)
        return self

    def _run(self, X, previous, previous_objective, previous_seconds, n_landmarks=None,
             checkpoint=None):
        n_landmarks = self.n_landmarks if n_landmarks is None else n_landmarks
        callback = landmark_checkpoint(checkpoint, self, n_landmarks, previous_objective,
                                       previous_seconds)
        try:
            landmarks, objective, seconds = learn_gp_landmarks(
                X, n_landmarks, kernel_width=self.kernel_width_, n_steps=self.n_steps,
                batch_size=self.batch_size, s0=self.s0, tau=self.tau, space=self.space,
                init=self.init, previous_landmarks=previous, seed=self.seed_,
                chunk_size=self.chunk_size, verbose=self.verbose, callback=callback)
        except KeyboardInterrupt as interrupt:
            # Keep what was finished so that a caller can save it and continue.
            partial = getattr(interrupt, "partial_result", None)
            if partial is not None:
                self._store(*partial, previous_objective, previous_seconds)
            raise
        finally:
            if callback is not None:
                callback.close()  # writes what the last throttled call held back
        self._store(landmarks, objective, seconds, previous_objective, previous_seconds)

    def _store(self, landmarks, objective, seconds, previous_objective, previous_seconds):
        self.landmarks_ = landmarks
        # Computed for all landmarks at the end of the run (previous ones included).
        self.objective_ = objective
        self.landmark_seconds_ = np.concatenate([previous_seconds, seconds])

    def _validate_fit_data(self, X):
        check_positive_int(self.n_landmarks, "n_landmarks")
        check_positive_int(self.n_steps, "n_steps")
        check_positive_int(self.batch_size, "batch_size")
        check_choice(self.space, "space", SPACES)
        if self.chunk_size is not None:
            check_positive_int(self.chunk_size, "chunk_size")
        if isinstance(self.s0, bool) or not isinstance(self.s0, Real) or self.s0 < 0:
            raise ValueError(f"s0 must be a number >= 0, got {self.s0!r}.")
        if isinstance(self.tau, bool) or not isinstance(self.tau, Real) or not 0 < self.tau <= 1:
            raise ValueError(
                f"tau must lie in (0, 1] (0.5 < tau <= 1 for guaranteed convergence), "
                f"got {self.tau!r}."
            )
        reset = not (self.warm_start and hasattr(self, "landmarks_"))
        X = check_rows(X, estimator=self, reset=reset)
        check_enough_samples(X.shape[0], 2, "GPLandmarks")
        check_feasible_for_space(X, self.space)
        if not isinstance(self.init, str):
            self._check_init(X.shape[1])
        elif self.init != "gaussian":
            raise ValueError(
                f"init must be 'gaussian' or an array of starting points, got {self.init!r}."
            )
        return X

    def _check_init(self, n_features):
        init = np.asarray(self.init)
        if (init.ndim != 2 or init.shape[1] != n_features
                or init.shape[0] < self.n_landmarks or not np.all(np.isfinite(init))):
            raise ValueError(
                f"init must be 'gaussian' or a finite array of shape (n_landmarks, "
                f"n_features) = ({self.n_landmarks}, {n_features}); got shape {init.shape}."
            )

    def _check_previous(self, previous, n_features):
        if previous is None:
            return None
        previous = np.asarray(previous, dtype=np.float64)
        if previous.ndim != 2 or previous.shape[1] != n_features:
            raise ValueError(
                f"previous_landmarks must have shape (k, {n_features}), got {previous.shape}."
            )
        if previous.shape[0] > self.n_landmarks:
            raise ValueError(
                f"there are already {previous.shape[0]} landmarks but n_landmarks is "
                f"{self.n_landmarks}; ask for more landmarks to continue the list."
            )
        return previous

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.input_tags.sparse = True
        return tags
