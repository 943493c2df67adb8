"""Laplacian eigenmaps: the exact solver, its refinement and its out-of-sample map.

- :mod:`.laplacian`: :func:`~.laplacian.spectral_embedding` (the eigenproblem of a
  graph) and :class:`~landmarking.LaplacianEigenmaps`, the scikit-learn estimator;
- :mod:`~landmarking.spectral.refine_eigenvectors`: exact eigenvectors by LOBPCG from a good start
  (``refine_spectral_embedding``), with guard columns;
- :mod:`.nystrom`: the Nystroem map of new points.

The graph itself (k-NN, affinity, signs) is built by :mod:`landmarking.graph`.
The public names below are the method's functions; the estimator is imported from
``landmarking`` (``from landmarking import LaplacianEigenmaps``), each name from one
place. They are resolved on first access (PEP 562).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

# Public name -> module (relative to this package) that defines it.
_EXPORTS = {
    "spectral_embedding": ".laplacian",
    "refine_spectral_embedding": ".refine_eigenvectors",
}

__all__ = list(_EXPORTS)

# Static tools read these ordinary imports; at run time the names are loaded lazily.
if TYPE_CHECKING:
    from .laplacian import spectral_embedding  # noqa: F401
    from .refine_eigenvectors import refine_spectral_embedding  # noqa: F401


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
