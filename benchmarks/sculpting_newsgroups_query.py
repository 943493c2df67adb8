"""Splitting the posts retrieved for a query on a 1-D sculpted axis (Gashler et al. 2011, IV-C).

The paper downloaded the first 100 documents of a Google search, removed stop words,
stemmed the terms, reduced the term vectors to one dimension with Manifold Sculpting,
cut that axis "into two halves at the point that minimizes the sum variance of the
two halves" and named each half by "the three terms with the highest total weight"
of its summed vectors. For "speaker" it got "box, amp, off" against "hit, baseball,
bat" (Tris Speaker). No score is given. The web pages are gone; the stand-in is 20
Newsgroups (``20newsgroups_bydate.json.xz`` through ``LANDMARKING_DATA``), whose
newsgroup labels also let the split be scored.

For each query term:

- **retrieval**: the posts of both subsets (headers, quotes and signature removed by
  :func:`landmarking.text.clean_post`) that contain the term or its plural, with at
  least 20 words, the 100 with the most occurrences (ties: the file's order);
- **vectors**: :func:`landmarking.text.sqrt_histograms` of those 100 posts (English
  stop words out, the 1,545 most frequent words of the 100, no stemming): square
  roots of the word frequencies, as the rest of the library's text benchmarks;
- **axis**: ``ManifoldSculpting(n_components=1, n_neighbors=10)`` from the paper's
  start (``preprocess="pca"``) and from LTSA (the default), beside scikit-learn's
  Isomap, LLE, Hessian LLE and LTSA with the same k;
- **split**: the cut of the sorted axis that minimises the summed squared deviation
  of the two halves (two-means in 1-D; "sum variance" read so, since the unweighted
  sum of the two variances favours cutting one post off an end);
- **terms**: the three largest entries of each half's summed vectors, the query term
  and its plural left out (they top both halves);
- **score**: the newsgroup purity of the split (the share of posts in their half's
  most common newsgroup), beside the mean purity of random splits of the same sizes
  (1,000 draws) and the newsgroups of each half.

Quick run (default): "speaker", the paper's query. ``--full``: speaker, drive, key,
chip and card (words with two senses across the newsgroups: audio and politics;
disks and cars; cryptography and keyboards; cryptography and electronics; hardware
and sales).

Usage::

    python benchmarks/sculpting_newsgroups_query.py [--full] [--queries speaker drive]
"""

import re
import warnings
from collections import Counter

import numpy as np
from _common import argument_parser, machine_line, parse, print_table
from _sculpting_methods import embed_all

from landmarking.datasets import load_newsgroups
from landmarking.text import clean_post, sqrt_histograms

N_POSTS = 100
MIN_WORDS = 20
K = 10


def corpus():
    """Cleaned posts of both subsets, their newsgroups and the groups' names."""
    docs, labels = [], []
    for subset in ("train", "test"):
        d, y, names = load_newsgroups(subset=subset)
        docs += [clean_post(x) for x in d]
        labels.append(y)
    return docs, np.concatenate(labels), names


def retrieve(docs, query, n=N_POSTS):
    """Indices of the ``n`` posts with the most occurrences of ``query`` or its
    plural (as a word, any case), among posts of at least MIN_WORDS words."""
    pattern = re.compile(rf"\b{re.escape(query)}s?\b", re.IGNORECASE)
    counts = [(len(pattern.findall(d)), i) for i, d in enumerate(docs)
              if len(d.split()) >= MIN_WORDS]
    hits = sorted((c for c in counts if c[0] > 0), key=lambda c: (-c[0], c[1]))
    return np.array([i for _, i in hits[:n]], dtype=np.int64)


def two_means_cut(y):
    """The order of y and the position c of the cut (halves order[:c], order[c:])
    that minimises the summed squared deviation of the two halves."""
    order = np.argsort(y, kind="stable")
    v = np.asarray(y, dtype=float)[order]
    n = len(v)
    c1, c2 = np.cumsum(v), np.cumsum(v ** 2)
    cuts = np.arange(1, n)
    left = c2[cuts - 1] - c1[cuts - 1] ** 2 / cuts
    right = (c2[-1] - c2[cuts - 1]) - (c1[-1] - c1[cuts - 1]) ** 2 / (n - cuts)
    return order, int(cuts[np.argmin(left + right)])


def purity(labels, halves):
    """Share of posts in their half's most common label."""
    return sum(np.bincount(labels[h]).max() for h in halves) / sum(len(h) for h in halves)


def random_purity(labels, size, *, draws=1000, seed=0):
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(draws):
        p = rng.permutation(len(labels))
        values.append(purity(labels, (p[:size], p[size:])))
    return float(np.mean(values))


def top_terms(X, rows, vocabulary, banned, n=3):
    total = np.asarray(X[rows].sum(axis=0)).ravel()
    order = np.argsort(-total, kind="stable")
    return [str(vocabulary[j]) for j in order if vocabulary[j] not in banned][:n]


def groups(labels, rows, names, n=2):
    return ", ".join(f"{names[g].split('.')[-1]} {c}"
                     for g, c in Counter(labels[rows].tolist()).most_common(n))


def run(queries, seed=0):
    docs, labels, names = corpus()
    results = []
    for query in queries:
        hit = retrieve(docs, query)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # posts without a vocabulary word are dropped
            X, vocabulary, kept = sqrt_histograms([docs[i] for i in hit], dense=True)
        y_true = labels[hit[kept]]
        mix = Counter(y_true.tolist()).most_common(3)
        print(f"\nquery {query!r}: {len(kept)} posts x {X.shape[1]} words; newsgroups "
              + ", ".join(f"{names[g]} {c}" for g, c in mix), flush=True)
        banned = {query.lower(), query.lower() + "s"}
        rows = []
        for name, (secs, Y) in embed_all(X, K, 1, seed=seed).items():
            if secs is None:
                rows.append((name, Y, "", "", "", "", "", ""))
                continue
            order, cut = two_means_cut(Y[:, 0])
            halves = (order[:cut], order[cut:])
            rows.append((name, f"{cut}/{len(order) - cut}",
                         ", ".join(top_terms(X, halves[0], vocabulary, banned)),
                         ", ".join(top_terms(X, halves[1], vocabulary, banned)),
                         purity(y_true, halves), random_purity(y_true, cut, seed=seed),
                         f"{groups(y_true, halves[0], names)} | "
                         f"{groups(y_true, halves[1], names)}", secs))
            results.append((query, name, rows[-1][4], rows[-1][5]))
        print_table(["method", "halves", "terms of one half", "terms of the other",
                     "purity", "random split", "newsgroups (one | other)", "seconds"],
                    rows, floatfmt="{:.3f}")
    print(machine_line())
    return results


def main(argv=None):
    parser = argument_parser(__doc__, out=False)
    parser.add_argument("--queries", nargs="+",
                        help="query terms (speaker; speaker drive key chip card with --full)")
    args = parse(parser, argv)
    queries = args.queries or (["speaker", "drive", "key", "chip", "card"] if args.full
                               else ["speaker"])
    run(queries, seed=args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
