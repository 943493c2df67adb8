"""Manifold Sculpting with a share of supervised (clamped) points (Gashler et al. 2011, Fig. 19).

The paper's Fig. 19 times the 1-D unfolding of four video sequences against the
percentage of supervised points ("the first 20% to 50% of supervised points tend to
produce noticeable improvements in speed, but additional supervised points tend to
make little difference"; Section IV-D: "as much as a 50% speedup when as few as 5%
of the points had supervised values"). The videos are not public; here the
stand-in is the paper's Swiss roll (:func:`landmarking.datasets.make_sculpting_swiss_roll`,
no hole), whose ground truth (arc length, height) is in the data's units, so that
it can be given as the supervised values directly.

For each fraction f of supervised points (drawn at random, the same draw nested
across fractions: the 5% are among the 10%), ``ManifoldSculpting.fit(X,
clamp_indices=..., clamp_values=truth[...])`` from the paper's start
(``preprocess="pca"``, sigma 0.99) and from the library's default LTSA start.
Printed per start and fraction: the seconds of the fit and their ratio to f = 0 in
the same run (the load average before and after), the iterations, the normalised
MSE after the best affine map (:func:`landmarking.metrics.affine_normalized_mse`) of
all points and of the free points, and the normalised MSE without any alignment
(supervision puts the embedding in the truth's frame; meaningless at f = 0).

Quick run (default): 1,000 points, k = 14, f in 0, 0.05, 0.2, 0.5; one seed.
``--full``: 2,000 points, f in 0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, seeds 0-2.

Writes ``sculpting_supervision.png`` (seconds and normalised MSE against f, one
line per start) to ``--out``.

Usage::

    python benchmarks/sculpting_supervision.py [--full] [-n N] [--fractions F ...]
"""

import os
import warnings

import numpy as np
from _common import argument_parser, machine_line, parse, print_table, pyplot, save_figure, timed

from landmarking import ManifoldSculpting
from landmarking.datasets import make_sculpting_swiss_roll
from landmarking.metrics import affine_normalized_mse, mean_nearest_neighbor_distance

STARTS = ("pca", "ltsa")


def fit_row(X, truth, clamped, start, k, seed):
    """(seconds, iterations, MSE all, MSE free, MSE unaligned) of one fit."""
    model = ManifoldSculpting(n_neighbors=k, preprocess=start, random_state=seed)
    clamps = ({} if clamped.size == 0 else
              {"clamp_indices": clamped, "clamp_values": truth[clamped]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SculptingWarning: the MSE says the same
        secs, _ = timed(model.fit, X, **clamps)
    Y = model.embedding_
    free = np.setdiff1d(np.arange(len(X)), clamped)
    lam = mean_nearest_neighbor_distance(truth) ** 2
    raw = float(np.mean(np.sum((Y - truth) ** 2, axis=1)) / lam) if clamped.size else np.nan
    # The free points' error after the map fitted on them alone.
    return (secs, model.n_iter_, affine_normalized_mse(Y, truth),
            float(np.mean(np.sum((truth[free] - _affine(Y, truth, free)) ** 2, axis=1)) / lam),
            raw)


def _affine(Y, truth, rows):
    from landmarking.metrics import affine_align

    return affine_align(Y[rows], truth[rows])


def run(n, fractions, seeds, k, out, starts=STARTS):
    rows, curves = [], {}
    for seed in seeds:
        X, truth = make_sculpting_swiss_roll(n, random_state=seed)
        order = np.random.default_rng(seed).permutation(n)
        for start in starts:
            print(f"seed {seed}, start {start}: load average {os.getloadavg()[0]:.2f}",
                  flush=True)
            base = None
            for f in fractions:
                clamped = np.sort(order[:int(round(f * n))])
                secs, iters, mse, mse_free, raw = fit_row(X, truth, clamped, start, k, seed)
                base = secs if base is None else base
                rows.append((seed, start, f, secs, secs / base, iters, mse, mse_free, raw))
                curves.setdefault(start, {}).setdefault(f, []).append((secs / base, mse))
                print(f"  f = {f:.2f}: {secs:.2f} s, {iters} iterations, MSE {mse:.4g}",
                      flush=True)
    print(f"\nSwiss roll, {n} points, k = {k}, sigma 0.99; seconds ratio against f = 0 of "
          "the same seed and start")
    print_table(["seed", "start", "supervised", "seconds", "ratio", "iterations",
                 "norm. MSE", "MSE free pts", "MSE unaligned"], rows, floatfmt="{:.4g}")
    print(machine_line())
    _plot(curves, fractions, out / "sculpting_supervision.png")
    return rows


def _plot(curves, fractions, path):
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3))
    for start, by_f in curves.items():
        fs = [f for f in fractions if f in by_f]
        ratio = [np.median([r for r, _ in by_f[f]]) for f in fs]
        mse = [np.median([m for _, m in by_f[f]]) for f in fs]
        left.plot(100 * np.array(fs), ratio, "o-", label=f"start {start}")
        right.semilogy(100 * np.array(fs), mse, "o-", label=f"start {start}")
    left.set_xlabel("supervised points (%)")
    left.set_ylabel("fit time / unsupervised")
    right.set_xlabel("supervised points (%)")
    right.set_ylabel("normalised MSE")
    left.legend(fontsize=8)
    right.legend(fontsize=8)
    save_figure(fig, path)


def main(argv=None):
    parser = argument_parser(__doc__, seeds=None)
    parser.add_argument("-n", type=int, help="points (1,000; 2,000 with --full)")
    parser.add_argument("-k", type=int, default=14, help="neighbours (default 14)")
    parser.add_argument("--fractions", type=float, nargs="+",
                        help="shares of supervised points, the first the baseline "
                             "(0 0.05 0.2 0.5; more with --full)")
    parser.add_argument("--seeds", type=int, nargs="+",
                        help="seeds (--seed; 0 1 2 with --full)")
    parser.add_argument("--starts", nargs="+", choices=STARTS, default=list(STARTS),
                        help="preprocess values (default pca ltsa)")
    args = parse(parser, argv)
    n = args.n or (2000 if args.full else 1000)
    fractions = args.fractions or ((0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9) if args.full
                                   else (0, 0.05, 0.2, 0.5))
    seeds = args.seeds or ([0, 1, 2] if args.full else [args.seed])
    run(n, fractions, seeds, args.k, args.out, starts=args.starts)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
