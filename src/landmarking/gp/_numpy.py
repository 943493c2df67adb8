"""The NumPy backend of GP landmarking: the steps on the host, with numba kernels.

:func:`numpy_fit` gives :func:`.learn.learn_gp_landmarks` the interface every
backend offers (start a landmark, run its steps, add its kernel column, the Gram
matrix of the kernel columns); :class:`_Refinement` serves
:func:`.refine.refine_gp_landmarks`. The symbols are those of :mod:`.objective`,
whose formulae the steps apply.

Speed
-----
- The minibatches are drawn chunk by chunk: each landmark visits the chunks in a
  seeded random order and, in a chunk, its batches (slices of a seeded permutation
  of the chunk's rows) in a random order. No permuted copy of the data is made; a
  batch is a list of row indices into the chunk in memory.
- The steps of a landmark on a dense chunk run in one compiled call per chunk visit
  (:mod:`._kernels`, numba; no Python between steps): each step reads the batch
  once for the distances and kernel values and once more (from cache) for the
  weighted sum, solves against the k finished landmarks and moves t, all in the
  same call. A long visit reads a copy of the chunk in the order of its
  permutation (``batches.IN_ORDER_STEPS_PER_BATCH``, ``IN_ORDER_BYTES``), so a
  batch is consecutive rows, as is its slice of the kernel table. A step then
  costs 1.4-1.6 times one read of the batch from memory on MNIST (see
  ``docs/results.md``). CSR chunks take the NumPy step
  (:func:`_numpy_step`), which is also the reference the compiled steps are
  tested against.
- Kernel values of finished landmarks on a chunk (Phi) are computed once per
  landmark and kept while the table fits in ``KERNEL_TABLE_BYTES`` (else recomputed
  at each visit); a step reads only its batch's rows of Phi.
- The Cholesky factor of each batch's Gram matrix ``Phi^T Phi`` is kept and grows by
  one row per landmark, so a step costs O(b d + b k + k^2) and ``M`` (b x b) is never
  formed. A tiny ridge keeps the factor defined when two landmarks coincide or a batch
  sees none of a landmark's neighbourhood.
- ``n_steps="auto"`` stops a landmark when its batch objective has stopped rising
  (:class:`.objective._Convergence`); the objectives on all the data come from one Gram pass at
  the end.
- Threads: a step is too small to gain from threads, and threaded BLAS loses badly
  when the cores are busy (ten times slower measured on 2 shared cores), so the step
  loop runs BLAS on one thread, within a ``threadpoolctl`` limit that ends with the
  loop. Everything else keeps the user's settings.
"""

from contextlib import contextmanager

import numpy as np
from scipy import sparse
from threadpoolctl import ThreadpoolController

from .._parallel import thread_limits
from . import objective
from .batches import (
    _BatchGram,
    _BatchGrams,
    _Chunks,
    _Others,
    _Preceding,
    _visit_arrays,
    _visit_pieces,
)
from .blocks import BlockStep, extended_gram, optimise_block, reordered_gram
from .objective import (
    NUMPY_OPS,
    _conditional_objective,
    moved_landmark,
    step_size,
    takes_step,
)

__all__ = ["numpy_fit"]

#: Cholesky factors of all batches are kept while they fit in this many bytes.
FACTOR_CACHE_BYTES = 512 * 2**20
#: Kernel values of finished landmarks on all rows are kept while they fit in this
#: many bytes; beyond, they are recomputed for each visited chunk.
KERNEL_TABLE_BYTES = 2 * 2**30


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


def _numpy_step(Xc, xsq_c, rows, Phi_c, factor, t, eta, positions=None):
    """The step's sums with NumPy operations: for CSR chunks, and the reference
    the compiled step is tested against.

    The batch is ``Xc[rows]``; its kernel values of the finished landmarks are
    ``Phi_c[positions]`` (``Phi_c[rows]`` when ``positions`` is None).

    Returns (sum_i phi_i u_i x_i, f = phi^T M phi, phi^T phi, nearest squared
    distance), with phi relative to the batch's nearest point.
    """
    XB = Xc[rows]
    phi, nearest_d2 = _kernel_on_batch(XB, xsq_c[rows], t.astype(Xc.dtype), t @ t, eta)
    if factor.size:
        Phi_B = Phi_c[rows if positions is None else positions, :factor.size]
        coef = factor.solve(Phi_B.T @ phi)
        u = phi - Phi_B @ coef.astype(phi.dtype)
    else:
        u = phi
    weights = phi * u
    f = float(weights.sum(dtype=np.float64))
    return _weighted_sum(weights, XB), f, float(phi @ phi), nearest_d2


class _CompiledStep:
    """The step's sums in one compiled pass (:func:`._kernels.batch_step`) for
    dense chunks; the NumPy step for CSR chunks. Same returns as :func:`_numpy_step`.

    :meth:`steps` runs all the steps of a chunk visit in one compiled call
    (:func:`._kernels.visit_steps`)."""

    def __init__(self, n_features, batch_size):
        # numba loads on the first fit, not on import
        from ._kernels import SPACE_CODES, compiled_batch_step, compiled_visit_steps

        # Compiled per data precision on first use (one precision per fit).
        self.kernel, self.visit_kernel = compiled_batch_step, compiled_visit_steps
        self.space_codes = SPACE_CODES
        self.phi = np.empty(batch_size)
        self.m = np.empty(n_features)
        self.no_factor = np.zeros((1, 1))

    def _work(self, b):
        if len(self.phi) < b:
            self.phi = np.empty(b)

    def __call__(self, Xc, xsq_c, rows, Phi_c, factor, t, eta, positions=None):
        if sparse.issparse(Xc):
            return _numpy_step(Xc, xsq_c, rows, Phi_c, factor, t, eta, positions)
        self._work(len(rows))
        k = factor.size
        L = factor.L if k else self.no_factor
        positions = rows if positions is None else _as_rows(positions)
        step = self.kernel(Xc.dtype)
        f, phi_sq, nearest = step(Xc, xsq_c, rows, Phi_c, positions, k, L,
                                  t.astype(Xc.dtype), float(t @ t), float(eta),
                                  self.phi, self.m)
        return self.m, f, phi_sq, nearest

    def steps(self, span, c, batches, chunk, t, eta, first, *, s0, tau, max_step, space,
              visit_length):
        """Steps on batches ``batches`` (in order) of chunk c, numbered from
        ``first``, in one compiled call that moves t (float64, in place).

        ``chunk`` is ``span.visit(c)``; ``visit_length`` the number of steps of the
        whole visit (``batches`` may be part of it). Returns (n_steps, 3): each step's f,
        phi^T phi and nearest squared distance; or None, having done nothing, where
        the compiled visit does not apply (CSR chunks, factors not kept).
        """
        arrays = _visit_arrays(span, c, batches, chunk, visit_length)
        if arrays is None:
            return None
        Xc, xsq_c, perm, positions, bounds, table, k, Ls, in_order = arrays
        self._work(int(np.diff(bounds).max()))
        sums = np.empty((len(batches), 3))
        visit = self.visit_kernel(Xc.dtype)
        visit(Xc, xsq_c, perm, positions, bounds, np.asarray(batches, dtype=np.int64),
              table, k, Ls, t, float(eta), int(first),
              float(s0), float(tau), float(max_step), self.space_codes[space],
              in_order, self.phi, self.m, sums)
        return sums


def _as_rows(positions):
    """Row indices (int64) from a slice or an index array."""
    if isinstance(positions, slice):
        return np.arange(positions.start, positions.stop, dtype=np.int64)
    return np.asarray(positions, dtype=np.int64)


def _batch_step(n_features, batch_size):
    """The step function a fit uses (tests replace it to run the NumPy step)."""
    return _CompiledStep(n_features, batch_size)


def _optimise_landmark(t, span, eta, order, *, s0, tau, space, step, first_step=1,
                       auto=False, step_bar=None):
    """Run the projected steps of Algorithm 1 for one landmark; returns (t, steps).

    ``span`` gives each chunk's rows, norms and the columns Phi to project out, and
    each batch's factor; ``order`` lists (chunk, batch) per step; the steps on one
    chunk are consecutive, so each visit reads the chunk once. Step s uses the
    fraction a_s with s counted from ``first_step``. With ``auto``, the run stops
    early by the rule of :class:`_Convergence`. A compiled step runs a visit's
    steps in one call (up to the rule's next check), else they run one at a time.
    """
    max_step = objective.MAX_STEP_WIDTHS * np.sqrt(eta)
    t = np.asarray(t, dtype=np.float64).copy()
    rule = objective._Convergence(len(order)) if auto else None
    fused = getattr(step, "steps", None)
    s = 0
    for c, chunk, now, visit_length, s in _visit_pieces(
            span, order, objective.AUTO_WINDOW if auto else None):
        sums = None if fused is None else fused(
            span, c, now, chunk, t, eta, first_step + s, s0=s0, tau=tau,
            max_step=max_step, space=space, visit_length=visit_length)
        if sums is None:
            t, sums = _steps_one_at_a_time(t, span, c, now, chunk, eta, first_step + s,
                                           s0=s0, tau=tau, space=space, step=step,
                                           max_step=max_step)
        for (f, _, nearest_d2), j in zip(sums, now, strict=True):
            s += 1
            if step_bar is not None and s % 100 == 0:
                step_bar.update(100)
            if rule is not None and rule.converged(
                    s, max(f, 0.0), nearest_d2, eta, len(span.chunks.batch_rows(c, j))):
                return t, s
    return t, s


def _steps_one_at_a_time(t, span, c, batches, chunk, eta, first, *, s0, tau, space, step,
                         max_step):
    """The steps on ``batches`` of chunk c, one call of ``step`` each; returns the
    moved t and each step's (f, phi^T phi, nearest squared distance)."""
    Xc, xsq_c, Phi_c = chunk
    sums = []
    for q, j in enumerate(batches):
        rows = span.chunks.batch_rows(c, j)
        positions = span.chunks.batch_positions(c, j)
        factor = span.factor(c, j, Phi_c, positions)
        weighted, f, phi_sq, nearest_d2 = step(Xc, xsq_c, rows, Phi_c, factor, t, eta,
                                               positions=positions)
        if takes_step(f, phi_sq):
            t = moved_landmark(t, weighted, f, step_size(first + q, s0, tau), max_step,
                               nearest_d2, space, NUMPY_OPS)
        sums.append((f, phi_sq, nearest_d2))
    return t, sums


class _NumpyFit:
    """A sequential fit on the host: the backend interface of
    :func:`.learn.learn_gp_landmarks` over the chunks' kernel tables and the
    batches' factors."""

    def __init__(self, chunks, n_landmarks, n_features, batch_size, *, eta, space,
                 max_steps, s0, tau, auto, n_jobs=None):
        self.chunks = chunks
        self.gram_factors = _BatchGram(chunks.n_batches, n_landmarks, chunks.batch_sizes(),
                                       FACTOR_CACHE_BYTES)
        self.step = _batch_step(n_features, batch_size)
        self.settings = dict(s0=s0, tau=tau, space=space, auto=auto)
        self.eta = eta
        # The BLAS libraries are looked up once per fit: threadpool_limits would look
        # them up again for every landmark, inside a ctypes callback that swallows a
        # Ctrl-C arriving during it (the run then goes on instead of stopping).
        self.blas = ThreadpoolController()
        self.landmark = None
        self.block_step = None
        self.n_jobs = n_jobs
        self.running_gram = None

    def start(self, k, t0, order):
        """Landmark k starts at t0 and steps on ``order`` ((chunk, batch) per step);
        with t0 of shape (B, d), landmarks k to k + B - 1 as one block."""
        self.landmark = (k, t0, order)
        self.chunks.plan(order)

    def run(self, step_bar=None):
        """The steps of the landmark (or block) started; returns (its position, or
        the block's (B, d), and the steps run)."""
        k, t0, order = self.landmark
        span = _Preceding(self.chunks, self.gram_factors, k)
        if np.ndim(t0) == 2:
            # The block step runs on numba's threads; its few small BLAS and LAPACK
            # calls run on one thread, because some BLAS builds split a product's
            # sums by thread (numpy 1.25's OpenBLAS: blocks of 50 on 1,000 points
            # moved by 9e-16 from one BLAS thread to two), and the landmarks must
            # not depend on the thread count.
            if self.block_step is None:
                self.block_step = BlockStep()
            settings = dict(self.settings)
            rule = (objective._Convergence(len(order)) if settings.pop("auto") else None)
            with thread_limits(self.n_jobs), self.blas.limit(limits=1, user_api="blas"):
                return optimise_block(t0, span, self.eta, order, step=self.block_step,
                                      max_step=objective.MAX_STEP_WIDTHS * np.sqrt(self.eta),
                                      rule=rule, step_bar=step_bar, **settings)
        with self.blas.limit(limits=1, user_api="blas"):
            return _optimise_landmark(t0, span, self.eta, order, step=self.step,
                                      step_bar=step_bar, **self.settings)

    def block_gram(self, k, end):
        """Phi^T Phi (end x end) over all rows after the block k..end-1, whose
        kernel columns are computed together (one read of the data for the block,
        :func:`.blocks.kernel_columns_in_blocks`) and whose cross products with the
        others extend the Gram matrix kept from the blocks before (or, in a run that
        continues others, make it: every entry is the same sum either way, so the
        greedy order is). Where the kernel table is not kept, :meth:`gram`."""
        if not self.chunks.keep:
            return self.gram(end)
        from ._block_kernels import cross_gram

        if self.running_gram is None or len(self.running_gram) != k:
            self.chunks.close()
            self.running_gram = np.zeros((0, 0))
        first = len(self.running_gram)
        cross = np.zeros((end, end - first))
        with thread_limits(self.n_jobs):
            for table in self.chunks.block_columns(k, end):
                cross_gram(table, first, end, cross)
        self.running_gram = extended_gram(self.running_gram, cross)
        return self.running_gram

    def reorder(self, k, order):
        """The landmarks k, k + 1, ... of a finished block were put in ``order``: so
        are their kept kernel columns and the kept Gram matrix."""
        self.chunks.reorder_columns(k, order)
        if self.running_gram is not None:
            self.running_gram = reordered_gram(self.running_gram, k, order)

    def add_column(self, k, t):
        """Nothing to do: a chunk's kernel table gains landmark k's column (read from
        the landmark table) when the chunk is next visited."""

    def gram(self, k):
        """Phi^T Phi (k x k) over all rows, for the first k landmarks (after blocks,
        the Gram matrix kept from them)."""
        self.chunks.close()
        if self.running_gram is not None and len(self.running_gram) == k:
            return self.running_gram.copy()
        return self.chunks.gram(k)


def table_bytes():
    """The kernel table is kept while it fits in :data:`KERNEL_TABLE_BYTES`."""
    return KERNEL_TABLE_BYTES


@contextmanager
def numpy_fit(X, chunks, n_previous, **settings):
    """The backend interface of a sequential fit on the host (a context: the read-ahead
    thread of the chunks ends with it). ``n_previous`` landmarks are already in the
    landmark table; their kernel columns are computed when the chunks are visited."""
    try:
        yield _NumpyFit(chunks, chunks.landmarks.shape[0], X.shape[1], **settings)
    finally:
        chunks.close()


class _Refinement:
    """The refinement's state on the host: the kernel table, the Gram matrix of all
    kernel columns on all the data, the batches' Gram matrices."""

    def __init__(self, X, landmarks, bounds, batch_size, eta, seed, permutations=None,
                 in_batch_order=False):
        self.n_samples = X.shape[0]
        self.chunks = _Chunks(X, bounds, batch_size, landmarks, eta, seed,
                              KERNEL_TABLE_BYTES, permutations=permutations,
                              in_batch_order=in_batch_order)
        self.full_gram = self.chunks.gram(len(landmarks))
        self.grams = _BatchGrams(self.chunks, len(landmarks), FACTOR_CACHE_BYTES)
        self.step = _batch_step(X.shape[1], batch_size)
        self.eta = eta
        self.blas = ThreadpoolController()  # looked up once, as in _NumpyFit

    def optimise(self, k, order, **settings):
        """Landmark k re-optimised against all the others; returns (t, steps run)."""
        with self.blas.limit(limits=1, user_api="blas"):
            return _optimise_landmark(self.chunks.landmarks[k],
                                      _Others(self.chunks, self.grams, k), self.eta, order,
                                      step=self.step, **settings)

    def accept(self, k, t):
        """Move landmark k to t if that raises its objective given the others on all
        the data; returns whether it moved."""
        n_landmarks, full_gram = len(self.chunks.landmarks), self.full_gram
        column, per_chunk = self.chunks.cross(t, n_landmarks)
        old = np.append(full_gram[:, k], full_gram[k, k])
        if (_conditional_objective(full_gram, k, column, self.n_samples)
                < _conditional_objective(full_gram, k, old, self.n_samples)):
            return False
        self.chunks.landmarks[k] = t
        self.chunks.replace(k, per_chunk)
        full_gram[k, :] = column[:-1]
        full_gram[:, k] = column[:-1]
        full_gram[k, k] = column[-1]
        if self.grams.keep:
            self.grams.replace(k, per_chunk)
        else:
            self.grams.grams.clear()
        return True
