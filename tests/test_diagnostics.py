"""Fits that can tell their answer is poor say so: the measure and the fix.

Each warning is a class of its own (a ``UserWarning``); each is checked to fire on
a seeded poor fit, with the words of the fix, and to stay silent on a good fit of
the same data.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_digits, make_circles, make_swiss_roll

from landmarking import GPLandmarks, LocallyLinearLandmarks
from landmarking.gp.diagnostics import (
    KernelWidthWarning,
    diagnose_kernel_width,
)
from landmarking.lll.diagnostics import (
    RECONSTRUCTION_WARN,
    LandmarkSpanWarning,
    landmark_reconstruction_error,
)


@pytest.fixture(scope="module")
def digits():
    return load_digits().data


def _no_warning(category, fit):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fit()
    assert not [w for w in caught if issubclass(w.category, category)], \
        [str(w.message) for w in caught]
    return result


# ------------------------------------------------------------------ GP kernel width


def _gp(width):
    return GPLandmarks(n_landmarks=4, n_steps=100, random_state=0, kernel_width=width)


def test_gp_warns_when_the_kernel_width_is_far_too_small(digits):
    auto = _gp("auto").fit(digits).kernel_width_
    with pytest.warns(KernelWidthWarning, match=r"is too small for these data: the first "
                      r"landmark's kernel covers 1 points .*Pass kernel_width='auto' or a "
                      r"larger width"):
        gp = _gp(auto / 100).fit(digits)
    # The measure named: N * objective_[0], about one point.
    assert len(digits) * gp.objective_[0] == pytest.approx(1.0, abs=0.05)


def test_gp_warns_when_the_kernel_width_is_far_too_large(digits):
    auto = _gp("auto").fit(digits).kernel_width_
    with pytest.warns(KernelWidthWarning, match=r"is too large for these data: the first "
                      r"landmark's objective is 0\.9\d+ .*Pass kernel_width='auto' or a "
                      r"smaller width"):
        gp = _gp(auto * 100).fit(digits)
    assert gp.objective_[0] >= 0.9
    assert issubclass(KernelWidthWarning, UserWarning)


@pytest.mark.parametrize("name", ["digits", "circles", "swiss roll", "uniform 8-D"])
def test_gp_default_kernel_width_does_not_warn(name, digits):
    X = {"digits": lambda: digits,
         "circles": lambda: make_circles(2000, factor=0.5, noise=0.02, random_state=0)[0],
         "swiss roll": lambda: make_swiss_roll(2000, random_state=0)[0],
         "uniform 8-D": lambda: np.random.default_rng(0).random((4000, 8))}[name]()
    gp = _no_warning(KernelWidthWarning, lambda: _gp("auto").fit(X))
    covered = len(X) * gp.objective_[0]
    assert 5 < covered and gp.objective_[0] < 0.5, (covered, gp.objective_[0])


def test_gp_extend_checks_the_width_too(digits):
    gp = _gp("auto").fit(digits)
    gp.kernel_width_ = gp.kernel_width_ / 100  # as a bad width saved with a model would be
    with pytest.warns(KernelWidthWarning, match="too small"):
        gp.extend(digits, 1)


def test_diagnose_kernel_width_thresholds():
    assert diagnose_kernel_width(np.array([1.9 / 1000, 0.001]), 1000, 1.0) is not None
    assert diagnose_kernel_width(np.array([2.1 / 1000, 0.001]), 1000, 1.0) is None
    assert "too large" in diagnose_kernel_width(np.array([0.9, 1e-4]), 1000, 1.0)
    assert diagnose_kernel_width(np.array([0.89, 1e-4]), 1000, 1.0) is None
    assert diagnose_kernel_width(np.array([]), 1000, 1.0) is None
    assert diagnose_kernel_width(np.array([np.nan]), 1000, 1.0) is None


# ------------------------------------------------------------------ LLL landmark span


def test_lll_warns_when_the_landmarks_reconstruct_the_data_poorly(digits):
    with pytest.warns(LandmarkSpanWarning, match=r"reconstruct the data only to a relative "
                      r"error of 0\.8\d+ .*Use more landmarks than n_landmarks=10 or more "
                      r"landmark neighbours than n_landmark_neighbors=2"):
        lll = LocallyLinearLandmarks(n_landmarks=10, n_landmark_neighbors=2,
                                     random_state=0).fit(digits)
    assert lll.reconstruction_error_ > RECONSTRUCTION_WARN
    assert issubclass(LandmarkSpanWarning, UserWarning)


@pytest.mark.parametrize("data", ["digits, 300 landmarks", "swiss roll, defaults"])
def test_lll_with_enough_landmarks_does_not_warn(data, digits):
    if data.startswith("digits"):
        X, params = digits, dict(n_landmarks=300)
    else:
        X, params = make_swiss_roll(2000, random_state=0)[0], {}
    lll = _no_warning(LandmarkSpanWarning,
                      lambda: LocallyLinearLandmarks(random_state=0, **params).fit(X))
    assert lll.reconstruction_error_ < 0.5


def test_reconstruction_error_equals_the_dense_formula_for_dense_and_sparse(digits):
    X = digits[:400]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lll = LocallyLinearLandmarks(n_landmarks=30, random_state=0).fit(X)
    Z, T = lll.weights_.toarray(), lll.landmarks_
    expected = np.linalg.norm(X - Z @ T) / np.linalg.norm(X - X.mean(axis=0))
    assert lll.reconstruction_error_ == pytest.approx(expected, rel=1e-10)
    assert landmark_reconstruction_error(sp.csr_matrix(X), lll.weights_, T) == pytest.approx(
        expected, rel=1e-10)
    # A point that is a landmark, with itself as its only landmark neighbour: exact.
    assert landmark_reconstruction_error(T, sp.eye(len(T), format="csr"), T) == 0.0
    assert np.isnan(landmark_reconstruction_error(np.ones((5, 2)), sp.eye(5, format="csr"),
                                                  np.ones((5, 2))))
