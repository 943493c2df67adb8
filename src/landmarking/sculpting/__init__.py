"""Manifold Sculpting (Gashler, Ventura & Martinez, IEEE TSMC-B 2011).

Three layers, as in umap: the estimator
(:class:`~landmarking.sculpting.estimator.ManifoldSculpting`), the public function
:func:`~landmarking.sculpting.sculpt.manifold_sculpting` with the loop
it runs (:mod:`._loop`: the relationships to restore and the iterations), and
the compiled hill-climbing pass (:mod:`._kernels`, Cython). New points for a
fitted model are in :mod:`._incremental`; the intrinsic-dimension estimate in
:mod:`.intrinsic_dimension`.

The names are resolved on first use (PEP 562), so importing this package loads
none of its modules.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

# Public name -> module (relative to this package) that defines it.
_EXPORTS = {
    "ManifoldSculpting": ".estimator",
    "manifold_sculpting": ".sculpt",
    "SculptingResult": ".sculpt",
    "SculptingWarning": ".sculpt",
    "estimate_intrinsic_dimension": ".intrinsic_dimension",
}

__all__ = list(_EXPORTS)

# Static tools read these ordinary imports; at run time __getattr__ loads the names.
if TYPE_CHECKING:
    from .estimator import ManifoldSculpting  # noqa: F401
    from .intrinsic_dimension import estimate_intrinsic_dimension  # noqa: F401
    from .sculpt import (  # noqa: F401
        SculptingResult,
        SculptingWarning,
        manifold_sculpting,
    )

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
