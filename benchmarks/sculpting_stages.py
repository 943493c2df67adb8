"""The Swiss roll at four stages of Manifold Sculpting (Gashler et al. 2011, Fig. 5).

The paper's Fig. 5 shows its Swiss roll (2,000 points, k = 14, sigma = 0.99, 300
iterations) at four stages of the iterative transformation. ``ManifoldSculpting``
has no per-iteration callback, so each stage is a fit of its own with
``max_iter`` set to the stage (the same ``random_state``, so the fits follow the
same path and a shorter one is the start of a longer one), and stage 0 is the
starting configuration itself:

- from the paper's start (``preprocess="pca"``): the data on its principal axes,
  nothing dropped. A fit stopped at ``max_iter`` below the default ``min_iter``
  (459 at sigma 0.99) returns the state after exactly ``max_iter`` iterations;
  its dropped dimension is the start's third principal axis times ``scale_``
  (those coordinates are only ever scaled), so the picture is drawn in 3-D as
  the paper's;
- from the library's default start (``preprocess="ltsa"``): stage 0 is the LTSA
  embedding (``landmarking.sculpting.ltsa.ltsa_embedding`` on the same Euclidean
  k-neighbourhoods; the fit maps it linearly before sculpting, which changes no
  affine-aligned error); nothing is left to scale out, so a fit returns its best
  state within ``max_iter`` iterations and may stop earlier (patience 50).

Printed per start and stage: the iterations run, the share of the dropped
dimension's spread left (``scale_``), the normalised MSE after the best affine
map (:func:`landmarking.metrics.affine_normalized_mse`, the paper's measure),
the mean relative neighbour-distance error (``distance_error_``) and the seconds
of the fit. ``--converged`` adds a row for the fit with the default stopping rule.

Quick run (default, about a minute): 600 points. ``--full``: the paper's 2,000
points. Both: k = 14, sigma = 0.99, stages 0, 100, 200 and 300, the roll without
the star hole (``--hole`` adds it: the roll of the paper's Fig. 2).

Writes ``sculpting_stages.png`` (one row per start, one column per stage,
coloured by the roll's arc length) to ``--out``.

Usage::

    python benchmarks/sculpting_stages.py [--full] [-n N] [--stages 0 100 200 300]
        [--starts pca ltsa] [--hole] [--converged]
"""

import warnings

import numpy as np
from _common import argument_parser, machine_line, parse, print_table, pyplot, save_figure, timed
from sklearn.decomposition import PCA

from landmarking import ManifoldSculpting
from landmarking.datasets import make_sculpting_swiss_roll
from landmarking.metrics import affine_normalized_mse
from landmarking.neighbors import nearest_neighbors
from landmarking.sculpting.ltsa import ltsa_embedding

STARTS = ("pca", "ltsa")
#: The dropped dimension is drawn for the principal-axes start only (LTSA's start
#: has exactly two columns).
T = 2


def start_state(X, start, k):
    """Stage 0: the configuration the fit starts from, all of its columns (the
    principal axes of X, or LTSA's two columns)."""
    if start == "pca":
        # The estimator's start, exactly: a full-rank rotation, nothing calibrated.
        return PCA(svd_solver="full").fit_transform(X)
    nbr = nearest_neighbors(X, k)[1]
    return ltsa_embedding(X, nbr, T, np.random.RandomState(0))


def stage_fit(X, start, k, sigma, iterations, seed):
    """(seconds, fitted model) of one fit stopped after ``iterations`` (None: the
    default stopping rule)."""
    model = ManifoldSculpting(n_components=T, n_neighbors=k, scale_rate=sigma,
                              preprocess=start, max_iter=iterations, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SculptingWarning: the MSE says the same
        secs, _ = timed(model.fit, X)
    return secs, model


def run_start(X, truth, start, *, k, sigma, stages, seed, converged):
    """Rows (start, stage, iterations, scale left, MSE, distance error, seconds)
    and {stage: configuration drawn (n, 2) or (n, 3)}."""
    rows, shown = [], {}
    full_start = start_state(X, start, k)
    for stage in stages:
        if stage == 0:
            P = full_start
            rows.append((start, "0", 0, 1.0, affine_normalized_mse(P[:, :T], truth), np.nan,
                         np.nan))
            shown[0] = P[:, :T + 1] if start == "pca" else P[:, :T]
            continue
        secs, model = stage_fit(X, start, k, sigma, stage, seed)
        Y = np.asarray(model.embedding_, dtype=float)
        rows.append((start, str(stage), model.n_iter_, model.scale_,
                     affine_normalized_mse(Y, truth), model.distance_error_, secs))
        if start == "pca":
            # The dropped coordinates are only ever multiplied by sigma: the start's
            # third principal axis times what is left of its spread.
            Y = np.column_stack([Y, full_start[:, T] * model.scale_])
        shown[stage] = Y
        print(f"done: {start}, stage {stage}", flush=True)
    if converged:
        secs, model = stage_fit(X, start, k, sigma, None, seed)
        rows.append((start, "default rule", model.n_iter_, model.scale_,
                     affine_normalized_mse(model.embedding_, truth), model.distance_error_,
                     secs))
    return rows, shown


def plot(shown, truth, stages, mse, path):
    plt = pyplot()
    starts = list(shown)
    fig = plt.figure(figsize=(3.4 * len(stages), 3.2 * len(starts)))
    names = {"pca": "paper's start (PCA)", "ltsa": "LTSA start"}
    # LTSA's stage 0 is drawn in its own (unit-variance) coordinates.
    for r, start in enumerate(starts):
        for c, stage in enumerate(stages):
            Y = shown[start][stage]
            index = r * len(stages) + c + 1
            label = f"{names[start]}, iteration {stage}\nnorm. MSE {mse[(start, stage)]:.3g}"
            if Y.shape[1] == 3:
                ax = fig.add_subplot(len(starts), len(stages), index, projection="3d")
                ax.scatter(Y[:, 0], Y[:, 1], Y[:, 2], c=truth[:, 0], s=2, cmap="viridis")
                ax.view_init(elev=20, azim=-60)
                # The box in the data's proportions (equal scales on the three
                # axes), so that the dropped one is seen to shrink against the
                # others (the kept ones grow as the roll opens: no box fits every stage).
                low, high = Y.min(axis=0), Y.max(axis=0)
                for set_lim, a, b in zip((ax.set_xlim, ax.set_ylim, ax.set_zlim), low, high,
                                         strict=True):
                    set_lim(a, b)
                ax.set_box_aspect(tuple(high - low))
                ax.set_zticks([])
            else:
                ax = fig.add_subplot(len(starts), len(stages), index)
                ax.scatter(Y[:, 0], Y[:, 1], c=truth[:, 0], s=2, cmap="viridis")
                ax.set_aspect("equal", adjustable="datalim")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(label, fontsize=8)
    save_figure(fig, path, dpi=100)


def main(argv=None):
    parser = argument_parser(__doc__)
    parser.add_argument("-n", type=int, help="points (default 600; --full 2,000)")
    parser.add_argument("-k", type=int, default=14, help="neighbours (default 14)")
    parser.add_argument("--sigma", type=float, default=0.99, help="scale_rate (default 0.99)")
    parser.add_argument("--stages", type=int, nargs="+", default=[0, 100, 200, 300],
                        help="iterations at which to show the roll (default 0 100 200 300)")
    parser.add_argument("--starts", nargs="+", choices=STARTS, default=list(STARTS))
    parser.add_argument("--hole", action="store_true", help="the roll with the star hole")
    parser.add_argument("--converged", action="store_true",
                        help="add the fit with the default stopping rule")
    args = parse(parser, argv)
    n = args.n or (2000 if args.full else 600)
    X, truth = make_sculpting_swiss_roll(n, hole=args.hole, random_state=args.seed)
    stages = sorted(set(args.stages))
    rows, shown = [], {}
    for start in args.starts:
        mine, shown[start] = run_start(X, truth, start, k=args.k, sigma=args.sigma,
                                       stages=stages, seed=args.seed,
                                       converged=args.converged)
        rows += mine
    print(f"\nSwiss roll{' with the star hole' if args.hole else ''}, {n} points, "
          f"k = {args.k}, sigma = {args.sigma}, seed {args.seed}")
    print_table(["start", "stage (max_iter)", "iterations", "scale left", "norm. MSE",
                 "distance error", "seconds"],
                [[s, st, it, f"{sc:.3g}" if s == "pca" else "-", f"{m:.4g}",
                  "-" if np.isnan(d) else f"{d:.3g}", "-" if np.isnan(t) else f"{t:.1f}"]
                 for s, st, it, sc, m, d, t in rows])
    print(machine_line())
    mse = {(s, int(st)): m for s, st, _, _, m, _, _ in rows if st.isdigit()}
    plot(shown, truth, stages, mse, args.out / "sculpting_stages.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
