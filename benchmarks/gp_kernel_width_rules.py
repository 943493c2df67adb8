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
- MNIST (``--mnist-seeds N``): test accuracy over N seeds (100 landmarks, lambda
  0.1, as ``gp_kernel_width.py --mnist-seeds``).

The rules: "local" is the median squared distance to the 20th neighbour (the
"auto" before issue 23), "variance" the paper's sum of per-dimension variances,
and "auto" what the installed package resolves (the variance rule unless it is
more than ``AUTO_MANIFOLD_RATIO`` times the local one); "ratio" is variance /
local. A rule whose width equals one already run on the same data gives the same
landmarks and is not fitted again.

Usage::

    python benchmarks/gp_kernel_width_rules.py [--mnist-seeds 3]
"""

import argparse
import time

import numpy as np
from _machine import full_speed_blas, machine_line
from gp_newsgroups_topics import newsgroups_sqrt_frequencies, purity

from landmarking import GPLandmarks
from landmarking.datasets import make_concentric_circles
from landmarking.datasets.real import load_faces
from landmarking.evaluation import landmark_to_data_distances, nearest_neighbor_spacing
from landmarking.kernels import (
    gaussian_features,
    local_kernel_width,
    resolve_kernel_width,
    variance_kernel_width,
)


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
    from sklearn.linear_model import LogisticRegression

    images, subjects = load_faces(name)
    X = images.reshape(len(images), -1).astype(np.float64) / 255.0
    order = np.argsort(subjects, kind="stable")
    rank = np.empty(len(X), dtype=np.int64)
    for s in np.unique(subjects):
        members = order[subjects[order] == s]
        rank[members] = np.arange(len(members))
    train, test = rank % 2 == 0, rank % 2 == 1

    def score(width):
        gp = GPLandmarks(n_landmarks=40, n_steps=1000, kernel_width=width,
                         space="nonnegative", random_state=0).fit(X[train])
        F = gaussian_features(X, gp.landmarks_, gp.kernel_width_)
        model = LogisticRegression(C=10.0, max_iter=2000).fit(F[train], subjects[train])
        return f"accuracy {model.score(F[test], subjects[test]):.3f}"
    return X, score


def mnist(n_seeds):
    from sklearn.linear_model import LogisticRegression

    from landmarking.datasets import load_mnist

    X, y = load_mnist(split="train")
    X_test, y_test = load_mnist(split="test")
    X, y = X[:50000], y[:50000]

    def score(width):
        scores = []
        for seed in range(n_seeds):
            gp = GPLandmarks(n_landmarks=100, kernel_width=width, space="nonnegative", block_size=1,
                             random_state=seed).fit(X)
            F = [gaussian_features(A, gp.landmarks_.astype(A.dtype), gp.kernel_width_)
                 for A in (X, X_test)]
            model = LogisticRegression(C=10.0, max_iter=1000).fit(F[0], y)
            scores.append(model.score(F[1], y_test))
        return f"accuracy {np.mean(scores):.4f} ({', '.join(f'{s:.4f}' for s in scores)})"
    return X, score


def main():
    full_speed_blas()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mnist-seeds", type=int, default=0)
    args = parser.parse_args()
    print(machine_line(), flush=True)
    sets = [("two circles", circles), ("20 Newsgroups", newsgroups),
            ("Yale B faces", lambda: faces("yaleB")), ("Olivetti faces", lambda: faces("olivetti"))]
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
            start = time.perf_counter()
            if width in done:
                result, seconds = done[width][0], f"same width as {done[width][1]}"
            else:
                result = score(width)
                seconds = f"{time.perf_counter() - start:.1f}"
                done[width] = (result, rule)
            print(f"| {name} | {ratio:.2f} | {rule} | {width:.4g} | {result} | {seconds} |",
                  flush=True)
    print(machine_line())


if __name__ == "__main__":
    main()
