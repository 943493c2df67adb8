"""Which ``block_size`` should ``GPLandmarks`` use by default? One table (issue 23).

For each data set and number of landmarks, three seeds of

- ``block_size=1, n_steps=1000``: the paper's sequential algorithm;
- ``block_size=min(50, n_landmarks), n_steps=100``: one block of 50 (or of all the
  landmarks, below 50) with 100 steps per block;
- the default (``block_size="auto"``, ``n_steps=None``): what the installed
  package does (``block_size_`` printed),

with the mean seconds, the mean quality figure and the figure per seed:

- two circles (1,500 points, 12 landmarks): the largest landmark-to-data distance
  over the median nearest-neighbour spacing (lower is better);
- 20 Newsgroups (all 11,314 training posts as square-root word frequencies,
  ``space="sphere"``, 12, 25 and 50 landmarks): the mean purity of each landmark's
  100 nearest posts (``gp_newsgroups_topics.py``);
- faces (Yale B and Olivetti, pixels / 255, ``space="nonnegative"``, 40 landmarks,
  every other image of each subject for training): test accuracy of L2 logistic
  regression (C = 10) on the Gaussian features.

MNIST (100 landmarks, three seeds, against k-means) is ``gp_mnist_speed.py
--blocks --block-size 50 --block-steps 100 --sequential``.

Usage::

    python benchmarks/gp_block_default.py [--sets circles newsgroups faces] [--quick]
"""

import numpy as np
from _common import (
    argument_parser,
    face_pixels,
    feature_accuracy,
    halves,
    machine_line,
    newsgroups_sqrt_frequencies,
    parse,
    purity,
    timed,
)

from landmarking import GPLandmarks
from landmarking.datasets import make_concentric_circles
from landmarking.evaluation import landmark_to_data_distances, nearest_neighbor_spacing

SEEDS = (0, 1, 2)


def circles():
    X, labels = make_concentric_circles(1500, random_state=0)
    spacing = nearest_neighbor_spacing(X)

    def score(gp):
        return (landmark_to_data_distances(gp.landmarks_, X)[0] / spacing).max()
    return [("two circles", "max dist/NN (lower is better)", X, 12, {}, score)]


def newsgroups():
    X, labels = newsgroups_sqrt_frequencies()

    def score(gp):
        return np.mean([s for _, s in purity(X, gp.landmarks_, labels)])
    return [("20 Newsgroups", "purity", X, n, {"space": "sphere"}, score) for n in (12, 25, 50)]


def faces():
    out = []
    for name in ("yaleB", "olivetti"):
        X, subjects = face_pixels(name)
        train, test = halves(subjects)

        def score(gp, X=X, subjects=subjects, train=train, test=test):
            return feature_accuracy(gp.landmarks_, gp.kernel_width_, (X[train], subjects[train]),
                                    (X[test], subjects[test]), max_iter=2000)
        out.append((name, "test accuracy", X[train], 40, {"space": "nonnegative"}, score))
    return out


SETS = {"circles": circles, "newsgroups": newsgroups, "faces": faces}


def compare(label, measure, X, n_landmarks, params, score, seeds=SEEDS):
    rows = [("sequential (1, 1000 steps)", dict(block_size=1, n_steps=1000)),
            (f"blocks of {min(50, n_landmarks)}, 100 steps",
             dict(block_size=min(50, n_landmarks), n_steps=100)),
            ("default (auto)", {})]
    for name, settings in rows:
        seconds, scores, resolved = [], [], None
        for seed in seeds:
            gp = GPLandmarks(n_landmarks=n_landmarks, random_state=seed, **params, **settings)
            seconds.append(timed(gp.fit, X)[0])
            scores.append(score(gp))
            resolved = gp.block_size_
        print(f"| {label} | {n_landmarks} | {name} | {resolved} | {np.mean(seconds):.2f} | "
              f"{measure} {np.mean(scores):.4f} | {', '.join(f'{v:.3f}' for v in scores)} |",
              flush=True)


def main():
    parser = argument_parser(__doc__, size="quick", seed=False, out=False)
    parser.add_argument("--sets", nargs="+", choices=list(SETS), default=list(SETS))
    args = parse(parser)
    if args.quick:  # a smoke run: the circles, one seed
        args.sets = ["circles"]
    seeds = SEEDS[:1] if args.quick else SEEDS
    print(f"| data | landmarks | fit | block_size_ | seconds (mean) | quality (mean of "
          f"{len(seeds)} seeds) | per seed |")
    print("|---|---|---|---|---|---|---|")
    for name in args.sets:
        for case in SETS[name]():
            compare(*case, seeds=seeds)
    print(machine_line())


if __name__ == "__main__":
    main()
