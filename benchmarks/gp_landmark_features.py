"""Landmark features against k-means, NMF, Act5K and random (Liang & Paisley 2015, Fig. 6).

The paper's Fig. 6 tags songs of the Million Song Dataset, which is not available
here; this script runs the figure's protocol on two stand-ins from the data folder:

- **newsgroups**: 20 Newsgroups, "bydate" split (``20newsgroups_bydate.json.xz``).
  Each post, headers, quoted lines and signature stripped, becomes the square root
  of its normalised word histogram over the 1,545 most frequent training words
  after English stop words (a point on the unit sphere in the nonnegative orthant,
  as the paper's square-root VQ histograms); 20-way classification of the
  newsgroup, trained on the training posts, scored on the test posts.
- **gtzan**: the GTZAN clip features (``gtzan_features_30sec.npz``: 57 means and
  variances of librosa features per 30-second clip, 100 clips per genre), each
  column standardised on the training clips (points in R^57); 10-way
  classification of the genre on a stratified 70/30 split drawn per seed.

Every method learns its landmarks on the training rows; every row becomes its
vector of Gaussian landmark features exp(-||x - t_k||^2 / eta) (one eta per data
set and seed, the library's default rule, for every method), except NMF, whose
features are the factorisation's weights, as in the paper (KL-NMF of the
unnormalised histograms: word counts; for GTZAN, the standardised features shifted
by their training minimum, since NMF needs nonnegative data). An L2 logistic
regression is fitted on the training features, lambda chosen from 1e-3 ... 1e3
(C = 1 / lambda) by 5-fold stratified cross-validation on the training rows
(each fold's lambdas warm-started, :func:`score`), and scored on the test
rows. The straight line: the same logistic regression on the raw features.

Methods: GP (``GPLandmarks``, its defaults; ``space="sphere"`` for the
histograms), Act5K (``ActiveLearningLandmarks(subsample=5000)``), random data
points, k-means++ centres (``KMeansLandmarks(n_init=1)``) and KL-NMF weights
(``NMFLandmarks``). The sequential methods (GP, Act5K, random) are fitted once at
the largest size and their first k landmarks used; k-means and NMF are refitted
for every k. Each seed changes the landmarks, the folds and (GTZAN) the split;
printed are the mean test accuracy over the seeds and its standard error
(standard deviation / sqrt(seeds), the paper's error bars).

Usage::

    python benchmarks/gp_landmark_features.py          # quick: small subsets, 2 seeds
    python benchmarks/gp_landmark_features.py --full   # all rows, 25..200 landmarks, 5 seeds
    python benchmarks/gp_landmark_features.py --full --sets gtzan --sizes 25 50 --seeds 0 1 2
"""

import json
import time
import warnings

import numpy as np
from _common import argument_parser, parse, print_table, pyplot, save_figure

from landmarking import (
    ActiveLearningLandmarks,
    GPLandmarks,
    KMeansLandmarks,
    NMFLandmarks,
    RandomLandmarks,
)
from landmarking.kernels import resolve_kernel_width

METHODS = ("GP", "Act5K", "k-means++", "NMF", "random")
SEQUENTIAL = ("GP", "Act5K", "random")
SETS = ("newsgroups", "gtzan")
RAW = "raw features"


def settings(full):
    """Sizes of one run: the paper's (all rows, up to 200 landmarks, 5 seeds) with
    ``full``, else a smoke run of seconds (a few hundred rows, two seeds)."""
    if full:
        return dict(sizes=(25, 50, 100, 200), seeds=(0, 1, 2, 3, 4), n_train=None,
                    n_test=None, act_subsample=5000, max_iter=300, gp_steps=None)
    return dict(sizes=(5, 10), seeds=(0, 1), n_train=600, n_test=400, act_subsample=200,
                max_iter=200, gp_steps=100)


# ----------------------------------------------------------------- the data

def _counts(docs, vocabulary=None):
    """Word counts (CSR) of ``docs`` over ``vocabulary`` (None: the 1,545 most
    frequent words of ``docs`` after English stop words) and that vocabulary."""
    from sklearn.feature_extraction.text import CountVectorizer

    from landmarking.text import WORD_PATTERN

    vectorizer = CountVectorizer(stop_words="english", token_pattern=WORD_PATTERN,
                                 max_features=1545, vocabulary=vocabulary)
    counts = vectorizer.fit_transform(docs).tocsr().astype(np.float64)
    return counts, vectorizer.get_feature_names_out()


def _sqrt_rows(counts):
    """Square roots of the normalised rows of ``counts`` (dense float32; each row
    on the unit sphere)."""
    totals = np.asarray(counts.sum(axis=1)).ravel()
    return np.sqrt(counts.toarray() / totals[:, None]).astype(np.float32)


def _first(n, count, rng):
    """A random ``n`` of ``count`` indices in increasing order (all when n is None)."""
    if n is None or n >= count:
        return np.arange(count)
    return np.sort(rng.choice(count, n, replace=False))


def newsgroups(n_train=None, n_test=None, subsample_seed=0):
    """The 20 Newsgroups stand-in: {"train", "test"} of (X, counts, y), posts with
    no vocabulary word left out. ``n_train``/``n_test``: a random subset (the
    vocabulary is then that subset's)."""
    from landmarking.datasets import load_newsgroups
    from landmarking.text import clean_post

    rng = np.random.default_rng(subsample_seed)
    parts = {}
    vocabulary = None
    for subset, n in (("train", n_train), ("test", n_test)):
        docs, labels, _ = load_newsgroups(subset=subset)
        rows = _first(n, len(docs), rng)
        counts, vocabulary = _counts([clean_post(docs[i]) for i in rows], vocabulary)
        kept = np.flatnonzero(np.asarray(counts.sum(axis=1)).ravel() > 0)
        counts = counts[kept]
        parts[subset] = (_sqrt_rows(counts), counts, labels[rows][kept])
    return parts


def gtzan(seed, n_train=None, n_test=None):
    """The GTZAN stand-in for one seed: a stratified 70/30 split (subsets of
    ``n_train``/``n_test`` rows when given), columns standardised on the training
    clips; NMF's input is that shifted by the training minimum (test values below it
    clipped at 0)."""
    from sklearn.model_selection import train_test_split

    from landmarking.datasets import load_gtzan

    X, y, _ = load_gtzan()
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y,
                                              random_state=seed)
    rng = np.random.default_rng(seed)
    tr, te = _first(n_train, len(X_tr), rng), _first(n_test, len(X_te), rng)
    X_tr, y_tr, X_te, y_te = X_tr[tr], y_tr[tr], X_te[te], y_te[te]
    mean, std = X_tr.mean(axis=0), X_tr.std(axis=0)
    X_tr, X_te = (X_tr - mean) / std, (X_te - mean) / std
    low = X_tr.min(axis=0)
    return {"train": (X_tr, X_tr - low, y_tr),
            "test": (X_te, np.maximum(X_te - low, 0.0), y_te)}


# ----------------------------------------------------------------- the methods

def _make(method, n, eta, space, cfg, seed):
    if method == "GP":
        # n_steps None: the default (1000 steps of batch 1000); the quick run takes fewer.
        return GPLandmarks(n_landmarks=n, kernel_width=eta, space=space,
                           n_steps=cfg["gp_steps"], random_state=seed)
    if method == "Act5K":
        return ActiveLearningLandmarks(n_landmarks=n, subsample=cfg["act_subsample"],
                                       kernel_width=eta, random_state=seed)
    if method == "random":
        return RandomLandmarks(n_landmarks=n, kernel_width=eta, random_state=seed)
    if method == "k-means++":
        return KMeansLandmarks(n_landmarks=n, kernel_width=eta, n_init=1, random_state=seed)
    # 200 multiplicative updates (the default is 500): a fixed budget for every k.
    return NMFLandmarks(n_landmarks=n, max_iter=200, random_state=seed)


def features(method, data, eta, space, cfg, seed):
    """{k: (train features, test features)} of ``method`` for every size, and the
    seconds of its fits. NMF reads the nonnegative copy (counts / shifted)."""
    (X_tr, N_tr, _), (X_te, N_te, _) = data["train"], data["test"]
    train, test = (N_tr, N_te) if method == "NMF" else (X_tr, X_te)
    sizes = cfg["sizes"]
    start = time.perf_counter()
    out = {}
    if method in SEQUENTIAL:
        model = _make(method, max(sizes), eta, space, cfg, seed).fit(train)
        F_tr, F_te = model.transform(train), model.transform(test)
        out = {k: (F_tr[:, :k], F_te[:, :k]) for k in sizes}
    else:
        for k in sizes:
            with warnings.catch_warnings():
                # scikit-learn's NMF warns when it stops at max_iter (kept: a fixed budget).
                warnings.simplefilter("ignore", category=UserWarning)
                model = _make(method, k, eta, space, cfg, seed).fit(train)
            out[k] = (model.transform(train), model.transform(test))
    return out, time.perf_counter() - start


def score(F_tr, y_tr, F_te, y_te, cfg, seed):
    """Test accuracy of the logistic regression, lambda by 5-fold cross-validation.

    Each fold runs ``select_by_validation`` (lambdas from strong to weak, each fit
    warm-started from the previous optimum: the same optima up to the solver's
    tolerance in far fewer L-BFGS iterations than ``cross_validated_accuracy``'s
    cold starts, which a loaded 2-core machine cannot afford at 11,000 rows);
    the lambda of the best mean fold accuracy (ties to the strongest) is refitted
    on all training rows."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    from landmarking.evaluation import PAPER_LAMBDAS, select_by_validation

    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=seed)
    lambdas = np.asarray(PAPER_LAMBDAS, dtype=float)
    total = np.zeros(len(lambdas))
    with warnings.catch_warnings():
        # L-BFGS stopping at max_iter at the weakest lambdas is part of the budget.
        warnings.simplefilter("ignore")
        for fit_rows, val_rows in folds.split(F_tr, y_tr):
            total += select_by_validation(F_tr[fit_rows], y_tr[fit_rows], F_tr[val_rows],
                                          y_tr[val_rows], lambdas=lambdas,
                                          max_iter=cfg["max_iter"]).scores
        best = float(lambdas[np.flatnonzero(total == total.max())].max())
        model = LogisticRegression(C=1.0 / best, max_iter=cfg["max_iter"]).fit(F_tr, y_tr)
    return float(model.score(F_te, y_te))


def run_seed(name, data, cfg, methods, seed):
    """{method: {k: accuracy}} and {RAW: accuracy} of one seed on one data set, and
    the fit seconds per method."""
    space = "sphere" if name == "newsgroups" else "euclidean"
    X_tr, _, y_tr = data["train"]
    _, _, y_te = data["test"]
    eta = resolve_kernel_width(X_tr, GPLandmarks().kernel_width, random_state=seed)
    accuracy, seconds = {}, {}
    for method in methods:
        per_size, seconds[method] = features(method, data, eta, space, cfg, seed)
        accuracy[method] = {k: score(F_tr, y_tr, F_te, y_te, cfg, seed)
                            for k, (F_tr, F_te) in per_size.items()}
        print(f"  {name} seed {seed} {method:<9} fit {seconds[method]:7.1f} s; accuracy "
              + ", ".join(f"{k}: {a:.4f}" for k, a in accuracy[method].items()), flush=True)
    accuracy[RAW] = score(X_tr, y_tr, data["test"][0], y_te, cfg, seed)
    print(f"  {name} seed {seed} {RAW}: {accuracy[RAW]:.4f} (eta = {eta:.4g})", flush=True)
    return accuracy, seconds


def mean_and_error(values):
    """Mean and standard error (sample standard deviation / sqrt(n); 0 for one value)."""
    values = np.asarray(values, dtype=float)
    if values.size < 2:
        return float(values.mean()), 0.0
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(values.size))


def summarise(per_seed, methods, sizes):
    """{method: {k: (mean, error)}} and (mean, error) of the raw line over seeds."""
    stats = {m: {k: mean_and_error([acc[m][k] for acc in per_seed.values()]) for k in sizes}
             for m in methods}
    return stats, mean_and_error([acc[RAW] for acc in per_seed.values()])


def run_set(name, args, cfg):
    """Every seed on one data set; prints the table and returns the summary."""
    methods = [m for m in METHODS if m in args.methods]
    per_seed, seconds = {}, {}
    fixed = None
    if name == "newsgroups":  # one split for every seed (the bydate split)
        fixed = newsgroups(cfg["n_train"], cfg["n_test"])
    for seed in cfg["seeds"]:
        data = fixed if fixed is not None else gtzan(seed, cfg["n_train"], cfg["n_test"])
        if seed == cfg["seeds"][0]:
            (X_tr, _, y_tr), (X_te, _, _) = data["train"], data["test"]
            print(f"\n{name}: {X_tr.shape[0]} training x {X_tr.shape[1]} features, "
                  f"{X_te.shape[0]} test rows, {len(np.unique(y_tr))} classes; sizes "
                  f"{list(cfg['sizes'])}; seeds {list(cfg['seeds'])}", flush=True)
        per_seed[seed], seconds[seed] = run_seed(name, data, cfg, methods, seed)
    stats, raw = summarise(per_seed, methods, cfg["sizes"])
    n = len(per_seed)
    print(f"\n{name}: test accuracy, mean +- standard error over {n} seed(s); logistic "
          f"regression on the raw features: {raw[0]:.4f} +- {raw[1]:.4f}\n")
    print_table(["landmarks"] + methods,
                [[k] + [f"{stats[m][k][0]:.4f} +- {stats[m][k][1]:.4f}" for m in methods]
                 for k in cfg["sizes"]])
    mean_seconds = {m: float(np.mean([s[m] for s in seconds.values()])) for m in methods}
    print("\nmean fit seconds per seed (all sizes): "
          + ", ".join(f"{m} {s:.1f}" for m, s in mean_seconds.items()))
    return {"per_seed": {str(s): a for s, a in per_seed.items()}, "mean_error": stats,
            "raw": raw, "seconds": mean_seconds, "sizes": list(cfg["sizes"])}


TITLES = {"newsgroups": "20 Newsgroups (sqrt word histograms, 20 groups)",
          "gtzan": "GTZAN clip features (10 genres)"}


def plot(results, path):
    """One panel per data set, like the paper's Fig. 6: accuracy against the number
    of landmarks with one-standard-error bars, small horizontal jitter, the raw
    features' line."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(results), figsize=(5.5 * len(results), 4), squeeze=False)
    for ax, (name, res) in zip(axes[0], results.items(), strict=True):
        sizes = np.asarray(res["sizes"], dtype=float)
        for j, (method, stats) in enumerate(res["mean_error"].items()):
            jitter = 1 + 0.02 * (j - 2)  # the paper's "small amount of jitter"
            ax.errorbar(sizes * jitter, [stats[k][0] for k in res["sizes"]],
                        yerr=[stats[k][1] for k in res["sizes"]], marker="o", capsize=3,
                        label=method)
        ax.axhline(res["raw"][0], color="k", lw=1, label=RAW)
        ax.set_xscale("log")
        ax.set_xticks(sizes, [str(int(k)) for k in sizes])
        ax.set_xticks([], minor=True)  # the log axis' own minor labels clash with these
        ax.set_xlabel("number of landmarks / components")
        ax.set_ylabel("test accuracy (mean +- s.e.)")
        ax.set_title(TITLES[name], fontsize=10)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    save_figure(fig, path)


def main(argv=None):
    parser = argument_parser(__doc__, seed=False)
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--sizes", type=int, nargs="+",
                        help="numbers of landmarks (default 5 10 quick, 25 50 100 200 full)")
    parser.add_argument("--seeds", type=int, nargs="+",
                        help="seeds (default 0 1 quick, 0-4 full)")
    parser.add_argument("--n-train", type=int,
                        help="a random subset of the training rows (default: all with --full)")
    args = parse(parser, argv)
    cfg = settings(args.full)
    for key in ("sizes", "seeds", "n_train"):
        if getattr(args, key):
            cfg[key] = tuple(sorted(getattr(args, key))) if key != "n_train" else args.n_train
    results = {name: run_set(name, args, cfg) for name in args.sets}
    tag = "full" if args.full else "quick"
    with open(args.out / f"gp_landmark_features_{tag}.json", "w") as fh:
        json.dump({"settings": cfg, "results": results}, fh, indent=1)
    plot(results, args.out / f"gp_landmark_features_{tag}.png")
    return results


if __name__ == "__main__":
    main()
