import numpy as np
import pytest
import scipy.sparse as sp

from landmarking.kernels import (
    auto_kernel_width,
    gaussian_features,
    local_kernel_width,
    resolve_kernel_width,
    squared_distances,
    variance_kernel_width,
)


def test_squared_distances_match_direct_formula():
    rng = np.random.default_rng(0)
    X, T = rng.normal(size=(30, 5)) * 100, rng.normal(size=(4, 5)) * 100
    direct = ((X[:, None, :] - T[None]) ** 2).sum(-1)
    np.testing.assert_allclose(squared_distances(X, T), direct, rtol=1e-10)
    assert squared_distances(X, X).min() >= 0


def test_gaussian_features_chunked_equals_unchunked_and_keeps_float32():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1000, 3))
    T = X[:5]
    full = np.exp(-((X[:, None, :] - T[None]) ** 2).sum(-1) / 2.0)
    np.testing.assert_allclose(gaussian_features(X, T, 2.0, chunk_size=7), full, rtol=1e-12)
    assert gaussian_features(X.astype(np.float32), T.astype(np.float32), 2.0).dtype == np.float32


def test_variance_width_dense_and_sparse_agree():
    rng = np.random.default_rng(2)
    X = rng.uniform(size=(200, 6))
    expected = X.var(axis=0).sum()
    assert variance_kernel_width(X) == pytest.approx(expected)
    assert variance_kernel_width(sp.csr_matrix(X)) == pytest.approx(expected)


def test_local_width_scales_with_data_squared_and_ignores_shift():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 3))
    base = local_kernel_width(X, random_state=0)
    assert local_kernel_width(7 * X + 11, random_state=0) == pytest.approx(49 * base, rel=1e-9)
    # Much narrower than the cloud's total variance for a low-dimensional sheet.
    sheet = np.column_stack([rng.uniform(size=3000), rng.uniform(size=3000), np.zeros(3000)])
    assert local_kernel_width(sheet, random_state=0) < 0.1 * variance_kernel_width(sheet)


@pytest.mark.parametrize("value, error, match", [
    (0, ValueError, "> 0"), (-2.0, ValueError, "> 0"), (np.inf, ValueError, "> 0"),
    ("wide", ValueError, "'auto' or 'variance'"), (None, TypeError, "positive number"),
])
def test_resolve_kernel_width_errors(value, error, match):
    with pytest.raises(error, match=match):
        resolve_kernel_width(np.eye(3), value)


def test_auto_width_is_the_variance_rule_unless_five_times_the_local_rule():
    from landmarking.datasets import make_concentric_circles

    circles, _ = make_concentric_circles(500, random_state=0)
    cloud = np.random.default_rng(0).normal(size=(500, 20))  # many intrinsic dimensions
    for X in (circles, cloud):
        local = local_kernel_width(X, random_state=0)
        variance = variance_kernel_width(X)
        assert auto_kernel_width(X, random_state=0) == (
            local if variance > 5 * local else variance)
    assert auto_kernel_width(circles, random_state=0) == local_kernel_width(
        circles, random_state=0)
    assert auto_kernel_width(cloud, random_state=0) == variance_kernel_width(cloud)


def test_local_width_falls_back_to_the_variance_rule_on_duplicated_rows():
    # 50 copies of each of 5 rows: every row's 20th nearest neighbour is a copy.
    X = np.repeat(np.random.default_rng(1).normal(size=(5, 3)), 50, axis=0)
    assert local_kernel_width(X, random_state=0) == variance_kernel_width(X) > 0
    assert auto_kernel_width(X, random_state=0) == variance_kernel_width(X)


@pytest.mark.parametrize("dtype, shape, scale, shift", [
    (np.float32, (3000, 784), 1.0, 0.0),     # MNIST-like
    (np.float32, (2500, 33), 100.0, 7.0),    # far from the origin
    (np.float64, (2000, 500), 1e3, -5.0),
])
def test_compiled_column_moments_give_numpys_bits(monkeypatch, dtype, shape, scale, shift):
    import landmarking.kernels as K
    from landmarking.kernels import sample_mean_std

    X = (np.random.default_rng(0).standard_normal(shape) * scale + shift).astype(dtype)
    monkeypatch.setattr(K, "COMPILED_MOMENTS_MIN_VALUES", 1)
    compiled = (K.column_mean_std(X), K.variance_kernel_width(X), sample_mean_std(X))
    assert K.compiled_moments_apply(X, X.size)
    monkeypatch.setattr(K, "COMPILED_MOMENTS_MIN_VALUES", 10**18)
    numpy = (K.column_mean_std(X), K.variance_kernel_width(X), sample_mean_std(X))
    assert not K.compiled_moments_apply(X, X.size)
    for (mean_c, std_c), (mean_n, std_n) in ((compiled[0], numpy[0]), (compiled[2], numpy[2])):
        np.testing.assert_array_equal(mean_c, mean_n)
        np.testing.assert_array_equal(std_c, std_n)
    assert compiled[1] == numpy[1]


def test_compiled_column_moments_leave_what_numpy_sums_pairwise_to_numpy():
    from landmarking.kernels import compiled_moments_apply

    X = np.ones((5000, 500))
    assert compiled_moments_apply(X, 2**30)
    assert not compiled_moments_apply(np.asfortranarray(X), 2**30)  # F order: pairwise
    assert not compiled_moments_apply(X[:, :1], 2**30)               # one column: pairwise
    assert not compiled_moments_apply(X.astype(np.float16), 2**30)
    assert not compiled_moments_apply(sp.csr_matrix(X), 2**30)
    assert not compiled_moments_apply(X, 10)                         # too small to pay
