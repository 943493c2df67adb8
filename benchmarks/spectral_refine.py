"""Exact Laplacian eigenmaps by LLL + LOBPCG refinement against scikit-learn.

On ONE shared graph per case, back to back in one run:

- the converged exact solution (reference): dense LAPACK for the Swiss roll;
  for MNIST an LLL start (2,000 landmarks, another seed) refined to a residual
  of ``--ref-tol`` (1e-9), cached;
- scikit-learn ``SpectralEmbedding(affinity="precomputed")`` with
  ``eigen_solver`` ``lobpcg``, ``amg`` (pyamg) and ``arpack``
  (``--sklearn arpack`` adds it; minutes on MNIST), ``eigen_tol=--tol``;
- ours: ``LocallyLinearLandmarks`` (random landmarks) on the same graph with
  d + g eigenvectors (g = ``--guards``, default max(2, d // 5)), then
  ``refine_spectral_embedding`` from its embedding (``--preconditioners``,
  default none; ``amg`` adds pyamg rows), stopping when the residual
  ||L_sym u - lambda u|| of each of the d wanted eigenvectors is <= --tol (the
  g extra columns are guard vectors and need not converge);
- ``--random-start`` adds our LOBPCG from a random block (no LLL), to show
  what the LLL start is worth.

For every solver: seconds, Procrustes error to the reference (the library's
measure; the 2-D error too for d > 2) and the largest eigenvector residual of
its result (after normalising, as scikit-learn returns D^-1/2-scaled vectors).
Ours also reports the stages (LLL, preconditioner set-up, LOBPCG), the
iterations and the residuals of the LLL start.

Cases: ``swissroll`` (4,000 points uniform in arc length, K_W = 150,
sigma = 1.6, d = 2; benchmarks/lll_swiss_roll.py) and ``mnist`` (K_W = 200,
sigma = 200 on [0, 1] pixels, d = 50; benchmarks/lll_mnist.py).

    python benchmarks/spectral_refine.py --case swissroll
    python benchmarks/spectral_refine.py --case mnist --n 60000 --cache /tmp/lm

Prints tables (with the load average); writes spectral_refine_<case>.json to --out.
"""

import json
import os
import time
import warnings
from pathlib import Path

import numpy as np
from _common import (
    arc_length_swiss_roll,
    argument_parser,
    machine_line,
    neighbour_graph,
    parse,
    timed,
)
from scipy import sparse

from landmarking.datasets import load_mnist
from landmarking.graph import degree, gaussian_affinity
from landmarking.lll.estimator import LocallyLinearLandmarks
from landmarking.metrics import procrustes_error
from landmarking.neighbors import nearest_neighbors
from landmarking.spectral.laplacian import spectral_embedding
from landmarking.spectral.refine_eigenvectors import refine_spectral_embedding


def parse_args():
    p = argument_parser(__doc__, size=None, seed=False)
    p.add_argument("--case", choices=("swissroll", "mnist"), default="swissroll")
    p.add_argument("--n", type=int, default=None, help="points (4000 / 60000)")
    p.add_argument("--tol", type=float, default=1e-5,
                   help="eigenvector residual every solver is asked for")
    p.add_argument("--ref-tol", type=float, default=1e-9)
    p.add_argument("--landmarks", default=None,
                   help="comma-separated landmark counts for the LLL start")
    p.add_argument("--kz", type=int, default=10, help="K_Z of the LLL start")
    p.add_argument("--guards", default=None,
                   help="comma-separated extra LLL columns (default max(2, d // 5))")
    p.add_argument("--preconditioners", default="none",
                   help="ours: comma-separated preconditioners (none, amg)")
    p.add_argument("--random-start", action="store_true",
                   help="add our LOBPCG from a random start")
    p.add_argument("--sklearn", default="lobpcg,amg",
                   help="scikit-learn solvers, comma-separated (lobpcg, amg, arpack)")
    p.add_argument("--cache", default=None, help="folder to cache graph and reference in")
    return parse(p, machine=False)


def residuals(W, emb):
    """max over columns of ||L_sym u - (u^T L_sym u) u|| for u = D^1/2 x / ||.||."""
    deg = degree(W)
    s = np.sqrt(deg)
    U = emb * s[:, None]
    U /= np.linalg.norm(U, axis=0)
    inv = sparse.diags(1.0 / s)
    LU = U - inv @ (W @ (inv @ U))
    lam = np.einsum("ij,ij->j", U, LU)
    return float(np.max(np.linalg.norm(LU - U * lam, axis=0)))


def graph(args):
    if args.case == "swissroll":
        n = args.n or 4000
        X, _ = arc_length_swiss_roll(n, random_state=0)
        t = time.perf_counter()
        dist, idx = nearest_neighbors(X, 150)
        W = gaussian_affinity(dist, idx, 1.6)
        return X, W, 2, 150, 1.6, time.perf_counter() - t
    n = args.n or 60000
    X, _ = load_mnist()
    X = X[:n]
    d, i, seconds = neighbour_graph(X, 200, args.cache)
    return X, gaussian_affinity(d, i, 200.0), 50, 200, 200.0, seconds


def reference(args, X, W, d):
    if args.case == "swissroll":
        t = time.perf_counter()
        emb, _ = spectral_embedding(W, d, eigen_solver="dense")
        return emb, time.perf_counter() - t, "dense LAPACK"
    path = Path(args.cache) / f"refine_ref_d{d}_n{W.shape[0]}.npz" if args.cache else None
    if path is not None and path.exists():
        f = np.load(path)
        return f["emb"], float(f["seconds"]), str(f["how"])
    t = time.perf_counter()
    start = LocallyLinearLandmarks(n_components=d + 10, n_landmarks=2000,
                                   n_landmark_neighbors=10,
                                   random_state=1).fit(X, affinity=W).embedding_
    emb, _, info = refine_spectral_embedding(W, start, n_components=d, tol=args.ref_tol,
                                             max_iter=1000)
    seconds = time.perf_counter() - t
    how = (f"LLL (L=2000, d + 10 columns, other seed) refined to residual "
           f"{info.residuals.max():.1e} ({info.n_iter} iterations)")
    if path is not None:
        np.savez(path, emb=emb, seconds=seconds, how=how)
    return emb, seconds, how


def sklearn_solver(W, d, solver, tol):
    from sklearn.manifold import SpectralEmbedding

    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        emb = SpectralEmbedding(n_components=d, affinity="precomputed", eigen_solver=solver,
                                eigen_tol=tol, random_state=0).fit_transform(W)
    return time.perf_counter() - t, emb


def ours(X, W, d, L, kz, sigma, kw, tol, g, preconditioner):
    t0 = time.perf_counter()
    if L == 0:  # a random start: what our LOBPCG does without LLL
        start = np.random.default_rng(0).standard_normal((W.shape[0], d + g))
    else:
        lll = LocallyLinearLandmarks(n_components=d + g, n_landmarks=L,
                                     n_landmark_neighbors=kz, n_neighbors=kw,
                                     bandwidth=sigma, random_state=0)
        start = lll.fit(X, affinity=W).embedding_
    t_lll = time.perf_counter() - t0
    emb, _, info = refine_spectral_embedding(W, start, n_components=d, tol=tol,
                                             max_iter=1000, preconditioner=preconditioner)
    total = time.perf_counter() - t0
    return start[:, :d], emb, info, t_lll, total


def main():
    args = parse_args()
    X, W, d, kw, sigma, graph_seconds = graph(args)
    n = W.shape[0]
    # Warm-up (loading LLL's compiled loops, the neighbour re-rank), reported apart.
    cold = timed(LocallyLinearLandmarks(n_components=2, n_landmarks=60, n_neighbors=10,
                                        random_state=0).fit, X[:min(n, 600)])[0]
    print(f"{args.case}: n={n}, K_W={kw}, sigma={sigma}, d={d}, nnz(W)={W.nnz}; graph "
          f"{graph_seconds:.1f} s (0 = cached); warm-up {cold:.1f} s")
    ref, ref_seconds, how = reference(args, X, W, d)
    print(f"reference: {how}, {ref_seconds:.1f} s, residual {residuals(W, ref):.1e}")
    print(f"before: {machine_line()}")
    Ls = ([int(v) for v in args.landmarks.split(",")] if args.landmarks
          else ([300, 1000] if args.case == "swissroll" else [451, 1000]))
    rows = []

    def err(emb):
        e = procrustes_error(emb, ref)
        return e, procrustes_error(emb[:, :2], ref[:, :2]) if d > 2 else e

    for solver in [s for s in args.sklearn.split(",") if s]:
        seconds, emb = sklearn_solver(W, d, solver, args.tol)
        e, e2 = err(emb)
        rows.append({"solver": f"sklearn {solver}", "seconds": seconds, "error": e,
                     "error_2d": e2, "residual": residuals(W, emb),
                     "load": os.getloadavg()[0]})
        print(rows[-1], flush=True)
    guards = ([int(v) for v in args.guards.split(",")] if args.guards
              else [max(2, d // 5)])
    runs = [(L, g, pre) for L in Ls for g in guards
            for pre in args.preconditioners.split(",")]
    if args.random_start:
        runs.append((0, guards[0], "none"))
    for L, g, pre in runs:
        start, emb, info, t_lll, total = ours(X, W, d, L, args.kz, sigma, kw, args.tol, g,
                                              pre)
        e, e2 = err(emb)
        s_e, _ = err(start)
        name = (f"ours, random start, g={g}" if L == 0
                else f"LLL L={L} K_Z={args.kz} g={g} + refine ({pre})")
        rows.append({"solver": name, "seconds": total,
                     "error": e, "error_2d": e2, "residual": float(info.residuals.max()),
                     "lll_seconds": t_lll, "lll_error": s_e,
                     "start_residual": float(info.start_residuals.max()),
                     "setup_seconds": info.timings["setup"],
                     "lobpcg_seconds": info.timings["lobpcg"], "iterations": info.n_iter,
                     "converged": info.converged, "load": os.getloadavg()[0]})
        print(rows[-1], flush=True)
    print()
    fastest = min((r["seconds"] for r in rows if r["solver"].startswith("sklearn")),
                  default=np.nan)
    print(f"| solver | seconds | vs fastest sklearn | Procrustes error | 2-D error | "
          f"max residual (tol {args.tol:g}) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['solver']} | {r['seconds']:.2f} | {r['seconds'] / fastest:.3f} | "
              f"{r['error']:.2e} | {r['error_2d']:.2e} | {r['residual']:.1e} |")
    print()
    print("| ours: stages | start s | start error | start residual | set-up s | LOBPCG s "
          "| iterations | s / iteration | converged |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "lll_seconds" in r:
            per = r["lobpcg_seconds"] / max(r["iterations"], 1)
            print(f"| {r['solver']} | {r['lll_seconds']:.2f} | {r['lll_error']:.3f} | "
                  f"{r['start_residual']:.1e} | {r['setup_seconds']:.2f} | "
                  f"{r['lobpcg_seconds']:.2f} | {r['iterations']} | {per:.2f} | "
                  f"{r['converged']} |")
    print(f"after: {machine_line()}")
    out = args.out
    (out / f"spectral_refine_{args.case}.json").write_text(json.dumps(
        {"n": n, "d": d, "tol": args.tol, "reference": how, "cold": cold, "rows": rows},
        indent=1, default=float))


if __name__ == "__main__":
    main()
