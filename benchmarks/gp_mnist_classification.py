"""MNIST classification with landmark features (Liang & Paisley 2015, Fig. 5).

Landmarks are learned on the training images (pixels / 255) by each method; every
image becomes its vector of Gaussian landmark features exp(-||x - t_k||^2 / eta)
(one eta for all methods, so only the landmarks differ); an L2 logistic regression
is trained on the training features with lambda chosen from the paper's grid
(1e-3 ... 1e3, C = 1 / lambda) on a validation set and scored on the test set.

Methods: GP (``GPLandmarks``), Act5K (GP active learning on a 5,000-image
subsample), random images, k-means++ centroids, and RPCholesky. The sequential
methods are fitted once at the largest size and their first k landmarks used for
each k; k-means is refitted for every k.

Also printed: fit time and geometry at the size nearest 100 (each landmark's
distance to the nearest training image and the mean distance of an image to its
nearest landmark, both over the median nearest-neighbour spacing of the images).

With ``--seeds S [S ...]`` the whole run is repeated once per seed (the landmarks,
the subsample of Act5K and the kernel width's sample change; the data split does
not) and a last table gives each method's mean test accuracy with its standard
error (standard deviation over the seeds / sqrt(number of seeds)) and the mean
difference of each method from random with its standard error over the paired
seeds. ``--combine`` prints that table from the per-seed JSON files of runs made
apart (for example the seeds split between two processes, one per core).

Usage::

    python benchmarks/gp_mnist_classification.py          # quick (2,000 images, 10 and 50)
    python benchmarks/gp_mnist_classification.py --full   # 50k/10k/10k, 10..200 landmarks
    python benchmarks/gp_mnist_classification.py --methods random Act5K --seeds 0 1 2 3 4
    python benchmarks/gp_mnist_classification.py --n-train 10000 --seeds 0 1 2 3 4 \
        --methods GP Act5K random --act-subsample 1000   # between the two scales
    python benchmarks/gp_mnist_classification.py --methods random Act5K --seeds 0 1 2 3 4 \
        --act-subsample 200        # Act5K among a random 10% of the quick run's images
    python benchmarks/gp_mnist_classification.py --full --methods GP Act5K random \
        --combine out/gp_mnist_classification_full_seed[0-9].json --out out
"""

import json
import re
import time
from pathlib import Path

import numpy as np
from _common import (
    argument_parser,
    kernel_width_argument,
    mnist_splits,
    parse,
    print_table,
    pyplot,
)

from landmarking import (
    ActiveLearningLandmarks,
    GPLandmarks,
    KMeansLandmarks,
    RandomLandmarks,
    RPCholeskyLandmarks,
)
from landmarking.evaluation import landmark_geometry, select_by_validation
from landmarking.kernels import resolve_kernel_width

METHODS = ("GP", "Act5K", "random", "k-means++", "RPCholesky")
# Cheap methods first, so that their results print while GP (the slowest) runs.
RUN_ORDER = ("random", "Act5K", "RPCholesky", "k-means++", "GP")
SEQUENTIAL = ("GP", "Act5K", "random", "RPCholesky")


def _settings(full):
    if full:
        return dict(n_train=50000, n_val=10000, n_test=10000,
                    sizes=(10, 50, 60, 70, 80, 90, 100, 200), n_steps=1000, batch_size=1000)
    return dict(n_train=2000, n_val=1000, n_test=1000, sizes=(10, 50),
                n_steps=50, batch_size=500)


def _make(method, n, width, cfg, seed, verbose):
    if method == "GP":
        return GPLandmarks(n_landmarks=n, n_steps=cfg["n_steps"], batch_size=cfg["batch_size"],
                           block_size=1,
                           kernel_width=width, space="euclidean", random_state=seed,
                           verbose=verbose)
    if method == "Act5K":
        return ActiveLearningLandmarks(n_landmarks=n, subsample=cfg["act_subsample"],
                                       kernel_width=width, random_state=seed)
    if method == "random":
        return RandomLandmarks(n_landmarks=n, kernel_width=width, random_state=seed)
    if method == "RPCholesky":
        return RPCholeskyLandmarks(n_landmarks=n, kernel_width=width, random_state=seed)
    return KMeansLandmarks(n_landmarks=n, kernel_width=width, n_init=1, random_state=seed)


def run(args):
    cfg = _settings(args.full)
    if getattr(args, "n_train", None):
        # A middle scale: n training images, validation and test a fifth and a half
        # of it (at most the 10,000 each of the paper), the full run's GP steps.
        cfg.update(n_train=args.n_train, n_val=min(10000, args.n_train // 5),
                   n_test=min(10000, args.n_train // 2), n_steps=1000, batch_size=1000)
    cfg["act_subsample"] = getattr(args, "act_subsample", 5000)
    n_tr, n_va = cfg["n_train"], cfg["n_val"]
    (X_tr, y_tr), (X_va, y_va), (X_te, y_te) = mnist_splits(n_tr, n_va, cfg["n_test"])
    rule = args.kernel_width
    width = resolve_kernel_width(X_tr, rule, random_state=args.seed)
    if args.sizes:
        cfg["sizes"] = tuple(sorted(args.sizes))
    sizes = cfg["sizes"]
    print(f"MNIST: {n_tr} train / {n_va} validation / {len(X_te)} test images; "
          f"kernel width {rule!r} -> eta = {width:.4g}; Act5K among "
          f"{min(cfg['act_subsample'], n_tr)} images; GP {cfg['n_steps']} steps, "
          f"batch {cfg['batch_size']}; sizes {list(sizes)}; logistic regression "
          f"max_iter {args.max_iter}", flush=True)

    accuracy = {m: {} for m in METHODS}
    lambdas = {m: {} for m in METHODS}
    seconds = {}
    geometry = {}
    geo_size = min(sizes, key=lambda k: abs(k - 100))
    for method in [m for m in RUN_ORDER if m in args.methods]:
        start = time.perf_counter()
        if method in SEQUENTIAL:
            model = _make(method, max(sizes), width, cfg, args.seed, args.verbose)
            if method == "GP" and args.gp_continue is not None:
                # The list is sequential: continuing an earlier run's landmarks (same
                # data, width and seed) gives what one longer run would give.
                model.fit(X_tr, previous_landmarks=np.load(args.gp_continue))
            else:
                model.fit(X_tr)
            seconds[method] = time.perf_counter() - start
            tag = ("full" if args.full else "quick") + getattr(args, "tag_suffix", "")
            np.save(args.out / f"gp_mnist_landmarks_{method}_{tag}.npy", model.landmarks_)
            F_all = [model.transform(S) for S in (X_tr, X_va, X_te)]
            per_size = {k: ([F[:, :k] for F in F_all], model.landmarks_[:k]) for k in sizes}
        else:
            per_size = {}
            for k in sizes:
                model = _make(method, k, width, cfg, args.seed, False).fit(X_tr)
                per_size[k] = ([model.transform(S) for S in (X_tr, X_va, X_te)], model.landmarks_)
            seconds[method] = time.perf_counter() - start
        for k in sizes:
            (F_tr, F_va, F_te), _ = per_size[k]
            res = select_by_validation(F_tr, y_tr, F_va, y_va, F_te, y_te,
                                       max_iter=args.max_iter)
            accuracy[method][k] = res.test_accuracy
            lambdas[method][k] = res.best_lambda
        g = landmark_geometry(X_tr, per_size[geo_size][1], random_state=args.seed)
        geometry[method] = g
        print(f"  {method:<11} fit {seconds[method]:7.1f} s; test accuracy "
              + ", ".join(f"{k}: {accuracy[method][k]:.4f}" for k in sizes), flush=True)

    methods = [m for m in METHODS if m in args.methods]
    print("\nTest accuracy (lambda chosen on the validation set)\n")
    print_table(["landmarks"] + methods,
                [[k] + [accuracy[m][k] for m in methods] for k in sizes])
    print(f"\nFit time and geometry at {geo_size} landmarks (distances / median "
          "nearest-neighbour spacing of the training images, "
          f"{geometry[methods[0]]['spacing']:.3f})\n")
    print_table(["method", "fit s", "landmark->data median", "landmark->data max",
                 "mean cover", "covering radius"],
                [[m, seconds[m], float(np.median(geometry[m]["to_data_relative"])),
                  float(np.max(geometry[m]["to_data_relative"])),
                  geometry[m]["mean_cover_relative"], geometry[m]["covering_radius_relative"]]
                 for m in methods], floatfmt="{:.3f}")
    print("\nChosen lambda per size: " + "; ".join(
        f"{m}: " + ",".join(f"{lambdas[m][k]:g}" for k in sizes) for m in methods))

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for m in methods:
        ax.plot(sizes, [accuracy[m][k] for k in sizes], marker="o", label=m)
    ax.set_xlabel("number of landmarks")
    ax.set_ylabel("test accuracy")
    ax.set_title(f"MNIST, landmark features ({'full' if args.full else 'quick'} run)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    tag = ("full" if args.full else "quick") + getattr(args, "tag_suffix", "")
    png = args.out / f"gp_mnist_classification_{tag}.png"
    fig.savefig(png, dpi=110)
    with open(args.out / f"gp_mnist_classification_{tag}.json", "w") as fh:
        json.dump({"settings": {**cfg, "kernel_width": width, "rule": str(rule)},
                   "accuracy": accuracy, "lambda": lambdas, "seconds": seconds}, fh, indent=1)
    print(f"\nwrote {png}")
    return accuracy


def mean_and_error(values):
    """Mean and standard error (sample standard deviation / sqrt(n); 0 for one value)."""
    values = np.asarray(values, dtype=float)
    if values.size < 2:
        return float(values.mean()), 0.0
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(values.size))


def run_seeds(args):
    """:func:`run` once per seed of ``args.seeds``; prints and returns the means and
    standard errors ({method: {size: (mean, error)}}, and differences from random)."""
    per_seed = {}
    for seed in args.seeds:
        print(f"\n===== seed {seed} =====", flush=True)
        args.seed, args.tag_suffix = seed, f"_seed{seed}"
        per_seed[seed] = run(args)
    return summarise_seeds(per_seed, args)


def combine_seed_runs(args):
    """The summary of :func:`run_seeds` from the per-seed JSON files of earlier
    runs (``gp_mnist_classification_<tag>_seed<S>.json``; e.g. seeds run in two
    processes at once), their seed read from the file name."""
    per_seed = {}
    for path in args.combine:
        found = re.search(r"_seed(\d+)\.json$", str(path))
        if found is None:
            raise SystemExit(f"--combine takes per-seed files (..._seed<S>.json), got {path}")
        seed = int(found.group(1))
        accuracy = json.loads(Path(path).read_text())["accuracy"]
        per_seed[seed] = {m: {int(k): v for k, v in by_size.items()}
                          for m, by_size in accuracy.items() if by_size}
    args.seeds = sorted(per_seed)
    args.methods = [m for m in args.methods if m in per_seed[args.seeds[0]]]
    return summarise_seeds({s: per_seed[s] for s in args.seeds}, args)


def summarise_seeds(per_seed, args):
    """Print, draw and write the means and standard errors of ``per_seed``
    ({seed: {method: {size: accuracy}}})."""
    methods = [m for m in METHODS if m in args.methods]
    sizes = sorted(next(iter(per_seed.values()))[methods[0]])
    stats = {m: {k: mean_and_error([per_seed[s][m][k] for s in args.seeds]) for k in sizes}
             for m in methods}
    diffs = {}
    if "random" in methods:
        diffs = {m: {k: mean_and_error([per_seed[s][m][k] - per_seed[s]["random"][k]
                                        for s in args.seeds]) for k in sizes}
                 for m in methods if m != "random"}
    n = len(args.seeds)
    print(f"\nTest accuracy over {n} seeds ({' '.join(map(str, args.seeds))}): "
          "mean +- standard error\n")
    print_table(["landmarks"] + methods,
                [[k] + [f"{stats[m][k][0]:.4f} +- {stats[m][k][1]:.4f}" for m in methods]
                 for k in sizes])
    if diffs:
        print("\nDifference from random on the same seed: mean +- standard error "
              "(positive: ahead of random)\n")
        print_table(["landmarks"] + list(diffs),
                    [[k] + [f"{diffs[m][k][0]:+.4f} +- {diffs[m][k][1]:.4f}" for m in diffs]
                     for k in sizes])
    if "GP" in methods and "Act5K" in methods:
        # The paper's own comparison (Fig. 5): GP landmarks against GP active learning.
        gap = {k: mean_and_error([per_seed[s]["GP"][k] - per_seed[s]["Act5K"][k]
                                  for s in args.seeds]) for k in sizes}
        ahead = {k: sum(per_seed[s]["GP"][k] > per_seed[s]["Act5K"][k] for s in args.seeds)
                 for k in sizes}
        print("\nGP minus Act5K on the same seed: mean +- standard error, and the seeds "
              "GP is ahead on\n")
        print_table(["landmarks", "GP - Act5K", "seeds GP ahead"],
                    [[k, f"{gap[k][0]:+.4f} +- {gap[k][1]:.4f}", f"{ahead[k]} of {n}"]
                     for k in sizes])
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for m in methods:
        ax.errorbar(sizes, [stats[m][k][0] for k in sizes], yerr=[stats[m][k][1] for k in sizes],
                    marker="o", capsize=3, label=m)
    ax.set_xlabel("number of landmarks")
    ax.set_ylabel("test accuracy (mean +- s.e.)")
    tag = "full" if args.full else "quick"
    ax.set_title(f"MNIST, landmark features, {n} seeds ({tag} run)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    png = args.out / f"gp_mnist_classification_{tag}_seeds.png"
    fig.savefig(png, dpi=110)
    with open(args.out / f"gp_mnist_classification_{tag}_seeds.json", "w") as fh:
        json.dump({"seeds": list(args.seeds), "per_seed": {str(s): a for s, a in per_seed.items()},
                   "mean_error": stats, "difference_from_random": diffs}, fh, indent=1)
    print(f"\nwrote {png}")
    return stats, diffs


def main(argv=None):
    parser = argument_parser(__doc__)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    kernel_width_argument(parser, default=GPLandmarks().kernel_width)
    parser.add_argument("--sizes", type=int, nargs="+",
                        help="numbers of landmarks (default: 10 50 quick; 10 50..100 200 full)")
    parser.add_argument("--max-iter", type=int, default=300,
                        help="L-BFGS iterations per logistic regression (default 300)")
    parser.add_argument("--gp-continue", metavar="FILE.npy",
                        help="GP landmarks of an earlier run (same settings) to continue")
    parser.add_argument("--act-subsample", type=int, default=5000,
                        help="images Act5K chooses among (default 5000, the paper's; on the "
                             "quick run's 2,000 images 200 keeps the paper's share, 10%%)")
    parser.add_argument("--seeds", type=int, nargs="+",
                        help="repeat the run once per seed and report means with standard "
                             "errors (instead of --seed)")
    parser.add_argument("--n-train", type=int,
                        help="training images (validation n/5 and test n/2, at most 10,000 "
                             "each; GP 1000 steps of batch 1000): a scale between quick and full")
    parser.add_argument("--verbose", action="store_true", help="progress bars")
    parser.add_argument("--combine", nargs="+", metavar="SEED.json",
                        help="summarise the per-seed JSON files of earlier --seeds runs "
                             "(run nothing)")
    args = parse(parser, argv)
    if args.combine:
        return combine_seed_runs(args)
    if args.seeds:
        return run_seeds(args)
    return run(args)


if __name__ == "__main__":
    main()
