"""Writes model files with the code before the method packages were laid out alike.

Run once, on main at b125e0d (before ``lll/lll.py`` became ``lll/_numpy.py`` and
``lll/refined.py`` became ``lll/refine.py``), from the repository root:
``python tests/data/before_layout/make_models.py``. It saves a fitted
``LocallyLinearLandmarks`` and a ``ManifoldSculpting`` with :func:`landmarking.save`,
and beside them what their ``transform`` gave then, so that
``tests/test_persistence.py`` proves that a file saved before the renames loads after
them and maps new points the same.
"""

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def data():
    """The training points and the new points (a seeded Swiss roll)."""
    from landmarking.datasets import make_noisy_swiss_roll

    X, _ = make_noisy_swiss_roll(400, random_state=0)
    return X[:300], X[300:]


def main():
    from landmarking import LocallyLinearLandmarks, ManifoldSculpting, save

    X, X_new = data()
    lll = LocallyLinearLandmarks(n_landmarks=40, n_neighbors=8, random_state=0).fit(X)
    sculpting = ManifoldSculpting(n_neighbors=12, random_state=0).fit(X[:150])
    save(lll, HERE / "lll_model.npz")
    save(sculpting, HERE / "sculpting_model.npz")
    np.savez(HERE / "transforms.npz", lll=lll.transform(X_new),
             sculpting=sculpting.transform(X_new[:20]))


if __name__ == "__main__":
    main()
