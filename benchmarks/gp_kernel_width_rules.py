"""Kernel-width rules for GPLandmarks across data kinds: one table.

For two circles, 20 Newsgroups (square-root word frequencies on the sphere), faces
(Yale B and Olivetti) and optionally MNIST, learns landmarks with each width rule
and prints one quality figure per data set:

- two circles (1,500 points, 12 landmarks, 300 steps): the largest landmark-to-data
  distance over the median nearest-neighbour spacing (lower is better) and the
  circles that got a landmark;
- 20 Newsgroups (all 11,314 training posts, 12 landmarks, 1000 steps): the mean
  purity of each landmark's 100 nearest posts (``gp_newsgroups_topics.py``);
- faces (pixels / 255, space "nonnegative", 40 landmarks, 1000 steps): test
  accuracy of L2 logistic regression (C = 10) on the Gaussian features, every
  other image of each subject for training;
- MNIST (``--mnist-seeds N``): test accuracy over N seeds (100 landmarks, 50,000
  training images, the official test set, lambda 0.1: C = 10).

The rules: "local" is the median squared distance to the 20th neighbour (the
"auto" before issue 23), "variance" the paper's sum of per-dimension variances,
and "auto" what the installed package resolves (the variance rule unless it is
more than ``AUTO_MANIFOLD_RATIO`` times the local one); "ratio" is variance /
local. A rule whose width equals one already run on the same data gives the same
landmarks and is not fitted again.

Usage::

    python benchmarks/gp_kernel_width_rules.py [--mnist-seeds 3] [--quick]
"""

import numpy as np
from _common import (
    argument_parser,
    face_pixels,
    feature_accuracy,
    halves,
    machine_line,
    mnist_splits,
    newsgroups_sqrt_frequencies,
    parse,
    purity,
    timed,
)

from landmarking import GPLandmarks
from landmarking.datasets import make_concentric_circles
from landmarking.evaluation import landmark_to_data_distances, nearest_neighbor_spacing
from landmarking.kernels import local_kernel_width, resolve_kernel_width, variance_kernel_width


def widths(X):
    return {"local": local_kernel_width(X, random_state=0),
            "variance": variance_kernel_width(X),
            "auto": resolve_kernel_width(X, "auto", random_state=0)}


def circles():
    X, labels = make_concentric_circles(1500, random_state=0)
    spacing = nearest_neighbor_spacing(X)

    def score(width):
        gp = GPLandmarks(n_landmarks=12, n_steps=300, kernel_width=width,
                         random_state=0).fit(X)
        distance, nearest = landmark_to_data_distances(gp.landmarks_, X)
        return (f"max dist/NN {(distance / spacing).max():.1f}, "
                f"circles hit {len(set(labels[nearest]))}/2")
    return X, score


def newsgroups():
    X, labels = newsgroups_sqrt_frequencies()

    def score(width):
        gp = GPLandmarks(n_landmarks=12, n_steps=1000, kernel_width=width, space="sphere",
                         random_state=0).fit(X)
        return f"purity {np.mean([s for _, s in purity(X, gp.landmarks_, labels)]):.3f}"
    return X, score


def faces(name):
    X, subjects = face_pixels(name)
    train, test = halves(subjects)

    def score(width):
        gp = GPLandmarks(n_landmarks=40, n_steps=1000, kernel_width=width,
                         space="nonnegative", random_state=0).fit(X[train])
        accuracy = feature_accuracy(gp.landmarks_, gp.kernel_width_, (X[train], subjects[train]),
                                    (X[test], subjects[test]), max_iter=2000)
        return f"accuracy {accuracy:.3f}"
    return X, score


def mnist(n_seeds):
    train, _, test = mnist_splits(50000)

    def score(width):
        scores = []
        for seed in range(n_seeds):
            gp = GPLandmarks(n_landmarks=100, kernel_width=width, space="nonnegative", block_size=1,
                             random_state=seed).fit(train[0])
            scores.append(feature_accuracy(gp.landmarks_, gp.kernel_width_, train, test))
        return f"accuracy {np.mean(scores):.4f} ({', '.join(f'{s:.4f}' for s in scores)})"
    return train[0], score


def main():
    parser = argument_parser(__doc__, size="quick", seed=False, out=False)
    parser.add_argument("--mnist-seeds", type=int, default=0,
                        help="also MNIST, over this many seeds")
    args = parse(parser)
    sets = [("two circles", circles)]
    if not args.quick:  # --quick: the circles alone, a smoke run
        sets += [("20 Newsgroups", newsgroups), ("Yale B faces", lambda: faces("yaleB")),
                 ("Olivetti faces", lambda: faces("olivetti"))]
    if args.mnist_seeds:
        sets.append(("MNIST 50,000", lambda: mnist(args.mnist_seeds)))
    print("| data | ratio | rule | width | quality | seconds |")
    print("|---|---|---|---|---|---|")
    for name, make in sets:
        X, score = make()
        done = {}
        rules = widths(X)
        ratio = rules["variance"] / rules["local"]
        for rule, width in rules.items():
            if width in done:
                result, seconds = done[width][0], f"same width as {done[width][1]}"
            else:
                seconds, result = timed(score, width)
                seconds = f"{seconds:.1f}"
                done[width] = (result, rule)
            print(f"| {name} | {ratio:.2f} | {rule} | {width:.4g} | {result} | {seconds} |",
                  flush=True)
    print(machine_line())


if __name__ == "__main__":
    main()
