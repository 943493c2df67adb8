"""Writes model files with the code before the modules were renamed for what they do.

Run once, on main at fd05de5 (before ``gp/_numpy.py`` became ``gp/_cpu.py``,
``lll/_numpy.py`` ``lll/_cpu.py``, ``gp/learn.py`` ``gp/fit.py``, ``gp/refine.py``
``gp/refine_landmarks.py``, ``lll/refine.py`` ``lll/start_and_refit.py`` and
``spectral/refine.py`` ``spectral/refine_eigenvectors.py``), from the repository
root: ``python tests/data/before_names/make_renamed_models.py``. It saves a refined
``GPLandmarks`` and a refined ``LocallyLinearLandmarks`` (whose ``refine_result_`` is
a ``RefineResult``, a class of a renamed module) with :func:`landmarking.save`, and
beside them what their ``transform`` gave then, so that ``tests/test_persistence.py``
proves that a file saved before the renames loads after them and maps new points
the same. (``sculpting/sculpt.py`` became ``sculpting/fit.py`` too: the Manifold
Sculpting model of ``tests/data/before_layout`` was saved before that.)
"""

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def data():
    """The training points and the new points (a seeded Swiss roll)."""
    from landmarking.datasets import make_noisy_swiss_roll

    X, _ = make_noisy_swiss_roll(360, random_state=1)
    return X[:300], X[300:]


def main():
    from landmarking import GPLandmarks, LocallyLinearLandmarks, save

    X, X_new = data()
    gp = GPLandmarks(n_landmarks=6, n_steps=30, batch_size=50, refine=1,
                     random_state=0).fit(X)
    lll = LocallyLinearLandmarks(n_landmarks=30, n_neighbors=8, refine=True,
                                 random_state=0).fit(X)
    assert lll.refine_result_ is not None
    save(gp, HERE / "gp_model.npz")
    save(lll, HERE / "lll_model.npz")
    np.savez(HERE / "transforms.npz", gp=gp.transform(X_new), lll=lll.transform(X_new))


if __name__ == "__main__":
    main()
