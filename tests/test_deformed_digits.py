"""make_deformed_digits: elastically deformed MNIST digits (issue 32, item 1).

The warp itself is checked on synthetic images (no data needed) against slow
references: the cosine-basis smoothing against scipy's Gaussian filter, and the
vectorised bilinear warp against ``scipy.ndimage.map_coordinates``. The generator's
promises (same seed same bits, any chunking and thread count the same rows, the
first n rows of a larger n, files equal to the in-memory array, labels of the
source digits) are checked on MNIST and skip without it.
"""

import functools
import sys

import numpy as np
import pytest
from scipy import ndimage

from landmarking.datasets import deformed, load_mnist, make_deformed_digits
from landmarking.datasets.deformed import (
    SIDE,
    UNIT_ROWS,
    UnitWarp,
    cosine_smoothing_basis,
    unit_sources,
)


@functools.cache
def _mnist(folder, split):
    return load_mnist(folder, split=split, flatten=False)


@pytest.fixture
def data(data_dir, monkeypatch):
    """The data folder, with MNIST read once for the whole module (each call of
    make_deformed_digits would otherwise decompress it again)."""
    if not (data_dir / "mnist" / "train-images-idx3-ubyte.gz").exists():
        pytest.skip(f"MNIST not found in {data_dir}/mnist; set LANDMARKING_DATA to run this test")

    def cached(path=None, *, split="train", flatten=True):
        return _mnist(str(path), split)

    monkeypatch.setattr(deformed, "load_mnist", cached)
    return data_dir


def digits(n, random_state=0, **kwargs):
    return make_deformed_digits(n, random_state, **kwargs)


# ------------------------------------------------- the warp against references


def cosine_matrix(side=SIDE):
    """The orthonormal DCT-II matrix, rows are frequencies."""
    k, j = np.arange(side)[:, None], np.arange(side)[None, :]
    phi = np.sqrt(2.0 / side) * np.cos(np.pi * k * (2 * j + 1) / (2 * side))
    phi[0] /= np.sqrt(2.0)
    return phi


@pytest.mark.parametrize("sigma, atol", [(3.0, 1e-12), (4.0, 1e-12), (6.0, 1e-12), (1.5, 1e-5)])
def test_cosine_smoothing_is_scipys_gaussian_filter(sigma, atol):
    noise = np.random.default_rng(0).normal(size=(SIDE, SIDE))
    full = cosine_smoothing_basis(sigma, variance_left_out=0)
    assert full.shape == (SIDE, SIDE)
    phi = cosine_matrix()
    smoothed = full.T @ (phi @ noise @ phi.T) @ full
    # An untruncated kernel (truncate=12) is the exact Gaussian smoothing; scipy
    # samples the kernel, which aliases its highest frequencies by exp(-(pi sigma)^2 / 2)
    # (1e-5 at sigma = 1.5, nothing from 3 on).
    reference = ndimage.gaussian_filter(noise, sigma, mode="reflect", truncate=12)
    np.testing.assert_allclose(smoothed, reference, rtol=0, atol=atol)


def test_the_truncated_basis_leaves_out_the_stated_variance():
    basis = cosine_smoothing_basis(6.0)
    full = cosine_smoothing_basis(6.0, variance_left_out=0)
    assert basis.shape == (6, SIDE)  # 6 of 28 frequencies at sigma = 6
    np.testing.assert_array_equal(basis, full[:6])
    coefficients = np.random.default_rng(1).normal(size=(2000, SIDE, SIDE))
    exact = np.einsum("ki,qkl,lj->qij", full, coefficients, full, optimize=True)
    kept = np.einsum("ki,qkl,lj->qij", basis, coefficients[:, :6, :6], basis, optimize=True)
    share = np.sum((exact - kept) ** 2) / np.sum(exact ** 2)
    assert share < 3e-6  # stated 1e-6, sampled from 2,000 fields


def reference_unit(images, unit, entropy, *, alpha, sigma, max_shift, n_digits):
    """The first n_digits digits of a unit, one at a time: the fields in float64 by
    their definition, the warp by scipy's bilinear interpolation."""
    basis = cosine_smoothing_basis(sigma)
    r = basis.shape[0]
    rng = deformed._unit_generator(entropy, unit)
    shifts = rng.integers(-max_shift, max_shift + 1, size=(UNIT_ROWS, 2))
    coefficients = rng.standard_normal((UNIT_ROWS, 2, r, r), dtype=np.float32)
    coefficients = coefficients.astype(np.float64) * alpha * np.sqrt(1 / 3)
    coefficients[:, :, 0, 0] = 0
    grid = np.arange(SIDE, dtype=float)
    out = []
    for q, source in enumerate(unit_sources(unit, len(images))[:n_digits]):
        field_rows, field_cols = (basis.T @ coefficients[q, a] @ basis for a in (0, 1))
        rows = grid[:, None] + field_rows + shifts[q, 0]
        cols = grid[None, :] + field_cols + shifts[q, 1]
        out.append(ndimage.map_coordinates(images[source].astype(np.float64), [rows, cols],
                                           order=1, mode="grid-constant", cval=0.0))
    return np.array(out)


@pytest.mark.parametrize("alpha, sigma, max_shift", [(34.0, 6.0, 1), (90.0, 3.0, 3)])
def test_unit_warp_equals_the_slow_reference(alpha, sigma, max_shift):
    # Random images: every pixel, the border too, is nonzero, so that reading
    # outside the frame (strong fields, large shifts) must give zeros to pass.
    images = np.random.default_rng(2).random((700, SIDE, SIDE), dtype=np.float32)
    warp = UnitWarp(images, cosine_smoothing_basis(sigma), alpha, max_shift)
    pixels, sources = warp(1, 123)
    np.testing.assert_array_equal(sources, np.arange(UNIT_ROWS, 2 * UNIT_ROWS) % 700)
    reference = reference_unit(images, 1, 123, alpha=alpha, sigma=sigma,
                               max_shift=max_shift, n_digits=60)
    np.testing.assert_allclose(pixels[:60].reshape(60, SIDE, SIDE), reference, atol=2e-5)
    if max_shift == 3:  # the clipped coordinates were exercised
        assert (reference == 0).mean() > 0.01


def test_shifts_alone_translate_by_whole_pixels():
    images = np.random.default_rng(3).random((50, SIDE, SIDE), dtype=np.float32)
    warp = UnitWarp(images, cosine_smoothing_basis(6.0), 0.0, 2)
    shifts = warp.draw(0, 7)
    pixels, sources = warp(0, 7)
    padded = np.pad(images, ((0, 0), (2, 2), (2, 2)))
    for q in range(60):
        dy, dx = shifts[q].astype(int)
        expected = padded[sources[q], 2 + dy:2 + dy + SIDE, 2 + dx:2 + dx + SIDE]
        np.testing.assert_array_equal(pixels[q].reshape(SIDE, SIDE), expected)
    assert len({tuple(s) for s in shifts.astype(int)}) == 25  # all of -2..2 x -2..2 drawn


# ----------------------------------------------------------- the generator


def test_no_warp_gives_the_source_digits(data):
    X, y = digits(1100, alpha=0, max_shift=0, path=data)
    images, labels = load_mnist(data)
    np.testing.assert_array_equal(X, images[:1100])
    np.testing.assert_array_equal(y, labels[:1100])


def test_values_dtype_and_labels_of_the_sources(data):
    X, y, source = digits(1200, return_source=True, path=data)
    images, labels = load_mnist(data)
    assert X.shape == (1200, 784) and X.dtype == np.float32 and y.dtype == np.int64
    assert X.min() == 0 and X.max() <= 1 and X.max() > 0.99
    np.testing.assert_array_equal(source, np.arange(1200))  # row i deforms digit i
    np.testing.assert_array_equal(y, labels[source])
    # Each digit lies near its own source: among the 1,200 sources, its own is
    # typically the nearest or second nearest (shifts and warps move the strokes).
    near = images[:1200].reshape(1200, -1)
    distances = (near ** 2).sum(1)[None, :] - 2 * X @ near.T  # + |x|^2, the same per row
    rank = (distances < distances[source, source][:, None]).sum(1)
    assert np.median(rank) <= 5
    # Under a mild warp without shifts, the nearest source is its own.
    mild = digits(1200, alpha=10.0, max_shift=0, path=data)[0]
    distances = (near ** 2).sum(1)[None, :] - 2 * mild @ near.T
    assert (distances.argmin(axis=1) == source).mean() > 0.99
    assert not np.array_equal(X, images[:1200])


def test_sources_cycle_through_the_split(data):
    _, y, source = digits(10_050, split="test", return_source=True, alpha=0, max_shift=0,
                          block_rows=10_050, path=data)
    np.testing.assert_array_equal(source[-50:], np.arange(50))  # after 10,000: from 0
    np.testing.assert_array_equal(y, load_mnist(data, split="test")[1][source])


def test_same_seed_same_bits_other_seed_other_digits(data):
    X, y = digits(700, random_state=5, path=data)
    again, y_again = digits(700, random_state=5, path=data)
    np.testing.assert_array_equal(X, again)
    np.testing.assert_array_equal(y, y_again)
    other, y_other = digits(700, random_state=6, path=data)
    np.testing.assert_array_equal(y, y_other)  # the same sources
    assert np.mean(np.any(X != other, axis=1)) == 1  # every digit warped otherwise
    # A RandomState or Generator is advanced: its seed gives the same digits again.
    from_state = digits(700, random_state=np.random.RandomState(0), path=data)[0]
    np.testing.assert_array_equal(
        from_state, digits(700, random_state=np.random.RandomState(0), path=data)[0])
    assert not np.array_equal(from_state, X)


def test_the_digits_of_seed_zero_stay_the_same(data):
    # Pins the definition of the rows (unit size, order of the draws, warp): a
    # change here changes every generated data set. Round-off may differ between
    # BLAS builds, so a tolerance.
    X, _ = digits(3, path=data)
    np.testing.assert_allclose(X.sum(axis=1), [123.543098, 124.141388, 78.355286], rtol=1e-5)
    # Where the ink lies: sum of pixel value x pixel index (row-major).
    np.testing.assert_allclose(X.astype(float) @ np.arange(784.0),
                               [45260.7915, 49221.4007, 29773.7925], rtol=1e-5)


@pytest.mark.parametrize("block_rows, n_jobs", [(300, 1), (512, 2), (700, 2), (4096, 1)])
def test_chunking_and_threads_do_not_change_the_digits(data, block_rows, n_jobs):
    whole, y = digits(1300, path=data, block_rows=1300, n_jobs=1)
    chunked, y_chunked = digits(1300, path=data, block_rows=block_rows, n_jobs=n_jobs)
    np.testing.assert_array_equal(whole, chunked)
    np.testing.assert_array_equal(y, y_chunked)


def test_the_first_rows_of_more_digits_are_the_same(data):
    X = digits(1300, path=data)[0]
    for n in (1, 300, 512, 700):
        np.testing.assert_array_equal(digits(n, path=data)[0], X[:n])


def test_npy_file_and_memory_map_equal_the_array(data, tmp_path):
    X, y = digits(1100, path=data)
    file = tmp_path / "digits.npy"
    on_disk, y_disk = digits(1100, path=data, out=file, block_rows=400)
    assert isinstance(on_disk, np.memmap) and not on_disk.flags.writeable
    np.testing.assert_array_equal(on_disk, X)
    np.testing.assert_array_equal(np.load(file), X)
    np.testing.assert_array_equal(y_disk, y)
    assert [p.name for p in tmp_path.iterdir()] == ["digits.npy"]  # no partial file left
    with pytest.raises(FileExistsError, match="overwrite=True"):
        digits(1100, path=data, out=file)
    np.testing.assert_array_equal(digits(1100, path=data, out=file, overwrite=True)[0], X)
    # A memory map opened by the caller, float64 too, is filled in place.
    for dtype in (np.float32, np.float64):
        mapped = np.lib.format.open_memmap(tmp_path / f"m{np.dtype(dtype).name}.npy",
                                           mode="w+", dtype=dtype, shape=(1100, 784))
        assert digits(1100, path=data, out=mapped)[0] is mapped
        np.testing.assert_array_equal(mapped, X)


def test_zarr_store_equals_the_array(data, tmp_path):
    zarr = pytest.importorskip("zarr", reason="zarr (the scale extra) is not installed")
    X, _ = digits(1100, path=data)
    store, _ = digits(1100, path=data, out=tmp_path / "digits.zarr", block_rows=512)
    assert isinstance(store, zarr.Array) and store.chunks == (512, 784)
    np.testing.assert_array_equal(store[:], X)
    given = zarr.create_array(store=str(tmp_path / "given.zarr"), shape=(1100, 784),
                              chunks=(300, 784), dtype="float32")
    assert digits(1100, path=data, out=given)[0] is given
    np.testing.assert_array_equal(given[:], X)


def test_verbose_shows_a_progress_bar(data, capsys):
    digits(600, path=data, verbose=True)
    assert "deformed digits" in capsys.readouterr().err


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("n, error, match", [
    (0, ValueError, "n must be >= 1"),
    (-5, ValueError, "n must be >= 1"),
    (10.0, TypeError, "n must be a whole number"),
    (True, TypeError, "n must be a whole number"),
    ("100", TypeError, "n must be a whole number"),
])
def test_bad_n(n, error, match):
    with pytest.raises(error, match=match):
        make_deformed_digits(n)


@pytest.mark.parametrize("random_state, error, match", [
    (-1, ValueError, "non-negative int"),
    (1.5, TypeError, "random_state must be None, a non-negative int"),
    (True, TypeError, "random_state must be None, a non-negative int"),
    ("0", TypeError, "Pass an int such as 0"),
])
def test_bad_random_state(random_state, error, match):
    with pytest.raises(error, match=match):
        make_deformed_digits(10, random_state)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"alpha": -1.0}, ValueError, "alpha must be >= 0"),
    ({"alpha": float("nan")}, TypeError, "alpha must be a finite number"),
    ({"sigma": 0}, ValueError, "sigma must be > 0"),
    ({"max_shift": 1.5}, TypeError, "max_shift must be a whole number"),
    ({"max_shift": -1}, ValueError, "max_shift must be >= 0"),
    ({"split": "validation"}, ValueError, "split must be 'train' or 'test'"),
    ({"block_rows": 0}, ValueError, "block_rows must be a positive int"),
    ({"n_jobs": 0}, ValueError, "n_jobs must be None"),
    ({"out": "digits.csv"}, ValueError, r"name a \.npy file"),
    ({"out": [[0.0]]}, TypeError, "out must be None, a file name"),
    ({"out": np.zeros((10, 100), np.float32)}, ValueError, r"need \(10, 784\)"),
    ({"out": np.zeros((10, 784), np.int64)}, ValueError, "dtype=np.float32"),
])
def test_bad_parameters(kwargs, error, match):
    with pytest.raises(error, match=match):
        make_deformed_digits(10, 0, **kwargs)


def test_bad_output_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist; create it first"):
        make_deformed_digits(10, 0, out=tmp_path / "no" / "digits.npy")
    read_only = np.lib.format.open_memmap(tmp_path / "r.npy", mode="w+", dtype=np.float32,
                                          shape=(10, 784))
    del read_only
    with pytest.raises(ValueError, match="read-only"):
        make_deformed_digits(10, 0, out=np.load(tmp_path / "r.npy", mmap_mode="r"))


def test_missing_mnist_names_the_folder_and_the_variable(tmp_path):
    with pytest.raises(FileNotFoundError, match="LANDMARKING_DATA") as info:
        make_deformed_digits(10, 0, path=tmp_path)
    assert "mnist/train-images-idx3-ubyte.gz" in str(info.value)
    assert str(tmp_path) in str(info.value)


def test_zarr_output_without_zarr_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "zarr", None)  # import zarr now fails
    with pytest.raises(ImportError, match=r"landmarking\[scale\]"):
        make_deformed_digits(10, 0, out=tmp_path / "digits.zarr")
