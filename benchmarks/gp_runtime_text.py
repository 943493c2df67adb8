"""GP seconds per landmark against online LDA's per topic on word histograms (Fig. 4b).

The paper's Fig. 4(b) times GP landmarks on 1.8 million New York Times articles
(8,000-word square-root histograms) and calls the speed "comparable to scalable
topic models such as online LDA (Hoffman et al., 2013)", with no LDA time given.
The corpus is not in the data folder; stood in for here by every post of 20
Newsgroups (``20newsgroups_bydate.json.xz``, training and test, 18,846 posts;
headers, quoted lines and signature stripped), as word counts over the 1,545 most
frequent words after English stop words (posts with none left out):

- **GP** reads the square roots of the normalised histograms (points on the unit
  sphere in the nonnegative orthant), ``space="sphere"``, at two settings: the
  library's default (``GPLandmarks(n_landmarks=L, space="sphere")``) and the
  paper's (one landmark at a time, ``block_size=1``, 1000 steps of batch 1000);
  seconds per landmark = fit seconds / L;
- **online LDA** reads the counts of the same posts:
  ``LatentDirichletAllocation(n_components=L, learning_method="online",
  max_iter=P, random_state=seed)`` (scikit-learn's online variational Bayes, after
  Hoffman et al.; batches of 128 posts; P passes over the posts, 1 as a stream and
  scikit-learn's default 10); seconds per topic = fit seconds / L.

All in one process, one after another, so the ratio GP / LDA is measured under
the same load. Then GP's seconds per landmark as the number of posts N grows
(random subsets of N posts): with batches of 1000 posts, a step does not read all
N, so the growth comes from what is done once per fit or per landmark.

Usage::

    python benchmarks/gp_runtime_text.py          # quick: 2,000 posts, 5 landmarks, 200 steps
    python benchmarks/gp_runtime_text.py --full   # all posts, 25 landmarks; N = 2,000 / 5,000 / all
"""

import json
import time
import warnings

import numpy as np
from _common import argument_parser, machine_line, parse, print_table, pyplot, save_figure

from landmarking import GPLandmarks

GP_SETTINGS = ("GP default", "GP sequential (paper)")


def settings(full):
    """All posts, 25 landmarks and topics, 1000 steps and N = 2,000 / 5,000 / all
    with ``full``; else a smoke run of a minute or two."""
    if full:
        return dict(n_posts=None, n_landmarks=25, n_steps=1000, passes=(1, 10),
                    sizes=(2000, 5000, None))
    return dict(n_posts=2000, n_landmarks=5, n_steps=200, passes=(1,), sizes=(1000, 2000))


def all_posts():
    """Every post of 20 Newsgroups (training then test), headers, quotes and
    signature stripped."""
    from landmarking.datasets import load_newsgroups
    from landmarking.text import clean_post

    docs = []
    for subset in ("train", "test"):
        docs += [clean_post(d) for d in load_newsgroups(subset=subset)[0]]
    return docs


def histograms(docs):
    """(counts CSR float64, sqrt-histograms dense float32) over the 1,545 most
    frequent words of ``docs`` after English stop words; posts with none left out."""
    from sklearn.feature_extraction.text import CountVectorizer

    from landmarking.text import WORD_PATTERN

    counts = CountVectorizer(stop_words="english", token_pattern=WORD_PATTERN,
                             max_features=1545).fit_transform(docs).tocsr().astype(np.float64)
    totals = np.asarray(counts.sum(axis=1)).ravel()
    counts = counts[totals > 0]
    totals = totals[totals > 0]
    return counts, np.sqrt(counts.toarray() / totals[:, None]).astype(np.float32)


def gp_model(name, n_landmarks, n_steps, seed):
    if name == "GP default":
        return GPLandmarks(n_landmarks=n_landmarks, space="sphere", random_state=seed,
                           n_steps=None if n_steps == 1000 else n_steps)
    return GPLandmarks(n_landmarks=n_landmarks, space="sphere", block_size=1,
                       n_steps=n_steps, batch_size=1000, random_state=seed)


def clocks(call, *args):
    """(wall seconds, CPU seconds of this process) of one call. On a shared,
    oversubscribed machine the wall time of a process stretches with the others'
    load while its CPU time stays close to the work done, so both are printed."""
    wall, cpu = time.perf_counter(), time.process_time()
    call(*args)
    return np.array([time.perf_counter() - wall, time.process_time() - cpu])


def gp_seconds(name, X, cfg, seed):
    """(wall, CPU) fit seconds / landmark, and the fitted model."""
    model = gp_model(name, cfg["n_landmarks"], cfg["n_steps"], seed)
    return clocks(model.fit, X) / cfg["n_landmarks"], model


def lda_seconds(counts, n_topics, passes, seed):
    """(wall, CPU) fit seconds / topic of scikit-learn's online LDA."""
    from sklearn.decomposition import LatentDirichletAllocation

    lda = LatentDirichletAllocation(n_components=n_topics, learning_method="online",
                                    max_iter=passes, random_state=seed, n_jobs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return clocks(lda.fit, counts) / n_topics


def subset(n, total, seed=0):
    """A random n of ``total`` rows (sorted), all when n is None or too large."""
    if n is None or n >= total:
        return np.arange(total)
    return np.sort(np.random.default_rng(seed).choice(total, n, replace=False))


def compare(counts, X, cfg, seed):
    """{name: (wall, CPU) seconds per landmark or topic} on the same posts, in one run."""
    out = {}
    for name in GP_SETTINGS:
        out[name], _ = gp_seconds(name, X, cfg, seed)
        print(f"  {name}: {out[name][0]:.3f} s per landmark (CPU {out[name][1]:.3f} s); "
              f"{machine_line()}", flush=True)
    for passes in cfg["passes"]:
        key = f"online LDA, {passes} pass{'es' if passes > 1 else ''}"
        out[key] = lda_seconds(counts, cfg["n_landmarks"], passes, seed)
        print(f"  {key}: {out[key][0]:.3f} s per topic (CPU {out[key][1]:.3f} s); "
              f"{machine_line()}", flush=True)
    return out


def growth(X, cfg, seed, all_rows):
    """{N: {GP setting: (wall, CPU) s per landmark}} on random subsets of N posts;
    ``all_rows``, the comparison's figures on all of X, stand for N = all (not refitted)."""
    out = {}
    for n in cfg["sizes"]:
        rows = subset(n, X.shape[0])
        if len(rows) == X.shape[0]:
            out[len(rows)] = {name: all_rows[name] for name in GP_SETTINGS}
        else:
            out[len(rows)] = {name: gp_seconds(name, X[rows], cfg, seed)[0]
                              for name in GP_SETTINGS}
        print(f"  N = {len(rows)}: " + ", ".join(f"{k} {v[0]:.3f} s (CPU {v[1]:.3f} s)"
                                              for k, v in out[len(rows)].items()), flush=True)
    return out


def draw(per_n, path, cfg):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    sizes = sorted(per_n)
    for name in GP_SETTINGS:
        for clock, style in ((0, "-"), (1, "--")):
            ax.plot(sizes, [per_n[n][name][clock] for n in sizes], style, marker="o",
                    label=f"{name}, {('wall', 'CPU')[clock]}")
    ax.set_xlabel("posts N")
    ax.set_ylabel("seconds per landmark")
    ax.set_title(f"GP on 20 Newsgroups sqrt histograms, {cfg['n_landmarks']} landmarks",
                 fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend()
    save_figure(fig, path)


def main(argv=None):
    parser = argument_parser(__doc__)
    parser.add_argument("--passes", type=int, nargs="+",
                        help="online LDA's passes over the posts (default 1, and 10 full)")
    parser.add_argument("--landmarks", type=int,
                        help="landmarks and topics (default 5 quick, 25 full)")
    args = parse(parser, argv)
    cfg = settings(args.full)
    if args.landmarks:
        cfg["n_landmarks"] = args.landmarks
    if args.passes:
        cfg["passes"] = tuple(args.passes)
    docs = all_posts()
    rows = subset(cfg["n_posts"], len(docs))
    counts, X = histograms([docs[i] for i in rows])
    print(f"20 Newsgroups: {X.shape[0]} posts x {X.shape[1]} words; {cfg['n_landmarks']} "
          f"landmarks / topics; GP {cfg['n_steps']} steps per landmark", flush=True)
    per_unit = compare(counts, X, cfg, args.seed)
    print()
    first_lda = next(k for k in per_unit if k.startswith("online LDA"))
    base = per_unit[first_lda]
    print_table(["method", "wall s per landmark / topic", f"wall / {first_lda}",
                 "CPU s per landmark / topic", f"CPU / {first_lda}"],
                [[k, v[0], v[0] / base[0], v[1], v[1] / base[1]] for k, v in per_unit.items()],
                floatfmt="{:.3f}")
    print("\nGP's seconds per landmark against the number of posts:", flush=True)
    per_n = growth(X, cfg, args.seed, per_unit)
    first = min(per_n)
    print()
    print_table(["posts N", *(f"{k}, {c} s" for k in GP_SETTINGS for c in ("wall", "CPU")),
                 *(f"{k}, CPU / at N = {first}" for k in GP_SETTINGS)],
                [[n, *(float(per_n[n][k][c]) for k in GP_SETTINGS for c in (0, 1)),
                  *(float(per_n[n][k][1] / per_n[first][k][1]) for k in GP_SETTINGS)]
                 for n in sorted(per_n)], floatfmt="{:.3f}")
    tag = "full" if args.full else "quick"
    draw(per_n, args.out / f"gp_runtime_text_{tag}.png", cfg)
    result = {"per_unit": {k: v.tolist() for k, v in per_unit.items()},
              "per_n": {str(n): {k: v.tolist() for k, v in row.items()}
                        for n, row in per_n.items()},
              "posts": int(X.shape[0])}
    (args.out / f"gp_runtime_text_{tag}.json").write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
