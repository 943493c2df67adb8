"""A sweep of the bandwidth and K_W: sweep_lll against the same nine exact-LE fits.

LLL's strength in its paper's Fig. 5: the landmarks, the weights Z and the
neighbour search are computed once, and each setting of the graph costs only the
affinity and the small L x L eigenproblem. This script times a grid of 3 bandwidths
x 3 neighbour counts K_W on MNIST's 60,000 training digits, in 10-D, two ways, each
in a new interpreter, back to back:

- ``sweep``: :func:`landmarking.lll.model_selection.sweep_lll` over the grid
  (``n_landmarks`` as ``LocallyLinearLandmarks``'s "auto" gives; its default graph,
  the estimator's: the cells graph here, ``--search approximate`` for the HNSW
  search it used before 0.2.0);
- ``le``: nine ``LaplacianEigenmaps(n_components=10, n_neighbors=k, bandwidth=b)``
  fits, one per setting, as a user without ``sweep_lll`` would run them.

Both score every embedding by the same 10-NN classifier (trained on the first 50,000
digits, tested on the last 10,000), inside the timing. The bandwidths are the median
10-NN distance (what ``bandwidth="auto"`` takes) times 0.7, 1 and 1.4. Each side
runs its grid twice in its interpreter: the first call (what a user's first sweep
costs, with the libraries' first-use work) and the warm repeat, each timed and both
reported, with a ratio each.

    python benchmarks/lll_sweep_speed.py           # MNIST 60,000
    python benchmarks/lll_sweep_speed.py --n 3000  # a smoke run
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from _common import argument_parser, machine_line, parse, print_table, run_child

K_W = (5, 10, 20)
BANDWIDTH_FACTORS = (0.7, 1.0, 1.4)
N_COMPONENTS = 10


def parse_args(argv=None):
    p = argument_parser(__doc__, size=None, seed=False, out=False)
    p.add_argument("--n", type=int, default=60_000, help="MNIST digits (default 60,000)")
    p.add_argument("--search", default="auto", choices=("auto", "approximate", "cells"),
                   help="sweep_lll's neighbors_method (default: its default, auto)")
    # One side of the comparison, run by main() in a new interpreter.
    p.add_argument("--side", choices=("sweep", "le"), help=argparse.SUPPRESS)
    return parse(p, argv)


def digits(n):
    """The first n MNIST training digits, and where the test rows start."""
    from landmarking.datasets import load_mnist

    X, y = load_mnist()
    return X[:n], y[:n], n - n // 6


def bandwidths(X):
    """The median 10-NN distance (bandwidth="auto") times BANDWIDTH_FACTORS."""
    from landmarking.neighbors import nearest_neighbors

    distances, _ = nearest_neighbors(X, 10, method="auto", random_state=0)
    return [float(np.median(distances)) * f for f in BANDWIDTH_FACTORS]


def scorer(y, split):
    """1 - the 10-NN accuracy of an embedding (lower is better, as sweep_lll wants)."""
    from sklearn.neighbors import KNeighborsClassifier

    def error(embedding):
        knn = KNeighborsClassifier(10).fit(embedding[:split], y[:split])
        return 1.0 - knn.score(embedding[split:], y[split:])

    return error


def grid_errors(side, X, widths, score, search):
    """The nine settings' errors, one side's way."""
    from landmarking import LaplacianEigenmaps
    from landmarking.lll.fit import resolve_n_landmarks
    from landmarking.lll.model_selection import sweep_lll

    if side == "sweep":
        table = sweep_lll(X, bandwidths=widths, n_neighbors=K_W, score=score,
                          n_components=N_COMPONENTS,
                          n_landmarks=resolve_n_landmarks("auto", X.shape[0]),
                          neighbors_method=search, random_state=0)
        return table["lll_score"].tolist()
    return [score(LaplacianEigenmaps(n_components=N_COMPONENTS, n_neighbors=k,
                                     bandwidth=b, random_state=0).fit(X).embedding_)
            for k in K_W for b in widths]


def run_side(side, n, search="auto", *, repeats=2):
    """One side of the comparison in this process: the seconds of each of
    ``repeats`` runs of the grid (the first call, then warm ones), the first
    run's errors and the load after each run."""
    X, y, split = digits(n)
    widths = bandwidths(X)
    score = scorer(y, split)
    seconds, loads, errors = [], [], None
    for _ in range(repeats):
        start = time.perf_counter()
        found = grid_errors(side, X, widths, score, search)
        seconds.append(time.perf_counter() - start)
        loads.append(os.getloadavg()[0])
        errors = found if errors is None else errors
    return dict(seconds=seconds, errors=errors, loads=loads)


def main():
    args = parse_args()
    if args.side:
        print(json.dumps(run_side(args.side, args.n, args.search)))
        return
    rows = {side: run_child(Path(__file__), "--side", side, "--n", args.n,
                            "--search", args.search)
            for side in ("sweep", "le")}
    sweep, le = rows["sweep"], rows["le"]
    print_table(["way", "first call s", "warm s", "best accuracy", "worst accuracy", "load"],
                [[name, *row["seconds"], 1 - min(row["errors"]), 1 - max(row["errors"]),
                  " / ".join(f"{x:.2f}" for x in row["loads"])]
                 for name, row in (("sweep_lll", sweep), ("nine LE fits", le))])
    for i, call in enumerate(("first call", "warm")):
        print(f"sweep_lll / nine exact-LE fits, {call}: "
              f"{sweep['seconds'][i] / le['seconds'][i]:.3f} ({args.n:,} digits, "
              f"{len(K_W)} x {len(BANDWIDTH_FACTORS)} grid, sweep_lll's search {args.search})")
    print(machine_line())


if __name__ == "__main__":
    sys.exit(main())
