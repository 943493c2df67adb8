"""k-nearest-neighbour graphs on MNIST: seconds and recall per method.

Methods, each on the same digits (pixels in [0, 1], float32 as loaded):

- ``ours``: ``landmarking.neighbors.exact_knn`` (float32 product tiles from
  BLAS, each computed once for both of its points, heap shortlists, exact
  float64 re-rank), the default exact search;
- ``brute``, ``kd_tree``, ``ball_tree``: scikit-learn ``NearestNeighbors``
  with that algorithm (float64 input, as scikit-learn computes);
- ``approximate``: ``method="approximate"`` (usearch's HNSW graph on the
  principal axes, exact re-rank; the ``ann`` extra), its first call on a small
  set reported apart (no compilation: usearch ships compiled code). For a
  first call in a new interpreter see benchmarks/first_call.py.

Every method runs with its default threads (all cores: BLAS, our compiled
kernels and scikit-learn's OpenMP alike). For each size the exact graph at the
largest k is computed once (by ``ours``, timed) and its prefixes are the truth for
recall at the smaller k; ``ours`` at a smaller k must equal that prefix (the
lists are sorted by distance, ties by index), and ``brute`` is checked
against it. The tree methods are far slower in 784 dimensions: they run on
``--tree-queries`` test digits against all training digits, with ``ours``
and ``brute`` timed on the same queries beside them (recall against ours).

    python benchmarks/knn.py --n 60000 --k 10,50,150
    python benchmarks/knn.py --n 5000,10000,20000,40000 --k 10,50,150 \\
        --methods ours,approximate     # where the approximate search starts to win

Prints a table (with the load average), writes knn.json (after every row, so
that a cut run keeps what it measured) and knn.png to --out.
"""

import json
import os

import numpy as np
from _common import argument_parser, machine_line, parse, timed
from sklearn import config_context

from landmarking.datasets import load_mnist
from landmarking.neighbors import exact_knn, nearest_neighbors


def parse_args():
    p = argument_parser(__doc__, size=None, seed=False)
    p.add_argument("--n", default="60000", help="comma-separated numbers of training digits")
    p.add_argument("--k", default="10,50,150", help="comma-separated neighbour counts")
    p.add_argument("--methods", default="ours,brute,approximate,kd_tree,ball_tree")
    p.add_argument("--tree-queries", type=int, default=500,
                   help="test digits queried by the tree methods (and ours/brute "
                   "beside them) against the largest training set")
    p.add_argument("--only-batches", action="store_true",
                   help="only the kept-index timing (issue 14): 1,000 one-point queries "
                   "against one 1,000-point query")
    return parse(p, machine=False)


def recall(found, truth):
    k = truth.shape[1]
    hits = sum(len(np.intersect1d(a, b, assume_unique=True))
               for a, b in zip(found, truth, strict=True))
    return hits / (k * truth.shape[0])


def run(method, X, k, query=None):
    """Seconds, distances and indices of one search (self excluded when query is None)."""
    from sklearn.neighbors import NearestNeighbors

    def search():
        if method == "ours":
            return exact_knn(X, k, query=query)
        if method == "approximate":
            return nearest_neighbors(X, k, method="approximate", random_state=0)
        nn = NearestNeighbors(n_neighbors=k, algorithm=method).fit(X.astype(np.float64))
        return nn.kneighbors(None if query is None else query.astype(np.float64))

    seconds, (d, i) = timed(search)
    return seconds, d, i


def batch_queries(X, methods, n_query=1000, k=10):
    """A kept index (NeighborIndex, fitted once) queried with one point at a time
    against one call with all points; and rebuilding it on every call, as
    query_neighbors does when given an array (3 calls, seconds per call)."""
    from landmarking.neighbors import NeighborIndex, query_neighbors

    Q = load_mnist(split="test")[0][:n_query]
    kinds = ["exact"] + (["approximate"] if "approximate" in methods else [])
    out = []
    print()
    print(f"| index ({len(X)} points) | build s | {n_query} calls of 1 point s | "
          f"1 call of {n_query} points s | rebuilt per call: s per call |")
    print("|---|---|---|---|---|")
    for kind in kinds:
        build, index = timed(NeighborIndex(method=kind, random_state=0).fit, X)
        singles = timed(lambda index=index: [index.query(q[None], k) for q in Q])[0]
        batch = timed(index.query, Q, k)[0]
        rebuilt = timed(lambda kind=kind: [query_neighbors(X, q[None], k, method=kind,
                                                           random_state=0)
                                           for q in Q[:3]])[0] / 3
        out.append({"index": kind, "build": build, "singles": singles, "batch": batch,
                    "rebuilt_per_call": rebuilt})
        print(f"| {kind} | {build:.2f} | {singles:.2f} | {batch:.3f} | {rebuilt:.2f} |",
              flush=True)
    return out


def warm_up(X, Xt, methods):
    """Cold first calls (loading the compiled loops, usearch's first graph),
    reported apart."""
    def ours():
        # A small working memory makes small tiles, so that every kernel (the
        # transposed push too) runs once here and not first inside a timed call.
        with config_context(working_memory=1):
            exact_knn(X[:700], 5)
            exact_knn(X[:700], 5, query=Xt[:10])

    cold = {"ours": timed(ours)[0]}
    if "approximate" in methods:
        cold["approximate"] = timed(nearest_neighbors, X[:2000], 10, method="approximate",
                                    random_state=0)[0]
    return cold


def measure(rows, record, out, **row):
    row["load"] = os.getloadavg()[0]
    rows.append(row)
    print(f"n={row['n']:6d} q={row['queries']:6d} k={row['k']:4d} {row['method']:12s} "
          f"{row['seconds']:8.2f} s  recall {row['recall']:.4f}  same lists "
          f"{row['same']}  load {row['load']:.2f}", flush=True)
    (out / "knn.json").write_text(json.dumps(record, indent=1))


def full_set(X, ks, methods, rows, record, out):
    """Every point's neighbours among the others, truth from ours at the largest k."""
    kmax = max(ks)
    seconds, d_ref, i_ref = run("ours", X, kmax)
    measure(rows, record, out, n=len(X), queries=len(X), k=kmax, method="ours",
            seconds=seconds, recall=1.0, same=1.0)
    for k in sorted(ks):
        truth = i_ref[:, :k]
        for m in [m for m in methods if m in ("ours", "brute", "approximate")]:
            if m == "ours" and k == kmax:
                continue
            seconds, d, i = run(m, X, k)
            same = float(np.mean(np.all(i == truth, axis=1)))
            if m == "ours":
                assert same == 1.0, "ours at a smaller k is not a prefix of the largest"
            if m != "approximate":
                assert np.allclose(d, d_ref[:, :k], rtol=1e-9, atol=1e-9), m
            measure(rows, record, out, n=len(X), queries=len(X), k=k, method=m,
                    seconds=seconds, recall=recall(i, truth), same=same)


def tree_queries(X, Q, ks, methods, rows, record, out):
    """Test digits against all training digits: the tree methods with ours and
    brute beside them."""
    for k in sorted(ks):
        truth = None
        for m in ["ours", "brute"] + [m for m in methods if m in ("kd_tree", "ball_tree")]:
            seconds, d, i = run(m, X, k, query=Q)
            if truth is None:
                truth = i
            same = float(np.mean(np.all(i == truth, axis=1)))
            measure(rows, record, out, n=len(X), queries=len(Q), k=k, method=m,
                    seconds=seconds, recall=recall(i, truth), same=same)


def table(rows):
    print()
    print("| n | queries | k | method | seconds | recall | same lists | vs ours | load |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ours = next(q["seconds"] for q in rows if q["method"] == "ours"
                    and (q["n"], q["queries"], q["k"]) == (r["n"], r["queries"], r["k"]))
        print(f"| {r['n']} | {r['queries']} | {r['k']} | {r['method']} | "
              f"{r['seconds']:.2f} | {r['recall']:.4f} | {r['same']:.4f} | "
              f"{r['seconds'] / ours:.2f}x | {r['load']:.1f} |")


def plot(rows, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = sorted({(r["n"], r["queries"]) for r in rows})
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 4), squeeze=False)
    for ax, (n, q) in zip(axes[0], groups, strict=True):
        for m in dict.fromkeys(r["method"] for r in rows):
            pts = sorted((r["k"], r["seconds"]) for r in rows
                         if (r["n"], r["queries"], r["method"]) == (n, q, m))
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", label=m)
        ax.set(xlabel="k", ylabel="seconds", yscale="log",
               title=f"{q} queries against {n} digits")
        ax.legend()
    fig.tight_layout()
    fig.savefig(out / "knn.png", dpi=100)


def main():
    args = parse_args()
    methods = args.methods.split(",")
    ks = [int(k) for k in args.k.split(",")]
    sizes = [int(n) for n in args.n.split(",")]
    X_all, _ = load_mnist()
    Xt = load_mnist(split="test")[0]
    out = args.out
    cold = warm_up(X_all, Xt, methods)
    print(machine_line(), flush=True)
    if args.only_batches:
        batch_queries(X_all[:sizes[-1]], methods)
        print(machine_line())
        return
    print("cold first calls (compilation, small sets): "
          + ", ".join(f"{m} {s:.1f} s" for m, s in cold.items()), flush=True)
    rows = []
    record = {"cold": cold, "rows": rows, "load_before": os.getloadavg()}
    for n in sizes:
        full_set(X_all[:n], ks, methods, rows, record, out)
    if any(m in methods for m in ("kd_tree", "ball_tree")):
        tree_queries(X_all[:max(sizes)], Xt[:args.tree_queries], ks, methods, rows,
                     record, out)
    table(rows)
    plot(rows, out)
    print(machine_line())


if __name__ == "__main__":
    main()
