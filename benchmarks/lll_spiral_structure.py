"""Affinity matrices of a spiral: all points, landmarks alone, and LLL's (Vladymyrov &
Carreira-Perpinan 2013, Fig. 1).

100 points along a 2-D spiral, 20 of them taken uniformly along it as landmarks
(every fifth point). Three affinities, each ordered along the spiral: W, the
Gaussian k-NN graph of all points that Laplacian eigenmaps uses; the same graph
built on the 20 landmarks alone (what "LE on the landmarks" uses); and LLL's
learned landmark affinity C = Z^T W Z (``weights_`` of
:class:`~landmarking.LocallyLinearLandmarks` is Z^T, one row of landmark weights per
point), whose Laplacian is LLL's reduced problem. The paper's claim: C is almost
perfectly banded (connections run along the spiral), while the landmarks' own graph
connects points across turns.

Printed for each matrix: the share of its affinity mass on pairs more than
``--band`` positions apart along the spiral (0 for a banded matrix, counted in
landmark positions for the L x L matrices and in point positions / 5 for W), and
the number of such pairs. Also printed: the structure of Z (nonzeros per row, the
share of each point's weight on the two landmarks that bracket it along the spiral).

Usage::

    python benchmarks/lll_spiral_structure.py          # the paper's 100 points, 20 landmarks
    python benchmarks/lll_spiral_structure.py --full   # also 1,000 points, 200 landmarks
                                                       # (landmarks then 10x closer than the turns)
"""

import json

import numpy as np
from _common import argument_parser, parse, print_table, pyplot

from landmarking import LocallyLinearLandmarks
from landmarking.graph import knn_affinity


def spiral(n, turns=2.0, noise=0.0, random_state=0):
    """``n`` points along an Archimedean spiral, equally spaced in arc length, in
    order along it. The gap between turns (2 pi a = 1.0) is about the spacing of
    every fifth point when ``n`` is 100 (0.96), as in the paper's picture."""
    rng = np.random.RandomState(random_state)
    fine = np.linspace(np.pi, np.pi * (1 + 2 * turns), 20000)
    a = 1.0 / (2 * np.pi)
    xy = np.column_stack([a * fine * np.cos(fine), a * fine * np.sin(fine)])
    arc = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(xy, axis=0), axis=1))])
    t = np.interp(np.linspace(0, arc[-1], n), arc, fine)
    X = np.column_stack([a * t * np.cos(t), a * t * np.sin(t)])
    return X + noise * rng.normal(size=X.shape)


def off_band(A, band):
    """Share of the off-diagonal mass of ``A`` on pairs more than ``band`` apart,
    and how many such pairs (each pair counted once)."""
    A = np.asarray(A.toarray() if hasattr(A, "toarray") else A, dtype=float)
    i, j = np.indices(A.shape)
    off = i != j
    far = (np.abs(i - j) > band) & (i < j)
    total = A[off].sum() / 2
    return float(A[far].sum() / total), int(np.count_nonzero(A[far] > 1e-12 * A.max()))


def structure(n, n_landmarks, n_neighbors, n_landmark_neighbors, band, seed):
    """The three affinities and Z for one spiral; a dict of numbers and matrices."""
    X = spiral(n, random_state=seed)
    step = n // n_landmarks
    idx = np.arange(0, n, step)[:n_landmarks]
    lll = LocallyLinearLandmarks(n_components=1, landmarks=X[idx],
                                 n_landmark_neighbors=n_landmark_neighbors,
                                 n_neighbors=n_neighbors, random_state=seed).fit(X)
    bandwidth = lll.bandwidth_
    W = knn_affinity(X, n_neighbors, bandwidth)
    W_land = knn_affinity(X[idx], min(n_neighbors, n_landmarks - 1), bandwidth)
    Zt = lll.weights_.tocsr()                          # (n, L): row i holds point i's weights
    C = (Zt.T @ W @ Zt).toarray()                      # LLL's affinity between landmarks
    # Z's structure: for each point, the share of its absolute weight on the two
    # landmarks that bracket it along the spiral (its own position / step).
    position = np.arange(n) / step
    low = np.clip(np.floor(position).astype(int), 0, n_landmarks - 1)
    high = np.clip(low + 1, 0, n_landmarks - 1)
    dense = np.abs(Zt.toarray())
    bracket = (dense[np.arange(n), low] + np.where(high != low, dense[np.arange(n), high], 0))
    bracket_share = bracket / dense.sum(axis=1)
    rows = {
        "W, all points": off_band(W, band * step),
        "W, landmarks alone": off_band(W_land, band),
        "C = Z^T W Z (LLL)": off_band(C, band),
    }
    return dict(X=X, idx=idx, W=W.toarray(), W_land=W_land.toarray(), C=C, Z=Zt.toarray(),
                bandwidth=bandwidth, rows=rows, bracket_share=bracket_share,
                nnz_per_row=float(Zt.getnnz(axis=1).mean()))


def _plot(res, path, title):
    plt = pyplot()
    fig, axes = plt.subplots(1, 5, figsize=(17, 3.6))
    X, idx = res["X"], res["idx"]
    axes[0].plot(*X.T, ".", color="red", ms=4)
    axes[0].plot(*X[idx].T, "o", color="blue", ms=6)
    axes[0].set_aspect("equal")
    axes[0].set_title("points (red), landmarks (blue)")
    for ax, key, name in ((axes[1], "W", "W, all points"),
                          (axes[2], "W_land", "W, landmarks alone"),
                          (axes[3], "C", "C = Z^T W Z (LLL)"),
                          (axes[4], "Z", "Z^T (points x landmarks)")):
        A = res[key]
        ax.imshow(np.abs(A) if key == "Z" else A, cmap="gray_r", interpolation="nearest",
                  aspect="auto" if key == "Z" else "equal")
        ax.set_title(name)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argument_parser(__doc__)
    parser.add_argument("--n-neighbors", type=int, default=10,
                        help="K_W, neighbours in the Gaussian graphs (default 10)")
    parser.add_argument("--n-landmark-neighbors", type=int, default=5,
                        help="K_Z, landmarks per point (default 5, the library's)")
    parser.add_argument("--band", type=int, default=2,
                        help="landmark positions counted as 'along the spiral' (default 2)")
    args = parse(parser, argv)
    cases = [(100, 20)] + ([(1000, 200)] if args.full else [])
    summary = {}
    for n, n_land in cases:
        res = structure(n, n_land, args.n_neighbors, args.n_landmark_neighbors, args.band,
                        args.seed)
        print(f"\n{n} points, {n_land} landmarks (every {n // n_land}th), K_W = "
              f"{args.n_neighbors}, K_Z = {args.n_landmark_neighbors}, bandwidth "
              f"{res['bandwidth']:.4g} (median neighbour distance)\n")
        print_table(["affinity", f"mass more than {args.band} landmark positions apart",
                     "pairs that far"],
                    [[name, share, pairs] for name, (share, pairs) in res["rows"].items()],
                    floatfmt="{:.4f}")
        print(f"\nZ: {res['nnz_per_row']:.1f} nonzeros per point; share of each point's "
              f"|weight| on the two landmarks that bracket it: median "
              f"{np.median(res['bracket_share']):.3f}, min {res['bracket_share'].min():.3f}")
        png = args.out / f"lll_spiral_structure_{n}.png"
        _plot(res, png, f"spiral, {n} points, {n_land} landmarks")
        print(f"wrote {png}")
        summary[f"{n}x{n_land}"] = {"rows": res["rows"], "bandwidth": res["bandwidth"],
                                    "bracket_share_median": float(np.median(res["bracket_share"])),
                                    "nnz_per_row": res["nnz_per_row"]}
    with open(args.out / "lll_spiral_structure.json", "w") as fh:
        json.dump(summary, fh, indent=1)
    return summary


if __name__ == "__main__":
    main()
