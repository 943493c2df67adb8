"""The k-NN graph from the landmarks' cells (landmarking.lll.cell_graph)."""

import numpy as np
import pytest
from sklearn.datasets import make_swiss_roll

from landmarking._parallel import thread_limits
from landmarking.lll._cpu import _LocalMap, _weights_of_block
from landmarking.lll.cell_graph import cell_graph
from landmarking.lll.estimator import LocallyLinearLandmarks
from landmarking.neighbors import exact_knn


def _nearest_landmarks(X, T, k):
    idx, _ = _weights_of_block(X, _LocalMap(T, k, 1e-3, X.shape[1], 4096))
    return idx


def _recall(indices, exact):
    return np.mean([len(set(a) & set(b)) for a, b in zip(indices, exact, strict=True)]) / \
        exact.shape[1]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lists_are_the_exact_nearest_of_their_candidates(dtype):
    # A list holds exact distances, sorted, never the point itself, and (with
    # candidates enough: every candidate computed here) the k nearest of the
    # points in the cells the point's cell probes: a brute force over the same
    # candidates agrees.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1200, 12)).astype(dtype)
    T = X[::20].astype(np.float64)
    nearest = _nearest_landmarks(X, T, 3)
    d, i = cell_graph(X, T, nearest, 6)
    X64 = X.astype(np.float64)
    np.testing.assert_allclose(d, np.linalg.norm(X64[i] - X64[:, None], axis=2), rtol=1e-12)
    assert np.all(np.diff(d, axis=1) >= 0) and not np.any(i == np.arange(1200)[:, None])
    cells = nearest[:, 0]
    for q in range(0, 1200, 37):
        mates = np.flatnonzero(cells == cells[q])
        probed = np.unique(nearest[mates])
        cand = np.flatnonzero(np.isin(cells, probed))
        cand = cand[cand != q]
        dist = np.linalg.norm(X64[cand] - X64[q], axis=1)
        np.testing.assert_array_equal(i[q], cand[np.lexsort((cand, dist))][:6])


def test_recall_on_a_seeded_roll_and_no_dependence_on_threads():
    # On a manifold of low dimension the cells hold the neighbours: recall >= 0.99
    # against the exact lists; the lists are the same bits on any thread count.
    X, _ = make_swiss_roll(6000, noise=0.05, random_state=1)
    T = X[np.random.default_rng(1).choice(6000, 400, replace=False)]
    nearest = _nearest_landmarks(X, T, 5)
    _, exact = exact_knn(X, 10)
    out = []
    for threads in (1, 2):
        with thread_limits(threads):
            out.append(cell_graph(X, T, nearest, 10))
    np.testing.assert_array_equal(out[0][1], out[1][1])
    np.testing.assert_array_equal(out[0][0], out[1][0])
    assert _recall(out[0][1], exact) >= 0.99


def test_recall_on_digits_grows_with_the_probes(data_dir):
    from landmarking.datasets import load_mnist

    X = load_mnist(data_dir)[0][:6000]
    T = X[::30].astype(np.float64)
    nearest = _nearest_landmarks(X, T, 5)
    _, exact = exact_knn(X, 10)
    recalls = [_recall(cell_graph(X, T, nearest, 10, n_probes=p)[1], exact)
               for p in (1, 3, 5)]
    assert recalls[0] < recalls[1] < recalls[2]
    assert recalls[2] >= 0.9


def test_points_whose_cells_hold_too_few_get_their_exact_neighbours():
    # Four points per cell and one probe: too few candidates for k = 6, so each
    # list comes from the exact search over every point.
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 3))
    T = X[::4]
    nearest = _nearest_landmarks(X, T, 2)
    d, i = cell_graph(X, T, nearest, 6, n_probes=1)
    d_ex, i_ex = exact_knn(X, 6)
    short = np.bincount(nearest[:, 0], minlength=len(T))[nearest[:, 0]] <= 6
    assert short.any()
    np.testing.assert_array_equal(i[short], i_ex[short])
    np.testing.assert_allclose(d[short], d_ex[short], rtol=1e-12)


def test_bad_arguments():
    X = np.random.default_rng(3).normal(size=(50, 3))
    nearest = _nearest_landmarks(X, X[::5], 2)
    with pytest.raises(ValueError, match="n_neighbors=50 must be smaller"):
        cell_graph(X, X[::5], nearest, 50)
    with pytest.raises(ValueError, match="n_probes"):
        cell_graph(X, X[::5], nearest, 3, n_probes=0)


def test_lll_on_the_cell_graph():
    # The LLL embedding on the cell graph is the one on the exact graph up to the
    # graphs' few differences, with the search's time recorded.
    from landmarking.metrics import procrustes_error

    X, _ = make_swiss_roll(4000, random_state=4)
    cells = LocallyLinearLandmarks(n_landmarks=300, neighbors_method="cells",
                                   random_state=0).fit(X)
    exact = LocallyLinearLandmarks(n_landmarks=300, neighbors_method="exact",
                                   random_state=0).fit(X)
    error = procrustes_error(cells.embedding_, exact.embedding_)
    assert 0 < error < 1e-3
    assert "neighbors" in cells.timings_
    from scipy import sparse

    with pytest.raises(ValueError, match="neighbors_method='cells' searches dense data"):
        LocallyLinearLandmarks(n_landmarks=30, neighbors_method="cells").fit(
            sparse.csr_matrix(X[:500]))
    with pytest.raises(ValueError, match="method='le-z' does not use"):
        LocallyLinearLandmarks(n_landmarks=30, method="le-z",
                               neighbors_method="cells").fit(X[:500])


@pytest.mark.parametrize("n, expected", [
    (9_999, "exact"),          # below APPROXIMATE_MIN_SAMPLES
    (10_000, "cells"),
])
def test_auto_takes_the_cells_for_large_dense_data(n, expected):
    from scipy import sparse

    from landmarking.lll.cell_graph import graph_search

    X = np.zeros((n, 4))
    assert graph_search(X, "auto", 10) == expected
    # Three features or fewer: the exact KD-tree (neighbors' own "auto").
    assert graph_search(X[:, :3], "auto", 10) == "exact"
    assert graph_search(sparse.csr_matrix(X), "auto", 10) == "exact"
    assert graph_search(X, "exact", 10) == "exact"


@pytest.mark.parametrize("n_landmarks, k_z, reused", [
    (100, 5, True),     # cells of 100 points: the weights' search serves the graph
    (50, 5, True),      # 200 points, within REUSE_SPREAD
    (20, 5, False),     # 500 points: cells of its own
    (1000, 5, False),   # 10 points: too few to find the neighbours in
    (100, 2, False),    # too few cells per point
])
def test_the_graph_sizes_its_own_cells(n_landmarks, k_z, reused):
    from landmarking.lll.cell_graph import CELL_PROBES, CELL_SIZE, graph_cells

    rng = np.random.default_rng(0)
    X = rng.normal(size=(10_000, 6))
    T = X[:n_landmarks]
    nearest = np.argsort(rng.random((10_000, n_landmarks)), axis=1)[:, :k_z]
    centres, cells = graph_cells(X, T, nearest, random_state=0)
    if reused:
        assert centres is T and cells is nearest
        return
    assert centres.shape == (10_000 // CELL_SIZE, 6)
    assert cells.shape == (10_000, CELL_PROBES)
    # Each row's first cell is its nearest centre (the search of the weights).
    d2 = ((X[:300, None, :] - centres[None]) ** 2).sum(axis=2)
    np.testing.assert_array_equal(cells[:300, 0], d2.argmin(axis=1))


def test_the_resolved_search_is_recorded():
    X, _ = make_swiss_roll(1000, random_state=4)
    model = LocallyLinearLandmarks(n_landmarks=50, random_state=0).fit(X)
    assert model.neighbors_method == "auto" and model.neighbors_method_ == "exact"
    model = LocallyLinearLandmarks(n_landmarks=50, neighbors_method="cells",
                                   random_state=0).fit(X)
    assert model.neighbors_method_ == "cells"
    model = LocallyLinearLandmarks(n_landmarks=50, method="le-z", random_state=0).fit(X)
    assert model.neighbors_method_ is None


def test_a_cell_of_many_duplicates_is_searched_in_blocks_within_working_memory(monkeypatch):
    # 1,500 copies of one row fall into one cell: its block of bounds (queries x
    # candidates, float32) would be 1,500 x 1,500+; with working_memory small it is
    # searched a few queries at a time, every block within the budget, and every
    # list equals the one found with the whole cell in one block (each query's list
    # depends on its own row of the block only).
    from sklearn import config_context

    from landmarking._memory import BLOCKS_PER_BUDGET
    from landmarking.lll import cell_graph as module

    rng = np.random.default_rng(5)
    X = np.vstack([np.repeat(rng.normal(size=(1, 3)), 1500, axis=0),
                   rng.normal(size=(500, 3))])
    T = X[1500::10]
    nearest = _nearest_landmarks(X, T, 3)
    blocks = []

    class Spy:
        def __getattr__(self, name):
            return getattr(module.K, name) if name != "cell_neighbors" else self.cell_neighbors

        def cell_neighbors(self, X, queries, candidates, self_at, cross, *args):
            blocks.append(cross.shape)
            return spied_k.cell_neighbors(X, queries, candidates, self_at, cross, *args)

    spied_k = module.K
    monkeypatch.setattr(module, "K", Spy())
    with config_context(working_memory=1024):  # MiB: every cell in one block
        whole = cell_graph(X, T, nearest, 6)
    assert max(rows for rows, _ in blocks) >= 1500
    blocks.clear()
    working_memory = 0.5  # MiB
    with config_context(working_memory=working_memory):
        pieces = cell_graph(X, T, nearest, 6)
    budget = working_memory * 2**20 / BLOCKS_PER_BUDGET
    assert max(rows * cols * 4 for rows, cols in blocks) <= budget
    assert max(cols for _, cols in blocks) >= 1500  # the big cell was in it
    np.testing.assert_array_equal(pieces[1], whole[1])
    np.testing.assert_array_equal(pieces[0], whole[0])


def test_graph_neighbors_runs_the_search_graph_search_names():
    # The cells branch gives cells_neighbors' lists (the same draws of the
    # centres from the same stream), the other branch nearest_neighbors' lists:
    # equal arrays, bit for bit, since both run the same code on the same input.
    from landmarking.lll.cell_graph import (
        cells_neighbors,
        graph_neighbors,
        graph_search,
        uses_cells,
    )
    from landmarking.neighbors import nearest_neighbors

    X = np.random.default_rng(3).normal(size=(1500, 6))
    d, i, search = graph_neighbors(X, "cells", 8, rng=np.random.RandomState(0))
    d_ref, i_ref = cells_neighbors(X, 8, random_state=np.random.RandomState(0))
    assert search == "cells" == graph_search(X, "cells", 8)
    assert np.array_equal(d, d_ref) and np.array_equal(i, i_ref)
    d, i, search = graph_neighbors(X, "auto", 8)
    d_ref, i_ref = nearest_neighbors(X, 8, method="auto")
    assert search == "exact" == graph_search(X, "auto", 8)
    assert np.array_equal(d, d_ref) and np.array_equal(i, i_ref)
    assert uses_cells(np.zeros((10_000, 4)), "auto")
    assert not uses_cells(np.zeros((10_000, 4)), "exact")
    with pytest.raises(ValueError, match=r"n_neighbors=1500 must be smaller than the "
                                         r"number of samples \(1500\); pass fewer"):
        graph_neighbors(X, "auto", 1500)


def test_search_coordinates_are_the_same_on_any_thread_count():
    # The cells graph's float32 coordinates come in fixed batches of rows, each
    # product on one BLAS thread, the batches on the loop threads: the same bits
    # on one thread and on two, and the projection of the whole array at once up
    # to float32 rounding.
    from landmarking.lll._cpu import COORDINATE_ROWS, _LandmarkAxes

    rng = np.random.default_rng(7)
    n = 2 * COORDINATE_ROWS + 300  # three batches, the last one short
    X = (rng.normal(size=(n, 8)) @ rng.normal(size=(8, 120))
         + 0.1 * rng.normal(size=(n, 120))).astype(np.float32)
    axes = _LandmarkAxes(X[::50].astype(np.float64))
    assert axes.projects
    with thread_limits(1):
        Y1, sq1 = axes.search_coordinates(X)
    with thread_limits(2):
        Y2, sq2 = axes.search_coordinates(X)
    np.testing.assert_array_equal(Y1, Y2)
    np.testing.assert_array_equal(sq1, sq2)
    whole, sq, _ = axes.coordinates(X.astype(np.float64) - axes.centre)
    # float32 rounding of coordinates of size |y|: 2^-24 relative, with room.
    np.testing.assert_allclose(Y2, whole, rtol=0, atol=1e-6 * np.abs(whole).max())
    np.testing.assert_allclose(sq2, sq, rtol=1e-12)
