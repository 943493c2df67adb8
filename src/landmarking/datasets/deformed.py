"""Elastically deformed MNIST digits, as many as wanted: an approximation of infinite MNIST.

Loosli, Canu & Bottou (2007, "Training invariant support vector machines using
selective sampling") made "infinite MNIST" by deforming the 60,000 MNIST training
digits with precomputed deformation fields; the Locally Linear Landmarks paper's
largest experiment embeds 1,020,000 of its digits. Those fields come in files we do
not have, so :func:`make_deformed_digits` draws its own deformations, the elastic
distortions of Simard, Steinkraus & Platt (2003, "Best practices for convolutional
neural networks applied to visual document analysis"):

1. a random displacement field per digit and per axis: white noise of variance 1/3
   (Simard's uniform noise on [-1, 1]) smoothed by a Gaussian of width ``sigma``
   pixels and multiplied by ``alpha``, less its mean (a translation of the whole
   digit, left to step 2);
2. plus a whole-pixel shift of the digit by up to ``max_shift`` pixels per axis;
3. each output pixel (i, j) takes the source digit's value at (i + dy, j + dx) by
   bilinear interpolation, zero outside the 28 x 28 frame.

**How the smooth field is drawn.** A Gaussian smoothing with reflecting borders
(``scipy.ndimage.gaussian_filter(mode="reflect")``) is diagonal in the cosine basis
(DCT-II): frequency k is multiplied by ``g_k = exp(-(pi k sigma / 28)^2 / 2)``. White
noise has independent coefficients in that basis, so the smoothed field is drawn
directly as ``alpha * B^T C B`` with ``C`` an r x r matrix of independent normal
coefficients of variance 1/3 and ``B`` the first r cosines scaled by ``g_k``
(:func:`cosine_smoothing_basis`). Only the r lowest frequencies are kept, those
outside carrying under 1e-6 of the field's variance (r = 6 of 28 at sigma = 6): 72
random numbers per digit instead of 1,568, and two small matrix products instead
of a filter.

**Determinism.** Rows are generated in units of :data:`UNIT_ROWS` digits; unit u
draws all its random numbers from its own generator, seeded by
``SeedSequence(random_state, spawn_key=(u,))``. Row i is therefore a function of
``random_state``, i and the warp parameters only: the first n rows of a larger n are
the same bits, and the rows do not depend on ``block_rows``, on where they are
written, or on the number of threads (the few matrix products run with one BLAS
thread, on arrays of a fixed shape per unit).
"""

from __future__ import annotations

import math
import os
import queue
from numbers import Integral, Real
from pathlib import Path
from typing import Any

import numpy as np

from .._parallel import blas_limit, check_n_jobs, loop_threads, run_parts
from .._typing import StrPath
from .real import load_mnist

__all__ = ["make_deformed_digits", "cosine_smoothing_basis", "unit_sources", "UnitWarp",
           "UNIT_ROWS"]

#: Side of an MNIST digit in pixels.
SIDE = 28
#: Digits drawn from one seed: row i belongs to unit ``i // UNIT_ROWS``. Part of the
#: definition of the rows (changing it changes every digit), so it is fixed.
UNIT_ROWS = 512
#: Variance of the white noise before smoothing: that of Simard's uniform noise on
#: [-1, 1], so that ``alpha`` and ``sigma`` mean what they mean in his paper.
NOISE_VARIANCE = 1.0 / 3.0
#: Share of the smoothed field's variance that the omitted high frequencies may carry.
VARIANCE_LEFT_OUT = 1e-6
#: Default rows generated and written at a time.
BLOCK_ROWS = 4096
#: The source digits with a border of zeros, one pixel before and two after each
#: axis: the four neighbours of any coordinate clipped to [-1, 28] lie inside.
_PADDED = SIDE + 3


# --------------------------------------------------------------------- the warp


def cosine_smoothing_basis(sigma: float, side: int = SIDE, *,
                           variance_left_out: float = VARIANCE_LEFT_OUT) -> np.ndarray:
    """The low frequencies of a Gaussian smoothing, scaled by its gain: B (r, side).

    Row k is the orthonormal cosine (DCT-II) vector
    ``phi_k(j) = c_k cos(pi k (2 j + 1) / (2 side))`` times the Gaussian's gain
    ``g_k = exp(-(pi k sigma / side)^2 / 2)`` at that frequency. With ``Phi`` the
    matrix of all ``side`` cosines and ``B_full`` all ``side`` rows, ``B_full^T (Phi
    Z Phi^T) B_full`` equals ``gaussian_filter(Z, sigma, mode="reflect")`` (an
    untruncated kernel) for any side x side array Z; white noise Z has white
    coefficients ``Phi Z Phi^T``. Keeping r rows leaves out at most
    ``variance_left_out`` of the variance of smoothed white noise.

    Parameters
    ----------
    sigma : float
        Width of the Gaussian in pixels (> 0).
    side : int
        Pixels per axis.
    variance_left_out : float
        Share of the smoothed noise's variance the dropped frequencies may carry;
        0 keeps all ``side`` of them.

    Returns
    -------
    B : ndarray of shape (r, side), float64
    """
    k = np.arange(side)
    j = np.arange(side)
    phi = np.sqrt(2.0 / side) * np.cos(np.pi * k[:, None] * (2 * j[None, :] + 1) / (2 * side))
    phi[0] /= np.sqrt(2.0)
    gain = np.exp(-0.5 * (np.pi * k * sigma / side) ** 2)
    # The 2-D field's variance at frequency (k, l) is proportional to g_k^2 g_l^2. With
    # S the sum of all g^2 and T the sum beyond the first r, the pairs with k or l >= r
    # carry the share 1 - ((S - T) / S)^2 = T (2 S - T) / S^2 (written so that a tiny
    # share is not lost to round-off).
    power = gain ** 2
    total = power.sum()
    beyond = np.concatenate([np.cumsum(power[::-1])[::-1][1:], [0.0]])
    left_out = beyond * (2 * total - beyond) / total ** 2
    n_kept = int(np.argmax(left_out <= variance_left_out)) + 1
    return gain[:n_kept, None] * phi[:n_kept]


def _unit_generator(entropy, unit):
    """The random numbers of unit ``unit``: PCG64 seeded by (entropy, unit)."""
    seed = np.random.SeedSequence(entropy, spawn_key=(unit,))
    return np.random.Generator(np.random.PCG64(seed))


def unit_sources(unit: int, n_images: int) -> np.ndarray:
    """The source digit of each row of a unit: row i deforms digit ``i % n_images``
    (infinite MNIST's rows follow the source digits in the same order)."""
    return np.arange(unit * UNIT_ROWS, (unit + 1) * UNIT_ROWS, dtype=np.int64) % n_images


class UnitWarp:
    """The digits of one unit of :data:`UNIT_ROWS` rows, in arrays allocated once.

    A thread keeps one instance and calls it unit after unit: fresh arrays of a
    unit's size (1.6 MB each) cost more in page faults than the arithmetic done on
    them (about two thirds of the time, measured on a 2-core machine), so every
    step writes into these buffers. The steps, in the order :meth:`__call__` runs
    them:

    1. :meth:`draw`: the unit's shifts and cosine coefficients, from its generator;
    2. :meth:`smooth`: the fields ``alpha * B^T C B`` of every digit and axis;
    3. :meth:`warp`: each source digit read bilinearly at its displaced grid.

    Parameters
    ----------
    images : ndarray of shape (n_images, 28, 28), float32
        The source digits, values in [0, 1].
    basis : ndarray of shape (r, 28)
        :func:`cosine_smoothing_basis` of ``sigma``.
    alpha : float
        Scale of the fields.
    max_shift : int
        Largest whole-pixel shift per axis.
    """

    def __init__(self, images: np.ndarray, basis: np.ndarray, alpha: float,
                 max_shift: int) -> None:
        m, r = UNIT_ROWS, basis.shape[0]
        f32 = np.float32
        self.images = images
        self.basis = np.ascontiguousarray(basis, dtype=f32)
        self.scale = f32(alpha * math.sqrt(NOISE_VARIANCE))
        self.max_shift = max_shift
        # Per digit and axis (rows, then columns): coefficients C, C^T B, the fields.
        self.coefficients = np.empty((m, 2, r, r), f32)
        self.transposed = np.empty((m, 2, r, r), f32)
        self.half = np.empty((m * 2 * r, SIDE), f32)
        self.half_transposed = np.empty((m, 2, SIDE, r), f32)
        self.fields = np.empty((m, 2, SIDE, SIDE), f32)
        # The sources inside a border of zeros that is never written.
        self.padded = np.zeros((m, _PADDED, _PADDED), f32)
        self.sources = np.empty((m, SIDE, SIDE), f32)
        self.rows, self.cols, self.top, self.left = (np.empty((m, SIDE, SIDE), f32)
                                                     for _ in range(4))
        self.index = np.empty((m, SIDE, SIDE), np.intp)
        self.corners = np.empty((4, m, SIDE, SIDE), f32)
        # Flat offset of each digit's padded frame, and the grid in the padded frame.
        self.offsets = (np.arange(m, dtype=f32) * (_PADDED * _PADDED))[:, None, None]
        self.grid = np.arange(1, SIDE + 1, dtype=f32)

    def draw(self, unit: int, entropy: int) -> np.ndarray:
        """The unit's shifts (UNIT_ROWS, 2) and coefficients (into ``coefficients``)."""
        rng = _unit_generator(entropy, unit)
        shifts = rng.integers(-self.max_shift, self.max_shift + 1, size=(UNIT_ROWS, 2))
        rng.standard_normal(dtype=np.float32, out=self.coefficients)
        self.coefficients *= self.scale
        # The constant cosine moves the whole digit (0.7 pixel RMS at alpha = 34,
        # whatever sigma); translations are max_shift's, so it is left out.
        self.coefficients[:, :, 0, 0] = 0
        return shifts.astype(np.float32)

    def smooth(self) -> None:
        """The fields ``B^T C B`` of all coefficient matrices C, into ``fields``.

        Two large matrix products instead of two small ones per field: first
        ``C^T B`` for all fields stacked, then ``(C^T B)^T B``.
        """
        m2, r, side = UNIT_ROWS * 2, self.basis.shape[0], SIDE
        np.copyto(self.transposed, self.coefficients.transpose(0, 1, 3, 2))
        np.matmul(self.transposed.reshape(m2 * r, r), self.basis, out=self.half)
        np.copyto(self.half_transposed,
                  self.half.reshape(UNIT_ROWS, 2, r, side).transpose(0, 1, 3, 2))
        np.matmul(self.half_transposed.reshape(m2 * side, r), self.basis,
                  out=self.fields.reshape(m2 * side, side))

    def warp(self, sources: np.ndarray, shifts: np.ndarray) -> np.ndarray:
        """Each source digit read at its displaced grid, bilinearly, zero outside.

        Output pixel (i, j) of a digit takes its source's value at row ``i +
        field_rows[i, j] + shift_row`` and column ``j + field_cols[i, j] +
        shift_col``. Returns the (UNIT_ROWS, 28, 28) result, a view of a buffer.
        """
        np.take(self.images, sources, axis=0, out=self.sources, mode="clip")
        self.padded[:, 1:SIDE + 1, 1:SIDE + 1] = self.sources
        rows, cols, top, left, index = self.rows, self.cols, self.top, self.left, self.index
        # Coordinates in the padded frame (the grid starts at 1), clipped to its zero
        # border: a point at or beyond the border reads zeros, as it would unclipped.
        np.add(self.fields[:, 0], self.grid[:, None], out=rows)
        rows += shifts[:, 0, None, None]
        np.add(self.fields[:, 1], self.grid[None, :], out=cols)
        cols += shifts[:, 1, None, None]
        np.clip(rows, 0, SIDE + 1, out=rows)
        np.clip(cols, 0, SIDE + 1, out=cols)
        np.floor(rows, out=top)
        np.floor(cols, out=left)
        rows -= top  # now the weight of the lower neighbours
        cols -= left  # and of the right ones
        # The flat index of the upper-left neighbour, in float32 (exact below 2^24).
        top *= _PADDED
        top += left
        top += self.offsets
        np.copyto(index, top, casting="unsafe")
        padded = self.padded.reshape(-1)
        upper_left, upper, lower, lower_left = self.corners
        np.take(padded, index, out=upper_left, mode="clip")
        index += 1
        np.take(padded, index, out=upper, mode="clip")  # upper right
        index += _PADDED
        np.take(padded, index, out=lower, mode="clip")  # lower right
        index -= 1
        np.take(padded, index, out=lower_left, mode="clip")
        # Interpolate along the upper and lower rows, then between them: a + w (b - a).
        upper -= upper_left
        upper *= cols
        upper += upper_left
        lower -= lower_left
        lower *= cols
        lower += lower_left
        lower -= upper
        lower *= rows
        lower += upper
        # A convex combination of values in [0, 1] can round a few ulps past either end.
        return np.clip(lower, 0.0, 1.0, out=lower)

    def __call__(self, unit: int, entropy: int) -> tuple[np.ndarray, np.ndarray]:
        """The unit's digits: pixels (UNIT_ROWS, 784) float32 (a buffer) and sources."""
        sources = unit_sources(unit, len(self.images))
        shifts = self.draw(unit, entropy)
        self.smooth()
        return self.warp(sources, shifts).reshape(UNIT_ROWS, SIDE * SIDE), sources


# ------------------------------------------------------------------- validation


def _check_count(n):
    if isinstance(n, bool) or not isinstance(n, Integral):
        raise TypeError(
            f"n must be a whole number of digits (an int), got {n!r} of type "
            f"{type(n).__name__}; pass e.g. n=1000 (int(n) for a float that is whole)."
        )
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}; ask for at least one digit.")
    return int(n)


def _entropy(random_state):
    """The seed of every unit's generator, from ``random_state``."""
    if random_state is None:
        return np.random.SeedSequence().entropy
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**32, dtype=np.int64))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63))
    if isinstance(random_state, bool) or not isinstance(random_state, Integral):
        raise TypeError(
            f"random_state must be None, a non-negative int, a numpy RandomState or a "
            f"numpy Generator; got {random_state!r} of type {type(random_state).__name__}. "
            "Pass an int such as 0 for the same digits on every call."
        )
    if random_state < 0:
        raise ValueError(
            f"random_state must be a non-negative int, got {random_state}; pass 0 or a "
            "positive seed."
        )
    return int(random_state)


def _check_nonnegative(value, name, *, integer=False):
    kind = Integral if integer else Real
    if isinstance(value, bool) or not isinstance(value, kind) or not math.isfinite(value):
        what = "a whole number" if integer else "a finite number"
        raise TypeError(f"{name} must be {what} >= 0, got {value!r}.")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}; pass 0 to turn it off.")
    return int(value) if integer else float(value)


def _check_positive(value, name):
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise TypeError(f"{name} must be a finite number > 0, got {value!r}.")
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}.")
    return float(value)


def _zarr():
    try:
        import zarr
    except ImportError:
        raise ImportError(
            "writing the digits to a Zarr store needs the zarr package; install the scale "
            "extra (pip install 'landmarking[scale]') or write a .npy file instead "
            "(out='digits.npy')."
        ) from None
    return zarr


def _check_out(out, n, overwrite):
    """What ``out`` asks for: None, ("npy" | "zarr", Path) or ("array", array)."""
    if out is None:
        return None
    if isinstance(out, (str, os.PathLike)):
        path = Path(out)
        kind = {".npy": "npy", ".zarr": "zarr"}.get(path.suffix.lower())
        if kind is None:
            raise ValueError(
                f"out={str(out)!r}: name a .npy file or a .zarr store, or pass an "
                f"array of shape ({n}, {SIDE * SIDE}) to fill."
            )
        if kind == "zarr":
            _zarr()
        if path.exists() and not overwrite:
            raise FileExistsError(
                f"out={str(out)!r} already exists; pass overwrite=True to replace it, or "
                "choose another name."
            )
        if not path.parent.exists():
            raise FileNotFoundError(
                f"out={str(out)!r}: the folder {path.parent} does not exist; create it first."
            )
        return kind, path
    shape = getattr(out, "shape", None)
    dtype = getattr(out, "dtype", None)
    if shape is None or dtype is None or not hasattr(out, "__setitem__"):
        raise TypeError(
            f"out must be None, a file name ending in .npy or .zarr, or a writable array "
            f"of shape ({n}, {SIDE * SIDE}); got {type(out).__name__}."
        )
    if tuple(shape) != (n, SIDE * SIDE):
        raise ValueError(
            f"out has shape {tuple(shape)} but {n} digits need ({n}, {SIDE * SIDE}); "
            f"create it with that shape, e.g. np.lib.format.open_memmap(path, mode='w+', "
            f"dtype=np.float32, shape=({n}, {SIDE * SIDE}))."
        )
    if np.dtype(dtype) not in (np.float32, np.float64):
        raise ValueError(
            f"out has dtype {np.dtype(dtype)}; the digits are float32: create it with "
            "dtype=np.float32 (or float64)."
        )
    flags = getattr(out, "flags", None)
    if flags is not None and not flags.writeable:
        raise ValueError(
            "out is read-only (a memory map opened with mode='r'?); open it with "
            "mode='r+' or create it with np.lib.format.open_memmap(path, mode='w+', ...)."
        )
    return "array", out


def _n_threads(n_jobs):
    from joblib import effective_n_jobs
    from joblib.parallel import get_active_backend

    n_jobs = check_n_jobs(n_jobs)
    if n_jobs is None:
        n_jobs = get_active_backend()[1]  # that of a joblib.parallel_config, if any
    return loop_threads() if n_jobs is None else max(1, int(effective_n_jobs(n_jobs)))


def _source_digits(split, path):
    try:
        images, labels = load_mnist(path, split=split, flatten=False)
    except FileNotFoundError as exc:
        raise FileNotFoundError(
            f"make_deformed_digits deforms the MNIST {split} digits, which were not "
            f"found: {exc} The folder must hold mnist/train-images-idx3-ubyte.gz, "
            "mnist/train-labels-idx1-ubyte.gz (and t10k-* for split='test'), the four "
            "original IDX files."
        ) from None
    return images, labels


# ---------------------------------------------------------------------- writing


class _FileRows:
    """Rows of a float32 ``.npy`` file, written with ``rows[start:stop] = values``."""

    def __init__(self, handle, offset):
        self.handle = handle
        self.offset = offset

    def __setitem__(self, rows, values):
        values = np.ascontiguousarray(values, dtype=np.float32)
        self.handle.seek(self.offset + rows.start * values.shape[1] * values.itemsize)
        self.handle.write(memoryview(values).cast("B"))


def _fill(target, n, entropy, images, basis, alpha, max_shift, block_rows, n_threads,
          verbose):
    """Write the n rows into ``target`` (an array or Zarr array), block by block."""
    from .._progress import progress_bar  # tqdm's import only when rows are written

    # One UnitWarp (and its buffers) per thread, handed from unit to unit.
    warps = queue.SimpleQueue()
    for _ in range(min(n_threads, -(-n // UNIT_ROWS))):
        warps.put(UnitWarp(images, basis, alpha, max_shift))
    in_place = isinstance(target, np.ndarray)
    with blas_limit(1), \
            progress_bar(total=n, desc="deformed digits", unit="digit", disable=not verbose) as bar:
        for start in range(0, n, block_rows):
            stop = min(start + block_rows, n)
            block = (target[start:stop] if in_place
                     else np.empty((stop - start, SIDE * SIDE), dtype=np.float32))

            def write_unit(unit, block=block, start=start, stop=stop):
                warp = warps.get()
                try:
                    pixels, _ = warp(unit, entropy)
                    first = max(start, unit * UNIT_ROWS)
                    last = min(stop, (unit + 1) * UNIT_ROWS)
                    block[first - start:last - start] = pixels[first - unit * UNIT_ROWS:
                                                               last - unit * UNIT_ROWS]
                finally:
                    warps.put(warp)

            units = range(start // UNIT_ROWS, (stop - 1) // UNIT_ROWS + 1)
            run_parts(write_unit, units, n_threads)
            if not in_place:
                target[start:stop] = block
            bar.update(stop - start)


def make_deformed_digits(
    n: int,
    random_state: int | np.random.RandomState | np.random.Generator | None = None,
    *,
    alpha: float = 34.0,
    sigma: float = 6.0,
    max_shift: int = 1,
    split: str = "train",
    out: StrPath | Any | None = None,
    overwrite: bool = False,
    block_rows: int = BLOCK_ROWS,
    return_source: bool = False,
    n_jobs: int | None = None,
    verbose: bool = False,
    path: StrPath | None = None,
) -> tuple[Any, np.ndarray] | tuple[Any, np.ndarray, np.ndarray]:
    """MNIST digits under random elastic warps and shifts: infinite-MNIST-like data.

    Row i is a deformation of MNIST training digit ``i % 60000`` (the rows of
    infinite MNIST follow the same order), labelled with that digit's class. Each
    deformation is Simard et al.'s (2003) elastic distortion: a random displacement
    field per axis, white noise of variance 1/3 smoothed by a Gaussian of width
    ``sigma`` and scaled by ``alpha`` (less its mean, a translation), plus a
    whole-pixel shift of up to ``max_shift`` pixels per axis; the digit is resampled
    bilinearly, zero outside its frame. The rows are computed a block at a time and
    can be written straight into a ``.npy`` file or a Zarr store, so 10 million
    digits never sit in memory.

    This approximates infinite MNIST (Loosli, Canu & Bottou 2007, "Training invariant
    support vector machines using selective sampling"), the data of the Locally
    Linear Landmarks paper's million-point experiment. Its exact deformations come
    from precomputed tangent and field files that we do not have, so these digits
    are new draws of the same kind of data, not its rows.

    Parameters
    ----------
    n : int
        Number of digits (>= 1).
    random_state : None, int, numpy RandomState or Generator
        Seed of the deformations. The digits are a function of ``(n,
        random_state)`` and the warp parameters: an int gives the same bits on
        every call, and the first n rows of a larger n are the n rows. None draws
        fresh entropy; a RandomState or Generator is advanced by one draw.
    alpha : float, default 34
        Scale of the elastic field (Simard's alpha; 0 turns it off). At the
        defaults a pixel moves by 1.06 pixels (root mean square) per axis; at
        ``sigma=4``, by 1.59.
    sigma : float, default 6
        Width in pixels of the Gaussian that smooths the field (Simard's sigma;
        > 0): larger is smoother, and weaker for the same ``alpha``. Simard et al.
        used 4 with ``alpha=34``; 6 keeps more digits readable (Notes).
    max_shift : int, default 1
        Each digit is also shifted by a whole number of pixels drawn uniformly from
        ``-max_shift .. max_shift``, independently per axis (0 turns it off).
    split : {"train", "test"}, default "train"
        Deform the 60,000 training digits, or the 10,000 test digits (for held-out
        data with its own sources; row i then deforms test digit ``i % 10000``).
    out : None, str or path, or array, optional
        Where the digits go. None: a new in-memory array. A name ending in ``.npy``:
        a NumPy file, written block by block and returned as a read-only memory
        map. A name ending in ``.zarr``: a Zarr store with ``block_rows``-row chunks
        (needs zarr: ``pip install 'landmarking[scale]'``). A file is written under a temporary name
        and renamed when complete, so an interrupted call leaves nothing behind.
        An array of shape ``(n, 784)`` and dtype float32 (or float64) with slice
        assignment, such as ``np.lib.format.open_memmap(..., mode="w+")`` or a
        ``zarr.Array``: filled in place (the pages written through a memory map
        count in this process's resident memory until it is closed; a file name
        keeps it at a few hundred MB).
    overwrite : bool, default False
        Replace an existing ``out`` file; otherwise an existing file is an error.
    block_rows : int, default 4096
        Digits computed and written at a time (memory about 20 kB per row); any
        value gives the same digits. Multiples of 512 (:data:`UNIT_ROWS`) avoid
        drawing a unit twice.
    return_source : bool, default False
        Also return the index of each row's source digit.
    n_jobs : int or None
        Threads (None: ``OMP_NUM_THREADS`` if set, else the CPUs this
        process may use, or the count of an enclosing ``joblib.parallel_config``).
        The digits do not depend on it.
    verbose : bool, default False
        Show a tqdm progress bar.
    path : str or path, optional
        The data folder holding ``mnist/`` (default: ``$LANDMARKING_DATA``, else
        ``../shared/data``), as for :func:`load_mnist`.

    Returns
    -------
    X : ndarray of shape (n, 784), float32, values in [0, 1]
        The digits, 28 x 28 pixels row by row. With ``out`` a file name: the file
        opened read-only (``np.load(out, mmap_mode="r")`` or
        ``zarr.open_array(out, mode="r")``); with ``out`` an array: ``out``.
    y : ndarray of shape (n,), int64
        The class of each digit (that of its source).
    source : ndarray of shape (n,), int64
        Only with ``return_source=True``: the row of each digit's source in
        ``load_mnist(split=split)``.

    Raises
    ------
    FileNotFoundError
        MNIST is not in the data folder (the message names ``LANDMARKING_DATA``).
    ImportError
        ``out`` is a Zarr store and zarr is not installed.

    See Also
    --------
    landmarking.datasets.load_mnist : the source digits.

    Notes
    -----
    The smoothed noise is drawn in the cosine basis, where a Gaussian smoothing with
    reflecting borders is diagonal; this equals ``scipy.ndimage.gaussian_filter(Z,
    sigma, mode="reflect")`` of white noise Z, less the frequencies that carry under
    1e-6 of its variance. Gaussian rather than uniform noise (of the same variance)
    makes no visible difference after smoothing over some 100 pixels, and lets each
    digit take 72 random numbers (at ``sigma=6``) instead of 1,568. The field's
    mean, a translation of the whole digit by 0.7 pixel RMS at ``alpha=34``, is
    left out: translations are ``max_shift``'s.

    Readability, as the class of a digit's nearest neighbour among the 10,000 MNIST
    test digits (5,000 digits, ``random_state=0``): 0.944 undeformed, 0.880 with
    the shifts alone, 0.909 with the elastic warp alone, 0.824 at the defaults,
    0.720 at Simard's ``sigma=4``.

    The digits are generated in units of 512 rows, each unit from its own seed
    (``SeedSequence(random_state, spawn_key=(unit,))``), so they do not depend on
    ``block_rows``, on ``out`` or on ``n_jobs``. 1,020,000 digits written to a
    ``.npy`` file take about 27 CPU-seconds (2 threads, a loaded 2-core machine)
    with a peak resident memory of 0.41 GiB; a Zarr store takes twice the CPU
    (compression).

    Examples
    --------
    >>> from landmarking.datasets import make_deformed_digits
    >>> X, y = make_deformed_digits(1000, random_state=0)  # doctest: +SKIP
    >>> X.shape, X.dtype, y[:5]  # doctest: +SKIP
    ((1000, 784), dtype('float32'), array([5, 0, 4, 1, 9]))

    A million digits straight into a file, then read through a memory map:

    >>> X, y = make_deformed_digits(1_020_000, random_state=0,
    ...                             out="digits.npy")  # doctest: +SKIP
    """
    n = _check_count(n)
    entropy = _entropy(random_state)
    alpha = _check_nonnegative(alpha, "alpha")
    sigma = _check_positive(sigma, "sigma")
    max_shift = _check_nonnegative(max_shift, "max_shift", integer=True)
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}.")
    if isinstance(block_rows, bool) or not isinstance(block_rows, Integral) or block_rows < 1:
        raise ValueError(f"block_rows must be a positive int, got {block_rows!r}.")
    n_threads = _n_threads(n_jobs)
    target = _check_out(out, n, overwrite)
    images, labels = _source_digits(split, path)

    basis = cosine_smoothing_basis(sigma).astype(np.float32)
    sources = np.arange(n, dtype=np.int64) % len(images)
    args = (n, entropy, images, basis, alpha, max_shift, int(block_rows), n_threads, verbose)
    if target is None:
        from .._memory import check_memory

        check_memory(n * SIDE * SIDE * 4, what=f"{n} digits in memory",
                     way_out="write them to a file instead: out='digits.npy' (or .zarr)")
        X = np.empty((n, SIDE * SIDE), dtype=np.float32)
        _fill(X, *args)
    elif target[0] == "array":
        X = target[1]
        _fill(X, *args)
    else:
        from ..io import array_writer

        kind, file = target
        with array_writer(file, (n, SIDE * SIDE), np.float32, force=overwrite,
                          chunk_rows=int(block_rows)) as writing:
            if kind == "npy":
                # Through the file, not the map: pages written through a map count in
                # the process's resident memory until it is closed (3.4 GiB for a
                # million digits), pages written to the file do not.
                with open(writing.filename, "r+b") as handle:
                    _fill(_FileRows(handle, writing.offset), *args)
            else:
                _fill(writing, *args)
        X = np.load(file, mmap_mode="r") if kind == "npy" else _zarr().open_array(
            str(file), mode="r")
    y = labels[sources]
    return (X, y, sources) if return_source else (X, y)
