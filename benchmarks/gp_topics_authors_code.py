"""The library's default against the authors' own code on 20 Newsgroups topics (Table 1).

Liang & Paisley published their code (github dawenl/manifold_landmarks,
``manifold_gp.py``, Python 2). It is not part of this project and is never copied
into it: ``--authors-code PATH`` names a local copy, which this script ports to
Python 3 at run time by the one mechanical change it needs (``xrange`` ->
``range``; its ``print`` calls and divisions already read the same in Python 3:
the script refuses a file that needs more) and runs unchanged otherwise:
``ManifoldGP(n_landmarks=n, batch_size=1000, n_steps=1000, proj=proj_sph_pos,
random_state=seed, t0=10, gamma=0.51).learn_landmarks(X)``: the paper's settings
passed through the code's own arguments, its own start (the centre of the
sphere-orthant) and its own kernel width (the sum of the per-word variances).

Beside it, on the same matrix, the library's default
``GPLandmarks(n_landmarks=n, space="sphere")``. Two vectorisations of the 11,314
training posts, each the square root of the normalised histogram over the 1,545
most frequent words after English stop words (points on the unit sphere in the
positive orthant):

- **cleaned**: headers, quoted lines and signature stripped
  (``landmarking.text.clean_post``; the topics benchmark's matrix);
- **plain**: headers stripped only (``landmarking.text.strip_headers``).

Scored as ``gp_newsgroups_topics.py`` scores them: the mean purity of the
landmarks (the share of a landmark's 100 nearest posts, by Hellinger distance, from
their most common newsgroup). The authors' code is sequential and draws from
NumPy's global generator in a fixed order, so one run of the largest n gives its
runs for smaller n as prefixes (their seconds are the times the run reached them).

Without ``--authors-code`` only the library's side is measured.

``--isolate`` looks for the cause of a gap: on each vectorisation, seed and size,
the authors' algorithm transcribed in NumPy (``_gp_sphere_steps``, their start and
schedule, their kernel width) with one thing changed at a time towards the
library: batches without replacement (slices of a permutation, the library's), or
the library's scale-free step (without its step limit) for their unit-length
gradient step; beside the library's default and its kernel width.

Usage::

    python benchmarks/gp_topics_authors_code.py --authors-code manifold_gp.py   # quick
    python benchmarks/gp_topics_authors_code.py --authors-code manifold_gp.py --full
        # 12, 25 and 50 landmarks, seeds 0 1 2, both vectorisations
"""

import re
import time
import types
import warnings
from pathlib import Path

import numpy as np
from _common import argument_parser, machine_line, parse, print_table
from _gp_sphere_steps import sphere_landmarks
from gp_newsgroups_topics import library_default, mean_purity

from landmarking.datasets import load_newsgroups
from landmarking.text import clean_post, sqrt_histograms, strip_headers

VECTORISATIONS = {"cleaned": clean_post, "plain": strip_headers}
LIBRARY = "library default"
AUTHORS = "authors' code"

#: The one change the authors' Python 2 file needs: name -> (pattern, replacement).
PORT = {"xrange": (re.compile(r"\bxrange\("), "range(")}
#: Python 2 constructs the port does not handle; a file with one is refused.
UNPORTED = re.compile(r"^\s*print\s+[^\s(]|^\s*exec\s|\biteritems\(|\bunicode\(|<>",
                      re.MULTILINE)


def settings(full):
    """The issue's sizes with ``full``; else a smoke run (1,000 posts, few steps)."""
    if full:
        return dict(sizes=(12, 25, 50), seeds=(0, 1, 2), n_posts=None, n_steps=1000)
    return dict(sizes=(3, 6), seeds=(0,), n_posts=1000, n_steps=100)


def port_to_python3(source):
    """(Python 3 source, {change: count}) of the authors' Python 2 file: ``xrange``
    becomes ``range``; anything else Python 2 only raises ``ValueError``."""
    bad = UNPORTED.search(source)
    if bad:
        raise ValueError(f"the file needs more than a mechanical port (found {bad.group(0)!r}); "
                         "this script only renames xrange.")
    counts = {}
    for name, (pattern, replacement) in PORT.items():
        source, counts[name] = pattern.subn(replacement, source)
    return source, counts


def load_authors_code(path):
    """The authors' module, ported at run time (nothing written to disk), and the
    changes made."""
    source, counts = port_to_python3(Path(path).read_text(encoding="utf-8"))
    module = types.ModuleType("manifold_gp")
    module.__file__ = str(path)
    exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102 - the user's file
    return module, counts


def vectorise(clean, n_posts=None):
    """(X float32, labels) of the training posts under ``clean``; a random
    ``n_posts`` of them (seed 0) when given."""
    docs, labels, _ = load_newsgroups(subset="train")
    rows = np.arange(len(docs))
    if n_posts is not None:
        rows = np.sort(np.random.default_rng(0).choice(len(docs), n_posts, replace=False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the posts left empty are dropped (kept)
        X, _, kept = sqrt_histograms([clean(docs[i]) for i in rows], n_words=1545, dense=True)
    return X.astype(np.float32), labels[rows][kept]


def authors_run(module, X, sizes, seed, n_steps):
    """{n: (landmarks, seconds to reach them)} from one run of their ``ManifoldGP``
    to the largest n; the instance's own method is wrapped to take the times (their
    class and functions are not touched)."""
    model = module.ManifoldGP(n_landmarks=max(sizes), batch_size=1000, n_steps=n_steps,
                              proj=module.proj_sph_pos, random_state=seed, verbose=False,
                              t0=10, gamma=0.51)
    learn_one = model._learn_single_landmark
    stamps = []
    start = time.perf_counter()

    def timed_landmark(data):
        landmark = learn_one(data)
        stamps.append(time.perf_counter() - start)
        return landmark

    model._learn_single_landmark = timed_landmark
    with warnings.catch_warnings():
        # Their lstsq call without rcond warns on older NumPy; the run is theirs as it is.
        warnings.simplefilter("ignore", FutureWarning)
        model.learn_landmarks(X)
    return {n: (model.landmarks[:n].copy(), stamps[n - 1]) for n in sizes}, model.kern_width


def library_run(X, sizes, seed, n_steps):
    """{n: (landmarks, seconds)}: the library's default fitted for each n."""
    out = {}
    for n in sizes:
        start = time.perf_counter()
        if n_steps == 1000:
            landmarks = library_default(X, n, seed, None)
        else:  # the quick run only: fewer steps, as the authors' side
            from landmarking import GPLandmarks

            landmarks = GPLandmarks(n_landmarks=n, space="sphere", n_steps=n_steps,
                                    random_state=seed).fit(X).landmarks_
        out[n] = (landmarks, time.perf_counter() - start)
    return out


def run_vectorisation(name, module, cfg):
    """{(method, n): [(purity, seconds) per seed]} on one vectorisation."""
    X, labels = vectorise(VECTORISATIONS[name], cfg["n_posts"])
    X64 = X.astype(np.float64)  # the authors' code computes in the input's precision
    chance = np.bincount(labels).max() / len(labels)
    print(f"\n{name}: {X.shape[0]} posts x {X.shape[1]} words; chance purity "
          f"{chance:.3f}", flush=True)
    results = {}
    for seed in cfg["seeds"]:
        runs = {LIBRARY: library_run(X, cfg["sizes"], seed, cfg["n_steps"])}
        if module is not None:
            runs[AUTHORS], width = authors_run(module, X64, cfg["sizes"], seed, cfg["n_steps"])
            print(f"  authors' kernel width (their rule) {width:.4f}", flush=True)
        for method, per_n in runs.items():
            for n, (landmarks, seconds) in per_n.items():
                results.setdefault((method, n), []).append(
                    (mean_purity(X64, landmarks, labels), seconds))
        print(f"  {name} seed {seed} done; {machine_line()}", flush=True)
    return results


def table(name, results, cfg):
    """Print one vectorisation's table; returns {n: library - authors' mean purity}."""
    methods = sorted({m for m, _ in results}, key=(LIBRARY, AUTHORS).index)
    rows, gaps = [], {}
    for n in cfg["sizes"]:
        means = {}
        for method in methods:
            values = results[(method, n)]
            means[method] = float(np.mean([p for p, _ in values]))
            rows.append([n, method, means[method], ", ".join(f"{p:.3f}" for p, _ in values),
                         float(np.mean([t for _, t in values]))])
        if AUTHORS in means:
            gaps[n] = means[LIBRARY] - means[AUTHORS]
    print(f"\n{name}: mean purity of each landmark's 100 nearest posts, seeds "
          f"{', '.join(map(str, cfg['seeds']))}; seconds: mean of a fit (the authors' "
          "code: when its run reached n)\n")
    print_table(["landmarks", "method", "mean purity", "per seed", "seconds"], rows,
                floatfmt="{:.3f}")
    if gaps:
        print("library default - authors' code: "
              + ", ".join(f"{n}: {g:+.3f}" for n, g in gaps.items()))
    return gaps


#: The transcription's variants of --isolate: name -> (move, batches with replacement).
VARIANTS = {"transcription (authors')": ("unit", True),
            "transcription, batches without replacement": ("unit", False),
            "transcription, the library's step": ("fraction", True)}


def transcription_run(X, sizes, seed, eta, move, replace, n_steps):
    """{n: landmarks} of one sequential run of the transcription to the largest n."""
    out = {}

    def record(k, landmarks):
        if k + 1 in sizes:
            out[k + 1] = landmarks.copy()

    sphere_landmarks(X, max(sizes), eta, move=move, start="uniform", n_steps=n_steps,
                     batch_size=1000, t0=10.0, gamma=0.51, replace=replace, seed=seed,
                     callback=record)
    return out


def isolate(name, cfg):
    """{(method, n): [purity per seed]}: the transcription's variants and the default."""
    from landmarking import GPLandmarks
    from landmarking.kernels import resolve_kernel_width

    X, labels = vectorise(VECTORISATIONS[name], cfg["n_posts"])
    X64 = X.astype(np.float64)
    eta = float(np.var(X64, axis=0).sum())  # the authors' rule
    default = GPLandmarks(space="sphere")
    print(f"\n{name}: {X.shape[0]} posts; the authors' kernel width {eta:.4f}, the "
          f"default's ('auto') {resolve_kernel_width(X, default.kernel_width):.4f}", flush=True)
    results = {}
    for seed in cfg["seeds"]:
        for method, (move, replace) in VARIANTS.items():
            runs = transcription_run(X64, cfg["sizes"], seed, eta, move, replace, cfg["n_steps"])
            for n, landmarks in runs.items():
                results.setdefault((method, n), []).append(mean_purity(X64, landmarks, labels))
            print(f"  seed {seed} {method}: " + ", ".join(
                f"{n}: {results[(method, n)][-1]:.3f}" for n in sorted(runs)), flush=True)
        for n, (landmarks, _) in library_run(X, cfg["sizes"], seed, cfg["n_steps"]).items():
            results.setdefault((LIBRARY, n), []).append(mean_purity(X64, landmarks, labels))
        print(f"  seed {seed} {LIBRARY}: " + ", ".join(
            f"{n}: {results[(LIBRARY, n)][-1]:.3f}" for n in cfg["sizes"])
            + f"; {machine_line()}", flush=True)
    print(f"\n{name}: mean purity, mean +- standard error over seeds "
          f"{', '.join(map(str, cfg['seeds']))}\n")
    print_table(["landmarks", "method", "mean purity", "per seed"],
                [[n, m, _mean_error(v), ", ".join(f"{p:.3f}" for p in v)]
                 for (m, n), v in sorted(results.items(), key=lambda kv: kv[0][1])])
    return results


def _mean_error(values):
    values = np.asarray(values, dtype=float)
    error = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else 0.0
    return f"{values.mean():.3f} +- {error:.3f}"


def main(argv=None):
    parser = argument_parser(__doc__, seed=False, out=False)
    parser.add_argument("--authors-code", type=Path, metavar="PATH",
                        help="a local copy of the authors' manifold_gp.py (Python 2)")
    parser.add_argument("--vectorisations", nargs="+", default=list(VECTORISATIONS),
                        choices=list(VECTORISATIONS))
    parser.add_argument("--seeds", type=int, nargs="+", help="default 0 1 2 full, 0 quick")
    parser.add_argument("--sizes", type=int, nargs="+", help="default 12 25 50 full")
    parser.add_argument("--isolate", action="store_true",
                        help="the transcription changed one thing at a time (see above)")
    args = parse(parser, argv)
    cfg = settings(args.full)
    if args.seeds:
        cfg["seeds"] = tuple(args.seeds)
    if args.sizes:
        cfg["sizes"] = tuple(sorted(args.sizes))
    if args.isolate:
        return {name: isolate(name, cfg) for name in args.vectorisations}
    module = None
    if args.authors_code is not None:
        module, counts = load_authors_code(args.authors_code)
        print(f"authors' code: {args.authors_code.name}, ported at run time: "
              + ", ".join(f"{k} replaced {v} time(s)" for k, v in counts.items()))
    else:
        print("no --authors-code: the library's side only")
    return {name: (results := run_vectorisation(name, module, cfg),
                   table(name, results, cfg))
            for name in args.vectorisations}


if __name__ == "__main__":
    main()
