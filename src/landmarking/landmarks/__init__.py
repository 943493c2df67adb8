"""Landmark estimators: GP manifold landmarking and its baselines."""

from .baselines import (
                        ActiveLearningLandmarks,
                        KMeansLandmarks,
                        NMFLandmarks,
                        RandomLandmarks,
                        RPCholeskyLandmarks,
)
from .gp import GPLandmarks, learn_gp_landmarks

__all__ = ["GPLandmarks", "learn_gp_landmarks", "RandomLandmarks", "ActiveLearningLandmarks",
           "RPCholeskyLandmarks", "KMeansLandmarks", "NMFLandmarks"]
