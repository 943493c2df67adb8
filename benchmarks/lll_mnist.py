"""LLL on MNIST: error to exact Laplacian eigenmaps and runtime against landmarks.

Reproduces Fig. 2 of Vladymyrov & Carreira-Perpinan (2013): K_W = 200,
sigma = 200, d = 50, K_Z = 50, pixels in [0, 1] (the issue's choice; with 0-255
pixels and sigma = 200 the weights span twenty orders of magnitude), random
landmarks on a log scale. Every solver works on ONE shared neighbour graph, so
the times compare solvers, not graph builds:

- exact LE: ours (LOBPCG) and scikit-learn's ``SpectralEmbedding`` on the same
  affinity (lobpcg; arpack too when ``--sklearn-arpack``);
- LLL, LE(Z) and LE(Nystroem) for each number of landmarks;
- a study at the paper's 451 landmarks: landmark choice (random, random-pruned,
  k-means, GPLandmarks), the ridge of the local weights, and K_Z.

Error = Procrustes error (translation, rotation, scale) to our exact LE.
Floor = ``span_error(Z, exact)``: the error of the best embedding in the span of
the weights Z, below which no solver of LLL's (or LE(Z)'s) reduced problem can go;
it tells a limit of the weights from a limit of the solver.

    python benchmarks/lll_mnist.py            # 5,000 digits, a few minutes
    python benchmarks/lll_mnist.py --full     # 60,000 digits, tens of minutes
    python benchmarks/lll_mnist.py --full --speed --cache DIR   # LLL vs sklearn timing only
    python benchmarks/lll_mnist.py --full --floor 451,4000,20000 --cache DIR
        # only the floor, up to landmark counts too large to fit LLL with
    python benchmarks/lll_mnist.py --full --bandwidths 200,4,2,0.784 --cache DIR
        # does another graph help? exact LE, LLL (L=451) and floor per sigma

Prints tables; writes lll_mnist.png and lll_mnist.json to --out.
"""

import json
import time
import warnings
from pathlib import Path

import numpy as np
from _common import argument_parser, neighbour_graph, parse

from landmarking.datasets import load_mnist
from landmarking.graph import gaussian_affinity
from landmarking.lll._cpu import reconstruction_weights
from landmarking.lll.estimator import LocallyLinearLandmarks
from landmarking.lll.landmark_selection import select_landmarks
from landmarking.metrics import procrustes_error, span_error
from landmarking.spectral.laplacian import spectral_embedding


def parse_args():
    p = argument_parser(__doc__, size=None, seed=False)
    p.add_argument("--full", action="store_true", help="all 60,000 training digits")
    p.add_argument("--n", type=int, default=None, help="number of digits (default 5000, "
                   "60000 with --full)")
    p.add_argument("--landmarks", default=None,
                   help="comma-separated landmark counts (default: log scale)")
    p.add_argument("--seeds", type=int, default=None, help="repeats per landmark count")
    p.add_argument("--sklearn-arpack", action="store_true",
                   help="also time scikit-learn's default arpack solver (minutes at 60k)")
    p.add_argument("--no-study", action="store_true", help="skip the 451-landmark study")
    p.add_argument("--study-only", action="store_true",
                   help="only the 451-landmark study (no Fig. 2 sweep, no scikit-learn timing)")
    p.add_argument("--speed", action="store_true",
                   help="only time LLL at L=451 (K_Z=50 and 10) and scikit-learn's lobpcg "
                   "back to back on the shared graph, with LLL's stage timings")
    p.add_argument("--floor", default=None,
                   help="comma-separated landmark counts: only print the floor span_error(Z, "
                   "exact) for random landmarks (K_Z=50 and 10), without fitting")
    p.add_argument("--bandwidths", default=None,
                   help="comma-separated sigmas: only compare exact LE, LLL (L=451, K_Z=50 and "
                   "10) and the floor on the graph of each (0.784 on [0, 1] pixels is the "
                   "paper's sigma = 200 on 0-255 pixels)")
    p.add_argument("--gp-steps", type=int, default=None,
                   help="GPLandmarks steps per landmark in the study (default 30; 50 with --full)")
    p.add_argument("--cache", default=None, help="folder to cache the neighbour graph in")
    return parse(p)


def exact_reference(W, d, n, cache):
    """Our exact LE (LOBPCG, tol 1e-8), cached with the seconds it took."""
    path = Path(cache) / f"mnist_exact_le_d{d}_n{n}.npz" if cache else None
    if path is not None and path.exists():
        f = np.load(path)
        return f["emb"], f["lam"], float(f["seconds"])
    t = time.perf_counter()
    emb, lam = spectral_embedding(W, d, eigen_solver="lobpcg", tol=1e-8, max_iter=500,
                                  random_state=0)
    seconds = time.perf_counter() - t
    if path is not None:
        np.savez(path, emb=emb, lam=lam, seconds=seconds)
    return emb, lam, seconds


def time_sklearn(W, d, solver, reference):
    from sklearn.manifold import SpectralEmbedding

    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        emb = SpectralEmbedding(n_components=d, affinity="precomputed", eigen_solver=solver,
                                random_state=0).fit_transform(W)
    return time.perf_counter() - t, procrustes_error(emb, reference)


def run_lll(X, W, exact, L, seed, *, method="lll", landmarks="random", reg=1e-3, kz=50,
            d=50, kw=200, sigma=200.0):
    est = LocallyLinearLandmarks(n_components=d, n_landmarks=L, n_landmark_neighbors=kz,
                                 n_neighbors=kw, bandwidth=sigma, landmarks=landmarks,
                                 method=method, reg=reg, random_state=seed)
    est.fit(X, affinity=W)
    err = procrustes_error(est.embedding_, exact)
    err2 = procrustes_error(est.embedding_[:, :2], exact[:, :2])
    # LE(Nystroem)'s embedding is not built from Z, so the floor does not bound it
    floor = span_error(est.weights_, exact) if method != "le-nystrom" else np.nan
    return {"method": method, "L": int(est.n_landmarks_), "seed": seed, "reg": reg, "kz": kz,
            "landmarks": landmarks if isinstance(landmarks, str) else type(landmarks).__name__,
            "error": err, "error_2d": err2, "floor": floor, "seconds": est.timings_["total"],
            "timings": {k: round(v, 4) for k, v in est.timings_.items()}}


def main():
    args = parse_args()
    n = args.n or (60000 if args.full else 5000)
    kw, sigma, d, kz = 200, 200.0, 50, 50
    if args.landmarks:
        counts = [int(c) for c in args.landmarks.split(",")]
    elif args.full:
        counts = [60, 112, 211, 451, 1000, 2000, 4000]
    else:
        counts = [60, 112, 211, 451, 1000, 2000]
    seeds = args.seeds or 1
    out = args.out

    X, y = load_mnist(split="train")
    X = X[:n]
    print(f"MNIST: {n} digits, K_W={kw}, sigma={sigma}, d={d}, K_Z={kz}, pixels in [0, 1]")
    dist, idx, t_graph = neighbour_graph(X, kw, args.cache)
    if args.bandwidths:
        graph_table(X, dist, idx, [float(b) for b in args.bandwidths.split(",")], d=d, kw=kw)
        return
    W = gaussian_affinity(dist, idx, sigma)
    print(f"shared {kw}-NN graph: {t_graph:.1f} s ({W.nnz} nonzeros; weights "
          f"{W.data.min():.4f}..{W.data.max():.4f})")

    exact, lam, t_exact = exact_reference(W, d, n, args.cache)
    if args.speed:
        speed_table(X, W, exact, d=d, kw=kw, sigma=sigma)
        return
    if args.floor:
        floor_table(X, exact, [int(c) for c in args.floor.split(",")])
        return
    rows = [{"method": "exact LE (ours, lobpcg)", "seconds": t_exact, "error": 0.0}]
    if not args.study_only:
        t_lobpcg, e_lobpcg = time_sklearn(W, d, "lobpcg", exact)
        rows.append({"method": "sklearn SpectralEmbedding lobpcg", "seconds": t_lobpcg,
                     "error": e_lobpcg})
    if args.sklearn_arpack and not args.study_only:
        t_arpack, e_arpack = time_sklearn(W, d, "arpack", exact)
        rows.append({"method": "sklearn SpectralEmbedding arpack", "seconds": t_arpack,
                     "error": e_arpack})
    fastest_sklearn = min(r["seconds"] for r in rows[1:]) if len(rows) > 1 else np.nan
    print("\nExact solvers on the shared graph (error = Procrustes error to ours)")
    print(f"{'solver':<36}{'seconds':>10}{'error':>10}")
    for r in rows:
        print(f"{r['method']:<36}{r['seconds']:>10.2f}{r['error']:>10.4f}")
    print(f"eigenvalues: first {lam[0]:.4f}, last {lam[-1]:.4f}")

    results = []
    print("\nFig. 2: error to exact LE and runtime (graph excluded) against landmarks")
    print(f"{'method':<12}{'L':>7}{'error':>9}{'err 2-D':>9}{'floor':>9}{'seconds':>9}"
          f"{'speed-up':>10}   (speed-up over the fastest scikit-learn solver)")
    for L in [] if args.study_only else counts:
        if L >= n or L <= d:
            continue
        for method in ("lll", "le-z", "le-nystrom"):
            runs = [run_lll(X, W, exact, L, s, method=method) for s in range(seeds)]
            results += runs
            err = np.mean([r["error"] for r in runs])
            err2 = np.mean([r["error_2d"] for r in runs])
            floor = np.mean([r["floor"] for r in runs])
            sec = np.mean([r["seconds"] for r in runs])
            print(f"{method:<12}{L:>7}{err:>9.3f}{err2:>9.3f}{_fmt(floor):>9}{sec:>9.2f}"
                  f"{fastest_sklearn / sec:>10.1f}", flush=True)

    study = []
    if not args.no_study:
        L = 451
        print(f"\nStudy at L={L} (LLL, seed 0): landmark choice, ridge, K_Z")
        print(f"{'variant':<34}{'error':>9}{'err 2-D':>9}{'floor':>9}{'seconds':>9}")
        variants = [("random, reg=1e-3", {}), ("random-pruned", {"landmarks": "random-pruned"}),
                    ("kmeans", {"landmarks": "kmeans"}),
                    ("random, reg=1e-1", {"reg": 1e-1}), ("random, reg=10", {"reg": 10.0}),
                    ("random, K_Z=10", {"kz": 10}), ("random, K_Z=150", {"kz": 150})]
        try:
            from landmarking import GPLandmarks

            gp_steps = args.gp_steps or (50 if args.full else 30)
            variants.append((f"GPLandmarks ({gp_steps} steps)", {"landmarks": GPLandmarks(
                n_landmarks=L, n_steps=gp_steps, space="nonnegative", random_state=0)}))
        except ImportError:
            pass
        for name, kwargs in variants:
            t = time.perf_counter()
            r = run_lll(X, W, exact, L, 0, **kwargs)
            r["variant"] = name
            r["seconds_with_landmarks"] = time.perf_counter() - t
            study.append(r)
            print(f"{name:<34}{r['error']:>9.3f}{r['error_2d']:>9.3f}{_fmt(r['floor']):>9}"
                  f"{r['seconds']:>9.2f}",
                  flush=True)

    if args.study_only:
        (out / "lll_mnist_study.json").write_text(json.dumps(
            {"n": n, "study": study}, indent=1, default=float))
        print(f"\nwrote {out / 'lll_mnist_study.json'}")
        return
    (out / "lll_mnist.json").write_text(json.dumps(
        {"n": n, "exact": rows, "fig2": results, "study": study,
         "graph_seconds": t_graph}, indent=1, default=float))
    plot(results, rows, out / "lll_mnist.png", n)
    print(f"\nwrote {out / 'lll_mnist.png'} and {out / 'lll_mnist.json'}")


def _fmt(value):
    return "-" if np.isnan(value) else f"{value:.3f}"


def speed_table(X, W, exact, *, d, kw, sigma, L=451, kzs=(50, 10)):
    """LLL fits and scikit-learn's lobpcg back to back, with LLL's stages."""
    stages = ("affinity", "connectivity", "weights", "reduced_problem", "eigensolver",
              "embedding")
    print(f"\nSpeed at L={L}: LLL stage seconds ('affinity' = checking the given graph), "
          "then scikit-learn on the same W")
    print(f"{'solver':<24}" + "".join(f"{s[:10]:>11}" for s in stages)
          + f"{'total':>9}{'error':>8}")
    totals = {}
    for kz in kzs:
        r = run_lll(X, W, exact, L, 0, kz=kz, d=d, kw=kw, sigma=sigma)
        totals[kz] = r["seconds"]
        print(f"{f'LLL K_Z={kz}':<24}" + "".join(f"{r['timings'][s]:>11.2f}" for s in stages)
              + f"{r['seconds']:>9.2f}{r['error']:>8.3f}", flush=True)
    t_sk, e_sk = time_sklearn(W, d, "lobpcg", exact)
    print(f"{'sklearn lobpcg':<24}" + " " * 11 * len(stages) + f"{t_sk:>9.2f}{e_sk:>8.3f}")
    for kz, t in totals.items():
        print(f"speed-up of LLL K_Z={kz} over scikit-learn lobpcg: {t_sk / t:.1f}x")


def graph_table(X, dist, idx, sigmas, *, d, kw, L=451, kzs=(50, 10)):
    """The same 200-NN pairs with other bandwidths: is the graph the cause?"""
    print(f"\nOther graphs: the same {kw}-NN pairs, weights exp(-d^2 / (2 sigma^2)); "
          f"L={L} random landmarks (seed 0); errors to exact LE on that graph")
    print(f"{'sigma':>7}{'weights':>20}{'eigenvalues':>18}{'exact s':>9}"
          + "".join(f"{f'LLL K_Z={kz}':>13}{'2-D':>7}{'floor':>7}" for kz in kzs))
    for sigma in sigmas:
        W = gaussian_affinity(dist, idx, sigma)
        t = time.perf_counter()
        exact, lam = spectral_embedding(W, d, eigen_solver="lobpcg", tol=1e-6, max_iter=300,
                                        random_state=0)
        seconds = time.perf_counter() - t
        line = (f"{sigma:>7g}{f'{W.data.min():.0e}..{W.data.max():.0e}':>20}"
                f"{f'{lam[0]:.4f}..{lam[-1]:.4f}':>18}{seconds:>9.0f}")
        for kz in kzs:
            r = run_lll(X, W, exact, L, 0, kz=kz, d=d, kw=kw, sigma=sigma)
            line += f"{r['error']:>13.3f}{r['error_2d']:>7.3f}{r['floor']:>7.3f}"
        print(line, flush=True)


def floor_table(X, exact, counts, kzs=(50, 10), seed=0):
    """How many random landmarks the weights Z need before ANY reduced solver
    could reach a given error: span_error(Z, exact), with no LLL fit."""
    print("\nFloor = error of the best embedding in span(Z) (random landmarks, seed 0)")
    print(f"{'L':>7}" + "".join(f"{f'K_Z={kz}':>10}" for kz in kzs) + f"{'seconds':>9}")
    for L in counts:
        t = time.perf_counter()
        T = X[select_landmarks(X, L, "random", random_state=seed)].astype(np.float64)
        floors = [span_error(reconstruction_weights(X, T, kz), exact) for kz in kzs]
        print(f"{L:>7}" + "".join(f"{f:>10.3f}" for f in floors)
              + f"{time.perf_counter() - t:>9.1f}", flush=True)


def plot(results, exact_rows, path, n):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_e) = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = {"lll": "tab:green", "le-z": "tab:blue", "le-nystrom": "tab:cyan"}
    for method, color in colors.items():
        sub = [r for r in results if r["method"] == method]
        Ls = sorted({r["L"] for r in sub})
        err = [np.mean([r["error"] for r in sub if r["L"] == L]) for L in Ls]
        sec = [np.mean([r["seconds"] for r in sub if r["L"] == L]) for L in Ls]
        ax_t.loglog(Ls, sec, "o-", color=color, label=method)
        ax_e.loglog(Ls, err, "o-", color=color, label=method)
    for r, style in zip(exact_rows, ["k-", "k--", "k:"], strict=False):
        ax_t.axhline(r["seconds"], color="k", ls=style[1:], lw=1, label=r["method"])
    lll = [r for r in results if r["method"] == "lll"]
    Ls = sorted({r["L"] for r in lll})
    ax_e.loglog(Ls, [np.mean([r["floor"] for r in lll if r["L"] == L]) for L in Ls], "--",
                color="tab:green", label="floor: best embedding in span(Z)")
    ax_e.axhline(0.1, color="k", lw=1, label="10% error")
    ax_t.set(xlabel="landmarks L", ylabel="seconds (graph excluded)", title=f"MNIST {n}: runtime")
    ax_e.set(xlabel="landmarks L", ylabel="Procrustes error to exact LE", title="error")
    ax_t.legend(fontsize=7)
    ax_e.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
