"""Landmark estimators: GP manifold landmarking and its baselines."""

from .baselines import (ActiveLearningLandmarks, KMeansLandmarks, NMFLandmarks,  # noqa: E402
                        RandomLandmarks, RPCholeskyLandmarks)
