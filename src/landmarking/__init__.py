"""landmarking: landmarks on the data manifold and low-dimensional embeddings.

Estimators follow scikit-learn's conventions. See the README for a tour.
"""

__version__ = "0.2.0.dev0"

from .landmarks.gp import GPLandmarks

__all__ = ["__version__", "GPLandmarks"]

# Landmark baselines (issue 3).
from .landmarks.baselines import (  # noqa: E402
    ActiveLearningLandmarks,
    KMeansLandmarks,
    NMFLandmarks,
    RandomLandmarks,
    RPCholeskyLandmarks,
)

__all__ += ["RandomLandmarks", "ActiveLearningLandmarks", "RPCholeskyLandmarks",
            "KMeansLandmarks", "NMFLandmarks"]

# Manifold Sculpting (issue 5).
from .embedding.sculpting import ManifoldSculpting, estimate_intrinsic_dimension  # noqa: E402

__all__ += ["ManifoldSculpting", "estimate_intrinsic_dimension"]

# Laplacian eigenmaps and Locally Linear Landmarks (issue 4).
from .embedding.laplacian import LaplacianEigenmaps  # noqa: E402
from .embedding.lll import LocallyLinearLandmarks, lll_out_of_sample  # noqa: E402
from .embedding.model_selection import sweep_lll  # noqa: E402

__all__ += ["LaplacianEigenmaps", "LocallyLinearLandmarks", "lll_out_of_sample", "sweep_lll"]

# Saving and loading fitted estimators without pickles.
from .persistence import load, save  # noqa: E402

__all__ += ["save", "load"]
