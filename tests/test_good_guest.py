"""A good guest in the user's process: thread settings come back as they were, and
the thread limits a user sets (``OMP_NUM_THREADS``, ``threadpool_limits``) hold.

Each case runs as the first call in a new interpreter: thread pools and BLAS
settings are per process, and a leak shows in the first call (a later call would
record the leaked value as the user's own).
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

#: The public calls: name -> the statement that makes one, on ``X`` (20,000 x 20
#: float32: large enough that "auto" picks the cells graph for LLL's 200
#: landmarks, the case that leaked) or a smaller array made by the child.
CALLS = {
    "GPLandmarks": "L.GPLandmarks(n_landmarks=8, n_steps=60, random_state=0).fit(X[:3000])",
    "GPLandmarks-blocks": ("L.GPLandmarks(n_landmarks=16, block_size=8, n_steps=60, "
                           "random_state=0).fit(X[:3000])"),
    "RandomLandmarks": "L.RandomLandmarks(n_landmarks=8, random_state=0).fit(X[:3000])",
    "ActiveLearningLandmarks": ("L.ActiveLearningLandmarks(n_landmarks=8, subsample=1000, "
                                "random_state=0).fit(X[:3000])"),
    "RPCholeskyLandmarks": "L.RPCholeskyLandmarks(n_landmarks=8, random_state=0).fit(X[:3000])",
    "KMeansLandmarks": "L.KMeansLandmarks(n_landmarks=8, random_state=0).fit(X[:3000])",
    "NMFLandmarks": "L.NMFLandmarks(n_landmarks=4, random_state=0).fit(abs(X[:1000]))",
    "ManifoldSculpting": ("L.ManifoldSculpting(n_neighbors=8, max_iter=60, random_state=0)"
                          ".fit(X[:600, :3])"),
    "estimate_intrinsic_dimension": ("L.estimate_intrinsic_dimension(X[:400, :3], "
                                     "patience=5, random_state=0)"),
    "LaplacianEigenmaps": "L.LaplacianEigenmaps(random_state=0).fit(X[:4000])",
    "LocallyLinearLandmarks": "L.LocallyLinearLandmarks(n_landmarks=200, random_state=0).fit(X)",
    "LocallyLinearLandmarks-cells": ("L.LocallyLinearLandmarks(n_landmarks=200, "
                                     "neighbors_method='cells', random_state=0).fit(X)"),
    "locally_linear_landmarks": ("L.locally_linear_landmarks(X[:4000], n_landmarks=50, "
                                 "random_state=0)"),
    "sweep_lll": ("L.sweep_lll(X[:2000], bandwidths=[1.0, 2.0], n_neighbors=[8], "
                  "score=lambda e: 0.0, n_landmarks=40, random_state=0)"),
    "lll_out_of_sample": ("L.lll_out_of_sample(X[:3000], X[:40], "
                          "np.zeros((40, 2)), 5)"),
}

#: The child: ``threadpool_info`` before and after the call, plus the loop
#: threads it started. MODE: "return" (the call ends), "raise" (an exception is
#: thrown into the call from outside, as an error deep inside would be) or
#: "interrupt" (Ctrl-C arrives during the call).
CHILD = textwrap.dedent("""
    import ctypes, json, sys, threading, _thread
    import numpy as np
    from threadpoolctl import threadpool_info
    import landmarking as L
    # Load every BLAS and OpenMP library a call may load, so that "before" sees
    # them all (a library first loaded during the call has no "before").
    import scipy.linalg, scipy.sparse.linalg, sklearn.cluster, sklearn.decomposition

    MODE, CALL, DELAY = sys.argv[1], sys.argv[2], float(sys.argv[3])
    X = np.random.default_rng(0).normal(size=(20000, 20)).astype(np.float32)

    def settings(known=None):
        return sorted((p["filepath"], p["num_threads"]) for p in threadpool_info()
                      if known is None or p["filepath"] in known)

    started = []
    real_start = threading.Thread.start
    def counting_start(self, *args, **kwargs):
        started.append(self.name)
        return real_start(self, *args, **kwargs)
    threading.Thread.start = counting_start

    class Injected(Exception):
        pass

    # The injection fires only while the call runs: once it has returned, the
    # main thread marks it done under the same lock.
    lock, state = threading.Lock(), {"done": False}

    def inject():
        with lock:
            if not state["done"]:
                fire()

    def fire():
        if MODE == "raise":
            ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(threading.main_thread().ident), ctypes.py_object(Injected))
        else:
            _thread.interrupt_main()

    before = settings()
    timer = threading.Timer(DELAY, inject) if MODE != "return" else None
    ended = "returned"
    try:
        if timer:
            timer.start()
        eval(CALL)
        with lock:
            state["done"] = True
        for _ in range(10000):  # an injection that fired is delivered by now
            pass
    except Injected:
        ended = "raised"
    except KeyboardInterrupt:
        ended = "interrupted"
    if timer:
        timer.cancel()
    after = settings(known={path for path, _ in before})
    kernel = [name for name in started if name.startswith("landmarking-loop")]
    print(json.dumps(dict(before=before, after=after, ended=ended,
                          loop_threads=len(kernel))), flush=True)
    # CPython ends a process that caught a KeyboardInterrupt in `-c` code with
    # SIGINT's status all the same (even around a plain time.sleep): exit here.
    import os
    os._exit(0)
""")


def _child(mode, call, delay=0.0, env=None, prelude=""):
    code = prelude + CHILD if prelude else CHILD
    run = subprocess.run([sys.executable, "-c", code, mode, call, str(delay)],
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, **(env or {})})
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_call_leaves_the_thread_settings_as_it_found_them(name):
    result = _child("return", CALLS[name])
    assert result["ended"] == "returned"
    assert result["after"] == result["before"]


@pytest.mark.parametrize("mode", ["raise", "interrupt"])
@pytest.mark.parametrize("name", ["LocallyLinearLandmarks", "GPLandmarks-blocks",
                                  "LaplacianEigenmaps", "ManifoldSculpting"])
def test_a_call_that_fails_midway_restores_the_thread_settings(name, mode):
    # Fired 0.5 s into the call (the import and the data come before the timer):
    # well inside each of these calls, which take seconds. Where the exception
    # lands after the call ended, the call has still been made and checked.
    result = _child(mode, CALLS[name], delay=0.5)
    assert result["ended"] in ({"raise": "raised", "interrupt": "interrupted"}[mode],
                               "returned")
    assert result["after"] == result["before"]


THREADED = ["LocallyLinearLandmarks", "LocallyLinearLandmarks-cells", "LaplacianEigenmaps",
            "GPLandmarks-blocks", "ManifoldSculpting"]


@pytest.mark.parametrize("name", THREADED)
def test_omp_num_threads_one_starts_no_kernel_thread(name):
    free = _child("return", CALLS[name], env={"OMP_NUM_THREADS": "4"})
    limited = _child("return", CALLS[name], env={"OMP_NUM_THREADS": "1"})
    # The control: with threads allowed, the same call does start loop threads,
    # so the count below can fail.
    assert free["loop_threads"] > 0
    assert limited["loop_threads"] == 0


@pytest.mark.parametrize("name", THREADED)
def test_threadpool_limits_one_starts_no_kernel_thread(name):
    prelude = ("from threadpoolctl import threadpool_limits\n"
               "import sklearn.utils._openmp_helpers\n"
               "_limit = threadpool_limits(limits=1)\n")
    limited = _child("return", CALLS[name], env={"OMP_NUM_THREADS": "4"}, prelude=prelude)
    assert limited["loop_threads"] == 0


def test_the_affinity_mask_caps_the_loop_threads():
    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs sched_setaffinity and two usable CPUs")
    code = ("import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
            "from landmarking._parallel import default_threads; print(default_threads())")
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "1"
