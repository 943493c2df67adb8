"""Manifold Sculpting's accuracy sweeps (Gashler et al. 2011, Figs. 7, 8, 10 and 12).

Normalised MSE (:func:`landmarking.metrics.affine_normalized_mse`: mean squared
distance to the ground truth after the best affine map, over the squared mean
nearest-neighbour distance of the truth) against the paper's variable, for
Manifold Sculpting from the paper's start (``MS (pca)``, sigma 0.99) and from the
LTSA start (``MS (ltsa)``), scikit-learn's Isomap, LLE, Hessian LLE and LTSA, and
L-MVU (:func:`landmarking.baselines.landmark_mvu`, floor(sqrt(N)) landmarks):

- ``fig7``: the Swiss roll with the star-shaped hole
  (:func:`~landmarking.datasets.make_sculpting_swiss_roll`), N = 2,000, k from 6
  to 48; L-MVU with the same k (the paper: 44 landmarks);
- ``fig8``: the same roll, N from 250 to 3,175 (and 4,000), k = 18 for every
  method but L-MVU, which gets k = 6 (the paper's choices);
- ``fig10``: the paper's S-curve (:func:`~landmarking.datasets.make_sculpting_s_curve`),
  N varied as in Fig. 8, the same k;
- ``fig12``: the entwined spirals (:func:`~landmarking.datasets.make_entwined_spirals`,
  intrinsic dimension 1), N varied, k = 14 (as ``sculpting.py``) for every method
  (the spirals' 6-NN graph falls apart at small N).

Budgets, as the paper's "the resource requirements became unreasonable": a
method whose fit takes longer than ``--budget`` seconds is not run at the larger
values of the variable (the table says "out of time after ..."); L-MVU's solver
stops at the budget (Clarabel's time limit, per round of its constraint
generation); and L-MVU is not started when its edge vectors (one row of m - 1
numbers per graph edge, from which each round's program takes its few edges)
would exceed ``--lmvu-memory`` MiB ("out of memory"). Both notes name the value.
``--methods`` runs some of the methods only (say, L-MVU alone, to fill its curve).

Quick run (default, about a minute): N = 300 (Fig. 7: k 8 and 14; Figs. 8, 10
and 12: N 250 and 400), one seed. ``--full``: the paper's grid (Fig. 7:
k = 6, 8, 10, 12, 14, 18, 24, 32, 48 at N = 2,000; Figs. 8, 10 and 12:
N = 250, 500, 1,000, 2,000, 3,175, 4,000).

Writes ``sculpting_sweeps.png`` (one panel per figure, log-log, as the paper) and
``sculpting_sweeps.json`` to ``--out``.

Usage::

    python benchmarks/sculpting_sweeps.py [--full] [--figures fig7 fig8 ...]
        [--budget SECONDS] [--lmvu-memory MIB] [--sizes N ...] [--ks K ...] [--fig7-n N]
        [--methods NAME ...]
"""

import json

import numpy as np
from _common import argument_parser, machine_line, parse, print_table, pyplot, save_figure
from _sculpting_methods import WITH_LMVU, embed_all

from landmarking.datasets import (
    make_entwined_spirals,
    make_sculpting_s_curve,
    make_sculpting_swiss_roll,
)
from landmarking.metrics import affine_normalized_mse

FIGURES = ("fig7", "fig8", "fig10", "fig12")

#: figure -> (title, data maker (n, seed), t, variable, k of the N sweeps, L-MVU's k).
SETTINGS = {
    "fig7": ("Fig. 7: Swiss roll (star hole), k varied",
             lambda n, seed: make_sculpting_swiss_roll(n, hole=True, random_state=seed),
             2, "k", None, None),
    "fig8": ("Fig. 8: Swiss roll (star hole), k = 18 (L-MVU 6)",
             lambda n, seed: make_sculpting_swiss_roll(n, hole=True, random_state=seed),
             2, "N", 18, 6),
    "fig10": ("Fig. 10: S-curve, k = 18 (L-MVU 6)",
              lambda n, seed: make_sculpting_s_curve(n, random_state=seed), 2, "N", 18, 6),
    "fig12": ("Fig. 12: entwined spirals, k = 14",
              lambda n, seed: make_entwined_spirals(n, random_state=seed), 1, "N", 14, 14),
}

QUICK = {"fig7": (300, (8, 14)), "N": (250, 400)}
FULL = {"fig7": (2000, (6, 8, 10, 12, 14, 18, 24, 32, 48)),
        "N": (250, 500, 1000, 2000, 3175, 4000)}


def lmvu_edge_vectors_mib(n, k):
    """MiB of L-MVU's edge vectors: at most n k edges (the symmetrised k-NN
    graph), each a row of m - 1 float64, m = floor(sqrt(n)). (Each round's
    program holds m (m + 1) / 2 numbers per edge, for its few edges only.)"""
    m = int(np.sqrt(n))
    return n * k * (m - 1) * 8 / 2**20


def cells(figure, full, grid=None):
    """[(N, k, L-MVU's k)] of one figure's sweep; ``grid`` overrides entries of
    the quick or full grid (``{"fig7": (N, ks), "N": sizes}``)."""
    grid = {**(FULL if full else QUICK), **(grid or {})}
    _, _, _, variable, k, lmvu_k = SETTINGS[figure]
    if variable == "k":
        n, ks = grid["fig7"]
        return [(n, kk, kk) for kk in ks]
    return [(n, k, lmvu_k) for n in grid["N"]]


def run_figure(figure, *, full, seed, budget, lmvu_memory, names=WITH_LMVU, grid=None):
    """Rows (figure, N, k, method, MSE or None, seconds or None, note) of one sweep."""
    title, make, t, variable, _, _ = SETTINGS[figure]
    rows = []
    stopped = {}  # method -> the note that stops it at the larger values
    for n, k, lmvu_k in cells(figure, full, grid):
        X, truth = make(n, seed)
        value = k if variable == "k" else n
        run_names = [m for m in names if m not in stopped]
        if "L-MVU" in run_names and lmvu_edge_vectors_mib(n, lmvu_k) > lmvu_memory:
            stopped["L-MVU"] = (f"out of memory at {variable}={value} (edge vectors "
                                f"{lmvu_edge_vectors_mib(n, lmvu_k):.0f} MiB > {lmvu_memory} MiB)")
        run_names = [m for m in names if m not in stopped]
        found = embed_all(X, k, t, seed=seed, names=run_names, lmvu_neighbors=lmvu_k,
                          time_limit=budget)
        for method in names:
            if method in stopped and method not in found:
                rows.append((figure, n, k, method, None, None, stopped[method]))
                continue
            secs, Y = found[method]
            if secs is None:
                note = Y
                if method == "L-MVU" and "status" in note:
                    note = f"out of time at {variable}={value} ({note})"
                    stopped[method] = note
                rows.append((figure, n, k, method, None, None, note))
                continue
            note = ""
            if secs > budget:
                stopped[method] = f"out of time after {variable}={value} ({secs:.0f} s)"
                note = f"over the {budget:.0f} s budget"
            rows.append((figure, n, k, method, affine_normalized_mse(Y, truth), secs, note))
        # Each cell's rows as soon as they are known: a long run stopped early
        # still leaves what it measured.
        print(f"done: {title}, N={n}, k={k}: " + "; ".join(
            f"{r[3]} {r[6] if r[4] is None else f'{r[4]:.3g} ({r[5]:.1f} s)'}"
            for r in rows if r[1] == n and r[2] == k), flush=True)
    return rows


def print_figure(figure, rows):
    """One table per figure: the variable down, the methods across (MSE, or the
    note), then the seconds."""
    title, _, _, variable, _, _ = SETTINGS[figure]
    mine = [r for r in rows if r[0] == figure]
    methods = list(dict.fromkeys(r[3] for r in mine))
    values = list(dict.fromkeys(r[2] if variable == "k" else r[1] for r in mine))
    sizes = sorted({r[1] for r in mine})
    print(f"\n{title}" + (f", N = {sizes[0]}" if variable == "k" else "")
          + ": normalised MSE (seconds)")

    def cell(r):
        if r[4] is None:
            return r[6]
        return f"{r[4]:.3g} ({r[5]:.1f} s)" + (" *" if r[6] else "")

    table = []
    for v in values:
        by = {r[3]: r for r in mine if (r[2] if variable == "k" else r[1]) == v}
        table.append([v] + [cell(by[m]) if m in by else "" for m in methods])
    print_table([variable] + methods, table)


def plot(rows, figures, path):
    plt = pyplot()
    fig, axes = plt.subplots(1, len(figures), figsize=(4.5 * len(figures), 4), squeeze=False)
    for ax, figure in zip(axes[0], figures, strict=True):
        title, _, _, variable, _, _ = SETTINGS[figure]
        mine = [r for r in rows if r[0] == figure and r[4] is not None]
        for method in dict.fromkeys(r[3] for r in mine):
            pts = sorted((r[2] if variable == "k" else r[1], r[4]) for r in mine if r[3] == method)
            ax.loglog(*zip(*pts, strict=True), marker="o", label=method)
        ax.set_xlabel(variable)
        ax.set_ylabel("normalised MSE")
        ax.set_title(title, fontsize=9)
    axes[0, 0].legend(fontsize=8)
    save_figure(fig, path, dpi=100)


def main(argv=None):
    parser = argument_parser(__doc__)
    parser.add_argument("--figures", nargs="+", choices=FIGURES, default=list(FIGURES))
    parser.add_argument("--budget", type=float, default=300.0,
                        help="seconds per fit (default 300): slower methods stop there")
    parser.add_argument("--lmvu-memory", type=float, default=400.0,
                        help="MiB for L-MVU's edge vectors (default 400)")
    parser.add_argument("--methods", nargs="+", choices=WITH_LMVU, default=list(WITH_LMVU),
                        help="the methods to run (default all)")
    parser.add_argument("--sizes", type=int, nargs="+", help="N of Figs. 8, 10 and 12")
    parser.add_argument("--ks", type=int, nargs="+", help="k of Fig. 7")
    parser.add_argument("--fig7-n", type=int, help="N of Fig. 7")
    args = parse(parser, argv)
    base = FULL if args.full else QUICK
    grid = {"fig7": (args.fig7_n or base["fig7"][0], tuple(args.ks or base["fig7"][1]))}
    if args.sizes:
        grid["N"] = tuple(args.sizes)
    rows = []
    for figure in args.figures:
        rows += run_figure(figure, full=args.full, seed=args.seed, budget=args.budget,
                           lmvu_memory=args.lmvu_memory, names=tuple(args.methods),
                           grid=grid)
    for figure in args.figures:
        print_figure(figure, rows)
    print(f"\n* over the budget: not run at larger values. {machine_line()}")
    plot(rows, args.figures, args.out / "sculpting_sweeps.png")
    (args.out / "sculpting_sweeps.json").write_text(json.dumps(
        [dict(zip(("figure", "n", "k", "method", "mse", "seconds", "note"), r, strict=True))
         for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
