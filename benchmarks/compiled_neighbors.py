"""The neighbour and graph kernels compiled ahead of time (Cython) against the numba
kernels they replaced (issue 34), on MNIST: warm speed and the first call.

Warm (the default): one process, the two implementations back to back. The numba
modules are read from ``--numba-commit`` (``git show``, so no second checkout is
needed) and put in place of ``landmarking._neighbors_kernels`` in turn with the
compiled one, each kernel's seconds summed by a wrapper; rows alternate the order.
Prints, per search (exact and approximate 10-NN graph of ``--n`` digits): wall and
CPU seconds of each, whether the lists are the same and how far the distances
moved; per kernel, the seconds of each; then the graph passes
(``symmetry_pass``, ``component_labels``) on the approximate graphs of 10,000
and ``--n`` digits, against scipy's transpose-based check too.

``--first-call``: one new interpreter per row, each with an empty
``NUMBA_CACHE_DIR``, timing ``import`` plus the first search, then the same
search again, for each ``--src`` folder (e.g. one made by ``git archive 5bd74c0
src | tar -x -C /tmp/before`` and ``python setup.py build_ext --inplace`` there):

    python benchmarks/compiled_neighbors.py --n 60000
    python benchmarks/compiled_neighbors.py --first-call --src src --src /tmp/before/src

CPU seconds (all threads) are printed beside wall seconds: on a shared machine
they move less with the load. Prints the machine line before and after.
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import types
from collections import defaultdict
from pathlib import Path

import numpy as np
from _machine import full_speed_blas, machine_line

NEIGHBOUR_KERNELS = ["push_rows", "push_columns", "candidate_sq_distances",
                     "nearest_candidates"]
ROOT = Path(__file__).resolve().parents[1]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=60000, help="training digits")
    p.add_argument("--k", type=int, default=10, help="neighbours per digit")
    p.add_argument("--reps", type=int, default=2, help="warm runs of each, alternating")
    p.add_argument("--numba-commit", default="5bd74c0",
                   help="the commit whose numba modules are the peers")
    p.add_argument("--first-call", action="store_true")
    p.add_argument("--src", action="append", help="src folders for --first-call")
    return p.parse_args()


def numba_module(commit, name, folder):
    """``landmarking/<name>.py`` at ``commit``, imported as a module of its own
    (named ``numba_<name>``, importable, so that numba's cache can find it)."""
    text = subprocess.run(["git", "show", f"{commit}:src/landmarking/{name}.py"], cwd=ROOT,
                          check=True, capture_output=True, text=True).stdout
    path = Path(folder) / f"numba{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def timed(module, tag, seconds):
    """A stand-in for ``module`` whose kernels add their seconds to ``seconds``."""
    wrapper = types.ModuleType("landmarking._neighbors_kernels")
    for name in NEIGHBOUR_KERNELS:
        setattr(wrapper, name, _timed_kernel(getattr(module, name), (tag, name), seconds))
    return wrapper


def _timed_kernel(kernel, key, seconds):
    def run(*args, **kwargs):
        start = time.perf_counter()
        out = kernel(*args, **kwargs)
        seconds[key] += time.perf_counter() - start
        return out
    return run


def warm(args):
    from landmarking import _neighbors_kernels as compiled
    from landmarking.datasets import load_mnist
    from landmarking.neighbors import exact_knn, nearest_neighbors

    X = load_mnist()[0][:args.n]
    seconds = defaultdict(float)
    with tempfile.TemporaryDirectory() as folder:
        sys.path.insert(0, folder)
        old = numba_module(args.numba_commit, "_neighbors_kernels", folder)
        graph_old = numba_module(args.numba_commit, "_graph_kernels", folder)
        kinds = {"numba": timed(old, "numba", seconds),
                 "cython": timed(compiled, "cython", seconds)}
        searches = {"exact": lambda: exact_knn(X, args.k),
                    "approximate": lambda: nearest_neighbors(X, args.k, method="approximate",
                                                             random_state=0)}
        for kind in kinds.values():  # numba compiles (or loads its cache) here
            sys.modules["landmarking._neighbors_kernels"] = kind
            exact_knn(X[:3000], 5)
            exact_knn(X[:3000], 5, query=X[:100])
            nearest_neighbors(X[:3000], 5, method="approximate", random_state=0)
        seconds.clear()
        wall, cpu, found = defaultdict(list), defaultdict(list), {}
        print("| run | kernels | search | wall s | CPU s | lists | load |\n"
              "|---|---|---|---|---|---|---|")
        for rep in range(args.reps):
            for tag in ("numba", "cython")[::1 if rep % 2 == 0 else -1]:
                sys.modules["landmarking._neighbors_kernels"] = kinds[tag]
                for what, search in searches.items():
                    w, c = time.perf_counter(), time.process_time()
                    found[tag, what] = search()
                    wall[tag, what].append(time.perf_counter() - w)
                    cpu[tag, what].append(time.process_time() - c)
                    print(f"| {rep} | {tag} | {what} | {wall[tag, what][-1]:.2f} | "
                          f"{cpu[tag, what][-1]:.2f} | {lists_hash(found[tag, what][1])} | "
                          f"{os.getloadavg()[0]:.2f} |", flush=True)
        sys.modules["landmarking._neighbors_kernels"] = compiled
        print()
        for what in searches:
            (d0, i0), (d1, i1) = found["numba", what], found["cython", what]
            moved = np.abs(d1 - d0) / np.maximum(d0, np.finfo(float).tiny)
            ratio = np.median(wall["cython", what]) / np.median(wall["numba", what])
            cpu_ratio = np.median(cpu["cython", what]) / np.median(cpu["numba", what])
            print(f"{what}: same lists {np.array_equal(i0, i1)}; distances moved by at most "
                  f"{moved.max():.2e} relative ({np.mean(d0 == d1):.1%} bit-equal); "
                  f"Cython/numba {ratio:.2f} wall, {cpu_ratio:.2f} CPU (medians)")
        print("\n| kernel | numba s | Cython s | ratio |\n|---|---|---|---|")
        for name in NEIGHBOUR_KERNELS:
            a = seconds["numba", name] / args.reps
            b = seconds["cython", name] / args.reps
            if a or b:
                print(f"| {name} | {a:.3f} | {b:.3f} | {b / a:.2f} |")
        graph_passes(X, graph_old)


def lists_hash(indices):
    import hashlib

    return hashlib.sha1(np.ascontiguousarray(indices).tobytes()).hexdigest()[:10]


def graph_passes(X, old, reps=9):
    """Median seconds of the symmetry pass and the component labels, numba against
    Cython, and scipy's symmetry check, on symmetrised approximate k-NN graphs."""
    from scipy import sparse

    from landmarking import _graph_kernels as compiled
    from landmarking.neighbors import nearest_neighbors

    print("\n| graph entries | symmetry_pass numba / Cython / scipy ms | ratio | "
          "component_labels numba / Cython ms | ratio | load |\n|---|---|---|---|---|---|")
    for n, k in ((min(10000, len(X)), 10), (len(X), 10), (len(X), 30)):
        d, i = nearest_neighbors(X[:n], k, method="approximate", random_state=0)
        W = sparse.csr_matrix((np.exp(-d.ravel()), i.ravel(), np.arange(0, n * k + 1, k)),
                              shape=(n, n))
        W = (W + W.T).tocsr()
        W.sort_indices()
        runs = _graph_runs(W, old, compiled)
        runs["numba_sym"](), runs["numba_cc"]()  # compile
        assert runs["numba_sym"]() == runs["cython_sym"]()
        assert np.array_equal(runs["numba_cc"](), runs["cython_cc"]())
        ms = defaultdict(list)
        for _ in range(reps):
            for key, run in runs.items():
                start = time.perf_counter()
                run()
                ms[key].append(1e3 * (time.perf_counter() - start))
        m = {key: np.median(v) for key, v in ms.items()}
        print(f"| {W.nnz:,} | {m['numba_sym']:.1f} / {m['cython_sym']:.1f} / "
              f"{m['scipy_sym']:.1f} | {m['cython_sym'] / m['numba_sym']:.2f} | "
              f"{m['numba_cc']:.1f} / {m['cython_cc']:.1f} | "
              f"{m['cython_cc'] / m['numba_cc']:.2f} | {os.getloadavg()[0]:.2f} |", flush=True)


def _graph_runs(W, old, compiled):
    """The checks of W timed by :func:`graph_passes`, by name."""
    import numba

    from landmarking._parallel import kernel_threads

    return {
        "numba_sym": lambda: old.symmetry_pass(W.indptr, W.indices, W.data, 1e-10,
                                               numba.get_num_threads()),
        "cython_sym": lambda: compiled.symmetry_pass(W.indptr, W.indices, W.data, 1e-10,
                                                     kernel_threads()),
        "scipy_sym": lambda: abs(W - W.T).max(),
        "numba_cc": lambda: old.component_labels(W.indptr, W.indices),
        "cython_cc": lambda: compiled.component_labels(W.indptr, W.indices),
    }


_CHILD = r"""
import json, sys, time
from landmarking.datasets import load_mnist
X = load_mnist()[0][:{n}]
wall, cpu = time.perf_counter(), time.process_time()
from landmarking.neighbors import nearest_neighbors
def search():
    if {method!r} == "exact":
        return nearest_neighbors(X, {k})
    return nearest_neighbors(X, {k}, method="approximate", random_state=0)
search()
first, first_cpu = time.perf_counter() - wall, time.process_time() - cpu
wall, cpu = time.perf_counter(), time.process_time()
search()
print(json.dumps({{"first": first, "first_cpu": first_cpu,
                  "warm": time.perf_counter() - wall, "warm_cpu": time.process_time() - cpu,
                  "numba": "numba" in sys.modules}}))
"""


def first_calls(args):
    folders = args.src or ["src"]
    print(f"| src | search (n = {args.n}, k = {args.k}) | first s (import + search) | "
          "warm s | first CPU s | warm CPU s | numba loaded | load |")
    print("|---|---|---|---|---|---|---|---|")
    for rep in range(args.reps):
        for method in ("exact", "approximate"):
            for src in folders[::1 if rep % 2 == 0 else -1]:
                with tempfile.TemporaryDirectory(prefix="numba-empty-") as cache:
                    env = dict(os.environ, NUMBA_CACHE_DIR=cache,
                               PYTHONPATH=str(Path(src).resolve()))
                    code = _CHILD.format(n=args.n, k=args.k, method=method)
                    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                         capture_output=True, text=True, cwd=tempfile.gettempdir())
                r = json.loads(out.stdout.strip().splitlines()[-1])
                print(f"| {src} | {method} | {r['first']:.2f} | {r['warm']:.2f} | "
                      f"{r['first_cpu']:.2f} | {r['warm_cpu']:.2f} | {r['numba']} | "
                      f"{os.getloadavg()[0]:.2f} |", flush=True)


def main():
    full_speed_blas()
    args = parse_args()
    print(machine_line(), flush=True)
    if args.first_call:
        first_calls(args)
    else:
        warm(args)
    print(machine_line())


if __name__ == "__main__":
    main()
