"""LLL on a Swiss roll: error curves against sigma, L and K_W, and the speed-up.

Reproduces Fig. 4 of Vladymyrov & Carreira-Perpinan (2013): 4,000 points, the
paper's best setting sigma = 1.6, L = 300, K_W = 150, each parameter varied with
the other two fixed. Error = Procrustes error of the 2-D embedding to the ground
truth (arc length, height). The roll is sampled uniformly in arc length and its
height is 0.7 times its length, so that exact LE's two leading eigenvectors are
the two intrinsic directions, well separated from the next (on scikit-learn's
default roll, height 21 against length 88, LE's second coordinate is a second
harmonic of the length and every method scores about 0.7; on a square sheet the
second and third eigenvalues nearly coincide).

LLL and LE(Z) are averaged over --seeds random landmark draws. Times exclude
the shared neighbour graph (every method gets the same affinity W).

    python benchmarks/lll_swiss_roll.py [--seeds 3] [--out benchmarks/output]

``--scale`` runs issue 32's large rows instead: the same roll at ``--sizes``
points (default 300,000 and 1,000,000), 2-D, fitted from the points as a user
would, each estimator in a fresh interpreter: exact LE
(``LaplacianEigenmaps(n_components=2, random_state=0)``, its ``eigen_solver="auto"``)
and ``LocallyLinearLandmarks(n_components=2, n_landmarks=1000, random_state=0)``.
Each row: the fit's seconds (first call in the process; ``--warm`` fits again),
its stages, the solver "auto" chose, peak resident memory (``ru_maxrss``; the
roll itself is 24 MB per million points) and :func:`intrinsic_error`. Ratios LE /
LLL per size, and the machine line before and after.

``--graph kdtree`` gives both estimators the same Gaussian 10-NN affinity from
scikit-learn's exact KD-tree search (``fit(X, affinity=W)``, the search timed
inside each fit) instead of their own approximate search, which at 1,000,000
roll points sent 1,496 points' whole lists to the next layer of the roll (6.25
away, against a median neighbour distance of 0.095: every weight underflows and
the fit stops with "points have no edge"); on 3-D data the KD-tree is exact and
took 42 s against the approximate search's 95 s.

    python benchmarks/lll_swiss_roll.py --scale [--sizes 300000 1000000] [--warm] \
        [--graph kdtree]
"""

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from _common import (
    arc_length_swiss_roll,
    argument_parser,
    intrinsic_error,
    machine_line,
    parse,
    run_child,
)

from landmarking.graph import gaussian_affinity
from landmarking.lll.estimator import LocallyLinearLandmarks
from landmarking.metrics import procrustes_error
from landmarking.neighbors import nearest_neighbors
from landmarking.spectral.laplacian import spectral_embedding


def kdtree_graph(X, n_neighbors=10):
    """The estimators' Gaussian k-NN affinity (median bandwidth, union), from
    scikit-learn's exact KD-tree search: for --graph kdtree."""
    from sklearn.neighbors import NearestNeighbors

    from landmarking.graph import resolve_bandwidth

    dist, idx = NearestNeighbors(n_neighbors=n_neighbors + 1,
                                 algorithm="kd_tree").fit(X).kneighbors(X)
    dist, idx = dist[:, 1:], idx[:, 1:]  # each point is its own first neighbour
    return gaussian_affinity(dist, idx, resolve_bandwidth("auto", dist))


def scale_child(method, n, warm, graph):
    """One row of --scale, in this (fresh) interpreter: a JSON line on stdout."""
    import resource

    X, truth = arc_length_swiss_roll(n)
    if method == "le":
        from landmarking.spectral.laplacian import LaplacianEigenmaps

        make = lambda: LaplacianEigenmaps(n_components=2, random_state=0)  # noqa: E731
    else:  # "lll", or "lll-refine": three LOBPCG iterations on the full graph
        refine = 3 if method == "lll-refine" else False
        make = lambda: LocallyLinearLandmarks(n_components=2, n_landmarks=1000,  # noqa: E731
                                              refine=refine, random_state=0)

    def fit():
        timings = {}
        if graph == "kdtree":
            start = time.perf_counter()
            W = kdtree_graph(X)
            timings["kdtree_graph"] = time.perf_counter() - start
            est = make().fit(X, affinity=W)
        else:
            est = make().fit(X)
        return est, {**timings, **est.timings_}

    start = time.perf_counter()
    est, timings = fit()
    seconds = time.perf_counter() - start
    row = {"method": method, "n": n, "graph": graph, "seconds": seconds,
           "timings": {k: round(v, 2) for k, v in timings.items()},
           "solver": getattr(est, "eigen_solver_", ""),
           "error": intrinsic_error(est.embedding_, truth), "warm": None}
    if warm:
        start = time.perf_counter()
        fit()
        row["warm"] = time.perf_counter() - start
    row["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    row["load"] = os.getloadavg()[0]
    print(json.dumps(row))


def scale_rows(args):
    print()
    print("| points | method | solver | fit s (first call) | warm s | stages s | peak RSS MB "
          "| intrinsic error | LE / LLL time | LE / LLL error | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    results = []
    for n in args.sizes:
        rows = {}
        for method in args.methods.split(","):
            row = run_child(Path(__file__).resolve(), "--child", method, n, "--graph",
                            args.graph, *(["--warm"] if args.warm else []))
            rows[method] = row
            results.append(row)
            ratio = ("", "")
            if method.startswith("lll") and "le" in rows:
                ratio = (f"{rows['le']['seconds'] / row['seconds']:.2f}",
                         f"{rows['le']['error'] / row['error']:.2f}")
            warm = "n/a" if row["warm"] is None else f"{row['warm']:.1f}"
            stages = ", ".join(f"{k} {v}" for k, v in row["timings"].items() if k != "total")
            print(f"| {n:,} | {method} | {row['solver'] or '-'} | {row['seconds']:.1f} | {warm} "
                  f"| {stages} | {row['peak_rss_mb']:.0f} | {row['error']:.4f} | {ratio[0]} "
                  f"| {ratio[1]} | {row['load']:.2f} |", flush=True)
    print()
    print(machine_line())
    (args.out / "lll_swiss_roll_scale.json").write_text(json.dumps(results, indent=1))


def build_parser():
    p = argument_parser(__doc__, seed=False)
    p.add_argument("--scale", action="store_true",
                   help="issue 32's rows: LE against LLL at --sizes, fresh processes")
    p.add_argument("--sizes", type=int, nargs="+", default=[300000, 1000000])
    p.add_argument("--methods", default="le,lll",
                   help="--scale rows: le, lll, lll-refine (refine=3)")
    p.add_argument("--warm", action="store_true", help="--scale: fit each a second time")
    p.add_argument("--graph", choices=("estimator", "kdtree"), default="estimator",
                   help="--scale: the estimators' own k-NN graph, or scikit-learn's exact "
                        "KD-tree search given as affinity= (timed inside each fit)")
    p.add_argument("--child", nargs=2, metavar=("METHOD", "N"), help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, default=4000)
    p.add_argument("--seeds", type=int, default=3, help="landmark seeds (5 with --full)")
    return p


def main():
    parser = build_parser()
    args = parser.parse_args()
    if args.child:  # one --scale row, in this new interpreter: no machine line
        return scale_child(args.child[0], int(args.child[1]), args.warm, args.graph)
    args = parse(parser)
    if args.scale:
        return scale_rows(args)
    seeds = 5 if args.full else args.seeds
    out = args.out
    X, truth = arc_length_swiss_roll(args.n)
    sigma0, L0, kw0, kz = 1.6, 300, 150, 5
    sigmas = [0.4, 0.8, 1.2, 1.6, 2.4, 3.2, 6.4]
    Ls = [50, 100, 200, 300, 500, 1000]
    kws = [10, 25, 50, 100, 150, 250]
    t = time.perf_counter()
    dist, idx = nearest_neighbors(X, max(kws))
    print(f"Swiss roll: {args.n} points, K_Z={kz}, {seeds} landmark seeds; "
          f"{max(kws)}-NN graph {time.perf_counter() - t:.2f} s (shared, excluded below)")

    # Load the compiled loops once, outside the timings.
    LocallyLinearLandmarks(n_landmarks=50, n_neighbors=10).fit(X[:500])

    def evaluate(sigma, L, kw):
        W = gaussian_affinity(dist[:, :kw], idx[:, :kw], sigma)
        t = time.perf_counter()
        exact, _ = spectral_embedding(W, 2, random_state=0)
        row = {"sigma": sigma, "L": L, "K_W": kw, "exact_seconds": time.perf_counter() - t,
               "exact_error": procrustes_error(exact, truth)}
        for method in ("lll", "le-z"):
            errs, secs, to_exact = [], [], []
            for seed in range(seeds):
                est = LocallyLinearLandmarks(n_landmarks=L, n_landmark_neighbors=kz,
                                             n_neighbors=kw, bandwidth=sigma, method=method,
                                             random_state=seed).fit(X, affinity=W)
                errs.append(procrustes_error(est.embedding_, truth))
                to_exact.append(procrustes_error(est.embedding_, exact))
                secs.append(est.timings_["total"])
            row[f"{method}_error"] = float(np.mean(errs))
            row[f"{method}_error_std"] = float(np.std(errs))
            row[f"{method}_to_exact"] = float(np.mean(to_exact))
            row[f"{method}_seconds"] = float(np.mean(secs))
        return row

    panels = {"sigma": [evaluate(s, L0, kw0) for s in sigmas],
              "L": [evaluate(sigma0, L, kw0) for L in Ls],
              "K_W": [evaluate(sigma0, L0, k) for k in kws]}
    header = (f"{'':>7}{'exact err':>10}{'LLL err':>9}{'LE(Z) err':>10}{'LLL-exact':>10}"
              f"{'exact s':>9}{'LLL s':>8}{'speed-up':>9}")
    for key, rows in panels.items():
        print(f"\nvary {key} (others: sigma={sigma0}, L={L0}, K_W={kw0}); errors to ground truth,"
              " LLL-exact = Procrustes error of LLL to exact LE")
        print(f"{key:>7}" + header[7:])
        for r in rows:
            print(f"{r[key]:>7}{r['exact_error']:>10.3f}{r['lll_error']:>9.3f}"
                  f"{r['le-z_error']:>10.3f}{r['lll_to_exact']:>10.3f}{r['exact_seconds']:>9.3f}"
                  f"{r['lll_seconds']:>8.3f}{r['exact_seconds'] / r['lll_seconds']:>9.1f}")
        if key != "L":
            best_exact = rows[int(np.argmin([r["exact_error"] for r in rows]))][key]
            best_lll = rows[int(np.argmin([r["lll_error"] for r in rows]))][key]
            print(f"minimum of the error curve: exact LE at {key}={best_exact}, "
                  f"LLL at {key}={best_lll}")
    (out / "lll_swiss_roll.json").write_text(json.dumps(panels, indent=1))
    plot(panels, out / "lll_swiss_roll.png", args.n)
    print(f"\nwrote {out / 'lll_swiss_roll.png'} and {out / 'lll_swiss_roll.json'}")


def plot(panels, path, n):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(13, 6.5), sharex="col")
    for j, (key, rows) in enumerate(panels.items()):
        x = [r[key] for r in rows]
        ax_t, ax_e = axes[0, j], axes[1, j]
        ax_t.semilogy(x, [r["exact_seconds"] for r in rows], "k-o", label="exact LE")
        ax_t.semilogy(x, [r["lll_seconds"] for r in rows], "g-o", label="LLL")
        ax_t.semilogy(x, [r["le-z_seconds"] for r in rows], "b-o", label="LE(Z)")
        ax_e.plot(x, [r["exact_error"] for r in rows], "k-o", label="exact LE")
        ax_e.errorbar(x, [r["lll_error"] for r in rows], [r["lll_error_std"] for r in rows],
                      fmt="g-o", label="LLL")
        ax_e.errorbar(x, [r["le-z_error"] for r in rows], [r["le-z_error_std"] for r in rows],
                      fmt="b-o", label="LE(Z)")
        ax_t.set(title=f"vary {key}", ylabel="seconds (graph excluded)")
        ax_e.set(xlabel=key, ylabel="Procrustes error to ground truth")
        if key in ("sigma", "L"):
            ax_t.set_xscale("log")
            ax_e.set_xscale("log")
    axes[0, 0].legend(fontsize=8)
    fig.suptitle(f"Swiss roll, {n} points")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
