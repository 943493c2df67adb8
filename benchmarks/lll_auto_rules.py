"""The measurements behind LLL's "auto" rules: landmarks, refinement and the cells.

On deformed MNIST digits (:func:`landmarking.datasets.make_deformed_digits`, seed 0),
in 10-D, with one neighbour graph (10 neighbours, "auto" bandwidth) for all rows of
the first table:

- ``landmarks``: for each number of random landmarks L, the span error of Z against
  exact LE (:func:`landmarking.metrics.span_error`: no solver of the reduced
  problem can do better), and the 10-NN accuracy of LLL's embedding with no
  refinement and with ``--refine`` LOBPCG iterations on the full graph, beside
  exact LE's (what ``n_landmarks="auto"`` and ``refine="auto"`` rest on);
- ``cells``: for each cell size (points per cell, random centres) and each number
  of ``--probes`` (cells each point brings to its cell's search; 5 by default, the
  cells graph's), the cells graph's recall@10 against the exact lists of 2,000
  rows, its seconds (with the centres' search), and exact LE's 10-NN accuracy on
  it, beside usearch's HNSW graph (what
  :data:`landmarking.lll.cell_graph.CELL_SIZE` rests on);
- ``roll``: on scikit-learn's Swiss roll (3 features, 2-D embedding) of each
  ``--roll-sizes`` N, exact LE and LLL at their defaults beside LLL with N / 1,000
  and N / 100 landmarks (at least 100), with and without ``--refine`` iterations: seconds
  (fits in this process, back to back) and the Procrustes error against the
  roll's coordinates, as in ``lll_defaults.py`` (what ``"auto"``'s rule for data
  of at most 3 features rests on), and the recall@10 and seconds of each graph
  builder on the roll (``roll-graphs``: SciPy's KD-tree, "auto"'s choice
  there, scikit-learn's, which it was before, usearch's HNSW graph and the cells
  graph);
- ``text``: 20 Newsgroups (``../shared/data``; train and test posts, headers
  stripped) as square-root word histograms (1,545 words, sparse rows), the first
  ``--text-sizes`` posts: exact LE and LLL at their defaults and LLL without the
  refinement, in 10-D; the 20-way 10-NN accuracy of the embedding, trained on the
  posts of the train split and scored on those of the test split (sparse rows get
  the exact neighbour search; there is no larger text set in ``../shared/data``).

The accuracy is that of a 10-NN classifier trained on the rows whose source digit
is not a multiple of 10 and scored on the others (as ``lll_million.py``).

    python benchmarks/lll_auto_rules.py                    # 100,000 digits
    python benchmarks/lll_auto_rules.py --n 20000 --landmarks 200,1000 --cell-sizes 100
    python benchmarks/lll_auto_rules.py --tables cells --n 300000 --cell-sizes 100 --probes 3,4,5
    python benchmarks/lll_auto_rules.py --tables roll --roll-sizes 10000,100000,300000,1000000
    python benchmarks/lll_auto_rules.py --tables roll-graphs --roll-sizes 100000,300000
    python benchmarks/lll_auto_rules.py --tables text
"""

import time
import warnings

import numpy as np
from _common import argument_parser, machine_line, parse, print_table


def parse_args(argv=None):
    p = argument_parser(__doc__, size=None, seed=False)
    p.add_argument("--n", type=int, default=100_000, help="digits (default 100,000)")
    p.add_argument("--landmarks", default="1000,3000,10000", help="values of L")
    p.add_argument("--refine", type=int, default=3, help="LOBPCG iterations")
    p.add_argument("--cell-sizes", default="50,100,200,400", help="points per cell")
    p.add_argument("--probes", default="5",
                   help="cells each point brings (default 5, the cells graph's)")
    p.add_argument("--roll-sizes", default="10000,100000,300000", help="roll points")
    p.add_argument("--text-sizes", default="10000,18846", help="posts (at most 18,846)")
    p.add_argument("--tables", default="landmarks,cells,roll,text")
    return parse(p, argv)


def digits(n):
    from landmarking.datasets import make_deformed_digits

    X, y, sources = make_deformed_digits(n, random_state=0, return_source=True)
    return np.asarray(X), y, sources % 10 == 0


def accuracy(embedding, y, held):
    from sklearn.neighbors import KNeighborsClassifier

    knn = KNeighborsClassifier(10).fit(embedding[~held], y[~held])
    return knn.score(embedding[held], y[held])


def landmark_rows(X, W, exact, score, sizes, n_refine):
    """One row per L: span error, accuracy without and with refinement."""
    from sklearn.exceptions import ConvergenceWarning

    from landmarking.lll._cpu import (
        reconstruction_weights,
        reduced_problem,
        solve_reduced_problem,
    )
    from landmarking.metrics import span_error
    from landmarking.spectral.refine_eigenvectors import refine_spectral_embedding

    rng = np.random.RandomState(0)
    d = exact.shape[1]
    rows = []
    for L in sizes:
        T = X[np.sort(rng.choice(len(X), L, replace=False))].astype(np.float64)
        Z = reconstruction_weights(X, T, 5)
        A, B = reduced_problem(W, Z)
        # As the fit: two guard columns past d for the refinement's start.
        vectors, _ = solve_reduced_problem(A, B, d + max(2, d // 5), random_state=0)
        start = np.asarray(Z @ vectors)
        with warnings.catch_warnings():  # a set number of iterations: not converging
            warnings.simplefilter("ignore", ConvergenceWarning)  # is expected
            refined, _, _ = refine_spectral_embedding(W, start, n_components=d,
                                                      max_iter=n_refine)
        rows.append([L, len(X) // L, span_error(Z, exact), score(start[:, :d]),
                     score(refined)])
    return rows


def cell_rows(X, sizes, score_graph, probes=(5,)):
    """One row per cell size and number of probes: recall@10 of 2,000
    rows, seconds (the centres' search, done once per size, and the graph), LE's
    accuracy."""
    from landmarking.lll._cpu import reconstruction_weights
    from landmarking.lll.cell_graph import CELL_PROBES, cell_graph
    from landmarking.neighbors import _exact_rows, nearest_neighbors

    rng = np.random.RandomState(0)
    sample = rng.choice(len(X), 2000, replace=False)
    _, truth = _exact_rows(X, X, sample, 10, exclude_self=True)

    def recall(indices):
        return np.mean([len(set(a) & set(b)) / 10 for a, b in zip(indices[sample], truth,
                                                                    strict=True)])

    rows = []
    start = time.perf_counter()
    found = nearest_neighbors(X, 10, method="approximate", random_state=0)
    rows.append(["HNSW (usearch)", "", recall(found[1]), time.perf_counter() - start,
                 score_graph(lambda: found)])
    for size in sizes:
        start = time.perf_counter()
        C = X[np.sort(rng.choice(len(X), len(X) // size, replace=False))].astype(np.float64)
        nearest = reconstruction_weights(X, C, max(probes)).indices.reshape(len(X), -1)
        centres_seconds = time.perf_counter() - start
        for n_probes in probes:
            start = time.perf_counter()
            found = cell_graph(X, C, nearest, 10, n_probes=n_probes)
            label = f"cells of {size}" + ("" if n_probes == CELL_PROBES else f", {n_probes} probes")
            rows.append([label, len(C), recall(found[1]),
                         centres_seconds + time.perf_counter() - start,
                         score_graph(lambda f=found: f)])
    return rows


def roll_rows(sizes, n_refine):
    """One row per roll size and fit: seconds and Procrustes error."""
    from lll_defaults import data, score

    from landmarking import LaplacianEigenmaps, LocallyLinearLandmarks

    rows = []
    for n in sizes:
        X, truth = data("roll", n)
        fits = [("exact LE", LaplacianEigenmaps(random_state=0)),
                ("LLL, the defaults", LocallyLinearLandmarks(random_state=0))]
        for per in (1000, 100):
            L = max(100, n // per)
            for refine in (0, n_refine):
                fits.append((f"LLL, N / {per:,}", LocallyLinearLandmarks(
                    n_landmarks=L, refine=refine, random_state=0)))
        for name, model in fits:
            start = time.perf_counter()
            embedding = model.fit_transform(X)
            seconds = time.perf_counter() - start
            rows.append([f"{n:,}", name, getattr(model, "n_landmarks_", ""),
                         getattr(model, "refine_", ""), seconds,
                         score("roll", embedding, truth)])
    return rows


def roll_graph_rows(sizes):
    """One row per roll size and graph builder: recall@10 of 2,000 rows, seconds."""
    from lll_defaults import data

    from landmarking.lll.cell_graph import cells_neighbors
    from landmarking.neighbors import _exact_rows, nearest_neighbors

    rows = []
    for n in sizes:
        X, _ = data("roll", n)
        sample = np.random.RandomState(0).choice(n, 2000, replace=False)
        _, truth = _exact_rows(X, X, sample, 10, exclude_self=True)
        builders = [
            ("KD-tree (auto: SciPy's)", nearest_neighbors, dict(method="auto")),
            ("scikit-learn's KD-tree (the tree before)", sklearn_kd_tree, {}),
            ("HNSW (usearch)", nearest_neighbors, dict(method="approximate",
                                                       random_state=0)),
            ("cells of 100", cells_neighbors, dict(random_state=0))]
        for name, build, options in builders:
            start = time.perf_counter()
            _, indices = build(X, 10, **options)
            seconds = time.perf_counter() - start
            recall = np.mean([len(set(a) & set(b)) / 10
                              for a, b in zip(indices[sample], truth, strict=True)])
            rows.append([f"{n:,}", name, recall, seconds])
    return rows


def sklearn_kd_tree(X, n_neighbors):
    """scikit-learn's KD-tree on every thread, "auto"'s tree before SciPy's."""
    from sklearn.neighbors import NearestNeighbors

    from landmarking._parallel import loop_threads

    index = NearestNeighbors(algorithm="kd_tree", n_jobs=loop_threads()).fit(X)
    return index.kneighbors(n_neighbors=n_neighbors)


def text_rows(sizes):
    """One row per number of posts and fit: seconds and 20-way 10-NN accuracy."""
    from sklearn.neighbors import KNeighborsClassifier

    from landmarking import LaplacianEigenmaps, LocallyLinearLandmarks
    from landmarking.datasets import load_newsgroups
    from landmarking.text import sqrt_histograms, strip_headers

    parts = [load_newsgroups(subset=subset) for subset in ("train", "test")]
    posts = [strip_headers(doc) for docs, _, _ in parts for doc in docs]
    labels = np.concatenate([part[1] for part in parts])
    is_test = np.repeat([False, True], [len(part[0]) for part in parts])
    X, _, _ = sqrt_histograms(posts)
    # Shuffled once, so that the first n posts hold both splits.
    order = np.random.RandomState(0).permutation(X.shape[0])
    rows = []
    for n in sizes:
        take = order[:n]
        Xn, yn, test = X[take], labels[take], is_test[take]
        fits = [("exact LE", LaplacianEigenmaps(n_components=10, random_state=0)),
                ("LLL, the defaults", LocallyLinearLandmarks(n_components=10,
                                                             random_state=0)),
                ("LLL, no refinement", LocallyLinearLandmarks(
                    n_components=10, refine=False, random_state=0))]
        for name, model in fits:
            start = time.perf_counter()
            embedding = model.fit_transform(Xn)
            seconds = time.perf_counter() - start
            knn = KNeighborsClassifier(10).fit(embedding[~test], yn[~test])
            rows.append([f"{n:,}", name, getattr(model, "n_landmarks_", ""),
                         getattr(model, "refine_", ""), seconds,
                         knn.score(embedding[test], yn[test])])
    return rows


def main(argv=None):
    args = parse_args(argv)
    from landmarking.graph import graph_of_neighbors, neighbor_graph
    from landmarking.spectral.laplacian import spectral_embedding

    tables = args.tables.split(",")
    if "roll" in tables:
        sizes = [int(v) for v in args.roll_sizes.split(",")]
        print_table(["N", "fit", "L", "refine", "seconds", "Procrustes error"],
                    roll_rows(sizes, args.refine))
    if "roll-graphs" in tables:
        sizes = [int(v) for v in args.roll_sizes.split(",")]
        print_table(["N", "graph", "recall@10 (2,000 rows)", "seconds"],
                    roll_graph_rows(sizes))
    if "text" in tables:
        sizes = [int(v) for v in args.text_sizes.split(",")]
        print_table(["posts", "fit", "L", "refine", "seconds", "10-NN accuracy (20-way)"],
                    text_rows(sizes))
    if not {"landmarks", "cells"} & set(tables):
        print(machine_line())
        return
    X, y, held = digits(args.n)

    def score(embedding):
        return accuracy(embedding, y, held)

    def score_graph(search):
        # Exact LE on the neighbour lists that ``search()`` returns.
        W, _ = graph_of_neighbors(*search(), "auto")
        return score(spectral_embedding(W, 10, random_state=0)[0])

    if "landmarks" in tables:
        W, _ = neighbor_graph(X, 10, "auto", method="auto", random_state=0)
        exact = spectral_embedding(W, 10, random_state=0)[0]
        print(f"\nexact LE, {args.n:,} digits, 10-D: 10-NN accuracy {score(exact):.4f}")
        sizes = [int(v) for v in args.landmarks.split(",")]
        print_table(["L", "N / L", "span error", "LLL accuracy",
                     f"refined ({args.refine} iterations)"],
                    landmark_rows(X, W, exact, score, sizes, args.refine))
    if "cells" in tables:
        sizes = [int(v) for v in args.cell_sizes.split(",")]
        print_table(["graph", "cells", "recall@10", "seconds", "exact LE accuracy"],
                    cell_rows(X, sizes, score_graph,
                              [int(v) for v in args.probes.split(",")]))
    print(machine_line())


if __name__ == "__main__":
    main()
