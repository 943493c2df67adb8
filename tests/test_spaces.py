import numpy as np
import pytest

from landmarking.spaces import is_feasible, project


def test_euclidean_projection_is_identity_copy():
    t = np.array([-1.0, 2.0])
    out = project(t, "euclidean")
    np.testing.assert_array_equal(out, t)
    out[0] = 5
    assert t[0] == -1.0  # the input is never modified


def test_nonnegative_clips():
    np.testing.assert_array_equal(project(np.array([-1.0, 2.0, 0.0]), "nonnegative"), [0, 2, 0])


def test_sphere_projection_is_nearest_feasible_point():
    rng = np.random.default_rng(0)
    for _ in range(20):
        t = rng.normal(size=4)
        p = project(t, "sphere")
        assert is_feasible(p, "sphere")
        # No random feasible point is closer to t than its projection.
        candidates = project(np.abs(rng.normal(size=(500, 4))), "sphere")
        assert np.linalg.norm(t - p) <= np.linalg.norm(t - candidates, axis=1).min() + 1e-12


def test_sphere_projection_rows_and_all_nonpositive_rows():
    rows = np.array([[3.0, 4.0], [-1.0, -0.5], [0.0, 0.0]])
    out = project(rows, "sphere")
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 1.0], [1.0, 0.0]])
    assert not np.any(np.isnan(out))


def test_is_feasible_and_bad_space():
    assert not is_feasible(np.array([[0.5, 0.5]]), "sphere")
    assert not is_feasible(np.array([[-0.1, 1.0]]), "nonnegative")
    assert not is_feasible(np.array([[np.nan, 1.0]]), "euclidean")
    with pytest.raises(ValueError, match="space must be one of"):
        project(np.zeros(2), "simplex")
