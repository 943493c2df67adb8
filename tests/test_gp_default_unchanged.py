"""Issue 35 changed GPLandmarks' defaults on the sphere only: in R^d and on the
nonnegative orthant ``init="auto"`` and ``block_size="auto"`` resolve to what they
were before it (the paper's Gaussian draws; blocks of 50 from 50 landmarks, else
one at a time), so the default fit gives the same landmarks bit for bit as those
settings written out."""

import numpy as np
import pytest

from landmarking import GPLandmarks


def _data(space, seed):
    X = np.random.default_rng(seed).normal(size=(400, 6))
    return np.abs(X) if space == "nonnegative" else X


@pytest.mark.parametrize("space", ["euclidean", "nonnegative"])
@pytest.mark.parametrize("n_landmarks, block_size", [(8, 1), (50, 50)])
@pytest.mark.parametrize("seed", [0, 1])
def test_default_fit_equals_the_pre_change_settings(space, n_landmarks, block_size, seed):
    X = _data(space, seed)
    kwargs = dict(n_landmarks=n_landmarks, random_state=seed)
    if space != "euclidean":
        kwargs["space"] = space
    default = GPLandmarks(**kwargs).fit(X)
    before = GPLandmarks(init="gaussian", block_size=block_size, **kwargs).fit(X)
    assert (default.init_, default.block_size_) == ("gaussian", block_size)
    np.testing.assert_array_equal(default.landmarks_, before.landmarks_)
    np.testing.assert_array_equal(default.n_steps_, before.n_steps_)
