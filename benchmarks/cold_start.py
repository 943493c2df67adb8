"""Compile wait on first use: cold and warm fit per estimator, and import cost.

For each estimator's default path a fresh Python process, with ``NUMBA_CACHE_DIR``
pointed at an empty folder (numba's cache as on a fresh install, CI job or
container), times its first ``fit`` (cold: imports of the estimator's modules,
numba's compile and the work) and then a second ``fit`` of a new instance in the
same process (warm). The gap cold - warm is the wait a new user pays; the
target is 2 s or less. Then ``import landmarking`` and ``import
sklearn.manifold`` are timed in fresh processes (median of ``--repeat``), with
their peak memory (``ru_maxrss``), and whether numba was loaded.

Data: a 3,000-point Swiss roll (``make_swiss_roll``, noise 0) for every
estimator, its absolute values for NMF landmarks (which need nonnegative data).

``--breakdown`` adds, per estimator, one more fresh process with an empty cache
that imports numba first (its import time reported on its own) and records
numba's compile events during the cold fit: the seconds spent compiling each
kernel the fit called (nested kernels indented under their caller, whose time
includes theirs), so that the gap can be traced to the kernels that cause it.

Usage::

    python benchmarks/cold_start.py [--n 3000] [--repeat 5] [--only NAME ...]
    python benchmarks/cold_start.py --warm-cache   # same, numba's own cache (after
                                                   # python -m landmarking._warmup)
    python benchmarks/cold_start.py --only ManifoldSculpting --breakdown
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ESTIMATORS = {
    "GPLandmarks": "GPLandmarks(n_landmarks=20, random_state=0)",
    "RandomLandmarks": "RandomLandmarks(n_landmarks=20, random_state=0)",
    "ActiveLearningLandmarks": "ActiveLearningLandmarks(n_landmarks=20, random_state=0)",
    "RPCholeskyLandmarks": "RPCholeskyLandmarks(n_landmarks=20, random_state=0)",
    "KMeansLandmarks": "KMeansLandmarks(n_landmarks=20, random_state=0)",
    "NMFLandmarks": "NMFLandmarks(n_landmarks=20, random_state=0)",
    "LaplacianEigenmaps": "LaplacianEigenmaps(random_state=0)",
    "LocallyLinearLandmarks": "LocallyLinearLandmarks(random_state=0)",
    "ManifoldSculpting": "ManifoldSculpting(random_state=0)",
}

CHILD = r"""
import json, sys, time, warnings
import numpy as np
from sklearn.datasets import make_swiss_roll
X, _ = make_swiss_roll({n}, random_state=0)
if "{name}" == "NMFLandmarks":
    X = np.abs(X)
t0 = time.perf_counter()
import landmarking
from landmarking import {name}
t_import = time.perf_counter() - t0
warnings.simplefilter("ignore")
times = []
for _ in range(2):
    est = {expr}
    t = time.perf_counter()
    est.fit(X)
    times.append(time.perf_counter() - t)
print(json.dumps(dict(import_s=t_import, cold=times[0], warm=times[1],
                      numba="numba" in sys.modules)))
"""

BREAKDOWN = r"""
import json, sys, time, warnings
import numpy as np
from sklearn.datasets import make_swiss_roll
X, _ = make_swiss_roll({n}, random_state=0)
if "{name}" == "NMFLandmarks":
    X = np.abs(X)
t = time.perf_counter()
import numba
from numba.core.event import install_recorder
numba_import = time.perf_counter() - t
from landmarking import {name}
warnings.simplefilter("ignore")
est = {expr}
t = time.perf_counter()
with install_recorder("numba:compile") as rec:
    est.fit(X)
fit = time.perf_counter() - t
starts, rows = [], []
for ts, ev in rec.buffer:
    if ev.is_start:
        starts.append(ts)
        continue
    begin = starts.pop()
    func = ev.data["dispatcher"].py_func
    if "landmarking" in func.__module__ or not starts:
        rows.append((begin, len(starts), func.__module__ + "." + func.__name__, ts - begin))
rows.sort()
print(json.dumps(dict(numba_import=numba_import, fit=fit,
                      kernels=[(depth, name, sec) for _, depth, name, sec in rows])))
"""

IMPORT = r"""
import json, resource, sys, time
t = time.perf_counter()
import {module}
dt = time.perf_counter() - t
maxrss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(dict(seconds=dt, maxrss_mb=maxrss_mb, numba="numba" in sys.modules)))
"""


def _run(code, env):
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _env(warm_cache):
    env = dict(os.environ)
    if warm_cache:
        env.pop("NUMBA_CACHE_DIR", None)
        return env, None
    tmp = tempfile.TemporaryDirectory(prefix="numba-cold-")
    env["NUMBA_CACHE_DIR"] = tmp.name
    return env, tmp


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3000, help="points of the Swiss roll")
    parser.add_argument("--repeat", type=int, default=5, help="fresh processes per import")
    parser.add_argument("--only", nargs="*", choices=sorted(ESTIMATORS), help="estimators to run")
    parser.add_argument("--warm-cache", action="store_true",
                        help="use numba's own cache instead of an empty folder")
    parser.add_argument("--breakdown", action="store_true",
                        help="also time the compile of each kernel in a cold fit")
    parser.add_argument("--no-import", action="store_true", help="skip the import timings")
    args = parser.parse_args(argv)

    print(f"load average before: {os.getloadavg()}")
    cache = "numba default (warmed?)" if args.warm_cache else "empty folder per process"
    print(f"numba cache: {cache}")
    print(f"\n{'estimator':<26}{'import s':>9}{'cold s':>9}{'warm s':>9}{'cold-warm':>11}"
          f"{'cold/warm':>11}  within 2 s")
    for name in args.only or ESTIMATORS:
        env, tmp = _env(args.warm_cache)
        try:
            r = _run(CHILD.format(n=args.n, name=name, expr=ESTIMATORS[name]), env)
        finally:
            if tmp is not None:
                tmp.cleanup()
        gap = r["cold"] - r["warm"]
        print(f"{name:<26}{r['import_s']:>9.2f}{r['cold']:>9.2f}{r['warm']:>9.2f}{gap:>11.2f}"
              f"{r['cold'] / r['warm']:>10.1f}x  {'yes' if gap <= 2.0 else 'NO'}")

    if args.breakdown:
        _breakdown(args)
    if not args.no_import:
        _imports(args)
    print(f"load average after: {os.getloadavg()}")


def _breakdown(args):
    print("\ncompile breakdown of the cold fit (fresh process, empty cache, numba imported "
          "first; wall seconds, nested kernels under their caller):")
    for name in args.only or ESTIMATORS:
        env, tmp = _env(False)
        try:
            r = _run(BREAKDOWN.format(n=args.n, name=name, expr=ESTIMATORS[name]), env)
        finally:
            tmp.cleanup()
        top = sum(sec for depth, _, sec in r["kernels"] if depth == 0)
        print(f"  {name}: numba import {r['numba_import']:.2f} s, cold fit {r['fit']:.2f} s, "
              f"of which compiling {top:.2f} s")
        for depth, kernel, sec in r["kernels"]:
            print(f"    {'  ' * depth}{kernel:<{70 - 2 * depth}}{sec:6.2f}")


def _imports(args):
    print(f"\nimport, fresh process each, median of {args.repeat}:")
    rows = {}
    env, tmp = _env(args.warm_cache)
    try:
        for _ in range(args.repeat):  # interleaved, so both see the same load
            for module in ("sklearn.manifold", "landmarking"):
                rows.setdefault(module, []).append(_run(IMPORT.format(module=module), env))
    finally:
        if tmp is not None:
            tmp.cleanup()
    for module, runs in rows.items():
        sec = statistics.median(r["seconds"] for r in runs)
        mem = statistics.median(r["maxrss_mb"] for r in runs)
        print(f"  import {module:<18} {sec:6.3f} s  {mem:6.0f} MB peak RSS  "
              f"numba loaded: {any(r['numba'] for r in runs)}")
    a = statistics.median(r["seconds"] for r in rows["landmarking"])
    b = statistics.median(r["seconds"] for r in rows["sklearn.manifold"])
    print(f"  landmarking - sklearn.manifold: {a - b:+.3f} s (ratio {a / b:.2f}; target <= +0.3 s)")


if __name__ == "__main__":
    main()
