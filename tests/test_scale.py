"""Out-of-core and Dask input: the same landmarks wherever the data lives.

The Dask tests start a ``LocalCluster`` of two worker processes on localhost (once
for the module) and close it at the end.
"""

import os
import time
import tracemalloc

import numpy as np
import pytest
import scipy.sparse
from conftest import environ_kept

from landmarking import GPLandmarks, cli
from landmarking._blocks import check_rows, take_rows

da = pytest.importorskip("dask.array", reason="the scale extra (dask) is not installed")
zarr = pytest.importorskip("zarr", reason="the scale extra (zarr) is not installed")
distributed = pytest.importorskip("dask.distributed")

CHUNK = 1000
GP = dict(n_landmarks=3, n_steps=60, batch_size=100, random_state=0)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("scale")
    rng = np.random.default_rng(0)
    X = rng.random((4000, 8)).astype(np.float32)
    np.save(folder / "X.npy", X)
    z = zarr.create_array(store=str(folder / "X.zarr"), shape=X.shape, chunks=(CHUNK, 8),
                          dtype="float32")
    z[:] = X
    return folder, X


def _kinds(folder, X):
    z = zarr.open_array(str(folder / "X.zarr"), mode="r")
    return {
        "numpy": X,
        "memmap": np.load(folder / "X.npy", mmap_mode="r"),
        "zarr": z,
        "dask": da.from_zarr(z),
    }


def _other_chunkings(folder, X):
    """The same data in other storage chunks: Zarr in 700-row chunks, Dask in 1,500."""
    path = folder / "X700.zarr"
    if not path.exists():
        z = zarr.create_array(store=str(path), shape=X.shape, chunks=(700, 8),
                              dtype="float32")
        z[:] = X
    z = zarr.open_array(str(path), mode="r")
    return {"zarr-700": z, "dask-1500": da.from_zarr(z).rechunk((1500, 8))}


@pytest.fixture(scope="module")
def client():
    with environ_kept():  # the nannies' pre-spawn variables (conftest.environ_kept)
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.mark.parametrize("chunk_size, n_steps", [(None, 60), (None, 20), (CHUNK, 60)])
def test_gp_landmarks_are_identical_for_every_container(data, chunk_size, n_steps):
    # Default: the minibatches come from the estimator's sample, whatever the storage
    # chunks: all 4,000 rows (60 steps visit all 40 batches) or 2,000 drawn from all
    # (20 steps); chunk_size: the chunked sampling, the same chunks everywhere.
    folder, X = data
    kinds = _kinds(folder, X)
    if chunk_size is None:
        kinds.update(_other_chunkings(folder, X))
    params = dict(GP, n_steps=n_steps, chunk_size=chunk_size)
    fits = {name: GPLandmarks(**params).fit(kind) for name, kind in kinds.items()}
    reference = fits.pop("numpy")
    for name, gp in fits.items():
        np.testing.assert_array_equal(gp.landmarks_, reference.landmarks_, err_msg=name)
        np.testing.assert_array_equal(gp.objective_, reference.objective_, err_msg=name)
        assert gp.kernel_width_ == reference.kernel_width_


def test_sparse_gives_dense_landmarks_to_float32_round_off(data):
    # Sparse products sum in another order, so float32 round-off may differ.
    _, X = data
    dense = GPLandmarks(chunk_size=CHUNK, **GP).fit(X)
    sparse = GPLandmarks(chunk_size=CHUNK, **GP).fit(scipy.sparse.csr_matrix(X))
    np.testing.assert_allclose(sparse.landmarks_, dense.landmarks_, rtol=1e-4, atol=1e-5)


def test_dask_transform_is_lazy_and_equal(data):
    folder, X = data
    gp = GPLandmarks(chunk_size=CHUNK, **GP).fit(X)
    lazy = gp.transform(_kinds(folder, X)["dask"])
    assert isinstance(lazy, da.Array) and lazy.chunks[0] == (CHUNK,) * 4
    np.testing.assert_array_equal(lazy.compute(), gp.transform(X))
    np.testing.assert_array_equal(gp.transform(_kinds(folder, X)["zarr"]), gp.transform(X))


def test_distributed_fit_and_transform_equal_numpy(data, client):
    folder, X = data
    dask_X = _kinds(folder, X)["dask"]
    on_cluster = GPLandmarks(**GP).fit(dask_X)
    local = GPLandmarks(**GP).fit(X)
    np.testing.assert_array_equal(on_cluster.landmarks_, local.landmarks_)
    np.testing.assert_array_equal(on_cluster.transform(dask_X).compute(), local.transform(X))


# A worker killed in the middle of a fit: tests/test_faults.py.


def test_memmap_fit_never_holds_the_whole_array(tmp_path):
    X = np.random.default_rng(1).random((40_000, 50))
    np.save(tmp_path / "big.npy", X)
    mm = np.load(tmp_path / "big.npy", mmap_mode="r")
    del X
    tracemalloc.start()
    GPLandmarks(n_landmarks=2, n_steps=20, batch_size=200, chunk_size=5000,
                kernel_width=5.0, random_state=0).fit(mm)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < mm.nbytes / 4, (peak, mm.nbytes)


def test_memmap_fit_with_default_parameters_holds_under_a_quarter_of_it(tmp_path):
    # No chunk_size and scikit-learn's working_memory as it is: what a new user
    # meets. The kernel width is given: "auto" holds a fixed 2000 x 2000 distance
    # table (64 MB, whatever N), larger than a quarter of an array small enough for
    # CI (benchmarks/scale.py measures it at 2,000,000 x 50).
    X = np.random.default_rng(1).random((400_000, 16)).astype(np.float32)
    np.save(tmp_path / "big.npy", X)
    mm = np.load(tmp_path / "big.npy", mmap_mode="r")
    del X
    params = dict(n_landmarks=3, n_steps=20, kernel_width=5.0, random_state=0)
    GPLandmarks(**params).fit(mm[:3000])  # numba's first compilation is not ours
    tracemalloc.start()
    gp = GPLandmarks(**params).fit(mm)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < mm.nbytes / 4, (peak, mm.nbytes)
    # The batches came from a sample of 20 x 1000 rows of all 400,000.
    assert gp.objective_.shape == (3,) and np.all(gp.objective_ > 0)


def test_read_only_memmap_is_never_written(data):
    folder, X = data
    mm = np.load(folder / "X.npy", mmap_mode="r")
    GPLandmarks(chunk_size=CHUNK, **GP).fit(mm)
    np.testing.assert_array_equal(np.load(folder / "X.npy"), X)


def test_take_rows_keeps_the_order_asked_for(data):
    folder, X = data
    rows = np.array([3999, 5, 1000, 5, 0])
    for name, kind in _kinds(folder, X).items():
        np.testing.assert_array_equal(take_rows(kind, rows), X[rows], err_msg=name)


# --------------------------------------------------------------------------- bad input

def test_nan_in_one_chunk_names_its_rows(tmp_path):
    X = np.ones((3000, 4), dtype=np.float32)
    X[2345, 1] = np.nan
    z = zarr.create_array(store=str(tmp_path / "nan.zarr"), shape=X.shape, chunks=(1000, 4),
                          dtype="float32")
    z[:] = X
    for kind in (z, da.from_zarr(z)):
        with pytest.raises(ValueError, match=r"row 2345 \(in the block of rows 2000-2999\)"):
            GPLandmarks(**GP).fit(kind)


@pytest.mark.parametrize("shape, dtype, error, match", [
    ((100,), "float32", ValueError, "2-D array.*reshape"),
    ((10, 4, 4), "float32", ValueError, "2-D array.*reshape"),
    ((100, 4), "complex64", TypeError, "expected numbers.*float32 or float64"),
])
def test_bad_zarr_stores(tmp_path, shape, dtype, error, match):
    z = zarr.create_array(store=str(tmp_path / "bad.zarr"), shape=shape, dtype=dtype)
    with pytest.raises(error, match=match):
        GPLandmarks(**GP).fit(z)


def test_dask_array_with_unknown_chunks():
    X = da.from_array(np.random.default_rng(0).random((100, 3)), chunks=(50, 3))
    unknown = X[X[:, 0] > 0.5]
    with pytest.raises(ValueError, match="unknown chunk sizes.*compute_chunk_sizes"):
        check_rows(unknown)


def test_unanswered_scheduler_is_a_clear_error_within_the_timeout(data, monkeypatch,
                                                                  capsys):
    from landmarking import _cluster

    folder, _ = data
    monkeypatch.setattr(_cluster, "SCHEDULER_TIMEOUT", 2)
    start = time.perf_counter()
    status = cli.main(["landmarks", str(folder / "X.npy"), "-n", "2", "-o",
                       str(folder / "never.npz"), "--scheduler", "tcp://127.0.0.1:9", "-q"])
    assert status == 2 and time.perf_counter() - start < 30
    assert "could not reach the Dask scheduler at tcp://127.0.0.1:9 within 2 s" in \
        capsys.readouterr().err
    assert not (folder / "never.npz").exists()


# --------------------------------------------------------------------------- command line

def test_cli_reads_zarr_and_memmaps_and_streams_features(data, tmp_path):
    folder, X = data
    for source in ("X.npy", "X.zarr"):
        assert cli.main(["landmarks", str(folder / source), "-n", "2", "--steps", "30",
                         "-o", str(tmp_path / f"{source}.lm.npz"), "-q"]) == 0
    from landmarking.io import read_result

    landmarks = [read_result(tmp_path / f"{s}.lm.npz")["landmarks"] for s in ("X.npy", "X.zarr")]
    # Zarr's 1000-row chunks and the .npy file give the same minibatches.
    assert landmarks[0].shape == (2, 8)
    np.testing.assert_array_equal(landmarks[0], landmarks[1])
    saved = read_result(tmp_path / "X.npy.lm.npz")
    from landmarking.kernels import gaussian_features

    expected = gaussian_features(X, saved["landmarks"], float(saved["kernel_width"]))
    for out in ("f.npy", "f.zarr"):
        assert cli.main(["features", str(folder / "X.zarr"), "--landmarks",
                         str(tmp_path / "X.npy.lm.npz"), "-o", str(tmp_path / out), "-q"]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "f.npy"), expected, rtol=1e-6)
    np.testing.assert_allclose(zarr.open_array(str(tmp_path / "f.zarr"))[:], expected,
                               rtol=1e-6)
    assert not [p for p in os.listdir(tmp_path) if "partial" in p]


def test_cli_dask_workers_runs_on_a_local_cluster(data, tmp_path):
    folder, X = data
    with environ_kept():  # the local cluster's nannies (conftest.environ_kept)
        assert cli.main(["features", str(folder / "X.zarr"), "--landmarks",
                         str(_landmarks_file(folder, tmp_path)), "-o", str(tmp_path / "f.zarr"),
                         "--dask-workers", "2", "-q"]) == 0
    assert zarr.open_array(str(tmp_path / "f.zarr")).shape == (4000, 2)


def _landmarks_file(folder, tmp_path):
    path = tmp_path / "lm.npz"
    assert cli.main(["landmarks", str(folder / "X.npy"), "-n", "2", "--steps", "20", "-o",
                     str(path), "-q"]) == 0
    return path


def test_cli_transform_streams_a_saved_model(data, tmp_path):
    from landmarking import save

    folder, X = data
    gp = GPLandmarks(chunk_size=CHUNK, **GP).fit(X)
    save(gp, tmp_path / "model.npz")
    assert cli.main(["transform", str(folder / "X.zarr"), "--model", str(tmp_path / "model.npz"),
                     "-o", str(tmp_path / "t.npy"), "-q"]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "t.npy"), gp.transform(X), rtol=1e-6)
