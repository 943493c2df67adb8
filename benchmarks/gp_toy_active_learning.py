"""GP active learning and GP landmarks on two toy manifolds (Liang & Paisley 2015,
Fig. 1(a) beside Fig. 1(b)).

The first 15 points chosen by GP active learning (``ActiveLearningLandmarks``: each
pick is the data point of largest predictive variance, Section 2) beside the first
15 GP landmarks (``GPLandmarks``: continuous points found by gradient steps, Section
3) on two generated 2-D manifolds: two concentric circles and a noisy spiral (the
(x, z) plane of a Swiss roll). Both use the library's default kernel-width rule
("auto"), each resolved on the data it sees.

Printed per manifold and method: how far the points lie from the data (largest and
median distance to the nearest data point, over the data's median nearest-neighbour
spacing), how evenly they cover it (mean and largest distance from a data point to
its nearest chosen point, same unit), the closest pair of chosen points (same unit)
and, for the circles, how many of the 15 fall on each circle. The paper's claims:
both spread their points evenly along the manifolds; active learning's are data
points, GP landmarks need not be.

Usage::

    python benchmarks/gp_toy_active_learning.py          # 1,500 points, 300 GP steps
    python benchmarks/gp_toy_active_learning.py --full   # 4,000 points, 1,000 GP steps
"""

import json

import numpy as np
from _common import argument_parser, parse, print_table, pyplot
from scipy.spatial.distance import pdist

from landmarking import ActiveLearningLandmarks, GPLandmarks
from landmarking.datasets import make_concentric_circles, make_noisy_swiss_roll
from landmarking.evaluation import landmark_geometry

N_POINTS = 15


def manifolds(n, seed):
    """(name, X, labels) of the two 2-D toy manifolds."""
    circles, labels = make_concentric_circles(n, random_state=seed)
    roll, _ = make_noisy_swiss_roll(n, noise=0.3, random_state=seed)
    return [("two circles", circles, labels), ("noisy spiral", roll[:, [0, 2]], None)]


def fit_both(X, n_steps, seed):
    """{method: fitted estimator} for active learning and GP landmarks."""
    active = ActiveLearningLandmarks(n_landmarks=N_POINTS, subsample=None,
                                     random_state=seed).fit(X)
    gp = GPLandmarks(n_landmarks=N_POINTS, n_steps=n_steps, random_state=seed).fit(X)
    return {"active learning (Fig. 1(a))": active, "GP landmarks (Fig. 1(b))": gp}


def describe(X, landmarks, labels, seed):
    """The numbers printed per method, as a dict."""
    g = landmark_geometry(X, landmarks, random_state=seed)
    row = {"to data max": float(np.max(g["to_data_relative"])),
           "to data median": float(np.median(g["to_data_relative"])),
           "mean cover": float(g["mean_cover_relative"]),
           "covering radius": float(g["covering_radius_relative"]),
           "closest pair": float(pdist(landmarks).min() / g["spacing"])}
    if labels is not None:
        nearest = np.argmin(((landmarks[:, None, :] - X[None]) ** 2).sum(-1), axis=1)
        row["per circle"] = "/".join(str(int(np.sum(labels[nearest] == c)))
                                     for c in np.unique(labels))
    return row


def main(argv=None):
    parser = argument_parser(__doc__)
    args = parse(parser, argv)
    n, n_steps = (4000, 1000) if args.full else (1500, 300)
    plt = pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(8, 8))
    summary = {}
    for col, (name, X, labels) in enumerate(manifolds(n, args.seed)):
        fitted = fit_both(X, n_steps, args.seed)
        rows = []
        for row_i, (method, est) in enumerate(fitted.items()):
            T = est.landmarks_
            numbers = describe(X, T, labels, args.seed)
            summary.setdefault(name, {})[method] = {**numbers,
                                                    "kernel_width": float(est.kernel_width_)}
            rows.append([method, est.kernel_width_, *numbers.values()])
            ax = axes[row_i, col]
            ax.scatter(*X.T, s=2, c="0.75")
            ax.scatter(*T.T, s=25, c="red")
            for k, point in enumerate(T, 1):
                ax.annotate(str(k), point, fontsize=7, xytext=(2, 2),
                            textcoords="offset points")
            ax.set_aspect("equal")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(f"{'(a)' if row_i == 0 else '(b)'} {name}: "
                         f"{method.split(' (')[0]}", fontsize=9)
        print(f"\n{name}: {n} points, first {N_POINTS} points of each method "
              f"(distances over the median nearest-neighbour spacing)\n")
        headers = ["method", "kernel width", "to data max", "to data median", "mean cover",
                   "covering radius", "closest pair"]
        if labels is not None:
            headers.append("per circle (inner/outer)")
        print_table(headers, rows, floatfmt="{:.3g}")
    fig.tight_layout()
    tag = "full" if args.full else "quick"
    png = args.out / f"gp_toy_active_learning_{tag}.png"
    fig.savefig(png, dpi=100)
    with open(args.out / f"gp_toy_active_learning_{tag}.json", "w") as fh:
        json.dump({"n": n, "n_steps": n_steps, "seed": args.seed, "results": summary}, fh,
                  indent=1)
    print(f"\nwrote {png}")
    return summary


if __name__ == "__main__":
    main()
