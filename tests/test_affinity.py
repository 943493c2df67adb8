"""Gaussian k-NN affinities, degrees, Laplacians and graph checks."""

import warnings

import numpy as np
import pytest
from scipy import sparse

from landmarking.graph import (
    DisconnectedGraphWarning,
    check_affinity,
    check_connected,
    degree,
    gaussian_affinity,
    knn_affinity,
    laplacian,
    locality_order,
    threaded_product,
)
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


def _random_graph(rng, n, density, *, symmetric=True, explicit_zeros=0):
    """Random sparse graph; ``explicit_zeros`` one-sided stored zeros added."""
    A = sparse.random(n, n, density=density, random_state=rng, format="csr")
    if symmetric:
        A = A.maximum(A.T).tocsr()
    rows, cols = rng.integers(0, n, (2, explicit_zeros))
    dense = A.toarray()
    fresh = (dense[rows, cols] == 0) & (dense[cols, rows] == 0) & (rows != cols)
    rows, cols = rows[fresh], cols[fresh]
    A = A.tocoo()
    W = sparse.csr_matrix((np.concatenate([A.data, np.zeros(rows.size)]),
                           (np.concatenate([A.row, rows]), np.concatenate([A.col, cols]))),
                          shape=(n, n))
    W.sum_duplicates()
    assert W.nnz == A.nnz + np.unique(rows * n + cols).size  # the zeros are stored
    return W


@pytest.mark.parametrize("compiled", [True, False])
def test_symmetry_check_matches_dense_reference(compiled, monkeypatch):
    # The compiled pass (large graphs) and scipy's route (small ones) must both
    # agree with |W - W^T| <= 1e-10 max|W| on every kind of input: symmetric,
    # nudged, one-sided entries, one-sided explicit zeros (symmetric in value,
    # not in pattern), duplicates, unsorted indices.
    from landmarking import graph as affinity
    from landmarking._graph_loops import symmetry_pass as _symmetry_pass
    from landmarking.graph import _is_symmetric

    monkeypatch.setattr(affinity, "COMPILED_MIN_NNZ", 0 if compiled else 1 << 60)

    rng = np.random.default_rng(10)
    cases = []
    for _ in range(20):
        W = _random_graph(rng, 40, 0.1)
        cases.append(("symmetric", W, True))
        V = W.copy()
        V.data[rng.integers(V.nnz)] *= 1 + 1e-6
        cases.append(("nudged", V, False))
        V = W.copy()
        V.data[rng.integers(V.nnz)] *= 1 + 1e-13
        cases.append(("within tolerance", V, True))
        cases.append(("one-sided", _random_graph(rng, 40, 0.1, symmetric=False), False))
        cases.append(("explicit zeros", _random_graph(rng, 40, 0.1, explicit_zeros=5), True))
    W = cases[0][1]
    counts = np.diff(W.indptr)
    # Every entry stored twice, halved: duplicates, not canonical.
    starts = np.repeat(W.indptr[:-1], 2 * counts)
    within = np.arange(2 * W.nnz) - np.repeat(2 * W.indptr[:-1], 2 * counts)
    src = starts + within % np.repeat(counts, 2 * counts)
    dup = sparse.csr_matrix((W.data[src] / 2, W.indices[src],
                             np.concatenate([[0], np.cumsum(2 * counts)])), shape=W.shape)
    assert dup.nnz == 2 * W.nnz and not dup.has_canonical_format
    cases.append(("duplicates", dup, True))
    unsorted = W.copy()
    for r in range(W.shape[0]):
        lo, hi = unsorted.indptr[r], unsorted.indptr[r + 1]
        unsorted.indices[lo:hi] = unsorted.indices[lo:hi][::-1]
        unsorted.data[lo:hi] = unsorted.data[lo:hi][::-1]
    unsorted.has_sorted_indices = False
    cases.append(("unsorted", unsorted, True))
    kinds = set()
    fast = {"symmetric": {1}, "nudged": {0}, "one-sided": {-1}, "explicit zeros": {-1}}
    for name, V, expected in cases:
        if name in fast:  # the compiled pass itself, where it decides
            assert V.has_canonical_format
            tol = 1e-10 * np.abs(V.data).max()
            for n_parts in (1, 2, 3, 7):  # rows split in ranges, one per thread
                for n_threads in (1, 3):
                    assert _symmetry_pass(V.indptr, V.indices, V.data, tol, n_parts,
                                          n_threads) in fast[name]
            # int64 indices (graphs of over 2^31 entries), float32 weights
            assert _symmetry_pass(V.indptr.astype(np.int64), V.indices.astype(np.int64),
                                  V.data, tol) in fast[name]
            assert _symmetry_pass(V.indptr, V.indices, V.data.astype(np.float32),
                                  tol) in fast[name]
        D = V.toarray()
        reference = np.abs(D - D.T).max() <= 1e-10 * np.abs(D).max()
        assert reference == expected, name
        assert _is_symmetric(sparse.csr_matrix(V)) == expected, name
        kinds.add(name)
        if not expected:
            with pytest.raises(ValueError, match="symmetric"):
                check_affinity(V)
    assert len(kinds) == 7


@pytest.mark.parametrize("compiled", [True, False])
def test_connected_components_match_scipy(compiled, monkeypatch):
    from scipy.sparse.csgraph import connected_components

    from landmarking import graph as affinity
    from landmarking._graph_loops import component_labels

    monkeypatch.setattr(affinity, "COMPILED_MIN_NNZ", 0 if compiled else 1 << 60)

    rng = np.random.default_rng(11)
    seen = set()
    for trial in range(30):
        n = int(rng.integers(5, 200))
        W = _random_graph(rng, n, float(rng.uniform(0.002, 0.03)),
                          symmetric=bool(trial % 2), explicit_zeros=trial % 3)
        count, labels = connected_components(W, directed=False)
        if compiled:  # labelled in order of first row, as scipy does; any index dtype
            for dtype in (np.int32, np.int64):
                np.testing.assert_array_equal(
                    component_labels(W.indptr.astype(dtype), W.indices.astype(dtype)),
                    labels)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DisconnectedGraphWarning)
            assert check_connected(W) == count
        seen.add(count > 1)
        if count > 1:
            smallest = np.bincount(labels).min()
            with pytest.warns(DisconnectedGraphWarning,
                              match=f"{count} connected components .the smallest has "
                                    f"{smallest} points"):
                check_connected(W)
    assert seen == {True, False}  # both outcomes were exercised


def test_knn_affinity_does_not_depend_on_n_jobs():
    X = np.random.default_rng(12).normal(size=(300, 4))
    one = knn_affinity(X, 7, 1.0, n_jobs=1)
    two = knn_affinity(X, 7, 1.0, n_jobs=2)
    assert one.nnz > 0 and (one != two).nnz == 0


def test_neighbor_graph_is_knn_affinity_with_the_resolved_width():
    from landmarking.graph import neighbor_graph, resolve_bandwidth

    X = np.random.default_rng(41).normal(size=(120, 3))
    timings = {}
    W, width = neighbor_graph(X, 7, "auto", timings=timings)
    distances, _ = nearest_neighbors(X, 7)
    assert width == resolve_bandwidth("auto", distances)
    assert abs(W - knn_affinity(X, 7, width)).max() == 0
    assert set(timings) == {"neighbors", "affinity"}
    with pytest.raises(ValueError, match="n_neighbors=120 must be smaller than the number"):
        neighbor_graph(X, 120, 1.0)


def test_graph_of_neighbors_is_neighbor_graph_after_the_search():
    from landmarking.graph import check_affinity, graph_of_neighbors, neighbor_graph

    X = np.random.default_rng(42).normal(size=(150, 4))
    distances, indices = nearest_neighbors(X, 6)
    for symmetrize in ("union", "mean"):
        timings = {}
        W, width = graph_of_neighbors(distances, indices, "auto", symmetrize=symmetrize,
                                      timings=timings)
        W_ref, width_ref = neighbor_graph(X, 6, "auto", symmetrize=symmetrize)
        assert width == width_ref and set(timings) == {"affinity"}
        assert (W != W_ref).nnz == 0
        # A graph built here passes every check of a given one unchanged.
        assert (check_affinity(W, 150) != W).nnz == 0
    # A width so small that every weight underflows leaves points without an edge.
    with pytest.raises(ValueError, match="points have no edge in the affinity graph"):
        graph_of_neighbors(distances, indices, 1e-3)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_threaded_product_is_scipys_product_on_any_thread_count(index_dtype):
    # 40,000 rows: three parts of the compiled product's 16,384 rows. Each row's
    # sum of at most 12 terms, in stored order: within 12 unit roundoffs of its
    # absolute terms' sum of scipy's, and the same bits on 1, 2 or 3 threads.
    from landmarking._parallel import thread_limits

    rng = np.random.default_rng(3)
    n = 40_000
    rows = np.repeat(np.arange(n), 12)
    S = sparse.csr_matrix((rng.normal(size=12 * n), (rows, rng.integers(0, n, 12 * n))),
                          shape=(n, n))  # duplicates summed: at most 12 terms a row
    S.indices = S.indices.astype(index_dtype)
    S.indptr = S.indptr.astype(index_dtype)
    x = rng.normal(size=n)
    want = S @ x
    bound = 12 * np.finfo(float).eps * (abs(S) @ np.abs(x))
    results = []
    for threads in (1, 2, 3):
        with thread_limits(threads):
            results.append(threaded_product(S) @ x)
    assert np.all(np.abs(results[0] - want) <= bound)
    for other in results[1:]:
        np.testing.assert_array_equal(other, results[0])


def test_locality_order_puts_a_shuffled_chains_neighbours_near():
    # A chain 0-1-2-... with its rows shuffled: in the order found, every edge
    # joins rows at most 1 apart (a band), where the shuffled rows lay far apart.
    n = 1000
    chain = sparse.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1], format="csr")
    shuffle = np.random.default_rng(0).permutation(n)
    S = chain[shuffle][:, shuffle]
    order = locality_order(S)
    np.testing.assert_array_equal(np.sort(order), np.arange(n))
    band = S[order][:, order].tocoo()
    assert np.max(np.abs(band.row - band.col)) == 1
    scattered = S.tocoo()
    assert np.max(np.abs(scattered.row - scattered.col)) > n // 2


def test_threaded_product_rejects_a_malformed_csr_matrix():
    # A column index past the end would make the compiled product read outside x:
    # refused with an error that says what to do, before any product runs.
    S = sparse.csr_matrix(np.eye(4))
    S.indices[2] = 9
    with pytest.raises(ValueError, match="not a valid CSR matrix.*repair its indices"):
        threaded_product(S)
    S = sparse.csr_matrix(np.eye(4))
    S.indptr[1:3] = [3, 1]  # row pointers going back
    with pytest.raises(ValueError, match="not a valid CSR matrix"):
        threaded_product(S)
    with pytest.raises(ValueError, match="dimension mismatch"):
        threaded_product(sparse.csr_matrix(np.eye(4))) @ np.ones(5)
