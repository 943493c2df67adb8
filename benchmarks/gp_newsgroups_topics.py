"""Topics as GP landmarks on 20 Newsgroups (Liang & Paisley 2015, Table 1).

Each training post (headers, quoted lines and signature stripped) becomes the
square root of its normalised word histogram over the 1,545 most frequent words
after English stop words (the paper's vocabulary size), a point on the unit sphere
in the positive orthant; ``GPLandmarks(space="sphere")`` learns landmarks there. Printed: the 5 most
probable words (largest squared entries) of the first 12 landmarks, and a purity
figure for each: the share of its 100 nearest documents (Hellinger distance) that
come from its most common newsgroup. For scale, the same purity for 12 random
documents and for 12 k-means++ centroids as landmarks.

Usage::

    python benchmarks/gp_newsgroups_topics.py          # quick: 3,000 posts, 200 steps
    python benchmarks/gp_newsgroups_topics.py --full   # all 11,314 posts, 1000 steps
    python benchmarks/gp_newsgroups_topics.py --sparse [--full]
        # the same from the CSR matrix, after a back-to-back fit of GPLandmarks on
        # the dense and the CSR copy: seconds, bytes of X, peak memory of the fit
        # (tracemalloc) and the largest landmark difference
"""

import time
import tracemalloc
import warnings

import numpy as np
from _gp_common import machine_line, parse_args, print_table, pyplot
from scipy import sparse

from landmarking import GPLandmarks, KMeansLandmarks, RandomLandmarks
from landmarking.datasets.real import load_newsgroups
from landmarking.kernels import squared_distances
from landmarking.text import clean_post, sqrt_histograms, top_words

N_LANDMARKS = 12
N_TOP = 5
N_NEAREST = 100


def newsgroups_sqrt_frequencies():
    """All 11,314 training posts of 20 Newsgroups as dense float32 square-root word
    frequencies over the paper's 1,545 words, and their newsgroups."""
    docs, labels, _ = load_newsgroups(subset="train")
    docs = [clean_post(d) for d in docs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X, _, kept = sqrt_histograms(docs, n_words=1545, dense=True)
    return X.astype(np.float32), labels[kept]


def purity(X, landmarks, labels, k=N_NEAREST):
    """For each landmark: (majority label, share of its k nearest rows with it)."""
    d2 = squared_distances(X.astype(np.float64), np.asarray(landmarks, np.float64))
    nearest = np.argsort(d2, axis=0, kind="stable")[:k].T
    out = []
    for rows in nearest:
        counts = np.bincount(labels[rows], minlength=labels.max() + 1)
        out.append((int(np.argmax(counts)), counts.max() / k))
    return out


def run(args):
    docs, labels, names = load_newsgroups(subset="train")
    rng = np.random.default_rng(args.seed)
    if not args.full:
        keep = np.sort(rng.choice(len(docs), 3000, replace=False))
        docs, labels = [docs[i] for i in keep], labels[keep]
    docs = [clean_post(d) for d in docs]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        X, vocab, kept = sqrt_histograms(docs, n_words=1545, dense=not args.sparse)
    X = X.astype(np.float32)
    labels = labels[kept]
    dropped = len(docs) - len(kept)
    print(f"20 Newsgroups train: {len(docs)} posts, {dropped} dropped as empty "
          f"({caught[0].message if caught else 'none'}); vocabulary {len(vocab)} words")
    if args.sparse:
        compare_dense_sparse(X, args)
    gp = GPLandmarks(n_landmarks=N_LANDMARKS, n_steps=1000 if args.full else 200,
                     batch_size=1000, kernel_width=args.kernel_width, space="sphere",
                     random_state=args.seed)
    start = time.perf_counter()
    gp.fit(X)
    secs = time.perf_counter() - start
    print(f"GPLandmarks(space='sphere'): eta = {gp.kernel_width_:.4g} ({args.kernel_width}), "
          f"{gp.n_steps} steps, batch 1000: {secs:.1f} s\n")
    gp_purity = purity(X, gp.landmarks_, labels)
    rows = []
    for k in range(N_LANDMARKS):
        group, share = gp_purity[k]
        rows.append([k + 1, " ".join(top_words(gp.landmarks_[k], vocab, N_TOP)),
                     names[group], share])
    print_table(["landmark", f"top {N_TOP} words", f"main group of {N_NEAREST} nearest",
                 "purity"], rows, floatfmt="{:.2f}")

    summary = {"GP": [s for _, s in gp_purity]}
    rand = RandomLandmarks(n_landmarks=N_LANDMARKS, random_state=args.seed).fit(X)
    summary["random documents"] = [s for _, s in purity(X, rand.landmarks_, labels)]
    km = KMeansLandmarks(n_landmarks=N_LANDMARKS, random_state=args.seed).fit(X)
    summary["k-means++"] = [s for _, s in purity(X, km.landmarks_, labels)]
    print(f"\nPurity of the {N_NEAREST} nearest documents, {N_LANDMARKS} landmarks "
          f"(chance: largest group share {np.bincount(labels).max() / len(labels):.3f})\n")
    print_table(["landmarks", "mean purity", "min", "max"],
                [[m, float(np.mean(v)), float(np.min(v)), float(np.max(v))]
                 for m, v in summary.items()], floatfmt="{:.3f}")

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.5))
    width = 0.27
    for j, (m, v) in enumerate(summary.items()):
        ax.bar(np.arange(1, N_LANDMARKS + 1) + (j - 1) * width, v, width, label=m)
    ax.set_xlabel("landmark")
    ax.set_ylabel(f"purity of {N_NEAREST} nearest posts")
    ax.set_xticks(np.arange(1, N_LANDMARKS + 1))
    ax.legend(fontsize=8)
    ax.set_title("20 Newsgroups: landmark purity")
    fig.tight_layout()
    png = args.out / f"gp_newsgroups_purity_{'full' if args.full else 'quick'}.png"
    fig.savefig(png, dpi=110)
    print(f"\nwrote {png}")
    return gp, vocab


def _nbytes(X):
    if sparse.issparse(X):
        return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    return X.nbytes


def compare_dense_sparse(X_csr, args):
    """GPLandmarks on the dense and the CSR copy of X, back to back (dense first)."""
    X_dense = X_csr.toarray()
    print(machine_line())
    print(f"X: dense {_nbytes(X_dense) / 2**20:.1f} MiB, CSR {_nbytes(X_csr) / 2**20:.1f} MiB "
          f"({X_csr.nnz / np.prod(X_csr.shape):.2%} nonzero)")
    def fit(X):
        return GPLandmarks(n_landmarks=N_LANDMARKS, n_steps=1000 if args.full else 200,
                           batch_size=1000, kernel_width=args.kernel_width, space="sphere",
                           random_state=args.seed).fit(X)

    # Timed without tracemalloc (it slows NumPy's allocations), alternating kinds.
    seconds = {"dense": [], "CSR": []}
    landmarks = {}
    for name, X in (("dense", X_dense), ("CSR", X_csr)) * 2:
        start = time.perf_counter()
        landmarks[name] = fit(X).landmarks_
        seconds[name].append(time.perf_counter() - start)
    for name, X in (("dense", X_dense), ("CSR", X_csr)):
        tracemalloc.start()
        fit(X)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"GPLandmarks fit on {name:<5}: " + ", ".join(f"{t:.2f}" for t in seconds[name])
              + f" s; peak traced memory {peak / 2**20:.1f} MiB (X itself not counted)")
    print(f"CSR over dense: time {min(seconds['CSR']) / min(seconds['dense']):.2f}x (best of 2)")
    diff = np.abs(landmarks["CSR"].astype(np.float64) - landmarks["dense"]).max()
    print(f"largest |landmark(CSR) - landmark(dense)|: {diff:.2e}; "
          f"{machine_line()}\n")


def _extra_args(parser):
    parser.add_argument("--kernel-width", default="variance",
                        help="auto, variance (default, the paper's) or a number")
    parser.add_argument("--sparse", action="store_true",
                        help="keep the histograms as a CSR matrix (and first compare a "
                             "fit on it with one on the dense copy)")


def main(argv=None):
    args = parse_args(__doc__.split("\n\n")[0], argv, _extra_args)
    try:
        args.kernel_width = float(args.kernel_width)
    except ValueError:
        pass
    return run(args)


if __name__ == "__main__":
    main()
