"""GP manifold landmarking (Liang & Paisley, ICML 2015).

Where each part lives (imports run downward, in this order):

- :mod:`.objective`: the paper's formulae, once for every backend: the objective
  and its gradient, the step schedule, the move of a step and the stopping rule;
- :mod:`.batches`: the minibatch layout (chunks, batches, the order of batches)
  and the host's kernel tables and batch factors;
- :mod:`._kernels`: the compiled step of the NumPy backend (Cython, compiled ahead
  of time), for a block of B >= 1 landmarks: the sequential fit is B = 1;
- :mod:`.blocks`: blocks of landmarks learned together (``block_size``): the joint
  objective, its NumPy reference step, the one host driver of the steps and the
  greedy order;
- :mod:`._numpy` and :mod:`._torch`: the two backends (the torch one is the only
  GP module that uses torch);
- :mod:`.backend`: :func:`~.backend.gp_backend`, the one place that picks a backend
  from the ``device``;
- :mod:`.learn`: :func:`learn_gp_landmarks`, the one driver of a fit;
- :mod:`.refine`: :func:`refine_gp_landmarks`, the joint refinement;
- :mod:`.diagnostics`: :class:`KernelWidthWarning` and its check;
- :mod:`.estimator`: :class:`GPLandmarks`.

The public names below are resolved on first use (PEP 562), so that importing the
package loads none of its modules.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

# Public name -> module (relative to this package) that defines it.
_EXPORTS = {
    "GPLandmarks": ".estimator",
    "learn_gp_landmarks": ".learn",
    "refine_gp_landmarks": ".refine",
    "gp_objective_and_gradient": ".objective",
    "step_size": ".objective",
    "KernelWidthWarning": ".diagnostics",
}

__all__ = list(_EXPORTS)

# Static tools read these ordinary imports; at run time the names load lazily.
if TYPE_CHECKING:
    from .diagnostics import KernelWidthWarning  # noqa: F401
    from .estimator import GPLandmarks  # noqa: F401
    from .learn import learn_gp_landmarks  # noqa: F401
    from .objective import gp_objective_and_gradient, step_size  # noqa: F401
    from .refine import refine_gp_landmarks  # noqa: F401

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
