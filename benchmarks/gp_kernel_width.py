"""Kernel-width rules for GPLandmarks on low-dimensional manifolds: "auto" vs "variance".

For each generated manifold, learns landmarks with both rules and prints how far the
landmarks lie from the data (in units of the data's median nearest-neighbour
spacing) and how many components (circles, clusters) got a landmark. Writes one PNG
per rule for the circles. The rules on MNIST, text and faces are
``gp_kernel_width_rules.py`` (``--mnist-seeds N`` for MNIST).

Usage::

    python benchmarks/gp_kernel_width.py [--full] [--out DIR]
"""

import numpy as np
from _common import argument_parser, parse

from landmarking import GPLandmarks
from landmarking.datasets import make_concentric_circles, make_noisy_swiss_roll, make_sphere_orthant
from landmarking.evaluation import landmark_to_data_distances, nearest_neighbor_spacing
from landmarking.plotting import plot_landmarks


def _datasets(n):
    circles, circle_labels = make_concentric_circles(n, random_state=0)
    roll, _ = make_noisy_swiss_roll(n, noise=0.3, random_state=0)
    sphere, sphere_labels = make_sphere_orthant(n, n_features=6, n_clusters=4, random_state=1)
    return [("two circles", circles, circle_labels, "euclidean"),
            ("noisy Swiss roll", roll, None, "euclidean"),
            ("sphere-orthant clusters", sphere, sphere_labels, "sphere")]


def main():
    parser = argument_parser(__doc__, seed=False)
    args = parse(parser)
    n, n_landmarks, n_steps = (4000, 24, 1000) if args.full else (1500, 12, 300)
    out = args.out

    print(f"{'data':<24} {'rule':<9} {'width':>9} {'max dist/NN':>11} "
          f"{'median dist/NN':>14} {'components hit':>14}")
    for name, X, labels, space in _datasets(n):
        spacing = nearest_neighbor_spacing(X)
        for rule in ("auto", "variance"):
            gp = GPLandmarks(n_landmarks=n_landmarks, n_steps=n_steps, kernel_width=rule,
                             space=space, random_state=0).fit(X)
            distance, nearest = landmark_to_data_distances(gp.landmarks_, X)
            ratio = distance / spacing
            hit = "-"
            if labels is not None:
                hit = f"{len(set(labels[nearest]))}/{len(set(labels))}"
            print(f"{name:<24} {rule:<9} {gp.kernel_width_:>9.3g} {ratio.max():>11.1f} "
                  f"{np.median(ratio):>14.2f} {hit:>14}")
            if name == "two circles":
                plot_landmarks(X, gp.landmarks_, labels=labels,
                               title=f"two circles, kernel_width='{rule}'",
                               path=out / f"gp_circles_{rule}.png")
    print(f"wrote {out / 'gp_circles_auto.png'} and {out / 'gp_circles_variance.png'}")



if __name__ == "__main__":
    main()
