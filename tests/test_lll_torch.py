"""Locally Linear Landmarks on a torch device against the NumPy path.

CI has no GPU: the torch path runs on ``torch.device("cpu")`` (the CPU build of
PyTorch) and must give the NumPy path's weights, reduced matrices, embedding and
out-of-sample map; one test runs on CUDA where a GPU is present.
"""

import importlib
import pickle

import numpy as np
import pytest
import sklearn
from scipy import sparse
from sklearn.datasets import make_swiss_roll

torch = pytest.importorskip(
    "torch", reason="the torch path needs PyTorch (pip install torch==2.13.0, CPU build)")

from landmarking.graph import knn_affinity  # noqa: E402
from landmarking.lll import _cpu as lll_module  # noqa: E402
from landmarking.lll import _torch as _lll_torch  # noqa: E402
from landmarking.lll._cpu import reconstruction_weights  # noqa: E402
from landmarking.lll.estimator import LocallyLinearLandmarks  # noqa: E402
from landmarking.metrics import procrustes_error  # noqa: E402

CPU = torch.device("cpu")
# Both paths compute in float64 whatever the input dtype (float32 rows are widened),
# so one tolerance serves both. Worst differences measured between the torch path on
# the CPU and the NumPy path (issue 26), with the tolerances 30-100x above them:
# weights 1.7e-12 (absolute; weights are O(1)); the reduced matrices 2.2e-16 of their
# scale; embeddings 3.4e-14 (Procrustes), eigenvalues 9e-14 (relative).
WEIGHTS_ATOL = 1e-10
PROCRUSTES_TOL = 1e-12


@pytest.fixture(scope="module")
def roll():
    X, _ = make_swiss_roll(800, noise=0.05, random_state=0)
    X_new, _ = make_swiss_roll(200, noise=0.05, random_state=1)
    return X, X_new


def _assert_same_weights(Z_torch, Z_numpy, atol=WEIGHTS_ATOL):
    assert Z_torch.shape == Z_numpy.shape
    np.testing.assert_array_equal(Z_torch.indptr, Z_numpy.indptr)
    np.testing.assert_array_equal(Z_torch.indices, Z_numpy.indices)
    np.testing.assert_allclose(Z_torch.data, Z_numpy.data, rtol=0, atol=atol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [4, 9])  # the NumPy path's vectorised and compiled branches
def test_weights_match_numpy(roll, dtype, k):
    X = roll[0].astype(dtype)
    T = X[::7].astype(np.float64)
    Z_numpy = reconstruction_weights(X, T, k)
    Z_torch = _lll_torch.reconstruction_weights(X, T, k, device=CPU)
    _assert_same_weights(Z_torch, Z_numpy)
    np.testing.assert_allclose(np.asarray(Z_torch.sum(axis=1)).ravel(), 1.0, atol=1e-12)


def test_weights_from_differences_and_sparse_rows_match_numpy(roll, monkeypatch):
    X = roll[0]
    T = X[::5]
    expected = reconstruction_weights(X, T, 6)
    _assert_same_weights(
        _lll_torch.reconstruction_weights(sparse.csr_matrix(X), T, 6, device=CPU),
        expected)
    # Above GRAM_LIMIT landmarks both paths build G from explicit differences.
    monkeypatch.setattr(lll_module, "GRAM_LIMIT", 10)
    expected = reconstruction_weights(X, T, 6)
    _assert_same_weights(_lll_torch.reconstruction_weights(X, T, 6, device=CPU), expected)
    _assert_same_weights(
        _lll_torch.reconstruction_weights(sparse.csr_matrix(X), T, 6, device=CPU),
        expected)


def test_small_blocks_give_the_same_weights(roll):
    X, T = roll[0], roll[0][::9]
    whole = _lll_torch.reconstruction_weights(X, T, 5, device=CPU)
    _assert_same_weights(_lll_torch.reconstruction_weights(X, T, 5, device=CPU, chunk_size=37,
                                                           verbose=True), whole, 1e-10)
    with sklearn.config_context(working_memory=0.05):  # ~ a dozen rows per block
        assert _lll_torch._DeviceLocalMap(T, 5, 1e-3, 3, CPU, None).chunk_rows < 100
        _assert_same_weights(_lll_torch.reconstruction_weights(X, T, 5, device=CPU),
                             whole, 1e-10)


def test_nearest_landmarks_break_ties_to_the_lower_index():
    # Integer grids: many exactly equal distances, also at the k-th place.
    rng = np.random.default_rng(3)
    X = rng.integers(0, 4, size=(300, 2)).astype(np.float64)
    T = rng.integers(0, 4, size=(25, 2)).astype(np.float64)
    cross, x_sq, t_sq = X @ T.T, (X * X).sum(axis=1), (T * T).sum(axis=1)
    for k in (1, 3, 7, 25):
        expected = lll_module._nearest_landmarks(cross, x_sq, t_sq, k)
        d2 = -2.0 * torch.as_tensor(cross) + torch.as_tensor(x_sq)[:, None] \
            + torch.as_tensor(t_sq)[None, :]
        np.testing.assert_array_equal(_lll_torch._nearest_landmarks(d2, k).numpy(), expected)


def test_zero_ridge_and_singular_gram_match_numpy():
    T = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    Y = np.array([[0.25, 0.5], [0.0, 0.0], [1.0, 1.0]])
    for reg in (0.0, 1e-3):
        Z_torch = _lll_torch.reconstruction_weights(Y, T, 3, device=CPU, reg=reg)
        _assert_same_weights(Z_torch, reconstruction_weights(Y, T, 3, reg=reg))
    np.testing.assert_allclose(Z_torch[0].toarray() @ T, Y[:1], atol=1e-3)
    # Two equal landmarks: G is exactly singular at reg=0 (the pseudo-inverse branch).
    T2 = np.array([[0.0], [0.0], [1.0]])
    Z2 = _lll_torch.reconstruction_weights(np.array([[0.0]]), T2, 2, device=CPU, reg=0.0)
    np.testing.assert_allclose(Z2.toarray(), reconstruction_weights(
        np.array([[0.0]]), T2, 2, reg=0.0).toarray(), atol=1e-8)


def test_systems_cholesky_rejects_are_solved_by_lu(roll, monkeypatch):
    X, T = roll[0][:300], roll[0][::9]
    expected = _lll_torch.reconstruction_weights(X, T, 6, device=CPU)
    cholesky_ex = torch.linalg.cholesky_ex

    def rejects_every_third(G):
        factor, info = cholesky_ex(G)
        factor[::3], info[::3] = torch.nan, 1  # as a failed factorisation leaves them
        return factor, info

    monkeypatch.setattr(torch.linalg, "cholesky_ex", rejects_every_third)
    _assert_same_weights(_lll_torch.reconstruction_weights(X, T, 6, device=CPU), expected,
                         1e-10)


@pytest.mark.parametrize("dense", [True, False])
def test_reduced_problem_matches_numpy(roll, monkeypatch, dense):
    X = roll[0]
    W = knn_affinity(X, 10, 2.0)
    Z = reconstruction_weights(X, X[::8], 5)
    Z = Z[:, np.flatnonzero(Z.getnnz(axis=0))]  # as the estimator drops unused landmarks
    if not dense:
        monkeypatch.setattr(lll_module, "DENSE_LIMIT", 10)
    A, B = lll_module.reduced_problem(W, Z)
    A_t, B_t = _lll_torch.reduced_problem(W, Z, device=CPU, chunk_size=33)  # 4 blocks
    assert sparse.issparse(A_t) == (not dense) == sparse.issparse(A)
    if not dense:
        A, B, A_t, B_t = A.toarray(), B.toarray(), A_t.toarray(), B_t.toarray()
    scale = np.abs(B).max()
    np.testing.assert_allclose(A_t, A, rtol=0, atol=1e-14 * scale)
    np.testing.assert_allclose(B_t, B, rtol=0, atol=1e-14 * scale)
    np.testing.assert_array_equal(A_t, A_t.T)
    np.testing.assert_allclose(A_t.sum(axis=1), 0, atol=1e-13 * scale)  # A~ 1 = 0 (8e-16)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fit_and_transform_match_numpy(roll, dtype):
    X, X_new = roll[0].astype(dtype), roll[1].astype(dtype)
    params = dict(n_landmarks=120, n_neighbors=10, method="lll", random_state=0)
    ref = LocallyLinearLandmarks(**params).fit(X)
    est = LocallyLinearLandmarks(device=CPU, **params).fit(X)
    assert est.device is CPU  # the parameter is left as given
    np.testing.assert_array_equal(est.landmarks_, ref.landmarks_)  # same generator
    _assert_same_weights(est.weights_, ref.weights_)
    assert est.embedding_.dtype == ref.embedding_.dtype == dtype
    assert procrustes_error(est.embedding_, ref.embedding_) < PROCRUSTES_TOL
    assert procrustes_error(est.landmark_embedding_, ref.landmark_embedding_) < PROCRUSTES_TOL
    np.testing.assert_allclose(est.eigenvalues_, ref.eigenvalues_, rtol=1e-11)
    new, new_ref = est.transform(X_new), ref.transform(X_new)
    assert isinstance(new, np.ndarray) and new.dtype == dtype
    assert procrustes_error(new, new_ref) < PROCRUSTES_TOL
    # The map reproduces the training embedding, as on the NumPy path (measured: 0 in
    # float32, 6e-16 in float64; the embedding's scale is 0.04, a float32 step there 4e-9).
    np.testing.assert_allclose(est.transform(X[:50]), est.embedding_[:50], rtol=0,
                               atol=1e-7 if dtype == np.float32 else 1e-13)


@pytest.mark.parametrize("method", ["le-z", "le-nystrom"])
def test_landmark_only_methods_match_numpy(roll, method):
    X, X_new = roll
    params = dict(n_landmarks=100, method=method, random_state=0)
    ref = LocallyLinearLandmarks(**params).fit(X)
    est = LocallyLinearLandmarks(device=CPU, **params).fit(X)
    # Measured: 6e-14 of the embedding's scale.
    tol = 5e-12 * np.abs(ref.embedding_).max()
    np.testing.assert_allclose(est.embedding_, ref.embedding_, rtol=0, atol=tol)
    np.testing.assert_allclose(est.transform(X_new), ref.transform(X_new), rtol=0, atol=tol)


def test_memmap_and_dask_rows_go_through_the_seam(roll, tmp_path):
    X, X_new = roll
    est = LocallyLinearLandmarks(n_landmarks=80, random_state=0, device=CPU).fit(X)
    expected = est.transform(X_new)
    mm = np.memmap(tmp_path / "x.dat", dtype=np.float64, mode="w+", shape=X_new.shape)
    mm[:] = X_new
    mm.flush()
    np.testing.assert_allclose(est.transform(np.memmap(tmp_path / "x.dat", dtype=np.float64,
                                                       mode="r", shape=X_new.shape)),
                               expected, rtol=1e-12, atol=1e-12)
    da = pytest.importorskip("dask.array", reason="Dask input needs dask")
    lazy = est.transform(da.from_array(X_new, chunks=(64, 3)))
    assert hasattr(lazy, "compute")
    np.testing.assert_allclose(lazy.compute(), expected, rtol=1e-12, atol=1e-12)


def test_auto_without_a_gpu_is_the_numpy_path(roll):
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: 'auto' picks CUDA here")
    X = roll[0]
    ref = LocallyLinearLandmarks(n_landmarks=60, random_state=0).fit(X)
    est = LocallyLinearLandmarks(n_landmarks=60, random_state=0, device="auto").fit(X)
    np.testing.assert_array_equal(est.embedding_, ref.embedding_)
    assert est.get_params()["device"] == "auto"


def test_fitted_on_torch_pickles_as_numpy(roll):
    est = LocallyLinearLandmarks(n_landmarks=60, random_state=0, device=CPU).fit(roll[0])
    for name, value in vars(est).items():
        assert not isinstance(value, torch.Tensor), name
    back = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(back.transform(roll[1]), est.transform(roll[1]))


@pytest.mark.parametrize("device, match", [
    ("tpu", r"device='tpu' is not a device we run on; pass 'cpu', 'cuda'"),
    ("cuda:x", r"device='cuda:x' is not a device"),
    (0, r"device=0 is not a device"),
    (None, r"device=None is not a device"),
])
def test_bad_device_values(roll, device, match):
    est = LocallyLinearLandmarks(n_landmarks=30, device=device)
    with pytest.raises(ValueError, match=match):
        est.fit(roll[0])
    fitted = LocallyLinearLandmarks(n_landmarks=30, random_state=0).fit(roll[0])
    with pytest.raises(ValueError, match=match):
        fitted.set_params(device=device).transform(roll[1])


def test_cuda_without_a_gpu_names_the_fallback(roll, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match=r"sees no CUDA GPU.*Use device='cpu'"):
        LocallyLinearLandmarks(n_landmarks=30, device="cuda").fit(roll[0])


def test_cuda_without_torch_names_the_extra(roll, monkeypatch):
    real = importlib.import_module

    def no_torch(name, *args):
        if name == "torch":
            raise ImportError("No module named 'torch'")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", no_torch)
    with pytest.raises(ImportError, match=r'pip install "landmarking\[gpu\]".*device=.cpu.'):
        LocallyLinearLandmarks(n_landmarks=30, device="cuda").fit(roll[0])


def _out_of_memory(*args, **kwargs):
    raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")


@pytest.mark.parametrize("where, what", [("_local_weights", "the LLL weights Z"),
                                         ("_sparse_on_device", "the reduced matrices A~, B~")])
def test_device_out_of_memory_names_the_block_size(roll, monkeypatch, where, what):
    monkeypatch.setattr(_lll_torch, where, _out_of_memory)
    est = LocallyLinearLandmarks(n_landmarks=30, random_state=0, device=CPU)
    with pytest.raises(MemoryError, match=what + r" in blocks of [\d,]+ \w+\. Lower the block "
                       r"size: pass a smaller chunk_size.*working_memory \(now \d+ MiB\)"):
        est.fit(roll[0])


def test_out_of_memory_in_transform_names_the_block_size(roll, monkeypatch):
    est = LocallyLinearLandmarks(n_landmarks=30, random_state=0, device=CPU).fit(roll[0])
    monkeypatch.setattr(_lll_torch, "_local_weights", _out_of_memory)
    with pytest.raises(MemoryError, match=r"out-of-sample map in blocks of [\d,]+ rows.*"
                                          r"chunk_size to lll_out_of_sample"):
        est.transform(roll[1])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none here)")
def test_cuda_matches_numpy(roll):
    X, X_new = roll
    params = dict(n_landmarks=120, random_state=0)
    ref = LocallyLinearLandmarks(**params).fit(X)
    est = LocallyLinearLandmarks(device="cuda", **params).fit(X)
    # Not measured on a GPU yet (CI has none): 10x the CPU tolerances, for reductions
    # summed in another order.
    _assert_same_weights(est.weights_, ref.weights_, 10 * WEIGHTS_ATOL)
    assert isinstance(est.embedding_, np.ndarray)
    assert procrustes_error(est.embedding_, ref.embedding_) < 10 * PROCRUSTES_TOL
    assert procrustes_error(est.transform(X_new), ref.transform(X_new)) < 10 * PROCRUSTES_TOL


def test_backend_on_a_torch_device_binds_the_torch_path():
    from landmarking.lll.backend import lll_backend

    backend = lll_backend(CPU)
    for function, torch_function in [(backend.weights, _lll_torch.reconstruction_weights),
                                      (backend.reduced_problem, _lll_torch.reduced_problem),
                                      (backend.out_of_sample, _lll_torch.lll_out_of_sample)]:
        assert function.func is torch_function and function.keywords == {"device": CPU}
