"""Tests of GP manifold landmarking (landmarking.gp)."""

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from landmarking import GPLandmarks
from landmarking.datasets import make_concentric_circles, make_noisy_swiss_roll, make_sphere_orthant
from landmarking.gp import _cpu, _loops, _tables, objective
from landmarking.gp._cpu import move_landmarks, reference_step
from landmarking.gp.fit import _initial_point
from landmarking.gp.objective import (
    RIDGE,
    _CholeskyFactor,
    gp_objective_and_gradient,
    step_size,
)
from landmarking.gp.sampling import batch_bounds, batch_order
from landmarking.kernels import gaussian_features, squared_distances
from landmarking.neighbors import nearest_neighbors
from landmarking.spaces import is_feasible, project

FAST = dict(n_steps=150, batch_size=300)


def _median_spacing(X):
    return float(np.median(nearest_neighbors(X, 1)[0]))


def _distance_to_data(X, landmarks):
    return np.sqrt(squared_distances(X, landmarks).min(axis=0))


# --- objective and gradient ------------------------------------------------------

@pytest.mark.parametrize("space", ["euclidean", "nonnegative", "sphere"])
def test_gradient_matches_finite_differences(space):
    rng = np.random.default_rng(0)
    X = np.abs(rng.normal(size=(40, 5)))
    if space == "sphere":
        X /= np.linalg.norm(X, axis=1, keepdims=True)
    eta = 0.7
    landmarks = X[:3] + 0.05
    Phi = gaussian_features(X, landmarks, eta)
    t = project(X[5] + 0.1 * rng.normal(size=5), space)
    f, grad = gp_objective_and_gradient(t, X, Phi, eta)
    h = 1e-6
    numeric = np.array([
        (gp_objective_and_gradient(t + h * e, X, Phi, eta)[0]
         - gp_objective_and_gradient(t - h * e, X, Phi, eta)[0]) / (2 * h)
        for e in np.eye(5)
    ])
    assert f > 0
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-9)


def test_gradient_is_eq10_double_sum():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 3))
    eta = 2.0
    Phi = gaussian_features(X, X[:2], eta)
    t = rng.normal(size=3)
    phi = np.exp(-np.sum((X - t) ** 2, axis=1) / eta)
    gram = Phi.T @ Phi + RIDGE * len(X) * np.eye(2)
    M = np.eye(len(X)) - Phi @ np.linalg.solve(gram, Phi.T)
    double_sum = -sum(
        4 * M[i, j] / eta * (t - (X[i] + X[j]) / 2) * phi[i] * phi[j]
        for i in range(len(X)) for j in range(len(X))
    )
    f, grad = gp_objective_and_gradient(t, X, Phi, eta)
    assert f == pytest.approx(phi @ M @ phi)
    np.testing.assert_allclose(grad, double_sum, rtol=1e-10)


# --- fast path against a slow transcription of Algorithm 1 -------------------------

def _algorithm1_reference(X, n_landmarks, eta, n_steps, batch_size, seed, space,
                          s0=10.0, tau=0.51, chunk_size=None, init="gaussian"):
    """Algorithm 1 written out: M formed, eq. 10 as written, no caching.

    Uses the library's batch layout and random draws so that results can match
    (chunks of ``chunk_size`` rows, each cut into batches by a permutation drawn
    from (seed, chunk)), and the library's scale-free step a_s (m - t), i.e.
    rho_s = a_s eta / (4 f). ``init`` is the start the estimator resolved
    (``init_``).
    """
    chunk_size = chunk_size or len(X)
    starts = np.arange(0, len(X), chunk_size)
    chunks, batches = [], []
    for c, start in enumerate(starts):
        rows = start + np.random.default_rng([seed, 0xB47C, c]).permutation(
            min(chunk_size, len(X) - start))
        bounds = batch_bounds(len(rows), batch_size)
        chunks.append([rows[bounds[j]:bounds[j + 1]] for j in range(len(bounds) - 1)])
        batches.append(len(bounds) - 1)
    mean, std = X.mean(axis=0), X.std(axis=0)
    landmarks = []
    for k in range(n_landmarks):
        rng = np.random.default_rng([seed, k])
        t = _initial_point(k, init, mean, std, rng, space)
        order = batch_order(rng, batches, n_steps)
        for s, (c, j) in enumerate(order, start=1):
            B = X[chunks[c][j]]
            Phi = (gaussian_features(B, np.array(landmarks), eta) if landmarks
                   else np.zeros((len(B), 0)))
            f, grad = gp_objective_and_gradient(t, B, Phi, eta)
            phi = np.exp(-np.sum((B - t) ** 2, axis=1) / eta)
            if f > 1e-10 * phi @ phi:
                step = step_size(s, s0, tau) * eta / (4 * f) * grad
                length = np.linalg.norm(step)
                limit = (objective.MAX_STEP_WIDTHS * np.sqrt(eta)
                         + np.sqrt(np.min(np.sum((B - t) ** 2, axis=1))))
                if length > limit:
                    step *= limit / length
                t = project(t + step, space)
        landmarks.append(t)
    return np.array(landmarks)


@pytest.mark.parametrize("space", ["euclidean", "sphere"])
@pytest.mark.parametrize("chunk_size", [None, 70])
def test_fast_path_matches_algorithm1_reference(space, chunk_size):
    rng = np.random.default_rng(2)
    X = np.abs(rng.normal(size=(300, 4))) + 0.1
    if space == "sphere":
        X /= np.linalg.norm(X, axis=1, keepdims=True)
    eta = 0.5
    gp = GPLandmarks(n_landmarks=4, n_steps=60, batch_size=30, kernel_width=eta,
                     space=space, chunk_size=chunk_size, random_state=0).fit(X)
    reference = _algorithm1_reference(X, 4, eta, 60, 30, gp.seed_, space,
                                      chunk_size=chunk_size, init=gp.init_)
    np.testing.assert_allclose(gp.landmarks_, reference, rtol=1e-6, atol=1e-8)


def test_objective_is_posterior_variance_on_all_data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 3))
    gp = GPLandmarks(n_landmarks=3, kernel_width=1.0, random_state=0, **FAST).fit(X)
    Phi = gaussian_features(X, gp.landmarks_, 1.0)
    for k in range(3):
        f, _ = gp_objective_and_gradient(gp.landmarks_[k], X, Phi[:, :k], 1.0)
        assert gp.objective_[k] == pytest.approx(f / len(X), rel=1e-6)


# --- landmarks lie on the manifold ----------------------------------------------

def test_circles_landmarks_on_both_circles():
    X, labels = make_concentric_circles(800, random_state=0)
    gp = GPLandmarks(n_landmarks=10, random_state=0, **FAST).fit(X)
    gap = _distance_to_data(X, gp.landmarks_)
    assert gap.max() < 5 * _median_spacing(X)
    radii = np.linalg.norm(gp.landmarks_, axis=1)
    assert np.sum(np.abs(radii - 1) < 0.1) >= 2 and np.sum(np.abs(radii - 2) < 0.1) >= 2


def test_variance_width_misses_the_circles():
    # The paper's heuristic is far too wide here: the reason "auto" exists.
    X, _ = make_concentric_circles(800, random_state=0)
    gp = GPLandmarks(n_landmarks=10, kernel_width="variance", random_state=0, **FAST).fit(X)
    assert _distance_to_data(X, gp.landmarks_).max() > 10 * _median_spacing(X)


def test_swiss_roll_landmarks_on_the_sheet():
    X, _ = make_noisy_swiss_roll(1500, noise=0.3, random_state=0)
    gp = GPLandmarks(n_landmarks=12, random_state=0, **FAST).fit(X)
    assert _distance_to_data(X, gp.landmarks_).max() < 3 * _median_spacing(X)


def test_sphere_orthant_every_cluster_gets_a_landmark():
    X, labels = make_sphere_orthant(900, n_features=6, n_clusters=3, random_state=1)
    gp = GPLandmarks(n_landmarks=9, space="sphere", random_state=0, **FAST).fit(X)
    assert is_feasible(gp.landmarks_, "sphere")
    assert _distance_to_data(X, gp.landmarks_).max() < 5 * _median_spacing(X)
    nearest = np.argmin(squared_distances(X, gp.landmarks_), axis=0)
    assert set(labels[nearest]) == {0, 1, 2}


@pytest.mark.parametrize("space", ["euclidean", "nonnegative", "sphere"])
def test_landmarks_feasible(space):
    rng = np.random.default_rng(4)
    X = rng.uniform(0, 1, size=(300, 5))
    if space == "sphere":
        X /= np.linalg.norm(X, axis=1, keepdims=True)
    gp = GPLandmarks(n_landmarks=4, space=space, random_state=0, **FAST).fit(X)
    assert is_feasible(gp.landmarks_, space)
    assert np.all(np.isfinite(gp.objective_))


# --- invariances and the sequential property ------------------------------------

def test_scaling_and_shifting_moves_landmarks_with_the_data():
    X, _ = make_concentric_circles(600, random_state=0)
    shift = np.array([100.0, -3.0])
    base = GPLandmarks(n_landmarks=5, random_state=0, **FAST).fit(X)
    moved = GPLandmarks(n_landmarks=5, random_state=0, **FAST).fit(1e3 * X + shift)
    assert moved.kernel_width_ == pytest.approx(1e6 * base.kernel_width_, rel=1e-9)
    np.testing.assert_allclose(moved.landmarks_, 1e3 * base.landmarks_ + shift,
                               rtol=1e-6, atol=1e-5)


def test_sequential_property_and_continuation():
    X, _ = make_noisy_swiss_roll(800, random_state=1)
    short = GPLandmarks(n_landmarks=3, random_state=5, **FAST).fit(X)
    long = GPLandmarks(n_landmarks=6, random_state=5, **FAST).fit(X)
    np.testing.assert_array_equal(short.landmarks_, long.landmarks_[:3])

    warm = GPLandmarks(n_landmarks=3, warm_start=True, random_state=5, **FAST).fit(X)
    first = warm.landmarks_.copy()
    warm.set_params(n_landmarks=6).fit(X)
    np.testing.assert_array_equal(warm.landmarks_[:3], first)
    np.testing.assert_allclose(warm.landmarks_, long.landmarks_, rtol=1e-10)

    extended = GPLandmarks(n_landmarks=3, random_state=5, **FAST).fit(X).extend(X, 3)
    np.testing.assert_allclose(extended.landmarks_, long.landmarks_, rtol=1e-10)
    assert extended.objective_.shape == (6,) and extended.n_landmarks == 3

    resumed = GPLandmarks(n_landmarks=6, random_state=5, **FAST).fit(
        X, previous_landmarks=short.landmarks_)
    np.testing.assert_allclose(resumed.landmarks_, long.landmarks_, rtol=1e-10)


def test_deterministic_for_fixed_seed():
    X, _ = make_concentric_circles(500, random_state=2)
    a = GPLandmarks(n_landmarks=4, random_state=7, **FAST).fit(X).landmarks_
    b = GPLandmarks(n_landmarks=4, random_state=7, **FAST).fit(X).landmarks_
    c = GPLandmarks(n_landmarks=4, random_state=8, **FAST).fit(X).landmarks_
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_parameters_are_not_changed_by_fit():
    X, _ = make_concentric_circles(300, random_state=0)
    gp = GPLandmarks(n_landmarks=2, kernel_width="auto", **FAST)
    before = gp.get_params()
    gp.fit(X)
    assert gp.get_params() == before and gp.kernel_width_ > 0


# --- numerical safety --------------------------------------------------------------

def test_coincident_starts_and_duplicated_points_stay_finite():
    rng = np.random.default_rng(5)
    X = np.repeat(rng.normal(size=(20, 3)), 15, axis=0)  # every point 15 times
    init = np.tile(X[0], (4, 1))                         # all landmarks start together
    gp = GPLandmarks(n_landmarks=4, init=init, random_state=0, **FAST).fit(X)
    assert np.all(np.isfinite(gp.landmarks_)) and np.all(np.isfinite(gp.objective_))


def test_far_start_and_blind_batches_stay_finite():
    # A tiny kernel: most batches see none of a landmark's neighbourhood, and a
    # start far from the data has kernel values that underflow to zero.
    rng = np.random.default_rng(6)
    X = rng.normal(size=(400, 2))
    init = np.full((3, 2), 50.0)
    gp = GPLandmarks(n_landmarks=3, kernel_width=1e-4, init=init, random_state=0,
                     n_steps=100, batch_size=50).fit(X)
    assert np.all(np.isfinite(gp.landmarks_))
    assert _distance_to_data(X, gp.landmarks_).max() < 1.0


def test_sphere_projection_of_nonpositive_vector_is_an_axis():
    np.testing.assert_array_equal(project(np.array([-3.0, -1.0, -2.0]), "sphere"),
                                  [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(project(np.zeros(3), "sphere"), [1.0, 0.0, 0.0])


def test_float32_stays_float32():
    X = np.random.default_rng(7).normal(size=(300, 4)).astype(np.float32)
    gp = GPLandmarks(n_landmarks=3, random_state=0, **FAST).fit(X)
    assert gp.transform(X).dtype == np.float32
    np.testing.assert_allclose(gp.transform(X), gaussian_features(
        X.astype(float), gp.landmarks_, gp.kernel_width_), rtol=1e-4, atol=1e-6)


def test_keyboard_interrupt_keeps_finished_landmarks(monkeypatch):
    X, _ = make_concentric_circles(300, random_state=0)
    real = _cpu.optimise
    calls = []

    def interrupting(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(_cpu, "optimise", interrupting)
    gp = GPLandmarks(n_landmarks=5, random_state=0, **FAST)
    with pytest.raises(KeyboardInterrupt):
        gp.fit(X)
    assert gp.landmarks_.shape == (2, 2) and gp.objective_.shape == (2,)


# --- errors --------------------------------------------------------------------------

@pytest.mark.parametrize("X, params, error, match", [
    (np.array([[0.0, np.nan], [1.0, 2.0]]), {}, ValueError, "NaN"),
    (np.array([[0.0, np.inf], [1.0, 2.0]]), {}, ValueError, "infinity"),
    (np.zeros((0, 3)), {}, ValueError, "0 sample"),
    (np.ones((1, 3)), {}, ValueError, "at least 2 samples"),
    (np.array([["a", "b"], ["c", "d"]]), {}, ValueError, "convert|numeric|float"),
    (-np.ones((5, 2)), {"space": "sphere"}, ValueError, "nonnegative"),
    (-np.ones((5, 2)), {"space": "nonnegative"}, ValueError, "nonnegative"),
    (np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), {"space": "sphere"}, ValueError,
     "all zero"),
    (np.eye(3), {"n_landmarks": 0}, ValueError, "n_landmarks must be >= 1"),
    (np.eye(3), {"kernel_width": 0.0}, ValueError, "kernel_width must be > 0"),
    (np.eye(3), {"kernel_width": -1.0}, ValueError, "kernel_width must be > 0"),
    (np.eye(3), {"kernel_width": "wide"}, ValueError, "'auto' or 'variance'"),
    (np.eye(3), {"batch_size": 0}, ValueError, "batch_size must be >= 1"),
    (np.eye(3), {"space": "torus"}, ValueError, "space must be one of"),
    (np.eye(3), {"tau": 1.5}, ValueError, "tau must lie in"),
    (np.eye(3), {"s0": float("nan")}, ValueError, "s0 must be a number >= 0, got nan"),
    (np.eye(3), {"init": "kmeans"}, ValueError, "init must be 'auto', 'gaussian', 'uniform'"),
    (np.eye(3), {"init": np.zeros((2, 3)), "n_landmarks": 4}, ValueError, "shape"),
    (np.ones((4, 3)), {"kernel_width": "auto"}, ValueError, "zero variance"),
])
def test_bad_input_errors(X, params, error, match):
    with pytest.raises(error, match=match):
        GPLandmarks(**params).fit(X)


def test_transform_before_fit_and_wrong_width():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        GPLandmarks().transform(np.eye(3))
    gp = GPLandmarks(n_landmarks=2, random_state=0, **FAST).fit(
        np.random.default_rng(0).normal(size=(50, 3)))
    with pytest.raises(ValueError, match="3 features"):
        gp.transform(np.ones((4, 2)))


@parametrize_with_checks([GPLandmarks(n_landmarks=3, n_steps=20, batch_size=50,
                                      random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


# --- the compiled step against the NumPy reference step -------------------------------

def _numpy_step_only(monkeypatch):
    monkeypatch.setattr(_cpu, "_compiled_steps", lambda n_threads: None)


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-9), (np.float32, 1e-4)])
def test_compiled_step_matches_numpy_step_on_one_batch(dtype, rtol):
    # One landmark (the sequential step, B = 1), one step on one batch of scattered
    # rows: its sums and its move against the NumPy reference.
    rng = np.random.default_rng(11)
    Xc = rng.uniform(0, 1, size=(400, 30)).astype(dtype)
    xsq = np.einsum("ij,ij->i", Xc, Xc)
    landmarks = Xc[:5].astype(np.float64) + 0.05
    Phi = np.ascontiguousarray(gaussian_features(Xc, landmarks.astype(dtype), 2.0))
    rows = rng.permutation(400)[:150].astype(np.int64)
    Phi_B = Phi[rows].astype(np.float64)
    factor = _CholeskyFactor.of_gram(Phi_B.T @ Phi_B, RIDGE * 150)
    t = Xc[7].astype(np.float64) + 0.1
    perm = np.concatenate([rows, np.setdiff1d(np.arange(400), rows)])
    table = np.ascontiguousarray(Phi[perm])  # the table in the batches' order
    bounds = np.array([0, 150, 400], dtype=np.int64)
    Ls = np.zeros((2, 5, 5))
    Ls[0] = factor.L
    T = t[None].copy()
    sums = np.empty((1, 1, 3))
    _loops.visit_steps(_loops.VisitChunk(Xc, xsq, perm, np.arange(400, dtype=np.int64), bounds,
                                         np.zeros(1, dtype=np.int64), table, 5, Ls), T,
                       _loops.Schedule(2.0, 1, 10.0, 0.51, 1.0, 0, objective.MIN_RELATIVE_F),
                       _loops.step_work(1, 250, 30, 5, dtype), sums)
    S, f, phi_sq, nearest, active = reference_step(Xc[rows], xsq[rows], Phi_B, factor.L,
                                                   t[None], 2.0)
    np.testing.assert_allclose(sums[0, 0], [f[0], phi_sq[0], nearest[0]], rtol=rtol,
                               atol=1e-12)
    expected = move_landmarks(t[None].copy(), S, active, step_size(1, 10.0, 0.51), 1.0,
                              nearest, "euclidean")
    np.testing.assert_allclose(T, expected, rtol=rtol, atol=1e-12)
    assert active[0] and 0 < sums[0, 0, 0] < sums[0, 0, 1]  # 0 < f = phi^T M phi < phi^T phi


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-8), (np.float32, 1e-4)])
def test_compiled_fit_matches_numpy_step_fit(monkeypatch, dtype, rtol):
    X, _ = make_noisy_swiss_roll(900, random_state=3)
    X = X.astype(dtype)
    params = dict(n_landmarks=5, n_steps=200, batch_size=250, chunk_size=400,
                  random_state=1)
    fast = GPLandmarks(**params).fit(X)
    _numpy_step_only(monkeypatch)
    slow = GPLandmarks(**params).fit(X)
    scale = np.abs(slow.landmarks_).max()
    np.testing.assert_allclose(fast.landmarks_, slow.landmarks_, rtol=0, atol=rtol * scale)
    np.testing.assert_allclose(fast.objective_, slow.objective_, rtol=10 * rtol)


@pytest.mark.parametrize("space", ["nonnegative", "sphere"])
@pytest.mark.parametrize("n_steps", [120, "auto"])
@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-8), (np.float32, 1e-4)])
def test_compiled_visits_match_numpy_steps_in_every_space(monkeypatch, space, n_steps,
                                                         dtype, rtol):
    # A fit runs each chunk visit's steps in one compiled call (moves and
    # projections included); the reference runs the NumPy step one batch at a
    # time and moves in Python. Several chunks (read ahead), a remainder batch.
    X, _ = make_sphere_orthant(700, n_features=5, n_clusters=3, random_state=2)
    X = X.astype(dtype)
    params = dict(n_landmarks=4, n_steps=n_steps, batch_size=90, chunk_size=300,
                  kernel_width=0.3, space=space, random_state=4)
    fast = GPLandmarks(**params).fit(X)
    _numpy_step_only(monkeypatch)
    slow = GPLandmarks(**params).fit(X)
    np.testing.assert_array_equal(fast.n_steps_, slow.n_steps_)
    np.testing.assert_allclose(fast.landmarks_, slow.landmarks_, rtol=0, atol=rtol)
    assert is_feasible(fast.landmarks_, space)


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-10), (np.float32, 1e-5)])
def test_chunks_in_permutation_order_give_the_scattered_rows_landmarks(monkeypatch, dtype,
                                                                       rtol):
    # A long visit (here: all steps on the one chunk) reads a copy of the chunk in
    # its permutation's order (a batch's rows consecutive) when the copy fits
    # IN_ORDER_BYTES; without the copy the batch's rows are read where they are.
    X = np.random.default_rng(5).normal(size=(800, 37))
    X = X.astype(dtype)
    params = dict(n_landmarks=5, n_steps=150, batch_size=120, kernel_width=60.0,
                  random_state=2)
    ordered = GPLandmarks(**params).fit(X)
    monkeypatch.setattr(_tables, "IN_ORDER_BYTES", 0)
    scattered = GPLandmarks(**params).fit(X)
    scale = np.abs(scattered.landmarks_).max()
    np.testing.assert_allclose(ordered.landmarks_, scattered.landmarks_, rtol=0,
                               atol=rtol * scale)


@pytest.mark.parametrize("space", ["euclidean", "nonnegative", "sphere"])
def test_compiled_move_matches_python_move_and_projection(space):
    # The compiled twin of the move (Cython) against the one formula every backend
    # calls (objective.moved_landmark with NumPy's primitives).
    rng = np.random.default_rng(15)
    # The last case moves every entry below zero: on the sphere, the axis of the
    # largest entry (spaces.project), not a division by zero.
    cases = [(rng.uniform(0, 1, 6), rng.uniform(0, 1, 6) * 3.0, 0.4, 0.3, 1.0),
             (rng.uniform(0, 1, 6), rng.normal(size=6) * 50.0, 2.0, 0.5, 0.1),
             (np.array([0.2, 0.1, 0.3]), np.array([-2.0, -0.5, -1.0]), 1.0, 1.0, 5.0)]
    for t, weighted, f, fraction, max_step in cases:
        nearest = 0.04
        move = fraction * (weighted / f - t)
        limit = max_step + np.sqrt(nearest)
        if np.linalg.norm(move) > limit:
            move *= limit / np.linalg.norm(move)
        expected = project(t + move, space)
        formula = objective.moved_landmark(t, weighted, f, fraction, max_step, nearest, space,
                                           objective.NUMPY_OPS)
        np.testing.assert_array_equal(formula, expected)
        moved = t.copy()
        _loops.move(moved, weighted.copy(), f, fraction, max_step, nearest,
                      _loops.SPACE_CODES[space])
        np.testing.assert_allclose(moved, expected, rtol=1e-12, atol=1e-15)
    if space == "sphere":
        np.testing.assert_array_equal(moved, [0.0, 1.0, 0.0])


def test_csr_and_memmap_give_the_numpy_landmarks(tmp_path):
    from scipy import sparse

    rng = np.random.default_rng(12)
    X = np.abs(rng.normal(size=(500, 6))) * (rng.random((500, 6)) < 0.5)
    params = dict(n_landmarks=4, n_steps=120, batch_size=100, chunk_size=200,
                  kernel_width=1.0, random_state=0)
    dense = GPLandmarks(**params).fit(X).landmarks_
    csr = GPLandmarks(**params).fit(sparse.csr_matrix(X)).landmarks_  # the NumPy step
    path = tmp_path / "X.dat"
    mapped = np.memmap(path, dtype=X.dtype, mode="w+", shape=X.shape)
    mapped[:] = X
    mapped.flush()
    memmap = GPLandmarks(**params).fit(np.memmap(path, dtype=X.dtype, mode="r",
                                                 shape=X.shape)).landmarks_
    np.testing.assert_allclose(csr, dense, rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(memmap, dense)


# --- n_steps="auto" -------------------------------------------------------------------

def test_auto_steps_stop_at_the_mean_of_a_single_blob():
    # One Gaussian blob: the first landmark's optimum is the blob's mean (the kernel
    # mean of a symmetric density peaks at its centre).
    rng = np.random.default_rng(13)
    X = rng.normal(size=(4000, 3)) + np.array([5.0, -2.0, 1.0])
    gp = GPLandmarks(n_landmarks=1, n_steps="auto", kernel_width=4.0, random_state=0).fit(X)
    steps = int(gp.n_steps_[0])
    assert objective.AUTO_MIN_STEPS <= steps < objective.AUTO_MAX_STEPS // 2
    assert np.linalg.norm(gp.landmarks_[0] - X.mean(axis=0)) < 0.15
    # The auto run is the fixed run stopped early: same draws, same steps.
    fixed = GPLandmarks(n_landmarks=1, n_steps=steps, kernel_width=4.0, random_state=0).fit(X)
    np.testing.assert_array_equal(fixed.landmarks_, gp.landmarks_)
    np.testing.assert_array_equal(fixed.n_steps_, [steps])


def test_auto_steps_never_exceed_the_maximum(monkeypatch):
    monkeypatch.setattr(objective, "AUTO_MAX_STEPS", 160)
    X, _ = make_concentric_circles(600, random_state=0)
    gp = GPLandmarks(n_landmarks=4, n_steps="auto", batch_size=100, random_state=0).fit(X)
    assert np.all(gp.n_steps_ <= 160) and gp.n_steps_.shape == (4,)
    # A rule that can never be met runs every landmark to the maximum, and no further.
    monkeypatch.setattr(objective, "AUTO_TOL", -np.inf)
    gp = GPLandmarks(n_landmarks=2, n_steps="auto", batch_size=100, random_state=0).fit(X)
    np.testing.assert_array_equal(gp.n_steps_, [160, 160])


def test_n_steps_recorded_through_warm_start_and_extend():
    X, _ = make_concentric_circles(500, random_state=1)
    gp = GPLandmarks(n_landmarks=2, n_steps="auto", batch_size=100, random_state=3).fit(X)
    gp.extend(X, 2)
    long = GPLandmarks(n_landmarks=4, n_steps="auto", batch_size=100, random_state=3).fit(X)
    np.testing.assert_array_equal(gp.n_steps_, long.n_steps_)
    np.testing.assert_allclose(gp.landmarks_, long.landmarks_, rtol=1e-10)
    assert GPLandmarks(n_landmarks=2, **FAST).fit(X).n_steps_.tolist() == [150, 150]


def test_extend_checks_x_as_fit_does():
    X, _ = make_concentric_circles(200, random_state=1)
    gp = GPLandmarks(n_landmarks=2, random_state=0, **FAST).fit(X)
    with pytest.raises(ValueError, match="needs at least 2 samples"):
        gp.extend(X[:1], 1)
    with pytest.raises(ValueError, match="needs nonnegative data"):
        GPLandmarks(n_landmarks=2, space="nonnegative", random_state=0, **FAST).fit(
            np.abs(X)).extend(X, 1)


# --- joint refinement -----------------------------------------------------------------

def _log_det(X, landmarks, eta):
    Phi = gaussian_features(X, landmarks, eta)
    return np.linalg.slogdet(Phi.T @ Phi)[1]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_refinement_never_lowers_the_full_objective(seed):
    X, _ = make_noisy_swiss_roll(1200, noise=0.3, random_state=seed)
    params = dict(n_landmarks=8, n_steps=150, batch_size=300, kernel_width=4.0,
                  random_state=seed)
    before = GPLandmarks(**params).fit(X)
    after = GPLandmarks(refine=2, **params).fit(X)
    assert after.refine_accepted_.shape == (2, 8) and after.refine_accepted_.any()
    assert _log_det(X, after.landmarks_, 4.0) >= _log_det(X, before.landmarks_, 4.0)
    # det(Phi^T Phi) is the product of the sequential objectives; the sweeps raise it.
    assert np.sum(np.log(after.objective_)) >= np.sum(np.log(before.objective_)) - 1e-9
    # A rejected move leaves the landmark where it was.
    kept = ~after.refine_accepted_.any(axis=0)
    np.testing.assert_array_equal(after.landmarks_[kept], before.landmarks_[kept])
    # objective_ keeps its meaning after refinement: f_k given the landmarks before k.
    Phi = gaussian_features(X, after.landmarks_, 4.0)
    for k in range(8):
        f, _ = gp_objective_and_gradient(after.landmarks_[k], X, Phi[:, :k], 4.0)
        assert after.objective_[k] == pytest.approx(f / len(X), rel=1e-6)
    assert after.refine_seconds_ > 0 and np.all(after.refine_n_steps_ == 150)


def test_refinement_without_kept_tables_gives_the_same_landmarks(monkeypatch):
    X, _ = make_noisy_swiss_roll(600, random_state=4)
    params = dict(n_landmarks=4, n_steps=100, batch_size=150, chunk_size=300, refine=1,
                  kernel_width=4.0, random_state=0)
    kept = GPLandmarks(**params).fit(X)
    monkeypatch.setattr(_cpu, "KERNEL_TABLE_BYTES", 0)
    monkeypatch.setattr(_cpu, "FACTOR_CACHE_BYTES", 0)
    recomputed = GPLandmarks(**params).fit(X)
    np.testing.assert_allclose(recomputed.landmarks_, kept.landmarks_, rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(recomputed.refine_accepted_, kept.refine_accepted_)


@pytest.mark.parametrize("params, error, match", [
    ({"n_steps": "fast"}, ValueError, "n_steps must be a positive int, 'auto' or None"),
    ({"n_steps": 0}, ValueError, "n_steps must be >= 1"),
    ({"n_steps": 2.5}, TypeError, "n_steps must be an integer"),
    ({"refine": -1}, ValueError, "refine must be >= 0"),
    ({"refine": 1.5}, TypeError, "refine must be an integer"),
    ({"refine": True}, TypeError, "refine must be an integer"),
])
def test_bad_new_parameters(params, error, match):
    with pytest.raises(error, match=match):
        GPLandmarks(**params).fit(np.random.default_rng(0).normal(size=(20, 2)))


def test_zarr_and_dask_give_the_numpy_landmarks_with_auto_steps_and_refinement():
    zarr = pytest.importorskip("zarr")
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(14)
    X = rng.normal(size=(480, 5)).astype(np.float32)
    params = dict(n_landmarks=3, n_steps="auto", batch_size=80, refine=1, kernel_width=2.0,
                  random_state=0)
    z = zarr.create_array(store=zarr.storage.MemoryStore(), shape=X.shape, chunks=(160, 5),
                          dtype=X.dtype)
    z[:] = X
    # Default: the fit's own sample, whatever the storage chunks (issue 24); with
    # chunk_size, the chunked sampling, the same chunks in every container.
    for chunk_size in (None, 160):
        dense = GPLandmarks(chunk_size=chunk_size, **params).fit(X)
        for stored in (z, da.from_array(X, chunks=(160, 5))):
            fitted = GPLandmarks(chunk_size=chunk_size, **params).fit(stored)
            np.testing.assert_array_equal(fitted.landmarks_, dense.landmarks_)
            np.testing.assert_array_equal(fitted.n_steps_, dense.n_steps_)


def test_keyboard_interrupt_in_the_refinement_keeps_the_fitted_landmarks(monkeypatch):
    # Stopped in the refinement, the fit's own landmarks are kept (all of them,
    # unrefined), and the refinement's records say that no sweep ran.
    from landmarking.gp import fit

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(fit, "_refine", interrupted)
    X, _ = make_concentric_circles(300, random_state=0)
    gp = GPLandmarks(n_landmarks=4, refine=2, random_state=0, **FAST)
    with pytest.raises(KeyboardInterrupt):
        gp.fit(X)
    assert gp.landmarks_.shape == (4, 2) and gp.objective_.shape == (4,)
    assert gp.refine_n_steps_.shape == (2, 4) and not gp.refine_n_steps_.any()
    assert not gp.refine_accepted_.any() and gp.refine_seconds_ == 0.0
