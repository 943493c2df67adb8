"""The CPU backend of GP landmarking: the steps on the host.

One step and one driver, for a block of B >= 1 landmarks (the sequential fit is
B = 1; symbols as in :mod:`.objective`, whose formulae the steps apply):

- :func:`reference_step`, the step written with NumPy operations: the reference
  the compiled step is tested against, and the step of CSR chunks and of fits
  whose batch factors are not kept;
- :class:`CompiledSteps`: the steps of a chunk visit in one compiled call
  (:func:`._loops.visit_steps`, Cython, on ``n_jobs`` threads for a block);
- :func:`optimise`: the one host driver of the steps of a block over its batches,
  with the stopping rule of ``n_steps="auto"``;
- :func:`cpu_fit` and :func:`cpu_refinement`: the backend interface
  (:mod:`.backend`) over the host's tables (:mod:`._tables`).

- The minibatches are the sample's layout (:class:`.sampling.BatchLayout`): each
  landmark visits the chunks in a seeded random order and, in a chunk, its
  batches (slices of a seeded permutation of the chunk's rows) in a random order.
  A batch is a list of row indices into the chunk in memory; a long visit reads a
  copy of the chunk in the order of its permutation
  (``_tables.IN_ORDER_STEPS_PER_BATCH``, ``IN_ORDER_BYTES``), where a batch is
  consecutive rows, as is its slice of the kernel table.
- Kernel values of finished landmarks on a chunk (Phi) are computed once per
  landmark and kept while the table fits in ``KERNEL_TABLE_BYTES`` (else
  recomputed at each visit); a step reads only its batch's rows of Phi.
- The Cholesky factor of each batch's Gram matrix ``Phi^T Phi`` is kept and grows
  by one row per landmark, so a step costs O(B b d + B b k + B k^2) and ``M``
  (b x b) is never formed. A tiny ridge keeps the factor defined when two
  landmarks coincide or a batch sees none of a landmark's neighbourhood.
- Threads: a block's steps run on ``n_jobs`` threads (the landmarks do not depend
  on how many), one landmark's on one (a step is too small to split). BLAS runs on
  one thread during the steps (a ``threadpoolctl`` limit that ends with them): a
  step's few BLAS calls gain nothing from threads, and some BLAS builds round a
  product differently on more threads. Everything else keeps the user's settings.
"""

from contextlib import contextmanager
from itertools import groupby

import numpy as np
from scipy import sparse
from threadpoolctl import ThreadpoolController

from .._parallel import blas_limit, loop_threads, thread_limits
from . import objective
from ._tables import BatchFactors, KernelTables, Others, Preceding, _BatchGrams
from .objective import (
    NUMPY_OPS,
    _conditional_objective,
    moved_landmark,
    pivots_with_drops,
    step_size,
)

__all__ = ["cpu_fit", "cpu_refinement", "reference_step", "optimise"]

#: Cholesky factors of all batches are kept while they fit in this many bytes.
FACTOR_CACHE_BYTES = 512 * 2**20
#: Kernel values of finished landmarks on all rows are kept while they fit in this
#: many bytes; beyond, they are recomputed for each visited chunk.
KERNEL_TABLE_BYTES = 2 * 2**30


# ---------------------------------------------------------------- the reference step

def _kernel_values(XB, xsq_B, T, eta):
    """Phi_B (b, B) relative to each landmark's nearest point, and the shifts (B,)."""
    dots = np.asarray(XB @ T.T.astype(XB.dtype), dtype=np.float64)
    d2 = np.asarray(xsq_B, dtype=np.float64)[:, None] - 2.0 * dots + (T * T).sum(axis=1)
    np.maximum(d2, 0, out=d2)
    shift = d2.min(axis=0)
    return np.exp((d2 - shift) * (-1.0 / eta)), shift


def reference_step(XB, xsq_B, Phi_p, L_p, T, eta):
    """One step's sums for a block of B >= 1 landmarks, with NumPy operations.

    Parameters
    ----------
    XB : (b, d) the batch, dense or CSR; ``xsq_B`` its squared row norms.
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
    Phi_B, nearest = _kernel_values(XB, xsq_B, T, eta)
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


def move_landmarks(T, S, active, fraction, max_step, nearest, space):
    """t_j <- Proj_S(t_j + a (S_j - t_j)) for the active landmarks: the move of
    :func:`.objective.moved_landmark` with m = S_j and f = 1 (the weights are
    normalised); T is changed in place."""
    for j in np.flatnonzero(active):
        T[j] = moved_landmark(T[j], S[j], 1.0, fraction, max_step, nearest[j], space,
                              NUMPY_OPS)
    return T


def _reference_steps(T, span, c, batches, chunk, eta, first, *, s0, tau, space, max_step):
    """The steps on ``batches`` of chunk c with :func:`reference_step` (T moved in
    place); returns (n_steps, B, 3) as :meth:`CompiledSteps.steps`."""
    Xc, xsq_c, Phi_c = chunk
    sums = np.empty((len(batches), T.shape[0], 3))
    for q, j in enumerate(batches):
        rows = span.layout.batch_rows(c, j)
        positions = span.layout.batch_positions(c, j)
        factor = span.factor(c, j, Phi_c, positions)
        k = factor.size
        S, f, phi_sq, nearest, active = reference_step(
            Xc[rows], xsq_c[rows], Phi_c[positions, :k], factor.L[:k, :k], T, eta)
        move_landmarks(T, S, active, step_size(first + q, s0, tau), max_step, nearest, space)
        sums[q, :, 0], sums[q, :, 1], sums[q, :, 2] = f, phi_sq, nearest
    return sums


# ---------------------------------------------------------------- the compiled steps

def _visit_arrays(span, c, batches, chunk, visit_length):
    """What a compiled visit of chunk c reads: (Xc, xsq, perm, positions, bounds,
    table, k, Ls), or None where a compiled visit does not apply (CSR chunks,
    factors not kept).

    ``chunk`` is ``span.visit(c)``; ``visit_length`` the number of steps of the
    whole visit, which decides whether the chunk is read in its permutation's
    order (:meth:`._tables.KernelTables.in_order`; then ``perm`` is ``positions``).
    """
    Xc, xsq_c, Phi_c = chunk
    if sparse.issparse(Xc):
        return None
    Ls = span.batch_factors(c, batches, Phi_c)
    if Ls is None:
        return None
    tables = span.tables
    positions = tables.positions(c)
    ordered = tables.in_order(c, Xc, xsq_c, visit_length)
    perm = tables.permutations[c] if ordered is None else positions
    if ordered is not None:
        Xc, xsq_c = ordered
    # The kept table's first k columns are not C-ordered; the compiled loop reads them
    # from the whole C-ordered table.
    table = Phi_c if Phi_c.flags.c_contiguous else tables.table(c)
    if table.shape[1] == 0:
        table = np.zeros((table.shape[0], 1), dtype=table.dtype)
    return (Xc, xsq_c, perm, positions, span.layout.batch_bounds[c], table, Phi_c.shape[1],
            Ls)


class CompiledSteps:
    """The steps of a block (of one landmark too) on a chunk visit in one compiled
    call (:func:`._loops.visit_steps`) for dense chunks whose batch factors are
    kept; :meth:`steps` returns None where that does not apply (CSR chunks, factors
    not kept) and :func:`optimise` steps one batch at a time with the reference.

    ``n_threads``: the threads a visit runs on (the landmarks do not depend on it).
    """

    def __init__(self, n_threads=1):
        self.n_threads = n_threads
        self.work, self.key = None, None

    def _work(self, B, b, d, k, dtype):
        from ._loops import step_work

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
        from ._loops import SPACE_CODES, Schedule, VisitChunk, visit_steps

        arrays = _visit_arrays(span, c, batches, chunk, visit_length)
        if arrays is None:
            return None
        Xc, xsq_c, perm, positions, bounds, table, k, Ls = arrays
        work = self._work(T.shape[0], int(np.diff(bounds).max()), Xc.shape[1], k, Xc.dtype)
        sums = np.empty((len(batches), T.shape[0], 3))
        chunk = VisitChunk(Xc=Xc, xsq=xsq_c, perm=perm, positions=positions, bounds=bounds,
                           batches=np.asarray(batches, dtype=np.int64), Phi=table, k=k, Ls=Ls)
        schedule = Schedule(eta=float(eta), first=int(first), s0=float(s0), tau=float(tau),
                            max_step=float(max_step), space=SPACE_CODES[space],
                            tol=objective.MIN_RELATIVE_F)
        visit_steps(chunk, T, schedule, work, sums, self.n_threads)
        return sums


def _compiled_steps(n_threads):
    """The compiled steps a fit uses (:class:`CompiledSteps`); tests replace this to
    run the reference steps (None)."""
    return CompiledSteps(n_threads)


# ---------------------------------------------------------------- the driver

def _visit_pieces(span, order, window=None):
    """The steps of ``order`` ((chunk, batch) per step) cut into the pieces one
    compiled call runs: per visit of a chunk (its steps are consecutive, so the
    chunk is read once), and at most up to the next multiple of ``window`` steps
    when a stopping rule is checked every ``window`` steps. Yields (c, chunk,
    batches, visit_length, s): ``chunk`` is ``span.visit(c)``, ``visit_length`` the
    number of steps of the whole visit, ``s`` the steps before the piece."""
    s = 0
    for c, visit in groupby(order, key=lambda step: step[0]):
        chunk = span.visit(c)
        batches = [j for _, j in visit]
        visit_length = len(batches)
        while batches:
            n = len(batches) if window is None else min(len(batches), window - s % window)
            yield c, chunk, batches[:n], visit_length, s
            batches = batches[n:]
            s += n


def optimise(T, span, eta, order, *, s0, tau, space, step, max_step, rule=None,
             step_bar=None, first_step=1):
    """The projected steps of a block of landmarks T (B, d), one landmark too
    (B = 1), given ``span`` (:class:`._tables.Preceding` or :class:`._tables.Others`);
    returns (T, steps run).

    ``order`` lists (chunk, batch) per step; a visit's steps run in one compiled
    call (``step``, a :class:`CompiledSteps`, or None for the reference steps);
    ``first_step`` numbers the first step (its fraction a_s); ``rule`` (an
    :class:`.objective._Convergence`) stops the block when the sum of its
    landmarks' batch objectives has stopped rising.
    """
    T = np.array(T, dtype=np.float64)
    fused = None if step is None else step.steps
    s = 0
    for c, chunk, now, visit_length, s in _visit_pieces(
            span, order, None if rule is None else objective.AUTO_WINDOW):
        sums = None if fused is None else fused(
            span, c, now, chunk, T, eta, first_step + s, s0=s0, tau=tau, max_step=max_step,
            space=space, visit_length=visit_length)
        if sums is None:
            sums = _reference_steps(T, span, c, now, chunk, eta, first_step + s, s0=s0,
                                    tau=tau, space=space, max_step=max_step)
        for block_sums, j in zip(sums, now, strict=True):
            s += 1
            if step_bar is not None and s % 100 == 0:
                step_bar.update(100)
            if rule is not None:
                # The block's batch objective: the sum of its landmarks' true pivots.
                value = float(np.sum(np.maximum(block_sums[:, 0], 0.0)
                                     * np.exp(-2.0 * block_sums[:, 2] / eta)))
                if rule.converged(s, value, 0.0, eta, len(span.layout.batch_rows(c, j))):
                    return T, s
    return T, s


# ---------------------------------------------------------------- the backend interface

class _CpuFit:
    """A fit on the host: the interface of :class:`.backend.FitState` over the
    sample's kernel tables and its batches' factors."""

    def __init__(self, tables, *, eta, space, max_steps, s0, tau, auto, n_jobs=None):
        self.tables = tables
        self.factors = BatchFactors(tables.layout.n_batches, len(tables.landmarks),
                                    tables.layout.batch_sizes(), FACTOR_CACHE_BYTES)
        self.settings = dict(s0=s0, tau=tau, space=space)
        self.auto = auto
        self.eta = eta
        # The BLAS libraries are looked up once per fit: threadpool_limits would look
        # them up again for every landmark, inside a ctypes callback that swallows a
        # Ctrl-C arriving during it (the run then goes on instead of stopping).
        self.blas = ThreadpoolController()
        self.started = None
        self.n_jobs = n_jobs

    def start(self, k, t0, order):
        """Landmarks k to k + B - 1 (one landmark: B = 1) start at t0 (B, d) and step
        on ``order`` ((chunk, batch) per step)."""
        self.started = (k, t0, order)
        self.tables.plan(order)

    def run(self, step_bar=None):
        """The steps of the landmarks started; returns (their positions (B, d), the
        steps run)."""
        k, t0, order = self.started
        rule = objective._Convergence(len(order)) if self.auto else None
        settings = dict(span=Preceding(self.tables, self.factors, k), eta=self.eta,
                        order=order, max_step=objective.MAX_STEP_WIDTHS * np.sqrt(self.eta),
                        rule=rule, step_bar=step_bar, **self.settings)
        # A block's compiled steps run on n_jobs threads; one landmark's on one.
        if len(t0) == 1:
            with blas_limit(1, self.blas):
                return optimise(t0, step=_compiled_steps(1), **settings)
        with thread_limits(self.n_jobs), blas_limit(1, self.blas):
            return optimise(t0, step=_compiled_steps(loop_threads()), **settings)

    def block_gram(self, k, end, first):
        """Phi[:, :end]^T Phi[:, first:end] (end x (end - first)) over all rows, after
        the block k..end-1's kernel columns are computed together (one read of the
        data for the block). Each entry is summed over the rows in the same order
        whichever ``first`` asks for it, so a continued run's greedy order is one
        longer run's."""
        if not self.tables.keep:
            return self.gram(end)[:, first:]
        from ._loops import cross_gram

        cross = np.zeros((end, end - first))
        with thread_limits(self.n_jobs):
            for table in self.tables.block_columns(k, end):
                cross_gram(table, first, end, cross, loop_threads())
        return cross

    def reorder(self, k, order):
        """The landmarks k, k + 1, ... of a finished block were put in ``order``: so
        are their kept kernel columns."""
        self.tables.reorder_columns(k, order)

    def add_column(self, k, t):
        """Nothing to do: a chunk's kernel table gains landmark k's column (read from
        the landmark table) when the chunk is next visited."""

    def gram(self, k):
        """Phi^T Phi (k x k) over all rows, for the first k landmarks."""
        self.tables.close()
        with thread_limits(self.n_jobs):
            return self.tables.gram(k)


@contextmanager
def cpu_fit(sample, landmarks, n_previous, **settings):
    """A fit on the host (:meth:`.backend.GPBackend.fit`; a context: the read-ahead
    thread of the tables ends with it). ``landmarks`` is the fit's landmark table,
    its first ``n_previous`` rows finished; their kernel columns are computed when
    the chunks are visited."""
    tables = KernelTables(sample, landmarks, settings["eta"], KERNEL_TABLE_BYTES)
    try:
        yield _CpuFit(tables, **settings)
    finally:
        tables.close()


class _Refinement:
    """The refinement's state on the host: the kernel table, the Gram matrix of all
    kernel columns on all the data, the batches' Gram matrices (the interface of
    :class:`.backend.RefinementState`)."""

    def __init__(self, sample, landmarks, eta):
        self.n_samples = sample.n_rows
        self.tables = KernelTables(sample, landmarks, eta, KERNEL_TABLE_BYTES)
        self.landmarks = self.tables.landmarks
        self.gram = self.tables.gram(len(landmarks))
        self.grams = _BatchGrams(self.tables, len(landmarks), FACTOR_CACHE_BYTES)
        self.eta = eta
        self.blas = ThreadpoolController()  # looked up once, as in _CpuFit

    def optimise(self, k, order, *, auto, **settings):
        """Landmark k re-optimised against all the others; returns (t, steps run)."""
        rule = objective._Convergence(len(order)) if auto else None
        with blas_limit(1, self.blas):
            T, taken = optimise(
                self.landmarks[k][None], Others(self.tables, self.grams, k), self.eta, order,
                step=_compiled_steps(1), rule=rule,
                max_step=objective.MAX_STEP_WIDTHS * np.sqrt(self.eta), **settings)
        return T[0], taken

    def accept(self, k, t):
        """Move landmark k to t if that raises its objective given the others on all
        the data; returns whether it moved."""
        n_landmarks, gram = len(self.landmarks), self.gram
        column, per_chunk = self.tables.cross(t, n_landmarks)
        old = np.append(gram[:, k], gram[k, k])
        if (_conditional_objective(gram, k, column, self.n_samples)
                < _conditional_objective(gram, k, old, self.n_samples)):
            return False
        self.landmarks[k] = t
        self.tables.replace(k, per_chunk)
        gram[k, :] = column[:-1]
        gram[:, k] = column[:-1]
        gram[k, k] = column[-1]
        if self.grams.keep:
            self.grams.replace(k, per_chunk)
        else:
            self.grams.grams.clear()
        return True


def cpu_refinement(sample, landmarks, *, eta):
    """The refinement's state on the host (:meth:`.backend.GPBackend.refinement`):
    ``landmarks`` (K, d) float64 is moved in place as moves are accepted."""
    return _Refinement(sample, landmarks, eta)
