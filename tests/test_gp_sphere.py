"""The step of GP landmarks on the sphere (issue 35): the authors' unit-length
gradient step, tested against the paper's formulae."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from landmarking import GPLandmarks
from landmarking.datasets import make_sphere_orthant
from landmarking.gp import _kernels, objective
from landmarking.gp._numpy import move_landmarks, reference_step
from landmarking.gp.objective import NUMPY_OPS, RIDGE, gp_objective_and_gradient
from landmarking.kernels import gaussian_features
from landmarking.spaces import is_feasible, project


def _on_sphere(rng, n, d):
    X = np.abs(rng.normal(size=(n, d))) * (rng.random((n, d)) < 0.7)
    X[:, 0] += 0.01
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _tangent_unit(t, v):
    v = v - (v @ t) * t
    return v / np.linalg.norm(v)


def _geodesic(t, v, h):
    return np.cos(h) * t + np.sin(h) * v


def test_gradient_on_the_sphere_matches_finite_differences_along_great_circles():
    # On the sphere the objective changes along great circles by the gradient's
    # tangential part: d/dh f(cos h t + sin h v) at 0 = grad . v for unit v _|_ t.
    rng = np.random.default_rng(3)
    X = _on_sphere(rng, 60, 7)
    eta = 0.8
    Phi = gaussian_features(X, X[:3], eta)
    t = project(X[10] + 0.2 * X[20], "sphere")
    _, grad = gp_objective_and_gradient(t, X, Phi, eta)
    h = 1e-5
    for _ in range(5):
        v = _tangent_unit(t, rng.normal(size=7))
        numeric = (gp_objective_and_gradient(_geodesic(t, v, h), X, Phi, eta)[0]
                   - gp_objective_and_gradient(_geodesic(t, v, -h), X, Phi, eta)[0]) / (2 * h)
        np.testing.assert_allclose(grad @ v, numeric, rtol=1e-6, atol=1e-10)


def _authors_step(t, XB, landmarks, eta, rho):
    """The authors' step, written out slowly from the paper: M = I - K (K^T K)^-1 K^T
    formed (b x b), grad f by the double sum of eq. 10, then t + rho grad / ||grad||,
    clipped at 0 and normalised."""
    b, d = XB.shape
    phi = np.exp(-((XB - t) ** 2).sum(axis=1) / eta)
    K = np.exp(-((XB[:, None, :] - landmarks[None]) ** 2).sum(axis=2) / eta)
    M = np.eye(b) - K @ np.linalg.lstsq(K.T @ K, K.T, rcond=None)[0]
    grad = np.zeros(d)
    for i in range(b):
        for j in range(b):
            grad -= (4.0 / eta) * M[i, j] * (t - (XB[i] + XB[j]) / 2) * phi[i] * phi[j]
    v = t + rho * grad / np.linalg.norm(grad)
    v = np.maximum(v, 0.0)
    return v / np.linalg.norm(v)


@pytest.mark.parametrize("k", [0, 3])
def test_the_sphere_step_is_the_authors_unit_gradient_step(k):
    rng = np.random.default_rng(5)
    XB = _on_sphere(rng, 50, 6)
    eta, rho = 0.7, (10.0 + 3) ** -0.51
    landmarks = project(XB[:k] + 0.1, "sphere") if k else np.zeros((0, 6))
    Phi_p = gaussian_features(XB, landmarks, eta) if k else np.zeros((50, 0))
    L_p = np.linalg.cholesky(Phi_p.T @ Phi_p + RIDGE * 50 * np.eye(k)) if k else np.zeros((0, 0))
    t = project(XB[7] + 0.3 * XB[9], "sphere")
    S, f, phi_sq, nearest, active = reference_step(XB, (XB * XB).sum(axis=1), Phi_p, L_p,
                                                   t[None].copy(), eta)
    assert active[0]
    moved = move_landmarks(t[None].copy(), S, active, rho, 3.0 * np.sqrt(eta), nearest,
                           "sphere")[0]
    expected = _authors_step(t, XB, landmarks, eta, rho)
    np.testing.assert_allclose(moved, expected, rtol=0, atol=1e-8)
    compiled = t.copy()
    _kernels.move(compiled, S[0].copy(), 1.0, rho, 3.0 * np.sqrt(eta), float(nearest[0]),
                  _kernels.SPACE_CODES["sphere"])
    np.testing.assert_allclose(compiled, moved, rtol=0, atol=1e-14)


finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 8).flatmap(lambda d: st.tuples(
    st.lists(st.floats(0, 10), min_size=d, max_size=d),
    st.lists(finite, min_size=d, max_size=d))),
    st.floats(1e-12, 1e6), st.floats(1e-4, 1.0), st.sampled_from(["sphere", "nonnegative"]))
def test_a_step_stays_in_the_space(vectors, f, fraction, space):
    t, weighted = (np.asarray(v, dtype=np.float64) for v in vectors)
    t = project(t, space)
    for moved in (objective.moved_landmark(t, weighted, f, fraction, 3.0, 0.5, space,
                                           NUMPY_OPS),
                  _compiled_move(t, weighted, f, fraction, space)):
        assert np.all(np.isfinite(moved)) and np.all(moved >= 0)
        assert is_feasible(moved, space, atol=1e-12)


def _compiled_move(t, weighted, f, fraction, space):
    moved = t.copy()
    _kernels.move(moved, weighted.copy(), f, fraction, 3.0, 0.5, _kernels.SPACE_CODES[space])
    return moved


def test_a_sphere_step_moves_the_scheduled_length_before_the_projection():
    rng = np.random.default_rng(8)
    t = project(rng.random(5), "sphere")
    weighted = rng.normal(size=5) * 100.0
    for fraction in (0.29, 0.03):
        moved = objective.moved_landmark(t, weighted, 2.0, fraction, 3.0, 0.1, "euclidean",
                                         NUMPY_OPS)
        # Off the sphere the scale-free move (a fraction of the way, limited).
        assert np.linalg.norm(moved - t) > 1.0
    direction = weighted / 2.0 - t
    expected = project(t + 0.29 * direction / np.linalg.norm(direction), "sphere")
    np.testing.assert_allclose(objective.moved_landmark(t, weighted, 2.0, 0.29, 3.0, 0.1,
                                                        "sphere", NUMPY_OPS), expected,
                               rtol=0, atol=1e-15)


@pytest.mark.parametrize("block_size", [1, 3])
def test_sphere_fits_repeat_with_a_seed(block_size):
    X, _ = make_sphere_orthant(600, n_features=6, n_clusters=3, random_state=4)
    params = dict(n_landmarks=6, n_steps=60, batch_size=100, space="sphere",
                  block_size=block_size)
    a = GPLandmarks(random_state=7, **params).fit(X).landmarks_
    b = GPLandmarks(random_state=7, **params).fit(X).landmarks_
    c = GPLandmarks(random_state=8, **params).fit(X).landmarks_
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    assert is_feasible(a, "sphere")
