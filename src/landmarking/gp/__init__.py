"""GP manifold landmarking (Liang & Paisley, ICML 2015).

Where each part lives (imports run downward, in this order):

- :mod:`.objective`: the paper's formulae, once for every backend: the objective
  and its gradient, the joint objective of a block of landmarks, the step
  schedule, the move of a step, the factor with drops, the greedy order and the
  stopping rule;
- :mod:`.sampling`: the fit's sample of the rows, drawn once, and the layout of
  its minibatches (chunks, batches, the order of batches);
- :mod:`._tables`: the CPU backend's kernel tables and batch factors;
- :mod:`._loops`: the compiled step of the CPU backend (Cython, compiled ahead
  of time), for a block of B >= 1 landmarks: the sequential fit is B = 1;
- :mod:`._cpu` and :mod:`._torch`: the two backends, each with one step for
  blocks and single landmarks alike (the CPU one also with the reference step
  and the one host driver of the steps; the torch one is the only GP module that
  uses torch);
- :mod:`.backend`: the backend interface (:class:`~.backend.GPBackend`, a
  ``typing.Protocol``) and :func:`~.backend.gp_backend`, the one place that picks a
  backend from the ``device``;
- :mod:`.fit`: :func:`learn_gp_landmarks`, the one driver of a fit (it keeps
  the Gram matrix of the kernel columns for the blocks' greedy orders);
- :mod:`~landmarking.gp.refine_landmarks`: :func:`refine_gp_landmarks`, the joint refinement;
- :mod:`.diagnostics`: :class:`KernelWidthWarning` and its check;
- :mod:`.estimator`: :class:`~landmarking.GPLandmarks`.

The public names below are the method's tools; the estimator is imported from
``landmarking`` (``from landmarking import GPLandmarks``), each name from one
place. They are resolved on first use (PEP 562), so that importing the package
loads none of its modules.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

# Public name -> module (relative to this package) that defines it.
_EXPORTS = {
    "learn_gp_landmarks": ".fit",
    "refine_gp_landmarks": ".refine_landmarks",
    "gp_objective_and_gradient": ".objective",
    "step_size": ".objective",
    "KernelWidthWarning": ".diagnostics",
}

__all__ = list(_EXPORTS)

# Static tools read these ordinary imports; at run time the names load lazily.
if TYPE_CHECKING:
    from .diagnostics import KernelWidthWarning  # noqa: F401
    from .fit import learn_gp_landmarks  # noqa: F401
    from .objective import gp_objective_and_gradient, step_size  # noqa: F401
    from .refine_landmarks import refine_gp_landmarks  # noqa: F401

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
