"""LaplacianEigenmaps.transform: many small calls with the kept neighbour index.

A model fitted on ``--n`` MNIST training digits places ``--calls`` test digits,
four ways, back to back in one process:

- ``kept, 1 x N``: one call of all N points (the index built beforehand);
- ``kept, N x 1``: N calls of one point each, the index kept between calls
  (what ``transform`` does since issue 14);
- ``rebuilt, N x 1``: the same calls with the model's index slot emptied before
  each one, so every call builds the exact index again (float64 and float32
  copies of the fitted points and their norms);
- ``before, N x 1``: ``transform`` as it was before the kept index (copied
  below from the previous ``laplacian.py``/``nystrom.py``): two exact searches
  per call, each building its own index from the fitted points.

Every way must give the same embedding bit for bit (checked). On a busy machine
run it on one core, ``taskset -c 0`` with ``OPENBLAS_NUM_THREADS=1`` (the
compiled loops use the cores the process may run on): a one-point query is
microseconds of work, and waking the thread pools of the parallel kernels and
of BLAS, when other processes hold the cores, then costs far more than the
search itself (measured with numba's kernels: 100 ms against 2.5 ms per query
of 2,000 points at load 10 on 2 cores), which would hide what the index costs.
The first call (it builds the index) is timed apart. Prints a table with the
machine line and writes ``transform_calls.json`` and ``transform_calls.png`` to
``--out``.

    python benchmarks/transform_calls.py                 # 20,000 digits, 1,000 calls
    python benchmarks/transform_calls.py --n 5000 --calls 200 --synthetic

``--model FILE`` keeps the fitted model (``landmarking.save``): the first run fits
and saves it, later runs load it and time only the transforms.
"""

import json
import os
import time
from pathlib import Path

import numpy as np
from _common import argument_parser, machine_line, parse, pyplot, timed

from landmarking import load, save
from landmarking.neighbors import LazyNeighborIndex, query_neighbors
from landmarking.spectral.laplacian import LaplacianEigenmaps


def parse_args():
    p = argument_parser(__doc__, size=None, seed=False)
    p.add_argument("--n", type=int, default=20000, help="training digits fitted")
    p.add_argument("--calls", type=int, default=1000, help="points placed (calls of one)")
    p.add_argument("--slow-calls", type=int, default=None,
                   help="calls timed for the rebuilding ways (default --calls); the "
                   "per-point time is measured on that many")
    p.add_argument("--n-neighbors", type=int, default=10)
    p.add_argument("--synthetic", action="store_true",
                   help="a noisy Swiss roll in 784 dimensions instead of MNIST")
    p.add_argument("--model", help="a model file: loaded when it exists, else written")
    return parse(p, machine=False)


def load_data(args):
    if args.synthetic:
        from sklearn.datasets import make_swiss_roll

        rng = np.random.default_rng(0)
        Z, _ = make_swiss_roll(args.n + args.calls, noise=0.05, random_state=0)
        basis = np.linalg.qr(rng.normal(size=(784, 3)))[0]
        X = (Z @ basis.T + 0.01 * rng.normal(size=(len(Z), 784))).astype(np.float32)
        return X[:args.n], X[args.n:], "Swiss roll in 784 dimensions"
    from landmarking.datasets import load_mnist

    train, _ = load_mnist(split="train")
    test, _ = load_mnist(split="test")
    return train[:args.n], test[:args.calls], "MNIST"


def transform_before(le, X):
    """``LaplacianEigenmaps.transform`` before the kept index, for one in-memory
    block: the Nystroem search and the equal-row search each build an index."""
    X_fit = le._X_fit
    emb = le.embedding_.astype(np.float64)
    reference = np.asarray(X_fit, dtype=np.float64)
    dist, idx = query_neighbors(reference, X.astype(np.float64), le.n_neighbors)
    d2 = dist ** 2
    w = np.exp(-(d2 - d2[:, :1]) / (2.0 * le.bandwidth_ ** 2))
    w /= w.sum(axis=1, keepdims=True)
    Y = np.einsum("nk,nkd->nd", w, emb[idx]) / (1.0 - le.eigenvalues_)[None, :]
    _, near = query_neighbors(X_fit, X, 1)
    same = np.all(X_fit[near[:, 0]] == X, axis=1)
    Y[same] = emb[near[same, 0]]
    return Y.astype(X.dtype)


def one_by_one(place, X):
    """(seconds, rows) of placing the rows of X one call each."""
    return timed(lambda: np.vstack([place(X[i:i + 1]) for i in range(len(X))]))


def main():
    args = parse_args()
    slow = args.slow_calls or args.calls
    X, new, name = load_data(args)
    print(f"before: {machine_line()}")
    t = time.perf_counter()
    if args.model and Path(args.model).exists():
        le = load(args.model)
        if le.n_features_in_ != X.shape[1] or le._X_fit.shape[0] != X.shape[0]:
            raise SystemExit(f"{args.model} was fitted on other data; remove it")
        how = "loaded"
    else:
        le = LaplacianEigenmaps(n_neighbors=args.n_neighbors, random_state=0).fit(X)
        how = "fitted"
        if args.model:
            save(le, args.model)
    fit_seconds = time.perf_counter() - t
    print(f"{name}: {how} {X.shape[0]} x {X.shape[1]} ({X.dtype}) in {fit_seconds:.1f} s; "
          f"placing {len(new)} points", flush=True)

    cold = timed(le.transform, new[:1])[0]  # builds the index
    le.transform(new[1:2])
    warm_first = timed(le.transform, new[2:3])[0]

    def emptied(x):
        le._neighbor_index = LazyNeighborIndex()
        return le.transform(x)

    rows = []
    seconds, batch = timed(le.transform, new)
    rows.append(("kept, 1 x N", 1, len(new), seconds))
    seconds, singles = one_by_one(le.transform, new)
    rows.append(("kept, N x 1", len(new), 1, seconds))
    seconds, rebuilt = one_by_one(emptied, new[:slow])
    rows.append(("rebuilt, N x 1", slow, 1, seconds))
    seconds, before = one_by_one(lambda x: transform_before(le, x), new[:slow])
    rows.append(("before, N x 1", slow, 1, seconds))
    load_after = os.getloadavg()
    machine_after = machine_line()

    same = (np.array_equal(singles, batch) and np.array_equal(rebuilt, batch[:slow])
            and np.array_equal(before, batch[:slow]))
    print(f"cold first call (index build): "
          f"{cold:.2f} s; a warm call with the index kept: {1e3 * warm_first:.2f} ms")
    print(f"all four ways give the same embedding bit for bit: {same}")
    base = rows[0][3] / rows[0][2]
    print()
    print("| way | calls | points per call | seconds | ms per point | per point vs kept 1 x N |")
    print("|---|---|---|---|---|---|")
    for way, calls, per, seconds in rows:
        points = calls * per
        print(f"| {way} | {calls} | {per} | {seconds:.2f} | {1e3 * seconds / points:.3f} | "
              f"{seconds / points / base:.1f}x |")
    kept_singles = rows[1][3] / rows[1][1]
    print(f"\none-point calls: rebuilt / kept = {rows[2][3] / rows[2][1] / kept_singles:.1f}x, "
          f"before / kept = {rows[3][3] / rows[3][1] / kept_singles:.1f}x")
    print(f"after: {machine_after}")
    if not same:
        raise SystemExit("the ways disagree")

    out = args.out
    record = {"data": name, "n": int(X.shape[0]), "n_neighbors": args.n_neighbors,
              "fit_seconds": fit_seconds, "cold_first_call": cold,
              "rows": [{"way": w, "calls": c, "points_per_call": p, "seconds": s}
                       for w, c, p, s in rows],
              "load_before_after": [list(load_after)]}
    (out / "transform_calls.json").write_text(json.dumps(record, indent=1))
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3))
    per_point = [1e3 * s / (c * p) for _, c, p, s in rows]
    ax.barh([w for w, *_ in rows], per_point, color=["C0", "C0", "C3", "C7"])
    ax.set_xscale("log")
    ax.set_xlabel("milliseconds per point placed")
    ax.set_title(f"LaplacianEigenmaps.transform, {name} n={X.shape[0]}")
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(out / "transform_calls.png", dpi=120)


if __name__ == "__main__":
    main()
