"""From raw MNIST pixels to an embedding: which tool for which job.

Every method starts from the pixels (graph included in its time) and embeds
the first --n training digits; the --n-test test digits are then mapped out of
sample where the method can. Methods:

- ``LLL``: ``LocallyLinearLandmarks(n_landmarks=--landmarks, K_Z=10, K_W=10)``;
- ``LLL refined``: the same with ``refine=True`` (exact LE of the same graph);
- ``LE (ours)``: ``LaplacianEigenmaps(eigen_solver="lobpcg")`` on the same kind
  of graph (no out-of-sample map);
- ``LE (sklearn)``: ``SpectralEmbedding(n_neighbors=10, eigen_solver=--sklearn-solver)``
  (its own graph; no out-of-sample map);
- ``UMAP``: umap-learn defaults (``transform`` for new points);
- ``t-SNE``: openTSNE defaults, 2-D only (``transform`` for new points).

Spectral embeddings are nested (the 2-D solution is the first two columns of
the 10-D one), so they are fitted once in 10-D and both rows report that
fit's time; UMAP is fitted once per dimension.

Quality, on the same footing for all: 10-NN classification accuracy (5-fold
cross-validation on the embedded training digits), trustworthiness (k = 10) on a
5,000-point subsample, and for mapped test digits: seconds to map and the
accuracy of a 10-NN classifier trained on the training embedding.

umap-learn and openTSNE are needed here only (``pip install umap-learn openTSNE``);
a missing one is skipped.

    python benchmarks/embeddings.py --n 60000 --n-test 10000
    python benchmarks/embeddings.py --n 20000 --n-test 10000 --methods lll,lll-refined,umap

Prints a table (with the load average) and writes embeddings.json to --out.
"""

import json
import os
import warnings

import numpy as np
from _common import (
    argument_parser,
    held_out_knn_accuracy,
    knn_accuracy,
    machine_line,
    parse,
    timed,
)
from sklearn.manifold import trustworthiness

from landmarking.datasets import load_mnist
from landmarking.lll.estimator import LocallyLinearLandmarks
from landmarking.neighbors import nearest_neighbors
from landmarking.spectral.laplacian import LaplacianEigenmaps

METHODS = ("lll", "lll-refined", "le-ours", "le-sklearn", "umap", "tsne")


def parse_args():
    p = argument_parser(__doc__, size=None, seed=False)
    p.add_argument("--n", type=int, default=60000, help="training digits embedded")
    p.add_argument("--n-test", type=int, default=10000, help="test digits mapped")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--landmarks", type=int, default=1000, help="LLL landmarks")
    p.add_argument("--sklearn-solver", default="amg",
                   help="SpectralEmbedding eigen_solver (amg needs pyamg; arpack is "
                   "its default and far slower here)")
    return parse(p, machine=False)


def fit(method, X, d):
    """(embedding, seconds, mapper or None)."""
    seconds, (embedding, mapper) = timed(_embed, method, X, d)
    return embedding, seconds, mapper


def _embed(method, X, d):
    """(embedding, mapper or None) of ``method``."""
    if method in ("lll", "lll-refined"):
        est = LocallyLinearLandmarks(n_components=d, n_landmarks=ARGS.landmarks,
                                     n_landmark_neighbors=10, n_neighbors=10,
                                     refine=method == "lll-refined", random_state=0)
        emb = est.fit_transform(X)
        return emb, est.transform
    if method == "le-ours":
        emb = LaplacianEigenmaps(n_components=d, n_neighbors=10, eigen_solver="lobpcg",
                                 random_state=0).fit_transform(X)
        return emb, None
    if method == "le-sklearn":
        from sklearn.manifold import SpectralEmbedding

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            emb = SpectralEmbedding(n_components=d, n_neighbors=10, random_state=0,
                                    eigen_solver=ARGS.sklearn_solver).fit_transform(X)
        return emb, None
    if method == "umap":
        import umap

        est = umap.UMAP(n_components=d, random_state=0)
        emb = est.fit_transform(X)
        return emb, est.transform
    from openTSNE import TSNE

    emb = TSNE(n_components=d, random_state=0, n_jobs=2).fit(X)
    return np.asarray(emb), emb.transform


def quality(emb, y, X, rng):
    sub = rng.choice(len(X), min(5000, len(X)), replace=False)
    trust = trustworthiness(X[sub], emb[sub], n_neighbors=10)
    return knn_accuracy(emb, y), float(trust)


def _warm_up(method, X, Xt):
    _, _, mapper = fit(method, X[:1000], 2)
    if mapper is not None:
        mapper(Xt[:20])  # umap and openTSNE compile their transform too
    if method == "umap":
        import umap

        umap.UMAP(force_approximation_algorithm=True, random_state=0).fit(X[:3000])


def main():
    global ARGS
    ARGS = args = parse_args()
    X, y = load_mnist()
    X, y = X[:args.n], y[:args.n]
    Xt, yt = load_mnist(split="test")
    Xt, yt = Xt[:args.n_test], yt[:args.n_test]
    methods = args.methods.split(",")
    # Warm-up of every method's compiled code on 1,000 digits, reported apart; our
    # approximate neighbours (from 20,000 points on: usearch, nothing to compile)
    # are timed as well, and umap-learn's pynndescent compiles in umap's warm-up.
    cold = {"approximate": timed(nearest_neighbors, X[:3000], 10, method="approximate",
                                 random_state=0)[0]}
    for m in methods:
        if m in ("tsne", "umap"):
            try:
                __import__("openTSNE" if m == "tsne" else "umap")
            except ImportError:
                print(f"{m}: not installed, skipped")
                continue
        cold[m] = timed(_warm_up, m, X, Xt)[0]
    methods = [m for m in methods if m in cold and m != "approximate"]
    print("cold first calls on 1,000 digits: "
          + ", ".join(f"{m} {s:.1f} s" for m, s in cold.items()))
    print(f"n={len(X)} embedded, {len(Xt)} mapped; before: {machine_line()}")
    rows = []
    for m in methods:
        spectral = m not in ("umap", "tsne")
        dims = [10] if spectral else ([2, 10] if m == "umap" else [2])
        for d in dims:
            emb, seconds, mapper = fit(m, X, d)
            for dd in ([2, 10] if spectral else [d]):
                E = emb[:, :dd]
                rng = np.random.default_rng(0)
                acc, trust = quality(E, y, X, rng)
                row = {"method": m, "d": dd, "seconds": seconds, "knn_accuracy": acc,
                       "trustworthiness": trust, "load": os.getloadavg()[0]}
                if mapper is not None:
                    # The 2-D columns of a 10-D spectral map are its 2-D map.
                    row["map_seconds"], mapped = timed(mapper, Xt)
                    row["test_accuracy"] = held_out_knn_accuracy(
                        E, y, np.asarray(mapped)[:, :dd], yt)
                rows.append(row)
                print(row, flush=True)
    print()
    print("| method | d | seconds (fit, graph included) | 10-NN accuracy (5-fold) | "
          f"trustworthiness k=10 | map {len(Xt)} test s | test accuracy |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        ms = f"{r['map_seconds']:.2f}" if "map_seconds" in r else "n/a"
        ta = f"{r['test_accuracy']:.4f}" if "test_accuracy" in r else "n/a"
        print(f"| {r['method']} | {r['d']} | {r['seconds']:.1f} | {r['knn_accuracy']:.4f} | "
              f"{r['trustworthiness']:.4f} | {ms} | {ta} |")
    print(f"after: {machine_line()}")
    out = args.out
    (out / "embeddings.json").write_text(json.dumps({"n": len(X), "n_test": len(Xt),
                                                     "cold": cold, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
