"""Topics as GP landmarks on 20 Newsgroups (Liang & Paisley 2015, Table 1; issue 35).

Each training post (headers, quoted lines and signature stripped) becomes the
square root of its normalised word histogram over the 1,545 most frequent words
after English stop words (the paper's vocabulary size), a point on the unit sphere
in the positive orthant. On that one matrix, for each number of landmarks and
seed, back to back:

- the library's default, ``GPLandmarks(n_landmarks=n, space="sphere")``;
- the library with the paper's settings (one landmark at a time, 1000 steps of
  batch 1000, schedule (10 + s)^-0.51, the variance rule's kernel width, the
  paper's Gaussian start);
- the authors' algorithm transcribed in plain NumPy (``_gp_sphere_steps.py``:
  the unit-length gradient step rho_s = (10 + s)^-0.51 along the sphere, the
  uniform start, batches drawn with replacement; their code's kernel values of the
  finished landmarks cached, a faster peer than their code), with the same width.

Printed: the mean purity (the share of each landmark's 100 nearest posts, by
Hellinger distance, that come from its most common newsgroup), the purity of each
seed, the seconds of a fit and their ratio to the authors' algorithm's, the
machine line (load average, BLAS), and the 5 most probable words (largest squared
entries) of each method's landmarks for the first seed.

Usage::

    python benchmarks/gp_newsgroups_topics.py          # quick: 12 landmarks, one seed
    python benchmarks/gp_newsgroups_topics.py --full   # 12, 25 and 50 landmarks, seeds 0-2
    python benchmarks/gp_newsgroups_topics.py --full --seeds 0   # one seed
    python benchmarks/gp_newsgroups_topics.py --sparse [--full]
        # a back-to-back fit of GPLandmarks on the dense and the CSR copy: seconds,
        # bytes of X, peak memory of the fit (tracemalloc) and the largest landmark
        # difference
"""

import time
import tracemalloc
import warnings

import numpy as np
from _common import (
    argument_parser,
    kernel_width_argument,
    machine_line,
    newsgroups_with_vocabulary,
    parse,
    print_table,
    purity,
)
from _gp_sphere_steps import sphere_landmarks
from scipy import sparse

from landmarking import GPLandmarks
from landmarking.datasets.real import load_newsgroups
from landmarking.kernels import resolve_kernel_width
from landmarking.text import clean_post, sqrt_histograms, top_words

N_LANDMARKS = 12
N_TOP = 5
N_NEAREST = 100


METHODS = ("library default", "paper's settings", "authors' algorithm (NumPy)")


def library_default(X, n, seed, eta):
    """What a new user gets: ``GPLandmarks(n_landmarks=n, space="sphere")``."""
    return GPLandmarks(n_landmarks=n, space="sphere", random_state=seed).fit(X).landmarks_


def papers_settings(X, n, seed, eta):
    """The library with the paper's settings: one landmark at a time, 1000 steps of
    batch 1000, the schedule (10 + s)^-0.51, the variance rule's width and the
    paper's start (Gaussian draws with the data's mean and variances)."""
    return GPLandmarks(n_landmarks=n, space="sphere", block_size=1, n_steps=1000,
                       batch_size=1000, s0=10.0, tau=0.51, kernel_width=eta,
                       init="gaussian", random_state=seed).fit(X).landmarks_


def authors_algorithm(X, n, seed, eta, prefixes):
    """The authors' algorithm transcribed (``_gp_sphere_steps``): unit-length
    gradient step rho_s = (10 + s)^-0.51, uniform start, batches with replacement.
    Sequential, so one run of the largest n gives every smaller n as its prefix:
    returns {n: (landmarks, seconds to reach them)}."""
    out = {}
    start = time.perf_counter()

    def record(k, landmarks):
        if k + 1 in prefixes:
            out[k + 1] = (landmarks.copy(), time.perf_counter() - start)

    sphere_landmarks(X, n, eta, move="unit", start="uniform", n_steps=1000,
                     batch_size=1000, t0=10.0, gamma=0.51, replace=True, seed=seed,
                     callback=record)
    return out


def mean_purity(X, landmarks, labels):
    return float(np.mean([s for _, s in purity(X, landmarks, labels)]))


def compare(args):
    """Issue 35's table: the library's default, the paper's settings and the authors'
    algorithm on the same matrix, each n and seed back to back."""
    X, labels, vocab, names = newsgroups_with_vocabulary()
    eta = resolve_kernel_width(X, "variance")
    sizes = (12, 25, 50) if args.full else (12,)
    seeds = args.seeds or ((0, 1, 2) if args.full else (args.seed,))
    print(f"20 Newsgroups train: {X.shape[0]} posts x {X.shape[1]} words (square-root "
          f"frequencies, float32); variance-rule width eta = {eta:.4f}; "
          f"{len(seeds)} seed(s), {', '.join(map(str, sizes))} landmarks", flush=True)
    results = {}  # (method, n) -> [(purity, seconds)] over seeds
    topics = {}   # method -> landmarks of the first seed, 12 landmarks
    for seed in seeds:
        authors = authors_algorithm(X, max(sizes), seed, eta, sizes)
        for n in sizes:
            for method, fit in ((METHODS[0], library_default), (METHODS[1], papers_settings)):
                start = time.perf_counter()
                landmarks = fit(X, n, seed, eta)
                seconds = time.perf_counter() - start
                results.setdefault((method, n), []).append(
                    (mean_purity(X, landmarks, labels), seconds))
                if seed == seeds[0] and n == sizes[0]:
                    topics[method] = landmarks
            landmarks, seconds = authors[n]
            results.setdefault((METHODS[2], n), []).append(
                (mean_purity(X, landmarks, labels), seconds))
            if seed == seeds[0] and n == sizes[0]:
                topics[METHODS[2]] = landmarks
        print(f"seed {seed} done; {machine_line()}", flush=True)

    print(f"\nMean purity of each landmark's {N_NEAREST} nearest posts (the share of "
          f"their most common newsgroup; chance {np.bincount(labels).max() / len(labels):.3f}),"
          f" mean over seeds {', '.join(map(str, seeds))}; seconds: mean wall time of a fit "
          "(the authors' algorithm: the time its sequential run reached n landmarks)\n")
    rows = []
    for n in sizes:
        base = np.mean([t for _, t in results[(METHODS[2], n)]])
        for method in METHODS:
            values = results[(method, n)]
            secs = float(np.mean([t for _, t in values]))
            rows.append([n, method, float(np.mean([p for p, _ in values])),
                         ", ".join(f"{p:.3f}" for p, _ in values), secs, secs / base])
    print_table(["landmarks", "method", "mean purity", "per seed", "seconds",
                 "time / authors'"], rows, floatfmt="{:.3f}")
    print(machine_line())
    for method in METHODS:
        print(f"\n{method}, seed {seeds[0]}: the {N_TOP} most probable words of the first "
              f"{sizes[0]} landmarks\n")
        table = []
        for k, (group, share) in enumerate(purity(X, topics[method], labels)):
            table.append([k + 1, " ".join(top_words(topics[method][k], vocab, N_TOP)),
                          names[group], share])
        print_table(["landmark", f"top {N_TOP} words", f"main group of {N_NEAREST} nearest",
                     "purity"], table, floatfmt="{:.2f}")
    return results


def run(args):
    """The ``--sparse`` comparison: a dense and a CSR fit, back to back."""
    docs, labels, names = load_newsgroups(subset="train")
    docs = [clean_post(d) for d in docs]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        X, vocab, kept = sqrt_histograms(docs, n_words=1545, dense=False)
    X = X.astype(np.float32)
    print(f"20 Newsgroups train: {len(docs)} posts, {len(docs) - len(kept)} dropped as "
          f"empty ({caught[0].message if caught else 'none'}); vocabulary {len(vocab)} words")
    compare_dense_sparse(X, args)


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


def main(argv=None):
    parser = argument_parser(__doc__)
    kernel_width_argument(parser)
    parser.add_argument("--seeds", type=int, nargs="+",
                        help="the seeds to run (default 0 1 2 with --full, else --seed)")
    parser.add_argument("--sparse", action="store_true",
                        help="keep the histograms as a CSR matrix (and first compare a "
                             "fit on it with one on the dense copy)")
    args = parse(parser, argv)
    return run(args) if args.sparse else compare(args)


if __name__ == "__main__":
    main()
