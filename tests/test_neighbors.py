"""Nearest-neighbour interface: exact against brute force, approximate recall."""

import numpy as np
import pytest

from landmarking.neighbors import nearest_neighbors, query_neighbors


def _brute(reference, query, k, exclude_self=False):
    d2 = ((query[:, None, :] - reference[None, :, :]) ** 2).sum(-1)
    if exclude_self:
        np.fill_diagonal(d2, np.inf)
    idx = np.argsort(d2, axis=1, kind="stable")[:, :k]
    return np.sqrt(np.take_along_axis(d2, idx, axis=1)), idx


def test_exact_matches_brute_force_and_excludes_self():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    dist, idx = nearest_neighbors(X, 7)
    ref_dist, ref_idx = _brute(X, X, 7, exclude_self=True)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(dist, ref_dist, rtol=1e-10)
    assert not np.any(idx == np.arange(300)[:, None])
    assert np.all(np.diff(dist, axis=1) >= 0)


def test_exact_lists_a_duplicate_but_not_itself():
    X = np.array([[0.0, 0.0], [0.0, 0.0], [5.0, 5.0], [6.0, 5.0]])
    dist, idx = nearest_neighbors(X, 1)
    np.testing.assert_array_equal(idx[:, 0], [1, 0, 3, 2])
    assert dist[0, 0] == 0.0 and dist[2, 0] == 1.0


def test_query_matches_brute_force():
    rng = np.random.default_rng(1)
    ref, query = rng.normal(size=(200, 4)), rng.normal(size=(50, 4))
    dist, idx = query_neighbors(ref, query, 5)
    ref_dist, ref_idx = _brute(ref, query, 5)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(dist, ref_dist, rtol=1e-10)


class _FakeIndex:
    """Stands in for the approximate index (neighbors._approximate_index): the
    exact lists, through the same two calls, graph(k) and query(Q, k). The
    real index is checked against this contract in
    test_real_approximate_index_keeps_the_stand_ins_contract."""

    def __init__(self, X, random_state):
        self.X, self.random_state, self.queries = X, random_state, 0

    def graph(self, k):
        return _brute(self.X, self.X, k, exclude_self=True)

    def query(self, Q, k):
        self.queries += 1
        return _brute(self.X, Q, k)


def test_approximate_wrapper_passes_the_seed_and_threads(monkeypatch):
    import landmarking.neighbors as nb
    from landmarking._parallel import loop_threads

    made = []

    def fake(X, random_state):
        made.append((random_state, loop_threads()))
        return _FakeIndex(X, random_state)

    monkeypatch.setattr(nb, "_approximate_index", fake)
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 3))
    dist, idx = nb.nearest_neighbors(X, 4, method="approximate", random_state=3, n_jobs=1)
    ref_dist, ref_idx = _brute(X, X, 4, exclude_self=True)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(dist, ref_dist)
    assert made == [(3, 1)]


def test_drop_self_handles_rows_without_self():
    # Row 1 lists a duplicate (index 0) instead of itself: its last entry goes.
    indices = np.array([[0, 1, 2], [0, 2, 3], [2, 0, 1]])
    from landmarking.neighbors import _drop_self

    np.testing.assert_array_equal(_drop_self(indices), [[1, 2], [0, 2], [0, 1]])


def _manifold(n, n_features, seed):
    """n points near a 6-D linear manifold in n_features dimensions."""
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=(n, 6))
    return latent @ rng.normal(size=(6, n_features)) + 0.05 * rng.normal(size=(n, n_features))


def _recall(found, truth):
    k = truth.shape[1]
    return np.mean([len(np.intersect1d(a, b)) / k for a, b in zip(found, truth, strict=True)])


@pytest.mark.parametrize("n_features, dtype", [(200, np.float32), (200, np.float64),
                                               (20, np.float64)])
def test_approximate_recall_and_seed(n_features, dtype):
    # The real usearch graph, in CI (the `ann` extra is installed by `make test`).
    # 200 features: searched on the principal axes, re-ranked exactly; 20: searched
    # as they are. Measured recall 1.0 on each (floor 0.98).
    X = _manifold(2500, n_features, seed=2).astype(dtype)
    dist, approx = _check_approximate_lists(X, floor=0.98, n_queries=100)
    assert approx.dtype == np.int64 and dist.dtype == np.float64
    assert not np.any(approx == np.arange(2500)[:, None])
    assert np.all(np.diff(dist, axis=1) >= 0)


def _check_approximate_lists(X, floor, n_queries):
    """The approximate 10-NN graph of X and 5-NN queries of its first rows moved a
    little, each with recall >= ``floor`` against the exact lists; every distance
    the exact one of the pair it names (the float64 re-rank); the same lists for
    the same seed, run after run and on any thread count. Returns the graph."""
    exact_d, exact = nearest_neighbors(X, 10)
    dist, approx = nearest_neighbors(X, 10, method="approximate", random_state=0)
    assert _recall(approx, exact) >= floor
    want = np.sqrt(((X[:, None, :].astype(np.float64) - X[approx]) ** 2).sum(-1))
    np.testing.assert_allclose(dist, want, rtol=1e-12)
    for n_jobs in (None, 1, 2):
        again = nearest_neighbors(X, 10, method="approximate", random_state=0, n_jobs=n_jobs)
        np.testing.assert_array_equal(again[1], approx)
        np.testing.assert_array_equal(again[0], dist)
    Q = X[:n_queries] + 0.01
    _, q_idx = query_neighbors(X, Q, 5, method="approximate", random_state=0)
    _, q_exact = query_neighbors(X, Q, 5)
    assert _recall(q_idx, q_exact) >= floor
    return dist, approx


def test_approximate_on_isotropic_data_searches_every_dimension():
    # No few principal axes hold these points: the graph must search all 100
    # dimensions rather than a projection that loses the neighbours (48 axes
    # gave recall 0.70; all 100, measured 0.949, a hard case for any graph).
    import landmarking.neighbors as nb

    X = np.random.default_rng(5).normal(size=(2000, 100))
    assert nb._approximate_index(X, 0).axes_ is None
    _, exact = nearest_neighbors(X, 10)
    _, approx = nearest_neighbors(X, 10, method="approximate", random_state=0)
    assert _recall(approx, exact) >= 0.9


def test_approximate_lists_a_duplicate_but_not_itself():
    X = _manifold(600, 80, seed=6)
    X = np.concatenate([X, X[:50]])
    dist, idx = nearest_neighbors(X, 3, method="approximate", random_state=1)
    assert not np.any(idx == np.arange(650)[:, None])
    np.testing.assert_array_equal(idx[:50, 0], np.arange(600, 650))
    np.testing.assert_array_equal(idx[600:, 0], np.arange(50))
    np.testing.assert_array_equal(dist[:50, 0], 0.0)


def test_real_approximate_index_keeps_the_stand_ins_contract():
    # What _FakeIndex imitates: graph(k) and query(Q, k) return (distances,
    # indices) of shape (n, k), sorted by distance, self excluded from graph.
    import landmarking.neighbors as nb

    X = _manifold(800, 150, seed=7)
    Q = X[:40] + 0.02
    real, fake = nb._approximate_index(X, 0), _FakeIndex(X, 0)
    assert real.axes_.shape == (nb._MIN_SEARCH_DIMS, 150)  # searched on principal axes
    for got, want in [(real.graph(6), fake.graph(6)), (real.query(Q, 4), fake.query(Q, 4))]:
        assert got[0].shape == want[0].shape and got[1].shape == want[1].shape
        assert got[1].dtype == np.int64 and got[0].dtype == np.float64
        np.testing.assert_array_equal(got[1], want[1])  # recall 1.0 on this easy set
        np.testing.assert_allclose(got[0], want[0], rtol=1e-10)


def test_approximate_rows_with_too_few_candidates_are_searched_exactly(monkeypatch):
    import landmarking.neighbors as nb

    X = _manifold(500, 70, seed=8)
    index = nb._approximate_index(X, 0)
    search = index._search

    def few(Y, count):
        keys, _ = search(Y, count)
        keys[:7] = keys[:7, ::-1]  # garbage lists: marked short, they are searched again
        return keys, np.arange(7)

    monkeypatch.setattr(index, "_search", few)
    np.testing.assert_array_equal(index.graph(5)[1], nearest_neighbors(X, 5)[1])
    np.testing.assert_array_equal(index.query(X[:20] + 0.01, 5)[1],
                                  query_neighbors(X, X[:20] + 0.01, 5)[1])


def test_approximate_without_usearch_names_the_extra_and_the_fallback(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "usearch", None)
    monkeypatch.setitem(sys.modules, "usearch.index", None)
    X = _manifold(100, 5, seed=9)
    with pytest.raises(ImportError, match=r"needs usearch.*landmarking\[ann\].*"
                                          r"method='exact'"):
        nearest_neighbors(X, 3, method="approximate")
    with pytest.raises(ImportError, match="needs usearch"):
        NeighborIndex(method="approximate").fit(X)
    # The exact search needs nothing beyond the core dependencies.
    assert nearest_neighbors(X, 3)[1].shape == (100, 3)


def test_approximate_refuses_what_it_cannot_search():
    from scipy import sparse

    X = _manifold(100, 5, seed=10)
    with pytest.raises(ValueError, match="not metric='manhattan'; use method='exact'"):
        nearest_neighbors(X, 3, method="approximate", metric="manhattan")
    with pytest.raises(ValueError, match="not sparse input; use method='exact'"):
        nearest_neighbors(sparse.csr_matrix(X), 3, method="approximate")
    X[3, 2] = np.nan
    with pytest.raises(ValueError, match="X holds NaN or infinity"):
        nearest_neighbors(X, 3, method="approximate")
    index = NeighborIndex(method="approximate").fit(X[4:])
    with pytest.raises(ValueError, match="query holds NaN or infinity"):
        index.query(X[:4], 2)


def test_errors_name_the_fix():
    X = np.zeros((5, 2))
    with pytest.raises(ValueError, match="must be smaller than the number of samples"):
        nearest_neighbors(X, 5)
    with pytest.raises(ValueError, match="exceeds the 5 reference points"):
        query_neighbors(X, X, 6)
    with pytest.raises(ValueError, match="method must be one of"):
        nearest_neighbors(X, 2, method="fast")


# --------------------------------------------------------------------------- blocked exact

from sklearn import config_context  # noqa: E402
from sklearn.neighbors import NearestNeighbors  # noqa: E402

from landmarking.neighbors import NeighborIndex, exact_knn  # noqa: E402


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_blocked_exact_equals_scikit_learn_on_random_data(dtype):
    rng = np.random.default_rng(10)
    X = rng.normal(size=(700, 30)).astype(dtype)
    # A tiny memory budget forces many blocks.
    with config_context(working_memory=0.05):
        dist, idx = exact_knn(X, 12)
    ref_dist, ref_idx = NearestNeighbors(n_neighbors=12, algorithm="brute").fit(
        X.astype(np.float64)).kneighbors()
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(dist, ref_dist, rtol=1e-12, atol=1e-12)
    Q = rng.normal(size=(40, 30)).astype(dtype)
    dist, idx = exact_knn(X, 9, query=Q)
    ref_dist, ref_idx = NearestNeighbors(n_neighbors=9, algorithm="brute").fit(
        X.astype(np.float64)).kneighbors(Q.astype(np.float64))
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(dist, ref_dist, rtol=1e-12, atol=1e-12)


def test_blocked_exact_on_duplicated_data_breaks_ties_by_index():
    rng = np.random.default_rng(11)
    base = rng.normal(size=(300, 6))
    X = np.concatenate([base, base[:120], base[:40]])[rng.permutation(460)]
    k = 6
    dist, idx = exact_knn(X, k)
    ref_dist, ref_idx = _brute(X, X, k, exclude_self=True)  # stable: ties by index
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(dist, ref_dist, atol=1e-12)
    assert not np.any(idx == np.arange(460)[:, None])
    # scikit-learn's brute force computes |x|^2 - 2 x.y + |y|^2 with BLAS, so a
    # duplicate's distance is the square root of that expansion's rounding
    # (5.96e-8 seen with OpenBLAS' Haswell kernels on an AMD EPYC), not 0: compare
    # with its own error bound. Our exact lists are checked to 1e-12 against _brute.
    sk_error = np.sqrt(8 * np.finfo(np.float64).eps * np.max(np.sum(X**2, axis=1)))
    for algorithm in ("brute", "kd_tree"):
        sk_dist, sk_idx = NearestNeighbors(n_neighbors=k + 1, algorithm=algorithm).fit(
            X).kneighbors()
        np.testing.assert_allclose(dist, sk_dist[:, :k], atol=sk_error)
        # scikit-learn's order within a tie is unspecified: sorted by (distance,
        # index), its lists are ours wherever the k-th neighbour is not tied
        # with the next one (elsewhere both pick among equals; ours the smallest).
        sk_dist = np.where(sk_dist < sk_error, 0.0, sk_dist)
        clear = sk_dist[:, k - 1] < sk_dist[:, k] - 1e-12
        assert clear.mean() > 0.5
        sk_idx = sk_idx[:, :k]
        order = np.lexsort((sk_idx, np.round(sk_dist[:, :k], 12)), axis=1)
        np.testing.assert_array_equal(
            idx[clear], np.take_along_axis(sk_idx, order, axis=1)[clear])


def test_blocked_exact_stays_exact_where_float32_is_not():
    # Points far from the origin: the float32 shortlist is mostly rounding, so
    # rows fall back to the exact re-rank over everything within the bound.
    rng = np.random.default_rng(12)
    X = 1e4 + rng.normal(size=(400, 5)) * 1e-2
    dist, idx = exact_knn(X, 5, n_candidates=5)
    ref_dist, ref_idx = _brute(X, X, 5, exclude_self=True)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(dist, ref_dist, rtol=1e-9)


def test_exact_knn_errors_name_the_fix():
    X = np.zeros((5, 2))
    with pytest.raises(ValueError, match="exceeds the 4 available reference points"):
        exact_knn(X, 5)
    with pytest.raises(ValueError, match="must have the 2 columns"):
        exact_knn(X, 2, query=np.zeros((3, 3)))


def test_neighbor_index_is_built_once_and_matches_one_shot_queries(monkeypatch):
    import landmarking.neighbors as nb

    rng = np.random.default_rng(13)
    ref, Q = rng.normal(size=(300, 4)), rng.normal(size=(25, 4))
    index = NeighborIndex().fit(ref)
    one_by_one = [index.query(q[None], 3) for q in Q]
    d, i = query_neighbors(ref, Q, 3)
    np.testing.assert_array_equal(np.vstack([b for _, b in one_by_one]), i)
    np.testing.assert_allclose(np.vstack([a for a, _ in one_by_one]), d)
    np.testing.assert_array_equal(query_neighbors(index, Q, 3)[1], i)

    built = []

    def fake(X, random_state):
        built.append(random_state)
        return _FakeIndex(X, random_state)

    monkeypatch.setattr(nb, "_approximate_index", fake)
    approx = NeighborIndex(method="approximate", random_state=0).fit(ref)
    for q in Q:
        approx.query(q[None], 3)
    assert built == [0] and approx.index_.queries == len(Q)
    # "auto" switches to the approximate index from APPROXIMATE_MIN_SAMPLES on.
    monkeypatch.setattr(nb, "APPROXIMATE_MIN_SAMPLES", 300)
    assert NeighborIndex(method="auto").fit(ref).method_ == "approximate"
    assert NeighborIndex(method="auto").fit(ref[:299]).method_ == "blocked"
    many = nb.APPROXIMATE_MAX_NEIGHBORS + 1
    assert NeighborIndex(method="auto", n_neighbors=many).fit(ref).method_ == "blocked"
    assert NeighborIndex(metric="manhattan").fit(ref).method_ == "sklearn"


# ------------------------------------------------------------------ the kept index

from landmarking.neighbors import LazyNeighborIndex  # noqa: E402


def _counting_fit(monkeypatch):
    built = []
    fit = NeighborIndex.fit

    def counting(self, reference):
        built.append(reference.shape)
        return fit(self, reference)

    monkeypatch.setattr(NeighborIndex, "fit", counting)
    return built


def test_lazy_index_builds_once_per_reference_and_parameters(monkeypatch):
    rng = np.random.default_rng(30)
    ref, Q = rng.normal(size=(200, 4)), rng.normal(size=(15, 4))
    built = _counting_fit(monkeypatch)
    kept = LazyNeighborIndex()
    assert not kept.built and built == [] and repr(kept) == "LazyNeighborIndex(empty)"
    first = kept.get(ref)
    assert kept.get(ref) is first and len(built) == 1 and kept.built
    np.testing.assert_array_equal(first.query(Q, 4)[1], query_neighbors(ref, Q, 4)[1])
    # Another array (even with equal values) or other parameters: a new index.
    assert kept.get(ref.copy()) is not first and len(built) == 3
    manhattan = kept.get(ref, metric="manhattan")
    assert manhattan.method_ == "sklearn" and len(built) == 4
    np.testing.assert_array_equal(
        manhattan.query(Q, 4)[1], query_neighbors(ref, Q, 4, metric="manhattan")[1])
    # float32 and integer references are indexed in float64, as query_neighbors searches.
    assert kept.get(ref.astype(np.float32)).prepared_[0].dtype == np.float64  # X64


def test_lazy_index_failed_build_keeps_nothing():
    kept = LazyNeighborIndex()
    kept.get(np.zeros((5, 2)))
    with pytest.raises(ValueError, match="method must be one of"):
        kept.get(np.zeros((5, 2)), method="fastest")
    assert not kept.built


def test_lazy_index_is_built_once_by_eight_threads(monkeypatch):
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    ref = np.random.default_rng(31).normal(size=(300, 3))
    built = []
    fit = NeighborIndex.fit

    def slow(self, reference):
        built.append(reference.shape)
        time.sleep(0.05)  # wide open for a second builder, were there no lock
        return fit(self, reference)

    monkeypatch.setattr(NeighborIndex, "fit", slow)
    kept = LazyNeighborIndex()
    barrier = threading.Barrier(8)

    def get(_):
        barrier.wait()
        return kept.get(ref)

    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(get, range(8)))
    assert len(built) == 1 and all(g is got[0] for g in got)


def test_lazy_index_copies_start_empty():
    import copy
    import pickle

    kept = LazyNeighborIndex()
    kept.get(np.eye(3))
    for other in (pickle.loads(pickle.dumps(kept)), copy.deepcopy(kept), copy.copy(kept)):
        assert not other.built and other == kept  # interchangeable caches
        assert other.get(np.eye(3)).query(np.eye(3)[:1], 1)[1][0, 0] == 0
    assert kept != "an index" and hash(kept) == hash(LazyNeighborIndex())


def test_sculpting_transform_keeps_its_index_until_add_samples(monkeypatch):
    import pickle

    from landmarking.datasets import make_sculpting_s_curve
    from landmarking.sculpting.estimator import ManifoldSculpting

    X, _ = make_sculpting_s_curve(250, random_state=32)
    new = X[:12] + 0.01
    model = ManifoldSculpting(n_neighbors=8, min_iter=3, max_iter=6, patience=2,
                              random_state=0)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a short fit may warn that it is poor
        model.fit(X)
    built = _counting_fit(monkeypatch)
    want = model.transform(new)
    assert len(built) == 1
    for _ in range(2):
        np.testing.assert_array_equal(model.transform(new), want)
    assert len(built) == 1
    # What transform searched then: an index rebuilt for every call gives the same.
    fresh = pickle.loads(pickle.dumps(model))
    assert not fresh._neighbor_index.built
    np.testing.assert_array_equal(fresh.transform(new), want)
    # add_samples changes the fitted points: the next transform indexes the new set.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.add_samples(X[:5] + 0.02)
    model.transform(new)
    # (the 250 in third place is add_samples' own query of the old points)
    assert [shape[0] for shape in built] == [250, 250, 250, 255]


@pytest.mark.parametrize("n_candidates", [None, 4])
def test_blocked_exact_on_duplicates_across_many_tiles(n_candidates):
    # Many tiles (the transposed push included) and, with a shortlist as short as
    # k, rows whose k-th neighbour ties with points left out: the rounding
    # bound sends them to the full re-rank, which must pick the smaller indices.
    rng = np.random.default_rng(14)
    base = rng.integers(0, 3, size=(90, 4)).astype(np.float64)
    X = np.concatenate([base, base[:50], base[:50]])[rng.permutation(190)]
    with config_context(working_memory=0.01):
        dist, idx = exact_knn(X, 4, n_candidates=n_candidates)
    ref_dist, ref_idx = _brute(X, X, 4, exclude_self=True)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(dist, ref_dist, atol=1e-12)


def test_blocked_exact_on_identical_points_lists_the_first_others():
    X = np.full((30, 3), 2.5)
    dist, idx = exact_knn(X, 3)
    expected = [[j for j in range(30) if j != i][:3] for i in range(30)]
    np.testing.assert_array_equal(idx, expected)
    np.testing.assert_array_equal(dist, 0.0)


def test_blocked_exact_with_constant_columns_and_far_queries():
    # Constant columns (left out of the products) and points far from the
    # origin (centred before the float32 copy): the lists stay the exact ones.
    rng = np.random.default_rng(15)
    X = np.hstack([np.full((250, 3), 7.0), 1e3 + rng.normal(size=(250, 6)),
                   np.zeros((250, 2))])
    dist, idx = exact_knn(X, 6)
    ref_dist, ref_idx = _brute(X, X, 6, exclude_self=True)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(dist, ref_dist, rtol=1e-9)
    Q = np.hstack([np.full((30, 3), 6.0), 1e3 + rng.normal(size=(30, 6)),
                   np.ones((30, 2))])
    dist, idx = exact_knn(X, 6, query=Q, n_candidates=6)
    ref_dist, ref_idx = _brute(X, Q, 6)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(dist, ref_dist, rtol=1e-9)


def test_knn_block_of_own_rows_matches_the_whole_search():
    from landmarking.neighbors import knn_block, prepare_reference

    rng = np.random.default_rng(16)
    X = rng.normal(size=(200, 7))
    X64, X32, sq, centre = prepare_reference(X)
    d, i = knn_block(X64[40:90], X64, X32, sq, 5, 12, self_offset=40, centre=centre)
    ref_d, ref_i = exact_knn(X, 5)
    np.testing.assert_array_equal(i, ref_i[40:90])
    np.testing.assert_allclose(d, ref_d[40:90], rtol=1e-12)


def test_blocked_exact_n_jobs_gives_the_same_lists_and_restores_threads():
    from landmarking._parallel import loop_threads

    rng = np.random.default_rng(17)
    X = rng.normal(size=(300, 5))
    before = loop_threads()
    one = exact_knn(X, 5, n_jobs=1)
    np.testing.assert_array_equal(one[1], exact_knn(X, 5)[1])
    np.testing.assert_array_equal(one[1], exact_knn(X, 5, n_jobs=-1)[1])
    assert loop_threads() == before
    with pytest.raises(ValueError, match="n_jobs must be None"):
        exact_knn(X, 5, n_jobs=0)


def test_blocked_exact_gives_the_same_bits_on_any_thread_count():
    # Large enough that every kernel cuts its rows into several runs (the
    # products of a 2,000-row tile, the re-rank of 2,000 rows of 50 features):
    # each heap, distance and list is one thread's work, so the thread count
    # changes nothing, not even the last bit of a distance.
    from landmarking._parallel import thread_limits

    rng = np.random.default_rng(18)
    X = rng.normal(size=(2000, 50))
    Q = rng.normal(size=(300, 50))
    with thread_limits(1):
        d1, i1 = exact_knn(X, 10)
        q1 = exact_knn(X, 10, query=Q)
    for n_threads in (2, 3):
        with thread_limits(n_threads):
            d, i = exact_knn(X, 10)
            q = exact_knn(X, 10, query=Q)
        np.testing.assert_array_equal(i, i1)
        np.testing.assert_array_equal(d, d1)
        np.testing.assert_array_equal(q[1], q1[1])
        np.testing.assert_array_equal(q[0], q1[0])
    ref_d, ref_i = _brute(X, X, 10, exclude_self=True)
    np.testing.assert_array_equal(i1, ref_i)
    np.testing.assert_allclose(d1, ref_d, rtol=1e-13)


@pytest.mark.parametrize("n_features", [1, 3, 16, 37, 784])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rerank_loops_against_numpy(n_features, dtype):
    # The compiled re-rank: squared distances from the differences in float64 (a
    # fixed order of partial sums from 16 features on, one running sum below),
    # within a few ulps of NumPy's sum; equal rows give equal bits (ties stay
    # ties); the k nearest sorted by (distance, index); every thread count the
    # same bits.
    from landmarking._neighbors_loops import candidate_sq_distances, nearest_candidates

    rng = np.random.default_rng(n_features)
    X = (rng.normal(size=(400, n_features)) * 3 + 5).astype(dtype)
    X[200:220] = X[100:120]  # duplicated rows
    Q = (rng.normal(size=(600, n_features)) * 3 + 5).astype(dtype)
    others = np.setdiff1d(np.arange(400), [105, 205])
    # Two equal rows among every row's 40 distinct candidates.
    cand = np.array([np.concatenate([[105, 205], rng.choice(others, 38, replace=False)])
                     for _ in range(600)])
    want = ((Q[:, None, :].astype(np.float64) - X[cand]) ** 2).sum(-1)
    got = candidate_sq_distances(Q, X, cand, n_threads=1)
    assert got.dtype == np.float64 and got.shape == (600, 40)
    np.testing.assert_allclose(got, want, rtol=4 * n_features * np.finfo(np.float64).eps)
    np.testing.assert_array_equal(got[:, 0], got[:, 1])
    np.testing.assert_array_equal(candidate_sq_distances(Q, X, cand, n_threads=3), got)
    k = 7
    rows = rng.permutation(600)
    out = []
    for n_threads in (1, 3):
        d_sq, idx = np.empty((600, k)), np.empty((600, k), dtype=np.int64)
        nearest_candidates(Q, X, cand, rows, d_sq, idx, n_threads=n_threads)
        out.append((d_sq, idx))
    order = np.lexsort((cand, got), axis=1)[:, :k]
    np.testing.assert_array_equal(out[0][1], np.take_along_axis(cand, order, axis=1))
    np.testing.assert_array_equal(out[0][0], np.take_along_axis(got, order, axis=1))
    np.testing.assert_array_equal(out[1][0], out[0][0])
    np.testing.assert_array_equal(out[1][1], out[0][1])


def test_blocked_exact_rejects_nan_and_overflow():
    X = np.ones((10, 3))
    X[4, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        exact_knn(X, 2)
    with pytest.raises(ValueError, match="query holds NaN or infinity"):
        exact_knn(np.ones((10, 3)), 2, query=X[3:5])
    X[4, 1] = 1e39  # finite in float64, infinite in float32
    with pytest.raises(ValueError, match="beyond float32's range"):
        exact_knn(X, 2)
    with pytest.raises(ValueError, match="beyond float32's range"):
        exact_knn(X, 2, query=np.ones((2, 3)))


def test_large_sets_are_built_and_searched_in_cell_order():
    # From _CELL_ORDER_MIN_SAMPLES rows a random tenth enters the graph first,
    # then the rest cell by cell; every search and re-rank visits the rows in
    # cell order. Recall against the exact lists (measured 0.9995; floor
    # 0.99), the exact distance of every pair named, and the same lists on every
    # run and thread count: the order of the work never shows in the result.
    import landmarking.neighbors as nb

    n = nb._CELL_ORDER_MIN_SAMPLES
    X = _manifold(n, 60, seed=8).astype(np.float32)
    index = nb._approximate_index(X, 0)
    cells = index._cells(index.projected_)
    assert len(index.cell_centres_) == n // nb._CELL_SIZE
    order = nb._insertion_order(cells, len(index.cell_centres_), np.random.RandomState(0))
    later = cells[order[int(nb._RANDOM_SHARE * n):]]
    assert np.count_nonzero(np.diff(later)) == len(index.cell_centres_) - 1  # cell by cell
    _check_approximate_lists(X, floor=0.99, n_queries=500)


def test_large_sets_are_split_into_shards_searched_together(monkeypatch):
    # From _SHARD_MIN_SAMPLES rows the graph is two graphs over a random split of
    # the rows, built at once. Every row is in exactly one shard; a query takes
    # _shard_candidates from each. The lists keep the one graph's floor
    # (measured 0.9995, 0.99 as for one graph), every distance exact, and the
    # same lists on every run and thread count: the shards depend on the rows
    # only, never on the threads.
    import landmarking.neighbors as nb

    monkeypatch.setattr(nb, "_SHARD_MIN_SAMPLES", 3000)
    X = _manifold(4000, 60, seed=9).astype(np.float32)
    index = nb._approximate_index(X, 0)
    assert len(index.indexes_) == nb._SHARDS == 2
    rows = np.concatenate(index.shards_)
    np.testing.assert_array_equal(np.sort(rows), np.arange(len(X)))
    assert [len(index) for index in index.indexes_] == [len(r) for r in index.shards_]
    assert nb._shard_candidates(10) == 40 and index._count(10, True) == 41
    _check_approximate_lists(X, floor=0.99, n_queries=500)


def test_tree_breaks_ties_by_index_as_the_exact_search_does():
    # A grid of 3-D points with a block of duplicate rows: nearly every list has
    # ties, also at its last place, where the tree may keep either point. The
    # lists must be the exact search's (ties to the lower index), for the rows
    # among themselves and for outside queries, on any thread count.
    from landmarking.neighbors import APPROXIMATE_MIN_SAMPLES

    grid = np.stack(np.meshgrid(np.arange(25.0), np.arange(25.0), np.arange(20.0)),
                    axis=-1).reshape(-1, 3)
    X = np.vstack([grid, grid[:500]])
    assert len(X) >= APPROXIMATE_MIN_SAMPLES
    d_exact, i_exact = exact_knn(X, 7)
    for threads in (1, 2):
        d, i = nearest_neighbors(X, 7, method="auto", n_jobs=threads)
        np.testing.assert_array_equal(i, i_exact)
        # Distances of integer offsets: sqrt of small integers, exact to rounding.
        np.testing.assert_allclose(d, d_exact, rtol=1e-15, atol=0)
    index = NeighborIndex(method="auto").fit(X)
    assert index.method_ == "tree"
    queries = X[::7] + 0.5  # equidistant from 8 grid points
    np.testing.assert_array_equal(index.query(queries, 5)[1],
                                  exact_knn(X, 5, query=queries)[1])


def test_tree_refuses_queries_of_other_features_or_nan():
    from landmarking.neighbors import APPROXIMATE_MIN_SAMPLES

    X = np.random.default_rng(0).normal(size=(APPROXIMATE_MIN_SAMPLES, 3))
    index = NeighborIndex(method="auto").fit(X)
    assert index.method_ == "tree"
    with pytest.raises(ValueError, match="must have the 3 columns"):
        index.query(np.zeros((2, 4)), 3)
    with pytest.raises(ValueError, match="query holds NaN or infinity"):
        index.query(np.array([[0.0, np.nan, 1.0]]), 3)


def test_auto_searches_low_dimensional_data_with_an_exact_tree():
    # From APPROXIMATE_MIN_SAMPLES points on, data of at most TREE_MAX_FEATURES
    # features get SciPy's KD-tree: the exact lists, on any thread count.
    from sklearn.datasets import make_swiss_roll

    from landmarking._parallel import thread_limits
    from landmarking.neighbors import APPROXIMATE_MIN_SAMPLES, TREE_MAX_FEATURES

    X = make_swiss_roll(APPROXIMATE_MIN_SAMPLES, noise=0.05, random_state=0)[0]
    assert X.shape[1] <= TREE_MAX_FEATURES
    d_exact, i_exact = exact_knn(X, 8)
    for threads in (1, 2):
        with thread_limits(threads):
            d, i = nearest_neighbors(X, 8, method="auto")
        np.testing.assert_array_equal(i, i_exact)
        np.testing.assert_allclose(d, d_exact, rtol=1e-12, atol=1e-12)
    index = NeighborIndex(method="auto").fit(X)
    assert index.method_ == "tree"
    d, i = index.query(X[:50] + 0.01, 4)
    d_ref, i_ref = exact_knn(X, 4, query=X[:50] + 0.01)
    np.testing.assert_array_equal(i, i_ref)
    # One feature more, or fewer points, keep the previous choices.
    assert NeighborIndex(method="auto").fit(X[:APPROXIMATE_MIN_SAMPLES - 1]).method_ == "blocked"
    with pytest.raises(ValueError, match="NaN or infinity"):
        bad = X.copy()
        bad[3, 1] = np.nan
        nearest_neighbors(bad, 8, method="auto")
