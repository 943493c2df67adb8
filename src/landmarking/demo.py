"""The demo that ``make demo`` and ``landmarking demo`` run: no download needed.

It learns GP landmarks on two data sets that ship with the library or scikit-learn:
two concentric circles (generated) and scikit-learn's bundled 8x8 digits, prints a
table per data set (landmark, objective, distance to the nearest data point relative
to the data's nearest-neighbour spacing, seconds) and writes two PNGs.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TextIO

from numpy.typing import ArrayLike

from .datasets import make_concentric_circles
from .evaluation import landmark_to_data_distances, nearest_neighbor_spacing
from .gp.estimator import GPLandmarks
from .plotting import plot_image_grid, plot_landmarks

__all__ = ["run_demo", "landmark_table"]


def landmark_table(
    X: ArrayLike, estimator: GPLandmarks
) -> list[tuple[int, float, float, float, float]]:
    """Rows (index, objective, distance to data / median NN spacing, seconds)."""
    distance, _ = landmark_to_data_distances(estimator.landmarks_, X)
    spacing = nearest_neighbor_spacing(X)
    return [(k + 1, estimator.objective_[k], distance[k], distance[k] / spacing,
             estimator.landmark_seconds_[k]) for k in range(len(distance))]


def _print_table(title, rows, out):
    print(f"\n{title}", file=out)
    print(f"{'landmark':>8}  {'objective':>10}  {'dist to data':>12}  {'/ NN spacing':>12}"
          f"  {'seconds':>8}", file=out)
    for k, objective, distance, relative, seconds in rows:
        print(f"{k:>8d}  {objective:>10.4g}  {distance:>12.4g}  {relative:>12.2f}"
              f"  {seconds:>8.3f}", file=out)


def run_demo(
    output_dir: str | os.PathLike = "demo_output",
    *,
    n_steps: int = 1000,
    random_state: int = 0,
    verbose: bool = False,
    out: TextIO | None = None,
) -> list[Path]:
    """Learn landmarks on circles and digits; print tables and write two PNGs.

    Parameters
    ----------
    output_dir : str or Path
        Folder for ``circles_landmarks.png`` and ``digits_landmarks.png``.
    n_steps : int
        Steps per landmark (the paper's 1000 by default).
    random_state : int
    verbose : bool
        Progress bars.
    out : file, optional
        Where to print (standard output by default).

    Returns
    -------
    list of Path
        The PNG files written.
    """
    import sys

    from sklearn.datasets import load_digits

    out = sys.stdout if out is None else out
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    written = []
    start = time.perf_counter()

    X, labels = make_concentric_circles(2000, random_state=random_state)
    circles = GPLandmarks(n_landmarks=16, n_steps=n_steps, random_state=random_state,
                          verbose=verbose).fit(X)
    _print_table(f"Two concentric circles (2,000 points), kernel width "
                 f"{circles.kernel_width_:.3g} ('auto')", landmark_table(X, circles), out)
    path = output_dir / "circles_landmarks.png"
    plot_landmarks(X, circles.landmarks_, labels=labels,
                   title="GP landmarks on two concentric circles", path=path)
    written.append(path)

    digits = load_digits()
    D = digits.data / 16.0
    gp = GPLandmarks(n_landmarks=20, n_steps=n_steps, space="nonnegative",
                     random_state=random_state, verbose=verbose).fit(D)
    _print_table(f"scikit-learn digits (1,797 images of 8x8), kernel width "
                 f"{gp.kernel_width_:.3g} ('auto')", landmark_table(D, gp), out)
    path = output_dir / "digits_landmarks.png"
    plot_image_grid(gp.landmarks_, (8, 8), n_cols=10,
                    title="The first 20 GP landmarks of the digits, in order", path=path)
    written.append(path)

    print(f"\nWrote {', '.join(str(p) for p in written)} "
          f"({time.perf_counter() - start:.1f} s in all).", file=out)
    return written
