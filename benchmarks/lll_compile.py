"""LLL's first fit with an empty numba cache against the warm fit, and the warm
speed of its two compiled stages on MNIST, for the code of a given ``src`` folder.

Each measurement runs in a fresh Python process with its own empty
``NUMBA_CACHE_DIR`` (so "first" includes every compilation the default path
triggers), and compares with a second fit in the same process. Give several
``--src`` folders (e.g. one from ``git archive <commit> src``) to compare code
versions back to back in one run.

Usage::

    python benchmarks/lll_compile.py --src src --src /tmp/before/src [--mnist 10000]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, os, sys, time
t0 = time.perf_counter()
import numpy as np
from sklearn.datasets import make_swiss_roll
from landmarking.lll.estimator import LocallyLinearLandmarks
import inspect
extra = {}
if "n_jobs" in inspect.signature(LocallyLinearLandmarks).parameters:
    extra["n_jobs"] = int(sys.argv[2]) if sys.argv[2] != "None" else None
out = {"import": time.perf_counter() - t0}
X, _ = make_swiss_roll(3000, random_state=0)
def fit():
    t = time.perf_counter()
    m = LocallyLinearLandmarks(n_landmarks=300, n_neighbors=10, random_state=0, **extra).fit(X)
    return time.perf_counter() - t, m.timings_
out["first"], out["first_stages"] = fit()
out["warm"] = min(fit()[0] for _ in range(3))
n = int(sys.argv[1])
if n:
    from landmarking.datasets import load_mnist
    from landmarking.graph import knn_affinity
    Xm = load_mnist(split="train")[0][:n].astype(np.float64)
    W = knn_affinity(Xm, 200, 200.0)
    for kz in (50, 10):
        est = LocallyLinearLandmarks(n_components=50, n_landmarks=451, n_landmark_neighbors=kz,
                                     n_neighbors=200, bandwidth=200.0, random_state=0, **extra)
        runs = [est.fit(Xm, affinity=W).timings_ for _ in range(3)]
        out[f"mnist_kz{kz}"] = {s: min(r[s] for r in runs)
                                for s in ("weights", "reduced_problem", "total")}
print(json.dumps(out))
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--src", action="append", required=True, help="a src folder to import")
    p.add_argument("--n-jobs", action="append", default=None,
                   help="n_jobs values for code that has it (default: None and -1)")
    p.add_argument("--mnist", type=int, default=0, help="MNIST digits for the warm stages")
    args = p.parse_args()
    print(f"load average before: {os.getloadavg()}")
    for src in args.src:
        for n_jobs in args.n_jobs or ["None", "-1"]:
            with tempfile.TemporaryDirectory() as cache:
                env = dict(os.environ, NUMBA_CACHE_DIR=cache,
                           PYTHONPATH=os.path.abspath(src))
                res = subprocess.run([sys.executable, "-c", CHILD, str(args.mnist), n_jobs],
                                     env=env, capture_output=True, text=True)
            if res.returncode:
                print(res.stderr[-2000:])
                continue
            r = json.loads(res.stdout.strip().splitlines()[-1])
            stages = ", ".join(f"{k} {v:.2f}" for k, v in r["first_stages"].items()
                               if k in ("weights", "affinity", "connectivity", "reduced_problem"))
            print(f"{src} n_jobs={n_jobs}: import {r['import']:.2f} s, "
                  f"first fit {r['first']:.2f} s "
                  f"({stages}), warm fit {r['warm']:.2f} s, first - warm "
                  f"{r['first'] - r['warm']:.2f} s; load {os.getloadavg()[0]:.1f}")
            for key in ("mnist_kz50", "mnist_kz10"):
                if key in r:
                    print(f"    {key}: " + ", ".join(f"{k} {v:.2f} s" for k, v in r[key].items()))
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
