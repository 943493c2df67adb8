"""Embedding estimators: Laplacian eigenmaps, Locally Linear Landmarks, Manifold Sculpting."""
