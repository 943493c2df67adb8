"""Embedding estimators: Laplacian eigenmaps, Locally Linear Landmarks, Manifold Sculpting."""

# Manifold Sculpting (issue 5).
from .sculpting import ManifoldSculpting, estimate_intrinsic_dimension  # noqa: E402

__all__ = [*globals().get("__all__", []), "ManifoldSculpting", "estimate_intrinsic_dimension"]
