"""Images reduced to one dimension (Gashler et al. 2011, Figs. 13 and 14, stood in for).

The paper reduced frames of a face turning while smiling (Fig. 13) and 11 images
of a hand opening (Fig. 14) to a single dimension and showed the images in that
order; the data are not public and no accuracy is given ("the ideal results with
this problem are not known"). Two public stand-ins, read through
``LANDMARKING_DATA``:

- **COIL-20** (the Fig. 13 stand-in, a pose sequence with a known pose): the 72
  images (32 x 32) of one object on a turntable, 5 degrees apart. Two parts:
  *circle*, all 72 poses, a *closed* 1-D manifold that a 1-D axis can at best cut
  once and lay flat; and *arc*, poses 0-35 (an open half turn, as the paper's head
  turning one way). Scores of the 1-D order: the *pose-neighbour recall* (share of
  the pairs of consecutive poses that end next to each other on the axis; a circle
  cut once keeps 71/72 = 0.986, an arc in order 1) and the *rank correlation*
  (|Spearman rho| between the axis and the pose; for the circle the largest over
  the pose read from every cut of it; 1 for a perfect order), beside the same
  scores of random orders (200 per object).
- **Olivetti** (the Fig. 14 stand-in, a few images without a label, as the hand):
  the 10 faces (64 x 64) of one subject. No pose is known, so the score is the
  smoothness of the order: the mean pixel distance between consecutive faces on
  the axis, over that of the shortest path through the 10 faces (exact, 1 is the
  smoothest order there is), beside the same ratio for random orders.

Every method gets the same k and t = 1 (COIL k = 6, Olivetti k = 4): Manifold
Sculpting from the paper's start (``preprocess="pca"``) and from LTSA (the library's
default), scikit-learn's Isomap, LLE, Hessian LLE and LTSA. Printed: the scores per
object/subject, their medians per method over the fits with a finite embedding
(``scored``: how many), the seconds; written to ``--out``:
``sculpting_one_dimension.png``, the images of the first object and subject in each
method's order (as the paper's figures show them).

Quick run (default): COIL objects 0-2, Olivetti subjects 0-4. ``--full``: all 20
objects and all 40 subjects.

Usage::

    python benchmarks/sculpting_one_dimension.py [--full] [--objects 0 5] [--subjects 3]
"""

import numpy as np
from _common import (
    argument_parser,
    face_pixels,
    machine_line,
    parse,
    print_table,
    pyplot,
    save_figure,
)
from _sculpting_methods import (
    METHODS,
    circular_rank_correlation,
    embed_all,
    path_length,
    pose_neighbour_recall,
    random_path_length,
    rank_correlation,
    shortest_path_length,
)

from landmarking.datasets import load_coil20

COIL_K, FACES_K = 6, 4
N_POSES = 72
#: The two COIL parts: the whole turn (a closed curve) and its first half (open).
PARTS = {"circle": N_POSES, "arc": N_POSES // 2}


def coil(objects, seed=0):
    """{(part, method): [(recall, correlation, seconds), ...]} over ``objects`` for
    the two parts ("circle": all 72 poses; "arc": poses 0-35, an open half turn),
    {part: [(recall, correlation), ...]} of random orders, and the first object's
    images and embeddings per part."""
    images, target, pose = load_coil20()
    rng = np.random.default_rng(seed)
    scores, random_scores, shown = {}, {part: [] for part in PARTS}, {}
    for obj in objects:
        for part, n_poses in PARTS.items():
            rows = np.flatnonzero((target == obj) & (pose < n_poses))
            X = images[rows].reshape(len(rows), -1).astype(np.float64)
            score = _circle_scores if part == "circle" else _arc_scores
            random_scores[part].append(np.mean(
                [score(rng.permutation(len(rows)), pose[rows]) for _ in range(200)], axis=0))
            found = embed_all(X, COIL_K, 1, seed=seed)
            for name, (secs, Y) in found.items():
                values = (np.nan, np.nan, np.nan) if secs is None else (
                    *score(Y[:, 0], pose[rows]), secs)
                scores.setdefault((part, name), []).append(values)
            shown.setdefault(part, (images[rows], found))
        print(f"done: COIL object {obj}", flush=True)
    return scores, random_scores, shown


def _circle_scores(y, pose):
    return (pose_neighbour_recall(y, pose, N_POSES),
            circular_rank_correlation(y, pose, N_POSES))


def _arc_scores(y, pose):
    # No wrap-around: pose 35 and pose 0 are half a turn apart here.
    return pose_neighbour_recall(y, pose, None), rank_correlation(y, pose)


def faces(subjects, seed=0):
    """{method: [(path ratio, seconds), ...]} over ``subjects``, the random orders'
    ratios, and the first subject's images and embeddings."""
    X_all, who = face_pixels("olivetti")
    scores = {m: [] for m in METHODS}
    random_ratio = []
    shown = None
    for s in subjects:
        rows = np.flatnonzero(who == s)
        X = X_all[rows]
        shortest = shortest_path_length(X)
        random_ratio.append(random_path_length(X, seed=seed) / shortest)
        found = embed_all(X, FACES_K, 1, seed=seed)
        for name, (secs, Y) in found.items():
            if secs is None:
                scores[name].append((np.nan, np.nan))
                continue
            order = np.argsort(Y[:, 0], kind="stable")
            scores[name].append((path_length(X, order) / shortest, secs))
        if shown is None:
            shown = (X.reshape(len(rows), 64, 64), found)
        print(f"done: Olivetti subject {s}", flush=True)
    return scores, random_ratio, shown


def _median(values):
    values = np.asarray(values, dtype=float)
    return float(np.nanmedian(values)) if np.isfinite(values).any() else float("nan")


def _scored(values):
    """'scored/all': fits with a finite embedding (the others are left out of the
    medians; ``embed_all`` says why)."""
    values = np.asarray(values, dtype=float)
    return f"{int(np.isfinite(values).sum())}/{len(values)}"


def _range(values):
    values = np.asarray(values, dtype=float)
    if not np.isfinite(values).any():
        return "-"
    return f"{np.nanmin(values):.3f}-{np.nanmax(values):.3f}"


def run(objects, subjects, out, seed=0):
    coil_scores, coil_random, coil_shown = coil(objects, seed) if objects else ({}, {}, {})
    face_scores, random_ratio, face_shown = (faces(subjects, seed) if subjects
                                             else ({}, [], None))
    for part, n_poses in PARTS.items() if objects else ():
        what = ("the whole turn, a closed curve; correlation over the best cut"
                if part == "circle" else f"poses 0-{n_poses - 1}, an open half turn")
        print(f"\nCOIL-20 {part}: objects {', '.join(map(str, objects))}, {n_poses} poses "
              f"each ({what}), k = {COIL_K}, t = 1; medians (min-max) over objects")
        rand = np.array(coil_random[part])
        rows = [("random order", _median(rand[:, 0]), _range(rand[:, 0]),
                 _median(rand[:, 1]), _range(rand[:, 1]), "", "")]
        for m in METHODS:
            a = np.array(coil_scores[(part, m)], dtype=float)
            rows.append((m, _median(a[:, 0]), _range(a[:, 0]), _median(a[:, 1]),
                         _range(a[:, 1]), _median(a[:, 2]), _scored(a[:, 0])))
        print_table(["method", "pose-neighbour recall", "range", "rank correlation",
                     "range", "seconds", "scored"], rows, floatfmt="{:.3f}")
        print("per object (recall / correlation):")
        for m in METHODS:
            print(f"  {m:10s} " + "  ".join(f"{r:.3f}/{c:.3f}"
                                            for r, c, _ in coil_scores[(part, m)]))
    if subjects:
        print(f"\nOlivetti, subjects {', '.join(map(str, subjects))} (10 faces each), "
              f"k = {FACES_K}, t = 1: mean distance between consecutive faces over the "
              "shortest path's (1 = smoothest); medians (min-max) over subjects")
        rows = [("random order", _median(random_ratio), _range(random_ratio), "", "")]
        for m in METHODS:
            a = np.array(face_scores[m], dtype=float)
            rows.append((m, _median(a[:, 0]), _range(a[:, 0]), _median(a[:, 1]),
                         _scored(a[:, 0])))
        print_table(["method", "path / shortest", "range", "seconds", "scored"], rows,
                    floatfmt="{:.3f}")
        print("per subject:")
        for m in METHODS:
            print(f"  {m:10s} " + "  ".join(f"{r:.3f}" for r, _ in face_scores[m]))
    print(machine_line())
    _plot(coil_shown, face_shown, out / "sculpting_one_dimension.png")
    return coil_scores, face_scores, random_ratio


def _strip(ax, images, Y, step=1):
    """The images side by side in the order of Y (every ``step``-th)."""
    order = np.argsort(Y[:, 0], kind="stable")[::step]
    ax.imshow(np.hstack([images[i] for i in order]), cmap="gray")
    ax.set_xticks([])
    ax.set_yticks([])


def _plot(coil_shown, face_shown, path):
    plt = pyplot()
    parts = [(f"COIL-20, first object, {part} (every {('', '', '2nd', '3rd')[step]} image)",
              coil_shown[part], step)
             for part, step in (("circle", 3), ("arc", 2)) if part in coil_shown]
    if face_shown is not None:
        parts.append(("Olivetti, first subject", face_shown, 1))
    if not parts:
        return
    fig, axes = plt.subplots(len(METHODS), len(parts), squeeze=False,
                             figsize=(6 * len(parts), 0.7 * len(METHODS) + 0.6))
    for c, (title, (images, found), step) in enumerate(parts):
        for r, name in enumerate(METHODS):
            ax = axes[r, c]
            secs, Y = found[name]
            if secs is None:
                ax.set_xticks([])
                ax.set_yticks([])
                ax.text(0.5, 0.5, Y, ha="center", va="center", transform=ax.transAxes,
                        fontsize=8)
            else:
                _strip(ax, images, Y, step)
            ax.set_ylabel(name, rotation=0, ha="right", va="center", fontsize=8)
        axes[0, c].set_title(f"{title}, in each method's 1-D order", fontsize=9)
    save_figure(fig, path, dpi=80)


def main(argv=None):
    parser = argument_parser(__doc__)
    parser.add_argument("--objects", type=int, nargs="*",
                        help="COIL-20 objects (0 1 2; all 20 with --full); none: skip")
    parser.add_argument("--subjects", type=int, nargs="*",
                        help="Olivetti subjects (0-4; all 40 with --full); none: skip")
    args = parse(parser, argv)
    objects = args.objects if args.objects is not None else (
        list(range(20)) if args.full else [0, 1, 2])
    subjects = args.subjects if args.subjects is not None else (
        list(range(40)) if args.full else list(range(5)))
    run(objects, subjects, args.out, seed=args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
