"""Embedding estimators: Laplacian eigenmaps, Locally Linear Landmarks, Manifold Sculpting.

Lazy imports, the convention every module of this package follows so that
``import landmarking`` stays cheap: the public names below are resolved on first
access (PEP 562 ``__getattr__``), so importing the package imports none of its
modules. The compiled kernels (``landmarking._graph_kernels``,
``landmarking.lll._kernels``, ``landmarking.sculpting._kernels``, ...) are Cython,
built when the package is installed: nothing compiles at run time.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

# Public name -> module (relative to this package) that defines it.
_EXPORTS = {
    "ManifoldSculpting": "..sculpting.estimator",
    "estimate_intrinsic_dimension": "..sculpting.intrinsic_dimension",
    "LaplacianEigenmaps": "..spectral.laplacian",
    "LocallyLinearLandmarks": "..lll.estimator",
    "lll_out_of_sample": "..lll.out_of_sample",
    "sweep_lll": "..lll.model_selection",
}

__all__ = list(_EXPORTS)

# Static tools (type checkers, IDEs) read these ordinary imports; at run time the
# names are loaded lazily by __getattr__, so they look unused to ruff (F401).
if TYPE_CHECKING:
    from ..lll.estimator import LocallyLinearLandmarks  # noqa: F401
    from ..lll.model_selection import sweep_lll  # noqa: F401
    from ..lll.out_of_sample import lll_out_of_sample  # noqa: F401
    from ..sculpting.estimator import ManifoldSculpting  # noqa: F401
    from ..sculpting.intrinsic_dimension import estimate_intrinsic_dimension  # noqa: F401
    from ..spectral.laplacian import LaplacianEigenmaps  # noqa: F401


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
