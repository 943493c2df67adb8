"""Locally Linear Landmarks: weights Z, the reduced problem, baselines, out-of-sample."""

import warnings

import numpy as np
import pytest
from scipy import sparse
from sklearn.base import BaseEstimator
from sklearn.datasets import make_swiss_roll
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from landmarking.graph import DisconnectedGraphWarning, knn_affinity
from landmarking.lll import _cpu as lll_module
from landmarking.lll import _loops as lll_loops
from landmarking.lll._cpu import reconstruction_weights
from landmarking.lll.estimator import LocallyLinearLandmarks
from landmarking.lll.landmark_selection import _prune_closest_pairs, select_landmarks
from landmarking.lll.model_selection import format_table, sweep_lll
from landmarking.lll.out_of_sample import lll_out_of_sample
from landmarking.local_weights import local_affine_weights
from landmarking.metrics import procrustes_error, span_error
from landmarking.spectral.laplacian import LaplacianEigenmaps


def _constrained_lstsq(y, T):
    """Slow reference: min ||y - T^T z||^2 s.t. sum z = 1, via the KKT system."""
    k = T.shape[0]
    kkt = np.zeros((k + 1, k + 1))
    kkt[:k, :k] = 2 * T @ T.T
    kkt[:k, k] = kkt[k, :k] = 1.0
    rhs = np.concatenate([2 * T @ y, [1.0]])
    return np.linalg.lstsq(kkt, rhs, rcond=None)[0][:k]


def test_weights_match_constrained_least_squares():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 6))
    T = rng.normal(size=(30, 6))
    Z = reconstruction_weights(X, T, 4, reg=0.0).toarray()
    assert np.all((Z != 0).sum(axis=1) == 4)
    np.testing.assert_allclose(Z.sum(axis=1), 1.0, atol=1e-12)
    d2 = ((X[:, None] - T[None]) ** 2).sum(-1)
    for n in range(len(X)):
        nearest = np.argsort(d2[n])[:4]
        np.testing.assert_array_equal(np.sort(np.flatnonzero(Z[n])), np.sort(nearest))
        np.testing.assert_allclose(Z[n, nearest], _constrained_lstsq(X[n], T[nearest]),
                                   atol=1e-8)


def test_weights_reconstruct_points_on_a_plane():
    # Points on a 2-D affine plane in 10-D: 3 landmarks in general position
    # reconstruct them exactly (K_Z = intrinsic dimension + 1).
    rng = np.random.default_rng(1)
    basis, offset = rng.normal(size=(2, 10)), rng.normal(size=10)
    X = rng.uniform(size=(300, 2)) @ basis + offset
    T = X[select_landmarks(X, 40, random_state=0)]
    Z = reconstruction_weights(X, T, 3, reg=1e-10)
    rel = np.linalg.norm(Z @ T - X) / np.linalg.norm(X - X.mean(0))
    assert rel < 1e-6
    # Fewer landmarks than needed cannot reconstruct: the test can fail.
    Z2 = reconstruction_weights(X, T, 2, reg=1e-10)
    assert np.linalg.norm(Z2 @ T - X) / np.linalg.norm(X - X.mean(0)) > 1e-3


def test_gram_and_difference_paths_agree(monkeypatch):
    rng = np.random.default_rng(2)
    X, T = rng.normal(size=(120, 5)), rng.normal(size=(25, 5))
    via_gram = reconstruction_weights(X, T, 7, reg=1e-3, chunk_size=50).toarray()
    monkeypatch.setattr(lll_module, "GRAM_LIMIT", 0)
    via_diff = reconstruction_weights(X, T, 7, reg=1e-3).toarray()
    np.testing.assert_allclose(via_gram, via_diff, atol=1e-9)


def test_point_on_a_landmark_and_singular_gram():
    rng = np.random.default_rng(3)
    T = rng.normal(size=(12, 3))
    X = np.vstack([T[:4], T[5] + 1e-14])
    # K_Z = 8 > D + 1: singular local Gram, resolved by the ridge, no NaN; the
    # minimum-norm weights spread over landmarks that still rebuild the point.
    Z = reconstruction_weights(X, T, 8).toarray()
    assert np.all(np.isfinite(Z))
    np.testing.assert_allclose(Z.sum(axis=1), 1.0)
    assert np.linalg.norm(Z @ T - X) < 0.02 * np.linalg.norm(X)
    # K_Z = 3 < D + 1: only the landmark under the point rebuilds it exactly.
    Z3 = reconstruction_weights(X, T, 3).toarray()
    assert np.all(Z3[np.arange(4), np.arange(4)] > 0.99) and Z3[4, 5] > 0.99
    # All K_Z landmarks at the point itself: G = 0, plain average.
    Zc = reconstruction_weights(np.zeros((1, 2)), np.zeros((3, 2)), 3).toarray()
    np.testing.assert_allclose(Zc, [[1 / 3, 1 / 3, 1 / 3]])


def test_all_points_as_landmarks_reproduces_exact_le():
    X, _ = make_swiss_roll(400, noise=0.05, random_state=4)
    exact = LaplacianEigenmaps(n_components=3, n_neighbors=10, bandwidth=2.0).fit(X)
    lll = LocallyLinearLandmarks(n_components=3, n_landmarks=400, n_landmark_neighbors=1,
                                 n_neighbors=10, bandwidth=2.0, random_state=0).fit(X)
    np.testing.assert_array_equal(lll.landmark_indices_, np.arange(400))
    np.testing.assert_allclose(lll.embedding_, exact.embedding_, atol=1e-8)
    np.testing.assert_allclose(lll.eigenvalues_, exact.eigenvalues_, rtol=1e-8)


@pytest.fixture(scope="module")
def roll_4000():
    X, _ = make_swiss_roll(4000, random_state=0)
    W = knn_affinity(X, 150, 1.6)
    exact = LaplacianEigenmaps(n_components=2).fit(X, affinity=W)
    return X, W, exact.embedding_


def test_swiss_roll_300_landmarks_close_to_exact(roll_4000):
    # The paper's Fig. 4 setting: 4,000 points, K_W = 150, sigma = 1.6, L = 300.
    X, W, exact = roll_4000
    errors = {}
    for method in ("lll", "le-z", "le-nystrom"):
        est = LocallyLinearLandmarks(n_landmarks=300, n_landmark_neighbors=5,
                                     n_neighbors=150, bandwidth=1.6, method=method,
                                     random_state=0)
        errors[method] = procrustes_error(est.fit(X, affinity=W).embedding_, exact)
    assert errors["lll"] < 0.05
    assert errors["le-z"] > 4 * errors["lll"]
    assert errors["le-nystrom"] > 4 * errors["lll"]
    # LLL and LE(Z) both return embeddings in span(Z): the best any of them could
    # do is span_error (measured 0.0135). LLL's reduced problem comes close to it
    # (0.0169); LE(Z), which ignores the non-landmarks' affinities, does not (0.31).
    floor = span_error(est.weights_, exact)
    assert floor - 1e-12 <= errors["lll"] < 1.5 * floor
    assert errors["le-z"] > 10 * floor


def test_transform_reproduces_training_embedding_and_npz_roundtrip(roll_4000, tmp_path):
    X, W, exact = roll_4000
    est = LocallyLinearLandmarks(n_landmarks=300, n_neighbors=150, bandwidth=1.6,
                                 random_state=1).fit(X[:3000], affinity=W[:3000][:, :3000])
    np.testing.assert_allclose(est.transform(X[:500]), est.embedding_[:500], atol=1e-10)
    path = tmp_path / "lll.npz"
    np.savez(path, landmarks=est.landmarks_, landmark_embedding=est.landmark_embedding_,
             n_landmark_neighbors=est.n_landmark_neighbors, reg=est.reg)
    saved = np.load(path)
    new = lll_out_of_sample(X[3000:], saved["landmarks"], saved["landmark_embedding"],
                            int(saved["n_landmark_neighbors"]), float(saved["reg"]))
    np.testing.assert_allclose(new, est.transform(X[3000:]), atol=1e-12)
    # Held-out points land where exact LE on all points puts them.
    full = np.vstack([est.embedding_, new])
    assert procrustes_error(full, exact) < 0.05


def test_landmarks_need_not_be_data_points(roll_4000):
    X, W, exact = roll_4000
    rng = np.random.default_rng(5)
    T = X[rng.choice(len(X), 300, replace=False)] + rng.normal(scale=0.05, size=(300, 3))
    est = LocallyLinearLandmarks(n_landmarks=1, landmarks=T, n_neighbors=150,
                                 bandwidth=1.6).fit(X, affinity=W)
    assert est.landmark_indices_ is None and est.n_landmarks_ == 300
    np.testing.assert_array_equal(est.landmarks_, T)
    assert procrustes_error(est.embedding_, exact) < 0.05


class _CentroidLandmarks(BaseEstimator):
    """Duck-typed landmark estimator: k-means centres (not data points)."""

    def __init__(self, n_landmarks=10, random_state=None):
        self.n_landmarks = n_landmarks
        self.random_state = random_state

    def fit(self, X, y=None):
        from sklearn.cluster import KMeans

        km = KMeans(self.n_landmarks, n_init=1, max_iter=20,
                    random_state=self.random_state).fit(X)
        self.landmarks_ = km.cluster_centers_
        return self


def test_landmark_estimator_duck_typing():
    X, _ = make_swiss_roll(1000, random_state=6)
    finder = _CentroidLandmarks(n_landmarks=120, random_state=0)
    est = LocallyLinearLandmarks(landmarks=finder, n_neighbors=12, random_state=0).fit(X)
    assert not hasattr(finder, "landmarks_")  # cloned, the user's object untouched
    assert est.n_landmarks_ == 120 and est.landmark_indices_ is None
    fitted = _CentroidLandmarks(n_landmarks=80, random_state=0).fit(X)
    est2 = LocallyLinearLandmarks(landmarks=fitted, n_neighbors=12).fit(X)
    np.testing.assert_array_equal(est2.landmarks_, fitted.landmarks_)
    exact = LaplacianEigenmaps(n_neighbors=12).fit(X).embedding_
    assert procrustes_error(est.embedding_, exact) < 0.1


def test_unused_landmark_is_placed_not_singular():
    X, _ = make_swiss_roll(800, random_state=7)
    T = np.vstack([X[:100], [[100.0, 100.0, 100.0]]])  # far away: reconstructs nobody
    est = LocallyLinearLandmarks(landmarks=T, n_neighbors=10).fit(X)
    assert np.all(np.isfinite(est.landmark_embedding_))
    assert est.weights_[:, 100].nnz == 0


@pytest.mark.parametrize("strategy", ["random", "random-pruned", "kmeans"])
def test_landmark_strategies_give_distinct_rows(strategy):
    X = np.random.default_rng(8).normal(size=(500, 4))
    idx = select_landmarks(X, 60, strategy, random_state=0)
    assert idx.shape == (60,) and np.unique(idx).size == 60
    assert idx.min() >= 0 and idx.max() < 500


def test_pruning_matches_brute_force_closest_pairs():
    rng = np.random.default_rng(9)
    C = rng.normal(size=(15, 2))
    alive = list(range(15))
    for _ in range(5):
        sub = C[alive]
        d = ((sub[:, None] - sub[None]) ** 2).sum(-1) + np.diag(np.full(len(alive), np.inf))
        i, j = np.unravel_index(np.argmin(d), d.shape)
        alive.remove(alive[min(i, j)])
    np.testing.assert_array_equal(_prune_closest_pairs(C, 5), alive)


def test_random_pruned_spreads_landmarks():
    X = np.random.default_rng(10).uniform(size=(3000, 2))

    def min_gap(idx):
        P = X[idx]
        d = ((P[:, None] - P[None]) ** 2).sum(-1) + np.diag(np.full(len(P), np.inf))
        return d.min()

    gaps_random = [min_gap(select_landmarks(X, 100, "random", random_state=s))
                   for s in range(5)]
    gaps_pruned = [min_gap(select_landmarks(X, 100, "random-pruned", random_state=s))
                   for s in range(5)]
    assert np.mean(gaps_pruned) > 2 * np.mean(gaps_random)


def test_disconnected_graph_warns():
    rng = np.random.default_rng(11)
    X = np.vstack([rng.normal(size=(100, 2)), rng.normal(size=(100, 2)) + 60])
    with pytest.warns(DisconnectedGraphWarning, match="connected components"):
        LocallyLinearLandmarks(n_landmarks=40, n_neighbors=5, random_state=0).fit(X)


@pytest.mark.parametrize("params, error, match", [
    ({"n_landmarks": 81}, ValueError, "n_landmarks=81 exceeds the 80 samples"),
    ({"n_landmarks": 10, "n_landmark_neighbors": 11}, ValueError,
     "n_landmark_neighbors=11 exceeds the 10 landmarks"),
    ({"bandwidth": 0.0}, ValueError, "bandwidth must be a finite number > 0"),
    ({"bandwidth": -1.0}, ValueError, "bandwidth must be a finite number > 0"),
    ({"bandwidth": "wide"}, ValueError, "bandwidth must be one of 'auto'"),
    ({"method": "nystrom"}, ValueError, "method must be one of"),
    ({"landmarks": "grid"}, ValueError, "landmarks must be one of"),
    ({"landmarks": 3.0}, TypeError, "landmarks must be 'random'"),
    ({"landmarks": np.zeros((5, 2))}, ValueError, r"shape \(n_landmarks, 3\)"),
    ({"reg": -1.0}, ValueError, "reg must be a finite number >= 0"),
    ({"n_landmarks": 3, "n_landmark_neighbors": 2, "n_components": 3}, ValueError,
     "needs more landmarks"),
])
def test_bad_parameters(params, error, match):
    X = np.random.default_rng(12).normal(size=(80, 3))
    params = {"n_landmarks": 20, "n_neighbors": 8, **params}
    with pytest.raises(error, match=match):
        LocallyLinearLandmarks(**params).fit(X)


# ------------------------------------------------------------ the public function

@pytest.mark.parametrize("params", [
    dict(method="lll"), dict(method="le-z"), dict(method="le-nystrom"),
    dict(method="lll", refine=True, landmarks="random-pruned", bandwidth=2.0),
])
def test_public_function_is_the_estimator_fit(params):
    # The estimator is a thin wrapper around locally_linear_landmarks: the same
    # numbers bit for bit for a seeded fit, whatever the method.
    from landmarking import locally_linear_landmarks
    from landmarking.lll import LLLResult

    X, _ = make_swiss_roll(400, random_state=21)
    X = X.astype(np.float32)  # the embedding comes back in the dtype of X
    kw = dict(n_landmarks=40, n_neighbors=8, random_state=0, **params)
    model = LocallyLinearLandmarks(**kw).fit(X)
    result = locally_linear_landmarks(X, **kw)
    assert isinstance(result, LLLResult) and result.embedding.dtype == np.float32
    np.testing.assert_array_equal(result.embedding, model.embedding_)
    np.testing.assert_array_equal(result.landmark_embedding, model.landmark_embedding_)
    np.testing.assert_array_equal(result.landmarks, model.landmarks_)
    np.testing.assert_array_equal(result.landmark_indices, model.landmark_indices_)
    np.testing.assert_array_equal(result.eigenvalues, model.eigenvalues_)
    assert (result.weights != model.weights_).nnz == 0
    assert result.n_landmarks == model.n_landmarks_ == 40
    assert result.bandwidth == model.bandwidth_ and result.bandwidth > 0
    assert result.reconstruction_error == model.reconstruction_error_
    assert result.n_connected_components == model.n_connected_components_
    assert set(result.timings) == set(model.timings_)
    assert (result.refine_result is None) == (model.refine_result_ is None) == (
        not params.get("refine", False))


def test_public_function_with_a_given_affinity_is_the_estimator_fit():
    from landmarking import locally_linear_landmarks

    X, _ = make_swiss_roll(300, random_state=22)
    W = knn_affinity(X, 8, 2.0)
    model = LocallyLinearLandmarks(n_landmarks=30, random_state=1).fit(X, affinity=W)
    result = locally_linear_landmarks(X, n_landmarks=30, random_state=1, affinity=W)
    np.testing.assert_array_equal(result.embedding, model.embedding_)
    assert result.bandwidth is None and model.bandwidth_ is None


@pytest.mark.parametrize("params", [
    {"n_landmarks": 81}, {"n_landmarks": 10, "n_landmark_neighbors": 11},
    {"bandwidth": 0.0}, {"bandwidth": "wide"}, {"method": "nystrom"},
    {"landmarks": "grid"}, {"landmarks": 3.0}, {"landmarks": np.zeros((5, 2))},
    {"reg": -1.0}, {"refine": "yes"}, {"refine": True, "method": "le-z"},
    {"refine": -1}, {"refine": 1.5}, {"refine": 2, "method": "le-nystrom"},
    {"neighbors_method": "hnsw"},
    {"n_landmarks": 3, "n_landmark_neighbors": 2, "n_components": 3},
    {"n_jobs": 0}, {"device": "tpu"},
])
def test_public_function_refuses_bad_parameters_with_the_estimator_words(params):
    from landmarking import locally_linear_landmarks

    X = np.random.default_rng(12).normal(size=(80, 3))
    params = {"n_landmarks": 20, "n_neighbors": 8, **params}
    with pytest.raises((TypeError, ValueError)) as by_estimator:
        LocallyLinearLandmarks(**params).fit(X)
    with pytest.raises(by_estimator.type) as by_function:
        locally_linear_landmarks(X, **params)
    assert str(by_function.value) == str(by_estimator.value)


@pytest.mark.parametrize("X, match", [
    (np.array([[0.0, np.nan, 1.0]] * 80), "contains NaN"),
    (np.ones((1, 3)), "minimum of 2 is required"),
    (np.ones((5, 0)), "0 feature"),
])
def test_public_function_refuses_bad_data_as_the_estimator_does(X, match):
    # The same checks (scikit-learn's check_array); its words name the estimator
    # when there is one.
    from landmarking import locally_linear_landmarks

    with pytest.raises(ValueError, match=match):
        LocallyLinearLandmarks().fit(X)
    with pytest.raises(ValueError, match=match):
        locally_linear_landmarks(X)


def test_public_function_is_exported_and_warns_at_the_caller():
    import warnings

    import landmarking
    import landmarking.lll
    from landmarking.lll.diagnostics import LandmarkSpanWarning
    from landmarking.lll.fit import locally_linear_landmarks

    assert landmarking.locally_linear_landmarks is locally_linear_landmarks
    assert "locally_linear_landmarks" in landmarking.__all__
    # One import path per name: the function at the top, its result in the package.
    assert "locally_linear_landmarks" not in landmarking.lll.__all__
    assert "LLLResult" in landmarking.lll.__all__ and "LLLResult" not in landmarking.__all__
    # Too few landmarks for 8-D noise: the warning points at the line that asked.
    X = np.random.default_rng(23).normal(size=(200, 8))
    for run in (lambda: locally_linear_landmarks(X, n_landmarks=6, n_landmark_neighbors=2,
                                                 random_state=0),
                lambda: LocallyLinearLandmarks(n_landmarks=6, n_landmark_neighbors=2,
                                               random_state=0).fit(X)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run()
        span = [w for w in caught if issubclass(w.category, LandmarkSpanWarning)]
        assert span and span[0].filename == __file__


def test_sweep_reuses_z_and_tracks_exact_minimum():
    # A wide Swiss roll, so that the two leading eigenfunctions are the roll's
    # two intrinsic directions and a ground-truth error is meaningful.
    rng = np.random.default_rng(13)
    t = 1.5 * np.pi * (1 + 2 * rng.uniform(size=600))
    h = rng.uniform(0, 60, size=600)
    X = np.column_stack([t * np.cos(t), h, t * np.sin(t)])
    truth = np.column_stack([t, h])
    T = X[select_landmarks(X, 120, random_state=0)]
    table = sweep_lll(X, bandwidths=[0.01, 1.0, 3.0, 10.0], n_neighbors=[10, 30],
                      score=truth, n_landmarks=120, landmarks=T, exact=True,
                      random_state=0)
    assert table["lll_score"].shape == (8,) and table["setup_seconds"] > 0
    best_lll = np.nanargmin(table["lll_score"])
    best_exact = np.nanargmin(table["exact_score"])
    # LLL's best setting is (nearly) exact LE's best, and the degenerate
    # setting (sigma = 0.01: every weight underflows) is NaN, not a number.
    assert table["exact_score"][best_lll] <= table["exact_score"][best_exact] + 0.1
    assert table["bandwidth"][best_lll] == table["bandwidth"][best_exact] == 3.0
    assert np.isnan(table["exact_score"][4]) and np.isnan(table["lll_score"][0])
    # Each entry is exactly what the estimator gives for that setting.
    est = LocallyLinearLandmarks(n_landmarks=1, landmarks=T, n_neighbors=30,
                                 bandwidth=3.0).fit(X)
    assert procrustes_error(est.embedding_, truth) == pytest.approx(
        table["lll_score"][6], rel=1e-6)
    assert "lll_score" in format_table(table).splitlines()[0]


def test_sweep_builds_the_estimators_graph_by_default():
    # 12,000 points of 6 features: the estimator's "auto" graph is the cells graph
    # (from 10,000 points of more than 3 features), with its 120 landmarks as the
    # cells. The sweep builds that same graph from the same random stream, so each
    # entry is the estimator's fit (without refinement) for that setting; with
    # neighbors_method="approximate" it is another graph.
    X3, t = make_swiss_roll(12_000, random_state=4)
    rng = np.random.default_rng(4)
    X = np.hstack([X3, 0.05 * rng.standard_normal((12_000, 3))])
    truth = np.column_stack([t, X3[:, 1]])
    table = sweep_lll(X, bandwidths=[2.0], n_neighbors=[6, 12], score=truth,
                      n_landmarks=120, random_state=0)
    for i, k in enumerate((6, 12)):
        est = LocallyLinearLandmarks(n_landmarks=120, n_neighbors=k, bandwidth=2.0,
                                     refine=0, random_state=0).fit(X)
        assert est.neighbors_method_ == "cells"
        # Both sides compute the same floats; the one solve runs on one BLAS thread
        # in each, so only the order of the Procrustes sums may differ.
        assert procrustes_error(est.embedding_, truth) == pytest.approx(
            table["lll_score"][i], rel=1e-9)
    other = sweep_lll(X, bandwidths=[2.0], n_neighbors=[6, 12], score=truth,
                      n_landmarks=120, neighbors_method="approximate", random_state=0)
    assert not np.array_equal(other["lll_score"], table["lll_score"])


def test_sweep_names_the_searches_it_accepts():
    X = np.random.default_rng(0).normal(size=(300, 3))
    with pytest.raises(ValueError, match="neighbors_method must be one of 'auto', 'exact', "
                                         "'approximate', 'cells'; got 'kd'"):
        sweep_lll(X, bandwidths=[1.0], n_neighbors=[8], score=lambda e: 0.0,
                  n_landmarks=30, neighbors_method="kd")


def test_sweep_embeddings_do_not_depend_on_the_thread_count():
    # The graph, Z and the affinities are the same bits on any thread count, and
    # the L x L solve runs on one BLAS thread: so are the embeddings. The score
    # (NumPy's sum, no BLAS) reads them exactly.
    from landmarking._parallel import thread_limits

    X3, _ = make_swiss_roll(12_000, random_state=5)
    X = np.hstack([X3, 0.05 * np.random.default_rng(5).standard_normal((12_000, 3))])

    def fingerprint(embedding):
        return float(np.abs(embedding).sum())

    tables = []
    for threads in (1, 2):
        with thread_limits(threads):
            tables.append(sweep_lll(X, bandwidths=[1.5, 3.0], n_neighbors=[8], score=fingerprint,
                                    n_landmarks=120, random_state=0)["lll_score"])
    np.testing.assert_array_equal(tables[0], tables[1])


@parametrize_with_checks([LocallyLinearLandmarks(n_landmarks=10, n_landmark_neighbors=3,
                                                 n_neighbors=5, random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_compiled_reduced_problem_matches_sparse_products(monkeypatch):
    rng = np.random.default_rng(14)
    X = rng.normal(size=(300, 3))
    W = knn_affinity(X, 9, 1.0)
    Z = reconstruction_weights(X, X[:40], 4)
    monkeypatch.setattr(lll_module, "REDUCED_SPARSE_MAX_WORK", 0)  # the compiled pass
    A, B = lll_module.reduced_problem(W, Z)
    monkeypatch.setattr(lll_module, "DENSE_LIMIT", 10)
    A_sp, B_sp = lll_module.reduced_problem(W, Z)
    Zd, Wd = Z.toarray(), W.toarray()
    D = np.diag(Wd.sum(axis=1))
    np.testing.assert_allclose(A, Zd.T @ (D - Wd) @ Zd, atol=1e-10)
    np.testing.assert_allclose(B, Zd.T @ D @ Zd, atol=1e-10)
    np.testing.assert_allclose(A_sp.toarray(), A, atol=1e-10)
    np.testing.assert_allclose(B_sp.toarray(), B, atol=1e-10)
    np.testing.assert_allclose(A.sum(axis=1), 0, atol=1e-10)  # A~ 1 = 0: trivial solution


def test_zero_ridge_with_singular_gram_reconstructs_exactly():
    # K_Z = D + 1 landmarks around a point in D = 2: G has rank 2 and is
    # singular; reg = 0 must still give the exact affine reconstruction.
    T = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    Z = reconstruction_weights(np.array([[0.25, 0.5]]), T, 3, reg=0.0).toarray()
    np.testing.assert_allclose(Z @ T, [[0.25, 0.5]], atol=1e-8)
    np.testing.assert_allclose(Z, [[0.25, 0.25, 0.5]], atol=1e-8)
    # 1-D: two landmarks on either side give linear interpolation.
    Z1 = reconstruction_weights(np.array([[0.5]]), np.array([[0.0], [1.0], [2.0]]), 2,
                                reg=0.0).toarray()
    np.testing.assert_allclose(Z1, [[0.5, 0.5, 0.0]], atol=1e-8)


def test_timings_cover_the_stages():
    X, _ = make_swiss_roll(600, random_state=15)
    W = knn_affinity(X, 10, 2.0)
    est = LocallyLinearLandmarks(n_landmarks=60, random_state=0).fit(X, affinity=W)
    stages = {"landmarks", "affinity", "connectivity", "weights", "reduced_problem",
              "eigensolver", "embedding"}
    assert stages | {"total"} == set(est.timings_)
    parts = sum(est.timings_[k] for k in stages)
    assert parts <= est.timings_["total"] * 1.001 + 1e-6
    built = LocallyLinearLandmarks(n_landmarks=60, n_neighbors=10, random_state=0).fit(X)
    assert "neighbors" in built.timings_


@pytest.mark.parametrize("reg", [1e-5, 1e-3, 1.0])
def test_compiled_cholesky_weights_match_lapack_solve(monkeypatch, reg):
    # The compiled path (local Gram built per point, Cholesky) against the
    # stacked LAPACK solve it replaces, K_Z above and below the dimension.
    rng = np.random.default_rng(16)
    for n_features, k in [(3, 12), (20, 8), (50, 40)]:
        X = rng.normal(size=(700, n_features))
        T = rng.normal(size=(90, n_features))
        fast = reconstruction_weights(X, T, k, reg=reg, chunk_size=256)
        monkeypatch.setattr(lll_module, "CHOLESKY_MIN_REG", np.inf)
        slow = reconstruction_weights(X, T, k, reg=reg, chunk_size=256)
        monkeypatch.undo()
        np.testing.assert_array_equal(fast.indices, slow.indices)
        scale = np.abs(slow.data).max()
        np.testing.assert_allclose(fast.data, slow.data, rtol=0, atol=1e-10 * scale)


def test_cholesky_failures_fall_back_to_lapack(monkeypatch):
    # Far from the origin the Gram trick |y|^2 - 2 y.t + |t|^2 cancels
    # catastrophically and G + r I can come out indefinite: those points must
    # get exactly the general solver's weights, the others stay finite.
    rng = np.random.default_rng(17)
    X = 3e4 + rng.normal(size=(300, 4)) * 1e-2
    T = X[:30]
    gram = T @ T.T
    idx, w = np.empty((300, 10), dtype=np.int64), np.empty((300, 10))
    failed = lll_loops.nearest_gram_weights(X @ T.T, np.einsum("ij,ij->i", X, X),
                                              np.diag(gram).copy(), gram, T, 1e-3, True,
                                              idx, w, 2)
    assert 0 < failed.sum() < 300
    # The float64 path (whose Cholesky `failed` records), with and without it.
    monkeypatch.setattr(lll_module, "RANK32_MARGIN", 10 ** 9)
    fast = reconstruction_weights(X, T, 10, reg=1e-3).toarray()
    monkeypatch.setattr(lll_module, "CHOLESKY_MIN_REG", np.inf)
    slow = reconstruction_weights(X, T, 10, reg=1e-3).toarray()
    np.testing.assert_array_equal(fast[failed], slow[failed])
    assert np.all(np.isfinite(fast))
    np.testing.assert_allclose(fast.sum(axis=1), 1.0, rtol=1e-9)


def test_compiled_nearest_landmarks_match_sorting():
    # The k nearest by |y|^2 - 2 y.t + |t|^2, nearest first, against a full
    # sort of the same NumPy expression; ties (duplicate landmarks) go to the
    # lower index.
    rng = np.random.default_rng(18)
    X = rng.normal(size=(500, 6))
    T = rng.normal(size=(80, 6))
    T[40:50] = T[:10]  # exact duplicates: tied distances
    x_sq, gram, cross = np.einsum("ij,ij->i", X, X), T @ T.T, X @ T.T
    d2 = -2 * cross + x_sq[:, None] + np.diag(gram)[None]
    assert np.any(d2[:, :10] == d2[:, 40:50])
    for k in (1, 7, 80):
        idx = np.empty((500, k), dtype=np.int64)
        failed = lll_loops.nearest_gram_weights(cross, x_sq, np.diag(gram).copy(), gram,
                                                  T, 1e-3, False, idx, np.empty((500, k)), 3)
        assert failed.all()  # without solve, every point is left to the caller
        order = np.lexsort((np.broadcast_to(np.arange(80), d2.shape), d2), axis=1)
        np.testing.assert_array_equal(idx, order[:, :k])


def test_reduced_problem_upper_triangle_with_self_loops_and_unsorted_rows(monkeypatch):
    # The compiled pass reads only the upper triangle of W (diagonal halved):
    # self-loops and unsorted column indices must still give Z^T (D - W) Z.
    monkeypatch.setattr(lll_module, "REDUCED_SPARSE_MAX_WORK", 0)  # the compiled pass
    rng = np.random.default_rng(19)
    X = rng.normal(size=(250, 3))
    W = knn_affinity(X, 8, 1.0).tolil()
    W.setdiag(rng.uniform(0.5, 1.0, 250))
    W = W.tocsr()
    for r in range(W.shape[0]):  # reverse each row's stored order
        lo, hi = W.indptr[r], W.indptr[r + 1]
        W.indices[lo:hi] = W.indices[lo:hi][::-1].copy()
        W.data[lo:hi] = W.data[lo:hi][::-1].copy()
    W.has_sorted_indices = False
    Z = reconstruction_weights(X, X[:30], 4)
    A, B = lll_module.reduced_problem(W, Z)
    Zd, Wd = Z.toarray(), W.toarray()
    D = np.diag(Wd.sum(axis=1))
    np.testing.assert_allclose(A, Zd.T @ (D - Wd) @ Zd, atol=1e-10)
    np.testing.assert_allclose(B, Zd.T @ D @ Zd, atol=1e-10)
    assert np.abs(Zd.T @ np.diag(np.diag(Wd)) @ Zd).max() > 0.1  # the loops matter


def test_compiled_loops_do_not_depend_on_the_thread_count():
    # The parts are fixed and summed in order; threads only run them.
    rng = np.random.default_rng(19)
    X = rng.normal(size=(700, 3))
    T = X[:50]
    gram = T @ T.T
    cross, x_sq = X @ T.T, np.einsum("ij,ij->i", X, X)
    out = []
    for n_parts in (1, 3):
        idx, w = np.empty((700, 6), dtype=np.int64), np.empty((700, 6))
        failed = lll_loops.nearest_gram_weights(cross, x_sq, np.diag(gram).copy(), gram,
                                                  T, 1e-3, True, idx, w, n_parts)
        out.append((failed, idx, w))
    for a, b in zip(*out, strict=True):
        np.testing.assert_array_equal(a, b)
    # Without the Gram matrix (above GRAM_LIMIT landmarks) t_a.t_b are dot products
    # of the landmarks' rows: the same landmarks, the same weights to rounding.
    idx, w = np.empty((700, 6), dtype=np.int64), np.empty((700, 6))
    failed = lll_loops.nearest_gram_weights(cross, x_sq, np.diag(gram).copy(),
                                              np.empty((0, 0)), T, 1e-3, True, idx, w, 2)
    np.testing.assert_array_equal(failed, out[0][0])
    np.testing.assert_array_equal(idx, out[0][1])
    np.testing.assert_allclose(w, out[0][2], rtol=0, atol=1e-12 * np.abs(w).max())
    W = knn_affinity(X, 9, 1.0)
    Z = reconstruction_weights(X, T, 6)
    k = 6
    args = (W.indptr, W.indices, W.data, np.asarray(W.sum(axis=1)).ravel(),
            Z.indices.reshape(-1, k), Z.data.reshape(-1, k), 50, 4)
    B1, H1 = lll_loops.reduced_dense(*args, n_threads=1)
    B3, H3 = lll_loops.reduced_dense(*args, n_threads=3)
    np.testing.assert_array_equal(B1, B3)
    np.testing.assert_array_equal(H1, H3)
    Zd = Z.toarray()
    np.testing.assert_allclose(B1, Zd.T @ np.diag(args[3]) @ Zd, atol=1e-12)


def test_sparse_input_gives_the_dense_fit():
    from scipy import sparse

    X, _ = make_swiss_roll(800, random_state=3)
    X = np.column_stack([X - X.min(axis=0), np.where(np.arange(800) % 5 == 0, 0.2, 0.0)])
    dense = LocallyLinearLandmarks(n_landmarks=60, random_state=0).fit(X)
    csr = LocallyLinearLandmarks(n_landmarks=60, random_state=0).fit(sparse.csr_matrix(X))
    np.testing.assert_array_equal(csr.landmark_indices_, dense.landmark_indices_)
    np.testing.assert_array_equal(csr.weights_.indices, dense.weights_.indices)
    # Distances from scipy's sparse product instead of BLAS: round-off only.
    np.testing.assert_allclose(csr.embedding_, dense.embedding_, atol=1e-8)
    np.testing.assert_allclose(csr.transform(sparse.csr_matrix(X[:50])), dense.transform(X[:50]),
                               atol=1e-8)


def _reference_weights(X, T, k, reg=1e-3):
    """The slow reference: the vectorised NumPy weights that small K_Z used before
    issue 25 (a partial sort of the Gram-trick distances, a stacked LAPACK solve)."""
    X = X.astype(np.float64)
    cross, x_sq, t_sq = X @ T.T, np.einsum("ij,ij->i", X, X), np.einsum("ij,ij->i", T, T)
    idx = lll_module._nearest_landmarks(cross, x_sq, t_sq, k)
    c = np.take_along_axis(cross, idx, axis=1)
    return idx, local_affine_weights(lll_module._local_gram(x_sq, c, T @ T.T, idx), reg)


@pytest.mark.parametrize("k", [1, 3, 5])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_compiled_weights_for_small_k_match_the_numpy_reference(k, dtype):
    # Every K_Z goes through the compiled loop (issue 25): the same landmarks,
    # nearest first with ties to the lower index, and the same weights to
    # rounding as the NumPy reference, with many passes (a small chunk_size).
    rng = np.random.default_rng(20)
    X = rng.normal(size=(600, 4)).astype(dtype)
    T = rng.normal(size=(70, 4))
    T[40:50] = T[:10]  # exact duplicates: tied distances
    compiled = reconstruction_weights(X, T, k, chunk_size=128)
    idx, w = _reference_weights(X, T, k)
    np.testing.assert_array_equal(compiled.indices.reshape(600, k), idx)
    np.testing.assert_allclose(compiled.data.reshape(600, k), w, rtol=0,
                               atol=1e-10 * np.abs(w).max())
    d2 = -2 * (X @ T.T) + np.einsum("ij,ij->i", X, X)[:, None] + np.einsum("ij,ij->i", T, T)
    order = np.lexsort((np.broadcast_to(np.arange(70), d2.shape), d2), axis=1)[:, :k]
    X64 = X.astype(np.float64)
    np.testing.assert_array_equal(
        lll_module._nearest_landmarks(X64 @ T.T, np.einsum("ij,ij->i", X64, X64),
                                      np.einsum("ij,ij->i", T, T), k), order)


def test_compiled_weights_on_digits_match_the_numpy_reference(data_dir):
    # Real data at the default K_Z = 5: 2,000 digits, 300 landmarks among them
    # (points that are landmarks reconstruct from themselves).
    from landmarking.datasets import load_mnist

    X = load_mnist(data_dir)[0][:2000]
    T = X[::7].astype(np.float64)
    compiled = reconstruction_weights(X, T, 5)
    idx, w = _reference_weights(X, T, 5)
    np.testing.assert_array_equal(compiled.indices.reshape(2000, 5), idx)
    np.testing.assert_allclose(compiled.data.reshape(2000, 5), w, rtol=0, atol=1e-9)


def test_small_reduced_problem_by_sparse_products_matches_the_compiled_pass(monkeypatch):
    rng = np.random.default_rng(23)
    X = rng.normal(size=(400, 3))
    W = knn_affinity(X, 8, 1.0)
    Z = reconstruction_weights(X, X[:50], 5)
    A, B = lll_module.reduced_problem(W, Z)  # small: sparse products
    monkeypatch.setattr(lll_module, "REDUCED_SPARSE_MAX_WORK", 0)
    A_c, B_c = lll_module.reduced_problem(W, Z)
    assert isinstance(A, np.ndarray) and isinstance(A_c, np.ndarray)
    np.testing.assert_allclose(A, A_c, rtol=0, atol=1e-12 * np.abs(A_c).max())
    np.testing.assert_allclose(B, B_c, rtol=0, atol=1e-12 * np.abs(B_c).max())


def test_backend_on_the_cpu_is_the_numpy_path():
    from landmarking.lll._cpu import reduced_problem
    from landmarking.lll.backend import lll_backend
    from landmarking.lll.out_of_sample import lll_map_rows

    backend = lll_backend("cpu")
    assert backend.weights is reconstruction_weights
    assert backend.reduced_problem is reduced_problem
    assert backend.out_of_sample is lll_map_rows


def test_local_affine_weights_is_the_constrained_least_squares_fit():
    rng = np.random.default_rng(40)
    Y, T = rng.normal(size=(6, 3)), rng.normal(size=(6, 4, 3))
    diff = Y[:, None, :] - T
    w = local_affine_weights(diff @ diff.transpose(0, 2, 1), 1e-12)
    np.testing.assert_allclose(w.sum(axis=1), 1.0, atol=1e-12)
    for n in range(6):
        np.testing.assert_allclose(w[n], _constrained_lstsq(Y[n], T[n]), atol=1e-7)


def test_graph_spectral_and_lll_modules_import_downward():
    # Every import of these packages, at the top or inside a function, makes no circle.
    import ast
    from pathlib import Path

    import landmarking

    root = Path(landmarking.__file__).parent
    # The packages' __init__ only name their exports, for static tools (TYPE_CHECKING).
    files = [root / "graph.py", *(f for f in [*root.glob("lll/*.py"), *root.glob("spectral/*.py")]
                                  if f.name != "__init__.py")]
    names = {f: ".".join(f.relative_to(root.parent).with_suffix("").parts).removesuffix(
        ".__init__") for f in files}
    modules = set(names.values())
    edges = {}
    for f, name in names.items():
        package = name if f.name == "__init__.py" else name.rsplit(".", 1)[0]
        targets = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
                targets |= {f"{module}.{a.name}" if f"{module}.{a.name}" in modules
                            else module for a in node.names}
        edges[name] = targets & modules - {name}

    def reaches(start, goal, seen):
        return any(t == goal or (t not in seen and not seen.add(t) and reaches(t, goal, seen))
                   for t in edges[start])

    assert [n for n in edges if reaches(n, n, set())] == []


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_compiled_reconstruction_residuals_match_numpy_on_any_thread_count(dtype):
    from landmarking.lll._loops import reconstruction_residuals
    from landmarking.lll.diagnostics import landmark_reconstruction_error

    rng = np.random.default_rng(24)
    X = rng.normal(size=(500, 6)).astype(dtype)
    T = rng.normal(size=(40, 6))
    Z = reconstruction_weights(X, T, 4)
    want = ((X.astype(np.float64) - Z @ T) ** 2).sum(axis=1)
    one = reconstruction_residuals(X, T, Z.indptr, Z.indices, Z.data, n_threads=1)
    np.testing.assert_allclose(one, want, rtol=1e-12)
    np.testing.assert_array_equal(
        reconstruction_residuals(X, T, Z.indptr, Z.indices, Z.data, n_threads=3), one)
    X64 = X.astype(np.float64)
    spread = ((X64 - X64.mean(axis=0)) ** 2).sum()
    assert landmark_reconstruction_error(X, Z, T) == pytest.approx(
        np.sqrt(want.sum() / spread), rel=1e-12)


# --------------------------------------------------------------------------- float32 ranking

def _float64_path(monkeypatch, X, T, k, **kw):
    """The weights with the float32 ranking off: one float64 product per pass."""
    with monkeypatch.context() as m:
        m.setattr(lll_module, "RANK32_MARGIN", 10 ** 9)
        return reconstruction_weights(X, T, k, **kw)


def _spy_ranked(monkeypatch):
    """Record the float32 ranking's status counts (0/2 proved, 1 left to float64)."""
    counts = []
    ranked = lll_loops.bounded_candidate_weights

    def spy(*args):
        ranked(*args)
        counts.append(np.bincount(args[-2], minlength=3))

    monkeypatch.setattr(lll_loops, "bounded_candidate_weights", spy)
    return counts


def _brute_force_weights(X, T, k, reg):
    """Slow reference: exact distances from differences, ties to the lower index,
    and one np.linalg.solve per point."""
    X = X.astype(np.float64)
    idx = np.empty((len(X), k), dtype=np.int64)
    w = np.empty((len(X), k))
    for i, y in enumerate(X):
        d2 = ((y - T) ** 2).sum(axis=1)
        idx[i] = np.lexsort((np.arange(len(T)), d2))[:k]
        diff = y - T[idx[i]]
        G = diff @ diff.T
        trace = np.trace(G)
        r = max(reg, 1e-12) * trace if trace > 0 else max(reg, 1e-12)
        z = np.linalg.solve(G + r * np.eye(k), np.ones(k))
        w[i] = z / z.sum()
    return idx, w


def _tied_data(dtype, rng):
    """Points with exactly tied landmarks: duplicates, and mirror images across
    the first coordinate (equidistant from points whose first coordinate is 0)."""
    T = rng.normal(size=(120, 20))
    T[60:70] = T[:10]  # duplicates
    T[100:110] = T[10:20]
    T[100:110, 0] *= -1  # mirrors of 10..19
    X = rng.normal(size=(600, 20))
    X[:100] = T[10:20].repeat(10, axis=0) + 0.3 * rng.normal(size=(100, 20))
    X[:100, 0] = 0.0  # equidistant from landmark 10 + j and its mirror 100 + j
    X[100:200] = T[:10].repeat(10, axis=0) + 0.3 * rng.normal(size=(100, 20))
    return X.astype(dtype), T


@pytest.mark.parametrize("reg", [1e-3, 1e-6])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_float32_ranking_gives_the_float64_choice_and_weights(monkeypatch, dtype, reg):
    rng = np.random.default_rng(31)
    X, T = _tied_data(dtype, rng)
    ref = _float64_path(monkeypatch, X, T, 5, reg=reg, chunk_size=256)
    counts = _spy_ranked(monkeypatch)
    fast = reconstruction_weights(X, T, 5, reg=reg, chunk_size=256)
    total = np.sum(counts, axis=0)
    assert total.sum() == 600 and total[1] == 0  # every row ranked in float32, proved
    idx = fast.indices.reshape(600, 5)
    np.testing.assert_array_equal(idx, ref.indices.reshape(600, 5))
    # The ties are there and went to the lower index, next to each other.
    pairs = 0
    mirrors, duplicates = [(j, j + 90) for j in range(10, 20)], [(j, j + 60) for j in range(10)]
    for i, row in enumerate(idx):
        for a, b in duplicates + (mirrors if i < 100 else []):
            if a in row and b in row:
                pairs += 1
                assert np.flatnonzero(row == b)[0] == np.flatnonzero(row == a)[0] + 1
    assert pairs >= 150
    scale = np.abs(ref.data).max()
    # Rounding in the cross products, amplified by the local systems' condition
    # number (up to about 1/reg).
    np.testing.assert_allclose(fast.data, ref.data, rtol=0,
                               atol=(1e-13 if reg >= 1e-3 else 1e-10) * scale)
    b_idx, b_w = _brute_force_weights(X, T, 5, reg)
    np.testing.assert_array_equal(idx, b_idx)
    np.testing.assert_allclose(fast.data.reshape(600, 5), b_w, rtol=0,
                               atol=(1e-9 if reg < 1e-5 else 1e-11) * scale)


@pytest.mark.parametrize("reg", [1e-3, 1e-6])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_tree_search_of_few_features_gives_the_brute_force_choice_and_weights(
        monkeypatch, dtype, reg):
    # 3 features: the landmarks' KD-tree finds each point's nearest, not the
    # scan. Duplicate landmarks and mirror images make exact ties, also at the
    # K_Z-th place, which go to the lower index as in every other path.
    from landmarking._parallel import thread_limits

    rng = np.random.default_rng(33)
    T = rng.normal(size=(150, 3))
    T[60:70] = T[:10]  # duplicates
    T[100:110] = T[10:20]
    T[100:110, 0] *= -1  # mirrors of 10..19 across the first coordinate
    X = rng.normal(size=(900, 3))
    X[:300] = T[10:20].repeat(30, axis=0) + 0.3 * rng.normal(size=(300, 3))
    X[:300, 0] = 0.0  # equidistant from landmark 10 + j and its mirror 100 + j
    X[300:400] = T[:10].repeat(10, axis=0)  # on a duplicated landmark
    X = X.astype(dtype)
    assert lll_module._LocalMap(T, 5, reg, 3, 256).tree is not None
    counts = _spy_ranked(monkeypatch)
    with thread_limits(1):
        one = reconstruction_weights(X, T, 5, reg=reg, chunk_size=256)
    with thread_limits(2):
        fast = reconstruction_weights(X, T, 5, reg=reg, chunk_size=256)
    assert counts == []  # the scan never ran
    # Each row's result depends on that row alone: the same bits on any threads.
    np.testing.assert_array_equal(fast.indices, one.indices)
    np.testing.assert_array_equal(fast.data, one.data)
    b_idx, b_w = _brute_force_weights(X, T, 5, reg)
    np.testing.assert_array_equal(fast.indices.reshape(-1, 5), b_idx)
    # Cholesky against LU on the same Gram matrices from the differences: the
    # rounding of either, amplified by the condition number (about 1/reg).
    scale = np.abs(b_w).max()
    np.testing.assert_allclose(fast.data.reshape(-1, 5), b_w, rtol=0,
                               atol=(1e-9 if reg < 1e-5 else 1e-11) * scale)


@pytest.mark.parametrize("k", [1, 5, 30])
def test_float32_ranking_against_brute_force_on_digits(monkeypatch, k, data_dir):
    # 784 pixels: the scan runs on the landmarks' leading axes plus the residual
    # norms, a looser bound than all the features; rows it does not prove with
    # the candidates take more exact distances, a few the float64 path; every
    # answer is the brute force's.
    from landmarking.datasets import load_mnist

    X = load_mnist(data_dir)[0][:1500]
    T = X[1500 - 200:].astype(np.float64)[::2]  # 100 landmarks, not among the points
    local = lll_module._LocalMap(T, k, 1e-3, X.shape[1], 8192)
    assert local.axes.projects and local.axes.axes.shape[0] < 784 // 2
    counts = _spy_ranked(monkeypatch)
    fast = reconstruction_weights(X, T, k)
    assert np.sum(counts, axis=0)[1] <= 0.05 * len(X)
    ref = _float64_path(monkeypatch, X, T, k)
    np.testing.assert_array_equal(fast.indices, ref.indices)
    np.testing.assert_allclose(fast.data, ref.data, rtol=0,
                               atol=1e-13 * np.abs(ref.data).max())
    b_idx, b_w = _brute_force_weights(X, T, k, 1e-3)
    np.testing.assert_array_equal(fast.indices.reshape(-1, k), b_idx)
    np.testing.assert_allclose(fast.data.reshape(-1, k), b_w, rtol=0, atol=1e-10)


def test_projected_scan_against_brute_force_with_many_landmarks(data_dir):
    # 1,000 landmarks among 3,000 digits (points that are landmarks choose
    # themselves first), float32 landmarks read from the float32 copy.
    from landmarking.datasets import load_mnist

    X = load_mnist(data_dir)[0][:3000]
    T = X[::3].astype(np.float64)
    Z = reconstruction_weights(X, T, 5)
    b_idx, b_w = _brute_force_weights(X, T, 5, 1e-3)
    np.testing.assert_array_equal(Z.indices.reshape(-1, 5), b_idx)
    np.testing.assert_allclose(Z.data.reshape(-1, 5), b_w, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(b_idx[::3, 0], np.arange(1000))


def _low_rank_rows(rng, n, n_features=200, rank=10):
    """Rows near a rank-``rank`` subspace of ``n_features`` dimensions, so that the
    scan runs on the landmarks' leading axes."""
    basis = rng.normal(size=(rank, n_features))
    return rng.normal(size=(n, rank)) @ basis + 0.3 * rng.normal(size=(n, n_features))


def test_scan_passes_run_at_once_with_the_same_bits():
    # A block of many passes (chunk_size 128): after the first pass, the passes
    # run one per thread. Each row's result depends on that row alone, so the
    # bits are those of one thread, and the choice the brute force's.
    from landmarking._parallel import thread_limits

    rng = np.random.default_rng(41)
    X = _low_rank_rows(rng, 3000)
    T = X[::20].copy()
    assert lll_module._LocalMap(T, 5, 1e-3, X.shape[1], 128).axes.projects
    with thread_limits(1):
        one = reconstruction_weights(X, T, 5, chunk_size=128)
    with thread_limits(2):
        two = reconstruction_weights(X, T, 5, chunk_size=128)
    np.testing.assert_array_equal(two.indices, one.indices)
    np.testing.assert_array_equal(two.data, one.data)
    b_idx, b_w = _brute_force_weights(X, T, 5, 1e-3)
    np.testing.assert_array_equal(two.indices.reshape(-1, 5), b_idx)
    # Cholesky against LU, on Gram matrices from the centred rows against ones
    # from the differences: rounding, times the condition number (<= 1/reg).
    np.testing.assert_allclose(two.data.reshape(-1, 5), b_w, rtol=0,
                               atol=1e-11 * np.abs(b_w).max())


def test_scan_gives_up_after_an_unproved_first_pass(monkeypatch):
    # A first pass whose rows the scan cannot prove (here: made to fail) hands
    # the whole block to the float64 path, which then gives every row its
    # weights: the same as with the scan switched off.
    rng = np.random.default_rng(42)
    X = _low_rank_rows(rng, 1000)
    T = X[::10].copy()
    ref = _float64_path(monkeypatch, X, T, 5, chunk_size=128)
    scanned, redone = [], []
    bounded, gram = lll_module._bounded_weights, lll_module._gram_weights

    def unproved(block, *args):
        scanned.append(len(block))
        return np.arange(len(block))  # nothing set: every row left to float64

    def counted(block, *args):
        redone.append(block.shape[0])
        return gram(block, *args)

    monkeypatch.setattr(lll_module, "_bounded_weights", unproved)
    monkeypatch.setattr(lll_module, "_gram_weights", counted)
    Z = reconstruction_weights(X, T, 5, chunk_size=128)
    assert scanned == [128] and sum(redone) == 1000
    np.testing.assert_array_equal(Z.indices, ref.indices)
    np.testing.assert_array_equal(Z.data, ref.data)
    monkeypatch.setattr(lll_module, "_bounded_weights", bounded)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("offset", [0.0, 1e3])
@pytest.mark.parametrize("n_features", [8, 200])
def test_scan_lower_bounds_hold_as_computed(dtype, offset, n_features):
    # LB - err never exceeds the exact squared distance, on the axes (200
    # features, low-rank data plus noise) and without them (8 features), near
    # the origin and far from it; and the bound is not vacuous.
    rng = np.random.default_rng(38)
    basis = rng.normal(size=(10, n_features))
    T = offset + rng.normal(size=(300, 10)) @ basis + 0.3 * rng.normal(size=(300, n_features))
    X = (offset + rng.normal(size=(400, 10)) @ basis
         + 0.3 * rng.normal(size=(400, n_features))).astype(dtype)
    axes = lll_module._LandmarkAxes(T)
    assert axes.projects == (n_features == 200)
    Y, y_sq, eps = axes.coordinates(X.astype(np.float64) - axes.centre)
    coef, slack, floor, _ = axes.bound
    cross = (Y.astype(np.float32) @ axes.s32.T).astype(np.float64)
    lb = y_sq[:, None] + axes.s_sq[None] - 2 * cross
    yn, sn = np.sqrt(y_sq)[:, None], np.sqrt(axes.s_sq)[None]
    err = (coef * yn * sn + slack * (yn + sn) ** 2 + floor * (1 + yn + sn)
           + eps[:, None] + axes.eps[None])
    X64 = X.astype(np.float64)
    exact = ((X64[:, None, :] - T[None]) ** 2).sum(axis=2)
    assert np.all(lb - err <= exact)
    assert np.median(lb / exact) > 0.5


@pytest.mark.parametrize("k", [12, 40])
def test_float32_ranking_is_skipped_when_every_landmark_is_a_candidate(monkeypatch, k):
    # K_Z + RANK32_MARGIN >= n_landmarks (K_Z = n_landmarks included): nothing
    # to leave out, so the float64 path, which the brute force confirms.
    rng = np.random.default_rng(32)
    X = rng.normal(size=(300, 6)).astype(np.float32)
    T = rng.normal(size=(k if k == 40 else 18, 6))
    counts = _spy_ranked(monkeypatch)
    Z = reconstruction_weights(X, T, k)
    assert counts == []
    b_idx, b_w = _brute_force_weights(X, T, k, 1e-3)
    np.testing.assert_array_equal(Z.indices.reshape(300, k), b_idx)
    np.testing.assert_allclose(Z.data.reshape(300, k), b_w, rtol=0, atol=1e-9)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_float32_ranking_far_from_the_origin_and_its_fallback(monkeypatch, dtype):
    # Far from the origin |y| |t| would dwarf the gaps between distances; the scan
    # works on data less the landmarks' mean, so it proves every row there, and
    # its local Gram matrices, from the same centred rows, keep their digits: its
    # weights are the brute force's to 1e-9, where the float64 path's Gram trick
    # cancels (7e-7 to 9e-7 here). A bound that proves nothing (forced) sends
    # every row to the float64 path, and a pass that proved too little gives the
    # scan up for the rest of its block.
    rng = np.random.default_rng(33)
    X = (1e4 + rng.normal(size=(500, 8))).astype(dtype)
    T = X[:40].astype(np.float64) + rng.normal(size=(40, 8)) * 1e-3
    ref = _float64_path(monkeypatch, X, T, 4, chunk_size=100)
    counts = _spy_ranked(monkeypatch)
    Z = reconstruction_weights(X, T, 4, chunk_size=100)
    assert len(counts) == 5 and np.sum(counts, axis=0)[1] == 0
    np.testing.assert_array_equal(Z.indices, ref.indices)
    b_idx, b_w = _brute_force_weights(X, T, 4, 1e-3)
    np.testing.assert_array_equal(Z.indices.reshape(-1, 4), b_idx)
    np.testing.assert_allclose(Z.data.reshape(-1, 4), b_w, rtol=0, atol=1e-9)
    assert np.abs(ref.data.reshape(-1, 4) - b_w).max() > 1e-7  # the float64 path's
    bound = lll_module._float32_rank_bound
    monkeypatch.setattr(lll_module, "_float32_rank_bound",
                        lambda n: (1e30, *bound(n)[1:]))
    monkeypatch.setattr(lll_module, "MAX_EXTRA_SHARE", 0.0)
    gram_rows = []
    gram_weights = lll_module._gram_weights

    def spy(Xc, *args):
        gram_rows.append(len(Xc))
        gram_weights(Xc, *args)

    monkeypatch.setattr(lll_module, "_gram_weights", spy)
    counts.clear()
    fast = reconstruction_weights(X, T, 4, chunk_size=100)
    # The 500 rows are one block: its first pass left every row unproved, so the
    # scan gave way to the float64 path for the rest of the block.
    assert len(counts) == 1 and counts[0][1] == 100
    assert gram_rows == [100] * 5
    np.testing.assert_array_equal(fast.indices, ref.indices)
    np.testing.assert_array_equal(fast.data, ref.data)
    # The same, one block of 500 rows given to _weights_of_block directly (a
    # large Dask or Zarr chunk).
    counts.clear()
    gram_rows.clear()
    local = lll_module._LocalMap(T, 4, 1e-3, 8, 100)
    assert local.axes is not None and local.chunk_rows == 100
    idx, w = lll_module._weights_of_block(X, local)
    assert len(counts) == 1 and counts[0][1] == 100
    assert gram_rows == [100] * 5
    np.testing.assert_array_equal(idx.ravel(), ref.indices)
    np.testing.assert_array_equal(w.ravel(), ref.data)


def test_float32_ranking_fallback_rows_mixed_with_proved_ones(monkeypatch):
    # Rows the kernel leaves unproved (marked here, a few per pass) get the
    # float64 answer next to the proved ones, and a few in many keep the scan on.
    rng = np.random.default_rng(34)
    T = rng.normal(size=(60, 5))
    X = rng.normal(size=(400, 5))
    kernel = lll_loops.bounded_candidate_weights
    calls = []

    def unprove_some(*args):
        kernel(*args)
        status = args[-2]
        status[::50] = 1
        calls.append(len(status))

    monkeypatch.setattr(lll_loops, "bounded_candidate_weights", unprove_some)
    fast = reconstruction_weights(X, T, 3, chunk_size=200)
    assert calls == [200, 200]  # both passes scanned
    ref = _float64_path(monkeypatch, X, T, 3, chunk_size=200)
    np.testing.assert_array_equal(fast.indices, ref.indices)
    np.testing.assert_allclose(fast.data, ref.data, rtol=0, atol=1e-13 * np.abs(ref.data).max())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("offset", [0.0, 1e3, 1e-20])
def test_float32_ranking_error_bound_holds(dtype, offset):
    # The bound of _float32_rank_bound against float32 distances on data of
    # several scales: |d32 - |y - t|^2| never exceeds it.
    rng = np.random.default_rng(35)
    n = 300
    scale = offset if offset else 1.0
    X = (offset + scale * rng.normal(size=(200, n))).astype(dtype)
    T = offset + scale * rng.normal(size=(50, n))
    coef, slack, floor, _ = lll_module._float32_rank_bound(n)
    X64 = X.astype(np.float64)
    d32 = (np.einsum("ij,ij->i", X64, X64)[:, None] + np.einsum("ij,ij->i", T, T)
           - 2.0 * (X.astype(np.float32) @ T.astype(np.float32).T).astype(np.float64))
    exact = ((X64[:, None, :] - T[None]) ** 2).sum(axis=2)
    xn, tn = np.linalg.norm(X64, axis=1)[:, None], np.linalg.norm(T, axis=1)[None]
    err = (coef * xn * tn + slack * (xn ** 2 + tn ** 2 + 2 * xn * tn)
           + floor * (1 + xn + tn))
    ratio = np.abs(d32 - exact) / err
    assert ratio.max() <= 1.0
    assert ratio.max() > 1e-4  # and it is not vacuous


def test_compiled_reduced_problem_does_not_depend_on_the_parts():
    # Each part owns rows of B~ and H and adds the points in their order: the
    # same bits for any number of parts, and the dense formula to rounding.
    rng = np.random.default_rng(36)
    X = rng.normal(size=(600, 3))
    W = knn_affinity(X, 9, 1.0)
    Z = reconstruction_weights(X, X[:70], 5)
    deg = np.asarray(W.sum(axis=1)).ravel()
    out = [lll_loops.reduced_dense(W.indptr, W.indices, W.data, deg,
                                     Z.indices.reshape(-1, 5), Z.data.reshape(-1, 5), 70,
                                     n_parts, n_threads=2)
           for n_parts in (1, 3, 8)]
    for B, H in out[1:]:
        np.testing.assert_array_equal(B, out[0][0])
        np.testing.assert_array_equal(H, out[0][1])
    Zd, Wd = Z.toarray(), W.toarray()
    B, H = out[0]
    np.testing.assert_allclose(B, Zd.T @ np.diag(deg) @ Zd, rtol=0, atol=1e-12 * np.abs(B).max())
    np.testing.assert_allclose(H + H.T, Zd.T @ Wd @ Zd, rtol=0,
                               atol=1e-12 * np.abs(H).max())


def test_float32_ranking_does_not_depend_on_the_thread_count(monkeypatch):
    # On several threads each makes its own float32 product (BLAS limited to
    # one thread) and runs the compiled loop on its rows: the same bits.
    from landmarking._parallel import thread_limits

    rng = np.random.default_rng(37)
    X = rng.normal(size=(900, 30)).astype(np.float32)
    T = rng.normal(size=(80, 30))
    counts = _spy_ranked(monkeypatch)
    out = []
    for threads in (1, 2):
        with thread_limits(threads):
            out.append(reconstruction_weights(X, T, 6, chunk_size=300))
    assert len(counts) == 6 and np.sum(counts, axis=0)[1] == 0
    np.testing.assert_array_equal(out[0].indices, out[1].indices)
    np.testing.assert_array_equal(out[0].data, out[1].data)


# --------------------------------------------------------------------------- many landmarks

def _many_landmark_problem():
    rng = np.random.default_rng(41)
    X, _ = make_swiss_roll(1500, random_state=41)
    X = X + 0.05 * rng.normal(size=X.shape)
    W = knn_affinity(X, 10, 2.0)
    Z = reconstruction_weights(X, X[::5], 5)
    return W, Z


def test_sparse_reduced_problem_matches_the_dense_one_in_any_grouping(monkeypatch):
    # Above DENSE_LIMIT landmarks A~ and B~ come a group of rows at a time as CSR
    # matrices: the dense formula to rounding, and the same bits for any group
    # size (scikit-learn's working_memory sizes the groups) and thread count.
    from sklearn import config_context

    from landmarking._parallel import thread_limits

    W, Z = _many_landmark_problem()
    A_dense, B_dense = lll_module.reduced_problem(W, Z)
    monkeypatch.setattr(lll_module, "DENSE_LIMIT", 50)
    A, B = lll_module.reduced_problem(W, Z)
    assert sparse.issparse(A) and sparse.issparse(B)
    np.testing.assert_allclose(A.toarray(), A_dense, rtol=0, atol=1e-12 * np.abs(A_dense).max())
    np.testing.assert_allclose(B.toarray(), B_dense, rtol=0, atol=1e-12 * np.abs(B_dense).max())
    assert abs(A - A.T).max() == 0 and abs(B - B.T).max() == 0
    for memory, threads in ((0.05, 1), (0.2, 2)):  # MiB: groups of 10 and 43 rows
        with config_context(working_memory=memory), thread_limits(threads):
            A2, B2 = lll_module.reduced_problem(W, Z)
        assert (A2 != A).nnz == 0 and (B2 != B).nnz == 0


def _lobpcg_verdicts(monkeypatch):
    """A list that records, for each LOBPCG solve of a reduced problem, whether its
    answer was accepted (``_lobpcg_reduced`` gave one) or sent on to ARPACK."""
    verdicts = []
    lobpcg_reduced = lll_module._lobpcg_reduced

    def spy(*args):
        solved = lobpcg_reduced(*args)
        verdicts.append(solved is not None)
        return solved

    monkeypatch.setattr(lll_module, "_lobpcg_reduced", spy)
    return verdicts


def test_lobpcg_on_the_sparse_reduced_problem_matches_lapack(monkeypatch):
    # LOBPCG with the constant kept out gives LAPACK's eigenvalues and the same
    # eigenvector subspaces; when it does not converge (forced) shift-invert
    # ARPACK takes over with the same answer.
    W, Z = _many_landmark_problem()
    A, B = lll_module.reduced_problem(W, Z)
    want_v, want = lll_module.solve_reduced_problem(A, B, 4)
    A_s, B_s = sparse.csr_matrix(A), sparse.csr_matrix(B)
    converged = _lobpcg_verdicts(monkeypatch)
    for max_iter in (lll_module.LOBPCG_MAX_ITER, 1):
        monkeypatch.setattr(lll_module, "LOBPCG_MAX_ITER", max_iter)
        got_v, got = lll_module.solve_reduced_problem(A_s, B_s, 4, random_state=0)
        np.testing.assert_allclose(got, want, rtol=1e-8)
        np.testing.assert_allclose(got_v.T @ B @ got_v, np.eye(4), atol=1e-8)
        # The same subspace: the B-projection of one basis on the other is orthogonal.
        overlap = want_v.T @ B @ got_v
        np.testing.assert_allclose(np.abs(np.linalg.svd(overlap)[1]), 1.0, atol=1e-6)
    assert converged == [True, False]


def test_lobpcg_stopped_short_of_its_tolerance_is_not_accepted(monkeypatch):
    # After 200 iterations (it converges after about 330 here) LOBPCG says it did not
    # reach its tolerance, though its relative residuals are below 1e-6, which were
    # once accepted: its verdict now sends the problem to shift-invert ARPACK, whose
    # answer is LAPACK's to ARPACK's own accuracy (tolerance 0: machine precision).
    W, Z = _many_landmark_problem()
    A, B = lll_module.reduced_problem(W, Z)
    _, want = lll_module.solve_reduced_problem(A, B, 4)
    verdicts = _lobpcg_verdicts(monkeypatch)
    monkeypatch.setattr(lll_module, "LOBPCG_MAX_ITER", 200)
    _, got = lll_module.solve_reduced_problem(sparse.csr_matrix(A), sparse.csr_matrix(B), 4,
                                              random_state=0)
    assert verdicts == [False]
    np.testing.assert_allclose(got, want, rtol=1e-8)


def test_refine_with_a_number_of_iterations(data_dir):
    # refine=k takes k LOBPCG iterations on the full graph from the LLL start: the
    # eigenvalues fall from LLL's towards exact LE's (Rayleigh-Ritz on a growing
    # subspace never raises them); refine=0 is no refinement, bit for bit; the
    # landmark coordinates follow, so that transform maps into the refined
    # embedding.
    from landmarking.datasets import load_mnist

    X = load_mnist(data_dir)[0][:4000]
    kw = dict(n_components=4, n_landmarks=150, random_state=0)
    base = LocallyLinearLandmarks(**kw).fit(X)
    zero = LocallyLinearLandmarks(**kw, refine=0).fit(X)
    np.testing.assert_array_equal(zero.embedding_, base.embedding_)
    assert zero.refine_result_ is None and "refine" not in zero.timings_
    with warnings.catch_warnings():
        # A set number of iterations is not meant to converge: no warning says so.
        warnings.simplefilter("error", ConvergenceWarning)
        few = LocallyLinearLandmarks(**kw, refine=3).fit(X)
    full = LocallyLinearLandmarks(**kw, refine=True).fit(X)
    exact = LaplacianEigenmaps(n_components=4, random_state=0).fit(X)
    assert few.refine_result_.n_iter == 3 and not few.refine_result_.converged
    assert full.refine_result_.converged
    assert np.all(base.eigenvalues_ > few.eigenvalues_)
    assert np.all(few.eigenvalues_ >= full.eigenvalues_ * (1 - 1e-9))
    np.testing.assert_allclose(full.eigenvalues_, exact.eigenvalues_, rtol=1e-4)
    # Closer to exact LE than LLL itself, and transform follows the refinement.
    assert procrustes_error(few.embedding_, exact.embedding_) < 0.5 * procrustes_error(
        base.embedding_, exact.embedding_)
    assert procrustes_error(few.transform(X), few.embedding_) < procrustes_error(
        base.embedding_, few.embedding_)


@pytest.mark.parametrize("n_samples, expected", [
    (50, 50),           # never more landmarks than points
    (5_000, 100),       # AUTO_MIN_LANDMARKS
    (250_000, 2_500),   # one per POINTS_PER_LANDMARK
    (3_000_000, 10_000),  # AUTO_MAX_LANDMARKS: the reduced problem is dense
])
def test_auto_landmarks_follow_the_number_of_points(n_samples, expected):
    from landmarking.lll.fit import resolve_n_landmarks

    assert resolve_n_landmarks("auto", n_samples) == expected
    assert resolve_n_landmarks("auto", n_samples, 784) == expected
    assert resolve_n_landmarks(37, n_samples) == 37


@pytest.mark.parametrize("n_samples, expected", [
    (50, 50),
    (10_000, 300),        # LOW_DIMENSION_MIN_LANDMARKS
    (500_000, 500),       # one per LOW_DIMENSION_POINTS_PER_LANDMARK
    (20_000_000, 10_000),
])
def test_auto_landmarks_are_fewer_on_data_of_few_features(n_samples, expected):
    from landmarking.lll.fit import resolve_n_landmarks

    assert resolve_n_landmarks("auto", n_samples, 3) == expected
    assert resolve_n_landmarks("auto", n_samples, 4) == min(
        n_samples, max(100, min(10_000, n_samples // 100)))


def test_auto_refine_takes_a_few_iterations_on_large_data():
    from landmarking.lll.fit import AUTO_REFINE_ITERATIONS, resolve_refine

    assert resolve_refine("auto", "lll", 9_999) == 0
    assert resolve_refine("auto", "lll", 10_000) == AUTO_REFINE_ITERATIONS == 3
    assert resolve_refine("auto", "le-z", 10_000) == 0
    assert resolve_refine(True, "lll", 10) is True
    assert resolve_refine(5, "lll", 10) == 5
    # Data of at most 3 features: the landmarks alone reach exact LE.
    assert resolve_refine("auto", "lll", 10_000, 4) == 3
    assert resolve_refine("auto", "lll", 1_000_000, 3) == 0
    assert resolve_refine(4, "lll", 1_000_000, 3) == 4


def test_auto_values_are_stored_beside_the_parameters():
    X, _ = make_swiss_roll(600, random_state=0)
    model = LocallyLinearLandmarks(random_state=0).fit(X)
    # The parameters keep the user's "auto"; the values used have an underscore.
    assert model.n_landmarks == "auto" and model.refine == "auto"
    # 3 features: LOW_DIMENSION_MIN_LANDMARKS.
    assert model.n_landmarks_ == 300 and model.landmarks_.shape == (300, 3)
    assert model.refine_ == 0 and model.refine_result_ is None
    with pytest.raises(ValueError, match="'auto' or a number of LOBPCG iterations"):
        LocallyLinearLandmarks(refine="sometimes").fit(X)
    with pytest.raises((ValueError, TypeError), match="n_landmarks"):
        LocallyLinearLandmarks(n_landmarks="many").fit(X)


def test_the_defaults_come_within_two_points_of_exact_le(data_dir):
    # The claim of n_landmarks="auto" with refine="auto" (docs/results/lll.md, "The
    # defaults"), at the smallest size it covers: 12,000 MNIST digits in 10-D, the
    # 10-NN accuracy of a classifier trained on the first 10,000 embedded digits and
    # scored on the last 2,000. Two points is the margin; the seeds and the
    # data are fixed, so the test is deterministic up to BLAS rounding, which moves
    # an accuracy by far less than one digit in 2,000 (0.05 points).
    from sklearn.neighbors import KNeighborsClassifier

    from landmarking.datasets import load_mnist

    X, y = load_mnist(data_dir)
    X, y = X[:12_000], y[:12_000]

    def accuracy(embedding):
        knn = KNeighborsClassifier(10).fit(embedding[:10_000], y[:10_000])
        return knn.score(embedding[10_000:], y[10_000:])

    lll = LocallyLinearLandmarks(n_components=10, random_state=0).fit(X)
    exact = LaplacianEigenmaps(n_components=10, random_state=0).fit(X)
    assert lll.n_landmarks_ == 120 and lll.refine_ == 3
    assert accuracy(lll.embedding_) >= accuracy(exact.embedding_) - 0.02
def test_fit_calls_the_function_which_checks_x_once(monkeypatch):
    # The estimator's fit is one call of locally_linear_landmarks, which checks X
    # once (issue 42: no namespace standing in for the estimator, no second check
    # of the same rows) and gives the estimator the function's result, bit for bit.
    import landmarking.lll.estimator as estimator_module
    import landmarking.lll.fit as fit_module

    calls = {"function": 0, "check_rows": 0}

    def counted(name, real):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(estimator_module, "locally_linear_landmarks",
                        counted("function", fit_module.locally_linear_landmarks))
    for module in (estimator_module, fit_module):
        monkeypatch.setattr(module, "check_rows", counted("check_rows", module.check_rows))
    X, _ = make_swiss_roll(300, random_state=0)
    params = dict(n_landmarks=30, n_neighbors=8, random_state=0)
    model = LocallyLinearLandmarks(**params).fit(X)
    assert calls == {"function": 1, "check_rows": 1}
    assert model.n_features_in_ == 3
    result = fit_module.locally_linear_landmarks(X, **params)
    np.testing.assert_array_equal(model.embedding_, result.embedding)
    np.testing.assert_array_equal(model.landmark_embedding_, result.landmark_embedding)


def test_map_rows_is_lll_map_rows_without_its_checks():
    # LLL's fit places its unused landmarks with _map_rows on arrays it made; the
    # public lll_map_rows checks the arrays, then runs the same code: equal bits.
    from landmarking.lll.out_of_sample import _map_rows, lll_map_rows

    rng = np.random.default_rng(43)
    T, emb, Y = rng.normal(size=(30, 4)), rng.normal(size=(30, 2)), rng.normal(size=(50, 4))
    assert np.array_equal(_map_rows(Y, T, emb, 5, 1e-3), lll_map_rows(Y, T, emb, 5, 1e-3))
    with pytest.raises(ValueError, match=r"needs one row per landmark \(30\)"):
        lll_map_rows(Y, T, emb[:29], 5, 1e-3)
