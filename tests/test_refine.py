"""LOBPCG refinement of spectral embeddings against dense exact eigenvectors."""

import sys

import numpy as np
import pytest
from scipy import sparse
from scipy.linalg import subspace_angles
from sklearn.exceptions import ConvergenceWarning

from landmarking import LocallyLinearLandmarks
from landmarking.graph import gaussian_affinity, normalized_laplacian, resolve_bandwidth
from landmarking.lll.start_and_refit import fit_landmark_embedding, lll_refined_embedding, lll_start
from landmarking.metrics import procrustes_error
from landmarking.neighbors import nearest_neighbors
from landmarking.spectral.laplacian import LaplacianEigenmaps, spectral_embedding
from landmarking.spectral.refine_eigenvectors import (
    _amg_hierarchy,
    _ritz,
    _v_cycle,
    refine_spectral_embedding,
)

# "amg" needs pyamg, the `amg` extra that `make install` installs: without it the
# "amg" case fails rather than vanish (test_amg_without_pyamg_names_the_extra below
# checks the error a user without it gets).
PRECONDITIONERS = ["none", "amg"]


def _graph(n=400, seed=0, k=10):
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 3 * np.pi, n))
    X = np.c_[t * np.cos(t), rng.uniform(0, 5, n), t * np.sin(t)]
    d, i = nearest_neighbors(X, k)
    return X, gaussian_affinity(d, i, resolve_bandwidth("auto", d))


def _exact(W, d):
    return spectral_embedding(W, d, eigen_solver="dense")


@pytest.mark.parametrize("preconditioner", PRECONDITIONERS)
def test_refined_matches_dense_eigenvectors(preconditioner):
    X, W = _graph()
    exact, lam = _exact(W, 3)
    rng = np.random.default_rng(1)
    # A perturbed start in a mixed basis: refinement must recover the subspace.
    start = exact @ rng.normal(size=(3, 3)) + 0.05 * rng.normal(size=exact.shape)
    emb, mu, info = refine_spectral_embedding(W, start, tol=1e-10, max_iter=500,
                                              preconditioner=preconditioner)
    assert info.converged and info.preconditioner == preconditioner
    assert np.max(subspace_angles(emb, exact)) < 1e-6
    for j in range(3):  # each eigenvector on its own (distinct eigenvalues here)
        assert np.max(subspace_angles(emb[:, [j]], exact[:, [j]])) < 1e-6
    np.testing.assert_allclose(mu, lam, rtol=1e-8)
    # The library's normalisation and signs: x^T D x = 1, largest entry positive.
    deg = np.asarray(W.sum(axis=1)).ravel()
    np.testing.assert_allclose(np.einsum("ij,i,ij->j", emb, deg, emb), 1.0, rtol=1e-8)
    np.testing.assert_allclose(emb, exact, atol=1e-6)
    assert np.all(info.residuals <= 1e-10)
    assert np.all(info.start_residuals > 1e-4)


def test_amg_without_pyamg_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyamg", None)  # `import pyamg` fails, as if absent
    _, W = _graph(200)
    start = np.random.default_rng(0).normal(size=(200, 2))
    with pytest.raises(ImportError, match=r"preconditioner='amg' needs pyamg, which is not "
                       r"installed; .*pip install \"landmarking\[amg\]\".*"
                       r"preconditioner='none'"):
        refine_spectral_embedding(W, start, preconditioner="amg")


def test_lll_start_needs_few_iterations_and_extra_columns_are_dropped():
    X, W = _graph(600, seed=2)
    exact, _ = _exact(W, 2)
    start = lll_start(X, W, 4, n_landmarks=60, random_state=0)
    assert start.shape == (600, 4)
    assert procrustes_error(start[:, :2], exact) > 1e-4  # LLL alone is not exact
    emb, mu, info = refine_spectral_embedding(W, start, n_components=2, tol=1e-10,
                                              max_iter=500)
    assert emb.shape == (600, 2) and mu.shape == (2,)
    assert np.max(subspace_angles(emb, exact)) < 1e-6


def test_disconnected_graph_and_bad_start_get_clear_errors():
    _, W = _graph(200)
    two = sparse.block_diag([W, W]).tocsr()
    with pytest.raises(ValueError, match="2 connected components"):
        refine_spectral_embedding(two, np.ones((400, 2)))
    good = _exact(W, 2)[0]
    with pytest.raises(ValueError, match=r"start must have shape \(200, n_columns\)"):
        refine_spectral_embedding(W, good[:150])
    with pytest.raises(ValueError, match=r"start must have shape"):
        refine_spectral_embedding(W, good[:, 0])
    with pytest.raises(ValueError, match="start has 2 columns but n_components=3"):
        refine_spectral_embedding(W, good, n_components=3)
    bad = good.copy()
    bad[5, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        refine_spectral_embedding(W, bad)
    with pytest.raises(ValueError, match="linearly dependent"):
        refine_spectral_embedding(W, np.c_[good[:, 0], 2 * good[:, 0]])
    with pytest.raises(ValueError, match="preconditioner must be one of"):
        refine_spectral_embedding(W, good, preconditioner="ilu")
    with pytest.raises(ValueError, match="square scipy sparse"):
        refine_spectral_embedding(W.toarray(), good)


def test_small_graph_is_solved_densely():
    # LOBPCG refuses a block over a fifth of the nodes: the dense route answers.
    _, W = _graph(30, k=6)
    exact, lam = _exact(W, 6)
    start = exact + 0.01 * np.random.default_rng(0).normal(size=exact.shape)
    emb, mu, info = refine_spectral_embedding(W, start, tol=1e-10)
    assert info.converged and info.n_iter == 0
    assert np.max(subspace_angles(emb, exact)) < 1e-6
    np.testing.assert_allclose(mu, lam, rtol=1e-8)


def test_unconverged_refinement_warns():
    X, W = _graph(500, seed=3)
    start = lll_start(X, W, 2, n_landmarks=20, random_state=0)
    with pytest.warns(ConvergenceWarning, match="raise max_iter"):
        _, _, info = refine_spectral_embedding(W, start, tol=1e-14, max_iter=2,
                                               preconditioner="none")
    assert not info.converged and info.n_iter <= 2


def test_estimators_refine_to_exact_laplacian_eigenmaps():
    X, _ = _graph(700, seed=4)
    dense = LaplacianEigenmaps(n_components=2, n_neighbors=10,
                               eigen_solver="dense").fit(X)
    refined = LaplacianEigenmaps(n_components=2, n_neighbors=10, tol=1e-10,
                                 max_iter=500, eigen_solver="lll-refine",
                                 random_state=0).fit(X)
    assert refined.refine_result_.converged and dense.refine_result_ is None
    assert np.max(subspace_angles(refined.embedding_, dense.embedding_)) < 1e-6
    np.testing.assert_allclose(refined.eigenvalues_, dense.eigenvalues_, rtol=1e-7)

    plain = LocallyLinearLandmarks(n_components=2, n_landmarks=50, n_neighbors=10,
                                   random_state=0).fit(X)
    lll = LocallyLinearLandmarks(n_components=2, n_landmarks=50, n_neighbors=10,
                                 random_state=0, refine=True).fit(X)
    assert procrustes_error(plain.embedding_, dense.embedding_) > 1e-3
    assert procrustes_error(lll.embedding_, dense.embedding_) < 1e-4  # tol 1e-6
    assert lll.refine_result_.converged and "refine" in lll.timings_
    # The refitted landmark coordinates map the training points near the
    # refined embedding (up to the span of Z, as for LLL itself).
    assert procrustes_error(lll.transform(X), lll.embedding_) < 2 * procrustes_error(
        plain.embedding_, dense.embedding_) + 0.05
    with pytest.raises(ValueError, match="needs method='lll'"):
        LocallyLinearLandmarks(method="le-z", refine=True).fit(X)


def test_fit_landmark_embedding_recovers_coordinates_in_the_span():
    rng = np.random.default_rng(5)
    n, L = 300, 30
    cols = np.c_[np.arange(n) % L, (np.arange(n) + 7) % L]
    w = rng.uniform(0.2, 0.8, n)
    Z = sparse.csr_matrix((np.c_[w, 1 - w].ravel(), cols.ravel(),
                           np.arange(0, 2 * n + 1, 2)), shape=(n, L))
    T = rng.normal(size=(L, 2))
    got = fit_landmark_embedding(Z, np.asarray(Z @ T), -T + 0.1)
    np.testing.assert_allclose(got, T, atol=1e-6)


def _random_weights(rng, n, L):
    """An (n, L) CSR matrix like LLL's Z: three random landmarks per row, with
    convex weights."""
    cols = np.c_[rng.integers(0, L, n), rng.integers(0, L, n), rng.integers(0, L, n)]
    w = rng.dirichlet(np.ones(3), n)
    Z = sparse.csr_matrix((w.ravel(), cols.ravel(), np.arange(0, 3 * n + 1, 3)),
                          shape=(n, L))
    Z.sum_duplicates()
    return Z


def test_fit_landmark_embedding_by_cg_matches_the_direct_solve(monkeypatch):
    # Above DIRECT_LIMIT landmarks the refit runs conjugate gradients instead of
    # a sparse LU; both solve the same ridge system.
    from landmarking.lll import start_and_refit as lll_refine
    rng = np.random.default_rng(6)
    n, L = 2000, 120
    Z = _random_weights(rng, n, L)
    embedding = rng.normal(size=(n, 3))
    previous = rng.normal(size=(L, 3))
    direct = fit_landmark_embedding(Z, embedding, previous.copy())
    monkeypatch.setattr(lll_refine, "DIRECT_LIMIT", 0)
    by_cg = fit_landmark_embedding(Z, embedding, previous.copy())
    np.testing.assert_allclose(by_cg, direct, rtol=1e-7, atol=1e-8 * np.abs(direct).max())


def test_guard_columns_need_not_converge_and_save_iterations():
    X, W = _graph(800, seed=6)
    exact, lam = _exact(W, 3)
    start = lll_start(X, W, 9, n_landmarks=40, random_state=0)
    runs = {}
    for g in (0, 6):
        emb, mu, info = refine_spectral_embedding(W, start[:, :3 + g], n_components=3,
                                                  tol=1e-9, max_iter=1000,
                                                  preconditioner="none")
        assert info.converged and emb.shape == (800, 3) and info.residuals.shape == (3,)
        assert np.max(subspace_angles(emb, exact)) < 1e-6
        np.testing.assert_allclose(mu, lam, rtol=1e-8)
        runs[g] = info.n_iter
    # The rate depends on the gap to the first eigenvalue outside the block.
    assert runs[6] < runs[0]


def test_auto_preconditioner_is_none_and_lll_refined_embedding_adds_guards():
    X, W = _graph(500, seed=7)
    exact, _ = _exact(W, 2)
    emb, _, info = lll_refined_embedding(X, W, 2, tol=1e-9, max_iter=500, random_state=0)
    assert info.preconditioner == "none" and "start" in info.timings
    assert np.max(subspace_angles(emb, exact)) < 1e-6
    with pytest.raises(ValueError, match="n_extra must be >= 0"):
        lll_refined_embedding(X, W, 2, n_extra=-1)


def test_ritz_drops_dependent_columns():
    rng = np.random.default_rng(8)
    A = np.diag(np.arange(1.0, 41.0))
    Q = np.linalg.qr(rng.normal(size=(40, 5)))[0]
    S = np.c_[Q, 3.0 * Q[:, :2] + 1e-15 * rng.normal(size=(40, 2))]  # repeats
    mu, C = _ritz(S, A @ S, 3)
    X = S @ C
    np.testing.assert_allclose(X.T @ X, np.eye(3), atol=1e-8)
    H = Q.T @ A @ Q
    np.testing.assert_allclose(mu, np.linalg.eigvalsh(H)[:3], rtol=1e-10)


def test_start_too_wide_for_the_graph_is_refused():
    _, W = _graph(30, k=6)
    with pytest.raises(ValueError, match="start has 29 columns for a graph of 30 nodes"):
        refine_spectral_embedding(W, np.random.default_rng(0).normal(size=(30, 29)))


def test_v_cycle_is_pyamgs_preconditioner():
    # The lean cycle skips only pyamg's convergence checks: the same bits.
    _, W = _graph(600)
    L, sqrt_deg = normalized_laplacian(W)
    hierarchy = _amg_hierarchy(L, sqrt_deg)
    assert len(hierarchy.levels) >= 2
    b = np.random.default_rng(0).standard_normal(L.shape[0])
    np.testing.assert_array_equal(_v_cycle(hierarchy, b), hierarchy.aspreconditioner() @ b)


def test_fit_landmark_embedding_warns_when_cg_stops_short(monkeypatch):
    # cg's convergence flag is read: stopped after 2 iterations it leaves a residual
    # far above its tolerance, and a ConvergenceWarning names that residual and
    # the way out; the unconverged iterate is still returned.
    from sklearn.exceptions import ConvergenceWarning

    from landmarking.lll import start_and_refit as lll_refine

    rng = np.random.default_rng(6)
    n, L = 2000, 120
    Z = _random_weights(rng, n, L)
    embedding, previous = rng.normal(size=(n, 2)), rng.normal(size=(L, 2))
    monkeypatch.setattr(lll_refine, "DIRECT_LIMIT", 0)
    cg = lll_refine.cg
    monkeypatch.setattr(lll_refine, "cg", lambda *a, **kw: cg(*a, **{**kw, "maxiter": 2}))
    with pytest.warns(ConvergenceWarning,
                      match=r"\(2 of 2 columns .*\) stopped after 2 iterations with "
                            r"relative residual up to [0-9.e+-]+ .*Use at most \d+ "
                            r"landmarks \(a direct solve\), or refine=False"):
        got = fit_landmark_embedding(Z, embedding, previous)
    assert got.shape == (L, 2) and np.all(np.isfinite(got))
