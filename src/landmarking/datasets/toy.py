"""Small generated manifolds for demos and tests of landmarking."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["make_concentric_circles", "make_noisy_swiss_roll", "make_sphere_orthant"]


def make_concentric_circles(
    n_samples: int = 1000,
    *,
    radii: Sequence[float] = (1.0, 2.0),
    noise: float = 0.02,
    random_state: int | np.random.RandomState | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Points on concentric circles in the plane, equal density along each.

    Returns
    -------
    X : ndarray (n_samples, 2)
    labels : ndarray (n_samples,), the index of each point's circle
    """
    rng = check_random_state(random_state)
    radii = np.asarray(radii, dtype=float)
    # Points per circle in proportion to its length, so density is uniform.
    counts = np.floor(n_samples * radii / radii.sum()).astype(int)
    counts[-1] = n_samples - counts[:-1].sum()
    labels = np.repeat(np.arange(len(radii)), counts)
    angles = rng.uniform(0, 2 * np.pi, n_samples)
    r = radii[labels] + noise * rng.normal(size=n_samples)
    X = np.column_stack([r * np.cos(angles), r * np.sin(angles)])
    return X, labels


def make_noisy_swiss_roll(
    n_samples: int = 2000,
    *,
    noise: float = 0.1,
    random_state: int | np.random.RandomState | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 3-D Swiss roll with Gaussian noise; returns (X, roll angle)."""
    from sklearn.datasets import make_swiss_roll

    return make_swiss_roll(n_samples, noise=noise, random_state=random_state)


def make_sphere_orthant(
    n_samples: int = 1000,
    *,
    n_features: int = 3,
    n_clusters: int = 3,
    concentration: float = 30.0,
    random_state: int | np.random.RandomState | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Clusters on the unit sphere inside the nonnegative orthant.

    Mimics square-root histograms: each cluster is a Dirichlet around a random
    topic; rows are square roots of the sampled proportions, so each row has unit
    norm and nonnegative entries.

    Returns
    -------
    X : ndarray (n_samples, n_features)
    labels : ndarray (n_samples,), the cluster of each row
    """
    rng = check_random_state(random_state)
    centres = rng.dirichlet(np.full(n_features, 0.5), size=n_clusters)
    labels = rng.randint(n_clusters, size=n_samples)
    props = np.array([rng.dirichlet(concentration * centres[k] + 0.05) for k in labels])
    return np.sqrt(props), labels
