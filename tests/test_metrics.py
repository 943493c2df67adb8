import numpy as np
import pytest
from scipy import sparse

from landmarking.metrics import (
    affine_normalized_mse,
    mean_nearest_neighbor_distance,
    procrustes_align,
    procrustes_error,
    span_error,
)


def test_procrustes_error_is_zero_for_similarity_transforms():
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(100, 3))
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    moved = 4.0 * ref @ q + np.array([1.0, -2.0, 3.0])
    assert procrustes_error(moved, ref) < 1e-12
    np.testing.assert_allclose(procrustes_align(moved, ref), ref, atol=1e-10)


def test_procrustes_error_of_noise_is_near_one_and_of_perturbation_small():
    rng = np.random.default_rng(1)
    ref = rng.normal(size=(2000, 2))
    assert procrustes_error(rng.normal(size=(2000, 2)), ref) > 0.95
    err = procrustes_error(ref + 0.01 * rng.normal(size=ref.shape), ref)
    assert 0.005 < err < 0.02


def test_affine_normalized_mse_is_invariant_to_affine_maps_and_counts_distortion():
    rng = np.random.default_rng(2)
    target = rng.uniform(size=(400, 2))
    A = np.array([[2.0, 0.5], [-1.0, 3.0]])
    assert affine_normalized_mse(target @ A + 7, target) < 1e-20
    spacing = mean_nearest_neighbor_distance(target)
    noisy = target + spacing * rng.normal(size=target.shape) / np.sqrt(2)
    assert 0.5 < affine_normalized_mse(noisy, target) < 1.5


def test_span_error_is_the_least_squares_residual_and_a_floor_under_procrustes():
    rng = np.random.default_rng(3)
    B = rng.normal(size=(300, 8))
    ref = rng.normal(size=(300, 3))
    err, cols = span_error(B, ref, per_column=True)
    # slow reference: dense least squares with an explicit intercept column
    design = np.hstack([B, np.ones((300, 1))])
    resid = ref - design @ np.linalg.lstsq(design, ref, rcond=None)[0]
    centred = ref - ref.mean(axis=0)
    assert err == pytest.approx(np.linalg.norm(resid) / np.linalg.norm(centred), rel=1e-10)
    np.testing.assert_allclose(cols, np.linalg.norm(resid, axis=0)
                               / np.linalg.norm(centred, axis=0), rtol=1e-10)
    # any embedding built from B, aligned by Procrustes, does no better
    for _ in range(5):
        assert procrustes_error(B @ rng.normal(size=(8, 3)), ref) >= err - 1e-12
    # sparse and dense bases agree; a duplicated column is handled (rank-deficient)
    Bs = sparse.csr_matrix(np.where(np.abs(B) > 1.0, B, 0.0))
    dup = sparse.hstack([Bs, Bs[:, :1]], format="csr")
    assert span_error(dup, ref) == pytest.approx(span_error(Bs.toarray(), ref), rel=1e-9)
    # a reference inside the span (plus a translation) scores zero
    assert span_error(B, B[:, :3] @ rng.normal(size=(3, 3)) - 2.0) < 1e-12
    # rows summing to one, as LLL's Z: the constant is in the span twice over
    Z = np.abs(B) / np.abs(B).sum(axis=1, keepdims=True)
    assert span_error(sparse.csr_matrix(Z), Z @ rng.normal(size=(8, 3)) + 5.0) < 1e-8
    inside = span_error(Z, ref)
    assert inside == pytest.approx(
        np.linalg.norm(ref - Z @ np.linalg.lstsq(Z, ref, rcond=None)[0])
        / np.linalg.norm(centred), rel=1e-9)


def test_metric_shape_errors():
    with pytest.raises(ValueError, match="same shape"):
        procrustes_error(np.zeros((3, 2)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="same number of rows"):
        affine_normalized_mse(np.zeros((3, 2)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="same number of rows"):
        span_error(np.zeros((3, 2)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="constant"):
        span_error(np.eye(3), np.ones((3, 2)))
    with pytest.raises(ValueError, match="must be finite"):
        span_error(np.eye(3), np.array([[0.0, 1.0], [np.nan, 2.0], [3.0, 4.0]]))
    with pytest.raises(ValueError, match="at most 12000"):
        span_error(sparse.csr_matrix((4, 12_001)), np.zeros((4, 2)))
