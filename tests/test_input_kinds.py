"""Every caller of the row-block seam gives the NumPy result on every kind of input.

The same data arrive as a NumPy array, a read-only memory map, a Zarr array, a Dask
array (read from that Zarr store) and a scipy CSR matrix. Zarr and Dask are cut into
chunks of 256 rows (the last one short), so their blocks differ from NumPy's.

Where the result of a row depends on that row only and is computed by the same dense
code, it must match bit for bit. Two causes of round-off are allowed, and each
comparison says which: a CSR block multiplies through scipy's sparse product
instead of BLAS (a different summation order), and BLAS may round a matrix product
differently for blocks of different shapes.
"""

import numpy as np
import pytest
from conftest import environ_kept
from scipy import sparse
from sklearn.datasets import make_swiss_roll

from landmarking import (
    ActiveLearningLandmarks,
    GPLandmarks,
    KMeansLandmarks,
    NMFLandmarks,
    RandomLandmarks,
    RPCholeskyLandmarks,
)
from landmarking.baselines.nmf import kl_nmf_weights
from landmarking.evaluation import covering_radius, landmark_features, landmark_geometry
from landmarking.kernels import gaussian_features
from landmarking.lll._cpu import reconstruction_weights
from landmarking.lll.estimator import LocallyLinearLandmarks
from landmarking.lll.out_of_sample import lll_out_of_sample

KINDS = ["numpy", "memmap", "zarr", "dask", "csr"]
CHUNK = 256


def _data(n=1500, seed=0):
    """A Swiss roll moved to nonnegative coordinates (so that NMF applies), with a
    fourth column that is mostly zero (so that CSR stores something sparse)."""
    X, _ = make_swiss_roll(n, random_state=seed)
    X = X - X.min(axis=0)
    extra = np.zeros(n)
    extra[::7] = 0.1
    return np.column_stack([X, extra])


def as_kind(X, kind, path):
    """X stored as ``kind`` under ``path`` (a fresh folder)."""
    if kind == "numpy":
        return X
    if kind == "csr":
        return sparse.csr_matrix(X)
    if kind == "memmap":
        np.save(path / "x.npy", X)
        return np.load(path / "x.npy", mmap_mode="r")
    zarr = pytest.importorskip("zarr")
    z = zarr.open_array(str(path / "x.zarr"), mode="w", shape=X.shape,
                        chunks=(CHUNK, X.shape[1]), dtype=X.dtype)
    z[:] = X
    if kind == "zarr":
        return z
    da = pytest.importorskip("dask.array")
    return da.from_zarr(z)


def computed(result):
    """A Dask result must be lazy; compute it (single-threaded, in this process)."""
    if hasattr(result, "dask"):
        return result.compute(scheduler="synchronous")
    return result


@pytest.fixture(scope="module")
def data():
    return _data()


@pytest.fixture(scope="module", params=KINDS)
def kind_data(request, data, tmp_path_factory):
    kind = request.param
    return kind, as_kind(data, kind, tmp_path_factory.mktemp(kind))


def _close(kind, actual, expected, *, exact_dense=False, rtol=1e-12, atol=0.0):
    """Bit for bit when asked and the block is dense, else to round-off."""
    if exact_dense and kind != "csr":
        np.testing.assert_array_equal(actual, expected)
    else:
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


# --------------------------------------------------------------------------- per-row maps

def test_landmark_features(kind_data, data):
    kind, X = kind_data
    model = RandomLandmarks(n_landmarks=12, random_state=0).fit(data)
    expected = model.transform(data)
    out = model.transform(X)
    assert hasattr(out, "dask") == (kind == "dask")  # lazy on Dask only
    # exp of a BLAS product per block: block shapes (and CSR) round differently.
    _close(kind, computed(out), expected, rtol=1e-12, atol=1e-13)
    raw = landmark_features(model.landmarks_, X, kernel_width=model.kernel_width_)
    _close(kind, computed(raw), expected, rtol=1e-12, atol=1e-13)


def test_reconstruction_weights_and_lll_out_of_sample(kind_data, data):
    kind, X = kind_data
    T = data[::25]
    Z0 = reconstruction_weights(data, T, 6)
    Z = reconstruction_weights(X, T, 6)
    np.testing.assert_array_equal(Z.indices, Z0.indices)
    # The N x L product of the Gram trick is a BLAS (or sparse) product per block.
    _close(kind, Z.data, Z0.data, rtol=0, atol=1e-10)
    emb = np.random.default_rng(0).normal(size=(T.shape[0], 2))
    Y0 = lll_out_of_sample(data, T, emb, 6)
    Y = lll_out_of_sample(X, T, emb, 6)
    assert hasattr(Y, "dask") == (kind == "dask")
    _close(kind, computed(Y), Y0, rtol=0, atol=1e-10)


def test_kl_nmf_weights(kind_data, data):
    kind, X = kind_data
    H = np.abs(np.random.default_rng(1).normal(size=(4, data.shape[1]))) + 0.1
    W0 = kl_nmf_weights(data, H, max_iter=50)
    W = kl_nmf_weights(X, H, max_iter=50)
    assert hasattr(W, "dask") == (kind == "dask")
    # Multiplicative updates on a dense copy of each block: identical arithmetic,
    # except that BLAS may round the (block x 4) products differently per shape.
    _close(kind, computed(W), W0, rtol=1e-10)


def test_covering_radius_and_geometry(kind_data, data):
    kind, X = kind_data
    T = data[:30] + 0.01
    r0, d0 = covering_radius(data, T)
    r, d = covering_radius(X, T)
    # sqrt of |x|^2 - 2 x.t + |t|^2: its rounding (~1e-14 |x|^2) over a distance
    # of ~0.01 is ~1e-11 absolute, whichever product order (CSR or BLAS).
    _close(kind, d, d0, rtol=1e-10, atol=1e-9)
    assert r == pytest.approx(r0, rel=1e-10)
    g0 = landmark_geometry(data, T, n_queries=300, random_state=0)
    g = landmark_geometry(X, T, n_queries=300, random_state=0)
    for key in ("spacing", "covering_radius", "mean_cover"):
        assert g[key] == pytest.approx(g0[key], rel=1e-9, abs=1e-9), key
    np.testing.assert_allclose(g["to_data"], g0["to_data"], rtol=1e-9, atol=1e-9)


# --------------------------------------------------------------------------- fits

BASELINES = [
    RandomLandmarks(n_landmarks=8, random_state=0),
    ActiveLearningLandmarks(n_landmarks=8, subsample=600, random_state=0),
    RPCholeskyLandmarks(n_landmarks=8, random_state=0),
    KMeansLandmarks(n_landmarks=8, random_state=0, max_iter=50),
    NMFLandmarks(n_landmarks=3, random_state=0, max_iter=100),
]


@pytest.mark.parametrize("estimator", BASELINES, ids=lambda e: type(e).__name__)
def test_baseline_fit_gives_the_same_landmarks(kind_data, data, estimator):
    kind, X = kind_data
    from sklearn.base import clone

    ref = clone(estimator).fit(data)
    est = clone(estimator).fit(X)
    assert isinstance(est.landmarks_, np.ndarray)  # landmarks stay dense
    if hasattr(ref, "indices_"):  # data points: the same rows for the same seed
        np.testing.assert_array_equal(est.indices_, ref.indices_)
        np.testing.assert_array_equal(est.landmarks_, ref.landmarks_)
    else:  # k-means centroids and NMF components: sums over blocks of rows
        np.testing.assert_allclose(est.landmarks_, ref.landmarks_, rtol=1e-6, atol=1e-8)


def test_lll_fit_and_transform(kind_data, data):
    kind, X = kind_data
    params = dict(n_landmarks=60, n_neighbors=10, random_state=0)
    ref = LocallyLinearLandmarks(**params).fit(data)
    est = LocallyLinearLandmarks(**params).fit(X)
    np.testing.assert_array_equal(est.landmark_indices_, ref.landmark_indices_)
    np.testing.assert_array_equal(est.landmarks_, ref.landmarks_)
    # The neighbour search on CSR (sparse distances) and the blocks of Z round
    # differently; the 60 x 60 eigenproblem carries that to the embedding.
    np.testing.assert_allclose(est.embedding_, ref.embedding_, rtol=0, atol=1e-8)
    Y = est.transform(X)
    assert hasattr(Y, "dask") == (kind == "dask")
    np.testing.assert_allclose(computed(Y), ref.transform(data), rtol=0, atol=1e-8)


# --------------------------------------------------------------------------- needs all rows

def test_fits_that_need_every_row_refuse_what_does_not_fit(data, tmp_path, monkeypatch):
    from landmarking import _memory

    X = as_kind(data, "memmap", tmp_path)
    monkeypatch.setattr(_memory, "available_memory", lambda: 1000)
    with pytest.raises(MemoryError, match="fit on a sample of rows.*transform"):
        LocallyLinearLandmarks(n_landmarks=20).fit(X)
    with pytest.raises(MemoryError, match="RandomLandmarks or GPLandmarks"):
        KMeansLandmarks(n_landmarks=4).fit(X)
    with pytest.raises(MemoryError, match="subsample=M"):
        RPCholeskyLandmarks(n_landmarks=4).fit(X)
    # What works block by block still does: the fit reads only the rows it picks,
    # and features written block by block to a memory map need no room for all of
    # them (an in-memory transform result is refused by its own memory guard).
    fitted = RandomLandmarks(n_landmarks=4, random_state=0).fit(X)
    out = np.lib.format.open_memmap(tmp_path / "features.npy", mode="w+", dtype=np.float64,
                                    shape=(X.shape[0], 4))
    gaussian_features(X, fitted.landmarks_, fitted.kernel_width_, out=out)
    monkeypatch.undo()
    np.testing.assert_array_equal(out, fitted.transform(X))


# --------------------------------------------------------------------------- dtype, threads

def test_lll_and_nmf_keep_float32(data):
    X32 = data.astype(np.float32)
    lll = LocallyLinearLandmarks(n_landmarks=40, random_state=0)
    assert lll.fit_transform(X32).dtype == np.float32
    assert lll.transform(X32[:10]).dtype == np.float32
    ref = LocallyLinearLandmarks(n_landmarks=40, random_state=0).fit(data)
    # float32 input, float64 inside: the float32 neighbour distances shift the
    # affinities by ~1e-7 relative, the embedding by 4e-7 of its scale (measured).
    np.testing.assert_allclose(lll.embedding_, ref.embedding_, rtol=0,
                               atol=1e-5 * np.abs(ref.embedding_).max())
    nmf = NMFLandmarks(n_landmarks=3, random_state=0, max_iter=100).fit(X32)
    assert nmf.transform(X32).dtype == np.float32


def test_lll_result_does_not_depend_on_n_jobs(data):
    one = LocallyLinearLandmarks(n_landmarks=80, random_state=0, n_jobs=1).fit(data)
    two = LocallyLinearLandmarks(n_landmarks=80, random_state=0, n_jobs=2).fit(data)
    np.testing.assert_array_equal(one.weights_.toarray(), two.weights_.toarray())
    np.testing.assert_array_equal(one.embedding_, two.embedding_)
    np.testing.assert_array_equal(one.transform(data[:300]), two.transform(data[:300]))


def test_lll_result_does_not_depend_on_n_jobs_on_many_features():
    # 200 features near a 10-D subspace: the weights' float32 scan on the
    # landmarks' leading axes, its passes one per thread. The landmarks' Gram
    # matrix once came out of a threaded BLAS product with other last bits on
    # two threads than on one, and so did Z and the embedding.
    rng = np.random.default_rng(41)
    X = (rng.normal(size=(4000, 10)) @ rng.normal(size=(10, 200))
         + 0.3 * rng.normal(size=(4000, 200)))
    one = LocallyLinearLandmarks(n_components=3, random_state=0, n_jobs=1).fit(X)
    two = LocallyLinearLandmarks(n_components=3, random_state=0, n_jobs=2).fit(X)
    np.testing.assert_array_equal(one.weights_.toarray(), two.weights_.toarray())
    np.testing.assert_array_equal(one.embedding_, two.embedding_)


# --------------------------------------------------------------------------- distributed

@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with environ_kept():  # the nannies' pre-spawn variables (conftest.environ_kept)
        cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                           dashboard_address=None)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def test_distributed_gp_landmarks_and_lll_transform(client, tmp_path):
    da = pytest.importorskip("dask.array")
    X = _data(3000, seed=1)
    Xd = as_kind(X, "dask", tmp_path)
    params = dict(n_landmarks=6, n_steps=20, batch_size=200, random_state=0)
    ref = GPLandmarks(**params).fit(X)
    gp = GPLandmarks(**params).fit(Xd)
    # The minibatches come from the estimator's sample, not from the Dask chunks.
    np.testing.assert_array_equal(gp.landmarks_, ref.landmarks_)
    # With chunk_size, the chunked sampling: the same chunks on the cluster.
    chunked = GPLandmarks(**params, chunk_size=CHUNK)
    np.testing.assert_array_equal(chunked.fit(Xd).landmarks_,
                                  GPLandmarks(**params, chunk_size=CHUNK).fit(X).landmarks_)
    F = gp.transform(Xd)
    assert isinstance(F, da.Array)
    np.testing.assert_allclose(F.compute(), gp.transform(X), rtol=1e-12, atol=1e-13)

    lll = LocallyLinearLandmarks(n_landmarks=80, random_state=0).fit(X[::3])
    Y = lll.transform(Xd)
    assert isinstance(Y, da.Array)
    np.testing.assert_allclose(Y.compute(), lll.transform(X), rtol=0, atol=1e-10)
