"""MVU and L-MVU (landmarking.baselines.mvu) against known answers and each other.

Solver accuracy: Clarabel stops when the duality gap and the residuals are below
1e-8 (absolute and relative, its defaults). The programs are solved on data scaled
to unit median edge length, so K's entries are off by about 1e-8 times their size;
a coordinate y = sqrt(lambda) u moves by about dK / sqrt(lambda). The tolerances
below are 1e-5 of the data's extent: a thousand times that, for the conditioning
of the eigenvectors and of the reconstruction Q.

Plain MVU is tested on curves only: its n x n program on an 80-point roll takes
about a minute and 0.7 GB in cvxpy, and with equal distances it has no interior
on such a rigid graph (see ``distances``).
"""

import subprocess
import sys

import numpy as np
import pytest

from landmarking.baselines import landmark_mvu, maximum_variance_unfolding
from landmarking.datasets import make_sculpting_swiss_roll
from landmarking.metrics import affine_normalized_mse


def _line(n=12):
    """Uneven steps t along a line through R^3 (unit direction)."""
    t = np.linspace(0.0, 3.0, n) ** 2
    return np.column_stack([t, 2 * t, -t]) / np.sqrt(6), t


def _aligned_error(y, t):
    """max |(+-y - shift) - t|, the sign and shift that MVU leaves free."""
    y = np.asarray(y).ravel()
    return min(np.abs((s * y) - (s * y)[0] - t).max() for s in (1.0, -1.0))


def test_importing_the_package_does_not_import_cvxpy():
    code = ("import sys, landmarking, landmarking.baselines\n"
            "landmarking.baselines.landmark_mvu\n"
            "print('cvxpy' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    # Looking the name up loads mvu.py, which imports cvxpy only when called.
    assert done.stdout.strip() == "False"


def test_without_cvxpy_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "cvxpy", None)  # `import cvxpy` raises ImportError
    X, _ = _line()
    with pytest.raises(ImportError, match=r"pip install landmarking\[mvu\]"):
        maximum_variance_unfolding(X, 1, 2)
    with pytest.raises(ImportError, match=r"pip install landmarking\[mvu\]"):
        landmark_mvu(X, 1, n_neighbors=2)


@pytest.mark.parametrize("call, match", [
    (lambda X: landmark_mvu(X, 1, n_landmarks=13, n_neighbors=2), r"n_landmarks must lie"),
    (lambda X: landmark_mvu(X, 3, n_landmarks=3, n_neighbors=2), r"n_landmarks must lie"),
    (lambda X: landmark_mvu(X, 1, n_neighbors=12), r"n_neighbors must be < n_samples"),
    (lambda X: maximum_variance_unfolding(X, 12, 2), r"n_components must be < n_samples"),
    (lambda X: maximum_variance_unfolding(X, 1, 2, solver="MOSEK"), r"solver must be one of"),
    (lambda X: maximum_variance_unfolding(X, 1, 2, distances="exact"),
     r"distances must be one of"),
    (lambda X: maximum_variance_unfolding(X[:, :, None], 1, 2), r"2-D array"),
    (lambda X: maximum_variance_unfolding(np.where(X > 1, np.nan, X), 1, 2), r"inf or NaN"),
])
def test_bad_input_is_refused_before_any_solve(call, match, monkeypatch):
    monkeypatch.setitem(sys.modules, "cvxpy", None)  # so no solve could hide the check
    with pytest.raises(ValueError, match=match):
        call(_line()[0])


def test_two_pieces_are_refused():
    pytest.importorskip("cvxpy")
    X, _ = _line(10)
    X = np.vstack([X, X + 100.0])  # two far clusters: a 2-NN graph in two pieces
    with pytest.raises(ValueError, match=r"2 connected components"):
        maximum_variance_unfolding(X, 1, 2)
    with pytest.raises(ValueError, match=r"2 connected components"):
        landmark_mvu(X, 1, n_neighbors=2, random_state=0)


def test_mvu_unfolds_a_line_to_its_arc_length():
    pytest.importorskip("cvxpy")
    X, t = _line()
    # The line is optimal: every pair's distance is at most the sum of the kept
    # edges between them (triangle inequality), which the line attains.
    y = maximum_variance_unfolding(X, 1, 3)
    assert _aligned_error(y, t) < 1e-5 * t.max()  # see the module docstring


def test_mvu_unfolds_an_arc_to_its_arc_length():
    pytest.importorskip("cvxpy")
    n = 40
    theta = np.linspace(0.0, np.pi, n)
    X = np.column_stack([np.cos(theta), np.sin(theta)])
    y = maximum_variance_unfolding(X, 1, 2)
    # With k = 2 the graph is the chain plus the edges (0, 2) and (n-3, n-1), which
    # keep the two end points on the circle's chord: the unfolding is the chain of
    # chords, 2 sin(h/2) per step of angle h, bent at the two ends by at most the
    # chord deficit 2 * 2 sin(h/2) - 2 sin(h) < h^3 / 4 (radius 1). Relative to the
    # step h the end points are off by about h^2 / 4, so the normalised MSE is below
    # (2 / n) (h^2 / 4)^2, here 2e-6; 1e-5 allows for the chords' own shortening
    # (1 - sin(h/2) / (h/2) < h^2 / 24, a uniform scale the affine map absorbs).
    h = np.pi / (n - 1)
    assert 2 / n * (h**2 / 4) ** 2 < 1e-5
    assert affine_normalized_mse(y, theta[:, None]) < 1e-5
    # The length unfolded is the chain's, 2 (n - 1) sin(h / 2), within the bend.
    assert np.ptp(y) == pytest.approx(2 * (n - 1) * np.sin(h / 2), rel=h**2)


@pytest.mark.parametrize("n_neighbors", [2, 3])
def test_lmvu_with_every_point_a_landmark_is_mvu_on_a_line(n_neighbors):
    pytest.importorskip("cvxpy")
    X, t = _line()
    # Q is then the identity and L-MVU is MVU with the distances relaxed to
    # inequalities, whose optimum on a line is the same line (see above).
    y = landmark_mvu(X, 1, n_landmarks=len(X), n_neighbors=n_neighbors)
    assert _aligned_error(y, t) < 1e-5 * t.max()
    for distances in ("equal", "at_most"):
        y_mvu = maximum_variance_unfolding(X, 1, n_neighbors, distances=distances)
        assert np.allclose(y, y_mvu, atol=1e-5 * t.max())


def test_lmvu_with_every_point_a_landmark_is_relaxed_mvu_on_an_arc():
    pytest.importorskip("cvxpy")
    theta = np.linspace(0.0, np.pi, 30)
    X = np.column_stack([np.cos(theta), np.sin(theta)])
    # The same program reached through the reconstruction path (Q = I from the
    # weights' stationarity with every row a landmark) and directly.
    y_all = landmark_mvu(X, 1, n_landmarks=len(X), n_neighbors=3)
    y_mvu = maximum_variance_unfolding(X, 1, 3, distances="at_most")
    assert np.abs(y_all - y_mvu).max() < 1e-5 * np.ptp(y_mvu)


def test_lmvu_recovers_an_arc_and_a_small_roll():
    pytest.importorskip("cvxpy")
    theta = np.linspace(0.0, 1.5 * np.pi, 100)
    X = np.column_stack([np.cos(theta), np.sin(theta), 0.3 * theta])  # a helix turn
    y = landmark_mvu(X, 1, n_neighbors=4, random_state=0)  # 10 landmarks
    # A normalised MSE below 1 means points sit nearer their truth than their
    # neighbours do (the sculpting paper's threshold of a distorted result); a
    # curve's reconstruction from 10 landmarks is far inside it.
    assert affine_normalized_mse(y, theta[:, None]) < 0.1
    X, uv = make_sculpting_swiss_roll(300, random_state=0)
    y = landmark_mvu(X, 2, n_neighbors=6, random_state=0)  # 17 landmarks
    assert affine_normalized_mse(y, uv) < 1.0


def test_the_landmarks_follow_random_state():
    pytest.importorskip("cvxpy")
    X, _ = make_sculpting_swiss_roll(100, random_state=1)
    a = landmark_mvu(X, 2, n_neighbors=6, random_state=3)
    b = landmark_mvu(X, 2, n_neighbors=6, random_state=3)
    np.testing.assert_array_equal(a, b)


def _lmvu_program(n, n_neighbors, seed):
    """L-MVU's program on a star-hole roll, as landmark_mvu sets it up: (Q, edges,
    squared lengths at unit median)."""
    from landmarking.baselines import mvu

    X, _ = make_sculpting_swiss_roll(n, hole=True, random_state=seed)
    rng = np.random.RandomState(seed)
    landmarks = np.sort(rng.choice(n, size=int(np.sqrt(n)), replace=False))
    indices, edges, sq = mvu._neighbour_graph(X, n_neighbors)
    Q = mvu._reconstruction_matrix(X, indices, landmarks)
    return Q, edges, sq / mvu._unit_scale(sq)


def test_lmvu_by_rounds_reaches_the_full_programs_optimum(monkeypatch):
    cp = pytest.importorskip("cvxpy")
    from landmarking.baselines import mvu

    Q, edges, sq = _lmvu_program(300, 6, 0)
    m = Q.shape[1]
    # The rounds start from 4 m = 68 of the 1,089 edges: the path is exercised.
    assert mvu._FIRST_EDGES_PER_LANDMARK * m < len(edges) / 10
    K_full = mvu._solve_gram(cp, Q, edges, sq, equality=False, solver="CLARABEL",
                             solver_options=mvu._LMVU_CLARABEL)
    rounds = []
    solve = mvu._solve_program
    monkeypatch.setattr(mvu, "_solve_program",
                        lambda *a, **kw: rounds.append(len(a[3])) or solve(*a, **kw))
    K = mvu._solve_gram_by_rounds(cp, Q, edges, sq, rng=np.random.RandomState(5),
                                  solver="CLARABEL", solver_options=mvu._LMVU_CLARABEL)
    assert len(rounds) >= 2 and rounds[-1] < len(edges)  # edges were added, not all
    # Every edge keeps its bound to the stretch allowed outside the program (1e-5
    # of its squared length) and the solver's tolerance inside it (about 1e-8
    # relative here, at unit median edges).
    V = Q[edges[:, 0]] - Q[edges[:, 1]]
    stretch = np.einsum("ij,jk,ik->i", V, K, V) / sq - 1.0
    assert stretch.max() <= mvu._STRETCH_TOLERANCE * 1.01
    # The same optimum: the relaxation's extra room (edges 1e-5 longer at most)
    # moves the variance by about that share; 1e-4 allows ten times it. The
    # coordinates move by the variance's change over the gap between the
    # eigenvalues kept and the next (conditioning well below 10 here): 1e-3 of
    # the extent.
    variance = np.trace(Q @ K @ Q.T)
    assert variance == pytest.approx(np.trace(Q @ K_full @ Q.T), rel=1e-4)
    Y, Y_full = mvu._embed(Q, K, 2), mvu._embed(Q, K_full, 2)
    assert np.abs(Y - Y_full).max() < 1e-3 * np.ptp(Y_full)


def test_lmvu_rounds_that_do_not_settle_are_reported(monkeypatch):
    cp = pytest.importorskip("cvxpy")
    from landmarking.baselines import mvu

    Q, edges, sq = _lmvu_program(300, 6, 0)
    monkeypatch.setattr(mvu, "_MAX_ROUNDS", 1)  # the first round stretches edges
    with pytest.raises(RuntimeError, match=r"constraint generation still stretched \d+ edges"
                                           r" after 1 rounds .*solver='SCS'"):
        mvu._solve_gram_by_rounds(cp, Q, edges, sq, rng=np.random.RandomState(5),
                                  solver="CLARABEL", solver_options=mvu._LMVU_CLARABEL)


def test_lmvu_takes_duplicate_rows():
    pytest.importorskip("cvxpy")
    X, _ = make_sculpting_swiss_roll(300, random_state=0)
    X = np.vstack([X, X[:20]])  # 20 rows twice: edges of length 0, a bound of 0
    y = landmark_mvu(X, 2, n_neighbors=6, random_state=0)
    assert np.isfinite(y).all()
    # The copies coincide: an edge of length 0 keeps its bound of 0 (to the
    # solver's tolerance, 1e-6 of the extent measured).
    assert np.abs(y[300:] - y[:20]).max() < 1e-4 * np.ptp(y)
