"""Landmark estimators: GP manifold landmarking and its baselines.

The names are resolved on first use (PEP 562) from the modules that define them:
GP landmarking lives in :mod:`landmarking.gp`, the baselines in
:mod:`landmarking.baselines` (one module per method).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

# Public name -> module (relative to this package) that defines it.
_EXPORTS = {
    "GPLandmarks": "..gp.estimator",
    "learn_gp_landmarks": "..gp.learn",
    "RandomLandmarks": "..baselines.random",
    "ActiveLearningLandmarks": "..baselines.active_learning",
    "RPCholeskyLandmarks": "..baselines.rp_cholesky",
    "KMeansLandmarks": "..baselines.kmeans",
    "NMFLandmarks": "..baselines.nmf",
}

__all__ = ["GPLandmarks", "learn_gp_landmarks", "RandomLandmarks", "ActiveLearningLandmarks",
           "RPCholeskyLandmarks", "KMeansLandmarks", "NMFLandmarks"]

if TYPE_CHECKING:
    from ..baselines.active_learning import ActiveLearningLandmarks  # noqa: F401
    from ..baselines.kmeans import KMeansLandmarks  # noqa: F401
    from ..baselines.nmf import NMFLandmarks  # noqa: F401
    from ..baselines.random import RandomLandmarks  # noqa: F401
    from ..baselines.rp_cholesky import RPCholeskyLandmarks  # noqa: F401
    from ..gp.estimator import GPLandmarks  # noqa: F401
    from ..gp.learn import learn_gp_landmarks  # noqa: F401

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
