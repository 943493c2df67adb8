"""LLL's out-of-sample map on MNIST: 1-NN error of embedded and of new digits.

A small version of Fig. 5 of Vladymyrov & Carreira-Perpinan (2013). Training
and test digits are embedded together by LLL (k-means landmarks, K_Z = 50);
a third, disjoint set of digits is placed afterwards with the out-of-sample map
x_0 = X~ z_0. Each set is classified by 1-NN against the embedded training
digits, over a grid of K_W and sigma, taking the best of several dimensions
as the paper does. Close test and out-of-sample errors mean the map places new
points where the embedding would have put them. Z and the neighbour search are
computed once for the whole grid (they do not depend on sigma or K_W).

    python benchmarks/lll_out_of_sample.py           # 10,000 + 2,000 + 2,000 digits
    python benchmarks/lll_out_of_sample.py --full    # 50,000 + 10,000 + 10,000
    python benchmarks/lll_out_of_sample.py --quick   # a smoke: 2,000 + 500 + 500, L=200
"""

import json

import numpy as np
from _common import argument_parser, held_out_knn_accuracy, parse, pyplot, timed

from landmarking.datasets import load_mnist
from landmarking.graph import check_connected, gaussian_affinity
from landmarking.lll._cpu import reconstruction_weights, reduced_problem, solve_reduced_problem
from landmarking.lll.landmark_selection import select_landmarks
from landmarking.lll.out_of_sample import lll_out_of_sample
from landmarking.neighbors import nearest_neighbors


def parse_args():
    p = argument_parser(__doc__, seed=False)
    p.add_argument("--quick", action="store_true",
                   help="small sizes (2,000 + 500 + 500 digits, at most 200 landmarks): "
                        "a smoke run, not the figures")
    p.add_argument("--landmarks", type=int, default=1000)
    p.add_argument("--landmark-choice", default="kmeans",
                   choices=["kmeans", "random", "random-pruned"])
    return parse(p)


def one_nn_error(train, y_train, test, y_test):
    return 1.0 - held_out_knn_accuracy(train, y_train, test, y_test, k=1)


def embed(dist, nbr, sigma, Z, d_max):
    """(components of the graph, reduced eigenvectors, embedding) of LLL on the
    Gaussian graph of these neighbour lists."""
    W = gaussian_affinity(dist, nbr, sigma)
    n_comp = check_connected(W, warn=False)
    A, B = reduced_problem(W, Z)
    vecs, _ = solve_reduced_problem(A, B, d_max)
    return n_comp, vecs, np.asarray(Z @ vecs)


def main():
    args = parse_args()
    n_train, n_test, n_oos = ((50000, 10000, 10000) if args.full else
                              (2000, 500, 500) if args.quick else (10000, 2000, 2000))
    out = args.out
    # All 70,000 digits, shuffled, then split: MNIST's official test digits are
    # harder (pixel 1-NN error 7.8% against 5.2% on held-out training digits
    # with 10,000 references), which would show up as a spurious gap.
    X_tr, y_tr = load_mnist(split="train")
    X_te, y_te = load_mnist(split="test")
    order = np.random.default_rng(0).permutation(70000)
    X_all, y_all = np.vstack([X_tr, X_te])[order], np.concatenate([y_tr, y_te])[order]
    X = X_all[: n_train + n_test]
    y = y_all[: n_train + n_test]
    X_oos = X_all[n_train + n_test: n_train + n_test + n_oos]
    y_oos = y_all[n_train + n_test: n_train + n_test + n_oos]
    L, kz, d_max = min(args.landmarks, 200) if args.quick else args.landmarks, 50, 50
    dims = [5, 10, 20, 50]
    kws = [5, 10, 30, 100]
    sigmas = [2.0, 4.0, 8.0, 200.0]

    def landmarks_and_weights():
        T = X[select_landmarks(X, L, args.landmark_choice, random_state=0)].astype(np.float64)
        return T, reconstruction_weights(X, T, kz)

    t_z, (T, Z) = timed(landmarks_and_weights)
    t_nn, (dist, nbr) = timed(nearest_neighbors, X, max(kws))
    t_oos, Z_oos = timed(reconstruction_weights, X_oos, T, kz)
    print(f"MNIST: {n_train} train + {n_test} test embedded, {n_oos} out-of-sample; "
          f"L={L} {args.landmark_choice} landmarks, K_Z={kz}")
    pixel_test = one_nn_error(X[:n_train], y[:n_train], X[n_train:], y[n_train:])
    pixel_oos = one_nn_error(X[:n_train], y[:n_train], X_oos, y_oos)
    print(f"1-NN error in pixel space: test {pixel_test:.4f}, out-of-sample {pixel_oos:.4f}")
    print(f"once for the grid: landmarks + Z {t_z:.1f} s, {max(kws)}-NN graph {t_nn:.1f} s, "
          f"out-of-sample Z {t_oos:.2f} s ({1e3 * t_oos / n_oos:.3f} ms per digit)")
    print(f"\n{'K_W':>5}{'sigma':>7}{'test err':>10}{'oos err':>9}{'best d':>8}{'seconds':>9}")
    rows = []
    for kw in kws:
        for sigma in sigmas:
            seconds, (n_comp, vecs, emb) = timed(embed, dist[:, :kw], nbr[:, :kw], sigma, Z,
                                                 d_max)
            oos = lll_out_of_sample(X_oos, T, vecs, kz)
            np.testing.assert_allclose(oos, Z_oos @ vecs, atol=1e-8)
            errs = []
            for d in dims:
                e_test = one_nn_error(emb[:n_train, :d], y[:n_train], emb[n_train:, :d],
                                      y[n_train:])
                e_oos = one_nn_error(emb[:n_train, :d], y[:n_train], oos[:, :d], y_oos)
                errs.append((e_test, e_oos, d))
            best = min(errs)
            best_oos = min(e[1] for e in errs)
            rows.append({"K_W": kw, "sigma": sigma, "test_error": best[0],
                         "oos_error": best_oos, "best_d": best[2], "seconds": seconds,
                         "components": n_comp, "per_dim": errs})
            print(f"{kw:>5}{sigma:>7g}{best[0]:>10.4f}{best_oos:>9.4f}{best[2]:>8}"
                  f"{seconds:>9.2f}", flush=True)
    gap = [abs(r["test_error"] - r["oos_error"]) for r in rows]
    print(f"\n|test - out-of-sample| error: mean {np.mean(gap):.4f}, max {np.max(gap):.4f}")
    (out / "lll_out_of_sample.json").write_text(json.dumps(rows, indent=1))
    plot(rows, kws, sigmas, out / "lll_out_of_sample.png")
    print(f"wrote {out / 'lll_out_of_sample.png'} and {out / 'lll_out_of_sample.json'}")


def plot(rows, kws, sigmas, path):
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    for ax, key, title in zip(axes, ["seconds", "test_error", "oos_error"],
                              ["LLL seconds per setting", "1-NN error, test (embedded)",
                               "1-NN error, out-of-sample"], strict=True):
        grid = np.array([[next(r[key] for r in rows if r["K_W"] == k and r["sigma"] == s)
                          for s in sigmas] for k in kws])
        im = ax.imshow(grid, cmap="viridis", origin="lower")
        ax.set(xticks=range(len(sigmas)), xticklabels=[f"{s:g}" for s in sigmas],
               yticks=range(len(kws)), yticklabels=kws, xlabel="sigma", ylabel="K_W",
               title=title)
        for (i, j), v in np.ndenumerate(grid):
            ax.text(j, i, f"{100 * v:.1f}" if key != "seconds" else f"{v:.1f}",
                    ha="center", va="center", color="w", fontsize=8)
        fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
