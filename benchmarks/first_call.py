"""A new user's first call, in a fresh process: one NEW interpreter per cell.

A user's script is a new process, so what it pays is the first call there: any
compilation that is not reused across processes counts.

The default output is the small-fit table: import and first ``fit`` of each
estimator's default on small data, each cell a new interpreter, rows alternating
with their scikit-learn peer, ``--runs`` times each:

- ``GPLandmarks(n_landmarks=100)`` and ``(n_landmarks=20)`` on scikit-learn's
  1,797 digits (8 x 8), peer ``KMeans(100)``;
- ``LaplacianEigenmaps()`` on a Swiss roll of 3,000 points, peer
  ``SpectralEmbedding()``;
- ``LocallyLinearLandmarks(n_landmarks=100)`` on the same roll, peer
  ``LocallyLinearEmbedding()``;
- ``ManifoldSculpting()`` on 1,000 roll points (``benchmarks/sculpting.py
  --first-call`` times the star roll).

"first process" is a new interpreter's import and fit; "next process" the same
in the next new interpreter (what is cached on disk between processes, if
anything, is warm there)::

    python benchmarks/first_call.py [--runs 3]

``--gp-mnist``: the default ``GPLandmarks(n_landmarks=100, n_jobs=2)`` on the
first 50,000 MNIST training digits (``--n`` fewer), ``--runs`` new interpreters
one after another, each timing the first fit (seed 0) and then the warm one (seed
1)::

    python benchmarks/first_call.py --gp-mnist --runs 3

``--rows``: the k-NN graph of MNIST in a fresh process. Each row starts a new
Python interpreter that loads the digits, times the first call of the search (the
library's imports inside it included), then the same call again (warm), and
compares the lists with the exact ones (computed once by the parent, by
``method="exact"``, before the rows). Rows:

- ``approximate``: ``nearest_neighbors(X, k, method="approximate")`` (usearch's
  HNSW graph on the principal axes, exact re-rank; the ``ann`` extra);
- ``exact``: ``nearest_neighbors(X, k)`` (blocked float32 products, exact re-rank);
- ``pynndescent``: ``NNDescent(X, n_neighbors=k + 1)``'s graph, the previous
  approximate backend (numba, compiled in every new process), when installed;
- ``--libraries``: HNSW from each library that ships compiled code, on all 784
  pixels, built by one thread (connectivity 16, expansion 100 while building,
  64 while searching): usearch, faiss-cpu, voyager and hnswlib, those installed.

Rows are repeated as listed (``approximate,approximate`` shows that the second
new process pays what the first did, and gets the same lists: ``lists`` is a
hash of them).

``--embeddings le,lll,sklearn-amg`` adds issue 25's estimator rows, each a new
interpreter: ``LaplacianEigenmaps(n_components=10)``,
``LocallyLinearLandmarks(n_components=10, n_landmarks=1000)`` (then mapping
--n-test test digits) and scikit-learn's ``SpectralEmbedding(eigen_solver="amg")``
(needs pyamg), all from the pixels with ``random_state=0``: the first fit's
seconds, 10-NN accuracy (5-fold) of the 10-D embedding, the map's seconds; with
``--warm`` the same fit timed again in the same interpreter.

``--n`` above 60,000 (issue 25: "the same two rows at 200,000 points") takes
the 60,000 training digits, then shifted copies of them up to n
(:func:`mnist_digits`: digit i % 60,000 moved by a seeded random offset of -2..2
pixels in each axis, (0, 0) excluded, the image zero-padded, its label carried
along); every interpreter generates the same rows (seed 0), outside the timed
fit. The 5-fold accuracy is then flattering: a digit's shifted copies fall in
other folds. The lead runs this on a quiet machine (about 630 MB of digits
per process, several minutes):

    flock /tmp/landmarking-heavy.lock .venv/bin/python benchmarks/first_call.py \
        --rows "" --embeddings le,lll --n 200000

    flock /tmp/landmarking-heavy.lock .venv/bin/python benchmarks/first_call.py \\
        --rows approximate,approximate,exact,pynndescent,pynndescent
    flock /tmp/landmarking-heavy.lock .venv/bin/python benchmarks/first_call.py \\
        --rows approximate --libraries
    flock /tmp/landmarking-heavy.lock .venv/bin/python benchmarks/first_call.py \\
        --rows "" --embeddings le,lll,sklearn-amg

Prints the machine line (load, BLAS) before and after the table; writes
first_call.json to --out.
"""

import json
import textwrap
import time

from _common import argument_parser, installed, machine_line, mnist_digits, parse, run_child

# What each row runs in its new interpreter: ``search()`` returns the indices.
_SEARCH = {
    "approximate": """
        from landmarking.neighbors import nearest_neighbors
        def search():
            return nearest_neighbors(X, K, method="approximate", random_state=0)[1]
    """,
    "exact": """
        from landmarking.neighbors import nearest_neighbors
        def search():
            return nearest_neighbors(X, K)[1]
    """,
    "pynndescent": """
        def search():
            from pynndescent import NNDescent
            index = NNDescent(X, n_neighbors=K + 1, random_state=0)
            return drop_self(index.neighbor_graph[0])
    """,
    "usearch-784": """
        def search():
            from usearch.index import Index
            index = Index(ndim=X.shape[1], metric="l2sq", dtype="f32", connectivity=16,
                          expansion_add=100, expansion_search=64)
            index.add(np.arange(len(X)), X, threads=1)
            return drop_self(index.search(X, K + 1, threads=0).keys.astype(np.int64))
    """,
    "faiss-784": """
        def search():
            import faiss
            faiss.omp_set_num_threads(1)
            index = faiss.IndexHNSWFlat(X.shape[1], 16)
            index.hnsw.efConstruction = 100
            index.add(X)
            faiss.omp_set_num_threads(os.cpu_count())
            index.hnsw.efSearch = 64
            return drop_self(index.search(X, K + 1)[1])
    """,
    "voyager-784": """
        def search():
            import voyager
            index = voyager.Index(voyager.Space.Euclidean, num_dimensions=X.shape[1], M=16,
                                  ef_construction=100, random_seed=0)
            index.add_items(X, num_threads=1)
            return drop_self(index.query(X, k=K + 1, num_threads=os.cpu_count(),
                                         query_ef=64)[0].astype(np.int64))
    """,
    "hnswlib-784": """
        def search():
            import hnswlib
            index = hnswlib.Index(space="l2", dim=X.shape[1])
            index.init_index(max_elements=len(X), ef_construction=100, M=16, random_seed=0)
            index.add_items(X, np.arange(len(X)), num_threads=1)
            index.set_ef(64)
            return drop_self(index.knn_query(X, k=K + 1, num_threads=os.cpu_count())[0]
                             .astype(np.int64))
    """,
}
# Embedding rows: ``fit()`` returns the (n, 10) embedding of X; ``mapper`` (None
# for none) maps the test digits. Each is the estimator's defaults but for the
# dimension, the landmarks and the seed, as issue 25's targets state them.
_EMBED = {
    "le": """
        from landmarking.spectral.laplacian import LaplacianEigenmaps
        def fit():
            return LaplacianEigenmaps(n_components=10, random_state=0).fit_transform(X), None
    """,
    "lll": """
        from landmarking.lll.estimator import LocallyLinearLandmarks
        def fit():
            model = LocallyLinearLandmarks(n_components=10, n_landmarks=1000, random_state=0)
            return model.fit_transform(X), model.transform
    """,
    "lll-cells": """
        from landmarking.lll.estimator import LocallyLinearLandmarks
        def fit():
            model = LocallyLinearLandmarks(n_components=10, n_landmarks=1000,
                                           neighbors_method="cells", random_state=0)
            return model.fit_transform(X), model.transform
    """,
    "lll-cells-refine": """
        from landmarking.lll.estimator import LocallyLinearLandmarks
        def fit():
            model = LocallyLinearLandmarks(n_components=10, n_landmarks=1000,
                                           neighbors_method="cells", refine=3, random_state=0)
            return model.fit_transform(X), model.transform
    """,
    "sklearn-amg": """
        from sklearn.manifold import SpectralEmbedding
        def fit():
            model = SpectralEmbedding(n_components=10, n_neighbors=10, eigen_solver="amg",
                                      random_state=0)
            return model.fit_transform(X), None
    """,
}
_EMBED_CHILD = """
import json, os, time
import numpy as np
# scikit-learn's classifier modules are loaded before the timer, as they always were.
import sklearn.model_selection, sklearn.neighbors
from _common import held_out_knn_accuracy, knn_accuracy, mnist_digits, timed
from landmarking.datasets import load_mnist

X, y = mnist_digits({n})
Xt, yt = load_mnist(split="test")
Xt, yt = Xt[:{n_test}], yt[:{n_test}]
{fit}
seconds, (embedding, mapper) = timed(fit)
load = os.getloadavg()[0]
row = {{"seconds": seconds, "load": load, "warm": timed(fit)[0] if {warm} else None,
        "accuracy": knn_accuracy(embedding, y)}}
if mapper is not None:
    row["map_seconds"], mapped = timed(mapper, Xt)
    row["test_accuracy"] = held_out_knn_accuracy(embedding, y, mapped, yt)
print(json.dumps(row))
"""
# The module a row needs beyond `make install` (a row without it is left out).
_MODULE = {"pynndescent": "pynndescent", "sklearn-amg": "pyamg", "usearch-784": "usearch",
           "faiss-784": "faiss", "voyager-784": "voyager", "hnswlib-784": "hnswlib"}

_CHILD = """
import hashlib, json, os, sys, time
import numpy as np
from _common import mnist_digits

X = mnist_digits({n})[0]
K = {k}
truth = np.load({truth!r})


def drop_self(indices):
    keep = indices != np.arange(len(indices))[:, None]
    keep[keep.all(axis=1), -1] = False
    return indices[keep].reshape(len(indices), -1)[:, :K]

{search}
start = time.perf_counter()
first_lists = search()
first = time.perf_counter() - start
start = time.perf_counter()
lists = search()
warm = time.perf_counter() - start
hits = sum(len(np.intersect1d(a, b)) for a, b in zip(lists, truth))
print(json.dumps({{"first": first, "warm": warm, "recall": hits / truth.size,
                  "same_twice": bool(np.array_equal(first_lists, lists)),
                  "lists": hashlib.sha1(np.ascontiguousarray(lists).tobytes()).hexdigest()[:10],
                  "load": os.getloadavg()[0]}}))
"""



def parse_args():
    p = argument_parser(__doc__, size=None, seed=False)
    p.add_argument("--n", type=int, default=60000,
                   help="training digits; above 60,000, shifted copies (mnist_digits)")
    p.add_argument("--k", type=int, default=10, help="neighbours per digit")
    p.add_argument("--rows", default="",
                   help="k-NN rows, e.g. approximate,exact,pynndescent")
    p.add_argument("--runs", type=int, default=3,
                   help="runs of each small-fit cell, or new interpreters of --gp-mnist")
    p.add_argument("--embeddings", default="",
                   help="estimator rows, e.g. le,lll,sklearn-amg (issue 25's targets)")
    p.add_argument("--n-test", type=int, default=10000,
                   help="test digits the embedding rows map out of sample")
    p.add_argument("--warm", action="store_true",
                   help="time each estimator's fit a second time in its interpreter (warm)")
    p.add_argument("--libraries", action="store_true",
                   help="add one row per HNSW library installed, on all 784 pixels")
    p.add_argument("--gp-mnist", action="store_true",
                   help="the default GPLandmarks on MNIST 50,000: first and warm fit")
    return parse(p)


def neighbour_rows(args, rows, out, results):
    import numpy as np

    from landmarking.neighbors import nearest_neighbors

    X = mnist_digits(args.n)[0]
    start = time.perf_counter()
    truth = nearest_neighbors(X, args.k)[1]
    print(f"exact lists for recall (this process): "
          f"{time.perf_counter() - start:.1f} s", flush=True)
    truth_path = out / f"first_call_truth_{args.n}_{args.k}.npy"
    np.save(truth_path, truth)
    print()
    print(f"| method (n = {args.n}, k = {args.k}) | first call s | warm call s | "
          "process s | recall | lists | load |")
    print("|---|---|---|---|---|---|---|")
    for name in rows:
        row = run_child(_CHILD.format(n=args.n, k=args.k, truth=str(truth_path),
                                      search=textwrap.dedent(_SEARCH[name])))
        row["method"] = name
        results.append(row)
        same = "" if row["same_twice"] else " (warm differs!)"
        print(f"| {name} | {row['first']:.2f} | {row['warm']:.2f} | {row['process']:.1f} | "
              f"{row['recall']:.4f} | {row['lists']}{same} | {row['load']:.2f} |", flush=True)
        (out / "first_call.json").write_text(json.dumps(results, indent=1))


def embedding_rows(args, rows, out, results):
    print()
    print(f"| estimator (MNIST {args.n}, 10-D) | fit s (first call, graph included) | "
          f"warm fit s | 10-NN accuracy (5-fold) | map {args.n_test} new s | their accuracy | "
          "process s | load |")
    print("|---|---|---|---|---|---|---|---|")
    for name in rows:
        row = run_child(_EMBED_CHILD.format(n=args.n, n_test=args.n_test,
                                            fit=textwrap.dedent(_EMBED[name]),
                                            warm=args.warm))
        row["method"] = name
        results.append(row)
        mapped = (f"{row['map_seconds']:.2f} | {row['test_accuracy']:.4f}"
                  if "map_seconds" in row else "n/a | n/a")
        warm = "n/a" if row["warm"] is None else f"{row['warm']:.2f}"
        print(f"| {name} | {row['seconds']:.2f} | {warm} | {row['accuracy']:.4f} | {mapped} | "
              f"{row['process']:.1f} | {row['load']:.2f} |", flush=True)
        (out / "first_call.json").write_text(json.dumps(results, indent=1))


#: The small-fit data, each built before the timer starts.
_SMALL_DATA = {
    "digits": "from sklearn.datasets import load_digits\nX = load_digits().data",
    "roll 3,000": ("from sklearn.datasets import make_swiss_roll\n"
                   "X = make_swiss_roll(3000, random_state=0)[0]"),
    "roll 1,000": ("from sklearn.datasets import make_swiss_roll\n"
                   "X = make_swiss_roll(1000, random_state=0)[0]"),
}

#: (row, data, the import and construction that are timed with the fit, peer).
_SMALL_ROWS = [
    ("GPLandmarks(n_landmarks=100)", "digits",
     "from landmarking import GPLandmarks\nmodel = GPLandmarks(n_landmarks=100, random_state=0)",
     "KMeans(100)"),
    ("GPLandmarks(n_landmarks=20)", "digits",
     "from landmarking import GPLandmarks\nmodel = GPLandmarks(n_landmarks=20, random_state=0)",
     None),
    ("LaplacianEigenmaps()", "roll 3,000",
     "from landmarking import LaplacianEigenmaps\nmodel = LaplacianEigenmaps(random_state=0)",
     "SpectralEmbedding()"),
    ("LocallyLinearLandmarks(n_landmarks=100)", "roll 3,000",
     "from landmarking import LocallyLinearLandmarks\n"
     "model = LocallyLinearLandmarks(n_landmarks=100, random_state=0)",
     "LocallyLinearEmbedding()"),
    ("ManifoldSculpting()", "roll 1,000",
     "from landmarking import ManifoldSculpting\nmodel = ManifoldSculpting(random_state=0)",
     None),
]

_PEERS = {
    "KMeans(100)": "from sklearn.cluster import KMeans\nmodel = KMeans(100, random_state=0)",
    "SpectralEmbedding()": ("from sklearn.manifold import SpectralEmbedding\n"
                            "model = SpectralEmbedding(random_state=0)"),
    "LocallyLinearEmbedding()": ("from sklearn.manifold import LocallyLinearEmbedding\n"
                                 "model = LocallyLinearEmbedding(random_state=0)"),
}

_SMALL_CHILD = """
import json, os, time, warnings
warnings.simplefilter("ignore")
{data}
start = time.perf_counter()
{estimator}
model.fit(X)
seconds = time.perf_counter() - start
print(json.dumps(dict(seconds=seconds, load=os.getloadavg()[0])))
"""


def small_cell(data, estimator):
    """Import + fit seconds of ``estimator`` on ``data`` in a new interpreter."""
    return run_child(_SMALL_CHILD.format(data=_SMALL_DATA[data], estimator=estimator))


def small_fit_rows(args, out, results):
    """A first new process, the next one and the scikit-learn peer, each cell a new
    process."""
    print()
    print("| fit (small data) | first process s | next process s | peer | "
          "peer s | first / peer | next / peer | load |")
    print("|---|---|---|---|---|---|---|---|")
    for name, data, estimator, peer in _SMALL_ROWS:
        first, following, peer_seconds, loads = [], [], [], []
        for _ in range(args.runs):
            cell = small_cell(data, estimator)
            first.append(cell["seconds"])
            loads.append(cell["load"])
            following.append(small_cell(data, estimator)["seconds"])
            if peer:
                peer_seconds.append(small_cell(data, _PEERS[peer])["seconds"])
        if peer:
            best = min(peer_seconds)
            peer_cells = (f"{peer} | {best:.2f} | {min(first) / best:.2f} | "
                          f"{min(following) / best:.2f}")
        else:
            peer_cells = "none | | |"
        print(f"| {name}, {data} | {min(first):.2f} ({max(first):.2f}) | "
              f"{min(following):.2f} ({max(following):.2f}) | "
              f"{peer_cells} | {min(loads):.2f}-{max(loads):.2f} |", flush=True)
        results.append(dict(row=name, data=data, first=first, next=following, peer=peer,
                            peer_seconds=peer_seconds, loads=loads))
        (out / "first_call_small.json").write_text(json.dumps(results, indent=1))
    print(f"(the fastest of {args.runs} runs, the slowest in brackets; ratios of the "
          "fastest)")


# The default GP fit in a new interpreter: the first call, then the warm one.
_GP_MNIST_CHILD = """
import json, os, time
from landmarking import GPLandmarks
from landmarking.datasets import load_mnist
X = load_mnist(split="train")[0][:{n}]
seconds = []
for seed in (0, 1):
    start = time.perf_counter()
    GPLandmarks(n_landmarks=100, n_jobs=2, random_state=seed).fit(X)
    seconds.append(time.perf_counter() - start)
print(json.dumps(dict(first=seconds[0], warm=seconds[1], load=os.getloadavg()[0])))
"""


def gp_mnist_rows(args, out, results):
    """``GPLandmarks(n_landmarks=100, n_jobs=2)`` on MNIST, ``--runs`` new
    interpreters one after another: the first fit (seed 0) and the warm one (seed 1)."""
    n = min(args.n, 50000)
    print()
    print(f"| run (GPLandmarks(n_landmarks=100, n_jobs=2), MNIST {n}) | first call s | "
          "warm call s | load |")
    print("|---|---|---|---|")
    for run in range(args.runs):
        row = run_child(_GP_MNIST_CHILD.format(n=n))
        results.append(dict(row, run=run + 1))
        print(f"| {run + 1} | {row['first']:.2f} | {row['warm']:.2f} | {row['load']:.2f} |",
              flush=True)
        (out / "first_call_gp_mnist.json").write_text(json.dumps(results, indent=1))


def main():
    args = parse_args()
    out = args.out
    rows = [r for r in args.rows.split(",") if r]
    if args.libraries:
        rows += ["usearch-784", "faiss-784", "voyager-784", "hnswlib-784"]
    embeddings = [r for r in args.embeddings.split(",") if r]
    skipped = [r for r in rows + embeddings if r in _MODULE and not installed(_MODULE[r])]
    if skipped:
        print(f"not installed, left out: {', '.join(sorted(set(skipped)))}")
    results = []
    if args.gp_mnist:
        gp_mnist_rows(args, out, results)
    elif not rows and not embeddings:
        small_fit_rows(args, out, results)
    if rows:
        neighbour_rows(args, [r for r in rows if r not in skipped], out, results)
    if embeddings:
        embedding_rows(args, [r for r in embeddings if r not in skipped], out, results)
    print()
    print(machine_line())


if __name__ == "__main__":
    main()
