"""Locally Linear Landmarks: Laplacian eigenmaps solved on landmarks.

One module per part (a reader finds each algorithm by its file name):

- :mod:`.estimator`: :class:`LocallyLinearLandmarks`, the scikit-learn estimator;
- :mod:`.fit`: :func:`locally_linear_landmarks`, the function behind it (every stage,
  end to end), and its :class:`LLLResult`;
- :mod:`~landmarking.lll.lll`: the numerics of the NumPy path: the weights Z
  (``reconstruction_weights``), the reduced problem A~, B~ and its eigenvectors;
- :mod:`.out_of_sample`: :func:`lll_out_of_sample`, the map of new points;
- :mod:`.backend`: ``lll_backend(device)``, the NumPy or the torch path (:mod:`._torch`);
- :mod:`._kernels`: the compiled (Cython) loops of the NumPy path;
- :mod:`.landmark_selection`, :mod:`.diagnostics`, :mod:`.refined` (the exact
  eigenvectors from an LLL start), :mod:`.model_selection` (:func:`sweep_lll`).

The public names below are resolved on first access (PEP 562), so importing this
package imports none of its modules.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

# Public name -> module (relative to this package) that defines it.
_EXPORTS = {
    "LocallyLinearLandmarks": ".estimator",
    "locally_linear_landmarks": ".fit",
    "LLLResult": ".fit",
    "lll_out_of_sample": ".out_of_sample",
    "sweep_lll": ".model_selection",
}

__all__ = list(_EXPORTS)

# Static tools (type checkers, IDEs) read these ordinary imports; at run time the
# names are loaded lazily by __getattr__, so they look unused to ruff (F401).
if TYPE_CHECKING:
    from .estimator import LocallyLinearLandmarks  # noqa: F401
    from .fit import LLLResult, locally_linear_landmarks  # noqa: F401
    from .model_selection import sweep_lll  # noqa: F401
    from .out_of_sample import lll_out_of_sample  # noqa: F401


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
