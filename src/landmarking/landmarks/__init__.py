"""Landmark estimators: GP manifold landmarking and its baselines."""
