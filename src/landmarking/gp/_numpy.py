"""The NumPy backend of GP landmarking: the steps on the host, compiled (Cython).

:func:`numpy_fit` gives :func:`.learn.learn_gp_landmarks` the interface every
backend offers (start a landmark or a block of landmarks, run their steps, add
their kernel columns, the Gram matrix of the kernel columns); :class:`_Refinement`
serves :func:`.refine.refine_gp_landmarks`. The symbols are those of
:mod:`.objective`, whose formulae the steps apply.

One driver, one step: the sequential fit is the block fit with one landmark per
block. :func:`.blocks.optimise_block` runs the steps of a block of B >= 1
landmarks over its batches; the steps of a chunk visit run in one compiled call
(:class:`.blocks.CompiledSteps`, :mod:`._kernels`), or, for CSR chunks and where
the batch factors are not kept, one at a time with the NumPy reference step
(:func:`.blocks.block_step_numpy`).

- The minibatches are drawn chunk by chunk: each landmark visits the chunks in a
  seeded random order and, in a chunk, its batches (slices of a seeded permutation
  of the chunk's rows) in a random order. A batch is a list of row indices into
  the chunk in memory; a long visit reads a copy of the chunk in the order of its
  permutation (``batches.IN_ORDER_STEPS_PER_BATCH``, ``IN_ORDER_BYTES``), where a
  batch is consecutive rows, as is its slice of the kernel table.
- Kernel values of finished landmarks on a chunk (Phi) are computed once per
  landmark and kept while the table fits in ``KERNEL_TABLE_BYTES`` (else recomputed
  at each visit); a step reads only its batch's rows of Phi.
- The Cholesky factor of each batch's Gram matrix ``Phi^T Phi`` is kept and grows by
  one row per landmark, so a step costs O(B b d + B b k + B k^2) and ``M`` (b x b)
  is never formed. A tiny ridge keeps the factor defined when two landmarks
  coincide or a batch sees none of a landmark's neighbourhood.
- ``n_steps="auto"`` stops a landmark (a block) when its batch objective has stopped
  rising (:class:`.objective._Convergence`); the objectives on all the data come
  from one Gram pass at the end.
- Threads: a block's steps run on ``n_jobs`` threads (the landmarks do not depend
  on how many), one landmark's on one (a step is too small to split). BLAS runs
  on one thread during the steps (a ``threadpoolctl`` limit that ends with them):
  a step's few BLAS calls gain nothing from threads, and some BLAS builds round a
  product differently on more threads. Everything else keeps the user's settings.
"""

from contextlib import contextmanager

import numpy as np
from threadpoolctl import ThreadpoolController

from .._parallel import kernel_threads, thread_limits
from . import objective
from .batches import _BatchGram, _BatchGrams, _Chunks, _Others, _Preceding
from .blocks import CompiledSteps, extended_gram, optimise_block, reordered_gram
from .objective import _conditional_objective

__all__ = ["numpy_fit"]

#: Cholesky factors of all batches are kept while they fit in this many bytes.
FACTOR_CACHE_BYTES = 512 * 2**20
#: Kernel values of finished landmarks on all rows are kept while they fit in this
#: many bytes; beyond, they are recomputed for each visited chunk.
KERNEL_TABLE_BYTES = 2 * 2**30


def _compiled_steps(n_threads):
    """The compiled steps a fit uses (:class:`.blocks.CompiledSteps`); tests replace
    this to run the NumPy reference steps (None)."""
    return CompiledSteps(n_threads)


class _NumpyFit:
    """A sequential fit on the host: the backend interface of
    :func:`.learn.learn_gp_landmarks` over the chunks' kernel tables and the
    batches' factors."""

    def __init__(self, chunks, n_landmarks, n_features, batch_size, *, eta, space,
                 max_steps, s0, tau, auto, n_jobs=None):
        self.chunks = chunks
        self.gram_factors = _BatchGram(chunks.n_batches, n_landmarks, chunks.batch_sizes(),
                                       FACTOR_CACHE_BYTES)
        self.settings = dict(s0=s0, tau=tau, space=space)
        self.auto = auto
        self.eta = eta
        # The BLAS libraries are looked up once per fit: threadpool_limits would look
        # them up again for every landmark, inside a ctypes callback that swallows a
        # Ctrl-C arriving during it (the run then goes on instead of stopping).
        self.blas = ThreadpoolController()
        self.landmark = None
        self.n_jobs = n_jobs
        self.running_gram = None

    def start(self, k, t0, order):
        """Landmarks k to k + B - 1 (one landmark: B = 1) start at t0 (B, d) and step
        on ``order`` ((chunk, batch) per step)."""
        self.landmark = (k, t0, order)
        self.chunks.plan(order)

    def run(self, step_bar=None):
        """The steps of the landmarks started (B, d); returns (their positions, the
        steps run)."""
        k, t0, order = self.landmark
        rule = objective._Convergence(len(order)) if self.auto else None
        settings = dict(span=_Preceding(self.chunks, self.gram_factors, k), eta=self.eta,
                        order=order, max_step=objective.MAX_STEP_WIDTHS * np.sqrt(self.eta),
                        rule=rule, step_bar=step_bar, **self.settings)
        # The steps' few BLAS and LAPACK calls (the NumPy reference) run on one thread:
        # a step is too small to gain from BLAS's threads, some BLAS builds split a
        # product's sums by thread (numpy 1.25's OpenBLAS: blocks of 50 on 1,000
        # points moved by 9e-16 from one BLAS thread to two), and the landmarks must
        # not depend on the thread count. A block's compiled steps run on n_jobs
        # threads; one landmark's on one (a step is too small to split).
        if len(t0) == 1:
            with self.blas.limit(limits=1, user_api="blas"):
                return optimise_block(t0, step=_compiled_steps(1), **settings)
        with thread_limits(self.n_jobs), self.blas.limit(limits=1, user_api="blas"):
            return optimise_block(t0, step=_compiled_steps(kernel_threads()), **settings)

    def block_gram(self, k, end):
        """Phi^T Phi (end x end) over all rows after the block k..end-1, whose
        kernel columns are computed together (one read of the data for the block,
        :func:`.batches.kernel_columns`) and whose cross products with the
        others extend the Gram matrix kept from the blocks before (or, in a run that
        continues others, make it: every entry is the same sum either way, so the
        greedy order is). Where the kernel table is not kept, :meth:`gram`."""
        if not self.chunks.keep:
            return self.gram(end)
        from ._kernels import cross_gram

        if self.running_gram is None or len(self.running_gram) != k:
            self.chunks.close()
            self.running_gram = np.zeros((0, 0))
        first = len(self.running_gram)
        cross = np.zeros((end, end - first))
        with thread_limits(self.n_jobs):
            for table in self.chunks.block_columns(k, end):
                cross_gram(table, first, end, cross, kernel_threads())
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
        self.eta = eta
        self.blas = ThreadpoolController()  # looked up once, as in _NumpyFit

    def optimise(self, k, order, *, auto, **settings):
        """Landmark k re-optimised against all the others; returns (t, steps run)."""
        rule = objective._Convergence(len(order)) if auto else None
        with self.blas.limit(limits=1, user_api="blas"):
            T, taken = optimise_block(
                self.chunks.landmarks[k][None], _Others(self.chunks, self.grams, k), self.eta,
                order, step=_compiled_steps(1), rule=rule,
                max_step=objective.MAX_STEP_WIDTHS * np.sqrt(self.eta), **settings)
        return T[0], taken

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
