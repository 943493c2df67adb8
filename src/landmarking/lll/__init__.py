"""Locally Linear Landmarks: Laplacian eigenmaps solved on landmarks.

One module per part (a reader finds each algorithm by its file name):

- :mod:`.estimator`: :class:`~landmarking.LocallyLinearLandmarks`, the
  scikit-learn estimator;
- :mod:`.fit`: :func:`~landmarking.locally_linear_landmarks`, the function behind
  it (every stage, end to end), its :class:`LLLResult` and the parameter rules;
- :mod:`._cpu`: the CPU backend: the weights Z (``reconstruction_weights``),
  the reduced problem A~, B~ and its eigenvectors;
- :mod:`.out_of_sample`: :func:`~landmarking.lll_out_of_sample`, the map of new
  points;
- :mod:`.backend`: ``lll_backend(device)``, the CPU or the torch path (:mod:`._torch`);
- :mod:`._loops`: the compiled (Cython) loops of the CPU path;
- :mod:`.landmark_selection`, :mod:`.diagnostics`, :mod:`.start_and_refit` (LLL's
  start for the exact eigenvectors, and the landmark coordinates refitted to
  them), :mod:`.model_selection`
  (:func:`~landmarking.sweep_lll`).

The public names below are the method's own (the result of
``locally_linear_landmarks`` and the warning of a poor fit); the estimator and the
functions ``locally_linear_landmarks``, ``lll_out_of_sample`` and ``sweep_lll`` are
imported from ``landmarking``, each name from one place. They are resolved on
first access (PEP 562), so importing this package imports none of its modules.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

# Public name -> module (relative to this package) that defines it.
_EXPORTS = {
    "LLLResult": ".fit",
    "LandmarkSpanWarning": ".diagnostics",
}

__all__ = list(_EXPORTS)

# Static tools (type checkers, IDEs) read these ordinary imports; at run time the
# names are loaded lazily by __getattr__, so they look unused to ruff (F401).
if TYPE_CHECKING:
    from .diagnostics import LandmarkSpanWarning  # noqa: F401
    from .fit import LLLResult  # noqa: F401


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
