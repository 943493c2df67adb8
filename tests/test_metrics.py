import numpy as np
import pytest

from landmarking.metrics import (affine_normalized_mse, mean_nearest_neighbor_distance,
                                 procrustes_align, procrustes_error)


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


def test_metric_shape_errors():
    with pytest.raises(ValueError, match="same shape"):
        procrustes_error(np.zeros((3, 2)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="same number of rows"):
        affine_normalized_mse(np.zeros((3, 2)), np.zeros((4, 2)))
