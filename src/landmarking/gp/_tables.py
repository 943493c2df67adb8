"""The CPU backend's tables of a GP fit: kernel columns and batch factors.

The batches themselves (which rows, in which order) are the sample's layout
(:class:`.sampling.BatchLayout`), which every backend steps on. What only the host
steps need is here (symbols as in :mod:`.objective`):

- :class:`KernelTables`: the sample's chunks in memory, each with the kernel values
  Phi of the finished landmarks on its rows (kept, or recomputed at each visit),
  and a copy of a chunk in its permutation's order for long visits;
- :class:`BatchFactors`: each batch's factor of ``Phi_B^T Phi_B + ridge I``
  (:class:`.objective._CholeskyFactor`), grown by one column per landmark;
- :class:`Preceding`, :class:`Others` and :class:`_BatchGrams`: the span a
  landmark is optimised against: the landmarks before it (the fit) or all the
  others (the refinement);
- :func:`phi_columns`: every kernel column of a fit.

Phi on a chunk is kept with its rows in the order of the chunk's permutation, so
that a batch's rows of Phi are one slice (read as one stream) while its rows of X
are scattered; ``positions`` below are rows of Phi, ``rows`` rows of the chunk.
"""

from concurrent.futures import ThreadPoolExecutor
from itertools import groupby

import numpy as np
from scipy import sparse

from .._blocks import is_in_memory, reduce_row_blocks, take_rows, working_dtype
from .._memory import available_memory
from .._parallel import loop_threads
from ..kernels import squared_distances
from .objective import RIDGE, _CholeskyFactor

#: A visit with at least this many steps per batch of its chunk reads a copy of the
#: chunk in the order of its permutation (a batch's rows consecutive: about twice
#: as fast to read as scattered rows), when the copy takes at most
#: ``IN_ORDER_BYTES``. The rule depends only on the chunks and the steps, so the
#: same data with the same chunks gives the same landmarks in every container.
IN_ORDER_STEPS_PER_BATCH = 4
#: The copies are kept for all chunks while all of them fit in this many bytes and
#: a quarter of the memory available, for data in memory; else the copy of the
#: last chunk visited is kept (memory maps, Zarr and Dask arrays are never copied
#: whole).
IN_ORDER_BYTES = 2 * 2**30


def phi_columns(block, landmarks, eta, xsq=None):
    """Kernel values (n_b, k) of landmarks on a block: one block of Phi, in the
    block's dtype.

    Every column of a fit comes from here, so that a column has the same bits
    whether this run or the run it continues computed it, with the table kept or
    recomputed. A dense block: the compiled :func:`._loops.kernel_columns` (each
    row read once for all k landmarks, each value computed alone: the same bits
    however many are computed together, and on any number of threads). A CSR
    block: one landmark at a time with scipy's sparse product. ``xsq``, the
    block's squared row norms (:func:`_row_norms`), saves a pass over the block.
    """
    if xsq is None:
        xsq = _row_norms(block)
    landmarks = np.asarray(landmarks, dtype=np.float64).reshape(-1, block.shape[1])
    columns = np.empty((block.shape[0], len(landmarks)), dtype=block.dtype)
    if sparse.issparse(block):
        for j, t in enumerate(landmarks.astype(block.dtype)):
            d2 = squared_distances(block, t[None, :], X_sq_norms=xsq)
            d2 *= -1.0 / eta
            columns[:, j] = np.exp(d2, out=d2)[:, 0]
        return columns
    from ._loops import kernel_columns as compiled_columns

    return compiled_columns(np.ascontiguousarray(block), np.asarray(xsq, dtype=block.dtype),
                            landmarks, float(eta), columns, loop_threads())


def _kernel_gram(block, landmarks, eta):
    """Phi_b^T Phi_b (k, k), float64, of one block (:func:`_add_gram`)."""
    columns = phi_columns(block, landmarks, eta)
    return _add_gram(columns, np.zeros((columns.shape[1], columns.shape[1])))


def _add_gram(Phi, total):
    """total += Phi^T Phi (k, k) for a block of kernel columns Phi (n_b, k).

    By the compiled :func:`._loops.cross_gram`, not BLAS: each entry is summed
    over the rows in order, so entry (i, j) has the same bits whatever k is. BLAS
    (a syrk or gemm) sums in an order that its kernel chooses by the matrix's
    shape and the processor (OPENBLAS_CORETYPE), so the objectives of a run's
    first landmarks would change in the last bits when a continued run recomputes
    them with more columns.
    """
    from ._loops import cross_gram

    return cross_gram(Phi, 0, Phi.shape[1], total, loop_threads())


def _candidate_cross(block, landmarks, t, eta):
    """Phi_b^T phi_t (k,) and phi_t^T phi_t of one block, as one (k + 1,) vector."""
    columns = phi_columns(block, np.vstack([landmarks, t]), eta).astype(np.float64)
    return columns.T @ columns[:, -1]


def _row_norms(block):
    if sparse.issparse(block):
        return np.asarray(block.multiply(block).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", block, block)


class KernelTables:
    """The sample's chunks in memory, with the kernel values Phi on each.

    ``sample`` is the fit's :class:`.sampling.Sample`: its rows ``X`` and the layout
    of its batches (chunk c is rows ``bounds[c]:bounds[c + 1]``, cut into batches
    by a permutation of its rows). A dense chunk is also kept in the permutation's
    order (:meth:`in_order`) while a copy of all the data fits
    :data:`IN_ORDER_BYTES`. Phi (kernel values of the finished landmarks) on a chunk
    is computed when the chunk is visited, for the landmarks finished since its
    last visit, and held with its rows in the order of the permutation (batch j's
    rows of Phi are the slice ``layout.batch_positions(c, j)``). It is kept for
    every chunk when the whole table (n_samples x n_landmarks values) fits in
    ``table_bytes`` and in half the memory available, and otherwise recomputed at
    each visit for the visited chunk only. With more than one chunk, the next chunk
    of a planned visit order is read by a background thread while the steps run on
    the current one. Every kernel column comes from :func:`phi_columns`.
    """

    def __init__(self, sample, landmarks, eta, table_bytes):
        X = sample.X
        self.X, self.layout, self.landmarks, self.eta = X, sample.layout, landmarks, eta
        self.bounds, self.permutations = self.layout.bounds, self.layout.permutations
        self.columns = phi_columns
        # The fit's sample smaller than the data is held in batch order (its
        # permutation is the identity): read in order at every visit, never copied.
        self.in_batch_order = sample.in_batch_order
        self.dtype = working_dtype(X)
        table = X.shape[0] * len(landmarks) * self.dtype.itemsize
        available = available_memory()
        self.keep = table <= table_bytes and (available is None or table < available / 2)
        self.kept = {}
        self.planned, self.pending, self.reader = [], {}, None
        self._positions = np.zeros(0, dtype=np.int64)
        copy = X.shape[0] * X.shape[1] * self.dtype.itemsize
        # Never for a memory map, Zarr or Dask array: those are read a chunk at a time.
        self.keep_in_order = (is_in_memory(X) and copy <= IN_ORDER_BYTES
                              and (available is None or copy < available / 4))
        self.ordered = {}

    def positions(self, c):
        """arange(n_c): the rows of Phi on chunk c, for the compiled steps."""
        n = int(self.bounds[c + 1] - self.bounds[c])
        if len(self._positions) < n:
            self._positions = np.arange(n, dtype=np.int64)
        return self._positions[:n]

    def plan(self, order):
        """Announce the chunks the next steps visit ((chunk, batch) per step)."""
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
        """End the read-ahead thread (one extra chunk in memory while it runs)."""
        if self.reader is not None:
            self.reader.shutdown(cancel_futures=True)
            self.reader = None
        self.pending.clear()
        self.planned = []

    def visit(self, c, k):
        """(rows, their squared norms, Phi with k columns) of chunk c."""
        Xc = self._next_read(c)
        if not self.keep:
            xsq = _row_norms(Xc)
            Phi = self.columns(Xc, self.landmarks[:k], self.eta, xsq)[self.permutations[c]]
            return Xc, xsq, Phi
        xsq, Phi = self._kept_columns(c, k, Xc)
        return Xc, xsq, Phi

    def in_order(self, c, Xc, xsq, visit_length):
        """(rows, squared norms) of dense chunk c in the order of its permutation
        for a visit of ``visit_length`` steps, or None where the rule of
        :data:`IN_ORDER_STEPS_PER_BATCH` says the rows are read where they are.
        A chunk held in batch order is itself, for every visit."""
        if self.in_batch_order and not sparse.issparse(Xc):
            return Xc, xsq
        copy = Xc.shape[0] * Xc.shape[1] * self.dtype.itemsize
        if (sparse.issparse(Xc) or copy > IN_ORDER_BYTES
                or visit_length < IN_ORDER_STEPS_PER_BATCH * self.layout.batches_per_chunk[c]):
            return None
        if c not in self.ordered:
            if not self.keep_in_order:
                self.ordered.clear()
            perm = self.permutations[c]
            self.ordered[c] = (np.take(Xc, perm, axis=0), xsq[perm])
        return self.ordered[c]

    def table(self, c):
        """The kept kernel table of chunk c, all landmarks' columns (C-ordered)."""
        return self.kept[c][1]

    def _kept_columns(self, c, k, Xc=None):
        """Squared norms and Phi (k columns) kept for chunk c; reads it only if needed."""
        if c not in self.kept or self.kept[c][2] < k:
            Xc = self._next_read(c) if Xc is None else Xc
            if c not in self.kept:
                Phi = np.zeros((Xc.shape[0], len(self.landmarks)), dtype=self.dtype)
                self.kept[c] = [_row_norms(Xc), Phi, 0]
            _, Phi, done = self.kept[c]
            Phi[:, done:k] = self.columns(Xc, self.landmarks[done:k], self.eta,
                                          self.kept[c][0])[self.permutations[c]]
            self.kept[c][2] = k
        return self.kept[c][0], self.kept[c][1][:, :k]

    def block_columns(self, k, end):
        """The kept tables of all chunks with the block k..end-1's columns computed
        together (one read of each chunk for the block); returns the tables (rows
        in each chunk's permutation order, ``end`` columns). Only where the table
        is kept (:attr:`keep`)."""
        tables = []
        n_chunks = len(self.bounds) - 1
        self.planned = [c for c in range(n_chunks)
                        if c not in self.kept or self.kept[c][2] < end]
        for c in range(n_chunks):
            if c not in self.kept or self.kept[c][2] < end:
                Xc = self._next_read(c)
                xsq, Phi = self._kept_columns(c, k, Xc)
                Phi = self.kept[c][1]
                Phi[:, k:end] = self.columns(Xc, self.landmarks[k:end], self.eta,
                                             xsq)[self.permutations[c]]
                self.kept[c][2] = end
            tables.append(self.kept[c][1][:, :end])
        self.close()
        return tables

    def reorder_columns(self, k, order):
        """Landmarks k, k + 1, ... were reordered (``landmarks[k:k + B] =
        old[k + order]``): their kept columns follow (each column is computed alone,
        so a moved column is the same bits as one computed in its new place)."""
        for entry in self.kept.values():
            _, Phi, done = entry
            if done >= k + len(order):
                Phi[:, k:k + len(order)] = Phi[:, k + np.asarray(order)]
            elif done > k:
                entry[2] = k  # part of the block: recomputed at the next visit

    def gram(self, k):
        """Phi^T Phi (k x k) over all rows, summed over the chunks in order; entry
        (i, j) has the same bits for every k > max(i, j) (:func:`_add_gram`), so a
        continued run gives its first landmarks the objectives that run wrote."""
        total = np.zeros((k, k))
        if not self.keep:
            parts = reduce_row_blocks(_kernel_gram, self.X, self.landmarks[:k], self.eta,
                                      bounds=self.bounds)
            for part in parts:
                total += part
            return total
        n_chunks = len(self.bounds) - 1
        self.planned = [c for c in range(n_chunks)
                        if c not in self.kept or self.kept[c][2] < k]
        for c in range(n_chunks):
            _add_gram(self._kept_columns(c, k)[1], total)
        self.close()
        return total

    def cross(self, t, k):
        """Phi^T phi_t over all rows for the first k landmarks and a candidate t,
        with phi_t^T phi_t last (k + 1,), float64; and phi_t per chunk when the
        table is kept (else None)."""
        t = np.asarray(t, dtype=np.float64)[None]
        if not self.keep:
            parts = reduce_row_blocks(_candidate_cross, self.X, self.landmarks[:k], t,
                                      self.eta, bounds=self.bounds)
            return np.sum(parts, axis=0), None
        total, columns = np.zeros(k + 1), []
        for c in range(len(self.bounds) - 1):
            Xc, _, Phi = self.visit(c, k)
            column = phi_columns(Xc, t, self.eta)[:, 0]
            wide = column.astype(np.float64)
            total[:k] += Phi.T.astype(np.float64) @ wide[self.permutations[c]]
            total[k] += wide @ wide
            columns.append(column)
        return total, columns

    def replace(self, k, columns):
        """Landmark k has moved (already written in ``landmarks``): its kept column."""
        if self.keep:
            for c, column in enumerate(columns):
                self.kept[c][1][:, k] = column[self.permutations[c]]

class BatchFactors:
    """Per-batch Cholesky factors, extended lazily to the current number of landmarks.

    When all factors would not fit in ``cache_bytes`` the factor is rebuilt
    at each step instead (same result, more work).
    """

    def __init__(self, n_batches, capacity, batch_sizes, cache_bytes):
        self.capacity = capacity
        self.keep = n_batches * capacity**2 * 8 <= cache_bytes
        self.factors = {}
        self.batch_sizes = batch_sizes
        # All kept factors in one array (pages are touched only when a batch is
        # first used), so that a compiled visit gets a chunk's factors in one view.
        self.L = np.zeros((n_batches, capacity, capacity)) if self.keep else None

    def factor(self, j, Phi_c, positions, k):
        """The factor of batch j (rows ``positions`` of ``Phi_c``) for its first k
        columns; only the columns it does not have yet are gathered."""
        factor = self.factors.get(j) if self.keep else None
        if factor is None:
            factor = _CholeskyFactor(self.capacity, RIDGE * self.batch_sizes[j],
                                     L=self.L[j] if self.keep else None)
            if self.keep:
                self.factors[j] = factor
        if factor.size < k:
            # Columns contiguous (Fortran order) whatever k is, so that the dot
            # products of a column round the same way however many columns are
            # gathered at once (a continued run extends by several at a time).
            Phi_B = np.asfortranarray(Phi_c[positions, :k], dtype=np.float64)
            for col in range(factor.size, k):
                new = Phi_B[:, col]
                cross = Phi_B[:, :col].T @ new if col else new[:0]
                factor.append(cross, new @ new)
        return factor


class Preceding:
    """The span landmarks k, k + 1, ... are optimised against in a fit: the k
    landmarks before them (the first k columns of Phi)."""

    def __init__(self, tables, factors, k):
        self.tables, self.layout, self.factors, self.k = tables, tables.layout, factors, k

    def visit(self, c):
        return self.tables.visit(c, self.k)

    def factor(self, c, j, Phi_c, positions):
        return self.factors.factor(self.layout.batch_id(c, j), Phi_c, positions, self.k)

    def batch_factors(self, c, batches, Phi_c):
        """The factors (n_batches_c, K, K) of all batches of chunk c, those in
        ``batches`` up to date; None when the factors are not kept."""
        if not self.factors.keep:
            return None
        for j in set(batches):
            self.factor(c, j, Phi_c, self.layout.batch_positions(c, j))
        first = self.layout.first_batch
        return self.factors.L[first[c]:first[c + 1]]




class _BatchGrams:
    """Gram matrices Phi_B^T Phi_B (K x K, float64) of the batches over all K
    landmarks, for the refinement; kept when they fit in ``cache_bytes`` and the
    kernel table is kept, else rebuilt when needed."""

    def __init__(self, tables, n_landmarks, cache_bytes):
        self.tables = tables
        self.keep = (tables.keep
                     and tables.layout.n_batches * n_landmarks**2 * 8 <= cache_bytes)
        self.grams = {}

    def gram(self, c, j, Phi_full, positions):
        G = self.grams.get((c, j))
        if G is None:
            Phi_B = Phi_full[positions].astype(np.float64)
            G = Phi_B.T @ Phi_B
            if self.keep:
                self.grams[(c, j)] = G
        return G

    def replace(self, k, columns):
        """Landmark k has moved and its kernel column is ``columns`` (per chunk)."""
        n_landmarks = len(self.tables.landmarks)
        for (c, j), G in self.grams.items():
            positions = self.tables.layout.batch_positions(c, j)
            Phi_B = self.tables.visit(c, n_landmarks)[2][positions].astype(np.float64)
            new = Phi_B.T @ Phi_B[:, k]
            G[k, :] = new
            G[:, k] = new


class Others:
    """The span landmark k is re-optimised against in the refinement: all the
    other landmarks (Phi without column k)."""

    def __init__(self, tables, grams, k):
        self.tables, self.layout, self.grams, self.k = tables, tables.layout, grams, k
        self.n_landmarks = len(tables.landmarks)
        self.factors = {}
        self.full = None

    def visit(self, c):
        Xc, xsq, Phi = self.tables.visit(c, self.n_landmarks)
        self.full = Phi
        return Xc, xsq, np.delete(Phi, self.k, axis=1)

    def factor(self, c, j, Phi_c, positions):
        factor = self.factors.get((c, j))
        if factor is None:
            G = self.grams.gram(c, j, self.full, positions)
            G = np.delete(np.delete(G, self.k, axis=0), self.k, axis=1)
            factor = _CholeskyFactor.of_gram(G, RIDGE * (positions.stop - positions.start))
            if self.grams.keep:
                self.factors[(c, j)] = factor
        return factor

    def batch_factors(self, c, batches, Phi_c):
        """The factors (n_batches_c, K - 1, K - 1) of chunk c's batches in ``batches``
        (the others zero) in one array, for a compiled visit; None where the batches'
        Gram matrices are not kept (the steps then run one at a time)."""
        if not self.grams.keep:
            return None
        k = self.n_landmarks - 1
        Ls = np.zeros((self.layout.batches_per_chunk[c], max(k, 1), max(k, 1)))
        for j in set(batches):
            factor = self.factor(c, j, Phi_c, self.layout.batch_positions(c, j))
            Ls[j, :k, :k] = factor.L[:k, :k]
        return Ls


