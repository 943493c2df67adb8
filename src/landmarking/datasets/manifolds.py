"""The Manifold Sculpting paper's benchmark manifolds, each with its ground truth.

Every generator returns ``(X, target)``: the points in the ambient space and their
intrinsic coordinates, so an embedding can be scored with
:func:`landmarking.metrics.affine_normalized_mse`.

- :func:`make_sculpting_swiss_roll`: the paper's Swiss roll (Gashler et al. 2011,
  Section IV-A), optionally with samples inside a star-shaped region removed.
- :func:`make_sculpting_s_curve`: the paper's S-curve, with the exact arc length.
- :func:`make_entwined_spirals`: two spiral arms joined at the centre and lifted
  in opposite directions, a 1-D manifold in 3-D (the paper's Fig. 11 kind).
- :func:`make_translated_image`: a picture slid over a fixed noise background,
  625 images of 48 x 48 pixels on a 25 x 25 grid of offsets (the paper's Fig. 15).
"""

from __future__ import annotations

import numpy as np
from matplotlib.path import Path
from numpy.typing import ArrayLike
from scipy.special import ellipeinc
from sklearn.utils import check_random_state

from .._validation import check_positive_int

__all__ = [
    "make_sculpting_swiss_roll",
    "make_sculpting_s_curve",
    "make_entwined_spirals",
    "make_translated_image",
    "swiss_roll_arc_length",
]


def swiss_roll_arc_length(t: ArrayLike) -> np.ndarray:
    """Arc length of the spiral (t sin t, t cos t) from 0 to ``t``.

    ``(asinh t + t sqrt(t^2 + 1)) / 2``, the paper's first target coordinate.
    """
    t = np.asarray(t, dtype=float)
    return (np.arcsinh(t) + t * np.sqrt(t * t + 1.0)) / 2.0


def _star_path(centre, outer, inner, n_points=5):
    """A closed star polygon with ``n_points`` tips around ``centre``."""
    angles = np.pi / 2 + np.arange(2 * n_points) * np.pi / n_points
    radii = np.where(np.arange(2 * n_points) % 2 == 0, outer, inner)
    vertices = np.column_stack([centre[0] + radii * np.cos(angles),
                                centre[1] + radii * np.sin(angles)])
    return Path(np.vstack([vertices, vertices[:1]]), closed=True)


def _swiss_roll_points(t, y):
    X = np.column_stack([t * np.sin(t), y, t * np.cos(t)])
    target = np.column_stack([swiss_roll_arc_length(t), y])
    return X, target


def make_sculpting_swiss_roll(
    n_samples: int = 2000,
    *,
    hole: bool = False,
    star_radius: float = 5.0,
    random_state: int | np.random.RandomState | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The Swiss roll of Gashler, Ventura & Martinez (2011), Section IV-A.

    For ``i = 0 .. n-1``: ``t = 8 i / n + 2``, ``x = t sin t``, ``y ~ U[-6, 6)``,
    ``z = t cos t``; the target is ``u = (asinh t + t sqrt(t^2 + 1)) / 2`` (the
    arc length along the spiral) and ``v = y``. The density along ``u`` falls
    as the roll widens, as in the paper.

    Parameters
    ----------
    n_samples : int, default=2000
        Number of points returned (also with the hole).
    hole : bool, default=False
        Remove the samples whose target ``(u, v)`` falls inside a five-pointed
        star centred on the manifold (the paper's Fig. 2). To still return
        ``n_samples`` points, a denser grid is drawn and thinned uniformly at
        random, which keeps the paper's density profile.
    star_radius : float, default=5.0
        Outer radius of the star in target units (the roll is 12 wide in v);
        the inner radius is 0.4 times it.
    random_state : int, RandomState or None

    Returns
    -------
    X : ndarray of shape (n_samples, 3)
    target : ndarray of shape (n_samples, 2)
        The ground-truth coordinates ``(u, v)``, row by row with X.

    Examples
    --------
    >>> X, uv = make_sculpting_swiss_roll(500, hole=True, random_state=0)
    >>> X.shape, uv.shape
    ((500, 3), (500, 2))
    """
    n_samples = check_positive_int(n_samples, "n_samples", minimum=2)
    rng = check_random_state(random_state)
    if not hole:
        t = 8.0 * np.arange(n_samples) / n_samples + 2.0
        y = rng.uniform(-6.0, 6.0, n_samples)
        return _swiss_roll_points(t, y)
    u_lo, u_hi = swiss_roll_arc_length(2.0), swiss_roll_arc_length(10.0)
    star = _star_path(((u_lo + u_hi) / 2.0, 0.0), star_radius, 0.4 * star_radius)
    n_grid = n_samples
    while True:
        t = 8.0 * np.arange(n_grid) / n_grid + 2.0
        y = rng.uniform(-6.0, 6.0, n_grid)
        X, target = _swiss_roll_points(t, y)
        keep = np.flatnonzero(~star.contains_points(target))
        if keep.size >= n_samples:
            break
        n_grid = int(np.ceil(n_grid * 1.05 * n_samples / max(keep.size, 1)))
    chosen = np.sort(rng.choice(keep, size=n_samples, replace=False))
    return X[chosen], target[chosen]


def make_sculpting_s_curve(
    n_samples: int = 2000, *, random_state: int | np.random.RandomState | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The S-curve of Gashler, Ventura & Martinez (2011), Section IV-A.

    For ``i = 0 .. n-1``: ``t = (2.2 i - 0.1) pi / n``, ``x = t``,
    ``y = sin t``, ``z ~ U[0, 2)``; the target is the arc length
    ``u = int_0^t sqrt(cos^2 w + 1) dw`` (an incomplete elliptic integral of the
    second kind, ``sqrt(2) E(t | 1/2)``, evaluated exactly) and ``v = z``.

    Returns
    -------
    X : ndarray of shape (n_samples, 3)
    target : ndarray of shape (n_samples, 2)

    Examples
    --------
    >>> X, uv = make_sculpting_s_curve(100, random_state=0)
    >>> bool(np.all(np.diff(uv[:, 0]) > 0))
    True
    """
    n_samples = check_positive_int(n_samples, "n_samples", minimum=2)
    rng = check_random_state(random_state)
    t = (2.2 * np.arange(n_samples) - 0.1) * np.pi / n_samples
    z = rng.uniform(0.0, 2.0, n_samples)
    X = np.column_stack([t, np.sin(t), z])
    # sqrt(cos^2 w + 1) = sqrt(2) sqrt(1 - sin^2(w) / 2)
    u = np.sqrt(2.0) * ellipeinc(t, 0.5)
    return X, np.column_stack([u, z])


def make_entwined_spirals(
    n_samples: int = 2000,
    *,
    n_turns: float = 1.5,
    height: float = 4.0,
    noise: float = 0.0,
    random_state: int | np.random.RandomState | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Two spiral arms joined at the centre and lifted apart: a 1-D manifold.

    A parameter ``s`` runs over [-1, 1]; the point lies at radius
    ``|s| * 5`` and angle ``2 pi n_turns |s|`` (plus pi on the ``s < 0`` arm),
    at height ``height * s``, so the two arms coil around each other. The
    target is the arc length along the whole curve, computed numerically.

    Parameters
    ----------
    n_samples : int, default=2000
    n_turns : float, default=1.5
        Turns of each arm.
    height : float, default=4.0
        Height gained by each arm from the centre to its tip.
    noise : float, default=0.0
        Standard deviation of Gaussian noise added to X.
    random_state : int, RandomState or None

    Returns
    -------
    X : ndarray of shape (n_samples, 3)
    target : ndarray of shape (n_samples, 1), the arc length

    Examples
    --------
    >>> X, s = make_entwined_spirals(300, random_state=0)
    >>> X.shape, s.shape
    ((300, 3), (300, 1))
    """
    n_samples = check_positive_int(n_samples, "n_samples", minimum=2)
    rng = check_random_state(random_state)
    s = np.sort(rng.uniform(-1.0, 1.0, n_samples))
    X = _spiral_curve(s, n_turns, height)
    # Arc length by a fine polyline; 200 segments per sample is far below any
    # embedding error we measure.
    fine = np.linspace(-1.0, 1.0, 200 * n_samples + 1)
    pts = _spiral_curve(fine, n_turns, height)
    length = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(pts, axis=0), axis=1))])
    target = np.interp(s, fine, length)[:, None]
    if noise > 0:
        X = X + noise * rng.normal(size=X.shape)
    return X, target


def _spiral_curve(s, n_turns, height):
    r = 5.0 * np.abs(s)
    angle = 2.0 * np.pi * n_turns * np.abs(s) + np.where(s < 0, np.pi, 0.0)
    return np.column_stack([r * np.cos(angle), r * np.sin(angle), height * s])


def _default_picture(size):
    """A smooth, asymmetric test picture in [0, 1] (rings, a bar and a blob)."""
    yy, xx = np.mgrid[0:size, 0:size] / (size - 1.0)
    rings = 0.5 + 0.5 * np.cos(14.0 * np.hypot(xx - 0.35, yy - 0.4))
    bar = (np.abs(yy - 0.8) < 0.08) & (xx > 0.2)
    blob = np.exp(-((xx - 0.75) ** 2 + (yy - 0.25) ** 2) / 0.01)
    return np.clip(0.6 * rings + 0.8 * bar + 0.6 * blob, 0.0, 1.0)


def make_translated_image(
    *,
    n_positions: int = 25,
    image_size: int = 48,
    picture: ArrayLike | None = None,
    random_state: int | np.random.RandomState | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """A picture translated over a fixed background of noise (the paper's Fig. 15).

    The picture (``image_size - n_positions + 1`` pixels square by default) is
    pasted at every offset of an ``n_positions x n_positions`` grid on one
    uniform-noise background, giving ``n_positions**2`` images (625 of
    48 x 48 = 2,304 pixels by default). The manifold is 2-D: horizontal and
    vertical offset; the ideal embedding is the square grid of offsets.

    Parameters
    ----------
    n_positions : int, default=25
        Offsets per axis.
    image_size : int, default=48
        Side of each image in pixels.
    picture : ndarray of shape (p, p) or None
        The picture to slide, values in [0, 1]; ``p <= image_size -
        n_positions + 1``. None draws a built-in smooth pattern.
    random_state : int, RandomState or None
        Seeds the background noise.

    Returns
    -------
    X : ndarray of shape (n_positions**2, image_size**2)
        One flattened image per row.
    target : ndarray of shape (n_positions**2, 2)
        The (column, row) offset of the picture in each image.

    Examples
    --------
    >>> X, grid = make_translated_image(n_positions=5, image_size=12, random_state=0)
    >>> X.shape, grid.shape
    ((25, 144), (25, 2))
    """
    n_positions = check_positive_int(n_positions, "n_positions")
    image_size = check_positive_int(image_size, "image_size", minimum=2)
    rng = check_random_state(random_state)
    room = image_size - n_positions + 1
    if room < 1:
        raise ValueError(
            f"n_positions={n_positions} offsets do not fit in images of {image_size} "
            "pixels; pass fewer positions or larger images."
        )
    if picture is None:
        picture = _default_picture(room)
    picture = np.asarray(picture, dtype=float)
    if picture.ndim != 2 or picture.shape[0] != picture.shape[1] or picture.shape[0] > room:
        raise ValueError(
            f"picture must be a square 2-D array of side <= {room} (image_size - "
            f"n_positions + 1), got shape {picture.shape}; crop or resize it."
        )
    p = picture.shape[0]
    background = rng.uniform(0.0, 1.0, (image_size, image_size))
    rows, cols = np.meshgrid(np.arange(n_positions), np.arange(n_positions), indexing="ij")
    rows, cols = rows.ravel(), cols.ravel()
    images = np.repeat(background[None], rows.size, axis=0)
    for k, (r, c) in enumerate(zip(rows, cols, strict=True)):
        images[k, r:r + p, c:c + p] = picture
    return images.reshape(rows.size, -1), np.column_stack([cols, rows]).astype(float)
