"""Tests of the evaluation helpers (issue 3)."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from scipy.special import expit
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_score

from landmarking import RandomLandmarks
from landmarking.evaluation import (
    PAPER_LAMBDAS,
    covering_radius,
    cross_validated_accuracy,
    landmark_features,
    landmark_geometry,
    landmark_to_data_distances,
    nearest_distances,
    nearest_neighbor_spacing,
    select_by_validation,
)


def test_paper_grid():
    np.testing.assert_allclose(PAPER_LAMBDAS, [1e-3, 1e-2, 1e-1, 1, 10, 100, 1000])


def test_landmark_features_from_estimator_and_from_array_agree():
    X = np.random.default_rng(0).normal(size=(50, 3))
    model = RandomLandmarks(n_landmarks=4, random_state=0).fit(X)
    a = landmark_features(model, X)
    b = landmark_features(model.landmarks_, X, kernel_width=model.kernel_width_)
    np.testing.assert_allclose(a, b)
    np.testing.assert_allclose(b, np.exp(-cdist(X, model.landmarks_, "sqeuclidean")
                                         / model.kernel_width_))
    with pytest.raises(ValueError, match="needs kernel_width"):
        landmark_features(model.landmarks_, X)
    with pytest.raises(ValueError, match="must have shape"):
        landmark_features(model.landmarks_[:, :2], X, kernel_width=1.0)


def _binary(seed, n=300):
    rng = np.random.default_rng(seed)
    F = rng.normal(size=(n, 4))
    y = (F @ np.array([2.0, -1.0, 0.5, 0.0]) + 0.5 * rng.normal(size=n) > 0).astype(int)
    return F, y


def test_lambda_convention_is_summed_loss_plus_half_lambda_norm():
    F, y = _binary(1)
    res = select_by_validation(F[:200], y[:200], F[200:], y[200:], lambdas=[30.0],
                               max_iter=5000, tol=1e-10)
    model = res.model
    assert model.C == pytest.approx(1 / 30.0)
    # Gradient of sum_i logloss_i + (lambda/2)||w||^2 vanishes at the fit.
    w, b = model.coef_.ravel(), model.intercept_[0]
    p = expit(F[:200] @ w + b)
    grad_w = F[:200].T @ (p - y[:200]) + 30.0 * w
    grad_b = np.sum(p - y[:200])
    assert np.abs(grad_w).max() < 1e-4 and abs(grad_b) < 1e-4
    assert np.linalg.norm(w) > 0.5  # not regularised away


def test_select_by_validation_scores_and_choice():
    F, y = _binary(2, n=600)
    res = select_by_validation(F[:300], y[:300], F[300:450], y[300:450], F[450:], y[450:])
    assert res.scores.shape == (7,)
    for lam, score in zip(res.lambdas, res.scores, strict=True):
        ref = LogisticRegression(C=1 / lam, max_iter=1000).fit(F[:300], y[:300])
        assert score == pytest.approx(ref.score(F[300:450], y[300:450]))
    # The best score, ties going to the strongest regularisation.
    assert res.best_lambda == res.lambdas[res.scores == res.scores.max()].max()
    assert res.model.C == pytest.approx(1 / res.best_lambda)
    assert res.test_accuracy > 0.85
    with pytest.raises(ValueError, match="lambdas must be a nonempty list of positive"):
        select_by_validation(F, y, F, y, lambdas=[0.1, -1])


def test_cross_validated_accuracy_matches_manual_folds():
    F, y = _binary(3, n=240)
    res = cross_validated_accuracy(F, y, cv=4, random_state=5, lambdas=[0.01, 100.0, 1e4])
    seed = np.random.RandomState(5).randint(2**31 - 1)
    folds = StratifiedKFold(4, shuffle=True, random_state=seed)
    manual = [cross_val_score(LogisticRegression(C=1 / lam, max_iter=1000), F, y,
                              cv=folds).mean() for lam in (0.01, 100.0, 1e4)]
    np.testing.assert_allclose(res.scores, manual)
    assert res.best_lambda in (0.01, 100.0)
    assert res.scores[2] < 0.8  # lambda = 1e4 underfits
    with pytest.raises(ValueError, match="cv must be >= 2"):
        cross_validated_accuracy(F, y, cv=1)


def test_nearest_distances_chunked_matches_brute_force():
    rng = np.random.default_rng(4)
    R = rng.normal(size=(103, 5))
    Q = rng.normal(size=(17, 5))
    d, i = nearest_distances(Q, R, chunk_size=10)
    D = cdist(Q, R)
    np.testing.assert_allclose(d, D.min(axis=1), rtol=1e-10)
    np.testing.assert_array_equal(i, D.argmin(axis=1))
    # Excluding each query's own row when queries are reference rows.
    rows = np.array([0, 9, 10, 55, 102])
    d, i = nearest_distances(R[rows], R, exclude=rows, chunk_size=10)
    D = cdist(R[rows], R)
    D[np.arange(len(rows)), rows] = np.inf
    np.testing.assert_allclose(d, D.min(axis=1), rtol=1e-10)
    np.testing.assert_array_equal(i, D.argmin(axis=1))


def test_nearest_neighbor_spacing_exact_and_subsampled():
    X = np.random.default_rng(6).normal(size=(400, 3))
    D = cdist(X, X)
    np.fill_diagonal(D, np.inf)
    exact = np.median(D.min(axis=1))
    assert nearest_neighbor_spacing(X) == pytest.approx(exact)
    est = nearest_neighbor_spacing(X, n_queries=200, random_state=0)
    assert est == pytest.approx(exact, rel=0.15) and est != exact
    # Duplicates count as neighbours at distance 0.
    assert nearest_neighbor_spacing(np.array([[1.0], [1.0], [5.0]])) == 0.0
    with pytest.raises(ValueError, match="at least 2 rows"):
        nearest_neighbor_spacing(np.zeros((1, 2)))


def test_covering_radius_and_geometry():
    rng = np.random.default_rng(7)
    X = rng.uniform(size=(500, 2))
    T = X[:20]
    radius, cover = covering_radius(X, T, chunk_size=64)
    D = cdist(X, T)
    np.testing.assert_allclose(cover, D.min(axis=1), atol=1e-7)
    assert radius == pytest.approx(D.min(axis=1).max())
    d, idx = landmark_to_data_distances(T, X)
    np.testing.assert_allclose(d, 0, atol=1e-7)
    np.testing.assert_array_equal(idx, np.arange(20))
    off = np.array([X[0] + 1e-3, [3.0, 3.0]])
    g = landmark_geometry(X, off, random_state=0)
    spacing = g["spacing"]
    assert g["to_data_relative"][0] < 0.2 and g["to_data_relative"][1] > 100
    np.testing.assert_allclose(g["to_data_relative"], cdist(off, X).min(axis=1) / spacing)
    assert g["covering_radius_relative"] == pytest.approx(cdist(X, off).min(axis=1).max() / spacing)
    assert g["mean_cover"] == pytest.approx(cdist(X, off).min(axis=1).mean())
