"""learn_gp_landmarks checks its arguments as locally_linear_landmarks does: every
bad argument gets an error that names the problem and the fix, with the
estimator's words where the two share a setting."""

import numpy as np
import pytest

from landmarking import GPLandmarks
from landmarking.gp import learn_gp_landmarks

X = np.random.default_rng(0).normal(size=(60, 2))
GOOD = dict(kernel_width=1.0, n_steps=5, batch_size=20, seed=0)


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"kernel_width": "auto"}, TypeError, r"resolve_kernel_width\(X, 'auto'\)"),
    ({"kernel_width": 0.0}, ValueError, "kernel_width must be a finite number > 0"),
    ({"kernel_width": np.nan}, ValueError, "kernel_width must be a finite number > 0"),
    ({"n_steps": None}, TypeError, "n_steps must be an integer"),
    ({"n_steps": "fast"}, ValueError, "n_steps must be a positive int or 'auto'.*pass"),
    ({"n_steps": 0}, ValueError, "n_steps must be >= 1"),
    ({"block_size": "auto"}, TypeError, "block_size must be an integer"),
    ({"seed": -1}, ValueError, "seed must be >= 0"),
    ({"seed": 1.5}, TypeError, "seed must be an integer"),
    ({"init": "random"}, ValueError,
     "init must be 'gaussian', 'uniform' or an array of starting"),
    ({"init": "uniform"}, ValueError,
     "init='uniform' is the centre of the sphere-orthant and needs space='sphere'"),
    ({"init": np.zeros((2, 2))}, ValueError,
     r"init must be 'gaussian', 'uniform' or a finite array of shape \(n_landmarks, n_features\) = "
     r"\(3, 2\); got shape \(2, 2\)"),
    ({"init": np.full((3, 2), np.nan)}, ValueError, "finite array of shape"),
    ({"previous_landmarks": np.zeros((2, 5))}, ValueError,
     r"previous_landmarks must have shape \(k, 2\), got \(2, 5\)"),
    ({"previous_landmarks": np.zeros((4, 2))}, ValueError,
     "already 4 landmarks but n_landmarks is 3; ask for more landmarks"),
    ({"previous_landmarks": np.full((1, 2), np.inf)}, ValueError,
     "previous_landmarks contain NaN or infinity"),
    ({"callback": 5}, TypeError, r"callback must be None or a function.*got a int"),
])
def test_bad_arguments_are_refused_naming_the_fix(kwargs, error, match):
    with pytest.raises(error, match=match):
        learn_gp_landmarks(X, 3, **{**GOOD, **kwargs})


@pytest.mark.parametrize("kwargs", [
    {"n_landmarks": 0}, {"batch_size": 0}, {"s0": -1.0}, {"tau": 0.0}, {"tau": 1.5},
    {"space": "ball"}, {"chunk_size": 0}, {"n_jobs": 0}, {"n_landmarks": 2.5},
])
def test_shared_settings_get_the_estimator_words(kwargs):
    settings = {"n_landmarks": 3, "batch_size": 20, **kwargs}
    with pytest.raises((TypeError, ValueError)) as by_estimator:
        GPLandmarks(n_steps=5, **settings).fit(X)
    n_landmarks = settings.pop("n_landmarks")
    with pytest.raises(by_estimator.type) as by_function:
        learn_gp_landmarks(X, n_landmarks, **{**GOOD, **settings})
    assert str(by_function.value) == str(by_estimator.value)


@pytest.mark.parametrize(("data", "space", "match"), [
    (np.array([[0.0, np.nan]] * 10), "euclidean", "NaN"),
    (np.ones((1, 2)), "euclidean", "at least 2 samples"),
    (np.ones(10), "euclidean", "Expected 2D array"),
    (-np.abs(X), "nonnegative", "needs nonnegative data"),
    (np.r_[np.abs(X), np.zeros((1, 2))], "sphere", "rows are all zero"),
])
def test_bad_data_is_refused_as_the_estimator_refuses_it(data, space, match):
    with pytest.raises(ValueError, match=match):
        GPLandmarks(n_landmarks=3, n_steps=5, space=space).fit(data)
    with pytest.raises(ValueError, match=match):
        learn_gp_landmarks(data, 3, **GOOD, space=space)


def test_out_of_core_data_with_nan_is_refused_as_the_sample_is_read(tmp_path):
    bad = X.copy()
    bad[37, 1] = np.inf
    path = tmp_path / "X.dat"
    mapped = np.memmap(path, dtype=bad.dtype, mode="w+", shape=bad.shape)
    mapped[:] = bad
    mapped.flush()
    with pytest.raises(ValueError, match="infinity"):
        learn_gp_landmarks(np.memmap(path, dtype=bad.dtype, mode="r", shape=bad.shape), 3,
                           **GOOD)


def test_checked_arguments_give_the_estimator_landmarks():
    # The checks change nothing for good input: the function with the estimator's
    # resolved settings gives its landmarks bit for bit.
    model = GPLandmarks(n_landmarks=3, n_steps=30, batch_size=20, kernel_width=1.0,
                        random_state=0).fit(X)
    landmarks = learn_gp_landmarks(X, 3, kernel_width=1.0, n_steps=30, batch_size=20,
                                   seed=model.seed_, block_size=model.block_size_)[0]
    np.testing.assert_array_equal(landmarks, model.landmarks_)


def test_the_uniform_start_on_the_sphere_gives_the_estimator_landmarks():
    sphere = np.abs(X) / np.linalg.norm(X, axis=1, keepdims=True)
    model = GPLandmarks(n_landmarks=3, n_steps=5, batch_size=20, kernel_width=1.0,
                        space="sphere", init="uniform", block_size=1,
                        random_state=0).fit(sphere)
    landmarks = learn_gp_landmarks(sphere, 3, kernel_width=1.0, n_steps=5, batch_size=20,
                                   seed=model.seed_, space="sphere", init="uniform")[0]
    np.testing.assert_array_equal(landmarks, model.landmarks_)
