"""Where a GP fit's minibatches come from: a seeded sample of all rows, whatever the storage.

The steps of :func:`.fit.learn_gp_landmarks` read minibatches that
are consecutive slices of a seeded random order of *the sample*, a set of rows that
depends only on the number of rows, the batch size, the steps per landmark and the
seed, never on the container or its chunks:

- **All rows**, when a landmark's steps can visit every batch (``N // batch_size
  <= steps``): the rows in the order of a permutation drawn from ``(seed, 0xB47C,
  0)``. This is the paper's sampling and the layout fits in memory have always
  used, so their landmarks are unchanged.
- **steps x batch_size rows drawn without replacement from all N rows**, in the
  random order of the draw, otherwise. Each batch is then a uniform sample of all rows
  (however the rows are ordered: by time, by source, by class), and every
  landmark's steps visit each batch of the sample once, in their own order: a
  landmark sees as many points as when its batches were drawn from all the data,
  and every landmark sees the same ones, so that their kernel columns are kept for
  those rows only.

The sample's rows are read front to back (:func:`landmarking._blocks.gather_rows`:
one pass over a memory map, each Zarr chunk or Dask block read once, a piece of at
most ``working_memory / 64`` at a time, or one chunk when that is larger; with
``check_finite``, every block whole and checked for NaN and infinity, so that a
fit reads out-of-core data once). All rows are held in memory in row order, with
the random order as a permutation of them; a sample smaller than N is held in
batch order (row i is the i-th row drawn), so that a batch is a slice, read as one
stream, at every step of every landmark, with no second copy. Either way the
kernel columns (whose rounding in a BLAS matrix-vector product depends on where a
row sits in the array) are computed on the same rows in the same layout from a
NumPy array, a memory map, a Zarr store or a Dask array in any chunking, and the
landmarks are the same bit for bit. The column means and deviations that place
the starting points are summed in the order the rows are held, in blocks
(:func:`sample_mean_std`), giving the bits of one pass over the sample.

With ``chunk_size`` (``GPLandmarks(chunk_size=...)``) a fit keeps the earlier
sampling instead: X as it is, cut into chunks of that many rows, each with its own
permutation (drawn from ``(seed, 0xB47C, c)``), visited one after another; its
landmarks depend on the chunks.

The batches' layout (:class:`BatchLayout`, ``Sample.layout``) goes with the sample:
the chunks, each cut into consecutive slices of its permutation, and the order in
which a landmark's steps visit them (:meth:`BatchLayout.order`). Every backend
steps on this layout.

Memory of the sample: ``P x n_features`` values of the data's working dtype (float32
stays float32), ``P = N`` or ``steps x batch_size``, plus ``2 P`` integers for its
order (``4 P`` while it is read); an array in memory whose sample is all its rows is
used as it is (no copy).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from .._blocks import chunk_bounds, gather_rows, is_in_memory, working_dtype
from .._memory import check_memory
from .._typing import MatrixLike

__all__ = ["Sample", "BatchLayout", "draw_sample", "sample_size", "batch_bounds", "batch_order"]

#: The stream that has always drawn the permutation of a single chunk of all rows
#: (and of chunk c of the chunked sampling, ``(seed, PERMUTATION_STREAM, c)``).
PERMUTATION_STREAM = 0xB47C
#: The stream of the rows of a sample smaller than the data.
SAMPLE_STREAM = 0x5A4D


def sample_size(n_samples: int, batch_size: int, steps: int) -> int:
    """Rows in the sample: all ``n_samples`` when the steps of one landmark can visit
    every batch (``n_samples // batch_size <= steps``), else ``steps * batch_size``."""
    n_batches = max(1, n_samples // batch_size)
    return n_samples if n_batches <= steps else steps * batch_size


def batch_bounds(n_rows: int, batch_size: int) -> np.ndarray:
    """Start offsets of the consecutive batches of ``n_rows`` rows (int64); the last
    batch takes the remainder."""
    n_batches = max(1, n_rows // batch_size)
    bounds = np.arange(n_batches + 1, dtype=np.int64) * batch_size
    bounds[-1] = n_rows
    return bounds


def batch_order(rng: np.random.Generator, batches_per_chunk: list[int],
                n_steps: int) -> list[tuple[int, int]]:
    """(chunk, batch) for each step: the chunks in a random order, the batches of
    each chunk in a random order, repeated until there are ``n_steps``."""
    order = []
    while len(order) < n_steps:
        for c in rng.permutation(len(batches_per_chunk)):
            order.extend((int(c), int(j)) for j in rng.permutation(batches_per_chunk[c]))
            if len(order) >= n_steps:
                break
    return order[:n_steps]


class BatchLayout:
    """Where each minibatch's rows are: the chunks of the rows, each cut into
    batches by a permutation of its rows.

    Chunk c is rows ``bounds[c]:bounds[c + 1]``; its batch j is the slice
    ``batch_bounds[c][j]:batch_bounds[c][j + 1]`` of ``permutations[c]`` (row
    indices into the chunk). The batches of all chunks are numbered one after
    another (:meth:`batch_id`).
    """

    def __init__(self, bounds: np.ndarray, permutations: list[np.ndarray],
                 batch_size: int) -> None:
        self.bounds = np.asarray(bounds, dtype=np.int64)
        self.permutations = permutations
        self.batch_bounds = [batch_bounds(n, batch_size) for n in np.diff(self.bounds)]
        self.batches_per_chunk = [len(b) - 1 for b in self.batch_bounds]
        self.first_batch = np.concatenate([[0], np.cumsum(self.batches_per_chunk)])

    @property
    def n_chunks(self) -> int:
        return len(self.bounds) - 1

    @property
    def n_batches(self) -> int:
        return int(self.first_batch[-1])

    def batch_sizes(self) -> np.ndarray:
        """Rows of every batch, numbered as :meth:`batch_id`."""
        return np.concatenate([np.diff(b) for b in self.batch_bounds])

    def batch_id(self, c: int, j: int) -> int:
        """The number of batch j of chunk c among all batches."""
        return int(self.first_batch[c]) + j

    def batch_rows(self, c: int, j: int) -> np.ndarray:
        """Batch j's rows of chunk c (indices into the chunk)."""
        bounds = self.batch_bounds[c]
        return self.permutations[c][bounds[j]:bounds[j + 1]]

    def batch_positions(self, c: int, j: int) -> slice:
        """Batch j's place in chunk c's permutation: a slice (a table held in the
        permutation's order has the batch's rows consecutive)."""
        bounds = self.batch_bounds[c]
        return slice(int(bounds[j]), int(bounds[j + 1]))

    def order(self, rng: np.random.Generator, n_steps: int) -> list[tuple[int, int]]:
        """(chunk, batch) of each of ``n_steps`` steps, drawn from ``rng``
        (:func:`batch_order`)."""
        return batch_order(rng, self.batches_per_chunk, n_steps)


@dataclass
class Sample:
    """The rows a fit's minibatches come from.

    Attributes
    ----------
    X : ndarray or CSR matrix (P, n_features)
        The rows, in memory: all rows in row order (the input itself when that is
        an array in memory), or a sample smaller than N in batch order (the order
        drawn).
    rows : ndarray (P,) of int or None
        Their indices in the input, in the order they are held (row i of ``X`` is
        row ``rows[i]`` of the input); None when they are all rows.
    order : ndarray (P,) of int or None
        The random order: batch j is rows ``order[j * b:(j + 1) * b]`` of ``X`` (the
        last batch takes the remainder); ``arange(P)`` for a sample held in batch
        order. None for the chunked sampling, whose chunks have a permutation each.
    n_samples : int
        Rows of the input.
    layout : BatchLayout
        The batches: one chunk cut by ``order``, or the chunks of the chunked
        sampling, each cut by its own permutation.
    chunks : ndarray of int or None
        Chunk offsets of the chunked sampling (``chunk_size`` given), else None.
    """

    X: MatrixLike
    rows: np.ndarray | None
    order: np.ndarray | None
    n_samples: int
    layout: BatchLayout
    chunks: np.ndarray | None = None
    #: True when ``X`` is held in batch order (``order`` is ``arange(P)``): a sample
    #: smaller than the data.
    in_batch_order: bool = False

    @property
    def n_rows(self) -> int:
        """Rows the fit's steps and objectives see: P."""
        return self.X.shape[0]


def draw_sample(X: MatrixLike, *, batch_size: int, steps: int, seed: int,
                chunk_size: int | None = None, check_finite: bool = False) -> Sample:
    """The sample of X for ``batch_size`` and ``steps`` per landmark, drawn from ``seed``.

    Parameters
    ----------
    X : validated array (any kind :func:`landmarking._blocks.check_rows` accepts)
    batch_size : int
    steps : int
        Steps per landmark (the most a landmark may run).
    seed : int
    chunk_size : int or None
        When given, the chunked sampling: X itself in chunks of this many rows.
    check_finite : bool, default=False
        Check every block of out-of-core X for NaN and infinity while the sample is
        read (:func:`landmarking._blocks.gather_rows`), for a caller whose
        ``check_rows(..., scan_finite=False)`` left that out. Not with
        ``chunk_size``: X is not read here then.

    Returns
    -------
    Sample
    """
    if chunk_size is None:
        return _sample_of_rows(X, batch_size, steps, seed, check_finite)
    bounds = chunk_bounds(X, chunk_size)
    permutations = [_permutation(seed, c, size) for c, size in enumerate(np.diff(bounds))]
    return Sample(X, None, None, X.shape[0], BatchLayout(bounds, permutations, batch_size),
                  chunks=bounds)


def _sample_of_rows(X, batch_size, steps, seed, check_finite):
    """The sample of :func:`draw_sample` without ``chunk_size``: all rows (the array
    itself when it is a C-ordered array in memory), or ``steps x batch_size`` rows
    drawn from ``(seed, SAMPLE_STREAM)``, read in one pass."""
    n = X.shape[0]
    size = sample_size(n, batch_size, steps)
    one_chunk = np.array([0, size], dtype=np.int64)
    if size == n and is_in_memory(X) and not sparse.issparse(X) and _c_ordered(X):
        # All rows of an array in memory: the array itself, nothing is read.
        order = _permutation(seed, 0, n)
        return Sample(X, None, order, n, BatchLayout(one_chunk, [order], batch_size))
    _check_room(X, size, batch_size, steps)
    if size == n:
        # All rows, read in row order, cut by the permutation a single chunk of all
        # rows has always been cut by.
        drawn, rows, positions = None, np.arange(n), None
        order = _permutation(seed, 0, n)
    else:
        drawn = np.random.default_rng([seed, SAMPLE_STREAM]).choice(n, size, replace=False)
        # Read front to back, held in the order drawn: rows[i] = drawn[positions[i]].
        positions = np.argsort(drawn)
        rows = drawn[positions]
        order = np.arange(size)
    # One read of the rows: the sample's only pass over X.
    return Sample(gather_rows(X, rows, positions=positions, check_finite=check_finite),
                  drawn, order, n, BatchLayout(one_chunk, [order], batch_size),
                  in_batch_order=size < n)


def _permutation(seed, c, n_rows):
    """The permutation of chunk c's rows (of all rows: c = 0), from ``(seed, 0xB47C, c)``."""
    return np.random.default_rng([seed, PERMUTATION_STREAM, c]).permutation(n_rows)


def _check_room(X, size, batch_size, steps):
    """Refuse at once, with the way out, a sample that will not fit in memory."""
    nbytes = size * X.shape[1] * working_dtype(X).itemsize
    check_memory(nbytes, what=f"the GP fit's sample of {size:,} rows x {X.shape[1]}",
                 way_out=f"lower n_steps ({steps}) or batch_size ({batch_size}): the sample "
                 "is at most n_steps x batch_size rows")


def _c_ordered(X):
    return (X.dtype in (np.float32, np.float64) and X.flags.c_contiguous
            and type(X) is np.ndarray)
