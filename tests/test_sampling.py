"""The GP fit's sample: uniform over all rows, the same bits from every container."""

import tracemalloc

import numpy as np
import pytest
from sklearn import config_context

from landmarking._blocks import gather_rows
from landmarking._memory import working_memory_bytes
from landmarking.gp.sampling import draw_sample, sample_size
from landmarking.kernels import column_mean_std, sample_mean_std

da = pytest.importorskip("dask.array", reason="the scale extra (dask) is not installed")
zarr = pytest.importorskip("zarr", reason="the scale extra (zarr) is not installed")


def _containers(X, folder):
    """X as NumPy, a memory map, Zarr and Dask arrays, each Zarr/Dask in two chunkings."""
    np.save(folder / "X.npy", X)
    kinds = {"numpy": X, "memmap": np.load(folder / "X.npy", mmap_mode="r")}
    for rows in (700, 2500):
        z = zarr.create_array(store=str(folder / f"X{rows}.zarr"), shape=X.shape,
                              chunks=(rows, X.shape[1]), dtype=X.dtype)
        z[:] = X
        kinds[f"zarr-{rows}"] = z
        kinds[f"dask-{rows}"] = da.from_zarr(z).rechunk((rows + 333, -1))
    return kinds


@pytest.mark.parametrize("steps", [40, 200])  # a sample of 4,000 rows; all 10,000 rows
def test_sample_is_the_same_from_every_container_and_chunking(tmp_path, steps):
    X = np.random.default_rng(0).random((10_000, 6)).astype(np.float32)
    reference = draw_sample(X, batch_size=100, steps=steps, seed=3)
    assert reference.n_rows == sample_size(10_000, 100, steps) == min(10_000, steps * 100)
    with config_context(working_memory=0.5):  # many small pieces
        for name, kind in _containers(X, tmp_path).items():
            got = draw_sample(kind, batch_size=100, steps=steps, seed=3)
            np.testing.assert_array_equal(got.X, reference.X, err_msg=name)
            np.testing.assert_array_equal(got.order, reference.order, err_msg=name)
            assert type(got.X) is np.ndarray and got.X.flags.c_contiguous


def test_sample_of_all_rows_is_the_permutation_fits_have_always_used():
    X = np.random.default_rng(1).random((900, 3))
    sample = draw_sample(X, batch_size=50, steps=100, seed=7)
    assert sample.X is X and sample.rows is None
    np.testing.assert_array_equal(
        sample.order, np.random.default_rng([7, 0xB47C, 0]).permutation(900))


def test_batches_of_label_sorted_rows_mix_the_labels():
    # 20,000 rows sorted by ten labels: 2,000-row storage chunks would each hold one.
    labels = np.repeat(np.arange(10), 2000)
    X = labels[:, None] + np.random.default_rng(2).random((20_000, 4))
    b = 500
    sample = draw_sample(X, batch_size=b, steps=10, seed=0)  # 5,000 of 20,000 rows
    assert sample.n_rows == 5000
    drawn = labels[sample.rows[sample.order]].reshape(-1, b)
    shares = np.stack([np.bincount(batch, minlength=10) / b for batch in drawn])
    # Every batch holds every label near its share of 1/10 (sd 0.013 for 500 rows).
    assert shares.min() > 0.04 and shares.max() < 0.17, shares
    # Each batch draws from the whole array, not from a few neighbouring rows.
    spans = [np.ptp(sample.rows[sample.order[j * b:(j + 1) * b]]) for j in range(10)]
    assert min(spans) > 0.95 * 20_000


def test_sample_mean_std_has_the_bits_of_one_pass(tmp_path):
    X = (np.random.default_rng(3).random((30_011, 7)) * 50 + 9).astype(np.float32)
    whole = column_mean_std(X, np.array([0, len(X)]))
    with config_context(working_memory=0.25):  # 16 KiB blocks: 292 rows
        blocked = sample_mean_std(X)
    for got, want in zip(blocked, whole, strict=True):
        np.testing.assert_array_equal(got, want)


def test_gather_reads_a_memmap_in_pieces_of_the_budget(tmp_path):
    X = np.random.default_rng(4).random((100_000, 20))
    np.save(tmp_path / "X.npy", X)
    mm = np.load(tmp_path / "X.npy", mmap_mode="r")
    rows = np.arange(0, 100_000, 10)
    tracemalloc.start()
    with config_context(working_memory=16):  # 1 MiB pieces
        got = gather_rows(mm, rows)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    np.testing.assert_array_equal(got, X[rows])
    assert peak < got.nbytes + 3 * 2**20, peak  # the result and a piece or two


@pytest.mark.parametrize("value", [0, -5, float("nan"), "1GB", True])
def test_bad_working_memory_is_refused_with_the_fix(value, tmp_path):
    X = np.zeros((10, 2), dtype=np.float32)
    np.save(tmp_path / "X.npy", X)
    with config_context(working_memory=value):
        with pytest.raises(ValueError, match=r"working_memory must be a positive number "
                           r"of MiB.*got .*sklearn.set_config\(working_memory=1024\)"):
            working_memory_bytes()
        with pytest.raises(ValueError, match="working_memory must be a positive number"):
            draw_sample(np.load(tmp_path / "X.npy", mmap_mode="r"), batch_size=2, steps=1,
                        seed=0)


def test_a_fit_on_label_sorted_zarr_draws_batches_that_mix_the_labels(tmp_path, monkeypatch):
    # Rows stored by label in 2,000-row chunks (each nearly one label), as real
    # stores often are. The statistic is on the rows the fit's steps drew.
    from landmarking import GPLandmarks
    from landmarking.gp import fit, sampling

    labels = np.repeat(np.arange(10), 2000)
    X = (labels[:, None] + np.random.default_rng(5).random((20_000, 4))).astype(np.float32)
    z = zarr.create_array(store=str(tmp_path / "sorted.zarr"), shape=X.shape,
                          chunks=(2000, 4), dtype="float32")
    z[:] = X
    seen = {}
    draw, order = sampling.draw_sample, sampling.batch_order
    # The run's plan draws the sample (its kernel width comes from it) and hands it on.
    monkeypatch.setattr(fit, "draw_sample",
                        lambda *a, **k: seen.setdefault("sample", draw(*a, **k)))
    monkeypatch.setattr(sampling, "batch_order",
                        lambda *a: seen.setdefault("orders", []).append(order(*a))
                        or seen["orders"][-1])
    gp = GPLandmarks(n_landmarks=3, n_steps=15, batch_size=500, kernel_width=1.0,
                     random_state=0).fit(z)
    sample = seen["sample"]
    assert sample.n_rows == 7500 and len(seen["orders"]) == 3
    bounds = np.arange(0, sample.n_rows + 1, 500)
    drawn = [labels[sample.rows[sample.order[bounds[j]:bounds[j + 1]]]]
             for steps in seen["orders"] for _, j in steps]
    assert len(drawn) == 45
    shares = np.stack([np.bincount(batch, minlength=10) / 500 for batch in drawn])
    assert shares.min() > 0.04 and shares.max() < 0.17, shares
    # The same landmarks as the rows in memory (the sample does not see the chunks).
    monkeypatch.undo()
    np.testing.assert_array_equal(
        gp.landmarks_, GPLandmarks(n_landmarks=3, n_steps=15, batch_size=500,
                                   kernel_width=1.0, random_state=0).fit(X).landmarks_)


def test_a_sample_too_large_for_memory_is_refused_with_the_way_out(tmp_path, monkeypatch):
    from landmarking import _memory

    X = np.zeros((5000, 3), dtype=np.float32)
    np.save(tmp_path / "X.npy", X)
    monkeypatch.setattr(_memory, "available_memory", lambda: 10_000)
    with pytest.raises(MemoryError, match=r"the GP fit's sample of 2,000 rows x 3 .*needs "
                       r"about .*lower n_steps \(20\) or batch_size \(100\)"):
        draw_sample(np.load(tmp_path / "X.npy", mmap_mode="r"), batch_size=100, steps=20,
                    seed=0)


def test_torch_path_fits_the_same_sample_of_a_memory_map(tmp_path):
    # The sample (300 of 900 rows) is what the device gets, not the whole input.
    torch = pytest.importorskip("torch")
    from landmarking import GPLandmarks
    from landmarking.datasets import make_noisy_swiss_roll

    X, _ = make_noisy_swiss_roll(900, random_state=3)
    np.save(tmp_path / "X.npy", X)
    params = dict(n_landmarks=4, n_steps=6, batch_size=50, random_state=0)
    on_host = GPLandmarks(**params).fit(X)
    on_torch = GPLandmarks(device=torch.device("cpu"), **params).fit(
        np.load(tmp_path / "X.npy", mmap_mode="r"))
    np.testing.assert_allclose(on_torch.landmarks_, on_host.landmarks_, rtol=0,
                               atol=1e-8 * np.abs(on_host.landmarks_).max())
    np.testing.assert_allclose(on_torch.objective_, on_host.objective_, rtol=1e-7)


# ------------------------------------------------------------------ one read of X

def _counting_zarr(X, folder, chunk_rows, reads):
    """X in a Zarr store whose reads of chunk keys are counted in ``reads``."""
    import collections.abc

    class CountingStore(zarr.storage.LocalStore):
        async def get(self, key, prototype=None, byte_range=None):
            if key.startswith("c/"):  # a chunk, not the metadata
                reads[key] = reads.get(key, 0) + 1
            return await super().get(key, prototype=prototype, byte_range=byte_range)

    assert isinstance(reads, collections.abc.MutableMapping)
    zarr.create_array(store=str(folder), shape=X.shape, chunks=(chunk_rows, X.shape[1]),
                      dtype=X.dtype)[:] = X
    return zarr.open_array(store=CountingStore(str(folder), read_only=True), mode="r")


class _CountingRows:
    """An array-like for ``dask.array.from_array`` that records the rows it is read at."""

    def __init__(self, X):
        self.X, self.shape, self.dtype, self.ndim = X, X.shape, X.dtype, X.ndim
        self.reads = []

    def __getitem__(self, key):
        part = self.X[key]
        if part.shape[0]:
            self.reads.append(np.arange(self.X.shape[0])[key[0]])
        return part


@pytest.mark.parametrize("n_steps, refine", [(60, 0), (20, 0), (20, 1)])
def test_a_fit_reads_every_zarr_chunk_once(tmp_path, n_steps, refine):
    # 4,000 rows in 700-row chunks; 60 steps: the sample is all rows; 20 steps: 2,000
    # drawn from all. The non-finite check, the kernel width ("auto": both rules)
    # and the sample (and the refinement) come from one read of each chunk.
    from landmarking import GPLandmarks

    X = np.random.default_rng(8).random((4000, 5)).astype(np.float32)
    reads = {}
    z = _counting_zarr(X, tmp_path / "X.zarr", 700, reads)
    gp = GPLandmarks(n_landmarks=3, n_steps=n_steps, batch_size=100, refine=refine,
                     random_state=0).fit(z)
    assert len(reads) == 6 and set(reads.values()) == {1}, reads
    want = GPLandmarks(n_landmarks=3, n_steps=n_steps, batch_size=100, refine=refine,
                       random_state=0).fit(X)
    np.testing.assert_array_equal(gp.landmarks_, want.landmarks_)
    assert gp.kernel_width_ == want.kernel_width_


@pytest.mark.parametrize("n_steps", [60, 5])  # all 4,000 rows; 500 of them
def test_a_fit_reads_every_row_of_a_dask_array_once(n_steps):
    from landmarking import GPLandmarks

    X = np.random.default_rng(9).random((4000, 5))
    source = _CountingRows(X)
    dx = da.from_array(source, chunks=(700, -1))
    gp = GPLandmarks(n_landmarks=2, n_steps=n_steps, batch_size=100, random_state=0).fit(dx)
    read = np.sort(np.concatenate(source.reads))
    np.testing.assert_array_equal(read, np.arange(4000))
    np.testing.assert_array_equal(
        gp.landmarks_, GPLandmarks(n_landmarks=2, n_steps=n_steps, batch_size=100,
                                   random_state=0).fit(X).landmarks_)


@pytest.mark.parametrize("n_steps", [60, 5])  # all 4,000 rows; 500 of them
@pytest.mark.parametrize("row, value", [(0, np.nan), (1234, np.inf), (3999, -np.inf)])
@pytest.mark.parametrize("kind", ["memmap", "zarr", "dask"])
def test_a_non_finite_value_anywhere_in_out_of_core_x_stops_the_fit(tmp_path, kind, row,
                                                                     value, n_steps):
    # Also in a row the sample does not hold: the whole of every block is checked.
    from landmarking import GPLandmarks

    X = np.random.default_rng(10).random((4000, 3))
    X[row, 2] = value
    if kind == "memmap":
        np.save(tmp_path / "X.npy", X)
        data, block = np.load(tmp_path / "X.npy", mmap_mode="r"), r"\d+-\d+"
    else:
        z = zarr.create_array(store=str(tmp_path / "X.zarr"), shape=X.shape,
                              chunks=(700, 3), dtype=X.dtype)
        z[:] = X
        data = z if kind == "zarr" else da.from_zarr(z)
        block = f"{row // 700 * 700}-{min(row // 700 * 700 + 699, 3999)}"
    with pytest.raises(ValueError, match=rf"X contains NaN or infinity at row {row} "
                       rf"\(in the block of rows {block}\); remove or impute"):
        GPLandmarks(n_landmarks=2, n_steps=n_steps, batch_size=100,
                    random_state=0).fit(data)
    fitted = GPLandmarks(n_landmarks=2, n_steps=5, batch_size=100, random_state=0).fit(
        np.nan_to_num(X, nan=0.5, posinf=0.5, neginf=0.5))
    with pytest.raises(ValueError, match=rf"NaN or infinity at row {row} "):
        fitted.extend(data, 1)


def test_check_rows_leaves_the_scan_to_the_read_only_when_asked(tmp_path):
    from landmarking._blocks import check_rows

    X = np.ones((3000, 2))
    X[2500, 0] = np.nan
    np.save(tmp_path / "X.npy", X)
    mm = np.load(tmp_path / "X.npy", mmap_mode="r")
    with pytest.raises(ValueError, match="NaN or infinity at row 2500"):
        check_rows(mm)
    assert check_rows(mm, scan_finite=False) is mm
    with pytest.raises(ValueError, match="NaN or infinity at row 2500"):
        gather_rows(mm, np.array([0, 1]), check_finite=True)
    np.testing.assert_array_equal(gather_rows(mm, np.array([0, 1])), X[:2])
    with pytest.raises(ValueError, match="Input contains NaN"):  # in memory: sklearn's
        check_rows(X, scan_finite=False)


# ------------------------------------------------------------------ the kernel width

@pytest.mark.parametrize("rule", ["auto", "variance"])
def test_the_width_from_a_sample_of_all_rows_is_the_width_of_all_rows(tmp_path, rule):
    # A Swiss roll ("auto" picks the local rule: its 2,000-row subsample matters).
    from landmarking import GPLandmarks
    from landmarking.datasets import make_noisy_swiss_roll
    from landmarking.kernels import local_kernel_width, resolve_kernel_width

    X, _ = make_noisy_swiss_roll(3000, random_state=0)
    params = dict(n_landmarks=2, n_steps=40, batch_size=100, kernel_width=rule,
                  random_state=0)  # 30 batches: the sample is all rows
    for name, kind in _containers(X, tmp_path).items():
        gp = GPLandmarks(**params).fit(kind)
        want = resolve_kernel_width(X, rule, random_state=gp.seed_)
        assert gp.kernel_width_ == want, name
    if rule == "auto":
        assert gp.kernel_width_ == local_kernel_width(X, random_state=gp.seed_)


def test_the_width_of_a_sample_smaller_than_n_comes_from_the_sample(tmp_path):
    from landmarking import GPLandmarks
    from landmarking.datasets import make_noisy_swiss_roll
    from landmarking.kernels import resolve_kernel_width

    X, _ = make_noisy_swiss_roll(3000, random_state=1)
    params = dict(n_landmarks=2, n_steps=10, batch_size=100, random_state=0)
    for name, kind in _containers(X, tmp_path).items():
        gp = GPLandmarks(**params).fit(kind)
        sample = draw_sample(X, batch_size=100, steps=10, seed=gp.seed_)
        assert sample.n_rows == 1000
        assert gp.kernel_width_ == resolve_kernel_width(sample.X, "auto",
                                                        random_state=gp.seed_), name


def test_a_sample_smaller_than_n_is_held_in_batch_order(tmp_path):
    X = np.random.default_rng(11).random((5000, 4)).astype(np.float32)
    for name, kind in _containers(X, tmp_path).items():
        sample = draw_sample(kind, batch_size=100, steps=20, seed=4)
        assert sample.in_batch_order and sample.n_rows == 2000, name
        np.testing.assert_array_equal(sample.order, np.arange(2000))
        np.testing.assert_array_equal(sample.X, X[sample.rows], err_msg=name)
        assert len(np.unique(sample.rows)) == 2000
