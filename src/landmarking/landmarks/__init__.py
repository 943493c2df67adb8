"""Landmark estimators: GP manifold landmarking and its baselines."""

from .baselines import (ActiveLearningLandmarks, KMeansLandmarks, NMFLandmarks,  # noqa: E402
                        RandomLandmarks, RPCholeskyLandmarks)

from .gp import GPLandmarks, learn_gp_landmarks

__all__ = ["GPLandmarks", "learn_gp_landmarks"]
