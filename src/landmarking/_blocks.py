"""Row blocks: the one place that knows where the data lives.

Every pass over all N rows goes through the helpers here, so that the same code
runs on in-memory arrays, scipy sparse matrices, memory maps, Zarr arrays and Dask
arrays. Callers say *what* to compute on a block of rows, in a plain module-level
function of the block and explicit arguments; the helpers decide *where*:

- :func:`check_rows` validates X once, at the top of ``fit``/``transform``.
  In-memory input goes through scikit-learn's ``validate_data``; out-of-core input
  (memory maps, Zarr, Dask) is checked one block at a time and never loaded whole
  (or, with ``scan_finite=False``, left for :func:`gather_rows` to check for NaN
  and infinity as it reads every block: one read of the data instead of two).
- :func:`block_bounds` gives the row blocks: the storage chunks of a Zarr or Dask
  array, else blocks of a given number of rows.
- :func:`take_rows` reads rows (a slice or any indices) into memory.
- :func:`gather_rows` reads many sorted rows front to back, a bounded piece at a
  time, each storage chunk once (whole, and checked for NaN and infinity, with
  ``check_finite=True``).
- :func:`row_blocks` yields ``(slice, block)`` pairs, each block in memory.
- :func:`map_row_blocks` applies a function to every block and returns an array
  of the same kind as the input: a lazy Dask array for Dask input (so
  ``est.transform(big).to_zarr(...)`` streams), else a NumPy array filled block by
  block (or any array-like target given as ``out``, e.g. a memory map or a Zarr
  array, written block by block).
- :func:`reduce_row_blocks` applies a function to every block and returns the
  per-block results in block order; on Dask the blocks are computed by the workers,
  and the caller combines the results in the same order, so the result does not
  depend on where the data lives.
- :func:`to_memory` gathers all rows for a method that needs them at once, after
  checking that they fit.

Blocks always arrive as C-ordered NumPy arrays of :func:`working_dtype` (float32
stays float32; other numeric types become float64), or as CSR matrices for sparse
input. A block function must be pure (a function of the block and its arguments
only), so that Dask may recompute a block lost with a worker and get the same bytes.
"""

import sys
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import numpy as np
from scipy import sparse
from sklearn.utils.validation import validate_data

from ._memory import BLOCKS_PER_BUDGET, working_memory_bytes
from ._torch import is_tensor, tensor_to_host
from ._validation import SPACES, check_choice, check_sparse_structure

__all__ = ["check_rows", "working_dtype", "block_bounds", "chunk_bounds", "rows_per_block",
           "take_rows", "gather_rows",
           "row_blocks", "map_row_blocks", "reduce_row_blocks", "to_memory",
           "is_lazy", "is_in_memory", "find_nonfinite_row", "as_dask",
           "check_feasible_for_space"]

_FLOATS = (np.float64, np.float32)
#: Dask blocks computed at once when their results are written by this process.
_BLOCKS_IN_FLIGHT = 8


# --------------------------------------------------------------------------- kinds

def _is_dask(X):
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(X, da.Array)


def _is_zarr(X):
    zarr = sys.modules.get("zarr")
    return zarr is not None and isinstance(X, zarr.Array)


def _is_out_of_core(X):
    """Memory maps, Zarr and Dask arrays: checked and read one block at a time."""
    return isinstance(X, np.memmap) or _is_zarr(X) or _is_dask(X)


def is_lazy(X):
    """True when results on X should stay lazy (Dask input)."""
    return _is_dask(X)


def is_in_memory(X):
    """True when X is held in memory (not a memory map, Zarr or Dask array)."""
    return not _is_out_of_core(X)


def working_dtype(X):
    """The dtype blocks of X arrive in: float32 stays float32, else float64."""
    return np.dtype(np.float32) if np.dtype(X.dtype) == np.float32 else np.dtype(np.float64)


# --------------------------------------------------------------------------- validation

def check_rows(X, *, estimator=None, reset=True, accept_sparse="csr", min_samples=1,
               dtype=_FLOATS, scan_finite=True):
    """Validate X as a 2-D table of finite numbers, without loading it if it is large.

    Parameters
    ----------
    X : array-like, scipy sparse matrix, numpy.memmap, zarr.Array, dask.array.Array
        or torch.Tensor
        A torch tensor on the CPU is read through a NumPy view of its memory; one
        on another device (a GPU) is copied to the host first, so it needs host
        memory for a copy; a tensor on the 'meta' device (no values) is refused.
    estimator : estimator, optional
        When given, ``n_features_in_`` (and feature names) are set (``reset=True``)
        or checked against it, as scikit-learn's ``validate_data`` does.
    reset : bool
    accept_sparse : str, list or False
        Sparse formats accepted (others are converted); False refuses sparse input.
    min_samples : int
        Fewest rows accepted.
    dtype : dtype or tuple of dtypes
        For in-memory input, scikit-learn's ``dtype`` argument. Out-of-core input
        keeps its dtype and every block is converted to :func:`working_dtype`.
    scan_finite : bool, default=True
        False leaves out the blockwise scan of out-of-core input for NaN and
        infinity (its shape, dtype and size are still checked), for a caller that
        reads every block anyway and checks it there: the GP fit's sample is read
        by :func:`gather_rows` with ``check_finite=True``, so the data is read once
        instead of twice, with the same error. In-memory input is always checked.

    Returns
    -------
    X : validated array
        In-memory input as scikit-learn returns it (ndarray or CSR); a memory map,
        Zarr or Dask array is returned as it was given, after a blockwise check.
    """
    if _is_out_of_core(X):
        _check_out_of_core(X, min_samples, scan_finite)
        if estimator is not None:
            validate_data(estimator, X, reset=reset, skip_check_array=True)
        return X
    # In memory (a tensor is read on the host): scikit-learn's checks.
    if is_tensor(X):
        X = tensor_to_host(X)
    kwargs = dict(accept_sparse=accept_sparse, dtype=dtype, ensure_min_samples=min_samples)
    # Before scikit-learn converts it: a conversion (COO to CSR, say) trusts
    # every index too.
    check_sparse_structure(X, "X")
    if estimator is None:
        from sklearn.utils import check_array
        checked = check_array(X, **kwargs)
    else:
        checked = validate_data(estimator, X, reset=reset, **kwargs)
    if checked is not X:  # a converted matrix (from LIL, say): its own indices
        check_sparse_structure(checked, "X")
    return checked


def _check_out_of_core(X, min_samples, scan_finite=True):
    kind = type(X).__name__
    if _is_dask(X) and any(np.isnan(c) for c in X.chunks[0]):
        raise ValueError(
            "the Dask array has unknown chunk sizes (NaN in X.chunks), so its rows "
            "cannot be addressed; call X.compute_chunk_sizes() first, or build it "
            "with known chunks (e.g. dask.array.from_zarr)."
        )
    if len(X.shape) != 2:
        raise ValueError(
            f"expected a 2-D array of shape (n_samples, n_features), got a {kind} of "
            f"shape {tuple(X.shape)}; reshape the stored array to two dimensions."
        )
    dt = np.dtype(X.dtype)
    if dt.kind not in "biuf":
        raise TypeError(
            f"expected numbers, got a {kind} of dtype {dt}; store the data as "
            "float32 or float64."
        )
    if X.shape[0] < min_samples:
        raise ValueError(
            f"found an array with {X.shape[0]} sample(s) (shape={tuple(X.shape)}) while "
            f"a minimum of {min_samples} is required; pass more rows."
        )
    if X.shape[1] < 1:
        raise ValueError(f"found an array with 0 feature(s) (shape={tuple(X.shape)}); "
                         "pass at least one column.")
    if not scan_finite:
        return
    bounds = block_bounds(X)
    row = find_nonfinite_row(X, bounds=bounds)
    if row >= 0:
        raise _nonfinite_error(row, bounds)


def _nonfinite_error(row, bounds):
    """The error for a non-finite value at ``row``, naming its block of ``bounds``
    (the blocks of :func:`block_bounds`): the same from the scan of
    :func:`check_rows` and from :func:`gather_rows`."""
    block = np.searchsorted(bounds, row, side="right") - 1
    return ValueError(
        f"X contains NaN or infinity at row {row} (in the block of rows "
        f"{bounds[block]}-{bounds[block + 1] - 1}); remove or impute the non-finite "
        "values."
    )


def find_nonfinite_row(X, *, bounds=None):
    """Index of the first row of X holding NaN or infinity, or -1; one block at a time."""
    if bounds is None:
        bounds = block_bounds(X)
    bad_rows = reduce_row_blocks(_first_nonfinite_row, X, bounds=bounds)
    for start, bad in zip(bounds[:-1], bad_rows, strict=True):
        if bad >= 0:
            return int(start + bad)
    return -1


def _first_nonfinite_row(block):
    if sparse.issparse(block):
        if np.isfinite(block.data).all():
            return -1
        return int(np.argmax(~np.isfinite(block.toarray()).all(axis=1)))
    # A row holding NaN or infinity sums to NaN or infinity: one pass and one value
    # per row (not a mask of the whole block); a finite row whose sum overflows is
    # told apart by the exact test on the rows flagged.
    with np.errstate(over="ignore", invalid="ignore"):
        sums = np.sum(block, axis=1)
    suspects = np.flatnonzero(~np.isfinite(sums))
    for row in suspects:
        if not np.isfinite(block[row]).all():
            return int(row)
    return -1


# --------------------------------------------------------------------------- blocks

def rows_per_block(row_bytes, *, working_memory=None):
    """Rows that fit in scikit-learn's ``working_memory`` budget (MiB), at least 1.

    The rule of ``sklearn.utils._chunking.get_chunk_n_rows``: reading the budget
    from ``sklearn.get_config()`` lets ``sklearn.config_context`` bound our memory too
    (a bad setting is refused with a clear error: :func:`._memory.working_memory_bytes`).
    """
    budget = working_memory_bytes() if working_memory is None else working_memory * 2**20
    return max(1, int(budget // max(1, row_bytes)))


def out_of_core_block_rows(n_features):
    """Rows per block of a pass over a memory map: ``working_memory /
    BLOCKS_PER_BUDGET`` bytes of float64 values, at least one row."""
    return max(1, working_memory_bytes() // BLOCKS_PER_BUDGET // (8 * max(1, n_features)))


def block_bounds(X, block_rows=None):
    """Row offsets ``[0, ..., n_samples]`` of the blocks of X.

    Zarr and Dask arrays keep their storage chunks (a block never straddles two
    chunks); other input is cut into blocks of ``block_rows`` rows (default: as many
    rows of float64 as fit in ``working_memory``, and in ``working_memory /
    BLOCKS_PER_BUDGET`` for a memory map, whose blocks are read from disk).
    """
    n = X.shape[0]
    if _is_dask(X):
        return np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)
    if _is_zarr(X):
        block_rows = X.chunks[0]
    elif block_rows is None and _is_out_of_core(X):
        block_rows = out_of_core_block_rows(X.shape[1])
    elif block_rows is None:
        block_rows = rows_per_block(8 * max(1, X.shape[1]))
    return np.append(np.arange(0, n, block_rows, dtype=np.int64), n)


def chunk_bounds(X, chunk_rows=None):
    """Row offsets of the chunks a minibatch method samples from.

    ``chunk_rows`` rows per chunk when given; otherwise the storage chunks of a Zarr
    or Dask array, and all rows as one chunk for any other input (in memory, or
    paged in by the operating system for a memory map).
    """
    n = X.shape[0]
    if chunk_rows is None:
        if _is_dask(X) or _is_zarr(X):
            return block_bounds(X)
        chunk_rows = max(1, n)
    return np.append(np.arange(0, n, chunk_rows, dtype=np.int64), n)


def _as_block(block, dtype):
    if sparse.issparse(block):
        return sparse.csr_matrix(block, dtype=dtype)
    return np.ascontiguousarray(block, dtype=dtype)


def take_rows(X, rows):
    """Rows of X in memory, in the order asked for, as :func:`working_dtype`.

    Parameters
    ----------
    X : validated array (any kind :func:`check_rows` accepts)
    rows : slice or array of int
        Indices may repeat and come in any order; a memory map or Zarr array is
        read front to back (indices sorted, then put back in the order asked for).
    """
    dtype = working_dtype(X)
    if isinstance(rows, slice):
        block = X[rows]
        if _is_dask(X):
            block = block.compute()
        return _as_block(block, dtype)
    rows = np.asarray(rows, dtype=np.int64)
    if not _is_out_of_core(X):
        return _as_block(X[rows], dtype)
    unique, inverse = np.unique(rows, return_inverse=True)
    if _is_zarr(X):
        block = X.oindex[unique, :]
    elif _is_dask(X):
        block = X[unique].compute()
    else:
        block = X[unique]
    return _as_block(block, dtype)[inverse]


def gather_rows(X, rows, *, positions=None, check_finite=False):
    """Rows ``rows`` (sorted, without repeats) of X in memory, read front to back.

    Out-of-core input is read in pieces, each one or more consecutive whole blocks
    of X (the storage chunks of a Zarr or Dask array, blocks of ``working_memory /
    BLOCKS_PER_BUDGET`` bytes of a memory map) spanning at most ``working_memory /
    BLOCKS_PER_BUDGET`` bytes unless one block alone is larger, so that every
    chunk is read once. The result, ``len(rows)`` rows of :func:`working_dtype`
    (CSR for sparse input), and two pieces are all it holds: the next piece is read
    on a second thread while one is checked (on Dask, up to ``_BLOCKS_IN_FLIGHT``
    pieces' rows, computed where the data is).

    Parameters
    ----------
    X : validated array (any kind :func:`check_rows` accepts)
    rows : array of int
        Sorted, without repeats.
    positions : array of int, optional
        Where each row goes in the result, a permutation of ``range(len(rows))``
        (``result[positions[i]] = X[rows[i]]``); default: in order. The rows are
        still read front to back.
    check_finite : bool, default=False
        Read every block of out-of-core X whole (those holding none of ``rows``
        too) and check it for NaN and infinity, raising the error of
        :func:`check_rows` (the first such row, and its block): the check of the
        data and the read of the rows in one pass. In-memory input is not checked
        here (:func:`check_rows` always checks it).
    """
    rows = np.asarray(rows, dtype=np.int64)
    if len(rows) > 1 and np.any(np.diff(rows) <= 0):
        raise ValueError("gather_rows needs sorted row indices without repeats.")
    dtype = working_dtype(X)
    if not _is_out_of_core(X):
        if positions is not None:
            rows = rows[_inverse(positions)]
        elif len(rows) == X.shape[0]:
            return _as_block(X, dtype)
        return _as_block(X[rows], dtype)
    out = np.empty((len(rows), X.shape[1]), dtype=dtype)
    bounds = block_bounds(X)
    pieces = _pieces(bounds, rows, max(1, working_memory_bytes() // BLOCKS_PER_BUDGET
                                       // (dtype.itemsize * max(1, X.shape[1]))),
                     check_finite)
    if _is_dask(X):
        results = _dask_pieces(X, rows, pieces, check_finite, dtype)
    else:
        results = _two_at_a_time(
            partial(_gather_stored_piece, X, rows, check_finite, dtype), pieces)
    for (start, _, lo, hi), (bad, part) in zip(pieces, results, strict=True):
        if bad >= 0:
            raise _nonfinite_error(int(start + bad), bounds)
        if positions is None:
            out[lo:hi] = part
        else:
            out[positions[lo:hi]] = part
    return out


def _two_at_a_time(func, items):
    """``func(item)`` for each item, yielded in order, computed on two threads with
    at most two items in flight: a Zarr chunk is read and decompressed while the one
    before is (about twice the speed on two cores), and a piece or two is all that
    is held besides the results."""
    pool = ThreadPoolExecutor(2, thread_name_prefix="landmarking-gather")
    pending = deque()
    try:
        for item in items:
            if len(pending) == 2:
                yield pending.popleft().result()
            pending.append(pool.submit(func, item))
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(cancel_futures=True)


def _inverse(positions):
    inverse = np.empty_like(positions)
    inverse[positions] = np.arange(len(positions), dtype=positions.dtype)
    return inverse


def _pieces(bounds, rows, budget_rows, every_block):
    """(start, stop, lo, hi) of the pieces of a gather: rows ``start:stop`` of X,
    consecutive whole blocks of ``bounds`` spanning at most ``budget_rows`` rows
    (or one block), holding ``rows[lo:hi]``; blocks holding none of ``rows`` are
    left out unless ``every_block``."""
    cuts = np.searchsorted(rows, bounds)
    pieces = []
    b, n_blocks = 0, len(bounds) - 1
    while b < n_blocks:
        if not every_block and cuts[b] == cuts[b + 1]:
            b += 1
            continue
        e = b + 1
        while (e < n_blocks and bounds[e + 1] - bounds[b] <= budget_rows
               and (every_block or cuts[e] < cuts[e + 1])):
            e += 1
        pieces.append((int(bounds[b]), int(bounds[e]), int(cuts[b]), int(cuts[e])))
        b = e
    return pieces


def _gather_stored_piece(X, rows, check_finite, dtype, piece):
    """:func:`_gather_piece` of a piece of a memory map or Zarr array: read whole
    (all its rows) when ``check_finite``, else only the rows asked for (one slice
    where they are consecutive)."""
    start, stop, lo, hi = piece
    if check_finite:
        return _gather_piece(X[start:stop], rows[lo:hi] - start, True, dtype)
    return _gather_piece(_read_sorted(X, rows[lo:hi]), None, False, dtype)


def _read_sorted(X, rows):
    """Sorted rows of a memory map or Zarr array, as stored (one slice where they are
    consecutive)."""
    if rows[-1] - rows[0] == len(rows) - 1:
        return X[int(rows[0]):int(rows[-1]) + 1]
    if _is_zarr(X):
        return X.oindex[rows, :]
    return X[rows]


def _gather_piece(part, local, check_finite, dtype):
    """(first non-finite row of ``part`` or -1, its rows ``local`` as ``dtype``);
    ``local`` None: ``part`` holds just the rows asked for."""
    bad = _first_nonfinite_row(part) if check_finite and np.dtype(part.dtype).kind == "f" else -1
    if bad >= 0:
        return bad, None
    if local is not None and len(local) < part.shape[0]:
        part = part[local]
    return -1, _as_block(part, dtype)


def _dask_pieces(X, rows, pieces, check_finite, dtype):
    """The pieces of a Dask array gathered where its blocks are (only the rows and
    the check's result travel), ``_BLOCKS_IN_FLIGHT`` at a time, in order."""
    import dask

    for group in range(0, len(pieces), _BLOCKS_IN_FLIGHT):
        tasks = []
        for start, stop, lo, hi in pieces[group:group + _BLOCKS_IN_FLIGHT]:
            if check_finite:
                tasks.append(dask.delayed(_gather_piece)(X[start:stop], rows[lo:hi] - start,
                                                         True, dtype))
            else:
                tasks.append(dask.delayed(_gather_piece)(X[rows[lo:hi]], None, False, dtype))
        yield from dask.compute(*tasks)


def row_blocks(X, *, bounds=None, block_rows=None):
    """Yield ``(slice, block)`` for consecutive row blocks of X, each in memory."""
    if bounds is None:
        bounds = block_bounds(X, block_rows)
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        rows = slice(int(start), int(stop))
        yield rows, take_rows(X, rows)


def _apply(block, func, args, dtype):
    return func(_as_block(block, dtype), *args)


def map_row_blocks(func, X, *args, n_out, dtype, block_rows=None, out=None):
    """``func(block, *args)`` for every row block, stacked into one array.

    Parameters
    ----------
    func : callable
        A module-level function of a block (n_b rows) returning an array of shape
        (n_b, n_out).
    X : validated array
    *args : small arguments passed to every call (landmarks, widths, ...)
    n_out : int
        Columns of the output.
    dtype : dtype
        Output dtype.
    block_rows : int, optional
        Rows per block for input without storage chunks.
    out : array-like, optional
        Where to write (a memory map, a Zarr array, ...), one block at a time.

    Returns
    -------
    dask.array.Array for Dask input (lazy, one output block per input block; with
    ``out`` given, it is stored there and ``out`` is returned), else ``out`` or a new
    ndarray of shape (n_samples, n_out).
    """
    dtype = np.dtype(dtype)
    if _is_dask(X):
        import dask.array as da

        if len(X.chunks[1]) > 1:
            X = X.rechunk({1: -1})
        result = X.map_blocks(_apply, func, args, working_dtype(X), dtype=dtype,
                              chunks=(X.chunks[0], (n_out,)),
                              meta=np.empty((0, 0), dtype=dtype))
        if out is None:
            return result
        if _is_zarr(out):
            # The workers write their own blocks; rechunked to the store's chunks,
            # no two writers share a chunk.
            da.store(result.rechunk({0: out.chunks[0]}), out, lock=False)
            return out
        # Any other target (a memory map) lives in this process: the workers
        # compute a few blocks at a time and this process writes them.
        import dask

        starts = np.cumsum((0,) + result.chunks[0][:-1])
        blocks = list(zip(starts, result.to_delayed()[:, 0], strict=True))
        for group in range(0, len(blocks), _BLOCKS_IN_FLIGHT):
            batch = blocks[group:group + _BLOCKS_IN_FLIGHT]
            computed = dask.compute(*[b for _, b in batch])
            for (start, _), values in zip(batch, computed, strict=True):
                out[int(start):int(start) + len(values)] = values
        return out
    if out is None:
        out = np.empty((X.shape[0], n_out), dtype=dtype)
    for rows, block in row_blocks(X, block_rows=block_rows):
        out[rows] = func(block, *args)
    return out


def reduce_row_blocks(func, X, *args, bounds=None, block_rows=None):
    """``[func(block, *args) for each row block]``, in block order.

    On Dask input the blocks are computed where the data is (the workers of a
    ``dask.distributed`` client, when one is active) and only the results travel.
    Combine the results in the order returned so that the outcome is the same for
    every kind of input with the same blocks.
    """
    if bounds is None:
        bounds = block_bounds(X, block_rows)
    if _is_dask(X):
        import dask

        dtype = working_dtype(X)
        parts = [dask.delayed(_apply)(X[int(a):int(b)], func, args, dtype)
                 for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        return list(dask.compute(*parts))
    return [func(block, *args) for _, block in row_blocks(X, bounds=bounds)]


def as_dask(X, chunk_rows=None):
    """X as a Dask array whose blocks are read where they are computed.

    A Zarr array keeps its chunks; a memory map is read by each worker from its
    file (never shipped from here, and never copied whole, which
    ``dask.array.from_array`` would do); an in-memory array is cut into blocks of
    ``chunk_rows`` rows. A Dask array is returned as it is.
    """
    import dask.array as da

    if _is_dask(X):
        return X
    if _is_zarr(X):
        return da.from_zarr(X)
    bounds = block_bounds(X, chunk_rows)
    if isinstance(X, np.memmap) and X.filename is not None:
        import dask

        parts = [da.from_delayed(
            dask.delayed(_read_memmap_rows)(X.filename, X.dtype.str, X.shape, X.offset,
                                            int(a), int(b)),
            shape=(int(b - a), X.shape[1]), dtype=X.dtype)
            for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        return da.concatenate(parts, axis=0)
    return da.from_array(X, chunks=(tuple(np.diff(bounds).tolist()), X.shape[1]))


def _read_memmap_rows(filename, dtype, shape, offset, start, stop):
    rows = np.memmap(filename, dtype=np.dtype(dtype), mode="r", shape=tuple(shape),
                     offset=offset)
    return np.array(rows[start:stop])


def to_memory(X, *, what, alternative):
    """All of X in memory, for a method that needs every row at once.

    Raises ``MemoryError`` naming ``alternative`` when X (as float64 or float32)
    would not fit in the memory available.
    """
    if not _is_out_of_core(X):
        return X
    from ._memory import check_memory

    dtype = working_dtype(X)
    check_memory(X.shape[0] * X.shape[1] * dtype.itemsize, what=what, way_out=alternative)
    return take_rows(X, slice(0, X.shape[0]))


def check_feasible_for_space(X, space):
    """Check that the data can live in ``space`` (nonnegative entries, nonzero rows).

    Works one block at a time on every kind of input (dense, sparse, memory map,
    Zarr, Dask) without densifying or loading it.
    """
    check_choice(space, "space", SPACES)
    if space == "euclidean":
        return
    bounds = block_bounds(X)
    parts = reduce_row_blocks(_minimum_and_zero_rows, X, bounds=bounds)
    minimum = min(part[0] for part in parts)
    if minimum < 0:
        raise ValueError(
            f"space={space!r} needs nonnegative data, but X has negative entries "
            f"(minimum {minimum:.3g}); use space='euclidean', or transform the data "
            "(for histograms: square roots of normalised counts)."
        )
    if space == "sphere":
        # bounds has one entry more than parts (the end of the last block): unpaired.
        zero_rows = np.concatenate(
            [start + part[1] for start, part in zip(bounds, parts, strict=False)]
        )
        if zero_rows.size:
            raise ValueError(
                f"space='sphere' needs every row to have a nonzero norm, but "
                f"{zero_rows.size} rows are all zero (first at index {zero_rows[0]}); "
                "drop the empty rows (e.g. documents with no vocabulary words) first."
            )


def _minimum_and_zero_rows(block):
    """Smallest entry of a block and the indices of its all-zero rows."""
    from sklearn.utils.extmath import row_norms

    data = block.data if sparse.issparse(block) else block
    minimum = float(data.min()) if data.size else 0.0
    return minimum, np.flatnonzero(row_norms(block, squared=True) == 0)
