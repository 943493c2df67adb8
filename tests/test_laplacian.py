"""Exact Laplacian eigenmaps: the eigenproblem, scikit-learn agreement, signs, errors."""

import numpy as np
import pytest
from scipy import sparse
from sklearn.datasets import make_swiss_roll
from sklearn.manifold import SpectralEmbedding
from sklearn.utils.estimator_checks import parametrize_with_checks

from landmarking.graph import (
    DisconnectedGraphWarning,
    degree,
    deterministic_signs,
    knn_affinity,
    laplacian,
    neighbor_graph,
)
from landmarking.spectral.laplacian import (
    LaplacianEigenmaps,
    spectral_embedding,
)


def _roll(n=600, seed=0):
    X, _ = make_swiss_roll(n, noise=0.05, random_state=seed)
    return X


def test_solves_the_generalised_problem():
    X = _roll()
    W = knn_affinity(X, 10, 2.0)
    emb, lam = spectral_embedding(W, 4, eigen_solver="dense")
    L, D = laplacian(W), sparse.diags(degree(W))
    # L x = lambda D x, X^T D X = I and X^T D 1 = 0 (trivial direction removed).
    np.testing.assert_allclose(L @ emb, (D @ emb) * lam, atol=1e-9)
    np.testing.assert_allclose(emb.T @ (D @ emb), np.eye(4), atol=1e-9)
    np.testing.assert_allclose(emb.T @ degree(W), 0, atol=1e-8)
    assert np.all(np.diff(lam) > 0) and lam[0] > 0


def test_agrees_with_sklearn_spectral_embedding():
    X = _roll(500, seed=1)
    W = knn_affinity(X, 12, 2.0)
    ours = LaplacianEigenmaps(n_components=3).fit_transform(X, affinity=W)
    theirs = SpectralEmbedding(n_components=3, affinity="precomputed",
                               eigen_solver="arpack", random_state=0).fit_transform(W)
    # Same D-normalisation; eigenvectors agree up to sign.
    for j in range(3):
        sign = np.sign(ours[:, j] @ theirs[:, j])
        np.testing.assert_allclose(ours[:, j], sign * theirs[:, j], atol=1e-6)


@pytest.mark.parametrize("solver", ["arpack", "lobpcg", "amg"])
def test_iterative_solvers_match_dense(solver):
    X = _roll(800, seed=2)
    W = knn_affinity(X, 10, 2.0)
    dense, lam_dense = spectral_embedding(W, 3, eigen_solver="dense")
    other, lam = spectral_embedding(W, 3, eigen_solver=solver, tol=1e-10,
                                    max_iter=2000, random_state=0)
    np.testing.assert_allclose(lam, lam_dense, rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(other, dense, atol=1e-5)


def test_arpack_does_not_depend_on_the_thread_count(monkeypatch):
    # ARPACK's products run on the loop threads, in parts of rows (made small here
    # so that 3,000 rows make many parts), each row's sum in stored order: the
    # products have the same bits on any thread count (test_affinity.py). ARPACK's
    # own BLAS calls (norms, dgemv) may round differently on another BLAS thread
    # count (OpenBLAS's Nehalem kernel: 1e-14 here), and the iteration carries
    # that rounding: so agreement to 1e-10 of the largest entry, the margin of
    # test_n_jobs_does_not_change_the_result, far below the solver's 1e-8.
    from landmarking import _graph_loops
    from landmarking._parallel import thread_limits

    monkeypatch.setattr(_graph_loops, "MATVEC_ROWS", 257)
    W = knn_affinity(_roll(3000, seed=6), 10, 2.0)
    results = []
    for threads in (1, 3):
        with thread_limits(threads):
            results.append(spectral_embedding(W, 3, eigen_solver="arpack", tol=1e-8,
                                              random_state=0))
    (one, lam_one), (three, lam_three) = results
    np.testing.assert_allclose(three, one, rtol=0, atol=1e-10 * np.abs(one).max())
    np.testing.assert_allclose(lam_three, lam_one, rtol=1e-10)


def test_deterministic_signs_and_refit():
    X = _roll(400, seed=3)
    le = LaplacianEigenmaps(n_components=3, n_neighbors=8, random_state=0)
    a = le.fit_transform(X)
    rows = np.argmax(np.abs(a), axis=0)
    assert np.all(a[rows, np.arange(3)] > 0)
    np.testing.assert_array_equal(a, LaplacianEigenmaps(
        n_components=3, n_neighbors=8, random_state=0).fit_transform(X))
    np.testing.assert_array_equal(deterministic_signs(-a), a)


def test_given_affinity_replaces_builtin_graph_and_timings():
    X = _roll(300, seed=4)
    W = knn_affinity(X, 7, 1.5)
    built = LaplacianEigenmaps(n_neighbors=7, bandwidth=1.5).fit(X)
    given = LaplacianEigenmaps(n_neighbors=99, bandwidth=0.01).fit(X, affinity=W)
    np.testing.assert_allclose(given.embedding_, built.embedding_, atol=1e-10)
    assert given.bandwidth_ is None and built.bandwidth_ == 1.5
    assert {"neighbors", "affinity", "eigensolver", "total"} <= set(built.timings_)
    assert set(given.timings_) == {"eigensolver", "total"}


def test_auto_bandwidth_is_median_neighbour_distance():
    X = _roll(300, seed=5)
    from landmarking.neighbors import nearest_neighbors

    d, _ = nearest_neighbors(X, 6)
    le = LaplacianEigenmaps(n_neighbors=6).fit(X)
    assert le.bandwidth_ == pytest.approx(np.median(d))
    assert le.get_params()["bandwidth"] == "auto"


def test_disconnected_graph_warns():
    rng = np.random.default_rng(6)
    X = np.vstack([rng.normal(size=(50, 2)), rng.normal(size=(50, 2)) + 50])
    with pytest.warns(DisconnectedGraphWarning, match="connected components"):
        le = LaplacianEigenmaps(n_neighbors=5, bandwidth=1.0).fit(X)
    assert le.n_connected_components_ == 2


@pytest.mark.parametrize("params, error, match", [
    ({"bandwidth": 0.0}, ValueError, "bandwidth must be a finite number > 0"),
    ({"bandwidth": -2.0}, ValueError, "bandwidth must be a finite number > 0"),
    ({"bandwidth": "wide"}, ValueError, "bandwidth must be one of 'auto'"),
    ({"n_neighbors": 50}, ValueError, "must be smaller than the number of samples"),
    ({"n_components": 0}, ValueError, "n_components must be >= 1"),
    ({"eigen_solver": "magic"}, ValueError, "eigen_solver must be one of"),
])
def test_bad_parameters(params, error, match):
    X = np.random.default_rng(7).normal(size=(50, 3))
    with pytest.raises(error, match=match):
        LaplacianEigenmaps(**params).fit(X)


def test_does_not_modify_input():
    X = _roll(200, seed=8)
    copy = X.copy()
    W = knn_affinity(X, 6, 1.0)
    W_copy = W.copy()
    LaplacianEigenmaps(n_neighbors=6).fit(X, affinity=W)
    np.testing.assert_array_equal(X, copy)
    assert (W != W_copy).nnz == 0


def test_transform_is_the_nystroem_map_of_the_fit():
    X = _roll(500, seed=9)
    rng = np.random.default_rng(9)
    new = X[:40] + rng.normal(scale=0.05, size=(40, 3))
    le = LaplacianEigenmaps(n_neighbors=8, random_state=0).fit(X)
    # Fitted rows come back exactly where the fit put them.
    np.testing.assert_array_equal(le.transform(X[::9]), le.embedding_[::9])
    # New rows: x(y) = sum_n w(y, y_n) x_n / ((1 - lambda) sum_n w), a loop.
    Y = le.transform(new)
    for i in range(0, 40, 7):
        d = np.linalg.norm(X - new[i], axis=1)
        near = np.argsort(d)[:8]
        w = np.exp(-d[near] ** 2 / (2 * le.bandwidth_ ** 2))
        want = w @ le.embedding_[near] / w.sum() / (1 - le.eigenvalues_)
        np.testing.assert_allclose(Y[i], want, rtol=1e-9, atol=1e-12)
    # A point nudged off a fitted one lands next to it (measured 0.7% and 1.3%
    # of the spread).
    spread = np.ptp(le.embedding_, axis=0)
    assert np.all(np.abs(Y - le.embedding_[:40]).max(axis=0) < 0.05 * spread)
    assert list(le.get_feature_names_out()) == ["laplacianeigenmaps0", "laplacianeigenmaps1"]


def test_transform_needs_the_gaussian_graph():
    X = _roll(100, seed=10)
    le = LaplacianEigenmaps().fit(X, affinity=knn_affinity(X, 6, 1.0))
    with pytest.raises(ValueError, match="precomputed affinity.*fit it on X without affinity="):
        le.transform(X[:2])


def test_sparse_input_matches_dense():
    X = sparse.random(300, 40, density=0.2, format="csr", random_state=11)
    dense = LaplacianEigenmaps(n_neighbors=8, random_state=0).fit(X.toarray())
    csr = LaplacianEigenmaps(n_neighbors=8, random_state=0).fit(X)
    np.testing.assert_allclose(csr.embedding_, dense.embedding_, rtol=0, atol=1e-10)
    new = sparse.random(20, 40, density=0.2, format="csr", random_state=12)
    np.testing.assert_allclose(csr.transform(new), dense.transform(new.toarray()),
                               rtol=0, atol=1e-10)
    np.testing.assert_array_equal(csr.transform(X[:5]), csr.embedding_[:5])


def test_float32_in_float32_out():
    X = _roll(300, seed=13)
    a = LaplacianEigenmaps(n_neighbors=8).fit(X.astype(np.float32))
    b = LaplacianEigenmaps(n_neighbors=8).fit(X)
    assert a.embedding_.dtype == np.float32 and b.embedding_.dtype == np.float64
    # float64 inside: only the float32 neighbour distances differ (by 1e-7 of the
    # scale, measured; rounding the float64 embedding to float32 alone gives 5e-8).
    np.testing.assert_allclose(a.embedding_, b.embedding_, rtol=0,
                               atol=1e-5 * np.abs(b.embedding_).max())
    assert a.transform(X[:3].astype(np.float32) + 0.01).dtype == np.float32


def test_n_jobs_does_not_change_the_result():
    X = _roll(400, seed=14)
    one = LaplacianEigenmaps(n_neighbors=8, n_jobs=1).fit(X)
    two = LaplacianEigenmaps(n_neighbors=8, n_jobs=2).fit(X)
    np.testing.assert_allclose(one.embedding_, two.embedding_, rtol=0,
                               atol=1e-10 * np.abs(one.embedding_).max())
    with pytest.raises(ValueError, match="n_jobs must be None"):
        LaplacianEigenmaps(n_jobs=0).fit(X)


@parametrize_with_checks(
    [LaplacianEigenmaps(n_neighbors=5)],
    # max_iter belongs to the iterative eigensolvers; neither ARPACK nor the
    # dense default reports an iteration count, so there is no n_iter_.
    expected_failed_checks=lambda est: {"check_transformer_n_iter": "no n_iter_ to report"})
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("kind", ["memmap", "zarr", "dask"])
def test_out_of_core_input_matches_numpy(kind, tmp_path):
    X = _roll(300, seed=15)
    new = X[:30] + 0.02
    if kind == "memmap":
        np.save(tmp_path / "x.npy", X)
        held = np.load(tmp_path / "x.npy", mmap_mode="r")
        held_new = new
    elif kind == "zarr":
        zarr = pytest.importorskip("zarr")
        held = zarr.create_array(store=str(tmp_path / "x.zarr"), shape=X.shape,
                                 chunks=(64, 3), dtype="f8")
        held[...] = X
        held_new = new
    else:
        da = pytest.importorskip("dask.array")
        held, held_new = da.from_array(X, chunks=(64, 3)), da.from_array(new, chunks=(7, 3))
    reference = LaplacianEigenmaps(n_neighbors=8).fit(X)
    other = LaplacianEigenmaps(n_neighbors=8).fit(held)
    np.testing.assert_allclose(other.embedding_, reference.embedding_, rtol=0, atol=1e-12)
    mapped = np.asarray(other.transform(held_new))  # a lazy array for Dask input
    np.testing.assert_allclose(mapped, reference.transform(new), rtol=0, atol=1e-12)


# ------------------------------------------------------------------ the kept neighbour index


def _transform_rebuilding(le, X):
    """transform as it was before the kept index: a fresh exact search per call
    (query_neighbors), the Nystroem weights, then fitted rows put back."""
    from landmarking.neighbors import query_neighbors

    X_fit = le._X_fit
    emb = le.embedding_.astype(np.float64)
    dense = X.toarray() if sparse.issparse(X) else X  # the Nystroem query was dense
    dist, idx = query_neighbors(X_fit.astype(np.float64), dense.astype(np.float64),
                                le.n_neighbors)
    d2 = dist ** 2
    w = np.exp(-(d2 - d2[:, :1]) / (2.0 * le.bandwidth_ ** 2))
    w /= w.sum(axis=1, keepdims=True)
    Y = np.einsum("nk,nkd->nd", w, emb[idx]) / (1.0 - le.eigenvalues_)[None, :]
    _, near = query_neighbors(X_fit, X, 1)
    nearest = X_fit[near[:, 0]]
    if sparse.issparse(X):
        nearest, X = nearest.toarray(), X.toarray()
    same = np.all(nearest == X, axis=1)
    Y[same] = emb[near[same, 0]]
    return Y.astype(X.dtype)


def _count_index_builds(monkeypatch):
    from landmarking import neighbors

    built = []
    fit = neighbors.NeighborIndex.fit

    def counting(self, reference):
        built.append(reference.shape)
        return fit(self, reference)

    monkeypatch.setattr(neighbors.NeighborIndex, "fit", counting)
    return built


@pytest.mark.parametrize("method", ["exact", "approximate"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kept_index_gives_the_transform_of_a_rebuilt_one(monkeypatch, method, dtype):
    # "approximate" fits on the real usearch graph (the `ann` extra); transform
    # searches exactly whatever the fit's method was.
    X = _roll(400, seed=21).astype(dtype)
    new = (X[:60] + np.random.default_rng(21).normal(scale=0.05, size=(60, 3))).astype(dtype)
    new[::10] = X[100:106]  # rows equal to fitted ones take their embedding
    built = _count_index_builds(monkeypatch)
    le = LaplacianEigenmaps(n_neighbors=8, neighbors_method=method, random_state=0).fit(X)
    assert built == []  # not in fit
    want = _transform_rebuilding(le, new)
    built.clear()  # the reference built its own
    np.testing.assert_array_equal(le.transform(new), want)
    one_by_one = np.vstack([le.transform(row[None]) for row in new])
    np.testing.assert_array_equal(one_by_one, want)
    np.testing.assert_array_equal(le.transform(new), want)
    assert built == [X.shape]  # once, for all 62 calls
    assert le.transform(new).dtype == dtype


def test_kept_index_on_sparse_input_matches_a_rebuilt_one(monkeypatch):
    X = sparse.random(300, 40, density=0.2, format="csr", random_state=22)
    new = sparse.vstack([sparse.random(20, 40, density=0.2, format="csr", random_state=23),
                         X[:3]]).tocsr()
    built = _count_index_builds(monkeypatch)
    le = LaplacianEigenmaps(n_neighbors=8, random_state=0).fit(X)
    want = _transform_rebuilding(le, new)
    built.clear()  # the reference built its own
    for _ in range(3):
        np.testing.assert_array_equal(le.transform(new), want)
    assert len(built) == 1
    np.testing.assert_array_equal(want[-3:], le.embedding_[:3])


def test_kept_index_is_shared_by_threads_and_rebuilt_by_a_refit(monkeypatch):
    import threading
    from concurrent.futures import ThreadPoolExecutor

    X = _roll(400, seed=24)
    pieces = [X[i::8] + 0.01 for i in range(8)]
    serial = LaplacianEigenmaps(n_neighbors=8, random_state=0).fit(X)
    want = [serial.transform(p) for p in pieces]
    built = _count_index_builds(monkeypatch)
    le = LaplacianEigenmaps(n_neighbors=8, random_state=0).fit(X)
    barrier = threading.Barrier(8)

    def call(piece):
        barrier.wait()  # all eight ask for the index at the same moment
        return le.transform(piece)

    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(call, pieces * 3))
    for k, result in enumerate(got):
        np.testing.assert_array_equal(result, want[k % 8])
    assert len(built) == 1
    # A refit on other data starts a new index.
    le.fit(X[:300])
    assert not le._neighbor_index.built
    np.testing.assert_array_equal(
        le.transform(pieces[0]),
        LaplacianEigenmaps(n_neighbors=8, random_state=0).fit(X[:300]).transform(pieces[0]))
    assert [shape[0] for shape in built] == [400, 300, 300]


def test_kept_index_is_not_saved_pickled_or_copied(tmp_path):
    import copy
    import json
    import pickle

    from landmarking import load, save

    X = _roll(300, seed=25)
    new = X[:20] + 0.01
    le = LaplacianEigenmaps(n_neighbors=8, random_state=0).fit(X)
    want = le.transform(new)
    assert le._neighbor_index.built
    save(le, tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz") as archive:
        header = bytes(archive["__landmarking_model__"]).decode()
        members = archive.files
    assert "_neighbor_index" not in header and "_neighbor_index" not in json.loads(header)[
        "estimator"]["state"]
    assert not any("neighbor" in m for m in members)
    for other in (load(tmp_path / "m.npz"), pickle.loads(pickle.dumps(le)), copy.deepcopy(le)):
        assert not other._neighbor_index.built  # empty, rebuilt on first use
        np.testing.assert_array_equal(other.transform(new), want)
        assert other._neighbor_index.built
    # A file written before the index existed (no slot at all) loads and transforms.
    bare = pickle.loads(pickle.dumps(le))
    del bare._neighbor_index
    np.testing.assert_array_equal(bare.transform(new), want)


def test_auto_solver_is_dense_for_small_graphs_and_arpack_above():
    from landmarking.spectral.laplacian import (
        AUTO_ARPACK_TOL,
        DENSE_LIMIT,
        resolve_eigen_solver,
    )

    assert resolve_eigen_solver("auto", DENSE_LIMIT, 2, None) == ("dense", None)
    assert resolve_eigen_solver("auto", DENSE_LIMIT + 1, 2, None) == ("arpack",
                                                                      AUTO_ARPACK_TOL)
    assert resolve_eigen_solver("auto", DENSE_LIMIT + 1, 2, 1e-9) == ("arpack", 1e-9)
    assert resolve_eigen_solver("lobpcg", 10 ** 6, 2, None) == ("lobpcg", None)
    # Above the dense limit "auto" is ARPACK to residuals near AUTO_ARPACK_TOL: the
    # same eigenvectors as the dense solver (measured 1.8e-5 of the scale apart,
    # eigenvalues 7e-10 relative), the resolved
    # solver in eigen_solver_ and the parameter as given.
    X = _roll(DENSE_LIMIT + 500, seed=5)
    auto = LaplacianEigenmaps(n_components=3, random_state=0).fit(X)
    dense = LaplacianEigenmaps(n_components=3, eigen_solver="dense").fit(X)
    assert auto.eigen_solver_ == "arpack" and auto.eigen_solver == "auto"
    assert dense.eigen_solver_ == "dense"
    np.testing.assert_allclose(auto.eigenvalues_, dense.eigenvalues_, rtol=1e-6)
    np.testing.assert_allclose(auto.embedding_, dense.embedding_,
                               atol=1e-4 * np.abs(dense.embedding_).max())


def _long_roll(n=8000, seed=0):
    """scikit-learn's Swiss roll: a 2-D manifold about four times longer than
    high, whose trailing eigenvalues crowd near 0 (lambda_1 about 8e-5 here)."""
    X, _ = make_swiss_roll(n, random_state=seed)
    return X, neighbor_graph(X, 10, "auto")[0]


def _high_dimensional(n=3000, seed=0):
    """50-D standard normal points: a small-world k-NN graph (lambda_1 about 0.3)."""
    X = np.random.default_rng(seed).standard_normal((n, 50))
    return X, neighbor_graph(X, 10, "auto")[0]


def test_low_frequency_bound_is_an_upper_bound_on_lambda_1():
    from landmarking.spectral.laplacian import low_frequency_bound

    for W in (neighbor_graph(_roll(600), 10, "auto")[0], _high_dimensional(600)[1]):
        lam = spectral_embedding(W, 1, eigen_solver="dense")[1][0]
        assert lam <= low_frequency_bound(W) <= 40 * lam
        # Stopped after the first search (from node 0): still a bound.
        assert lam <= low_frequency_bound(W, stop_above=0.0) <= 40 * lam
    # A chain's lambda_1 is 1 - cos(pi / (n - 1)); its hop distance is the
    # eigenvector's shape to first order.
    n = 300
    chain = sparse.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1]).tocsr()
    exact = 1 - np.cos(np.pi / (n - 1))
    assert exact <= low_frequency_bound(chain) <= 1.25 * exact
    # An edge of negligible weight (a wrong neighbour of an approximate search)
    # does not shorten the walk: the same test function, a bound within round-off.
    shortcut = chain.tolil()
    shortcut[0, n // 2] = shortcut[n // 2, 0] = 1e-12
    assert low_frequency_bound(shortcut.tocsr()) == pytest.approx(
        low_frequency_bound(chain), rel=1e-9)
    halves = sparse.block_diag([chain, chain]).tocsr()
    assert low_frequency_bound(halves) is None


def test_auto_picks_amg_on_a_long_roll_and_arpack_on_high_dimensional_data():
    from landmarking.spectral.laplacian import (
        AMG_BOUND_LIMIT,
        AUTO_ARPACK_TOL,
        low_frequency_bound,
        resolve_eigen_solver,
    )

    X, W = _long_roll()
    assert low_frequency_bound(W) < AMG_BOUND_LIMIT / 1.5  # measured 2.9e-4
    assert resolve_eigen_solver("auto", len(X), 2, None, affinity=W) == ("amg",
                                                                         AUTO_ARPACK_TOL)
    # A tolerance or solver the user gave is kept; without the graph, ARPACK.
    assert resolve_eigen_solver("auto", len(X), 2, 1e-8, affinity=W) == ("amg", 1e-8)
    assert resolve_eigen_solver("arpack", len(X), 2, None, affinity=W) == ("arpack", None)
    assert resolve_eigen_solver("auto", len(X), 2, None)[0] == "arpack"
    Y, V = _high_dimensional()
    assert low_frequency_bound(V) > 100 * AMG_BOUND_LIMIT  # measured 0.7
    assert resolve_eigen_solver("auto", len(Y), 2, None, affinity=V)[0] == "arpack"
    # The estimator records the solver in eigen_solver_ and leaves the parameter
    # as given; the AMG solution is ARPACK's to the stated residual.
    auto = LaplacianEigenmaps(n_components=2, random_state=0).fit(X, affinity=W)
    assert auto.eigen_solver == "auto" and auto.eigen_solver_ == "amg"
    reference, lam = spectral_embedding(W, 2, eigen_solver="arpack", tol=1e-10,
                                        random_state=0)
    np.testing.assert_allclose(auto.eigenvalues_, lam, rtol=1e-6)
    # Residuals <= 1e-6 against a gap lambda_2 - lambda_1 of about 4e-4: each
    # eigenvector to a few 1e-3 of its scale.
    np.testing.assert_allclose(auto.embedding_, reference,
                               atol=1e-2 * np.abs(reference).max())
    high = LaplacianEigenmaps(n_components=2, random_state=0).fit(Y, affinity=V)
    assert high.eigen_solver == "auto" and high.eigen_solver_ == "arpack"


def test_amg_solver_is_deterministic_and_needs_no_global_seed():
    # pyamg's default prolongation smoother estimates a spectral radius from
    # NumPy's global random state; the "amg" solver must not depend on it.
    W = knn_affinity(_roll(800, seed=2), 10, 2.0)
    np.random.seed(1)
    a, lam_a = spectral_embedding(W, 3, eigen_solver="amg", random_state=0)
    np.random.seed(2)
    b, lam_b = spectral_embedding(W, 3, eigen_solver="amg", random_state=0)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(lam_a, lam_b)


def test_auto_without_pyamg_falls_back_to_arpack(monkeypatch):
    import sys

    from landmarking.spectral.laplacian import resolve_eigen_solver

    X, W = _long_roll()
    monkeypatch.setitem(sys.modules, "pyamg", None)  # `import pyamg` fails, as if absent
    assert resolve_eigen_solver("auto", len(X), 2, None, affinity=W)[0] == "arpack"
    le = LaplacianEigenmaps(n_components=2, random_state=0).fit(X, affinity=W)
    assert le.eigen_solver == "auto" and le.eigen_solver_ == "arpack"
    with pytest.raises(ImportError, match=r"eigen_solver='amg' needs pyamg, which is not "
                       r"installed; .*pip install \"landmarking\[amg\]\".*'auto' or "
                       r"'arpack'"):
        LaplacianEigenmaps(n_components=2, eigen_solver="amg").fit(X, affinity=W)


def test_neighbour_search_used_is_recorded_and_auto_is_not_the_cells():
    # 12,000 rows of 6 features: "auto" takes the approximate search there
    # (usearch), the cells only when asked; the same seed draws the same centres.
    from landmarking.neighbors import APPROXIMATE_MIN_SAMPLES

    pytest.importorskip("usearch", reason="the approximate search is the ann extra")
    rng = np.random.default_rng(0)
    X = np.repeat(rng.normal(size=(12, 6)), 1000, axis=0) + rng.normal(size=(12_000, 6))
    assert X.shape[0] >= APPROXIMATE_MIN_SAMPLES
    auto = LaplacianEigenmaps(n_components=2, random_state=0).fit(X)
    assert auto.neighbors_method == "auto" and auto.neighbors_method_ == "approximate"
    first, second = (LaplacianEigenmaps(n_components=2, neighbors_method="cells",
                                        random_state=0).fit(X) for _ in range(2))
    assert first.neighbors_method_ == "cells"
    np.testing.assert_array_equal(first.embedding_, second.embedding_)
    assert LaplacianEigenmaps(n_components=2).fit(X[:500]).neighbors_method_ == "exact"
    roll = LaplacianEigenmaps(n_components=2).fit(_roll(APPROXIMATE_MIN_SAMPLES, seed=1))
    assert roll.neighbors_method_ == "exact"  # scikit-learn's KD-tree: exact
    given = LaplacianEigenmaps(n_neighbors=6).fit(X[:200], affinity=knn_affinity(X[:200], 6, 1.0))
    assert given.neighbors_method_ is None


def test_cells_graph_embedding_is_exact_le_on_a_roll():
    # On 2,000 roll points the cells (20 of about 100 points, 5 probed) hold every
    # point's 10 nearest neighbours (recall 1 measured): the same graph, so the
    # same eigenvectors up to round-off (dense LAPACK below 2,500 points; signs
    # fixed by deterministic_signs).
    X = _roll(2000, seed=3)
    exact = LaplacianEigenmaps(neighbors_method="exact").fit(X)
    cells = LaplacianEigenmaps(neighbors_method="cells", random_state=0).fit(X)
    assert cells.neighbors_method_ == "cells"
    np.testing.assert_allclose(cells.embedding_, exact.embedding_,
                               atol=1e-6 * np.abs(exact.embedding_).max())


def test_cells_graph_refuses_sparse_input():
    X = sparse.random(300, 20, density=0.2, format="csr", random_state=0)
    with pytest.raises(ValueError, match="searches dense data.*neighbors_method='exact'"):
        LaplacianEigenmaps(neighbors_method="cells").fit(X)
