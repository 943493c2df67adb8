"""GP landmarks on a t-SNE map of faces, against random faces and k-means++ (Fig. 3).

The paper's Fig. 3 shows the first 20 GP landmarks of the PIE faces (11,554
images of 68 people, not in the data folder) on a t-SNE map of 1,000 of the
faces, with the five closest faces of some landmarks: the landmarks "explore the
space where the data resides" and "locally average" their nearest faces. Stood
in for here by the faces of ``../shared/data``:

- **olivetti** (``faces_olivetti_64x64.npz``: 400 images, 64 x 64, 40 subjects,
  10 each), all 400 on the map;
- **yaleB** (``faces_yaleB_32x32.npz``: 2,414 images, 32 x 32, 38 subjects under
  up to 64 illuminations, closer to PIE), a random 1,000 on the map (the paper's
  number).

Pixels / 255. The map is ``sklearn.manifold.TSNE`` (2-D, PCA start, seed 0) of
the map's faces; a landmark, which is not a face, is placed on it at the mean
map position of its 5 nearest map faces. Twenty landmarks of each method over
the seeds: GP (``GPLandmarks(n_landmarks=20, space="nonnegative")``, 1000 steps
per landmark, 200 in the quick run), 20 random faces (``RandomLandmarks``) and
k-means++ centres (``KMeansLandmarks(n_init=1)``, the k-means that the paper
compares with). Measured, mean +- standard error over seeds:

- **subjects**: distinct subjects among the landmarks' nearest faces (of 20);
- **regions**: the map cut into 20 regions by k-means of its positions (seed 0);
  how many the 20 landmarks fall in;
- **map gap**: mean distance of a map face to its nearest landmark position,
  over the median nearest-neighbour spacing of the map (lower: the landmarks
  cover the map more evenly);
- **averaging**: a landmark's distance to the mean of its 5 nearest faces over its
  distance to its nearest face (below 1: the landmark sits nearer the local average
  than any single face; random faces are themselves faces, so no ratio).

PNGs: the map with GP's first 20 landmarks numbered (seed 0), and each of them
beside the average of its 5 nearest faces and those faces.

Usage::

    python benchmarks/gp_faces_tsne.py          # quick: Olivetti, 200 steps, seeds 0 1
    python benchmarks/gp_faces_tsne.py --full   # Olivetti and Yale B, 1000 steps, 5 seeds
"""

import json

import numpy as np
from _common import argument_parser, face_pixels, parse, print_table, pyplot, save_figure, timed

from landmarking import GPLandmarks, KMeansLandmarks, RandomLandmarks
from landmarking.plotting import plot_image_grid

N_LANDMARKS = 20
N_NEAREST = 5
MAP_FACES = 1000
METHODS = ("GP", "random", "k-means++")
SHAPES = {"olivetti": (64, 64), "yaleB": (32, 32)}


def settings(full):
    """The paper's 1000 steps per landmark, both face sets and 5 seeds with
    ``full``; else Olivetti, 200 steps and two seeds (about a minute)."""
    if full:
        return dict(sets=("olivetti", "yaleB"), n_steps=1000, seeds=(0, 1, 2, 3, 4))
    return dict(sets=("olivetti",), n_steps=200, seeds=(0, 1))


def map_rows(n, seed=0):
    """The faces drawn on the map: all when at most MAP_FACES, else a random
    MAP_FACES of them (sorted)."""
    if n <= MAP_FACES:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, MAP_FACES, replace=False))


def tsne_map(X, seed=0):
    """2-D t-SNE positions of the rows of X (PCA start)."""
    from sklearn.manifold import TSNE

    return TSNE(n_components=2, init="pca", random_state=seed,
                perplexity=min(30.0, (len(X) - 1) / 3)).fit_transform(X)


def nearest_rows(X, landmarks, k):
    """Indices (n_landmarks, k) of the k nearest rows of X to each landmark."""
    from landmarking.kernels import squared_distances

    d2 = squared_distances(np.asarray(landmarks, np.float64), X)
    return np.argsort(d2, axis=1, kind="stable")[:, :k]


def fit_landmarks(method, X, seed, n_steps):
    """(landmarks (20, d), seconds) of one method on the faces X."""
    if method == "GP":
        model = GPLandmarks(n_landmarks=N_LANDMARKS, n_steps=n_steps, space="nonnegative",
                            random_state=seed)
    elif method == "random":
        model = RandomLandmarks(n_landmarks=N_LANDMARKS, random_state=seed)
    else:
        model = KMeansLandmarks(n_landmarks=N_LANDMARKS, n_init=1, random_state=seed)
    seconds, fitted = timed(model.fit, X)
    return fitted.landmarks_, seconds


def map_regions(positions, seed=0):
    """The region (0..19) of each map position: k-means of the map into 20 cells."""
    from sklearn.cluster import KMeans

    return KMeans(N_LANDMARKS, n_init=10, random_state=seed).fit(positions).labels_


def scores(landmarks, X_map, positions, subjects_map, regions, spacing):
    """The four measures of one set of landmarks (see the docstring)."""
    near = nearest_rows(X_map, landmarks, N_NEAREST)
    placed = positions[near].mean(axis=1)
    gap = np.sqrt(((positions[:, None, :] - placed[None]) ** 2).sum(-1)).min(axis=1)
    to_nearest = np.linalg.norm(landmarks - X_map[near[:, 0]], axis=1)
    to_average = np.linalg.norm(landmarks - X_map[near].mean(axis=1), axis=1)
    ok = to_nearest > 1e-9 * np.linalg.norm(X_map, axis=1).max()
    averaging = float(np.median(to_average[ok] / to_nearest[ok])) if ok.any() else float("nan")
    region_of = np.argmin(((placed[:, None, :] - _centres(positions, regions)[None]) ** 2)
                          .sum(-1), axis=1)
    return {"subjects": len(np.unique(subjects_map[near[:, 0]])),
            "regions": len(np.unique(region_of)),
            "map gap": float(gap.mean() / spacing),
            "averaging": averaging}, placed, near


def _centres(positions, regions):
    return np.array([positions[regions == r].mean(axis=0) for r in range(N_LANDMARKS)])


def mean_and_error(values):
    """Mean and standard error (sample s.d. / sqrt(n); 0 for one value); NaNs dropped."""
    values = np.asarray([v for v in values if np.isfinite(v)], dtype=float)
    if values.size == 0:
        return float("nan"), 0.0
    if values.size < 2:
        return float(values[0]), 0.0
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(values.size))


def draw_map(positions, subjects, placed, path, title):
    """The map (grey, one shade per subject) with the landmarks numbered in red."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 6))
    ax.scatter(positions[:, 0], positions[:, 1], c=subjects, cmap="tab20", s=6, alpha=0.35)
    ax.scatter(placed[:, 0], placed[:, 1], c="red", s=28, edgecolors="black", linewidths=0.5)
    for k, (x, y) in enumerate(placed):
        ax.annotate(str(k + 1), (x, y), xytext=(3, 3), textcoords="offset points",
                    color="darkred", fontsize=8, weight="bold")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=10)
    save_figure(fig, path)


def draw_averages(landmarks, X_map, near, shape, path, title):
    """Each landmark, the average of its nearest faces, then those faces."""
    tiles, titles = [], []
    for k, rows in enumerate(near):
        tiles += [np.clip(landmarks[k], 0, None), X_map[rows].mean(axis=0), *X_map[rows]]
        titles += [f"landmark {k + 1}", "average", *[""] * len(rows)]
    plot_image_grid(np.array(tiles), shape, n_cols=N_NEAREST + 2, titles=titles,
                    title=title, path=path)
    print(f"wrote {path}")


def run_set(name, cfg, out, tag):
    """{method: {measure: (mean, error)}} on one face set, and the per-seed rows."""
    X, subjects = face_pixels(name)
    rows = map_rows(len(X))
    X_map, subjects_map = X[rows], subjects[rows]
    seconds, positions = timed(tsne_map, X_map)
    from landmarking.evaluation import nearest_neighbor_spacing

    spacing = nearest_neighbor_spacing(positions)
    regions = map_regions(positions)
    print(f"\n{name}: {len(X)} faces, {len(np.unique(subjects))} subjects; t-SNE of "
          f"{len(rows)} in {seconds:.1f} s; map spacing {spacing:.3g}", flush=True)
    per_seed = {m: [] for m in METHODS}
    for seed in cfg["seeds"]:
        for method in METHODS:
            landmarks, fit_seconds = fit_landmarks(method, X, seed, cfg["n_steps"])
            measured, placed, near = scores(landmarks, X_map, positions, subjects_map,
                                            regions, spacing)
            measured["seconds"] = fit_seconds
            per_seed[method].append(measured)
            print(f"  seed {seed} {method:<9} " + ", ".join(
                f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                for k, v in measured.items()), flush=True)
            if seed == cfg["seeds"][0] and method == "GP":
                draw_map(positions, subjects_map, placed, out / f"gp_faces_tsne_{name}_{tag}.png",
                         f"{name}: t-SNE of {len(rows)} faces, GP's first 20 landmarks "
                         f"(seed {seed})")
                draw_averages(landmarks, X_map, near, SHAPES[name],
                              out / f"gp_faces_tsne_{name}_{tag}_nearest.png",
                              f"{name}: GP landmark, average of its {N_NEAREST} nearest "
                              "faces, the faces")
    stats = {m: {k: mean_and_error([r[k] for r in rs]) for k in rs[0]}
             for m, rs in per_seed.items()}
    header = ["method", "subjects (of 20)", "regions (of 20)", "map gap / spacing",
              "averaging ratio", "fit seconds"]
    print(f"\n{name}: mean +- standard error over seeds {', '.join(map(str, cfg['seeds']))}\n")
    print_table(header, [[m, *(f"{s[k][0]:.2f} +- {s[k][1]:.2f}" for k in
                              ("subjects", "regions", "map gap", "averaging", "seconds"))]
                         for m, s in stats.items()])
    return {"stats": stats, "per_seed": per_seed}


def main(argv=None):
    parser = argument_parser(__doc__, seed=False)
    parser.add_argument("--sets", nargs="+", choices=list(SHAPES),
                        help="face sets (default: olivetti quick, both with --full)")
    parser.add_argument("--seeds", type=int, nargs="+", help="default 0 1 quick, 0-4 full")
    parser.add_argument("--steps", type=int, help="GP steps per landmark (default 200/1000)")
    args = parse(parser, argv)
    cfg = settings(args.full)
    for key, value in (("sets", args.sets), ("seeds", args.seeds), ("n_steps", args.steps)):
        if value:
            cfg[key] = tuple(value) if isinstance(value, list) else value
    tag = "full" if args.full else "quick"
    results = {name: run_set(name, cfg, args.out, tag) for name in cfg["sets"]}
    path = args.out / f"gp_faces_tsne_{tag}.json"
    path.write_text(json.dumps(results, indent=1))
    print(f"wrote {path}")
    return results


if __name__ == "__main__":
    main()
