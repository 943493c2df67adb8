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
- **vectors**: the vector space model the paper cites (Salton): TF-IDF of the
  100 posts (scikit-learn's ``TfidfVectorizer``: English stop words out, the words
  of :data:`landmarking.text.WORD_PATTERN`, the 1,545 most frequent words of the
  100, rows of unit length; no stemming); ``--vectors sqrt`` uses
  :func:`landmarking.text.sqrt_histograms` instead (square roots of the word
  frequencies, as the library's other text benchmarks);
- **axis**: ``ManifoldSculpting(n_components=1, n_neighbors=10)`` from the paper's
  start (``preprocess="pca"``) and from LTSA (the default), beside scikit-learn's
  Isomap, LLE, Hessian LLE and LTSA with the same k;
- **split**: the cut of the sorted axis that minimises the summed squared deviation
  of the two halves (two-means in 1-D; "sum variance" read so, since the unweighted
  sum of the two variances favours cutting one post off an end);
- **terms**: the three largest entries of each half's summed vectors, the query term
  and its plural left out (they top both halves);
- **score**: the adjusted mutual information between the halves and the newsgroups
  (scikit-learn's ``adjusted_mutual_info_score``: 0 for a split that knows nothing of
  the newsgroups, 1 when each half is a set of whole newsgroups), the newsgroup
  purity of the split (the share of posts in their half's most common newsgroup)
  beside the mean purity of random splits of the same sizes (1,000 draws), and the
  two commonest newsgroups of each half. A method whose embedding is not finite is
  listed with that message instead.

Writes ``sculpting_newsgroups_query.png`` (the first query's posts along each
method's axis, coloured by newsgroup, with the cut and each half's terms) to
``--out``.

Quick run (default): "speaker", the paper's query. ``--full``: speaker, drive, key,
chip and card (words with two senses across the newsgroups: audio and politics;
disks and cars; cryptography and keyboards; cryptography and electronics; hardware
and sales).

Usage::

    python benchmarks/sculpting_newsgroups_query.py [--full] [--queries speaker drive]
        [--vectors sqrt]
"""

import re
import warnings
from collections import Counter

import numpy as np
from _common import argument_parser, machine_line, parse, print_table, pyplot, save_figure
from _sculpting_methods import embed_all

from landmarking.datasets import load_newsgroups
from landmarking.text import WORD_PATTERN, clean_post, sqrt_histograms

N_POSTS = 100
N_WORDS = 1545
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
    v = v - v.mean()  # sums of squares of centred values: no cancellation
    n = len(v)
    c1, c2 = np.cumsum(v), np.cumsum(v ** 2)
    cuts = np.arange(1, n)
    left = c2[cuts - 1] - c1[cuts - 1] ** 2 / cuts
    right = (c2[-1] - c2[cuts - 1]) - (c1[-1] - c1[cuts - 1]) ** 2 / (n - cuts)
    return order, int(cuts[np.argmin(left + right)])


def purity(labels, halves):
    """Share of posts in their half's most common label."""
    return sum(np.bincount(labels[h]).max() for h in halves) / sum(len(h) for h in halves)


def ami(labels, halves):
    """Adjusted mutual information between the split and ``labels``."""
    from sklearn.metrics import adjusted_mutual_info_score

    side = np.zeros(len(labels), dtype=np.int64)
    side[halves[1]] = 1
    return float(adjusted_mutual_info_score(labels, side))


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
    return ", ".join(f"{'.'.join(names[g].split('.')[-2:])} {c}"
                     for g, c in Counter(labels[rows].tolist()).most_common(n))


def vectors(docs, kind="tfidf"):
    """(X dense, vocabulary, rows kept) of ``docs``: "tfidf" (every row kept) or
    "sqrt" (:func:`landmarking.text.sqrt_histograms`; posts without a vocabulary
    word are dropped)."""
    if kind == "sqrt":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the dropped posts are listed in ``kept``
            return sqrt_histograms(docs, n_words=N_WORDS, dense=True)
    from sklearn.feature_extraction.text import TfidfVectorizer

    model = TfidfVectorizer(stop_words="english", token_pattern=WORD_PATTERN,
                            max_features=N_WORDS)
    X = model.fit_transform(docs).toarray()
    return X, model.get_feature_names_out(), np.arange(len(docs))


def run(queries, seed=0, kind="tfidf", out=None):
    docs, labels, names = corpus()
    results, shown = [], None
    for query in queries:
        hit = retrieve(docs, query)
        X, vocabulary, kept = vectors([docs[i] for i in hit], kind)
        y_true = labels[hit[kept]]
        mix = Counter(y_true.tolist()).most_common(3)
        print(f"\nquery {query!r}: {len(kept)} posts x {X.shape[1]} words; newsgroups "
              + ", ".join(f"{names[g]} {c}" for g, c in mix), flush=True)
        banned = {query.lower(), query.lower() + "s"}
        rows = []
        found = embed_all(X, K, 1, seed=seed)
        if shown is None:
            shown = (query, found, X, vocabulary, y_true, names, banned)
        for name, (secs, Y) in found.items():
            if secs is None:
                rows.append((name, Y, "", "", "", "", "", "", ""))
                continue
            order, cut = two_means_cut(Y[:, 0])
            halves = (order[:cut], order[cut:])
            rows.append((name, f"{cut}/{len(order) - cut}",
                         ", ".join(top_terms(X, halves[0], vocabulary, banned)),
                         ", ".join(top_terms(X, halves[1], vocabulary, banned)),
                         ami(y_true, halves), purity(y_true, halves),
                         random_purity(y_true, cut, seed=seed),
                         f"{groups(y_true, halves[0], names)} | "
                         f"{groups(y_true, halves[1], names)}", secs))
            results.append((query, name, *rows[-1][4:7]))
        print_table(["method", "halves", "terms of one half", "terms of the other", "AMI",
                     "purity", "random split", "newsgroups (one | other)", "seconds"],
                    rows, floatfmt="{:.3f}")
    print(machine_line())
    if out is not None and shown is not None:
        _plot(*shown, out / "sculpting_newsgroups_query.png")
    return results


def _plot(query, found, X, vocabulary, y_true, names, banned, path):
    """Each method's 1-D axis (rank order), posts coloured by newsgroup (the four
    commonest, the rest grey), the cut, and each half's three terms."""
    plt = pyplot()
    common = [g for g, _ in Counter(y_true.tolist()).most_common(4)]
    colours = {g: f"C{i}" for i, g in enumerate(common)}
    fig, axes = plt.subplots(len(found), 1, figsize=(8, 0.75 * len(found) + 0.8))
    for ax, (name, (secs, Y)) in zip(axes, found.items(), strict=True):
        ax.set_yticks([])
        ax.set_xticks([])
        ax.set_ylabel(name, rotation=0, ha="right", va="center", fontsize=8)
        if secs is None:
            ax.text(0.5, 0.5, Y, ha="center", va="center", transform=ax.transAxes, fontsize=8)
            continue
        order, cut = two_means_cut(Y[:, 0])
        ax.scatter(np.arange(len(order)), np.zeros(len(order)), s=18, marker="|",
                   c=[colours.get(g, "0.8") for g in y_true[order]])
        ax.axvline(cut - 0.5, color="k", lw=1)
        ax.text(0, 0.6, ", ".join(top_terms(X, order[:cut], vocabulary, banned)), fontsize=7)
        ax.text(len(order) - 1, 0.6, ", ".join(top_terms(X, order[cut:], vocabulary, banned)),
                fontsize=7, ha="right")
        ax.set_ylim(-1, 1.4)
    handles = [plt.Line2D([], [], color=c, marker="|", ls="", label=names[g])
               for g, c in colours.items()]
    axes[0].legend(handles=handles, fontsize=6, ncol=4, loc="lower center",
                   bbox_to_anchor=(0.5, 1.0), frameon=False)
    fig.suptitle(f"posts for {query!r} in each method's 1-D order; cut and each half's terms",
                 fontsize=9, y=0.995)
    save_figure(fig, path)


def main(argv=None):
    parser = argument_parser(__doc__)
    parser.add_argument("--queries", nargs="+",
                        help="query terms (speaker; speaker drive key chip card with --full)")
    parser.add_argument("--vectors", choices=("tfidf", "sqrt"), default="tfidf",
                        help="TF-IDF (default) or square-root frequencies")
    args = parse(parser, argv)
    queries = args.queries or (["speaker", "drive", "key", "chip", "card"] if args.full
                               else ["speaker"])
    run(queries, seed=args.seed, kind=args.vectors, out=args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
