"""GP landmarks on the sphere (issue 35): the gradient there, the authors' step as
the benchmark transcribes it, steps that stay on the sphere, the start."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from landmarking import GPLandmarks
from landmarking.datasets import make_sphere_orthant
from landmarking.gp import _loops, objective
from landmarking.gp.objective import NUMPY_OPS, gp_objective_and_gradient
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


def _authors_step(t, XB, landmarks, eta, rho, ridge=0.0):
    """The authors' step, written out slowly from the paper: M = I - K (K^T K)^-1 K^T
    formed (b x b; their code's lstsq, or with a ridge on K^T K), grad f by the
    double sum of eq. 10, then t + rho grad / ||grad||, clipped at 0 and normalised."""
    b, d = XB.shape
    phi = np.exp(-((XB - t) ** 2).sum(axis=1) / eta)
    K = np.exp(-((XB[:, None, :] - landmarks[None]) ** 2).sum(axis=2) / eta)
    gram = K.T @ K + ridge * np.eye(K.shape[1])
    M = np.eye(b) - K @ np.linalg.lstsq(gram, K.T, rcond=None)[0]
    grad = np.zeros(d)
    for i in range(b):
        for j in range(b):
            grad -= (4.0 / eta) * M[i, j] * (t - (XB[i] + XB[j]) / 2) * phi[i] * phi[j]
    v = t + rho * grad / np.linalg.norm(grad)
    v = np.maximum(v, 0.0)
    return v / np.linalg.norm(v)


def _transcription():
    """benchmarks/_gp_sphere_steps.py, the authors' algorithm transcribed in NumPy
    (issue 35's benchmark), loaded from the checkout."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "_gp_sphere_steps.py"
    if not path.exists():
        pytest.skip("needs the checkout's benchmarks folder")
    spec = importlib.util.spec_from_file_location("_gp_sphere_steps", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("k", [0, 3])
def test_the_transcribed_authors_step_matches_the_slow_reference(k):
    steps = _transcription()
    rng = np.random.default_rng(5)
    XB = _on_sphere(rng, 50, 6)
    eta, rho = 0.7, (10.0 + 3) ** -0.51
    landmarks = project(XB[:k] + 0.1, "sphere") if k else np.zeros((0, 6))
    K = gaussian_features(XB, landmarks, eta) if k else np.zeros((50, 0))
    t = project(XB[7] + 0.3 * XB[9], "sphere")
    weighted, f = steps.step_sums(XB, t, K, eta)
    moved = steps.unit_step(t, -(4.0 / eta) * (t * f - weighted), rho)
    np.testing.assert_allclose(moved, _authors_step(t, XB, landmarks, eta, rho),
                               rtol=0, atol=1e-12)
    # The same direction as the library's gradient (its ridge moves it by 1e-7).
    _, grad = gp_objective_and_gradient(t, XB, K, eta)
    np.testing.assert_allclose(steps.unit_step(t, grad, rho), moved, rtol=0, atol=1e-6)
    assert np.isclose(np.linalg.norm(moved), 1.0) and np.all(moved >= 0)


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
    _loops.move(moved, weighted.copy(), f, fraction, 3.0, 0.5, _loops.SPACE_CODES[space])
    return moved


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


def test_auto_start_is_the_centre_on_the_sphere_under_a_wide_kernel_one_at_a_time():
    X, _ = make_sphere_orthant(400, n_features=5, n_clusters=3, random_state=4)
    params = dict(n_landmarks=3, n_steps=20, batch_size=100, random_state=0)
    assert GPLandmarks(space="sphere", kernel_width=1.0, **params).fit(X).init_ == "uniform"
    # Blocks need starts apart; a narrow kernel needs the Gaussian draws' spread.
    assert GPLandmarks(space="sphere", kernel_width=1.0, block_size=3,
                       **params).fit(X).init_ == "gaussian"
    assert GPLandmarks(space="sphere", kernel_width=0.1, **params).fit(X).init_ == "gaussian"
    assert GPLandmarks(space="nonnegative", kernel_width=1.0,
                       **params).fit(X).init_ == "gaussian"
    given = GPLandmarks(space="sphere", init=np.ones((3, 5)), **params).fit(X)
    assert given.init_ == "given"
    # The centre itself, with no step taken, and the same fit as init="uniform".
    centre = GPLandmarks(space="sphere", kernel_width=1.0, init="uniform",
                         **{**params, "n_steps": 1, "s0": 1e12}).fit(X)
    np.testing.assert_allclose(centre.landmarks_, np.full((3, 5), 1 / np.sqrt(5)),
                               atol=1e-5)
    np.testing.assert_array_equal(
        GPLandmarks(space="sphere", kernel_width=1.0, init="uniform", **params).fit(X).landmarks_,
        GPLandmarks(space="sphere", kernel_width=1.0, **params).fit(X).landmarks_)


def test_uniform_start_needs_the_sphere():
    X = np.abs(np.random.default_rng(0).normal(size=(50, 3)))
    with pytest.raises(ValueError, match="init='uniform' is the centre of the sphere-orthant"):
        GPLandmarks(n_landmarks=2, space="nonnegative", init="uniform").fit(X)


def test_auto_blocks_give_way_to_the_sequential_fit_from_the_centre_on_the_sphere():
    X, _ = make_sphere_orthant(300, n_features=5, n_clusters=3, random_state=4)
    params = dict(n_landmarks=50, n_steps=5, batch_size=100, random_state=0)
    wide = GPLandmarks(space="sphere", kernel_width=1.0, **params).fit(X)
    assert (wide.block_size_, wide.init_) == (1, "uniform")
    assert GPLandmarks(space="sphere", init="uniform", kernel_width=0.1,
                       **params).fit(X).block_size_ == 1
    # A narrow kernel, a given start or the nonnegative orthant keep the blocks.
    narrow = GPLandmarks(space="sphere", kernel_width=0.1, **params).fit(X)
    assert (narrow.block_size_, narrow.init_) == (50, "gaussian")
    assert GPLandmarks(space="sphere", kernel_width=1.0, init="gaussian",
                       **params).fit(X).block_size_ == 50
    assert GPLandmarks(space="nonnegative", kernel_width=1.0, **params).fit(X).block_size_ == 50
    # extend resolves the same way with the width it has.
    grown = GPLandmarks(space="sphere", kernel_width=1.0, **{**params, "n_landmarks": 10})
    assert grown.fit(X).extend(X, 40).block_size_ == 1


def test_auto_on_the_sphere_draws_the_sample_of_the_sequential_fit():
    # 2,000 rows in batches of 10: blocks of 100 steps sample 1,000 rows, the
    # sequential fit's 1,000 steps all of them. "auto" decides on the blocks'
    # sample, then fits as block_size=1 would, on its sample and its width.
    rng = np.random.default_rng(2)
    X = np.abs(rng.normal(size=(2000, 40))) * (rng.random((2000, 40)) < 0.2)
    X[:, 0] += 0.01  # sparse rows on the sphere: the variance rule is wide (0.9)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    params = dict(n_landmarks=50, batch_size=10, space="sphere", kernel_width="variance",
                  random_state=3)
    auto = GPLandmarks(**params).fit(X)
    sequential = GPLandmarks(block_size=1, **params).fit(X)
    assert auto.block_size_ == 1 and auto.init_ == "uniform"
    assert auto.kernel_width_ == sequential.kernel_width_ >= 0.5
    np.testing.assert_array_equal(auto.landmarks_, sequential.landmarks_)
