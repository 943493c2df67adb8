"""k-nearest-neighbour graphs on MNIST: seconds and recall per method.

Methods, each on the same digits (pixels in [0, 1], float32 as loaded):

- ``ours``: ``landmarking.neighbors.exact_knn`` (blocked float32 products,
  exact float64 re-rank), the default exact search;
- ``brute``, ``kd_tree``, ``ball_tree``: scikit-learn ``NearestNeighbors``
  with that algorithm (float64 input, as scikit-learn computes);
- ``pynndescent``: NN-descent (``method="approximate"``), its numba
  compilation done beforehand on a small set and reported apart.

Recall is against ``ours`` (which a check here compares with ``brute``:
identical lists where the k-th neighbour is not tied). ``--tree-n`` runs the
tree methods on the first rows only (they are far slower in 784 dimensions);
``ours`` and ``brute`` are timed there too, so their ratio is measured on the
same subset.

    python benchmarks/knn.py --n 60000 --k 10,50,150
    python benchmarks/knn.py --n 20000 --k 10 --methods ours,pynndescent

Prints a table (with the load average) and writes knn.json to --out.
"""

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from landmarking.datasets import load_mnist
from landmarking.neighbors import exact_knn, nearest_neighbors


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=60000, help="training digits used")
    p.add_argument("--k", default="10,50,150", help="comma-separated neighbour counts")
    p.add_argument("--methods", default="ours,brute,pynndescent,kd_tree,ball_tree")
    p.add_argument("--tree-n", type=int, default=5000,
                   help="rows for the tree methods (and ours/brute again beside them)")
    p.add_argument("--only-batches", action="store_true",
                   help="only the kept-index timing (issue 14): 1,000 one-point queries "
                   "against one 1,000-point query")
    p.add_argument("--out", default="benchmarks/output")
    return p.parse_args()


def recall(found, truth):
    k = truth.shape[1]
    hits = sum(len(np.intersect1d(a, b, assume_unique=True))
               for a, b in zip(found, truth, strict=True))
    return hits / (k * truth.shape[0])


def run(method, X, k):
    from sklearn.neighbors import NearestNeighbors

    t = time.perf_counter()
    if method == "ours":
        d, i = exact_knn(X, k)
    elif method == "pynndescent":
        d, i = nearest_neighbors(X, k, method="approximate", random_state=0)
    else:
        d, i = NearestNeighbors(n_neighbors=k, algorithm=method).fit(
            X.astype(np.float64)).kneighbors()
    return time.perf_counter() - t, d, i


def batch_queries(X, methods, n_query=1000, k=10):
    """A kept index (NeighborIndex, fitted once) queried with one point at a time
    against one call with all points; and rebuilding it on every call, as
    query_neighbors does when given an array (3 calls, seconds per call)."""
    from landmarking.neighbors import NeighborIndex, query_neighbors

    Q = load_mnist(split="test")[0][:n_query]
    kinds = ["exact"] + (["approximate"] if "pynndescent" in methods else [])
    out = []
    print()
    print(f"| index ({len(X)} points) | build s | {n_query} calls of 1 point s | "
          f"1 call of {n_query} points s | rebuilt per call: s per call |")
    print("|---|---|---|---|---|")
    for kind in kinds:
        t = time.perf_counter()
        index = NeighborIndex(method=kind, random_state=0).fit(X)
        build = time.perf_counter() - t
        t = time.perf_counter()
        for q in Q:
            index.query(q[None], k)
        singles = time.perf_counter() - t
        t = time.perf_counter()
        index.query(Q, k)
        batch = time.perf_counter() - t
        t = time.perf_counter()
        for q in Q[:3]:
            query_neighbors(X, q[None], k, method=kind, random_state=0)
        rebuilt = (time.perf_counter() - t) / 3
        out.append({"index": kind, "build": build, "singles": singles, "batch": batch,
                    "rebuilt_per_call": rebuilt})
        print(f"| {kind} | {build:.2f} | {singles:.2f} | {batch:.3f} | {rebuilt:.2f} |",
              flush=True)
    return out


def main():
    args = parse_args()
    methods = args.methods.split(",")
    ks = [int(k) for k in args.k.split(",")]
    X, _ = load_mnist()
    X = X[:args.n]
    # Warm-up: numba compiles of our re-rank and of NN-descent, reported apart.
    t = time.perf_counter()
    exact_knn(X[:500], 5)
    cold = {"ours": time.perf_counter() - t}
    if "pynndescent" in methods:
        t = time.perf_counter()
        nearest_neighbors(X[:2000], 10, method="approximate", random_state=0)
        cold["pynndescent"] = time.perf_counter() - t
    print(f"load average before: {os.getloadavg()}")
    if args.only_batches:
        batch_queries(X, methods)
        print(f"load average after: {os.getloadavg()}")
        return
    print("cold first calls (compilation, small sets): "
          + ", ".join(f"{m} {s:.1f} s" for m, s in cold.items()))
    rows = []
    sets = [("full", X, [m for m in methods if m in ("ours", "brute", "pynndescent")])]
    trees = [m for m in methods if m in ("kd_tree", "ball_tree")]
    if trees:
        sets.append(("tree", X[:args.tree_n], ["ours", "brute"] + trees))
    for _name, data, ms in sets:
        for k in ks:
            truth = None
            for m in ms:
                seconds, d, i = run(m, data, k)
                if m == "ours":
                    truth = (d, i)
                r = recall(i, truth[1]) if truth is not None else float("nan")
                same = ""
                if m == "brute" and truth is not None:
                    same = bool(np.allclose(d, truth[0], atol=1e-5))
                rows.append({"n": len(data), "k": k, "method": m, "seconds": seconds,
                             "recall": r, "distances_match": same,
                             "load": os.getloadavg()[0]})
                print(f"n={len(data):6d} k={k:4d} {m:12s} {seconds:8.2f} s  recall "
                      f"{r:.4f} {same}  load {os.getloadavg()[0]:.2f}", flush=True)
    print()
    print("| n | k | method | seconds | recall | vs ours |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        ours = next(q["seconds"] for q in rows
                    if q["n"] == r["n"] and q["k"] == r["k"] and q["method"] == "ours")
        print(f"| {r['n']} | {r['k']} | {r['method']} | {r['seconds']:.2f} | "
              f"{r['recall']:.4f} | {r['seconds'] / ours:.2f}x |")
    batches = batch_queries(X, methods)
    print(f"load average after: {os.getloadavg()}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    record = {"cold": cold, "rows": rows, "batches": batches}
    (out / "knn.json").write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
