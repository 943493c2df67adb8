"""landmarking: landmarks on the data manifold and low-dimensional embeddings.

Estimators follow scikit-learn's conventions. See the README for a tour.
"""

__version__ = "0.1.0"

from .landmarks.gp import GPLandmarks

__all__ = ["__version__", "GPLandmarks"]

# Landmark baselines (issue 3).
from .landmarks.baselines import (ActiveLearningLandmarks, KMeansLandmarks,  # noqa: E402
                                  NMFLandmarks, RandomLandmarks, RPCholeskyLandmarks)

__all__ += ["RandomLandmarks", "ActiveLearningLandmarks", "RPCholeskyLandmarks",
            "KMeansLandmarks", "NMFLandmarks"]

# Manifold Sculpting (issue 5).
from .embedding.sculpting import ManifoldSculpting, estimate_intrinsic_dimension  # noqa: E402

__all__ += ["ManifoldSculpting", "estimate_intrinsic_dimension"]
