"""GP landmarks in blocks: the joint objective, its gradient, the block step."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from landmarking import GPLandmarks
from landmarking.datasets import make_concentric_circles
from landmarking.gp._cpu import CompiledSteps, move_landmarks, optimise, reference_step
from landmarking.gp._loops import SPACE_CODES, Schedule, VisitChunk, step_work, visit_steps
from landmarking.gp._tables import BatchFactors, KernelTables, Preceding, phi_columns
from landmarking.gp.objective import (
    MIN_RELATIVE_F,
    RIDGE,
    _CholeskyFactor,
    block_objective_and_gradient,
    greedy_order,
)
from landmarking.gp.sampling import batch_bounds, draw_sample


def _data(n=300, d=5, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(4, d)) * 3
    X = centres[rng.integers(0, 4, n)] + rng.normal(size=(n, d))
    return X.astype(dtype)


def _layout(X, earlier, eta, batch_size):
    """One chunk in order: (xsq, perm, positions, bounds, Phi table, factors)."""
    n = len(X)
    xsq = np.einsum("ij,ij->i", X, X)
    perm = np.arange(n, dtype=np.int64)
    bounds = batch_bounds(n, batch_size)
    k = len(earlier)
    Phi = np.ascontiguousarray(phi_columns(X, earlier, eta, xsq)) if k else np.zeros(
        (n, 1), dtype=X.dtype)
    Ls = np.zeros((len(bounds) - 1, max(k, 1), max(k, 1)))
    factors = []
    for j in range(len(bounds) - 1):
        rows = slice(bounds[j], bounds[j + 1])
        factor = _CholeskyFactor(max(k, 1), RIDGE * (bounds[j + 1] - bounds[j]), L=Ls[j])
        Phi_B = np.asfortranarray(Phi[rows, :k], dtype=np.float64)
        for col in range(k):
            factor.append(Phi_B[:, :col].T @ Phi_B[:, col], Phi_B[:, col] @ Phi_B[:, col])
        factors.append(factor)
    return xsq, perm, bounds, Phi, Ls, factors


def _reference_visit(X, xsq, bounds, Phi, factors, k, T, eta, batches, first, s0, tau,
                     max_step, space):
    T = T.copy()
    for q, j in enumerate(batches):
        rows = np.arange(bounds[j], bounds[j + 1])
        L = factors[j].L[:k, :k]
        S, f, phi_sq, nearest, active = reference_step(X[rows], xsq[rows], Phi[rows, :k],
                                                         L, T, eta)
        move_landmarks(T, S, active, (s0 + first + q) ** -0.51 if tau is None else
                   (s0 + first + q) ** -tau, max_step, nearest, space)
    return T


def test_gradient_of_the_joint_objective_matches_finite_differences():
    X = _data(80, 3)
    rng = np.random.default_rng(1)
    eta = 4.0
    earlier = X[rng.choice(80, 2, replace=False)] + 0.1
    Phi = np.exp(-((X[:, None] - earlier[None]) ** 2).sum(-1) / eta)
    T = X[rng.choice(80, 3, replace=False)] + rng.normal(size=(3, 3)) * 0.3
    J, grad = block_objective_and_gradient(T, X, Phi, eta)
    h = 1e-6
    numeric = np.zeros_like(T)
    for j in range(3):
        for c in range(3):
            up, down = T.copy(), T.copy()
            up[j, c] += h
            down[j, c] -= h
            numeric[j, c] = (block_objective_and_gradient(up, X, Phi, eta)[0]
                             - block_objective_and_gradient(down, X, Phi, eta)[0]) / (2 * h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)
    assert np.isfinite(J)


def test_joint_objective_is_the_sum_of_sequential_log_variances_in_any_order():
    X = _data(120, 4)
    eta = 5.0
    earlier = X[:2] + 0.2
    Phi = np.exp(-((X[:, None] - earlier[None]) ** 2).sum(-1) / eta)
    T = X[10:13] + 0.1
    J, _ = block_objective_and_gradient(T, X, Phi, eta)
    J_rev, _ = block_objective_and_gradient(T[::-1], X, Phi, eta)
    total = 0.0
    span = Phi
    for t in T:
        phi = np.exp(-((X - t) ** 2).sum(-1) / eta)
        ridge = RIDGE * len(X) if span.shape[1] == Phi.shape[1] else 0.0
        gram = span.T @ span + ridge * np.eye(span.shape[1])
        # Inside the block there is no ridge: compare with the earlier span ridged,
        # the block's own columns exact.
        f = phi @ phi - phi @ span @ np.linalg.solve(gram, span.T @ phi)
        total += np.log(f)
        span = np.column_stack([span, phi])
    assert J == pytest.approx(J_rev, rel=1e-10)
    assert J == pytest.approx(total, rel=1e-6)


def _sequential_step(XB, xsq_B, Phi_B, factor, t, eta):
    """The paper's step for one landmark, as the sequential fit computed it before it
    became the block step with B = 1: (sum_i phi_i u_i x_i, f = phi^T M phi,
    phi^T phi, nearest squared distance), phi relative to the batch's nearest point."""
    d2 = np.maximum(xsq_B - 2 * XB @ t + t @ t, 0)
    nearest = d2.min()
    phi = np.exp(-(d2 - nearest) / eta)
    u = phi - Phi_B @ factor.solve(Phi_B.T @ phi)
    weights = phi * u
    return weights @ XB, weights.sum(), phi @ phi, nearest


def test_block_of_one_is_the_sequential_step():
    X = _data(200, 6)
    eta = 6.0
    earlier = X[[3, 50, 120]] + 0.05
    xsq, perm, bounds, Phi, Ls, factors = _layout(X, earlier, eta, 100)
    t = X[7] + 0.3
    rows = np.arange(100)
    weighted, f, phi_sq, nearest = _sequential_step(X[rows], xsq[rows], Phi[rows, :3],
                                                    factors[0], t, eta)
    S, f_b, phi_sq_b, nearest_b, active = reference_step(X[rows], xsq[rows], Phi[rows, :3],
                                                           factors[0].L[:3, :3], t[None], eta)
    assert active[0]
    # Measured: 8.6e-16 relative for the target, 0 for f.
    np.testing.assert_allclose(S[0], weighted / f, rtol=5e-14)
    assert f_b[0] == pytest.approx(f, rel=1e-13)
    assert phi_sq_b[0] == pytest.approx(phi_sq, rel=1e-13)
    assert nearest_b[0] == pytest.approx(nearest, rel=1e-13)


def test_columns_of_the_weights_sum_to_one_and_far_starts_still_step():
    X = _data(150, 4)
    eta = 3.0
    earlier = X[:2]
    xsq, _, _, Phi, _, factors = _layout(X, earlier, eta, 150)
    T = np.vstack([X[40] + 0.2, X[90] + 200.0])  # the second underflows in true values
    S, f, phi_sq, nearest, active = reference_step(X, xsq, Phi[:, :2], factors[0].L[:2, :2],
                                                     T, eta)
    assert active.all()
    assert np.all(np.isfinite(S))
    # The far landmark's target is a weighted mean of the data: near the data.
    assert np.linalg.norm(S[1] - X.mean(0)) < 50
    # Weights summing to one per landmark: shifting data and landmarks shifts the
    # targets by the same vector.
    shift = np.array([5.0, -3.0, 2.0, 7.0])
    moved = X + shift
    S_moved, *_ = reference_step(moved, np.einsum("ij,ij->i", moved, moved), Phi[:, :2],
                                   factors[0].L[:2, :2], T + shift, eta)
    np.testing.assert_allclose(S_moved, S + shift, rtol=1e-8, atol=1e-8)


def test_a_duplicated_landmark_in_the_block_does_not_move_and_the_other_steps_alone():
    X = _data(150, 4)
    eta = 3.0
    xsq = np.einsum("ij,ij->i", X, X)
    t = X[5] + 0.1
    S1, f1, *_ = reference_step(X, xsq, np.zeros((150, 0)), np.zeros((0, 0)), t[None], eta)
    S2, f2, _, _, active = reference_step(X, xsq, np.zeros((150, 0)), np.zeros((0, 0)),
                                            np.vstack([t, t]), eta)
    assert active.tolist() == [True, False]
    np.testing.assert_allclose(S2[0], S1[0], rtol=1e-10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("space", ["euclidean", "nonnegative", "sphere"])
@pytest.mark.parametrize("B", [1, 3, 5])
def test_compiled_block_visit_matches_the_numpy_reference(dtype, space, B):
    X = np.abs(_data(400, 7, seed=2, dtype=dtype))
    if space == "sphere":
        X = (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(dtype)
    eta = float(np.var(X, axis=0).sum()) / 2
    earlier = X[[1, 100, 200, 300]].astype(np.float64) + 0.01
    k = len(earlier)
    xsq, perm, bounds, Phi, Ls, factors = _layout(X, earlier, eta, 64)
    rng = np.random.default_rng(3)
    T0 = X[rng.choice(400, B, replace=False)].astype(np.float64) + 0.05
    batches = rng.integers(0, len(bounds) - 1, 30).astype(np.int64)
    max_step = 3.0 * np.sqrt(eta)
    expected = _reference_visit(X.astype(np.float64), xsq.astype(np.float64), bounds,
                                Phi.astype(np.float64), factors, k, T0, eta, batches, 1, 10.0,
                                0.51, max_step, space)
    T = T0.copy()
    sums = np.empty((len(batches), B, 3))
    visit_steps(VisitChunk(X, xsq, perm, perm, bounds, batches, Phi, k, Ls), T,
                Schedule(eta, 1, 10.0, 0.51, max_step, SPACE_CODES[space], MIN_RELATIVE_F),
                step_work(B, int(np.diff(bounds).max()), X.shape[1], k, X.dtype), sums)
    # Measured over these 18 cases: 3.8e-15 (float64), 7.3e-7 (float32), relative.
    tol = 1e-12 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(T, expected, rtol=tol, atol=tol)


def test_compiled_block_visit_is_the_same_bits_on_one_two_and_three_threads():
    X = _data(2000, 40, seed=4, dtype=np.float32)
    eta = float(np.var(X, axis=0).sum()) / 4
    earlier = X[[5, 500, 1500]].astype(np.float64)
    xsq, perm, bounds, Phi, Ls, _ = _layout(X, earlier, eta, 500)
    batches = np.array([0, 2, 1, 3, 0, 1, 2, 3] * 3, dtype=np.int64)
    T0 = X[[10, 700, 1300, 1900, 33]].astype(np.float64) + 0.1
    results = []
    for threads in (1, 2, 3):
        T = T0.copy()
        sums = np.empty((len(batches), 5, 3))
        visit_steps(VisitChunk(X, xsq, perm, perm, bounds, batches, Phi, 3, Ls), T,
                    Schedule(eta, 1, 10.0, 0.51, 3.0 * np.sqrt(eta), 0, MIN_RELATIVE_F),
                    step_work(5, 500, 40, 3, X.dtype), sums, threads)
        results.append((T, sums))
    assert np.abs(results[0][0] - T0).max() > 0.01
    for T, sums in results[1:]:
        np.testing.assert_array_equal(T, results[0][0])
        np.testing.assert_array_equal(sums, results[0][1])


def test_greedy_order_picks_the_largest_conditional_variance_first():
    X = _data(300, 3, seed=5)
    eta = 2.0
    landmarks = X[[0, 1, 100, 150, 151, 250]] + 0.01
    Phi = np.exp(-((X[:, None] - landmarks[None]) ** 2).sum(-1) / eta)
    gram = Phi.T @ Phi
    k = 2
    order, f = greedy_order(gram, k, ridge=RIDGE * len(X))
    chosen = list(range(k))
    for step in range(4):
        best, best_f = None, -np.inf
        for j in range(k, 6):
            if j in chosen:
                continue
            span = Phi[:, chosen]
            G = span.T @ span + RIDGE * len(X) * np.eye(len(chosen))
            v = gram[j, j] + RIDGE * len(X) - gram[j, chosen] @ np.linalg.solve(G, gram[chosen, j])
            if v > best_f:
                best, best_f = j, v
        assert order[step] + k == best
        assert f[step] == pytest.approx(best_f, rel=1e-6)
        chosen.append(best)
    assert sorted(order.tolist()) == [0, 1, 2, 3]


def _block_fit_state(X, earlier, eta, batch_size, n_steps, seed=0, chunk_size=None):
    n_total = len(earlier) + 6
    landmarks = np.zeros((n_total, X.shape[1]))
    landmarks[:len(earlier)] = earlier
    sample = draw_sample(X, batch_size=batch_size, steps=n_steps, seed=seed,
                         chunk_size=chunk_size)
    tables = KernelTables(sample, landmarks, eta, 2**30)
    factors = BatchFactors(sample.layout.n_batches, n_total, sample.layout.batch_sizes(), 2**30)
    return tables, Preceding(tables, factors, len(earlier))


@pytest.mark.parametrize("chunk_size", [None, 150])
def test_a_block_fit_compiled_equals_numpy_steps_and_csr(chunk_size):
    from scipy import sparse

    X = np.abs(_data(600, 6, seed=7))
    eta = 2.0
    earlier = X[[0, 300]] + 0.01
    T0 = X[[10, 200, 400, 500]] + 0.1
    results = []
    for data, step in ((X, CompiledSteps()), (X, None), (sparse.csr_matrix(X), CompiledSteps()),
                       (X, CompiledSteps(n_threads=2))):
        tables, span = _block_fit_state(data, earlier, eta, 50, 60, chunk_size=chunk_size)
        order = tables.layout.order(np.random.default_rng([0, 2]), 60)
        tables.plan(order)
        T, taken = optimise(T0, span, eta, order, s0=10.0, tau=0.51, space="nonnegative",
                            step=step, max_step=3 * np.sqrt(eta))
        tables.close()
        assert taken == 60
        results.append(T)
    # Measured: 8.0e-15 (compiled against NumPy steps), 6.2e-15 (CSR), absolute.
    np.testing.assert_allclose(results[0], results[1], rtol=0, atol=5e-13)
    np.testing.assert_allclose(results[2], results[1], rtol=0, atol=5e-13)
    np.testing.assert_array_equal(results[3], results[0])
    assert np.abs(results[0] - T0).max() > 0.01


# ---------------------------------------------------------------- GPLandmarks(block_size=B)

@pytest.fixture(scope="module")
def circles():
    return make_concentric_circles(600, random_state=0)[0]


def _fit(X, **params):
    settings = dict(n_landmarks=6, n_steps=80, batch_size=100, random_state=0)
    return GPLandmarks(**{**settings, **params}).fit(X)


def test_block_size_one_is_the_sequential_fit(circles):
    default = _fit(circles)
    ones = _fit(circles, block_size=1)
    np.testing.assert_array_equal(ones.landmarks_, default.landmarks_)
    np.testing.assert_array_equal(ones.objective_, default.objective_)


def test_blocks_put_their_landmarks_in_greedy_order_so_prefixes_are_landmark_sets(circles):
    gp = _fit(circles, n_landmarks=7, block_size=3)
    # Inside each block (0-2, 3-5, 6) the posterior variance given the landmarks
    # before does not rise: the greedy choice on all the data.
    for lo, hi in ((0, 3), (3, 6)):
        assert np.all(np.diff(gp.objective_[lo:hi]) <= 1e-12)
    Phi = np.exp(-((circles[:, None] - gp.landmarks_[None]) ** 2).sum(-1) / gp.kernel_width_)
    order, _ = greedy_order(Phi[:, :6].T @ Phi[:, :6], 3, RIDGE * len(circles))
    assert order.tolist() == [0, 1, 2]
    assert gp.n_steps_.tolist() == [80] * 7
    assert len(gp.landmark_seconds_) == 7


def test_blocks_put_landmarks_on_the_circles(circles):
    from landmarking.evaluation import landmark_to_data_distances, nearest_neighbor_spacing

    gp = _fit(circles, n_landmarks=12, n_steps=200, block_size=4)
    distance, _ = landmark_to_data_distances(gp.landmarks_, circles)
    assert distance.max() < 3 * nearest_neighbor_spacing(circles)
    # and spread: no two landmarks closer than two spacings
    gaps = np.sqrt(((gp.landmarks_[:, None] - gp.landmarks_[None]) ** 2).sum(-1))
    assert gaps[np.triu_indices(12, 1)].min() > 2 * nearest_neighbor_spacing(circles)


def test_extend_and_warm_start_continue_block_by_block(circles):
    whole = _fit(circles, n_landmarks=8, block_size=2)
    part = _fit(circles, n_landmarks=4, block_size=2)
    part.extend(circles, 4)
    np.testing.assert_array_equal(part.landmarks_, whole.landmarks_)
    warm = _fit(circles, n_landmarks=4, block_size=2, warm_start=True)
    warm.set_params(n_landmarks=8).fit(circles)
    np.testing.assert_array_equal(warm.landmarks_, whole.landmarks_)
    np.testing.assert_allclose(warm.objective_, whole.objective_, rtol=1e-12)


def test_a_run_continued_at_a_block_boundary_is_the_same_bits_as_one_longer_run():
    # float32 in 30 dimensions: kernel columns computed one at a time (BLAS) and
    # by the block kernel differ in the last bits, so the continued run must
    # compute the earlier landmarks' columns as the longer run did.
    X = np.random.default_rng(0).random((800, 30)).astype(np.float32)
    settings = dict(block_size=4, n_steps=30, batch_size=100, random_state=0)
    whole = GPLandmarks(n_landmarks=12, **settings).fit(X)
    part = GPLandmarks(n_landmarks=8, **settings).fit(X)
    resumed = GPLandmarks(n_landmarks=12, **settings).fit(X, previous_landmarks=part.landmarks_)
    part.extend(X, 4)
    for continued in (resumed, part):
        np.testing.assert_array_equal(continued.landmarks_, whole.landmarks_)
        np.testing.assert_array_equal(continued.objective_, whole.objective_)


def test_auto_learns_one_at_a_time_below_50_landmarks_and_in_blocks_of_50_from_there(circles):
    few = GPLandmarks(n_landmarks=3, batch_size=100, random_state=0).fit(circles)
    assert few.block_size_ == 1
    assert few.n_steps_.tolist() == [1000] * 3  # n_steps=None: the paper's S
    paper = GPLandmarks(n_landmarks=3, block_size=1, n_steps=1000, batch_size=100,
                        random_state=0).fit(circles)
    np.testing.assert_array_equal(few.landmarks_, paper.landmarks_)
    under = GPLandmarks(n_landmarks=49, n_steps=5, batch_size=100, random_state=0).fit(circles)
    assert under.block_size_ == 1

    many = GPLandmarks(n_landmarks=120, batch_size=100, random_state=0).fit(circles)
    assert many.block_size_ == 50
    assert many.n_steps_.tolist() == [100] * 120  # n_steps=None: 100 per block
    # the parameters stay as given; what "auto" and None resolved to is in attributes
    assert many.get_params()["block_size"] == "auto" and many.get_params()["n_steps"] is None
    blocks = GPLandmarks(n_landmarks=120, block_size=50, n_steps=100, batch_size=100,
                         random_state=0).fit(circles)
    np.testing.assert_array_equal(many.landmarks_, blocks.landmarks_)


def test_auto_blocks_extended_from_a_multiple_of_50_equal_one_longer_run(circles):
    settings = dict(n_steps=20, batch_size=100, random_state=0)
    whole = GPLandmarks(n_landmarks=100, **settings).fit(circles)
    part = GPLandmarks(n_landmarks=50, **settings).fit(circles).extend(circles, 50)
    assert part.block_size_ == whole.block_size_ == 50
    np.testing.assert_array_equal(part.landmarks_, whole.landmarks_)


def test_bad_block_size_words_get_clear_errors(circles):
    with pytest.raises(ValueError, match="block_size must be"):
        _fit(circles, block_size="fast")


def test_a_block_fit_is_the_same_bits_on_one_and_two_threads(circles):
    one = _fit(circles.astype(np.float32), block_size=3, n_jobs=1)
    two = _fit(circles.astype(np.float32), block_size=3, n_jobs=2)
    np.testing.assert_array_equal(one.landmarks_, two.landmarks_)
    np.testing.assert_array_equal(one.objective_, two.objective_)


def test_a_default_block_fit_does_not_depend_on_the_blas_threads():
    # n_jobs=None leaves BLAS's thread count to the user (an environment variable
    # of a subprocess, threadpoolctl). Some BLAS builds split a product's sums by
    # thread (numpy 1.25's OpenBLAS, `make test-min`: these blocks of 50 moved by
    # 9e-16 from one BLAS thread to two), so the block step keeps BLAS on one.
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(1)
    angle = rng.uniform(0, 2 * np.pi, 1000)
    X = np.c_[np.cos(angle), np.sin(angle)] + 0.02 * rng.normal(size=(1000, 2))
    fits = []
    for blas_threads in (1, 2):
        with threadpool_limits(limits=blas_threads, user_api="blas"):
            fits.append(GPLandmarks(n_landmarks=60, n_steps=150, random_state=0).fit(X))
    assert fits[0].block_size_ == 50
    np.testing.assert_array_equal(fits[0].landmarks_, fits[1].landmarks_)
    np.testing.assert_array_equal(fits[0].objective_, fits[1].objective_)


def test_blocks_with_auto_steps_stop_and_with_a_checkpoint_report_each_block(circles):
    calls = []
    gp = GPLandmarks(n_landmarks=6, n_steps="auto", batch_size=100, block_size=3,
                     random_state=0)
    gp.fit(circles, checkpoint=lambda landmarks, objective, seconds: calls.append(
        len(landmarks)))
    assert 100 <= gp.n_steps_.min() and gp.n_steps_.max() <= 1000
    assert calls == [3, 6]


@pytest.mark.parametrize("block_size, error, match", [
    (0, ValueError, "block_size must be >= 1"),
    (-2, ValueError, "block_size must be >= 1"),
    (2.0, TypeError, "block_size must be an integer"),
    (7, ValueError, "block_size=7 is larger than n_landmarks=6"),
])
def test_bad_block_sizes_get_clear_errors(circles, block_size, error, match):
    with pytest.raises(error, match=match):
        _fit(circles, block_size=block_size)


@pytest.mark.parametrize("n_jobs", [0, 1.5, "2"])
def test_bad_n_jobs_get_clear_errors(circles, n_jobs):
    with pytest.raises(ValueError, match="n_jobs must be None, a positive number"):
        _fit(circles, block_size=2, n_jobs=n_jobs)


def test_blocks_on_a_torch_device_give_the_numpy_blocks(circles):
    # Was: refused on a torch device. The torch block step is the same arithmetic
    # (tests/test_gpu.py compares it in detail); measured 2.8e-16 of the scale
    # for the landmarks and 1e-14 relative for the objectives here.
    torch = pytest.importorskip("torch")
    numpy_fit = _fit(circles, block_size=2)
    torch_fit = _fit(circles, block_size=2, device=torch.device("cpu"))
    np.testing.assert_allclose(torch_fit.landmarks_, numpy_fit.landmarks_, rtol=0,
                               atol=1e-12 * np.abs(numpy_fit.landmarks_).max())
    np.testing.assert_allclose(torch_fit.objective_, numpy_fit.objective_, rtol=1e-11)
    np.testing.assert_array_equal(torch_fit.n_steps_, numpy_fit.n_steps_)


def test_a_block_fit_without_the_kept_kernel_table_agrees_to_rounding(circles, monkeypatch):
    from landmarking.gp import _cpu

    kept = _fit(circles, n_landmarks=6, block_size=3, n_steps=60)
    monkeypatch.setattr(_cpu, "KERNEL_TABLE_BYTES", 0)
    recomputed = _fit(circles, n_landmarks=6, block_size=3, n_steps=60)
    # The kept table gets a block's columns computed together (float64 distances),
    # the recomputed one column by column: the same landmarks to rounding (measured
    # 0.0 on these float64 circles).
    np.testing.assert_allclose(recomputed.landmarks_, kept.landmarks_, rtol=0, atol=1e-13)


# ---------------------------------------------------------------- one step, one driver

ONE_STEP = Path(__file__).resolve().parent / "data" / "gp_one_step"


def _before_one_step():
    spec = importlib.util.spec_from_file_location("make_before", ONE_STEP / "make_before.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.fits()


BEFORE_ONE_STEP = _before_one_step()


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", sorted(BEFORE_ONE_STEP))
def test_the_one_step_keeps_the_landmarks_of_the_steps_before_it(name):
    # The sequential fit became the block fit with one landmark per block, and the
    # numba steps (sequential and block) one compiled step: the landmarks moved by
    # round-off only. Measured against the arrays written by the numba steps
    # (make_before.py) on an AMD EPYC (znver3): the float64 fits by at most 1.3e-14
    # of their scale (sequential 1.3e-15, blocks 1.3e-14), the float32 ones by
    # 2.3e-7 (sequential) and 1.3e-7 (blocks). Held to another processor's
    # round-off, as tests/test_structure_golden.py holds its fixtures: 1e-11 of the
    # scale, 1e-5 for float32 data.
    want = np.load(ONE_STEP / "before.npz")[name]
    got = np.asarray(BEFORE_ONE_STEP[name]())
    assert got.shape == want.shape and got.dtype == want.dtype
    bound = 1e-5 if "f32" in name else 1e-11
    np.testing.assert_allclose(got, want, rtol=0, atol=bound * np.abs(want).max())


def test_a_thread_that_fails_before_its_visit_raises_instead_of_hanging():
    """The block steps' threads meet at barriers: one that fails before its first
    barrier must not leave the others waiting forever. Run in a child process with a
    time limit, so that a hang fails the test instead of stopping the suite."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import numpy as np
        import landmarking as L
        from landmarking.gp import _loops as K

        real = K._visit_share
        def failing(*args):
            if args[-2] == 1:  # thread 1 of the visit
                raise MemoryError("thread 1 had no memory")
            return real(*args)
        K._visit_share = failing
        X = np.random.default_rng(0).normal(size=(2000, 8))
        try:
            L.GPLandmarks(n_landmarks=8, block_size=4, n_steps=20, n_jobs=2,
                          random_state=0).fit(X)
        except MemoryError as error:
            print("raised:", error)
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "raised: thread 1 had no memory" in run.stdout
