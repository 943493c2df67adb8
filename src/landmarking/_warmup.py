"""Fill numba's cache ahead of the first real call: ``python -m landmarking._warmup``.

Every numba kernel of the library has ``cache=True``, so its machine code is
written next to the source (or under ``NUMBA_CACHE_DIR``) on its first call and
loaded from there by every later process. This module makes that first call on
tiny inputs, for every estimator's default path and every dtype the kernels are
compiled for, so that a fresh install (``make install`` runs it), a CI job or a
container image pays numba's compile once, at build time, instead of in the
user's first fit. It prints the seconds per step; run it again and they fall to
the cache-load time. The kernels compiled ahead of time (Cython, ``*.pyx``: the
neighbour searches, graph passes and the GP step, among others) are built at
install time and need no step here.
"""

import time
import warnings

import numpy as np

__all__ = ["warm_up"]


def _steps():
    """(name, thunk) per estimator path, each on a tiny Swiss roll."""
    from sklearn.datasets import make_swiss_roll

    X, _ = make_swiss_roll(300, random_state=0)
    X32 = X.astype(np.float32)

    def lll():
        from .lll.estimator import LocallyLinearLandmarks
        from .lll.lll import reconstruction_weights

        for data in (X, X32):
            LocallyLinearLandmarks(n_landmarks=30, random_state=0).fit(data)
            # The fit's weights rank the landmarks in float32 and prove the
            # choice; the float64 path (rows left unproved, or few landmarks)
            # compiles here.
            reconstruction_weights(data, X[:10], 5)

    return [("LocallyLinearLandmarks", lll)]


def warm_up(verbose=True):
    """Compile (or load from the cache) every kernel the estimators' defaults use.

    Returns
    -------
    dict
        Seconds per step.
    """
    seconds = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny, unconverged fits warn; that is expected
        for name, step in _steps():
            start = time.perf_counter()
            step()
            seconds[name] = time.perf_counter() - start
            if verbose:
                print(f"{name}: {seconds[name]:.2f} s", flush=True)
    return seconds


if __name__ == "__main__":
    warm_up()
