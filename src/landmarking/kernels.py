"""Gaussian kernel features between data and landmarks, computed block by block.

phi_x(t) = exp(-||t - x||^2 / eta), with ``eta`` the kernel width (units of squared
distance). Passes over all N rows go through :mod:`landmarking._blocks`, so memory
stays bounded, float32 input stays float32, and the data may be a NumPy or CSR
array, a memory map, a Zarr array or a Dask array (features of a Dask array are a
lazy Dask array).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import numpy as np
from scipy import sparse
from sklearn.utils.extmath import row_norms

from ._blocks import (
    chunk_bounds,
    is_in_memory,
    is_lazy,
    map_row_blocks,
    reduce_row_blocks,
    take_rows,
    working_dtype,
)
from ._memory import BLOCKS_PER_BUDGET, check_memory, working_memory_bytes
from ._typing import ArrayLike, MatrixLike, RandomStateLike

__all__ = ["squared_distances", "gaussian_features", "row_chunks", "resolve_kernel_width",
           "variance_kernel_width", "local_kernel_width", "auto_kernel_width",
           "sample_mean_std", "KERNEL_WIDTH_RULES"]


def row_chunks(n_rows: int, chunk_size: int) -> Iterator[slice]:
    """Yield ``slice`` objects that cover ``range(n_rows)`` in chunks."""
    for start in range(0, n_rows, chunk_size):
        yield slice(start, min(start + chunk_size, n_rows))


def squared_distances(X: MatrixLike, T: ArrayLike, *,
                      X_sq_norms: ArrayLike | None = None) -> np.ndarray:
    """Exact squared Euclidean distances between rows of X and rows of T.

    Uses ||x||^2 - 2 x.t + ||t||^2 (one matrix product) and clips the rounding
    error below zero. Valid in every space: the shortcut 2 - 2 x.t is used
    nowhere, since it holds only on the unit sphere.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n, d)
    T : ndarray of shape (m, d)
    X_sq_norms : ndarray of shape (n,), optional
        Precomputed ||x||^2, reused between calls.

    Returns
    -------
    ndarray of shape (n, m), dtype of X
    """
    if X_sq_norms is None:
        X_sq_norms = row_norms(X, squared=True)
    T = np.asarray(T, dtype=X.dtype)
    d2 = np.asarray(X @ T.T)
    d2 *= -2
    d2 += X_sq_norms[:, None]
    d2 += np.einsum("ij,ij->i", T, T)[None, :]
    np.maximum(d2, 0, out=d2)
    return d2


def _features_inputs(X, T, out):
    """(X with a shape, T in the working dtype, that dtype) for the landmark features,
    having refused at once a result that cannot fit in memory."""
    if not hasattr(X, "shape"):
        X = np.asarray(X)
    dtype = working_dtype(X)
    T = np.asarray(T, dtype=dtype)
    if out is None and not is_lazy(X):
        check_memory(dtype.itemsize * len(T) * X.shape[0],
                     what=f"the landmark features of {X.shape[0]} rows x {len(T)} landmarks",
                     way_out="pass a Dask array (a lazy result), write them to a memory "
                             "map or Zarr array with out= (on the command line: -o FILE.npy "
                             "or .zarr), transform the rows in smaller blocks, or pass "
                             "float32 data")
    return X, T, dtype


def gaussian_features(X: MatrixLike, T: ArrayLike, width: float, *,
                      chunk_size: int | None = None, out: Any = None) -> np.ndarray:
    """Landmark features exp(-||x - t_k||^2 / width) for every row x of X.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
        NumPy or CSR array, memory map, Zarr or Dask array.
    T : ndarray of shape (n_landmarks, n_features)
    width : float
        Kernel width eta > 0, in squared data units.
    chunk_size : int, optional
        Rows per block for input without storage chunks (default: what fits in
        scikit-learn's ``working_memory``); memory stays at about
        ``chunk_size * (n_features + n_landmarks)`` values. Each row's features
        depend on that row only.
    out : array-like of shape (n_samples, n_landmarks), optional
        Where to write the features block by block (a memory map, a Zarr array).

    Returns
    -------
    ndarray of shape (n_samples, n_landmarks), dtype of X (float32 stays float32,
    other types give float64); a lazy Dask array for Dask input; ``out`` when given.

    Examples
    --------
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0]])
    >>> gaussian_features(X, X[:1], 1.0).round(4)
    array([[1.    ],
           [0.3679]])
    """
    X, T, dtype = _features_inputs(X, T, out)
    if chunk_size is None:
        from ._blocks import rows_per_block

        chunk_size = rows_per_block(8 * (X.shape[1] + T.shape[0]))
    return map_row_blocks(_features_of_block, X, T, width, n_out=T.shape[0], dtype=dtype,
                          block_rows=chunk_size, out=out)


def _features_of_block(block, T, width):
    d2 = squared_distances(block, T)
    d2 *= -1.0 / width
    return np.exp(d2, out=d2)


#: Accepted string values of the ``kernel_width`` parameter.
KERNEL_WIDTH_RULES = ("auto", "variance")

# The local rule of "auto": squared distance to the AUTO_NEIGHBOR-th nearest
# neighbour, median over a subsample of at most AUTO_SUBSAMPLE points (both fixed,
# so that the width never depends on how many landmarks are asked for).
AUTO_SUBSAMPLE = 2000
AUTO_NEIGHBOR = 20
#: "auto" takes the local rule where the variance rule is more than this many times
#: wider (a low-dimensional manifold), else the variance rule: between the largest
#: ratio measured on data the variance rule suits (2.9, Yale B faces) and the
#: smallest on a low-dimensional manifold (7.8, 300 points on two circles).
AUTO_MANIFOLD_RATIO = 5.0


#: Rows per block of the variance rule's pass over the data, so that a block's
#: float64 deviations stay small and in cache (quicker than one block of all rows,
#: the same width to 1e-13; the timing is in CHANGELOG.md, "Measurements retired
#: from source comments"). The same blocks for every kind of input (not a Zarr or
#: Dask array's own chunks), so that the width, and "auto" with it, is the same
#: bits in every container.
VARIANCE_BLOCK_ROWS = 4096


def variance_kernel_width(X: MatrixLike) -> float:
    """The paper's heuristic: eta = sum of the per-dimension variances of X."""
    _, std = column_mean_std(X, chunk_bounds(X, VARIANCE_BLOCK_ROWS))
    return float(np.sum(std**2))


#: Arrays of at least this many values take the compiled column moments
#: (:mod:`._moments_loops`: the same bits, on the compiled loops' threads); smaller ones
#: NumPy's, which cost less than loading the compiled code.
COMPILED_MOMENTS_MIN_VALUES = 2**21


def compiled_moments_apply(block, n_values):
    """Whether :mod:`._moments_loops` gives NumPy's bits for this block: dense,
    C-ordered float32 or float64 with more than one column (NumPy adds a single
    column, or an F-ordered block, pairwise), and worth it for ``n_values``."""
    return (n_values >= COMPILED_MOMENTS_MIN_VALUES and isinstance(block, np.ndarray)
            and block.ndim == 2 and block.shape[1] > 1 and block.flags.c_contiguous
            and block.dtype in (np.float32, np.float64))


def compiled_column_moments(block):
    """(rows, mean, sum of squared deviations) per column of a block, float64, by
    :mod:`._moments_loops`: NumPy's bits where :func:`compiled_moments_apply`."""
    from ._moments_loops import column_squared_deviations, column_sums

    total = np.zeros(block.shape[1])
    column_sums(block, total)
    mean = total / block.shape[0]
    m2 = np.zeros(block.shape[1])
    column_squared_deviations(block, mean, m2)
    return block.shape[0], mean, m2


def _column_moments(block, compiled=False):
    """(rows, mean, sum of squared deviations) per column of a block, float64;
    ``compiled``: through :func:`compiled_column_moments` where it gives the same
    bits (the one place that chooses the compiled moments)."""
    if sparse.issparse(block):
        mean = np.asarray(block.mean(axis=0, dtype=np.float64)).ravel()
        sq = np.asarray(block.multiply(block).sum(axis=0, dtype=np.float64)).ravel()
        return block.shape[0], mean, np.maximum(sq - block.shape[0] * mean**2, 0)
    if compiled and compiled_moments_apply(block, COMPILED_MOMENTS_MIN_VALUES):
        return compiled_column_moments(block)
    mean = block.mean(axis=0, dtype=np.float64)
    return block.shape[0], mean, ((block - mean) ** 2).sum(axis=0, dtype=np.float64)


def column_mean_std(X, bounds=None):
    """Per-column mean and standard deviation of X (float64), one pass over its blocks.

    The blocks' moments are merged in order (the pairwise update of Chan, Golub &
    LeVeque), which is stable for data far from the origin and gives the same
    result wherever the data lives, for the same blocks. Large data's blocks go
    through the compiled moments (the same bits).
    """
    n, mean, m2 = 0, 0.0, 0.0
    compiled = X.shape[0] * X.shape[1] >= COMPILED_MOMENTS_MIN_VALUES
    for n_b, mean_b, m2_b in reduce_row_blocks(_column_moments, X, compiled,
                                               bounds=bounds):
        total = n + n_b
        delta = mean_b - mean
        mean = mean + delta * (n_b / total)
        m2 = m2 + m2_b + delta**2 * (n * n_b / total)
        n = total
    return mean, np.sqrt(m2 / n)


def sample_mean_std(X: MatrixLike, chunks: np.ndarray | None = None,
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and standard deviation (float64) of a GP fit's sample.

    With ``chunks``, the chunk offsets of the chunked sampling (whose sample is X
    itself, possibly out of core): :func:`column_mean_std` over those chunks.
    Otherwise X is an in-memory sample, and the sums run over its rows in order, so
    that the result has the bits of :func:`column_mean_std` on the whole sample in
    one block: in that one block where it fits in ``working_memory /
    BLOCKS_PER_BUDGET`` bytes of float64, where the compiled moments take it (they
    make no float64 copy), for a single column (whose sum NumPy adds pairwise) and
    for sparse rows; else in blocks of that size with the running sum carried into
    the next block (a reduction down the columns of a C-ordered array adds the rows
    one by one), so that its memory is one block.
    """
    if chunks is None:
        n, d = X.shape
        block = max(1, working_memory_bytes() // BLOCKS_PER_BUDGET // (8 * d))
        if (block < n and d > 1 and not sparse.issparse(X)
                and not compiled_moments_apply(X, n * d)):
            return _mean_std_in_row_order(X, block)
        chunks = np.array([0, n])
    return column_mean_std(X, chunks)


def _mean_std_in_row_order(X, block):
    """Per-column mean and standard deviation of a dense in-memory X with more than
    one column, its rows added one by one in blocks of ``block`` rows (the bits of
    NumPy's sums down the columns of X in one block)."""
    n, d = X.shape
    total = np.zeros(d)
    for start in range(0, n, block):
        total = np.add.reduce(np.vstack([total[None], X[start:start + block]]), axis=0,
                              dtype=np.float64)
    mean = total / n
    m2 = np.zeros(d)
    for start in range(0, n, block):
        m2 = np.add.reduce(np.vstack([m2[None], (X[start:start + block] - mean) ** 2]),
                           axis=0)
    return mean, np.sqrt(m2 / n)


def local_kernel_width(X: MatrixLike, *, random_state: RandomStateLike = None) -> float:
    """A kernel width from the data's local scale (the local half of "auto").

    eta = median over a subsample (at most :data:`AUTO_SUBSAMPLE` rows) of the
    squared distance from each row to its :data:`AUTO_NEIGHBOR`-th nearest neighbour
    in the subsample. It follows the spacing of points along the manifold, not the
    spread of the whole cloud, so on low-dimensional manifolds (two concentric
    circles, a Swiss roll) the kernel sees one sheet at a time. Scaling X by c
    scales eta by c^2; shifting X leaves it unchanged.
    """
    width = _neighbour_spacing(take_rows(X, _subsample_rows(X.shape[0], random_state)))
    if not width > 0:
        # Heavily duplicated data: fall back to the global scale.
        width = variance_kernel_width(X)
    return width


def _subsample_rows(n_rows, random_state):
    """The rows of the local rule's subsample: at most :data:`AUTO_SUBSAMPLE` of
    ``n_rows``, drawn from ``random_state`` (all rows when there are fewer), sorted."""
    from sklearn.utils import check_random_state

    rng = check_random_state(random_state)
    if n_rows <= AUTO_SUBSAMPLE:
        return np.arange(n_rows)
    return np.sort(rng.choice(n_rows, AUTO_SUBSAMPLE, replace=False))


def _neighbour_spacing(sample):
    """The median over the rows of ``sample`` (in memory, as :func:`take_rows` reads
    them) of the squared distance to their :data:`AUTO_NEIGHBOR`-th nearest neighbour
    among them, in float64 (0 where the rows repeat)."""
    sample = (sample.toarray() if sparse.issparse(sample) else sample).astype(np.float64)
    k = min(AUTO_NEIGHBOR, len(sample) - 1)
    d2 = squared_distances(sample, sample)
    np.fill_diagonal(d2, np.inf)
    kth = np.partition(d2, k - 1, axis=1)[:, k - 1]
    return float(np.median(kth))


def auto_kernel_width(X: MatrixLike, *, random_state: RandomStateLike = None) -> float:
    """The default kernel width ("auto"): the paper's variance rule, or the local
    rule on a low-dimensional manifold.

    eta = :func:`local_kernel_width` when :func:`variance_kernel_width` exceeds it
    more than :data:`AUTO_MANIFOLD_RATIO` times, else the variance rule. The ratio
    tells the two regimes apart: along a low-dimensional manifold the 20th
    neighbour is close while the cloud is wide (two circles: ratio 8-190 with 300
    to 4,000 points, Swiss rolls 8-20, clusters on the sphere 10-12), and there the
    variance rule is far too wide (landmarks between the circles). On data of many
    intrinsic dimensions the distances concentrate and the two rules are close or
    the local one is the wider (MNIST 1.0, faces 1.0-2.9, 20 Newsgroups as
    square-root word frequencies 0.58), and there the variance rule is as good or
    better: on 20 Newsgroups the local rule's kernel is nearly flat (12 landmarks
    whose 100 nearest posts are 20% one newsgroup against 26% with the variance
    rule), on Yale B faces it is a third of the variance rule's (test accuracy
    0.385 against 0.524). ``benchmarks/gp_kernel_width_rules.py`` prints the table.
    Scaling X by c scales eta by c^2; shifting X leaves it unchanged.
    """
    # The data is read for both rules together: the column moments of all rows, then
    # the local rule's subsample.
    rows = _subsample_rows(X.shape[0], random_state)
    variance = variance_kernel_width(X)
    subsample = take_rows(X, rows)
    local = _neighbour_spacing(subsample)
    if not local > 0:
        local = variance  # local_kernel_width's fall-back, without a second pass
    return local if variance > AUTO_MANIFOLD_RATIO * local else variance


def resolve_kernel_width(X: MatrixLike, kernel_width: float | Literal["auto", "variance"], *,
                         random_state: RandomStateLike = None) -> float:
    """Turn the ``kernel_width`` parameter into a positive float.

    Parameters
    ----------
    X : array of shape (n_samples, n_features), validated data
    kernel_width : float, "auto" or "variance"
    random_state : seed for the "auto" subsample

    Returns
    -------
    float
    """
    if isinstance(kernel_width, str):
        if kernel_width not in KERNEL_WIDTH_RULES:
            raise ValueError(
                "kernel_width must be a positive number, 'auto' or 'variance'; "
                f"got {kernel_width!r}."
            )
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            width = (auto_kernel_width(X, random_state=random_state) if kernel_width == "auto"
                     else variance_kernel_width(X))
        if not np.isfinite(width) or width < np.finfo(np.float64).tiny:
            raise _width_error(X, width)
        return width
    if isinstance(kernel_width, bool) or not isinstance(kernel_width, (int, float, np.number)):
        raise TypeError(
            f"kernel_width must be a positive number, 'auto' or 'variance'; got {kernel_width!r}."
        )
    if not np.isfinite(kernel_width) or kernel_width <= 0:
        raise ValueError(
            f"kernel_width must be > 0, got {kernel_width!r}; pass a positive width "
            "(squared data units) or 'auto'."
        )
    # Squared distances of data this large are infinite whatever the width, and the
    # landmarks would come out NaN. One pass over rows in memory, next to the fit's
    # many; data out of core is not read an extra time for it.
    error = _overflow_error(X) if is_in_memory(X) else None
    if error is not None:
        raise error
    return float(kernel_width)


def _max_abs(block):
    data = block.data if sparse.issparse(block) else block
    return float(np.max(np.abs(data))) if data.size else 0.0


def _squared_scale(X):
    """The largest absolute entry of X and (2 * that)^2 times the number of columns:
    a bound on a squared distance between two rows. One pass over the blocks."""
    scale = max(reduce_row_blocks(_max_abs, X, bounds=chunk_bounds(X, VARIANCE_BLOCK_ROWS)),
                default=0.0)
    with np.errstate(over="ignore", under="ignore"):
        square = (2 * np.float64(scale)) ** 2 * X.shape[1]
    return scale, square


def _overflow_error(X, scale=None, square=None):
    """The error for data whose squared distances overflow float64 (None when they
    do not; ``square=inf`` forces it)."""
    if scale is None:
        scale, square = _squared_scale(X)
    if np.isfinite(square):
        return None
    return ValueError(
        f"X's entries reach {scale:.3g} in absolute value, so squared distances (and the "
        "kernel width, in squared units of X) overflow float64; divide X by a scale "
        "such as np.abs(X).max() first (the landmarks are then in the new units: "
        "multiply them back by the same scale)."
    )


def _width_error(X, width):
    """The error for a kernel width rule that gave no usable width: the squares of
    the data's entries overflowed or underflowed float64 (a width is in squared
    units of X), or the rows are all the same."""
    scale, square = _squared_scale(X)
    if width == np.inf or not np.isfinite(square):
        return _overflow_error(X, scale, np.inf)
    if scale > 0 and square < np.finfo(np.float64).tiny / np.finfo(np.float64).eps:
        return ValueError(
            f"X's entries are at most {scale:.3g} in absolute value, so their squares "
            "(and the kernel width, in squared units of X) underflow float64; divide X "
            "by a scale such as np.abs(X).max() first (the landmarks are then in the "
            "new units: multiply them back by the same scale)."
        )
    return ValueError(
        "X has zero variance (all rows identical), so no kernel width can be "
        "derived from it; pass a positive kernel_width."
    )
