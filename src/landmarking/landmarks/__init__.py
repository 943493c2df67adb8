"""Landmark estimators: GP manifold landmarking and its baselines.

The names are resolved on first use (PEP 562) from the modules that define them:
GP landmarking lives in :mod:`landmarking.gp`.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

# Public name -> module (relative to this package) that defines it.
_EXPORTS = {
    "GPLandmarks": "..gp.estimator",
    "learn_gp_landmarks": "..gp.learn",
    "RandomLandmarks": ".baselines",
    "ActiveLearningLandmarks": ".baselines",
    "RPCholeskyLandmarks": ".baselines",
    "KMeansLandmarks": ".baselines",
    "NMFLandmarks": ".baselines",
}

__all__ = ["GPLandmarks", "learn_gp_landmarks", "RandomLandmarks", "ActiveLearningLandmarks",
           "RPCholeskyLandmarks", "KMeansLandmarks", "NMFLandmarks"]

if TYPE_CHECKING:
    from ..gp.estimator import GPLandmarks  # noqa: F401
    from ..gp.learn import learn_gp_landmarks  # noqa: F401
    from .baselines import (  # noqa: F401
        ActiveLearningLandmarks,
        KMeansLandmarks,
        NMFLandmarks,
        RandomLandmarks,
        RPCholeskyLandmarks,
    )

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
