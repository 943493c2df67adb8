"""Gaussian k-NN affinities, degrees, Laplacians and graph checks."""

import warnings

import numpy as np
import pytest
from scipy import sparse

from landmarking.embedding.affinity import (DisconnectedGraphWarning, check_affinity,
                                            check_connected, degree, gaussian_affinity,
                                            knn_affinity, laplacian)
from landmarking.neighbors import nearest_neighbors


def _dense_reference(X, k, sigma):
    """Slow reference: full distance matrix, k-NN mask, union symmetrisation."""
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    n = len(X)
    mask = np.zeros((n, n), bool)
    order = np.argsort(d2 + np.diag(np.full(n, np.inf)), axis=1)[:, :k]
    mask[np.arange(n)[:, None], order] = True
    mask |= mask.T
    return np.where(mask, np.exp(-d2 / (2 * sigma ** 2)), 0.0), mask


def test_gaussian_affinity_matches_dense_reference():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    W = knn_affinity(X, 6, 0.7)
    ref, _ = _dense_reference(X, 6, 0.7)
    np.testing.assert_allclose(W.toarray(), ref, rtol=1e-12, atol=1e-15)
    assert (W != W.T).nnz == 0
    assert not W.diagonal().any()


def test_mean_symmetrisation_halves_one_sided_edges():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 2))
    d, i = nearest_neighbors(X, 4)
    W_union = gaussian_affinity(d, i, 1.0).toarray()
    W_mean = gaussian_affinity(d, i, 1.0, symmetrize="mean").toarray()
    directed = np.zeros((80, 80), bool)
    directed[np.arange(80)[:, None], i] = True
    both = directed & directed.T
    one = directed ^ directed.T
    np.testing.assert_allclose(W_mean[both], W_union[both])
    np.testing.assert_allclose(W_mean[one], 0.5 * W_union[one])
    assert one.any()


def test_degree_and_laplacian():
    rng = np.random.default_rng(2)
    W = knn_affinity(rng.normal(size=(60, 3)), 5, 1.3)
    L = laplacian(W)
    np.testing.assert_allclose(np.asarray(L.sum(axis=1)).ravel(), 0, atol=1e-12)
    np.testing.assert_allclose(L.diagonal(), degree(W))
    x = rng.normal(size=60)
    # x^T L x = 1/2 sum_nm w_nm (x_n - x_m)^2 >= 0
    Wd = W.toarray()
    quad = 0.5 * np.sum(Wd * (x[:, None] - x[None]) ** 2)
    assert x @ (L @ x) == pytest.approx(quad, rel=1e-10)


def test_disconnected_graph_warns_and_counts():
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(size=(40, 2)), rng.normal(size=(40, 2)) + 100])
    W = knn_affinity(X, 5, 1.0)
    with pytest.warns(DisconnectedGraphWarning, match="2 connected components"):
        assert check_connected(W) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_connected(knn_affinity(X[:40], 5, 1.0)) == 1


def test_check_affinity_errors():
    W = sparse.csr_matrix(np.array([[0, 1.0], [1.0, 0]]))
    with pytest.raises(TypeError, match="scipy sparse matrix"):
        check_affinity(W.toarray())
    with pytest.raises(ValueError, match="must be square"):
        check_affinity(sparse.csr_matrix(np.ones((2, 3))))
    with pytest.raises(ValueError, match="symmetric"):
        check_affinity(sparse.csr_matrix(np.array([[0, 1.0], [0.5, 0]])))
    with pytest.raises(ValueError, match="nonnegative"):
        check_affinity(-W)
    with pytest.raises(ValueError, match="but X has 3 rows"):
        check_affinity(W, 3)
    with pytest.raises(ValueError, match="no edge"):
        check_affinity(sparse.csr_matrix((3, 3)))
    # Self-loops are dropped without touching the caller's matrix.
    looped = sparse.csr_matrix(np.array([[2.0, 1.0], [1.0, 0]]))
    assert check_affinity(looped).diagonal().sum() == 0
    assert looped[0, 0] == 2.0


@pytest.mark.parametrize("bad", [0.0, -1.0, np.inf])
def test_bad_bandwidth(bad):
    with pytest.raises(ValueError, match="bandwidth must be a finite number > 0"):
        gaussian_affinity(np.ones((2, 1)), np.array([[1], [0]]), bad)
