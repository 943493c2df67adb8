"""Embedding estimators: Laplacian eigenmaps, Locally Linear Landmarks, Manifold Sculpting."""

# Manifold Sculpting (issue 5).
from .sculpting import ManifoldSculpting, estimate_intrinsic_dimension  # noqa: E402

__all__ = [*globals().get("__all__", []), "ManifoldSculpting", "estimate_intrinsic_dimension"]

# Laplacian eigenmaps and Locally Linear Landmarks (issue 4).
from .laplacian import LaplacianEigenmaps  # noqa: E402
from .lll import LocallyLinearLandmarks, lll_out_of_sample  # noqa: E402
from .model_selection import sweep_lll  # noqa: E402

__all__ += ["LaplacianEigenmaps", "LocallyLinearLandmarks", "lll_out_of_sample", "sweep_lll"]
