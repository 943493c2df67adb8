"""Tests of the landmark baselines (issue 3)."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from sklearn.cluster import KMeans
from sklearn.utils.estimator_checks import parametrize_with_checks

from landmarking import (
    ActiveLearningLandmarks,
    KMeansLandmarks,
    NMFLandmarks,
    RandomLandmarks,
    RPCholeskyLandmarks,
)
from landmarking.baselines.nmf import kl_nmf_weights
from landmarking.cholesky import pivoted_cholesky
from landmarking.datasets import make_concentric_circles
from landmarking.kernels import local_kernel_width

GAUSSIAN_METHODS = [RandomLandmarks, ActiveLearningLandmarks, RPCholeskyLandmarks, KMeansLandmarks]
SEQUENTIAL_METHODS = [RandomLandmarks, ActiveLearningLandmarks, RPCholeskyLandmarks]


@parametrize_with_checks([
    RandomLandmarks(n_landmarks=3, random_state=0),
    ActiveLearningLandmarks(n_landmarks=3, random_state=0),
    RPCholeskyLandmarks(n_landmarks=3, random_state=0),
    KMeansLandmarks(n_landmarks=3, random_state=0),
    NMFLandmarks(n_landmarks=3, random_state=0, max_iter=200),
])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _blobs(seed, n_per=40, centers=((0, 0), (10, 0), (0, 10)), scale=0.5):
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(c, scale, size=(n_per, 2)) for c in centers])


def _dense_active_learning(X, k, width):
    """Eq. 3 verbatim: Sigma(x) = k(x,x) - k(x,D) K^-1 k(x,D)^T over all points."""
    K = np.exp(-cdist(X, X, "sqeuclidean") / width)
    chosen, variances = [], []
    for _ in range(k):
        if chosen:
            KS = K[np.ix_(chosen, chosen)]
            kx = K[:, chosen]
            sigma = 1.0 - np.einsum("ij,ij->i", kx, np.linalg.solve(KS, kx.T).T)
        else:
            sigma = np.ones(len(X))
        sigma[chosen] = -np.inf
        p = int(np.argmax(sigma))
        chosen.append(p)
        variances.append(sigma[p])
    return np.array(chosen), np.array(variances)


def test_active_learning_matches_dense_reference():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    model = ActiveLearningLandmarks(n_landmarks=12, subsample=None, kernel_width=4.0).fit(X)
    ref_idx, ref_var = _dense_active_learning(X, 12, 4.0)
    np.testing.assert_array_equal(model.indices_, ref_idx)
    np.testing.assert_allclose(model.objective_, ref_var, atol=1e-10)
    np.testing.assert_array_equal(model.landmarks_, X[ref_idx])


def test_active_learning_on_subsample_matches_reference_on_that_subsample():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 4))
    model = ActiveLearningLandmarks(n_landmarks=8, subsample=50, kernel_width=6.0,
                                    random_state=3).fit(X)
    pool = model.subsample_indices_
    assert len(pool) == 50 and len(np.unique(pool)) == 50
    ref_idx, _ = _dense_active_learning(X[pool], 8, 6.0)
    np.testing.assert_array_equal(model.indices_, pool[ref_idx])


def test_active_learning_picks_one_landmark_per_cluster_first():
    X = _blobs(0)
    model = ActiveLearningLandmarks(n_landmarks=3, subsample=None, random_state=0).fit(X)
    clusters = model.indices_ // 40
    assert sorted(clusters.tolist()) == [0, 1, 2]


def test_pivoted_cholesky_residual_is_the_nystroem_error():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 2))
    width = 1.5
    pivots, _, trace, L = pivoted_cholesky(X, 10, width, rule="random",
                                           random_state=np.random.RandomState(0))
    K = np.exp(-cdist(X, X, "sqeuclidean") / width)
    for j in (1, 5, 10):
        S = pivots[:j]
        nystroem = K[:, S] @ np.linalg.solve(K[np.ix_(S, S)], K[S, :])
        assert trace[j] == pytest.approx(np.trace(K - nystroem), abs=1e-8)
    np.testing.assert_allclose(L @ L.T, nystroem, atol=1e-8)


def test_rpcholesky_residual_decreases_and_beats_random():
    X = _blobs(3, n_per=100, centers=((0, 0), (6, 0), (0, 6), (6, 6), (3, 3)))
    rp = RPCholeskyLandmarks(n_landmarks=15, kernel_width=1.0, random_state=0).fit(X)
    assert np.all(np.diff(rp.residual_) < 0)
    assert rp.residual_[0] == pytest.approx(1.0)
    # Nystroem error of 15 random centres, averaged over seeds, for comparison.
    K = np.exp(-cdist(X, X, "sqeuclidean") / 1.0)

    def nystroem_error(S):
        return np.trace(K - K[:, S] @ np.linalg.solve(K[np.ix_(S, S)], K[S, :])) / len(X)

    random_errors = [nystroem_error(RandomLandmarks(n_landmarks=15, kernel_width=1.0,
                                                    random_state=s).fit(X).indices_)
                     for s in range(10)]
    assert rp.residual_[-1] == pytest.approx(nystroem_error(rp.indices_), abs=1e-8)
    assert rp.residual_[-1] < np.mean(random_errors)


@pytest.mark.parametrize("cls", SEQUENTIAL_METHODS)
def test_sequential_prefix_and_determinism(cls):
    X = np.random.default_rng(4).normal(size=(150, 5))
    short = cls(n_landmarks=4, random_state=7).fit(X)
    long = cls(n_landmarks=9, random_state=7).fit(X)
    again = cls(n_landmarks=9, random_state=7).fit(X)
    np.testing.assert_array_equal(long.indices_[:4], short.indices_)
    np.testing.assert_array_equal(long.landmarks_, again.landmarks_)
    assert len(np.unique(long.indices_)) == 9
    np.testing.assert_array_equal(long.landmarks_, X[long.indices_])


@pytest.mark.parametrize("cls", GAUSSIAN_METHODS)
def test_features_shape_dtype_and_values(cls):
    X = np.random.default_rng(5).normal(size=(120, 4)).astype(np.float32)
    model = cls(n_landmarks=6, random_state=0).fit(X)
    assert model.landmarks_.shape == (6, 4)
    F = model.transform(X[:30])
    assert F.shape == (30, 6) and F.dtype == np.float32
    expected = np.exp(-cdist(X[:30].astype(float), model.landmarks_.astype(float),
                             "sqeuclidean") / model.kernel_width_)
    np.testing.assert_allclose(F, expected, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("cls", GAUSSIAN_METHODS)
def test_kernel_width_rules(cls):
    X = np.random.default_rng(6).normal(size=(100, 3))
    assert cls(n_landmarks=3, kernel_width="variance", random_state=0).fit(X).kernel_width_ \
        == pytest.approx(np.var(X, axis=0).sum())
    assert cls(n_landmarks=3, kernel_width=2.5, random_state=0).fit(X).kernel_width_ == 2.5
    # "auto" (issue 23): the variance rule on a blob, where the local rule is not
    # much narrower, and the local rule on a low-dimensional manifold (two circles),
    # where the variance rule is far too wide.
    auto = cls(n_landmarks=3, random_state=0).fit(X).kernel_width_
    assert auto == pytest.approx(np.var(X, axis=0).sum())
    circles, _ = make_concentric_circles(300, random_state=0)
    auto = cls(n_landmarks=3, random_state=0).fit(circles).kernel_width_
    assert auto == pytest.approx(local_kernel_width(circles, random_state=0))
    assert auto < 0.2 * np.var(circles, axis=0).sum()


@pytest.mark.parametrize("cls", GAUSSIAN_METHODS)
@pytest.mark.parametrize("params, X, match", [
    ({"n_landmarks": 0}, np.ones((10, 2)), "n_landmarks must be >= 1"),
    ({"n_landmarks": 20}, np.arange(20.0).reshape(10, 2),
     "n_landmarks=20 needs at least 20 samples"),
    ({"kernel_width": -1.0}, np.arange(20.0).reshape(10, 2), "kernel_width must be > 0"),
    ({"kernel_width": "wide"}, np.arange(20.0).reshape(10, 2), "kernel_width must be a positive"),
    ({}, np.array([[0.0, np.nan]] * 5), "NaN"),
])
def test_bad_input_errors(cls, params, X, match):
    params = {"n_landmarks": 3, **params}
    with pytest.raises((ValueError, TypeError), match=match):
        cls(**params).fit(X)


def test_subsample_errors():
    X = np.random.default_rng(7).normal(size=(50, 2))
    with pytest.raises(ValueError, match="subsample=5 is smaller than n_landmarks=8"):
        ActiveLearningLandmarks(n_landmarks=8, subsample=5).fit(X)
    with pytest.raises(ValueError, match="subsample must be >= 1"):
        RPCholeskyLandmarks(n_landmarks=2, subsample=0).fit(X)


def test_duplicates_do_not_break_cholesky_methods():
    base = np.random.default_rng(8).normal(size=(5, 3))
    X = np.repeat(base, 6, axis=0)  # 5 distinct points, 30 rows
    for cls in (ActiveLearningLandmarks, RPCholeskyLandmarks):
        model = cls(n_landmarks=8, subsample=None, kernel_width=1.0, random_state=0).fit(X)
        assert np.all(np.isfinite(model.landmarks_)) and np.all(np.isfinite(model.residual_))
        assert len(np.unique(model.indices_)) == 8
        # The first five pivots are the five distinct points; then nothing is left.
        assert len({tuple(r) for r in model.landmarks_[:5]}) == 5
        assert model.residual_[5] == pytest.approx(0.0, abs=1e-8)


def test_kmeans_landmarks_are_centroids_with_lower_inertia_than_random():
    X = _blobs(9, n_per=60)
    model = KMeansLandmarks(n_landmarks=3, random_state=0).fit(X)
    labels = np.argmin(cdist(X, model.landmarks_), axis=1)
    for k in range(3):
        np.testing.assert_allclose(model.landmarks_[k], X[labels == k].mean(axis=0), atol=1e-6)
    assert model.inertia_ == pytest.approx(((X - model.landmarks_[labels]) ** 2).sum(), rel=1e-6)
    rand = RandomLandmarks(n_landmarks=3, random_state=0).fit(X).landmarks_
    assert model.inertia_ < (cdist(X, rand, "sqeuclidean").min(axis=1)).sum()
    ref = KMeans(3, n_init=1, random_state=0).fit(X)
    assert model.inertia_ == pytest.approx(ref.inertia_, rel=1e-3)


def _nmf_data(seed):
    rng = np.random.default_rng(seed)
    H = rng.gamma(0.3, size=(3, 12))
    W = rng.gamma(1.0, size=(200, 3)) * np.array([5.0, 2.0, 0.5])
    return rng.poisson(W @ H * 20).astype(float)


def test_nmf_landmarks_order_reconstruction_and_features():
    X = _nmf_data(10)
    model = NMFLandmarks(n_landmarks=3, random_state=0, max_iter=1000).fit(X)
    assert model.landmarks_.shape == (3, 12) and np.all(model.landmarks_ >= 0)
    assert np.all(np.diff(model.mass_share_) <= 0)
    assert model.mass_share_.sum() == pytest.approx(1.0)
    W = model.transform(X)
    assert W.shape == (200, 3) and np.all(W >= 0)
    # The weights reconstruct the data about as well as the fit itself.
    recon = W @ model.landmarks_
    rel_err = np.abs(recon - X).sum() / X.sum()
    assert rel_err < 0.12
    # Rows are solved independently: a row's weights do not depend on the batch.
    np.testing.assert_allclose(model.transform(X[:7]), W[:7])


def test_kl_nmf_weights_recover_exact_weights():
    rng = np.random.default_rng(11)
    H = rng.gamma(0.5, size=(4, 20))
    W = rng.gamma(2.0, size=(30, 4))
    est = kl_nmf_weights(W @ H, H, max_iter=5000, tol=1e-10)
    np.testing.assert_allclose(est @ H, W @ H, rtol=1e-3, atol=1e-6)


def test_nmf_rejects_negative_data_with_a_clear_message():
    X = np.abs(np.random.default_rng(12).normal(size=(20, 4)))
    X[3, 1] = -0.5
    with pytest.raises(ValueError,
                       match="Negative values in data passed to NMFLandmarks.*nonnegative"):
        NMFLandmarks(n_landmarks=2).fit(X)
    model = NMFLandmarks(n_landmarks=2, random_state=0).fit(np.abs(X))
    with pytest.raises(ValueError, match="Negative values"):
        model.transform(X)


def test_nmf_accepts_sparse_and_falls_back_to_random_init():
    import scipy.sparse as sp
    X = _nmf_data(13)
    dense = NMFLandmarks(n_landmarks=3, random_state=0).fit(X)
    sparse = NMFLandmarks(n_landmarks=3, random_state=0).fit(sp.csr_matrix(X))
    np.testing.assert_allclose(sparse.landmarks_, dense.landmarks_, rtol=1e-6, atol=1e-8)
    assert dense.init_ == "nndsvda"
    wide = NMFLandmarks(n_landmarks=15, random_state=0, max_iter=50).fit(X)
    assert wide.init_ == "random"
    assert NMFLandmarks(n_landmarks=15).init == "auto"


@pytest.mark.parametrize("cls", [ActiveLearningLandmarks, RPCholeskyLandmarks, KMeansLandmarks])
def test_n_jobs_does_not_change_the_landmarks(cls):
    X = np.random.default_rng(21).normal(size=(3000, 8))
    params = dict(n_landmarks=15, random_state=0)
    if cls is not KMeansLandmarks:
        params["subsample"] = None
    one = cls(n_jobs=1, **params).fit(X)
    two = cls(n_jobs=2, **params).fit(X)
    if cls is KMeansLandmarks:
        # scikit-learn's Lloyd adds per-thread partial sums: equal to round-off.
        np.testing.assert_allclose(one.landmarks_, two.landmarks_, rtol=1e-12, atol=1e-14)
        return
    np.testing.assert_array_equal(one.landmarks_, two.landmarks_)



@pytest.mark.parametrize("cls", [ActiveLearningLandmarks, RPCholeskyLandmarks, KMeansLandmarks])
def test_bad_n_jobs(cls):
    with pytest.raises(ValueError, match="n_jobs must be None"):
        cls(n_landmarks=3, n_jobs=0).fit(np.random.default_rng(0).normal(size=(30, 2)))


@pytest.mark.parametrize("cls", [RandomLandmarks, ActiveLearningLandmarks, RPCholeskyLandmarks])
def test_sparse_input_gives_the_dense_landmarks(cls):
    import scipy.sparse as sp

    rng = np.random.default_rng(22)
    X = rng.normal(size=(400, 30)) * (rng.uniform(size=(400, 30)) < 0.2)
    dense = cls(n_landmarks=10, random_state=0).fit(X)
    csr = cls(n_landmarks=10, random_state=0).fit(sp.csr_matrix(X))
    np.testing.assert_array_equal(csr.indices_, dense.indices_)
    assert isinstance(csr.landmarks_, np.ndarray)
    np.testing.assert_array_equal(csr.landmarks_, dense.landmarks_)
    # Features of CSR rows: the sparse product rounds differently from BLAS.
    np.testing.assert_allclose(csr.transform(sp.csr_matrix(X)), dense.transform(X),
                               rtol=1e-12, atol=1e-14)
