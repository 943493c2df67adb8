"""GP landmarks of face images (Liang & Paisley 2015, Fig. 2 and Fig. 3's insets).

1. Yale faces (165 images, 32 x 32, pixels / 255, space "nonnegative"): the first
   8 landmarks as an image grid. The paper finds "various illuminations of an
   average face that doesn't correspond to any single person".
2. Olivetti faces (400 images, 64 x 64): the first 8 landmarks, each followed by
   its 5 nearest faces; a table gives each landmark's distance to the nearest
   face (over the median nearest-neighbour spacing of the faces) and the subjects
   of its 5 nearest faces.

3. With ``--blocks B [B ...]`` instead: blocks against the sequential fit (issue
   23) on Yale B (2,414 images, 38 subjects) and Olivetti (400, 40): 40 landmarks,
   ``--block-steps`` steps per block (1000 for ``block_size=1``), the test accuracy
   of an L2 logistic regression (C = 10) on the Gaussian features, every other
   image of each subject for training, over ``--seeds``.

Usage::

    python benchmarks/gp_faces.py          # quick: 200 steps per landmark
    python benchmarks/gp_faces.py --full   # the paper's 1000 steps
    python benchmarks/gp_faces.py --blocks 1 10 --block-steps 300 --seeds 0 1 2
"""

import numpy as np
from _common import (
    argument_parser,
    face_pixels,
    feature_accuracy,
    halves,
    kernel_width_argument,
    parse,
    print_table,
    timed,
)

from landmarking import GPLandmarks
from landmarking.evaluation import nearest_distances, nearest_neighbor_spacing
from landmarking.plotting import plot_image_grid

N_LANDMARKS = 8
N_NEAREST = 5


def _fit(X, args):
    gp = GPLandmarks(n_landmarks=N_LANDMARKS, n_steps=1000 if args.full else 200,
                     batch_size=1000, kernel_width=args.kernel_width, space="nonnegative",
                     random_state=args.seed)
    return gp, timed(gp.fit, X)[0]


def _nearest(X, landmarks, k):
    """Indices of the k nearest rows of X to each landmark (X is small here)."""
    d2 = ((landmarks[:, None, :] - X[None, :, :]) ** 2).sum(axis=-1)
    return np.argsort(d2, axis=1, kind="stable")[:, :k]


def run(args):
    tag = "full" if args.full else "quick"
    X, yale_subject = face_pixels("yale")
    gp, secs = _fit(X, args)
    spacing = nearest_neighbor_spacing(X)
    dist, idx = nearest_distances(gp.landmarks_, X)
    print(f"Yale: {len(X)} faces 32x32, eta = {gp.kernel_width_:.4g} "
          f"({args.kernel_width}), {gp.n_steps} steps, {secs:.1f} s")
    print_table(["landmark", "objective", "to nearest face / spacing", "nearest subject"],
                [[k + 1, float(gp.objective_[k]), float(dist[k] / spacing),
                  int(yale_subject[idx[k]])] for k in range(N_LANDMARKS)], floatfmt="{:.3f}")
    png = args.out / f"gp_faces_yale_{tag}.png"
    plot_image_grid(np.clip(gp.landmarks_, 0, None), (32, 32), n_cols=N_LANDMARKS,
                    title="Yale faces: first 8 GP landmarks", path=png)
    print(f"wrote {png}\n")

    X, subject = face_pixels("olivetti")
    gp, secs = _fit(X, args)
    spacing = nearest_neighbor_spacing(X)
    dist, _ = nearest_distances(gp.landmarks_, X)
    near = _nearest(X, gp.landmarks_, N_NEAREST)
    print(f"Olivetti: {len(X)} faces 64x64, eta = {gp.kernel_width_:.4g} "
          f"({args.kernel_width}), {gp.n_steps} steps, {secs:.1f} s")
    rows = []
    for k in range(N_LANDMARKS):
        subjects = subject[near[k]]
        rows.append([k + 1, float(gp.objective_[k]), float(dist[k] / spacing),
                     " ".join(str(s) for s in subjects),
                     len(np.unique(subjects))])
    print_table(["landmark", "objective", "to nearest face / spacing",
                 f"subjects of {N_NEAREST} nearest", "distinct"], rows, floatfmt="{:.3f}")
    tiles, titles = [], []
    for k in range(N_LANDMARKS):
        tiles.append(np.clip(gp.landmarks_[k], 0, None))
        titles.append(f"landmark {k + 1}")
        for i in near[k]:
            tiles.append(X[i])
            titles.append(f"s{subject[i]}")
    png = args.out / f"gp_faces_olivetti_{tag}.png"
    plot_image_grid(np.array(tiles), (64, 64), n_cols=N_NEAREST + 1, titles=titles,
                    title="Olivetti: GP landmarks (left) and their 5 nearest faces", path=png)
    print(f"wrote {png}")
    return gp


def blocks(args):
    """Block sizes against the sequential fit on face images (see the docstring)."""
    print("| faces | block_size | steps per block | seconds (mean) | test accuracy (mean) "
          "| per seed |")
    print("|---|---|---|---|---|---|")
    for name in ("yaleB", "olivetti"):
        X, subjects = face_pixels(name)
        train, test = halves(subjects)
        for block_size in args.blocks:
            n_steps = 1000 if block_size == 1 else args.block_steps
            scores, seconds = [], []
            for seed in args.seeds:
                gp = GPLandmarks(n_landmarks=40, n_steps=n_steps, block_size=block_size,
                                 space="nonnegative", random_state=seed)
                seconds.append(timed(gp.fit, X[train])[0])
                scores.append(feature_accuracy(gp.landmarks_, gp.kernel_width_,
                                               (X[train], subjects[train]),
                                               (X[test], subjects[test]), max_iter=2000))
            print(f"| {name} | {block_size} | {n_steps} | {np.mean(seconds):.2f} | "
                  f"{np.mean(scores):.4f} | {', '.join(f'{v:.3f}' for v in scores)} |",
                  flush=True)


def main(argv=None):
    parser = argument_parser(__doc__, seeds=(0, 1, 2))
    kernel_width_argument(parser)
    parser.add_argument("--blocks", type=int, nargs="+",
                        help="compare these block sizes instead (issue 23)")
    parser.add_argument("--block-steps", type=int, default=300)
    args = parse(parser, argv)
    return blocks(args) if args.blocks else run(args)


if __name__ == "__main__":
    main()
