"""Smoke test of an installed landmarking (tools/check_wheel.sh runs it on a wheel).

Run from a folder outside the source tree, with the interpreter of the environment
the wheel was installed into. It checks that ``landmarking`` comes from that
environment's site-packages, loads every compiled module, then fits each public
estimator on small data, transforms, saves (``landmarking.save``), loads
(``landmarking.load``) and checks that the loaded model transforms to the same bits.
Prints one line per estimator and ``wheel smoke: ok`` at the end.
"""

import inspect
import sys
import sysconfig
import tempfile
import time
import warnings
from importlib import import_module
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator

import landmarking
from landmarking import _compiled, load, save

# Small settings per public estimator (the defaults are sized for real data).
SETTINGS = {
    "GPLandmarks": dict(n_landmarks=6, n_steps=20, random_state=0),
    "RandomLandmarks": dict(n_landmarks=6, random_state=0),
    "ActiveLearningLandmarks": dict(n_landmarks=6, subsample=150, random_state=0),
    "RPCholeskyLandmarks": dict(n_landmarks=6, random_state=0),
    "KMeansLandmarks": dict(n_landmarks=6, random_state=0),
    "NMFLandmarks": dict(n_landmarks=3, max_iter=50, random_state=0),
    "LaplacianEigenmaps": dict(n_neighbors=8, random_state=0),
    "LocallyLinearLandmarks": dict(n_landmarks=40, n_neighbors=8, random_state=0),
    "ManifoldSculpting": dict(n_neighbors=8, min_iter=4, max_iter=10, patience=2,
                              random_state=0),
}


def roll(n, seed):
    """A noisy Swiss roll strip in 3-D."""
    rng = np.random.default_rng(seed)
    t = 1.5 * np.pi * (1 + 2 * rng.random(n))
    h = 4 * rng.random(n)
    return np.c_[t * np.cos(t), h, t * np.sin(t)] / 5 + 0.01 * rng.normal(size=(n, 3))


def public_estimators():
    """{name: class} of every estimator landmarking exports."""
    return {name: getattr(landmarking, name) for name in landmarking.__all__
            if inspect.isclass(getattr(landmarking, name))
            and issubclass(getattr(landmarking, name), BaseEstimator)}


def main(argv):
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    where = Path(landmarking.__file__).resolve()
    if "--any-location" not in argv:  # e.g. a checkout's src/, to try this script
        assert site in where.parents, f"landmarking imported from {where}, not from {site}"
    print(f"landmarking {landmarking.__version__} from {where.parent}")
    level = _compiled.kernel_level()
    print(f"dispatched loops: the {level} build")
    for name in _compiled.EXTENSIONS:
        built_for = next((lv for lv in _compiled.levels() if name.endswith(f"_{lv}")), None)
        if built_for in (None, level):  # a build this processor cannot run stays unrun
            import_module(name)  # runs each module's own imports too

    estimators = public_estimators()
    untested = sorted(set(estimators) - set(SETTINGS))
    assert not untested, f"add small settings for {untested} to SETTINGS"

    # The compiled graph passes start at 2^20 edges: run them on a small graph too.
    from landmarking import graph
    from landmarking.neighbors import exact_knn

    graph.COMPILED_MIN_NNZ = 0
    X, X_new = roll(300, 0), roll(40, 1)
    exact_knn(X, 5)
    exact_knn(X, 5, query=X_new)

    with tempfile.TemporaryDirectory() as folder:
        for name, cls in estimators.items():
            start = time.perf_counter()
            train, new = (np.abs(X), np.abs(X_new)) if name == "NMFLandmarks" else (X, X_new)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # e.g. NMF's 50 iterations do not converge
                model = cls(**SETTINGS[name]).fit(train)
            path = Path(folder) / f"{name}.npz"
            save(model, path)
            back = load(path)
            assert type(back) is cls, (name, type(back))
            if hasattr(model, "transform"):
                ours, theirs = model.transform(new), back.transform(new)
                assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, name
                assert np.array_equal(ours, theirs), f"{name}: the loaded model differs"
                assert np.isfinite(ours).all(), name
            print(f"  {name}: fit, transform, save, load ok "
                  f"({time.perf_counter() - start:.2f} s)")
    print("wheel smoke: ok")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
