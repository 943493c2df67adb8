"""landmarking: landmarks on the data manifold and low-dimensional embeddings.

Estimators follow scikit-learn's conventions. See the README for a tour.

The public names are resolved on first use (PEP 562): ``import landmarking``
loads no estimator module, and ``from landmarking import X``
imports only the module that defines X.
"""

from typing import TYPE_CHECKING

from . import _compiled
from ._lazy import lazy_exports

__version__ = "0.2.0.dev0"

# Public name -> module (relative to this package) that defines it.
_EXPORTS = {
    "GPLandmarks": ".gp.estimator",
    "RandomLandmarks": ".baselines.random",
    "ActiveLearningLandmarks": ".baselines.active_learning",
    "RPCholeskyLandmarks": ".baselines.rp_cholesky",
    "KMeansLandmarks": ".baselines.kmeans",
    "NMFLandmarks": ".baselines.nmf",
    "ManifoldSculpting": ".sculpting.estimator",
    "estimate_intrinsic_dimension": ".sculpting.intrinsic_dimension",
    "LaplacianEigenmaps": ".spectral.laplacian",
    "LocallyLinearLandmarks": ".lll.estimator",
    "locally_linear_landmarks": ".lll.fit",
    "lll_out_of_sample": ".lll.out_of_sample",
    "sweep_lll": ".lll.model_selection",
    "save": ".persistence",
    "load": ".persistence",
}

__all__ = ["__version__", *_EXPORTS]

# Static tools (type checkers, IDEs) read these ordinary imports; at run time the
# names are loaded lazily by __getattr__, so they look unused to ruff (F401).
if TYPE_CHECKING:
    from .baselines.active_learning import ActiveLearningLandmarks  # noqa: F401
    from .baselines.kmeans import KMeansLandmarks  # noqa: F401
    from .baselines.nmf import NMFLandmarks  # noqa: F401
    from .baselines.random import RandomLandmarks  # noqa: F401
    from .baselines.rp_cholesky import RPCholeskyLandmarks  # noqa: F401
    from .gp.estimator import GPLandmarks  # noqa: F401
    from .lll.estimator import LocallyLinearLandmarks  # noqa: F401
    from .lll.fit import locally_linear_landmarks  # noqa: F401
    from .lll.model_selection import sweep_lll  # noqa: F401
    from .lll.out_of_sample import lll_out_of_sample  # noqa: F401
    from .persistence import load, save  # noqa: F401
    from .sculpting.estimator import ManifoldSculpting  # noqa: F401
    from .sculpting.intrinsic_dimension import estimate_intrinsic_dimension  # noqa: F401
    from .spectral.laplacian import LaplacianEigenmaps  # noqa: F401


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

# A package without its compiled loops fails here, naming the fix, not in a fit.
_compiled.check()
