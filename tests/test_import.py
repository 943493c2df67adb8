"""Importing the library is cheap: no numba, no estimator module until asked for."""

import os
import subprocess
import sys

import pytest

import landmarking


def _fresh(code):
    """Run ``code`` in a fresh interpreter and return its stdout."""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, timeout=120)
    return out.stdout.strip()


def test_import_loads_no_numba_and_no_estimator_module():
    loaded = _fresh(
        "import sys, landmarking, landmarking.gp, landmarking.lll, landmarking.spectral\n"
        "import landmarking.sculpting, landmarking.baselines\n"
        "print(sorted(m for m in sys.modules if m == 'numba' or m.startswith('numba.')"
        " or m.count('.') > 1))"
    )
    assert loaded == "[]"


def test_laplacian_eigenmaps_module_loads_no_numba():
    # Its default path compiles nothing (the compiled graph checks start at 2^20 edges).
    assert _fresh("import sys\nfrom landmarking import LaplacianEigenmaps\n"
                  "print('numba' in sys.modules)") == "False"


def test_neighbour_searches_and_graph_passes_load_no_numba():
    # Their loops are compiled ahead of time (Cython): nothing loads or compiles
    # numba in a search, exact (both ways round: a set against itself, queries)
    # or approximate, nor in the compiled checks of a large graph.
    code = """
import sys
import numpy as np
from scipy import sparse
from sklearn import config_context
from landmarking import graph
from landmarking.neighbors import exact_knn, nearest_neighbors
graph.COMPILED_MIN_NNZ = 0  # the compiled passes on a small graph
W = sparse.random(40, 40, density=0.2, format="csr", random_state=0)
W = (W + W.T).tocsr()
W.sort_indices()
assert W.has_canonical_format and graph._is_symmetric(W)
graph.check_connected(W, warn=False)
X = np.random.default_rng(0).normal(size=(500, 20))
with config_context(working_memory=0.1):  # tiles of 114 rows: transposed pushes too
    exact_knn(X, 5)
    exact_knn(X, 5, query=X[:10])
try:
    nearest_neighbors(X, 5, method="approximate", random_state=0)
except ImportError:
    pass  # no `ann` extra
print('numba' in sys.modules)
"""
    assert _fresh(code) == "False"


PACKAGES = ["landmarking", "landmarking.gp", "landmarking.lll", "landmarking.spectral",
            "landmarking.sculpting", "landmarking.baselines"]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_resolves(package):
    module = __import__(package, fromlist=["__all__"])
    for name in module.__all__:
        value = getattr(module, name)
        assert value is not None
        if name != "__version__":
            assert value.__name__ == name
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchEstimator'"):
        _ = module.NoSuchEstimator


def test_each_public_name_has_one_import_path():
    # The estimators and the library-wide functions at the top, each method's own
    # tools in its package: no name in two packages' __all__.
    import importlib
    import pkgutil

    packages = ["landmarking"] + [
        info.name for info in pkgutil.walk_packages(landmarking.__path__, "landmarking.")
        if info.ispkg]
    where = {}
    for package in packages:
        for name in getattr(importlib.import_module(package), "__all__", ()):
            where.setdefault(name, []).append(package)
    assert {name: found for name, found in where.items() if len(found) > 1} == {}
    assert set(PACKAGES) <= set(packages)


@pytest.mark.parametrize("gone", ["landmarking.landmarks", "landmarking.embedding"])
def test_the_re_export_packages_are_gone(gone):
    with pytest.raises(ModuleNotFoundError, match=gone):
        __import__(gone)


def test_from_import_works_in_a_fresh_interpreter():
    names = ", ".join(n for n in landmarking.__all__ if n != "__version__")
    assert _fresh(f"from landmarking import {names}\nprint('ok')") == "ok"


def test_no_estimator_compiles_at_run_time(tmp_path):
    # Every compiled loop is built with the package (Cython): the default fit
    # of each public estimator, on float64 and float32 data, with and without
    # the paths that start above a size (GP blocks, LLL's cells graph and large
    # reduced problem), and their transforms, neither load nor compile numba,
    # even with an empty numba cache (a fresh install or container).
    code = """
import sys, warnings
import numpy as np
from sklearn.datasets import make_swiss_roll
import landmarking as lm
from landmarking.lll import _cpu as lll_cpu
warnings.simplefilter("ignore")
lll_cpu.DENSE_LIMIT = 40  # the sparse reduced problem too
for dtype in (np.float64, np.float32):
    X = make_swiss_roll(600, random_state=0)[0].astype(dtype)
    P = np.abs(X)
    for model, data in [
            (lm.GPLandmarks(n_landmarks=5, random_state=0), X),
            (lm.GPLandmarks(n_landmarks=60, n_steps=5, random_state=0), X),
            (lm.GPLandmarks(n_landmarks=3, refine=1, random_state=0), X),
            (lm.RandomLandmarks(n_landmarks=10, random_state=0), X),
            (lm.ActiveLearningLandmarks(n_landmarks=10, random_state=0), X),
            (lm.RPCholeskyLandmarks(n_landmarks=10, random_state=0), X),
            (lm.KMeansLandmarks(n_landmarks=10, random_state=0), X),
            (lm.NMFLandmarks(n_landmarks=3, random_state=0), P),
            (lm.LaplacianEigenmaps(random_state=0), X),
            (lm.LocallyLinearLandmarks(n_landmarks=50, random_state=0), X),
            (lm.LocallyLinearLandmarks(n_landmarks=50, neighbors_method="cells",
                                       refine=2, random_state=0), X),
            (lm.ManifoldSculpting(n_neighbors=8, max_iter=20, random_state=0), X[:200]),
    ]:
        model.fit(data)
        if hasattr(model, "transform"):
            model.transform(data[:20])
print(sorted(m for m in sys.modules if m == "numba" or m.startswith("numba.")))
"""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, timeout=300, env=env)
    assert out.stdout.strip().splitlines()[-1] == "[]"
