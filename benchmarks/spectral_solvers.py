"""Which eigensolver exact Laplacian eigenmaps should use on a large k-NN graph.

On the Gaussian 10-NN graph of MNIST digits (``first_call.mnist_digits``: the
60,000 training digits, shifted copies beyond), the trailing eigenvectors of
S = D^-1/2 W D^-1/2 (11 for a 10-D embedding) by:

- ``lobpcg``: scipy's LOBPCG at its default tolerance from a random block with
  the trivial eigenvector, as ``eigen_solver="lobpcg"`` runs it (the ``"auto"``
  solver before issue 25);
- ``arpack``: scipy's ``eigsh`` (ARPACK, implicitly restarted Lanczos) to
  ``AUTO_ARPACK_TOL``, as ``"auto"`` runs it now above 2,500 points, and to
  machine precision (``eigen_solver="arpack"`` without ``tol``).

Each through :func:`landmarking.spectral.laplacian.spectral_embedding` on the same
graph, back to back, with the largest eigenvector residual |S u - mu u| and the
largest eigenvalue error against the machine-precision ARPACK run. The graph is
built once per size (``neighbors_method="approximate"``, seed 0) and is not
timed here.

    python benchmarks/spectral_solvers.py --n 60000 200000

Prints the machine line (load, BLAS) before and after the table.
"""

import argparse
import time
import warnings

import numpy as np
from _machine import full_speed_blas, machine_line
from first_call import mnist_digits
from scipy import sparse

from landmarking.graph import degree, neighbor_graph
from landmarking.spectral.laplacian import AUTO_ARPACK_TOL, spectral_embedding


def residual(W, embedding, eigenvalues):
    """max_j |S u_j - mu_j u_j| for the embedding's columns (x = D^-1/2 u)."""
    deg = degree(W)
    inv_sqrt = 1.0 / np.sqrt(deg)
    S = sparse.diags(inv_sqrt) @ W @ sparse.diags(inv_sqrt)
    U = embedding * np.sqrt(deg)[:, None]
    U /= np.linalg.norm(U, axis=0)
    return float(np.linalg.norm(S @ U - U * (1.0 - eigenvalues), axis=0).max())


def main():
    full_speed_blas()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="+", default=[60000])
    p.add_argument("--n-components", type=int, default=10)
    args = p.parse_args()
    print(machine_line(), flush=True)
    print()
    print("| digits | solver | seconds | / lobpcg | max residual | eigenvalue error |")
    print("|---|---|---|---|---|---|")
    for n in args.n:
        X = mnist_digits(n)[0]
        W, _ = neighbor_graph(X, 10, "auto", method="approximate", random_state=0)
        del X
        runs = [("lobpcg", "lobpcg", None), (f"arpack tol {AUTO_ARPACK_TOL:g} (auto)",
                                             "arpack", AUTO_ARPACK_TOL),
                ("arpack tol 0", "arpack", None)]
        rows = []
        for name, solver, tol in runs:
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                emb, lam = spectral_embedding(W, args.n_components, eigen_solver=solver,
                                              tol=tol, random_state=0)
            rows.append((name, time.perf_counter() - start, emb, lam))
        reference = rows[-1][3]
        for name, seconds, emb, lam in rows:
            print(f"| {n} | {name} | {seconds:.2f} | {seconds / rows[0][1]:.2f} | "
                  f"{residual(W, emb, lam):.1e} | {np.abs(lam - reference).max():.1e} |",
                  flush=True)
    print()
    print(machine_line())


if __name__ == "__main__":
    main()
