"""Which eigensolver exact Laplacian eigenmaps should use on a large k-NN graph.

The measurements behind ``eigen_solver="auto"``
(:func:`landmarking.spectral.laplacian.resolve_eigen_solver`). On the Gaussian
10-NN graph of each case (built once, as ``LaplacianEigenmaps`` builds it:
``neighbor_graph(X, 10, "auto", method="auto")``, seed 0, not timed here), the trailing
eigenvectors of S = D^-1/2 W D^-1/2 by, back to back:

- ``arpack``: scipy's ``eigsh`` (implicitly restarted Lanczos) to
  ``AUTO_ARPACK_TOL``, what ``"auto"`` runs on graphs above 2,500 points whose
  low-frequency bound is at least ``AMG_BOUND_LIMIT``;
- ``lobpcg``: LOBPCG without a preconditioner from a random block with guard
  columns, to the same residual (``refine_spectral_embedding``,
  ``preconditioner="none"``; scipy's ``eigen_solver="lobpcg"`` stops at its own
  tolerance, residuals near 1e-3);
- ``amg``: the same LOBPCG with pyamg's smoothed-aggregation preconditioner,
  ``eigen_solver="amg"``;
- ``lll-refine``: Locally Linear Landmarks, then LOBPCG from its embedding
  (``eigen_solver="lll-refine"``).

For each case: :func:`low_frequency_bound` of the graph (what ``"auto"`` looks
at) with its seconds, the first eigenvalue found, the solver ``"auto"`` picks;
for each solver: seconds (warm: pyamg and the compiled loops are loaded before), the ratio
to the first solver's, the largest eigenvector residual |S u - mu u|, and the error: on the
Swiss roll against its intrinsic coordinates (:func:`intrinsic_error`), else the
largest eigenvalue difference to the first solver's.

Cases, ``NAME:N``: ``mnist`` (``first_call.mnist_digits``: 784-D pixels),
``roll`` (``lll_swiss_roll.arc_length_swiss_roll``: a 2-D manifold in 3-D),
``cube3`` and ``cube5`` (uniform in the unit 3- and 5-cube), ``gauss50``
(50-D standard normal).

    python benchmarks/spectral_solvers.py --cases mnist:60000 roll:30000 \\
        --solvers arpack,lobpcg,amg,lll-refine --n-components 2

Prints the machine line (load, BLAS) before and after the table.
"""

import warnings

import numpy as np
from _common import (
    arc_length_swiss_roll,
    argument_parser,
    intrinsic_error,
    machine_line,
    mnist_digits,
    parse,
    timed,
)
from scipy import sparse

from landmarking.graph import degree, neighbor_graph
from landmarking.spectral.laplacian import (
    AUTO_ARPACK_TOL,
    low_frequency_bound,
    resolve_eigen_solver,
    spectral_embedding,
)
from landmarking.spectral.refine_eigenvectors import refine_spectral_embedding


def residual(W, embedding, eigenvalues):
    """max_j |S u_j - mu_j u_j| for the embedding's columns (x = D^-1/2 u)."""
    deg = degree(W)
    inv_sqrt = 1.0 / np.sqrt(deg)
    S = sparse.diags(inv_sqrt) @ W @ sparse.diags(inv_sqrt)
    U = embedding * np.sqrt(deg)[:, None]
    U /= np.linalg.norm(U, axis=0)
    return float(np.linalg.norm(S @ U - U * (1.0 - eigenvalues), axis=0).max())


def case_data(name, n):
    """(X, intrinsic coordinates or None) of a case."""
    rng = np.random.default_rng(0)
    if name == "mnist":
        return mnist_digits(n)[0], None
    if name == "roll":
        return arc_length_swiss_roll(n, random_state=0)
    if name.startswith("cube"):
        return rng.uniform(size=(n, int(name[4:]))), None
    if name.startswith("gauss"):
        return rng.standard_normal((n, int(name[5:]))), None
    raise SystemExit(f"unknown case {name!r}: mnist, roll, cubeD or gaussD")


def solve(solver, X, W, n_components):
    if solver == "lobpcg":
        start = np.random.default_rng(0).standard_normal((W.shape[0], n_components + 2))
        emb, lam, _ = refine_spectral_embedding(W, start, n_components=n_components,
                                                tol=AUTO_ARPACK_TOL, max_iter=5000,
                                                preconditioner="none")
        return emb, lam
    if solver == "lll-refine":
        from landmarking.lll.start_and_refit import lll_refined_embedding

        emb, lam, _ = lll_refined_embedding(X, W, n_components, random_state=0)
        return emb, lam
    return spectral_embedding(W, n_components, eigen_solver=solver, tol=AUTO_ARPACK_TOL,
                              random_state=0)


def warm_up(solvers):
    """Load pyamg and LLL's compiled loops outside the timings."""
    if "amg" in solvers:
        import pyamg  # noqa: F401
    if "lll-refine" in solvers:
        from landmarking.lll.estimator import LocallyLinearLandmarks

        X = np.random.default_rng(0).standard_normal((600, 3))
        LocallyLinearLandmarks(n_landmarks=50, n_neighbors=10).fit(X)


def main():
    p = argument_parser(__doc__, size=None, seed=False, out=False)
    p.add_argument("--cases", nargs="+", default=["mnist:60000"],
                   help="NAME:N, NAME one of mnist, roll, cubeD, gaussD")
    p.add_argument("--solvers", default="arpack,lobpcg,amg")
    p.add_argument("--n-components", type=int, default=10)
    args = parse(p)
    solvers = args.solvers.split(",")
    warm_up(solvers)
    print()
    print("| case | n | bound (s) | lambda_1 | auto | solver | seconds | / first "
          "| max residual | error |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for case in args.cases:
        name, n = case.split(":")
        n = int(n)
        X, truth = case_data(name, n)
        W, _ = neighbor_graph(X, 10, "auto", method="auto", random_state=0)
        bound_seconds, bound = timed(low_frequency_bound, W)
        auto = resolve_eigen_solver("auto", n, args.n_components, None, affinity=W)[0]
        rows = []
        for solver in solvers:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                seconds, (emb, lam) = timed(solve, solver, X, W, args.n_components)
            rows.append((solver, seconds, emb, lam))
            base = rows[0]
            error = (f"{intrinsic_error(emb[:, :2], truth):.4f} (intrinsic)" if truth is not None
                     else f"{np.abs(lam - base[3]).max():.1e} (eigenvalues)")
            bound_text = "disconnected" if bound is None else f"{bound:.2e}"
            print(f"| {name} | {n} | {bound_text} ({bound_seconds:.2f}) | {lam[0]:.2e} | {auto} "
                  f"| {solver} | {seconds:.2f} | {seconds / base[1]:.2f} "
                  f"| {residual(W, emb, lam):.1e} | {error} |", flush=True)
    print()
    print(machine_line())


if __name__ == "__main__":
    main()
