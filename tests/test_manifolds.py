"""The Manifold Sculpting paper's benchmark manifolds and their ground truth."""

import numpy as np
import pytest
from scipy.integrate import quad

from landmarking.datasets import (
    make_entwined_spirals,
    make_sculpting_s_curve,
    make_sculpting_swiss_roll,
    make_translated_image,
)
from landmarking.datasets.manifolds import swiss_roll_arc_length


def test_swiss_roll_formulas_and_arc_length():
    X, uv = make_sculpting_swiss_roll(400, random_state=0)
    t = 8.0 * np.arange(400) / 400 + 2.0
    np.testing.assert_allclose(X[:, 0], t * np.sin(t))
    np.testing.assert_allclose(X[:, 2], t * np.cos(t))
    np.testing.assert_array_equal(X[:, 1], uv[:, 1])
    assert X[:, 1].min() >= -6 and X[:, 1].max() < 6
    # u is the arc length of the spiral: compare with a fine polyline.
    fine = np.linspace(t[0], t[-1], 200_001)
    pts = np.column_stack([fine * np.sin(fine), fine * np.cos(fine)])
    length = np.sum(np.linalg.norm(np.diff(pts, axis=0), axis=1))
    assert abs((uv[-1, 0] - uv[0, 0]) - length) < 1e-6 * length
    assert swiss_roll_arc_length(0.0) == 0.0


def test_swiss_roll_star_hole_is_empty_and_size_is_exact():
    X, uv = make_sculpting_swiss_roll(2000, hole=True, random_state=3)
    assert X.shape == (2000, 3) and uv.shape == (2000, 2)
    centre = (swiss_roll_arc_length(2.0) + swiss_roll_arc_length(10.0)) / 2.0
    # The star contains the disc of its inner radius (0.4 * 5 = 2).
    r = np.hypot(uv[:, 0] - centre, uv[:, 1])
    assert r.min() > 2.0
    # ...and the tips reach out to 5 along the vertical axis above the centre.
    tip = (np.abs(uv[:, 0] - centre) < 0.3) & (uv[:, 1] > 0) & (uv[:, 1] < 4.5)
    assert not tip.any()
    # Without the hole the same region is populated.
    _, full = make_sculpting_swiss_roll(2000, random_state=3)
    assert (np.hypot(full[:, 0] - centre, full[:, 1]) < 2.0).sum() > 10


def test_swiss_roll_is_deterministic_per_seed():
    a = make_sculpting_swiss_roll(300, hole=True, random_state=5)
    b = make_sculpting_swiss_roll(300, hole=True, random_state=5)
    c = make_sculpting_swiss_roll(300, hole=True, random_state=6)
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[0], c[0])


def test_s_curve_target_is_arc_length():
    X, uv = make_sculpting_s_curve(500, random_state=1)
    t = (2.2 * np.arange(500) - 0.1) * np.pi / 500
    np.testing.assert_allclose(X[:, 0], t)
    np.testing.assert_allclose(X[:, 1], np.sin(t))
    np.testing.assert_array_equal(X[:, 2], uv[:, 1])
    for i in (0, 17, 250, 499):
        ref, _ = quad(lambda w: np.sqrt(np.cos(w) ** 2 + 1.0), 0.0, t[i])
        assert abs(uv[i, 0] - ref) < 1e-10


def test_entwined_spirals_arc_length_matches_chords():
    X, s = make_entwined_spirals(3000, random_state=2)
    assert X.shape == (3000, 3) and s.shape == (3000, 1)
    gaps = np.diff(s[:, 0])
    chords = np.linalg.norm(np.diff(X, axis=0), axis=1)
    assert np.all(gaps > 0)
    # Arc length is never shorter than the chord, and for close points nearly equal.
    assert np.all(gaps >= chords - 1e-9)
    close = gaps < 0.05
    np.testing.assert_allclose(gaps[close], chords[close], rtol=1e-3)


def test_translated_image_layout():
    X, grid = make_translated_image(random_state=0)
    assert X.shape == (625, 48 * 48) and grid.shape == (625, 2)
    images = X.reshape(625, 48, 48)
    picture = images[0, :24, :24]
    for k in (1, 30, 312, 624):
        c, r = grid[k].astype(int)
        np.testing.assert_array_equal(images[k, r:r + 24, c:c + 24], picture)
    # Pixel (47, 47) is covered only at offset (24, 24): elsewhere it is the same noise.
    corner = images[:624, 47, 47]
    assert np.all(corner == corner[0]) and images[624, 47, 47] == picture[-1, -1]
    # Neighbouring offsets are closer in pixel space than distant ones.
    d_near = np.linalg.norm(X[0] - X[1])
    d_far = np.linalg.norm(X[0] - X[624])
    assert d_near < d_far
    assert set(np.unique(grid)) == set(range(25))


def test_translated_image_rejects_a_picture_that_does_not_fit():
    with pytest.raises(ValueError, match="square 2-D array"):
        make_translated_image(n_positions=5, image_size=12, picture=np.ones((9, 9)))
    with pytest.raises(ValueError, match="do not fit"):
        make_translated_image(n_positions=30, image_size=12)
