"""Pictures of landmarks and embeddings (matplotlib, Agg backend, PNG files).

Each function draws into a new figure, saves it when ``path`` is given, and
returns the figure so that notebooks can show or restyle it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:  # matplotlib is imported lazily, when a picture is drawn
    from matplotlib.figure import Figure
    from scipy import sparse

__all__ = ["plot_landmarks", "plot_image_grid", "plot_embedding", "two_d_view",
           "plot_landmarks_auto", "plot_rows"]


def _pyplot():
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def two_d_view(
    X: ArrayLike, landmarks: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Project data (and landmarks) on the data's first two principal components.

    Data with two or fewer columns is returned as it is (padded with zeros).
    """
    X = np.asarray(X, dtype=float)
    if X.shape[1] <= 2:
        pad = lambda A: np.hstack([A, np.zeros((A.shape[0], 2 - A.shape[1]))])  # noqa: E731
        return pad(X), (None if landmarks is None else pad(np.asarray(landmarks, float)))
    mean = X.mean(axis=0)
    _, _, vt = np.linalg.svd(X - mean, full_matrices=False)
    axes = vt[:2].T
    view = (X - mean) @ axes
    lm_view = None if landmarks is None else (np.asarray(landmarks, float) - mean) @ axes
    return view, lm_view


def plot_landmarks(
    X: ArrayLike,
    landmarks: ArrayLike,
    *,
    labels: ArrayLike | None = None,
    embedding: ArrayLike | None = None,
    landmark_embedding: ArrayLike | None = None,
    title: str | None = None,
    path: str | os.PathLike | None = None,
) -> Figure:
    """Data as grey (or label-coloured) dots, landmarks as numbered red dots.

    Parameters
    ----------
    X : ndarray (n_samples, n_features)
    landmarks : ndarray (n_landmarks, n_features), in order of selection
    labels : ndarray (n_samples,), optional colours for the data
    embedding, landmark_embedding : ndarrays, optional
        A 2-D view to use instead of the first two principal components.
    path : str or Path, optional, where to save a PNG
    """
    plt = _pyplot()
    if embedding is not None:
        view, lm_view = np.asarray(embedding)[:, :2], np.asarray(landmark_embedding)[:, :2]
    else:
        view, lm_view = two_d_view(X, landmarks)
    fig, ax = plt.subplots(figsize=(6, 6))
    colours = "0.7" if labels is None else labels
    ax.scatter(view[:, 0], view[:, 1], s=4, c=colours, cmap=None if labels is None else "tab10",
               alpha=0.6, linewidths=0)
    ax.scatter(lm_view[:, 0], lm_view[:, 1], s=30, c="red", edgecolors="black",
               linewidths=0.5, zorder=3)
    for k, (u, v) in enumerate(lm_view[:, :2], start=1):
        ax.annotate(str(k), (u, v), xytext=(3, 3), textcoords="offset points",
                    fontsize=8, color="darkred", zorder=4)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_title(title or f"{len(lm_view)} landmarks")
    return _finish(fig, path)


def plot_image_grid(
    images: ArrayLike,
    image_shape: tuple[int, ...],
    *,
    n_cols: int = 10,
    titles: Sequence[str] | None = None,
    title: str | None = None,
    cmap: str = "gray",
    path: str | os.PathLike | None = None,
) -> Figure:
    """Rows of ``images`` reshaped to ``image_shape`` and laid out in a grid."""
    plt = _pyplot()
    images = np.asarray(images)
    n = len(images)
    n_cols = max(1, min(n_cols, n))
    n_rows = int(np.ceil(n / n_cols))
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(1.2 * n_cols, 1.3 * n_rows + 0.4),
                             squeeze=False)
    for k, ax in enumerate(axes.ravel()):
        ax.axis("off")
        if k < n:
            ax.imshow(images[k].reshape(image_shape), cmap=cmap)
            ax.set_title(titles[k] if titles is not None else str(k + 1), fontsize=7)
    if title:
        fig.suptitle(title)
    return _finish(fig, path)


def plot_embedding(
    embedding: ArrayLike,
    *,
    labels: ArrayLike | None = None,
    title: str | None = None,
    path: str | os.PathLike | None = None,
) -> Figure:
    """A 2-D embedding as a scatter plot, coloured by ``labels`` when given."""
    plt = _pyplot()
    embedding = np.asarray(embedding)
    fig, ax = plt.subplots(figsize=(6, 6))
    y = embedding[:, 1] if embedding.shape[1] > 1 else np.zeros(len(embedding))
    scatter = ax.scatter(embedding[:, 0], y, s=4, c=labels,
                         cmap="tab10" if labels is not None else None)
    if labels is not None and len(np.unique(labels)) <= 20:
        ax.legend(*scatter.legend_elements(), fontsize=7, loc="best", markerscale=0.8)
    ax.set_title(title or "embedding")
    return _finish(fig, path)


def _finish(fig, path):
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


#: Points drawn in a scatter plot at most (more would only hide each other).
PLOT_POINTS = 5000


def plot_rows(n_samples: int, max_points: int = PLOT_POINTS, seed: int = 0) -> slice | np.ndarray:
    """Rows to draw: all of them, or a seeded sorted sample of ``max_points``."""
    if n_samples <= max_points:
        return slice(None)
    return np.sort(np.random.default_rng(seed).choice(n_samples, max_points, replace=False))


def plot_landmarks_auto(
    X: np.ndarray | sparse.spmatrix | sparse.sparray,
    landmarks: ArrayLike,
    *,
    image_shape: tuple[int, ...] | None = None,
    labels: ArrayLike | None = None,
    view: ArrayLike | None = None,
    title: str | None = None,
    path: str | os.PathLike | None = None,
) -> Figure:
    """Landmarks as an image grid when ``image_shape`` is given, else numbered over the data.

    The data are drawn on ``view`` (a 2-D embedding of them) when given, else on their
    first two principal components. Large data is drawn from a seeded sample of
    :data:`PLOT_POINTS` rows; sparse data is densified only for that sample.

    Parameters
    ----------
    X : ndarray or scipy sparse matrix (n_samples, n_features)
    landmarks : ndarray (n_landmarks, n_features)
    image_shape : tuple of int, optional
        (height, width) or (height, width, 3) of one image.
    labels : ndarray (n_samples,), optional, colours of the data points
    view : ndarray (n_samples, >= 2), optional
        An embedding of the data; each landmark is drawn at the position of its
        nearest drawn data point (landmarks need not be data points).
    path : str or Path, optional, where to save a PNG

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(100, 3))
    >>> fig = plot_landmarks_auto(X, X[:4])
    >>> fig = plot_landmarks_auto(X, X[:4], view=X[:, 1:])
    """
    landmarks = np.asarray(landmarks)
    title = title or f"{len(landmarks)} landmarks"
    if image_shape is not None and view is None:
        # Colour images must lie in [0, 1] for imshow; grey ones are rescaled by it.
        images = landmarks if len(image_shape) == 2 else np.clip(landmarks, 0, 1)
        return plot_image_grid(images, image_shape, title=title, path=path)
    rows = plot_rows(X.shape[0])
    sample = X[rows]
    sample = sample.toarray() if hasattr(sample, "toarray") else np.asarray(sample)
    labels = None if labels is None else np.asarray(labels)[rows]
    if view is None:
        return plot_landmarks(sample, landmarks, labels=labels, title=title, path=path)
    from .kernels import squared_distances

    view = np.asarray(view, dtype=float)[rows][:, :2]
    nearest = np.argmin(squared_distances(landmarks.astype(float), sample.astype(float)), axis=1)
    return plot_landmarks(sample, landmarks, labels=labels, embedding=view,
                          landmark_embedding=view[nearest], title=title, path=path)
