"""Manifold Sculpting (Gashler, Ventura & Martinez, IEEE TSMC-B 2011).

Three layers, as in umap: the estimator
(:class:`~landmarking.sculpting.estimator.ManifoldSculpting`), the public function
:func:`~landmarking.sculpting.fit.manifold_sculpting` with the loop
it runs (:mod:`._loop`: the relationships to restore and the iterations), and
the compiled hill-climbing pass (:mod:`._loops`, Cython). New points for a
fitted model are in :mod:`._incremental`; the intrinsic-dimension estimate in
:mod:`.intrinsic_dimension`.

The names below are the method's own; the estimator and
``estimate_intrinsic_dimension`` are imported from ``landmarking``, each name from
one place. They are resolved on first use (PEP 562), so importing this package
loads none of its modules.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

# Public name -> module (relative to this package) that defines it.
_EXPORTS = {
    "manifold_sculpting": ".fit",
    "SculptingResult": ".fit",
    "SculptingWarning": ".fit",
}

__all__ = list(_EXPORTS)

# Static tools read these ordinary imports; at run time __getattr__ loads the names.
if TYPE_CHECKING:
    from .fit import (  # noqa: F401
        SculptingResult,
        SculptingWarning,
        manifold_sculpting,
    )

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
